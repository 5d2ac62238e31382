use super::*;
use serde_json::json;

fn node(name: &str, labels: serde_json::Value) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).expect("node")
}

/// A NodePool as `kubectl get nodepools -o json` lists it (karpenter.sh/v1; the shape of
/// kubernetes-sigs/karpenter `examples/v1/`).
fn node_pool(
    name: &str,
    requirements: serde_json::Value,
    taints: serde_json::Value,
) -> serde_json::Value {
    json!({"apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": {
            "metadata": {"labels": {"team": "data"}},
            "spec": {"nodeClassRef": {"group": "karpenter.azure.com", "kind": "AKSNodeClass", "name": "default"},
                "requirements": requirements, "taints": taints,
                "startupTaints": [{"key": "node.cilium.io/agent-not-ready", "effect": "NoExecute"}]}}},
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"}})
}

#[test]
fn a_node_pool_without_nodes_is_a_pool_and_one_with_nodes_is_not() {
    let nodes = [node(
        "aks-default-x7k2p",
        json!({"karpenter.sh/nodepool": "default"}),
    )];
    let items = [
        node_pool("default", json!([]), json!([])),
        node_pool(
            "gpu",
            json!([{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                   {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]}]),
            json!([{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]),
        ),
    ];
    let found = from_node_pools(&items, &pools_with_nodes(&nodes), &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    let gpu = &found[0];
    assert_eq!(gpu.name, "gpu");
    assert_eq!(gpu.found, Found::NodePool);
    assert_eq!(gpu.label, (NODEPOOL_LABEL.to_string(), "gpu".to_string()));
    assert_eq!(gpu.arches, Some(vec!["amd64".to_string()]));
    // Single-valued requirements become labels; multi-valued ones do not; the template's own
    // labels and the pool label are there.
    assert_eq!(
        gpu.labels.get("kubernetes.io/arch").map(String::as_str),
        Some("amd64")
    );
    assert!(!gpu.labels.contains_key("karpenter.sh/capacity-type"));
    assert_eq!(gpu.labels.get("team").map(String::as_str), Some("data"));
    assert_eq!(
        gpu.labels.get(NODEPOOL_LABEL).map(String::as_str),
        Some("gpu")
    );
    // Taints, not startup taints.
    assert_eq!(gpu.taints.len(), 1);
    assert_eq!(gpu.taints[0].key, "nvidia.com/gpu");
    assert_eq!(gpu.evidence(), "NodePool gpu (karpenter.sh/v1)");
}

#[test]
fn pools_flag_chooses_among_node_pools_and_names_groups_at_zero() {
    let nodes = [node(
        "aks-user-1",
        json!({"kubernetes.azure.com/agentpool": "user"}),
    )];
    let items = [
        node_pool("a", json!([]), json!([])),
        node_pool("b", json!([]), json!([])),
    ];
    let pools = vec!["b".to_string()];
    let found: Vec<String> = from_node_pools(&items, &pools_with_nodes(&nodes), &pools)
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(found, ["b"]);
    let pools = vec![
        "kubernetes.azure.com/agentpool=gpu".to_string(),
        "kubernetes.azure.com/agentpool=user".to_string(),
        "user".to_string(),
        "nowhere".to_string(),
        "=empty".to_string(),
    ];
    let zero = from_pools_flag(&pools, &pools_with_nodes(&nodes));
    assert_eq!(
        zero.len(),
        1,
        "the group with a node is not nodeless: {zero:?}"
    );
    assert_eq!(zero[0].name, "gpu");
    assert_eq!(zero[0].found, Found::PoolsFlag);
    assert_eq!(
        zero[0].evidence(),
        "--pools kubernetes.azure.com/agentpool=gpu"
    );
    assert_eq!(
        unmatched_pools(&pools, &pools_with_nodes(&nodes), &zero),
        ["nowhere"]
    );
}

#[test]
fn wanted_matches_a_pool_by_name_or_by_its_label() {
    assert!(wanted(&[], "agentpool", "x"));
    assert!(wanted(&["x".into()], "agentpool", "x"));
    assert!(wanted(&["agentpool=x".into()], "agentpool", "x"));
    assert!(!wanted(&["other=x".into()], "agentpool", "x"));
    assert!(!wanted(&["y".into()], "agentpool", "x"));
}

#[test]
fn a_shape_that_is_not_a_node_pool_is_skipped_not_guessed() {
    let items = [
        json!({"metadata": {"name": 7}}),
        json!([]),
        json!({"metadata": {}}),
    ];
    assert!(from_node_pools(&items, &[], &[]).is_empty());
}

#[test]
fn the_workload_is_checked_against_what_a_node_of_the_pool_would_carry() {
    let items = [node_pool(
        "gpu",
        json!([]),
        json!([{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]),
    )];
    let pool = &from_node_pools(&items, &[], &[])[0];
    let untolerant = Constraints::default();
    let row = pool.candidate(Some(&untolerant), true, Some("amd64".into()));
    assert!(matches!(
        row.eligible,
        Some(Err(eligibility::Ineligible::Taint { ref key, .. })) if key == "nvidia.com/gpu"
    ));
    assert!(row.nodeless && !row.chosen, "{row:?}");
    assert_eq!(row.pool, "gpu");
    assert_eq!(row.arch.as_deref(), Some("amd64"));
    assert_eq!(
        row.evidence.as_deref(),
        Some("NodePool gpu (karpenter.sh/v1)")
    );
}

#[test]
fn the_fresh_node_is_asked_for_an_architecture_the_run_can_start() {
    let can = ["amd64".to_string(), "arm64".to_string()];
    assert_eq!(arch_for(None, &can).as_deref(), Some("amd64"));
    assert_eq!(
        arch_for(Some(&["arm64".to_string()]), &can).as_deref(),
        Some("arm64")
    );
    assert_eq!(arch_for(Some(&["s390x".to_string()]), &can), None);
}
