//! The lab's second runtime: podman (containers/image, the library CRI-O pulls with) pulls in
//! every scenario it can share with containerd, from the node's namespace, and its outcome must
//! match the catalog's. Its messages are kept in `tests/fixtures/podman/<scenario>.txt` for the
//! `explain` tests (`PULLPATH_RECORD=1` rewrites them).
//!
//! Scenarios made of containerd's own configuration (hosts.toml mirrors and variants, the
//! kubelet's credential files, a systemd drop-in, an image cached on another node) are
//! containerd's alone. The three whose fault is a silent drop take podman four 30 s dial
//! timeouts (it retries network errors three times), so they run only with PULLPATH_LAB_SLOW=1;
//! their kept messages are still read by the explain tests.

mod support;

use support::{Scenario, catalog, lab, login, normalise, repo};

/// Faults that configure containerd, which podman does not read.
const CONTAINERD_ONLY: [&str; 6] = [
    "node-mirror",
    "cache-",
    "hosts-toml",
    "kubelet-creds",
    "dropin-proxy",
    "runtime-proxy-with-credentials",
];

fn shared_with_podman(scenario: &Scenario) -> bool {
    scenario.cached_on.is_none()
        && scenario.mirror_fallback.is_none()
        && !scenario
            .faults
            .iter()
            .any(|f| CONTAINERD_ONLY.iter().any(|c| f.starts_with(c)))
}

/// A silent drop on the way there or back: podman waits out four dial timeouts.
fn slow(scenario: &Scenario) -> bool {
    scenario
        .faults
        .iter()
        .any(|f| f.starts_with("nft-drop") || f.starts_with("return-route-del"))
}

#[derive(serde::Deserialize)]
struct Pulled {
    outcome: String,
    message: String,
}

#[test]
fn podman_pulls_every_shared_scenario_as_the_catalog_declares() {
    let run_slow = std::env::var_os("PULLPATH_LAB_SLOW").is_some();
    let lab = lab();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (name, scenario) in catalog() {
        if !shared_with_podman(&scenario) || (slow(&scenario) && !run_slow) {
            continue;
        }
        lab.switch(&name);
        let creds = login(&scenario.identity)
            .map(|(user, password)| format!("{user}:{password}"))
            .unwrap_or_default();
        let out = std::process::Command::new("python3")
            .arg(repo().join("lab/lab.py"))
            .args(["podman-pull", &scenario.image])
            .args((!creds.is_empty()).then_some(creds.as_str()))
            .output()
            .expect("lab.py podman-pull runs");
        assert!(
            out.status.success(),
            "{name}: podman-pull: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pulled: Pulled = serde_json::from_slice(&out.stdout).expect("podman-pull JSON");
        let want = scenario.podman.as_ref().unwrap_or(&scenario.expect);
        checked += 1;
        if pulled.outcome != want.outcome {
            wrong.push(format!(
                "{name}: expected {}, podman {}: {}",
                want.outcome, pulled.outcome, pulled.message
            ));
            continue;
        }
        if pulled.outcome != "failed" {
            continue;
        }
        if let Some(fragment) = &want.runtime
            && !pulled.message.contains(fragment.as_str())
        {
            wrong.push(format!(
                "{name}: podman's error does not show the declared fault {fragment:?}: {}",
                pulled.message
            ));
        }
        let fixture = repo().join(format!("tests/fixtures/podman/{name}.txt"));
        let live = normalise(&pulled.message);
        if std::env::var_os("PULLPATH_RECORD").is_some() {
            std::fs::create_dir_all(fixture.parent().expect("dir")).expect("fixture dir");
            std::fs::write(&fixture, format!("{live}\n")).expect("record");
        }
        let kept = std::fs::read_to_string(&fixture).unwrap_or_default();
        if kept.trim_end() != live {
            wrong.push(format!(
                "{name}: podman's message differs from {} (PULLPATH_RECORD=1 rewrites it):\n  kept {}\n  live {live}",
                fixture.display(),
                kept.trim_end()
            ));
        }
    }
    assert!(checked >= 25, "only {checked} scenarios pulled with podman");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The requests the rate-limited front logged for the node since `from` (a byte offset),
/// with the time nginx took each (`$msec`).
fn limited_requests(lab: &support::LabGuard, from: usize) -> Vec<(String, f64)> {
    let log = std::fs::read(lab.status.logs.join("blob-access.log")).expect("front's access log");
    String::from_utf8_lossy(&log[from.min(log.len())..])
        .lines()
        .filter(|l| l.starts_with("10.10.1.2 ") && l.contains("host=limited.example.test"))
        .map(|l| {
            let msec = l
                .rsplit_once(" msec=")
                .and_then(|(_, t)| t.trim().parse().ok())
                .expect("msec in the log line");
            (l.split('"').nth(1).unwrap_or_default().to_string(), msec)
        })
        .collect()
}

/// What each runtime spends on a 429 with `Retry-After: 1`, counted in the front's own log:
/// containerd asks six times (five retries, core/remotes/docker `retryRequest`) without
/// waiting; podman (containers/image) waits the second the registry asked for before it asks
/// again. The catalog's `rate-limited` note and the probe's verdict say the same.
#[tokio::test]
async fn a_rate_limit_costs_containerd_six_requests_at_once_and_podman_waits_retry_after() {
    let scenario = catalog().remove("rate-limited").expect("scenario");
    let lab = lab();
    lab.switch("rate-limited");
    let log_size = || {
        std::fs::metadata(lab.status.logs.join("blob-access.log")).map_or(0, |m| m.len() as usize)
    };

    let before = log_size();
    let mut node = pullpath::runtime::cri::ImageService::connect(
        lab.socket("node"),
        std::time::Duration::from_secs(150),
    )
    .await
    .expect("node containerd answers CRI");
    let outcome = node
        .pull(&scenario.image, None)
        .await
        .expect("PullImage answers");
    assert!(
        outcome.kubelet_event(&scenario.image).is_some(),
        "{outcome:?}"
    );
    let manifests = |requests: Vec<(String, f64)>| -> Vec<(String, f64)> {
        requests
            .into_iter()
            .filter(|(r, _)| r.contains("/manifests/"))
            .collect()
    };
    let containerd = manifests(limited_requests(&lab, before));
    assert_eq!(
        containerd.len(),
        6,
        "containerd's manifest requests: {containerd:?}"
    );
    assert!(
        containerd.iter().all(|(r, _)| r.starts_with("HEAD ")),
        "{containerd:?}"
    );

    let before = log_size();
    let out = std::process::Command::new("python3")
        .arg(repo().join("lab/lab.py"))
        .args(["podman-pull", &scenario.image])
        .output()
        .expect("lab.py podman-pull runs");
    let pulled: Pulled = serde_json::from_slice(&out.stdout).expect("podman-pull JSON");
    assert_eq!(pulled.outcome, "failed", "{}", pulled.message);
    let podman = limited_requests(&lab, before);
    assert!(
        manifests(podman.clone()).len() > 1,
        "podman asks again: {podman:?}"
    );
    // Within one try of podman's, each manifest request waits out the Retry-After of the one
    // before; a try of its own starts with a fresh ping, and its pause is podman's.
    let waits: Vec<f64> = podman
        .windows(2)
        .filter(|w| w.iter().all(|(r, _)| r.contains("/manifests/")))
        .map(|w| w[1].1 - w[0].1)
        .collect();
    assert!(!waits.is_empty(), "{podman:?}");
    assert!(
        waits.iter().all(|gap| *gap >= 0.95),
        "podman honours Retry-After: gaps {waits:?}"
    );
}
