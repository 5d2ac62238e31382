//! `pullpath probe` in the lab, run inside the node's (or the pod's) network namespace exactly
//! as an SRE would run it on the node, against every scenario of the catalog.

mod support;

use std::process::Command;

use serde_json::Value;
use support::{LabGuard, catalog, lab, password};

/// Run the probe inside a lab namespace and return its JSON report and exit status.
fn probe(lab: &LabGuard, ns: &str, image: &str, identity: &str, extra: &[&str]) -> (Value, i32) {
    let certs = lab.status.state.join("containerd/node/certs.d");
    let mut cmd = Command::new("ip");
    cmd.args([
        "netns",
        "exec",
        &lab.status.namespaces[ns],
        env!("CARGO_BIN_EXE_pullpath"),
        "probe",
        image,
        "-o",
        "json",
    ])
    .arg("--containerd-certs")
    .arg(&certs)
    // Its config.toml, not this machine's: how many layers it downloads at once.
    .arg("--containerd-config")
    .arg(lab.status.state.join("containerd/node/config.toml"))
    // The node's runtime is this containerd (the lab runs two): its environment is the proxy's
    // source, its drop-ins are in the lab's systemd directory.
    .arg("--runtime-pid")
    .arg(lab.runtime_pid("node").to_string())
    .arg("--systemd-dir")
    .arg(&lab.status.systemd)
    // Its version decides how hosts.toml is read, as on a node: asked over its CRI socket.
    .arg("--runtime-endpoint")
    .arg(lab.socket("node"))
    .args(["--connect-timeout", "2s", "--dns-timeout", "2s"])
    .args(extra);
    let secret = password(identity);
    if secret.is_some() {
        cmd.args(["--username", identity, "--password-stdin"]);
    }
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("probe runs");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        if let Some(secret) = secret {
            stdin.write_all(secret.as_bytes()).expect("password");
        }
    }
    let out = child.wait_with_output().expect("probe exits");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("probe JSON: {e}\nstderr: {stderr}"));
    support::assert_valid_report(&report);
    // No secret of the lab, and no token (JWTs start `eyJ`), in the report or on stderr.
    let stdout = String::from_utf8_lossy(&out.stdout);
    for secret in support::LAB_SECRETS.iter().chain(&["eyJ"]) {
        assert!(
            !stdout.contains(secret),
            "{secret:?} leaked into the report"
        );
        assert!(!stderr.contains(secret), "{secret:?} leaked into stderr");
    }
    (report, out.status.code().unwrap_or(-1))
}

fn check_scenario(name: &str) -> Value {
    let scenario = catalog().remove(name).expect("scenario");
    let lab = lab();
    lab.switch(name);
    let mut extra: Vec<String> = scenario.probe_args.clone();
    let identity = match &scenario.kubelet_source {
        // The kubelet's sources, from its files in the lab: no --username.
        Some(_) => {
            extra.extend(kubelet_flags(&lab));
            "kubelet"
        }
        None => scenario.identity.as_str(),
    };
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let (report, status) = probe(&lab, "node", &scenario.image, identity, &extra);
    if let Some(source) = &scenario.kubelet_source {
        names_the_kubelet_source(name, &report, source);
    }
    let v = &report["verdict"];
    let version = lab.status.containerd.clone();
    let want = scenario.expect_for(&version);
    assert_eq!(
        report["runtime"]["source"], "cri",
        "{name}: the probe asks the lab's containerd its version: {:#}",
        report["runtime"]
    );
    if want.outcome == "pulled" {
        assert_eq!(v["passed"], true, "{name}: {report:#}");
        assert_eq!(status, 0);
    } else {
        assert_eq!(v["passed"], false, "{name}: {report:#}");
        assert_eq!(
            v["layer"].as_str(),
            want.layer.as_deref(),
            "{name} layer: {v:#}"
        );
        assert_eq!(v["hop"].as_str(), want.hop.as_deref(), "{name} hop: {v:#}");
        assert_eq!(
            v["host"].as_str(),
            want.host.as_deref(),
            "{name} host: {v:#}"
        );
        if let Some(cause) = &want.cause {
            assert_eq!(
                v["mechanism"].as_str(),
                Some(cause.as_str()),
                "{name} mechanism: {v:#}"
            );
        }
        assert!(
            v["cause"].as_str().is_some_and(|c| !c.is_empty()),
            "{name}: a verdict names its evidence"
        );
        assert!(v["owner"].is_string(), "{name}: a verdict names its owner");
        assert!((10..=21).contains(&status), "{name}: exit status {status}");
        agrees_with_explain(name, &version, v);
    }
    report
}

/// The kubelet's flags pointing at the lab node's credential files.
fn kubelet_flags(lab: &LabGuard) -> Vec<String> {
    let dir = &lab.status.kubelet;
    let mut flags = vec![
        "--image-credential-provider-config".to_string(),
        dir.join("provider.yaml").display().to_string(),
        "--image-credential-provider-bin-dir".to_string(),
        dir.join("bin").display().to_string(),
        "--kubelet-root-dir".to_string(),
        dir.join("root").display().to_string(),
    ];
    let secret = dir.join("pull-secret.json");
    if secret.exists() {
        flags.extend(["--docker-config".to_string(), secret.display().to_string()]);
    }
    flags
}

/// The auth hop says which source answered, or why none matched.
fn names_the_kubelet_source(name: &str, report: &Value, want: &support::KubeletSource) {
    let credentials = &report["credentials"];
    let sources = credentials["sources"]
        .as_array()
        .expect("credential sources");
    let named = sources
        .iter()
        .find(|s| s["kind"] == want.kind.as_str())
        .unwrap_or_else(|| panic!("{name}: no {} source in {credentials:#}", want.kind));
    assert_eq!(
        named["outcome"],
        want.outcome.as_str(),
        "{name}: {credentials:#}"
    );
    let attempts = credentials["attempts"].as_array().expect("attempts");
    let used = &attempts[credentials["used"].as_u64().expect("used") as usize];
    match want.outcome.as_str() {
        // Its credential is the one the verdict comes from.
        "matched" => assert_eq!(
            used["source"],
            want.kind.as_str(),
            "{name}: {credentials:#}"
        ),
        // Nothing answered: the pull was anonymous, and the report says why this source did not.
        _ => {
            assert_eq!(used["source"], "anonymous", "{name}: {credentials:#}");
            assert!(
                named["detail"].as_str().is_some_and(|d| !d.is_empty()),
                "{name}: the report says why {} gave nothing: {named:#}",
                want.kind
            );
        }
    }
}

/// `explain` on containerd's own text of the scenario names the layer, hop and owner the probe
/// named in the lab (the owner unless the probe saw more than the text can say).
fn agrees_with_explain(name: &str, version: &str, probe: &Value) {
    let fixture = support::containerd_fixture(version, name);
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["explain", "-o", "json", "-f"])
        .arg(&fixture)
        .output()
        .expect("explain runs");
    let explained: Value = serde_json::from_slice(&out.stdout).expect("explain JSON");
    let e = &explained["verdict"];
    for field in ["layer", "hop", "mechanism"] {
        assert_eq!(
            e[field], probe[field],
            "{name}: explain and probe disagree on {field}\nexplain {e:#}\nprobe {probe:#}"
        );
    }
    // Only the probe sees DNS send the node to a public address behind a privatelink name.
    if name != "dns-public-answer" {
        assert_eq!(
            e["owner"], probe["owner"],
            "{name}: owner\nexplain {e:#}\nprobe {probe:#}"
        );
    }
}

macro_rules! scenarios {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            check_scenario($name);
        }
    )*};
}

scenarios! {
    probe_no_route => "no-route",
    probe_no_return_route => "no-return-route",
    probe_refused => "refused",
    probe_dns_private_zone_missing => "dns-private-zone-missing",
    probe_blob_host_dns_missing => "blob-host-dns-missing",
    probe_tls_unknown_ca => "tls-unknown-ca",
    probe_tls_wrong_name => "tls-wrong-name",
    probe_tls_expired => "tls-expired",
    probe_auth_no_credentials => "auth-no-credentials",
    probe_auth_wrong_scope => "auth-wrong-scope",
    probe_tag_missing => "tag-missing",
    probe_platform_missing => "platform-missing",
    probe_auth_host_unreachable => "auth-host-unreachable",
    probe_cached_image => "cached-image",
    probe_mirror_blob_host_fails => "mirror-blob-host-fails",
    probe_mirror_shared_blob_host_down => "mirror-shared-blob-host-down",
    probe_mirror_blob_missing => "mirror-blob-missing",
    probe_layer_corrupt => "layer-corrupt",
    probe_blob_redirect_relative => "blob-redirect-relative",
    probe_index_with_attestation => "index-with-attestation",
    probe_docker_schema2 => "docker-schema2",
    probe_registry_ipv6_only_no_route => "registry-ipv6-only-no-route",
    probe_proxy_unreachable => "proxy-unreachable",
    probe_proxy_refused => "proxy-refused",
    probe_proxy_auth_required => "proxy-auth-required",
    probe_proxy_denies_registry => "proxy-denies-registry",
    probe_no_proxy_registry_route_cut => "no-proxy-registry-route-cut",
    probe_hosts_server_only => "hosts-server-only",
    probe_hosts_http_with_ca => "hosts-http-with-ca",
    probe_cred_provider_matches => "cred-provider-matches",
    probe_cred_provider_port_mismatch => "cred-provider-port-mismatch",
    probe_cred_provider_fails => "cred-provider-fails",
    probe_cred_provider_stale => "cred-provider-stale",
    probe_cred_pull_secret_other_host => "cred-pull-secret-other-host",
    probe_cred_node_config_only => "cred-node-config-only",
}

/// A spent pull limit: the probe names the 429, the wait the registry asked for, and what
/// the node's containerd spends on it (six requests at once, tests/lab_podman.rs counts them).
#[test]
fn probe_rate_limited_names_the_wait_and_what_containerd_spends() {
    let report = check_scenario("rate-limited");
    let cause = report["verdict"]["cause"].as_str().expect("cause");
    assert!(
        cause.contains("TOOMANYREQUESTS")
            && cause.contains("Retry-After: 1")
            && cause.contains("six requests"),
        "{report:#}"
    );
}

/// Through the runtime's proxy only (the node has no route to any registry host): the path
/// shows the proxy and every host's CONNECT; the proxy's source is the running containerd.
#[test]
fn probe_proxy_healthy_goes_through_the_proxy() {
    let report = check_scenario("proxy-healthy");
    assert!(
        hosts_on(&report, "proxy").contains(&"10.10.9.2:3128".to_string()),
        "{report:#}"
    );
    let path = report["path"].to_string();
    assert!(path.contains("CONNECT"), "{report:#}");
    let proxy = report["proxy"].as_array().expect("proxy variables");
    assert!(
        proxy.iter().any(|v| v["name"] == "HTTPS_PROXY"
            && v["value"] == "http://10.10.9.2:3128"
            && v["source"].as_str().is_some_and(|s| s.contains("/environ"))),
        "{report:#}"
    );
}

/// NO_PROXY is decided per host: the registry direct, the blob host through the proxy.
#[test]
fn probe_no_proxy_sends_only_the_blob_host_through_the_proxy() {
    let report = check_scenario("no-proxy-blob-via-proxy");
    let tunneled: Vec<&str> = report["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .filter(|h| h["tunnel"].is_object())
        .filter_map(|h| h["host"].as_str())
        .collect();
    assert_eq!(tunneled, ["labstore.blob.example.test"], "{report:#}");
}

/// A proxy URL with credentials: the pull goes through, and the proxy's password appears
/// nowhere in the report.
#[test]
fn probe_proxy_auth_given_passes_and_never_shows_the_password() {
    let report = check_scenario("proxy-auth-given");
    let text = report.to_string();
    assert!(
        !text.contains("proxy-secret"),
        "the proxy password leaked: {report:#}"
    );
    assert!(
        text.contains("proxyuser"),
        "the proxy's user is shown: {report:#}"
    );
}

/// A TLS-inspecting proxy: the certificate inside the tunnel is the proxy's, and the verdict
/// names its issuer and says a proxy presented it.
#[test]
fn probe_proxy_inspecting_tls_names_the_proxys_ca() {
    let report = check_scenario("proxy-inspects-tls");
    let cause = report["verdict"]["cause"].as_str().unwrap_or("");
    assert!(
        cause.contains("mitmproxy") && cause.contains("proxy"),
        "{report:#}"
    );
}

/// An https:// proxy: TLS to the proxy (verified, its chain in the proxy's host check), then
/// CONNECT inside it, then TLS to each registry host inside the tunnel.
#[test]
fn probe_proxy_over_tls_verifies_the_proxy_too() {
    let report = check_scenario("proxy-over-tls");
    let proxy = report["hosts"]
        .as_array()
        .expect("hosts")
        .iter()
        .find(|h| h["hop"] == "proxy")
        .cloned()
        .unwrap_or_default();
    assert_eq!(proxy["host"], "proxy.example.test", "{report:#}");
    assert_eq!(proxy["tls"]["ok"], true, "{report:#}");
}

/// A proxy that never answers costs one connect timeout, not one per host of the pull.
#[test]
fn probe_proxy_silent_verdict_within_one_connect_timeout() {
    let report = check_scenario("proxy-silent");
    let elapsed = report["elapsed_ms"].as_u64().expect("elapsed");
    // --connect-timeout 2s in `probe`; nothing else in this scenario waits.
    assert!(elapsed < 2_000 + 1_500, "verdict after {elapsed} ms");
}

/// A drop-in the running containerd has not loaded: the probe follows the running process and
/// says so.
#[test]
fn probe_proxy_dropin_not_loaded_is_named() {
    let report = check_scenario("proxy-dropin-not-loaded");
    let warnings = report["warnings"].to_string();
    assert!(warnings.contains("restart containerd"), "{report:#}");
    assert!(
        report["proxy"].as_array().is_none_or(Vec::is_empty),
        "{report:#}"
    );
}

/// Over IPv6 only, and dual-stack with the IPv6 route missing: the probe connects as the
/// runtime's dialer does, and says which address it used.
#[test]
fn probe_connects_over_ipv6_and_falls_back_to_ipv4() {
    let report = check_scenario("registry-ipv6-only");
    assert_eq!(
        report["hosts"][0]["address"], "[fd00:10:2::2]:443",
        "{report:#}"
    );
    let report = check_scenario("registry-dual-stack-v6-route-missing");
    let registry = &report["hosts"][0];
    assert_eq!(registry["address"], "10.10.2.2:443", "{report:#}");
    assert!(
        registry["routes"].to_string().contains("fd00:10:2::2"),
        "both addresses were looked at: {report:#}"
    );
}

/// The hosts of the path under `hop`, in order, without repeats next to each other.
fn hosts_on(report: &Value, hop: &str) -> Vec<String> {
    let mut hosts: Vec<String> = Vec::new();
    for h in report["path"].as_array().expect("path") {
        let host = h["host"].as_str().unwrap_or("").to_string();
        if h["hop"] == hop && hosts.last() != Some(&host) {
            hosts.push(host);
        }
    }
    hosts
}

/// A front that 307s every API request: the path shows the front and the registry it sends
/// the pull to, and the pull passes as containerd's does.
#[test]
fn probe_front_redirects_api_shows_both_hosts() {
    let report = check_scenario("front-redirects-api");
    let api = hosts_on(&report, "registry");
    assert!(
        api.contains(&"front.example.test".to_string())
            && api.contains(&"registry.example.test".to_string()),
        "{api:?}"
    );
}

/// A blob redirect chain through two hosts is visible host by host; when the second host has
/// no route, the verdict names it.
#[test]
fn probe_blob_redirect_chain_names_every_host() {
    let report = check_scenario("blob-redirect-chain");
    let blob = hosts_on(&report, "blob");
    let relay = blob.iter().position(|h| h == "relay.example.test");
    let store = blob.iter().position(|h| h == "labstore.blob.example.test");
    assert!(
        matches!((relay, store), (Some(r), Some(s)) if r < s),
        "{blob:?}"
    );
    let broken = check_scenario("blob-redirect-chain-broken");
    let blob = hosts_on(&broken, "blob");
    assert!(blob.contains(&"relay.example.test".to_string()), "{blob:?}");
}

/// A redirect to http:// is followed, as the runtime does, and named as a warning.
#[test]
fn probe_blob_redirect_plain_http_passes_with_a_warning() {
    let report = check_scenario("blob-redirect-plain-http");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("clear-text http://labstore.blob.example.test"),
        "{report:#}"
    );
}

/// A mirror with only the `pull` capability is never asked for the tag's manifest; its blobs
/// are fetched from it first, as containerd does.
#[test]
fn probe_mirror_pull_only_resolves_at_the_registry_and_fetches_from_the_mirror() {
    let report = check_scenario("mirror-pull-only");
    let path = report["path"].as_array().expect("path");
    let asked_mirror_for_manifest = path.iter().any(|h| {
        h["host"] == "cache.example.test"
            && h["steps"].as_array().is_some_and(|s| {
                s.iter().any(|s| {
                    s["step"]
                        .as_str()
                        .is_some_and(|s| s.starts_with("manifest"))
                })
            })
    });
    assert!(!asked_mirror_for_manifest, "{report:#}");
    assert!(
        path.iter()
            .any(|h| h["host"] == "cache.example.test" && h["hop"] == "blob"),
        "the blobs are asked of the mirror first: {report:#}"
    );
}

/// Healthy, with --full: every blob downloaded and its digest verified, and the registry's
/// Authorization header never reached the blob host (nginx logs the header it got).
#[test]
fn probe_healthy_full_verifies_every_digest_and_keeps_credentials_home() {
    let access_log = {
        let lab = lab();
        lab.status.logs.join("blob-access.log")
    };
    let before = std::fs::read_to_string(&access_log)
        .unwrap_or_default()
        .lines()
        .count();
    let report = {
        let scenario = catalog().remove("healthy").expect("healthy");
        let lab = lab();
        lab.switch("healthy");
        let (report, status) = probe(
            &lab,
            "node",
            &scenario.image,
            &scenario.identity,
            &["--full"],
        );
        assert_eq!(status, 0, "{report:#}");
        let images: Value = serde_json::from_str(
            &std::fs::read_to_string(&lab.status.images).expect("images.json"),
        )
        .expect("JSON");
        let manifest = &images["images"]["team-a/small:v1"];
        let blobs = report["blobs"].as_array().expect("blobs");
        assert_eq!(blobs.len(), 4, "config and three layers: {report:#}");
        assert!(blobs.iter().all(|b| b["verified"] == true), "{report:#}");
        // The lab's containerd sets no max_concurrent_downloads: its default of 3, as it pulls.
        assert_eq!(report["downloads"]["at_once"], 3, "{report:#}");
        assert!(
            report["downloads"]["origin"]
                .as_str()
                .is_some_and(|o| o.starts_with("containerd's default")
                    && o.contains("containerd/node/config.toml")),
            "{report:#}"
        );
        assert!(
            blobs
                .iter()
                .all(|b| b["host"] == "labstore.blob.example.test"),
            "blobs come from the blob host"
        );
        assert!(
            report["path"]
                .to_string()
                .contains(manifest["digest"].as_str().expect("digest"))
        );
        report
    };
    let log = std::fs::read_to_string(&access_log).expect("nginx access log");
    let new: Vec<&str> = log
        .lines()
        .skip(before)
        .filter(|l| l.starts_with("10.10.1.2 "))
        .collect();
    assert!(
        new.len() >= 4,
        "the probe's blob requests are in nginx's log: {new:?}\n{report:#}"
    );
    for line in new {
        assert!(
            line.contains(r#"auth="-""#),
            "an Authorization header reached the blob host: {line}"
        );
    }
}

/// The VPN-sidecar illusion: from the pod's namespace the pull path works (and the probe says
/// it is a pod's view); from the node it fails at DNS.
#[test]
fn probe_dns_only_in_pod_passes_in_the_pod_and_fails_on_the_node() {
    let report = check_scenario("dns-only-in-pod");
    assert_eq!(report["view"], "node");
    let lab = lab();
    lab.switch("dns-only-in-pod");
    let scenario = catalog().remove("dns-only-in-pod").expect("scenario");
    let (pod, status) = probe(&lab, "pod", &scenario.image, &scenario.identity, &[]);
    assert_eq!(status, 0, "{pod:#}");
    assert_eq!(pod["view"], "pod");
    assert!(pod["warnings"].to_string().contains("pod"), "{pod:#}");
}

/// An /etc/hosts entry makes the pull work and is flagged as a hand fix, with what DNS says.
#[test]
fn probe_hosts_file_hand_fix_passes_and_flags_the_entry() {
    let report = check_scenario("hosts-file-hand-fix");
    let fixes = report["hand_fixes"].as_array().expect("hand_fixes");
    assert_eq!(fixes.len(), 1, "{report:#}");
    let fix = fixes[0].as_str().expect("text");
    assert!(
        fix.contains("/etc/hosts")
            && fix.contains("registry.example.test")
            && fix.contains("NXDOMAIN"),
        "{fix}"
    );
}

/// Manifest fetched, layers not: the path shows the registry's manifest step passing and the
/// blob host failing by name.
#[test]
fn probe_blob_host_unreachable_shows_manifest_ok_and_blob_host_failing() {
    let report = check_scenario("blob-host-unreachable");
    let path = report["path"].as_array().expect("path");
    let manifest_ok = path.iter().any(|h| {
        h["hop"] == "registry"
            && h["steps"].as_array().is_some_and(|s| {
                s.iter().any(|s| {
                    s["step"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("manifest"))
                        && s["ok"] == true
                })
            })
    });
    assert!(manifest_ok, "manifest step passed: {report:#}");
    let blob_failed = path.iter().any(|h| {
        h["hop"] == "blob"
            && h["host"]
                .as_str()
                .is_some_and(|x| x.starts_with("labstore.blob.example.test"))
            && h["steps"]
                .as_array()
                .is_some_and(|s| s.iter().any(|s| s["ok"] == false))
    });
    assert!(blob_failed, "blob host failed: {report:#}");
}

/// A dropped SYN costs one connect timeout, not one per retry or step.
#[test]
fn probe_timeout_verdict_within_one_connect_timeout() {
    let report = check_scenario("timeout");
    let elapsed = report["elapsed_ms"].as_u64().expect("elapsed");
    // --connect-timeout 2s in `probe`; everything else in this scenario answers at once.
    assert!(elapsed < 2_000 + 1_500, "verdict after {elapsed} ms");
    let attempts = report["hosts"][0]["connect"]
        .as_array()
        .expect("connect attempts");
    assert!(
        attempts.iter().all(|a| a["outcome"] == "timeout"),
        "{report:#}"
    );
}

/// The private zone is not linked: the name resolves through its privatelink CNAME to a public
/// address the node cannot route to. The first failing step is the route, but the evidence
/// points at DNS, and so does the owner.
#[test]
fn probe_dns_public_answer_blames_the_zone_link_not_the_network() {
    let report = check_scenario("dns-public-answer");
    assert_eq!(report["verdict"]["owner"], "dns-team", "{report:#}");
    let dns_step = report["path"][0]["steps"][0]["detail"]
        .as_str()
        .unwrap_or("");
    assert!(
        dns_step.contains("203.0.113.10 (public)") && dns_step.contains("privatelink"),
        "{dns_step}"
    );
    assert!(
        report["where_to_look"][0]
            .as_str()
            .is_some_and(|w| w.contains("private zone")),
        "{report:#}"
    );
}

/// A mirror in containerd's hosts.toml is walked first, as containerd does; when it fails the
/// probe falls back to the registry, passes, and says what the mirror costs every pull.
#[test]
fn probe_mirror_unreachable_falls_back_and_says_so() {
    let report = check_scenario("mirror-unreachable");
    let path = report["path"].as_array().expect("path");
    assert_eq!(
        path[0]["hop"], "mirror",
        "the mirror is walked first: {report:#}"
    );
    assert!(
        path[0]["host"]
            .as_str()
            .is_some_and(|h| h.starts_with("mirror.example.test"))
    );
    assert!(
        path.iter().any(|h| h["hop"] == "registry"),
        "then the registry: {report:#}"
    );
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("mirror mirror.example.test failed") && warnings.contains("NXDOMAIN"),
        "{warnings}"
    );
}

/// An index is resolved to the manifest of the platform asked for (`--platform`), and a
/// reference by digest is fetched and checked by that digest.
#[test]
fn probe_selects_the_platform_from_an_index_and_pulls_by_digest() {
    let lab = lab();
    lab.switch("healthy");
    let images: Value =
        serde_json::from_str(&std::fs::read_to_string(&lab.status.images).expect("images.json"))
            .expect("JSON");
    let index_digest = images["images"]["team-a/multi:v1"]["digest"]
        .as_str()
        .expect("digest")
        .to_string();
    let index_file = lab
        .status
        .state
        .join("blobs")
        .join(index_digest.replace(':', "-"));
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(index_file).expect("index blob"))
            .expect("JSON");
    let arm64 = index["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .find(|m| m["platform"]["architecture"] == "arm64")
        .and_then(|m| m["digest"].as_str())
        .expect("arm64 entry")
        .to_string();

    let (report, status) = probe(
        &lab,
        "node",
        "registry.example.test/team-a/multi:v1",
        "alice",
        &["--platform", "linux/arm64"],
    );
    assert_eq!(status, 0, "{report:#}");
    assert_eq!(report["platform"], "linux/arm64");
    assert!(
        report["path"]
            .to_string()
            .contains(&format!("linux/arm64 → {arm64}")),
        "{report:#}"
    );

    let small = images["images"]["team-a/small:v1"]["digest"]
        .as_str()
        .expect("digest");
    let (report, status) = probe(
        &lab,
        "node",
        &format!("registry.example.test/team-a/small@{small}"),
        "alice",
        &[],
    );
    assert_eq!(status, 0, "{report:#}");
    assert!(
        report["path"]
            .to_string()
            .contains(&format!("manifest {small}")),
        "{report:#}"
    );
}

/// `--runtime-pull`: the node's containerd answers over CRI beside the probe, agrees with it
/// (a pull that passes, a pull that fails at the blob host), and its image store is left as
/// the probe found it.
#[test]
fn probe_runtime_pull_agrees_with_containerd_and_leaves_its_store_as_found() {
    let lab = lab();
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    let held = || {
        rt.block_on(async {
            let mut runtime = pullpath::runtime::cri::ImageService::connect(
                lab.socket("node"),
                std::time::Duration::from_secs(10),
            )
            .await
            .expect("containerd answers CRI");
            runtime
                .cached("registry.example.test/team-a/small:v1")
                .await
                .expect("ImageStatus")
        })
    };
    for (scenario, pulled) in [("healthy", true), ("blob-host-unreachable", false)] {
        lab.switch(scenario);
        assert!(held().is_none(), "{scenario}: the fresh node holds nothing");
        let (report, _) = probe(
            &lab,
            "node",
            "registry.example.test/team-a/small:v1",
            "alice",
            &["--runtime-pull"],
        );
        let pull = &report["runtime_pull"];
        assert_eq!(pull["agrees"], true, "{scenario}: {pull:#}");
        assert_eq!(
            report["verdict"]["passed"], pulled,
            "{scenario}: {report:#}"
        );
        assert_eq!(
            pull["outcome"],
            if pulled { "pulled" } else { "failed" },
            "{scenario}: {pull:#}"
        );
        if pulled {
            assert_eq!(pull["cleanup"], "removed", "{pull:#}");
        } else {
            assert!(
                pull["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("labstore.blob.example.test")),
                "{pull:#}"
            );
        }
        assert!(
            held().is_none(),
            "{scenario}: the probe left the image on the node"
        );
    }
}

/// A registry written without its repository (`registry.example.test`, no `/`): containerd
/// reads the name as Docker Hub's `library/registry.example.test` and fails on Docker Hub (the
/// lab's resolver has no answer for it); the probe walks to the same host and fails the same
/// way, and the probe and explain (on containerd's own message) both say the name lacks its
/// repository and that the name's owner fixes it.
#[test]
fn probe_registry_without_repository_goes_to_docker_hub_as_containerd_does() {
    let lab = lab();
    lab.switch("healthy");
    let image = "registry.example.test";
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let outcome = runtime.block_on(async {
        let mut node = pullpath::runtime::cri::ImageService::connect(
            lab.socket("node"),
            std::time::Duration::from_secs(150),
        )
        .await
        .expect("node containerd answers CRI");
        node.pull(image, None).await.expect("PullImage answers")
    });
    let event = outcome
        .kubelet_event(image)
        .unwrap_or_else(|| panic!("containerd pulled {image}: {outcome:?}"));
    assert!(
        event.contains("docker.io/library/registry.example.test:latest")
            && event.contains("registry-1.docker.io"),
        "containerd reads the name as Docker Hub's: {event}"
    );

    let (report, status) = probe(&lab, "node", image, "anonymous", &[]);
    let v = &report["verdict"];
    assert_ne!(status, 0, "{report:#}");
    assert_eq!(v["layer"], "dns", "{report:#}");
    assert_eq!(v["host"], "registry-1.docker.io", "{report:#}");
    let says_so = |r: &Value| {
        r["where_to_look"][0]
            .as_str()
            .is_some_and(|w| w.contains("`docker.io/library/registry.example.test`"))
            && r["verdict"]["owner"] == "application-team"
    };
    assert!(says_so(&report), "{report:#}");

    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["explain", "-o", "json", &event])
        .output()
        .expect("explain runs");
    let explained: Value = serde_json::from_slice(&out.stdout).expect("explain JSON");
    assert_eq!(explained["verdict"]["layer"], "dns", "{explained:#}");
    assert!(says_so(&explained), "{explained:#}");
}

/// A Distribution serving the lab registry's storage in plain HTTP on `addr` (127.0.0.1:PORT)
/// inside the node's namespace, anonymous, as a registry a node runs for itself (a local
/// cache, kind's): killed when dropped.
struct LocalRegistry(std::process::Child);

impl LocalRegistry {
    fn start(lab: &LabGuard, dir: &std::path::Path, addr: &str) -> LocalRegistry {
        use std::io::BufRead;
        let config = dir.join(format!("local-registry-{addr}.yml"));
        std::fs::write(
            &config,
            format!(
                "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {}\n  cache:\n    blobdescriptor: inmemory\nhttp:\n  addr: \"{addr}\"\n",
                lab.status.state.join("registry-data").display()
            ),
        )
        .expect("registry config");
        let mut child = Command::new("ip")
            .args(["netns", "exec", &lab.status.namespaces["node"]])
            .arg("docker-registry")
            .arg("serve")
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("docker-registry runs");
        // Ready when it says it listens (Distribution logs `listening on ADDR`).
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = std::io::BufReader::new(stderr).lines();
        let listening = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|line| line.contains(&format!("listening on {addr}")));
        assert!(listening, "the local registry did not start");
        // Keep draining its log so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        LocalRegistry(child)
    }
}

impl Drop for LocalRegistry {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The probe in the node's namespace with no runtime to ask (nor any of the node's files).
fn probe_without_runtime(lab: &LabGuard, dir: &std::path::Path, image: &str) -> Value {
    let mut alone = Command::new("ip");
    alone
        .args(["netns", "exec", &lab.status.namespaces["node"]])
        .arg(env!("CARGO_BIN_EXE_pullpath"))
        .args(["probe", image, "-o", "json", "--connect-timeout", "2s"]);
    support::probe_isolated_in(&mut alone, dir);
    let out = alone.output().expect("probe runs");
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)))
}

/// A localhost registry on another port than 80 or 443, plain HTTP, no hosts.toml: every
/// containerd line pulls from it (1.6 speaks plain HTTP to any localhost registry; 1.7.24 and
/// 2.x try HTTPS without verification first and fall back to plain HTTP on the server's HTTP
/// answer, `docker.NewHTTPFallback`), which this test confirms through CRI on each line CI
/// runs. The probe agrees, with the runtime asked and without one (the lines agree, so no
/// version is needed), and says containerd retries the same host in plain HTTP.
#[test]
fn probe_localhost_plain_http_registry_pulls_on_every_line_as_containerd_does() {
    let lab = lab();
    lab.switch("healthy");
    let scratch = support::scratch::Scratch::under(&lab.status.state, "lab-local-registry");
    let _registry = LocalRegistry::start(&lab, scratch.path(), "127.0.0.1:5000");
    let image = "127.0.0.1:5000/public/small:v1";
    let (report, _) = probe(&lab, "node", image, "anonymous", &["--runtime-pull"]);
    let pull = &report["runtime_pull"];
    assert_eq!(pull["outcome"], "pulled", "{report:#}");
    assert_eq!(pull["agrees"], true, "{report:#}");
    assert_eq!(report["verdict"]["passed"], true, "{report:#}");
    let warnings = report["warnings"].to_string();
    if report["runtime"]["rules"] != "1.6" {
        assert!(
            warnings.contains("retries the same host in plain HTTP"),
            "{warnings}"
        );
    }
    // No runtime to ask: the lines agree on this registry, so the verdict stands.
    let report = probe_without_runtime(&lab, scratch.path(), image);
    assert_eq!(report["runtime"]["source"], "assumed", "{report:#}");
    assert_eq!(report["verdict"]["passed"], true, "{report:#}");
}

/// A localhost registry named without a port, plain HTTP on port 80: here containerd's lines
/// differ (1.6 speaks plain HTTP to port 80 and pulls; 1.7.24 and 2.x speak HTTPS only, to
/// 443, where nothing listens). With the runtime asked, the probe follows its line and agrees
/// with its pull; without one, the assumed line's failure is undecided and names what decides.
#[test]
fn probe_localhost_registry_without_port_follows_the_line_and_is_undecided_without_one() {
    let lab = lab();
    lab.switch("healthy");
    let scratch = support::scratch::Scratch::under(&lab.status.state, "lab-local-registry-80");
    let _registry = LocalRegistry::start(&lab, scratch.path(), "127.0.0.1:80");
    let image = "127.0.0.1/public/small:v1";
    let (report, _) = probe(&lab, "node", image, "anonymous", &["--runtime-pull"]);
    let pull = &report["runtime_pull"];
    assert_eq!(pull["agrees"], true, "{report:#}");
    let old_line = report["runtime"]["rules"] == "1.6";
    assert_eq!(report["verdict"]["passed"], old_line, "{report:#}");
    assert_eq!(
        pull["outcome"],
        if old_line { "pulled" } else { "failed" },
        "{report:#}"
    );
    let report = probe_without_runtime(&lab, scratch.path(), image);
    let verdict = &report["verdict"];
    assert_eq!(verdict["passed"], false, "{report:#}");
    assert_eq!(verdict["decided"], false, "{report:#}");
    assert!(
        verdict["decides"]
            .as_str()
            .is_some_and(|d| d.contains("--containerd-version")),
        "{report:#}"
    );
}
