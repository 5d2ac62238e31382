//! A fleet run's objects under the cluster's own controls. Admission: with deploy/'s policies
//! applied (rendered by scripts/render-deploy.sh for this build, evaluated by the API stand-in
//! with a real CEL implementation, `support::admission`), a run whose objects they would refuse
//! does not start — it says which policy and why, and creates nothing — and one they admit
//! starts. Garbage collection: a run killed mid-way leaves objects that all name its owner Job,
//! and once that Job's deadline passes the controllers remove it and them.

#[path = "support/kube_api.rs"]
mod kube_api;
mod support;

use std::process::{Command, Output};

use kube_api::{ApiServer, World};
use serde_json::{Value, json};
use support::admission::{denial, documents};
use support::scratch::Scratch;

const NODE: &str = "aks-user-24791652-vmss000003";
const IMAGE: &str = "r.example/team/app:v1";
const DIGEST: &str = "sha256:5f2bb2b94c3d2a1e1c8b5e1e9d1d0d6a8e0f6b7c8d9e0f1a2b3c4d5e6f708192";

/// deploy/ rendered for this build: its probe image digest `DIGEST`, its own binary pinned.
fn rendered_deploy() -> Vec<Value> {
    let out = Command::new("bash")
        .arg(support::repo().join("scripts/render-deploy.sh"))
        .args(["--probe-image-digest", DIGEST])
        .args(["--probe-binary", env!("CARGO_BIN_EXE_pullpath")])
        .output()
        .expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    documents(&String::from_utf8_lossy(&out.stdout))
}

fn cluster(scratch: &Scratch) -> (ApiServer, std::path::PathBuf) {
    cluster_with(scratch, Some(&rendered_deploy()))
}

/// The cluster: one Ready amd64 node holding the pause image, the probe namespace, and the
/// policies among `deploy` when given. No kubelet: probe pods stay Pending.
fn cluster_with(scratch: &Scratch, deploy: Option<&[Value]>) -> (ApiServer, std::path::PathBuf) {
    let node = json!({"kind": "Node", "apiVersion": "v1",
        "metadata": {"name": NODE, "creationTimestamp": "2026-12-01T08:20:00Z", "uid": "uid-node",
            "labels": {"kubernetes.azure.com/agentpool": "user", "kubernetes.io/os": "linux"}},
        "spec": {},
        "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
            "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 320368}],
            "nodeInfo": {"kubeletVersion": "v1.33.5", "containerRuntimeVersion": "containerd://1.7.27",
                "osImage": "Ubuntu 22.04.5 LTS", "architecture": "amd64", "operatingSystem": "linux",
                "bootID": "", "kernelVersion": "", "kubeProxyVersion": "", "machineID": "", "systemUUID": ""}}});
    let world = World::from_objects(vec![
        node,
        kube_api::namespace(
            "pullpath",
            json!({"kubernetes.io/metadata.name": "pullpath",
                "pod-security.kubernetes.io/enforce": "privileged"}),
        ),
        kube_api::namespace("shop", json!({})),
    ]);
    let world = match deploy {
        Some(documents) => world.with_policies(documents, denial),
        None => world,
    };
    let server = ApiServer::start(world);
    let config = server.kubeconfig(scratch.path(), "shop");
    (server, config)
}

fn fleet_command(config: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_pullpath"));
    command
        .args(["fleet", IMAGE])
        .args(args)
        .arg("--kubeconfig")
        .arg(config)
        .args(["--poll-interval", "100ms"])
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG");
    command
}

fn fleet(config: &std::path::Path, args: &[&str]) -> Output {
    fleet_command(config, args).output().expect("pullpath runs")
}

/// A static amd64 pullpath built elsewhere: its first stage is not this build's.
fn unpinned_static_pullpath(dir: &std::path::Path) -> std::path::PathBuf {
    support::synthetic_static_pullpath(dir, 1000, b"\x7fELF another build's first stage")
}

#[test]
fn a_binary_the_policy_does_not_pin_is_refused_before_anything_is_created() {
    let scratch = Scratch::new("fleet-admission-binary");
    let (server, config) = cluster(&scratch);
    let binary = unpinned_static_pullpath(scratch.path());
    let given = format!("amd64={}", binary.display());
    let out = fleet(&config, &["--probe-binary", &given, "--deadline", "20s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("not started")
            && stderr.contains("pullpath-delivered-code")
            && stderr.contains("a pullpath-stage key holds a release's first stage exactly"),
        "{stderr}"
    );
    assert_eq!(server.store.created(), 0, "no pod");
    assert!(server.store.config_map_names().is_empty(), "no ConfigMap");
}

#[test]
fn a_probe_image_the_policy_does_not_pin_is_refused_and_the_pinned_one_starts() {
    let scratch = Scratch::new("fleet-admission-image");
    let (server, config) = cluster(&scratch);
    let other = format!("r.example/tools/pullpath@sha256:{}", "0".repeat(64));
    let out = fleet(&config, &["--probe-image", &other, "--deadline", "20s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("not started") && stderr.contains("pullpath-probe-pods"),
        "{stderr}"
    );
    assert_eq!(server.store.created(), 0, "no pod");
    // The pinned image passes the same check: the run creates its pod (no kubelet runs it
    // here, so it ends at the deadline, its pod deleted).
    let pinned = format!("r.example/tools/pullpath@{DIGEST}");
    let out = fleet(&config, &["--probe-image", &pinned, "--deadline", "3s"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("not started"), "{stderr}");
    assert_eq!(server.store.created(), 1, "{stderr}");
}

#[test]
fn a_killed_runs_objects_go_with_its_owner_once_its_deadline_passed() {
    let scratch = Scratch::new("fleet-objects-owner");
    let (server, config) = cluster_with(&scratch, None);
    let binary = unpinned_static_pullpath(scratch.path());
    let given = format!("amd64={}", binary.display());
    let mut run = fleet_command(
        &config,
        &[
            "--probe-binary",
            &given,
            "--node-image",
            "registry.k8s.io/pause:3.10",
            "--deadline",
            "120s",
            "--output",
            "json",
        ],
    )
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null())
    .spawn()
    .expect("pullpath starts");
    // Killed once its pod exists (no kubelet: it stays Pending), before any cleanup of its own.
    let created = std::time::Instant::now();
    while server.store.created() == 0 {
        assert!(
            created.elapsed() < std::time::Duration::from_secs(60),
            "no probe pod was created"
        );
        std::thread::yield_now();
    }
    run.kill().expect("kill");
    run.wait().expect("reaped");
    let jobs = server.store.jobs();
    let [job] = &jobs[..] else {
        panic!("one owner Job: {jobs:#?}");
    };
    assert_eq!(job["spec"]["parallelism"], 0, "the owner runs no pod");
    assert_eq!(job["spec"]["ttlSecondsAfterFinished"], 0);
    let expires = job["spec"]["activeDeadlineSeconds"]
        .as_u64()
        .expect("a deadline");
    assert!(
        (120..=300).contains(&expires),
        "expires {expires}s after it started"
    );
    let uid = job["metadata"]["uid"].clone();
    let maps = server.store.config_map_names();
    assert!(!maps.is_empty(), "the delivered binary is still there");
    for (namespace, name) in maps.iter().filter_map(|m| m.split_once('/')) {
        let map = server
            .store
            .config_map(namespace, name)
            .expect("the ConfigMap");
        assert_eq!(map["metadata"]["ownerReferences"][0]["uid"], uid, "{map:#}");
    }
    assert_eq!(
        server.store.names().len(),
        1,
        "the probe pod is still there"
    );
    // Time passes: the Job fails at its deadline, is deleted, and takes its dependents along.
    server.store.pass_job_deadlines();
    assert!(server.store.jobs().is_empty());
    assert!(server.store.config_map_names().is_empty());
    assert!(server.store.names().is_empty());
}

#[test]
fn a_finished_run_deletes_its_owner_with_its_objects() {
    let scratch = Scratch::new("fleet-objects-finished");
    let (server, config) = cluster_with(&scratch, None);
    let pinned = format!("r.example/tools/pullpath@{DIGEST}");
    let out = fleet(&config, &["--probe-image", &pinned, "--deadline", "3s"]);
    assert_eq!(
        server.store.created(),
        1,
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(server.store.jobs().is_empty(), "{:#?}", server.store.jobs());
    assert!(server.store.names().is_empty());
}
