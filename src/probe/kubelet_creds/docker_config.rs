//! The node's docker config as the kubelet finds it: the search paths, the first valid file,
//! and the pull secrets' files, each read into `(key, credentials)` entries.

use std::path::{Path, PathBuf};

use crate::credentials::Credentials;
use crate::node_root::NodeRoot;
use crate::probe::creds::{self, CredsError};

/// The kubelet's search paths for the node's docker config (k/k `config.go`:
/// `DefaultDockerConfigJSONPaths` and `DefaultDockercfgPaths`, the preferred path being the
/// kubelet's `--root-dir`).
#[derive(Debug, Clone, Default)]
pub struct NodeConfigSearch {
    /// `<dir>/config.json`, first valid file wins.
    pub config_json_dirs: Vec<PathBuf>,
    /// Then `<dir>/.dockercfg`.
    pub dockercfg_dirs: Vec<PathBuf>,
}

/// The kubelet's order: its root dir, its working directory, `$HOME/.docker` (`$HOME` for
/// `.dockercfg`), then `/.docker` (`/`).
pub fn node_config_search(
    root_dir: &Path,
    working_dir: Option<&Path>,
    home: Option<&Path>,
) -> NodeConfigSearch {
    let mut json = vec![root_dir.to_path_buf()];
    let mut legacy = vec![root_dir.to_path_buf()];
    if let Some(cwd) = working_dir {
        json.push(cwd.to_path_buf());
        legacy.push(cwd.to_path_buf());
    }
    if let Some(home) = home {
        json.push(home.join(".docker"));
        legacy.push(home.to_path_buf());
    }
    json.push(PathBuf::from("/.docker"));
    legacy.push(PathBuf::from("/"));
    NodeConfigSearch {
        config_json_dirs: json,
        dockercfg_dirs: legacy,
    }
}

pub(super) fn shown_dirs(dirs: &[PathBuf]) -> String {
    dirs.iter()
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a docker config file (a node's, or a pod's pull secret) gives no entries.
#[derive(Debug, thiserror::Error)]
pub enum DockerConfigProblem {
    #[error("cannot read {}: {error}", path.display())]
    Unreadable {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("{}: {error}", path.display())]
    Invalid { path: PathBuf, error: CredsError },
}

impl DockerConfigProblem {
    /// The file at fault.
    pub fn path(&self) -> &Path {
        match self {
            DockerConfigProblem::Unreadable { path, .. }
            | DockerConfigProblem::Invalid { path, .. } => path,
        }
    }
}

pub(super) fn read_auths(path: &Path) -> Result<Vec<(String, Credentials)>, DockerConfigProblem> {
    let text = std::fs::read_to_string(path).map_err(|error| DockerConfigProblem::Unreadable {
        path: path.to_path_buf(),
        error,
    })?;
    creds::parse_auths(&text).map_err(|error| DockerConfigProblem::Invalid {
        path: path.to_path_buf(),
        error,
    })
}

pub(super) type NodeConfig = (PathBuf, Vec<(String, Credentials)>);

/// The kubelet's `ReadDockerConfigFile`: config.json along its paths, then `.dockercfg`; an
/// invalid file is passed over (the kubelet logs it and looks further).
pub(super) fn read_node_config(
    node: &NodeRoot,
    search: &NodeConfigSearch,
) -> Result<Option<NodeConfig>, DockerConfigProblem> {
    let mut first_invalid = None;
    let candidates = search
        .config_json_dirs
        .iter()
        .map(|d| (d.join("config.json"), true))
        .chain(
            search
                .dockercfg_dirs
                .iter()
                .map(|d| (d.join(".dockercfg"), false)),
        );
    for (path, is_json) in candidates {
        let Ok(text) = node.read_to_string(&path) else {
            continue;
        };
        let parsed = if is_json {
            creds::parse_auths(&text)
        } else {
            // `.dockercfg` is the bare map of entries.
            creds::parse_auths(&format!(r#"{{"auths":{text}}}"#))
        };
        match parsed {
            Ok(auths) => return Ok(Some((path, auths))),
            Err(error) => {
                first_invalid.get_or_insert(DockerConfigProblem::Invalid { path, error });
            }
        }
    }
    match first_invalid {
        Some(invalid) => Err(invalid),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_config_search_follows_the_kubelet() {
        let search = node_config_search(
            Path::new("/var/lib/kubelet"),
            Some(Path::new("/w")),
            Some(Path::new("/root")),
        );
        let json: Vec<String> = search
            .config_json_dirs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(
            json,
            ["/var/lib/kubelet", "/w", "/root/.docker", "/.docker"]
        );
        let legacy: Vec<String> = search
            .dockercfg_dirs
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        assert_eq!(legacy, ["/var/lib/kubelet", "/w", "/root", "/"]);
    }
}
