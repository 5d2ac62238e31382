use super::*;
use crate::fleet::answer::ProbeAnswer;
use crate::fleet::run::NodeRun;
use crate::fleet::run_objects::Cleanup;
use crate::pod::node::NodeFacts;
use crate::verdict::{Failure, Fault};
use crate::vocab::Hop;
use std::time::Duration;

fn seen(host: &str, issuer: &str, verified: bool) -> TrustSeen {
    TrustSeen {
        host: host.into(),
        issuer: issuer.into(),
        verified,
        unknown_authority: !verified,
    }
}

#[test]
fn a_ca_only_some_nodes_trust_is_named_on_them() {
    let ok = [seen("r.example:443", "CN=corp root", true)];
    let lacks = [seen("r.example:443", "CN=corp root", false)];
    let other_ca = [seen("r.example:443", "CN=public root", false)];
    let found = trust_only_here(&[
        ("old", "user", &ok[..]),
        ("new", "spot", &lacks[..]),
        ("elsewhere", "x", &other_ca[..]),
    ]);
    let on_old = &found["old"];
    assert_eq!(on_old.len(), 1);
    assert!(on_old[0].contains("CN=corp root") && on_old[0].contains("new (pool spot)"));
    assert!(!on_old[0].contains("elsewhere"));
    assert!(!found.contains_key("new"));
    // Everyone trusts it: nothing to say.
    assert!(trust_only_here(&[("a", "p", &ok[..]), ("b", "p", &ok[..])]).is_empty());
}

fn candidate(
    name: &str,
    pool: &str,
    eligible: Option<Result<(), crate::fleet::eligibility::Ineligible>>,
    listed: bool,
) -> NodeChoice {
    NodeChoice {
        facts: NodeFacts::named(name),
        pool: pool.to_string(),
        ready: true,
        eligible,
        listed,
        running: false,
        chosen: true,
        why: crate::fleet::select::ChoiceReason::Newest { rank: 1 },
        evidence: None,
        arch: None,
        nodeless: false,
    }
}

/// A probe report that fails at `failing`, or passes.
fn probe(failing: Option<Layer>, hand_fixes: &[&str]) -> Answer {
    let verdict = failing.map_or(Verdict::Passed, |layer| {
        let owner = crate::advice::advise(layer, None, Hop::Registry, "r.example").owner;
        Verdict::Failed(Failure {
            fault: Fault::new(layer, None, owner),
            seen: Seen {
                hop: Some(Hop::Registry),
                host: Some("r.example".to_string()),
                cause: Some(format!("{layer} observed")),
            },
        })
    });
    Answer::Probe(Box::new(ProbeAnswer {
        verdict,
        hand_fixes: hand_fixes.iter().map(|h| h.to_string()).collect(),
        view: None,
        elapsed_ms: Some(5),
        runtime: None,
        trust: vec![],
    }))
}

#[test]
fn a_refusal_at_auth_waits_for_the_workloads_pull_secrets() {
    use crate::verdict::{Failure, Fault};
    use crate::vocab::Owner;
    let auth = Verdict::Failed(Failure {
        fault: Fault::new(Layer::Auth, None, Owner::Identity),
        seen: Seen {
            cause: Some("401 Unauthorized".into()),
            ..Seen::default()
        },
    });
    let secrets = vec!["regcred".to_string()];
    // No secrets: the node's own refusal is the answer.
    assert_eq!(with_pull_secrets(auth.clone(), &[], None), auth);
    // Secrets and no kubelet pull: undecided, leaning auth, naming them and what decides.
    let Verdict::Undecided(undecided) = with_pull_secrets(auth.clone(), &secrets, None) else {
        panic!("undecided");
    };
    assert_eq!(undecided.leaning.map(|f| f.layer()), Some(Layer::Auth));
    let decides = undecided.decides.expect("what decides");
    assert!(decides.contains("regcred") && decides.contains("--kubelet-pull"));
    // The kubelet's own pull with them decides either way.
    let pulled = kubelet_pull::KubeletPull::Pulled {
        evidence: "imageID sha256:ab".into(),
    };
    assert_eq!(
        with_pull_secrets(auth.clone(), &secrets, Some(&pulled)),
        Verdict::Passed
    );
    let failed = kubelet_pull::KubeletPull::Failed {
        reason: "ErrImagePull".into(),
        message: "401 Unauthorized".into(),
        layer: Some(Layer::Auth),
    };
    assert_eq!(
        with_pull_secrets(auth.clone(), &secrets, Some(&failed)),
        auth
    );
    // Another layer is the node's whatever the pod brings.
    let dns = Verdict::Failed(Failure {
        fault: Fault::new(Layer::Dns, None, Owner::DnsTeam),
        seen: Seen::default(),
    });
    assert_eq!(with_pull_secrets(dns.clone(), &secrets, None), dns);
}

fn build_of(candidates: &[NodeChoice], answers: Vec<(&str, Answer)>) -> FleetReport {
    let outcome = RunOutcome {
        runs: answers
            .into_iter()
            .map(|(node, answer)| NodeRun {
                node_image: None,
                node: Some(node.into()),
                pod: format!("pullpath-fleet-x-{node}"),
                answer,
                kubelet_pull: None,
                elapsed: Duration::from_millis(20),
                fresh: None,
            })
            .collect(),
        ending: Ending::Finished,
        cleanup: Ok(Cleanup {
            deleted: 0,
            remaining: 0,
            unverified: None,
        }),
        events_unread: None,
    };
    build(header(), candidates, &outcome)
}

fn header() -> Header {
    Header {
        image: "r.example/app:1".into(),
        run_id: "0123456789".into(),
        probe_namespace: "pullpath".into(),
        probe_image: "r.example/pullpath:0.1.0".into(),
        probe_arches: Some(vec!["amd64".into()]),
        delivery: None,
        workload: None,
        pull_secrets: Vec::new(),
        node_pools_unread: None,
        unmatched_pools: Vec::new(),
        now: 0,
        elapsed_ms: 30,
    }
}

#[test]
fn the_verdict_is_the_worst_eligible_pool_an_ineligible_failure_only_flagged() {
    let candidates = [
        candidate(
            "gpu-1",
            "gpu",
            Some(Err(crate::fleet::eligibility::Ineligible::Taint {
                key: "sku".into(),
                value: Some("gpu".into()),
                effect: "NoSchedule".into(),
            })),
            false,
        ),
        candidate("user-1", "user", Some(Ok(())), false),
        candidate("user-2", "user", Some(Ok(())), true),
    ];
    let r = build_of(
        &candidates,
        vec![
            ("gpu-1", probe(Some(Layer::Dns), &[])),
            ("user-1", probe(None, &[])),
            ("user-2", probe(Some(Layer::Tls), &[])),
        ],
    );
    // user fails at tls (its cached node): that is the verdict, not gpu's dns.
    assert_eq!(r.verdict.layer(), Some(Layer::Tls));
    assert_eq!(r.pools[0].pool, "user");
    assert_eq!(r.pools[1].eligible, Some(false));
    assert!(
        r.pools[1].summary.contains("not eligible"),
        "{}",
        r.pools[1].summary
    );
    let cached = r.nodes.iter().find(|n| n.node == "user-2").expect("row");
    assert_eq!(cached.status, "works-from-cache");
    assert!(
        r.summary[0].contains("user-2 only works from cache"),
        "{}",
        r.summary[0]
    );
    assert_eq!(
        crate::exit::for_verdict(&r.verdict),
        crate::exit::for_layer(Layer::Tls)
    );
}

#[test]
fn hand_fixes_no_answers_and_an_all_passing_run() {
    let candidates = [
        candidate("a", "p", None, false),
        candidate("b", "q", None, false),
    ];
    let r = build_of(
        &candidates,
        vec![
            ("a", probe(None, &["/etc/hosts maps r.example to 10.0.0.5"])),
            (
                "b",
                Answer::Missing {
                    why: crate::fleet::answer::Missing::StoppedListing,
                },
            ),
        ],
    );
    let a = r.pools.iter().find(|p| p.pool == "p").expect("p");
    assert!(
        a.summary
            .contains("a has a hand fix a replaced node would lack: /etc/hosts maps r.example"),
        "{}",
        a.summary
    );
    // An eligible pool without an answer makes the run undecided (exit 3).
    assert!(matches!(r.verdict, Verdict::Undecided(_)));
    assert_eq!(crate::exit::for_verdict(&r.verdict), crate::exit::UNDECIDED);
    let passing = build_of(
        &candidates,
        vec![("a", probe(None, &[])), ("b", probe(None, &[]))],
    );
    assert!(passing.verdict.is_passed());
    assert_eq!(
        passing.summary,
        vec![
            "pool `p` passes (1 node probed)",
            "pool `q` passes (1 node probed)"
        ]
    );
}

/// `--fresh-node`: the fresh node's row sits beside its pool's newest node, says how it came,
/// and the difference (the existing node passes through its hand fix, the fresh one fails at
/// dns) is on the pool's line; the pool fails, as the next scale-up will.
#[test]
fn a_fresh_node_that_fails_where_the_newest_passes_is_called_out() {
    let c = vec![candidate("aks-user-2", "user", None, false)];
    let report_of = |fresh_answer: Answer, node: &str| {
        let mut outcome_runs = vec![NodeRun {
            node_image: None,
            node: Some("aks-user-2".into()),
            pod: "pullpath-fleet-x-0".into(),
            answer: probe(None, &["/etc/hosts maps r.example"]),
            kubelet_pull: None,
            elapsed: Duration::from_millis(20),
            fresh: None,
        }];
        outcome_runs.push(NodeRun {
            node_image: None,
            node: (!node.is_empty()).then(|| node.into()),
            pod: "pullpath-fleet-x-fresh-0".into(),
            answer: fresh_answer,
            kubelet_pull: None,
            elapsed: Duration::from_millis(90),
            fresh: Some(crate::fleet::run::FreshRun {
                pool: "user".into(),
                beside: "aks-user-2".into(),
                waited: Duration::from_secs(70),
                said: vec![
                    "TriggeredScaleUp: pod triggered scale-up: [{user 2->3 (max: 5)}]".into(),
                ],
                node_created: Some("2026-12-05T09:00:00Z".into()),
                node_ready: Some("2026-12-05T09:00:42Z".into()),
                still_starting: None,
            }),
        });
        let outcome = RunOutcome {
            runs: outcome_runs,
            ending: Ending::Finished,
            cleanup: Ok(Cleanup {
                deleted: 2,
                remaining: 0,
                unverified: None,
            }),
            events_unread: None,
        };
        build(header(), &c, &outcome)
    };
    let r = report_of(probe(Some(Layer::Dns), &[]), "aks-user-3");
    let fresh = r
        .nodes
        .iter()
        .find(|n| n.node == "aks-user-3")
        .expect("the fresh node's row");
    let way = fresh.fresh_node.as_ref().expect("fresh_node");
    assert_eq!(way.compared_with.as_deref(), Some("aks-user-2"));
    assert_eq!(way.waited_ms, 70_000);
    assert_eq!(fresh.pool, "user");
    assert!(
        way.difference
            .as_deref()
            .is_some_and(|d| d.contains("passes (through /etc/hosts maps r.example)")
                && d.contains("a fresh node fails at dns")),
        "{way:?}"
    );
    assert!(!r.pools[0].verdict.is_passed());
    assert!(
        r.summary[0].contains("a fresh node fails at dns"),
        "{:?}",
        r.summary
    );
    // Agreeing: no difference.
    let r = report_of(probe(None, &[]), "aks-user-3");
    let fresh = r
        .nodes
        .iter()
        .find(|n| n.node == "aks-user-3")
        .expect("row");
    assert_eq!(
        fresh.fresh_node.as_ref().and_then(|f| f.difference.clone()),
        None
    );
    // No node came: a run problem, no difference claimed.
    let r = report_of(
        Answer::Problem(crate::fleet::run_problem::RunProblem::ScaleUpRefused {
            reason: "NotTriggerScaleUp".into(),
            message: "pod didn't trigger scale-up: 1 max node group size reached".into(),
        }),
        "",
    );
    let fresh = r
        .nodes
        .iter()
        .find(|n| n.node == "(a fresh node of pool user)")
        .expect("the row of the node that did not come");
    assert_eq!(
        fresh.problem.as_ref().map(|p| p.kind),
        Some("scale-up-refused")
    );
    assert!(
        fresh
            .fresh_node
            .as_ref()
            .is_some_and(|f| f.difference.is_none())
    );
}

/// A pool with no node (a NodePool): listed as skipped until a fresh node is asked for; then a
/// row of its own, compared with nothing, its pool's verdict the fresh node's.
#[test]
fn a_pool_without_nodes_is_skipped_or_probed_on_its_fresh_node() {
    let pool = crate::fleet::nodeless::NodelessPool {
        name: "gpu".into(),
        label: ("karpenter.sh/nodepool".into(), "gpu".into()),
        found: crate::fleet::nodeless::Found::NodePool,
        labels: Default::default(),
        taints: Vec::new(),
        arches: None,
    };
    let listed = |fresh: bool| {
        vec![
            candidate("aks-user-1", "user", None, false),
            pool.candidate(None, fresh, Some("amd64".into())),
        ]
    };
    let outcome = |runs: Vec<NodeRun>| RunOutcome {
        runs,
        ending: Ending::Finished,
        cleanup: Ok(Cleanup {
            deleted: 1,
            remaining: 0,
            unverified: None,
        }),
        events_unread: None,
    };
    let existing = NodeRun {
        node_image: None,
        node: Some("aks-user-1".into()),
        pod: "p-0".into(),
        answer: probe(None, &[]),
        kubelet_pull: None,
        elapsed: Duration::from_millis(90),
        fresh: None,
    };
    let without = build(header(), &listed(false), &outcome(vec![existing.clone()]));
    let skipped = without
        .skipped
        .iter()
        .find(|s| s.pool == "gpu")
        .expect("skipped gpu");
    assert!(skipped.why.contains("--fresh-node"), "{}", skipped.why);
    assert_eq!(
        skipped.evidence.as_deref(),
        Some("NodePool gpu (karpenter.sh/v1)")
    );
    assert!(without.pools.iter().all(|p| p.pool != "gpu"));

    let fresh = NodeRun {
        node_image: None,
        node: Some("aks-gpu-x7k2p".into()),
        pod: "p-fresh-0".into(),
        answer: probe(Some(Layer::Auth), &[]),
        kubelet_pull: None,
        elapsed: Duration::from_millis(90),
        fresh: Some(crate::fleet::run::FreshRun {
            pool: "gpu".into(),
            beside: "(no node of pool gpu)".into(),
            waited: Duration::from_secs(40),
            said: vec!["Nominated: Pod should schedule on: nodeclaim/gpu-x7k2p".into()],
            node_created: None,
            node_ready: None,
            still_starting: None,
        }),
    };
    let with = build(header(), &listed(true), &outcome(vec![existing, fresh]));
    assert!(
        with.skipped.iter().all(|s| s.pool != "gpu"),
        "{:?}",
        with.skipped
    );
    let row = with
        .nodes
        .iter()
        .find(|n| n.node == "aks-gpu-x7k2p")
        .expect("fresh row");
    let way = row.fresh_node.as_ref().expect("fresh_node");
    assert_eq!(way.compared_with, None);
    assert_eq!(way.difference, None);
    assert!(
        row.chosen_because.contains("NodePool gpu"),
        "{}",
        row.chosen_because
    );
    let gpu = with
        .pools
        .iter()
        .find(|p| p.pool == "gpu")
        .expect("pool gpu");
    assert_eq!(gpu.verdict.layer(), Some(Layer::Auth));
    assert_eq!(with.verdict.layer(), Some(Layer::Auth));
}
