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
    assert_eq!(findings.len(), made.failing.iter().sum::<usize>());
    // Each finding: one pod, its image, its six events (Scheduled and Pulling name the pod too).
    for f in findings {
        assert_eq!(f["report"]["messages"].as_array().map(Vec::len), Some(6));
    }
    let groups = report["groups"].as_array().expect("groups");
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
