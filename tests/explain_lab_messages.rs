//! `explain` on the exact messages containerd produced in the lab (tests/fixtures/containerd for
//! Debian 12's 1.6, `1.7/` and `2.1/` beside it for Debian trixie's and sid's; kept true by
//! tests/lab.rs): each is classified to its scenario's declared layer, hop and host, whatever
//! the version's wording.

mod support;

use pullpath::failure_text::explain;
use support::{catalog, repo};

/// The fixture directory of each containerd version the lab records.
const VERSIONS: [(&str, &str); 3] = [("1.6", ""), ("1.7", "1.7/"), ("2.1", "2.1/")];

#[test]
fn every_lab_message_of_every_version_gets_its_scenarios_verdict() {
    for (version, dir) in VERSIONS {
        let checked = check_version(version, dir);
        assert!(
            checked >= 15,
            "containerd {version}: only {checked} lab messages checked"
        );
    }
}

fn check_version(version: &str, dir: &str) -> usize {
    let mut checked = 0;
    for (name, scenario) in catalog() {
        let want = scenario.expect_for(version);
        if want.outcome != "failed" {
            continue;
        }
        let path = repo().join(format!("tests/fixtures/containerd/{dir}{name}.txt"));
        let message =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        check_message(
            &format!("{name} (containerd {version})"),
            &scenario,
            want,
            &message,
        );
        checked += 1;
    }
    checked
}

/// podman's texts (tests/lab_podman.rs keeps them) get the verdict podman reached.
#[test]
fn every_podman_message_gets_its_scenarios_verdict() {
    let mut checked = 0;
    for (name, scenario) in catalog() {
        let path = repo().join(format!("tests/fixtures/podman/{name}.txt"));
        let Ok(message) = std::fs::read_to_string(&path) else {
            continue;
        };
        let want = scenario.podman.as_ref().unwrap_or(&scenario.expect);
        check_message(&format!("{name} (podman)"), &scenario, want, &message);
        checked += 1;
    }
    assert!(checked >= 25, "only {checked} podman messages checked");
}

fn check_message(name: &str, scenario: &support::Scenario, want: &support::Expect, message: &str) {
    let explanation = explain(message);
    let verdict = explanation.verdict().expect("a verdict");
    if want.undecided {
        // The text fits several layers: undecided, with the scenario's among the candidates.
        let ambiguity = verdict.ambiguity.as_ref().unwrap_or_else(|| {
            panic!("{name}: the text cannot decide, explain must say so\n{message}")
        });
        assert!(
            ambiguity
                .candidates
                .iter()
                .any(|(layer, _)| Some(layer.as_str()) == want.layer.as_deref()),
            "{name}: {:?} not among the candidates {:?}\n{message}",
            want.layer,
            ambiguity.candidates
        );
    } else {
        // Decided, or undecided with the scenario's layer the most likely candidate.
        assert_eq!(
            Some(verdict.layer.as_str()),
            want.layer.as_deref(),
            "{name}: layer\n{message}"
        );
    }
    assert_eq!(
        Some(verdict.hop.as_str()),
        want.hop.as_deref(),
        "{name}: hop\n{message}"
    );
    if want.layer.as_deref() == Some("blob") {
        assert_eq!(
            verdict.mechanism.map(|m| m.as_str()),
            want.cause.as_deref(),
            "{name}: blob mechanism"
        );
    }
    let declared = want
        .host
        .as_deref()
        .expect("failed scenarios declare a host");
    let registry = scenario
        .image
        .split('/')
        .next()
        .expect("image has a registry");
    if message.contains(declared) {
        assert_eq!(
            verdict.host.as_deref(),
            Some(declared),
            "{name}: host\n{message}"
        );
    } else {
        // The text does not name the failing host (containerd omits the token realm's URL
        // on a 401): the best the text supports is the image's registry.
        assert_eq!(
            verdict.host.as_deref(),
            Some(registry),
            "{name}: host not in text\n{message}"
        );
    }
}
