//! Pools with no node to probe, though the next replica may land there: a Karpenter `NodePool`
//! (`karpenter.sh/v1`; AKS node auto-provisioning and EKS Auto Mode make theirs with the same
//! API) whose nodes are all gone, and a node group scaled to zero that `--pools LABEL=VALUE`
//! names. Each is a row of the report; with `--fresh-node` its probe runs on the node the
//! autoscaler makes for it. Pure functions of the NodePools and Nodes read and the flags.
//!
//! A NodePool's nodes carry `karpenter.sh/nodepool=NAME` (`NodePoolLabelKey`,
//! kubernetes-sigs/karpenter `pkg/apis/v1/labels.go`), the template's labels, and a label for
//! each requirement with a single value; its template's `taints` are on every node it makes
//! (`startupTaints` are removed once the node is up, so they decide nothing about the workload).
//! The spec read is `spec.template.{metadata.labels, spec.taints, spec.requirements}`
//! (`pkg/apis/v1/nodepool.go`, `NodeClaimTemplate`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Taint};
use serde::Deserialize;

use super::eligibility::{self, Constraints};
use super::select::{ChoiceReason, NodeChoice, wanted};
use crate::pod::node::{self as nodes, NodeFacts};

/// The pool label of Karpenter's nodes.
pub const NODEPOOL_LABEL: &str = "karpenter.sh/nodepool";

/// Where a pool without nodes was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A `karpenter.sh/v1` NodePool of that name.
    NodePool,
    /// `--pools LABEL=VALUE`, no node of which exists.
    PoolsFlag,
}

/// A pool no node of which exists now.
#[derive(Debug, Clone, PartialEq)]
pub struct NodelessPool {
    pub name: String,
    /// The label its nodes carry (`karpenter.sh/nodepool`, `kubernetes.azure.com/agentpool`, …)
    /// and its value: what a probe pod asks for.
    pub label: (String, String),
    pub found: Found,
    /// The labels a node of it would carry (the pool label among them).
    pub labels: BTreeMap<String, String>,
    /// The taints a node of it would carry.
    pub taints: Vec<Taint>,
    /// The architectures its nodes may have (`kubernetes.io/arch In …`); `None`: any.
    pub arches: Option<Vec<String>>,
}

/// The part of a NodePool read here.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NodePoolObject {
    metadata: NameOnly,
    spec: NodePoolSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NameOnly {
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NodePoolSpec {
    template: Template,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Template {
    metadata: TemplateMetadata,
    spec: TemplateSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TemplateMetadata {
    labels: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct TemplateSpec {
    taints: Vec<Taint>,
    requirements: Vec<Requirement>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Requirement {
    key: String,
    operator: String,
    values: Vec<String>,
}

/// The pool each existing node belongs to, as (label key, value): what the functions below
/// compare with, read once per run.
pub fn pools_with_nodes(nodes: &[Node]) -> Vec<(String, String)> {
    nodes.iter().filter_map(|n| nodes::facts(n).pool).collect()
}

/// The NodePools (each a `karpenter.sh/v1` object as JSON) that no pool of `existing`
/// (`pools_with_nodes`) is, and that `--pools` wants. An object that is not a NodePool's shape
/// is skipped: a row from a guess would send a probe pod nowhere.
pub fn from_node_pools(
    items: &[serde_json::Value],
    existing: &[(String, String)],
    pools: &[String],
) -> Vec<NodelessPool> {
    items
        .iter()
        .filter_map(|item| serde_json::from_value::<NodePoolObject>(item.clone()).ok())
        .filter(|p| !p.metadata.name.is_empty())
        .filter(|p| {
            !existing
                .iter()
                .any(|(k, v)| k == NODEPOOL_LABEL && *v == p.metadata.name)
        })
        .filter(|p| wanted(pools, NODEPOOL_LABEL, &p.metadata.name))
        .map(|p| {
            let name = p.metadata.name;
            let template = p.spec.template;
            let mut labels = template.metadata.labels;
            let mut arches = None;
            for r in &template.spec.requirements {
                if r.operator != "In" {
                    continue;
                }
                if r.key == "kubernetes.io/arch" {
                    arches = Some(r.values.clone());
                }
                if let [only] = r.values.as_slice() {
                    labels.insert(r.key.clone(), only.clone());
                }
            }
            labels.insert(NODEPOOL_LABEL.to_string(), name.clone());
            NodelessPool {
                label: (NODEPOOL_LABEL.to_string(), name.clone()),
                name,
                found: Found::NodePool,
                labels,
                taints: template.spec.taints,
                arches,
            }
        })
        .collect()
}

/// The `--pools LABEL=VALUE` entries no node carries: node groups at zero. An entry without a
/// label names a pool only by its nodes, so one with none is left to `unmatched_pools`.
pub fn from_pools_flag(pools: &[String], existing: &[(String, String)]) -> Vec<NodelessPool> {
    pools
        .iter()
        .filter_map(|p| p.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim()))
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
        .filter(|(k, v)| !existing.iter().any(|(ek, ev)| ek == k && ev == v))
        .map(|(key, value)| NodelessPool {
            name: value.to_string(),
            label: (key.to_string(), value.to_string()),
            found: Found::PoolsFlag,
            labels: BTreeMap::from([(key.to_string(), value.to_string())]),
            taints: Vec::new(),
            arches: None,
        })
        .collect()
}

/// The `--pools` entries that name no pool at all: no node of that name, no `LABEL=` to ask a
/// new node for.
pub fn unmatched_pools(
    pools: &[String],
    existing: &[(String, String)],
    nodeless: &[NodelessPool],
) -> Vec<String> {
    pools
        .iter()
        .filter(|p| !p.contains('='))
        .filter(|p| !existing.iter().any(|(_, v)| v == *p))
        .filter(|p| !nodeless.iter().any(|n| n.name == **p))
        .cloned()
        .collect()
}

impl NodelessPool {
    /// The architecture its fresh node is asked for: one the run can start a probe on
    /// (`startable`, from `arch_for`), else the pool's first (the run then names the missing
    /// binary); with the run's unknown (`None`), the pool's only one, if it has one.
    pub fn fresh_arch(&self, startable: Option<&[String]>) -> Option<String> {
        let allowed = self.arches.as_deref();
        match startable {
            Some(can) => arch_for(allowed, can).or_else(|| allowed?.first().cloned()),
            None => allowed.filter(|a| a.len() == 1).map(|a| a[0].clone()),
        }
    }

    /// Where it was found, in the report's words.
    pub fn evidence(&self) -> String {
        match self.found {
            Found::NodePool => format!("NodePool {} (karpenter.sh/v1)", self.name),
            Found::PoolsFlag => format!("--pools {}={}", self.label.0, self.label.1),
        }
    }

    /// A node of the pool as the scheduler would see it: its labels and taints. What decides
    /// whether the workload could land on it.
    pub fn template(&self) -> Node {
        let mut node = Node::default();
        node.metadata.labels = Some(self.labels.clone());
        node.spec = Some(k8s_openapi::api::core::v1::NodeSpec {
            taints: Some(self.taints.clone()),
            ..Default::default()
        });
        node
    }

    /// The pool's row before any probe: not a node, so never chosen to be probed in place;
    /// `fresh`: `--fresh-node` probes it on a node its autoscaler makes. `arch`: the one its
    /// fresh node is asked for.
    pub fn candidate(
        &self,
        constraints: Option<&Constraints>,
        fresh: bool,
        arch: Option<String>,
    ) -> NodeChoice {
        let mut facts = NodeFacts::named(&format!("(no node of pool {})", self.name));
        facts.pool = Some(self.label.clone());
        NodeChoice {
            facts,
            pool: self.name.clone(),
            ready: false,
            eligible: constraints.map(|c| eligibility::check(c, &self.template())),
            listed: false,
            running: false,
            chosen: false,
            why: ChoiceReason::Nodeless { fresh },
            evidence: Some(self.evidence()),
            arch,
            nodeless: true,
        }
    }
}

/// The architecture a pool's fresh node is asked for: one of `allowed` (the pool's; `None`:
/// any) that the run can start a probe on (`can`, in order of preference), else `None`.
pub fn arch_for(allowed: Option<&[String]>, can: &[String]) -> Option<String> {
    can.iter()
        .find(|a| allowed.is_none_or(|allowed| allowed.iter().any(|x| x == *a)))
        .cloned()
}

#[cfg(test)]
mod tests;
