//! Exit statuses: the outcome in a number scripts can branch on (documented in the README).

use crate::report::Verdict;
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

pub fn for_verdict(verdict: &Verdict) -> u8 {
    match (verdict.passed, verdict.decided, verdict.layer) {
        (true, _, _) => PASSED,
        (false, false, _) => UNDECIDED,
        (false, true, Some(layer)) => for_layer(layer),
        (false, true, None) => INTERNAL,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_has_its_own_status() {
        let codes: std::collections::BTreeSet<u8> =
            Layer::ALL.iter().map(|l| for_layer(*l)).collect();
        assert_eq!(codes.len(), Layer::ALL.len());
        assert_eq!(for_layer(Layer::Dns), 10);
        assert_eq!(for_layer(Layer::Other), 21);
    }
}
