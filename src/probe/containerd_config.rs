//! containerd's `config.toml`, as far as the pull depends on it: which directories it reads
//! registry hosts (`hosts.toml`) from.
//!
//! Read from containerd's source: the CRI plugin's `Registry.ConfigPath` (`config_path`) is a
//! `:`-separated list (`filepath.SplitList`), each root tried in order for `host_port_`, `host`,
//! then `_default`, the first root holding one winning (`hostDirFromRoots`,
//! `internal/cri/server/images/image_pull.go`). Its table is
//! `plugins."io.containerd.grpc.v1.cri".registry` in a version 2 file (1.x) and
//! `plugins."io.containerd.cri.v1.images".registry` in a version 3 file (2.x), `plugins.cri` in
//! a version 1 file. Unset, containerd before 2.2 reads no hosts directory at all (the
//! deprecated `mirrors` or the registry's own host); from 2.2 on Linux, with no `mirrors`, it
//! defaults to `/etc/containerd/certs.d:/etc/docker/certs.d` (`plugins/cri/images/plugin.go`,
//! commit 5386802f, first in v2.2.0).

use std::path::{Path, PathBuf};

use crate::runtime::version::RuntimeIdentity;

/// Where containerd reads its configuration when started without `--config`.
pub const DEFAULT_CONFIG: &str = "/etc/containerd/config.toml";

/// The `--config`/`-c` of a containerd command line (k3s starts its containerd with
/// `-c /var/lib/rancher/k3s/agent/etc/containerd/config.toml`), the last one winning.
pub fn config_flag(args: &[String]) -> Option<PathBuf> {
    let mut found = None;
    let mut words = args.iter().skip(1);
    while let Some(word) = words.next() {
        let bare = word.trim_start_matches('-');
        if word == bare {
            continue;
        }
        match bare.split_once('=') {
            Some(("config" | "c", value)) => found = Some(PathBuf::from(value)),
            None if bare == "config" || bare == "c" => found = words.next().map(PathBuf::from),
            _ => {}
        }
    }
    found
}

/// The default `config_path` of containerd 2.2 and later on Linux.
pub const DEFAULT_CONFIG_PATH_2_2: &str = "/etc/containerd/certs.d:/etc/docker/certs.d";

/// The registry table of config.toml.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistrySection {
    /// `config_path`, as written (empty counts as unset, as containerd treats it).
    pub config_path: Option<String>,
    /// Whether the deprecated `mirrors` table is set (it stops 2.2's default).
    pub mirrors: bool,
}

/// Why config.toml could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{path} is not TOML containerd can load ({reason})")]
    NotToml { path: String, reason: String },
}

/// The registry section of a config.toml's text.
pub fn registry_section(text: &str, path: &Path) -> Result<RegistrySection, ConfigError> {
    let config: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigError::NotToml {
            path: path.display().to_string(),
            reason: e.message().to_string(),
        })?;
    let plugins = config.get("plugins").and_then(toml::Value::as_table);
    let registry = [
        "io.containerd.cri.v1.images",
        "io.containerd.grpc.v1.cri",
        "cri",
    ]
    .iter()
    .find_map(|plugin| plugins?.get(*plugin)?.get("registry")?.as_table());
    let Some(registry) = registry else {
        return Ok(RegistrySection::default());
    };
    Ok(RegistrySection {
        config_path: registry
            .get("config_path")
            .and_then(toml::Value::as_str)
            .filter(|p| !p.is_empty())
            .map(str::to_string),
        mirrors: registry
            .get("mirrors")
            .and_then(toml::Value::as_table)
            .is_some_and(|m| !m.is_empty()),
    })
}

/// The directories containerd reads registry hosts from, and how that was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsDirs {
    /// Node paths, in the order containerd tries them; empty: no hosts directory is read.
    pub roots: Vec<PathBuf>,
    /// Where the list came from, for the report (`config_path in /etc/containerd/config.toml`).
    pub origin: String,
}

/// `config_path` split at `:` as Go's `filepath.SplitList` splits it on Linux. An empty entry
/// (Go keeps it) would name containerd's working directory, `/` under systemd, as a hosts root:
/// no node image writes one, and it is dropped here.
pub fn split_config_path(value: &str) -> Vec<PathBuf> {
    value
        .split(':')
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Which hosts directories the node's containerd reads: `config_path` from `config.toml` (read
/// at `config_file`, a node path), else the default of the runtime's version.
pub fn hosts_dirs(
    section: &Result<Option<RegistrySection>, ConfigError>,
    config_file: &Path,
    runtime: &RuntimeIdentity,
) -> HostsDirs {
    let shown = config_file.display();
    let section = match section {
        Ok(Some(section)) => section.clone(),
        Ok(None) => RegistrySection::default(),
        Err(e) => {
            return HostsDirs {
                roots: Vec::new(),
                origin: format!(
                    "{e}: containerd would not start with it, so no hosts directory is assumed"
                ),
            };
        }
    };
    if let Some(value) = &section.config_path {
        return HostsDirs {
            roots: split_config_path(value),
            origin: format!("config_path in {shown}"),
        };
    }
    match defaults_config_path(runtime) {
        Some(true) if !section.mirrors => HostsDirs {
            roots: split_config_path(DEFAULT_CONFIG_PATH_2_2),
            origin: format!(
                "no config_path in {shown}: containerd {} defaults to {DEFAULT_CONFIG_PATH_2_2}",
                runtime.version.as_deref().unwrap_or("2.2+")
            ),
        },
        Some(true) => HostsDirs {
            roots: Vec::new(),
            origin: format!(
                "no config_path in {shown} and its deprecated `mirrors` set: containerd reads no hosts directory"
            ),
        },
        Some(false) => HostsDirs {
            roots: Vec::new(),
            origin: format!(
                "no config_path in {shown}: containerd {} reads no hosts directory (only 2.2 and later default to {DEFAULT_CONFIG_PATH_2_2})",
                runtime.version.as_deref().unwrap_or(runtime.line.as_str())
            ),
        },
        None => HostsDirs {
            roots: Vec::new(),
            origin: format!(
                "no config_path in {shown} and the runtime's version unknown: containerd {} rules assumed (no hosts directory; 2.2 and later default to {DEFAULT_CONFIG_PATH_2_2})",
                runtime.line.as_str()
            ),
        },
    }
}

/// Whether this containerd defaults `config_path` (2.2 and later); `None` when the version is
/// not known, and so neither is the answer.
fn defaults_config_path(runtime: &RuntimeIdentity) -> Option<bool> {
    let version = runtime.version.as_deref()?;
    let mut numbers = version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|n| n.parse::<u32>());
    let (Some(Ok(major)), Some(Ok(minor))) = (numbers.next(), numbers.next()) else {
        return None;
    };
    Some((major, minor) >= (2, 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> RegistrySection {
        registry_section(text, Path::new("/etc/containerd/config.toml")).expect("TOML")
    }

    fn runtime(version: &str) -> RuntimeIdentity {
        RuntimeIdentity::from_flag(version).expect("a containerd version")
    }

    const CONFIG: &str = "/etc/containerd/config.toml";

    #[test]
    fn config_path_in_each_schema() {
        // AKS Ubuntu 22.04 (version 2), AKS 24.04 / Azure Linux 3 (version 3), EKS AL2023's list.
        let v2 = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\nconfig_path = \"/etc/containerd/certs.d\"\n";
        let v3 = "version = 3\n[plugins.\"io.containerd.cri.v1.images\".registry]\nconfig_path = \"/etc/containerd/certs.d:/etc/docker/certs.d\"\n";
        assert_eq!(
            section(v2).config_path.as_deref(),
            Some("/etc/containerd/certs.d")
        );
        let dirs = hosts_dirs(&Ok(Some(section(v3))), Path::new(CONFIG), &runtime("2.1.4"));
        assert_eq!(
            dirs.roots,
            [
                PathBuf::from("/etc/containerd/certs.d"),
                PathBuf::from("/etc/docker/certs.d")
            ]
        );
        assert!(
            dirs.origin
                .contains("config_path in /etc/containerd/config.toml")
        );
    }

    #[test]
    fn without_config_path_only_2_2_reads_a_default() {
        let none = Ok(Some(section("version = 2\n")));
        assert!(
            hosts_dirs(&none, Path::new(CONFIG), &runtime("1.7.27"))
                .roots
                .is_empty()
        );
        assert!(
            hosts_dirs(&none, Path::new(CONFIG), &runtime("2.1.9"))
                .roots
                .is_empty()
        );
        assert_eq!(
            hosts_dirs(&none, Path::new(CONFIG), &runtime("2.2.0")).roots,
            split_config_path(DEFAULT_CONFIG_PATH_2_2)
        );
        // No config file at all is the same as an empty one.
        assert_eq!(
            hosts_dirs(&Ok(None), Path::new(CONFIG), &runtime("v2.3.1"))
                .roots
                .len(),
            2
        );
        let mirrors = Ok(Some(section(
            "version = 3\n[plugins.\"io.containerd.cri.v1.images\".registry.mirrors.\"docker.io\"]\nendpoint = [\"https://m.example\"]\n",
        )));
        assert!(
            hosts_dirs(&mirrors, Path::new(CONFIG), &runtime("2.2.1"))
                .roots
                .is_empty()
        );
    }

    #[test]
    fn an_empty_config_path_is_unset_and_a_broken_file_is_said() {
        assert_eq!(
            section("[plugins.cri.registry]\nconfig_path = \"\"\n").config_path,
            None
        );
        let broken = registry_section("version = [", Path::new(CONFIG));
        assert!(matches!(broken, Err(ConfigError::NotToml { .. })));
        let dirs = hosts_dirs(&broken.map(Some), Path::new(CONFIG), &runtime("1.7.1"));
        assert!(dirs.roots.is_empty() && dirs.origin.contains("not TOML"));
    }

    #[test]
    fn the_config_file_a_containerd_was_started_with() {
        let line = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(
            config_flag(&line(&[
                "containerd",
                "-c",
                "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
                "-a",
                "/run/k3s/containerd/containerd.sock"
            ])),
            Some(PathBuf::from(
                "/var/lib/rancher/k3s/agent/etc/containerd/config.toml"
            ))
        );
        assert_eq!(
            config_flag(&line(&[
                "/usr/bin/containerd",
                "--config=/etc/containerd/other.toml"
            ])),
            Some(PathBuf::from("/etc/containerd/other.toml"))
        );
        assert_eq!(config_flag(&line(&["/usr/bin/containerd"])), None);
        assert_eq!(
            config_flag(&line(&["/usr/bin/containerd", "--log-level", "info"])),
            None
        );
    }

    #[test]
    fn the_list_splits_at_colons_without_empty_entries() {
        assert_eq!(
            split_config_path("/a::/b:"),
            [PathBuf::from("/a"), PathBuf::from("/b")]
        );
    }
}
