//! The probe image in the lab: built by scripts/release.sh and scripts/image.sh, pushed to the
//! lab registry with skopeo from the node's namespace, then pulled in full by `pullpath probe
//! --full` from that namespace, as a node would pull it before running the probe pod. The probe
//! that pulls it is the image's own static binary, so the binary the image ships is proven on a
//! full walk too.

mod support;
use support::succeeded;

use std::path::Path;
use std::process::Command;

use base64::Engine;
use serde_json::{Value, json};
use support::scratch::Scratch;
use support::{lab, password, repo};

/// Where the image goes: a repository alice may pull (lab/tokend.py), pushed as admin.
const REPOSITORY: &str = "registry.example.test/team-a/pullpath";

fn bash(script: &str, args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(repo().join(script))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("bash runs");
    succeeded(script, out)
}

#[test]
fn probe_image_pushed_to_the_lab_registry_pulls_in_full() {
    // Built before the lab is taken: the lock is held only while the lab is used.
    let scratch = Scratch::new("lab-image");
    let dist = scratch.path().join("dist");
    let image = scratch.path().join("image");
    let version = env!("CARGO_PKG_VERSION");
    bash(
        "scripts/release.sh",
        &["--profile", "dev", "--out", dist.to_str().expect("UTF-8")],
    );
    let binary = dist.join(format!(
        "pullpath-v{version}-x86_64-unknown-linux-gnu/pullpath"
    ));
    let built = bash(
        "scripts/image.sh",
        &[
            "--binary",
            binary.to_str().expect("UTF-8"),
            "--out",
            image.to_str().expect("UTF-8"),
        ],
    );
    println!("{built}");

    let lab = lab();
    lab.switch("healthy");

    // skopeo trusts the lab CA from a certs directory (it reads *.crt there).
    let certs = scratch.path().join("certs");
    std::fs::create_dir(&certs).expect("mkdir");
    std::fs::copy(&lab.status.ca, certs.join("ca.crt")).expect("lab CA");
    let admin = format!("admin:{}", password("admin").expect("admin password"));
    let source = format!("oci:{}:v{version}", image.display());
    let destination = format!("docker://{REPOSITORY}:v{version}");
    succeeded(
        "skopeo copy",
        lab.in_ns(
            "node",
            &[
                "skopeo",
                // The lab's own image: no signature policy applies to this push.
                "--insecure-policy",
                "copy",
                "--all",
                "--dest-creds",
                &admin,
                "--dest-cert-dir",
                certs.to_str().expect("UTF-8"),
                &source,
                &destination,
            ],
        ),
    );

    // alice's credentials as a kubelet would pass them: a docker config.json.
    let config = scratch.path().join("config.json");
    let auth = base64::engine::general_purpose::STANDARD.encode(format!(
        "alice:{}",
        password("alice").expect("alice password")
    ));
    std::fs::write(
        &config,
        json!({ "auths": { "registry.example.test": { "auth": auth } } }).to_string(),
    )
    .expect("write config.json");
    let report = probe_full(&lab, &binary, &format!("{REPOSITORY}:v{version}"), &config);

    let verdict = &report["verdict"];
    assert_eq!(verdict["passed"], true, "{report:#}");
    let blobs = report["blobs"].as_array().expect("blobs");
    assert_eq!(blobs.len(), 2, "the config and the one layer: {report:#}");
    assert!(blobs.iter().all(|b| b["verified"] == true), "{report:#}");
    support::assert_valid_report(&report);
}

/// `PULLPATH probe --full IMAGE -o json` in the node's namespace; the report (exit 0 asserted).
fn probe_full(
    lab: &support::LabGuard,
    pullpath: &Path,
    image: &str,
    docker_config: &Path,
) -> Value {
    let certs = lab.status.state.join("containerd/node/certs.d");
    let out = lab.in_ns(
        "node",
        &[
            pullpath.to_str().expect("UTF-8"),
            "probe",
            image,
            "--full",
            "-o",
            "json",
            "--docker-config",
            docker_config.to_str().expect("UTF-8"),
            "--containerd-certs",
            certs.to_str().expect("UTF-8"),
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "probe JSON: {e}\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_eq!(out.status.code(), Some(0), "{report:#}");
    report
}
