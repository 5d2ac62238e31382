//! The lab proves itself: containerd, the real runtime, pulls in every scenario through CRI
//! (as the kubelet does) and its outcome must match what the scenario declares. If one of
//! these fails, the lab is wrong, not pullpath.
//!
//! Each scenario's message is kept in `tests/fixtures/containerd/<scenario>.txt` for the
//! `explain` tests; this test fails when the runtime's text drifts from the kept copy
//! (`PULLPATH_RECORD=1` rewrites them).

mod support;

use std::time::Duration;

use pullpath::credentials::Credentials;
use pullpath::runtime::cri::{ImageService, PullOutcome};
use support::{catalog, lab, login, mask_code, normalise, repo};

/// containerd's own dial timeout is 30 s and it may retry once; the CRI call gets room for both.
const PULL_DEADLINE: Duration = Duration::from_secs(150);

/// What the kubelet passes over CRI for the scenario's identity.
fn credentials(identity: &str) -> Option<Credentials> {
    login(identity).map(|(username, password)| Credentials {
        username: username.to_string(),
        password: password.to_string(),
    })
}

async fn ground_truth(name: &str) {
    let scenario = catalog().remove(name).expect("scenario in the catalog");
    let lab = lab();
    lab.switch(name);
    let containerd_log = lab.status.logs.join("containerd-node.log");
    let log_before = std::fs::metadata(&containerd_log).map_or(0, |m| m.len() as usize);
    let mirror_log = lab.status.logs.join("mirror.log");
    let mirror_before = std::fs::metadata(&mirror_log).map_or(0, |m| m.len() as usize);

    let mut node = ImageService::connect(lab.socket("node"), PULL_DEADLINE)
        .await
        .expect("node containerd answers CRI");
    let outcome = node
        .pull(&scenario.image, credentials(&scenario.identity).as_ref())
        .await
        .expect("PullImage returns an outcome");

    let version = lab.status.containerd.as_str();
    let fixture = support::containerd_fixture(version, name);
    let expect = scenario.expect_for(version);
    match (&outcome, expect.outcome.as_str()) {
        (PullOutcome::Pulled { image_ref }, "pulled") => {
            assert!(image_ref.starts_with("sha256:"), "image ref {image_ref}");
        }
        (PullOutcome::Failed { message, .. }, "failed") => {
            let fragment = expect
                .runtime
                .as_deref()
                .expect("failed scenarios name a runtime fragment");
            assert!(
                message.contains(fragment),
                "scenario {name}: containerd's error does not show the declared fault {fragment:?}:\n{message}"
            );
            let event = outcome
                .kubelet_event(&scenario.image)
                .expect("a failure has an event");
            let live = normalise(&event);
            if std::env::var_os("PULLPATH_RECORD").is_some() {
                std::fs::create_dir_all(fixture.parent().expect("fixture dir"))
                    .expect("fixture dir");
                std::fs::write(&fixture, format!("{live}\n")).expect("record fixture");
            }
            let kept = std::fs::read_to_string(&fixture).unwrap_or_default();
            // containerd reports the same dial timeout as Unknown or DeadlineExceeded,
            // depending on which deadline fired first: the code is not part of the comparison.
            assert_eq!(
                mask_code(kept.trim_end()),
                mask_code(&live),
                "containerd's message for {name} differs from {}; rerun with PULLPATH_RECORD=1 if the lab changed on purpose",
                fixture.display()
            );
        }
        (outcome, expected) => {
            panic!("scenario {name}: expected {expected}, containerd said {outcome:?}")
        }
    }

    if let Some(mirror) = &scenario.mirror_fallback {
        // containerd pulled, and its log shows it tried the mirror first and moved on.
        let log = std::fs::read(&containerd_log).expect("containerd log");
        let log = String::from_utf8_lossy(&log[log_before.min(log.len())..]);
        let tried = format!("https://{mirror}/v2/");
        assert!(
            log.lines()
                .any(|l| l.contains("trying next host") && l.contains(&tried)),
            "containerd did not try the mirror {mirror} first"
        );
    }
    if !scenario.mirror_log_has.is_empty() || !scenario.mirror_log_lacks.is_empty() {
        // What containerd asked the mirror, from the mirror's own request log.
        let log = std::fs::read(&mirror_log).expect("mirror log");
        let log = String::from_utf8_lossy(&log[mirror_before.min(log.len())..]);
        let requests: Vec<&str> = log.lines().filter(|l| l.contains("10.10.1.2")).collect();
        for fragment in &scenario.mirror_log_has {
            assert!(
                requests.iter().any(|l| l.contains(fragment.as_str())),
                "scenario {name}: containerd did not ask the mirror for {fragment:?}:\n{}",
                requests.join("\n")
            );
        }
        for fragment in &scenario.mirror_log_lacks {
            assert!(
                !requests.iter().any(|l| l.contains(fragment.as_str())),
                "scenario {name}: containerd asked the mirror for {fragment:?}"
            );
        }
    }
    if scenario.pod_reaches_registry {
        pod_reaches_registry(&lab);
    }
    if let Some(cached_on) = &scenario.cached_on {
        let mut old = ImageService::connect(lab.socket(cached_on), PULL_DEADLINE)
            .await
            .expect("old node containerd answers CRI");
        let cached = old
            .cached(&scenario.image)
            .await
            .expect("ImageStatus answers");
        assert!(
            cached.is_some(),
            "{cached_on} should hold {} from its earlier pull",
            scenario.image
        );
        let fresh = node
            .cached(&scenario.image)
            .await
            .expect("ImageStatus answers");
        assert!(fresh.is_none(), "the fresh node must not hold the image");
    }
}

/// The VPN-sidecar illusion: from the pod's namespace, with the cluster resolver, the registry
/// resolves and answers, while the node cannot resolve it.
fn pod_reaches_registry(lab: &support::LabGuard) {
    let ca = lab.status.ca.to_string_lossy().into_owned();
    let out = lab.in_ns(
        "pod",
        &[
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--max-time",
            "10",
            "--cacert",
            &ca,
            "https://registry.example.test/v2/",
        ],
    );
    let code = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        code,
        "401",
        "the pod reaches the registry's /v2/ (challenge): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let node = lab.in_ns("node", &["getent", "hosts", "registry.example.test"]);
    assert!(
        !node.status.success(),
        "the node must not resolve the registry in this scenario"
    );
}

macro_rules! scenarios {
    ($($test:ident => $name:literal),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                ground_truth($name).await;
            }
        )*

        /// Every scenario of the catalog has a test above, and no test names a missing one.
        #[test]
        fn every_catalog_scenario_is_tested() {
            let tested: std::collections::BTreeSet<&str> = [$($name),*].into_iter().collect();
            let catalog: std::collections::BTreeSet<String> = catalog().into_keys().collect();
            let catalog: std::collections::BTreeSet<&str> = catalog.iter().map(String::as_str).collect();
            assert_eq!(tested, catalog);
        }
    };
}

scenarios! {
    containerd_healthy => "healthy",
    containerd_no_route => "no-route",
    containerd_no_return_route => "no-return-route",
    containerd_timeout => "timeout",
    containerd_refused => "refused",
    containerd_dns_private_zone_missing => "dns-private-zone-missing",
    containerd_dns_only_in_pod => "dns-only-in-pod",
    containerd_dns_public_answer => "dns-public-answer",
    containerd_blob_host_unreachable => "blob-host-unreachable",
    containerd_blob_host_dns_missing => "blob-host-dns-missing",
    containerd_tls_unknown_ca => "tls-unknown-ca",
    containerd_tls_wrong_name => "tls-wrong-name",
    containerd_tls_expired => "tls-expired",
    containerd_auth_no_credentials => "auth-no-credentials",
    containerd_auth_wrong_scope => "auth-wrong-scope",
    containerd_tag_missing => "tag-missing",
    containerd_rate_limited => "rate-limited",
    containerd_platform_missing => "platform-missing",
    containerd_auth_host_unreachable => "auth-host-unreachable",
    containerd_hosts_file_hand_fix => "hosts-file-hand-fix",
    containerd_cached_image => "cached-image",
    containerd_mirror_unreachable => "mirror-unreachable",
    containerd_mirror_blob_host_fails => "mirror-blob-host-fails",
    containerd_mirror_shared_blob_host_down => "mirror-shared-blob-host-down",
    containerd_mirror_pull_only => "mirror-pull-only",
    containerd_mirror_blob_missing => "mirror-blob-missing",
    containerd_layer_corrupt => "layer-corrupt",
    containerd_front_redirects_api => "front-redirects-api",
    containerd_blob_redirect_chain => "blob-redirect-chain",
    containerd_blob_redirect_chain_broken => "blob-redirect-chain-broken",
    containerd_blob_redirect_relative => "blob-redirect-relative",
    containerd_blob_redirect_plain_http => "blob-redirect-plain-http",
    containerd_index_with_attestation => "index-with-attestation",
    containerd_docker_schema2 => "docker-schema2",
    containerd_registry_ipv6_only => "registry-ipv6-only",
    containerd_registry_ipv6_only_no_route => "registry-ipv6-only-no-route",
    containerd_registry_dual_stack_v6_route_missing => "registry-dual-stack-v6-route-missing",
    containerd_proxy_healthy => "proxy-healthy",
    containerd_proxy_unreachable => "proxy-unreachable",
    containerd_proxy_refused => "proxy-refused",
    containerd_proxy_auth_required => "proxy-auth-required",
    containerd_proxy_auth_given => "proxy-auth-given",
    containerd_proxy_inspects_tls => "proxy-inspects-tls",
    containerd_proxy_over_tls => "proxy-over-tls",
    containerd_proxy_silent => "proxy-silent",
    containerd_proxy_denies_registry => "proxy-denies-registry",
    containerd_no_proxy_blob_via_proxy => "no-proxy-blob-via-proxy",
    containerd_no_proxy_registry_route_cut => "no-proxy-registry-route-cut",
    containerd_proxy_dropin_not_loaded => "proxy-dropin-not-loaded",
    containerd_hosts_server_only => "hosts-server-only",
    containerd_hosts_http_with_ca => "hosts-http-with-ca",
    containerd_cred_provider_matches => "cred-provider-matches",
    containerd_cred_provider_port_mismatch => "cred-provider-port-mismatch",
    containerd_cred_provider_fails => "cred-provider-fails",
    containerd_cred_provider_stale => "cred-provider-stale",
    containerd_cred_pull_secret_other_host => "cred-pull-secret-other-host",
    containerd_cred_node_config_only => "cred-node-config-only",
    containerd_fleet_pools => "fleet-pools",
    containerd_fleet_ca => "fleet-ca",
    containerd_fresh_node => "fresh-node",
}

/// No lab namespace has a route out, and every link of the lab ends in another lab namespace:
/// a route lookup for outside addresses fails in each of them (nothing is sent).
/// The bridge of a lab node's pod network (lab/lab.py `write_cni_conf`).
const POD_BRIDGE: &str = "lab-pods0";

#[test]
fn lab_has_no_route_out() {
    let lab = lab();
    let names: Vec<&String> = lab.status.namespaces.values().collect();
    // The nodes laid out as node images are lab namespaces like the others, checked below.
    for node in ["pp-al2023", "pp-k3s"] {
        assert!(names.iter().any(|n| *n == node), "{node} is not checked");
    }
    for ns in &names {
        for outside in [
            "8.8.8.8",
            "1.1.1.1",
            "192.168.0.1",
            "172.16.0.1",
            "10.0.0.1",
            "203.0.113.10",
            "2001:db8::1",
            "2606:4700:4700::1111",
            "fd00:99::1",
        ] {
            let out = std::process::Command::new("ip")
                .args(["-n", ns, "route", "get", outside])
                .output()
                .expect("ip route get");
            assert!(
                !out.status.success(),
                "{ns} has a route to {outside}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        let links = std::process::Command::new("ip")
            .args(["-n", ns, "-o", "link"])
            .output()
            .expect("ip link");
        for line in String::from_utf8_lossy(&links.stdout).lines() {
            if line.contains("link/loopback") {
                continue;
            }
            let peer = line
                .split("link-netns ")
                .nth(1)
                .map(|rest| rest.split_whitespace().next().unwrap_or(""));
            // The node's pod network (lab.py's CNI bridge): the bridge itself, and the veths of
            // pods on it, whose other ends are in pod namespaces the node's containerd made,
            // which have no route out either.
            let name = line.split(": ").nth(1).unwrap_or("");
            if name == POD_BRIDGE {
                let detail = std::process::Command::new("ip")
                    .args(["-n", ns, "-d", "link", "show", POD_BRIDGE])
                    .output()
                    .expect("ip link show");
                assert!(
                    String::from_utf8_lossy(&detail.stdout).contains("bridge"),
                    "{ns}: {POD_BRIDGE} is not a bridge: {line}"
                );
                continue;
            }
            if line.contains(&format!("master {POD_BRIDGE} "))
                && let Some(pod) = peer.filter(|p| p.starts_with("cni-"))
            {
                for outside in ["8.8.8.8", "10.0.0.1", "2001:db8::1"] {
                    let out = std::process::Command::new("ip")
                        .args(["-n", pod, "route", "get", outside])
                        .output()
                        .expect("ip route get");
                    assert!(
                        !out.status.success(),
                        "pod namespace {pod} on {ns} has a route to {outside}"
                    );
                }
                continue;
            }
            assert!(
                peer.is_some_and(|peer| names.iter().any(|n| n.as_str() == peer)),
                "{ns} has a link that does not end in a lab namespace: {line}"
            );
        }
    }
}

/// When a server of the lab dies during setup, the error names the step, the server, its
/// namespace, and shows the server's own log.
#[test]
fn a_setup_failure_names_the_step_the_server_and_its_log() {
    let _lab = lab();
    let out = std::process::Command::new("python3")
        .arg(repo().join("lab/lab.py"))
        .arg("demo-setup-failure")
        .output()
        .expect("lab.py runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("step 'doomed server' failed"), "{err}");
    assert!(err.contains("doomed in pp-router exited"), "{err}");
    assert!(
        err.contains("cannot bind 10.10.9.9:443"),
        "the server's log is shown: {err}"
    );
}
