use super::*;
use serde_json::json;

fn node(name: &str, pool: &str, created: &str, ready: bool) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "creationTimestamp": created,
            "labels": {"kubernetes.azure.com/agentpool": pool}},
        "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            "images": [{"names": ["r.example/app:1"], "sizeBytes": 1}]}
    }))
    .expect("node")
}

fn world() -> Vec<Node> {
    vec![
        node("user-old", "user", "2026-10-01T00:00:00Z", true),
        node("user-new", "user", "2026-12-01T00:00:00Z", true),
        node(
            "user-newest-notready",
            "user",
            "2026-12-02T00:00:00Z",
            false,
        ),
        node("system-1", "system", "2026-09-01T00:00:00Z", true),
    ]
}

fn default_choice() -> Choice {
    Choice {
        nodes_per_pool: 1,
        all_nodes: false,
        pools: vec![],
        also: None,
    }
}

fn chosen(c: &[NodeChoice]) -> Vec<&str> {
    c.iter()
        .filter(|c| c.chosen)
        .map(|c| c.facts.name.as_str())
        .collect()
}

fn image() -> ImageRef {
    ImageRef::parse("r.example/app:1").expect("ref")
}

#[test]
fn by_default_the_newest_ready_node_of_each_pool() {
    let c = choose(
        &world(),
        &image(),
        &BTreeSet::new(),
        None,
        &default_choice(),
    );
    assert_eq!(chosen(&c), vec!["system-1", "user-new"]);
    let skipped = c
        .iter()
        .find(|c| c.facts.name == "user-newest-notready")
        .expect("listed");
    assert_eq!(skipped.why, ChoiceReason::NotReady);
    assert!(c.iter().all(|c| c.listed && c.eligible.is_none()));
}

#[test]
fn per_pool_count_all_nodes_pools_and_the_pods_node() {
    let two = Choice {
        nodes_per_pool: 2,
        ..default_choice()
    };
    assert_eq!(
        chosen(&choose(&world(), &image(), &BTreeSet::new(), None, &two)),
        vec!["system-1", "user-new", "user-old"]
    );
    let all = Choice {
        all_nodes: true,
        ..default_choice()
    };
    assert_eq!(
        chosen(&choose(&world(), &image(), &BTreeSet::new(), None, &all)).len(),
        3
    );
    let only_user = Choice {
        pools: vec!["user".into()],
        also: Some("system-1".into()),
        ..default_choice()
    };
    let c = choose(&world(), &image(), &BTreeSet::new(), None, &only_user);
    assert_eq!(chosen(&c), vec!["system-1", "user-new"]);
    assert_eq!(c[0].why, ChoiceReason::Landed);
}

fn with(mut n: Node, labels: serde_json::Value, spec: serde_json::Value) -> Node {
    let extra: BTreeMap<String, String> = serde_json::from_value(labels).expect("labels");
    n.metadata.labels.get_or_insert_default().extend(extra);
    n.spec = serde_json::from_value(spec).expect("spec");
    n
}

#[test]
fn nodes_that_cannot_run_a_linux_probe_are_skipped_with_their_label() {
    let newest = "2026-12-24T00:00:00Z";
    let mut nodes = world();
    nodes.push(with(
        node("win-1", "user", newest, true),
        json!({"kubernetes.io/os": "windows"}),
        json!({}),
    ));
    nodes.push(with(
        node("virtual-node-aci-linux", "user", newest, true),
        json!({"type": "virtual-kubelet"}),
        json!({}),
    ));
    nodes.push(with(
        node("fargate-ip-10-0-1-5", "user", newest, true),
        json!({"eks.amazonaws.com/compute-type": "fargate"}),
        json!({}),
    ));
    let all = Choice {
        all_nodes: true,
        also: Some("win-1".into()),
        ..default_choice()
    };
    let c = choose(&nodes, &image(), &BTreeSet::new(), None, &all);
    let evidence = |name: &str| {
        let n = c.iter().find(|c| c.facts.name == name).expect("listed");
        assert!(!n.chosen, "{name} chosen");
        n.evidence.clone()
    };
    // Not even --all-nodes or being the pod's node makes a Windows node probeable.
    assert_eq!(
        evidence("win-1").as_deref(),
        Some("kubernetes.io/os=windows")
    );
    assert_eq!(
        evidence("virtual-node-aci-linux").as_deref(),
        Some("type=virtual-kubelet")
    );
    assert_eq!(
        evidence("fargate-ip-10-0-1-5").as_deref(),
        Some("eks.amazonaws.com/compute-type=fargate")
    );
    assert_eq!(chosen(&c), vec!["system-1", "user-new", "user-old"]);
}

#[test]
fn a_node_on_its_way_out_is_never_the_newest_but_is_listed_with_all_nodes() {
    let mut nodes = world();
    nodes.push(with(
        node("user-cordoned", "user", "2026-12-20T00:00:00Z", true),
        json!({}),
        json!({"unschedulable": true}),
    ));
    nodes.push(with(
        node("user-scaling-down", "user", "2026-12-19T00:00:00Z", true),
        json!({}),
        json!({"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1734567890", "effect": "NoSchedule"}]}),
    ));
    nodes.push(with(
        node("user-disrupted", "user", "2026-12-18T00:00:00Z", true),
        json!({}),
        json!({"taints": [{"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}]}),
    ));
    let c = choose(&nodes, &image(), &BTreeSet::new(), None, &default_choice());
    assert_eq!(chosen(&c), vec!["system-1", "user-new"]);
    let cordoned = c
        .iter()
        .find(|c| c.facts.name == "user-cordoned")
        .expect("listed");
    assert_eq!(
        cordoned.evidence.as_deref(),
        Some("spec.unschedulable=true (cordoned)")
    );
    assert!(cordoned.why.to_string().contains("never a pool's newest"));
    let taint = |name: &str| {
        c.iter()
            .find(|c| c.facts.name == name)
            .and_then(|c| c.evidence.clone())
    };
    assert_eq!(
        taint("user-scaling-down").as_deref(),
        Some("taint ToBeDeletedByClusterAutoscaler:NoSchedule")
    );
    assert_eq!(
        taint("user-disrupted").as_deref(),
        Some("taint karpenter.sh/disrupted:NoSchedule")
    );
    let all = Choice {
        all_nodes: true,
        ..default_choice()
    };
    let c = choose(&nodes, &image(), &BTreeSet::new(), None, &all);
    let marked = c
        .iter()
        .find(|c| c.facts.name == "user-cordoned")
        .expect("listed");
    assert!(
        marked.chosen && marked.why.to_string().contains("on its way out"),
        "{}",
        marked.why
    );
}

#[test]
fn eligibility_is_marked_not_used_to_skip() {
    let constraints = Constraints {
        from: "Deployment/web".into(),
        node_selector: [(
            "kubernetes.azure.com/agentpool".to_string(),
            "user".to_string(),
        )]
        .into(),
        ..Constraints::default()
    };
    let c = choose(
        &world(),
        &image(),
        &BTreeSet::new(),
        Some(&constraints),
        &default_choice(),
    );
    let system = c
        .iter()
        .find(|c| c.facts.name == "system-1")
        .expect("system");
    assert!(
        system.chosen,
        "a pool it can never land on is still checked"
    );
    assert!(matches!(
        &system.eligible,
        Some(Err(super::eligibility::Ineligible::NodeSelector { .. }))
    ));
    let user = c.iter().find(|c| c.facts.name == "user-new").expect("user");
    assert_eq!(user.eligible, Some(Ok(())));
}

#[test]
fn every_reason_says_the_words_the_report_has_always_said() {
    let leaving = |all_nodes| ChoiceReason::Leaving {
        out: "taint karpenter.sh/disrupted:NoSchedule".into(),
        all_nodes,
    };
    let words = [
        (ChoiceReason::Undecided, ""),
        (ChoiceReason::Landed, "the node the pod landed on"),
        (ChoiceReason::PoolNotWanted, "pool not in --pools"),
        (ChoiceReason::NotReady, "not Ready"),
        (
            leaving(true),
            "--all-nodes; on its way out (taint karpenter.sh/disrupted:NoSchedule), not a fresh node",
        ),
        (
            leaving(false),
            "on its way out (taint karpenter.sh/disrupted:NoSchedule): never a pool's newest node",
        ),
        (ChoiceReason::AllNodes, "--all-nodes"),
        (
            ChoiceReason::Newest { rank: 1 },
            "the pool's newest Ready node",
        ),
        (
            ChoiceReason::Newest { rank: 2 },
            "the pool's newest Ready node no. 2",
        ),
        (
            ChoiceReason::Older,
            "an older node of a pool already probed",
        ),
        (
            ChoiceReason::Nodeless { fresh: true },
            "no node yet: probed on the node its autoscaler makes (--fresh-node)",
        ),
        (
            ChoiceReason::Nodeless { fresh: false },
            "no node yet: --fresh-node probes it on the node its autoscaler makes",
        ),
        (
            ChoiceReason::NotLinux(NotLinux::Windows),
            "a Windows node: the probe pod is Linux",
        ),
        (
            ChoiceReason::NotLinux(NotLinux::OtherOs {
                os: "freebsd".into(),
            }),
            "a freebsd node: the probe pod is Linux",
        ),
        (
            ChoiceReason::NotLinux(NotLinux::Virtual),
            "a virtual node (virtual-kubelet): no node filesystem or runtime to probe",
        ),
        (
            ChoiceReason::NotLinux(NotLinux::Fargate),
            "an EKS Fargate node: no hostNetwork or hostPath pods",
        ),
    ];
    for (reason, said) in words {
        assert_eq!(reason.to_string(), said);
    }
}

/// A Ready node still carrying a startup taint (its CNI agent not running yet, Karpenter not
/// through its registration) is not a pool's newest: the workload would not land on it, and
/// the node-setup DaemonSets may not have run. The next Ready node of its pool is probed.
#[test]
fn a_ready_node_with_a_startup_taint_is_skipped_with_the_taint() {
    let mut nodes = world();
    for (name, key) in [
        ("user-newest-starting", "node.cilium.io/agent-not-ready"),
        ("user-newest-unregistered", "karpenter.sh/unregistered"),
    ] {
        let mut starting = node(name, "user", "2026-12-03T00:00:00Z", true);
        starting.spec = serde_json::from_value(
            json!({"taints": [{"key": key, "value": "true", "effect": "NoExecute"}]}),
        )
        .expect("spec");
        nodes.push(starting);
    }
    let c = choose(&nodes, &image(), &BTreeSet::new(), None, &default_choice());
    assert_eq!(chosen(&c), vec!["system-1", "user-new"]);
    let skipped = c
        .iter()
        .find(|c| c.facts.name == "user-newest-starting")
        .expect("listed");
    assert_eq!(
        skipped.why.to_string(),
        "still starting (taint node.cilium.io/agent-not-ready:NoExecute): not yet a node the workload lands on"
    );
    assert_eq!(
        skipped.evidence.as_deref(),
        Some("taint node.cilium.io/agent-not-ready:NoExecute")
    );
}
