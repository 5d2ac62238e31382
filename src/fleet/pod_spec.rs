//! The probe pod for one node (deploy/probe-pod.yaml, made per node): pinned by `nodeName`
//! (no scheduler), `hostNetwork` and `hostPID`, tolerating every taint as `kubectl debug node`
//! does, `restartPolicy: Never`, `activeDeadlineSeconds`, and the node's `/` mounted read-only
//! at [`HOST_ROOT`], where `pullpath probe --host-root` reads every node file itself. A pure
//! function.

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};

use super::pod_base::{extend, pinned_spec, run_pod_metadata};

/// The container's name.
pub const CONTAINER: &str = "probe";
/// Where the probe image keeps the binary (scripts/image.sh's `Entrypoint`).
pub const BINARY: &str = "/usr/local/bin/pullpath";
/// Where the node's files appear inside the pod.
pub const HOST_ROOT: &str = "/host";
/// The volume holding the node's `/`, read-only.
pub const NODE_ROOT_VOLUME: &str = "node-root";

/// The probe container's privileges, and why each: not `privileged`, no capability beyond
/// these three (deploy/admission-policy.yaml admits exactly this set).
///
/// - `SYS_PTRACE` and AppArmor `Unconfined`: reading `/proc/PID/environ` of the running
///   containerd and kubelet is a ptrace-read check; they run with every capability, so
///   even uid 0 needs `CAP_SYS_PTRACE`, and containerd's default AppArmor profile denies
///   ptrace of unconfined processes (`../shared/notes/nodes.md` §6).
/// - `SYS_CHROOT`: credential plugins run chrooted into the node's root, as the kubelet
///   runs them there.
/// - `DAC_READ_SEARCH`: node files the kubelet reads as root are readable whoever owns them.
pub fn probe_security_context() -> Value {
    json!({
        "allowPrivilegeEscalation": false,
        "privileged": false,
        "readOnlyRootFilesystem": true,
        "capabilities": {"drop": ["ALL"], "add": PROBE_CAPABILITIES},
        "appArmorProfile": {"type": "Unconfined"},
    })
}

/// The capabilities the probe container adds (see [`probe_security_context`]).
pub const PROBE_CAPABILITIES: [&str; 3] = ["SYS_PTRACE", "SYS_CHROOT", "DAC_READ_SEARCH"];

/// How one probe pod's container starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// `--probe-image`: the node pulls it like any image.
    Image(String),
    /// No registry: an image the node holds, `imagePullPolicy: Never`, pullpath delivered
    /// through the API (`fleet::deliver`).
    Delivered(super::deliver::Delivered),
}

/// Everything one probe pod needs.
#[derive(Debug, Clone)]
pub struct PodPlan {
    pub name: String,
    pub namespace: String,
    /// The node it is pinned to; with `fresh`, the pool's newest node it stands beside (the
    /// pod itself is not pinned).
    pub node: String,
    /// `--fresh-node`: not pinned, placed on a node the autoscaler makes for it.
    pub fresh: Option<super::fresh::FreshPlacement>,
    pub run_id: String,
    /// How the probe container starts: a probe image, or delivered files on the node's image.
    pub start: Start,
    /// The image to probe, as the pod spec names it.
    pub image: String,
    pub full: bool,
    pub runtime_pull: bool,
    /// The pod's `activeDeadlineSeconds`; the probe's own `--deadline` is a little shorter.
    pub deadline_seconds: u64,
    /// The node's runtime as its status reports it (`containerd://1.7.27`): the probe follows
    /// that containerd line's hosts.toml rules without reaching the socket.
    pub runtime_version: Option<String>,
    /// `--kubelet-pull`: the node's kubelet-pull pod, made after the probe pod answered.
    pub kubelet_pull: Option<super::kubelet_pull::KubeletPullPlan>,
}

/// The probe's arguments: the node's whole root is read at [`HOST_ROOT`], where the probe finds
/// every node file itself (resolver, containerd's config and hosts, systemd units, the
/// kubelet's flags through `/proc` and its files, credential plugins, the trust store).
fn probe_args(plan: &PodPlan) -> Vec<String> {
    let mut args = vec![
        "probe".to_string(),
        plan.image.clone(),
        "--output".into(),
        "json".into(),
        "--host-root".into(),
        HOST_ROOT.into(),
        "--deadline".into(),
        // Leave the pod time to print its report before activeDeadlineSeconds ends it.
        format!("{}s", plan.deadline_seconds.saturating_sub(15).max(5)),
    ];
    if let Some(version) = plan
        .runtime_version
        .as_deref()
        .and_then(|v| v.strip_prefix("containerd://"))
    {
        args.extend(["--containerd-version".to_string(), version.to_string()]);
    }
    if plan.runtime_pull {
        // The runtime's own pull over CRI, as the kubelet asks it, on the node's socket.
        args.push("--runtime-pull".into());
    }
    if plan.full {
        args.push("--full".into());
    }
    args
}

/// The probe pod for `plan.node`.
pub fn probe_pod(plan: &PodPlan) -> Pod {
    let args = probe_args(plan);
    // A fresh pod's node is not known yet: the annotation names the pool it waits for.
    let node_shown = match &plan.fresh {
        Some(fresh) => format!("a fresh node of pool {}", fresh.pool_label.1),
        None => plan.node.clone(),
    };
    let mut spec = pinned_spec(&plan.node, plan.deadline_seconds);
    if let Some(fresh) = &plan.fresh {
        if let Some(fields) = spec.as_object_mut() {
            fields.remove("nodeName");
        }
        extend(&mut spec, super::fresh::placement_fields(fresh));
    }
    let node_root = json!({"name": NODE_ROOT_VOLUME, "mountPath": HOST_ROOT, "readOnly": true, "recursiveReadOnly": "IfPossible"});
    let mut volumes =
        vec![json!({"name": NODE_ROOT_VOLUME, "hostPath": {"path": "/", "type": "Directory"}})];
    let (image, pull_policy, command, args, mounts) = match &plan.start {
        Start::Image(image) => (
            image.clone(),
            "IfNotPresent",
            vec![BINARY.to_string()],
            args,
            vec![node_root],
        ),
        Start::Delivered(delivered) => {
            use super::deliver;
            volumes.extend(deliver::volumes(delivered));
            let (command, args) = deliver::command(delivered, &args);
            let mounts = vec![
                node_root,
                json!({"name": deliver::BINARY_VOLUME, "mountPath": deliver::BINARY_DIR, "readOnly": true}),
                json!({"name": deliver::RUN_VOLUME, "mountPath": deliver::RUN_DIR}),
            ];
            (delivered.node_image.clone(), "Never", command, args, mounts)
        }
    };
    let own = json!({
            // The node's network (the pull's own path) and its processes (the running
            // containerd's environment and the kubelet's flags, read from /proc).
            "hostNetwork": true,
            "hostPID": true,
            // Root: the kubelet's files are root-only (AKS azure.json is 0600), and so are the
            // daemons' /proc/PID/environ and containerd's socket.
            "securityContext": {"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}},
            "dnsPolicy": "Default",
            "containers": [{
                "name": CONTAINER,
                "image": image,
                "imagePullPolicy": pull_policy,
                "command": command,
                "args": args,
                "securityContext": probe_security_context(),
                // A delivered binary lives in a memory volume: it counts against this limit.
                "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}, "limits": {"memory": "256Mi"}},
                "volumeMounts": mounts,
            }],
            "volumes": volumes,
    });
    extend(&mut spec, own);
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": run_pod_metadata(&plan.name, &plan.namespace, &node_shown, &plan.run_id, "fleet-probe"),
        "spec": spec,
    });
    // Every field above is a Pod field of the right type: deserializing cannot fail.
    serde_json::from_value(pod).expect("the probe pod is a Pod")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::pod_base::{MANAGED_BY, NODE_ANNOTATION, RUN_LABEL};

    fn plan() -> PodPlan {
        PodPlan {
            fresh: None,
            name: "pullpath-fleet-ab12-0".into(),
            namespace: "pullpath".into(),
            node: "aks-user-1".into(),
            run_id: "ab12".into(),
            start: Start::Image("r.example/tools/pullpath:0.1.0".into()),
            image: "r.example/team/app:v1".into(),
            full: true,
            runtime_pull: false,
            deadline_seconds: 300,
            runtime_version: Some("containerd://1.7.27".into()),
            kubelet_pull: None,
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
    fn the_node_root_read_only_as_root_without_privileged() {
        let pod = probe_pod(&plan());
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(spec.host_pid, Some(true));
        assert_eq!(spec.host_network, Some(true));
        let volumes = spec.volumes.as_ref().expect("volumes");
        assert_eq!(volumes.len(), 1, "one volume: the node's root");
        let host_path = volumes[0].host_path.as_ref().expect("hostPath");
        assert_eq!(
            (host_path.path.as_str(), host_path.type_.as_deref()),
            ("/", Some("Directory"))
        );
        let c = &spec.containers[0];
        let mounts = c.volume_mounts.as_ref().expect("mounts");
        assert_eq!(mounts.len(), 1);
        assert_eq!(mounts[0].mount_path, HOST_ROOT);
        assert_eq!(mounts[0].read_only, Some(true));
        assert_eq!(mounts[0].recursive_read_only.as_deref(), Some("IfPossible"));
        let security = c.security_context.as_ref().expect("securityContext");
        assert_eq!(security.privileged, Some(false));
        assert_eq!(security.allow_privilege_escalation, Some(false));
        assert_eq!(security.read_only_root_filesystem, Some(true));
        let caps = security.capabilities.as_ref().expect("capabilities");
        assert_eq!(caps.drop.as_deref(), Some(&["ALL".to_string()][..]));
        assert_eq!(
            caps.add.clone().unwrap_or_default(),
            PROBE_CAPABILITIES.map(String::from).to_vec()
        );
        let pod_security = spec.security_context.as_ref().expect("pod securityContext");
        assert_eq!(pod_security.run_as_user, Some(0));
        let args = c.args.as_ref().expect("args").join(" ");
        assert!(args.contains("--host-root /host"), "{args}");
        // No hand-held node paths: the probe reads them on the node.
        for flag in [
            "--etc",
            "--containerd-certs",
            "--systemd-dir",
            "--kubelet-root-dir",
            "--runtime-pid",
            "--kubelet-pid",
        ] {
            assert!(!args.contains(flag), "{flag} in {args}");
        }
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
    fn runtime_pull_asks_the_nodes_socket_through_the_node_root() {
        let mut p = plan();
        p.runtime_pull = true;
        let pod = probe_pod(&p);
        let spec = pod.spec.as_ref().expect("spec");
        let c = &spec.containers[0];
        let args = c.args.as_ref().expect("args").join(" ");
        assert!(args.contains("--runtime-pull"), "{args}");
        assert!(!args.contains("--runtime-endpoint"), "{args}");
        assert_eq!(spec.volumes.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn a_delivered_start_runs_the_stage_from_the_nodes_own_image_never_pulled() {
        let mut p = plan();
        p.start = Start::Delivered(crate::fleet::deliver::Delivered {
            node_image: "mcr.microsoft.com/oss/kubernetes/pause:3.6".into(),
            node_image_source: crate::fleet::deliver::node_image::Source::Sandbox,
            config_maps: vec![
                ("pullpath-ab12-amd64-stage".into(), "pullpath-stage".into()),
                ("pullpath-ab12-amd64-0".into(), "part-0000-of-0001".into()),
            ],
            size: 123,
            sha256: "ab".repeat(32),
        });
        let pod = probe_pod(&p);
        let spec = pod.spec.as_ref().expect("spec");
        let c = &spec.containers[0];
        assert_eq!(
            c.image.as_deref(),
            Some("mcr.microsoft.com/oss/kubernetes/pause:3.6")
        );
        assert_eq!(c.image_pull_policy.as_deref(), Some("Never"));
        assert_eq!(
            c.command.as_deref(),
            Some(&["/pullpath/delivered/pullpath-stage".to_string()][..])
        );
        let args = c.args.as_ref().expect("args").join(" ");
        assert!(
            args.starts_with(
                "/pullpath/run/pullpath 123 abababababababababababababababababababababababababababababababab /pullpath/delivered/part-0000-of-0001 -- probe r.example/team/app:v1"
            ),
            "{args}"
        );
        let volumes = spec.volumes.as_ref().expect("volumes");
        assert_eq!(volumes.len(), 3);
        let projected = volumes[1].projected.as_ref().expect("projected");
        assert_eq!(projected.default_mode, Some(0o555));
        assert_eq!(projected.sources.as_ref().map(Vec::len), Some(2));
        let memory = volumes[2].empty_dir.as_ref().expect("emptyDir");
        assert_eq!(memory.medium.as_deref(), Some("Memory"));
        let mounts = c.volume_mounts.as_ref().expect("mounts");
        assert_eq!(mounts[1].read_only, Some(true), "the delivered files");
        assert_eq!(mounts[0].read_only, Some(true), "the node's root");
        // The same privileges as a probe image's pod: nothing more.
        assert_eq!(
            c.security_context,
            probe_pod(&plan()).spec.expect("spec").containers[0].security_context
        );
    }

    /// A fresh pod is not pinned: no nodeName, the pool's selector and affinity instead, its
    /// annotation naming the pool it waits for; every other field as a pinned probe pod's.
    #[test]
    fn a_fresh_pod_waits_for_a_node_of_its_pool() {
        let mut fresh = plan();
        fresh.fresh = Some(crate::fleet::fresh::FreshPlacement {
            pool_label: ("agentpool".into(), "user".into()),
            existing: vec!["aks-user-1".into()],
            tolerations: Vec::new(),
            arch: None,
        });
        let pinned = serde_json::to_value(probe_pod(&plan())).expect("json");
        let pod = serde_json::to_value(probe_pod(&fresh)).expect("json");
        assert_eq!(pinned["spec"]["nodeName"], "aks-user-1");
        assert!(pod["spec"].get("nodeName").is_none(), "{pod:#}");
        assert_eq!(
            pod["spec"]["nodeSelector"],
            serde_json::json!({"agentpool": "user", "kubernetes.io/os": "linux"})
        );
        // Not the pinned pod's "every taint": the fresh pod lands only where the workload would.
        assert_eq!(
            pinned["spec"]["tolerations"],
            serde_json::json!([{"operator": "Exists"}])
        );
        assert_eq!(pod["spec"]["tolerations"], serde_json::json!([]));
        assert_eq!(
            pod["metadata"]["annotations"][NODE_ANNOTATION],
            "a fresh node of pool user"
        );
        assert_eq!(pod["spec"]["containers"], pinned["spec"]["containers"]);
        assert_eq!(pod["spec"]["volumes"], pinned["spec"]["volumes"]);
    }
}
