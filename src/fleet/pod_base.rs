//! What every pod a run creates shares, whichever stage makes it (the probe pod, the
//! kubelet-pull pod, the delivered ConfigMaps' labels): pullpath's labels, by which the run's
//! cleanup finds them, and the spec of a pod pinned to one node.

use serde_json::{Value, json};

/// `app.kubernetes.io/managed-by=pullpath`: every pod pullpath creates carries it.
pub const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "pullpath");
/// The run a probe pod belongs to.
pub const RUN_LABEL: &str = "pullpath/run";
/// What a pod of the run is: `fleet-probe` or [`KUBELET_PULL_COMPONENT`].
pub const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
/// The component of a `--kubelet-pull` pod (in the workload's namespace, not the probe's).
pub const KUBELET_PULL_COMPONENT: &str = "fleet-kubelet-pull";
/// The node a probe pod was made for (an annotation: node names can exceed a label's 63).
pub const NODE_ANNOTATION: &str = "pullpath/node";

/// The metadata of every pod a run creates: pullpath's labels (the run's, by which the run's
/// cleanup finds it), its `component`, and the node it is for.
pub fn run_pod_metadata(
    name: &str,
    namespace: &str,
    node: &str,
    run_id: &str,
    component: &str,
) -> Value {
    json!({
        "name": name,
        "namespace": namespace,
        "labels": {
            MANAGED_BY.0: MANAGED_BY.1,
            "app.kubernetes.io/name": "pullpath",
            COMPONENT_LABEL: component,
            RUN_LABEL: run_id,
        },
        "annotations": {NODE_ANNOTATION: node},
    })
}

/// What every pod a run pins to a node shares: the node by `nodeName` (no scheduler), Linux
/// (the kubelet refuses a pod whose OS is not its own, PodOSNotSupported, instead of running a
/// Linux binary on, say, Windows; fleet skips such nodes before this), one run within
/// `deadline_seconds`, no API token or service links, gone at once when deleted, and every
/// taint tolerated as `kubectl debug node` does.
pub fn pinned_spec(node: &str, deadline_seconds: u64) -> Value {
    json!({
        "nodeName": node,
        "os": {"name": "linux"},
        "restartPolicy": "Never",
        "activeDeadlineSeconds": deadline_seconds,
        "automountServiceAccountToken": false,
        "enableServiceLinks": false,
        "terminationGracePeriodSeconds": 0,
        "tolerations": [{"operator": "Exists"}],
    })
}

/// `fields` added to the object `base`.
pub fn extend(base: &mut Value, fields: Value) {
    if let (Some(base), Value::Object(fields)) = (base.as_object_mut(), fields) {
        base.extend(fields);
    }
}
