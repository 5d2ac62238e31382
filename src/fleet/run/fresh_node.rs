//! `--fresh-node`: a fresh probe pod's wait for its node, looked at each time the run's pods
//! are listed: its scheduling words kept, told as progress, and when the new node came and
//! became Ready, read from its Node object once the pod is bound to it.

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Node, Pod};
use kube::api::Api;

use super::{Answer, FreshRun};
use crate::fleet::config::RunSettings;
use crate::fleet::fresh::{self, Scheduling};
use crate::fleet::pod_spec::PodPlan;
use crate::fleet::progress::{Doing, tell};
use crate::fleet::run_problem::RunProblem;

/// What one look at a pending fresh pod decides.
pub(super) enum Look {
    /// Still waiting for a node.
    Pending,
    /// Bound to its new node (`node` now holds its name): the probe's own clocks start.
    Bound,
    /// The wait is over without a node: the autoscaler said no, or the timeout came.
    Over(Box<Answer>),
}

/// Look at `pod` (and its `events`, oldest first) while it waits for a node; `way.waited` is
/// the wait so far.
pub(super) async fn look(
    api: &Api<Pod>,
    plan: &PodPlan,
    settings: &RunSettings,
    pod: &Pod,
    events: &[Event],
    node: &mut Option<String>,
    way: &mut FreshRun,
) -> Look {
    for event in events {
        let said = format!(
            "{}: {}",
            event.reason.as_deref().unwrap_or(""),
            event.message.as_deref().unwrap_or("")
        );
        if !way.said.contains(&said) {
            way.said.push(said);
        }
    }
    let progress = settings.progress.as_ref();
    match fresh::scheduling(pod, events) {
        Scheduling::Scheduled { node: bound } => {
            (way.node_created, way.node_ready, way.still_starting) =
                node_times(api.clone().into_client(), &bound, settings.request_timeout).await;
            let on_node = Doing::OnNode {
                node: bound.clone(),
                created: way.node_created.clone(),
                ready: way.node_ready.clone(),
            };
            tell(progress, plan, on_node);
            *node = Some(bound);
            Look::Bound
        }
        Scheduling::Refused { said } => {
            Look::Over(Box::new(Answer::Problem(RunProblem::ScaleUpRefused {
                reason: said.reason,
                message: said.message,
            })))
        }
        Scheduling::Waiting { latest } => {
            let words = fresh::waiting_words(latest.as_ref(), way.waited);
            tell(progress, plan, Doing::Waiting { words });
            if way.waited < settings.fresh_wait {
                return Look::Pending;
            }
            Look::Over(Box::new(Answer::Problem(RunProblem::NoFreshNode {
                waited: way.waited,
                latest: latest.map(|s| s.to_string()),
            })))
        }
    }
}

/// The node's `metadata.creationTimestamp` and the last transition of its `Ready` condition to
/// `True` (RFC 3339), as far as the object says.
pub fn times_of(node: &Node) -> (Option<String>, Option<String>) {
    let created = node
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string());
    let ready = node
        .status
        .iter()
        .flat_map(|s| s.conditions.iter().flatten())
        .find(|c| c.type_ == "Ready" && c.status == "True")
        .and_then(|c| c.last_transition_time.as_ref())
        .map(|t| t.0.to_string());
    (created, ready)
}

/// The fresh node's times, and the startup taint it still carried (the pod's tolerations
/// leave none it could land past; a taint here is evidence they did); none when the get fails
/// or takes longer than `timeout`: this is evidence for the row, never a reason to hold up the
/// run.
async fn node_times(
    client: kube::Client,
    name: &str,
    timeout: Duration,
) -> (Option<String>, Option<String>, Option<String>) {
    let api: Api<Node> = Api::all(client);
    match tokio::time::timeout(timeout, api.get(name)).await {
        Ok(Ok(node)) => {
            let (created, ready) = times_of(&node);
            (created, ready, crate::fleet::select::still_starting(&node))
        }
        _ => (None, None, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_times_are_the_nodes_creation_and_its_ready_transition() {
        let node: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "aks-user-1", "creationTimestamp": "2026-12-05T09:00:00Z"},
            "status": {"conditions": [
                {"type": "MemoryPressure", "status": "False", "lastTransitionTime": "2026-12-05T09:00:10Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-12-05T09:00:42Z"}]}
        }))
        .expect("node");
        let (created, ready) = times_of(&node);
        assert_eq!(created.as_deref(), Some("2026-12-05T09:00:00Z"));
        assert_eq!(ready.as_deref(), Some("2026-12-05T09:00:42Z"));
        let not_ready: Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-05T09:00:42Z"}]}
        }))
        .expect("node");
        assert_eq!(times_of(&not_ready), (None, None));
    }
}
