//! The probe report's `node_processes`: the node's kubelet and runtime as the probe found them
//! (`probe::node_daemons`), each with how — the flag, the listener of the kubelet's CRI
//! socket, the kubelet inside k3s, or the lowest pid with the name — so a reader sees whose
//! config and environment the verdict was read with.

use serde::Serialize;

use crate::probe::node_daemons::{Daemon, NodeDaemons};

/// `node_processes`.
#[derive(Debug, Clone, Serialize)]
pub struct NodeProcessesReport {
    /// The kubelet; absent when none was found (a pod without hostPID, a node root alone).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<ProcessReport>,
    /// The runtime the kubelet talks to; absent when none was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<ProcessReport>,
    /// The CRI endpoint between them and where it came from.
    pub endpoint: String,
    pub endpoint_origin: String,
    /// What was read on the way (k3s's config files, its kubelet-arg).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One node process.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessReport {
    pub pid: u32,
    /// `flag`, `socket-listener`, `embedded` or `lowest-pid-named`.
    pub found_by: &'static str,
    pub detail: String,
}

impl From<&Daemon> for ProcessReport {
    fn from(daemon: &Daemon) -> ProcessReport {
        ProcessReport {
            pid: daemon.process.pid,
            found_by: daemon.how.as_str(),
            detail: daemon.detail.clone(),
        }
    }
}

impl From<&NodeDaemons> for NodeProcessesReport {
    fn from(daemons: &NodeDaemons) -> NodeProcessesReport {
        NodeProcessesReport {
            kubelet: daemons.kubelet.as_ref().map(ProcessReport::from),
            runtime: daemons.runtime.as_ref().map(ProcessReport::from),
            endpoint: daemons.endpoint.value.clone(),
            endpoint_origin: daemons.endpoint.origin.clone(),
            notes: daemons.notes.clone(),
        }
    }
}
