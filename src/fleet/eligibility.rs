//! Could the workload land on this node? The scheduler's required rules, as pure functions of
//! the pod template and the Node: `nodeSelector`, required node affinity
//! (`requiredDuringSchedulingIgnoredDuringExecution`, terms OR-ed, expressions AND-ed) and the
//! node's `NoSchedule`/`NoExecute` taints against the tolerations (Kubernetes docs, "Assigning
//! Pods to Nodes" and "Taints and Tolerations"; `k8s.io/component-helpers/scheduling/corev1`).
//! Preferred affinity and `PreferNoSchedule` only weigh, never forbid, so they are ignored.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, Taint, Toleration,
};

/// What the workload asks of a node (its pod template's scheduling rules).
#[derive(Debug, Clone, Default)]
pub struct Constraints {
    /// Where the rules came from (`Deployment/web in shop`), for the report.
    pub from: String,
    pub node_selector: BTreeMap<String, String>,
    /// Required node affinity terms; empty when there are none.
    pub required_terms: Vec<NodeSelectorTerm>,
    pub tolerations: Vec<Toleration>,
}

impl Constraints {
    pub fn from_spec(from: &str, spec: &PodSpec) -> Constraints {
        Constraints {
            from: from.to_string(),
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            required_terms: spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|n| {
                    n.required_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .map(|s| s.node_selector_terms.clone())
                .unwrap_or_default(),
            tolerations: spec.tolerations.clone().unwrap_or_default(),
        }
    }
}

/// The first scheduling rule that keeps the workload off a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ineligible {
    /// A `nodeSelector` label the node lacks or holds with another value (`has`).
    NodeSelector {
        key: String,
        want: String,
        has: Option<String>,
    },
    /// No term of the required node affinity matches the node.
    Affinity,
    /// A `NoSchedule`/`NoExecute` taint no toleration covers.
    Taint {
        key: String,
        value: Option<String>,
        effect: String,
    },
}

impl std::fmt::Display for Ineligible {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ineligible::NodeSelector { key, want, has } => match has {
                Some(value) => write!(f, "nodeSelector {key}={want}: the node has {key}={value}"),
                None => write!(f, "nodeSelector {key}={want}: the node has no such label"),
            },
            Ineligible::Affinity => {
                f.write_str("required node affinity: no nodeSelectorTerm matches the node")
            }
            Ineligible::Taint { key, value, effect } => match value {
                Some(value) => write!(f, "taint {key}={value}:{effect} is not tolerated"),
                None => write!(f, "taint {key}:{effect} is not tolerated"),
            },
        }
    }
}

/// Eligible, or the first rule that keeps the workload off the node.
pub fn check(constraints: &Constraints, node: &Node) -> Result<(), Ineligible> {
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let name = node.metadata.name.clone().unwrap_or_default();
    for (key, want) in &constraints.node_selector {
        if labels.get(key) != Some(want) {
            return Err(Ineligible::NodeSelector {
                key: key.clone(),
                want: want.clone(),
                has: labels.get(key).cloned(),
            });
        }
    }
    if !constraints.required_terms.is_empty()
        && !constraints
            .required_terms
            .iter()
            .any(|t| term_matches(t, &labels, &name))
    {
        return Err(Ineligible::Affinity);
    }
    for taint in node.spec.iter().flat_map(|s| s.taints.iter().flatten()) {
        if matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
            && !constraints.tolerations.iter().any(|t| tolerates(t, taint))
        {
            return Err(Ineligible::Taint {
                key: taint.key.clone(),
                value: taint.value.clone().filter(|v| !v.is_empty()),
                effect: taint.effect.clone(),
            });
        }
    }
    Ok(())
}

/// One term: every expression (labels) and field (`metadata.name`) requirement holds. An empty
/// term matches nothing, as the scheduler has it.
fn term_matches(term: &NodeSelectorTerm, labels: &BTreeMap<String, String>, name: &str) -> bool {
    let expressions = term.match_expressions.iter().flatten();
    let fields = term.match_fields.iter().flatten();
    let mut any = false;
    for r in expressions {
        any = true;
        if !requirement_holds(r, labels.get(&r.key).map(String::as_str)) {
            return false;
        }
    }
    for r in fields {
        any = true;
        let value = (r.key == "metadata.name").then_some(name);
        if !requirement_holds(r, value) {
            return false;
        }
    }
    any
}

fn requirement_holds(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.clone().unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|w| w == v)),
        "NotIn" => !value.is_some_and(|v| values.iter().any(|w| w == v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => {
            matches!((value.and_then(number), values.first().and_then(|w| number(w))), (Some(a), Some(b)) if a > b)
        }
        "Lt" => {
            matches!((value.and_then(number), values.first().and_then(|w| number(w))), (Some(a), Some(b)) if a < b)
        }
        _ => false,
    }
}

/// The toleration rule: an empty key with `Exists` tolerates everything; otherwise keys match,
/// the effect matches (or is empty) and `Equal` compares values.
fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    let effect_ok = t
        .effect
        .as_deref()
        .is_none_or(|e| e.is_empty() || e == taint.effect);
    let operator = t.operator.as_deref().unwrap_or("Equal");
    let key = t.key.as_deref().unwrap_or("");
    if key.is_empty() {
        return operator == "Exists" && effect_ok;
    }
    if key != taint.key || !effect_ok {
        return false;
    }
    match operator {
        "Exists" => true,
        "Equal" => t.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(labels: serde_json::Value, taints: serde_json::Value) -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": "n1", "labels": labels}, "spec": {"taints": taints}}),
        )
        .expect("node")
    }

    fn constraints(spec: serde_json::Value) -> Constraints {
        let mut spec = spec;
        spec["containers"] = json!([]);
        Constraints::from_spec(
            "Deployment/web",
            &serde_json::from_value(spec).expect("spec"),
        )
    }

    #[test]
    fn node_selector_must_match_every_label() {
        let c = constraints(json!({"nodeSelector": {"agentpool": "user1"}}));
        assert_eq!(
            check(&c, &node(json!({"agentpool": "user1"}), json!([]))),
            Ok(())
        );
        let refused = check(&c, &node(json!({"agentpool": "system"}), json!([])));
        assert_eq!(
            refused,
            Err(Ineligible::NodeSelector {
                key: "agentpool".into(),
                want: "user1".into(),
                has: Some("system".into())
            })
        );
        assert_eq!(
            refused.map_err(|e| e.to_string()),
            Err("nodeSelector agentpool=user1: the node has agentpool=system".into())
        );
        assert!(matches!(
            check(&c, &node(json!({}), json!([]))),
            Err(Ineligible::NodeSelector { has: None, .. })
        ));
    }

    #[test]
    fn required_affinity_terms_are_or_ed_and_expressions_and_ed() {
        let c = constraints(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a", "b"]}, {"key": "gpu", "operator": "DoesNotExist"}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}
            ]}}}}),
        );
        assert!(check(&c, &node(json!({"pool": "a"}), json!([]))).is_ok());
        // The second term names the node itself.
        assert!(check(&c, &node(json!({"pool": "c"}), json!([]))).is_ok());
        let other = serde_json::from_value::<Node>(
            json!({"metadata": {"name": "n2", "labels": {"pool": "a", "gpu": "1"}}}),
        )
        .expect("node");
        assert_eq!(check(&c, &other), Err(Ineligible::Affinity));
        let numeric = constraints(
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]}]}}}}),
        );
        assert!(check(&numeric, &node(json!({"cores": "8"}), json!([]))).is_ok());
        assert!(check(&numeric, &node(json!({"cores": "2"}), json!([]))).is_err());
    }

    #[test]
    fn taints_need_tolerations_except_prefer_no_schedule() {
        let tainted = node(
            json!({}),
            json!([{"key": "sku", "value": "gpu", "effect": "NoSchedule"}, {"key": "soft", "effect": "PreferNoSchedule"}]),
        );
        let refused = check(&constraints(json!({})), &tainted);
        assert_eq!(
            refused,
            Err(Ineligible::Taint {
                key: "sku".into(),
                value: Some("gpu".into()),
                effect: "NoSchedule".into()
            })
        );
        assert_eq!(
            refused.map_err(|e| e.to_string()),
            Err("taint sku=gpu:NoSchedule is not tolerated".into())
        );
        let equal = constraints(
            json!({"tolerations": [{"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]}),
        );
        assert!(check(&equal, &tainted).is_ok());
        let wrong_value = constraints(
            json!({"tolerations": [{"key": "sku", "operator": "Equal", "value": "cpu"}]}),
        );
        assert!(check(&wrong_value, &tainted).is_err());
        let everything = constraints(json!({"tolerations": [{"operator": "Exists"}]}));
        assert!(check(&everything, &tainted).is_ok());
        let exists_key =
            constraints(json!({"tolerations": [{"key": "sku", "operator": "Exists"}]}));
        assert!(check(&exists_key, &tainted).is_ok());
    }
}
