//! A Pod and its Events, wherever they came from (pasted `kubectl get -o json|yaml`, or the API
//! in cluster mode) → the image pulls it is stuck on.
//!
//! One reader for both roads, so `explain pod/NAME` and `explain` of the same pod's JSON see the
//! same containers, images and messages. Pods are read as k8s-openapi's `Pod`; events are read
//! from JSON because two API versions carry them (core/v1 `Event` and events.k8s.io/v1 `Event`,
//! fields per k8s.io/api `core/v1/types.go` and `events/v1/types.go`).

mod event;
/// A Node as a report needs it: its pool, age, versions, zone and the images it lists.
pub mod node;

pub use event::{Item, ItemKind, PodEvent, event_from_value};

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};
use serde_json::Value;

/// The `waiting.reason` values that mean "stuck on the image" (kubelet
/// `pkg/kubelet/images/types.go`, k8s.io/cri-api errors).
pub const IMAGE_REASONS: [&str; 7] = [
    "ErrImagePull",
    "ImagePullBackOff",
    "ErrImageNeverPull",
    "InvalidImageName",
    "ImageInspectError",
    "RegistryUnavailable",
    "SignatureValidationFailed",
];

/// Which list of the pod spec a container is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ContainerKind {
    Init,
    App,
    Ephemeral,
}

impl ContainerKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ContainerKind::Init => "init",
            ContainerKind::App => "app",
            ContainerKind::Ephemeral => "ephemeral",
        }
    }

    /// The kubelet's event field path for this list (`pkg/kubelet/container/ref.go`).
    fn field(self) -> &'static str {
        match self {
            ContainerKind::Init => "spec.initContainers",
            ContainerKind::App => "spec.containers",
            ContainerKind::Ephemeral => "spec.ephemeralContainers",
        }
    }
}

/// `spec.initContainers{migrate}` → (init, `migrate`).
pub fn parse_field_path(path: &str) -> Option<(ContainerKind, String)> {
    let (list, rest) = path.split_once('{')?;
    let name = rest.strip_suffix('}')?;
    let kind = [
        ContainerKind::Init,
        ContainerKind::App,
        ContainerKind::Ephemeral,
    ]
    .into_iter()
    .find(|k| k.field() == list)?;
    (!name.is_empty()).then(|| (kind, name.to_string()))
}

/// Which pod: enough to name it in a report and to find its events.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodId {
    pub namespace: Option<String>,
    pub name: String,
    pub uid: Option<String>,
}

/// A container whose status waits (or terminated) on an image reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageWait {
    pub container: String,
    pub kind: ContainerKind,
    /// The image as the pod spec names it (the status's when the spec does not say).
    pub image: String,
    pub reason: String,
    pub message: Option<String>,
}

pub fn pod_id(pod: &Pod) -> PodId {
    PodId {
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone().unwrap_or_default(),
        uid: pod.metadata.uid.clone(),
    }
}

pub fn node_name(pod: &Pod) -> Option<String> {
    pod.spec.as_ref().and_then(|s| s.node_name.clone())
}

/// The image the spec gives container `name` of `kind`.
pub fn spec_image(pod: &Pod, kind: ContainerKind, name: &str) -> Option<String> {
    let spec = pod.spec.as_ref()?;
    match kind {
        ContainerKind::App => spec
            .containers
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.image.clone()),
        ContainerKind::Init => spec
            .init_containers
            .iter()
            .flatten()
            .find(|c| c.name == name)
            .and_then(|c| c.image.clone()),
        ContainerKind::Ephemeral => spec
            .ephemeral_containers
            .iter()
            .flatten()
            .find(|c| c.name == name)
            .and_then(|c| c.image.clone()),
    }
}

/// Every container, init container and ephemeral container stuck on its image, in the order
/// the kubelet starts them (init first).
pub fn image_waits(pod: &Pod) -> Vec<ImageWait> {
    let Some(status) = &pod.status else {
        return Vec::new();
    };
    let lists = [
        (ContainerKind::Init, &status.init_container_statuses),
        (ContainerKind::App, &status.container_statuses),
        (
            ContainerKind::Ephemeral,
            &status.ephemeral_container_statuses,
        ),
    ];
    let mut waits = Vec::new();
    for (kind, statuses) in lists {
        for status in statuses.iter().flatten() {
            if let Some((reason, message)) = image_state(status) {
                let image = spec_image(pod, kind, &status.name)
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(|| status.image.clone());
                waits.push(ImageWait {
                    container: status.name.clone(),
                    kind,
                    image,
                    reason,
                    message,
                });
            }
        }
    }
    waits
}

/// The pods stuck on an image.
pub fn stuck(pods: &[Pod]) -> Vec<Pod> {
    pods.iter()
        .filter(|p| !image_waits(p).is_empty())
        .cloned()
        .collect()
}

/// The image reason and message of a status: waiting now, else terminated on one.
fn image_state(status: &ContainerStatus) -> Option<(String, Option<String>)> {
    let is_image = |r: &Option<String>| r.as_deref().is_some_and(|r| IMAGE_REASONS.contains(&r));
    let state = status.state.as_ref();
    if let Some(w) = state.and_then(|s| s.waiting.as_ref())
        && is_image(&w.reason)
    {
        return Some((w.reason.clone().unwrap_or_default(), w.message.clone()));
    }
    [state, status.last_state.as_ref()]
        .into_iter()
        .flatten()
        .filter_map(|s| s.terminated.as_ref())
        .find(|t| is_image(&t.reason))
        .map(|t| (t.reason.clone().unwrap_or_default(), t.message.clone()))
}

/// Whether a container status runs (or ran) the image: its `imageID` is set.
pub fn running_image_ids(pod: &Pod) -> Vec<(String, String)> {
    let Some(status) = &pod.status else {
        return Vec::new();
    };
    [
        &status.init_container_statuses,
        &status.container_statuses,
        &status.ephemeral_container_statuses,
    ]
    .into_iter()
    .flatten()
    .flatten()
    .filter(|s| !s.image_id.is_empty())
    .filter(|s| s.state.as_ref().is_some_and(|st| st.running.is_some()))
    .map(|s| (s.image.clone(), s.image_id.clone()))
    .collect()
}

/// Read a Pod from JSON. kubectl always prints the status fields the API requires; a pasted,
/// trimmed Pod may lack them, so they are filled with the API's zero values first.
pub fn from_value(mut value: Value) -> Result<Pod, serde_json::Error> {
    for list in [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ] {
        if let Some(statuses) = value
            .pointer_mut(&format!("/status/{list}"))
            .and_then(Value::as_array_mut)
        {
            for status in statuses.iter_mut().filter_map(Value::as_object_mut) {
                for (key, zero) in [
                    ("name", Value::from("")),
                    ("image", Value::from("")),
                    ("imageID", Value::from("")),
                    ("ready", Value::from(false)),
                    ("restartCount", Value::from(0)),
                ] {
                    status.entry(key).or_insert(zero);
                }
            }
        }
    }
    serde_json::from_value(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: &str) -> Pod {
        from_value(serde_json::from_str(json).expect("json")).expect("pod")
    }

    #[test]
    fn every_list_of_statuses_is_read_and_init_comes_first() {
        let p = pod(
            r#"{"kind":"Pod","metadata":{"name":"w-0","namespace":"shop"},
            "spec":{"nodeName":"n1","containers":[{"name":"app","image":"r/app:1"}],"initContainers":[{"name":"migrate","image":"r/m:1"}]},
            "status":{"containerStatuses":[{"name":"app","state":{"waiting":{"reason":"PodInitializing"}}}],
              "initContainerStatuses":[{"name":"migrate","image":"r/m:1","state":{"waiting":{"reason":"ImagePullBackOff","message":"Back-off pulling image \"r/m:1\""}}}],
              "ephemeralContainerStatuses":[{"name":"debug","image":"busybox","state":{"terminated":{"reason":"ErrImageNeverPull","exitCode":1}}}]}}"#,
        );
        let waits = image_waits(&p);
        assert_eq!(waits.len(), 2, "{waits:#?}");
        assert_eq!(
            (
                waits[0].kind,
                waits[0].container.as_str(),
                waits[0].image.as_str()
            ),
            (ContainerKind::Init, "migrate", "r/m:1")
        );
        assert_eq!(waits[1].kind, ContainerKind::Ephemeral);
        assert_eq!(waits[1].image, "busybox");
        assert_eq!(node_name(&p).as_deref(), Some("n1"));
    }

    #[test]
    fn field_paths() {
        assert_eq!(
            parse_field_path("spec.initContainers{migrate}"),
            Some((ContainerKind::Init, "migrate".into()))
        );
        assert_eq!(parse_field_path("spec.containers{}"), None);
        assert_eq!(parse_field_path("metadata.name"), None);
    }

    #[test]
    fn both_event_apis_read_alike() {
        let core: Value = serde_json::from_str(r#"{"involvedObject":{"kind":"Pod","namespace":"shop","name":"web-1","uid":"u1","fieldPath":"spec.containers{web}"},
            "reason":"Failed","message":"Failed to pull image \"a\": x","source":{"component":"kubelet","host":"n1"},
            "firstTimestamp":"2026-12-01T08:00:00Z","lastTimestamp":"2026-12-01T08:06:00Z","count":4,"eventTime":null}"#).expect("json");
        let v1: Value = serde_json::from_str(r#"{"regarding":{"kind":"Pod","namespace":"shop","name":"web-1","uid":"u1","fieldPath":"spec.containers{web}"},
            "reason":"Failed","note":"Failed to pull image \"a\": x","deprecatedSource":{"component":"kubelet","host":"n1"},
            "deprecatedFirstTimestamp":"2026-12-01T08:00:00Z","deprecatedLastTimestamp":"2026-12-01T08:06:00Z","deprecatedCount":4,"eventTime":null,"series":null}"#).expect("json");
        let a = event_from_value(&core).expect("core event");
        assert_eq!(a, event_from_value(&v1).expect("events.k8s.io event"));
        assert_eq!(a.count, 4);
        assert_eq!(a.node.as_deref(), Some("n1"));
        assert_eq!(a.container, Some((ContainerKind::App, "web".into())));
    }
}
