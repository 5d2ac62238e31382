//! The cache lie: which other nodes hold the image a pod cannot pull, and whether they are older
//! than the failing node. Pure: Pods and Nodes in, the holders and a sentence out.
//!
//! Evidence, strongest first (shared/notes/cluster.md §3): a running container's `imageID` on
//! that node; `node.status.images` listing the name (listed means present; absence proves
//! nothing, since the kubelet keeps only the 50 largest images by default).

use k8s_openapi::api::core::v1::{Node, Pod};

use crate::image_ref::ImageRef;
use crate::pod;
use crate::pod::node::{NodeFacts, facts, lists_image, same_image};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// A pod on the node runs the image now, with this image ID.
    Running(String),
    /// The node lists the image in `node.status.images`.
    Listed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub node: NodeFacts,
    pub evidence: Evidence,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheState {
    pub holders: Vec<Holder>,
    /// A holder is older than the failing node.
    pub lie: bool,
    pub summary: String,
}

/// Who else holds `image`, given every pod and node read (`nodes` empty when unread).
pub fn cache_state(image: &str, failing: &NodeFacts, nodes: &[Node], pods: &[Pod]) -> CacheState {
    let Ok(wanted) = ImageRef::parse(image) else {
        return CacheState {
            holders: Vec::new(),
            lie: false,
            summary: format!("{image:?} is not an image reference; no node can hold it"),
        };
    };
    let node_facts: Vec<NodeFacts> = nodes.iter().map(facts).collect();
    let known = |name: &str| {
        node_facts
            .iter()
            .find(|n| n.name == name)
            .cloned()
            .unwrap_or_else(|| NodeFacts::named(name))
    };
    let mut holders: Vec<Holder> = Vec::new();
    for p in pods {
        let Some(node) = pod::node_name(p).filter(|n| *n != failing.name) else {
            continue;
        };
        for (running, image_id) in pod::running_image_ids(p) {
            let matches = ImageRef::parse(&running).is_ok_and(|r| same_image(&r, &wanted));
            if matches && !holders.iter().any(|h| h.node.name == node) {
                holders.push(Holder {
                    node: known(&node),
                    evidence: Evidence::Running(image_id),
                });
            }
        }
    }
    for (node, f) in nodes.iter().zip(&node_facts) {
        if f.name != failing.name
            && !holders.iter().any(|h| h.node.name == f.name)
            && lists_image(node, &wanted)
        {
            holders.push(Holder {
                node: f.clone(),
                evidence: Evidence::Listed,
            });
        }
    }
    holders.sort_by(|a, b| {
        let pool = |h: &Holder| h.node.pool.as_ref().map(|p| p.1.clone());
        pool(a)
            .cmp(&pool(b))
            .then(a.node.created_seconds.cmp(&b.node.created_seconds))
            .then(a.node.name.cmp(&b.node.name))
    });
    let older: Vec<&Holder> = holders
        .iter()
        .filter(|h| matches!((h.node.created_seconds, failing.created_seconds), (Some(a), Some(b)) if a < b))
        .collect();
    let lie = !older.is_empty();
    let running = holders
        .iter()
        .filter(|h| matches!(h.evidence, Evidence::Running(_)))
        .count();
    let listed = holders.len() - running;
    let evidence =
        format!("{running} running it (imageID), {listed} listing it in node.status.images");
    let mut pools: Vec<String> = holders
        .iter()
        .map(|h| {
            h.node
                .pool
                .as_ref()
                .map_or("unlabelled".to_string(), |p| p.1.clone())
        })
        .collect();
    pools.dedup();
    let summary = if lie {
        format!(
            "the cache lie: {} older node{} {image} ({evidence}; pool {}) while {} (created {}) cannot pull it: scale-up or node replacement is the trigger, and the new node's pull path is what is broken; the older nodes serve it from cache and prove nothing about a fresh pull",
            older.len(),
            if older.len() == 1 { " holds" } else { "s hold" },
            pools.join(", "),
            failing.name,
            failing.created.as_deref().unwrap_or("at an unknown time"),
        )
    } else if !holders.is_empty()
        && (failing.created_seconds.is_none()
            || holders.iter().any(|h| h.node.created_seconds.is_none()))
    {
        format!(
            "{} node{} {image} ({evidence}); their creation times were not read, so whether {} is newer than they are is unknown",
            holders.len(),
            if holders.len() == 1 {
                " holds"
            } else {
                "s hold"
            },
            failing.name
        )
    } else if !holders.is_empty() {
        format!(
            "{} node{} {image} ({evidence}), none older than {}: compare their pull path (pool, subnet, resolver) with this node's",
            holders.len(),
            if holders.len() == 1 {
                " holds"
            } else {
                "s hold"
            },
            failing.name
        )
    } else {
        format!(
            "no other node is seen holding {image}: no running pod runs it and no node lists it in node.status.images (absence proves nothing: the kubelet lists only the 50 largest images by default)"
        )
    };
    CacheState {
        holders,
        lie,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, created: &str, pool: &str, images: &[&str]) -> Node {
        serde_json::from_value(
            json!({"metadata": {"name": name, "creationTimestamp": created,
            "labels": {"kubernetes.azure.com/agentpool": pool}},
            "status": {"images": [{"names": images, "sizeBytes": 1}]}}),
        )
        .expect("node")
    }

    fn running(node: &str, image: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": image}]},
            "status": {"containerStatuses": [{"name": "c", "image": image, "imageID": "r.example/app@sha256:ab", "ready": true, "restartCount": 0, "state": {"running": {}}}]}}))
        .expect("pod")
    }

    #[test]
    fn older_holders_name_the_new_node_as_the_trigger() {
        let nodes = vec![
            node("old-1", "2026-10-20T07:30:00Z", "user", &[]),
            node(
                "old-2",
                "2026-10-20T07:31:00Z",
                "user",
                &["r.example/app:1"],
            ),
            node("new-1", "2026-12-01T08:20:00Z", "userv2", &[]),
        ];
        let failing = facts(&nodes[2]);
        let state = cache_state(
            "r.example/app:1",
            &failing,
            &nodes,
            &[
                running("old-1", "r.example/app:1"),
                running("new-1", "r.example/app:1"),
            ],
        );
        assert!(state.lie, "{state:#?}");
        assert_eq!(state.holders.len(), 2);
        assert_eq!(
            state.holders[0].evidence,
            Evidence::Running("r.example/app@sha256:ab".into())
        );
        assert_eq!(state.holders[1].evidence, Evidence::Listed);
        assert!(
            state
                .summary
                .contains("scale-up or node replacement is the trigger"),
            "{}",
            state.summary
        );
    }

    #[test]
    fn no_holder_says_absence_proves_nothing() {
        let nodes = vec![node("new-1", "2026-12-01T08:20:00Z", "userv2", &[])];
        let state = cache_state("r.example/app:1", &facts(&nodes[0]), &nodes, &[]);
        assert!(!state.lie);
        assert!(
            state.summary.contains("absence proves nothing"),
            "{}",
            state.summary
        );
    }

    #[test]
    fn a_newer_holder_is_no_lie() {
        let nodes = vec![
            node("a", "2026-12-01T08:00:00Z", "p", &[]),
            node("b", "2026-12-01T09:00:00Z", "p", &["r.example/app:1"]),
        ];
        let state = cache_state("r.example/app:1", &facts(&nodes[0]), &nodes, &[]);
        assert!(!state.lie);
        assert_eq!(state.holders.len(), 1);
    }
}
