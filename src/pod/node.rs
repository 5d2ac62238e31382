//! Nodes as a report needs them: the pool each belongs to (by its provider's label), its age,
//! versions and zone, and the images it lists. Pure functions of the Node object.

use k8s_openapi::api::core::v1::Node;

use crate::image_ref::ImageRef;

/// Pool label keys, most specific provisioner first (shared/notes/cluster.md §2): Karpenter
/// (also EKS Auto Mode and AKS node auto-provisioning), AKS, EKS managed node groups, GKE; the
/// older Karpenter and AKS keys after their successors.
const POOL_LABELS: [&str; 6] = [
    "karpenter.sh/nodepool",
    "karpenter.sh/provisioner-name",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "eks.amazonaws.com/nodegroup",
    "cloud.google.com/gke-nodepool",
];

/// OpenShift's pools are MachineConfigPools selected by `node-role.kubernetes.io/<role>`.
const ROLE_PREFIX: &str = "node-role.kubernetes.io/";

/// What a report says about one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFacts {
    pub name: String,
    /// (label key, pool) or `None` for a node no provider label names.
    pub pool: Option<(String, String)>,
    pub created: Option<String>,
    pub created_seconds: Option<i64>,
    pub kubelet: Option<String>,
    pub runtime: Option<String>,
    pub os_image: Option<String>,
    pub zone: Option<String>,
}

impl NodeFacts {
    /// A node known only by name (Nodes not readable, or not listed).
    pub fn named(name: &str) -> NodeFacts {
        NodeFacts {
            name: name.to_string(),
            pool: None,
            created: None,
            created_seconds: None,
            kubelet: None,
            runtime: None,
            os_image: None,
            zone: None,
        }
    }
}

pub fn facts(node: &Node) -> NodeFacts {
    let labels = node.metadata.labels.clone().unwrap_or_default();
    let pool = POOL_LABELS
        .iter()
        .find_map(|k| labels.get(*k).map(|v| (k.to_string(), v.clone())))
        .or_else(|| {
            // A custom role names the pool better than the generic worker role.
            let mut roles: Vec<&String> = labels
                .keys()
                .filter(|k| k.starts_with(ROLE_PREFIX) && k.len() > ROLE_PREFIX.len())
                .collect();
            roles.sort_by_key(|k| (k.ends_with("/worker"), k.as_str().to_string()));
            roles
                .first()
                .map(|k| (k.to_string(), k[ROLE_PREFIX.len()..].to_string()))
        });
    let info = node.status.as_ref().and_then(|s| s.node_info.as_ref());
    let created = node.metadata.creation_timestamp.as_ref();
    NodeFacts {
        name: node.metadata.name.clone().unwrap_or_default(),
        pool,
        created: created.map(|t| t.0.to_string()),
        created_seconds: created.map(|t| t.0.as_second()),
        kubelet: info.map(|i| i.kubelet_version.clone()),
        runtime: info.map(|i| i.container_runtime_version.clone()),
        os_image: info.map(|i| i.os_image.clone()),
        zone: labels
            .get("topology.kubernetes.io/zone")
            .or_else(|| labels.get("failure-domain.beta.kubernetes.io/zone"))
            .cloned(),
    }
}

/// Whether `node.status.images` lists `image` (names compared as parsed references, since the
/// runtime lists them normalised: `docker.io/library/nginx:1.25`).
pub fn lists_image(node: &Node, image: &ImageRef) -> bool {
    node.status
        .iter()
        .flat_map(|s| s.images.iter().flatten())
        .flat_map(|i| i.names.iter().flatten())
        .filter_map(|name| ImageRef::parse(name).ok())
        .any(|listed| same_image(&listed, image))
}

/// The same image: registry and repository, and the tag or digest the pod asks for.
pub fn same_image(a: &ImageRef, b: &ImageRef) -> bool {
    a.registry == b.registry
        && a.repository == b.repository
        && match (&b.digest, &a.digest) {
            (Some(want), Some(have)) => want == have,
            (Some(_), None) => false,
            (None, _) => a.tag.is_some() && a.tag == b.tag,
        }
}

/// An image the node already holds, for `kubectl debug node/…` (its debug pod must not need a
/// pull through the broken path): the smallest listed (the kubelet lists largest first), which
/// tends to be a system image.
pub fn an_image_it_holds(node: &Node) -> Option<String> {
    node.status
        .iter()
        .flat_map(|s| s.images.iter().flatten().rev())
        .flat_map(|i| i.names.iter().flatten())
        .find(|n| !n.contains('@'))
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(labels: &[(&str, &str)]) -> Node {
        let labels: serde_json::Map<String, serde_json::Value> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
            .collect();
        serde_json::from_value(serde_json::json!({"metadata": {"name": "n", "labels": labels, "creationTimestamp": "2026-12-01T08:20:00Z"},
            "status": {"images": [{"names": ["docker.io/library/nginx@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "docker.io/library/nginx:1.25"], "sizeBytes": 1}]}}))
        .expect("node")
    }

    fn pool(labels: &[(&str, &str)]) -> Option<(String, String)> {
        facts(&node(labels)).pool
    }

    #[test]
    fn pools_by_provider_label() {
        let p = |k: &str, v: &str| Some((k.to_string(), v.to_string()));
        assert_eq!(
            pool(&[
                ("kubernetes.azure.com/agentpool", "user"),
                ("agentpool", "user")
            ]),
            p("kubernetes.azure.com/agentpool", "user")
        );
        assert_eq!(pool(&[("agentpool", "old")]), p("agentpool", "old"));
        assert_eq!(
            pool(&[("eks.amazonaws.com/nodegroup", "ng-1")]),
            p("eks.amazonaws.com/nodegroup", "ng-1")
        );
        assert_eq!(
            pool(&[
                ("karpenter.sh/nodepool", "default"),
                ("kubernetes.azure.com/agentpool", "x")
            ]),
            p("karpenter.sh/nodepool", "default")
        );
        assert_eq!(
            pool(&[("cloud.google.com/gke-nodepool", "pool-1")]),
            p("cloud.google.com/gke-nodepool", "pool-1")
        );
        assert_eq!(
            pool(&[
                ("node-role.kubernetes.io/worker", ""),
                ("node-role.kubernetes.io/infra", "")
            ]),
            p("node-role.kubernetes.io/infra", "infra")
        );
        assert_eq!(pool(&[("kubernetes.io/hostname", "n")]), None);
        assert_eq!(facts(&node(&[])).created_seconds, Some(1_796_113_200));
    }

    #[test]
    fn listed_images_are_compared_as_references() {
        let n = node(&[]);
        assert!(lists_image(
            &n,
            &ImageRef::parse("nginx:1.25").expect("ref")
        ));
        assert!(!lists_image(
            &n,
            &ImageRef::parse("nginx:1.26").expect("ref")
        ));
        assert_eq!(
            an_image_it_holds(&n).as_deref(),
            Some("docker.io/library/nginx:1.25")
        );
    }
}
