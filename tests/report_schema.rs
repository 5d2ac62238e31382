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
    inputs.push("Error response from daemon: pull access denied for x, repository does not exist or may require 'docker login'".into());
    for input in inputs {
        support::assert_valid_report(&explain_json(&input));
    }
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
