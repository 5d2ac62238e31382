//! containerd's `config.toml`, as far as the pull depends on it: which directories it reads
//! registry hosts (`hosts.toml`) from, and how many layers it downloads at once.
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
//!
//! From 2.1 on, the CRI plugin pulls through the transfer service unless a setting the transfer
//! service lacks makes it pull by itself (`CheckLocalImagePullConfigs`,
//! `internal/cri/config/config.go`, the same list from v2.1.0 to v2.3.4), and that path hands
//! `config_path` whole to `registry.WithHostDir` (`pullImageWithTransferService`), which
//! `HostDirFromRoot` takes as one directory: a list is not split there, so a list names no
//! directory at all. The lab's containerd 2.1.9 pulls past a hosts.toml in the second root.

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

/// What of config.toml a pull depends on.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullSettings {
    /// `config_path`, as written (empty counts as unset, as containerd treats it).
    pub config_path: Option<String>,
    /// Whether the deprecated `mirrors` table is set (it stops 2.2's default).
    pub mirrors: bool,
    /// The first setting that makes containerd 2.1 and later pull by itself rather than
    /// through its transfer service (which takes `config_path` as one directory); `None`: none.
    pub local_pull: Option<String>,
    /// The CRI plugin's `max_concurrent_downloads` and the table it is written in.
    pub cri_downloads: Option<(i64, String)>,
    /// The transfer service's `max_concurrent_downloads`
    /// (`plugins."io.containerd.transfer.v1.local"`), which 2.1 and later pull through.
    pub transfer_downloads: Option<i64>,
}

/// Why config.toml could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContainerdConfigError {
    #[error("{path} is not TOML containerd can load ({reason})")]
    NotToml { path: String, reason: String },
}

/// The CRI plugin's image settings table in each schema, the first found read: version 3
/// (2.x), version 2 (1.x), version 1.
const CRI_IMAGE_PLUGINS: [&str; 3] = [
    "io.containerd.cri.v1.images",
    "io.containerd.grpc.v1.cri",
    "cri",
];

/// What a pull depends on in a config.toml's text.
pub fn pull_settings(text: &str, path: &Path) -> Result<PullSettings, ContainerdConfigError> {
    let config: toml::Table =
        text.parse()
            .map_err(|e: toml::de::Error| ContainerdConfigError::NotToml {
                path: path.display().to_string(),
                reason: e.message().to_string(),
            })?;
    let plugins = config.get("plugins").and_then(toml::Value::as_table);
    let registry = CRI_IMAGE_PLUGINS
        .iter()
        .find_map(|plugin| plugins?.get(*plugin)?.get("registry")?.as_table());
    let local_pull = local_pull_setting(plugins);
    let cri_downloads = CRI_IMAGE_PLUGINS.iter().find_map(|plugin| {
        let value = plugins?.get(*plugin)?.get("max_concurrent_downloads")?;
        Some((value.as_integer()?, format!("plugins.\"{plugin}\"")))
    });
    let transfer_downloads = plugins
        .and_then(|p| p.get("io.containerd.transfer.v1.local"))
        .and_then(|t| t.get("max_concurrent_downloads"))
        .and_then(toml::Value::as_integer);
    let Some(registry) = registry else {
        return Ok(PullSettings {
            local_pull,
            cri_downloads,
            transfer_downloads,
            ..PullSettings::default()
        });
    };
    Ok(PullSettings {
        local_pull,
        cri_downloads,
        transfer_downloads,
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

/// The first of the CRI image settings that keep containerd 2.1 and later from pulling through
/// its transfer service, as `CheckLocalImagePullConfigs` checks them on Linux (defaults:
/// `disable_snapshot_annotations = true`, `max_concurrent_downloads = 3`), in the version 3
/// table or the version 2 one (`disable_snapshot_annotations` and `discard_unpacked_layers`
/// under its `containerd` table there).
fn local_pull_setting(plugins: Option<&toml::Table>) -> Option<String> {
    let plugins = plugins?;
    let tables: Vec<(&str, &toml::Table)> = [
        ("io.containerd.cri.v1.images", None),
        ("io.containerd.grpc.v1.cri", None),
        ("io.containerd.grpc.v1.cri", Some("containerd")),
    ]
    .into_iter()
    .filter_map(|(plugin, sub)| {
        let table = plugins.get(plugin)?.as_table()?;
        match sub {
            Some(sub) => Some((plugin, table.get(sub)?.as_table()?)),
            None => Some((plugin, table)),
        }
    })
    .collect();
    let setting = |key: &str, local: &dyn Fn(&toml::Value) -> bool| {
        tables.iter().find_map(|(plugin, table)| {
            let value = table.get(key)?;
            local(value).then(|| format!("{key} = {value} in plugins.\"{plugin}\""))
        })
    };
    let is = |want: bool| move |v: &toml::Value| v.as_bool() == Some(want);
    let filled = |v: &toml::Value| v.as_table().is_some_and(|t| !t.is_empty());
    setting("use_local_image_pull", &is(true))
        .or_else(|| setting("disable_snapshot_annotations", &is(false)))
        .or_else(|| setting("discard_unpacked_layers", &is(true)))
        .or_else(|| {
            tables.iter().find_map(|(plugin, table)| {
                let registry = table.get("registry")?.as_table()?;
                ["mirrors", "configs", "auths"].iter().find_map(|key| {
                    filled(registry.get(*key)?)
                        .then(|| format!("registry.{key} in plugins.\"{plugin}\""))
                })
            })
        })
        .or_else(|| setting("max_concurrent_downloads", &|v| v.as_integer() != Some(3)))
        .or_else(|| setting("image_pull_with_sync_fs", &is(true)))
}

/// `config_path` as the runtime's pull reads it: split (`filepath.SplitList`), or whole where
/// containerd 2.1 and later pull through the transfer service; and how, for the report.
fn config_path_roots(
    value: &str,
    section: &PullSettings,
    runtime: &RuntimeIdentity,
) -> (Vec<PathBuf>, String) {
    let transfer = version_at_least(runtime, (2, 1)) == Some(true);
    match (&section.local_pull, transfer) {
        (None, true) if value.contains(':') => (
            vec![PathBuf::from(value)],
            format!(
                ", taken whole as one directory: containerd {} pulls through its transfer service, which does not split the list (no setting makes it pull by itself)",
                runtime.version.as_deref().unwrap_or("2.1+")
            ),
        ),
        (Some(setting), true) if value.contains(':') => (
            split_config_path(value),
            format!(", split: {setting} makes containerd pull by itself"),
        ),
        _ => (split_config_path(value), String::new()),
    }
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
    section: &Result<Option<PullSettings>, ContainerdConfigError>,
    config_file: &Path,
    runtime: &RuntimeIdentity,
) -> HostsDirs {
    let shown = config_file.display();
    let section = match section {
        Ok(Some(section)) => section.clone(),
        Ok(None) => PullSettings::default(),
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
        let (roots, how) = config_path_roots(value, &section, runtime);
        return HostsDirs {
            roots,
            origin: format!("config_path in {shown}{how}"),
        };
    }
    match version_at_least(runtime, (2, 2)) {
        Some(true) if !section.mirrors => {
            let (roots, how) = config_path_roots(DEFAULT_CONFIG_PATH_2_2, &section, runtime);
            HostsDirs {
                roots,
                origin: format!(
                    "no config_path in {shown}: containerd {} defaults to {DEFAULT_CONFIG_PATH_2_2}{how}",
                    runtime.version.as_deref().unwrap_or("2.2+")
                ),
            }
        }
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

/// How many layers one pull downloads at once, and which setting decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownloadLimit {
    /// `None`: every layer at once (a value of 0 or less makes containerd create no limiter).
    pub at_once: Option<usize>,
    /// Where the number came from, for the report.
    pub origin: String,
}

/// containerd's `max_concurrent_downloads` when no file sets it, in the CRI plugin and the
/// transfer service alike (`config_unix.go`, `plugins/transfer/plugin.go`).
pub const DEFAULT_DOWNLOADS: i64 = 3;

/// How many layers the node's containerd downloads at once for one pull: the CRI plugin's
/// `max_concurrent_downloads` (`WithMaxConcurrentDownloads` in its own pull), except where 2.1
/// and later pull through the transfer service, whose own setting applies; any CRI value but
/// 3 is one of the settings that make containerd pull by itself.
pub fn download_limit(
    settings: &Result<Option<PullSettings>, ContainerdConfigError>,
    config_file: &Path,
    runtime: &RuntimeIdentity,
) -> DownloadLimit {
    let shown = config_file.display();
    let limit = |value: i64| usize::try_from(value).ok().filter(|n| *n > 0);
    let settings = match settings {
        Ok(Some(settings)) => settings,
        Ok(None) => {
            return DownloadLimit {
                at_once: limit(DEFAULT_DOWNLOADS),
                origin: format!("containerd's default: no {shown} was read"),
            };
        }
        Err(e) => {
            return DownloadLimit {
                at_once: limit(DEFAULT_DOWNLOADS),
                origin: format!("containerd's default: {e}"),
            };
        }
    };
    let transfer = settings.local_pull.is_none() && version_at_least(runtime, (2, 1)) == Some(true);
    match (
        transfer,
        settings.transfer_downloads,
        &settings.cri_downloads,
    ) {
        (true, Some(value), _) => DownloadLimit {
            at_once: limit(value),
            origin: format!(
                "max_concurrent_downloads = {value} in plugins.\"io.containerd.transfer.v1.local\" of {shown}: containerd {} pulls through its transfer service",
                runtime.version.as_deref().unwrap_or("2.1+")
            ),
        },
        (_, _, Some((value, table))) => DownloadLimit {
            at_once: limit(*value),
            origin: format!("max_concurrent_downloads = {value} in {table} of {shown}"),
        },
        _ => DownloadLimit {
            at_once: limit(DEFAULT_DOWNLOADS),
            origin: format!("containerd's default: no max_concurrent_downloads in {shown}"),
        },
    }
}

/// Whether this containerd is `at_least` that (major, minor): 2.2 defaults `config_path`, 2.1
/// pulls through the transfer service; `None` when the version is not known, and so neither is
/// the answer.
fn version_at_least(runtime: &RuntimeIdentity, at_least: (u32, u32)) -> Option<bool> {
    let version = runtime.version.as_deref()?;
    let mut numbers = version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|n| n.parse::<u32>());
    let (Some(Ok(major)), Some(Ok(minor))) = (numbers.next(), numbers.next()) else {
        return None;
    };
    Some((major, minor) >= at_least)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str) -> PullSettings {
        pull_settings(text, Path::new("/etc/containerd/config.toml")).expect("TOML")
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
        let dirs = hosts_dirs(&Ok(Some(section(v3))), Path::new(CONFIG), &runtime("2.0.4"));
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
    fn from_2_1_the_transfer_service_takes_a_list_whole_unless_a_setting_makes_containerd_pull_itself()
     {
        let list = "/etc/containerd/certs.d:/etc/docker/certs.d";
        let v3 = |extra: &str| {
            section(&format!(
                "version = 3\n[plugins.\"io.containerd.cri.v1.images\"]\n{extra}\n[plugins.\"io.containerd.cri.v1.images\".registry]\nconfig_path = \"{list}\"\n"
            ))
        };
        let dirs = |s: PullSettings, version: &str| {
            hosts_dirs(&Ok(Some(s)), Path::new(CONFIG), &runtime(version))
        };
        // The lab's containerd 2.1.9 pulled past a hosts.toml in the second root.
        let whole = dirs(v3(""), "2.1.9");
        assert_eq!(whole.roots, [PathBuf::from(list)]);
        assert!(
            whole.origin.contains("transfer service"),
            "{}",
            whole.origin
        );
        assert_eq!(dirs(v3(""), "2.3.4").roots.len(), 1);
        // 1.7 and 2.0 have no transfer-service pull in CRI: the list is split.
        assert_eq!(dirs(v3(""), "2.0.11").roots.len(), 2);
        assert_eq!(dirs(v3(""), "1.7.27").roots.len(), 2);
        // EKS's AL2023 template (discard_unpacked_layers), and each other local-pull setting.
        for extra in [
            "discard_unpacked_layers = true",
            "use_local_image_pull = true",
            "disable_snapshot_annotations = false",
            "max_concurrent_downloads = 5",
            "image_pull_with_sync_fs = true",
            "[plugins.\"io.containerd.cri.v1.images\".registry.configs.\"r.example\".auth]\nusername = \"u\"",
        ] {
            let split = dirs(v3(extra), "2.1.9");
            assert_eq!(split.roots.len(), 2, "{extra}: {split:?}");
            assert!(split.origin.contains("pull by itself"), "{}", split.origin);
        }
        // Settings at their defaults change nothing.
        for extra in [
            "max_concurrent_downloads = 3",
            "disable_snapshot_annotations = true",
        ] {
            assert_eq!(dirs(v3(extra), "2.1.9").roots.len(), 1, "{extra}");
        }
        // A version 2 file on 2.x: the containerd table's settings count too.
        let v2 = section(&format!(
            "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndiscard_unpacked_layers = true\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\nconfig_path = \"{list}\"\n"
        ));
        assert_eq!(dirs(v2, "2.1.9").roots.len(), 2);
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
        // 2.2's default is a list, which its transfer-service pull takes whole.
        assert_eq!(
            hosts_dirs(&none, Path::new(CONFIG), &runtime("2.2.0")).roots,
            [PathBuf::from(DEFAULT_CONFIG_PATH_2_2)]
        );
        let local = Ok(Some(section(
            "version = 3\n[plugins.\"io.containerd.cri.v1.images\"]\nuse_local_image_pull = true\n",
        )));
        assert_eq!(
            hosts_dirs(&local, Path::new(CONFIG), &runtime("2.2.0")).roots,
            split_config_path(DEFAULT_CONFIG_PATH_2_2)
        );
        // No config file at all is the same as an empty one.
        assert_eq!(
            hosts_dirs(&Ok(None), Path::new(CONFIG), &runtime("v2.3.1"))
                .roots
                .len(),
            1
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
        let broken = pull_settings("version = [", Path::new(CONFIG));
        assert!(matches!(broken, Err(ContainerdConfigError::NotToml { .. })));
        let dirs = hosts_dirs(&broken.map(Some), Path::new(CONFIG), &runtime("1.7.1"));
        assert!(dirs.roots.is_empty() && dirs.origin.contains("not TOML"));
    }

    #[test]
    fn layers_at_once_follow_the_setting_the_runtime_s_pull_reads() {
        let limit = |text: &str, version: &str| {
            download_limit(
                &pull_settings(text, Path::new(CONFIG)).map(Some),
                Path::new(CONFIG),
                &runtime(version),
            )
        };
        let transfer =
            "[plugins.\"io.containerd.transfer.v1.local\"]\nmax_concurrent_downloads = 8\n";
        // Nothing set: 3, containerd's default in both of its pull paths.
        let default = limit("version = 3\n", "2.1.9");
        assert_eq!(default.at_once, Some(3));
        assert!(default.origin.starts_with("containerd's default"));
        // 1.7's CRI table (version 2 file), 2.x's images table; 0 or less: no limit.
        let v2 =
            "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nmax_concurrent_downloads = 5\n";
        assert_eq!(limit(v2, "1.7.27").at_once, Some(5));
        let v3 = |n: i64| {
            format!(
                "version = 3\n[plugins.\"io.containerd.cri.v1.images\"]\nmax_concurrent_downloads = {n}\n{transfer}"
            )
        };
        assert_eq!(limit(&v3(0), "2.0.4").at_once, None);
        // 2.1 and later: a CRI value other than 3 makes containerd pull by itself, with it...
        let own = limit(&v3(6), "2.1.9");
        assert_eq!(own.at_once, Some(6));
        assert!(
            own.origin.contains("io.containerd.cri.v1.images"),
            "{}",
            own.origin
        );
        // ...else the transfer service pulls, with its own setting; 2.0 has no such path.
        let through = limit(&v3(3), "2.1.9");
        assert_eq!(through.at_once, Some(8));
        assert!(
            through.origin.contains("transfer service"),
            "{}",
            through.origin
        );
        assert_eq!(limit(&v3(3), "2.0.4").at_once, Some(3));
        // A file containerd cannot load: its default, and why.
        let broken = limit("version = [", "2.1.9");
        assert_eq!(broken.at_once, Some(3));
        assert!(broken.origin.contains("not TOML"), "{}", broken.origin);
        // No file at all: its default, and that none was read.
        let none = download_limit(&Ok(None), Path::new(CONFIG), &runtime("1.7.27"));
        assert_eq!(none.at_once, Some(3));
        assert!(
            none.origin.contains("no /etc/containerd/config.toml"),
            "{}",
            none.origin
        );
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
