//! Which nodes to probe: the cluster's nodes grouped by pool (cluster mode's labels), and per
//! pool the newest Ready nodes, the ones least likely to carry a hand fix. Nodes that cannot run
//! a Linux probe pod (Windows, virtual nodes, Fargate) are skipped with the label that says so;
//! nodes on their way out (cordoned, tainted for deletion) are never a pool's newest. Pure
//! functions of the Nodes read and the flags.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::Node;

use super::eligibility::{self, Constraints};
use crate::image_ref::ImageRef;
use crate::pod::node::{self as nodes, NodeFacts};

/// The pool name of nodes no provider label names.
pub const NO_POOL: &str = "(no pool label)";

/// `--nodes-per-pool`, `--all-nodes`, `--pools`; `--selector` is applied by the API when
/// listing nodes.
#[derive(Debug, Clone)]
pub struct Choice {
    pub nodes_per_pool: usize,
    pub all_nodes: bool,
    /// Only these pools (empty: every pool).
    pub pools: Vec<String>,
    /// Always probed, whatever its age (the node a pod named by `--for pod/NAME` landed on).
    pub also: Option<String>,
}

/// One node as the report sees it, probed or not.
#[derive(Debug, Clone)]
pub struct NodeChoice {
    pub facts: NodeFacts,
    pub pool: String,
    pub ready: bool,
    /// `None` without a workload (`--for`); else whether it could land here and why not.
    pub eligible: Option<Result<(), super::eligibility::Ineligible>>,
    /// `node.status.images` lists the image.
    pub listed: bool,
    /// A pod on the node runs the image now.
    pub running: bool,
    /// Chosen to be probed.
    pub chosen: bool,
    /// Why this node was (or was not) chosen.
    pub why: ChoiceReason,
    /// The label, taint or field behind `why` when one decided it (`kubernetes.io/os=windows`,
    /// `spec.unschedulable=true`, `taint ToBeDeletedByClusterAutoscaler:NoSchedule`).
    pub evidence: Option<String>,
    /// `kubernetes.io/arch` (else `status.nodeInfo.architecture`).
    pub arch: Option<String>,
    /// A pool with no node yet (`nodeless`): the row stands for the node its autoscaler would
    /// make, not for a node that exists.
    pub nodeless: bool,
}

/// Why a node was (or was not) chosen, with its evidence; `Display` gives the report's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChoiceReason {
    /// Not decided yet: a row before its pool is read.
    Undecided,
    /// A node a Linux probe pod cannot run on.
    NotLinux(NotLinux),
    /// The node a `--for pod/NAME` landed on: always probed.
    Landed,
    /// `--pools` leaves its pool out.
    PoolNotWanted,
    NotReady,
    /// Ready but still carrying a startup taint (`taint`): the node-setup DaemonSets may not
    /// have run, and the workload would not land on it yet.
    Starting {
        taint: String,
    },
    /// Cordoned or tainted for deletion (`out`: the field or taint); `--all-nodes` probes it
    /// all the same.
    Leaving {
        out: String,
        all_nodes: bool,
    },
    AllNodes,
    /// The pool's `rank`-th newest Ready node (from 1).
    Newest {
        rank: usize,
    },
    /// Older than the `--nodes-per-pool` newest of its pool.
    Older,
    /// A pool with no node yet; `fresh`: `--fresh-node` probes it on the node its autoscaler
    /// makes.
    Nodeless {
        fresh: bool,
    },
}

impl std::fmt::Display for ChoiceReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChoiceReason::Undecided => Ok(()),
            ChoiceReason::NotLinux(kind) => write!(f, "{kind}"),
            ChoiceReason::Landed => f.write_str("the node the pod landed on"),
            ChoiceReason::PoolNotWanted => f.write_str("pool not in --pools"),
            ChoiceReason::NotReady => f.write_str("not Ready"),
            ChoiceReason::Starting { taint } => {
                write!(
                    f,
                    "still starting ({taint}): not yet a node the workload lands on"
                )
            }
            ChoiceReason::Leaving {
                out,
                all_nodes: true,
            } => write!(f, "--all-nodes; on its way out ({out}), not a fresh node"),
            ChoiceReason::Leaving {
                out,
                all_nodes: false,
            } => write!(f, "on its way out ({out}): never a pool's newest node"),
            ChoiceReason::AllNodes => f.write_str("--all-nodes"),
            ChoiceReason::Newest { rank: 1 } => f.write_str("the pool's newest Ready node"),
            ChoiceReason::Newest { rank } => write!(f, "the pool's newest Ready node no. {rank}"),
            ChoiceReason::Older => f.write_str("an older node of a pool already probed"),
            ChoiceReason::Nodeless { fresh: true } => {
                f.write_str("no node yet: probed on the node its autoscaler makes (--fresh-node)")
            }
            ChoiceReason::Nodeless { fresh: false } => {
                f.write_str("no node yet: --fresh-node probes it on the node its autoscaler makes")
            }
        }
    }
}

/// What kind of node cannot run a Linux probe pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotLinux {
    Windows,
    /// Another `status.nodeInfo.operatingSystem`.
    OtherOs {
        os: String,
    },
    /// A virtual-kubelet node.
    Virtual,
    Fargate,
}

impl std::fmt::Display for NotLinux {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotLinux::Windows => f.write_str("a Windows node: the probe pod is Linux"),
            NotLinux::OtherOs { os } => write!(f, "a {os} node: the probe pod is Linux"),
            NotLinux::Virtual => f.write_str(
                "a virtual node (virtual-kubelet): no node filesystem or runtime to probe",
            ),
            NotLinux::Fargate => {
                f.write_str("an EKS Fargate node: no hostNetwork or hostPath pods")
            }
        }
    }
}

/// A label of `node`, as `key=value`, when it has that key with one of `values`.
fn label_is(node: &Node, key: &str, values: &[&str]) -> Option<String> {
    let value = node.metadata.labels.as_ref()?.get(key)?;
    values
        .iter()
        .any(|v| v.eq_ignore_ascii_case(value))
        .then(|| format!("{key}={value}"))
}

/// Why a Linux probe pod cannot run on `node`, and the label that says so. A probe pod there
/// would fail for reasons of the node's kind, and its pool would be blamed.
///
/// - `kubernetes.io/os` (the kubelet sets it from its GOOS: kubernetes.io/docs/reference/
///   labels-annotations-taints/#kubernetes-io-os); `status.nodeInfo.operatingSystem` too.
/// - `type=virtual-kubelet`: what virtual-kubelet nodes carry (AKS virtual nodes / ACI, the
///   virtual-kubelet providers; tigera/operator PR #1166 skips AKS virtual nodes by it), with
///   `virtual-kubelet.io/provider` as their taint and label.
/// - `eks.amazonaws.com/compute-type=fargate`: every EKS Fargate node (one pod per node, no
///   hostNetwork or hostPath: docs.aws.amazon.com/eks/latest/userguide/fargate.html).
///
/// GKE Autopilot nodes carry no label verified here; Autopilot refuses hostPath pods at create
/// time with its policy webhook, which the run names as an admission-webhook refusal.
pub fn cannot_run_linux_probe(node: &Node) -> Option<(NotLinux, String)> {
    if let Some(label) = label_is(node, "kubernetes.io/os", &["windows"]) {
        return Some((NotLinux::Windows, label));
    }
    let os = node
        .status
        .as_ref()
        .and_then(|s| s.node_info.as_ref())
        .map(|i| i.operating_system.as_str())
        .filter(|os| !os.is_empty() && !os.eq_ignore_ascii_case("linux"));
    if let Some(os) = os {
        return Some((
            NotLinux::OtherOs { os: os.to_string() },
            format!("status.nodeInfo.operatingSystem={os}"),
        ));
    }
    let virtual_node = label_is(node, "type", &["virtual-kubelet"]).or_else(|| {
        let labels = node.metadata.labels.as_ref()?;
        labels
            .get("virtual-kubelet.io/provider")
            .map(|p| format!("virtual-kubelet.io/provider={p}"))
    });
    if let Some(label) = virtual_node {
        return Some((NotLinux::Virtual, label));
    }
    if let Some(label) = label_is(node, "eks.amazonaws.com/compute-type", &["fargate"]) {
        return Some((NotLinux::Fargate, label));
    }
    None
}

/// Taints that mark a node for removal, whatever their effect:
/// cluster-autoscaler's `ToBeDeletedByClusterAutoscaler` (`utils/taints/taints.go`
/// `ToBeDeletedTaint`), the node lifecycle controller's `node.kubernetes.io/unschedulable`
/// (the taint of a cordon) and `node.kubernetes.io/out-of-service`, Karpenter's
/// `karpenter.sh/disrupted` (v1, `pkg/apis/v1/taints.go`) and `karpenter.sh/disruption`
/// (v1beta1).
const LEAVING_TAINTS: [&str; 5] = [
    "ToBeDeletedByClusterAutoscaler",
    "node.kubernetes.io/unschedulable",
    "node.kubernetes.io/out-of-service",
    "karpenter.sh/disrupted",
    "karpenter.sh/disruption",
];

/// Taints a node carries while it starts, removed once it is ready for workloads; a pod that
/// tolerates one can land before the node-setup DaemonSets ran, where the workload never would:
/// - `node.kubernetes.io/not-ready`, `node.kubernetes.io/unreachable`,
///   `node.kubernetes.io/network-unavailable` (the node lifecycle controller's, from the
///   node's conditions: kubernetes `pkg/apis/core/v1/well_known_taints.go`
///   `TaintNodeNotReady`, `TaintNodeUnreachable`, `TaintNodeNetworkUnavailable`);
/// - `node.cloudprovider.kubernetes.io/uninitialized` (the kubelet with
///   `--cloud-provider=external` until the cloud controller manager initialises the node:
///   `k8s.io/cloud-provider` `api.TaintExternalCloudProvider`);
/// - `karpenter.sh/unregistered` (Karpenter v1 until the node registers: `pkg/apis/v1/
///   taints.go` `UnregisteredNoExecuteTaint`);
/// - `node.cilium.io/agent-not-ready` (Cilium's agent, removed when it runs: Cilium docs,
///   "Taint Effects"), and every `…/agent-not-ready` of the same pattern (the AWS EBS and EFS
///   CSI drivers' `ebs.csi.aws.com/agent-not-ready`, `efs.csi.aws.com/agent-not-ready`).
pub const STARTUP_TAINTS: [&str; 6] = [
    "node.kubernetes.io/not-ready",
    "node.kubernetes.io/unreachable",
    "node.kubernetes.io/network-unavailable",
    "node.cloudprovider.kubernetes.io/uninitialized",
    "karpenter.sh/unregistered",
    "node.cilium.io/agent-not-ready",
];

/// A taint a node carries only while it starts (see [`STARTUP_TAINTS`]).
pub fn is_startup_taint(key: &str) -> bool {
    STARTUP_TAINTS.contains(&key) || key.ends_with("/agent-not-ready")
}

/// A taint that marks a node for removal (see [`LEAVING_TAINTS`]).
pub fn is_leaving_taint(key: &str) -> bool {
    LEAVING_TAINTS.contains(&key)
}

/// The startup taint `node` still carries (`taint KEY:EFFECT`): not yet a node the workload
/// would land on.
pub fn still_starting(node: &Node) -> Option<String> {
    node.spec
        .iter()
        .flat_map(|s| s.taints.iter().flatten())
        .find(|t| is_startup_taint(&t.key))
        .map(|t| format!("taint {}:{}", t.key, t.effect))
}

/// The field or taint that says `node` is on its way out: cordoned or tainted for deletion. Such
/// a node is not what a scale-up looks like, however new.
pub fn on_its_way_out(node: &Node) -> Option<String> {
    let spec = node.spec.as_ref()?;
    if spec.unschedulable == Some(true) {
        return Some("spec.unschedulable=true (cordoned)".into());
    }
    spec.taints
        .iter()
        .flatten()
        .find(|t| LEAVING_TAINTS.contains(&t.key.as_str()))
        .map(|t| format!("taint {}:{}", t.key, t.effect))
}

/// The node's architecture as the scheduler sees it.
fn arch_of(node: &Node) -> Option<String> {
    node.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get("kubernetes.io/arch").cloned())
        .or_else(|| {
            node.status
                .as_ref()?
                .node_info
                .as_ref()
                .map(|i| i.architecture.clone())
                .filter(|a| !a.is_empty())
        })
}

pub fn pool_of(facts: &NodeFacts) -> String {
    facts
        .pool
        .as_ref()
        .map_or(NO_POOL.to_string(), |p| p.1.clone())
}

/// The node's Ready condition is True.
pub fn is_ready(node: &Node) -> bool {
    node.status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// Every node, each marked chosen or not, grouped by pool (pools in name order, newest node
/// first within a pool). `running_on`: the nodes where a pod runs the image.
pub fn choose(
    nodes: &[Node],
    image: &ImageRef,
    running_on: &BTreeSet<String>,
    constraints: Option<&Constraints>,
    choice: &Choice,
) -> Vec<NodeChoice> {
    let mut by_pool: BTreeMap<String, Vec<NodeChoice>> = BTreeMap::new();
    let mut leaving: BTreeMap<String, String> = BTreeMap::new();
    let mut not_linux: BTreeMap<String, (NotLinux, String)> = BTreeMap::new();
    let mut starting: BTreeMap<String, String> = BTreeMap::new();
    for node in nodes {
        let facts = nodes::facts(node);
        let pool = pool_of(&facts);
        if let Some(why) = on_its_way_out(node) {
            leaving.insert(facts.name.clone(), why);
        }
        if let Some(why) = cannot_run_linux_probe(node) {
            not_linux.insert(facts.name.clone(), why);
        }
        if let Some(taint) = still_starting(node) {
            starting.insert(facts.name.clone(), taint);
        }
        by_pool.entry(pool.clone()).or_default().push(NodeChoice {
            evidence: None,
            arch: arch_of(node),
            pool,
            ready: is_ready(node),
            eligible: constraints.map(|c| eligibility::check(c, node)),
            listed: nodes::lists_image(node, image),
            running: running_on.contains(&facts.name),
            chosen: false,
            why: ChoiceReason::Undecided,
            nodeless: false,
            facts,
        });
    }
    let mut out = Vec::new();
    for (pool, mut members) in by_pool {
        // Newest first; unknown creation times last, then by name for a stable order.
        members.sort_by(|a, b| {
            b.facts
                .created_seconds
                .unwrap_or(i64::MIN)
                .cmp(&a.facts.created_seconds.unwrap_or(i64::MIN))
                .then(a.facts.name.cmp(&b.facts.name))
        });
        let pool_wanted = members.first().is_some_and(|m| {
            let key = m.facts.pool.as_ref().map_or("", |p| p.0.as_str());
            wanted(&choice.pools, key, &pool)
        });
        let mut taken = 0;
        for c in &mut members {
            let named = choice.also.as_deref() == Some(c.facts.name.as_str());
            let leaving = leaving.get(&c.facts.name);
            if let Some((why, label)) = not_linux.get(&c.facts.name) {
                (c.chosen, c.why, c.evidence) = (
                    false,
                    ChoiceReason::NotLinux(why.clone()),
                    Some(label.clone()),
                );
                continue;
            }
            (c.chosen, c.why) = if named {
                (true, ChoiceReason::Landed)
            } else if !pool_wanted {
                (false, ChoiceReason::PoolNotWanted)
            } else if !c.ready {
                (false, ChoiceReason::NotReady)
            } else if let Some(taint) = starting.get(&c.facts.name) {
                c.evidence = Some(taint.clone());
                let taint = taint.clone();
                (false, ChoiceReason::Starting { taint })
            } else if let Some(out) = leaving {
                c.evidence = Some(out.clone());
                let all_nodes = choice.all_nodes;
                let out = out.clone();
                (all_nodes, ChoiceReason::Leaving { out, all_nodes })
            } else if choice.all_nodes {
                (true, ChoiceReason::AllNodes)
            } else if taken < choice.nodes_per_pool {
                taken += 1;
                (true, ChoiceReason::Newest { rank: taken })
            } else {
                (false, ChoiceReason::Older)
            };
        }
        out.extend(members);
    }
    out
}

/// Whether `--pools` (empty: every pool) wants pool `name` of label `key`: by name, or as
/// `key=name`.
pub fn wanted(pools: &[String], key: &str, name: &str) -> bool {
    pools.is_empty()
        || pools
            .iter()
            .any(|p| p == name || p.split_once('=') == Some((key, name)))
}

#[cfg(test)]
mod tests;
