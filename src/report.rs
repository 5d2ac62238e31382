//! The report: what renderers print and `--output json` emits.
//!
//! Serialize-only types, documented in docs/report-schema.md and docs/report.schema.json.
//! Bump [`SCHEMA`] when a field changes meaning or disappears; adding fields is compatible.

use serde::Serialize;

use crate::advice::{Advice, Observed, advise_observed};
use crate::failure_text::{Diagnosis, Explanation};
use crate::vocab::{Hop, Layer, Owner, Runtime};

mod probe;
pub use probe::*;

/// Names the report format and its version.
pub const SCHEMA: &str = "pullpath.report/v1";

/// The one-line answer, the same for probe and explain.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    /// True when no step failed.
    pub passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop: Option<Hop>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The innermost cause observed, in the words it was observed in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    /// For layer `blob`: the mechanism on the blob hop (`dns`, `route`, `tls`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<Layer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<Owner>,
    /// False when the evidence fits more than one layer; `candidates` then lists them.
    pub decided: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub candidates: Vec<Candidate>,
    /// What would decide between the candidates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decides: Option<String>,
}

/// One layer the evidence may mean.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub layer: Layer,
    pub why: String,
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
    pub where_to_look: Vec<String>,
    pub will_not_help: Vec<String>,
    pub next_checks: Vec<String>,
    /// Which message decided, and every message read.
    pub decided_by: Option<String>,
    pub messages: Vec<MessageReport>,
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
}

impl Verdict {
    pub fn passed() -> Verdict {
        Verdict {
            passed: true,
            layer: None,
            hop: None,
            host: None,
            cause: None,
            mechanism: None,
            owner: None,
            decided: true,
            candidates: Vec::new(),
            decides: None,
        }
    }
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
    };
    let advice: Advice = advise_observed(d.layer, d.mechanism, d.hop, &host, &observed);
    let looks_like_pull = d.about_a_pull;
    let verdict = Verdict {
        passed: false,
        layer: Some(d.layer),
        hop: Some(d.hop),
        host: d.host.clone(),
        cause: Some(d.cause.clone()),
        mechanism: d.mechanism,
        owner: Some(advice.owner),
        decided: d.ambiguity.is_none() && looks_like_pull,
        candidates: d
            .ambiguity
            .iter()
            .flat_map(|a| a.candidates.iter())
            .map(|(layer, why)| Candidate {
                layer: *layer,
                why: (*why).to_string(),
            })
            .collect(),
        decides: d.ambiguity.as_ref().map(|a| a.decides.to_string()),
    };
    Some(ExplainReport {
        schema: SCHEMA,
        command: "explain",
        verdict,
        runtime: d.runtime,
        image: d.image.clone(),
        url: d.url.clone(),
        where_to_look: advice.where_to_look,
        will_not_help: advice.will_not_help,
        next_checks: next_checks(d),
        decided_by: Some(primary_message.origin.clone()),
        messages: explanation
            .messages
            .iter()
            .map(|(m, d)| MessageReport {
                origin: m.origin.clone(),
                layer: d.layer,
                hop: d.hop,
                host: d.host.clone(),
                cause: d.cause.clone(),
            })
            .collect(),
        note: (!looks_like_pull).then(|| {
            "this text names no image pull step; paste the pod's `Failed to pull image` event or the runtime's log".to_string()
        }),
    })
}

/// The next check as commands to run.
fn next_checks(d: &Diagnosis) -> Vec<String> {
    let mut checks = vec!["kubectl get pod POD -o wide   # which node pulled".to_string()];
    match &d.image {
        Some(image) => checks.push(format!(
            "pullpath probe {image}   # on that node (host network: a hostNetwork pod or the node's shell), not from a pod"
        )),
        None => checks.push("pullpath probe IMAGE   # on that node, not from a pod".into()),
    }
    if d.ambiguity.is_some() && matches!(d.layer, Layer::NotFound | Layer::Forbidden | Layer::Auth)
    {
        checks.push("pullpath probe IMAGE --docker-config SECRET.json   # with the node's pull secret: decides missing vs no rights".into());
    }
    if let Some(credential) = d.credential {
        checks.push(credential.next_check(&d.credential_host()));
    }
    checks
}
