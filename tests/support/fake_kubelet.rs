//! A fake kubelet for the API stand-in (tests/support/kube_api.rs): no kubelet can run here, so
//! when a pod is created for node X this plays X's kubelet. It runs the pod's container command
//! for real (the image's `/usr/local/bin/pullpath` is the binary cargo built), with each
//! hostPath mount mapped to that node's directory the test prepared, through the node's
//! [`Runner`] (a plain local process here; a command prefix such as `ip netns exec NS` runs it
//! inside a network namespace that plays the node). Its stdout becomes the pod's log and its
//! exit the pod's phase (`Succeeded` on 0, else `Failed`), with container statuses in the
//! API's shapes (core/v1 `ContainerStatus`: `waiting`, `running`, `terminated`).
//!
//! No kinder than a kubelet: before any container starts, each hostPath volume's `type` is
//! checked on the node's root as the kubelet checks it (kubernetes/kubernetes
//! `pkg/volume/hostpath/host_path.go` `checkType`/`typeMatchedOrError`, symlinks followed as its
//! `os.Stat` does), and a failure leaves the pod `Pending` with a `FailedMount` event in the
//! kubelet's words (`MountVolume.SetUp failed for volume "X" : hostPath /etc/containerd doesn't
//! exist`: `pkg/volume/util/operationexecutor/operation_executor.go` `generateVolumeMsg`).
//! Nothing a hostPath names is ever created: a `…OrCreate` type whose path is missing fails too
//! (the stand-in writes nothing on a node), saying so.
//!
//! Other behaviours: `ImagePull` leaves the pod `Pending` with its container waiting in
//! `ErrImagePull` and the runtime's message, as the kubelet reports a failed pull; `Waiting`
//! leaves it waiting on any other reason with its event (`ErrImageNeverPull`,
//! `CreateContainerConfigError`); `Reject` is the kubelet refusing admission (`OutOfcpu`: phase
//! `Failed`, `status.reason`, `Pod was rejected: …`, and an event of that reason:
//! `pkg/kubelet/kubelet.go` `rejectPod`, reasons from `pkg/kubelet/lifecycle/predicate.go`);
//! `Hang` keeps it running forever; `Canned` answers with a fixed log after a fixed delay
//! (benchmarks).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::kube_api::{Kubelet, PodStore};

/// How a node's probe command is started.
#[derive(Debug, Clone, Default)]
pub struct Runner {
    /// Prepended to the command (`["ip", "netns", "exec", "pp-node"]`); empty: a local process.
    pub prefix: Vec<String>,
    /// The pid the probe is told is the node's containerd and kubelet (`--runtime-pid`,
    /// `--kubelet-pid`); `None`: a stand-in process with an empty environment and no flags is
    /// started per pod, so nothing of this machine's own processes leaks in.
    pub runtime_pid: Option<u32>,
}

#[derive(Debug, Clone)]
pub enum Behaviour {
    Run,
    /// The probe image does not pull: `ErrImagePull` with this message.
    ImagePull(String),
    /// The container waits on `reason` with `message`, and an event says so (`event`: its
    /// reason, e.g. `ErrImageNeverPull`, or `Failed` for `CreateContainerConfigError`).
    Waiting {
        reason: String,
        message: String,
        event: String,
    },
    /// The kubelet does not admit the pod: `reason` (`OutOfcpu`) and the predicate's message.
    Reject {
        reason: String,
        message: String,
    },
    Hang,
    Canned {
        delay: Duration,
        log: String,
        exit: i32,
    },
}

#[derive(Debug, Clone)]
pub struct SimNode {
    /// The node's filesystem root: hostPath `/etc/hosts` is `root/etc/hosts`.
    pub root: PathBuf,
    pub runner: Runner,
    pub behaviour: Behaviour,
}

/// The kubelets of every simulated node.
pub struct FakeKubelet {
    pub nodes: BTreeMap<String, SimNode>,
    /// What the probe image's `/usr/local/bin/pullpath` is here.
    pub binary: PathBuf,
}

/// The probe image's binary (scripts/image.sh's Entrypoint).
const IMAGE_BINARY: &str = "/usr/local/bin/pullpath";

impl Kubelet for FakeKubelet {
    fn pod_created(&self, pod: &Value, store: &Arc<PodStore>) {
        let node = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        let Some(sim) = self.nodes.get(&node).cloned() else {
            // No kubelet on that node: the pod stays Pending, as for a node that is gone.
            return;
        };
        let pod = pod.clone();
        let store = store.clone();
        let binary = self.binary.clone();
        std::thread::spawn(move || run_pod(&sim, &binary, &pod, &store, &ns, &name));
    }
}

fn container_status(pod: &Value, state: Value, ready: bool) -> Value {
    let c = &pod["spec"]["containers"][0];
    json!([{"name": c["name"], "image": c["image"], "imageID": if ready { json!("sha256:0000000000000000000000000000000000000000000000000000000000000000") } else { json!("") },
        "ready": ready, "restartCount": 0, "started": ready, "state": state}])
}

fn now() -> String {
    // RFC 3339 from the system clock, seconds precision (as the API serves times).
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .expect("date runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn run_pod(sim: &SimNode, binary: &Path, pod: &Value, store: &PodStore, ns: &str, name: &str) {
    let started = now();
    let node = pod["spec"]["nodeName"].as_str().unwrap_or("");
    // Admission comes first (`HandlePodAdditions` → `canAdmitPod`), then volumes, then the
    // image and the container.
    if let Behaviour::Reject { reason, message } = &sim.behaviour {
        store.add_event(ns, name, node, reason, message);
        store.set_status(
            ns,
            name,
            json!({"phase": "Failed", "reason": reason, "message": format!("Pod was rejected: {message}"), "startTime": started}),
        );
        return;
    }
    let unmountable = host_path_failures(pod, &sim.root);
    if !unmountable.is_empty() {
        for message in &unmountable {
            store.add_event(ns, name, node, "FailedMount", message);
        }
        store.set_status(
            ns,
            name,
            json!({"phase": "Pending", "startTime": started,
                "containerStatuses": container_status(pod, json!({"waiting": {"reason": "ContainerCreating"}}), false)}),
        );
        return;
    }
    match &sim.behaviour {
        Behaviour::Reject { .. } => {}
        Behaviour::Waiting {
            reason,
            message,
            event,
        } => {
            store.add_event(ns, name, node, event, message);
            store.set_status(
                ns,
                name,
                json!({"phase": "Pending", "startTime": started,
                    "containerStatuses": container_status(pod, json!({"waiting": {"reason": reason, "message": message}}), false)}),
            );
        }
        Behaviour::ImagePull(message) => {
            store.set_status(
                ns,
                name,
                json!({"phase": "Pending", "startTime": started,
                    "containerStatuses": container_status(pod, json!({"waiting": {"reason": "ErrImagePull", "message": message}}), false)}),
            );
        }
        Behaviour::Hang => {
            store.set_status(ns, name, running(pod, &started));
        }
        Behaviour::Canned { delay, log, exit } => {
            store.set_status(ns, name, running(pod, &started));
            std::thread::sleep(*delay);
            finish(store, pod, ns, name, &started, log.clone(), *exit);
        }
        Behaviour::Run => {
            if !store.set_status(ns, name, running(pod, &started)) {
                return;
            }
            let (stdout, exit) = run_command(sim, binary, pod);
            finish(store, pod, ns, name, &started, stdout, exit);
        }
    }
}

fn running(pod: &Value, started: &str) -> Value {
    json!({"phase": "Running", "startTime": started,
        "containerStatuses": container_status(pod, json!({"running": {"startedAt": started}}), true)})
}

fn finish(
    store: &PodStore,
    pod: &Value,
    ns: &str,
    name: &str,
    started: &str,
    log: String,
    exit: i32,
) {
    store.set_log(ns, name, log);
    let reason = if exit == 0 { "Completed" } else { "Error" };
    store.set_status(
        ns,
        name,
        json!({"phase": if exit == 0 { "Succeeded" } else { "Failed" }, "startTime": started,
            "containerStatuses": container_status(pod, json!({"terminated": {"exitCode": exit, "reason": reason, "startedAt": started, "finishedAt": now()}}), false)}),
    );
}

/// The `FailedMount` message of every hostPath volume whose type check fails on this node's
/// root, in the kubelet's words.
pub fn host_path_failures(pod: &Value, root: &Path) -> Vec<String> {
    use std::os::unix::fs::FileTypeExt;
    let mut failures = Vec::new();
    for volume in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        let (Some(name), Some(path)) =
            (volume["name"].as_str(), volume["hostPath"]["path"].as_str())
        else {
            continue;
        };
        let kind = volume["hostPath"]["type"].as_str().unwrap_or("");
        let on_node = root.join(path.trim_start_matches('/'));
        // hostutil's GetFileType names: Directory, File, Socket, CharDevice, BlockDevice.
        let actual = std::fs::metadata(&on_node).ok().map(|m| {
            let t = m.file_type();
            if t.is_dir() {
                "Directory"
            } else if t.is_file() {
                "File"
            } else if t.is_socket() {
                "Socket"
            } else if t.is_char_device() {
                "CharDevice"
            } else if t.is_block_device() {
                "BlockDevice"
            } else {
                "Unknown"
            }
        });
        let (wanted, description) = match kind {
            "" => continue,
            "Directory" => ("Directory", "directory"),
            "File" => ("File", "file"),
            "Socket" => ("Socket", "socket file"),
            "CharDevice" => ("CharDevice", "character device"),
            "BlockDevice" => ("BlockDevice", "block device"),
            "DirectoryOrCreate" | "FileOrCreate" if actual.is_none() => {
                failures.push(format!(
                    "MountVolume.SetUp failed for volume {name:?} : the kubelet stand-in creates nothing on a node, and {path} ({kind}) does not exist"
                ));
                continue;
            }
            "DirectoryOrCreate" => ("Directory", "directory"),
            "FileOrCreate" => ("File", "file"),
            other => {
                failures.push(format!(
                    "MountVolume.SetUp failed for volume {name:?} : {other} is an invalid volume type"
                ));
                continue;
            }
        };
        let error = match actual {
            None => format!("hostPath {path} doesn't exist"),
            Some(actual) if actual != wanted => format!(
                "hostPath type check failed: {path} is not a {description}, it's a {actual}"
            ),
            Some(_) => continue,
        };
        failures.push(format!(
            "MountVolume.SetUp failed for volume {name:?} : {error}"
        ));
    }
    failures
}

/// mountPath → hostPath of every hostPath volume the container mounts.
fn mounts(pod: &Value) -> Vec<(String, String)> {
    let volumes: BTreeMap<String, String> = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| {
            Some((
                v["name"].as_str()?.to_string(),
                v["hostPath"]["path"].as_str()?.to_string(),
            ))
        })
        .collect();
    let mut mounts: Vec<(String, String)> = pod["spec"]["containers"][0]["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            let host = volumes.get(m["name"].as_str()?)?;
            Some((m["mountPath"].as_str()?.to_string(), host.clone()))
        })
        .collect();
    // Longest mount path first, so /host/etc/hosts wins over /host/etc.
    mounts.sort_by_key(|(m, _)| std::cmp::Reverse(m.len()));
    mounts
}

/// An argument naming a path inside the pod → the same file in the node's directory.
fn map_arg(arg: &str, mounts: &[(String, String)], root: &Path) -> String {
    for (mount, host) in mounts {
        let rest = if arg == mount {
            Some("")
        } else {
            arg.strip_prefix(mount.as_str())
                .filter(|r| r.starts_with('/'))
        };
        if let Some(rest) = rest {
            return format!("{}{}{rest}", root.display(), host);
        }
    }
    // A directory holding mounts (`--etc /host/etc` over /host/etc/hosts → /etc/hosts).
    for (mount, host) in mounts {
        if let Some(tail) = mount.strip_prefix(arg).filter(|t| t.starts_with('/'))
            && let Some(dir) = host.strip_suffix(tail)
        {
            return format!("{}{dir}", root.display());
        }
    }
    arg.to_string()
}

fn run_command(sim: &SimNode, binary: &Path, pod: &Value) -> (String, i32) {
    let container = &pod["spec"]["containers"][0];
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    let mut command = strings(&container["command"]);
    command.extend(strings(&container["args"]));
    if command.first().map(String::as_str) != Some(IMAGE_BINARY) {
        return (String::new(), 127);
    }
    let mounts = mounts(pod);
    let args: Vec<String> = command[1..]
        .iter()
        .map(|a| map_arg(a, &mounts, &sim.root))
        .collect();
    // The node's runtime: its environment is the runtime's proxy configuration.
    let mut stand_in = None;
    let pid = match sim.runner.runtime_pid {
        Some(pid) => pid,
        None => {
            let child = Command::new("sleep")
                .arg("600")
                .env_clear()
                .current_dir(&sim.root)
                .spawn()
                .expect("sleep runs");
            let pid = child.id();
            stand_in = Some(child);
            pid
        }
    };
    let mut program: Vec<String> = sim.runner.prefix.clone();
    program.push(binary.display().to_string());
    let out = Command::new(&program[0])
        .args(&program[1..])
        .args(&args)
        .args([
            "--runtime-pid",
            &pid.to_string(),
            "--kubelet-pid",
            &pid.to_string(),
        ])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sim.root.join("root"))
        .env("NO_COLOR", "1")
        .current_dir(&sim.root)
        .stdin(Stdio::null())
        .output()
        .expect("the probe command runs");
    if let Some(mut child) = stand_in {
        let _ = child.kill();
        let _ = child.wait();
    }
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(137),
    )
}
