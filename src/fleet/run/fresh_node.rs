//! `--fresh-node`: when the new node came and became Ready, read from its Node object once the
//! probe pod is bound to it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::Api;

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

/// The fresh node's times; none when the get fails or takes longer than `timeout`: the times
/// are evidence for the row, never a reason to hold up the run.
pub(super) async fn node_times(
    client: kube::Client,
    name: &str,
    timeout: Duration,
) -> (Option<String>, Option<String>) {
    let api: Api<Node> = Api::all(client);
    match tokio::time::timeout(timeout, api.get(name)).await {
        Ok(Ok(node)) => times_of(&node),
        _ => (None, None),
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
