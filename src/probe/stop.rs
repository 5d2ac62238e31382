//! Where and why a pull stops: the error type of every step of the walk, and the evidence of
//! the verdict. [`Stop::new`] is the only way to make one, and it applies the vocabulary's
//! blob-hop rule (shared/DESIGN.md): anything failing on the blob hop is layer `blob`, with the
//! mechanism beside it.

use super::authority::Authority;
use super::evidence::Evidence;
use crate::vocab::{Hop, Layer};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop {
    pub hop: Hop,
    /// The host that failed.
    pub authority: Authority,
    pub layer: Layer,
    /// On the blob hop: how it failed (`dns`, `route`, `tls`, a status's layer, `other`).
    pub mechanism: Option<Layer>,
    /// The step that failed (`dns`, `tls`, `GET /v2/`, `manifest v1`, `layer sha256:…`).
    pub step: String,
    /// What was observed, as a value; its `Display` is the report's `cause`. Boxed: a stop is
    /// every step's error, and the evidence of a proxy or a certificate is large.
    pub evidence: Box<Evidence>,
}

impl Stop {
    pub fn new(
        hop: Hop,
        authority: &Authority,
        layer: Layer,
        step: impl Into<String>,
        evidence: impl Into<Evidence>,
    ) -> Stop {
        let (layer, mechanism) = hop.layer_of(layer);
        Stop {
            hop,
            authority: authority.clone(),
            layer,
            mechanism,
            step: step.into(),
            evidence: Box::new(evidence.into()),
        }
    }

    /// The failing mechanism: the layer itself off the blob hop.
    pub fn mechanism_or_layer(&self) -> Layer {
        self.mechanism.unwrap_or(self.layer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any evidence: the rule reads the hop and the step's layer only.
    fn no_route() -> Evidence {
        Evidence::NoRoute(Vec::new())
    }

    #[test]
    fn the_blob_hop_rule() {
        let host = Authority::parse("store.example", 443).expect("authority");
        let blob = Stop::new(Hop::Blob, &host, Layer::Route, "layer", no_route());
        assert_eq!(
            (blob.layer, blob.mechanism),
            (Layer::Blob, Some(Layer::Route))
        );
        let corrupt = Stop::new(Hop::Blob, &host, Layer::Blob, "layer", no_route());
        assert_eq!(corrupt.mechanism, Some(Layer::Other));
        let proxy = Stop::new(Hop::Proxy, &host, Layer::Route, "route", no_route());
        assert_eq!((proxy.layer, proxy.mechanism), (Layer::Proxy, None));
        let registry = Stop::new(Hop::Registry, &host, Layer::Tls, "tls", no_route());
        assert_eq!((registry.layer, registry.mechanism), (Layer::Tls, None));
        assert_eq!(registry.mechanism_or_layer(), Layer::Tls);
    }
}
