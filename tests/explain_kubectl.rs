//! `pullpath explain` on what kubectl itself prints (tests/fixtures/kubectl/, produced by the
//! real kubectl from the API stand-in: see tests/kubectl_standin.rs): one verdict per (pod,
//! container image), clean causes, the pod's name, namespace and node, worst group first.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/kubectl")
            .join(name),
    )
    .expect("fixture")
}

/// `pullpath explain [-o json]` with the fixture piped in: (exit status, stdout).
fn explain(name: &str, json: bool) -> (i32, String) {
    let mut args = vec!["explain"];
    if json {
        args.extend(["-o", "json"]);
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(&args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("pullpath runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = fixture(name);
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("exits");
    writer.join().expect("writer").expect("stdin written");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).expect("UTF-8"),
    )
}

fn report(name: &str) -> (i32, Value) {
    let (code, text) = explain(name, true);
    let value: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
    support::assert_valid_findings(&value);
    (code, value)
}

/// (pod, container, layer, decided) of every finding, in report order.
fn verdicts(report: &Value) -> Vec<(String, String, String, bool)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["pod"]["name"].as_str().unwrap_or("").to_string(),
                f["container"]["name"].as_str().unwrap_or("").to_string(),
                f["report"]["verdict"]["layer"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                f["report"]["verdict"]["decided"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}

fn v(pod: &str, container: &str, layer: &str, decided: bool) -> (String, String, String, bool) {
    (pod.into(), container.into(), layer.into(), decided)
}

fn causes(report: &Value) -> Vec<String> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            f["report"]["verdict"]["cause"]
                .as_str()
                .unwrap_or("")
                .to_string()
        })
        .collect()
}

#[test]
fn describe_of_one_pod_reads_the_message_column_only() {
    let (code, r) = report("describe-pod-worker-0.txt");
    assert_eq!(code, 16, "{r:#}");
    assert_eq!(
        verdicts(&r),
        vec![v("worker-0", "migrate", "notfound", true)]
    );
    let f = &r["findings"][0];
    assert_eq!(f["container"]["kind"], "init");
    assert_eq!(f["pod"]["namespace"], "shop");
    assert_eq!(f["pod"]["node"], "aks-user-27182818-vmss000001");
    assert_eq!(f["image"], "shopacr.azurecr.io/shop/migrate:1.9.0");
    assert_eq!(
        causes(&r),
        vec!["shopacr.azurecr.io/shop/migrate:1.9.0: not found"]
    );
}

#[test]
fn describe_of_many_pods_gives_one_verdict_per_pod_and_image() {
    let (code, r) = report("describe-pods-shop.txt");
    assert_eq!(
        code, 10,
        "the worst group is the DNS failure of three pulls"
    );
    assert_eq!(
        verdicts(&r),
        vec![
            v("web-6d8f7c9b5-k2x9p", "web", "dns", true),
            v("web-6d8f7c9b5-m4q7z", "web", "dns", true),
            v("cart-5b7d9f6c4-r2d2x", "cart", "dns", true),
            v("worker-0", "migrate", "notfound", true),
        ]
    );
    for cause in causes(&r) {
        assert!(
            !cause.contains("kubelet") && !cause.contains("(x") && !cause.contains("spec."),
            "{cause}"
        );
    }
    assert_eq!(r["groups"][0]["count"], 3);
    assert_eq!(r["groups"][0]["nodes"].as_array().map(Vec::len), Some(2));
    assert_eq!(r["groups"][1]["pods"], serde_json::json!(["shop/worker-0"]));
}

#[test]
fn pod_json_with_a_failing_init_container_is_read_as_a_pod() {
    let (code, r) = report("get-pod-worker-0.json");
    // Only the status is pasted: the bare back-off names no cause, and the report says so.
    assert_eq!(code, 3, "{r:#}");
    assert_eq!(verdicts(&r), vec![v("worker-0", "migrate", "other", false)]);
    let f = &r["findings"][0];
    assert_eq!(f["container"]["waiting_reason"], "ImagePullBackOff");
    assert_eq!(
        f["report"]["decided_by"],
        "status.initContainerStatuses[migrate]"
    );
    assert!(
        !causes(&r)[0].contains("\"message\""),
        "a JSON line leaked into the cause: {r:#}"
    );
}

#[test]
fn pod_yaml_carries_the_kubelet_132_back_off_cause() {
    let (_, r) = report("get-pod-web-k2x9p.yaml");
    let f = &r["findings"][0];
    assert_eq!(f["pod"]["name"], "web-6d8f7c9b5-k2x9p");
    assert_eq!(f["pod"]["node"], "aks-userv2-16180339-vmss000000");
    assert_eq!(f["report"]["verdict"]["layer"], "dns");
    assert_eq!(f["report"]["verdict"]["host"], "shopacr.azurecr.io");
    assert_eq!(
        f["report"]["verdict"]["cause"],
        "dial tcp: lookup shopacr.azurecr.io on 10.50.0.10:53: no such host"
    );
}

#[test]
fn pod_lists_in_json_and_yaml_give_the_same_findings() {
    let (code, json) = report("get-pods-shop.json");
    let (yaml_code, yaml) = report("get-pods-shop.yaml");
    assert_eq!(verdicts(&json), verdicts(&yaml));
    assert_eq!(code, yaml_code);
    // Running pods are not findings; the pods on the new pool are.
    let pods: Vec<String> = verdicts(&json).into_iter().map(|v| v.0).collect();
    assert_eq!(pods.len(), 4, "{pods:?}");
    assert!(!pods.iter().any(|p| p == "web-6d8f7c9b5-7tqlw"), "{pods:?}");
    assert_eq!(json["groups"][0]["layer"], "dns");
}

#[test]
fn events_of_many_pods_are_not_reduced_to_the_first() {
    let (code, r) = report("get-events-shop.json");
    assert_eq!(code, 10);
    let found = verdicts(&r);
    assert_eq!(found.len(), 4, "{found:?}");
    // worker-0's later back-offs were combined by client-go; the earliest cause still decides.
    assert!(
        found.contains(&v("worker-0", "migrate", "notfound", true)),
        "{found:?}"
    );
    assert_eq!(r["groups"].as_array().map(Vec::len), Some(2));
    assert_eq!(r["groups"][0]["first_seen"], "2026-12-01T08:22:00Z");
    let (_, billing) = report("get-events-billing.json");
    let layers: Vec<String> = verdicts(&billing).into_iter().map(|v| v.2).collect();
    assert_eq!(layers, vec!["auth", "auth"]);
}

#[test]
fn a_mixed_list_joins_each_pods_status_and_events() {
    let (_, r) = report("get-pod-events-nodes-shop.json");
    let found = verdicts(&r);
    assert_eq!(found.len(), 4, "{found:?}");
    assert!(
        found.contains(&v("worker-0", "migrate", "notfound", true)),
        "{found:?}"
    );
    let worker = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["pod"]["name"] == "worker-0")
        .expect("worker-0");
    // Its messages are the events and the status, and only its own.
    let origins: Vec<&str> = worker["report"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["origin"].as_str())
        .collect();
    assert!(
        origins.contains(&"status.initContainerStatuses[migrate]"),
        "{origins:?}"
    );
    assert_eq!(origins.len(), 7, "six events and the status: {origins:?}");
    // The Nodes in the list name the pools: grouped as scan groups.
    let groups: Vec<(&str, &str)> = r["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["layer"].as_str().unwrap_or(""),
                g["pool"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(groups, vec![("dns", "userv2"), ("notfound", "user")]);
}

#[test]
fn text_output_names_each_pod_and_exits_with_the_worst() {
    let (code, text) = explain("describe-pods-shop.txt", false);
    assert_eq!(code, 10);
    assert!(
        text.starts_with("4 failing pulls · 4 pods · 2 groups (worst first)"),
        "{text}"
    );
    assert!(
        text.contains(
            "── shop/worker-0 · init container migrate (ImagePullBackOff) · node aks-user-27182818-vmss000001"
        ),
        "{text}"
    );
    assert!(
        text.contains("✗ notfound · hop registry · shopacr.azurecr.io"),
        "{text}"
    );
}

#[test]
fn the_findings_schema_checks_each_findings_explain_report() {
    let (_, mut r) = report("get-pods-shop.json");
    r["findings"][0]["report"]["verdict"]
        .as_object_mut()
        .expect("verdict")
        .remove("layer");
    let result = std::panic::catch_unwind(|| support::assert_valid_findings(&r));
    assert!(
        result.is_err(),
        "a finding's failed verdict must name its layer"
    );
}

#[test]
fn debian_kubectl_1_20_describe_gives_the_same_verdicts() {
    // Older kubectl prints no field path before the message: the image joins each event to
    // its container.
    for (old, new) in [
        (
            "describe-pod-worker-0.kubectl-1.20.txt",
            "describe-pod-worker-0.txt",
        ),
        (
            "describe-pods-shop.kubectl-1.20.txt",
            "describe-pods-shop.txt",
        ),
    ] {
        let (old_code, old_report) = report(old);
        let (new_code, new_report) = report(new);
        assert_eq!(verdicts(&old_report), verdicts(&new_report), "{old}");
        assert_eq!(causes(&old_report), causes(&new_report), "{old}");
        assert_eq!(old_code, new_code);
    }
}

/// `explain` with stdin and arguments: (exit status, stdout, stderr).
fn explain_args(args: &[&str], input: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pullpath runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("exits");
    let _ = writer.join();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn hostile_yaml_is_refused_quickly_and_plainly() {
    // A billion-laughs alias bomb and a deep nesting: the YAML reader refuses both; the text is
    // then read as text and said to name no pull step. No hang, no panic.
    let mut bomb = String::from("apiVersion: v1\nkind: Pod\na: &a [x,x,x,x,x,x,x,x,x,x]\n");
    for i in 1..12u8 {
        let (name, prev) = ((b'a' + i) as char, (b'a' + i - 1) as char);
        bomb.push_str(&format!(
            "{name}: &{name} [{}]\n",
            vec![format!("*{prev}"); 10].join(",")
        ));
    }
    let deep = format!(
        "apiVersion: v1\nkind: Pod\na:\n{}",
        (0..3000)
            .map(|i| format!("{}- \n", " ".repeat(i)))
            .collect::<String>()
    );
    for input in [bomb, deep] {
        let started = std::time::Instant::now();
        let (code, out, err) = explain_args(&["explain"], input.as_bytes());
        assert_eq!(code, 3, "{out}{err}");
        assert!(out.contains("names no image pull step"), "{out}");
        assert!(
            err.is_empty() && started.elapsed() < std::time::Duration::from_secs(20),
            "{err}"
        );
    }
}

#[test]
fn cluster_flags_with_failure_text_are_a_usage_error() {
    let (code, _, err) = explain_args(
        &["explain", "-n", "shop", "Back-off pulling image \"a\""],
        b"",
    );
    assert_eq!(code, 64);
    assert!(err.contains("go with `explain pod/NAME`"), "{err}");
}
