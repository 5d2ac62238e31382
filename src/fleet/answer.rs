//! What one node answered: the probe's JSON report read back from the pod's log (only the
//! fields fleet uses, tolerant of additions: docs/report-schema.md), or, when the probe pod
//! could not even start because its own image would not pull, that pull failure explained
//! like any other (it is evidence about the node's pull path). Pure functions.

use serde::Deserialize;

use super::ending::Ending;
use crate::advice::advise;
use crate::failure_text;
use crate::pod;
use crate::report::{self, ExplainReport};
use crate::verdict::{Failure, Fault, Seen, Undecided, Verdict};
use crate::vocab::{Hop, Layer};

/// The probe report's schema this reader understands.
const PROBE_SCHEMA: &str = "pullpath.report/v1";

/// The verdict fields of the probe report (`verdict` in docs/report-schema.md).
#[derive(Debug, Clone, Deserialize)]
struct WireVerdict {
    passed: bool,
    #[serde(default)]
    decided: bool,
    layer: Option<String>,
    hop: Option<String>,
    host: Option<String>,
    cause: Option<String>,
    mechanism: Option<String>,
}

/// The runtime's own pull (`runtime_pull`, with `--runtime-pull`).
#[derive(Debug, Clone, Deserialize)]
struct WireRuntimePull {
    outcome: String,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    agrees: Option<bool>,
    #[serde(default)]
    cleanup: Option<String>,
}

/// The TLS evidence of one host the probe checked (`hosts[].tls`).
#[derive(Debug, Clone, Deserialize)]
struct WireHost {
    host: String,
    port: u16,
    #[serde(default)]
    tls: Option<WireTls>,
}

#[derive(Debug, Clone, Deserialize)]
struct WireTls {
    ok: bool,
    /// The handshake's problem as a stable kind (`unknown-authority` …), never its words.
    #[serde(default)]
    problem_kind: Option<String>,
    #[serde(default)]
    chain: Vec<WireCert>,
}

#[derive(Debug, Clone, Deserialize)]
struct WireCert {
    issuer: String,
}

#[derive(Debug, Clone, Deserialize)]
struct WireReport {
    schema: String,
    #[serde(default)]
    command: String,
    verdict: WireVerdict,
    #[serde(default)]
    hand_fixes: Vec<String>,
    #[serde(default)]
    view: Option<String>,
    #[serde(default)]
    elapsed_ms: Option<u64>,
    #[serde(default)]
    runtime_pull: Option<WireRuntimePull>,
    #[serde(default)]
    hosts: Vec<WireHost>,
}

/// How one node's handshake with a host went, and the CA its chain ends at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustSeen {
    /// `host:port`.
    pub host: String,
    /// The issuer of the last certificate the server presented: the CA the node must trust.
    pub issuer: String,
    pub verified: bool,
    /// The node did not trust that CA (`certificate signed by unknown authority`).
    pub unknown_authority: bool,
}

/// The node's runtime's own answer, asked beside the probe (`--runtime-pull`); the fleet
/// report's `runtime_pull` of the node's row.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RuntimeAnswer {
    /// `pulled`, `failed` or `unasked`.
    pub outcome: String,
    /// The runtime's error, or why it could not be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Whether it matches the probe's verdict (absent when it was not asked); false: the
    /// runtime and the probe disagree, and the runtime is right.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
    /// `nothing`, `removed` (the node did not hold the image: removed again) or `kept`: how
    /// the node's image store was left.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<String>,
}

/// The probe's report on one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeAnswer {
    pub verdict: Verdict,
    /// What works now but not on a replaced node (an /etc/hosts entry for a registry host).
    pub hand_fixes: Vec<String>,
    /// `pod` when the probe saw a pod's resolver, not the node's.
    pub view: Option<String>,
    pub elapsed_ms: Option<u64>,
    pub runtime: Option<RuntimeAnswer>,
    /// Every handshake the probe made.
    pub trust: Vec<TrustSeen>,
}

/// What a probe pod yielded.
#[derive(Debug, Clone)]
pub enum Answer {
    Probe(Box<ProbeAnswer>),
    /// The probe pod's own image did not pull (`ErrImagePull`, `ImagePullBackOff`, …).
    ProbeImagePull {
        reason: String,
        message: String,
        explained: Box<ExplainReport>,
    },
    /// No report: the pod failed otherwise, its log held none, or the deadline came first.
    Missing {
        why: Missing,
    },
    /// The run could not ask this node (its pod refused, unmountable, never started, …): a
    /// problem of the run, named with its evidence, not a verdict on the pool.
    Problem(super::run_problem::RunProblem),
    /// The API refused the probe pod for pullpath's own reasons (RBAC, a missing namespace).
    NotCreated {
        code: Option<u16>,
        why: CreateRefused,
    },
}

pub fn layer_named(name: &str) -> Option<Layer> {
    Layer::ALL.iter().copied().find(|l| l.as_str() == name)
}

/// Why a probe pod's log gave no probe report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UnreadableReport {
    /// No line starts a JSON object; the log's last line, shortened (`empty` when none).
    NoReport { last_line: String },
    /// A JSON object that is not a readable report (serde's words).
    Malformed { error: String },
    /// Another pullpath document (`schema`, `command`): another version's probe image.
    OtherSchema { schema: String, command: String },
    /// A layer name this version does not know.
    UnknownLayer { name: String },
    /// A failure that names no layer: not a report this version wrote.
    FailedWithoutLayer,
}

impl std::fmt::Display for UnreadableReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UnreadableReport::NoReport { last_line } => {
                write!(f, "the pod's log holds no JSON report ({last_line})")
            }
            UnreadableReport::Malformed { error } => {
                write!(f, "the pod's log holds no readable probe report: {error}")
            }
            UnreadableReport::OtherSchema { schema, command } => write!(
                f,
                "the pod's log holds a {schema} {command} report, not a {PROBE_SCHEMA} probe report (is --probe-image another version?)"
            ),
            UnreadableReport::UnknownLayer { name } => write!(
                f,
                "the probe report names layer {name:?}, which this version does not know"
            ),
            UnreadableReport::FailedWithoutLayer => {
                f.write_str("the probe report failed without naming a layer")
            }
        }
    }
}

/// The API's refusal of a probe pod's create: the pod, and the API's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRefused {
    pub pod: String,
    pub error: String,
}

impl std::fmt::Display for CreateRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot create probe pod {}: {}", self.pod, self.error)
    }
}

/// Why a node has no answer, with its evidence; `Display` words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The run ended before this node answered; the last list of the run's pods, when it
    /// failed (a lister that kept failing is why nobody heard back).
    Unanswered {
        ending: Ending,
        last_list_error: Option<String>,
    },
    /// The run's lister stopped while this node waited.
    StoppedListing,
    /// The probe pod is gone from the run's lists before it finished; the lists' own failure
    /// when they failed instead.
    Gone {
        pod: String,
        list_error: Option<String>,
    },
    /// The probe pod's log could not be read: the API's words.
    LogUnread { pod: String, error: String },
    /// The log holds no probe report; how the probe container ended, when the pod says.
    NoReport {
        why: UnreadableReport,
        ended: Option<Ended>,
    },
}

/// How a probe container (or its pod) ended, as the pod's status says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The container's exit code and reason (`137`, `OOMKilled`).
    Exited { code: i32, reason: Option<String> },
    /// No container state, but the pod's own reason.
    Pod { reason: String },
}

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Missing::Unanswered {
                ending,
                last_list_error,
            } => {
                f.write_str(match ending {
                    Ending::Finished => "the probe task ended without an answer",
                    Ending::Deadline => {
                        "the run's deadline (--deadline) came before this node answered"
                    }
                    Ending::Interrupted => "the run was interrupted before this node answered",
                })?;
                match last_list_error {
                    Some(error) => write!(f, "; the last list of the run's pods failed: {error}"),
                    None => Ok(()),
                }
            }
            Missing::StoppedListing => f.write_str("the run stopped listing its probe pods"),
            Missing::Gone {
                list_error: Some(error),
                ..
            } => f.write_str(error),
            Missing::Gone {
                pod,
                list_error: None,
            } => write!(
                f,
                "probe pod {pod} disappeared before it finished (deleted by someone else, or evicted)"
            ),
            Missing::LogUnread { pod, error } => {
                write!(f, "cannot read the log of probe pod {pod}: {error}")
            }
            Missing::NoReport { why, ended } => {
                write!(f, "{why}")?;
                match ended {
                    Some(Ended::Exited { code, reason }) => {
                        write!(f, "; the probe exited {code}")?;
                        match reason {
                            Some(reason) => write!(f, " ({reason})"),
                            None => Ok(()),
                        }
                    }
                    Some(Ended::Pod { reason }) => write!(f, "; the pod ended: {reason}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// The probe's report in a pod log. The log may hold other lines (stderr joins stdout in a
/// pod's log): the report is the first JSON object starting a line.
pub fn from_log(log: &str) -> Result<ProbeAnswer, UnreadableReport> {
    let start = log
        .match_indices('{')
        .map(|(i, _)| i)
        .find(|&i| i == 0 || log.as_bytes()[i - 1] == b'\n')
        .ok_or_else(|| UnreadableReport::NoReport {
            last_line: tail(log),
        })?;
    let wire = serde_json::Deserializer::from_str(&log[start..])
        .into_iter::<WireReport>()
        .next()
        .ok_or_else(|| UnreadableReport::NoReport {
            last_line: tail(log),
        })?
        .map_err(|e| UnreadableReport::Malformed {
            error: e.to_string(),
        })?;
    if wire.schema != PROBE_SCHEMA || (!wire.command.is_empty() && wire.command != "probe") {
        return Err(UnreadableReport::OtherSchema {
            schema: wire.schema,
            command: wire.command,
        });
    }
    Ok(ProbeAnswer {
        verdict: verdict_of(wire.verdict)?,
        hand_fixes: wire.hand_fixes,
        view: wire.view,
        elapsed_ms: wire.elapsed_ms,
        runtime: wire.runtime_pull.map(|r| RuntimeAnswer {
            outcome: r.outcome,
            message: r.message,
            agrees: r.agrees,
            cleanup: r.cleanup,
        }),
        trust: wire
            .hosts
            .iter()
            .filter_map(|h| {
                let tls = h.tls.as_ref()?;
                Some(TrustSeen {
                    host: format!("{}:{}", h.host, h.port),
                    issuer: tls.chain.last()?.issuer.clone(),
                    verified: tls.ok,
                    unknown_authority: tls.problem_kind.as_deref() == Some("unknown-authority"),
                })
            })
            .collect(),
    })
}

/// The probe's verdict read back; the owner is the advice's, as the probe's own report derives
/// it. A failure that names no layer is not a report this version wrote.
fn verdict_of(wire: WireVerdict) -> Result<Verdict, UnreadableReport> {
    let layer = match wire.layer.as_deref() {
        Some(name) => Some(
            layer_named(name).ok_or_else(|| UnreadableReport::UnknownLayer {
                name: name.to_string(),
            })?,
        ),
        None => None,
    };
    if wire.passed {
        return Ok(Verdict::Passed);
    }
    let hop = wire.hop.as_deref().and_then(hop_named);
    let mechanism = wire.mechanism.as_deref().and_then(layer_named);
    let host = wire.host.as_deref().unwrap_or_default();
    let fault = layer.map(|layer| {
        let owner = advise(layer, mechanism, hop.unwrap_or(Hop::Unknown), host).owner;
        Fault::new(layer, mechanism, owner)
    });
    let seen = Seen {
        hop,
        host: wire.host,
        cause: wire.cause,
    };
    match (wire.decided, fault) {
        (true, Some(fault)) => Ok(Verdict::Failed(Failure { fault, seen })),
        (true, None) => Err(UnreadableReport::FailedWithoutLayer),
        (false, leaning) => Ok(Verdict::Undecided(Undecided {
            leaning,
            seen,
            candidates: Vec::new(),
            decides: None,
        })),
    }
}

fn hop_named(name: &str) -> Option<Hop> {
    [
        Hop::Registry,
        Hop::Auth,
        Hop::Blob,
        Hop::Proxy,
        Hop::Mirror,
        Hop::Unknown,
    ]
    .into_iter()
    .find(|h| h.as_str() == name)
}

/// The last line of a log, short, for an error that quotes it.
fn tail(log: &str) -> String {
    let last = log
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("");
    if last.is_empty() {
        return "empty".to_string();
    }
    let short: String = last.chars().take(200).collect();
    format!("last line: {short:?}")
}

/// Waiting reasons that mean the probe image itself is not pulling (`ErrImageNeverPull` is no
/// pull at all: `life` names it as a problem of the run).
const PULL_REASONS: [&str; 3] = ["ErrImagePull", "ImagePullBackOff", "InvalidImageName"];

/// The probe pod's own pull failure, explained; `None` while it is not stuck on its image. A
/// bare back-off (`Back-off pulling image "…"`, which older kubelets say without the cause) is
/// waited past: the kubelet's next try reports `ErrImagePull` with the runtime's message.
pub fn probe_image_pull(probe_pod: &k8s_openapi::api::core::v1::Pod) -> Option<Answer> {
    let wait = pod::image_waits(probe_pod)
        .into_iter()
        .find(|w| PULL_REASONS.contains(&w.reason.as_str()))?;
    let message = wait
        .message
        .clone()
        .unwrap_or_else(|| format!("{}: {}", wait.reason, wait.image));
    let explanation = failure_text::explain(&message);
    let explained = report::explain_report(&explanation)?;
    if wait.reason == "ImagePullBackOff" && explained.verdict.layer() == Some(Layer::Other) {
        return None;
    }
    Some(Answer::ProbeImagePull {
        reason: wait.reason,
        message,
        explained: Box::new(explained),
    })
}

#[cfg(test)]
mod tests;
