use super::*;
use crate::fleet::answer::UnreadableReport;
use crate::fleet::fresh::FreshPlacement;
use serde_json::json;

fn plan(name: &str, node: &str) -> PodPlan {
    PodPlan {
        name: name.into(),
        namespace: "pullpath".into(),
        node: node.into(),
        fresh: None,
        run_id: "ab12".into(),
        start: pod_spec::Start::Image("probe:v1".into()),
        image: "r.example/app:v1".into(),
        full: false,
        runtime_pull: false,
        deadline_seconds: 120,
        runtime_version: None,
        kubelet_pull: None,
    }
}

fn fresh_plan(name: &str, beside: &str, pool: &str) -> PodPlan {
    PodPlan {
        fresh: Some(FreshPlacement {
            pool_label: ("kubernetes.azure.com/agentpool".into(), pool.into()),
            existing: vec![beside.into()],
            tolerations: Vec::new(),
            arch: None,
        }),
        ..plan(name, beside)
    }
}

fn pod(name: &str, phase: &str) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name}, "status": {"phase": phase}}))
        .expect("a pod")
}

fn event(pod: &str, reason: &str) -> k8s_openapi::api::core::v1::Event {
    serde_json::from_value(json!({"metadata": {"name": format!("{pod}.1")},
        "involvedObject": {"kind": "Pod", "name": pod}, "reason": reason}))
    .expect("an event")
}

#[test]
fn a_list_keeps_the_watchs_news_of_a_finished_pod_and_only_the_runs_events() {
    let names: BTreeSet<String> = ["p0".to_string(), "p1".to_string()].into();
    let mut previous = Seen::default();
    previous.pods.insert("p0".into(), pod("p0", "Succeeded"));
    let seen = watch::next_seen(
        &previous,
        4,
        Ok(vec![pod("p0", "Running"), pod("p1", "Pending")]),
        Ok(vec![event("p1", "FailedMount"), event("other", "Pulled")]),
        &names,
    );
    assert_eq!(seen.generation, 4);
    let phase = |name: &str| seen.pods[name].status.as_ref()?.phase.clone();
    assert_eq!(phase("p0").as_deref(), Some("Succeeded"));
    assert_eq!(phase("p1").as_deref(), Some("Pending"));
    assert_eq!(seen.events.keys().collect::<Vec<_>>(), ["p1"]);
    assert_eq!(seen.error, None);
}

#[test]
fn a_failed_list_keeps_what_was_seen_and_says_why() {
    let names = BTreeSet::new();
    let mut previous = Seen::default();
    previous.pods.insert("p0".into(), pod("p0", "Running"));
    let seen = watch::next_seen(
        &previous,
        2,
        Err(watch::ListFailed::Pods {
            selector: "pullpath/run=ab12".into(),
            error: "403 Forbidden: no".into(),
        }),
        Err(watch::ListFailed::Events {
            namespace: "pullpath".into(),
            error: "403 Forbidden: no".into(),
        }),
        &names,
    );
    assert_eq!(seen.generation, 2);
    assert!(seen.pods.contains_key("p0"));
    assert_eq!(
        seen.error.as_deref(),
        Some("cannot list the probe pods (pullpath/run=ab12): 403 Forbidden: no")
    );
    assert_eq!(
        seen.events_error.as_deref(),
        Some("cannot list the probe pods' events in pullpath: 403 Forbidden: no")
    );
}

#[test]
fn a_pod_is_gone_only_after_lists_that_began_after_its_create_missed_it() {
    let mut seen = Seen {
        generation: 1 + GONE_AFTER_LISTS,
        ..Seen::default()
    };
    assert_eq!(gone(&seen, "p0", 1), None);
    seen.generation += 1;
    let why = gone(&seen, "p0", 1).expect("gone");
    assert_eq!(
        why.to_string(),
        "probe pod p0 disappeared before it finished (deleted by someone else, or evicted)"
    );
    seen.error = Some("cannot list the probe pods (s): 500 x: y".into());
    let why = gone(&seen, "p0", 1).expect("gone");
    assert_eq!(why.to_string(), "cannot list the probe pods (s): 500 x: y");
}

#[test]
fn every_plan_has_a_run_and_a_missing_one_says_why_by_the_runs_end() {
    let plans = [plan("p0", "n0"), fresh_plan("p1", "n0", "user")];
    let answered = node_run(
        &plans[0],
        Answer::Missing {
            why: Missing::StoppedListing,
        },
        None,
        None,
        Duration::from_secs(3),
    );
    let unanswered = Missing::Unanswered {
        ending: Ending::Deadline,
        last_list_error: Some("cannot list the probe pods (s): 500 x: y".into()),
    };
    let runs = every_run(&plans, vec![Some(answered), None], &unanswered);
    assert_eq!(runs[0].node.as_deref(), Some("n0"));
    assert_eq!(runs[0].elapsed, Duration::from_secs(3));
    // A fresh pod that never ran has no node, and stands beside its pool's newest.
    assert_eq!(runs[1].node, None);
    let way = runs[1].fresh.as_ref().expect("fresh");
    assert_eq!((way.pool.as_str(), way.beside.as_str()), ("user", "n0"));
    let Answer::Missing { why } = &runs[1].answer else {
        panic!("{:?}", runs[1].answer);
    };
    assert_eq!(
        why.to_string(),
        "the run's deadline (--deadline) came before this node answered; the last list of the run's pods failed: cannot list the probe pods (s): 500 x: y"
    );
}

#[test]
fn a_fresh_pods_node_is_the_one_it_came_to() {
    let plan = fresh_plan("p1", "n0", "user");
    let way = FreshRun {
        waited: Duration::from_secs(70),
        ..FreshRun::default()
    };
    let fresh = Some((Some("n9".to_string()), way));
    let run = node_run(
        &plan,
        Answer::Missing {
            why: Missing::StoppedListing,
        },
        fresh,
        None,
        Duration::ZERO,
    );
    assert_eq!(run.node.as_deref(), Some("n9"));
    let way = run.fresh.expect("fresh");
    assert_eq!(way.waited, Duration::from_secs(70));
    assert_eq!(way.beside, "n0");
}

#[test]
fn the_kubelet_pull_pods_are_deleted_apart_only_in_another_namespace() {
    let pull = |namespace: &str| KubeletPullPlan {
        name: "k".into(),
        namespace: namespace.into(),
        node: "n0".into(),
        run_id: "ab12".into(),
        image: "r.example/app:v1".into(),
        service_account: None,
        pull_secrets: Vec::new(),
        deadline_seconds: 60,
    };
    let mut plans = vec![plan("p0", "n0")];
    assert_eq!(kubelet_pull_namespace(&plans, "pullpath"), None);
    plans[0].kubelet_pull = Some(pull("pullpath"));
    assert_eq!(kubelet_pull_namespace(&plans, "pullpath"), None);
    plans[0].kubelet_pull = Some(pull("shop"));
    assert_eq!(
        kubelet_pull_namespace(&plans, "pullpath").as_deref(),
        Some("shop")
    );
}

#[test]
fn a_missing_answer_says_what_it_said_as_words() {
    let unanswered = |ending| Missing::Unanswered {
        ending,
        last_list_error: None,
    };
    assert_eq!(
        unanswered(Ending::Finished).to_string(),
        "the probe task ended without an answer"
    );
    assert_eq!(
        unanswered(Ending::Interrupted).to_string(),
        "the run was interrupted before this node answered"
    );
    assert_eq!(
        Missing::StoppedListing.to_string(),
        "the run stopped listing its probe pods"
    );
    let log = Missing::LogUnread {
        pod: "p0".into(),
        error: "404 NotFound: gone".into(),
    };
    assert_eq!(
        log.to_string(),
        "cannot read the log of probe pod p0: 404 NotFound: gone"
    );
    let no_report = |ended| Missing::NoReport {
        why: UnreadableReport::FailedWithoutLayer,
        ended,
    };
    assert_eq!(
        no_report(Some(Ended::Exited {
            code: 137,
            reason: Some("OOMKilled".into())
        }))
        .to_string(),
        "the probe report failed without naming a layer; the probe exited 137 (OOMKilled)"
    );
    assert_eq!(
        no_report(Some(Ended::Exited {
            code: 1,
            reason: None
        }))
        .to_string(),
        "the probe report failed without naming a layer; the probe exited 1"
    );
    assert_eq!(
        no_report(Some(Ended::Pod {
            reason: "Evicted".into()
        }))
        .to_string(),
        "the probe report failed without naming a layer; the pod ended: Evicted"
    );
    assert_eq!(
        no_report(None).to_string(),
        "the probe report failed without naming a layer"
    );
    let refused = CreateRefused {
        pod: "p0".into(),
        error: "403 Forbidden: no".into(),
    };
    assert_eq!(
        refused.to_string(),
        "cannot create probe pod p0: 403 Forbidden: no"
    );
}
