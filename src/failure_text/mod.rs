//! Failure text → a diagnosis: `input` finds the messages, `chain` parses each into the
//! runtime's error chain, `classify` names hop and layer, and [`explain`] combines the messages
//! of one pod into one verdict (the earliest real cause wins over later back-off lines).

pub mod chain;
pub mod classify;
pub mod input;

pub use classify::{Ambiguity, Credential, Diagnosis};
pub use input::{Message, Subject};

use crate::vocab::Layer;

/// Everything the text said, and which message decides.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// Each message with the diagnosis of its deciding attempt.
    pub messages: Vec<(Message, Diagnosis)>,
    /// Index into `messages` of the one that decides the verdict.
    pub primary: Option<usize>,
    /// Messages the input held beyond those listed (`input::listing`; a failing pod's events
    /// alike those listed, `input::distinct`): none decides.
    pub unlisted: u64,
}

impl Explanation {
    pub fn verdict(&self) -> Option<&Diagnosis> {
        self.primary.map(|i| &self.messages[i].1)
    }
}

/// Explain pasted failure text.
pub fn explain(input: &str) -> Explanation {
    explain_messages(input::messages(input), 0)
}

/// The messages of one subject → one verdict; `unlisted` more the input held, none deciding
/// (`input::listing`).
pub fn explain_messages(messages: Vec<Message>, unlisted: u64) -> Explanation {
    let messages: Vec<(Message, Diagnosis)> = messages
        .into_iter()
        .map(|m| {
            let diagnosis = diagnose_message(&m.text);
            (m, diagnosis)
        })
        .collect();
    // The earliest message with a real cause; failing that, the earliest causal one (an
    // `other` such as a 5xx); failing that, the first message at all.
    let primary = messages
        .iter()
        .position(|(_, d)| decides(d))
        .or_else(|| messages.iter().position(|(_, d)| d.causal))
        .or(if messages.is_empty() { None } else { Some(0) });
    Explanation {
        messages,
        primary,
        unlisted,
    }
}

/// Whether a message with this diagnosis decides the verdict over the ones after it: it has a
/// real cause (not `other`). The earliest such message is the verdict's.
pub fn decides(d: &Diagnosis) -> bool {
    d.causal && d.layer != Layer::Other
}

/// One message may hold several attempts; the first with a real cause decides (a blob
/// failure followed by a retry's 401 is a blob failure).
pub fn diagnose_message(text: &str) -> Diagnosis {
    let runtime = classify::runtime(text);
    let attempts: Vec<Diagnosis> = chain::parse(text)
        .iter()
        .map(|chain| classify::classify(chain, runtime))
        .collect();
    let pick = attempts
        .iter()
        .position(|d| d.causal && d.layer != Layer::Other)
        .unwrap_or(0);
    attempts
        .into_iter()
        .nth(pick)
        .expect("chain::parse yields at least one attempt")
}

/// The explanation of one (pod, image): what [`explain_each`] returns per subject.
#[derive(Debug, Clone)]
pub struct Explained {
    /// The pod and image, with container, node and waiting reason as the messages said them.
    pub subject: Subject,
    pub explanation: Explanation,
}

/// Whether the messages are about pods (then each pod and image gets its own verdict); plain
/// failure text is not, and keeps its single verdict.
pub fn names_pods(messages: &[Message]) -> bool {
    messages.iter().any(|m| m.subject.pod.is_some())
}

/// Whether [`explain_each`] finds a failing subject: a message about a pod with a waiting
/// reason or in a failure's words (without one, the input gets one verdict as plain text does).
pub fn any_failing(messages: &[Message]) -> bool {
    messages.iter().any(|m| {
        m.subject.pod.is_some()
            && (m.subject.waiting_reason.is_some() || input::is_failure_line(&m.text))
    })
}

/// One verdict per (pod, image), each ranked exactly as [`explain`] ranks one pod's messages.
/// Messages that name the pod but not the image (`Error: ErrImagePull`) join the pod's image
/// when it has one; subjects with no failure at all (a healthy pod's `Started`) are left out.
pub fn explain_each(messages: Vec<Message>) -> Vec<Explained> {
    explain_each_counted(messages, &[])
}

/// [`explain_each`], with per message the events alike it stands for and does not list
/// (`input::Input::not_listed`; missing: none): each finding counts its own as unlisted.
pub fn explain_each_counted(messages: Vec<Message>, not_listed: &[u64]) -> Vec<Explained> {
    use std::collections::HashMap;
    type PodKey = (Option<String>, Option<String>);
    type Key = (Option<String>, Option<String>, Option<String>);
    let pod_key = |s: &Subject| (s.namespace.clone(), s.pod.clone());
    // The images each pod's messages name.
    let mut images: HashMap<PodKey, Vec<String>> = HashMap::new();
    for m in &messages {
        if let Some(image) = &m.subject.image {
            let list = images.entry(pod_key(&m.subject)).or_default();
            if !list.contains(image) {
                list.push(image.clone());
            }
        }
    }
    // Groups in order of first appearance, found by key: a huge outage has a subject per pod.
    let mut at: HashMap<Key, usize> = HashMap::new();
    let mut groups: Vec<(Subject, Vec<Message>, u64)> = Vec::new();
    for (i, m) in messages.into_iter().enumerate() {
        if m.subject.pod.is_none() {
            continue;
        }
        let image = m
            .subject
            .image
            .clone()
            .or_else(|| match images.get(&pod_key(&m.subject)) {
                Some(list) if list.len() == 1 => Some(list[0].clone()),
                _ => None,
            });
        let key = (
            m.subject.namespace.clone(),
            m.subject.pod.clone(),
            image.clone(),
        );
        let alike = not_listed.get(i).copied().unwrap_or(0);
        match at.get(&key) {
            Some(&g) => {
                let group = &mut groups[g];
                merge(&mut group.0, &m.subject);
                group.1.push(m);
                group.2 += alike;
            }
            None => {
                let mut subject = m.subject.clone();
                subject.image = image;
                at.insert(key, groups.len());
                groups.push((subject, vec![m], alike));
            }
        }
    }
    groups
        .into_iter()
        .filter(|(subject, messages, _)| {
            subject.waiting_reason.is_some()
                || messages.iter().any(|m| input::is_failure_line(&m.text))
        })
        .map(|(subject, messages, unlisted)| Explained {
            subject,
            explanation: explain_messages(messages, unlisted),
        })
        .collect()
}

/// Fill what `into` does not know yet from `from`.
fn merge(into: &mut Subject, from: &Subject) {
    let fill = |a: &mut Option<String>, b: &Option<String>| {
        if a.is_none() {
            a.clone_from(b);
        }
    };
    fill(&mut into.node, &from.node);
    fill(&mut into.container, &from.container);
    fill(&mut into.waiting_reason, &from.waiting_reason);
    if into.container_kind.is_none() {
        into.container_kind = from.container_kind;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(pod: &str, image: Option<&str>, text: &str) -> Message {
        Message {
            text: text.into(),
            origin: format!("{pod}: {text}"),
            subject: Subject {
                namespace: Some("shop".into()),
                pod: Some(pod.into()),
                image: image.map(str::to_string),
                ..Subject::default()
            },
            seen: None,
        }
    }

    #[test]
    fn each_pod_and_image_is_explained_on_its_own() {
        let explained = explain_each(vec![
            message(
                "a",
                Some("r/a:1"),
                r#"Failed to pull image "r/a:1": rpc error: code = NotFound desc = r/a:1: not found"#,
            ),
            message("a", None, "Error: ErrImagePull"),
            message("b", Some("r/b:1"), r#"Back-off pulling image "r/b:1""#),
            message("c", Some("r/c:1"), r#"Started container c"#),
        ]);
        let found: Vec<(Option<&str>, Option<&str>, usize)> = explained
            .iter()
            .map(|e| {
                (
                    e.subject.pod.as_deref(),
                    e.subject.image.as_deref(),
                    e.explanation.messages.len(),
                )
            })
            .collect();
        // `Error: ErrImagePull` joins pod a's only image; pod c never failed.
        assert_eq!(
            found,
            vec![(Some("a"), Some("r/a:1"), 2), (Some("b"), Some("r/b:1"), 1)]
        );
        assert_eq!(
            explained[0].explanation.verdict().map(|d| d.layer),
            Some(Layer::NotFound)
        );
    }

    #[test]
    fn plain_text_names_no_pod() {
        assert!(!names_pods(&input::messages(
            r#"Back-off pulling image "r/a:1""#
        )));
    }
}
