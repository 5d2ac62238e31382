//! `pullpath fleet IMAGE`: a fresh pull checked from every node pool, on nodes nobody fixed by
//! hand. Kubernetes is the engine: pullpath only reads nodes, creates a short-lived probe pod
//! per chosen node, reads its log and deletes it.
//!
//! Data flows one way, down this list of stages, each importing only those above it: the
//! cluster read (`reads`) → `eligibility` from the workload's scheduling rules → `select`
//! (pools, the newest Ready node of each) and `nodeless` pools → how a probe starts (`deliver`
//! without a registry, `fresh` nodes, `kubelet_pull`) → `pod_spec` (one probe pod per node) →
//! `answer` and `life` (pure: what a pod's log and its life say) → `plan` (all of it decided
//! before anything is created) → `run` (create, wait, read the log, delete; the only networked
//! part) → `report` (rows, pools, run problems, the worst eligible pool's verdict) → `command`
//! (the whole) → `text` or JSON.

// One declaration a paragraph: rustfmt sorts a run of them by name, and their order here is
// the data flow (a stage imports only those above it).

/// How a run ended: every node answered, the deadline, an interrupt.
pub mod ending;

/// The run's own objects on the API: deleted by the run's label; an API error in one line.
pub mod run_objects;

/// The labels and the pinned spec of every pod a run creates.
pub mod pod_base;

/// The run's owner (a Job that runs no pod and expires): what a killed run left is collected.
pub mod owner;

/// The cluster's reads before a run: namespaces, the workload, where the image runs, NodePools.
pub mod reads;

/// Whether a workload's pod could land on a node (nodeSelector, affinity, tolerations).
pub mod eligibility;

/// Which nodes to probe: pools, and the newest Ready nodes of each.
pub mod select;

/// Pools with no node yet (NodePools, `--pools LABEL=VALUE`): a row each.
pub mod nodeless;

/// Why a pullpath binary cannot be delivered to a node, as a value.
pub mod undeliverable;

/// Why the run could not ask a node, as a value with its evidence.
pub mod run_problem;

/// Probe pods without a registry: pullpath's binary delivered through the API.
pub mod deliver;

/// `--fresh-node`: the probe on a node the cluster's autoscaler makes for it.
pub mod fresh;

/// `--kubelet-pull`: a pod that has the node's kubelet pull the image itself.
pub mod kubelet_pull;

/// The probe pod for one node.
pub mod pod_spec;

/// The probe's report read back from a pod's log, or the probe pod's own pull failure.
pub mod answer;

/// What a probe pod's life says beside its log (pure).
pub mod life;

/// What a run says while it waits: one step at a time per probe pod.
pub mod progress;

/// A run's validated settings.
pub mod config;

/// What a run will do, decided before anything is created.
pub mod plan;

/// The run: probe pods created, waited for, read and deleted.
pub mod run;

/// The run's answers as rows, pools and a verdict.
pub mod report;

/// `pullpath fleet` as a whole, and `--cleanup`.
pub mod command;

/// The report in words.
pub mod text;

/// The run's progress on a terminal: a line per probe pod.
pub mod progress_view;

pub use command::{CleanupDone, cleanup, fleet};
pub use config::{FleetConfig, ProbeSource, probe_origin, probe_source};
pub use plan::{Plan, manifest, plan, run_id};

#[cfg(test)]
mod tests;
