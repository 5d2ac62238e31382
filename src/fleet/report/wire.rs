//! The fleet report's wire types (`pullpath.fleet/v1`): serialize-only, documented in
//! docs/fleet.md with their schema docs/fleet.schema.json. `report` builds them.

use serde::Serialize;

use crate::fleet::answer::RuntimeAnswer;
use crate::fleet::kubelet_pull::KubeletPullReport;
use crate::verdict::Verdict;

/// Names the format and its version. Adding fields is compatible; a field that changes meaning
/// or disappears bumps it.
pub const SCHEMA: &str = "pullpath.fleet/v1";

#[derive(Debug, Clone, Serialize)]
pub struct FleetReport {
    pub schema: &'static str,
    pub command: &'static str,
    pub image: String,
    pub run_id: String,
    pub probe_namespace: String,
    pub probe_image: String,
    /// No registry: what the run delivered through the API.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliveryReport>,
    /// The workload whose scheduling rules decide eligibility (`--for`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// The worst eligible pool's verdict.
    pub verdict: Verdict,
    /// `finished`, `deadline` or `interrupted`.
    pub ending: &'static str,
    /// Every probed node, pool by pool, newest first.
    pub nodes: Vec<NodeRow>,
    pub pools: Vec<PoolRow>,
    /// The comparison in words, worst pool first.
    pub summary: Vec<String>,
    /// Nodes not probed, and why.
    pub skipped: Vec<SkippedNode>,
    /// What kept the run from asking a node (each with its node), and what it could not read:
    /// problems of the run, never verdicts on a pool.
    pub problems: Vec<ProblemReport>,
    pub cleanup: CleanupReport,
    pub elapsed_ms: u64,
}

/// No registry: the image a probe pod started from, one its node held (`imagePullPolicy:
/// Never`), and why that one.
#[derive(Debug, Clone, Serialize)]
pub struct NodeImageReport {
    pub image: String,
    /// `given` (`--node-image`), `sandbox` (the node's pause image, listed in its status),
    /// `running` (a running container's image), `cluster-sandbox` (no node yet).
    pub source: &'static str,
    pub why: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeRow {
    pub node: String,
    pub pool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_seconds: Option<i64>,
    /// Absent without `--for`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eligible: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_eligible_because: Option<String>,
    pub chosen_because: String,
    /// `passed`, `failed`, `works-from-cache`, `probe-image-failed`, `undecided`, `no-answer`.
    pub status: &'static str,
    pub verdict: Verdict,
    /// The node holds the image: see `cache_evidence`.
    pub cached: bool,
    /// `running` (a pod on the node runs it), `listed` (`node.status.images`).
    pub cache_evidence: Vec<&'static str>,
    pub hand_fixes: Vec<String>,
    /// Where the verdict comes from: `probe` (its report), `probe-pod` (the probe pod's own
    /// pull failure, explained), `run` (no answer).
    pub source: &'static str,
    /// The probe pod's own image-pull failure as the kubelet reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe_pod_message: Option<String>,
    pub probe_pod: String,
    /// No registry: the image the probe pod started from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_image: Option<NodeImageReport>,
    pub elapsed_ms: u64,
    /// With `--runtime-pull`: the node's runtime's own pull over CRI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_pull: Option<RuntimeAnswer>,
    /// With `--kubelet-pull`: the node's kubelet's own pull, with the workload's identity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet_pull: Option<KubeletPullReport>,
    /// Why the run could not ask this node (status `no-answer`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<ProblemReport>,
    /// `--fresh-node`: this row is the node the autoscaler made for the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fresh_node: Option<FreshNodeReport>,
}

/// A fresh node's row: how it came, and its verdict against the pool's newest existing node.
#[derive(Debug, Clone, Serialize)]
pub struct FreshNodeReport {
    /// The newest existing node of the pool, probed beside it; absent for a pool that had no
    /// node (a NodePool or node group at zero).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compared_with: Option<String>,
    /// Its status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compared_status: Option<&'static str>,
    /// How the two answers differ, in words; absent when they agree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<String>,
    /// Probe pod created → bound to the new node (or the wait given up).
    pub waited_ms: u64,
    /// The new node's `metadata.creationTimestamp` (it registered with the API).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_created: Option<String>,
    /// When its `Ready` condition last turned `True`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_ready: Option<String>,
    /// A startup taint (`taint KEY:EFFECT`) the new node still carried when read after the
    /// pod was bound; absent beside `node_ready`: it was Ready and through its startup.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub still_starting: Option<String>,
    /// The scheduler's and the autoscaler's events for the pod, `REASON: message`, in order.
    pub scheduling: Vec<String>,
    /// What the scale-up leaves behind.
    pub note: &'static str,
}

/// A problem of the run: `kind` (docs/fleet.md) and its evidence in words.
#[derive(Debug, Clone, Serialize)]
pub struct ProblemReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    pub kind: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct PoolRow {
    pub pool: String,
    /// Absent without `--for`; false when no node of the pool could run the workload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eligible: Option<bool>,
    pub nodes: usize,
    pub probed: usize,
    pub passed: usize,
    pub failed: usize,
    /// Nodes of the pool (probed or not) holding the image: running it, or listing it in
    /// `node.status.images`.
    pub cached_nodes: usize,
    /// The pool's worst probed node.
    pub verdict: Verdict,
    pub summary: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SkippedNode {
    pub node: String,
    pub pool: String,
    pub why: String,
    /// The label, taint or field that decided it (`kubernetes.io/os=windows`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CleanupReport {
    pub deleted: usize,
    pub remaining: usize,
    /// The delete went through but the list that would show nothing is left failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unverified: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the run's objects had no owner (docs/fleet.md, "Cleanup"): what a killed run would
    /// have left until `--cleanup`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unowned: Option<String>,
}

/// No registry: what the run delivered through the API (docs/fleet.md, `delivery`).
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryReport {
    /// ConfigMaps created (0 when no node could be started).
    pub objects: usize,
    /// Bytes of the create requests (JSON, the binary data in base64).
    pub bytes_sent: u64,
    /// One per architecture delivered.
    pub binaries: Vec<DeliveredBinary>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DeliveredBinary {
    pub arch: String,
    /// The probe binary's size, and compressed.
    pub size: usize,
    pub compressed: usize,
    /// The first stage's size (delivered as it is).
    pub stage: usize,
    /// ConfigMaps of this architecture (the stage's and the parts').
    pub objects: usize,
}

impl DeliveryReport {
    pub fn new(
        payloads: &[crate::fleet::deliver::Payload],
        sent: Option<crate::fleet::deliver::send::Sent>,
    ) -> Self {
        let sent = sent.unwrap_or_default();
        DeliveryReport {
            objects: sent.objects,
            bytes_sent: sent.bytes,
            binaries: payloads
                .iter()
                .map(|p| DeliveredBinary {
                    arch: p.arch.clone(),
                    size: p.size,
                    compressed: p.parts.iter().map(Vec::len).sum(),
                    stage: p.stage.len(),
                    objects: 1 + p.parts.len(),
                })
                .collect(),
        }
    }
}
