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

/// The issue's AKS message: the registry refused the node's public address. The registry
/// answered, so the layer stays `forbidden`; but no identity is at fault, DNS very likely is, and
/// the platform's own tools come next.
#[test]
fn an_acr_firewall_refusal_is_the_network_s_with_the_address_explained() {
    let message = r#"Failed to pull image "contoso.azurecr.io/web:1": rpc error: code = Unknown desc = failed to pull and unpack image "contoso.azurecr.io/web:1": failed to resolve reference "contoso.azurecr.io/web:1": unexpected status from HEAD request to https://contoso.azurecr.io/v2/web/manifests/1: 403 Forbidden: denied: client with IP '52.174.10.20' is not allowed access. Refer https://aka.ms/acr/firewall to grant access"#;
    let out = pullpath(&["explain", message], b"");
    let text = stdout(&out);
    assert!(
        text.starts_with("✗ forbidden · hop registry · contoso.azurecr.io"),
        "{text}"
    );
    assert!(text.contains("owner       DNS team"), "{text}");
    assert!(text.contains("public address 52.174.10.20"), "{text}");
    assert!(text.contains("privatelink.azurecr.io"), "{text}");
    let wont =
        &text[text.find("won't help").expect("won't help")..text.find("next ").expect("next")];
    assert!(!wont.contains("DNS"), "DNS is the likely fix: {wont}");
    assert!(wont.contains("AcrPull"), "{wont}");
    for step in [
        "az aks check-acr --name CLUSTER --resource-group RG --acr contoso.azurecr.io",
        "az acr check-health --name contoso --vnet VNET",
        "az network private-dns link vnet list --resource-group RG --zone-name privatelink.azurecr.io",
    ] {
        assert!(text.contains(step), "{step}\n{text}");
    }
}

#[test]
fn a_private_address_refused_is_the_network_teams() {
    let message = r#"failed to copy: httpReadSeeker: failed open: unexpected status code https://contoso.westeurope.data.azurecr.io/v2/web/blobs/sha256:abc: 403 Forbidden: denied: client with IP '10.224.0.5' is not allowed access"#;
    let out = pullpath(&["explain", "-o", "json", message], b"");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    let v = &report["verdict"];
    assert_eq!(
        (
            v["layer"].as_str(),
            v["mechanism"].as_str(),
            v["owner"].as_str()
        ),
        (Some("blob"), Some("forbidden"), Some("network-team"))
    );
    assert!(
        report["where_to_look"][0]
            .as_str()
            .is_some_and(|w| w.contains("private address 10.224.0.5")),
        "{report}"
    );
}

/// The node's own failures: each its cause, owner, place to look and what will not help.
#[test]
fn the_nodes_own_failures_have_their_own_answers() {
    let cases: [(&str, &str, &str, &str, &str); 5] = [
        (
            r#"Container image "registry.example.test/app:v1" is not present with pull policy of Never"#,
            "pull-policy",
            "application-team",
            "imagePullPolicy: Never",
            "DNS, route, firewall or proxy changes",
        ),
        (
            r#"Failed to pull image "registry.example.test/big:1": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.test/big:1": failed to extract layer sha256:abc: write /var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/55/fs/usr/lib/x.so: no space left on device: unknown"#,
            "disk",
            "node-operator",
            "df -h /var/lib/containerd",
            "pulling again",
        ),
        (
            r#"Failed to pull image "registry.example.test/big:1": rpc error: code = Unknown desc = failed to pull and unpack image "registry.example.test/big:1": failed to copy: context canceled"#,
            "slow-transfer",
            "node-operator",
            "image_pull_progress_timeout",
            "DNS changes or new routes",
        ),
        (
            r#"Failed to pull image "registry.example.test/app:v1": pull QPS exceeded"#,
            "pull-qps",
            "node-operator",
            "registryPullQPS",
            "no request reached any registry",
        ),
        (
            r#"Failed to apply default image tag "registry.example.test/App:v1": couldn't parse image name "registry.example.test/App:v1": invalid reference format: repository name (App) must be lowercase"#,
            "invalid-name",
            "application-team",
            "lowercase repository",
            "imagePullSecrets",
        ),
    ];
    for (message, cause, owner, look, wont) in cases {
        let out = pullpath(&["explain", "-o", "json", message], b"");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
        assert_eq!(report["node_cause"], cause, "{message}");
        assert_eq!(report["verdict"]["owner"], owner, "{message}");
        let joined = |key: &str| report[key].to_string();
        assert!(joined("where_to_look").contains(look), "{cause}: {report}");
        assert!(joined("will_not_help").contains(wont), "{cause}: {report}");
        assert!(
            !joined("where_to_look").contains("5xx"),
            "{cause}: {report}"
        );
    }
}

/// A bare deadline: the text cannot tell a slow body from a hanging dial, so it says so and
/// what decides.
#[test]
fn a_bare_deadline_is_undecided_between_a_slow_transfer_and_the_route() {
    let message = r#"Failed to pull image "registry.example.test/big:1": rpc error: code = DeadlineExceeded desc = context deadline exceeded"#;
    let out = pullpath(&["explain", message], b"");
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(text.contains("· undecided"), "{text}");
    assert!(text.contains("- route: "), "{text}");
    assert!(text.contains("because of no progress"), "{text}");
}

/// The pod and namespace a pasted `describe` names fill the commands; the registry's platform
/// adds its own.
#[test]
fn next_steps_name_the_pod_and_the_platforms_tools() {
    let describe = r#"Name:             web-7d4b9c-x2x9p
Namespace:        shop
Node:             aks-nodepool1-123-vmss000002/10.224.0.5
Containers:
  web:
    Image:          123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/web:1
    State:          Waiting
      Reason:       ImagePullBackOff
Events:
  Type     Reason     Age   From     Message
  ----     ------     ----  ----     -------
  Warning  Failed     1m    kubelet  Failed to pull image "123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/web:1": rpc error: code = Unknown desc = failed to pull and unpack image "123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/web:1": failed to resolve reference "123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/web:1": failed to do request: Head "https://123456789012.dkr.ecr.eu-west-1.amazonaws.com/v2/team/web/manifests/1": dial tcp 10.0.3.7:443: i/o timeout
"#;
    let out = pullpath(&["explain", "-f", "-"], describe.as_bytes());
    let text = stdout(&out);
    assert!(
        text.contains("kubectl get pod -n shop web-7d4b9c-x2x9p -o wide"),
        "{text}"
    );
    assert!(!text.contains(" POD "), "{text}");
    assert!(text.contains("com.amazonaws.eu-west-1.ecr.dkr"), "{text}");
    assert!(text.contains("com.amazonaws.eu-west-1.s3"), "{text}");
}
