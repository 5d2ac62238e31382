//! `pullpath fleet` against a cluster with deploy/'s admission policies applied (rendered by
//! scripts/render-deploy.sh for this build, and evaluated by the API stand-in with a real CEL
//! implementation, `support::admission`): a run whose objects the policies would refuse does not
//! start — it says which policy and why, and creates nothing — and one they admit starts.

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
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    documents(&String::from_utf8_lossy(&out.stdout))
}

fn cluster(scratch: &Scratch) -> (ApiServer, std::path::PathBuf) {
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
    ])
    .with_policies(&rendered_deploy(), denial);
    let server = ApiServer::start(world);
    let config = server.kubeconfig(scratch.path(), "shop");
    (server, config)
}

fn fleet(config: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["fleet", IMAGE])
        .args(args)
        .arg("--kubeconfig")
        .arg(config)
        .args(["--poll-interval", "100ms"])
        .env("NO_COLOR", "1")
        .env_remove("KUBECONFIG")
        .output()
        .expect("pullpath runs")
}

/// A stand-in for a static amd64 pullpath built elsewhere: an ELF header without a program
/// interpreter and a first stage behind build.rs's marker that is not this build's.
fn unpinned_static_pullpath(dir: &std::path::Path) -> std::path::PathBuf {
    let mut bytes = vec![0u8; 64 + 56];
    bytes[..4].copy_from_slice(b"\x7fELF");
    bytes[4] = 2;
    bytes[5] = 1;
    bytes[18..20].copy_from_slice(&62u16.to_le_bytes());
    bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
    bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
    bytes[56..58].copy_from_slice(&1u16.to_le_bytes());
    bytes[64..68].copy_from_slice(&1u32.to_le_bytes());
    let stage = b"\x7fELF another build's first stage";
    bytes.extend_from_slice(b"PULLPATH-STAGE:");
    bytes.extend_from_slice(&(stage.len() as u64).to_le_bytes());
    bytes.extend_from_slice(stage);
    let path = dir.join("pullpath-amd64");
    std::fs::write(&path, bytes).expect("write the binary");
    path
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
