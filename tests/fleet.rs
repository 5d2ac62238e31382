//! `pullpath fleet` against the API stand-in (tests/support/kube_api.rs) and its fake kubelet
//! (tests/support/fake_kubelet.rs), which runs each probe pod's command for real — the pullpath
//! binary cargo built — with the pod's hostPath mounts mapped to per-node directories, against a
//! loopback registry (tests/support/registry.rs). No lab: every address is 127.0.0.1.
//!
//! The world: pool `system` (one node, its containerd's hosts.toml sends the registry to the
//! live registry), pool `user` (an old node listing the image in `node.status.images`, and the
//! newest node; both send the registry to a closed port: connection refused).

#[path = "support/fake_kubelet.rs"]
mod fake_kubelet;
#[path = "support/kube_api.rs"]
mod kube_api;
#[path = "support/registry.rs"]
mod registry;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_kubelet::{Behaviour, FakeKubelet, Runner, SimNode};
use kube_api::{ApiServer, Fault, World};
use serde_json::{Value, json};
use support::scratch::Scratch;

const IMAGE: &str = "registry.fleet.test/team/app:v1";
/// From the image's own registry host, so its failed pull is a finding about the image.
const PROBE_IMAGE: &str = "registry.fleet.test/tools/pullpath:0.1.0";
const SYSTEM: &str = "aks-system-38273115-vmss000000";
const USER_OLD: &str = "aks-user-24791652-vmss000000";
const USER_NEW: &str = "aks-user-24791652-vmss000003";
/// With `hand_fixed`: the newest node of `system`, which reaches the registry by name only
/// through an /etc/hosts entry somebody added (its resolver knows no such name).
const SYSTEM_FIXED: &str = "aks-system-38273115-vmss000002";

fn node(name: &str, pool: &str, created: &str, images: &[&str]) -> Value {
    json!({"kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "creationTimestamp": created, "uid": format!("uid-{name}"),
            "labels": {"kubernetes.azure.com/agentpool": pool, "agentpool": pool, "kubernetes.io/hostname": name}},
        "spec": {"taints": if pool == "system" { json!([{"key": "CriticalAddonsOnly", "value": "true", "effect": "NoSchedule"}]) } else { json!([]) }},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "images": [{"names": images, "sizeBytes": 1661}],
            "nodeInfo": {"kubeletVersion": "v1.33.5", "containerRuntimeVersion": "containerd://1.7.27", "osImage": "Ubuntu 22.04.5 LTS",
                "architecture": "amd64", "bootID": "", "kernelVersion": "", "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux", "systemUUID": ""}}})
}

fn deployment() -> Value {
    json!({"kind": "Deployment", "apiVersion": "apps/v1",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web", "creationTimestamp": "2026-10-01T00:00:00Z"},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"nodeSelector": {"agentpool": "user"}, "containers": [{"name": "web", "image": IMAGE}]}}}})
}

/// A node's files as the probe reads them: resolver, hosts, containerd's config and certs.d
/// (its hosts.toml sends `registry.fleet.test` to `server`), systemd unit directories.
fn node_root(base: &Path, name: &str, server: &str) -> PathBuf {
    let root = base.join(name);
    let certs = root.join("etc/containerd/certs.d/registry.fleet.test");
    for dir in [
        certs.as_path(),
        &root.join("etc/systemd/system"),
        &root.join("run/systemd/system"),
        &root.join("lib/systemd/system"),
        &root.join("etc/ssl"),
        &root.join("root"),
    ] {
        std::fs::create_dir_all(dir).expect("node directory");
    }
    std::fs::write(root.join("etc/resolv.conf"), "nameserver 127.0.0.1\n").expect("resolv.conf");
    std::fs::write(root.join("etc/hosts"), "127.0.0.1 localhost\n").expect("hosts");
    // As AKS writes it: without `config_path`, containerd before 2.2 reads no hosts.toml.
    std::fs::write(
        root.join("etc/containerd/config.toml"),
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n",
    )
    .expect("config");
    // With a [host] table: these nodes report containerd 1.7, which cannot read a hosts.toml
    // without one (the probe follows the node's line).
    std::fs::write(
        certs.join("hosts.toml"),
        format!("server = \"{server}\"\n\n[host.\"{server}\"]\n  capabilities = [\"pull\", \"resolve\"]\n"),
    )
    .expect("hosts.toml");
    root
}

/// The newest `user` node runs its probe through a command prefix, as a lab namespace will
/// (`ip netns exec NS`): a shell that leaves a mark, then runs the command.
fn runner(base: &Path, node: &str) -> Runner {
    if node != USER_NEW {
        return Runner::default();
    }
    Runner {
        prefix: vec![
            "sh".into(),
            "-c".into(),
            format!(
                "echo \"$@\" > {}/ran-through-prefix; exec \"$@\"",
                base.display()
            ),
            "runner".into(),
        ],
        runtime_pid: None,
    }
}

struct Fleet {
    server: ApiServer,
    scratch: Scratch,
    config: PathBuf,
    closed_port: u16,
}

/// The world, each node's kubelet behaving as `behaviour` says (default: run the probe).
/// What a test changes in the world.
#[derive(Default)]
struct Setup<'a> {
    behaviour: &'a [(&'a str, Behaviour)],
    hand_fixed: bool,
    faults: Vec<Fault>,
    objects: Vec<Value>,
    /// A validating webhook refusing every pod: (name, message).
    webhook: Option<(&'a str, &'a str)>,
}

async fn fleet(name: &str, behaviour: &[(&str, Behaviour)]) -> Fleet {
    fleet_with(
        name,
        Setup {
            behaviour,
            ..Setup::default()
        },
    )
    .await
}

async fn fleet_with(name: &str, setup: Setup<'_>) -> Fleet {
    let Setup {
        behaviour,
        hand_fixed,
        faults,
        objects: extra,
        webhook,
    } = setup;
    let registry = registry::serve().await;
    // A port nothing listens on: bound, then released.
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let scratch = Scratch::new(name);
    let live = format!("http://127.0.0.1:{}", registry.port);
    let closed = format!("http://127.0.0.1:{closed_port}");
    let behaviour: BTreeMap<&str, Behaviour> = behaviour.iter().cloned().collect();
    let by_name = format!("http://registry.fleet.test:{}", registry.port);
    let mut roots = vec![(SYSTEM, &live), (USER_OLD, &closed), (USER_NEW, &closed)];
    if hand_fixed {
        roots.push((SYSTEM_FIXED, &by_name));
    }
    let nodes: BTreeMap<String, SimNode> = roots
        .into_iter()
        .map(|(n, server)| {
            (
                n.to_string(),
                SimNode {
                    root: node_root(scratch.path(), n, server),
                    runner: runner(scratch.path(), n),
                    behaviour: behaviour.get(n).cloned().unwrap_or(Behaviour::Run),
                },
            )
        })
        .collect();
    let kubelet = FakeKubelet {
        nodes,
        binary: PathBuf::from(env!("CARGO_BIN_EXE_pullpath")),
    };
    let mut objects = vec![
        node(SYSTEM, "system", "2026-09-01T08:00:00Z", &[]),
        node(USER_OLD, "user", "2026-10-20T07:30:00Z", &[IMAGE]),
        node(USER_NEW, "user", "2026-12-01T08:20:00Z", &[]),
        deployment(),
    ];
    // The namespaces the API serves (a pod in any other is refused, as the real API does):
    // the probe namespace at Pod Security's privileged level unless a test brings its own.
    for (name, labels) in [
        (
            "pullpath",
            json!({"pod-security.kubernetes.io/enforce": "privileged"}),
        ),
        ("shop", json!({})),
    ] {
        if !extra
            .iter()
            .any(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == name)
        {
            objects.push(kube_api::namespace(name, labels));
        }
    }
    objects.extend(extra);
    if hand_fixed {
        let root = scratch.path().join(SYSTEM_FIXED);
        // The resolver is a loopback address nothing listens on: DNS alone finds no answer.
        std::fs::write(root.join("etc/resolv.conf"), "nameserver 127.0.0.77\n")
            .expect("resolv.conf");
        std::fs::write(
            root.join("etc/hosts"),
            "127.0.0.1 localhost\n127.0.0.1 registry.fleet.test\n",
        )
        .expect("hosts");
        objects.push(node(SYSTEM_FIXED, "system", "2026-11-15T08:00:00Z", &[]));
    }
    let mut world = World::from_objects(objects).with_kubelet(Arc::new(kubelet));
    for fault in faults {
        world = world.with_fault(fault);
    }
    if let Some((name, message)) = webhook {
        world = world.with_webhook(name, message);
    }
    let server = ApiServer::start(world);
    let config = server.kubeconfig(scratch.path(), "shop");
    Fleet {
        server,
        scratch,
        config,
        closed_port,
    }
}

impl Fleet {
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pullpath"));
        command
            .arg("fleet")
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.config)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG");
        if !args.contains(&"--poll-interval") {
            command.args(["--poll-interval", "100ms"]);
        }
        // A run without a registry says so by naming its binary.
        if !args.contains(&"--probe-image") && !args.contains(&"--probe-binary") {
            command.args(["--probe-image", PROBE_IMAGE]);
        }
        command
    }

    async fn run(&self, args: &[&str]) -> Output {
        let mut command = self.command(args);
        tokio::task::spawn_blocking(move || command.output().expect("pullpath runs"))
            .await
            .expect("pullpath")
    }

    /// `--output json`, validated against docs/fleet.schema.json: (exit status, report).
    async fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = vec![IMAGE];
        all.extend(args);
        all.extend(["-o", "json"]);
        let out = self.run(&all).await;
        (out.status.code().unwrap_or(-1), support::fleet_report(&out))
    }

    fn pods_left(&self) -> Vec<String> {
        self.server.store.names()
    }

    /// Wait (bounded) until `n` probe pods were created since the server started.
    async fn until_created(&self, n: u64) {
        let start = Instant::now();
        while self.server.store.created() < n {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "only {} probe pods created: {:?}",
                self.server.store.created(),
                self.server.served()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_broken_pool_is_named_with_its_layer_and_host_and_the_passing_pool_too() {
    let f = fleet("fleet-basic", &[]).await;
    let (code, r) = f.json(&[]).await;
    let failing = support::fleet_row(&r, USER_NEW);
    assert_eq!(failing["status"], "failed", "{r:#}");
    assert_eq!(failing["verdict"]["layer"], "refused", "{r:#}");
    assert_eq!(
        failing["verdict"]["host"],
        format!("127.0.0.1:{}", f.closed_port),
        "{r:#}"
    );
    assert_eq!(failing["chosen_because"], "the pool's newest Ready node");
    assert_eq!(failing["source"], "probe");
    let passing = support::fleet_row(&r, SYSTEM);
    assert_eq!(passing["status"], "passed", "{r:#}");
    assert_eq!(passing["verdict"]["passed"], true);
    // The old node of the failing pool was not probed, and the report says why.
    let skipped = &r["skipped"][0];
    assert_eq!(skipped["node"], USER_OLD);
    assert_eq!(skipped["why"], "an older node of a pool already probed");
    // Pools: the failing one first, and the summary in words.
    assert_eq!(r["pools"][0]["pool"], "user");
    let summary = r["summary"][0].as_str().expect("summary");
    assert!(
        summary.contains("pool `user` fails at refused")
            && summary.contains("1 node of `user` holds the image from cache"),
        "{summary}"
    );
    assert!(
        r["summary"][1]
            .as_str()
            .is_some_and(|s| s.contains("pool `system` passes"))
    );
    assert_eq!(r["ending"], "finished");
    assert_eq!(code, 12, "exit: the worst eligible pool's layer (refused)");
    // Every probe pod is gone, and two were made.
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
    assert_eq!(f.server.store.created(), 2);
    assert_eq!(r["cleanup"]["remaining"], 0);
    let served = f.server.served();
    let creates = served
        .iter()
        .filter(|s| s.starts_with("POST /api/v1/namespaces/pullpath/pods"))
        .filter(|s| !s.contains("dryRun=All"))
        .count();
    assert_eq!(creates, 2, "{served:#?}");
    // Admission asked once, before anything was made (nothing stored by a dry run).
    let dry_runs: Vec<&String> = served.iter().filter(|s| s.contains("dryRun=All")).collect();
    assert_eq!(dry_runs.len(), 1, "{served:#?}");
    // The failing node's probe ran through its runner's prefix.
    let ran = std::fs::read_to_string(f.scratch.path().join("ran-through-prefix"))
        .expect("the prefix ran");
    assert!(
        ran.contains("probe registry.fleet.test/team/app:v1"),
        "{ran}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cached_node_works_from_cache_and_the_text_says_so() {
    let f = fleet("fleet-cache", &[]).await;
    let (_, r) = f.json(&["--nodes-per-pool", "2"]).await;
    let cached = support::fleet_row(&r, USER_OLD);
    assert_eq!(cached["cached"], true);
    assert_eq!(cached["status"], "works-from-cache", "{r:#}");
    assert_eq!(cached["verdict"]["layer"], "refused");
    assert_eq!(support::fleet_row(&r, USER_NEW)["cached"], false);
    assert!(f.pods_left().is_empty());
    let out = f.run(&[IMAGE, "--nodes-per-pool", "2"]).await;
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("✗ pool `user` fails at refused on the registry hop")
            && text.contains(&format!("{USER_OLD} only works from cache"))
            && text.contains("works from cache; a fresh pull fails at refused")
            && text.contains("✓ pool `system` passes")
            && text.contains("probe pods: all deleted from pullpath"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hand_fixed_node_passes_and_is_named_as_hand_fixed() {
    let f = fleet_with(
        "fleet-hand-fix",
        Setup {
            hand_fixed: true,
            ..Setup::default()
        },
    )
    .await;
    let (_, r) = f.json(&[]).await;
    let fixed = support::fleet_row(&r, SYSTEM_FIXED);
    assert_eq!(fixed["chosen_because"], "the pool's newest Ready node");
    assert_eq!(fixed["status"], "passed", "{r:#}");
    let fixes = fixed["hand_fixes"].as_array().expect("hand fixes");
    assert!(
        fixes.iter().any(|h| h
            .as_str()
            .is_some_and(|h| h.contains("registry.fleet.test"))),
        "{r:#}"
    );
    let system = r["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .find(|p| p["pool"] == "system")
        .expect("system");
    let summary = system["summary"].as_str().expect("summary");
    assert!(
        summary.contains(&format!(
            "{SYSTEM_FIXED} has a hand fix a replaced node would lack"
        )),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn eligibility_comes_from_the_workload_and_an_ineligible_pool_is_still_checked() {
    let f = fleet("fleet-for", &[]).await;
    let (code, r) = f.json(&["--for", "deploy/web", "-n", "shop"]).await;
    assert_eq!(r["workload"], "Deployment/web in shop");
    let system = support::fleet_row(&r, SYSTEM);
    assert_eq!(system["eligible"], false, "{r:#}");
    assert!(
        system["not_eligible_because"]
            .as_str()
            .is_some_and(|w| w.contains("nodeSelector agentpool=user"))
    );
    assert_eq!(system["status"], "passed");
    assert_eq!(support::fleet_row(&r, USER_NEW)["eligible"], true);
    let system_pool = r["pools"]
        .as_array()
        .expect("pools")
        .iter()
        .find(|p| p["pool"] == "system")
        .expect("system pool");
    assert_eq!(system_pool["eligible"], false);
    assert_eq!(code, 12);
}

/// Corpus row 25 (shared/corpus/real-pull-failures.jsonl): containerd on EKS, a registry whose
/// address does not answer.
fn corpus_message(id: u64) -> String {
    let corpus = std::fs::read_to_string(
        support::repo().join("tests/fixtures/corpus/real-pull-failures.jsonl"),
    )
    .expect("corpus");
    let entry: Value = corpus
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["id"] == id)
        .expect("corpus row");
    let text = entry["text"].as_str().expect("text");
    // The event's message, without the `Warning Failed … kubelet` columns.
    text[text.find("Failed to pull image").expect("a pull failure")..].to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_probe_pod_stuck_in_err_image_pull_is_that_nodes_explained_finding() {
    let message = corpus_message(25);
    let f = fleet(
        "fleet-pull",
        &[(USER_NEW, Behaviour::ImagePull(message.clone()))],
    )
    .await;
    let (code, r) = f.json(&[]).await;
    let stuck = support::fleet_row(&r, USER_NEW);
    assert_eq!(stuck["status"], "probe-image-failed", "{r:#}");
    assert_eq!(stuck["source"], "probe-pod");
    assert_eq!(stuck["verdict"]["layer"], "route", "{r:#}");
    assert_eq!(
        stuck["verdict"]["host"],
        "redacted.dkr.ecr.us-east-2.amazonaws.com"
    );
    assert_eq!(stuck["probe_pod_message"], message.as_str());
    assert_eq!(code, 11);
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
    let text = f.run(&[IMAGE]).await;
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("probe pod's own image pull fails at route on the registry hop to redacted.dkr.ecr.us-east-2.amazonaws.com")
            && text.contains("(pulling the probe image itself: the probe could not start)"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_probe_pod_is_deleted_at_the_deadline() {
    let f = fleet("fleet-deadline", &[(USER_NEW, Behaviour::Hang)]).await;
    let (code, r) = f.json(&["--deadline", "3s"]).await;
    assert_eq!(r["ending"], "deadline", "{r:#}");
    let hung = support::fleet_row(&r, USER_NEW);
    assert_eq!(hung["status"], "no-answer");
    assert!(
        hung["verdict"]["cause"]
            .as_str()
            .is_some_and(|c| c.contains("deadline"))
    );
    assert_eq!(support::fleet_row(&r, SYSTEM)["status"], "passed");
    assert_eq!(code, 3, "an eligible pool without an answer is undecided");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
}

fn spawn(mut command: Command) -> Child {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pullpath starts")
}

fn signal(child: &Child, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread")]
async fn sigint_and_sigterm_delete_every_probe_pod_and_kubectl_sees_them_while_they_run() {
    let f = fleet(
        "fleet-sigint",
        &[(USER_NEW, Behaviour::Hang), (SYSTEM, Behaviour::Hang)],
    )
    .await;
    let child = spawn(f.command(&[IMAGE, "-o", "json"]));
    f.until_created(2).await;
    let listed = kube_api::run_kubectl(
        &f.config,
        &[
            "get",
            "pods",
            "-n",
            "pullpath",
            "-l",
            "app.kubernetes.io/managed-by=pullpath",
            "-o",
            "name",
        ],
    );
    assert_eq!(listed.lines().count(), 2, "{listed}");
    assert!(
        listed.lines().all(|l| l.starts_with("pod/pullpath-fleet-")),
        "{listed}"
    );
    signal(&child, "INT");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("exits"))
        .await
        .expect("wait");
    let r = support::fleet_report(&out);
    assert_eq!(r["ending"], "interrupted", "{r:#}");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
    // SIGTERM (what `kubectl`-driving scripts and CI runners send) is handled the same way.
    let child = spawn(f.command(&[IMAGE, "-o", "json"]));
    f.until_created(4).await;
    signal(&child, "TERM");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("exits"))
        .await
        .expect("wait");
    assert_eq!(support::fleet_report(&out)["ending"], "interrupted");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
}

#[tokio::test(flavor = "multi_thread")]
async fn cleanup_removes_the_leftovers_of_a_killed_run() {
    let f = fleet(
        "fleet-cleanup",
        &[(USER_NEW, Behaviour::Hang), (SYSTEM, Behaviour::Hang)],
    )
    .await;
    let mut child = spawn(f.command(&[IMAGE]));
    f.until_created(2).await;
    // SIGKILL: no chance to clean up, so the pods stay.
    signal(&child, "KILL");
    let _ = child.wait();
    assert_eq!(f.pods_left().len(), 2, "{:?}", f.pods_left());
    // A `--kubelet-pull` pod a killed run left in the workload's namespace, and a pod of
    // pullpath's that is no run's (another component): only the first is the run's to delete.
    for (name, component) in [
        ("pullpath-kubelet-pull-left", "fleet-kubelet-pull"),
        ("pullpath-controller", "controller"),
    ] {
        let file = f.scratch.path().join(format!("{name}.json"));
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop", "labels": {
                "app.kubernetes.io/managed-by": "pullpath", "app.kubernetes.io/component": component}},
            "spec": {"nodeName": "no-such-node", "containers": [{"name": "c", "image": "registry.fleet.test/team/app:v1"}]}});
        std::fs::write(&file, pod.to_string()).expect("pod file");
        kube_api::run_kubectl(
            &f.config,
            &["create", "--validate=false", "-f", &file.to_string_lossy()],
        );
    }
    let out = f.run(&["--cleanup"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("deleted 2 probe pods from pullpath"),
        "{said}"
    );
    assert!(
        said.contains("deleted 1 kubelet-pull pod from shop"),
        "{said}"
    );
    assert_eq!(f.pods_left(), ["shop/pullpath-controller"]);
    let served = f.server.served();
    assert!(
        served.iter().any(
            |s| s.starts_with("DELETE /api/v1/namespaces/pullpath/pods?")
                && s.contains("app.kubernetes.io%2Fmanaged-by%3Dpullpath")
        ),
        "{served:#?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn runtime_pull_asks_each_nodes_runtime_and_says_when_it_cannot() {
    // These simulated nodes have a socket where containerd's would be, and nothing listening
    // on it: each row says the runtime was not asked, and why, instead of inventing an answer
    // (the lab's fleet test has real ones). The socket must exist: a kubelet does not mount a
    // `type: Socket` hostPath that is missing (the fake kubelet used to forgive that).
    let f = fleet("fleet-runtime-pull", &[]).await;
    for node in [SYSTEM, USER_NEW, USER_OLD] {
        let socket = f
            .scratch
            .path()
            .join(node)
            .join("run/containerd/containerd.sock");
        std::fs::create_dir_all(socket.parent().expect("parent")).expect("run dir");
        drop(std::os::unix::net::UnixListener::bind(&socket).expect("a socket file"));
    }
    let (_, report) = f.json(&["--runtime-pull"]).await;
    let rows = report["nodes"].as_array().expect("nodes");
    assert!(rows.iter().any(|r| r["source"] == "probe"), "{report:#}");
    for row in rows.iter().filter(|r| r["source"] == "probe") {
        let pull = &row["runtime_pull"];
        assert_eq!(pull["outcome"], "unasked", "{row:#}");
        assert!(
            pull["message"]
                .as_str()
                .is_some_and(|m| m.contains("containerd.sock")),
            "{row:#}"
        );
        assert!(pull.get("agrees").is_none(), "{row:#}");
    }
    let text = f.run(&[IMAGE, "--runtime-pull"]).await;
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("runtime not asked"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}

/// A running pod of the web Deployment on `node`.
fn web_pod_on(node: &str) -> Value {
    json!({"kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "web-6d8f7c9b5-q8w2e", "namespace": "shop", "uid": "uid-web-q8w2e", "creationTimestamp": "2026-12-01T08:30:00Z"},
        "spec": {"nodeName": node, "containers": [{"name": "web", "image": IMAGE}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "web", "image": IMAGE,
            "imageID": "registry.fleet.test/team/app@sha256:3b1c0cbe6e0d2d5ba7c3d3b2f0c9a4c5e2c0f1c9b8e7d6a5b4c3d2e1f0a9b8c7",
            "ready": true, "restartCount": 0, "started": true, "state": {"running": {"startedAt": "2026-12-01T08:31:00Z"}}}]}})
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_running_the_image_works_from_cache() {
    let f = fleet_with(
        "fleet-running",
        Setup {
            objects: vec![web_pod_on(USER_NEW)],
            ..Setup::default()
        },
    )
    .await;
    let (_, r) = f.json(&[]).await;
    let new = support::fleet_row(&r, USER_NEW);
    assert_eq!(new["status"], "works-from-cache", "{r:#}");
    assert_eq!(new["cache_evidence"], json!(["running"]));
    assert_eq!(support::fleet_row(&r, SYSTEM)["cache_evidence"], json!([]));
}

/// Every API refusal fleet cannot work without is one line quoting the apiserver and naming
/// fleet's RBAC, exits 77 (the permission is missing), and leaves no pod behind.
#[tokio::test(flavor = "multi_thread")]
async fn api_refusals_are_pullpaths_own_error_naming_fleets_rbac() {
    for (fault, quoted) in [
        (
            Fault::forbid("create", "", "pods"),
            "cannot create resource \"pods\"",
        ),
        (
            Fault::forbid("list", "", "nodes"),
            "cannot list resource \"nodes\"",
        ),
    ] {
        let f = fleet_with(
            "fleet-refused",
            Setup {
                faults: vec![fault],
                ..Setup::default()
            },
        )
        .await;
        let out = f.run(&[IMAGE]).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(77), "{stderr}");
        assert!(
            stderr.contains("403")
                && stderr.contains(quoted)
                && stderr.contains("deploy/rbac-fleet.yaml"),
            "{stderr}"
        );
        assert_eq!(f.server.store.created(), 0);
        assert!(f.pods_left().is_empty());
    }
}

/// A finished probe pod is read as the API's watch reports it, not at the next list: with an
/// hour between lists, every node still answers and the run finishes; with the watch refused
/// (RBAC without `watch`), the polled lists carry the run alone.
#[tokio::test(flavor = "multi_thread")]
async fn finished_pods_are_read_from_the_watch_and_the_lists_carry_a_run_without_one() {
    let f = fleet("fleet-watch", &[]).await;
    let (_, r) = f
        .json(&["--poll-interval", "60m", "--deadline", "60s"])
        .await;
    assert_eq!(r["ending"], "finished", "{r:#}");
    let rows = r["nodes"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "one node per pool: {r:#}");
    assert!(rows.iter().all(|row| row["status"] != "no-answer"), "{r:#}");
    let served = f.server.served();
    assert!(
        served
            .iter()
            .any(|s| s.starts_with("GET /api/v1/namespaces/pullpath/pods?")
                && s.contains("watch=true")),
        "{served:#?}"
    );
    // Until the logs were read (the answers), no list of the run's pods: only the watch. The
    // run's cleanup lists after its delete.
    let answered = served
        .iter()
        .rposition(|s| s.contains("/log?"))
        .expect("the probe logs were read");
    assert!(
        !served[..answered]
            .iter()
            .any(|s| s.starts_with("GET /api/v1/namespaces/pullpath/pods?")
                && !s.contains("watch=true")),
        "{served:#?}"
    );
    let refused = fleet_with(
        "fleet-no-watch",
        Setup {
            faults: vec![Fault::forbid("watch", "", "pods")],
            ..Setup::default()
        },
    )
    .await;
    let (_, r) = refused.json(&["--deadline", "60s"]).await;
    assert_eq!(r["ending"], "finished", "{r:#}");
    assert_eq!(support::fleet_row(&r, SYSTEM)["status"], "passed", "{r:#}");
}

/// A probe namespace that does not exist, or is being deleted, is named before any pod is
/// created (the API would refuse each one: 404 `namespaces "X" not found`, or 403 for a
/// Terminating one), with how to create it; so is a missing namespace for `--kubelet-pull`.
#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_the_api_would_refuse_pods_in_is_named_before_any_pod() {
    let mut terminating = kube_api::namespace("leaving", json!({}));
    terminating["status"]["phase"] = json!("Terminating");
    let f = fleet_with(
        "fleet-namespaces",
        Setup {
            objects: vec![terminating],
            ..Setup::default()
        },
    )
    .await;
    // A namespace that does not exist is input that is missing (66); one being deleted is
    // refused as the API refuses it (403: 77).
    for (args, said, code) in [
        (
            &[IMAGE, "--probe-namespace", "ghost"][..],
            "the probe namespace ghost does not exist",
            66,
        ),
        (
            &[IMAGE, "--probe-namespace", "leaving"][..],
            "the probe namespace leaving is being deleted",
            77,
        ),
        (
            &[IMAGE, "--kubelet-pull", "-n", "gone"][..],
            "the workload's namespace (--kubelet-pull) gone does not exist",
            66,
        ),
    ] {
        let out = f.run(args).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert_eq!(f.server.store.created(), 0, "{args:?}");
    }
    let stderr =
        String::from_utf8_lossy(&f.run(&[IMAGE, "--probe-namespace", "ghost"]).await.stderr)
            .to_string();
    assert!(stderr.contains("deploy/namespace.yaml"), "{stderr}");
}

/// `--dry-run` prints the probe pods and creates nothing; the real kubectl accepts them
/// (`kubectl apply --dry-run=client` against the stand-in, which answers NotFound for each, so
/// kubectl plans a create) and reads them back as Pods pinned to each chosen node.
#[tokio::test(flavor = "multi_thread")]
async fn dry_run_prints_probe_pods_kubectl_accepts_and_creates_nothing() {
    let f = fleet("fleet-dry-run", &[]).await;
    let out = f.run(&[IMAGE, "--dry-run", "--full"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(f.server.store.created(), 0);
    let manifest = f.scratch.path().join("probe-pods.json");
    std::fs::write(&manifest, &out.stdout).expect("manifest");
    let mut apply: Vec<String> = "apply --dry-run=client --validate=false -o json -f"
        .split(' ')
        .map(str::to_string)
        .collect();
    apply.push(manifest.display().to_string());
    let apply: Vec<&str> = apply.iter().map(String::as_str).collect();
    let applied = kube_api::run_kubectl(&f.config, &apply);
    let applied: Value = serde_json::from_str(&applied).expect("kubectl prints JSON");
    let items = applied["items"].as_array().expect("a List");
    let nodes: Vec<&str> = items
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(nodes, [SYSTEM, USER_NEW]);
    for pod in items {
        assert_eq!(pod["kind"], "Pod");
        assert_eq!(pod["metadata"]["namespace"], "pullpath");
        assert_eq!(
            pod["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "pullpath"
        );
        assert_eq!(pod["spec"]["hostNetwork"], true);
        let args: Vec<&str> = pod["spec"]["containers"][0]["args"]
            .as_array()
            .expect("args")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(args.contains(&"--full") && args[1] == IMAGE, "{args:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn for_a_pod_the_node_it_landed_on_is_probed_too() {
    let f = fleet_with(
        "fleet-for-pod",
        Setup {
            objects: vec![web_pod_on(USER_OLD)],
            ..Setup::default()
        },
    )
    .await;
    let (_, r) = f
        .json(&["--for", "pod/web-6d8f7c9b5-q8w2e", "-n", "shop"])
        .await;
    assert_eq!(r["workload"], "Pod/web-6d8f7c9b5-q8w2e in shop");
    let landed = support::fleet_row(&r, USER_OLD);
    assert_eq!(
        landed["chosen_because"], "the node the pod landed on",
        "{r:#}"
    );
    assert_eq!(
        support::fleet_row(&r, USER_NEW)["chosen_because"],
        "the pool's newest Ready node"
    );
    // The pod has no nodeSelector and tolerates nothing: the system pool's taint keeps it off.
    assert_eq!(support::fleet_row(&r, SYSTEM)["eligible"], false);
    assert!(
        support::fleet_row(&r, SYSTEM)["not_eligible_because"]
            .as_str()
            .is_some_and(|w| w.contains("CriticalAddonsOnly"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_that_cannot_list_its_pods_says_so_and_still_deletes_them() {
    let f = fleet_with(
        "fleet-no-list",
        Setup {
            // RBAC without list and watch of pods: the run never sees its pods.
            faults: vec![
                Fault::forbid("list", "", "pods"),
                Fault::forbid("watch", "", "pods"),
            ],
            ..Setup::default()
        },
    )
    .await;
    let (code, r) = f.json(&["--deadline", "20s"]).await;
    // Each node gives up after a few failed lists, long before the deadline.
    assert_eq!(r["ending"], "finished", "{r:#}");
    let cause = support::fleet_row(&r, USER_NEW)["verdict"]["cause"]
        .as_str()
        .unwrap_or("")
        .to_string();
    assert!(
        cause.contains("cannot list the probe pods") && cause.contains("403"),
        "{cause}"
    );
    assert!(
        r["cleanup"]["unverified"]
            .as_str()
            .is_some_and(|u| u.contains("403")),
        "{r:#}"
    );
    assert_eq!(code, 3);
    // Deleting needs no list: the pods are gone all the same.
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
}

/// A pod of the web Deployment on `node` whose container waits on its image, with the
/// kubelet's message as the API reports it.
fn failing_web_pod_on(node: &str, closed_port: u16) -> Value {
    let message = format!(
        "failed to pull and unpack image \"{IMAGE}\": failed to resolve reference \"{IMAGE}\": failed to do request: Head \"http://127.0.0.1:{closed_port}/v2/team/app/manifests/v1\": dial tcp 127.0.0.1:{closed_port}: connect: connection refused"
    );
    json!({"kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "web-6d8f7c9b5-zz9kq", "namespace": "shop", "uid": "uid-web-zz9kq", "creationTimestamp": "2026-12-02T08:30:00Z"},
        "spec": {"nodeName": node, "containers": [{"name": "web", "image": IMAGE}]},
        "status": {"phase": "Pending", "containerStatuses": [{"name": "web", "image": IMAGE, "imageID": "",
            "ready": false, "restartCount": 0, "started": false,
            "state": {"waiting": {"reason": "ErrImagePull", "message": message}}}]}})
}

#[tokio::test(flavor = "multi_thread")]
async fn explain_pod_probe_explains_then_asks_the_nodes() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    let f = fleet_with(
        "fleet-explain-probe",
        Setup {
            objects: vec![failing_web_pod_on(USER_NEW, port)],
            ..Setup::default()
        },
    )
    .await;
    let explain = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pullpath"))
            .args([
                "explain",
                "pod/web-6d8f7c9b5-zz9kq",
                "-n",
                "shop",
                "--probe",
            ])
            .args(extra)
            .arg("--kubeconfig")
            .arg(&f.config)
            .env("NO_COLOR", "1")
            .output()
            .expect("pullpath runs")
    };
    let out = explain(&["--probe-image", "registry.fleet.test/tools/pullpath:0.1.0"]);
    let text = String::from_utf8_lossy(&out.stdout);
    // The explanation first, then the nodes' own answers for the failing image.
    let explained = text
        .find("refused")
        .expect("the explanation names the layer");
    let fleet = text
        .find(&format!("pullpath fleet {IMAGE}"))
        .unwrap_or_else(|| {
            panic!(
                "no fleet report:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(explained < fleet, "{text}");
    assert!(text.contains("pool `user` fails at refused"), "{text}");
    // The node the pod landed on is among those probed, and every probe pod is gone.
    assert!(text.contains(USER_NEW), "{text}");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
    assert!(
        (10..=21).contains(&out.status.code().unwrap_or(-1)),
        "{:?}",
        out.status
    );
    // JSON goes through `fleet`, which has its own schema.
    let json = explain(&["-o", "json"]);
    assert_eq!(json.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&json.stderr).contains("pullpath fleet IMAGE --for pod/"));
}

/// The entry of the report's list `list` whose `key` is `value`.
fn named<'a>(r: &'a Value, list: &str, key: &str, value: &str) -> &'a Value {
    r[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list}: {r:#}"))
        .iter()
        .find(|e| e[key] == value)
        .unwrap_or_else(|| panic!("no {value} in {list}: {r:#}"))
}

/// The report's row of pool `name`.
fn pool<'a>(r: &'a Value, name: &str) -> &'a Value {
    named(r, "pools", "pool", name)
}

/// A run problem of `node`'s row.
fn problem<'a>(r: &'a Value, node: &str) -> &'a Value {
    let row = support::fleet_row(r, node);
    assert_eq!(row["status"], "no-answer", "{r:#}");
    assert_eq!(row["source"], "run", "{r:#}");
    &row["problem"]
}

/// The run with a generous `--deadline`: `(exit, report, seconds taken)`. Every case below must
/// be named within a few poll intervals (100 ms), far below the deadline.
async fn timed(f: &Fleet, args: &[&str]) -> (i32, Value, Duration) {
    let mut all = vec!["--deadline", "120s"];
    all.extend(args);
    let start = Instant::now();
    let (code, r) = f.json(&all).await;
    (code, r, start.elapsed())
}

/// Named long before the deadline, every pod gone, and the problem in the report's list too.
fn named_early(f: &Fleet, r: &Value, took: Duration, node: &str, kind: &str) {
    assert!(
        took < Duration::from_secs(20),
        "took {took:?} of 120 s: {r:#}"
    );
    assert_eq!(r["ending"], "finished", "{r:#}");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
    assert_eq!(r["cleanup"]["remaining"], 0);
    assert!(
        r["problems"]
            .as_array()
            .expect("problems")
            .iter()
            .any(|p| p["node"] == node && p["kind"] == kind),
        "{r:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_host_path_is_named_for_its_node_within_a_few_polls() {
    let f = fleet("fleet-missing-hostpath", &[]).await;
    // A k3s-like node has no /etc/containerd: the probe pod mounts the node's `/`, not its
    // parts, so that node is probed, not refused (containerd's own config is elsewhere there).
    let k3s = f.scratch.path().join(SYSTEM).join("etc/containerd");
    std::fs::remove_dir_all(&k3s).expect("remove");
    // A node whose root the kubelet cannot mount at all (the stand-in's node directory gone):
    // the kubelet's FailedMount, named for that node.
    let root = f.scratch.path().join(USER_NEW);
    std::fs::remove_dir_all(&root).expect("remove");
    let (code, r, took) = timed(&f, &[]).await;
    let p = problem(&r, USER_NEW);
    assert_eq!(p["kind"], "mount-failed", "{r:#}");
    let message = p["message"].as_str().expect("message");
    assert!(
        message.contains(
            "MountVolume.SetUp failed for volume \"node-root\" : hostPath / doesn't exist"
        ),
        "{message}"
    );
    named_early(&f, &r, took, USER_NEW, "mount-failed");
    // A run problem, not the pool's pull failure: undecided, never a layer.
    assert!(support::fleet_row(&r, USER_NEW)["verdict"]["layer"].is_null());
    // The node without /etc/containerd was probed: with no hosts.toml its containerd would
    // look the registry's own name up, which this world's resolver does not know.
    let k3s_row = support::fleet_row(&r, SYSTEM);
    assert!(k3s_row["problem"].is_null(), "{k3s_row:#}");
    assert_eq!(k3s_row["verdict"]["layer"], "dns", "{k3s_row:#}");
    assert_eq!(code, 10, "the worst eligible pool's layer");
    // The kubelet stand-in created nothing the hostPath names.
    assert!(!root.exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_node_out_of_cpu_is_named_as_not_admitted() {
    let f = fleet(
        "fleet-out-of-cpu",
        &[(
            USER_NEW,
            Behaviour::Reject {
                reason: "OutOfcpu".into(),
                message: "Node didn't have enough resource: cpu, requested: 50, used: 3990, capacity: 4000".into(),
            },
        )],
    )
    .await;
    let (code, r, took) = timed(&f, &[]).await;
    let p = problem(&r, USER_NEW);
    assert_eq!(p["kind"], "not-admitted");
    assert!(
        p["message"]
            .as_str()
            .is_some_and(|m| m.contains("OutOfcpu") && m.contains("enough resource: cpu")),
        "{r:#}"
    );
    named_early(&f, &r, took, USER_NEW, "not-admitted");
    assert_eq!(code, 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_webhook_refusal_names_the_webhook_and_is_no_pool_verdict() {
    let f = fleet_with(
        "fleet-webhook",
        Setup {
            webhook: Some((
                "validation.gatekeeper.sh",
                "[denied by autogke-no-write-mode-hostpath] hostPath volume node-hosts is not allowed",
            )),
            ..Setup::default()
        },
    )
    .await;
    let (code, r, took) = timed(&f, &[]).await;
    for node in [SYSTEM, USER_NEW] {
        let p = problem(&r, node);
        assert_eq!(p["kind"], "admission-webhook", "{r:#}");
        assert!(
            p["message"]
                .as_str()
                .is_some_and(|m| m.contains(
                    "the admission webhook \"validation.gatekeeper.sh\" refused the probe pod (403)"
                ) && m.contains("autogke-no-write-mode-hostpath")),
            "{r:#}"
        );
        named_early(&f, &r, took, node, "admission-webhook");
    }
    // The report, not pullpath's own error: the run worked, the cluster refused its pods.
    assert_eq!(code, 3);
    assert_eq!(f.server.store.created(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pod_security_refusal_quotes_the_level_and_the_checks() {
    let namespace = json!({"kind": "Namespace", "apiVersion": "v1",
        "metadata": {"name": "pullpath", "uid": "uid-ns-pullpath",
            "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}});
    let f = fleet_with(
        "fleet-pod-security",
        Setup {
            objects: vec![namespace],
            ..Setup::default()
        },
    )
    .await;
    let (code, r, took) = timed(&f, &[]).await;
    let p = problem(&r, USER_NEW);
    assert_eq!(p["kind"], "pod-security", "{r:#}");
    let message = p["message"].as_str().expect("message");
    assert!(
        message.contains("violates PodSecurity \"baseline:latest\": forbidden AppArmor profile (container \"probe\" must not set securityContext.appArmorProfile.type to \"Unconfined\"), non-default capabilities (container \"probe\" must not include \"DAC_READ_SEARCH\", \"SYS_PTRACE\" in securityContext.capabilities.add), host namespaces (hostNetwork=true, hostPID=true), hostPath volumes (volume \"node-root\")")
            && message.contains("deploy/namespace.yaml"),
        "{message}"
    );
    named_early(&f, &r, took, USER_NEW, "pod-security");
    assert_eq!(code, 3);
    assert_eq!(f.server.store.created(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn err_image_never_pull_is_a_run_problem() {
    let message =
        format!("Container image \"{PROBE_IMAGE}\" is not present with pull policy of Never");
    let f = fleet(
        "fleet-never-pull",
        &[(
            USER_NEW,
            Behaviour::Waiting {
                reason: "ErrImageNeverPull".into(),
                message: message.clone(),
                event: "ErrImageNeverPull".into(),
            },
        )],
    )
    .await;
    let (_, r, took) = timed(&f, &[]).await;
    let p = problem(&r, USER_NEW);
    assert_eq!(p["kind"], "probe-image-never-pulled");
    assert!(p["message"].as_str().is_some_and(|m| m.contains(&message)));
    named_early(&f, &r, took, USER_NEW, "probe-image-never-pulled");
}

/// A node in the API only (no kubelet plays it: a pod made for it would never start).
fn api_node(name: &str, pool: &str, created: &str, labels: Value, spec: Value) -> Value {
    let mut n = node(name, pool, created, &[]);
    for (k, v) in labels.as_object().expect("labels") {
        n["metadata"]["labels"][k] = v.clone();
    }
    n["spec"] = spec;
    n
}

#[tokio::test(flavor = "multi_thread")]
async fn windows_virtual_and_fargate_nodes_are_skipped_with_the_label_that_said_so() {
    let newest = "2026-12-24T00:00:00Z";
    let f = fleet_with(
        "fleet-not-linux",
        Setup {
            objects: vec![
                api_node(
                    "akswin000000",
                    "win",
                    newest,
                    json!({"kubernetes.io/os": "windows"}),
                    json!({}),
                ),
                api_node(
                    "virtual-node-aci-linux",
                    "virtual",
                    newest,
                    json!({"type": "virtual-kubelet", "kubernetes.azure.com/managed": "false"}),
                    json!({}),
                ),
                api_node(
                    "fargate-ip-10-0-1-5.ec2.internal",
                    "fargate",
                    newest,
                    json!({"eks.amazonaws.com/compute-type": "fargate"}),
                    json!({}),
                ),
            ],
            ..Setup::default()
        },
    )
    .await;
    let (_, r, took) = timed(&f, &[]).await;
    let skipped = |node: &str| named(&r, "skipped", "node", node).clone();
    assert_eq!(
        skipped("akswin000000")["evidence"],
        "kubernetes.io/os=windows"
    );
    assert_eq!(
        skipped("virtual-node-aci-linux")["evidence"],
        "type=virtual-kubelet"
    );
    assert_eq!(
        skipped("fargate-ip-10-0-1-5.ec2.internal")["evidence"],
        "eks.amazonaws.com/compute-type=fargate"
    );
    assert!(
        skipped("akswin000000")["why"]
            .as_str()
            .is_some_and(|w| w.contains("Windows"))
    );
    // No probe pod was made for them, and no pool of theirs has a verdict.
    assert_eq!(f.server.store.created(), 2);
    assert_eq!(r["pools"].as_array().expect("pools").len(), 2, "{r:#}");
    assert!(took < Duration::from_secs(20));
    assert!(f.pods_left().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_arm64_node_without_an_arm64_probe_image_is_a_run_problem() {
    let f = fleet_with(
        "fleet-arm64",
        Setup {
            objects: vec![api_node(
                "aks-arm-11111111-vmss000000",
                "arm",
                "2026-12-10T00:00:00Z",
                json!({"kubernetes.io/arch": "arm64"}),
                json!({}),
            )],
            ..Setup::default()
        },
    )
    .await;
    let (_, r, took) = timed(&f, &["--probe-image-arch", "amd64"]).await;
    let p = problem(&r, "aks-arm-11111111-vmss000000");
    assert_eq!(p["kind"], "probe-image-arch", "{r:#}");
    assert!(
        p["message"]
            .as_str()
            .is_some_and(|m| m.contains("no arm64 variant (it has amd64)")),
        "{r:#}"
    );
    named_early(
        &f,
        &r,
        took,
        "aks-arm-11111111-vmss000000",
        "probe-image-arch",
    );
    // No pod for it; the arm pool is undecided, not failed.
    assert_eq!(f.server.store.created(), 2);
    let arm = pool(&r, "arm");
    assert_eq!(arm["verdict"]["decided"], false, "{r:#}");
    // Given, the architectures are known: no "unknown" note.
    assert!(
        !r["problems"]
            .as_array()
            .expect("problems")
            .iter()
            .any(|p| p["kind"] == "probe-image-arch-unknown")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cordoned_newest_node_is_not_the_pools_newest_and_never_starting_is_named() {
    const CORDONED: &str = "aks-user-24791652-vmss000009";
    let f = fleet_with(
        "fleet-cordoned",
        Setup {
            objects: vec![api_node(
                CORDONED,
                "user",
                "2026-12-20T00:00:00Z",
                json!({}),
                json!({"unschedulable": true, "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}),
            )],
            ..Setup::default()
        },
    )
    .await;
    let (_, r, took) = timed(&f, &[]).await;
    assert_eq!(
        support::fleet_row(&r, USER_NEW)["chosen_because"],
        "the pool's newest Ready node",
        "{r:#}"
    );
    let skipped = named(&r, "skipped", "node", CORDONED);
    assert_eq!(skipped["evidence"], "spec.unschedulable=true (cordoned)");
    assert!(took < Duration::from_secs(20));
    // Listed with --all-nodes, marked; no kubelet plays it, so its pod never starts: named
    // when --start-budget runs out, not at the deadline.
    let (_, r, took) = timed(&f, &["--all-nodes", "--start-budget", "1s"]).await;
    let row = support::fleet_row(&r, CORDONED);
    assert!(
        row["chosen_because"]
            .as_str()
            .is_some_and(|w| w.contains("on its way out (spec.unschedulable=true (cordoned))")),
        "{r:#}"
    );
    assert_eq!(problem(&r, CORDONED)["kind"], "never-started");
    named_early(&f, &r, took, CORDONED, "never-started");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_probe_image_from_another_registry_that_does_not_pull_names_that_registry() {
    let message = corpus_message(25);
    let f = fleet(
        "fleet-probe-elsewhere",
        &[(USER_NEW, Behaviour::ImagePull(message))],
    )
    .await;
    let (code, r, took) = timed(
        &f,
        &[
            "--probe-image",
            "mirror.elsewhere.test/tools/pullpath:0.1.0",
        ],
    )
    .await;
    let p = problem(&r, USER_NEW);
    assert_eq!(p["kind"], "probe-image-registry", "{r:#}");
    assert!(
        p["message"]
            .as_str()
            .is_some_and(|m| m.contains("from mirror.elsewhere.test")
                && m.contains("says nothing about the image")),
        "{r:#}"
    );
    named_early(&f, &r, took, USER_NEW, "probe-image-registry");
    // Not the route failure the probe image's pull saw: the user pool is undecided.
    let user = pool(&r, "user");
    assert_eq!(user["verdict"]["decided"], false, "{r:#}");
    assert_eq!(code, 3);
}

/// Without a probe image, pullpath delivers itself; this test's pullpath is dynamically linked,
/// which a pause image cannot run: every chosen node is a `probe-binary` run problem saying so
/// and how to give a static one, and nothing is created. A node whose status lists no sandbox
/// image (and no --node-image) is `no-node-image`.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_probe_image_a_dynamic_pullpath_is_not_delivered_and_says_how() {
    let f = fleet("fleet-no-probe-image", &[]).await;
    for (extra, kind, words) in [
        (
            &["--node-image", "registry.k8s.io/pause:3.10"][..],
            "probe-binary",
            "dynamically linked",
        ),
        (&[][..], "no-node-image", "--node-image"),
    ] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pullpath"));
        command
            .args(["fleet", IMAGE, "-o", "json", "--kubeconfig"])
            .arg(&f.config)
            .args(extra)
            .env_remove("KUBECONFIG");
        let out = tokio::task::spawn_blocking(move || command.output().expect("runs"))
            .await
            .expect("pullpath");
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        support::assert_valid_fleet(&report);
        let rows = report["nodes"].as_array().expect("rows");
        assert!(!rows.is_empty(), "{report:#}");
        for row in rows {
            assert_eq!(row["problem"]["kind"], kind, "{row:#}");
            let message = row["problem"]["message"].as_str().unwrap_or("");
            assert!(message.contains(words), "{message}");
        }
        assert!(
            report["probe_image"]
                .as_str()
                .is_some_and(|p| p.starts_with("none: pullpath delivered through the API")),
            "{report:#}"
        );
        assert_eq!(out.status.code(), Some(3), "undecided: no node was asked");
    }
    assert_eq!(f.server.store.created(), 0);
    assert!(f.server.store.config_map_names().is_empty());
}

/// A node of pool `user`, newer than the others, laid out as AKS caches images: its status lists
/// 50 large images and its pause image, which the stand-in (as the kubelet) leaves out; a
/// DaemonSet's kube-proxy runs on it.
const USER_CACHED: &str = "aks-user-24791652-vmss000009";

fn cached_node() -> Value {
    let mut n = node(USER_CACHED, "user", "2026-12-05T08:00:00Z", &[]);
    let mut images: Vec<Value> = (0..50)
        .map(|i| json!({"names": [format!("mcr.microsoft.com/aks/cached-{i}:1")], "sizeBytes": 300_000_000 + i}))
        .collect();
    images.push(
        json!({"names": ["mcr.microsoft.com/oss/kubernetes/pause:3.6"], "sizeBytes": 300_000}),
    );
    n["status"]["images"] = json!(images);
    n
}

/// kube-proxy's DaemonSet pod, running on `node`.
fn kube_proxy_on(node: &str) -> Value {
    json!({"kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": format!("kube-proxy-{node}"), "namespace": "kube-system", "uid": format!("uid-kp-{node}"),
            "creationTimestamp": "2026-12-05T08:01:00Z",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "kube-proxy", "uid": "uid-ds-kp", "controller": true}]},
        "spec": {"nodeName": node, "containers": [{"name": "kube-proxy", "image": "mcr.microsoft.com/oss/kubernetes/kube-proxy:v1.33.5"}]},
        "status": {"phase": "Running", "containerStatuses": [{"name": "kube-proxy", "image": "mcr.microsoft.com/oss/kubernetes/kube-proxy:v1.33.5",
            "imageID": "mcr.microsoft.com/oss/kubernetes/kube-proxy@sha256:9f2ae3c1d0b4a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0",
            "ready": true, "restartCount": 0, "started": true, "state": {"running": {"startedAt": "2026-12-05T08:01:30Z"}}}]}})
}

/// Without a registry, a node whose status leaves its pause image out (50 larger images listed)
/// starts its probe from the image a running DaemonSet container uses, by its digest, and its
/// row says so; a node with neither is `no-node-image`, saying what was looked at (and that the
/// pods went unread when the list was refused). No request is added for it.
#[tokio::test(flavor = "multi_thread")]
async fn a_node_whose_status_omits_its_pause_image_starts_from_a_running_containers_image() {
    let kube_proxy = "mcr.microsoft.com/oss/kubernetes/kube-proxy@sha256:9f2ae3c1d0b4a5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0";
    for refused in [false, true] {
        let f = fleet_with(
            "fleet-node-image",
            Setup {
                objects: vec![cached_node(), kube_proxy_on(USER_CACHED)],
                faults: if refused {
                    vec![Fault::forbid("list", "", "pods")]
                } else {
                    Vec::new()
                },
                ..Setup::default()
            },
        )
        .await;
        let binary = synthetic_static_pullpath(f.scratch.path(), 4096);
        let given = format!("amd64={}", binary.display());
        let (_, r) = f
            .json(&["--probe-binary", given.as_str(), "--deadline", "3s"])
            .await;
        let system = support::fleet_row(&r, SYSTEM);
        assert_eq!(system["problem"]["kind"], "no-node-image", "{r:#}");
        let message = system["problem"]["message"].as_str().unwrap_or("");
        let cached = support::fleet_row(&r, USER_CACHED);
        if refused {
            assert!(
                message.contains("running containers were not seen (cannot list pods"),
                "{message}"
            );
            assert_eq!(cached["problem"]["kind"], "no-node-image", "{r:#}");
            continue;
        }
        assert!(message.contains("no container runs on it"), "{message}");
        assert_eq!(
            cached["node_image"],
            json!({"image": kube_proxy, "source": "running",
                "why": format!("the image of container kube-proxy of pod kube-system/kube-proxy-{USER_CACHED}, running on the node")}),
            "{r:#}"
        );
        let out = f
            .run(&[IMAGE, "--dry-run", "--probe-binary", given.as_str()])
            .await;
        let listed: Value = serde_json::from_slice(&out.stdout).expect("a List");
        let probe = listed["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["kind"] == "Pod" && p["spec"]["nodeName"] == USER_CACHED)
            .expect("the cached node's probe pod");
        assert_eq!(probe["spec"]["containers"][0]["image"], kube_proxy);
        assert_eq!(probe["spec"]["containers"][0]["imagePullPolicy"], "Never");
    }
}

/// A stand-in for a static amd64 pullpath with a first stage of its own (nothing executes it).
fn synthetic_static_pullpath(dir: &Path, len: usize) -> PathBuf {
    support::synthetic_static_pullpath(dir, len, b"\x7fELF a first stage")
}

/// No registry: `--dry-run` lists the delivered ConfigMaps (labelled with the run, data elided)
/// before the pods that mount them; a run creates them once for all its pods (a binary over
/// 1 MiB compressed is two parts: three objects with the stage) and deletes them with the pods
/// at the deadline and on SIGINT, as it does pods.
#[tokio::test(flavor = "multi_thread")]
async fn delivered_objects_are_listed_by_dry_run_and_deleted_at_the_deadline_and_on_sigint() {
    let f = fleet(
        "fleet-delivered",
        &[(USER_NEW, Behaviour::Hang), (SYSTEM, Behaviour::Hang)],
    )
    .await;
    let binary = synthetic_static_pullpath(f.scratch.path(), 1_200_000);
    let given = format!("amd64={}", binary.display());
    let source = [
        "--probe-binary",
        given.as_str(),
        "--node-image",
        "registry.k8s.io/pause:3.10",
    ];
    let mut args = vec![IMAGE, "--dry-run"];
    args.extend(source);
    let out = f.run(&args).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).expect("a List");
    let items = listed["items"].as_array().expect("items");
    let kinds: Vec<&str> = items.iter().filter_map(|i| i["kind"].as_str()).collect();
    assert_eq!(kinds, ["ConfigMap", "ConfigMap", "ConfigMap", "Pod", "Pod"]);
    for map in &items[..3] {
        assert_eq!(map["metadata"]["namespace"], "pullpath");
        assert_eq!(
            map["metadata"]["labels"]["app.kubernetes.io/managed-by"],
            "pullpath"
        );
        let data = map["binaryData"].as_object().expect("binaryData");
        assert_eq!(data.len(), 1);
        assert!(
            data.values()
                .all(|v| v.as_str().is_some_and(|v| v.starts_with("(elided: "))),
            "{map:#}"
        );
    }
    let pod = &items[3];
    let container = &pod["spec"]["containers"][0];
    assert_eq!(container["image"], "registry.k8s.io/pause:3.10");
    assert_eq!(container["imagePullPolicy"], "Never");
    let sources = &pod["spec"]["volumes"][1]["projected"]["sources"];
    assert_eq!(sources.as_array().map(Vec::len), Some(3), "{pod:#}");
    assert_eq!(f.server.store.created(), 0);
    assert!(f.server.store.config_map_names().is_empty());

    let mut args = vec!["--deadline", "3s"];
    args.extend(source);
    let (_, r) = f.json(&args).await;
    assert_eq!(r["ending"], "deadline", "{r:#}");
    assert_eq!(r["delivery"]["objects"], 3, "{r:#}");
    assert!(
        r["delivery"]["bytes_sent"]
            .as_u64()
            .is_some_and(|b| b > 1_200_000),
        "{r:#}"
    );
    assert_eq!(r["cleanup"]["remaining"], 0, "{r:#}");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
    assert!(f.server.store.config_map_names().is_empty());

    let mut args = vec![IMAGE, "-o", "json"];
    args.extend(source);
    let child = spawn(f.command(&args));
    f.until_created(4).await;
    assert_eq!(
        f.server.store.config_map_names().len(),
        3,
        "shared by both pods"
    );
    signal(&child, "INT");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("exits"))
        .await
        .expect("wait");
    assert_eq!(support::fleet_report(&out)["ending"], "interrupted");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
    assert!(f.server.store.config_map_names().is_empty());
    // No kinder than the API: a ConfigMap over 1 MiB is refused in its words.
    let big = f.scratch.path().join("big.json");
    let data = "x".repeat((1 << 20) + 1);
    let map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "pullpath"}, "data": {"part": data}});
    std::fs::write(&big, map.to_string()).expect("write");
    let out = Command::new(kube_api::kubectl())
        .arg("--kubeconfig")
        .arg(&f.config)
        .args(["create", "--validate=false", "-f"])
        .arg(&big)
        .output()
        .expect("kubectl runs");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && said.contains(
                "ConfigMap \"big\" is invalid: []: Too long: must have at most 1048576 bytes"
            ),
        "{said}"
    );
}

/// No registry, a node of an architecture with no static pullpath given: the arm64 node is a
/// `probe-binary` run problem naming its architecture and how to give one, no pod and no
/// ConfigMap are made for it, and the amd64 nodes get their delivered probe pods as usual.
#[tokio::test(flavor = "multi_thread")]
async fn without_a_binary_for_its_architecture_a_node_is_named_and_gets_no_pod() {
    const ARM: &str = "aks-arm-11111111-vmss000000";
    let f = fleet_with(
        "fleet-delivered-arm64",
        Setup {
            objects: vec![api_node(
                ARM,
                "arm",
                "2026-12-10T00:00:00Z",
                json!({"kubernetes.io/arch": "arm64"}),
                json!({}),
            )],
            ..Setup::default()
        },
    )
    .await;
    let binary = synthetic_static_pullpath(f.scratch.path(), 4096);
    let given = format!("amd64={}", binary.display());
    let (_, r, took) = timed(
        &f,
        &[
            "--probe-binary",
            given.as_str(),
            "--node-image",
            "registry.k8s.io/pause:3.10",
        ],
    )
    .await;
    let p = problem(&r, ARM);
    assert_eq!(p["kind"], "probe-binary", "{r:#}");
    let message = p["message"].as_str().unwrap_or("");
    assert!(
        message.contains("arm64") && message.contains("--probe-binary arm64=PATH"),
        "{message}"
    );
    named_early(&f, &r, took, ARM, "probe-binary");
    // One architecture delivered (its stage and one part), two amd64 pods, none for arm64.
    assert_eq!(r["delivery"]["objects"], 2, "{r:#}");
    assert_eq!(r["delivery"]["binaries"][0]["arch"], "amd64", "{r:#}");
    assert_eq!(f.server.store.created(), 2);
    assert!(f.server.store.config_map_names().is_empty());
}

/// `--fresh-node` costs nodes: without a terminal to ask on and without `--yes` it starts
/// nothing (exit 64) and says why; `--dry-run` shows each pool's fresh probe pod unpinned, asking
/// for its pool and excluding every node of today.
#[tokio::test(flavor = "multi_thread")]
async fn fresh_node_asks_first_and_its_pods_exclude_every_node_of_today() {
    let f = fleet("fleet-fresh-node", &[]).await;
    let out = f.run(&[IMAGE, "--fresh-node"]).await;
    assert_eq!(out.status.code(), Some(64), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("pass --yes") && said.contains("10 minutes"),
        "{said}"
    );
    assert_eq!(
        f.server.store.created(),
        0,
        "nothing created without consent"
    );

    let out = f
        .run(&[
            IMAGE,
            "--fresh-node",
            "--dry-run",
            "--probe-image",
            "r.example/tools/pullpath:1",
        ])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).expect("a List");
    let pods: Vec<&Value> = listed["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["kind"] == "Pod")
        .collect();
    let fresh: Vec<&&Value> = pods
        .iter()
        .filter(|p| p["spec"].get("nodeName").is_none())
        .collect();
    let pinned = pods.len() - fresh.len();
    assert!(
        pinned > 0 && fresh.len() == pinned,
        "one fresh pod per probed pool: {listed:#}"
    );
    for pod in fresh {
        let term = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0];
        let excluded = term["matchFields"][0]["values"]
            .as_array()
            .expect("the nodes of today");
        for name in [USER_NEW, SYSTEM] {
            assert!(
                excluded.iter().any(|n| n == name),
                "{name} not excluded: {pod:#}"
            );
        }
        assert!(
            pod["spec"]["nodeSelector"]
                .as_object()
                .is_some_and(|s| !s.is_empty()),
            "{pod:#}"
        );
    }
}

/// A node group at zero named by its label (`--pools LABEL=VALUE`): no node carries the label,
/// so its row is a fresh probe pod that waits for a node; none comes (no scheduler binds it, as
/// when the autoscaler does nothing). At `--fresh-node-timeout` the row says `no-fresh-node` and
/// the pod is gone; on SIGINT while it waits, the run ends interrupted and the pod is gone too.
/// A `--pools NAME` that matches no pool is named, with how to name a group at zero.
#[tokio::test(flavor = "multi_thread")]
async fn a_pending_fresh_pod_is_deleted_at_its_timeout_and_on_sigint() {
    let f = fleet("fleet-fresh-pending", &[]).await;
    let pools = "kubernetes.azure.com/agentpool=spot,nowhere";
    let (_, r) = f
        .json(&[
            "--pools",
            pools,
            "--fresh-node",
            "--yes",
            "--fresh-node-timeout",
            "2s",
        ])
        .await;
    let row = r["nodes"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|n| n["pool"] == "spot")
        .unwrap_or_else(|| panic!("no row for the group at zero: {r:#}"));
    assert_eq!(row["node"], "(a fresh node of pool spot)", "{row:#}");
    assert_eq!(row["problem"]["kind"], "no-fresh-node", "{row:#}");
    assert!(
        row["chosen_because"]
            .as_str()
            .is_some_and(|c| c.contains("--pools kubernetes.azure.com/agentpool=spot")),
        "{row:#}"
    );
    assert!(row["fresh_node"].get("compared_with").is_none(), "{row:#}");
    let unmatched = r["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .find(|p| p["kind"] == "pool-not-found")
        .unwrap_or_else(|| panic!("--pools nowhere not named: {r:#}"));
    assert_eq!(unmatched["pool"], "nowhere");
    assert!(
        unmatched["message"]
            .as_str()
            .is_some_and(|m| m.contains("--pools LABEL=nowhere")),
        "{unmatched:#}"
    );
    assert_eq!(r["cleanup"]["remaining"], 0, "{r:#}");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
    let created = f.server.store.created();
    assert_eq!(created, 1, "one fresh pod and nothing else");

    let child = spawn(f.command(&[
        IMAGE,
        "-o",
        "json",
        "--pools",
        pools,
        "--fresh-node",
        "--yes",
    ]));
    f.until_created(created + 1).await;
    assert_eq!(f.pods_left().len(), 1, "the fresh pod waits");
    signal(&child, "INT");
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().expect("exits"))
        .await
        .expect("wait");
    let r = support::fleet_report(&out);
    assert_eq!(r["ending"], "interrupted", "{r:#}");
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
}

/// On a terminal, fleet draws a progress line per probe pod on stderr while it waits: the fresh
/// pod's wait in the scheduler's words, then what ended it. Run under `script`, which gives
/// pullpath a pseudo-terminal, as an operator's shell does.
#[tokio::test(flavor = "multi_thread")]
async fn on_a_terminal_each_fresh_pod_has_a_progress_line() {
    let f = fleet("fleet-fresh-progress", &[]).await;
    let command = f.command(&[
        IMAGE,
        "--pools",
        "kubernetes.azure.com/agentpool=spot",
        "--fresh-node",
        "--yes",
        "--fresh-node-timeout",
        "2s",
    ]);
    let quoted: Vec<String> = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| format!("'{}'", a.to_string_lossy().replace('\'', r"'\''")))
        .collect();
    let mut script = Command::new("script");
    script
        .args(["-q", "-e", "-c", &quoted.join(" "), "/dev/null"])
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG");
    let out = tokio::task::spawn_blocking(move || script.output().expect("script runs"))
        .await
        .expect("script");
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(
        seen.contains("fresh node of pool spot: pending"),
        "no waiting line: {seen}"
    );
    assert!(
        seen.contains("fresh node of pool spot: run problem: no fresh node came within 2s"),
        "no final line: {seen}"
    );
    assert!(f.pods_left().is_empty(), "{:?}", f.pods_left());
}
