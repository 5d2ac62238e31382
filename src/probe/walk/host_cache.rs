//! Every host checked from DNS up once per trust, its failure cached with its evidence, so a
//! second endpoint reaching the same broken host fails the same way without asking again.

use super::Walk;
use crate::probe::net::{Network, Target};
use crate::probe::observed::tls::TlsEvidence;
use crate::probe::step::Step;
use crate::probe::stop::Stop;
use crate::vocab::Hop;

impl<N: Network> Walk<N> {
    /// A host checked from DNS up, once per trust; a failure is cached with its evidence.
    pub(super) async fn check_host(&mut self, target: &Target, hop: Hop) -> Result<(), Stop> {
        let at = &target.authority;
        if let Some(done) = self.checked.get(target) {
            return match done {
                Ok(()) => Ok(()),
                Err(earlier) => {
                    let again = earlier.again(hop, at);
                    let detail = format!("failed before at {}: {}", again.step, again.evidence);
                    self.path.record(hop, at, Step::Host, false, detail, None);
                    Err(again)
                }
            };
        }
        let check = self.net.check_host(target, hop).await;
        self.path.record_host(at, &check);
        if check
            .tls
            .as_ref()
            .is_some_and(TlsEvidence::containerd_retries_over_http)
        {
            self.answered_plain_http.insert(target.clone());
        }
        let result = match (&check.failure, target.proxy()) {
            (None, _) => Ok(()),
            // Until the tunnel is open (reaching the proxy, TLS to it, CONNECT), a failure is
            // the proxy's, at the proxy.
            (Some(f), Some(proxy)) if !check.tunnel.as_ref().is_some_and(|t| t.is_open()) => {
                Err(Stop::new(
                    Hop::Proxy,
                    &proxy.authority,
                    f.step.clone(),
                    f.evidence.clone(),
                ))
            }
            (Some(f), _) => Err(Stop::new(hop, at, f.step.clone(), f.evidence.clone())),
        };
        self.hosts.push(check);
        self.checked.insert(target.clone(), result.clone());
        result
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::scripted::*;
    use super::*;
    use crate::probe::evidence::Evidence;
    use crate::vocab::Layer;

    #[tokio::test]
    async fn a_blob_host_shared_by_mirror_and_registry_fails_the_pull_with_its_evidence() {
        let image = Image::new();
        let mut net = registry(Scripted::default(), "r.test", "store.test", &image);
        net = registry(net, "m.test", "store.test", &image).broken("store.test", Layer::Tls, "tls");
        let (outcome, net) = walk(net, mirror_then_registry(), false).await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.mechanism, s.authority.host.as_str()),
            (Hop::Blob, Layer::Blob, Some(Layer::Tls), "store.test")
        );
        assert!(
            matches!(*s.evidence, Evidence::Tls { .. }),
            "{:?}",
            s.evidence
        );
        // The broken host was checked once; the second endpoint met the cached failure, on record.
        let checks = net
            .checked
            .lock()
            .expect("lock")
            .iter()
            .filter(|h| *h == "https://store.test")
            .count();
        assert_eq!(checks, 1);
        assert!(outcome.path.iter().any(|h| {
            h.authority.host == "store.test"
                && h.steps
                    .iter()
                    .any(|s| s.step == "host" && s.detail.contains("failed before"))
        }));
    }

    #[tokio::test]
    async fn a_proxy_that_refuses_the_tunnel_is_the_proxys_failure() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .refuse_tunnel("store.test", 407);
        let outcome = Walk::new(
            through_proxy("r.test,auth.test"),
            vec![endpoint("r.test", true)],
            Arc::new(net),
        )
        .run()
        .await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.authority.to_string().as_str()),
            (Hop::Proxy, Layer::Proxy, "proxy.test:3128")
        );
        assert_eq!(
            s.evidence.to_string(),
            "CONNECT store.test through proxy.test:3128: 407"
        );
        assert!(
            matches!(&*s.evidence, Evidence::Tunnel { tunnel, .. } if tunnel.status == Some(407)),
            "{:?}",
            s.evidence
        );

        let net = registry(Scripted::default(), "r.test", "store.test", &image).broken(
            "proxy.test:3128",
            Layer::Dns,
            "dns",
        );
        let outcome = Walk::new(
            through_proxy(""),
            vec![endpoint("r.test", true)],
            Arc::new(net),
        )
        .run()
        .await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.authority.to_string().as_str()),
            (Hop::Proxy, Layer::Proxy, "proxy.test:3128")
        );
        assert!(
            matches!(&*s.evidence, Evidence::Dns { name, .. } if name == "proxy.test"),
            "{:?}",
            s.evidence
        );
    }
}
