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
//!   "baseline:latest": …`, 403 Forbidden).

use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, Pod};

use super::answer::{self, Answer};

/// Why the run could not ask a node: about the run (its pod, its image, its time), never a
/// verdict on the pool's pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunProblem {
    /// The API refused the probe pod at create time (an admission webhook, Pod Security).
    Refused(Refusal),
    /// The kubelet cannot mount one of the probe pod's volumes (`FailedMount`): usually a node
    /// path this node image does not have.
    MountFailed { message: String },
    /// The kubelet would not admit the pod (`OutOfcpu`, `OutOfpods`, `NodeAffinity`, …):
    /// `nodeName` skips the scheduler, so the kubelet's own checks are the first.
    NotAdmitted { reason: String, message: String },
    /// `ErrImageNeverPull`: the probe image is not on the node and its pull policy is `Never`.
    ProbeImageNeverPulled { message: String },
    /// `FailedCreatePodSandBox`: the runtime could not start the pod's sandbox (its pause
    /// image, its network, the OCI runtime). The kubelet keeps retrying, but every pod on the
    /// node meets the same wall, so the run names it at once.
    SandboxNotCreated { message: String },
    /// `CreateContainerConfigError` / `CreateContainerError`: the runtime would not create the
    /// probe container.
    ContainerNotCreated { reason: String, message: String },
    /// The probe image, from another registry than the image under test, did not pull: that
    /// registry's reachability, not the image's.
    ProbeImageUnpulled {
        registry: String,
        reason: String,
        message: String,
    },
    /// The node's architecture (`kubernetes.io/arch`) is not among the probe image's
    /// (`--probe-image-arch`: `has`), or the binary would not execute on it (`exec format
    /// error`: `arch` and `has` empty).
    ProbeImageLacksArch { arch: String, has: Vec<String> },
    /// Still not started after the start budget (`--start-budget`); the last thing it waited on.
    NeverStarted {
        budget: Duration,
        waiting: Option<String>,
    },
    /// The probe ran past its own deadline (`--probe-deadline`, the pod's
    /// `activeDeadlineSeconds`).
    ProbeOverran { deadline: Duration },
    /// Not started: what was left of the run's `--deadline` was less than a probe needs.
    NoTimeLeft { left: Duration, needs: Duration },
    /// No registry (no `--probe-image`), and no image this node holds to start from: its
    /// status lists no sandbox (pause) image, and `--node-image` names none.
    NoNodeImage,
    /// No registry, and no pullpath binary to deliver for the node's architecture.
    NoProbeBinary {
        arch: String,
        why: crate::fleet::deliver::Undeliverable,
    },
}

/// An admission refusal at create time, with what refused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Webhook {
        name: String,
        code: u16,
        message: String,
    },
    /// Pod Security admission: the namespace's `pod-security.kubernetes.io/enforce` level.
    PodSecurity { level: String, message: String },
}

impl RunProblem {
    /// The wire name (docs/fleet.md, `problem.kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            RunProblem::Refused(Refusal::Webhook { .. }) => "admission-webhook",
            RunProblem::Refused(Refusal::PodSecurity { .. }) => "pod-security",
            RunProblem::MountFailed { .. } => "mount-failed",
            RunProblem::NotAdmitted { .. } => "not-admitted",
            RunProblem::ProbeImageNeverPulled { .. } => "probe-image-never-pulled",
            RunProblem::SandboxNotCreated { .. } => "sandbox-not-created",
            RunProblem::ContainerNotCreated { .. } => "container-not-created",
            RunProblem::ProbeImageUnpulled { .. } => "probe-image-registry",
            RunProblem::ProbeImageLacksArch { .. } => "probe-image-arch",
            RunProblem::NeverStarted { .. } => "never-started",
            RunProblem::ProbeOverran { .. } => "probe-deadline",
            RunProblem::NoTimeLeft { .. } => "no-time-left",
            RunProblem::NoNodeImage => "no-node-image",
            RunProblem::NoProbeBinary { .. } => "probe-binary",
        }
    }

    /// The problem in words, with its evidence.
    pub fn describe(&self) -> String {
        match self {
            RunProblem::Refused(Refusal::Webhook {
                name,
                code,
                message,
            }) => format!(
                "the admission webhook {name:?} refused the probe pod ({code}): {message}"
            ),
            RunProblem::Refused(Refusal::PodSecurity { level, message }) => format!(
                "Pod Security admission ({level}) refused the probe pod: {message}; the probe namespace must be `privileged` (deploy/namespace.yaml)"
            ),
            RunProblem::MountFailed { message } => format!(
                "the kubelet cannot mount the probe pod's volume (FailedMount): {message}"
            ),
            RunProblem::NotAdmitted { reason, message } => {
                format!("the kubelet did not admit the probe pod ({reason}): {message}")
            }
            RunProblem::ProbeImageNeverPulled { message } => format!(
                "the probe pod's image is not on the node and its pull policy is Never (ErrImageNeverPull): {message}"
            ),
            RunProblem::NoNodeImage => "not started: the node's status lists no sandbox (pause) image to start the probe from without a registry (the kubelet lists at most 50 images, largest first); name one the node holds with --node-image, or pass --probe-image".to_string(),
            RunProblem::NoProbeBinary { arch, why } => format!(
                "not started: no pullpath binary to deliver for {arch}: {}",
                crate::fleet::deliver::problem::WithFix { arch, problem: why }
            ),
            RunProblem::SandboxNotCreated { message } => format!(
                "the runtime could not create the probe pod's sandbox (FailedCreatePodSandBox), as it would fail any pod on this node: {message}"
            ),
            RunProblem::ContainerNotCreated { reason, message } => {
                format!("the probe container was not created ({reason}): {message}")
            }
            RunProblem::ProbeImageUnpulled {
                registry,
                reason,
                message,
            } => format!(
                "the node cannot pull the probe image from {registry} ({reason}), another registry than the image's, so this says nothing about the image: mirror the probe image into the image's registry (scripts/image.sh) or fix the node's path to {registry}: {message}"
            ),
            RunProblem::ProbeImageLacksArch { has, .. } if has.is_empty() => "the probe binary does not execute on this node (exec format error): the probe image has no variant for its architecture (--probe-image-arch)".to_string(),
            RunProblem::ProbeImageLacksArch { arch, has } => format!(
                "the probe image has no {arch} variant (it has {}): build one with scripts/image.sh",
                has.join(", ")
            ),
            RunProblem::NeverStarted { budget, waiting } => format!(
                "the probe pod had not started after {}s (--start-budget){}",
                budget.as_secs(),
                waiting
                    .as_deref()
                    .map(|w| format!("; last waiting on: {w}"))
                    .unwrap_or_default()
            ),
            RunProblem::ProbeOverran { deadline } => format!(
                "the probe ran past its own deadline of {}s (--probe-deadline)",
                deadline.as_secs()
            ),
            RunProblem::NoTimeLeft { left, needs } => format!(
                "not started: {}s of the run's --deadline were left and a probe needs {}s (--probe-deadline); raise --deadline or --parallel",
                left.as_secs(),
                needs.as_secs()
            ),
        }
    }
}

/// An API refusal of the create, read as an admission refusal when it is one; `None` for
/// anything else (RBAC, a missing namespace: pullpath's own errors).
pub fn admission_refusal(code: u16, message: &str) -> Option<Refusal> {
    const WEBHOOK: &str = "admission webhook \"";
    const POD_SECURITY: &str = "violates PodSecurity \"";
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
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const BUDGETS: Budgets = Budgets {
        start: Duration::from_secs(120),
        probe: Duration::from_secs(120),
    };

    fn origin(same: bool) -> ProbeOrigin {
        ProbeOrigin {
            same_registry: same,
            registry: "mirror.example".into(),
        }
    }

    fn pod(status: Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "pullpath-fleet-x-0", "namespace": "pullpath"},
            "spec": {"containers": [{"name": "probe", "image": "mirror.example/tools/pullpath:1"}]},
            "status": status,
        }))
        .expect("pod")
    }

    fn waiting(reason: &str, message: &str) -> Pod {
        pod(
            json!({"phase": "Pending", "containerStatuses": [{"name": "probe", "image": "mirror.example/tools/pullpath:1",
            "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason, "message": message}}}]}),
        )
    }

    fn event(reason: &str, message: &str) -> Event {
        serde_json::from_value(json!({
            "metadata": {"name": "e", "namespace": "pullpath"},
            "involvedObject": {"kind": "Pod", "name": "pullpath-fleet-x-0", "namespace": "pullpath"},
            "reason": reason, "message": message, "type": "Warning", "count": 1,
        }))
        .expect("event")
    }

    fn at(since_create: u64) -> Clocks {
        Clocks {
            since_create: Duration::from_secs(since_create),
            since_running: None,
        }
    }

    fn problem_of(r: Reading) -> RunProblem {
        match r {
            Reading::Answer(answer) => match *answer {
                Answer::Problem(p) => p,
                other => panic!("not a problem: {other:?}"),
            },
            other => panic!("not a problem: {other:?}"),
        }
    }

    #[test]
    fn a_failed_mount_event_is_named_at_once() {
        let pending = pod(json!({"phase": "Pending"}));
        let message = "MountVolume.SetUp failed for volume \"node-containerd\" : hostPath /etc/containerd doesn't exist";
        let p = problem_of(read(
            &pending,
            &[
                event("Scheduled", "assigned"),
                event("FailedMount", message),
            ],
            at(1),
            BUDGETS,
            &origin(true),
        ));
        assert_eq!(
            p,
            RunProblem::MountFailed {
                message: message.into()
            }
        );
        assert_eq!(p.kind(), "mount-failed");
        assert!(p.describe().contains("/etc/containerd"));
        // Without the event, it is only waited on, until the start budget.
        assert!(matches!(
            read(&pending, &[], at(1), BUDGETS, &origin(true)),
            Reading::Wait
        ));
        assert!(matches!(
            problem_of(read(&pending, &[], at(121), BUDGETS, &origin(true))),
            RunProblem::NeverStarted { .. }
        ));
    }

    #[test]
    fn a_sandbox_the_runtime_cannot_create_is_named_at_once() {
        let message = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image \"r.example/pause:3.10\": failed to pull image \"r.example/pause:3.10\": i/o timeout";
        let p = problem_of(read(
            &waiting("ContainerCreating", ""),
            &[event("FailedCreatePodSandBox", message)],
            at(1),
            BUDGETS,
            &origin(true),
        ));
        assert_eq!(p.kind(), "sandbox-not-created");
        assert!(
            p.describe().contains("r.example/pause:3.10"),
            "{}",
            p.describe()
        );
    }

    #[test]
    fn the_kubelets_admission_refusals_and_the_deadline() {
        let rejected = pod(json!({"phase": "Failed", "reason": "OutOfcpu",
            "message": "Pod was rejected: Node didn't have enough resource: cpu, requested: 50, used: 3980, capacity: 4000"}));
        let p = problem_of(read(&rejected, &[], at(1), BUDGETS, &origin(true)));
        assert!(matches!(&p, RunProblem::NotAdmitted { reason, message }
            if reason == "OutOfcpu" && message.contains("enough resource: cpu")));
        let affinity = pod(
            json!({"phase": "Failed", "reason": "NodeAffinity", "message": "Pod was rejected: Predicate NodeAffinity failed"}),
        );
        assert_eq!(
            problem_of(read(&affinity, &[], at(1), BUDGETS, &origin(true))).kind(),
            "not-admitted"
        );
        let deadline = pod(
            json!({"phase": "Failed", "reason": "DeadlineExceeded", "message": "Pod was active on the node longer than the specified deadline"}),
        );
        assert_eq!(
            problem_of(read(&deadline, &[], at(200), BUDGETS, &origin(true))).kind(),
            "probe-deadline"
        );
        // A probe that ran and failed is read from its log.
        let ended = pod(
            json!({"phase": "Failed", "containerStatuses": [{"name": "probe", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 12, "reason": "Error"}}}]}),
        );
        assert!(matches!(
            read(&ended, &[], at(5), BUDGETS, &origin(true)),
            Reading::ReadLog
        ));
    }

    #[test]
    fn waiting_reasons_that_never_resolve_are_problems() {
        let never = waiting(
            "ErrImageNeverPull",
            "Container image \"mirror.example/tools/pullpath:1\" is not present with pull policy of Never",
        );
        assert_eq!(
            problem_of(read(&never, &[], at(1), BUDGETS, &origin(true))).kind(),
            "probe-image-never-pulled"
        );
        let config = waiting(
            "CreateContainerConfigError",
            "container has runAsNonRoot and image will run as root",
        );
        assert!(matches!(
            problem_of(read(&config, &[], at(1), BUDGETS, &origin(true))),
            RunProblem::ContainerNotCreated { reason, .. } if reason == "CreateContainerConfigError"
        ));
    }

    #[test]
    fn the_probe_images_pull_is_a_finding_only_from_the_images_own_registry() {
        let message = "failed to pull and unpack image \"mirror.example/tools/pullpath:1\": failed to resolve reference \"mirror.example/tools/pullpath:1\": failed to do request: Head \"https://mirror.example/v2/tools/pullpath/manifests/1\": dial tcp 10.0.0.5:443: i/o timeout";
        let stuck = waiting("ErrImagePull", message);
        assert!(matches!(
            read(&stuck, &[], at(1), BUDGETS, &origin(true)),
            Reading::Answer(a) if matches!(*a, Answer::ProbeImagePull { .. })
        ));
        let p = problem_of(read(&stuck, &[], at(1), BUDGETS, &origin(false)));
        assert!(
            matches!(&p, RunProblem::ProbeImageUnpulled { registry, .. } if registry == "mirror.example")
        );
        assert!(p.describe().contains("another registry than the image's"));
    }

    #[test]
    fn a_probe_running_past_its_deadline_ends_its_wait() {
        let running = pod(json!({"phase": "Running"}));
        let clocks = |running: u64| Clocks {
            since_create: Duration::from_secs(running + 2),
            since_running: Some(Duration::from_secs(running)),
        };
        assert!(matches!(
            read(&running, &[], clocks(130), BUDGETS, &origin(true)),
            Reading::Wait
        ));
        assert_eq!(
            problem_of(read(&running, &[], clocks(136), BUDGETS, &origin(true))).kind(),
            "probe-deadline"
        );
    }

    #[test]
    fn admission_refusals_name_the_webhook_or_the_level() {
        let webhook = "pods \"pullpath-fleet-x-0\" is forbidden: admission webhook \"validation.gatekeeper.sh\" denied the request: [no-host-path] hostPath is not allowed";
        assert_eq!(
            admission_refusal(403, webhook),
            Some(Refusal::Webhook {
                name: "validation.gatekeeper.sh".into(),
                code: 403,
                message: webhook.into()
            })
        );
        let psa = "pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true), hostPath volumes (volumes \"node-hosts\", \"node-resolv-conf\")";
        assert!(matches!(admission_refusal(403, psa),
            Some(Refusal::PodSecurity { level, .. }) if level == "baseline:latest"));
        let rbac = "pods is forbidden: User \"u\" cannot create resource \"pods\" in API group \"\" in the namespace \"pullpath\"";
        assert_eq!(admission_refusal(403, rbac), None);
    }

    #[test]
    fn a_wave_starts_only_with_time_for_a_probe() {
        let needs = Duration::from_secs(120);
        assert!(time_for_a_probe(Duration::from_secs(121), needs).is_ok());
        let late = time_for_a_probe(Duration::from_secs(30), needs).expect_err("late");
        assert!(
            late.describe()
                .contains("30s of the run's --deadline were left")
        );
        assert!(exec_format_error("exec /usr/local/bin/pullpath: exec format error").is_some());
        assert!(exec_format_error("{\"schema\": \"pullpath.report/v1\"}").is_none());
    }
}
