//! containerd 1.7+'s HTTPS-first try of an `http://` host with TLS settings, settled once per
//! endpoint so every later request knows which scheme the host speaks.

use url::Url;

use super::{FallbackTo, Walk};
use crate::probe::authority::Scheme;
use crate::probe::evidence::{ConfigProblem, Evidence};
use crate::probe::net::{Network, Target};
use crate::probe::step::Step;
use crate::probe::stop::Stop;
use crate::vocab::Hop;

impl<N: Network> Walk<N> {
    /// containerd 1.7+'s HTTPS-first try of an `http://` host with TLS settings, settled on
    /// the endpoint's first request: when the server answers the handshake in plain HTTP (or
    /// not at all), the endpoint is spoken to in plain HTTP from then on and `url` follows.
    pub(super) async fn settle_scheme(
        &mut self,
        i: usize,
        hop: Hop,
        url: &mut Url,
    ) -> Result<(), Stop> {
        let endpoint = &self.endpoints[i].config;
        let Some(plain) = endpoint.http_fallback.clone() else {
            return Ok(());
        };
        let https = endpoint.authority.clone();
        let Some(mut target) = Target::of(url, self.endpoints[i].trust) else {
            return Ok(());
        };
        if target.authority != https {
            return Ok(());
        }
        target.proxy_url = self.settings.proxy.proxy_for(url).cloned();
        if let Some(proxy) = target.proxy() {
            self.check_host(&proxy, Hop::Proxy).await?;
        }
        let checked = self.check_host(&target, hop).await;
        let config = &mut self.endpoints[i].config;
        config.http_fallback = None;
        match checked {
            Err(stop) if self.answered_plain_http.contains(&target) => {
                config.scheme = Scheme::Http;
                config.authority = plain.clone();
                let moved =
                    url.set_scheme("http").is_ok() && url.set_port(Some(plain.port)).is_ok();
                if !moved {
                    let problem = ConfigProblem::NoPlainHttp {
                        authority: plain.clone(),
                    };
                    return Err(Stop::new(
                        hop,
                        &plain,
                        Step::HttpFallback,
                        Evidence::Config(problem),
                    ));
                }
                // Both the hosts.toml case and an unconfigured localhost registry on another
                // port than 80 or 443 (remotes/docker/config/hosts.go, 1.7.24 and 2.x).
                let detail = format!(
                    "containerd 1.7+ tries HTTPS first where plain HTTP is also configured (an http:// hosts.toml host with TLS settings, or a localhost registry without hosts.toml), and retries in plain HTTP ({})",
                    stop.evidence
                );
                self.path
                    .record(hop, &plain, Step::HttpFallback, true, detail, None);
                self.fell_back(&https, hop, "try HTTPS first", &stop, FallbackTo::PlainHttp);
                Ok(())
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::WalkEndpoint;
    use super::super::scripted::*;
    use crate::vocab::Layer;

    /// hosts.toml `[host."http://r.test:5000"]` with TLS settings, as containerd 1.7+ builds it.
    fn https_first(host: &str) -> WalkEndpoint {
        let mut e = endpoint(host, true);
        e.config.http_fallback = Some(e.config.authority.clone());
        e
    }

    #[tokio::test]
    async fn an_https_first_host_that_answers_plain_http_is_spoken_to_in_http() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test:5000", "store.test", &image)
            .speaks_plain_http("r.test:5000");
        let (outcome, net) = walk(net, vec![https_first("r.test:5000")], false).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        let checked = net.checked.lock().expect("lock").clone();
        assert_eq!(
            checked
                .iter()
                .filter(|c| c.contains("r.test:5000"))
                .collect::<Vec<_>>(),
            ["https://r.test:5000", "http://r.test:5000"]
        );
        assert_eq!(outcome.fallbacks.len(), 1);
        assert_eq!(outcome.fallbacks[0].what, "try HTTPS first");
        assert!(
            outcome
                .path
                .iter()
                .flat_map(|h| &h.steps)
                .any(|s| s.step == "http fallback" && s.ok),
            "{:?}",
            outcome.path
        );
    }

    #[tokio::test]
    async fn an_https_first_host_whose_tls_fails_otherwise_stops_the_pull_at_tls() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test:5000", "store.test", &image).broken(
            "r.test:5000",
            Layer::Tls,
            "tls",
        );
        let (outcome, net) = walk(net, vec![https_first("r.test:5000")], false).await;
        let stop = stop(&outcome);
        assert_eq!(
            (stop.layer, stop.authority.to_string()),
            (Layer::Tls, "r.test:5000".to_string())
        );
        let checked = net.checked.lock().expect("lock").clone();
        assert_eq!(checked, ["https://r.test:5000"]);
        assert!(
            !outcome
                .fallbacks
                .iter()
                .any(|f| f.what == "try HTTPS first")
        );
    }
}
