//! Exit statuses: the outcome in a number scripts can branch on (documented in the README).

use crate::verdict::Verdict;
use crate::vocab::Layer;

/// Nothing failed.
pub const PASSED: u8 = 0;
/// The evidence fits more than one layer.
pub const UNDECIDED: u8 = 3;
/// Bad command line or unreadable input.
pub const USAGE: u8 = 64;
/// pullpath itself failed.
pub const INTERNAL: u8 = 70;

/// The status for a layer: 10 + its place in the vocabulary.
pub fn for_layer(layer: Layer) -> u8 {
    let index = Layer::ALL
        .iter()
        .position(|l| *l == layer)
        .unwrap_or(Layer::ALL.len() - 1);
    10 + u8::try_from(index).unwrap_or(11)
}

/// The status of a verdict: passed, undecided, or its failing layer's.
pub fn for_verdict(verdict: &Verdict) -> u8 {
    match verdict {
        Verdict::Passed => PASSED,
        Verdict::Failed(failure) => for_layer(failure.fault.layer()),
        Verdict::Undecided(_) => UNDECIDED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Failure, Fault, Seen, Undecided};
    use crate::vocab::Owner;

    #[test]
    fn every_layer_has_its_own_status() {
        let codes: std::collections::BTreeSet<u8> =
            Layer::ALL.iter().map(|l| for_layer(*l)).collect();
        assert_eq!(codes.len(), Layer::ALL.len());
        assert_eq!(for_layer(Layer::Dns), 10);
        assert_eq!(for_layer(Layer::Other), 21);
    }

    #[test]
    fn each_verdict_has_its_status_and_an_undecided_leaning_is_not_a_failure() {
        let fault = Fault::new(Layer::Tls, None, Owner::RegistryPki);
        let failed = Verdict::Failed(Failure {
            fault,
            seen: Seen::default(),
        });
        let leaning = Verdict::Undecided(Undecided {
            leaning: Some(fault),
            seen: Seen::default(),
            candidates: Vec::new(),
            decides: None,
        });
        assert_eq!(for_verdict(&Verdict::Passed), PASSED);
        assert_eq!(for_verdict(&failed), 13);
        assert_eq!(for_verdict(&leaning), UNDECIDED);
    }
}
