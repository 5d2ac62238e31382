//! `pullpath fleet --all-nodes` against the API stand-in (kube_api.rs) for simulated nodes whose
//! fake kubelet (fake_kubelet.rs, `Canned`) answers each probe pod after a fixed delay with a
//! canned passing report: `benches/fleet.rs` and tests/fleet_throttle.rs. The including file
//! declares `fake_kubelet` and `kube_api` beside this module.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use super::fake_kubelet::{Behaviour, FakeKubelet, Runner, SimNode};
use super::kube_api::{self, ApiServer, World};

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
pub struct Cost {
    pub elapsed: Duration,
    /// Every request the stand-in served (the rejected ones apart).
    pub requests: usize,
    /// Lists of the run's pods and of their events (one each per poll).
    pub lists: usize,
    /// Requests answered with 429.
    pub rejected: u64,
    /// Every node's probe passed, and no probe pod is left.
    pub all_passed: bool,
    /// fleet's exit status and stderr.
    pub status: Option<i32>,
    pub stderr: String,
}

/// How a run is set up: nodes, the probe pods' own time, fleet's parallelism and poll interval,
/// and which API requests the stand-in rejects with 429: every `throttle.0`th until
/// `throttle.1` were (`kube_api::Throttle`; `(0, 0)`: none).
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    pub nodes: usize,
    pub delay: Duration,
    pub parallel: usize,
    pub poll: &'static str,
    pub throttle: (u64, u64),
}

/// `pullpath fleet --all-nodes` against the stand-in as `setup` says.
pub fn run(setup: Setup) -> Cost {
    let Setup {
        nodes,
        delay,
        parallel,
        poll,
        throttle,
    } = setup;
    let dir = std::env::temp_dir().join(format!(
        "pullpath-canned-fleet-{}-{nodes}-{}",
        std::process::id(),
        throttle.1
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
                        delay,
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
        .with_kubelet(Arc::new(kubelet))
        .with_throttle(throttle.0, throttle.1),
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
        .args(["--parallel", &parallel.to_string(), "--poll-interval", poll])
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
        rejected: server.throttle.rejected.load(Ordering::SeqCst),
        all_passed,
        status: out.status.code(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
