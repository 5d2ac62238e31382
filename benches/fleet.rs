//! `cargo bench --bench fleet`: `pullpath fleet --all-nodes` against the API stand-in
//! (tests/support/kube_api.rs) for 3, 30, 300 and 1,000 simulated nodes, whose fake kubelet
//! (tests/support/fake_kubelet.rs, `Canned`) answers each probe pod after a fixed delay (a
//! probe's own time, one second) with a canned passing report. Prints the run time against
//! ceil(nodes / parallel) × delay and their ratio (issue 24's target: at most 1.15 at 1,000
//! nodes), and the API requests: the per-poll lists (the run's pods and their events) apart,
//! and the rest per node, which must stay constant. `PULLPATH_BENCH_QUICK=1` runs 3 and 30
//! nodes only (CI proves it works without judging speed).

#[path = "../tests/support/fake_kubelet.rs"]
mod fake_kubelet;
#[path = "../tests/support/kube_api.rs"]
mod kube_api;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fake_kubelet::{Behaviour, FakeKubelet, Runner, SimNode};
use kube_api::{ApiServer, World};
use serde_json::json;

const PARALLEL: usize = 50;
const DELAY: Duration = Duration::from_secs(1);
/// fleet's default poll interval is 1 s; a quarter of the probe's time keeps the wave overhead
/// what a real run's is against probes of several seconds.
const POLL: &str = "250ms";
/// The run time the issue allows against ceil(nodes / parallel) probes, at 1,000 nodes.
const TARGET_RATIO: f64 = 1.15;

/// A passing probe report, as `pullpath probe -o json` prints one (the fields fleet reads).
const CANNED: &str = r#"{"schema": "pullpath.report/v1", "command": "probe", "image": "r.example/team/app:v1", "verdict": {"passed": true, "decided": true}, "view": "node", "hand_fixes": [], "elapsed_ms": 180}"#;

fn node(i: usize) -> serde_json::Value {
    let pool = format!("pool{}", i % 3);
    json!({"kind": "Node", "apiVersion": "v1",
        "metadata": {"name": format!("node-{i:04}"), "creationTimestamp": "2026-12-01T08:00:00Z",
            "labels": {"kubernetes.azure.com/agentpool": pool}},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
}

/// A node's root with every path the probe pod mounts: the fake kubelet checks each
/// hostPath's type as a kubelet does.
fn node_root(dir: &std::path::Path) -> PathBuf {
    let root = dir.join("node");
    for d in [
        "etc/containerd",
        "etc/ssl",
        "etc/systemd/system",
        "run/systemd/system",
        "lib/systemd/system",
    ] {
        std::fs::create_dir_all(root.join(d)).expect("node directory");
    }
    for f in ["etc/resolv.conf", "etc/hosts"] {
        std::fs::write(root.join(f), "").expect("node file");
    }
    root
}

/// What one run cost the API.
struct Cost {
    elapsed: Duration,
    requests: usize,
    /// Lists of the run's pods and of their events (one each per poll).
    lists: usize,
    all_passed: bool,
}

fn run(nodes: usize) -> Cost {
    let dir = std::env::temp_dir().join(format!(
        "pullpath-bench-fleet-{}-{nodes}",
        std::process::id()
    ));
    let root = node_root(&dir);
    let sims: BTreeMap<String, SimNode> = (0..nodes)
        .map(|i| {
            (
                format!("node-{i:04}"),
                SimNode {
                    root: root.clone(),
                    runner: Runner::default(),
                    behaviour: Behaviour::Canned {
                        delay: DELAY,
                        log: CANNED.to_string(),
                        exit: 0,
                    },
                },
            )
        })
        .collect();
    let kubelet = FakeKubelet {
        nodes: sims,
        binary: PathBuf::from(env!("CARGO_BIN_EXE_pullpath")),
    };
    let server = ApiServer::start(
        World::from_objects(
            (0..nodes)
                .map(node)
                .chain([kube_api::namespace("pullpath", json!({}))])
                .collect(),
        )
        .with_kubelet(Arc::new(kubelet)),
    );
    let config = server.kubeconfig(&dir, "default");
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args([
            "fleet",
            "r.example/team/app:v1",
            "--all-nodes",
            "-o",
            "json",
        ])
        .args(["--parallel", &PARALLEL.to_string(), "--poll-interval", POLL])
        .args(["--probe-image", "r.example/tools/pullpath:bench"])
        .arg("--kubeconfig")
        .arg(&config)
        .env_remove("KUBECONFIG")
        .output()
        .expect("pullpath runs");
    let elapsed = started.elapsed();
    let _ = std::fs::remove_dir_all(&dir);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
    });
    let all_passed = report["nodes"]
        .as_array()
        .is_some_and(|n| n.len() == nodes && n.iter().all(|r| r["status"] == "passed"))
        && server.store.names().is_empty();
    let served = server.served();
    let lists = served
        .iter()
        .filter(|r| {
            r.starts_with("GET /api/v1/namespaces/pullpath/pods?")
                || r.starts_with("GET /api/v1/namespaces/pullpath/events?")
        })
        .count();
    Cost {
        elapsed,
        requests: served.len(),
        lists,
        all_passed,
    }
}

fn main() {
    let quick = std::env::var_os("PULLPATH_BENCH_QUICK").is_some();
    let sizes: &[usize] = if quick { &[3, 30] } else { &[3, 30, 300, 1000] };
    println!(
        "parallel {PARALLEL}, each probe pod answers after {} ms, polled every {POLL}",
        DELAY.as_millis()
    );
    println!(
        "| nodes | seconds | ceil(nodes/parallel) × delay | ratio | API requests | lists (pods + events, per poll) | other requests per node | all passed, no pod left |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for &nodes in sizes {
        let cost = run(nodes);
        let floor = DELAY.as_secs_f64() * nodes.div_ceil(PARALLEL) as f64;
        let ratio = cost.elapsed.as_secs_f64() / floor;
        if nodes == 1000 {
            eprintln!(
                "1,000 nodes: {ratio:.3} × the probes' own time (target ≤ {TARGET_RATIO}): {}",
                if ratio <= TARGET_RATIO {
                    "met"
                } else {
                    "NOT met"
                }
            );
        }
        println!(
            "| {nodes} | {:.2} | {floor:.2} | {ratio:.3} | {} | {} | {:.2} | {} |",
            cost.elapsed.as_secs_f64(),
            cost.requests,
            cost.lists,
            (cost.requests - cost.lists) as f64 / nodes as f64,
            cost.all_passed
        );
    }
}
