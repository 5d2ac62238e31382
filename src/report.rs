//! The report: what renderers print and `--output json` emits.
//!
//! Serialize-only types, documented in docs/report-schema.md and docs/report.schema.json.
//! Bump [`SCHEMA`] when a field changes meaning or disappears; adding fields is compatible.

use serde::Serialize;

use crate::advice::platform::{self, Concern, Names, Platform};
use crate::advice::{Advice, Observed, advise_observed};
use crate::failure_text::{Diagnosis, Explanation, Subject};
use crate::verdict::{Candidate, Failure, Fault, Seen, Undecided, Verdict};
use crate::vocab::{Hop, Layer, NodeCause, Owner, Runtime};

pub mod findings;
mod probe;
pub use probe::*;

/// Names the report format and its version.
pub const SCHEMA: &str = "pullpath.report/v1";

/// The verdict as the JSON report spells it (docs/report-schema.md, `verdict`): flags and
/// optional fields, for readers in any language. Built only from a [`Verdict`], whose states all
/// mean something; renaming a field of that type cannot change this format.
#[derive(Debug, Clone, Serialize)]
pub struct VerdictReport<'a> {
    /// True when no step failed.
    pub passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop: Option<Hop>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<&'a str>,
    /// The innermost cause observed, in the words it was observed in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<&'a str>,
    /// For layer `blob`: the mechanism on the blob hop (`dns`, `route`, `tls`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<Layer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// False when the evidence fits more than one layer; `candidates` then lists them.
    pub decided: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<CandidateReport<'a>>,
    /// What would decide between the candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decides: Option<&'a str>,
}

/// One layer the evidence may mean.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateReport<'a> {
    pub layer: Layer,
    pub why: &'a str,
}

impl<'a> From<&'a Verdict> for VerdictReport<'a> {
    fn from(verdict: &'a Verdict) -> VerdictReport<'a> {
        let fault = verdict.fault();
        let seen = verdict.seen();
        let (candidates, decides) = match verdict {
            Verdict::Undecided(u) => (u.candidates.as_slice(), u.decides.as_deref()),
            Verdict::Passed | Verdict::Failed(_) => (&[][..], None),
        };
        VerdictReport {
            passed: verdict.is_passed(),
            layer: fault.map(Fault::layer),
            hop: seen.and_then(|s| s.hop),
            host: seen.and_then(|s| s.host.as_deref()),
            cause: seen.and_then(|s| s.cause.as_deref()),
            mechanism: fault.and_then(Fault::mechanism),
            owner: fault.map(Fault::owner),
            decided: verdict.is_decided(),
            candidates: candidates
                .iter()
                .map(|c| CandidateReport {
                    layer: c.layer,
                    why: &c.why,
                })
                .collect(),
            decides,
        }
    }
}

/// Every report holds the [`Verdict`] its renderers match on, and writes it as a
/// [`VerdictReport`].
impl Serialize for Verdict {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        VerdictReport::from(self).serialize(serializer)
    }
}

/// `pullpath explain --output json`.
#[derive(Debug, Clone, Serialize)]
pub struct ExplainReport {
    pub schema: &'static str,
    pub command: &'static str,
    pub verdict: Verdict,
    pub runtime: Runtime,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The node's own failure, beside the verdict's layer (docs/report-schema.md: added in v1,
    /// additive): `pull-policy`, `disk`, `unpack`, `slow-transfer`, `pull-deadline`,
    /// `pull-qps`, `invalid-name`, `inspect`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_cause: Option<NodeCause>,
    pub where_to_look: Vec<String>,
    pub will_not_help: Vec<String>,
    pub next_checks: Vec<String>,
    /// Which message decided, and every message read.
    pub decided_by: Option<String>,
    /// What in that message decided the hop (`the request's /blobs/ path`).
    pub hop_by: &'static str,
    pub messages: Vec<MessageReport>,
    /// Messages of a long input left out of `messages` (none of them decides): a log or an
    /// event list lists its first MiB of messages.
    #[serde(skip_serializing_if = "is_zero")]
    pub messages_unlisted: u64,
    /// Set when the input does not look like an image pull failure at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One message of the input, as classified on its own.
#[derive(Debug, Clone, Serialize)]
pub struct MessageReport {
    pub origin: String,
    pub layer: Layer,
    pub hop: Hop,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub cause: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_cause: Option<NodeCause>,
}

/// Build the explain report from an explanation; `None` when the input held no message.
pub fn explain_report(explanation: &Explanation) -> Option<ExplainReport> {
    let (primary_message, d) = explanation.primary.map(|i| &explanation.messages[i])?;
    let host = d.host.clone().unwrap_or_default();
    let observed = Observed {
        public_behind_private_link: None,
        credential: d.credential.map(|c| c.evidence(&d.credential_host())),
        through_proxy: None,
        registry_as_repository: d
            .image
            .as_deref()
            .and_then(crate::image_ref::registry_read_as_repository)
            .map(str::to_string),
        node_cause: d.node_cause,
        refused_client: d.refused_client.clone(),
    };
    let advice: Advice = advise_observed(d.layer, d.mechanism, d.hop, &host, &observed);
    let looks_like_pull = d.about_a_pull;
    let fault = Fault::new(d.layer, d.mechanism, advice.owner);
    let seen = Seen {
        hop: Some(d.hop),
        host: d.host.clone(),
        cause: Some(d.cause.clone()),
    };
    // Text that names no pull step is not a decided failure of a pull, ambiguous or not.
    let verdict = match &d.ambiguity {
        None if looks_like_pull => Verdict::Failed(Failure { fault, seen }),
        ambiguity => Verdict::Undecided(Undecided {
            leaning: Some(fault),
            seen,
            candidates: ambiguity
                .iter()
                .flat_map(|a| a.candidates.iter())
                .map(|(layer, why)| Candidate {
                    layer: *layer,
                    why: (*why).to_string(),
                })
                .collect(),
            decides: ambiguity.as_ref().map(|a| a.decides.to_string()),
        }),
    };
    Some(ExplainReport {
        schema: SCHEMA,
        command: "explain",
        verdict,
        runtime: d.runtime,
        image: d.image.clone(),
        url: d.url.clone(),
        node_cause: d.node_cause,
        where_to_look: advice.where_to_look_words(),
        will_not_help: advice.will_not_help,
        next_checks: next_checks(d, subject_of(explanation)),
        decided_by: Some(primary_message.origin.clone()),
        hop_by: d.hop_by,
        messages: explanation
            .messages
            .iter()
            .map(|(m, d)| MessageReport {
                origin: m.origin.clone(),
                layer: d.layer,
                hop: d.hop,
                host: d.host.clone(),
                cause: d.cause.clone(),
                node_cause: d.node_cause,
            })
            .collect(),
        messages_unlisted: explanation.unlisted,
        note: (!looks_like_pull).then(|| {
            "this text names no image pull step; paste the pod's `Failed to pull image` event or the runtime's log".to_string()
        }),
    })
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The pod and namespace the messages name, the first message naming a pod deciding.
fn subject_of(explanation: &Explanation) -> Option<&Subject> {
    explanation
        .messages
        .iter()
        .map(|(m, _)| &m.subject)
        .find(|s| s.pod.is_some())
}

/// `kubectl` arguments naming the pod: `-n NAMESPACE NAME` as far as the input names them,
/// `POD` where it does not.
fn pod_arguments(subject: Option<&Subject>) -> String {
    let namespace = subject.and_then(|s| s.namespace.as_deref());
    match (subject.and_then(|s| s.pod.as_deref()), namespace) {
        (Some(pod), Some(namespace)) => format!("-n {namespace} {pod}"),
        (Some(pod), None) => pod.to_string(),
        (None, _) => "POD".to_string(),
    }
}

/// The next check as commands to run: the pod (named as the input names it), a probe from its
/// node, and the registry platform's own steps.
fn next_checks(d: &Diagnosis, subject: Option<&Subject>) -> Vec<String> {
    let pod = pod_arguments(subject);
    let mut checks = vec![format!(
        "kubectl get pod {pod} -o wide   # which node pulled"
    )];
    let image = d.image.as_deref().unwrap_or("IMAGE");
    if matches!(
        d.node_cause,
        None | Some(NodeCause::SlowTransfer | NodeCause::PullDeadline)
    ) {
        checks.push(match &d.image {
            Some(image) => format!(
                "pullpath probe {image}   # on that node (host network: a hostNetwork pod or the node's shell), not from a pod"
            ),
            None => "pullpath probe IMAGE   # on that node, not from a pod".into(),
        });
    }
    if d.ambiguity.is_some() && matches!(d.layer, Layer::NotFound | Layer::Forbidden | Layer::Auth)
    {
        checks.push(format!("pullpath probe {image} --docker-config SECRET.json   # with the node's pull secret: decides missing vs no rights"));
    }
    if let Some(credential) = d.credential {
        checks.push(credential.next_check(&d.credential_host(), &pod, image));
    }
    if d.node_cause.is_none() {
        checks.extend(platform_steps(d, subject));
    }
    checks
}

/// The registry platform's steps for the failing host (a data endpoint is its registry's), else
/// for the image's registry.
fn platform_steps(d: &Diagnosis, subject: Option<&Subject>) -> Vec<String> {
    let Some(concern) = Concern::of(d.layer, d.mechanism, d.refused_client.is_some()) else {
        return Vec::new();
    };
    let image = d
        .image
        .as_deref()
        .and_then(|i| crate::image_ref::ImageRef::parse(i).ok());
    let Some(found) = d
        .host
        .as_deref()
        .and_then(Platform::of)
        .or_else(|| image.as_ref().and_then(|i| Platform::of(&i.registry)))
    else {
        return Vec::new();
    };
    let names = Names {
        repository: image.map(|i| i.repository),
        namespace: subject.and_then(|s| s.namespace.clone()),
    };
    platform::next_steps(&found, concern, &names)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn wire(verdict: &Verdict) -> serde_json::Value {
        serde_json::to_value(VerdictReport::from(verdict)).expect("serializes")
    }

    fn seen(hop: Hop, host: &str, cause: &str) -> Seen {
        Seen {
            hop: Some(hop),
            host: Some(host.into()),
            cause: Some(cause.into()),
        }
    }

    #[test]
    fn a_pass_is_passed_and_decided_and_nothing_else() {
        assert_eq!(
            wire(&Verdict::Passed),
            json!({"passed": true, "decided": true})
        );
    }

    #[test]
    fn a_failure_names_its_layer_hop_host_cause_and_owner() {
        let failed = Verdict::Failed(Failure {
            fault: Fault::new(Layer::Dns, None, Owner::DnsTeam),
            seen: seen(Hop::Registry, "r.example", "no such host"),
        });
        assert_eq!(
            wire(&failed),
            json!({"passed": false, "layer": "dns", "hop": "registry", "host": "r.example",
                "cause": "no such host", "owner": "dns-team", "decided": true})
        );
    }

    #[test]
    fn the_explanation_says_what_decided_the_hop() {
        let text = "failed to copy: httpReadSeeker: failed open: failed to do request: Get \"https://r.example/v2/a/blobs/sha256:abc\": dial tcp 10.0.0.5:443: i/o timeout";
        let report = explain_report(&crate::failure_text::explain(text)).expect("a report");
        assert_eq!(report.verdict.seen().and_then(|s| s.hop), Some(Hop::Blob));
        assert!(report.hop_by.contains("/blobs/"), "{}", report.hop_by);
        let json = serde_json::to_value(&report).expect("JSON");
        assert_eq!(json["hop_by"], report.hop_by);
    }

    #[test]
    fn a_blob_failure_carries_its_mechanism() {
        let blob = Verdict::Failed(Failure {
            fault: Fault::new(Layer::Blob, Some(Layer::Route), Owner::NetworkTeam),
            seen: seen(Hop::Blob, "store.example", "i/o timeout"),
        });
        assert_eq!(
            wire(&blob),
            json!({"passed": false, "layer": "blob", "hop": "blob", "host": "store.example",
                "cause": "i/o timeout", "mechanism": "route", "owner": "network-team",
                "decided": true})
        );
    }

    #[test]
    fn an_undecided_verdict_lists_its_candidates_and_what_decides_in_the_old_order() {
        let undecided = Verdict::Undecided(Undecided {
            leaning: Some(Fault::new(Layer::NotFound, None, Owner::ApplicationTeam)),
            seen: seen(Hop::Registry, "r.example", "not found"),
            candidates: vec![
                Candidate {
                    layer: Layer::NotFound,
                    why: "the repository is missing".into(),
                },
                Candidate {
                    layer: Layer::Forbidden,
                    why: "the registry hides what it denies".into(),
                },
            ],
            decides: Some("a probe with the pull secret".into()),
        });
        let expected = json!({"passed": false, "layer": "notfound", "hop": "registry",
            "host": "r.example", "cause": "not found", "owner": "application-team",
            "decided": false,
            "candidates": [
                {"layer": "notfound", "why": "the repository is missing"},
                {"layer": "forbidden", "why": "the registry hides what it denies"}
            ],
            "decides": "a probe with the pull secret"});
        assert_eq!(wire(&undecided), expected);
        // The report writes the verdict itself through the wire type, fields in the order the
        // report always had.
        assert_eq!(
            serde_json::to_string(&undecided).expect("serializes"),
            r#"{"passed":false,"layer":"notfound","hop":"registry","host":"r.example","cause":"not found","owner":"application-team","decided":false,"candidates":[{"layer":"notfound","why":"the repository is missing"},{"layer":"forbidden","why":"the registry hides what it denies"}],"decides":"a probe with the pull secret"}"#
        );
    }

    #[test]
    fn an_undecided_verdict_without_a_leaning_says_only_what_was_seen() {
        let unanswered = Verdict::Undecided(Undecided {
            leaning: None,
            seen: Seen {
                cause: Some("not probed".into()),
                ..Seen::default()
            },
            candidates: Vec::new(),
            decides: Some("a probe report from this node".into()),
        });
        assert_eq!(
            wire(&unanswered),
            json!({"passed": false, "cause": "not probed", "decided": false,
                "decides": "a probe report from this node"})
        );
    }

    #[test]
    fn explain_decides_a_pull_failure_and_leaves_text_about_no_pull_undecided() {
        let explained = |text: &str| {
            explain_report(&crate::failure_text::explain(text))
                .expect("a report")
                .verdict
        };
        let dns = explained(
            r#"Failed to pull image "r.example/a:1": rpc error: code = Unknown desc = failed to pull and unpack image "r.example/a:1": failed to resolve reference "r.example/a:1": failed to do request: Head "https://r.example/v2/a/manifests/1": dial tcp: lookup r.example on 10.0.0.10:53: no such host"#,
        );
        assert!(matches!(&dns, Verdict::Failed(f) if f.fault.layer() == Layer::Dns));
        let Verdict::Undecided(no_pull) = explained("the coffee machine is out of beans") else {
            panic!("text about no pull is undecided");
        };
        assert!(no_pull.leaning.is_some() && no_pull.candidates.is_empty());
    }
}
