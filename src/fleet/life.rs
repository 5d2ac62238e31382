//! What a probe pod's life says beside its log: the API's refusal at create time, the kubelet's
//! refusal to admit it, a volume it cannot mount, a container it cannot create, a pod that never
//! starts or runs past the probe's own deadline. Each is a [`RunProblem`] for that node — the run
//! could not ask the node, which says nothing about the pool's pull — named the poll it shows up,
//! not at the run's deadline. Pure functions of the pod, its events and two clocks; `run` only
//! feeds them.
//!
//! The words matched are the kubelet's and the apiserver's own, read from kubernetes/kubernetes:
//! - `FailedMount` (`pkg/kubelet/events/event.go` `FailedMountVolume`), its message built by
//!   `pkg/volume/util/operationexecutor/operation_executor.go` `generateVolumeMsg`
//!   (`MountVolume.SetUp failed for volume "X" : <err>`), the hostPath error by
//!   `pkg/volume/hostpath/host_path.go` `typeMatchedOrError` (`hostPath /etc/containerd doesn't
//!   exist`; older kubelets: `hostPath type check failed: /etc/containerd is not a directory`);
//! - admission by the kubelet: `pkg/kubelet/lifecycle/predicate.go` (`OutOfcpu`, `OutOfmemory`,
//!   `OutOfpods`, `OutOf<resource>`, a predicate's name such as `NodeAffinity`,
//!   `PodOSNotSupported`), written as phase `Failed` with that `status.reason` and the message
//!   `Pod was rejected: …` (`pkg/kubelet/kubelet.go` `rejectPod`), plus an event of that reason;
//! - `ErrImageNeverPull`, `CreateContainerConfigError`, `CreateContainerError` as waiting reasons
//!   (`pkg/kubelet/images/types.go`, `pkg/kubelet/kuberuntime/kuberuntime_container.go`);
//!   `DeadlineExceeded` for `activeDeadlineSeconds` (`pkg/kubelet/active_deadline.go`);
//! - `FailedCreatePodSandBox` (`pkg/kubelet/kuberuntime/kuberuntime_manager.go` `SyncPod`:
//!   `Failed to create pod sandbox: <err>`), which the kubelet retries with back-off while the
//!   pod stays in ContainerCreating;
//! - refusals at create time: a webhook's (`staging/src/k8s.io/apiserver/pkg/admission/plugin/
//!   webhook/errors/statuserror.go` `ToStatusErr`: `admission webhook "NAME" denied the request:
//!   …`, 403 unless the webhook set a code of 400 or more) and Pod Security's
//!   (`staging/src/k8s.io/pod-security-admission/admission/admission.go`: `violates PodSecurity
//!   "baseline:latest": …`, 403 Forbidden), and a ValidatingAdmissionPolicy's
//!   (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/dispatcher.go`:
//!   `ValidatingAdmissionPolicy 'NAME' with binding 'BINDING' denied request: …`, 422 Invalid
//!   unless the validation names another reason).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};

use super::answer::{self, Answer};
use super::run_problem::{Refusal, RunProblem};

/// An API refusal of the create, read as an admission refusal when it is one; `None` for
/// anything else (RBAC, a missing namespace: pullpath's own errors).
pub fn admission_refusal(code: u16, message: &str) -> Option<Refusal> {
    const WEBHOOK: &str = "admission webhook \"";
    const POD_SECURITY: &str = "violates PodSecurity \"";
    const POLICY: &str = "ValidatingAdmissionPolicy '";
    if let Some(at) = message.find(POLICY) {
        let rest = &message[at + POLICY.len()..];
        let name = rest.split('\'').next()?.to_string();
        let said = rest
            .split_once("denied request: ")
            .map_or(message, |(_, said)| said);
        return Some(Refusal::Policy {
            name,
            message: said.to_string(),
        });
    }
    if let Some(at) = message.find(WEBHOOK) {
        let rest = &message[at + WEBHOOK.len()..];
        let name = rest.split('"').next()?.to_string();
        return Some(Refusal::Webhook {
            name,
            code,
            message: message.to_string(),
        });
    }
    let at = message.find(POD_SECURITY)?;
    let level = message[at + POD_SECURITY.len()..].split('"').next()?;
    Some(Refusal::PodSecurity {
        level: level.to_string(),
        message: message.to_string(),
    })
}

/// What a run gives each probe pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// From the create to a started container (admission, mounts, the probe image's pull).
    pub start: Duration,
    /// From the container's start to its report: the probe's own deadline.
    pub probe: Duration,
}

/// How long the run has watched this pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clocks {
    /// Since the create was answered.
    pub since_create: Duration,
    /// Since the run first saw its container running (`None`: not yet).
    pub since_running: Option<Duration>,
}

/// Whether the probe image comes from the image's own registry host: only then does its failed
/// pull say something about the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeOrigin {
    pub same_registry: bool,
    /// The probe image's registry host.
    pub registry: String,
}

/// What the run should do with a probe pod it sees.
#[derive(Debug, Clone)]
pub enum Reading {
    /// Nothing decided yet: look again next poll.
    Wait,
    /// It ended: read its log.
    ReadLog,
    /// Its answer without a log (the probe image's own pull failure, explained, or a problem).
    Answer(Box<Answer>),
}

/// The kubelet's waiting reasons that mean the container will not be created as it stands.
const NOT_CREATED: [&str; 2] = ["CreateContainerConfigError", "CreateContainerError"];

/// What `pod` and its `events` (already those whose `involvedObject.name` is the pod) mean now.
pub fn read(
    pod: &Pod,
    events: &[Event],
    clocks: Clocks,
    budgets: Budgets,
    origin: &ProbeOrigin,
) -> Reading {
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref());
    let reason = status.and_then(|s| s.reason.clone());
    let message = status.and_then(|s| s.message.clone()).unwrap_or_default();
    let container_ran = clocks.since_running.is_some()
        || container_state(pod).is_some_and(|s| s.running.is_some() || s.terminated.is_some());
    match (phase, reason) {
        (Some("Failed"), Some(reason)) if reason == "DeadlineExceeded" => {
            return problem(RunProblem::ProbeOverran {
                deadline: budgets.probe,
            });
        }
        // The kubelet refused it before any container ran: admission, not the probe.
        (Some("Failed"), Some(reason)) if !container_ran => {
            return problem(RunProblem::NotAdmitted { reason, message });
        }
        (Some("Succeeded" | "Failed"), _) => return Reading::ReadLog,
        _ => {}
    }
    let waiting = container_state(pod).and_then(|s| s.waiting.as_ref());
    if let Some(w) = waiting {
        let reason = w.reason.clone().unwrap_or_default();
        let message = w.message.clone().unwrap_or_default();
        if reason == "ErrImageNeverPull" {
            return problem(RunProblem::ProbeImageNeverPulled { message });
        }
        if NOT_CREATED.contains(&reason.as_str()) {
            return problem(RunProblem::ContainerNotCreated { reason, message });
        }
    }
    if let Some(pull) = answer::probe_image_pull(pod) {
        return match pull {
            Answer::ProbeImagePull {
                reason, message, ..
            } if !origin.same_registry => problem(RunProblem::ProbeImageUnpulled {
                registry: origin.registry.clone(),
                reason,
                message,
            }),
            pull => Reading::Answer(Box::new(pull)),
        };
    }
    // Events say what the status does not: a mount that fails leaves the pod Pending in
    // ContainerCreating. The newest such event speaks for the pod.
    let newest = |wanted: &dyn Fn(&str) -> bool| {
        events
            .iter()
            .filter(|e| e.reason.as_deref().is_some_and(wanted))
            .max_by_key(|e| (e.last_timestamp.clone().map(|t| t.0), e.count))
    };
    if !container_ran {
        if let Some(e) = newest(&|r| r == "FailedMount") {
            return problem(RunProblem::MountFailed {
                message: e.message.clone().unwrap_or_default(),
            });
        }
        if let Some(e) = newest(&|r| r == "FailedCreatePodSandBox") {
            return problem(RunProblem::SandboxNotCreated {
                message: e.message.clone().unwrap_or_default(),
            });
        }
        if let Some(e) = newest(&|r| r.starts_with("OutOf") || r == "NodeAffinity") {
            return problem(RunProblem::NotAdmitted {
                reason: e.reason.clone().unwrap_or_default(),
                message: e.message.clone().unwrap_or_default(),
            });
        }
        if clocks.since_create > budgets.start {
            let waiting = waiting
                .and_then(|w| w.reason.clone())
                .or_else(|| events.last().and_then(|e| e.reason.clone()))
                .or_else(|| phase.map(str::to_string));
            return problem(RunProblem::NeverStarted {
                budget: budgets.start,
                waiting,
            });
        }
    }
    // A kubelet enforces activeDeadlineSeconds itself; this holds when it does not say so.
    if clocks
        .since_running
        .is_some_and(|running| running > budgets.probe + OVERRUN_GRACE)
    {
        return problem(RunProblem::ProbeOverran {
            deadline: budgets.probe,
        });
    }
    Reading::Wait
}

/// Past the probe's deadline, the time its pod has to print the report and end.
pub const OVERRUN_GRACE: Duration = Duration::from_secs(15);

fn problem(p: RunProblem) -> Reading {
    Reading::Answer(Box::new(Answer::Problem(p)))
}

fn container_state(pod: &Pod) -> Option<&k8s_openapi::api::core::v1::ContainerState> {
    pod.status
        .as_ref()?
        .container_statuses
        .as_ref()?
        .first()?
        .state
        .as_ref()
}

/// A log that says the probe binary never ran: it is built for another architecture (the
/// kernel's `ENOEXEC`, as runc reports it: `exec /usr/local/bin/pullpath: exec format error`).
pub fn exec_format_error(log: &str) -> Option<RunProblem> {
    log.contains("exec format error")
        .then(|| RunProblem::ProbeImageLacksArch {
            arch: String::new(),
            has: Vec::new(),
        })
}

/// Whether another wave may start: a probe that starts with less than `needs` left of the run
/// would be cut off by the run's deadline, and its pool blamed for it.
pub fn time_for_a_probe(left: Duration, needs: Duration) -> Result<(), RunProblem> {
    if left < needs {
        return Err(RunProblem::NoTimeLeft { left, needs });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
