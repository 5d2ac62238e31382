//! k3s's agent as the kubelet it runs inside its own process: there is no `kubelet` process on
//! a k3s node (`pkg/daemons/executor` `Embedded.Kubelet`), so the kubelet's flags are what k3s
//! passes it — its defaults, then every `kubelet-arg` from its config files and command line.
//!
//! Read from k3s's source: the config file (`--config`/`-c`, `K3S_CONFIG_FILE`, default
//! `/etc/rancher/k3s/config.yaml`) becomes flags inserted after the subcommand, so the command
//! line's flags override it and a list flag (`kubelet-arg`) is appended to
//! (`pkg/configfilearg/parser.go`); the files of `config.yaml.d/*.yaml` follow in name order,
//! a key replacing the one before unless it ends in `+`, which appends (docs.k3s.io
//! "Configuration File", Multiple Config Files). The kubelet is given the runtime's socket
//! (`--container-runtime-endpoint`, default `/run/k3s/containerd/containerd.sock`, the embedded
//! containerd's `-a`) and, when both exist, the credential provider's
//! `/var/lib/rancher/credentialprovider/{bin,config.yaml}` (`pkg/daemons/agent/agent_linux.go`
//! `kubeletArgsAndConfig`, `ImageCredProvAvailable`; `pkg/cli/cmds/agent.go`).
//!
//! RKE2 differs: it runs the kubelet as a process of its own (rancher/rke2
//! `pkg/podexecutor/staticpod.go` `Kubelet`, `exec.Command(s.KubeletPath, args...)`), with the
//! same k3s-built flags on its command line, so an RKE2 node's kubelet is read as any other.

use std::path::{Path, PathBuf};

use super::process::RunningProcess;
use crate::node_root::NodeRoot;

/// The runtime socket k3s gives its kubelet when none is configured.
pub const K3S_RUNTIME_SOCKET: &str = "/run/k3s/containerd/containerd.sock";

/// k3s's config file when neither `--config` nor `K3S_CONFIG_FILE` names one.
pub const K3S_CONFIG: &str = "/etc/rancher/k3s/config.yaml";

/// The credential provider k3s hands its kubelet when both exist on the node.
pub const K3S_PROVIDER_BIN_DIR: &str = "/var/lib/rancher/credentialprovider/bin";
pub const K3S_PROVIDER_CONFIG: &str = "/var/lib/rancher/credentialprovider/config.yaml";

/// Whether a process is k3s (`k3s`, or the `k3s-server`/`k3s-agent` it runs as), by its name
/// (`comm`) or its command line's program.
pub fn is_k3s(comm: &str, args: &[String]) -> bool {
    let program = args
        .first()
        .and_then(|a| Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    [comm.trim(), program].iter().any(|name| {
        *name == "k3s" || name.starts_with("k3s-server") || name.starts_with("k3s-agent")
    })
}

/// The lowest pid under `proc` that is k3s.
pub fn k3s_process(proc: &Path) -> Option<RunningProcess> {
    super::process::pids(proc).into_iter().find_map(|pid| {
        let comm = std::fs::read_to_string(proc.join(pid.to_string()).join("comm")).ok()?;
        let process = RunningProcess::of_pid(proc, pid)?;
        is_k3s(&comm, &process.args).then_some(process)
    })
}

/// Why a k3s config file gives no settings (k3s itself would not start with it).
#[derive(Debug, thiserror::Error)]
pub enum K3sConfigProblem {
    #[error("not YAML ({0})")]
    NotYaml(serde_yaml_ng::Error),
    #[error("not a mapping of settings")]
    NotAMapping,
}

/// A k3s config file's settings as the flags k3s makes of them (`--key value`, a list one flag
/// per item), or why it cannot be read as YAML.
pub fn config_flags(text: &str) -> Result<Vec<(String, String)>, K3sConfigProblem> {
    let value: serde_yaml_ng::Value =
        serde_yaml_ng::from_str(text).map_err(K3sConfigProblem::NotYaml)?;
    let Some(map) = value.as_mapping() else {
        return match value {
            serde_yaml_ng::Value::Null => Ok(Vec::new()),
            _ => Err(K3sConfigProblem::NotAMapping),
        };
    };
    let scalar = |v: &serde_yaml_ng::Value| match v {
        serde_yaml_ng::Value::String(s) => Some(s.clone()),
        serde_yaml_ng::Value::Bool(b) => Some(b.to_string()),
        serde_yaml_ng::Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    let mut flags = Vec::new();
    for (key, value) in map {
        let Some(key) = key.as_str() else { continue };
        match value {
            serde_yaml_ng::Value::Sequence(items) => flags.extend(
                items
                    .iter()
                    .filter_map(scalar)
                    .map(|v| (key.to_string(), v)),
            ),
            other => flags.extend(scalar(other).map(|v| (key.to_string(), v))),
        }
    }
    Ok(flags)
}

/// The config files' settings merged in order: a later file's key replaces the earlier ones,
/// unless it ends in `+`, which appends.
pub fn merge_config_flags(files: &[Vec<(String, String)>]) -> Vec<(String, String)> {
    let mut merged: Vec<(String, String)> = Vec::new();
    for file in files {
        let mut replaced: Vec<&str> = Vec::new();
        for (key, value) in file {
            match key.strip_suffix('+') {
                Some(base) => merged.push((base.to_string(), value.clone())),
                None => {
                    if !replaced.contains(&key.as_str()) {
                        merged.retain(|(k, _)| k != key);
                        replaced.push(key);
                    }
                    merged.push((key.clone(), value.clone()));
                }
            }
        }
    }
    merged
}

/// The kubelet k3s runs inside `agent`: a process with `agent`'s pid, environment and working
/// directory, and the command line k3s gives its kubelet; with where each part came from.
pub fn embedded_kubelet(node: &NodeRoot, agent: &RunningProcess) -> (RunningProcess, Vec<String>) {
    let mut notes = Vec::new();
    let config = agent
        .flag("config")
        .or_else(|| agent.flag("c"))
        .or_else(|| agent.environ.as_ref()?.get("K3S_CONFIG_FILE").cloned())
        .unwrap_or_else(|| K3S_CONFIG.into());
    let mut files = vec![PathBuf::from(&config)];
    let dropins = PathBuf::from(format!("{config}.d"));
    let mut extra: Vec<PathBuf> = node
        .read_dir(&dropins)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
        .collect();
    extra.sort();
    files.extend(extra);
    let mut parsed = Vec::new();
    for file in &files {
        match node.read_to_string(file) {
            Ok(text) => match config_flags(&text) {
                Ok(flags) => {
                    notes.push(format!("k3s config {}", file.display()));
                    parsed.push(flags);
                }
                Err(e) => notes.push(format!(
                    "k3s config {} k3s cannot read ({e}): left out, as k3s would not start with it",
                    file.display()
                )),
            },
            Err(_) if *file == files[0] => {
                notes.push(format!("no k3s config at {}", file.display()))
            }
            Err(_) => {}
        }
    }
    // The file's flags come first, the command line's after them (and so win).
    let mut args: Vec<String> = vec!["k3s".into()];
    for (key, value) in merge_config_flags(&parsed) {
        args.push(format!("--{key}={value}"));
    }
    args.extend(agent.args.iter().skip(1).cloned());
    let merged = RunningProcess {
        pid: agent.pid,
        args,
        environ: None,
    };
    let endpoint = merged
        .flag("container-runtime-endpoint")
        .unwrap_or_else(|| K3S_RUNTIME_SOCKET.into());
    let endpoint = match endpoint.contains("://") {
        true => endpoint,
        false => format!("unix://{endpoint}"),
    };
    let mut kubelet = vec![
        "kubelet (inside k3s)".to_string(),
        format!("--container-runtime-endpoint={endpoint}"),
    ];
    let bin_dir = merged
        .flag("image-credential-provider-bin-dir")
        .unwrap_or_else(|| K3S_PROVIDER_BIN_DIR.into());
    let provider = merged
        .flag("image-credential-provider-config")
        .unwrap_or_else(|| K3S_PROVIDER_CONFIG.into());
    if node.is_dir(Path::new(&bin_dir)) && node.is_file(Path::new(&provider)) {
        kubelet.push(format!("--image-credential-provider-bin-dir={bin_dir}"));
        kubelet.push(format!("--image-credential-provider-config={provider}"));
    }
    let kubelet_args = merged.flag_values("kubelet-arg");
    if !kubelet_args.is_empty() {
        notes.push(format!("kubelet-arg: {}", kubelet_args.join(" ")));
    }
    kubelet.extend(kubelet_args.into_iter().map(|a| match a.starts_with('-') {
        true => a,
        false => format!("--{a}"),
    }));
    (
        RunningProcess {
            pid: agent.pid,
            args: kubelet,
            environ: agent.environ.clone(),
        },
        notes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn k3s_by_its_name_or_program() {
        assert!(is_k3s(
            "k3s-agent\n",
            &args(&["/usr/local/bin/k3s", "agent"])
        ));
        assert!(is_k3s("k3s-server", &[]));
        assert!(is_k3s("python3", &args(&["/usr/local/bin/k3s", "agent"])));
        assert!(!is_k3s("containerd", &args(&["containerd", "-c", "/x"])));
        assert!(!is_k3s("rke2", &args(&["/usr/local/bin/rke2", "agent"])));
    }

    #[test]
    fn config_files_merge_replace_and_append() {
        let main = config_flags(
            "token: t\nkubelet-arg:\n  - max-pods=50\n  - image-gc-high-threshold=80\nwrite-kubeconfig-mode: 644\n",
        )
        .expect("yaml");
        assert_eq!(main[1], ("kubelet-arg".into(), "max-pods=50".into()));
        assert_eq!(main[3], ("write-kubeconfig-mode".into(), "644".into()));
        let append = config_flags("kubelet-arg+: [\"v=2\"]\n").expect("yaml");
        let replace = config_flags("kubelet-arg: container-runtime-endpoint=unix:///run/x.sock\n")
            .expect("yaml");
        let values = |merged: Vec<(String, String)>| {
            merged
                .into_iter()
                .filter(|(k, _)| k == "kubelet-arg")
                .map(|(_, v)| v)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            values(merge_config_flags(&[main.clone(), append.clone()])),
            ["max-pods=50", "image-gc-high-threshold=80", "v=2"]
        );
        assert_eq!(
            values(merge_config_flags(&[main, replace, append])),
            ["container-runtime-endpoint=unix:///run/x.sock", "v=2"]
        );
        assert!(config_flags("").expect("empty").is_empty());
        assert!(config_flags("[a, b]").is_err());
        assert!(config_flags("a: [").is_err());
    }

    #[test]
    fn the_embedded_kubelet_has_k3s_defaults_then_kubelet_args() {
        let dir = std::env::temp_dir().join(format!("pullpath-k3s-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let write = |node_path: &str, text: &str| {
            let at = dir.join(node_path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
            std::fs::write(at, text).expect("write");
        };
        write(K3S_CONFIG, "kubelet-arg:\n  - root-dir=/data/kubelet\n");
        write(
            "/etc/rancher/k3s/config.yaml.d/50-mirror.yaml",
            "kubelet-arg+:\n  - v=4\n",
        );
        write(K3S_PROVIDER_CONFIG, "kind: CredentialProviderConfig\n");
        std::fs::create_dir_all(dir.join(K3S_PROVIDER_BIN_DIR.trim_start_matches('/')))
            .expect("bin dir");
        let node = NodeRoot::at(&dir);
        let agent = RunningProcess {
            pid: 42,
            args: args(&["/usr/local/bin/k3s", "agent", "--kubelet-arg", "v=6"]),
            environ: None,
        };
        let (kubelet, notes) = embedded_kubelet(&node, &agent);
        assert_eq!(kubelet.pid, 42);
        assert_eq!(
            kubelet.flag("container-runtime-endpoint").as_deref(),
            Some("unix:///run/k3s/containerd/containerd.sock")
        );
        assert_eq!(kubelet.flag("root-dir").as_deref(), Some("/data/kubelet"));
        // The command line's kubelet-arg comes last and wins.
        assert_eq!(kubelet.flag("v").as_deref(), Some("6"));
        assert_eq!(
            kubelet.flag("image-credential-provider-config").as_deref(),
            Some(K3S_PROVIDER_CONFIG)
        );
        assert!(
            notes.iter().any(|n| n.contains("50-mirror.yaml")),
            "{notes:?}"
        );

        // k3s's own flag names another runtime; no provider files, no provider flags.
        std::fs::remove_file(dir.join(K3S_PROVIDER_CONFIG.trim_start_matches('/'))).expect("rm");
        let docker = RunningProcess {
            pid: 42,
            args: args(&[
                "k3s",
                "agent",
                "--container-runtime-endpoint",
                "/run/cri-dockerd.sock",
            ]),
            environ: None,
        };
        let (kubelet, _) = embedded_kubelet(&node, &docker);
        assert_eq!(
            kubelet.flag("container-runtime-endpoint").as_deref(),
            Some("unix:///run/cri-dockerd.sock")
        );
        assert_eq!(kubelet.flag("image-credential-provider-config"), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
