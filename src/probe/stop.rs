//! Where and why a pull stops: the error type of every step of the walk, and the evidence of
//! the verdict. [`Stop::new`] makes one from the hop, the host, the step and what was observed;
//! its layer is never chosen by the caller: it is the evidence's ([`Evidence::layer`]) under the
//! vocabulary's hop rule (shared/DESIGN.md): anything failing on the blob hop is layer `blob`,
//! with the mechanism beside it; anything on the proxy hop is layer `proxy`.

use super::authority::Authority;
use super::evidence::Evidence;
use super::step::Step;
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
    pub step: Step,
    /// What was observed, as a value; its `Display` is the report's `cause`. Boxed: a stop is
    /// every step's error, and the evidence of a proxy or a certificate is large.
    pub evidence: Box<Evidence>,
}

impl Stop {
    pub fn new(hop: Hop, authority: &Authority, step: Step, evidence: impl Into<Evidence>) -> Stop {
        let evidence = evidence.into();
        Stop::named(hop, authority, evidence.layer(), step, evidence)
    }

    /// The same failure met again from `hop` at `authority` (a host whose check failed before):
    /// it keeps what the first stop concluded, so a failure the proxy's hop named `proxy` stays
    /// the proxy's.
    pub fn again(&self, hop: Hop, authority: &Authority) -> Stop {
        let evidence = (*self.evidence).clone();
        Stop::named(
            hop,
            authority,
            self.mechanism_or_layer(),
            self.step.clone(),
            evidence,
        )
    }

    /// The hop rule, applied to how the step failed.
    fn named(hop: Hop, authority: &Authority, how: Layer, step: Step, evidence: Evidence) -> Stop {
        let (layer, mechanism) = hop.layer_of(how);
        Stop {
            hop,
            authority: authority.clone(),
            layer,
            mechanism,
            step,
            evidence: Box::new(evidence),
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
    use crate::probe::observed::body::BodyProblem;
    use crate::probe::observed::tls::TlsProblem;

    /// Evidence of a route failure.
    fn no_route() -> Evidence {
        Evidence::NoRoute(Vec::new())
    }

    #[test]
    fn the_blob_hop_rule() {
        let host = Authority::parse("store.example", 443).expect("authority");
        let blob = Stop::new(Hop::Blob, &host, Step::Route, no_route());
        assert_eq!(
            (blob.layer, blob.mechanism),
            (Layer::Blob, Some(Layer::Route))
        );
        let corrupt = Stop::new(
            Hop::Blob,
            &host,
            Step::Route,
            BodyProblem::TooLarge { limit: 1 },
        );
        assert_eq!(corrupt.mechanism, Some(Layer::Other));
        let proxy = Stop::new(Hop::Proxy, &host, Step::Route, no_route());
        assert_eq!((proxy.layer, proxy.mechanism), (Layer::Proxy, None));
        let registry = Stop::new(Hop::Registry, &host, Step::Tls, TlsProblem::NotTls);
        assert_eq!((registry.layer, registry.mechanism), (Layer::Tls, None));
        assert_eq!(registry.mechanism_or_layer(), Layer::Tls);
        // Met again from another hop, the proxy's failure stays the proxy's.
        let again = proxy.again(Hop::Registry, &host);
        assert_eq!((again.layer, again.mechanism), (Layer::Proxy, None));
        let again = proxy.again(Hop::Blob, &host);
        assert_eq!(
            (again.layer, again.mechanism),
            (Layer::Blob, Some(Layer::Proxy))
        );
    }
}
