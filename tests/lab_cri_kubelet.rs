//! The probe pod as a real container: `pullpath fleet` against the API stand-in, whose kubelet
//! (tests/support/cri_kubelet.rs) runs each pod through the lab node's own containerd over CRI
//! — the probe image pulled by that node from the lab registry, the sandbox on the lab's pause
//! image, the node's root mounted read-only at /host, the pod's user, capabilities and
//! read-only root applied by runc — and the pod's log read from the container's CRI log file.

#[path = "support/autoscaler.rs"]
mod autoscaler;
#[path = "support/cri_kubelet.rs"]
mod cri_kubelet;
#[path = "support/kube_api.rs"]
mod kube_api;
mod support;
use support::succeeded;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cri_kubelet::{CriKubelet, CriNode, sandboxes_on};
use kube_api::{ApiServer, World};
use pullpath::runtime::cri::ImageService;
use serde_json::{Value, json};
use support::lab_node::{NodeImage, node_root};
use support::scratch::Scratch;
use support::{LabGuard, catalog, lab, password, repo};

const IMAGE: &str = "registry.example.test/team-a/small:v1";
/// The fleet-pools node played by the lab's `node` (its hosts file holds the registry).
const NODE: &str = "aks-user-24791652-vmss000004";
/// Where the probe image goes: a repository anyone may pull, as a probe pod pulls it with no
/// pull secret.
const PROBE_REPOSITORY: &str = "registry.example.test/public/pullpath";

fn node_object(name: &str) -> Value {
    json!({"kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": "2026-12-01T08:20:00Z", "uid": format!("uid-{name}"),
            "labels": {"kubernetes.azure.com/agentpool": "user", "agentpool": "user", "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}},
        "spec": {"taints": []},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}], "images": [],
            "nodeInfo": {"kubeletVersion": "v1.33.5", "containerRuntimeVersion": "containerd://1.6.20",
                "osImage": "Debian GNU/Linux 12 (bookworm)", "architecture": "amd64", "bootID": "", "kernelVersion": "",
                "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux", "systemUUID": ""}}})
}

/// The static pullpath (as scripts/release.sh builds it, without its archives), stripped into
/// `dir`: a scratch or pause image has no loader. The dev profile (its debug sections are nine
/// tenths of the file) unless `PULLPATH_LAB_PROFILE` names another (bench/delivery.sh: `dist`,
/// the release archives' binary, stripped of everything as they are).
fn static_probe_binary(dir: &Path) -> PathBuf {
    let target = "x86_64-unknown-linux-gnu";
    let profile = std::env::var("PULLPATH_LAB_PROFILE").unwrap_or_else(|_| "dev".into());
    let release = profile != "dev";
    let mut build = Command::new(env!("CARGO"));
    build.args([
        "build",
        "--locked",
        "--quiet",
        // scripts/release.sh's static flags, from the one file both read: the same flags share
        // tests/release.rs's build instead of rebuilding every crate in turn.
        "--config",
        ".cargo/static.toml",
        "--target",
        target,
        "--bin",
        "pullpath",
        "--profile",
    ]);
    build.arg(&profile);
    succeeded(
        "cargo build (static)",
        build
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_ENCODED_RUSTFLAGS")
            .current_dir(repo())
            .output()
            .expect("cargo runs"),
    );
    let directory = if release { profile.as_str() } else { "debug" };
    let built = repo().join(format!("target/{target}/{directory}/pullpath"));
    let stripped = dir.join("pullpath");
    let strip = if release {
        "--strip-all"
    } else {
        "--strip-debug"
    };
    succeeded(
        "objcopy (strip)",
        Command::new("objcopy")
            .arg(strip)
            .arg(&built)
            .arg(&stripped)
            .output()
            .expect("objcopy runs"),
    );
    stripped
}

/// The probe image in the lab registry, tagged by its binary's digest: built by
/// scripts/image.sh and pushed with skopeo (as tests/lab_image.rs does) only when the registry
/// does not hold that tag yet. The lab must be on a scenario where the node reaches it.
fn probe_image(lab: &LabGuard, scratch: &Path, binary: &Path) -> String {
    let digest = succeeded(
        "sha256sum",
        Command::new("sha256sum")
            .arg(binary)
            .output()
            .expect("sha256sum"),
    );
    let tag = format!("dev-{}", &digest[..16]);
    let reference = format!("{PROBE_REPOSITORY}:{tag}");
    let certs = scratch.join("certs");
    std::fs::create_dir_all(&certs).expect("mkdir");
    std::fs::copy(&lab.status.ca, certs.join("ca.crt")).expect("lab CA");
    let certs = certs.to_str().expect("UTF-8");
    let held = lab.in_ns(
        "node",
        &[
            "skopeo",
            "inspect",
            "--raw",
            "--cert-dir",
            certs,
            &format!("docker://{reference}"),
        ],
    );
    if held.status.success() {
        return reference;
    }
    let layout = scratch.join("image");
    succeeded(
        "scripts/image.sh",
        Command::new("bash")
            .arg(repo().join("scripts/image.sh"))
            .arg("--binary")
            .arg(binary)
            .arg("--out")
            .arg(&layout)
            .args(["--tag", &tag])
            .current_dir(repo())
            .output()
            .expect("bash runs"),
    );
    let admin = format!("admin:{}", password("admin").expect("admin password"));
    succeeded(
        "skopeo copy",
        lab.in_ns(
            "node",
            &[
                "skopeo",
                "--insecure-policy",
                "copy",
                "--all",
                "--dest-creds",
                &admin,
                "--dest-cert-dir",
                certs,
                &format!("oci:{}:{tag}", layout.display()),
                &format!("docker://{reference}"),
            ],
        ),
    );
    reference
}

/// The API stand-in with one node, the lab's `node`, whose kubelet runs pods on its containerd.
fn cluster(
    lab: &LabGuard,
    scratch: &Path,
    image: NodeImage,
    api_only: Vec<Value>,
) -> (ApiServer, Arc<CriKubelet>, PathBuf) {
    let (server, kubelet, mut roots) = cluster_of(
        lab,
        scratch,
        &[(node_object(NODE), "node", image)],
        api_only,
    );
    (server, kubelet, roots.remove(0))
}

/// The API stand-in with `nodes` (each its Node object, the lab node whose containerd runs its
/// pods, and that node's image) and the `api_only` objects (nodes no kubelet runs, Secrets,
/// workloads); their node roots. The workloads' namespace `shop` enforces Pod Security
/// `restricted`, as application namespaces do: a `--kubelet-pull` pod must pass it.
fn cluster_of(
    lab: &LabGuard,
    scratch: &Path,
    nodes: &[(Value, &str, NodeImage)],
    api_only: Vec<Value>,
) -> (ApiServer, Arc<CriKubelet>, Vec<PathBuf>) {
    let mut roots = Vec::new();
    let mut kubelets = BTreeMap::new();
    for (object, lab_node, image) in nodes {
        let node = cri_node(lab, scratch, lab_node, *image);
        let name = object["metadata"]["name"].as_str().expect("a node name");
        roots.push(node.root.clone());
        kubelets.insert(name.to_string(), node);
    }
    // The kubelet reads the Secrets a pod's imagePullSecrets name from the API.
    let secrets = api_only
        .iter()
        .filter(|o| o["kind"] == "Secret")
        .cloned()
        .collect();
    let kubelet = Arc::new(CriKubelet::new(kubelets, scratch.join("pods")).with_secrets(secrets));
    let mut objects: Vec<Value> = nodes.iter().map(|(object, _, _)| object.clone()).collect();
    objects.extend([
        kube_api::namespace("default", json!({})),
        kube_api::namespace("pullpath", json!({})),
        kube_api::namespace(
            "shop",
            json!({"pod-security.kubernetes.io/enforce": "restricted"}),
        ),
    ]);
    objects.extend(api_only);
    let world = World::from_objects(objects).with_kubelet(kubelet.clone());
    let server = ApiServer::start(world);
    (server, kubelet, roots)
}

/// The kubelet of the lab node `lab_node` (its containerd), with its own root laid out as
/// `image` under `scratch`.
fn cri_node(lab: &LabGuard, scratch: &Path, lab_node: &str, image: NodeImage) -> CriNode {
    CriNode {
        root: node_root(lab, scratch, namespace_of(lab_node), lab_node, image),
        socket: lab.socket(lab_node).to_path_buf(),
        runtime_pid: lab.runtime_pid(lab_node),
        kubelet_command: image.kubelet_command(),
        kubelet_env: vec![("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into())],
    }
}

/// The lab namespace that plays the node whose containerd is `lab_node` (the old node's
/// containerd is `old-node`, its namespace `oldnode`).
fn namespace_of(lab_node: &str) -> &str {
    match lab_node {
        "old-node" => "oldnode",
        other => other,
    }
}

/// The lab on `scenario`, with the probe image built from this tree and held by the lab
/// registry (pushed on `healthy`, where the node reaches it), and the scratch it was built in.
/// The binary is built before the lab is taken: the lock is held only while the lab is used.
fn lab_with_probe_image(scenario: &str) -> (Scratch, LabGuard, String) {
    let build = Scratch::new("lab-cri-kubelet-build");
    let binary = static_probe_binary(build.path());
    let lab = lab();
    lab.switch("healthy");
    let probe = probe_image(&lab, build.path(), &binary);
    lab.switch(scenario);
    (build, lab, probe)
}

/// The probe pods' container logs (`POD/probe/0.log`) under the kubelet's log directory.
fn probe_logs(scratch: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(scratch.join("pods"))
        .expect("the pod's log directory")
        .flatten()
        .map(|d| d.path().join("probe/0.log"))
        .collect()
}

async fn held(lab: &LabGuard, image: &str) -> Option<String> {
    held_on(lab, "node", image).await
}

async fn held_on(lab: &LabGuard, lab_node: &str, image: &str) -> Option<String> {
    let mut images = ImageService::connect(lab.socket(lab_node), Duration::from_secs(10))
        .await
        .expect("containerd answers CRI");
    images.cached(image).await.expect("ImageStatus answers")
}

/// `pullpath fleet IMAGE --all-nodes --runtime-pull` against the stand-in, with only the probe's
/// source named (`--probe-image IMAGE`, or `--probe-binary ARCH=PATH`) and `extra`: its report and all it printed. When a node did not pass, the
/// cluster's events and the probe pods' logs are printed too, to read the failure by.
fn fleet(server: &ApiServer, scratch: &Path, source: &[&str], extra: &[&str]) -> (Value, String) {
    let config = server.kubeconfig(scratch, "default");
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args([
            "fleet",
            IMAGE,
            "--all-nodes",
            "--runtime-pull",
            "-o",
            "json",
        ])
        .arg("--kubeconfig")
        .arg(&config)
        .args(source)
        .args(["--poll-interval", "100ms", "--deadline", "120s"])
        .args(extra)
        .env("NO_COLOR", "1")
        .output()
        .expect("pullpath fleet runs");
    println!("fleet took {:?}", started.elapsed());
    let report = support::fleet_report(&out);
    let rows = report["nodes"].as_array().into_iter().flatten();
    if rows.clone().count() == 0 || rows.clone().any(|r| r["status"] != "passed") {
        let events = kube_api::run_kubectl(&config, &["get", "events", "-A", "-o", "json"]);
        let logs = Command::new("sh")
            .arg("-c")
            .arg(format!("cat {}/pods/*/probe/0.log", scratch.display()))
            .output()
            .expect("cat");
        println!(
            "events: {events}\nlog: {}\nstderr: {}",
            String::from_utf8_lossy(&logs.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (report, printed)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_probe_pod_runs_as_a_container_on_the_nodes_containerd_and_gives_the_scenarios_verdict()
{
    let scenario = catalog().remove("fleet-pools").expect("scenario");
    let (_build, lab, probe) = lab_with_probe_image("fleet-pools");
    assert!(held(&lab, &probe).await.is_none(), "a fresh node's store");
    let scratch = Scratch::under(&lab.status.state, "lab-cri");
    let (server, kubelet, _root) = cluster(&lab, scratch.path(), NodeImage::Plain, vec![]);
    let (report, _) = fleet(&server, scratch.path(), &["--probe-image", &probe], &[]);
    let row = support::fleet_row(&report, NODE);
    // The scenario's verdict for this node: the pull works (by the hosts-file hand fix).
    assert_eq!(scenario.expect.outcome, "pulled");
    assert_eq!(row["status"], "passed", "{row:#}");
    assert_eq!(row["runtime_pull"]["agrees"], true, "{row:#}");
    assert!(
        row["hand_fixes"]
            .as_array()
            .is_some_and(|f| f.iter().any(|h| h
                .as_str()
                .is_some_and(|h| h.contains("registry.example.test")))),
        "{row:#}"
    );
    // It ran as a container: the node's containerd pulled the probe image and the sandbox
    // image, and the container's log file is in the CRI format the kubelet reads.
    assert!(
        held(&lab, &probe).await.is_some(),
        "the node pulled {probe}"
    );
    assert!(
        held(&lab, "registry.example.test/pause:3.6")
            .await
            .is_some(),
        "containerd pulled its sandbox image"
    );
    let logs = probe_logs(scratch.path());
    assert_eq!(logs.len(), 1, "{logs:?}");
    let raw = std::fs::read_to_string(&logs[0]).expect("the container's log");
    assert!(
        raw.lines().any(|l| l.split(' ').nth(1) == Some("stdout")),
        "{raw}"
    );
    // The pod is deleted, and so is its sandbox.
    all_gone(&server, &kubelet);
    assert!(sandboxes_on(lab.socket("node")).await.is_empty());
}

/// A hostPath that is not what its `type` says: the kubelet's `FailedMount` event, the pod
/// Pending in ContainerCreating, no sandbox, and nothing created on the node.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_path_type_mismatch_is_a_failed_mount_event_and_no_container() {
    let lab = lab();
    lab.switch("fleet-pools");
    let scratch = Scratch::under(&lab.status.state, "lab-cri-mount");
    let (server, kubelet, root) = cluster(&lab, scratch.path(), NodeImage::Plain, vec![]);
    let config = server.kubeconfig(scratch.path(), "default");
    let pod = |name: &str, path: &str, kind: &str| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": NODE, "hostNetwork": true, "restartPolicy": "Never",
                "containers": [{"name": "probe", "image": "registry.example.test/public/small:v1",
                    "imagePullPolicy": "IfNotPresent", "command": ["/data"],
                    "volumeMounts": [{"name": "node-files", "mountPath": "/host", "readOnly": true}]}],
                "volumes": [{"name": "node-files", "hostPath": {"path": path, "type": kind}}]}})
    };
    let file = scratch.path().join("pods.json");
    std::fs::write(
        &file,
        json!({"apiVersion": "v1", "kind": "List", "items": [
            pod("k3s-like", "/etc/containerd", "Directory"),
            pod("not-a-dir", "/etc/resolv.conf", "Directory"),
        ]})
        .to_string(),
    )
    .expect("write pods");
    let file = file.to_str().expect("UTF-8");
    kube_api::run_kubectl(&config, &["create", "--validate=false", "-f", file]);
    let deadline = Instant::now() + Duration::from_secs(10);
    let events = loop {
        let text = kube_api::run_kubectl(&config, &["get", "events", "-o", "json"]);
        let events: Value = serde_json::from_str(&text).expect("events JSON");
        let mounts: Vec<(String, String)> = events["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["reason"] == "FailedMount")
            .map(|e| {
                (
                    e["involvedObject"]["name"]
                        .as_str()
                        .unwrap_or("")
                        .to_string(),
                    e["message"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        if mounts.len() == 2 || Instant::now() > deadline {
            break mounts.into_iter().collect::<BTreeMap<_, _>>();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        events.get("k3s-like").map(String::as_str),
        Some(
            "MountVolume.SetUp failed for volume \"node-files\" : hostPath /etc/containerd doesn't exist"
        ),
        "{events:?}"
    );
    assert_eq!(
        events.get("not-a-dir").map(String::as_str),
        Some(
            "MountVolume.SetUp failed for volume \"node-files\" : hostPath type check failed: /etc/resolv.conf is not a directory, it's a File"
        ),
        "{events:?}"
    );
    let pods: Value = serde_json::from_str(&kube_api::run_kubectl(
        &config,
        &["get", "pods", "-o", "json"],
    ))
    .expect("pods JSON");
    for pod in pods["items"].as_array().expect("pods") {
        assert_eq!(pod["status"]["phase"], "Pending", "{pod:#}");
        assert_eq!(
            pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
            "ContainerCreating",
            "{pod:#}"
        );
    }
    assert!(
        !root.join("etc/containerd").exists(),
        "the kubelet created a hostPath"
    );
    assert!(kubelet.live_sandboxes().is_empty());
    assert!(sandboxes_on(lab.socket("node")).await.is_empty());
    kube_api::run_kubectl(&config, &["delete", "pods", "--all", "--wait=false"]);
}

/// A node of `pool` that exists in the API only (no kubelet runs its pods), with `labels` over
/// the Linux amd64 ones.
fn api_only_node(name: &str, pool: &str, labels: Value) -> Value {
    let mut node = node_object(name);
    let all = node["metadata"]["labels"].as_object_mut().expect("labels");
    all.insert("agentpool".into(), pool.into());
    all.insert("kubernetes.azure.com/agentpool".into(), pool.into());
    for (key, value) in labels.as_object().expect("labels") {
        all.insert(key.clone(), value.clone());
    }
    node
}

/// No pod left in the API, and every sandbox the kubelet made removed.
fn all_gone(server: &ApiServer, kubelet: &CriKubelet) {
    assert!(
        server.store.names().is_empty(),
        "{:?}",
        server.store.names()
    );
    assert!(
        kubelet.settled(Duration::from_secs(30)),
        "sandboxes left: {:?}",
        kubelet.live_sandboxes()
    );
}

/// An AKS Ubuntu node whose registry credential comes only from its kubelet's credential
/// provider, a plugin that reads the root-only /etc/kubernetes/azure.json: the probe pod finds
/// the kubelet in the node's pid namespace, reads its flags and its `--config`, runs the plugin
/// inside the node's root, and passes as the node's own containerd does with that credential —
/// where reading the pod's own filesystem would be an auth failure the node does not have.
/// Beside it, nodes a Linux probe pod cannot run on (Windows, a virtual node) are skipped with
/// the label that said so, and an arm64 node the probe image has no variant for is a run
/// problem, not a verdict on its pool.
#[tokio::test(flavor = "multi_thread")]
async fn an_aks_node_passes_with_its_kubelets_credential_provider_run_from_the_probe_pod() {
    let scenario = catalog().remove("cred-provider-matches").expect("scenario");
    let (_build, lab, probe) = lab_with_probe_image("cred-provider-matches");
    let scratch = Scratch::under(&lab.status.state, "lab-cri-aks");
    let (server, kubelet, _root) = cluster(
        &lab,
        scratch.path(),
        NodeImage::AksUbuntu,
        vec![
            api_only_node(
                "akswin000000",
                "win",
                json!({"kubernetes.io/os": "windows"}),
            ),
            api_only_node(
                "virtual-node-aci-linux",
                "virtual",
                json!({"type": "virtual-kubelet"}),
            ),
            api_only_node(
                "aks-arm-31415926-vmss000000",
                "arm",
                json!({"kubernetes.io/arch": "arm64"}),
            ),
        ],
    );
    let (report, printed) = fleet(
        &server,
        scratch.path(),
        &["--probe-image", &probe],
        &["--probe-image-arch", "amd64"],
    );
    let row = support::fleet_row(&report, NODE);
    assert_eq!(scenario.expect.outcome, "pulled");
    assert_eq!(row["status"], "passed", "{row:#}");
    assert_eq!(row["runtime_pull"]["agrees"], true, "{row:#}");
    // Which credential: the probe pod's own report, as its container logged it.
    let logs = probe_logs(scratch.path());
    let logged = std::fs::read_to_string(&logs[0]).expect("the container's log");
    let probe_report: Value =
        serde_json::from_str(&cri_kubelet::parse_cri_log(&logged)).expect("the probe's report");
    let attempts = &probe_report["credentials"]["attempts"];
    assert_eq!(
        (attempts[0]["source"].as_str(), attempts[0]["name"].as_str()),
        (Some("provider"), Some("acr-credential-provider")),
        "{probe_report:#}"
    );
    let origins = probe_report["credentials"]["origins"].to_string();
    assert!(
        origins.contains("/var/lib/kubelet/credential-provider-config.yaml"),
        "the provider config is named from the kubelet's own flags: {origins}"
    );
    let secret = password("alice").expect("alice's password");
    assert!(
        !printed.contains(secret),
        "the plugin's password is printed"
    );

    let skipped = report["skipped"].to_string();
    for (node, label) in [
        ("akswin000000", "kubernetes.io/os=windows"),
        ("virtual-node-aci-linux", "type=virtual-kubelet"),
    ] {
        assert!(
            skipped.contains(node) && skipped.contains(label),
            "{node} skipped by {label}: {skipped}"
        );
    }
    let arm = support::fleet_row(&report, "aks-arm-31415926-vmss000000");
    assert_eq!(arm["problem"]["kind"], "probe-image-arch", "{arm:#}");
    assert!(
        server.store.names().is_empty(),
        "{:?}",
        server.store.names()
    );

    // The same node through `explain pod/NAME --probe`: a workload pod there waits on the image
    // with an anonymous pull's words (as where the plugin is missing); the explanation reads
    // the text, then the node itself answers, with its plugin, as fleet did.
    let message = format!(
        "failed to pull and unpack image \"{IMAGE}\": failed to resolve reference \"{IMAGE}\": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://auth.example.test/token?scope=repository%3Ateam-a%2Fsmall%3Apull&service=registry.example.test: 401 Unauthorized"
    );
    let pod = json!({"kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "web-6d8f7c9b5-zz9kq", "namespace": "shop", "uid": "uid-web-zz9kq", "creationTimestamp": "2026-12-02T08:30:00Z"},
        "spec": {"nodeName": NODE, "containers": [{"name": "web", "image": IMAGE}]},
        "status": {"phase": "Pending", "containerStatuses": [{"name": "web", "image": IMAGE, "imageID": "",
            "ready": false, "restartCount": 0, "started": false,
            "state": {"waiting": {"reason": "ErrImagePull", "message": message}}}]}});
    let explain_server = ApiServer::start(
        World::from_objects(vec![
            node_object(NODE),
            kube_api::namespace("pullpath", json!({})),
            kube_api::namespace(
                "shop",
                json!({"pod-security.kubernetes.io/enforce": "restricted"}),
            ),
            pod,
        ])
        .with_kubelet(kubelet.clone()),
    );
    let config = explain_server.kubeconfig(scratch.path(), "default");
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args([
            "explain",
            "pod/web-6d8f7c9b5-zz9kq",
            "-n",
            "shop",
            "--probe",
        ])
        .args(["--probe-image", &probe])
        .arg("--kubeconfig")
        .arg(&config)
        .env("NO_COLOR", "1")
        .output()
        .expect("pullpath explain runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let fleet_part = text
        .find(&format!("pullpath fleet {IMAGE}"))
        .unwrap_or_else(|| {
            panic!(
                "no fleet report:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(text[..fleet_part].contains("auth"), "{text}");
    assert!(
        text[fleet_part..].contains(NODE) && text[fleet_part..].contains("passes"),
        "{text}"
    );
    assert!(!text.contains(secret), "the plugin's password is printed");
    all_gone(&explain_server, &kubelet);

    // `--kubelet-pull`: the node's kubelet pulls the image itself, with the credential its
    // provider plugin gives it (no pull secret on the pod): it pulls, as the probe said.
    forget(&lab, "node", IMAGE).await;
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args([
            "fleet",
            IMAGE,
            "--for",
            "pod/web-6d8f7c9b5-zz9kq",
            "-n",
            "shop",
        ])
        .args(["--kubelet-pull", "-o", "json", "--probe-image", &probe])
        .args(["--poll-interval", "100ms", "--deadline", "120s"])
        .arg("--kubeconfig")
        .arg(&config)
        .output()
        .expect("pullpath fleet runs");
    let report = support::fleet_report(&out);
    let row = support::fleet_row(&report, NODE);
    assert_eq!(row["status"], "passed", "{row:#}");
    assert_eq!(row["kubelet_pull"]["outcome"], "pulled", "{row:#}");
    assert_eq!(row["kubelet_pull"]["agrees"], true, "{row:#}");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !printed.contains(secret),
        "the plugin's password is printed"
    );
    assert!(
        held(&lab, IMAGE).await.is_some(),
        "the kubelet's own pull left the image in the node's store"
    );
    all_gone(&explain_server, &kubelet);
}

/// `--kubelet-pull`: after the probe pod, a pod in the workload's namespace has the node's
/// kubelet pull the image itself (`imagePullPolicy: Always`, a command that never runs): the
/// node's containerd pulls it, the container's start error proves the pull, and the row says
/// the kubelet agrees with the probe. Both pods are gone afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn the_kubelets_own_pull_sits_beside_the_probes_verdict() {
    const PUBLIC: &str = "registry.example.test/public/small:v1";
    let (_build, lab, probe) = lab_with_probe_image("fleet-pools");
    let scratch = Scratch::under(&lab.status.state, "lab-cri-kubelet-pull");
    let (server, kubelet, _root) = cluster(&lab, scratch.path(), NodeImage::Plain, vec![]);
    let config = server.kubeconfig(scratch.path(), "default");
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args([
            "fleet",
            PUBLIC,
            "--all-nodes",
            "--kubelet-pull",
            "-o",
            "json",
        ])
        .arg("--kubeconfig")
        .arg(&config)
        .args(["-n", "shop", "--probe-image", &probe])
        .args(["--poll-interval", "100ms", "--deadline", "30s"])
        .output()
        .expect("pullpath fleet runs");
    let report = support::fleet_report(&out);
    let row = support::fleet_row(&report, NODE);
    if row["status"] != "passed" {
        let requests = server.requests.lock().expect("requests").clone();
        println!("requests: {requests:#?}");
    }
    assert_eq!(row["status"], "passed", "{row:#}");
    let pull = &row["kubelet_pull"];
    assert_eq!(pull["outcome"], "pulled", "{row:#}");
    assert_eq!(pull["agrees"], true, "{row:#}");
    assert!(
        pull["pod"]
            .as_str()
            .is_some_and(|p| p.starts_with("shop/pullpath-fleet-")),
        "{row:#}"
    );
    assert!(
        held(&lab, PUBLIC).await.is_some(),
        "the kubelet's pull left the image in the node's cache"
    );
    let text = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["fleet", PUBLIC, "--all-nodes", "--kubelet-pull"])
        .arg("--kubeconfig")
        .arg(&config)
        .args(["-n", "shop", "--probe-image", &probe])
        .args(["--poll-interval", "100ms", "--deadline", "120s"])
        .env("NO_COLOR", "1")
        .output()
        .expect("pullpath fleet runs");
    let printed = String::from_utf8_lossy(&text.stdout);
    assert!(printed.contains("[kubelet agrees: pulled]"), "{printed}");
    all_gone(&server, &kubelet);
}

/// The Amazon-Linux-2023-like node of the stand-in cluster (an EKS node name).
const AL2023_NODE: &str = "ip-10-10-11-2.ec2.internal";
/// The k3s-like node.
const K3S_NODE: &str = "k3s-agent-1";

/// A node laid out as a node image, its pool by `pool_label`, its runtime the lab's containerd.
fn image_node_object(
    lab: &LabGuard,
    name: &str,
    pool_label: (&str, &str),
    os_image: &str,
) -> Value {
    let mut node = node_object(name);
    let labels = node["metadata"]["labels"].as_object_mut().expect("labels");
    labels.remove("kubernetes.azure.com/agentpool");
    labels.remove("agentpool");
    labels.insert(pool_label.0.into(), pool_label.1.into());
    let version = match lab.status.containerd.as_str() {
        "1.7" => "1.7.24",
        "2.1" => "2.1.9",
        _ => "1.6.20",
    };
    let info = &mut node["status"]["nodeInfo"];
    info["containerRuntimeVersion"] = format!("containerd://{version}").into();
    info["osImage"] = os_image.into();
    node
}

/// A node's containerd forgets `image` (the node is fresh again for it).
async fn forget(lab: &LabGuard, node: &str, image: &str) {
    let mut images = ImageService::connect(lab.socket(node), Duration::from_secs(10))
        .await
        .expect("containerd answers CRI");
    images.remove(image).await.expect("RemoveImage answers");
}

/// Each probe pod's report, as its container logged it, by the node it ran on (told by the
/// config.toml its hosts directories came from: k3s's is under /var/lib/rancher).
fn probe_reports(scratch: &Path) -> BTreeMap<String, Value> {
    probe_logs(scratch)
        .into_iter()
        .filter_map(|log| {
            let text = std::fs::read_to_string(&log).ok()?;
            let report: Value = serde_json::from_str(&cri_kubelet::parse_cri_log(&text)).ok()?;
            let origin = report["hosts_dirs"]["origin"].as_str()?.to_string();
            let node = if origin.contains("/var/lib/rancher/") {
                K3S_NODE
            } else {
                AL2023_NODE
            };
            Some((node.to_string(), report))
        })
        .collect()
}

/// Nodes laid out as the images clusters run, each with its own containerd reading the image's
/// files at their node paths (lab.py `build_al2023_root`, `build_k3s_root`):
///
/// - Amazon Linux 2023: the lab CA trusted only in /etc/pki (behind the /etc/ssl/certs link,
///   which containerd's Go really follows), containerd's proxy only in the `EnvironmentFile=` of
///   its unit's drop-in, no route but to the proxy, and `config_path` the image's two roots
///   with the registry's mirror (anonymous) only in /etc/docker/certs.d. Each of the three
///   decides: without the proxy no route, without /etc/pki no trust, without the second root
///   the registry itself, which refuses an anonymous pull of the image.
/// - k3s: no /etc/containerd (the probe pod mounts `/` and does not FailedMount), containerd
///   started with k3s's `-c` and `-a /run/k3s/containerd/containerd.sock`, no kubelet process
///   (k3s runs it inside its own), the registry's CA and alice's credential only in k3s's
///   config.toml and certs.d.
///
/// `fleet --runtime-pull` gives each the verdict its own containerd gives: both pass on the
/// healthy lab; when the proxy wants credentials the AL2023 node's EnvironmentFile lacks, it
/// fails at the proxy as its containerd does, and the k3s node (no proxy) still passes.
#[tokio::test(flavor = "multi_thread")]
async fn image_nodes_al2023_and_k3s_get_the_verdict_of_their_own_containerd() {
    let (_build, lab, probe) = lab_with_probe_image("healthy");
    for node in ["al2023", "k3s"] {
        forget(&lab, node, IMAGE).await;
    }
    let scratch = Scratch::under(&lab.status.state, "lab-cri-images");
    let nodes = [
        (
            image_node_object(
                &lab,
                AL2023_NODE,
                ("eks.amazonaws.com/nodegroup", "al2023"),
                "Amazon Linux 2023.6.20250203",
            ),
            "al2023",
            NodeImage::Al2023,
        ),
        (
            image_node_object(
                &lab,
                K3S_NODE,
                ("node.kubernetes.io/instance-type", "k3s"),
                "K3s",
            ),
            "k3s",
            NodeImage::K3s,
        ),
    ];
    let (server, kubelet, roots) = cluster_of(&lab, scratch.path(), &nodes, vec![]);
    assert!(
        !roots[1].join("etc/containerd").exists(),
        "the k3s node has no /etc/containerd"
    );
    // The AL2023 node reaches the mirror and the registry only through its proxy.
    for address in ["10.10.2.2", "10.10.8.2", "10.10.4.2"] {
        let route = lab.in_ns("al2023", &["ip", "route", "get", address]);
        assert!(
            !route.status.success(),
            "pp-al2023 has a route to {address}"
        );
    }

    let (report, printed) = fleet(&server, scratch.path(), &["--probe-image", &probe], &[]);
    for node in [AL2023_NODE, K3S_NODE] {
        let row = support::fleet_row(&report, node);
        assert_eq!(row["status"], "passed", "{node}: {row:#}");
        assert_eq!(row["runtime_pull"]["outcome"], "pulled", "{node}: {row:#}");
        assert_eq!(row["runtime_pull"]["agrees"], true, "{node}: {row:#}");
    }
    let reports = probe_reports(scratch.path());
    let al2023 = &reports[AL2023_NODE];
    assert_eq!(
        al2023["hosts_dirs"]["roots"],
        json!(["/etc/containerd/certs.d", "/etc/docker/certs.d"]),
        "{al2023:#}"
    );
    assert_eq!(
        al2023["system_trust"]["bundle"], "/etc/pki/tls/certs/ca-bundle.crt",
        "{al2023:#}"
    );
    let proxy = al2023["proxy"].to_string();
    assert!(
        proxy.contains("HTTPS_PROXY") && proxy.contains("http://10.10.9.2:3128"),
        "{proxy}"
    );
    assert!(
        al2023["path"].to_string().contains("cache.example.test"),
        "the pull went to the mirror of /etc/docker/certs.d: {al2023:#}"
    );
    let k3s = &reports[K3S_NODE];
    assert_eq!(
        k3s["hosts_dirs"]["roots"],
        json!(["/var/lib/rancher/k3s/agent/etc/containerd/certs.d"]),
        "{k3s:#}"
    );
    // The credential is containerd's own, which the kubelet never sends.
    assert_eq!(
        k3s["credentials"]["attempts"][0]["source"], "containerd-config",
        "{k3s:#}"
    );
    // Its runtime pull (passed above) went to the one socket the node has, containerd's -a.
    assert!(!roots[1].join("run/containerd/containerd.sock").exists());
    assert!(roots[1].join("run/k3s/containerd/containerd.sock").exists());
    let config = server.kubeconfig(scratch.path(), "default");
    let events = kube_api::run_kubectl(&config, &["get", "events", "-A", "-o", "json"]);
    assert!(!events.contains("FailedMount"), "{events}");
    all_gone(&server, &kubelet);

    // What decided: the same probe on the AL2023 node, told to assume what a node-blind probe
    // assumes, no longer agrees with that node's containerd.
    let blind = |assume: &[&str]| {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", "pp-al2023"])
            .arg(env!("CARGO_BIN_EXE_pullpath"))
            .args(["probe", IMAGE, "-o", "json", "--host-root"])
            .arg(&roots[0])
            .args(["--runtime-pid", &lab.runtime_pid("al2023").to_string()])
            .args(["--containerd-version", "1.6.20"])
            .args(assume);
        let out = command.output().expect("pullpath probe runs");
        let report: Value = serde_json::from_slice(&out.stdout).expect("probe JSON");
        report["verdict"].clone()
    };
    assert_eq!(blind(&[])["passed"], true, "as the node has it");
    let certs_d = blind(&["--containerd-certs", "/etc/containerd/certs.d"]);
    assert_eq!(
        (certs_d["passed"].as_bool(), certs_d["layer"].as_str()),
        (Some(false), Some("auth")),
        "with certs.d assumed, the registry itself refuses the anonymous pull: {certs_d:#}"
    );
    let direct = blind(&["--https-proxy", ""]);
    assert_eq!(
        (direct["passed"].as_bool(), direct["layer"].as_str()),
        (Some(false), Some("route")),
        "without the EnvironmentFile's proxy, no route: {direct:#}"
    );

    // The proxy now wants credentials, which the AL2023 node's EnvironmentFile lacks.
    lab.switch("proxy-auth-required");
    forget(&lab, "al2023", IMAGE).await;
    forget(&lab, "k3s", IMAGE).await;
    let (report, more) = fleet(&server, scratch.path(), &["--probe-image", &probe], &[]);
    let row = support::fleet_row(&report, AL2023_NODE);
    assert_eq!(row["status"], "failed", "{row:#}");
    assert_eq!(row["verdict"]["layer"], "proxy", "{row:#}");
    assert_eq!(row["runtime_pull"]["outcome"], "failed", "{row:#}");
    assert_eq!(row["runtime_pull"]["agrees"], true, "{row:#}");
    let containerd_said = row["runtime_pull"]["message"]
        .as_str()
        .expect("containerd's message")
        .to_string();
    let row = support::fleet_row(&report, K3S_NODE);
    assert_eq!(row["status"], "passed", "{row:#}");
    assert_eq!(row["runtime_pull"]["agrees"], true, "{row:#}");
    all_gone(&server, &kubelet);

    // The same through `explain pod/NAME --probe`: a workload pod on the AL2023 node waits on
    // the image with its containerd's own words; the explanation reads them, then each node
    // answers as fleet's did (the pod's node fails at the proxy, the k3s pool passes).
    forget(&lab, "al2023", IMAGE).await;
    forget(&lab, "k3s", IMAGE).await;
    let pod = json!({"kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "web-7c9d8b6f4-al2q3", "namespace": "shop", "uid": "uid-web-al2q3", "creationTimestamp": "2026-12-02T08:30:00Z"},
        "spec": {"nodeName": AL2023_NODE, "containers": [{"name": "web", "image": IMAGE}]},
        "status": {"phase": "Pending", "containerStatuses": [{"name": "web", "image": IMAGE, "imageID": "",
            "ready": false, "restartCount": 0, "started": false,
            "state": {"waiting": {"reason": "ErrImagePull", "message": containerd_said}}}]}});
    let mut objects: Vec<Value> = nodes.iter().map(|(node, _, _)| node.clone()).collect();
    objects.extend([
        kube_api::namespace("pullpath", json!({})),
        kube_api::namespace(
            "shop",
            json!({"pod-security.kubernetes.io/enforce": "restricted"}),
        ),
        pod,
    ]);
    let explain_server =
        ApiServer::start(World::from_objects(objects).with_kubelet(kubelet.clone()));
    let config = explain_server.kubeconfig(scratch.path(), "default");
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args([
            "explain",
            "pod/web-7c9d8b6f4-al2q3",
            "-n",
            "shop",
            "--probe",
        ])
        .args(["--probe-image", &probe, "--runtime-pull"])
        .arg("--kubeconfig")
        .arg(&config)
        .env("NO_COLOR", "1")
        .output()
        .expect("pullpath explain runs");
    let explained = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let fleet_part = explained
        .find(&format!("pullpath fleet {IMAGE}"))
        .unwrap_or_else(|| panic!("no fleet report:\n{explained}"));
    assert!(explained[..fleet_part].contains("proxy"), "{explained}");
    let probed = &explained[fleet_part..];
    let line_of = |node: &str| {
        probed
            .lines()
            .find(|l| l.contains(node))
            .unwrap_or_else(|| panic!("no line for {node}:\n{explained}"))
            .to_string()
    };
    assert!(line_of(AL2023_NODE).contains("proxy"), "{explained}");
    assert!(line_of(K3S_NODE).contains("pass"), "{explained}");
    assert!(!probed.contains("DISAGREEMENT"), "{explained}");
    for secret in support::LAB_SECRETS {
        assert!(
            !printed.contains(secret) && !more.contains(secret) && !explained.contains(secret),
            "{secret} printed"
        );
    }
    all_gone(&explain_server, &kubelet);
    lab.switch("healthy");
}

/// `--for pod/NAME` on a private image whose pod brings a pull secret, on a node with no
/// credential of its own (no config.json, no plugin in the kubelet's flags): the probe, reading
/// the node's credentials, is refused at auth, which is not the workload's answer. Without
/// `--kubelet-pull` the row is undecided and names the secret and what decides; with it, the
/// kubelet pulls with the secret (the stand-in passes it to PullImage as the kubelet does), the
/// row passes, and the kubelet's pull is shown disagreeing with the node's own credentials. The
/// secret is never printed.
#[tokio::test(flavor = "multi_thread")]
async fn a_workloads_pull_secret_is_what_the_kubelet_pull_decides() {
    use base64::Engine;
    // The node has no credential for the registry: no config.json, no plugin in its flags.
    let (_build, lab, probe) = lab_with_probe_image("cred-provider-fails");
    let scratch = Scratch::under(&lab.status.state, "lab-cri-kubelet-secret");
    let password = support::password("alice").expect("alice's password");
    let config_json =
        json!({"auths": {"registry.example.test": {"username": "alice", "password": password}}});
    let secret = json!({"kind": "Secret", "apiVersion": "v1", "type": "kubernetes.io/dockerconfigjson",
        "metadata": {"name": "regcred", "namespace": "shop", "uid": "uid-regcred"},
        "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(config_json.to_string())}});
    let workload = json!({"kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web", "creationTimestamp": "2026-12-02T08:30:00Z"},
        "spec": {"nodeName": NODE, "imagePullSecrets": [{"name": "regcred"}],
            "containers": [{"name": "web", "image": IMAGE}]},
        "status": {"phase": "Pending"}});
    let (server, kubelet, _root) = cluster(
        &lab,
        scratch.path(),
        NodeImage::Plain,
        vec![secret, workload],
    );
    let config = server.kubeconfig(scratch.path(), "shop");
    let fleet = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pullpath"))
            .args(["fleet", IMAGE, "--for", "pod/web", "-o", "json"])
            .args(extra)
            .arg("--kubeconfig")
            .arg(&config)
            .args(["--probe-image", &probe])
            .args(["--poll-interval", "100ms", "--deadline", "60s"])
            .output()
            .expect("pullpath fleet runs")
    };
    let printed = |out: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let probe_only = fleet(&[]);
    let report = support::fleet_report(&probe_only);
    let row = support::fleet_row(&report, NODE);
    assert_eq!(row["status"], "undecided", "{row:#}");
    assert_eq!(row["verdict"]["decided"], false, "{row:#}");
    assert_eq!(row["verdict"]["layer"], "auth", "leaning auth: {row:#}");
    let decides = row["verdict"]["decides"].as_str().unwrap_or("");
    assert!(
        decides.contains("regcred") && decides.contains("--kubelet-pull"),
        "{row:#}"
    );
    let out = fleet(&["--kubelet-pull"]);
    let everything = format!("{}{}", printed(&probe_only), printed(&out));
    let report = support::fleet_report(&out);
    let row = support::fleet_row(&report, NODE);
    assert_eq!(row["status"], "passed", "{row:#}");
    let pull = &row["kubelet_pull"];
    assert_eq!(pull["outcome"], "pulled", "{row:#}");
    assert_eq!(pull["agrees"], false, "{row:#}");
    assert!(
        held(&lab, IMAGE).await.is_some(),
        "the kubelet's pull, with the secret, left the image in the node's cache"
    );
    for secret in support::LAB_SECRETS {
        assert!(!everything.contains(secret), "{secret} printed");
    }
    all_gone(&server, &kubelet);
}

/// The lab's sandbox image, as containerd's config names it.
const PAUSE: &str = "registry.example.test/pause:3.6";

/// The lab node as a node image ships it: its containerd holds the sandbox image without
/// pulling it, and its Node object lists it in `status.images` as the kubelet does. A scenario
/// switch starts the lab node's containerd with an empty store, so the image is pulled once
/// (on `healthy`, where the registry is reached), exported beside the lab's state and imported
/// into the node's store after every switch: no registry is asked for it then.
async fn holding_its_pause_image(lab: &LabGuard, lab_node: &str, mut node: Value) -> Value {
    let archive = lab.status.state.join("pause-image.tar");
    let ctr = |on: &str, args: &[&str]| {
        let socket = lab.socket(on).to_string_lossy().into_owned();
        let mut command = vec!["ctr", "--address", socket.as_str(), "-n", "k8s.io"];
        command.extend_from_slice(args);
        let out = lab.in_ns(namespace_of(on), &command);
        assert!(
            out.status.success(),
            "ctr {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    if !archive.exists() {
        let scenario =
            std::fs::read_to_string(lab.status.state.join("scenario.json")).unwrap_or_default();
        lab.switch("healthy");
        if held(lab, PAUSE).await.is_none() {
            let mut images = ImageService::connect(lab.socket("node"), Duration::from_secs(60))
                .await
                .expect("containerd answers CRI");
            images
                .pull(PAUSE, None)
                .await
                .expect("the sandbox image pulls");
        }
        let partial = archive.with_extension("partial");
        ctr(
            "node",
            &["images", "export", &partial.to_string_lossy(), PAUSE],
        );
        std::fs::rename(&partial, &archive).expect("the exported sandbox image");
        let was: Value = serde_json::from_str(&scenario).unwrap_or(Value::Null);
        if let Some(name) = was["name"].as_str() {
            lab.switch(name);
        }
    }
    if held_on(lab, lab_node, PAUSE).await.is_none() {
        ctr(lab_node, &["images", "import", &archive.to_string_lossy()]);
    }
    assert!(
        held_on(lab, lab_node, PAUSE).await.is_some(),
        "the imported sandbox image is in {lab_node}'s CRI store"
    );
    let pause = json!({"names": [PAUSE], "sizeBytes": 321_000});
    match node["status"]["images"].as_array_mut() {
        Some(images) => images.push(pause),
        None => node["status"]["images"] = json!([pause]),
    }
    node
}

/// No registry at all: the lab node's containerd reaches none (`no-route`) and holds only its
/// sandbox image, which its Node object lists. With no `--probe-image`, fleet delivers the
/// static pullpath (its first stage inside it) as ConfigMaps, the probe pod starts from the
/// pause image with `imagePullPolicy: Never`, and the node gets the scenario's hop-by-hop
/// verdict, the same as its own containerd's pull (`--runtime-pull`). Every other pool of the
/// lab (the second pool's node, the AL2023 and k3s node images), each holding only its sandbox
/// image too, gets the verdict of its own containerd the same way. Back on `healthy` the first
/// node passes. Every object the runs made is gone after each; a node whose status lists no
/// sandbox image is a run problem saying so.
#[tokio::test(flavor = "multi_thread")]
async fn with_no_registry_the_probe_starts_from_the_pause_image_and_gives_the_runtimes_verdict() {
    let scenario = catalog().remove("no-route").expect("scenario");
    let build = Scratch::new("lab-cri-no-registry-build");
    let binary = static_probe_binary(build.path());
    let lab = lab();
    lab.switch("no-route");
    for other in ["node2", "al2023", "k3s"] {
        forget(&lab, other, IMAGE).await;
    }
    const SPOT_NODE: &str = "aks-spot-27182818-vmss000000";
    let nodes = [
        (
            holding_its_pause_image(&lab, "node", node_object(NODE)).await,
            "node",
            NodeImage::AksUbuntu,
        ),
        (
            holding_its_pause_image(&lab, "node2", api_only_node(SPOT_NODE, "spot", json!({})))
                .await,
            "node2",
            NodeImage::Plain,
        ),
        (
            holding_its_pause_image(
                &lab,
                "al2023",
                image_node_object(
                    &lab,
                    AL2023_NODE,
                    ("eks.amazonaws.com/nodegroup", "al2023"),
                    "Amazon Linux 2023.6.20250203",
                ),
            )
            .await,
            "al2023",
            NodeImage::Al2023,
        ),
        (
            holding_its_pause_image(
                &lab,
                "k3s",
                image_node_object(
                    &lab,
                    K3S_NODE,
                    ("node.kubernetes.io/instance-type", "k3s"),
                    "K3s",
                ),
            )
            .await,
            "k3s",
            NodeImage::K3s,
        ),
    ];
    let scratch = Scratch::under(&lab.status.state, "lab-cri-no-registry");
    let (server, kubelet, _roots) = cluster_of(
        &lab,
        scratch.path(),
        &nodes,
        vec![api_only_node(
            "aks-bare-31415926-vmss000000",
            "bare",
            json!({}),
        )],
    );
    let delivered = format!("amd64={}", binary.display());
    let source = ["--probe-binary", delivered.as_str()];
    let (report, printed) = fleet(&server, scratch.path(), &source, &[]);
    let row = support::fleet_row(&report, NODE);
    let expect = &scenario.expect;
    assert_eq!(row["status"], "failed", "{row:#}\n{printed}");
    assert_eq!(
        row["verdict"]["layer"],
        expect.layer.as_deref().expect("layer"),
        "{row:#}"
    );
    assert_eq!(
        row["verdict"]["hop"],
        expect.hop.as_deref().expect("hop"),
        "{row:#}"
    );
    assert_eq!(
        row["verdict"]["host"],
        expect.host.as_deref().expect("host"),
        "{row:#}"
    );
    assert_eq!(row["runtime_pull"]["agrees"], true, "{row:#}");
    // Every other pool: a decided verdict, its own containerd's.
    for other in [SPOT_NODE, AL2023_NODE, K3S_NODE] {
        let row = support::fleet_row(&report, other);
        let pulled = row["runtime_pull"]["outcome"] == "pulled";
        assert_eq!(row["runtime_pull"]["agrees"], true, "{other}: {row:#}");
        assert_eq!(
            row["status"],
            if pulled { "passed" } else { "failed" },
            "{other}: {row:#}"
        );
        assert_eq!(row["verdict"]["decided"], true, "{other}: {row:#}");
    }
    // One probe pod per lab node, each started from its pause image.
    let logs = probe_logs(scratch.path());
    assert_eq!(logs.len(), nodes.len(), "{logs:?}");
    let delivery = &report["delivery"];
    assert!(
        delivery["objects"].as_u64().is_some_and(|n| n >= 2),
        "{delivery:#}"
    );
    assert!(
        delivery["bytes_sent"].as_u64().is_some_and(|b| b > 0),
        "{delivery:#}"
    );
    println!("delivery: {delivery:#}");
    // The node without a sandbox image in its status is named, not guessed at.
    let bare = support::fleet_row(&report, "aks-bare-31415926-vmss000000");
    assert_eq!(bare["problem"]["kind"], "no-node-image", "{bare:#}");
    all_gone(&server, &kubelet);
    assert!(
        server.store.config_map_names().is_empty(),
        "{:?}",
        server.store.config_map_names()
    );

    // Where the registry is reached, the same delivered probe passes; its objects go too. (The
    // switch restarted the node's containerd: a new cluster knows its new process.)
    drop((server, kubelet));
    lab.switch("healthy");
    let node = holding_its_pause_image(&lab, "node", node_object(NODE)).await;
    let scratch = Scratch::under(&lab.status.state, "lab-cri-no-registry-healthy");
    let (server, kubelet, _roots) = cluster_of(
        &lab,
        scratch.path(),
        &[(node, "node", NodeImage::AksUbuntu)],
        vec![],
    );
    let (report, printed) = fleet(&server, scratch.path(), &source, &[]);
    let row = support::fleet_row(&report, NODE);
    assert_eq!(row["status"], "passed", "{row:#}\n{printed}");
    assert_eq!(row["runtime_pull"]["agrees"], true, "{row:#}");
    all_gone(&server, &kubelet);
    assert!(server.store.config_map_names().is_empty());
}

/// What each way of reaching the nodes costs, on the same two lab nodes (two pools) and scenario
/// (`healthy`), with one verdict: the probe image pulled fresh from the lab registry, or pullpath
/// delivered through the API onto each node's pause image. Prints per run the request bytes the
/// API received and the objects created, and per node its share of both and the time from pod
/// creation to the probe's first step (the node's row time, pod created → report read, less the
/// probe's own `elapsed_ms`: the sandbox, the pull or the delivered files and the first stage,
/// and up to one poll). `bash bench/delivery.sh` runs it.
#[tokio::test(flavor = "multi_thread")]
async fn delivered_or_pulled_the_probe_gives_one_verdict_and_its_costs_are_printed() {
    const SECOND: &str = "aks-spot-27182818-vmss000000";
    let (build, lab, probe) = lab_with_probe_image("healthy");
    let binary = build.path().join("pullpath");
    let delivered = format!("amd64={}", binary.display());
    let nodes = [
        (
            holding_its_pause_image(&lab, "node", node_object(NODE)).await,
            "node",
            NodeImage::AksUbuntu,
        ),
        (
            holding_its_pause_image(&lab, "node2", api_only_node(SECOND, "spot", json!({}))).await,
            "node2",
            NodeImage::AksUbuntu,
        ),
    ];
    println!(
        "| way | nodes | verdicts | API request bytes (run) | objects (run) | bytes per node | objects per node | pod created → probe's first step per node (ms) | probe's own time per node (ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut verdicts = Vec::new();
    for (way, source) in [
        ("probe image", ["--probe-image", probe.as_str()]),
        ("delivered", ["--probe-binary", delivered.as_str()]),
    ] {
        // A fresh pull each time: no node holds the probe image yet.
        for (_, lab_node, _) in &nodes {
            forget(&lab, lab_node, &probe).await;
        }
        let scratch = Scratch::under(&lab.status.state, "lab-cri-delivery-costs");
        let (server, kubelet, _roots) = cluster_of(&lab, scratch.path(), &nodes, vec![]);
        let before = server.received.load(std::sync::atomic::Ordering::SeqCst);
        let (report, printed) = fleet(&server, scratch.path(), &source, &[]);
        let bytes = server.received.load(std::sync::atomic::Ordering::SeqCst) - before;
        // Each probe's own time, from its pod's log (`NS_POD_UID/probe/0.log`).
        let own_time = |pod: &str| -> u64 {
            let log = probe_logs(scratch.path())
                .into_iter()
                .find(|log| log.to_string_lossy().contains(&format!("_{pod}_")))
                .unwrap_or_else(|| panic!("no log of {pod}"));
            let text = std::fs::read_to_string(&log).expect("the container's log");
            let own: Value = serde_json::from_str(&cri_kubelet::parse_cri_log(&text))
                .expect("the probe's report");
            own["elapsed_ms"].as_u64().expect("the probe's elapsed_ms")
        };
        let mut starts = Vec::new();
        let mut owns = Vec::new();
        let mut statuses = Vec::new();
        for name in [NODE, SECOND] {
            let row = support::fleet_row(&report, name);
            assert_eq!(row["status"], "passed", "{way}: {row:#}\n{printed}");
            let total = row["elapsed_ms"].as_u64().expect("elapsed_ms");
            let probing = own_time(row["probe_pod"].as_str().expect("its probe pod"));
            starts.push(total.saturating_sub(probing).to_string());
            owns.push(probing.to_string());
            statuses.push(row["status"].as_str().unwrap_or("").to_string());
            verdicts.push((way, name, row["verdict"].clone()));
        }
        let pods = nodes.len() as u64;
        let objects = pods + report["delivery"]["objects"].as_u64().unwrap_or(0);
        println!(
            "| {way} | {pods} | {} | {bytes} | {objects} | {} | {:.1} | {} | {} |",
            statuses.join(", "),
            bytes / pods,
            objects as f64 / pods as f64,
            starts.join(", "),
            owns.join(", ")
        );
        if way == "delivered" {
            println!("delivery: {}", report["delivery"]);
        }
        all_gone(&server, &kubelet);
        assert!(server.store.config_map_names().is_empty());
    }
    for name in [NODE, SECOND] {
        let each: Vec<&Value> = verdicts
            .iter()
            .filter(|(_, node, _)| *node == name)
            .map(|(_, _, verdict)| verdict)
            .collect();
        assert_eq!(each[0], each[1], "{name}: one verdict both ways");
    }
}

/// The `fleet-pools` lab as three nodes in two pools, each a lab namespace with its own root
/// and containerd, run by the CRI kubelet: pool `user`'s old node (holds the image from an
/// earlier pull; no route to the registry now) and its newest node (an /etc/hosts entry for the
/// registry, added by hand), and pool `spot`'s node in its own subnet (no route to the blob
/// host). Two of them cannot pull a probe image, so the probe comes as a registry-less delivery
/// onto each node's pause image, as it would on such a cluster.
const USER_OLD: &str = "aks-user-24791652-vmss000000";
const SPOT: &str = "aks-spot-51806237-vmss000001";

async fn fleet_pools_cluster(
    lab: &LabGuard,
    scratch: &Path,
) -> (
    ApiServer,
    Arc<CriKubelet>,
    Vec<(&'static str, &'static str)>,
) {
    let version = lab.status.containerd.clone();
    let version = match version.as_str() {
        "1.7" => "1.7.24",
        "2.1" => "2.1.9",
        _ => "1.6.20",
    };
    let object = |name: &str, pool: &str, created: &str, images: &[&str]| {
        let mut node = api_only_node(name, pool, json!({}));
        node["metadata"]["creationTimestamp"] = json!(created);
        node["status"]["images"] = json!([{"names": images, "sizeBytes": 1661}]);
        node["status"]["nodeInfo"]["containerRuntimeVersion"] =
            json!(format!("containerd://{version}"));
        node
    };
    let mut nodes = Vec::new();
    for (name, pool, created, images, containerd) in [
        (
            USER_OLD,
            "user",
            "2026-06-02T09:00:00Z",
            &[IMAGE][..],
            "old-node",
        ),
        (NODE, "user", "2026-12-01T08:20:00Z", &[][..], "node"),
        (SPOT, "spot", "2026-11-28T10:00:00Z", &[][..], "node2"),
    ] {
        let node =
            holding_its_pause_image(lab, containerd, object(name, pool, created, images)).await;
        nodes.push((node, containerd, NodeImage::Plain));
    }
    let (server, kubelet, _) = cluster_of(lab, scratch, &nodes, vec![]);
    let played = vec![(USER_OLD, "old-node"), (NODE, "node"), (SPOT, "node2")];
    (server, kubelet, played)
}

/// `fleet IMAGE --all-nodes --runtime-pull -o text` with the delivered probe: what the on-call
/// engineer reads.
fn fleet_text(server: &ApiServer, scratch: &Path, source: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args([
            "fleet",
            IMAGE,
            "--all-nodes",
            "--runtime-pull",
            "-o",
            "text",
        ])
        .arg("--kubeconfig")
        .arg(server.kubeconfig(scratch, "default"))
        .args(source)
        .args(["--poll-interval", "100ms", "--deadline", "120s"])
        .env("NO_COLOR", "1")
        .output()
        .expect("pullpath fleet runs");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Each pool from its own nodes, through real containers: the broken pool with its layer and
/// host (spot: no route to the blob host), the node that works only from its cache (the old
/// node: no route to the registry for a fresh pull), the node that works by a hand fix (an
/// /etc/hosts entry); every node's containerd pulls beside its probe and agrees; the text names
/// all three; no pod, sandbox or ConfigMap is left, every node's store holds what it held, and
/// no secret is printed.
#[tokio::test(flavor = "multi_thread")]
async fn fleet_pools_name_the_broken_pool_the_cached_node_and_the_hand_fix_from_real_containers() {
    let scenario = catalog().remove("fleet-pools").expect("scenario");
    let build = Scratch::new("lab-cri-fleet-pools-build");
    let binary = static_probe_binary(build.path());
    let lab = lab();
    lab.switch("fleet-pools");
    let scratch = Scratch::under(&lab.status.state, "lab-cri-fleet-pools");
    let (server, kubelet, played) = fleet_pools_cluster(&lab, scratch.path()).await;
    let mut before = BTreeMap::new();
    for (_, containerd) in &played {
        before.insert(*containerd, held_on(&lab, containerd, IMAGE).await);
    }
    assert!(
        before["old-node"].is_some(),
        "the old node holds the image from its earlier pull"
    );
    assert!(before["node"].is_none(), "the newest node's store is empty");
    let delivered = format!("amd64={}", binary.display());
    let source = ["--probe-binary", delivered.as_str()];
    let (report, printed) = fleet(&server, scratch.path(), &source, &[]);
    let row = |name: &str| support::fleet_row(&report, name);

    let spot = row(SPOT);
    assert_eq!(spot["status"], "failed", "{spot:#}");
    assert_eq!(spot["verdict"]["layer"], "blob", "{spot:#}");
    assert_eq!(spot["verdict"]["mechanism"], "route", "{spot:#}");
    assert_eq!(
        spot["verdict"]["host"], "labstore.blob.example.test",
        "{spot:#}"
    );
    let old = row(USER_OLD);
    assert_eq!(old["status"], "works-from-cache", "{old:#}");
    assert_eq!(old["verdict"]["layer"], "route", "{old:#}");
    assert_eq!(old["verdict"]["host"], "registry.example.test", "{old:#}");
    let new = row(NODE);
    assert_eq!(new["status"], "passed", "{new:#}");
    assert_eq!(scenario.expect.outcome, "pulled");
    assert!(
        new["hand_fixes"]
            .as_array()
            .is_some_and(|f| f.iter().any(|h| h
                .as_str()
                .is_some_and(|h| h.contains("registry.example.test")))),
        "{new:#}"
    );
    for name in [SPOT, USER_OLD, NODE] {
        let pull = &row(name)["runtime_pull"];
        assert_eq!(pull["agrees"], true, "{name}: {pull:#}");
    }
    assert_eq!(row(NODE)["runtime_pull"]["cleanup"], "removed");
    let spot_pool = report["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .find(|p| p["pool"] == "spot")
        .expect("spot pool")
        .clone();
    assert_eq!(spot_pool["verdict"]["passed"], false, "{spot_pool:#}");
    all_gone(&server, &kubelet);
    assert!(server.store.config_map_names().is_empty());

    let text = fleet_text(&server, scratch.path(), &source);
    for line in [
        "✗ pool `spot` fails at blob",
        "labstore.blob.example.test",
        "works from cache; a fresh pull fails at route",
        "hand fix: /etc/hosts maps registry.example.test",
        "runtime agrees",
    ] {
        assert!(text.contains(line), "{line:?} missing from:\n{text}");
    }
    assert!(!text.contains("DISAGREEMENT"), "{text}");
    for secret in support::LAB_SECRETS.iter().chain(&["eyJ"]) {
        assert!(
            !printed.contains(secret) && !text.contains(secret),
            "{secret:?} leaked"
        );
    }
    all_gone(&server, &kubelet);
    assert!(server.store.config_map_names().is_empty());
    for (_, containerd) in &played {
        assert_eq!(
            held_on(&lab, containerd, IMAGE).await,
            before[containerd],
            "{containerd}'s image store changed"
        );
    }
}

/// The second pool's node lacks the registry's CA (`fleet-ca`): through its real container it
/// fails at TLS as its containerd does, and the nodes that trust that CA are named as holding
/// one it lacks.
#[tokio::test(flavor = "multi_thread")]
async fn fleet_names_a_ca_one_pool_trusts_and_another_lacks_from_real_containers() {
    let build = Scratch::new("lab-cri-fleet-ca-build");
    let binary = static_probe_binary(build.path());
    let lab = lab();
    lab.switch("fleet-ca");
    let scratch = Scratch::under(&lab.status.state, "lab-cri-fleet-ca");
    let (server, kubelet, _) = fleet_pools_cluster(&lab, scratch.path()).await;
    let delivered = format!("amd64={}", binary.display());
    let (report, _) = fleet(
        &server,
        scratch.path(),
        &["--probe-binary", delivered.as_str()],
        &[],
    );
    let spot = support::fleet_row(&report, SPOT);
    assert_eq!(spot["verdict"]["layer"], "tls", "{spot:#}");
    assert_eq!(spot["verdict"]["host"], "registry.example.test", "{spot:#}");
    assert_eq!(spot["runtime_pull"]["agrees"], true, "{spot:#}");
    for name in [USER_OLD, NODE] {
        let user = support::fleet_row(&report, name);
        assert_eq!(user["status"], "passed", "{user:#}");
        let fixes = user["hand_fixes"].as_array().expect("hand fixes");
        assert!(
            fixes
                .iter()
                .any(|f| f.as_str().is_some_and(|f| f.contains("trusts the CA")
                    && f.contains("pullpath lab ca")
                    && f.contains(SPOT))),
            "{user:#}"
        );
        assert_eq!(user["runtime_pull"]["agrees"], true, "{user:#}");
    }
    all_gone(&server, &kubelet);
    assert!(server.store.config_map_names().is_empty());
}

/// `--fresh-node` through the cluster's own scale-up (the scheduler and cluster-autoscaler
/// stand-in, tests/support/autoscaler.rs), on scenario `fresh-node`: the registry's name is gone
/// from DNS and pool `user`'s only node passes through a hand-made /etc/hosts entry. The fresh
/// probe pod waits, unscheduled (`FailedScheduling`), until the autoscaler adds a node to the
/// pool (`TriggeredScaleUp`; the lab's pp-node2 with a fresh root, no hand fix, no image, joins
/// after a delay); there it fails at dns, as that node's containerd does, and the report puts
/// it beside the existing node's pass and names the hand fix. Pool `gpu` is at its maximum: its
/// fresh pod gets `NotTriggerScaleUp`, named with the autoscaler's reason as a run problem, not
/// as a pull failure. Every pod, sandbox and ConfigMap is gone afterwards.
#[tokio::test(flavor = "multi_thread")]
async fn a_fresh_node_made_by_the_autoscaler_shows_the_hand_fix_the_newest_node_hides() {
    const GPU_NODE: &str = "aks-gpu-16180339-vmss000000";
    let build = Scratch::new("lab-cri-fresh-build");
    let binary = static_probe_binary(build.path());
    let lab = lab();
    lab.switch("fresh-node");
    forget(&lab, "node2", IMAGE).await;
    let user = holding_its_pause_image(&lab, "node", node_object(NODE)).await;
    let gpu =
        holding_its_pause_image(&lab, "old-node", api_only_node(GPU_NODE, "gpu", json!({}))).await;
    // The fresh node holds its pause image too, as a node image does; nothing else.
    holding_its_pause_image(&lab, "node2", json!({})).await;
    let scratch = Scratch::under(&lab.status.state, "lab-cri-fresh");
    let mut kubelets = BTreeMap::new();
    kubelets.insert(
        NODE.to_string(),
        cri_node(&lab, scratch.path(), "node", NodeImage::Plain),
    );
    kubelets.insert(
        GPU_NODE.to_string(),
        cri_node(&lab, scratch.path(), "old-node", NodeImage::Plain),
    );
    let kubelet = Arc::new(CriKubelet::new(kubelets, scratch.path().join("pods")));
    let pool = |name: &str| {
        BTreeMap::from([
            ("agentpool".to_string(), name.to_string()),
            (
                "kubernetes.azure.com/agentpool".to_string(),
                name.to_string(),
            ),
        ])
    };
    let groups = vec![
        autoscaler::NodeGroup {
            provisioner: autoscaler::Provisioner::ClusterAutoscaler,
            id: "aks-user-24791652-vmss".into(),
            labels: pool("user"),
            size: 1,
            max: 3,
            delay: Duration::from_millis(800),
            next: Some(cri_node(&lab, scratch.path(), "node2", NodeImage::Plain)),
        },
        autoscaler::NodeGroup {
            provisioner: autoscaler::Provisioner::ClusterAutoscaler,
            id: "aks-gpu-16180339-vmss".into(),
            labels: pool("gpu"),
            size: 1,
            max: 1,
            delay: Duration::from_millis(800),
            next: None,
        },
    ];
    let scheduler =
        autoscaler::Autoscaler::new(kubelet.clone(), vec![user.clone(), gpu.clone()], groups);
    let server = ApiServer::start(
        World::from_objects(vec![
            user,
            gpu,
            kube_api::namespace("default", json!({})),
            kube_api::namespace("pullpath", json!({})),
        ])
        .with_kubelet(Arc::new(scheduler)),
    );
    let delivered = format!("amd64={}", binary.display());
    let (report, printed) = fleet(
        &server,
        scratch.path(),
        &["--probe-binary", delivered.as_str()],
        &["--fresh-node", "--yes", "--fresh-node-timeout", "60s"],
    );
    let existing = support::fleet_row(&report, NODE);
    assert_eq!(existing["status"], "passed", "{existing:#}\n{printed}");
    let fresh = report["nodes"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["pool"] == "user" && r.get("fresh_node").is_some())
        .unwrap_or_else(|| panic!("no fresh row for pool user: {report:#}"));
    assert!(
        fresh["node"]
            .as_str()
            .is_some_and(|n| n.starts_with("aks-user-24791652-vmss")),
        "{fresh:#}"
    );
    assert_eq!(fresh["status"], "failed", "{fresh:#}\n{printed}");
    assert_eq!(fresh["verdict"]["layer"], "dns", "{fresh:#}");
    assert_eq!(fresh["runtime_pull"]["agrees"], true, "{fresh:#}");
    let way = &fresh["fresh_node"];
    assert_eq!(way["compared_with"], NODE, "{way:#}");
    assert!(
        way["node_created"].is_string() && way["node_ready"].is_string(),
        "{way:#}"
    );
    let difference = way["difference"].as_str().unwrap_or("");
    assert!(
        difference.contains("/etc/hosts") && difference.contains("a fresh node fails at dns"),
        "{way:#}"
    );
    let said = way["scheduling"].to_string();
    assert!(
        said.contains("FailedScheduling") && said.contains("TriggeredScaleUp"),
        "{way:#}"
    );
    let user_pool = report["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .find(|p| p["pool"] == "user")
        .expect("pool user")
        .clone();
    assert_eq!(user_pool["verdict"]["passed"], false, "{user_pool:#}");
    // The pool at its maximum: the autoscaler's reason, a run problem.
    let refused = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .find(|p| p["kind"] == "scale-up-refused")
        .unwrap_or_else(|| panic!("no scale-up-refused problem: {report:#}"));
    assert_eq!(refused["pool"], "gpu", "{refused:#}");
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("max node group size reached")),
        "{refused:#}"
    );
    all_gone(&server, &kubelet);
    assert!(server.store.config_map_names().is_empty());
    for secret in support::LAB_SECRETS {
        assert!(!printed.contains(secret), "{secret} printed");
    }
}

/// A Karpenter NodePool (AKS node auto-provisioning's API) with no node: `pullpath fleet
/// --fresh-node` reads it from the API, gives it a row and probes it on the node Karpenter makes
/// for the probe pod (the stand-in's Karpenter: `Nominated`, then a lab node with a fresh root
/// registers with `karpenter.sh/nodepool=batch`). There, in the fresh-node scenario, the pull
/// fails at dns, as that node's own containerd does; the row compares with nothing (there was no
/// node) and gives the node's creation and Ready times. NodePool `gpu` is at its limit: Karpenter's
/// own `FailedScheduling` names it, a run problem, not a pull failure. Nothing is left behind.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_pool_without_nodes_is_probed_on_the_node_karpenter_makes() {
    let build = Scratch::new("lab-cri-nodepool-build");
    let binary = static_probe_binary(build.path());
    let lab = lab();
    lab.switch("fresh-node");
    forget(&lab, "node2", IMAGE).await;
    let user = holding_its_pause_image(&lab, "node", node_object(NODE)).await;
    holding_its_pause_image(&lab, "node2", json!({})).await;
    let scratch = Scratch::under(&lab.status.state, "lab-cri-nodepool");
    let kubelets = BTreeMap::from([(
        NODE.to_string(),
        cri_node(&lab, scratch.path(), "node", NodeImage::Plain),
    )]);
    let kubelet = Arc::new(CriKubelet::new(kubelets, scratch.path().join("pods")));
    let node_pool = |name: &str| {
        json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
            "metadata": {"name": name, "uid": format!("uid-nodepool-{name}"), "creationTimestamp": "2026-11-02T10:00:00Z"},
            "spec": {"template": {"metadata": {"labels": {"team": "data"}},
                "spec": {"nodeClassRef": {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"},
                    "requirements": [{"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]}]}},
                "limits": {"cpu": "16"},
                "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}}})
    };
    let pool_labels = |name: &str| {
        BTreeMap::from([
            ("karpenter.sh/nodepool".to_string(), name.to_string()),
            ("team".to_string(), "data".to_string()),
        ])
    };
    let groups = vec![
        autoscaler::NodeGroup {
            provisioner: autoscaler::Provisioner::Karpenter,
            id: "batch".into(),
            labels: pool_labels("batch"),
            size: 0,
            max: 2,
            delay: Duration::from_millis(800),
            next: Some(cri_node(&lab, scratch.path(), "node2", NodeImage::Plain)),
        },
        autoscaler::NodeGroup {
            provisioner: autoscaler::Provisioner::Karpenter,
            id: "gpu".into(),
            labels: pool_labels("gpu"),
            size: 0,
            max: 0,
            delay: Duration::from_millis(800),
            next: None,
        },
    ];
    let scheduler = autoscaler::Autoscaler::new(kubelet.clone(), vec![user.clone()], groups);
    let server = ApiServer::start(
        World::from_objects(vec![
            user,
            node_pool("batch"),
            node_pool("gpu"),
            kube_api::namespace("default", json!({})),
            kube_api::namespace("pullpath", json!({})),
        ])
        .with_kubelet(Arc::new(scheduler)),
    );
    let delivered = format!("amd64={}", binary.display());
    let (report, printed) = fleet(
        &server,
        scratch.path(),
        &["--probe-binary", delivered.as_str()],
        &[
            "--pools",
            "batch,gpu",
            "--fresh-node",
            "--yes",
            "--fresh-node-timeout",
            "60s",
        ],
    );
    let fresh = report["nodes"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["pool"] == "batch")
        .unwrap_or_else(|| panic!("no row for NodePool batch: {report:#}\n{printed}"));
    assert_eq!(fresh["node"], "aks-batch-x7k20", "{fresh:#}");
    assert_eq!(fresh["status"], "failed", "{fresh:#}\n{printed}");
    assert_eq!(fresh["verdict"]["layer"], "dns", "{fresh:#}");
    assert_eq!(fresh["runtime_pull"]["agrees"], true, "{fresh:#}");
    assert!(
        fresh["chosen_because"]
            .as_str()
            .is_some_and(|c| c.contains("NodePool batch (karpenter.sh/v1)")),
        "{fresh:#}"
    );
    let way = &fresh["fresh_node"];
    assert!(way.get("compared_with").is_none(), "{way:#}");
    assert!(
        way["node_created"].is_string() && way["node_ready"].is_string(),
        "{way:#}"
    );
    assert!(
        way["scheduling"]
            .to_string()
            .contains("Nominated: Pod should schedule on: nodeclaim/batch-x7k20"),
        "{way:#}"
    );
    let batch = report["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .find(|p| p["pool"] == "batch")
        .unwrap_or_else(|| panic!("no pool batch: {report:#}"));
    assert_eq!(batch["verdict"]["layer"], "dns", "{batch:#}");
    let refused = report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .find(|p| p["kind"] == "scale-up-refused")
        .unwrap_or_else(|| panic!("no scale-up-refused problem: {report:#}"));
    assert_eq!(refused["pool"], "gpu", "{refused:#}");
    assert!(
        refused["message"].as_str().is_some_and(|m| m.contains(
            "(FailedScheduling): Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=gpu)"
        )),
        "{refused:#}"
    );
    // The existing node's pool was not asked for.
    assert!(
        report["nodes"]
            .as_array()
            .expect("rows")
            .iter()
            .all(|r| r["pool"] != "user"),
        "{report:#}"
    );
    all_gone(&server, &kubelet);
    assert!(server.store.config_map_names().is_empty());
}
