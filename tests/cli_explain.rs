//! `pullpath explain` as a user runs it: arguments, files, stdin, JSON, and bad input.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn pullpath(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("NO_COLOR", "1")
        .spawn()
        .expect("pullpath runs");
    let mut input = child.stdin.take().expect("stdin");
    let bytes = stdin.to_vec();
    // Write from a thread: a large input must not deadlock against a full stdout pipe.
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let out = child.wait_with_output().expect("pullpath exits");
    writer.join().expect("writer thread");
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const DNS: &str = r#"Failed to pull image "registry.example.test/app:v1": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.test/app:v1": failed to resolve reference "registry.example.test/app:v1": failed to do request: Head "https://registry.example.test/v2/app/manifests/v1": dial tcp: lookup registry.example.test on 10.0.0.10:53: read udp 10.0.0.5:41000->10.0.0.10:53: i/o timeout"#;

#[test]
fn a_lookup_timeout_is_dns_with_owner_and_what_will_not_help() {
    let out = pullpath(&["explain", DNS], b"");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(10), "{text}");
    assert!(
        text.starts_with("✗ dns · hop registry · registry.example.test"),
        "{text}"
    );
    assert!(text.contains("DNS team"), "{text}");
    assert!(
        text.contains("won't help") && text.contains("credential"),
        "{text}"
    );
    assert!(
        text.contains("pullpath probe registry.example.test/app:v1"),
        "{text}"
    );
}

#[test]
fn json_output_carries_the_verdict_object() {
    let out = pullpath(&["explain", "--output", "json", "-f", "-"], DNS.as_bytes());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(report["schema"], "pullpath.report/v1");
    let v = &report["verdict"];
    assert_eq!(
        (
            v["passed"].as_bool(),
            v["layer"].as_str(),
            v["hop"].as_str()
        ),
        (Some(false), Some("dns"), Some("registry"))
    );
    assert_eq!(v["host"], "registry.example.test");
    assert_eq!(v["owner"], "dns-team");
    assert!(
        v["cause"]
            .as_str()
            .is_some_and(|c| c.contains("lookup registry.example.test on 10.0.0.10:53"))
    );
}

#[test]
fn describe_output_the_earliest_real_cause_wins_over_back_off() {
    let describe = format!(
        "Name: web\nEvents:\n  Type     Reason   Age  From     Message\n  ----     ------   ---- ----     -------\n  Normal   Pulling  3m   kubelet  Pulling image \"registry.example.test/app:v1\"\n  Warning  Failed   3m   kubelet  {DNS}\n  Warning  Failed   3m   kubelet  Error: ErrImagePull\n  Normal   BackOff  2m   kubelet  Back-off pulling image \"registry.example.test/app:v1\"\n"
    );
    let out = pullpath(&["explain", "-o", "json"], describe.as_bytes());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["verdict"]["layer"], "dns");
    // A describe names its pod: the multi-finding report, one finding for pod `web`.
    assert_eq!(report["schema"], "pullpath.findings/v1");
    assert_eq!(report["findings"][0]["pod"]["name"], "web");
    let messages = &report["findings"][0]["report"]["messages"];
    assert_eq!(messages.as_array().map(Vec::len), Some(3));
}

#[test]
fn a_bare_back_off_is_undecided_and_lists_candidates() {
    let out = pullpath(
        &[
            "explain",
            "-o",
            "json",
            r#"Back-off pulling image "docker.io/team/app:v2""#,
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(3));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["verdict"]["decided"], false);
    assert!(
        report["verdict"]["candidates"]
            .as_array()
            .is_some_and(|c| c.len() >= 2)
    );
    assert!(
        report["verdict"]["decides"]
            .as_str()
            .is_some_and(|d| d.contains("Failed to pull image"))
    );
}

#[test]
fn pull_access_denied_names_both_meanings_and_what_decides() {
    let out = pullpath(
        &[
            "explain",
            "-o",
            "json",
            "Error response from daemon: pull access denied for team/app, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
        ],
        b"",
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let layers: Vec<&str> = report["verdict"]["candidates"]
        .as_array()
        .expect("candidates")
        .iter()
        .filter_map(|c| c["layer"].as_str())
        .collect();
    assert!(
        layers.contains(&"notfound") && layers.contains(&"forbidden"),
        "{layers:?}"
    );
    assert_eq!(report["verdict"]["decided"], false);
}

#[test]
fn empty_input_is_a_clear_usage_error() {
    let out = pullpath(&["explain"], b"  \n\n");
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no failure text given"));
}

#[test]
fn binary_input_is_read_as_text_without_panicking() {
    let noise: Vec<u8> = (0..65536u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let out = pullpath(&["explain"], &noise);
    assert!(
        matches!(out.status.code(), Some(3 | 10..=21)),
        "status {:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
}

#[test]
fn ten_megabytes_of_log_is_answered() {
    let mut log = String::new();
    while log.len() < 10 * 1024 * 1024 {
        log.push_str(
            "time=\"2026-01-01T00:00:00Z\" level=info msg=\"starting containerd\" revision=abc\n",
        );
    }
    log.push_str(DNS);
    let out = pullpath(&["explain", "-o", "json"], log.as_bytes());
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["verdict"]["layer"], "dns");
}

#[test]
fn malformed_json_is_read_as_text() {
    let out = pullpath(&["explain", "-o", "json"], br#"{"items": [ {"message": "Failed to pull image \"a\": rpc error: code = NotFound desc = not found""#);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["verdict"]["layer"], "notfound");
}

#[test]
fn one_huge_line_is_refused_not_held() {
    // 65 MiB of NUL bytes and no line end (a sparse file): read as a stream, the one line is
    // refused once it passes the line limit, with what to pass instead.
    let dir = std::env::temp_dir().join(format!("pullpath-big-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("big.log");
    let file = std::fs::File::create(&path).expect("file");
    file.set_len(65 * 1024 * 1024).expect("sparse file");
    let out = pullpath(&["explain", "-f", path.to_str().expect("utf-8 path")], b"");
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("line 1 is longer than 1 MiB"), "{stderr}");
}

#[test]
fn insufficient_scope_means_rights_except_on_docker_hub() {
    let verdict = |text: &str| {
        let out = pullpath(&["explain", "-o", "json", text], b"");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        report["verdict"]["layer"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let denied = "pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed";
    let private = format!(
        r#"Failed to pull image "registry.example.test/team-b/app:v1": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.test/team-b/app:v1": failed to resolve reference "registry.example.test/team-b/app:v1": {denied}"#
    );
    let hub = format!(
        r#"Failed to pull image "ngnix:latest": rpc error: code = Unknown desc = failed to pull and unpack image "docker.io/library/ngnix:latest": failed to resolve reference "docker.io/library/ngnix:latest": {denied}"#
    );
    assert_eq!(verdict(&private), "forbidden");
    assert_eq!(verdict(&hub), "notfound");
}

#[test]
fn bad_flags_and_references_are_usage_errors() {
    for args in [
        &["probe", "nginx", "--connect-timeout", "0s"][..],
        &["probe", "Bad Image"][..],
        &["probe", "nginx", "--platform", "linux"][..],
        &["explain", "-f", "/nonexistent/pullpath-input"][..],
    ] {
        let out = pullpath(args, b"");
        assert_eq!(
            out.status.code(),
            Some(64),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!out.stderr.is_empty(), "{args:?} says why");
    }
}
