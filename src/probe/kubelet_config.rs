//! What the node's kubelet is configured with beyond its command line: its `--config` file (a
//! KubeletConfiguration, YAML or JSON) and the drop-ins of `--config-dir` (`*.conf`, applied in
//! lexical order over the file, a later one winning: k/k `cmd/kubelet/app/server.go`
//! `mergeKubeletConfigurations`). AL2023 keeps drop-ins in `/etc/kubernetes/kubelet/config.json.d`,
//! RHCOS in `/etc/openshift/kubelet.conf.d` (`../shared/notes/nodes.md` §1).
//!
//! Only the fields a pull depends on are read: the CRI endpoint the kubelet asks the runtime
//! on (`containerRuntimeEndpoint`, also the flag `--container-runtime-endpoint`).

use std::path::{Path, PathBuf};

use super::process::RunningProcess;
use crate::node_root::NodeRoot;

/// The kubelet's default CRI endpoint on Linux.
pub const DEFAULT_RUNTIME_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

/// A setting and where it came from, for the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sourced {
    pub value: String,
    pub origin: String,
}

/// A top-level string field of a KubeletConfiguration's text (YAML, of which JSON is a part).
pub fn config_field(text: &str, field: &str) -> Option<String> {
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(text).ok()?;
    value.get(field)?.as_str().map(str::to_string)
}

/// The kubelet's config files in the order it applies them: `--config`, then `--config-dir`'s
/// `*.conf` in lexical order (node paths).
pub fn config_files(node: &NodeRoot, kubelet: &RunningProcess) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = kubelet
        .flag("config")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    if let Some(dir) = kubelet.flag("config-dir") {
        files.extend(
            node.read_dir(Path::new(&dir))
                .unwrap_or_default()
                .into_iter()
                .filter(|p| p.extension().is_some_and(|e| e == "conf")),
        );
    }
    files
}

/// The CRI endpoint the kubelet pulls through: its flag, else its config files' field (the last
/// that sets it), else the default. With no kubelet process in sight, the running containerd's
/// own `--address`/`-a`: k3s runs its kubelet inside the k3s process (`pkg/daemons/executor`,
/// `Embedded.Kubelet`) and starts containerd with `-a /run/k3s/containerd/containerd.sock`
/// (`pkg/agent/containerd`, `getContainerdArgs`), where the default socket does not exist.
pub fn runtime_endpoint(
    node: &NodeRoot,
    kubelet: Option<&RunningProcess>,
    containerd: Option<&RunningProcess>,
) -> Sourced {
    if let Some(kubelet) = kubelet {
        if let Some(value) = kubelet.flag("container-runtime-endpoint") {
            return Sourced {
                value,
                origin: format!(
                    "the running kubelet's --container-runtime-endpoint (pid {})",
                    kubelet.pid
                ),
            };
        }
        let from_files = config_files(node, kubelet)
            .into_iter()
            .rev()
            .find_map(|file| {
                let text = node.read_to_string(&file).ok()?;
                let value = config_field(&text, "containerRuntimeEndpoint")?;
                Some(Sourced {
                    value,
                    origin: format!("containerRuntimeEndpoint in {}", file.display()),
                })
            });
        if let Some(found) = from_files {
            return found;
        }
    }
    let address = kubelet
        .is_none()
        .then_some(containerd)
        .flatten()
        .and_then(|c| Some((c.pid, c.flag("address").or_else(|| c.flag("a"))?)));
    if let Some((pid, address)) = address {
        return Sourced {
            value: format!("unix://{}", address.trim_start_matches("unix://")),
            origin: format!(
                "no kubelet process (k3s runs its kubelet inside its own): the running containerd's --address (pid {pid})"
            ),
        };
    }
    Sourced {
        value: DEFAULT_RUNTIME_ENDPOINT.into(),
        origin: "the kubelet's default".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubelet(args: &[&str]) -> RunningProcess {
        RunningProcess {
            pid: 7,
            args: std::iter::once("/usr/bin/kubelet")
                .chain(args.iter().copied())
                .map(str::to_string)
                .collect(),
            environ: None,
        }
    }

    #[test]
    fn a_field_of_yaml_or_json() {
        let yaml = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncontainerRuntimeEndpoint: unix:///run/k3s/containerd/containerd.sock\n";
        assert_eq!(
            config_field(yaml, "containerRuntimeEndpoint").as_deref(),
            Some("unix:///run/k3s/containerd/containerd.sock")
        );
        let json = r#"{"kind":"KubeletConfiguration","containerRuntimeEndpoint":"unix:///run/crio/crio.sock"}"#;
        assert_eq!(
            config_field(json, "containerRuntimeEndpoint").as_deref(),
            Some("unix:///run/crio/crio.sock")
        );
        assert_eq!(config_field("not: [yaml", "containerRuntimeEndpoint"), None);
    }

    #[test]
    fn flag_then_config_dir_then_config_then_default() {
        let dir =
            std::env::temp_dir().join(format!("pullpath-kubelet-config-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let write = |node_path: &str, text: &str| {
            let at = dir.join(node_path.trim_start_matches('/'));
            std::fs::create_dir_all(at.parent().expect("parent")).expect("dirs");
            std::fs::write(at, text).expect("write");
        };
        // AL2023: the file, then a drop-in that sets the endpoint again.
        write(
            "/etc/kubernetes/kubelet/config.json",
            r#"{"containerRuntimeEndpoint":"unix:///run/containerd/containerd.sock"}"#,
        );
        write(
            "/etc/kubernetes/kubelet/config.json.d/40-nodeadm.conf",
            r#"{"containerRuntimeEndpoint":"unix:///run/other/containerd.sock"}"#,
        );
        write(
            "/etc/kubernetes/kubelet/config.json.d/README",
            "not a drop-in",
        );
        let node = NodeRoot::at(&dir);
        let args = [
            "--config",
            "/etc/kubernetes/kubelet/config.json",
            "--config-dir=/etc/kubernetes/kubelet/config.json.d",
        ];
        let found = runtime_endpoint(&node, Some(&kubelet(&args)), None);
        assert_eq!(found.value, "unix:///run/other/containerd.sock");
        assert!(found.origin.contains("40-nodeadm.conf"), "{found:?}");
        let mut with_flag = args.to_vec();
        with_flag.push("--container-runtime-endpoint=unix:///run/flag.sock");
        assert_eq!(
            runtime_endpoint(&node, Some(&kubelet(&with_flag)), None).value,
            "unix:///run/flag.sock"
        );
        let only_file = runtime_endpoint(&node, Some(&kubelet(&args[..2])), None);
        assert_eq!(only_file.value, "unix:///run/containerd/containerd.sock");
        assert_eq!(
            runtime_endpoint(&node, None, None).value,
            DEFAULT_RUNTIME_ENDPOINT
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn without_a_kubelet_process_containerds_own_address() {
        let node = NodeRoot::at(Path::new("/nonexistent"));
        let k3s = RunningProcess {
            pid: 9,
            args: [
                "containerd",
                "-c",
                "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
                "-a",
                "/run/k3s/containerd/containerd.sock",
                "--state",
                "/run/k3s/containerd",
            ]
            .map(str::to_string)
            .to_vec(),
            environ: None,
        };
        let found = runtime_endpoint(&node, None, Some(&k3s));
        assert_eq!(found.value, "unix:///run/k3s/containerd/containerd.sock");
        assert!(found.origin.contains("no kubelet process"), "{found:?}");
        // A kubelet in sight decides, whatever containerd listens on.
        assert_eq!(
            runtime_endpoint(&node, Some(&kubelet(&[])), Some(&k3s)).value,
            DEFAULT_RUNTIME_ENDPOINT
        );
        let plain = RunningProcess {
            pid: 9,
            args: vec!["/usr/bin/containerd".into()],
            environ: None,
        };
        assert_eq!(
            runtime_endpoint(&node, None, Some(&plain)).value,
            DEFAULT_RUNTIME_ENDPOINT
        );
    }
}
