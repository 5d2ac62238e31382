//! Which image a delivered probe pod starts from on a node: one the node certainly holds, since
//! the pod's `imagePullPolicy` is `Never` (the node under test may be unable to pull anything).
//! The image's own contents never run: the container's `command` is the delivered first stage
//! on a projected volume (`deliver::command`), which replaces the image's entrypoint and needs
//! no shell or library from it. So any image the node holds will do; what matters is certainty.
//!
//! In order:
//! 1. `--node-image`, when given;
//! 2. the sandbox ("pause") image when `node.status.images` lists it: pinned against image
//!    garbage collection by every node image that names one (`../shared/notes/nodes.md`: AKS
//!    labels it `io.cri-containerd.pinned`, EKS and Bottlerocket set `pinned_images.sandbox`).
//!    (The admission policy admits any image here: it pins the stage and the binary it runs,
//!    docs/security.md.) The kubelet lists only the
//!    50 largest images (`nodeStatusMaxImages`, kubelet `pkg/kubelet/nodestatus/setters.go`
//!    `Images()`, sorted by `ByImageSize` in `images/image_gc_manager.go`), so on a node that
//!    caches many (AKS) the small pause image is usually missing;
//! 3. the image of a container running on the node now (DaemonSet and static pods first:
//!    kube-proxy, the CNI, CSI node plugins), as the pod's status reports it: an image a running
//!    container uses is in the runtime's store and cannot be garbage-collected while it runs
//!    (the kubelet's image GC skips images in use). By its repository digest (`imageID`) when
//!    the runtime reports one: containerd's CRI keeps a `name@sha256:…` reference for every
//!    image it pulled (`image_pull.go`, the repo digest beside the tag and the image id), and
//!    the digest does not move when a tag is re-pushed;
//! 4. a pool with no node yet: the sandbox image most of the cluster's nodes list (the probe
//!    pod's own sandbox makes the runtime hold it before its container starts).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, Pod};

/// Why a probe pod starts from its image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `--node-image`.
    Given,
    /// The node's sandbox image, as its status lists it.
    Sandbox,
    /// The image of container `container` of pod `pod` (`namespace/name`), running on the node.
    Running { pod: String, container: String },
    /// A pool with no node yet: the sandbox image most of the cluster's nodes list.
    ClusterSandbox,
}

impl Source {
    /// The wire name (docs/fleet.md, `node_image.source`).
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Given => "given",
            Source::Sandbox => "sandbox",
            Source::Running { .. } => "running",
            Source::ClusterSandbox => "cluster-sandbox",
        }
    }

    /// Why, in words.
    pub fn describe(&self) -> String {
        match self {
            Source::Given => "--node-image".to_string(),
            Source::Sandbox => "the node's sandbox (pause) image, listed in its status".to_string(),
            Source::Running { pod, container } => {
                format!("the image of container {container} of pod {pod}, running on the node")
            }
            Source::ClusterSandbox => {
                "the sandbox image most of the cluster's nodes list (no node yet)".to_string()
            }
        }
    }
}

/// The image a probe pod starts from on one node, and why that one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeImage {
    pub image: String,
    pub source: Source,
}

/// An image a container runs from on a node now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningImage {
    /// The name to start a pod from: the repository digest when the runtime reports one.
    pub image: String,
    /// `namespace/name`.
    pub pod: String,
    pub container: String,
    /// A node's own pod: a DaemonSet's, or a static (mirror) pod's.
    pub system: bool,
}

/// What the run read of the pods on each node: their running images by node name, or why the
/// pods could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    pub running: BTreeMap<String, Vec<RunningImage>>,
    /// The pod list was refused or failed: running images were not looked at.
    pub pods_unread: Option<String>,
}

/// A sandbox image name: the repository's last component is `pause`, or a `pause` variant the
/// providers ship (`rancher/mirrored-pause` on k3s and RKE2, the older `pause-amd64`). Not a
/// repository merely containing the word (`pause-button`, `pauser`).
pub fn is_pause(name: &str) -> bool {
    let repository = name.split('@').next().unwrap_or(name);
    let last = repository.rsplit('/').next().unwrap_or(repository);
    let last = last.split(':').next().unwrap_or(last);
    const ARCHES: [&str; 6] = ["amd64", "arm64", "arm", "ppc64le", "s390x", "386"];
    last == "pause"
        || last.ends_with("-pause")
        || last
            .strip_prefix("pause-")
            .is_some_and(|arch| ARCHES.contains(&arch))
}

/// The node's sandbox image as its status lists it, a tag preferred over a digest (the
/// runtime pinned it by the name its config gives). `None` when the status lists none.
pub fn sandbox_image(node: &Node) -> Option<String> {
    let pauses: Vec<&String> = node
        .status
        .iter()
        .flat_map(|s| s.images.iter().flatten())
        .flat_map(|image| image.names.iter().flatten())
        .filter(|name| is_pause(name))
        .collect();
    pauses
        .iter()
        .find(|n| !n.contains('@'))
        .or(pauses.first())
        .map(|n| n.to_string())
}

/// The sandbox image most of `nodes` list: what a node the cluster does not have yet most
/// likely holds too (its node image is the pool's, its pause image usually the cluster's).
pub fn common_sandbox_image(nodes: &[Node]) -> Option<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for image in nodes.iter().filter_map(sandbox_image) {
        *counts.entry(image).or_default() += 1;
    }
    counts
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(image, _)| image)
}

/// The name a running container's image can be started by: the repository digest of its
/// `imageID` when the runtime reports one (`docker.io/library/busybox@sha256:…`; a dockershim
/// era `docker-pullable://` prefix removed), else the image the status names, unless that is
/// only an image id (`sha256:…`, which no pod spec can name).
fn startable_name(image: &str, image_id: &str) -> Option<String> {
    let id = image_id
        .strip_prefix("docker-pullable://")
        .or_else(|| image_id.strip_prefix("docker://"))
        .unwrap_or(image_id);
    let named = |name: &str| !name.is_empty() && !name.starts_with("sha256:");
    if named(id) && id.contains("@sha256:") {
        return Some(id.to_string());
    }
    named(image).then(|| image.to_string())
}

/// A node's own pod: a DaemonSet's (every node of its selector runs one), or a static pod's
/// mirror (the kubelet's annotation `kubernetes.io/config.mirror`).
fn node_own(pod: &Pod) -> bool {
    let daemon = pod
        .metadata
        .owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "DaemonSet");
    let mirror = pod
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
    daemon || mirror
}

/// The images running containers use, by node: from one list of pods in every namespace (the
/// list fleet reads anyway to find where the image under test runs). Each node's node-own pods
/// first, then by pod and container name; each image once.
pub fn running_images(pods: &[Pod]) -> BTreeMap<String, Vec<RunningImage>> {
    let mut by_node: BTreeMap<String, Vec<RunningImage>> = BTreeMap::new();
    for pod in pods {
        let Some(node) = crate::pod::node_name(pod) else {
            continue;
        };
        let name = format!(
            "{}/{}",
            pod.metadata.namespace.as_deref().unwrap_or_default(),
            pod.metadata.name.as_deref().unwrap_or_default()
        );
        let system = node_own(pod);
        let running = pod
            .status
            .iter()
            .flat_map(|s| {
                [&s.init_container_statuses, &s.container_statuses]
                    .into_iter()
                    .flatten()
                    .flatten()
            })
            .filter(|s| s.state.as_ref().is_some_and(|st| st.running.is_some()));
        for status in running {
            let Some(image) = startable_name(&status.image, &status.image_id) else {
                continue;
            };
            by_node.entry(node.clone()).or_default().push(RunningImage {
                image,
                pod: name.clone(),
                container: status.name.clone(),
                system,
            });
        }
    }
    for images in by_node.values_mut() {
        images.sort_by(|a, b| {
            (!a.system, &a.pod, &a.container).cmp(&(!b.system, &b.pod, &b.container))
        });
        let mut seen = std::collections::BTreeSet::new();
        images.retain(|i| seen.insert(i.image.clone()));
    }
    by_node
}

/// The image a probe pod starts from on `node` (its Node object; `None` for a pool with no
/// node yet, `cluster` then the cluster's common sandbox image), or `None`: nothing the node
/// certainly holds.
pub fn choose(
    given: Option<&str>,
    node: Option<&Node>,
    running: &[RunningImage],
    cluster: Option<String>,
) -> Option<NodeImage> {
    let with = |image: String, source| NodeImage { image, source };
    if let Some(image) = given {
        return Some(with(image.to_string(), Source::Given));
    }
    if let Some(image) = node.and_then(sandbox_image) {
        return Some(with(image, Source::Sandbox));
    }
    if let Some(first) = running.first() {
        return Some(with(
            first.image.clone(),
            Source::Running {
                pod: first.pod.clone(),
                container: first.container.clone(),
            },
        ));
    }
    cluster.map(|image| with(image, Source::ClusterSandbox))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn node(names: &[&[&str]]) -> Node {
        let images: Vec<Value> = names
            .iter()
            .map(|n| json!({"names": n, "sizeBytes": 1}))
            .collect();
        serde_json::from_value(json!({"metadata": {"name": "n"}, "status": {"images": images}}))
            .expect("node")
    }

    #[test]
    fn the_sandbox_image_is_the_pause_image_by_tag_whatever_its_provider_calls_it() {
        let aks = node(&[
            &["mcr.microsoft.com/oss/kubernetes/coredns:v1.9"],
            &[
                "mcr.microsoft.com/oss/kubernetes/pause@sha256:aaaa",
                "mcr.microsoft.com/oss/kubernetes/pause:3.6",
            ],
        ]);
        assert_eq!(
            sandbox_image(&aks).as_deref(),
            Some("mcr.microsoft.com/oss/kubernetes/pause:3.6")
        );
        let digest_only = node(&[&["registry.k8s.io/pause@sha256:bbbb"]]);
        assert_eq!(
            sandbox_image(&digest_only).as_deref(),
            Some("registry.k8s.io/pause@sha256:bbbb")
        );
        for name in [
            "docker.io/rancher/mirrored-pause:3.6",
            "localhost/kubernetes/pause:latest",
            "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/pause:3.5",
            "gke.gcr.io/pause:3.8@sha256:cccc",
            "k8s.gcr.io/pause-amd64:3.1",
        ] {
            assert!(is_pause(name), "{name}");
        }
        // Not a pause image: a repository merely containing the word, or none listed.
        let other = node(&[&["r.example/team/pause-button:1", "r.example/pauser:2"]]);
        assert_eq!(sandbox_image(&other), None);
        assert_eq!(sandbox_image(&node(&[])), None);
        let k3s = node(&[&["docker.io/rancher/mirrored-pause:3.6"]]);
        assert_eq!(
            common_sandbox_image(&[k3s.clone(), k3s, aks]).as_deref(),
            Some("docker.io/rancher/mirrored-pause:3.6")
        );
    }

    fn pod(name: &str, owner: Option<&str>, containers: &[(&str, &str, &str, bool)]) -> Pod {
        let statuses: Vec<Value> = containers
            .iter()
            .map(|(c, image, id, running)| {
                let state = if *running {
                    json!({"running": {}})
                } else {
                    json!({"waiting": {"reason": "CrashLoopBackOff"}})
                };
                json!({"name": c, "image": image, "imageID": id, "ready": true, "restartCount": 0, "state": state})
            })
            .collect();
        let owners: Vec<Value> = owner
            .iter()
            .map(|kind| json!({"apiVersion": "apps/v1", "kind": kind, "name": "o", "uid": "u"}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "kube-system", "ownerReferences": owners},
            "spec": {"nodeName": "aks-1", "containers": []},
            "status": {"containerStatuses": statuses},
        }))
        .expect("pod")
    }

    #[test]
    fn running_images_are_by_digest_node_own_pods_first_and_only_running_ones() {
        let pods = [
            pod(
                "web-1",
                Some("ReplicaSet"),
                &[("web", "r.example/web:1", "r.example/web@sha256:1111", true)],
            ),
            pod(
                "kube-proxy-x",
                Some("DaemonSet"),
                &[(
                    "kube-proxy",
                    "mcr.microsoft.com/oss/kubernetes/kube-proxy:v1.30",
                    "mcr.microsoft.com/oss/kubernetes/kube-proxy@sha256:2222",
                    true,
                )],
            ),
            pod(
                "csi-x",
                Some("DaemonSet"),
                &[
                    // Loaded by hand: no repository digest, only an image id.
                    ("driver", "r.example/csi:2", "sha256:3333", true),
                    (
                        "crashing",
                        "r.example/crash:1",
                        "r.example/crash@sha256:4444",
                        false,
                    ),
                    ("id-only", "sha256:5555", "sha256:5555", true),
                ],
            ),
        ];
        let running = running_images(&pods);
        let images: Vec<(&str, bool)> = running["aks-1"]
            .iter()
            .map(|r| (r.image.as_str(), r.system))
            .collect();
        assert_eq!(
            images,
            [
                ("r.example/csi:2", true),
                (
                    "mcr.microsoft.com/oss/kubernetes/kube-proxy@sha256:2222",
                    true
                ),
                ("r.example/web@sha256:1111", false),
            ]
        );
        assert_eq!(
            startable_name("x:1", "docker-pullable://r.example/x@sha256:6666").as_deref(),
            Some("r.example/x@sha256:6666")
        );
    }

    #[test]
    fn the_given_image_then_the_listed_sandbox_then_a_running_one_else_none() {
        let running = [RunningImage {
            image: "mcr.microsoft.com/oss/kubernetes/kube-proxy@sha256:2222".into(),
            pod: "kube-system/kube-proxy-x".into(),
            container: "kube-proxy".into(),
            system: true,
        }];
        let listed = node(&[&["registry.k8s.io/pause:3.10"]]);
        let unlisted = node(&[&["r.example/big:1"]]);
        let chosen = |given, node, running: &[RunningImage], cluster| {
            choose(given, node, running, cluster).map(|c| (c.image, c.source.kind()))
        };
        assert_eq!(
            chosen(Some("r.example/mine:1"), Some(&listed), &running, None),
            Some(("r.example/mine:1".into(), "given"))
        );
        assert_eq!(
            chosen(None, Some(&listed), &running, None),
            Some(("registry.k8s.io/pause:3.10".into(), "sandbox"))
        );
        let from_running = choose(None, Some(&unlisted), &running, None).expect("running");
        assert_eq!(from_running.image, running[0].image);
        assert_eq!(
            from_running.source.describe(),
            "the image of container kube-proxy of pod kube-system/kube-proxy-x, running on the node"
        );
        assert_eq!(chosen(None, Some(&unlisted), &[], None), None);
        assert_eq!(
            chosen(None, None, &[], Some("registry.k8s.io/pause:3.10".into())),
            Some(("registry.k8s.io/pause:3.10".into(), "cluster-sandbox"))
        );
    }
}
