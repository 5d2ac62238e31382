//! The scheduler and the cluster autoscaler a cluster runs, standing in for `--fresh-node`: a
//! real kube-scheduler and cluster-autoscaler cannot run here (no kube-apiserver). In front of
//! the CRI kubelet stand-in: a pod that names its node goes straight to that node's kubelet; a
//! pod that does not is scheduled as the default scheduler does it for what fleet asks
//! (`nodeSelector`; required node affinity, `matchExpressions` on labels and `matchFields` on
//! `metadata.name`), and when no node fits:
//!
//! - the scheduler's `FailedScheduling` (`0/N nodes are available: N node(s) didn't match Pod's
//!   node affinity/selector. preemption: 0/N nodes are available: N Preemption is not helpful
//!   for scheduling.`, pkg/scheduler/framework `FitError.Error` and the preemption postfilter);
//! - then cluster-autoscaler's answer (processors/status/eventing_scale_up_processor.go): a node
//!   group whose labels satisfy the pod and whose size is under its maximum scales up —
//!   `TriggeredScaleUp` (`pod triggered scale-up: [{GROUP 1->2 (max: 3)}]`), and after the
//!   group's provisioning delay a new Node registers (Ready, the group's labels, created now)
//!   with its own kubelet (a lab node with a fresh root) and the pod is bound to it; a group at
//!   its maximum gives `NotTriggerScaleUp` (`pod didn't trigger scale-up: 1 max node group size
//!   reached`), no group at all `pod didn't trigger scale-up: ` with no reason counted;
//! - or Karpenter's, for a group that is a NodePool (kubernetes-sigs/karpenter
//!   pkg/controllers/provisioning/scheduling/events.go): `Nominated` (`Pod should schedule on:
//!   nodeclaim/NAME`) and a node that registers after the delay with the NodePool's label; at its
//!   limit, Karpenter's own `FailedScheduling` (`Failed to schedule pod, all available instance
//!   types exceed limits for nodepool (NodePool=NAME)`, the error of scheduler.go wrapped by
//!   `serrors`).
//!
//! Never kinder than the real thing: nothing schedules a pod no node or group fits, and a scale
//! -up takes its delay.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cri_kubelet::{CriKubelet, CriNode};
use crate::kube_api::{Kubelet, PodStore, now_rfc3339};

/// Who grows a group, in their own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provisioner {
    ClusterAutoscaler,
    /// A Karpenter NodePool (the group's id is the NodePool's name).
    Karpenter,
}

/// A node group the autoscaler may grow: its labels, its size now and its maximum, how long a
/// new node takes, and the lab node that plays each new node (its Node object is made here).
pub struct NodeGroup {
    pub provisioner: Provisioner,
    /// The group's id as cluster-autoscaler names it (the VMSS, the ASG).
    pub id: String,
    pub labels: BTreeMap<String, String>,
    pub size: u32,
    pub max: u32,
    pub delay: Duration,
    /// The kubelet of the next node: a lab node with a fresh root.
    pub next: Option<CriNode>,
}

pub struct Autoscaler {
    kubelet: Arc<CriKubelet>,
    /// The world's nodes (registered ones are read from the store).
    nodes: Vec<Value>,
    groups: Arc<Mutex<Vec<NodeGroup>>>,
}

impl Autoscaler {
    pub fn new(kubelet: Arc<CriKubelet>, nodes: Vec<Value>, groups: Vec<NodeGroup>) -> Autoscaler {
        Autoscaler {
            kubelet,
            nodes,
            groups: Arc::new(Mutex::new(groups)),
        }
    }
}

/// Whether `node` satisfies the pod's `nodeSelector` and required node affinity (terms ORed,
/// requirements within a term ANDed; `In`, `NotIn`, `Exists`, `DoesNotExist`).
pub fn fits(pod: &Value, node: &Value) -> bool {
    let labels = &node["metadata"]["labels"];
    let name = node["metadata"]["name"].as_str().unwrap_or("");
    let selector_holds = pod["spec"]["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(key, want)| labels[key] == *want);
    let terms = pod["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        .as_array();
    let requirement = |r: &Value, value: Option<&str>| {
        let values: Vec<&str> = r["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        match r["operator"].as_str() {
            Some("In") => value.is_some_and(|v| values.contains(&v)),
            Some("NotIn") => !value.is_some_and(|v| values.contains(&v)),
            Some("Exists") => value.is_some(),
            Some("DoesNotExist") => value.is_none(),
            _ => false,
        }
    };
    let term_holds = |term: &Value| {
        let expressions = term["matchExpressions"].as_array().into_iter().flatten();
        let fields = term["matchFields"].as_array().into_iter().flatten();
        expressions
            .clone()
            .all(|r| requirement(r, labels[r["key"].as_str().unwrap_or("")].as_str()))
            && fields
                .clone()
                .all(|r| requirement(r, (r["key"] == "metadata.name").then_some(name)))
            && (expressions.count() + fields.count()) > 0
    };
    selector_holds && terms.is_none_or(|terms| terms.iter().any(term_holds))
}

/// An event about a pod from `component` (`default-scheduler`, `cluster-autoscaler`).
fn pod_event(
    store: &PodStore,
    pod: &Value,
    component: &str,
    kind: &str,
    reason: &str,
    message: &str,
) {
    let now = now_rfc3339();
    let namespace = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let name = pod["metadata"]["name"].as_str().unwrap_or("");
    store.record_event(json!({"kind": "Event", "apiVersion": "v1",
        "metadata": {"name": format!("{name}.{reason}.{}", now.replace([':', '-', '.'], "")), "namespace": namespace},
        "involvedObject": {"kind": "Pod", "namespace": namespace, "name": name, "uid": pod["metadata"]["uid"], "apiVersion": "v1"},
        "reason": reason, "message": message, "type": kind, "count": 1,
        "firstTimestamp": now, "lastTimestamp": now,
        "source": {"component": component}, "reportingComponent": component}));
}

/// The labels every new node gets from its instance type (the lab's nodes are linux/amd64).
fn node_labels() -> [(String, String); 2] {
    [
        ("kubernetes.io/os".into(), "linux".into()),
        ("kubernetes.io/arch".into(), "amd64".into()),
    ]
}

impl Kubelet for Autoscaler {
    fn pod_created(&self, pod: &Value, store: &Arc<PodStore>) {
        if pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
        {
            self.kubelet.pod_created(pod, store);
            return;
        }
        let namespace = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let name = pod["metadata"]["name"].as_str().unwrap_or("").to_string();
        let nodes: Vec<Value> = self
            .nodes
            .iter()
            .cloned()
            .chain(store.registered_nodes())
            .collect();
        if let Some(node) = nodes.iter().find(|n| fits(pod, n)) {
            let node = node["metadata"]["name"].as_str().unwrap_or("").to_string();
            if let Some(bound) = store.bind(&namespace, &name, &node) {
                self.kubelet.pod_created(&bound, store);
            }
            return;
        }
        let n = nodes.len();
        pod_event(
            store,
            pod,
            "default-scheduler",
            "Warning",
            "FailedScheduling",
            &format!(
                "0/{n} nodes are available: {n} node(s) didn't match Pod's node affinity/selector. preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
            ),
        );
        let mut groups = self.groups.lock().expect("groups");
        // A group's template node carries what its nodes will (the autoscalers build it from
        // the instance type: os and arch among them).
        let template = |g: &NodeGroup| {
            let mut labels = g.labels.clone();
            labels.extend(node_labels());
            json!({"metadata": {"name": format!("{}{:06}", g.id, g.size), "labels": labels}})
        };
        let Some(group) = groups.iter_mut().find(|g| fits(pod, &template(g))) else {
            pod_event(
                store,
                pod,
                "cluster-autoscaler",
                "Normal",
                "NotTriggerScaleUp",
                "pod didn't trigger scale-up: ",
            );
            return;
        };
        let at_limit = group.size >= group.max || group.next.is_none();
        let node_name = match group.provisioner {
            Provisioner::ClusterAutoscaler => format!("{}{:06}", group.id, group.size),
            // AKS node auto-provisioning's names: aks-NODEPOOL-SUFFIX.
            Provisioner::Karpenter => format!("aks-{}-x7k2{}", group.id, group.size),
        };
        match (group.provisioner, at_limit) {
            (Provisioner::ClusterAutoscaler, true) => pod_event(
                store,
                pod,
                "cluster-autoscaler",
                "Normal",
                "NotTriggerScaleUp",
                "pod didn't trigger scale-up: 1 max node group size reached",
            ),
            (Provisioner::Karpenter, true) => pod_event(
                store,
                pod,
                "karpenter",
                "Warning",
                "FailedScheduling",
                &format!(
                    "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool={})",
                    group.id
                ),
            ),
            (Provisioner::ClusterAutoscaler, false) => pod_event(
                store,
                pod,
                "cluster-autoscaler",
                "Normal",
                "TriggeredScaleUp",
                &format!(
                    "pod triggered scale-up: [{{{} {}->{} (max: {})}}]",
                    group.id,
                    group.size,
                    group.size + 1,
                    group.max
                ),
            ),
            (Provisioner::Karpenter, false) => pod_event(
                store,
                pod,
                "karpenter",
                "Normal",
                "Nominated",
                &format!(
                    "Pod should schedule on: nodeclaim/{}",
                    node_name.trim_start_matches("aks-")
                ),
            ),
        }
        if at_limit {
            return;
        }
        group.size += 1;
        let (labels, delay) = (group.labels.clone(), group.delay);
        let kubelet_node = group.next.take().expect("checked above");
        let (kubelet, store) = (self.kubelet.clone(), store.clone());
        std::thread::spawn(move || {
            // The cloud's provisioning time: the node registers when its VM has booted.
            std::thread::sleep(delay);
            let mut labels = labels;
            labels.insert("kubernetes.io/hostname".into(), node_name.clone());
            labels.extend(node_labels());
            let now = now_rfc3339();
            store.register_node(json!({"kind": "Node", "apiVersion": "v1",
                "metadata": {"name": node_name, "uid": format!("uid-{node_name}"), "creationTimestamp": now, "labels": labels},
                "spec": {"taints": []},
                "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "lastTransitionTime": now}], "images": [],
                    "nodeInfo": {"architecture": "amd64", "operatingSystem": "linux", "kubeletVersion": "v1.33.5",
                        "containerRuntimeVersion": "containerd://1.6.20", "osImage": "Ubuntu 22.04.5 LTS",
                        "bootID": "", "kernelVersion": "", "kubeProxyVersion": "", "machineID": "", "systemUUID": ""}}}));
            kubelet.add_node(&node_name, kubelet_node);
            if let Some(bound) = store.bind(&namespace, &name, &node_name) {
                kubelet.pod_created(&bound, &store);
            }
        });
    }
}
