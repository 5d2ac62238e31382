//! Failure text → a diagnosis: `input` finds the messages, `chain` parses each into the
//! runtime's error chain, `classify` names hop and layer, and [`explain`] combines the messages
//! of one pod into one verdict (the earliest real cause wins over later back-off lines).

pub mod chain;
pub mod classify;
pub mod input;

pub use classify::{Ambiguity, Credential, Diagnosis};
pub use input::Message;

use crate::vocab::Layer;

/// Everything the text said, and which message decides.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// Each message with the diagnosis of its deciding attempt.
    pub messages: Vec<(Message, Diagnosis)>,
    /// Index into `messages` of the one that decides the verdict.
    pub primary: Option<usize>,
}

impl Explanation {
    pub fn verdict(&self) -> Option<&Diagnosis> {
        self.primary.map(|i| &self.messages[i].1)
    }
}

/// Explain pasted failure text.
pub fn explain(input: &str) -> Explanation {
    let messages: Vec<(Message, Diagnosis)> = input::messages(input)
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
        .position(|(_, d)| d.causal && d.layer != Layer::Other)
        .or_else(|| messages.iter().position(|(_, d)| d.causal))
        .or(if messages.is_empty() { None } else { Some(0) });
    Explanation { messages, primary }
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
