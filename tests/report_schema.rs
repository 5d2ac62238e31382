//! `explain --output json` against docs/report.schema.json, for every kind of input; the probe's
//! reports are validated in tests/lab_probe.rs, scenario by scenario.

mod support;

use std::process::Command;

fn explain_json(text: &str) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["explain", "-o", "json", text])
        .output()
        .expect("runs");
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

#[test]
fn explain_reports_follow_the_schema() {
    // Every containerd version's kept messages: 1.6 at the top, 1.7/ and 2.1/ beside them.
    let root = support::repo().join("tests/fixtures/containerd");
    let mut inputs: Vec<String> = ["", "1.7", "2.1"]
        .iter()
        .flat_map(|dir| {
            std::fs::read_dir(root.join(dir))
                .expect("fixtures")
                .flatten()
        })
        .filter(|e| e.path().extension().is_some_and(|x| x == "txt"))
        .map(|e| std::fs::read_to_string(e.path()).expect("fixture"))
        .collect();
    inputs.push(r#"Back-off pulling image "nginx""#.into());
    inputs.push("hello world".into());
    // The node's own failures and a registry's refusal by address carry fields of their own
    // (`node_cause`, additive within v1).
    inputs.push(r#"Container image "nginx:1.25" is not present with pull policy of Never"#.into());
    inputs.push(r#"Failed to pull image "big/img:1": rpc error: code = DeadlineExceeded desc = context deadline exceeded"#.into());
    inputs.push(r#"failed to resolve reference "contoso.azurecr.io/web:1": unexpected status from HEAD request to https://contoso.azurecr.io/v2/web/manifests/1: 403 Forbidden: denied: client with IP '52.174.10.20' is not allowed access"#.into());
    inputs.push("Error response from daemon: pull access denied for x, repository does not exist or may require 'docker login'".into());
    for input in inputs {
        support::assert_valid_report(&explain_json(&input));
    }
    let never =
        explain_json(r#"Container image "nginx:1.25" is not present with pull policy of Never"#);
    assert_eq!(never["node_cause"], "pull-policy");
    assert_eq!(never["messages"][0]["node_cause"], "pull-policy");
}

#[test]
fn the_schema_rejects_a_failed_verdict_without_its_layer() {
    let mut report = explain_json(r#"Back-off pulling image "nginx""#);
    report["verdict"]
        .as_object_mut()
        .expect("verdict")
        .remove("layer");
    let result = std::panic::catch_unwind(|| support::assert_valid_report(&report));
    assert!(result.is_err(), "a failed verdict must name its layer");
}
