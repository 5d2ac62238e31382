//! `pullpath fleet` over the lab's three nodes in two pools (scenario `fleet-pools`): the API
//! stand-in (tests/support/kube_api.rs) serves the nodes, and its fake kubelet runs each probe
//! pod's command for real inside the lab namespace that plays the node (`ip netns exec`), its
//! hostPath mounts mapped to that node's real files. The network, DNS, TLS, registry and each
//! node's containerd are the lab's: with `--runtime-pull` every node's containerd answers over
//! CRI beside the probe, and must agree.

#[path = "support/fake_kubelet.rs"]
mod fake_kubelet;
#[path = "support/kube_api.rs"]
mod kube_api;
mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;

use fake_kubelet::{Behaviour, FakeKubelet, Runner, SimNode};
use kube_api::{ApiServer, World};
use pullpath::runtime::cri::ImageService;
use serde_json::{Value, json};
use support::lab_node::{NodeImage, node_root};
use support::scratch::Scratch;
use support::{LabGuard, catalog, lab};

const IMAGE: &str = "registry.example.test/team-a/small:v1";
/// Pool `user`: the old node (holds the image; no route to the registry any more) …
const USER_OLD: &str = "aks-user-24791652-vmss000000";
/// … and the newest (an /etc/hosts entry for the registry, added by hand).
const USER_NEW: &str = "aks-user-24791652-vmss000004";
/// Pool `spot`, its own subnet: no route to the blob host.
const SPOT: &str = "aks-spot-51806237-vmss000001";

/// Which lab namespace and containerd plays each node.
const NODES: [(&str, &str, &str); 3] = [
    (USER_OLD, "oldnode", "old-node"),
    (USER_NEW, "node", "node"),
    (SPOT, "node2", "node2"),
];

fn node(name: &str, pool: &str, created: &str, images: &[&str], containerd: &str) -> Value {
    json!({"kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": created, "uid": format!("uid-{name}"),
            "labels": {"kubernetes.azure.com/agentpool": pool, "agentpool": pool, "kubernetes.io/hostname": name}},
        "spec": {"taints": []},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "images": [{"names": images, "sizeBytes": 1661}],
            "nodeInfo": {"kubeletVersion": "v1.33.5", "containerRuntimeVersion": format!("containerd://{containerd}"),
                "osImage": "Debian GNU/Linux 12 (bookworm)", "architecture": "amd64", "bootID": "", "kernelVersion": "",
                "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux", "systemUUID": ""}}})
}

/// The containerd version the lab's nodes run, as CRI `Version` reports it.
async fn containerd_version(lab: &LabGuard) -> String {
    let socket = lab.socket("node");
    let version =
        pullpath::runtime::cri::runtime_version(socket, std::time::Duration::from_secs(5))
            .await
            .expect("the lab's containerd answers Version");
    version.version.trim_start_matches('v').to_string()
}

async fn images_on(lab: &LabGuard, containerd: &str) -> Option<String> {
    let mut runtime =
        ImageService::connect(lab.socket(containerd), std::time::Duration::from_secs(10))
            .await
            .expect("containerd answers CRI");
    runtime.cached(IMAGE).await.expect("ImageStatus answers")
}

/// The API stand-in serving the three lab nodes, each played by its namespace and containerd.
struct Cluster {
    server: ApiServer,
    config: PathBuf,
    _scratch: Scratch,
}

async fn cluster(lab: &LabGuard, name: &str) -> Cluster {
    // Beside the lab's state (hard links need its filesystem), removed when the test ends.
    let scratch = Scratch::under(&lab.status.state, name);
    let version = containerd_version(lab).await;
    let nodes: BTreeMap<String, SimNode> = NODES
        .iter()
        .map(|(name, namespace, containerd)| {
            let sim = SimNode {
                root: node_root(lab, scratch.path(), namespace, containerd, NodeImage::Plain),
                runner: Runner {
                    prefix: vec![
                        "ip".into(),
                        "netns".into(),
                        "exec".into(),
                        lab.status.namespaces[*namespace].clone(),
                    ],
                    runtime_pid: Some(lab.runtime_pid(containerd)),
                },
                behaviour: Behaviour::Run,
            };
            (name.to_string(), sim)
        })
        .collect();
    let kubelet = FakeKubelet {
        nodes,
        binary: PathBuf::from(env!("CARGO_BIN_EXE_pullpath")),
    };
    let world = World::from_objects(vec![
        node(USER_OLD, "user", "2026-06-02T09:00:00Z", &[IMAGE], &version),
        node(USER_NEW, "user", "2026-12-01T08:20:00Z", &[], &version),
        node(SPOT, "spot", "2026-11-28T10:00:00Z", &[], &version),
        kube_api::namespace("pullpath", serde_json::json!({})),
    ])
    .with_kubelet(Arc::new(kubelet));
    let server = ApiServer::start(world);
    let config = server.kubeconfig(scratch.path(), "default");
    Cluster {
        server,
        config,
        _scratch: scratch,
    }
}

/// `pullpath fleet IMAGE --all-nodes --runtime-pull` against the cluster.
fn fleet(cluster: &Cluster, output: &str) -> std::process::Output {
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args([
            "fleet",
            IMAGE,
            "--all-nodes",
            "--runtime-pull",
            "-o",
            output,
        ])
        .arg("--kubeconfig")
        .arg(&cluster.config)
        .args([
            "--probe-image",
            "registry.example.test/tools/pullpath:0.1.0",
        ])
        .args(["--poll-interval", "100ms", "--deadline", "120s"])
        .env("NO_COLOR", "1")
        .output()
        .expect("pullpath fleet runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    for secret in support::LAB_SECRETS.iter().chain(&["eyJ"]) {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret:?} leaked"
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn fleet_names_the_broken_pool_the_cached_node_and_the_hand_fix_and_each_runtime_agrees() {
    let scenario = catalog().remove("fleet-pools").expect("scenario");
    let lab = lab();
    lab.switch("fleet-pools");
    let mut before = BTreeMap::new();
    for (_, _, containerd) in NODES {
        before.insert(containerd, images_on(&lab, containerd).await);
    }
    assert!(
        before["old-node"].is_some(),
        "the old node holds the image from its earlier pull"
    );
    assert!(
        before["node"].is_none(),
        "the newest node starts with an empty store"
    );
    let cluster = cluster(&lab, "lab-fleet").await;
    let out = fleet(&cluster, "json");
    let report = support::fleet_report(&out);
    let row = |name: &str| support::fleet_row(&report, name);

    // The broken pool, with its layer and host, from its own fresh node.
    let spot = row(SPOT);
    assert_eq!(spot["status"], "failed", "{spot:#}");
    assert_eq!(spot["verdict"]["layer"], "blob", "{spot:#}");
    assert_eq!(spot["verdict"]["mechanism"], "route", "{spot:#}");
    assert_eq!(
        spot["verdict"]["host"], "labstore.blob.example.test",
        "{spot:#}"
    );
    // The node that only works from cache.
    let old = row(USER_OLD);
    assert_eq!(old["status"], "works-from-cache", "{old:#}");
    assert_eq!(old["verdict"]["layer"], "route", "{old:#}");
    assert_eq!(old["verdict"]["host"], "registry.example.test", "{old:#}");
    // The node that works by a hand fix.
    let new = row(USER_NEW);
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
    // Every node's runtime answered, and agrees with its probe.
    for name in [SPOT, USER_OLD, USER_NEW] {
        let pull = &row(name)["runtime_pull"];
        assert_eq!(pull["agrees"], true, "{name}: {pull:#}");
    }
    assert_eq!(row(USER_NEW)["runtime_pull"]["cleanup"], "removed");
    let pools = report["pools"].as_array().expect("pools");
    let spot_pool = pools
        .iter()
        .find(|p| p["pool"] == "spot")
        .expect("spot pool");
    assert_eq!(spot_pool["verdict"]["passed"], false, "{spot_pool:#}");
    // The worst eligible pool decides the exit status: blob (route).
    assert!(
        (10..=21).contains(&out.status.code().unwrap_or(-1)),
        "exit {:?}",
        out.status.code()
    );
    // What the on-call engineer reads.
    let text = fleet(&cluster, "text");
    let text = String::from_utf8_lossy(&text.stdout);
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
    // Every probe pod is gone, and every node's image store is as it was.
    let left = cluster.server.store.names();
    assert!(left.is_empty(), "left: {left:?}");
    for (_, _, containerd) in NODES {
        assert_eq!(
            images_on(&lab, containerd).await,
            before[containerd],
            "{containerd}'s image store changed"
        );
    }
}

/// The second pool's fresh node lacks the registry's CA: it fails at TLS, and the nodes that
/// trust that CA are named as holding one it lacks.
#[tokio::test(flavor = "multi_thread")]
async fn fleet_names_a_ca_one_pool_trusts_and_another_lacks() {
    let lab = lab();
    lab.switch("fleet-ca");
    let cluster = cluster(&lab, "lab-fleet-ca").await;
    let out = fleet(&cluster, "json");
    let report = support::fleet_report(&out);
    let spot = support::fleet_row(&report, SPOT);
    assert_eq!(spot["verdict"]["layer"], "tls", "{spot:#}");
    assert_eq!(spot["verdict"]["host"], "registry.example.test", "{spot:#}");
    assert_eq!(spot["runtime_pull"]["agrees"], true, "{spot:#}");
    for name in [USER_OLD, USER_NEW] {
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
    assert!(cluster.server.store.names().is_empty());
}
