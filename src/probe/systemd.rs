//! A service's environment as systemd gives it, read from the node's files.
//!
//! Where nodes keep the runtime's proxy and trust settings (`../shared/notes/nodes.md` §2):
//! AKS writes `DefaultEnvironment=` into `/etc/systemd/system.conf.d/proxy.conf` (every unit
//! inherits it), Bottlerocket and RHCOS point the unit at an `EnvironmentFile=`, EKS users add
//! `Environment=` drop-ins. The order systemd applies them (systemd.exec(5), systemd-system.conf(5)):
//! the manager's `DefaultEnvironment=` first, then the unit's `Environment=` lines in file order,
//! then its `EnvironmentFile=`s in order, each later setting winning; `Environment=` or
//! `EnvironmentFile=` with an empty value resets the list before it. Drop-ins
//! (`NAME.service.d/*.conf`, `system.conf.d/*.conf`) are applied in file-name order across their
//! directories, a name in an earlier directory masking the same name in a later one.
//!
//! Parsing is pure (`parse_*`); [`service_environment`] reads the files through the node root.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::node_root::NodeRoot;

/// Where systemd looks for units and their drop-ins, most local first (systemd.unit(5)).
pub const UNIT_DIRS: [&str; 5] = [
    "/etc/systemd/system",
    "/run/systemd/system",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
];

/// The manager's own configuration file and drop-in directories (systemd-system.conf(5)).
const MANAGER_CONF: &str = "/etc/systemd/system.conf";
const MANAGER_DROPIN_DIRS: [&str; 4] = [
    "/etc/systemd/system.conf.d",
    "/run/systemd/system.conf.d",
    "/usr/local/lib/systemd/system.conf.d",
    "/usr/lib/systemd/system.conf.d",
];

/// A variable's value and the node file that set it.
pub type SourcedVars = BTreeMap<String, (String, String)>;

/// What one unit file (or drop-in) says about the environment, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnitSettings {
    pub environment: Vec<Setting<(String, String)>>,
    pub environment_files: Vec<Setting<EnvironmentFile>>,
}

/// One list item, or the empty assignment that clears the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Setting<T> {
    Add(T),
    Reset,
}

/// `EnvironmentFile=[-]PATH`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentFile {
    pub path: PathBuf,
    /// `-`: a missing file is not an error.
    pub optional: bool,
}

/// The environment systemd gives a service, each value with the file that set it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceEnvironment {
    /// `containerd.service`.
    pub unit: String,
    pub vars: SourcedVars,
    /// Files a reader must know about: a required `EnvironmentFile=` that is missing (the unit
    /// would not start) or unreadable.
    pub notes: Vec<String>,
}

/// `[Service]` lines of a unit file or drop-in: `Environment=` and `EnvironmentFile=`, with
/// comments, sections and `\` continuations handled as systemd's parser does.
pub fn parse_unit(text: &str) -> UnitSettings {
    let mut settings = UnitSettings::default();
    for (section, key, value) in assignments(text) {
        if section != "Service" {
            continue;
        }
        match key.as_str() {
            "Environment" if value.is_empty() => settings.environment.push(Setting::Reset),
            "Environment" => settings
                .environment
                .extend(split_assignments(&value).into_iter().map(Setting::Add)),
            "EnvironmentFile" if value.is_empty() => {
                settings.environment_files.push(Setting::Reset)
            }
            "EnvironmentFile" => {
                let (optional, path) = match value.strip_prefix('-') {
                    Some(path) => (true, path),
                    None => (false, value.as_str()),
                };
                settings
                    .environment_files
                    .push(Setting::Add(EnvironmentFile {
                        path: PathBuf::from(path.trim()),
                        optional,
                    }));
            }
            _ => {}
        }
    }
    settings
}

/// `[Manager] DefaultEnvironment=` of system.conf or one of its drop-ins.
pub fn parse_manager(text: &str) -> Vec<Setting<(String, String)>> {
    let mut out = Vec::new();
    for (section, key, value) in assignments(text) {
        if section == "Manager" && key == "DefaultEnvironment" {
            if value.is_empty() {
                out.push(Setting::Reset);
            } else {
                out.extend(split_assignments(&value).into_iter().map(Setting::Add));
            }
        }
    }
    out
}

/// An environment file: `KEY=VALUE` lines, `#`/`;` comments, single quotes literal, double
/// quotes and bare values with backslash escapes, a trailing `\` continuing the line (systemd's
/// `load_env_file`). Lines without `=` or with an invalid name are skipped, as systemd does.
pub fn parse_environment_file(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in logical_lines(text) {
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if !valid_name(key) {
            continue;
        }
        out.push((key.to_string(), unquote_value(value.trim())));
    }
    out
}

/// The environment of service `unit` (`containerd.service`) on the node: the manager's
/// `DefaultEnvironment=`, the unit's `Environment=`, then its `EnvironmentFile=`s. `None` when
/// no unit file of that name exists in `unit_dirs`.
pub fn service_environment(
    node: &NodeRoot,
    unit_dirs: &[PathBuf],
    unit: &str,
) -> Option<ServiceEnvironment> {
    let main = unit_dirs
        .iter()
        .map(|dir| dir.join(unit))
        .find(|path| node.is_file(path))?;
    let mut files = vec![main];
    files.extend(dropins(
        node,
        unit_dirs.iter().map(|d| d.join(format!("{unit}.d"))),
    ));
    let mut found = ServiceEnvironment {
        unit: unit.to_string(),
        ..ServiceEnvironment::default()
    };
    // The manager's environment is the base every unit starts from.
    let manager_files = std::iter::once(PathBuf::from(MANAGER_CONF))
        .chain(dropins(node, MANAGER_DROPIN_DIRS.iter().map(PathBuf::from)));
    for file in manager_files {
        let Ok(text) = node.read_to_string(&file) else {
            continue;
        };
        apply(&mut found.vars, &parse_manager(&text), &file);
    }
    let mut environment: Vec<(Setting<(String, String)>, PathBuf)> = Vec::new();
    let mut environment_files: Vec<EnvironmentFile> = Vec::new();
    for file in &files {
        let Ok(text) = node.read_to_string(file) else {
            continue;
        };
        let settings = parse_unit(&text);
        environment.extend(settings.environment.into_iter().map(|s| (s, file.clone())));
        for setting in settings.environment_files {
            match setting {
                Setting::Add(f) => environment_files.push(f),
                Setting::Reset => environment_files.clear(),
            }
        }
    }
    let mut unit_vars = SourcedVars::new();
    for (setting, file) in environment {
        apply(&mut unit_vars, std::slice::from_ref(&setting), &file);
    }
    found.vars.extend(unit_vars);
    for env_file in environment_files {
        match node.read_to_string(&env_file.path) {
            Ok(text) => {
                let source = env_file.path.display().to_string();
                for (k, v) in parse_environment_file(&text) {
                    found.vars.insert(k, (v, source.clone()));
                }
            }
            Err(e) if env_file.optional && e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => found.notes.push(format!(
                "{unit} names EnvironmentFile={} and it cannot be read on the node ({e}){}",
                env_file.path.display(),
                if env_file.optional {
                    ""
                } else {
                    ": systemd would refuse to start the unit"
                }
            )),
        }
    }
    Some(found)
}

/// Apply settings in order: add (later wins) or reset everything before.
fn apply(vars: &mut SourcedVars, settings: &[Setting<(String, String)>], file: &Path) {
    for setting in settings {
        match setting {
            Setting::Add((k, v)) => {
                vars.insert(k.clone(), (v.clone(), file.display().to_string()));
            }
            Setting::Reset => vars.clear(),
        }
    }
}

/// `*.conf` files of the drop-in directories, in file-name order; a name in an earlier
/// directory masks the same name in a later one.
fn dropins(node: &NodeRoot, dirs: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut by_name: BTreeMap<std::ffi::OsString, PathBuf> = BTreeMap::new();
    for dir in dirs {
        for path in node.read_dir(&dir).unwrap_or_default() {
            if path.extension().is_none_or(|e| e != "conf") {
                continue;
            }
            if let Some(name) = path.file_name() {
                by_name.entry(name.to_os_string()).or_insert(path);
            }
        }
    }
    by_name.into_values().collect()
}

/// (section, key, value) of every assignment in an INI-style systemd file.
fn assignments(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in logical_lines(text) {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            out.push((
                section.clone(),
                key.trim().to_string(),
                value.trim().to_string(),
            ));
        }
    }
    out
}

/// Lines with a trailing `\` joined to the next (a comment line never continues).
fn logical_lines(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let comment = current.is_empty() && {
            let t = line.trim_start();
            t.starts_with('#') || t.starts_with(';')
        };
        match line.strip_suffix('\\') {
            Some(head) if !comment => {
                current.push_str(head);
                current.push(' ');
            }
            _ => {
                current.push_str(line);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// An `Environment=` value split into assignments as systemd splits it (words separated by
/// whitespace; single or double quotes anywhere in a word; backslash escapes), words that are
/// no valid assignment dropped.
pub fn split_assignments(value: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), '\\') | (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                }
                in_word = true;
            }
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    push_assignment(&mut out, std::mem::take(&mut word));
                }
                in_word = false;
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        push_assignment(&mut out, word);
    }
    out
}

fn push_assignment(out: &mut Vec<(String, String)>, word: String) {
    if let Some((k, v)) = word.split_once('=')
        && valid_name(k)
    {
        out.push((k.to_string(), v.to_string()));
    }
}

/// A variable name systemd accepts: letters, digits and `_`, not starting with a digit.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An environment file's value: `'…'` literal, `"…"` with escapes, bare with escapes and
/// trailing whitespace dropped.
fn unquote_value(value: &str) -> String {
    if let Some(inner) = value.strip_prefix('\'') {
        return inner.split('\'').next().unwrap_or_default().to_string();
    }
    let (body, quoted) = match value.strip_prefix('"') {
        Some(inner) => (inner, true),
        None => (value, false),
    };
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted => break,
            '\\' => {
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            c => out.push(c),
        }
    }
    if quoted {
        out
    } else {
        out.trim_end().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_lines_split_as_systemd_splits_them() {
        assert_eq!(
            split_assignments(
                r#""HTTPS_PROXY=http://p:3128" NO_PROXY=a,b "X=y z" Q="quoted in" 9BAD=x"#
            ),
            [
                ("HTTPS_PROXY".to_string(), "http://p:3128".to_string()),
                ("NO_PROXY".to_string(), "a,b".to_string()),
                ("X".to_string(), "y z".to_string()),
                ("Q".to_string(), "quoted in".to_string()),
            ]
        );
        assert_eq!(
            split_assignments(r"A='single quoted' B=esc\ aped"),
            [
                ("A".to_string(), "single quoted".to_string()),
                ("B".to_string(), "esc aped".to_string()),
            ]
        );
    }

    #[test]
    fn a_unit_file_with_sections_comments_and_continuations() {
        let unit = "[Unit]\nEnvironment=NOT=service\n[Service]\n# Environment=COMMENTED=1\nEnvironment=\"HTTPS_PROXY=http://p:3128\" \\\n  NO_PROXY=.svc\nEnvironment=\nEnvironment=AFTER=reset\nEnvironmentFile=-/etc/network/proxy.env\nEnvironmentFile=/etc/default/containerd\n";
        let settings = parse_unit(unit);
        assert_eq!(
            settings.environment,
            vec![
                Setting::Add(("HTTPS_PROXY".into(), "http://p:3128".into())),
                Setting::Add(("NO_PROXY".into(), ".svc".into())),
                Setting::Reset,
                Setting::Add(("AFTER".into(), "reset".into())),
            ]
        );
        assert_eq!(
            settings.environment_files,
            vec![
                Setting::Add(EnvironmentFile {
                    path: "/etc/network/proxy.env".into(),
                    optional: true
                }),
                Setting::Add(EnvironmentFile {
                    path: "/etc/default/containerd".into(),
                    optional: false
                }),
            ]
        );
    }

    #[test]
    fn manager_default_environment() {
        // AKS: /etc/systemd/system.conf.d/proxy.conf.
        let conf = "[Manager]\nDefaultEnvironment=\"HTTP_PROXY=http://10.0.0.4:3128\" \"HTTPS_PROXY=http://10.0.0.4:3128\" \"NO_PROXY=localhost,10.0.0.0/16\"\n";
        let settings = parse_manager(conf);
        assert_eq!(settings.len(), 3);
        assert_eq!(
            settings[2],
            Setting::Add(("NO_PROXY".into(), "localhost,10.0.0.0/16".into()))
        );
        assert!(parse_manager("[Service]\nDefaultEnvironment=A=1\n").is_empty());
    }

    #[test]
    fn environment_files_as_systemd_loads_them() {
        let file = "# Bottlerocket's proxy.env\nHTTPS_PROXY=http://proxy:3128  \nNO_PROXY='localhost,127.0.0.1'\n; other comment\nQUOTED=\"a \\\"b\\\" c\"\nnot an assignment\n1BAD=x\n  SPACED = value\n";
        assert_eq!(
            parse_environment_file(file),
            [
                ("HTTPS_PROXY".to_string(), "http://proxy:3128".to_string()),
                ("NO_PROXY".to_string(), "localhost,127.0.0.1".to_string()),
                ("QUOTED".to_string(), "a \"b\" c".to_string()),
                ("SPACED".to_string(), "value".to_string()),
            ]
        );
    }

    /// A node root with the given files (node path → text).
    fn node_with(name: &str, files: &[(&str, &str)]) -> (NodeRoot, PathBuf) {
        let dir =
            std::env::temp_dir().join(format!("pullpath-systemd-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for (path, text) in files {
            let at = dir.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
            std::fs::write(at, text).expect("write");
        }
        (NodeRoot::at(&dir), dir)
    }

    fn dirs() -> Vec<PathBuf> {
        UNIT_DIRS.iter().map(PathBuf::from).collect()
    }

    #[test]
    fn manager_then_environment_then_environment_files() {
        let (node, dir) = node_with(
            "order",
            &[
                (
                    "/etc/systemd/system.conf.d/proxy.conf",
                    "[Manager]\nDefaultEnvironment=HTTPS_PROXY=http://manager:3128 NO_PROXY=manager\n",
                ),
                (
                    "/usr/lib/systemd/system/containerd.service",
                    "[Service]\nEnvironmentFile=/etc/network/proxy.env\nEnvironment=HTTPS_PROXY=http://unit:3128\n",
                ),
                (
                    "/etc/systemd/system/containerd.service.d/10-proxy.conf",
                    "[Service]\nEnvironment=NO_PROXY=dropin\n",
                ),
                (
                    "/usr/lib/systemd/system/containerd.service.d/10-proxy.conf",
                    "[Service]\nEnvironment=NO_PROXY=masked-by-etc\n",
                ),
                ("/etc/network/proxy.env", "HTTPS_PROXY=http://file:3128\n"),
            ],
        );
        let env = service_environment(&node, &dirs(), "containerd.service").expect("unit found");
        // EnvironmentFile= wins over Environment= though it comes first in the file.
        assert_eq!(
            env.vars["HTTPS_PROXY"],
            ("http://file:3128".into(), "/etc/network/proxy.env".into())
        );
        assert_eq!(
            env.vars["NO_PROXY"],
            (
                "dropin".into(),
                "/etc/systemd/system/containerd.service.d/10-proxy.conf".into()
            )
        );
        assert!(env.notes.is_empty(), "{:?}", env.notes);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_managers_default_environment_alone_reaches_the_unit() {
        let (node, dir) = node_with(
            "manager",
            &[
                (
                    "/etc/systemd/system.conf.d/proxy.conf",
                    "[Manager]\nDefaultEnvironment=\"HTTPS_PROXY=http://10.0.0.4:3128\"\n",
                ),
                (
                    "/lib/systemd/system/containerd.service",
                    "[Service]\nExecStart=/usr/bin/containerd\n",
                ),
            ],
        );
        let env = service_environment(&node, &dirs(), "containerd.service").expect("unit");
        assert_eq!(
            env.vars["HTTPS_PROXY"],
            (
                "http://10.0.0.4:3128".into(),
                "/etc/systemd/system.conf.d/proxy.conf".into()
            )
        );
        assert!(service_environment(&node, &dirs(), "kubelet.service").is_none());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn a_missing_required_environment_file_is_noted() {
        let (node, dir) = node_with(
            "missing",
            &[(
                "/etc/systemd/system/containerd.service",
                "[Service]\nEnvironmentFile=/etc/default/absent\nEnvironmentFile=-/etc/default/optional\n",
            )],
        );
        let env = service_environment(&node, &dirs(), "containerd.service").expect("unit");
        assert_eq!(env.notes.len(), 1, "{:?}", env.notes);
        assert!(env.notes[0].contains("/etc/default/absent"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
