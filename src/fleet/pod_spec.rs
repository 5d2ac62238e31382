//! The probe pod for one node (deploy/probe-pod.yaml, made per node): pinned by `nodeName`
//! (no scheduler), `hostNetwork`, tolerating every taint as `kubectl debug node` does,
//! `restartPolicy: Never`, `activeDeadlineSeconds`, and read-only hostPath mounts of exactly
//! what `pullpath probe` reads, each passed to it by its flag. A pure function.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

/// `app.kubernetes.io/managed-by=pullpath`: every pod pullpath creates carries it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "pullpath");
/// The run a probe pod belongs to.
pub const RUN_LABEL: &str = "pullpath/run";
/// The node a probe pod was made for (an annotation: node names can exceed a label's 63).
pub const NODE_ANNOTATION: &str = "pullpath/node";
/// The container's name.
pub const CONTAINER: &str = "probe";
/// Where the probe image keeps the binary (scripts/image.sh's `Entrypoint`).
pub const BINARY: &str = "/usr/local/bin/pullpath";
/// Where the node's files appear inside the pod.
pub const HOST_ROOT: &str = "/host";
/// containerd's CRI socket, mounted read-write only for `--runtime-pull`.
pub const CRI_SOCKET: &str = "/run/containerd/containerd.sock";

/// The node's paths the probe reads (node paths, not pod paths).
#[derive(Debug, Clone)]
pub struct NodePaths {
    pub etc: PathBuf,
    pub containerd: PathBuf,
    pub trust_store: PathBuf,
    pub systemd_dirs: Vec<PathBuf>,
    /// The kubelet's `--root-dir`, when given: only its `config.json` is mounted (the rest of
    /// the directory holds every pod's volumes and secrets).
    pub kubelet_root_dir: Option<PathBuf>,
    /// The kubelet's `--image-credential-provider-config` and `-bin-dir`, when given.
    pub provider_config: Option<PathBuf>,
    pub provider_bin_dir: Option<PathBuf>,
}

impl Default for NodePaths {
    fn default() -> NodePaths {
        NodePaths {
            etc: "/etc".into(),
            containerd: "/etc/containerd".into(),
            trust_store: "/etc/ssl".into(),
            // Where systemd looks for containerd's unit and drop-ins (probe's default).
            systemd_dirs: [
                "/etc/systemd/system",
                "/run/systemd/system",
                "/lib/systemd/system",
            ]
            .map(PathBuf::from)
            .to_vec(),
            kubelet_root_dir: None,
            provider_config: None,
            provider_bin_dir: None,
        }
    }
}

/// Everything one probe pod needs.
#[derive(Debug, Clone)]
pub struct PodPlan {
    pub name: String,
    pub namespace: String,
    pub node: String,
    pub run_id: String,
    pub probe_image: String,
    /// The image to probe, as the pod spec names it.
    pub image: String,
    pub full: bool,
    pub runtime_pull: bool,
    /// `hostPID` and uid 0: the probe then reads the running kubelet's flags and containerd's
    /// environment (its proxy) from /proc, as on the node. Off, the pod runs as 65532 like
    /// deploy/probe-pod.yaml and the runtime's proxy comes from its systemd drop-ins.
    pub host_pid: bool,
    /// The pod's `activeDeadlineSeconds`; the probe's own `--deadline` is a little shorter.
    pub deadline_seconds: u64,
    pub paths: NodePaths,
    /// The node's runtime as its status reports it (`containerd://1.7.27`): the probe follows
    /// that containerd line's hosts.toml rules without reaching the socket.
    pub runtime_version: Option<String>,
}

/// A node path as the pod sees it: under /host.
fn in_pod(node_path: &Path) -> String {
    format!("{HOST_ROOT}{}", node_path.display())
}

struct Mount {
    name: &'static str,
    node_path: PathBuf,
    pod_path: String,
    /// hostPath `type`: `File` or `Directory` (never a `…OrCreate`: the run must not write).
    kind: &'static str,
    read_only: bool,
}

/// The mounts, each a file or directory the probe reads, and the probe's arguments naming them.
fn mounts_and_args(plan: &PodPlan) -> (Vec<Mount>, Vec<String>) {
    let p = &plan.paths;
    let etc = in_pod(&p.etc);
    let containerd = in_pod(&p.containerd);
    let mut mounts = vec![
        Mount {
            name: "node-resolv-conf",
            node_path: p.etc.join("resolv.conf"),
            pod_path: format!("{etc}/resolv.conf"),
            kind: "File",
            read_only: true,
        },
        Mount {
            name: "node-hosts",
            node_path: p.etc.join("hosts"),
            pod_path: format!("{etc}/hosts"),
            kind: "File",
            read_only: true,
        },
        Mount {
            name: "node-containerd",
            node_path: p.containerd.clone(),
            pod_path: containerd.clone(),
            kind: "Directory",
            read_only: true,
        },
        // The node's system trust store where the probe's own system store is looked up.
        Mount {
            name: "node-trust-store",
            node_path: p.trust_store.clone(),
            pod_path: "/etc/ssl".to_string(),
            kind: "Directory",
            read_only: true,
        },
    ];
    let mut args = vec![
        "probe".to_string(),
        plan.image.clone(),
        "--output".into(),
        "json".into(),
        "--etc".into(),
        etc,
        "--containerd-certs".into(),
        format!("{containerd}/certs.d"),
        "--containerd-config".into(),
        format!("{containerd}/config.toml"),
        "--deadline".into(),
        // Leave the pod time to print its report before activeDeadlineSeconds ends it.
        format!("{}s", plan.deadline_seconds.saturating_sub(15).max(5)),
    ];
    let systemd_names = ["node-systemd-etc", "node-systemd-run", "node-systemd-lib"];
    for (dir, name) in p.systemd_dirs.iter().zip(systemd_names) {
        mounts.push(Mount {
            name,
            node_path: dir.clone(),
            pod_path: in_pod(dir),
            kind: "Directory",
            read_only: true,
        });
        args.extend(["--systemd-dir".to_string(), in_pod(dir)]);
    }
    if let Some(root) = &p.kubelet_root_dir {
        mounts.push(Mount {
            name: "node-kubelet-config-json",
            node_path: root.join("config.json"),
            pod_path: format!("{}/config.json", in_pod(root)),
            kind: "File",
            read_only: true,
        });
        args.extend(["--kubelet-root-dir".to_string(), in_pod(root)]);
    }
    if let Some(config) = &p.provider_config {
        mounts.push(Mount {
            name: "node-credential-provider-config",
            node_path: config.clone(),
            pod_path: in_pod(config),
            kind: "File",
            read_only: true,
        });
        args.extend([
            "--image-credential-provider-config".to_string(),
            in_pod(config),
        ]);
    }
    if let Some(bin) = &p.provider_bin_dir {
        mounts.push(Mount {
            name: "node-credential-provider-bin",
            node_path: bin.clone(),
            pod_path: in_pod(bin),
            kind: "Directory",
            read_only: true,
        });
        args.extend([
            "--image-credential-provider-bin-dir".to_string(),
            in_pod(bin),
        ]);
    }
    if let Some(version) = plan
        .runtime_version
        .as_deref()
        .and_then(|v| v.strip_prefix("containerd://"))
    {
        args.extend(["--containerd-version".to_string(), version.to_string()]);
    }
    if plan.runtime_pull {
        // The runtime's own pull over CRI, as the kubelet asks it: the socket, read-write.
        let socket = in_pod(Path::new(CRI_SOCKET));
        mounts.push(Mount {
            name: "node-cri-socket",
            node_path: CRI_SOCKET.into(),
            pod_path: socket.clone(),
            kind: "Socket",
            read_only: false,
        });
        args.extend([
            "--runtime-pull".to_string(),
            "--runtime-endpoint".to_string(),
            socket,
        ]);
    }
    if plan.full {
        args.push("--full".into());
    }
    (mounts, args)
}

/// The probe pod for `plan.node`.
pub fn probe_pod(plan: &PodPlan) -> Pod {
    let (mounts, args) = mounts_and_args(plan);
    let volume_mounts: Vec<Value> = mounts
        .iter()
        .map(|m| json!({"name": m.name, "mountPath": m.pod_path, "readOnly": m.read_only}))
        .collect();
    let volumes: Vec<Value> = mounts
        .iter()
        .map(|m| json!({"name": m.name, "hostPath": {"path": m.node_path.display().to_string(), "type": m.kind}}))
        .collect();
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": plan.name,
            "namespace": plan.namespace,
            "labels": {
                MANAGED_BY.0: MANAGED_BY.1,
                "app.kubernetes.io/name": "pullpath",
                "app.kubernetes.io/component": "fleet-probe",
                RUN_LABEL: plan.run_id,
            },
            "annotations": {NODE_ANNOTATION: plan.node},
        },
        "spec": {
            "nodeName": plan.node,
            // The kubelet refuses a pod whose OS is not its own (PodOSNotSupported) instead of
            // running a Linux binary on, say, Windows; fleet skips such nodes before this.
            "os": {"name": "linux"},
            "hostNetwork": true,
            "hostPID": plan.host_pid,
            // Another user's /proc/PID/environ is readable only by that user (root, for
            // containerd and the kubelet), and containerd's socket only by root: uid 0 only
            // when hostPID or the runtime's own pull asks for it.
            "securityContext": if plan.host_pid || plan.runtime_pull {
                json!({"runAsUser": 0, "seccompProfile": {"type": "RuntimeDefault"}})
            } else {
                json!({"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}})
            },
            "dnsPolicy": "Default",
            "restartPolicy": "Never",
            "activeDeadlineSeconds": plan.deadline_seconds,
            "automountServiceAccountToken": false,
            "enableServiceLinks": false,
            "terminationGracePeriodSeconds": 0,
            "tolerations": [{"operator": "Exists"}],
            "containers": [{
                "name": CONTAINER,
                "image": plan.probe_image,
                "imagePullPolicy": "IfNotPresent",
                "command": [BINARY],
                "args": args,
                "securityContext": {
                    "allowPrivilegeEscalation": false,
                    "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]},
                },
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
                "volumeMounts": volume_mounts,
            }],
            "volumes": volumes,
        }
    });
    // Every field above is a Pod field of the right type: deserializing cannot fail.
    serde_json::from_value(pod).expect("the probe pod is a Pod")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> PodPlan {
        PodPlan {
            name: "pullpath-fleet-ab12-0".into(),
            namespace: "pullpath".into(),
            node: "aks-user-1".into(),
            run_id: "ab12".into(),
            probe_image: "r.example/tools/pullpath:0.1.0".into(),
            image: "r.example/team/app:v1".into(),
            full: true,
            runtime_pull: false,
            host_pid: false,
            deadline_seconds: 300,
            paths: NodePaths::default(),
            runtime_version: Some("containerd://1.7.27".into()),
        }
    }

    #[test]
    fn pinned_host_network_tolerating_all_labelled() {
        let pod = probe_pod(&plan());
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.node_name.as_deref(), Some("aks-user-1"));
        assert_eq!(spec.host_network, Some(true));
        assert_eq!(spec.os.as_ref().map(|o| o.name.as_str()), Some("linux"));
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.active_deadline_seconds, Some(300));
        let t = &spec.tolerations.as_ref().expect("tolerations")[0];
        assert_eq!(
            (t.key.as_deref(), t.operator.as_deref()),
            (None, Some("Exists"))
        );
        let labels = pod.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels[MANAGED_BY.0], "pullpath");
        assert_eq!(labels[RUN_LABEL], "ab12");
        let c = &spec.containers[0];
        assert_eq!(c.command.as_deref(), Some(&[BINARY.to_string()][..]));
        let args = c.args.clone().expect("args");
        assert_eq!(
            &args[..4],
            ["probe", "r.example/team/app:v1", "--output", "json"]
        );
        assert!(args.contains(&"--full".to_string()));
    }

    #[test]
    fn every_mount_is_read_only_and_named_by_a_probe_flag() {
        let mut p = plan();
        p.paths.provider_config = Some("/var/lib/kubelet/credential-provider-config.yaml".into());
        p.paths.provider_bin_dir = Some("/var/lib/kubelet/credential-provider".into());
        p.paths.kubelet_root_dir = Some("/var/lib/kubelet".into());
        let pod = probe_pod(&p);
        let spec = pod.spec.as_ref().expect("spec");
        let c = &spec.containers[0];
        let list = c.args.clone().expect("args");
        let args = list.join(" ");
        for m in c.volume_mounts.iter().flatten() {
            assert_eq!(m.read_only, Some(true), "{}", m.name);
            // A flag names the mount or a directory holding it; the trust store is where the
            // probe's own system store is looked up.
            let named = list
                .iter()
                .any(|a| m.mount_path == *a || m.mount_path.starts_with(&format!("{a}/")))
                || m.mount_path == "/etc/ssl";
            assert!(named, "{} is mounted but no flag reads it", m.mount_path);
        }
        for v in spec.volumes.iter().flatten() {
            let kind = v
                .host_path
                .as_ref()
                .and_then(|h| h.type_.clone())
                .expect("type");
            assert!(
                !kind.contains("OrCreate"),
                "{} may write to the node",
                v.name
            );
        }
        assert!(args.contains("--etc /host/etc --containerd-certs /host/etc/containerd/certs.d"));
        assert!(args.contains(
            "--image-credential-provider-config /host/var/lib/kubelet/credential-provider-config.yaml"
        ));
        assert!(args.contains("--systemd-dir /host/lib/systemd/system"));
        assert!(args.contains("--kubelet-root-dir /host/var/lib/kubelet"));
        let kubelet_mounts: Vec<&str> = spec
            .volumes
            .iter()
            .flatten()
            .filter_map(|v| v.host_path.as_ref())
            .map(|h| h.path.as_str())
            .filter(|p| p.starts_with("/var/lib/kubelet"))
            .collect();
        assert_eq!(
            kubelet_mounts,
            [
                "/var/lib/kubelet/config.json",
                "/var/lib/kubelet/credential-provider-config.yaml",
                "/var/lib/kubelet/credential-provider"
            ],
            "never the kubelet's whole root dir: it holds every pod's secrets"
        );
        assert!(!args.contains(CRI_SOCKET));
    }

    #[test]
    fn host_pid_only_on_request_and_then_as_root() {
        let pod = probe_pod(&plan());
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.host_pid, Some(false));
        let security = spec.security_context.as_ref().expect("security context");
        assert_eq!(
            (security.run_as_non_root, security.run_as_user),
            (Some(true), Some(65532))
        );
        let mut p = plan();
        p.host_pid = true;
        let pod = probe_pod(&p);
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.host_pid, Some(true));
        assert_eq!(
            spec.security_context.as_ref().and_then(|s| s.run_as_user),
            Some(0)
        );
    }

    #[test]
    fn the_nodes_containerd_version_is_passed_on() {
        let args = probe_pod(&plan()).spec.expect("spec").containers[0]
            .args
            .clone()
            .expect("args")
            .join(" ");
        assert!(args.contains("--containerd-version 1.7.27"), "{args}");
        let mut cri_o = plan();
        cri_o.runtime_version = Some("cri-o://1.31.0".into());
        let args = probe_pod(&cri_o).spec.expect("spec").containers[0]
            .args
            .clone()
            .expect("args")
            .join(" ");
        assert!(!args.contains("--containerd-version"), "{args}");
    }

    #[test]
    fn runtime_pull_mounts_the_cri_socket_read_write() {
        let mut p = plan();
        p.runtime_pull = true;
        let pod = probe_pod(&p);
        let c = &pod.spec.as_ref().expect("spec").containers[0];
        let socket = c
            .volume_mounts
            .iter()
            .flatten()
            .find(|m| m.mount_path == format!("{HOST_ROOT}{CRI_SOCKET}"))
            .expect("socket mounted");
        assert_eq!(socket.read_only, Some(false));
        let args = c.args.as_ref().expect("args").join(" ");
        assert!(
            args.contains(&format!(
                "--runtime-pull --runtime-endpoint {HOST_ROOT}{CRI_SOCKET}"
            )),
            "{args}"
        );
        let security = pod.spec.as_ref().and_then(|s| s.security_context.as_ref());
        assert_eq!(security.and_then(|s| s.run_as_user), Some(0));
    }
}
