//! `pullpath explain` on a cluster's worth of events, streamed (issue 30): 200,000 events
//! (over 64 MiB, the old cap) through stdin give one finding per failing pod, grouped by cause.
//! Speed and memory are measured by `cargo bench --bench explain`, not asserted here.

#[path = "support/event_list.rs"]
mod event_list;

use std::io::Write;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn explain(args: &[&str], stdin: Vec<u8>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .arg("explain")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("NO_COLOR", "1")
        .spawn()
        .expect("pullpath runs");
    let mut input = child.stdin.take().expect("stdin");
    // From a thread: pullpath reads all of stdin before it writes, but a pipe holds little.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let out = child.wait_with_output().expect("pullpath exits");
    writer.join().expect("writer thread");
    out
}

fn report(out: &Output) -> Value {
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

#[test]
fn two_hundred_thousand_events_from_stdin_give_each_failing_pod_once() {
    let mut input = Vec::new();
    let made = event_list::write_events(&mut input, 200_000, 3600).expect("generated");
    assert!(made.bytes > 64 << 20, "{made:?}: past the old cap");
    let out = explain(&["-o", "json"], input);
    let report = report(&out);
    assert_eq!(report["schema"], "pullpath.findings/v1");
    let findings = report["findings"].as_array().expect("findings");
    // Each group lists its first 20 findings and counts the rest.
    let listed: usize = made.failing.iter().map(|n| (*n).min(20)).sum();
    assert_eq!(findings.len(), listed);
    // Each finding: one pod, its image, its six events (Scheduled and Pulling name the pod too).
    for f in findings {
        assert_eq!(f["report"]["messages"].as_array().map(Vec::len), Some(6));
    }
    let groups = report["groups"].as_array().expect("groups");
    for g in groups {
        let count = g["count"].as_u64().expect("count");
        assert_eq!(g["pods"].as_array().map(Vec::len), Some(count as usize));
        assert_eq!(g["unlisted"].as_u64(), Some(count - 20), "{g}");
    }
    let mut counts: Vec<(String, u64)> = groups
        .iter()
        .map(|g| {
            (
                g["layer"].as_str().unwrap_or("").to_string(),
                g["count"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    counts.sort();
    let mut expected: Vec<(String, u64)> = event_list::CAUSES
        .iter()
        .zip(made.failing)
        .map(|((layer, _, _), n)| (layer.to_string(), n as u64))
        .collect();
    expected.sort();
    assert_eq!(counts, expected);
    // Decided failures: the exit status of the worst layer, not a usage error.
    assert_ne!(out.status.code(), Some(64));
}

/// A registry outage (issue 45): every pod fails, its four messages repeated as the kubelet
/// retries. Each pod is one finding listing each message once, its earliest event (the pull's
/// real cause, before the back-off) deciding, the repeats counted; each group of a cause lists
/// 20 findings and counts every pod.
#[test]
fn an_outage_repeating_four_messages_per_pod_lists_each_once_and_counts_the_repeats() {
    const PODS: usize = 300;
    const ROUNDS: usize = 25;
    let mut input = Vec::new();
    let made =
        event_list::write_outage(&mut input, PODS * 4 * ROUNDS, PODS, 3600).expect("generated");
    let out = explain(&["-o", "json"], input);
    let report = report(&out);
    let findings = report["findings"].as_array().expect("findings");
    assert_eq!(findings.len(), 3 * 20);
    for f in findings {
        let explained = &f["report"];
        let messages = explained["messages"].as_array().expect("messages");
        assert_eq!(messages.len(), 4, "{messages:?}");
        // The pull's failure, in the first round of events: its cause's layer.
        let first = &messages[0];
        let number: usize = first["origin"]
            .as_str()
            .and_then(|o| o.strip_prefix("event "))
            .and_then(|n| n.parse().ok())
            .expect("an event's origin");
        assert!(number <= PODS, "{first}");
        assert!(
            event_list::CAUSES
                .iter()
                .any(|(layer, _, _)| first["layer"] == *layer),
            "{first}"
        );
        assert_eq!(
            explained["messages_unlisted"].as_u64(),
            Some((4 * (ROUNDS - 1)) as u64)
        );
    }
    let mut counts: Vec<(String, u64, u64)> = report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["layer"].as_str().unwrap_or("").to_string(),
                g["count"].as_u64().unwrap_or(0),
                g["unlisted"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    counts.sort();
    let mut expected: Vec<(String, u64, u64)> = event_list::CAUSES
        .iter()
        .zip(made.failing)
        .map(|((layer, _, _), n)| (layer.to_string(), n as u64, n as u64 - 20))
        .collect();
    expected.sort();
    assert_eq!(counts, expected);
}

#[test]
fn a_file_and_stdin_give_the_same_report() {
    let mut input = Vec::new();
    event_list::write_events(&mut input, 5_000, 3600).expect("generated");
    let dir = std::env::temp_dir().join(format!("pullpath-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("events.json");
    std::fs::write(&path, &input).expect("file");
    let from_file = explain(
        &["-o", "json", "-f", path.to_str().expect("utf-8")],
        Vec::new(),
    );
    let from_stdin = explain(&["-o", "json"], input);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(report(&from_file), report(&from_stdin));
    assert_eq!(from_file.status.code(), from_stdin.status.code());
}

#[test]
fn json_cut_short_is_a_clear_error() {
    let mut input = Vec::new();
    event_list::write_events(&mut input, 1_000, 3600).expect("generated");
    input.truncate(input.len() / 2);
    let out = explain(&[], input);
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("truncated input"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// A containerd journal line of a pull in back-off: failure words, no cause.
fn back_off_line(n: usize) -> String {
    format!(
        "Dec 05 10:{:02}:{:02} node containerd[812]: level=info msg=\"Back-off pulling image \\\"registry.example.test/team/app:v{n}\\\"\"\n",
        n / 60 % 60,
        n % 60
    )
}

#[test]
fn a_log_past_the_listing_budget_keeps_the_deciding_line_and_counts_the_rest() {
    // 2 MiB of back-off lines, then one NXDOMAIN among the last of them: the listing (1 MiB of
    // messages) is spent long before it, and it still decides.
    let mut log = String::new();
    let mut lines = 0;
    while log.len() < 2 << 20 {
        log.push_str(&back_off_line(lines));
        lines += 1;
    }
    log.push_str("Dec 05 11:00:00 node containerd[812]: level=error msg=\"PullImage \\\"registry.example.test/team/app:v1\\\" failed\" error=\"failed to resolve reference \\\"registry.example.test/team/app:v1\\\": failed to do request: Head \\\"https://registry.example.test/v2/team/app/manifests/v1\\\": dial tcp: lookup registry.example.test on 10.0.0.10:53: no such host\"\n");
    for n in 0..100 {
        log.push_str(&back_off_line(n));
    }
    let total = lines + 1 + 100;
    let out = explain(&["-o", "json"], log.into_bytes());
    let report = report(&out);
    assert_eq!(report["verdict"]["layer"], "dns", "{}", report["verdict"]);
    let listed = report["messages"].as_array().expect("messages").len();
    let unlisted = report["messages_unlisted"].as_u64().expect("a count");
    assert_eq!(listed as u64 + unlisted, total as u64);
    assert!(unlisted > 0, "{listed} of {total} listed");
    let decided_by = report["decided_by"].as_str().expect("decided_by");
    assert_eq!(decided_by, format!("line {}", lines + 1));

    let text = explain(&[], back_off_line(0).repeat(12_000).into_bytes());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("more messages not listed"), "{text}");
}

#[test]
fn a_long_event_list_with_no_failing_pod_lists_its_first_messages_and_counts_the_rest() {
    // Events of healthy pods (`Pulled`, `Started`): one verdict over all of them, as before,
    // but only the first 1 MiB of their messages listed.
    let mut list = String::from("{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[");
    let mut events = 0;
    let padding = "x".repeat(400);
    while list.len() < 2 << 20 {
        if events > 0 {
            list.push(',');
        }
        list.push_str(&format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{{\"name\":\"e{events}\",\"namespace\":\"shop\"}},\"involvedObject\":{{\"kind\":\"Pod\",\"name\":\"web-{events}\",\"namespace\":\"shop\"}},\"reason\":\"Started\",\"message\":\"Started container app {padding}\",\"type\":\"Normal\",\"firstTimestamp\":\"2026-12-05T10:00:00Z\",\"lastTimestamp\":\"2026-12-05T10:00:00Z\",\"count\":1}}"
        ));
        events += 1;
    }
    list.push_str("]}");
    let out = explain(&["-o", "json"], list.into_bytes());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: Value = serde_json::from_str(&stdout).expect("a JSON report");
    let listed = report["messages"].as_array().expect("messages").len();
    let unlisted = report["messages_unlisted"].as_u64().expect("a count");
    assert_eq!(listed as u64 + unlisted, events as u64);
    assert!(listed * 420 <= 1 << 20, "{listed} listed");
    assert!(unlisted > 0);
}
