//! The probe report's credentials section: what the kubelet's sources gave, each try, and
//! which credential decided.

use serde::Serialize;

use crate::probe::kubelet_creds::{CredentialAttempt, CredentialPlan, SourceOutcome};
use crate::vocab::Layer;

/// The credentials section: what the kubelet's sources gave and what each try got. Usernames,
/// keys and provider names only: a password or token never enters this type.
#[derive(Debug, Clone, Serialize)]
pub struct CredentialsReport {
    /// What the kubelet looks up: the repository without tag or digest.
    pub image: String,
    /// Every source consulted, in the kubelet's order.
    pub sources: Vec<CredentialSourceReport>,
    /// Each walk of the pull loop, in order (one `anonymous` try when no source matched).
    pub attempts: Vec<CredentialAttemptReport>,
    /// The index in `attempts` the verdict comes from.
    pub used: usize,
    /// When the verdict is a refusal: what would decide it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub decides: Vec<String>,
    /// Where the kubelet's settings (root dir, provider config, bin dir) were taken from.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub origins: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CredentialSourceReport {
    /// `pull-secret`, `node-config`, `provider`.
    pub kind: &'static str,
    /// The file, or the provider's name.
    pub name: String,
    /// `matched`, `no-match`, `absent`, `failed`, `needs-pod`, `not-used`.
    pub outcome: &'static str,
    /// The keys that matched; on `no-match`, the keys (or matchImages) it has.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// Why it is absent or failed, or why its closest keys miss.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CredentialAttemptReport {
    /// `pull-secret`, `node-config`, `provider`, `flag`, or `anonymous`.
    pub source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    pub passed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// A source none of whose keys is even close to the image.
fn no_key_covers(image: &str, keys: &[String]) -> String {
    if keys.is_empty() {
        return format!("it holds no entry, so nothing covers {image}");
    }
    let shown: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
    format!(
        "its entries are for {}, none of which covers {image}",
        shown.join(", ")
    )
}

impl CredentialsReport {
    pub fn new(plan: &CredentialPlan, attempts: &[CredentialAttempt]) -> CredentialsReport {
        let sources = plan
            .sources
            .iter()
            .map(|e| {
                let (outcome, keys, detail) = match &e.outcome {
                    SourceOutcome::Matched(keys) => ("matched", keys.clone(), None),
                    SourceOutcome::NoMatch { keys, near } => {
                        let why = if near.is_empty() {
                            no_key_covers(&plan.image, keys)
                        } else {
                            near.join("; ")
                        };
                        ("no-match", keys.clone(), Some(why))
                    }
                    SourceOutcome::Absent(why) => ("absent", vec![], Some(why.clone())),
                    SourceOutcome::Failed(why) => ("failed", vec![], Some(why.to_string())),
                    SourceOutcome::NeedsPod(why) => ("needs-pod", vec![], Some(why.clone())),
                    SourceOutcome::NotUsed(why) => ("not-used", vec![], Some(why.clone())),
                };
                CredentialSourceReport {
                    kind: e.source.kind(),
                    name: e.source.name(),
                    outcome,
                    keys,
                    detail,
                }
            })
            .collect();
        let attempts_report: Vec<CredentialAttemptReport> = attempts
            .iter()
            .map(|a| CredentialAttemptReport {
                source: a
                    .candidate
                    .as_ref()
                    .map_or("anonymous", |c| c.source.kind()),
                name: a.candidate.as_ref().map(|c| c.source.name()),
                key: a
                    .candidate
                    .as_ref()
                    .map(|c| c.key.clone())
                    .filter(|k| !k.is_empty()),
                username: a.candidate.as_ref().map(|c| c.credentials.username.clone()),
                passed: a.stop.is_none(),
                layer: a.stop.as_ref().map(|s| s.mechanism_or_layer()),
                detail: a
                    .stop
                    .as_ref()
                    .map(|s| format!("{}: {}", s.step, s.evidence)),
            })
            .collect();
        let refused = attempts.last().is_some_and(CredentialAttempt::refused);
        CredentialsReport {
            image: plan.image.clone(),
            decides: if refused {
                credential_decides(plan, attempts)
            } else {
                vec![]
            },
            used: attempts_report.len().saturating_sub(1),
            attempts: attempts_report,
            sources,
            origins: plan.origins.clone(),
        }
    }
}

/// For a refused pull: why no source matched (the near misses), which sources failed, or that
/// every matching credential was refused.
fn credential_decides(plan: &CredentialPlan, attempts: &[CredentialAttempt]) -> Vec<String> {
    let mut decides = Vec::new();
    if plan.candidates.is_empty() {
        let near: Vec<String> = plan
            .sources
            .iter()
            .filter_map(|e| match &e.outcome {
                SourceOutcome::NoMatch { near, .. } if !near.is_empty() => Some(format!(
                    "{} {}: {}",
                    e.source.kind(),
                    e.source.name(),
                    near.join("; ")
                )),
                _ => None,
            })
            .collect();
        decides.push(format!(
            "no source matches `{}`, so the node pulls anonymously{}",
            plan.image,
            if near.is_empty() {
                String::new()
            } else {
                format!(" ({})", near.join("; "))
            }
        ));
    } else {
        decides.push(format!(
            "every credential matching `{}` was refused ({} tried): check the identity's rights on the repository",
            plan.image,
            attempts.len()
        ));
    }
    for e in &plan.sources {
        match &e.outcome {
            SourceOutcome::Failed(why) => decides.push(format!(
                "{} {} gave nothing: {why}",
                e.source.kind(),
                e.source.name()
            )),
            SourceOutcome::NeedsPod(why) => {
                decides.push(format!("{} {}: {why}", e.source.kind(), e.source.name()))
            }
            _ => {}
        }
    }
    decides
}
