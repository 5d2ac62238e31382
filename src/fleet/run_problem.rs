//! Why the run could not ask a node, as a value with its evidence: its pod refused at create
//! time, not admitted or unmountable, never started, overrunning the probe's deadline, no time
//! or no binary left to start it, no fresh node. A problem of the run, never a verdict on the
//! pool's pull; `life` reads each from the pod and its events, `describe` words it.

use std::time::Duration;

use super::undeliverable::{Undeliverable, WithFix};

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
    /// No registry (no `--probe-image`), and no image this node certainly holds to start from:
    /// its status lists no sandbox (pause) image, no container runs on it, and `--node-image`
    /// names none. `pods_unread`: the pod list was refused, so running images were not seen.
    NoNodeImage { pods_unread: Option<String> },
    /// `--fresh-node`: the autoscaler will not add a node for the probe pod
    /// (`NotTriggerScaleUp`, its reason: the pool at its maximum, no group that fits, quota).
    ScaleUpRefused { reason: String, message: String },
    /// `--fresh-node`: no node came within `--fresh-node-timeout`; the last scheduling word.
    NoFreshNode {
        waited: Duration,
        latest: Option<String>,
    },
    /// No registry, and no pullpath binary to deliver for the node's architecture.
    NoProbeBinary { arch: String, why: Undeliverable },
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
    /// A ValidatingAdmissionPolicy (deploy/admission-policy.yaml, or the cluster's own).
    Policy { name: String, message: String },
}

impl RunProblem {
    /// The wire name (docs/fleet.md, `problem.kind`).
    pub fn kind(&self) -> &'static str {
        match self {
            RunProblem::Refused(Refusal::Webhook { .. }) => "admission-webhook",
            RunProblem::Refused(Refusal::PodSecurity { .. }) => "pod-security",
            RunProblem::Refused(Refusal::Policy { .. }) => "admission-policy",
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
            RunProblem::NoNodeImage { .. } => "no-node-image",
            RunProblem::NoProbeBinary { .. } => "probe-binary",
            RunProblem::ScaleUpRefused { .. } => "scale-up-refused",
            RunProblem::NoFreshNode { .. } => "no-fresh-node",
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
            RunProblem::Refused(Refusal::Policy { name, message }) => format!(
                "the admission policy {name:?} refused the run's objects: {message}"
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
            RunProblem::NoNodeImage { pods_unread } => format!(
                "not started: no image this node certainly holds to start the probe from without a registry: its status lists no sandbox (pause) image (the kubelet lists at most 50 images, largest first) and {}; name one the node holds with --node-image, or pass --probe-image",
                match pods_unread {
                    None => "no container runs on it".to_string(),
                    Some(why) => format!("its running containers were not seen ({why})"),
                }
            ),
            RunProblem::NoProbeBinary { arch, why } => format!(
                "not started: no pullpath binary to deliver for {arch}: {}",
                WithFix { arch, problem: why }
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
            RunProblem::ScaleUpRefused { reason, message } => format!(
                "no fresh node: the autoscaler will not add one for the probe pod ({reason}): {message}"
            ),
            RunProblem::NoFreshNode { waited, latest } => format!(
                "no fresh node came within {}s (--fresh-node-timeout){}",
                waited.as_secs(),
                latest
                    .as_deref()
                    .map(|l| format!("; last: {l}"))
                    .unwrap_or_default()
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
