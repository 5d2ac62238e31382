//! What a run reads from the API before it creates anything: the namespaces its pods go to,
//! the workload's pod template, every pod (where the image runs now, what each node's running
//! containers hold), and the Karpenter NodePools (pools that may have no node). Each read is one request; a refused evidence read leaves the run to
//! what it has.

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Pod, PodSpec};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};

use crate::cluster::{ClusterError, ObjectRef, WorkloadKind};
use crate::image_ref::ImageRef;

/// Where a run's pods would go: a namespace the API cannot find, or one being deleted, refuses
/// every pod the run would create (the API's NamespaceLifecycle admission: `namespaces "X" not
/// found`, 404, or `unable to create new content in namespace X because it is being
/// terminated`, 403). A get the caller's RBAC refuses decides nothing: the creates will say.
pub async fn namespace_usable(
    client: &kube::Client,
    name: &str,
    role: &str,
) -> Result<(), ClusterError> {
    let phase = match Api::<Namespace>::all(client.clone()).get(name).await {
        Ok(namespace) => Some(namespace.status.and_then(|s| s.phase).unwrap_or_default()),
        Err(kube::Error::Api(status)) if status.code == 404 => None,
        Err(_) => return Ok(()),
    };
    match namespace_problem(name, role, phase.as_deref()) {
        Some(message) => Err(ClusterError::Api {
            code: if phase.is_none() { 404 } else { 403 },
            what: format!("get namespace {name}"),
            message,
        }),
        None => Ok(()),
    }
}

/// What keeps the run's pods out of namespace `name` (`phase`: its `status.phase`, `None` when
/// the namespace does not exist), in the words a user acts on.
pub fn namespace_problem(name: &str, role: &str, phase: Option<&str>) -> Option<String> {
    let fix = if role.starts_with("probe") {
        "create it (kubectl apply -f deploy/namespace.yaml, which also sets its Pod Security level) or name another with --probe-namespace"
    } else {
        "name the workload's namespace with -n"
    };
    match phase {
        None => Some(format!(
            "the {role} {name} does not exist, so the API would refuse every pod of the run: {fix}"
        )),
        Some("Terminating") => Some(format!(
            "the {role} {name} is being deleted (Terminating), so the API refuses new pods in it: wait until it is gone, then {fix}"
        )),
        Some(_) => None,
    }
}

/// Every pod in every namespace, in one request (a run's request count does not grow with its
/// nodes): where the image under test runs now, and what each node's running containers hold.
/// Evidence only: a refused list (RBAC) is its reason, and the run goes on without it.
pub async fn pods(client: kube::Client) -> Result<Vec<Pod>, Unread> {
    Api::<Pod>::all(client)
        .list(&ListParams::default())
        .await
        .map(|list| list.items)
        .map_err(|e| Unread::of("pods (cluster scope)", e))
}

/// Nodes where a pod runs `image` now: `node.status.images` stays the other cache evidence.
pub fn running_on(pods: &[Pod], image: &ImageRef) -> std::collections::BTreeSet<String> {
    pods.iter()
        .filter(|p| {
            crate::pod::running_image_ids(p).iter().any(|(running, _)| {
                ImageRef::parse(running).is_ok_and(|r| crate::pod::node::same_image(&r, image))
            })
        })
        .filter_map(crate::pod::node_name)
        .collect()
}

/// Why a list could not be read (`list`: what, as RBAC names it): the API's answer (a refusal
/// carries its code), or the request's own failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    pub list: &'static str,
    pub code: Option<u16>,
    pub message: String,
}

impl Unread {
    fn of(list: &'static str, error: kube::Error) -> Unread {
        match error {
            kube::Error::Api(status) => Unread {
                list,
                code: Some(status.code),
                message: status.message,
            },
            e => Unread {
                list,
                code: None,
                message: e.to_string(),
            },
        }
    }
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot list {}: {}", self.list, self.message)?;
        match self.code {
            Some(code) => write!(f, " ({code})"),
            None => Ok(()),
        }
    }
}

/// Why the NodePools could not be read.
pub type NodePoolsUnread = Unread;

/// The NodePools (`karpenter.sh/v1`) as JSON: none where Karpenter is not installed (the API
/// has no such resource: 404); unread when the read is refused (RBAC) or fails, so the report
/// can say that pools without nodes were not looked for.
pub async fn node_pools(client: &kube::Client) -> Result<Vec<serde_json::Value>, NodePoolsUnread> {
    let kind = GroupVersionKind::gvk("karpenter.sh", "v1", "NodePool");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ApiResource::from_gvk(&kind));
    match api.list(&ListParams::default()).await {
        Ok(list) => Ok(list
            .items
            .into_iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .collect()),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Vec::new()),
        Err(e) => Err(Unread::of("nodepools.karpenter.sh", e)),
    }
}

/// A workload the API would not give: the request as RBAC names it (`get deployments "web" in
/// shop`) and the API's error.
#[derive(Debug, thiserror::Error)]
#[error("cannot {request}: {error}")]
pub struct WorkloadUnread {
    pub request: String,
    #[source]
    pub error: kube::Error,
}

/// The pod template's spec of `object` (a pod's own spec), its name, and for a pod the node it
/// landed on.
pub async fn workload_spec(
    client: kube::Client,
    object: &ObjectRef,
    ns: &str,
) -> Result<(String, PodSpec, Option<String>), WorkloadUnread> {
    let template = |t: k8s_openapi::api::core::v1::PodTemplateSpec| t.spec.unwrap_or_default();
    match object {
        ObjectRef::Pod(name) => {
            let what = format!("get pods \"{name}\" in {ns}");
            let pod = Api::<Pod>::namespaced(client, ns)
                .get(name)
                .await
                .map_err(|error| WorkloadUnread {
                    request: what,
                    error,
                })?;
            let spec = pod.spec.unwrap_or_default();
            let node = spec.node_name.clone();
            Ok((format!("Pod/{name} in {ns}"), spec, node))
        }
        ObjectRef::Workload { kind, name } => {
            let what = format!("get {}s \"{name}\" in {ns}", kind.as_str().to_lowercase());
            let label = format!("{}/{name} in {ns}", kind.as_str());
            let spec = match kind {
                WorkloadKind::Deployment => Api::<Deployment>::namespaced(client, ns)
                    .get(name)
                    .await
                    .map(|d| d.spec.map(|s| template(s.template))),
                WorkloadKind::StatefulSet => Api::<StatefulSet>::namespaced(client, ns)
                    .get(name)
                    .await
                    .map(|d| d.spec.map(|s| template(s.template))),
                WorkloadKind::DaemonSet => Api::<DaemonSet>::namespaced(client, ns)
                    .get(name)
                    .await
                    .map(|d| d.spec.map(|s| template(s.template))),
                WorkloadKind::Job => Api::<Job>::namespaced(client, ns)
                    .get(name)
                    .await
                    .map(|d| d.spec.map(|s| template(s.template))),
            }
            .map_err(|error| WorkloadUnread {
                request: what,
                error,
            })?;
            Ok((label, spec.unwrap_or_default(), None))
        }
    }
}
