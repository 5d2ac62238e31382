use super::*;
use crate::cluster::Target;
use crate::fleet::config::RunSettings;
use crate::fleet::life::{Budgets, ProbeOrigin};
use crate::fleet::select::ChoiceReason;
use crate::pod::node::NodeFacts;
use std::time::Duration;

fn config(probe: ProbeSource) -> FleetConfig {
    FleetConfig {
        target: Target {
            kubeconfig: None,
            context: None,
            overrides: Default::default(),
            namespace: None,
            all_namespaces: false,
            read_secrets: false,
            request_timeout: Duration::from_secs(30),
        },
        image: "r.example/app:v1".into(),
        probe,
        probe_arches: None,
        probe_namespace: "pullpath".into(),
        workload: None,
        selector: None,
        choice: Choice {
            nodes_per_pool: 1,
            all_nodes: false,
            pools: Vec::new(),
            also: None,
        },
        full: false,
        runtime_pull: false,
        kubelet_pull: false,
        fresh_node: false,
        settings: RunSettings {
            namespace: "pullpath".into(),
            parallel: 10,
            deadline: Duration::from_secs(600),
            poll: Duration::from_secs(1),
            budgets: Budgets {
                start: Duration::from_secs(90),
                probe: Duration::from_secs(120),
            },
            origin: ProbeOrigin {
                same_registry: false,
                registry: String::new(),
            },
            request_timeout: Duration::from_secs(30),
            fresh_wait: Duration::from_secs(600),
            progress: None,
        },
    }
}

fn candidate(name: &str, pool: &str, arch: &str, nodeless: bool) -> NodeChoice {
    let mut facts = NodeFacts::named(name);
    facts.pool = Some(("kubernetes.azure.com/agentpool".into(), pool.into()));
    NodeChoice {
        facts,
        pool: pool.into(),
        ready: true,
        eligible: None,
        listed: false,
        running: false,
        chosen: !nodeless,
        why: ChoiceReason::Newest { rank: 1 },
        evidence: None,
        arch: Some(arch.into()),
        nodeless,
    }
}

#[test]
fn a_probe_image_without_the_nodes_architecture_leaves_the_node_unprobed() {
    let mut config = config(ProbeSource::Image("probe:v1".into()));
    config.probe_arches = Some(vec!["amd64".into()]);
    let (a, b) = (
        candidate("a", "user", "amd64", false),
        candidate("b", "arm", "arm64", false),
    );
    let chosen = [&a, &b];
    let (payloads, starts) = starts(&config, "ab12", &chosen, &[], &Default::default());
    assert!(payloads.is_empty());
    let sorted = sort_by_start(&chosen, starts);
    assert_eq!(sorted.started.len(), 1);
    assert_eq!(sorted.started[0].0.facts.name, "a");
    assert_eq!(sorted.started[0].1, Start::Image("probe:v1".into()));
    assert_eq!(
        sorted.unprobed,
        [(
            "b".to_string(),
            RunProblem::ProbeImageLacksArch {
                arch: "arm64".into(),
                has: vec!["amd64".into()],
            }
        )]
    );
}

#[test]
fn pinned_pods_are_numbered_per_existing_node_and_carry_the_kubelet_pull() {
    let mut config = config(ProbeSource::Image("probe:v1".into()));
    config.kubelet_pull = true;
    let (a, gone, b) = (
        candidate("a", "user", "amd64", false),
        candidate("(no node of pool new)", "new", "amd64", true),
        candidate("b", "sys", "amd64", false),
    );
    let start = Start::Image("probe:v1".into());
    let started = [(&a, start.clone()), (&gone, start.clone()), (&b, start)];
    let workload = Workload {
        service_account: Some("app".into()),
        pull_secrets: vec!["acr".into()],
        ..Workload::default()
    };
    let pods = pinned_pods(&config, "ab12", &started, "shop", &workload);
    let names: Vec<&str> = pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["pullpath-fleet-ab12-0", "pullpath-fleet-ab12-1"]);
    assert_eq!(pods[1].node, "b");
    assert_eq!(pods[1].deadline_seconds, 120);
    let pull = pods[1].kubelet_pull.as_ref().expect("kubelet pull");
    assert_eq!(pull.name, "pullpath-fleet-ab12-1-kubelet");
    assert_eq!(pull.namespace, "shop");
    assert_eq!(pull.service_account.as_deref(), Some("app"));
    assert_eq!(pull.pull_secrets, ["acr"]);
    assert_eq!(pull.deadline_seconds, 90);
}

#[test]
fn a_fresh_pod_per_pool_beside_its_newest_node_excluding_every_node_of_today() {
    let config = config(ProbeSource::Image("probe:v1".into()));
    let (a1, a2, b) = (
        candidate("a1", "user", "amd64", false),
        candidate("a2", "user", "amd64", false),
        candidate("b", "sys", "arm64", false),
    );
    let start = Start::Image("probe:v1".into());
    let started = [(&a1, start.clone()), (&a2, start.clone()), (&b, start)];
    let node = |name: &str| Node {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let nodes = [node("a1"), node("a2"), node("b")];
    let pods = fresh_pods(&config, "ab12", &started, &nodes, None, &[]);
    let names: Vec<(&str, &str)> = pods
        .iter()
        .map(|p| (p.name.as_str(), p.node.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("pullpath-fleet-ab12-fresh-0", "a1"),
            ("pullpath-fleet-ab12-fresh-1", "b")
        ]
    );
    let placement = pods[1].fresh.as_ref().expect("fresh");
    assert_eq!(placement.pool_label.1, "sys");
    assert_eq!(placement.existing, ["a1", "a2", "b"]);
    assert_eq!(placement.arch.as_deref(), Some("arm64"));
    assert!(pods.iter().all(|p| p.kubelet_pull.is_none()));
}

#[test]
fn node_pools_not_asked_for_make_no_nodeless_pool() {
    let pools = vec!["kubernetes.azure.com/agentpool=gpu".to_string()];
    assert!(nodeless_pools(None, &[], &pools).is_empty());
    let unread = Err(NodePoolsUnread {
        list: "nodepools.karpenter.sh",
        code: Some(403),
        message: "forbidden".into(),
    });
    // Unread NodePools still leave `--pools LABEL=VALUE` its row.
    let found = nodeless_pools(Some(&unread), &[], &pools);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].name, "gpu");
}
