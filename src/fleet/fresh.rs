//! `--fresh-node`: the probe on a node the cluster's own autoscaler makes for it. The probe pod
//! is not pinned: it asks for the pool (its node selector) and Linux, tolerates what the
//! workload tolerates (else the pool's own taints) but never a startup taint, so it lands only
//! on a node that is Ready and through its startup, as the workload would; and with a required
//! node affinity it excludes every node that exists now, so only a node created after the run
//! began can run it. The autoscaler (cluster-autoscaler, Karpenter,
//! AKS node auto-provisioning) sees a pending pod and adds a node; pullpath never creates or
//! deletes nodes itself. Pure functions: the pod's placement, what its scheduling events say,
//! and how the fresh node's verdict differs from the newest existing node's.
//!
//! Words read are the scheduler's and the autoscaler's own: the default scheduler's
//! `FailedScheduling` (`0/3 nodes are available: …`); cluster-autoscaler's `TriggeredScaleUp`
//! (`pod triggered scale-up: [{GROUP 1->2 (max: 3)}]`, `ScaleUpInfo.String` in
//! processors/nodegroupset) and `NotTriggerScaleUp` (`pod didn't trigger scale-up: 1 max node
//! group size reached`, processors/status/eventing_scale_up_processor.go); Karpenter's
//! `Nominated` (`Pod should schedule on: nodeclaim/NAME`) and its own `FailedScheduling`
//! (`Failed to schedule pod, all available instance types exceed limits for nodepool
//! (NodePool=NAME)`, `PodFailedToScheduleEvent` in pkg/controllers/provisioning/scheduling/
//! events.go), told from the scheduler's by its words.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Pod, Taint, Toleration};
use serde_json::{Value, json};

use super::select::{is_leaving_taint, is_startup_taint};

/// How long an empty node made by a scale-up stays, by default: cluster-autoscaler removes an
/// unneeded node after `--scale-down-unneeded-time` (10 minutes) and not within
/// `--scale-down-delay-after-add` (10 minutes) of a scale-up; Karpenter after the NodePool's
/// `disruption.consolidateAfter`.
pub const SCALE_DOWN_NOTE: &str = "cluster-autoscaler removes the empty node about 10 minutes after the probe ends (--scale-down-unneeded-time and --scale-down-delay-after-add, 10 minutes each by default); Karpenter after the NodePool's consolidateAfter";

/// Where a fresh probe pod may run: the pool's nodes, none of today's.
#[derive(Debug, Clone, PartialEq)]
pub struct FreshPlacement {
    /// The pool's label (`kubernetes.azure.com/agentpool`, `karpenter.sh/nodepool`, …) and value.
    pub pool_label: (String, String),
    /// Every node that exists when the run starts, by name.
    pub existing: Vec<String>,
    /// What the pod tolerates ([`tolerations`]): never a startup taint.
    pub tolerations: Vec<Toleration>,
    /// The architecture the probe can start on (`kubernetes.io/arch`): a pool that may make
    /// nodes of several (a NodePool without an arch requirement) must make this one.
    pub arch: Option<String>,
}

/// The pod spec fields that place a fresh probe pod, in place of `nodeName`.
pub fn placement_fields(placement: &FreshPlacement) -> Value {
    let (key, value) = &placement.pool_label;
    let mut expressions = vec![json!({"key": key, "operator": "In", "values": [value]})];
    if let Some(arch) = &placement.arch {
        expressions.push(json!({"key": "kubernetes.io/arch", "operator": "In", "values": [arch]}));
    }
    let mut term = json!({"matchExpressions": expressions});
    if !placement.existing.is_empty() {
        term["matchFields"] =
            json!([{"key": "metadata.name", "operator": "NotIn", "values": placement.existing}]);
    }
    let tolerations = serde_json::to_value(&placement.tolerations).unwrap_or_else(|_| json!([]));
    json!({
        // Linux, as the pod's `os` says: the scheduler places by labels, not by `spec.os`.
        "nodeSelector": {key: value, "kubernetes.io/os": "linux"},
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [term],
        }}},
        "tolerations": tolerations,
    })
}

/// The taints every one of `pool_nodes` carries with a scheduling effect, startup and leaving
/// taints left out: the pool's own (`NodePool`'s `taints`, an AKS pool's `--node-taints`).
pub fn shared_taints(pool_nodes: &[&Node]) -> Vec<Taint> {
    let taints = |n: &Node| -> Vec<Taint> {
        n.spec
            .iter()
            .flat_map(|s| s.taints.iter().flatten())
            .filter(|t| matches!(t.effect.as_str(), "NoSchedule" | "NoExecute"))
            .filter(|t| !is_startup_taint(&t.key) && !is_leaving_taint(&t.key))
            .map(|t| Taint {
                time_added: None,
                ..t.clone()
            })
            .collect()
    };
    let Some((first, rest)) = pool_nodes.split_first() else {
        return Vec::new();
    };
    taints(first)
        .into_iter()
        .filter(|t| rest.iter().all(|n| taints(n).contains(t)))
        .collect()
}

/// A toleration of exactly `taint`.
fn tolerating(taint: &Taint) -> Toleration {
    let value = taint.value.clone().filter(|v| !v.is_empty());
    Toleration {
        key: Some(taint.key.clone()),
        operator: Some(if value.is_some() { "Equal" } else { "Exists" }.into()),
        value,
        effect: Some(taint.effect.clone()),
        toleration_seconds: None,
    }
}

/// What a fresh probe pod tolerates: the workload's tolerations (`--for`), else the pool's own
/// taints (`pool_taints`); never a startup taint ([`is_startup_taint`]), so the scheduler
/// binds it only once the node is Ready and its startup is done (the scheduler's
/// TaintToleration filter weighs `NoSchedule` and `NoExecute` taints; the `not-ready` and
/// `unreachable` `NoExecute` tolerations the DefaultTolerationSeconds admission adds do not
/// cover the lifecycle controller's `NoSchedule` ones). A workload toleration of every taint
/// (no key) cannot say "all but these": it becomes the pool's taints of its effect.
pub fn tolerations(workload: Option<&[Toleration]>, pool_taints: &[Taint]) -> Vec<Toleration> {
    let Some(workload) = workload else {
        return pool_taints.iter().map(tolerating).collect();
    };
    let mut out: Vec<Toleration> = Vec::new();
    for t in workload {
        match t.key.as_deref().unwrap_or("") {
            "" => {
                let effect = t.effect.as_deref().unwrap_or("");
                let covered = pool_taints
                    .iter()
                    .filter(|p| effect.is_empty() || p.effect == effect)
                    .map(tolerating);
                out.extend(covered.filter(|c| !out.contains(c)).collect::<Vec<_>>());
            }
            key if is_startup_taint(key) => {}
            _ => {
                if !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
    }
    out
}

/// What a fresh probe pod's scheduling has come to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scheduling {
    /// Bound to a node: the fresh node.
    Scheduled { node: String },
    /// Still pending; the latest word from the scheduler or the autoscaler, if any.
    Waiting { latest: Option<Said> },
    /// The autoscaler will not add a node for it: its event (`NotTriggerScaleUp`, Karpenter's
    /// `FailedScheduling`) with its reason.
    Refused { said: Said },
}

/// One scheduling event, as the run shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    pub reason: String,
    pub message: String,
}

impl std::fmt::Display for Said {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason, self.message)
    }
}

/// The reasons read from a pending pod's events.
const SCHEDULING_REASONS: [&str; 4] = [
    "FailedScheduling",
    "TriggeredScaleUp",
    "NotTriggerScaleUp",
    "Nominated",
];

/// The scheduling of `pod` from its spec and its events (oldest first). A `NotTriggerScaleUp`
/// after the latest `TriggeredScaleUp` refuses: the autoscaler has said no more recently than
/// it said yes.
pub fn scheduling(pod: &Pod, events: &[Event]) -> Scheduling {
    if let Some(node) = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty())
    {
        return Scheduling::Scheduled { node };
    }
    let said: Vec<Said> = events
        .iter()
        .filter_map(|e| {
            let reason = e.reason.clone()?;
            SCHEDULING_REASONS.contains(&reason.as_str()).then(|| Said {
                reason,
                message: e.message.clone().unwrap_or_default(),
            })
        })
        .collect();
    let latest_verdict = said
        .iter()
        .rev()
        .find(|s| refuses(s) || s.reason == "TriggeredScaleUp" || s.reason == "Nominated");
    if let Some(refused) = latest_verdict.filter(|s| refuses(s)) {
        return Scheduling::Refused {
            said: refused.clone(),
        };
    }
    Scheduling::Waiting {
        latest: said.last().cloned(),
    }
}

/// Karpenter's scheduling failures begin so; the scheduler's (`0/3 nodes are available: …`)
/// never do.
const KARPENTER_FAILED: &str = "Failed to schedule pod, ";

/// An autoscaler's no: cluster-autoscaler's `NotTriggerScaleUp`, Karpenter's `FailedScheduling`.
fn refuses(said: &Said) -> bool {
    said.reason == "NotTriggerScaleUp"
        || (said.reason == "FailedScheduling" && said.message.starts_with(KARPENTER_FAILED))
}

/// A scale-up as cluster-autoscaler reports it: `[{GROUP 1->2 (max: 3)}]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScaleUp {
    pub group: String,
    pub from: u32,
    pub to: u32,
    pub max: u32,
}

/// The scale-ups a `TriggeredScaleUp` message names.
pub fn scale_ups(message: &str) -> Vec<ScaleUp> {
    let Some(list) = message.strip_prefix("pod triggered scale-up: ") else {
        return Vec::new();
    };
    list.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .split('}')
        .filter_map(|entry| {
            let entry = entry.trim().trim_start_matches('{').trim();
            let (head, max) = entry.split_once(" (max: ")?;
            let max = max.trim_end_matches(')').trim().parse().ok()?;
            let (group, sizes) = head.rsplit_once(' ')?;
            let (from, to) = sizes.split_once("->")?;
            Some(ScaleUp {
                group: group.trim().to_string(),
                from: from.parse().ok()?,
                to: to.parse().ok()?,
                max,
            })
        })
        .collect()
}

/// What the run waits on, in a line: the latest scheduling word, shortened.
pub fn waiting_words(latest: Option<&Said>, waited: Duration) -> String {
    let secs = waited.as_secs();
    match latest {
        None => format!("pending {secs} s, no scheduling event yet"),
        Some(said) if said.reason == "TriggeredScaleUp" => {
            let groups: Vec<String> = scale_ups(&said.message)
                .iter()
                .map(|s| format!("{} {}→{} (max {})", s.group, s.from, s.to, s.max))
                .collect();
            match groups.is_empty() {
                true => format!("pending {secs} s: {said}"),
                false => format!("pending {secs} s: scale-up of {}", groups.join(", ")),
            }
        }
        Some(said) => format!("pending {secs} s: {said}"),
    }
}

/// How the fresh node's answer differs from the newest existing node's of its pool, in the
/// words an on-call engineer acts on; `None` when they agree. `hand_fixes` are the existing
/// node's (an /etc/hosts entry, a CA only it trusts): the likeliest reason it passes.
pub fn difference(
    fresh: (&str, Option<&str>),
    existing: (&str, Option<&str>),
    hand_fixes: &[String],
) -> Option<String> {
    let word = |status: &str, layer: Option<&str>| match (status, layer) {
        ("passed", _) => "passes".to_string(),
        ("works-from-cache", Some(layer)) => {
            format!("works only from its cache (a fresh pull fails at {layer})")
        }
        (_, Some(layer)) => format!("fails at {layer}"),
        (status, None) => format!("has no answer ({status})"),
    };
    let (fresh_word, existing_word) = (word(fresh.0, fresh.1), word(existing.0, existing.1));
    if fresh_word == existing_word {
        return None;
    }
    let through = match (existing.0, hand_fixes.is_empty()) {
        ("passed" | "works-from-cache", false) => format!(" (through {})", hand_fixes.join("; ")),
        _ => String::new(),
    };
    Some(format!(
        "the newest existing node {existing_word}{through}; a fresh node {fresh_word}: the next scale-up meets the fresh node's answer"
    ))
}

#[cfg(test)]
mod tests;
