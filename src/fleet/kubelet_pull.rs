//! `--kubelet-pull`: beside each probe pod, a pod that only asks the node's kubelet to pull the
//! image under test, as the workload would — in the workload's namespace, with its service
//! account (and so the pull secrets admission adds from it) and its `imagePullSecrets`, pinned
//! by `nodeName`, `imagePullPolicy: Always`, no host access. The kubelet's own pull, with the
//! kubelet's own credentials, is the truest answer a cluster gives without privileges; it sits
//! beside the probe's verdict like `--runtime-pull`'s.
//!
//! The container is never meant to run: its command is a path no image has, so once the image
//! is pulled the runtime fails to start it (`StartError`, `RunContainerError`), which is the
//! proof of the pull, and the workload's own code never runs on the node. What the kubelet
//! pulled stays in the node's image cache.
//!
//! Pure functions: the pod for a plan, and what a pod's status says about the pull. The kubelet
//! pulls before it creates the container (`pkg/kubelet/kuberuntime/kuberuntime_container.go`
//! `startContainer`: `EnsureImageExists` first), so any state past the image — a container
//! error, a start error, a running or ended container, an `imageID` — means it pulled.

use k8s_openapi::api::core::v1::Pod;
use serde::Serialize;
use serde_json::json;

use super::pod_base::{KUBELET_PULL_COMPONENT, extend, pinned_spec, run_pod_metadata};
use crate::failure_text;
use crate::report;
use crate::verdict::{Failure, Verdict};
use crate::vocab::Layer;

/// The container's command: a path no image holds, so the workload never runs.
pub const NEVER_RUNS: &str = "/pullpath-kubelet-pull-does-not-run";
/// The container's name.
pub const CONTAINER: &str = "pull";

/// Everything one kubelet-pull pod needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KubeletPullPlan {
    pub name: String,
    /// The workload's namespace (`-n`, else the context's).
    pub namespace: String,
    pub node: String,
    pub run_id: String,
    pub image: String,
    /// The workload's service account (`--for`); absent: the namespace's `default`.
    pub service_account: Option<String>,
    /// The workload's `imagePullSecrets` (`--for`), by name.
    pub pull_secrets: Vec<String>,
    pub deadline_seconds: u64,
}

/// The kubelet-pull pod for `plan.node`.
pub fn pod(plan: &KubeletPullPlan) -> Pod {
    // Pinned by nodeName like the probe pod: a taint must not keep the kubelet from it.
    let mut spec = pinned_spec(&plan.node, plan.deadline_seconds);
    extend(
        &mut spec,
        json!({
            "securityContext": {"runAsNonRoot": true, "runAsUser": 65532, "runAsGroup": 65532,
                "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{
                "name": CONTAINER,
                "image": plan.image,
                "imagePullPolicy": "Always",
                "command": [NEVER_RUNS],
                "securityContext": {"allowPrivilegeEscalation": false, "readOnlyRootFilesystem": true,
                    "capabilities": {"drop": ["ALL"]}},
                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
            }],
        }),
    );
    if let Some(account) = &plan.service_account {
        spec["serviceAccountName"] = json!(account);
    }
    if !plan.pull_secrets.is_empty() {
        spec["imagePullSecrets"] = plan
            .pull_secrets
            .iter()
            .map(|name| json!({"name": name}))
            .collect();
    }
    let pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": run_pod_metadata(&plan.name, &plan.namespace, &plan.node, &plan.run_id, KUBELET_PULL_COMPONENT),
        "spec": spec,
    });
    // Every field above is a Pod field of the right type: deserializing cannot fail.
    serde_json::from_value(pod).expect("the kubelet-pull pod is a Pod")
}

/// What the kubelet's pull came to.
#[derive(Debug, Clone)]
pub enum KubeletPull {
    /// The kubelet pulled the image: the evidence (`imageID sha256:…`, `StartError`).
    Pulled { evidence: String },
    /// The kubelet's pull failed: its reason and message, and the layer that message decides
    /// (explain's reading of it), when it decides one.
    Failed {
        reason: String,
        message: String,
        layer: Option<Layer>,
    },
    /// No answer: the pod could not be made, or said nothing in time.
    NoAnswer { why: NoKubeletAnswer },
}

/// Why the kubelet-pull pod gave no answer; `Display` words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoKubeletAnswer {
    /// The API refused its create (`namespace/name`, the API's words).
    NotCreated { pod: String, error: String },
    /// The API would not give it back (the API's words).
    Unread { error: String },
    /// Its status said nothing of the pull within the start budget.
    Silent { budget: std::time::Duration },
}

impl std::fmt::Display for NoKubeletAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NoKubeletAnswer::NotCreated { pod, error } => {
                write!(f, "cannot create the kubelet-pull pod {pod}: {error}")
            }
            NoKubeletAnswer::Unread { error } => {
                write!(f, "cannot read the kubelet-pull pod: {error}")
            }
            NoKubeletAnswer::Silent { budget } => write!(
                f,
                "the kubelet said nothing of its pull within the start budget ({}s)",
                budget.as_secs()
            ),
        }
    }
}

/// The kubelet's waiting reasons of a failed pull (`pkg/kubelet/images/types.go`).
const PULL_FAILED: [&str; 3] = ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"];

/// What `pod` says of the pull now; `None`: not yet decided.
pub fn read(pod: &Pod) -> Option<KubeletPull> {
    let status = pod.status.as_ref()?;
    let container = status.container_statuses.as_ref()?.first()?;
    let state = container.state.as_ref();
    if let Some(waiting) = state.and_then(|s| s.waiting.as_ref()) {
        let reason = waiting.reason.clone().unwrap_or_default();
        if PULL_FAILED.contains(&reason.as_str()) {
            let message = waiting.message.clone().unwrap_or_else(|| reason.clone());
            let layer = report::explain_report(&failure_text::explain(&message))
                .and_then(|r| decided_layer(&r.verdict));
            return Some(KubeletPull::Failed {
                reason,
                message,
                layer,
            });
        }
        // Past the image: the container could not be made or started.
        if reason != "ContainerCreating" && !reason.is_empty() {
            return Some(KubeletPull::Pulled {
                evidence: format!("the container then waits with {reason}"),
            });
        }
    }
    if let Some(ended) = state.and_then(|s| s.terminated.as_ref()) {
        return Some(KubeletPull::Pulled {
            evidence: format!(
                "the container then ended ({})",
                ended.reason.as_deref().unwrap_or("terminated")
            ),
        });
    }
    if state.and_then(|s| s.running.as_ref()).is_some() {
        return Some(KubeletPull::Pulled {
            evidence: "the container runs".into(),
        });
    }
    (!container.image_id.is_empty()).then(|| KubeletPull::Pulled {
        evidence: format!("imageID {}", container.image_id),
    })
}

/// The kubelet's pull beside the probe's verdict, as the report's row carries it.
#[derive(Debug, Clone, Serialize)]
pub struct KubeletPullReport {
    /// `pulled`, `failed` or `no-answer`.
    pub outcome: &'static str,
    /// The kubelet's message (a failed pull), what proved the pull, or why there is no answer.
    pub message: String,
    /// For a failed pull: the layer its message names, when it decides one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    /// Whether it matches the probe's verdict (absent without an answer); false: the kubelet
    /// and the probe disagree, and the kubelet is right.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
    /// The pod that asked, `namespace/name`.
    pub pod: String,
}

/// The layer a failed verdict decides.
fn decided_layer(v: &Verdict) -> Option<Layer> {
    match v {
        Verdict::Failed(Failure { fault, .. }) => Some(fault.layer()),
        _ => None,
    }
}

/// The report's view of `pull` beside `probe` (the node's row verdict).
pub fn report(pull: &KubeletPull, probe: &Verdict, pod: String) -> KubeletPullReport {
    match pull {
        KubeletPull::Pulled { evidence } => KubeletPullReport {
            outcome: "pulled",
            message: evidence.clone(),
            layer: None,
            agrees: probe.is_decided().then_some(probe.is_passed()),
            pod,
        },
        KubeletPull::Failed {
            reason,
            message,
            layer,
        } => {
            let layer = *layer;
            // Both failed: they agree unless both name a layer and the layers differ.
            let agrees = probe.is_decided().then(|| {
                !probe.is_passed()
                    && match (layer, decided_layer(probe)) {
                        (Some(kubelet), Some(probe)) => kubelet == probe,
                        _ => true,
                    }
            });
            KubeletPullReport {
                outcome: "failed",
                message: format!("{reason}: {message}"),
                layer,
                agrees,
                pod,
            }
        }
        KubeletPull::NoAnswer { why } => KubeletPullReport {
            outcome: "no-answer",
            message: why.to_string(),
            layer: None,
            agrees: None,
            pod,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> KubeletPullPlan {
        KubeletPullPlan {
            name: "pullpath-fleet-ab12-0-kubelet".into(),
            namespace: "shop".into(),
            node: "aks-user-1".into(),
            run_id: "ab12".into(),
            image: "r.example/team/app:v1".into(),
            service_account: Some("shop-sa".into()),
            pull_secrets: vec!["acr-pull".into()],
            deadline_seconds: 120,
        }
    }

    #[test]
    fn the_workloads_identity_always_pulled_never_run_no_host_access() {
        let pod = pod(&plan());
        let spec = pod.spec.as_ref().expect("spec");
        assert_eq!(pod.metadata.namespace.as_deref(), Some("shop"));
        assert_eq!(spec.node_name.as_deref(), Some("aks-user-1"));
        assert_eq!(spec.service_account_name.as_deref(), Some("shop-sa"));
        let secrets: Vec<&str> = spec
            .image_pull_secrets
            .iter()
            .flatten()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(secrets, ["acr-pull"]);
        assert_eq!(spec.host_network, None);
        assert_eq!(spec.host_pid, None);
        assert!(spec.volumes.is_none());
        assert_eq!(spec.automount_service_account_token, Some(false));
        let c = &spec.containers[0];
        assert_eq!(c.image_pull_policy.as_deref(), Some("Always"));
        assert_eq!(c.command.as_deref(), Some(&[NEVER_RUNS.to_string()][..]));
        let labels = pod.metadata.labels.as_ref().expect("labels");
        assert_eq!(labels[super::super::pod_base::RUN_LABEL], "ab12");
        // Without --for: the namespace's default service account, no secrets named.
        let bare = super::pod(&KubeletPullPlan {
            service_account: None,
            pull_secrets: vec![],
            ..plan()
        });
        let spec = bare.spec.as_ref().expect("spec");
        assert!(spec.service_account_name.is_none() && spec.image_pull_secrets.is_none());
    }

    fn with_state(state: serde_json::Value, image_id: &str) -> Pod {
        serde_json::from_value(json!({"metadata": {"name": "p"}, "status": {"phase": "Pending",
            "containerStatuses": [{"name": CONTAINER, "image": "r.example/team/app:v1", "imageID": image_id,
                "ready": false, "restartCount": 0, "state": state}]}}))
        .expect("pod")
    }

    #[test]
    fn a_pull_is_read_from_the_containers_state() {
        let creating = with_state(json!({"waiting": {"reason": "ContainerCreating"}}), "");
        assert!(read(&creating).is_none());
        let started = with_state(
            json!({"terminated": {"exitCode": 128, "reason": "StartError"}}),
            "sha256:ab",
        );
        assert!(
            matches!(read(&started), Some(KubeletPull::Pulled { evidence }) if evidence.contains("StartError"))
        );
        let failed = with_state(
            json!({"waiting": {"reason": "ErrImagePull", "message": "failed to pull and unpack image \"r.example/team/app:v1\": failed to resolve reference \"r.example/team/app:v1\": failed to do request: Head \"https://r.example/v2/team/app/manifests/v1\": tls: failed to verify certificate: x509: certificate signed by unknown authority"}}),
            "",
        );
        let Some(KubeletPull::Failed { layer, .. }) = read(&failed) else {
            panic!("a failed pull");
        };
        assert_eq!(layer, Some(Layer::Tls));
    }

    #[test]
    fn agreement_with_the_probe() {
        let failed = |layer| KubeletPull::Failed {
            reason: "ErrImagePull".into(),
            message: "m".into(),
            layer: Some(layer),
        };
        let passed = Verdict::Passed;
        let tls = Verdict::Failed(Failure {
            fault: crate::verdict::Fault::new(Layer::Tls, None, crate::vocab::Owner::RegistryPki),
            seen: Default::default(),
        });
        let pulled = KubeletPull::Pulled {
            evidence: "imageID sha256:ab".into(),
        };
        let at = |pull: &KubeletPull, probe: &Verdict| report(pull, probe, "ns/p".into()).agrees;
        assert_eq!(at(&pulled, &passed), Some(true));
        assert_eq!(at(&pulled, &tls), Some(false));
        assert_eq!(at(&failed(Layer::Tls), &tls), Some(true));
        assert_eq!(at(&failed(Layer::Auth), &tls), Some(false));
        assert_eq!(at(&failed(Layer::Tls), &passed), Some(false));
        let none = KubeletPull::NoAnswer {
            why: NoKubeletAnswer::Unread { error: "w".into() },
        };
        assert_eq!(at(&none, &passed), None);
    }

    #[test]
    fn no_answer_says_why_in_the_words_the_report_has_always_said() {
        let created = NoKubeletAnswer::NotCreated {
            pod: "shop/k".into(),
            error: "403 Forbidden: no".into(),
        };
        assert_eq!(
            created.to_string(),
            "cannot create the kubelet-pull pod shop/k: 403 Forbidden: no"
        );
        let unread = NoKubeletAnswer::Unread {
            error: "500 x: y".into(),
        };
        assert_eq!(
            unread.to_string(),
            "cannot read the kubelet-pull pod: 500 x: y"
        );
        let silent = NoKubeletAnswer::Silent {
            budget: std::time::Duration::from_secs(90),
        };
        assert_eq!(
            silent.to_string(),
            "the kubelet said nothing of its pull within the start budget (90s)"
        );
    }
}
