use super::*;
use k8s_openapi::api::core::v1::Taint;

fn pod(node: Option<&str>) -> Pod {
    serde_json::from_value(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [], "nodeName": node}}),
    )
    .expect("pod")
}

fn event(reason: &str, message: &str) -> Event {
    serde_json::from_value(
        json!({"metadata": {"name": "e"}, "involvedObject": {"name": "p"},
        "reason": reason, "message": message}),
    )
    .expect("event")
}

#[test]
fn the_placement_asks_for_the_pool_and_excludes_every_node_of_today() {
    let fields = placement_fields(&FreshPlacement {
        pool_label: ("kubernetes.azure.com/agentpool".into(), "user".into()),
        existing: vec!["n1".into(), "n2".into()],
        tolerations: Vec::new(),
        arch: Some("arm64".into()),
    });
    assert_eq!(
        fields["nodeSelector"],
        json!({"kubernetes.azure.com/agentpool": "user", "kubernetes.io/os": "linux"})
    );
    let term = &fields["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0];
    assert_eq!(
        term["matchFields"],
        json!([{"key": "metadata.name", "operator": "NotIn", "values": ["n1", "n2"]}])
    );
    assert_eq!(term["matchExpressions"][0]["values"], json!(["user"]));
    // The architecture the probe can start on: a pool of mixed nodes must make that one.
    assert_eq!(
        term["matchExpressions"][1],
        json!({"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]})
    );
    assert_eq!(fields["tolerations"], json!([]));
    // The workload's tolerations, when it has some, and no empty NotIn.
    let only = placement_fields(&FreshPlacement {
        pool_label: ("agentpool".into(), "gpu".into()),
        existing: vec![],
        tolerations: vec![Toleration {
            key: Some("sku".into()),
            operator: Some("Equal".into()),
            value: Some("gpu".into()),
            effect: Some("NoSchedule".into()),
            toleration_seconds: None,
        }],
        arch: None,
    });
    assert_eq!(
        only["tolerations"],
        json!([{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
    );
    let term = &only["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0];
    assert!(term.get("matchFields").is_none(), "{term}");
    assert_eq!(term["matchExpressions"].as_array().map(Vec::len), Some(1));
}

#[test]
fn scheduling_follows_the_schedulers_and_the_autoscalers_words() {
    assert_eq!(
        scheduling(&pod(Some("aks-user-9")), &[]),
        Scheduling::Scheduled {
            node: "aks-user-9".into()
        }
    );
    assert_eq!(
        scheduling(&pod(None), &[]),
        Scheduling::Waiting { latest: None }
    );
    let failed = event(
        "FailedScheduling",
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
    );
    let triggered = event(
        "TriggeredScaleUp",
        "pod triggered scale-up: [{aks-user-24791652-vmss 2->3 (max: 5)}]",
    );
    let refused = event(
        "NotTriggerScaleUp",
        "pod didn't trigger scale-up: 1 max node group size reached",
    );
    let other = event("Scheduled", "ignored");
    assert!(matches!(
        scheduling(&pod(None), &[failed.clone(), triggered.clone(), other]),
        Scheduling::Waiting { latest: Some(Said { reason, .. }) } if reason == "TriggeredScaleUp"
    ));
    assert_eq!(
        scheduling(&pod(None), &[failed.clone(), refused.clone()]),
        Scheduling::Refused {
            said: Said {
                reason: "NotTriggerScaleUp".into(),
                message: "pod didn't trigger scale-up: 1 max node group size reached".into()
            }
        }
    );
    // A scale-up after an earlier refusal: waiting for it, not refused.
    assert!(matches!(
        scheduling(&pod(None), &[refused, failed, triggered]),
        Scheduling::Waiting { .. }
    ));
}

#[test]
fn a_scale_up_is_read_from_cluster_autoscalers_words() {
    assert_eq!(
        scale_ups(
            "pod triggered scale-up: [{aks-user-24791652-vmss 2->3 (max: 5)} {spot 0->1 (max: 2)}]"
        ),
        [
            ScaleUp {
                group: "aks-user-24791652-vmss".into(),
                from: 2,
                to: 3,
                max: 5
            },
            ScaleUp {
                group: "spot".into(),
                from: 0,
                to: 1,
                max: 2
            }
        ]
    );
    assert!(scale_ups("something else").is_empty());
    assert!(scale_ups("pod triggered scale-up: [{broken}]").is_empty());
    let said = Said {
        reason: "TriggeredScaleUp".into(),
        message: "pod triggered scale-up: [{user 2->3 (max: 5)}]".into(),
    };
    assert_eq!(
        waiting_words(Some(&said), Duration::from_secs(42)),
        "pending 42 s: scale-up of user 2→3 (max 5)"
    );
}

#[test]
fn a_difference_names_the_hand_fix_the_existing_node_passes_through() {
    let fixes = vec!["/etc/hosts maps registry.example.test".to_string()];
    assert_eq!(
        difference(("failed", Some("dns")), ("passed", None), &fixes).as_deref(),
        Some(
            "the newest existing node passes (through /etc/hosts maps registry.example.test); a fresh node fails at dns: the next scale-up meets the fresh node's answer"
        )
    );
    assert_eq!(
        difference(("failed", Some("dns")), ("failed", Some("dns")), &[]),
        None
    );
    assert_eq!(difference(("passed", None), ("passed", None), &fixes), None);
    assert!(
        difference(
            ("failed", Some("auth")),
            ("works-from-cache", Some("auth")),
            &[]
        )
        .is_some_and(|d| d.contains("works only from its cache"))
    );
}

/// Karpenter says no with its own `FailedScheduling` (`PodFailedToScheduleEvent`,
/// kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/events.go): a refusal; the
/// scheduler's `FailedScheduling` beside it is not, and a later `Nominated` is a yes.
#[test]
fn karpenters_failed_scheduling_refuses_and_its_nomination_does_not() {
    let scheduler = event(
        "FailedScheduling",
        "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
    );
    let karpenter = event(
        "FailedScheduling",
        "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=gpu)",
    );
    let nominated = event("Nominated", "Pod should schedule on: nodeclaim/gpu-x7k2p");
    assert!(matches!(
        scheduling(&pod(None), std::slice::from_ref(&scheduler)),
        Scheduling::Waiting { .. }
    ));
    assert!(matches!(
        scheduling(&pod(None), &[scheduler.clone(), karpenter.clone()]),
        Scheduling::Refused { said } if said.reason == "FailedScheduling"
            && said.message.contains("exceed limits for nodepool (NodePool=gpu)")
    ));
    assert!(matches!(
        scheduling(&pod(None), &[karpenter, scheduler, nominated]),
        Scheduling::Waiting { latest: Some(Said { reason, .. }) } if reason == "Nominated"
    ));
}

fn tainted(taints: Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": "n"}, "spec": {"taints": taints}}))
        .expect("node")
}

fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: value.map(Into::into),
        effect: effect.into(),
        time_added: None,
    }
}

#[test]
fn the_pools_own_taints_are_those_its_nodes_share_without_startup_or_leaving_ones() {
    let sku = json!({"key": "sku", "value": "gpu", "effect": "NoSchedule"});
    let a = tainted(
        json!([sku, {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
        {"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"},
        {"key": "team", "value": "a", "effect": "PreferNoSchedule"}]),
    );
    let b = tainted(
        json!([sku, {"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"},
        {"key": "dedicated", "value": "x", "effect": "NoExecute"}]),
    );
    assert_eq!(
        shared_taints(&[&a, &b]),
        [taint("sku", Some("gpu"), "NoSchedule")]
    );
    assert!(shared_taints(&[]).is_empty());
    assert!(is_startup_taint("ebs.csi.aws.com/agent-not-ready"));
    assert!(is_startup_taint("karpenter.sh/unregistered"));
    assert!(!is_startup_taint("sku"));
}

#[test]
fn a_fresh_pod_tolerates_the_workloads_or_the_pools_taints_never_a_startup_one() {
    let pool = [
        taint("sku", Some("gpu"), "NoSchedule"),
        taint("dedicated", None, "NoExecute"),
    ];
    // No workload: exactly the pool's taints.
    let own = serde_json::to_value(tolerations(None, &pool)).expect("json");
    assert_eq!(
        own,
        json!([{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}])
    );
    let toleration = |value: Value| -> Toleration { serde_json::from_value(value).expect("t") };
    // The workload's: kept, but a startup taint's dropped, and "every taint" becomes the pool's
    // of that effect (DaemonSets tolerate everything; the probe must not land on a starting node).
    let workload = [
        toleration(
            json!({"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"}),
        ),
        toleration(json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists"})),
        toleration(
            json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
        ),
        toleration(json!({"operator": "Exists", "effect": "NoSchedule"})),
    ];
    let theirs = serde_json::to_value(tolerations(Some(&workload), &pool)).expect("json");
    assert_eq!(
        theirs,
        json!([{"key": "team", "operator": "Equal", "value": "a", "effect": "NoSchedule"},
            {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}])
    );
    let everything = [toleration(json!({"operator": "Exists"}))];
    assert_eq!(tolerations(Some(&everything), &pool).len(), 2);
}
