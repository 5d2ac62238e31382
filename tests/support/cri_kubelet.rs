//! A kubelet stand-in that runs each pod as a real container, through the lab node's own
//! containerd over CRI, the way a kubelet asks it (the API stand-in, tests/support/kube_api.rs,
//! hands it every pod created, as it does tests/support/fake_kubelet.rs):
//!
//! 1. every hostPath volume's `type` is checked against the node's root directory as the
//!    kubelet's hostPath plugin checks it (kubernetes `pkg/volume/hostpath/host_path.go`,
//!    `checkType` and `typeMatchedOrError`); a failure is a `FailedMount` event worded as the
//!    volume manager words it (`pkg/volume/util/operationexecutor/operation_executor.go`,
//!    `generateVolumeMsg`: `MountVolume.SetUp failed for volume "NAME" : ERROR`), and the pod
//!    stays Pending in ContainerCreating. Nothing a hostPath names is created, except for the
//!    `…OrCreate` types, which the kubelet creates too;
//!    `configMap` and `projected` (configMap sources) volumes are written as the kubelet's atomic
//!    writer writes them on a tmpfs (`..data` → a timestamped directory, `defaultMode` or the
//!    item's `mode`), a missing ConfigMap a `FailedMount`; `emptyDir` with `medium: Memory` is a
//!    tmpfs of its `sizeLimit`; all unmounted when the pod is deleted;
//! 2. `RunPodSandbox` first, as the kubelet's `SyncPod` does, then the image, pulled by that
//!    node's containerd (CRI `ImageStatus`, `PullImage`) as `imagePullPolicy` says: `Never` and
//!    absent is `ErrImageNeverPull`, a failed pull is `ErrImagePull` with containerd's own
//!    message and a `Failed` event (the sandbox stays until the pod is deleted);
//! 3. the sandbox (the pod's host namespaces: `hostNetwork` → network `NODE`, `hostPID` →
//!    pid `NODE`; the kubelet's resolv.conf, the node's `/etc/resolv.conf`, for `dnsPolicy:
//!    Default`), `CreateContainer` (command and args, mounts — a hostPath is that path inside
//!    the node's root directory, read-only as the pod says —, user, capabilities, read-only
//!    root, no_new_privs, seccomp and AppArmor, the log path `NAME/0.log`), `StartContainer`;
//! 4. `ContainerStatus` polled until the container exits, `activeDeadlineSeconds` counted from
//!    the pod's `startTime` as the kubelet counts it (the container is stopped, the pod Failed
//!    with reason `DeadlineExceeded`), `restartPolicy: Never`; the pod's log (`pods/log`) is the
//!    container's CRI log file, both streams, as the kubelet serves it;
//! 5. when the pod is deleted: `StopPodSandbox` and `RemovePodSandbox`.
//!
//! The sandbox image is the one containerd's config names (`registry.example.test/pause:3.6`,
//! built by lab/images.py); containerd pulls it itself, anonymously, as it does on a node.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use pullpath::credentials::Credentials;
use pullpath::runtime::cri::{ImageService, PullOutcome, channel};
use pullpath::runtime::cri_api::runtime_service_client::RuntimeServiceClient;
use pullpath::runtime::cri_api::{
    Capability, ContainerConfig, ContainerMetadata, ContainerState, ContainerStatusRequest,
    CreateContainerRequest, DnsConfig, ImageSpec, Int64Value, KeyValue, LinuxContainerConfig,
    LinuxContainerSecurityContext, LinuxPodSandboxConfig, LinuxSandboxSecurityContext,
    ListPodSandboxRequest, Mount, NamespaceMode, NamespaceOption, PodSandboxConfig,
    PodSandboxMetadata, RemovePodSandboxRequest, RunPodSandboxRequest, SecurityProfile,
    StartContainerRequest, StopContainerRequest, StopPodSandboxRequest, security_profile,
};
use serde_json::{Value, json};
use tonic::transport::Channel;

use crate::kube_api::{Kubelet, PodStore, format_time, now_rfc3339};

/// How often the stand-in looks at its container and at the API (the kubelet's PLEG relists
/// every second; a tenth keeps tests quick).
const POLL: Duration = Duration::from_millis(100);
/// Bounds every CRI call; a pull of the probe image takes a few seconds on the lab.
const CRI_TIMEOUT: Duration = Duration::from_secs(120);

/// One lab node as its kubelet sees it.
#[derive(Debug, Clone)]
pub struct CriNode {
    /// The node's `/`: hostPath `/etc/hosts` is `root/etc/hosts`.
    pub root: PathBuf,
    /// That node's containerd CRI socket.
    pub socket: PathBuf,
    /// That node's containerd, as this machine's /proc numbers it: pid 1 of the node's own pid
    /// namespace (lab.py), which a `hostPID` pod shares.
    pub runtime_pid: u32,
    /// The kubelet's command line as the node image starts it (`/usr/bin/kubelet --config=…`),
    /// and its environment: what a probe pod reads in `/proc/<kubelet>/` on that node.
    pub kubelet_command: Vec<String>,
    pub kubelet_env: Vec<(String, String)>,
}

/// The kubelets of the lab nodes, each asking its node's containerd.
pub struct CriKubelet {
    /// By node name; a node a scale-up registers joins later ([`CriKubelet::add_node`]).
    nodes: Mutex<BTreeMap<String, CriNode>>,
    /// Where pod log directories go (the kubelet's /var/log/pods).
    pub log_dir: PathBuf,
    /// Sandboxes made and not yet removed, by node socket.
    live: Arc<Mutex<BTreeSet<(PathBuf, String)>>>,
    /// Each node's `kubelet` process (its pid in this machine's /proc) and the `nsenter` that
    /// forked it.
    processes: Mutex<Vec<(u32, std::process::Child)>>,
    /// The Secrets the API holds, which a pod's `imagePullSecrets` name (the kubelet reads them
    /// from the API).
    secrets: Vec<Value>,
}

impl CriKubelet {
    /// The kubelets of `nodes`, each with a process named `kubelet` started in its node's pid
    /// namespace with the node's kubelet command line and environment: the lab's pause program
    /// (lab/pause.c, which sleeps until stopped) built as `kubelet` in `LOG_DIR.bin`, so its
    /// `comm` is `kubelet` and its `cmdline` the node's flags, as on the node.
    pub fn new(nodes: BTreeMap<String, CriNode>, log_dir: PathBuf) -> CriKubelet {
        let processes = nodes
            .values()
            .map(|node| kubelet_process(&log_dir, node))
            .collect();
        CriKubelet {
            nodes: Mutex::new(nodes),
            log_dir,
            live: Arc::default(),
            processes: Mutex::new(processes),
            secrets: Vec::new(),
        }
    }

    /// A node that joined the cluster (a scale-up): its kubelet process starts and its pods run.
    pub fn add_node(&self, name: &str, node: CriNode) {
        let process = kubelet_process(&self.log_dir, &node);
        self.processes.lock().expect("processes").push(process);
        self.nodes
            .lock()
            .expect("nodes")
            .insert(name.to_string(), node);
    }

    /// The API's Secrets (the same objects the world serves), for pods' `imagePullSecrets`.
    pub fn with_secrets(mut self, secrets: Vec<Value>) -> CriKubelet {
        self.secrets = secrets;
        self
    }

    /// Sandboxes this kubelet made that are not removed yet (their pods not yet deleted).
    pub fn live_sandboxes(&self) -> Vec<String> {
        self.live
            .lock()
            .expect("live")
            .iter()
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// Wait until every sandbox made is removed, `within` at most; true when none is left.
    pub fn settled(&self, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while !self.live.lock().expect("live").is_empty() {
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(POLL);
        }
        true
    }
}

impl Kubelet for CriKubelet {
    fn pod_created(&self, pod: &Value, store: &Arc<PodStore>) {
        let node = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
        let Some(sim) = self.nodes.lock().expect("nodes").get(&node).cloned() else {
            // No kubelet on that node: the pod stays Pending, as for a node that is gone.
            return;
        };
        let credentials = pull_credentials(pod, &self.secrets, &sim.root, &sim.kubelet_command);
        let pod = Pod {
            spec: pod.clone(),
            credentials,
            node,
            store: store.clone(),
            sim,
            log_dir: self.log_dir.clone(),
            live: self.live.clone(),
        };
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(pod.run());
        });
    }
}

/// `program` started as the node's kubelet inside its pid namespace (`nsenter` forks it there,
/// bash's `exec -a` gives it the node's path as `argv[0]`); its pid in this machine's /proc once
/// it is running.
// The `nsenter` child is returned and waited for in `CriKubelet`'s `Drop`.
#[allow(clippy::zombie_processes)]
fn start_kubelet_process(program: &Path, node: &CriNode) -> (u32, std::process::Child) {
    use std::os::unix::process::CommandExt;
    let (argv0, flags) = node
        .kubelet_command
        .split_first()
        .expect("a kubelet command line");
    let mut nsenter = std::process::Command::new("nsenter")
        .arg("--target")
        .arg(node.runtime_pid.to_string())
        .args([
            "--pid",
            "--",
            "/bin/bash",
            "-c",
            "exec -a \"$0\" \"$1\" \"${@:2}\"",
        ])
        .arg(argv0)
        .arg(program)
        .args(flags)
        .env_clear()
        .envs(node.kubelet_env.iter().cloned())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("nsenter runs");
    let parent = nsenter.id();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
            .unwrap_or_default();
        if let Some(child) = children
            .split_whitespace()
            .next()
            .and_then(|c| c.parse::<u32>().ok())
            && std::fs::read_to_string(format!("/proc/{child}/comm"))
                .is_ok_and(|c| Path::new(c.trim()) == program.file_name().expect("a name"))
        {
            return (child, nsenter);
        }
        if Instant::now() > deadline {
            let _ = nsenter.kill();
            let _ = nsenter.wait();
            panic!("the kubelet process did not start");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The node's `kubelet` process (see [`CriKubelet::new`]).
fn kubelet_process(log_dir: &Path, node: &CriNode) -> (u32, std::process::Child) {
    let bin = log_dir.with_extension("bin");
    std::fs::create_dir_all(&bin).expect("kubelet bin dir");
    // Named as the node's kubelet command names it: `kubelet`, or `k3s` where the kubelet runs
    // inside the k3s process.
    let name = Path::new(&node.kubelet_command[0])
        .file_name()
        .expect("a program name");
    let program = bin.join(name);
    if !program.exists() {
        crate::support::succeeded(
            "gcc lab/pause.c",
            std::process::Command::new("gcc")
                .args(["-static", "-O2", "-o"])
                .arg(&program)
                .arg(crate::support::repo().join("lab/pause.c"))
                .output()
                .expect("gcc runs"),
        );
    }
    start_kubelet_process(&program, node)
}

impl Drop for CriKubelet {
    fn drop(&mut self) {
        let processes = self.processes.get_mut().expect("processes");
        for (pid, nsenter) in processes.iter_mut() {
            // SIGTERM ends pause.c; nsenter, its parent, then exits with it.
            let _ = std::process::Command::new("kill")
                .arg(pid.to_string())
                .status();
            let _ = nsenter.wait();
        }
    }
}

/// What one pod's kubelet thread works with.
struct Pod {
    spec: Value,
    /// What the kubelet passes to PullImage for the pod's image, in the order it tries them.
    credentials: Vec<Credentials>,
    node: String,
    store: Arc<PodStore>,
    sim: CriNode,
    log_dir: PathBuf,
    live: Arc<Mutex<BTreeSet<(PathBuf, String)>>>,
}

/// The credentials the kubelet passes to `PullImage` for the pod's image, in the order it tries
/// them (kuberuntime_image.go `pullImage`: the pod's pull secrets' keyring first, then the
/// node's; each credential in turn until one pulls, the last error otherwise; anonymous only
/// when none matches): the pod's `imagePullSecrets` (dockerconfigjson Secrets of its namespace),
/// then the node's `/var/lib/kubelet/config.json`, then the credential provider plugins the
/// kubelet's flags name ([`provider_credentials`]). A config.json key matches by the image's
/// registry host exactly, the part of the kubelet's keyring (globs, path prefixes) these tests
/// rely on.
fn pull_credentials(
    pod: &Value,
    secrets: &[Value],
    root: &Path,
    kubelet_command: &[String],
) -> Vec<Credentials> {
    let image = pod["spec"]["containers"][0]["image"].as_str().unwrap_or("");
    let host = registry_host(image);
    let namespace = &pod["metadata"]["namespace"];
    let mut configs: Vec<Value> = pod["spec"]["imagePullSecrets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|reference| {
            secrets.iter().find(|s| {
                s["metadata"]["namespace"] == *namespace
                    && s["metadata"]["name"] == reference["name"]
                    && s["type"] == "kubernetes.io/dockerconfigjson"
            })
        })
        .filter_map(|secret| {
            let encoded = secret["data"][".dockerconfigjson"].as_str()?;
            serde_json::from_slice(&STANDARD.decode(encoded).ok()?).ok()
        })
        .collect();
    let node_config = root.join("var/lib/kubelet/config.json");
    if let Some(config) = std::fs::read(node_config)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
    {
        configs.push(config);
    }
    let mut found: Vec<Credentials> = configs
        .iter()
        .filter_map(|config| {
            let entry = &config["auths"][host.as_str()];
            if let (Some(username), Some(password)) =
                (entry["username"].as_str(), entry["password"].as_str())
            {
                return Some(Credentials {
                    username: username.to_string(),
                    password: password.to_string(),
                });
            }
            let decoded = STANDARD.decode(entry["auth"].as_str()?).ok()?;
            let (username, password) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
            Some(Credentials {
                username: username.to_string(),
                password: password.to_string(),
            })
        })
        .collect();
    found.extend(provider_credentials(image, kubelet_command, root));
    found
}

/// The value of a kubelet flag (`--name=value` or `--name value`).
fn kubelet_flag<'a>(command: &'a [String], name: &str) -> Option<&'a str> {
    command.iter().enumerate().find_map(|(i, arg)| {
        let arg = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-'))?;
        match arg.strip_prefix(name)? {
            "" => command.get(i + 1).map(String::as_str),
            rest => rest.strip_prefix('='),
        }
    })
}

/// Whether a provider's `matchImages` pattern covers the image's registry host: dot-separated
/// labels compared one by one, `*` matching one whole label (the kubelet's `URLsMatchStr`, for
/// the host-only patterns the lab's node images use).
fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern: Vec<&str> = pattern.split('.').collect();
    let host: Vec<&str> = host.split('.').collect();
    pattern.len() == host.len() && pattern.iter().zip(&host).all(|(p, h)| *p == "*" || p == h)
}

/// The credential provider plugins the kubelet's `--image-credential-provider-config` and
/// `--image-credential-provider-bin-dir` name, run as the kubelet runs one for an image its
/// `matchImages` covers (pkg/credentialprovider/plugin, the exec protocol): the node's plugin
/// binary with the config's args and env, a `CredentialProviderRequest` on stdin, chrooted into
/// the node root (the plugin reads the node's own files), its `CredentialProviderResponse`'s
/// `auth` entry for the image's registry.
fn provider_credentials(image: &str, kubelet_command: &[String], root: &Path) -> Vec<Credentials> {
    let (Some(config), Some(bin_dir)) = (
        kubelet_flag(kubelet_command, "image-credential-provider-config"),
        kubelet_flag(kubelet_command, "image-credential-provider-bin-dir"),
    ) else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(root.join(config.trim_start_matches('/'))) else {
        return Vec::new();
    };
    let Ok(config) = serde_yaml_ng::from_str::<Value>(&text) else {
        return Vec::new();
    };
    let host = registry_host(image);
    let mut found = Vec::new();
    for provider in config["providers"].as_array().into_iter().flatten() {
        let patterns = strings(&provider["matchImages"]);
        if !patterns.iter().any(|p| host_matches(p, &host)) {
            continue;
        }
        let name = provider["name"].as_str().unwrap_or("");
        let request = json!({"apiVersion": provider["apiVersion"], "kind": "CredentialProviderRequest", "image": image});
        // By its path: the plugin's own PATH is the node's, not this machine's.
        let mut command = std::process::Command::new("/usr/sbin/chroot");
        command
            .arg(root)
            .arg(format!("{}/{name}", bin_dir.trim_end_matches('/')))
            .args(strings(&provider["args"]))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        for variable in provider["env"].as_array().into_iter().flatten() {
            if let (Some(key), Some(value)) =
                (variable["name"].as_str(), variable["value"].as_str())
            {
                command.env(key, value);
            }
        }
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                eprintln!("cri kubelet: provider {name} did not start: {e}");
                continue;
            }
        };
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            let _ = stdin.write_all(request.to_string().as_bytes());
        }
        let Ok(out) = child.wait_with_output() else {
            continue;
        };
        let Ok(response) = serde_json::from_slice::<Value>(&out.stdout) else {
            eprintln!(
                "cri kubelet: provider {name} gave no response ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        };
        for (key, auth) in response["auth"].as_object().into_iter().flatten() {
            if let (true, Some(username), Some(password)) = (
                host_matches(key, &host),
                auth["username"].as_str(),
                auth["password"].as_str(),
            ) {
                found.push(Credentials {
                    username: username.to_string(),
                    password: password.to_string(),
                });
            }
        }
    }
    found
}

/// The registry host of an image name (Docker Hub's for a name without one).
fn registry_host(image: &str) -> String {
    match image.split_once('/') {
        Some((first, _)) if first.contains(['.', ':']) || first == "localhost" => first.to_string(),
        _ => "docker.io".to_string(),
    }
}

fn epoch_seconds() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// Node path `path` as the node sees it, inside its `root`: every symlink on the way resolved
/// there (an absolute target from the node's `/`, `..` never above it), as the kubelet and
/// runc on the node resolve it, not against this machine's `/` (Ubuntu's `/etc/resolv.conf`
/// links to `/run/systemd/resolve/stub-resolv.conf`: the node's, not the machine's). At most
/// 40 links, as Linux follows (`MAXSYMLINKS`); past that the path as it stands.
pub fn in_node_root(root: &Path, path: &str) -> PathBuf {
    let mut resolved: Vec<String> = Vec::new();
    let mut pending: Vec<String> = path
        .split('/')
        .filter(|c| !c.is_empty())
        .rev()
        .map(String::from)
        .collect();
    let mut links = 0;
    while let Some(part) = pending.pop() {
        match part.as_str() {
            "." => continue,
            ".." => {
                resolved.pop();
                continue;
            }
            _ => {}
        }
        let here = resolved
            .iter()
            .chain(std::iter::once(&part))
            .fold(root.to_path_buf(), |p, c| p.join(c));
        let target = std::fs::symlink_metadata(&here)
            .ok()
            .filter(|m| m.file_type().is_symlink())
            .and_then(|_| std::fs::read_link(&here).ok());
        match target {
            Some(target) if links < 40 => {
                links += 1;
                let text = target.to_string_lossy().into_owned();
                if text.starts_with('/') {
                    resolved.clear();
                }
                pending.extend(
                    text.split('/')
                        .filter(|c| !c.is_empty())
                        .rev()
                        .map(String::from),
                );
            }
            _ => resolved.push(part),
        }
    }
    resolved.iter().fold(root.to_path_buf(), |p, c| p.join(c))
}

/// The hostPath plugin's check of `path` (a node path) for `kind`, read in the node's `root`
/// (`checkType` in pkg/volume/hostpath/host_path.go; its messages word for word).
pub fn check_host_path(root: &Path, path: &str, kind: &str) -> Result<(), String> {
    let on_node = in_node_root(root, path);
    let exists = on_node.symlink_metadata().is_ok();
    let (expected, description) = match kind {
        "" => return Ok(()),
        "DirectoryOrCreate" if !exists => {
            return std::fs::create_dir_all(&on_node).map_err(|e| e.to_string());
        }
        "FileOrCreate" if !exists => {
            return std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&on_node)
                .map(drop)
                .map_err(|e| e.to_string());
        }
        "Directory" | "DirectoryOrCreate" => ("Directory", "directory"),
        "File" | "FileOrCreate" => ("File", "file"),
        "Socket" => ("Socket", "socket file"),
        "CharDevice" => ("CharDevice", "character device"),
        "BlockDevice" => ("BlockDevice", "block device"),
        other => return Err(format!("{other} is an invalid volume type")),
    };
    let Ok(meta) = std::fs::metadata(&on_node) else {
        return Err(format!("hostPath {path} doesn't exist"));
    };
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let actual = if t.is_dir() {
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
        return Err(format!(
            "hostPath type check failed, {path} is not a {description}, unable to determine its type: unknown file type"
        ));
    };
    if actual != expected {
        return Err(format!(
            "hostPath type check failed: {path} is not a {description}, it's a {actual}"
        ));
    }
    Ok(())
}

/// The CRI log format (`TIMESTAMP STREAM TAG MESSAGE`, tag `F` a full line, `P` a part of
/// one) → the container's output as `pods/log` serves it, both streams in order.
pub fn parse_cri_log(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut fields = line.splitn(4, ' ');
        let (Some(_time), Some(_stream), Some(tag)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        out.push_str(fields.next().unwrap_or(""));
        if !tag.split(':').any(|t| t == "P") {
            out.push('\n');
        }
    }
    out
}

/// The pull policy the API gives a container that names none (kubernetes
/// `pkg/apis/core/v1/defaults.go` `SetDefaults_Container`): `Always` when the image's tag is
/// `latest`, given or implied (no tag and no digest: `parsers.ParseImageName` reads it as
/// `latest`), else `IfNotPresent`.
pub fn default_pull_policy(image: &str) -> &'static str {
    let (name, digest) = match image.split_once('@') {
        Some((name, _)) => (name, true),
        None => (image, false),
    };
    let last = name.rsplit('/').next().unwrap_or(name);
    let tag = last.split_once(':').map(|(_, tag)| tag);
    match (tag, digest) {
        (Some("latest"), _) | (None, false) => "Always",
        _ => "IfNotPresent",
    }
}

/// The kubelet's admission of a pod by its `spec.os` (kubernetes `pkg/kubelet/lifecycle/
/// predicate.go`, `rejectPodAdmissionBasedOnOSField`: the field must name the kubelet's own
/// `runtime.GOOS`, linux on every node here): the rejection's message, else `None`.
pub fn os_rejected(pod: &Value) -> Option<&'static str> {
    let os = pod["spec"]["os"]["name"].as_str()?;
    (os != "linux").then_some("Failed to admit pod as the OS field doesn't match node OS")
}

/// resolv.conf text → the DNS config the kubelet passes for `dnsPolicy: Default`.
fn dns_config(resolv: &str) -> DnsConfig {
    let mut dns = DnsConfig::default();
    for line in resolv.lines() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("nameserver") => dns.servers.extend(words.next().map(str::to_string)),
            Some("search") => dns.searches = words.map(str::to_string).collect(),
            Some("options") => dns.options.extend(words.map(str::to_string)),
            _ => {}
        }
    }
    dns
}

fn profile(kind: &str) -> Option<SecurityProfile> {
    let profile_type = match kind {
        "RuntimeDefault" => security_profile::ProfileType::RuntimeDefault,
        "Unconfined" => security_profile::ProfileType::Unconfined,
        _ => return None,
    };
    Some(SecurityProfile {
        profile_type: profile_type as i32,
        localhost_ref: String::new(),
    })
}

impl Pod {
    /// PullImage with each of the kubelet's credentials in turn until one pulls (the last
    /// answer otherwise), anonymously when it has none.
    async fn pull(
        &self,
        images: &mut ImageService,
        image: &str,
    ) -> Result<PullOutcome, pullpath::runtime::cri::CriError> {
        if self.credentials.is_empty() {
            return images.pull(image, None).await;
        }
        let mut last = None;
        for credentials in &self.credentials {
            match images.pull(image, Some(credentials)).await {
                Ok(PullOutcome::Failed { code, message }) => {
                    last = Some(Ok(PullOutcome::Failed { code, message }))
                }
                answer => return answer,
            }
        }
        last.expect("at least one credential was tried")
    }

    fn ns(&self) -> &str {
        self.spec["metadata"]["namespace"].as_str().unwrap_or("")
    }
    fn name(&self) -> &str {
        self.spec["metadata"]["name"].as_str().unwrap_or("")
    }
    fn uid(&self) -> &str {
        self.spec["metadata"]["uid"].as_str().unwrap_or("")
    }
    fn container(&self) -> &Value {
        &self.spec["spec"]["containers"][0]
    }
    fn deleted(&self) -> bool {
        !self
            .store
            .names()
            .contains(&format!("{}/{}", self.ns(), self.name()))
    }

    fn set_status(&self, status: Value) -> bool {
        self.store.set_status(self.ns(), self.name(), status)
    }

    fn container_status(&self, state: Value, ready: bool, image_id: &str) -> Value {
        let c = self.container();
        json!([{"name": c["name"], "image": c["image"], "imageID": image_id,
            "ready": ready, "restartCount": 0, "started": ready, "state": state}])
    }

    fn waiting(&self, started: &str, reason: &str, message: Option<&str>) -> Value {
        let mut waiting = json!({"reason": reason});
        if let Some(message) = message {
            waiting["message"] = json!(message);
        }
        json!({"phase": "Pending", "startTime": started, "hostIP": "", "conditions": [],
            "containerStatuses": self.container_status(json!({"waiting": waiting}), false, "")})
    }

    /// A core/v1 Event about this pod, from the kubelet on its node.
    fn event(&self, kind: &str, reason: &str, message: &str, field_path: Option<&str>) {
        let now = now_rfc3339();
        let mut involved = json!({"kind": "Pod", "namespace": self.ns(), "name": self.name(),
            "uid": self.uid(), "apiVersion": "v1"});
        if let Some(path) = field_path {
            involved["fieldPath"] = json!(path);
        }
        let id = format!("{:x}", epoch_seconds() as u64 ^ u64::from(rand_suffix()));
        self.store
            .record_event(json!({"kind": "Event", "apiVersion": "v1",
            "metadata": {"name": format!("{}.{id}", self.name()), "namespace": self.ns(),
                "creationTimestamp": now},
            "involvedObject": involved, "reason": reason, "message": message,
            "source": {"component": "kubelet", "host": self.node},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": kind,
            "eventTime": null, "reportingComponent": "kubelet", "reportingInstance": self.node}));
    }

    /// `activeDeadlineSeconds` from `startTime`, as the kubelet's active deadline handler counts.
    fn deadline(&self, started: Instant) -> Option<Instant> {
        self.spec["spec"]["activeDeadlineSeconds"]
            .as_u64()
            .map(|s| started + Duration::from_secs(s))
    }

    fn deadline_exceeded(&self, started: &str, container_state: Value) {
        self.event(
            "Normal",
            "DeadlineExceeded",
            "Pod was active on the node longer than the specified deadline",
            None,
        );
        self.set_status(json!({"phase": "Failed", "reason": "DeadlineExceeded",
            "message": "Pod was active on the node longer than the specified deadline",
            "startTime": started,
            "containerStatuses": self.container_status(container_state, false, "")}));
    }

    /// Wait, stuck (a mount or image that never comes), until deletion or the deadline.
    async fn stuck(&self, started_at: Instant, started: &str, state: Value) {
        let deadline = self.deadline(started_at);
        while !self.deleted() {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                self.deadline_exceeded(started, state);
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// The image, as `imagePullPolicy` says, pulled into the sandbox's node as the kubelet's
    /// `startContainer` does (`EnsureImageExists`, after the sandbox exists); `None` when the pod
    /// is then stuck (never pulled, a failed pull) until it is deleted or its deadline passes.
    async fn ensure_image(&self, started_at: Instant, started: &str) -> Option<String> {
        let image = self.container()["image"].as_str().unwrap_or("").to_string();
        let defaulted = default_pull_policy(&image);
        let policy = self.container()["imagePullPolicy"]
            .as_str()
            .unwrap_or(defaulted);
        let mut images = match ImageService::connect(&self.sim.socket, CRI_TIMEOUT).await {
            Ok(images) => images,
            Err(e) => {
                self.set_status(self.waiting(started, "ContainerCreating", Some(&e.to_string())));
                return None;
            }
        };
        let held = images.cached(&image).await.ok().flatten();
        let image_id = match (policy, held) {
            (_, Some(id)) if policy != "Always" => id,
            ("Never", None) => {
                let message =
                    format!("Container image \"{image}\" is not present with pull policy of Never");
                self.event(
                    "Warning",
                    "ErrImageNeverPull",
                    &message,
                    Some("spec.containers{probe}"),
                );
                let state = json!({"waiting": {"reason": "ErrImageNeverPull", "message": message}});
                self.set_status(self.waiting(started, "ErrImageNeverPull", Some(&message)));
                self.stuck(started_at, started, state).await;
                return None;
            }
            _ => match self.pull(&mut images, &image).await {
                Ok(PullOutcome::Pulled { image_ref }) => image_ref,
                Ok(PullOutcome::Failed { code, message }) => {
                    let rpc = format!("rpc error: code = {code} desc = {message}");
                    let event = format!("Failed to pull image \"{image}\": {rpc}");
                    self.event("Warning", "Failed", &event, Some("spec.containers{probe}"));
                    self.set_status(self.waiting(started, "ErrImagePull", Some(&rpc)));
                    let state = json!({"waiting": {"reason": "ErrImagePull", "message": rpc}});
                    self.stuck(started_at, started, state).await;
                    return None;
                }
                Err(e) => {
                    let rpc = e.to_string();
                    self.set_status(self.waiting(started, "ErrImagePull", Some(&rpc)));
                    let state = json!({"waiting": {"reason": "ErrImagePull", "message": rpc}});
                    self.stuck(started_at, started, state).await;
                    return None;
                }
            },
        };
        Some(image_id)
    }

    async fn run(self) {
        let started_at = Instant::now();
        let started = now_rfc3339();
        // 0. Admission: a pod for another OS is rejected before anything is set up.
        if let Some(message) = os_rejected(&self.spec) {
            self.set_status(json!({"phase": "Failed", "reason": "PodOSNotSupported",
                "message": format!("Pod was rejected: {message}"), "startTime": started}));
            return;
        }
        if !self.set_status(self.waiting(&started, "ContainerCreating", None)) {
            return;
        }
        // 1. Volumes: the hostPath type checks; configMap, projected and emptyDir volumes
        // written as the kubelet writes them. Each volume → its directory on this machine.
        let mut host_paths: HashMap<String, String> = HashMap::new();
        for volume in self.spec["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let Some(name) = volume["name"].as_str() else {
                continue;
            };
            let prepared = match volume["hostPath"]["path"].as_str() {
                Some(path) => {
                    let kind = volume["hostPath"]["type"].as_str().unwrap_or("");
                    check_host_path(&self.sim.root, path, kind)
                        .map(|()| in_node_root(&self.sim.root, path).display().to_string())
                }
                None => self.set_up_volume(name, volume),
            };
            match prepared {
                Ok(dir) => {
                    host_paths.insert(name.to_string(), dir);
                }
                Err(error) => {
                    self.event(
                        "Warning",
                        "FailedMount",
                        &format!("MountVolume.SetUp failed for volume \"{name}\" : {error}"),
                        None,
                    );
                    let state = json!({"waiting": {"reason": "ContainerCreating"}});
                    self.stuck(started_at, &started, state).await;
                    self.tear_down_volumes();
                    return;
                }
            }
        }
        // 3. The sandbox and the container.
        let channel = match channel(&self.sim.socket, CRI_TIMEOUT).await {
            Ok(c) => c,
            Err(e) => {
                self.set_status(self.waiting(&started, "ContainerCreating", Some(&e.to_string())));
                return;
            }
        };
        let mut runtime = RuntimeServiceClient::new(channel);
        let sandbox_config = self.sandbox_config();
        let sandbox = match runtime
            .run_pod_sandbox(RunPodSandboxRequest {
                config: Some(sandbox_config.clone()),
                runtime_handler: String::new(),
            })
            .await
        {
            Ok(r) => r.into_inner().pod_sandbox_id,
            Err(status) => {
                let message = format!(
                    "Failed to create pod sandbox: rpc error: code = {:?} desc = {}",
                    status.code(),
                    status.message()
                );
                self.event("Warning", "FailedCreatePodSandBox", &message, None);
                let state = json!({"waiting": {"reason": "ContainerCreating"}});
                self.stuck(started_at, &started, state).await;
                return;
            }
        };
        self.live
            .lock()
            .expect("live")
            .insert((self.sim.socket.clone(), sandbox.clone()));
        // 2. The image, once the sandbox exists (the kubelet's SyncPod makes the sandbox first;
        // its containers' images are pulled as each starts).
        if let Some(image_id) = self.ensure_image(started_at, &started).await {
            self.run_in_sandbox(
                &mut runtime,
                &sandbox,
                sandbox_config,
                &image_id,
                &host_paths,
                started_at,
                &started,
            )
            .await;
        }
        // 5. Deleted: the sandbox goes, with its container.
        while !self.deleted() {
            tokio::time::sleep(POLL).await;
        }
        let _ = runtime
            .stop_pod_sandbox(StopPodSandboxRequest {
                pod_sandbox_id: sandbox.clone(),
            })
            .await;
        let _ = runtime
            .remove_pod_sandbox(RemovePodSandboxRequest {
                pod_sandbox_id: sandbox.clone(),
            })
            .await;
        self.live
            .lock()
            .expect("live")
            .remove(&(self.sim.socket.clone(), sandbox));
        self.tear_down_volumes();
    }

    /// This pod's volume directories (the kubelet's `pods/UID/volumes`).
    fn volumes_dir(&self) -> PathBuf {
        self.log_dir
            .with_extension("volumes")
            .join(format!("{}_{}", self.name(), self.uid()))
    }

    /// A volume that is not a hostPath, set up as the kubelet does, or the error it reports:
    /// `emptyDir` (a tmpfs for `medium: Memory`, its `sizeLimit` the tmpfs size), `configMap`
    /// and `projected` (configMap sources): the kubelet's atomic writer on a tmpfs — the keys
    /// as files in a timestamped directory with `defaultMode` or the item's `mode`, `..data`
    /// linking to it, each path a link through `..data` (pkg/volume/util/atomic_writer.go).
    fn set_up_volume(&self, name: &str, volume: &Value) -> Result<String, String> {
        let dir = self.volumes_dir().join(name);
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        // The kubelet and its runtime share a mount namespace on a node; here containerd runs
        // in its own (this machine's `/` is private, so a mount made here would not reach it),
        // so the tmpfs is mounted there and written through `/proc/PID/root`, where runc sees it.
        let runtime = self.sim.runtime_pid.to_string();
        let seen = Path::new("/proc")
            .join(&runtime)
            .join("root")
            .join(dir.strip_prefix("/").unwrap_or(&dir));
        let tmpfs = |size: Option<&str>| -> Result<(), String> {
            let mut options = "mode=0777".to_string();
            if let Some(size) = size {
                let bytes = parse_quantity(size).ok_or(format!("bad sizeLimit {size}"))?;
                options.push_str(&format!(",size={bytes}"));
            }
            let out = std::process::Command::new("nsenter")
                .args(["--target", &runtime, "--mount", "--", "mount"])
                .args(["-t", "tmpfs", "-o", &options, "tmpfs"])
                .arg(&dir)
                .output()
                .map_err(|e| e.to_string())?;
            out.status
                .success()
                .then_some(())
                .ok_or_else(|| String::from_utf8_lossy(&out.stderr).trim().to_string())
        };
        let show = dir.display().to_string();
        if volume.get("emptyDir").is_some() {
            if volume["emptyDir"]["medium"] == "Memory" {
                tmpfs(volume["emptyDir"]["sizeLimit"].as_str())?;
            }
            return Ok(show);
        }
        let (sources, default_mode) = if volume.get("configMap").is_some() {
            (
                vec![volume["configMap"].clone()],
                &volume["configMap"]["defaultMode"],
            )
        } else if volume.get("projected").is_some() {
            let sources = volume["projected"]["sources"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|s| s["configMap"].clone())
                .collect();
            (sources, &volume["projected"]["defaultMode"])
        } else {
            return Err(format!("the stand-in does not serve volume {volume}"));
        };
        let default_mode = default_mode.as_u64().unwrap_or(0o644) as u32;
        // Every source read before anything is written: a missing one fails the mount.
        let mut files: Vec<(String, Vec<u8>, u32)> = Vec::new();
        for source in &sources {
            let map_name = source["name"].as_str().unwrap_or("");
            let map = self
                .store
                .config_map(self.ns(), map_name)
                .ok_or(format!("configmap \"{map_name}\" not found"))?;
            let value = |key: &str| -> Option<Vec<u8>> {
                use base64::Engine;
                if let Some(text) = map["data"][key].as_str() {
                    return Some(text.as_bytes().to_vec());
                }
                base64::engine::general_purpose::STANDARD
                    .decode(map["binaryData"][key].as_str()?)
                    .ok()
            };
            match source["items"].as_array() {
                Some(items) => {
                    for item in items {
                        let key = item["key"].as_str().unwrap_or("");
                        let bytes = value(key).ok_or(format!(
                            "configmap references non-existent config key: {key}"
                        ))?;
                        let mode = item["mode"].as_u64().map_or(default_mode, |m| m as u32);
                        let path = item["path"].as_str().unwrap_or(key).to_string();
                        files.push((path, bytes, mode));
                    }
                }
                None => {
                    for section in ["data", "binaryData"] {
                        for key in map[section]
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(k, _)| k)
                        {
                            files.push((key.clone(), value(key).unwrap_or_default(), default_mode));
                        }
                    }
                }
            }
        }
        tmpfs(None)?;
        use std::os::unix::fs::PermissionsExt;
        let stamp = format!("..{}", now_rfc3339().replace([':', '-'], "_"));
        let data = seen.join(&stamp);
        std::fs::create_dir(&data).map_err(|e| e.to_string())?;
        for (path, bytes, mode) in &files {
            let file = data.join(path);
            std::fs::write(&file, bytes).map_err(|e| e.to_string())?;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(*mode))
                .map_err(|e| e.to_string())?;
            std::os::unix::fs::symlink(format!("..data/{path}"), seen.join(path))
                .map_err(|e| e.to_string())?;
        }
        std::os::unix::fs::symlink(&stamp, seen.join("..data")).map_err(|e| e.to_string())?;
        Ok(show)
    }

    /// Unmount and remove this pod's volume directories (the pod is gone).
    fn tear_down_volumes(&self) {
        let root = self.volumes_dir();
        let runtime = self.sim.runtime_pid.to_string();
        for entry in std::fs::read_dir(&root).into_iter().flatten().flatten() {
            let _ = std::process::Command::new("nsenter")
                .args(["--target", &runtime, "--mount", "--", "umount"])
                .arg(entry.path())
                .output();
        }
        let _ = std::fs::remove_dir_all(&root);
    }

    fn namespaces(&self) -> NamespaceOption {
        let host = |field: &str| self.spec["spec"][field].as_bool().unwrap_or(false);
        NamespaceOption {
            network: if host("hostNetwork") {
                NamespaceMode::Node
            } else {
                NamespaceMode::Pod
            } as i32,
            pid: if host("hostPID") {
                NamespaceMode::Node
            } else {
                NamespaceMode::Container
            } as i32,
            ipc: if host("hostIPC") {
                NamespaceMode::Node
            } else {
                NamespaceMode::Pod
            } as i32,
            ..NamespaceOption::default()
        }
    }

    fn sandbox_config(&self) -> PodSandboxConfig {
        let spec = &self.spec["spec"];
        let pod_security = &spec["securityContext"];
        let host_network = spec["hostNetwork"].as_bool().unwrap_or(false);
        // dnsPolicy Default, or ClusterFirst on the host network (no cluster DNS to fall back
        // on here): the kubelet's --resolv-conf, the node's /etc/resolv.conf.
        let resolv =
            std::fs::read_to_string(self.sim.root.join("etc/resolv.conf")).unwrap_or_default();
        let labels: HashMap<String, String> = [
            ("io.kubernetes.pod.name", self.name()),
            ("io.kubernetes.pod.namespace", self.ns()),
            ("io.kubernetes.pod.uid", self.uid()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        PodSandboxConfig {
            metadata: Some(PodSandboxMetadata {
                name: self.name().into(),
                uid: self.uid().into(),
                namespace: self.ns().into(),
                attempt: 0,
            }),
            // The kubelet names the sandbox's host only in a UTS namespace of its own: a
            // hostNetwork pod has the node's (kuberuntime_sandbox.go).
            hostname: if host_network {
                String::new()
            } else {
                self.name().into()
            },
            log_directory: self
                .log_dir
                .join(format!("{}_{}_{}", self.ns(), self.name(), self.uid()))
                .display()
                .to_string(),
            dns_config: Some(dns_config(&resolv)),
            labels,
            linux: Some(LinuxPodSandboxConfig {
                security_context: Some(LinuxSandboxSecurityContext {
                    namespace_options: Some(self.namespaces()),
                    run_as_user: pod_security["runAsUser"]
                        .as_i64()
                        .map(|value| Int64Value { value }),
                    run_as_group: pod_security["runAsGroup"]
                        .as_i64()
                        .map(|value| Int64Value { value }),
                    seccomp: profile(
                        pod_security["seccompProfile"]["type"]
                            .as_str()
                            .unwrap_or(""),
                    ),
                    ..LinuxSandboxSecurityContext::default()
                }),
                ..LinuxPodSandboxConfig::default()
            }),
            ..PodSandboxConfig::default()
        }
    }

    #[allow(deprecated)]
    fn container_config(
        &self,
        image_id: &str,
        host_paths: &HashMap<String, String>,
    ) -> ContainerConfig {
        let c = self.container();
        let pod_security = &self.spec["spec"]["securityContext"];
        let security = &c["securityContext"];
        let either = |key: &str| {
            if security[key].is_null() {
                pod_security[key].clone()
            } else {
                security[key].clone()
            }
        };
        let mounts: Vec<Mount> = c["volumeMounts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| {
                let path = host_paths.get(m["name"].as_str()?)?;
                Some(Mount {
                    container_path: m["mountPath"].as_str()?.to_string(),
                    host_path: path.clone(),
                    readonly: m["readOnly"].as_bool().unwrap_or(false),
                    ..Mount::default()
                })
            })
            .collect();
        let apparmor = security["appArmorProfile"]["type"]
            .as_str()
            .or(pod_security["appArmorProfile"]["type"].as_str())
            .unwrap_or("RuntimeDefault");
        let name = c["name"].as_str().unwrap_or("").to_string();
        ContainerConfig {
            metadata: Some(ContainerMetadata {
                name: name.clone(),
                attempt: 0,
            }),
            image: Some(ImageSpec {
                image: image_id.to_string(),
                user_specified_image: c["image"].as_str().unwrap_or("").to_string(),
                ..ImageSpec::default()
            }),
            command: strings(&c["command"]),
            args: strings(&c["args"]),
            working_dir: c["workingDir"].as_str().unwrap_or("").to_string(),
            envs: c["env"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    Some(KeyValue {
                        key: e["name"].as_str()?.to_string(),
                        value: e["value"].as_str().unwrap_or("").as_bytes().to_vec(),
                    })
                })
                .collect(),
            mounts,
            log_path: format!("{name}/0.log"),
            linux: Some(LinuxContainerConfig {
                security_context: Some(LinuxContainerSecurityContext {
                    capabilities: Some(Capability {
                        add_capabilities: strings(&security["capabilities"]["add"]),
                        drop_capabilities: strings(&security["capabilities"]["drop"]),
                        ..Capability::default()
                    }),
                    privileged: security["privileged"].as_bool().unwrap_or(false),
                    namespace_options: Some(self.namespaces()),
                    run_as_user: either("runAsUser")
                        .as_i64()
                        .map(|value| Int64Value { value }),
                    run_as_group: either("runAsGroup")
                        .as_i64()
                        .map(|value| Int64Value { value }),
                    readonly_rootfs: security["readOnlyRootFilesystem"]
                        .as_bool()
                        .unwrap_or(false),
                    no_new_privs: security["allowPrivilegeEscalation"].as_bool() == Some(false),
                    seccomp: profile(either("seccompProfile")["type"].as_str().unwrap_or("")),
                    apparmor: profile(apparmor),
                    // What containerd 1.6 reads (the kubelet sets both).
                    apparmor_profile: match apparmor {
                        "Unconfined" => "unconfined".into(),
                        _ => "runtime/default".into(),
                    },
                    ..LinuxContainerSecurityContext::default()
                }),
                ..LinuxContainerConfig::default()
            }),
            ..ContainerConfig::default()
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_in_sandbox(
        &self,
        runtime: &mut RuntimeServiceClient<Channel>,
        sandbox: &str,
        sandbox_config: PodSandboxConfig,
        image_id: &str,
        host_paths: &HashMap<String, String>,
        started_at: Instant,
        started: &str,
    ) {
        let config = self.container_config(image_id, host_paths);
        let log_path = PathBuf::from(&sandbox_config.log_directory).join(&config.log_path);
        let created = runtime
            .create_container(CreateContainerRequest {
                pod_sandbox_id: sandbox.to_string(),
                config: Some(config),
                sandbox_config: Some(sandbox_config),
            })
            .await;
        let container = match created {
            Ok(r) => r.into_inner().container_id,
            Err(status) => {
                let message = format!("Error: {}", status.message());
                self.event(
                    "Warning",
                    "Failed",
                    &message,
                    Some("spec.containers{probe}"),
                );
                let state = json!({"waiting": {"reason": "CreateContainerError", "message": status.message()}});
                self.set_status(self.waiting(
                    started,
                    "CreateContainerError",
                    Some(status.message()),
                ));
                self.stuck(started_at, started, state).await;
                return;
            }
        };
        if let Err(status) = runtime
            .start_container(StartContainerRequest {
                container_id: container.clone(),
            })
            .await
        {
            let message = status.message().to_string();
            self.event(
                "Warning",
                "Failed",
                &format!("Error: {message}"),
                Some("spec.containers{probe}"),
            );
            self.set_status(json!({"phase": "Failed", "startTime": started,
                "containerStatuses": self.container_status(json!({"terminated": {"exitCode": 128, "reason": "StartError", "message": message}}), false, image_id)}));
            return;
        }
        let running_since = now_rfc3339();
        self.set_status(json!({"phase": "Running", "startTime": started,
            "containerStatuses": self.container_status(json!({"running": {"startedAt": running_since}}), true, image_id)}));
        // 4. Until it exits, the deadline passes, or the pod is deleted.
        let deadline = self.deadline(started_at);
        loop {
            if self.deleted() {
                let _ = runtime
                    .stop_container(StopContainerRequest {
                        container_id: container.clone(),
                        timeout: 0,
                    })
                    .await;
                return;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                let _ = runtime
                    .stop_container(StopContainerRequest {
                        container_id: container.clone(),
                        timeout: 0,
                    })
                    .await;
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                self.store
                    .set_log(self.ns(), self.name(), parse_cri_log(&log));
                self.deadline_exceeded(
                    started,
                    json!({"terminated": {"exitCode": 137, "reason": "Error", "startedAt": running_since, "finishedAt": now_rfc3339()}}),
                );
                return;
            }
            let status = runtime
                .container_status(ContainerStatusRequest {
                    container_id: container.clone(),
                    verbose: false,
                })
                .await
                .ok()
                .and_then(|r| r.into_inner().status);
            if let Some(status) =
                status.filter(|s| s.state == ContainerState::ContainerExited as i32)
            {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                self.store
                    .set_log(self.ns(), self.name(), parse_cri_log(&log));
                let exit = status.exit_code;
                let finished = format_time(status.finished_at / 1_000_000_000);
                let reason = if status.reason.is_empty() {
                    if exit == 0 { "Completed" } else { "Error" }.to_string()
                } else {
                    status.reason.clone()
                };
                self.set_status(json!({"phase": if exit == 0 { "Succeeded" } else { "Failed" },
                    "startTime": started,
                    "containerStatuses": self.container_status(json!({"terminated": {"exitCode": exit,
                        "reason": reason, "message": status.message, "startedAt": running_since,
                        "finishedAt": finished, "containerID": format!("containerd://{container}")}}), false, image_id)}));
                // restartPolicy Never (the only one probe pods use): it stays exited.
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// A resource quantity (`128Mi`, `1G`, `500000`) in bytes.
fn parse_quantity(text: &str) -> Option<u64> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let factor: u64 = match unit {
        "" => 1,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        _ => return None,
    };
    number.parse::<u64>().ok()?.checked_mul(factor)
}

/// A few bits that differ between events recorded in the same second.
fn rand_suffix() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    NEXT.fetch_add(1, Ordering::SeqCst) << 20 | std::process::id()
}

/// Every sandbox on a node's containerd (to show none is left behind).
pub async fn sandboxes_on(socket: &Path) -> Vec<String> {
    let channel = channel(socket, CRI_TIMEOUT)
        .await
        .expect("containerd answers");
    RuntimeServiceClient::new(channel)
        .list_pod_sandbox(ListPodSandboxRequest { filter: None })
        .await
        .expect("ListPodSandbox")
        .into_inner()
        .items
        .into_iter()
        .map(|s| s.id)
        .collect()
}

#[cfg(test)]
mod kinder_than_real {
    use super::*;

    #[test]
    fn an_unset_pull_policy_is_always_for_latest_or_no_tag_as_the_api_defaults_it() {
        for (image, policy) in [
            ("registry.test/app", "Always"),
            ("registry.test/app:latest", "Always"),
            ("registry.test:5000/app", "Always"),
            ("registry.test:5000/app:v1", "IfNotPresent"),
            ("registry.test/app@sha256:aaaa", "IfNotPresent"),
            ("registry.test/app:latest@sha256:aaaa", "Always"),
        ] {
            assert_eq!(default_pull_policy(image), policy, "{image}");
        }
    }

    #[test]
    fn host_paths_resolve_their_symlinks_inside_the_node_root() {
        let scratch = std::env::temp_dir().join(format!("pullpath-node-root-{}", rand_suffix()));
        let root = scratch.join("node");
        std::fs::create_dir_all(root.join("run/systemd/resolve")).expect("dirs");
        std::fs::create_dir_all(root.join("etc")).expect("etc");
        std::fs::write(
            root.join("run/systemd/resolve/stub-resolv.conf"),
            "nameserver 127.0.0.53\n",
        )
        .expect("stub");
        std::os::unix::fs::symlink(
            "/run/systemd/resolve/stub-resolv.conf",
            root.join("etc/resolv.conf"),
        )
        .expect("absolute link");
        std::os::unix::fs::symlink("../run", root.join("etc/run")).expect("relative link");
        std::os::unix::fs::symlink("/../../..", root.join("escape")).expect("escaping link");
        let resolved = in_node_root(&root, "/etc/resolv.conf");
        assert_eq!(resolved, root.join("run/systemd/resolve/stub-resolv.conf"));
        assert_eq!(
            in_node_root(&root, "/etc/run/systemd"),
            root.join("run/systemd")
        );
        assert_eq!(in_node_root(&root, "/escape/etc"), root.join("etc"));
        assert_eq!(check_host_path(&root, "/etc/resolv.conf", "File"), Ok(()));
        assert_eq!(in_node_root(&root, "/"), root);
        std::fs::remove_dir_all(&scratch).expect("clean up");
    }

    #[test]
    fn a_pod_for_another_os_is_rejected_as_the_kubelet_rejects_it() {
        let pod = |os: Value| json!({"spec": {"os": os, "containers": []}});
        assert_eq!(
            os_rejected(&pod(json!({"name": "windows"}))),
            Some("Failed to admit pod as the OS field doesn't match node OS")
        );
        assert_eq!(os_rejected(&pod(json!({"name": "linux"}))), None);
        assert_eq!(os_rejected(&json!({"spec": {}})), None);
    }
}
