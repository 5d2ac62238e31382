//! The verdict every command reaches: passed, failed at one layer, or undecided.
//!
//! A closed set of states, so that no builder can say "failed" without a layer or give an owner
//! to nothing. It carries no serde shape of its own: the report's `Serialize` for it writes its
//! wire type, [`report::VerdictReport`](crate::report::VerdictReport) (docs/report-schema.md,
//! `verdict`), so the JSON keeps its fields whatever these types become.

use std::fmt;

use crate::vocab::{Hop, Layer, Owner};

/// The one-line answer, the same for probe, explain, scan, fleet and azure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// No step failed.
    Passed,
    /// The pull fails, and the evidence names the one layer it fails at.
    Failed(Failure),
    /// The pull does not pass, and the evidence names no single layer: it fits several, or too
    /// little was seen (a node that never answered).
    Undecided(Undecided),
}

/// A failure at one layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub fault: Fault,
    pub seen: Seen,
}

/// A verdict the evidence does not settle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecided {
    /// The layer the evidence points at first, when it points at one (explain's reading of the
    /// text, azure's open step); `None` when nothing was seen to point with.
    pub leaning: Option<Fault>,
    pub seen: Seen,
    /// What else the evidence may mean, in order; empty when nothing names an alternative.
    pub candidates: Vec<Candidate>,
    /// What would decide between the candidates, or fill in what was not seen.
    pub decides: Option<String>,
}

/// The layer a failure is named by, and who fixes it. The owner travels with the layer because
/// every builder derives it from the layer (through [`crate::advice`] or an Azure finding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    layer: Layer,
    mechanism: Option<Layer>,
    owner: Owner,
}

/// Where and how a failure was observed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub hop: Option<Hop>,
    /// `host[:port]`.
    pub host: Option<String>,
    /// The innermost cause observed, in the words it was observed in.
    pub cause: Option<String>,
}

/// One layer the evidence may mean, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub layer: Layer,
    pub why: String,
}

impl Fault {
    /// `mechanism` is kept only for layer `blob`: the vocabulary's blob-hop rule puts a blob
    /// download's mechanism (`dns`, `route`, `tls`, …) beside the layer; any other layer is its
    /// own mechanism.
    pub fn new(layer: Layer, mechanism: Option<Layer>, owner: Owner) -> Fault {
        Fault {
            layer,
            mechanism: mechanism.filter(|_| layer == Layer::Blob),
            owner,
        }
    }

    pub fn layer(&self) -> Layer {
        self.layer
    }

    /// For layer `blob`: how the blob hop failed.
    pub fn mechanism(&self) -> Option<Layer> {
        self.mechanism
    }

    pub fn owner(&self) -> Owner {
        self.owner
    }
}

/// `blob (route)`: the layer, and beside it the blob hop's mechanism.
impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.layer)?;
        match self.mechanism {
            Some(mechanism) => write!(f, " ({mechanism})"),
            None => Ok(()),
        }
    }
}

impl Verdict {
    pub fn is_passed(&self) -> bool {
        matches!(self, Verdict::Passed)
    }

    /// False only when undecided: a pass is as decided as a failure.
    pub fn is_decided(&self) -> bool {
        !matches!(self, Verdict::Undecided(_))
    }

    /// The layer the verdict names or leans to; `None` when it passed or leans nowhere.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            Verdict::Passed => None,
            Verdict::Failed(failure) => Some(&failure.fault),
            Verdict::Undecided(undecided) => undecided.leaning.as_ref(),
        }
    }

    pub fn layer(&self) -> Option<Layer> {
        self.fault().map(Fault::layer)
    }

    /// The innermost cause observed; `None` when it passed or nothing was observed.
    pub fn cause(&self) -> Option<&str> {
        self.seen().and_then(|s| s.cause.as_deref())
    }

    /// What was observed; `None` when it passed.
    pub fn seen(&self) -> Option<&Seen> {
        match self {
            Verdict::Passed => None,
            Verdict::Failed(failure) => Some(&failure.seen),
            Verdict::Undecided(undecided) => Some(&undecided.seen),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mechanism_stays_only_beside_layer_blob() {
        let blob = Fault::new(Layer::Blob, Some(Layer::Route), Owner::NetworkTeam);
        assert_eq!(
            (blob.layer(), blob.mechanism()),
            (Layer::Blob, Some(Layer::Route))
        );
        let tls = Fault::new(Layer::Tls, Some(Layer::Route), Owner::RegistryPki);
        assert_eq!((tls.layer(), tls.mechanism()), (Layer::Tls, None));
        assert_eq!(tls.owner(), Owner::RegistryPki);
        assert_eq!(
            (blob.to_string(), tls.to_string()),
            ("blob (route)".into(), "tls".into())
        );
    }

    #[test]
    fn the_layer_is_the_failure_s_or_the_undecided_leaning() {
        let dns = Fault::new(Layer::Dns, None, Owner::DnsTeam);
        let failed = Verdict::Failed(Failure {
            fault: dns,
            seen: Seen::default(),
        });
        let leaning = Verdict::Undecided(Undecided {
            leaning: Some(dns),
            seen: Seen::default(),
            candidates: Vec::new(),
            decides: None,
        });
        let unseen = Verdict::Undecided(Undecided {
            leaning: None,
            seen: Seen::default(),
            candidates: Vec::new(),
            decides: None,
        });
        assert_eq!(failed.layer(), Some(Layer::Dns));
        assert_eq!(leaning.layer(), Some(Layer::Dns));
        assert_eq!(unseen.layer(), None);
        assert_eq!(Verdict::Passed.layer(), None);
        assert!(Verdict::Passed.is_passed() && !failed.is_passed());
        assert!(Verdict::Passed.seen().is_none() && unseen.seen().is_some());
    }
}
