//! One request through its redirects, as Go's client and containerd send it: the proxy asked
//! per URL, every host checked, the Authorization header and the credential form kept to the
//! host they belong to.

use std::time::Instant;

use url::Url;

use super::Walk;
use crate::probe::authority::{Authority, Scheme};
use crate::probe::evidence::{ConfigProblem, Evidence};
use crate::probe::net::{Network, Request, Response, Target};
use crate::probe::redirect::{self, MAX_REDIRECTS, Next, RedirectProblem};
use crate::probe::step::Step;
use crate::probe::stop::Stop;
use crate::vocab::Hop;

/// What one request carries besides its endpoint's own headers.
#[derive(Default)]
pub(super) struct Outgoing {
    headers: Vec<(String, String)>,
    /// An Authorization value for the one host it belongs to (the token realm's Basic).
    credential: Option<(Authority, String)>,
    /// A form to POST (the OAuth token request).
    form: Option<String>,
}

impl Outgoing {
    pub(super) fn headers(headers: &[(String, String)]) -> Outgoing {
        Outgoing {
            headers: headers.to_vec(),
            ..Outgoing::default()
        }
    }

    pub(super) fn credential(credential: (Authority, String)) -> Outgoing {
        Outgoing {
            credential: Some(credential),
            ..Outgoing::default()
        }
    }

    pub(super) fn form(form: String) -> Outgoing {
        Outgoing {
            form: Some(form),
            ..Outgoing::default()
        }
    }
}

impl<N: Network> Walk<N> {
    /// One GET through its redirects: every host it reaches checked from DNS up, each redirect
    /// in the path, Authorization only to the host it belongs to. Returns the final answer and
    /// the host that gave it.
    pub(super) async fn get(
        &mut self,
        i: usize,
        hop: Hop,
        mut url: Url,
        step: &Step,
        outgoing: Outgoing,
    ) -> Result<(Response<N::Body>, Authority), Stop> {
        let Outgoing {
            headers,
            credential,
            mut form,
        } = outgoing;
        let trust = self.endpoints[i].trust;
        self.settle_scheme(i, hop, &mut url).await?;
        let mut at = self.endpoints[i].config.authority.clone();
        self.chain.clear();
        for _ in 0..=MAX_REDIRECTS {
            let Some(mut target) = Target::of(&url, trust) else {
                let url = redirect::redact_url(&url).to_string();
                let problem = Evidence::Config(ConfigProblem::NotHttp { url });
                return Err(Stop::new(hop, &at, step.clone(), problem));
            };
            // Every request URL is asked whether it goes through the runtime's proxy.
            target.proxy_url = self.settings.proxy.proxy_for(&url).cloned();
            at = target.authority.clone();
            if self.chain.last() != Some(&at) {
                self.chain.push(at.clone());
            }
            if let Some(proxy) = target.proxy() {
                self.check_host(&proxy, Hop::Proxy).await?;
            }
            self.check_host(&target, hop).await?;
            let mut request = Request {
                url: url.clone(),
                headers: self.endpoints[i].config.headers.clone(),
                form: form.clone(),
            };
            request.headers.extend(headers.iter().cloned());
            let owned = credential
                .iter()
                .map(|(owner, value)| (owner, value))
                .chain(self.authorizations.iter());
            if let Some((_, value)) = owned
                .into_iter()
                .find(|(owner, _)| redirect::carries_authorization(owner, &at))
            {
                request
                    .headers
                    .push(("Authorization".into(), value.clone()));
            }
            let started = Instant::now();
            let timeout = self.settings.timeouts.http;
            let response =
                match tokio::time::timeout(timeout, self.net.send(&target, request)).await {
                    Ok(Ok(response)) => response,
                    Ok(Err(transport)) => {
                        let evidence = Evidence::Transport(transport);
                        return Err(self.fail(hop, &at, step.clone(), evidence, None));
                    }
                    Err(_) => {
                        let evidence = Evidence::NoHeaders {
                            ms: timeout.as_millis(),
                        };
                        return Err(self.fail(hop, &at, step.clone(), evidence, None));
                    }
                };
            match redirect::interpret_redirect(&url, response.status, response.header("location")) {
                Ok(Next::Final) => return Ok((response, at)),
                Ok(Next::Follow(next)) => {
                    let detail = format!("{} → {}", response.status, redirect::redact_url(&next));
                    self.path
                        .record(hop, &at, step, true, detail, Some(started.elapsed()));
                    if redirect::is_downgrade(&url, &next) {
                        let to = Authority::of(&next)
                            .map_or_else(String::new, |a| a.for_url(Scheme::Http));
                        let warning = format!(
                            "{at} redirects to clear-text http://{to}: the runtime follows it, and the signed URLs and the data travel unencrypted"
                        );
                        if !self.warnings.contains(&warning) {
                            self.warnings.push(warning);
                        }
                    }
                    // Go's client re-sends a POST only on 307 and 308; otherwise it GETs.
                    if !matches!(response.status, 307 | 308) {
                        form = None;
                    }
                    // The form holds the password: like an Authorization, it never goes to
                    // another host (containerd would send it; pullpath stops and says so).
                    if form.is_some()
                        && !Authority::of(&next)
                            .is_some_and(|to| redirect::carries_authorization(&at, &to))
                    {
                        let problem = RedirectProblem::CredentialElsewhere {
                            from: at.clone(),
                            target: redirect::redact_url(&next),
                        };
                        return Err(self.fail(hop, &at, step.clone(), problem, None));
                    }
                    url = next;
                }
                Err(problem) => return Err(self.fail(hop, &at, step.clone(), problem, None)),
            }
        }
        Err(self.fail(hop, &at, step.clone(), RedirectProblem::TooMany, None))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::scripted::*;
    use super::*;
    use crate::probe::observed::transport::Transport;
    use crate::probe::oci::sha256_digest;
    use crate::vocab::Layer;

    #[tokio::test(start_paused = true)]
    async fn headers_that_never_come_are_a_route_failure_after_the_http_timeout() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply("r.test/v2/", Reply::Silent);
        let (outcome, _) = walk(net, vec![endpoint("r.test", true)], false).await;
        let s = stop(&outcome);
        assert_eq!((s.hop, s.layer), (Hop::Registry, Layer::Route));
        assert_eq!(*s.evidence, Evidence::NoHeaders { ms: 5000 });
        assert_eq!(s.evidence.to_string(), "no response headers within 5000 ms");
    }

    #[tokio::test]
    async fn redirect_chains_are_followed_up_to_containerds_limit() {
        let image = Image::new();
        let layer = sha256_digest(&image.layers[0]);
        let hop_url = |n: usize| format!("hop{n}.test/x");
        let mut net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
            &format!("r.test/v2/team/app/blobs/{layer}"),
            redirect(&format!("https://{}", hop_url(1))),
        );
        for n in 1..MAX_REDIRECTS {
            net = net.reply(
                &hop_url(n),
                redirect(&format!("https://{}", hop_url(n + 1))),
            );
        }
        net = net.reply(&hop_url(MAX_REDIRECTS), ok(image.layers[0].clone()));
        let (outcome, _) = walk(net, vec![endpoint("r.test", true)], true).await;
        assert!(
            outcome.result.is_ok(),
            "10 redirects are followed: {:?}",
            outcome.result
        );
        let crossed: Vec<&str> = outcome
            .path
            .iter()
            .filter(|h| h.hop == Hop::Blob)
            .map(|h| h.authority.host.as_str())
            .collect();
        assert!(crossed.contains(&"hop1.test") && crossed.contains(&"hop10.test"));

        let mut looping = registry(Scripted::default(), "r.test", "store.test", &image).reply(
            &format!("r.test/v2/team/app/blobs/{layer}"),
            redirect("/loop"),
        );
        looping = looping.reply("r.test/loop", redirect("/loop"));
        let (outcome, _) = walk(looping, vec![endpoint("r.test", true)], false).await;
        let s = stop(&outcome);
        assert_eq!((s.layer, s.mechanism), (Layer::Blob, Some(Layer::Other)));
        assert_eq!(
            *s.evidence,
            crate::probe::evidence::Evidence::Redirect(RedirectProblem::TooMany)
        );
    }

    #[tokio::test]
    async fn a_clear_text_blob_redirect_is_followed_with_a_warning() {
        let image = Image::new();
        let layer = sha256_digest(&image.layers[0]);
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply(
                &format!("r.test/v2/team/app/blobs/{layer}"),
                redirect("http://minio.test:9000/b?X-Amz-Signature=SECRET"),
            )
            .reply("minio.test:9000/b", ok(image.layers[0].clone()));
        let (outcome, _) = walk(net, vec![endpoint("r.test", true)], true).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        assert!(
            outcome
                .warnings
                .iter()
                .any(|w| w.contains("clear-text http://minio.test:9000") && !w.contains("SECRET"))
        );
    }

    #[tokio::test]
    async fn the_credential_post_never_follows_a_redirect_to_another_host() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image).reply_to_post(
            "auth.test/token",
            Reply::Answer {
                status: 307,
                headers: vec![("location", "https://elsewhere.test/token".to_string())],
                body: vec![],
            },
        );
        let (outcome, net) = walk(net, vec![endpoint("r.test", true)], false).await;
        let stop = stop(&outcome);
        assert_eq!((stop.hop, stop.layer), (Hop::Auth, Layer::Other));
        assert!(
            matches!(
                &*stop.evidence,
                crate::probe::evidence::Evidence::Redirect(RedirectProblem::CredentialElsewhere {
                    target,
                    ..
                }) if target == "https://elsewhere.test/token"
            ),
            "{:?}",
            stop.evidence
        );
        assert!(
            net.posted
                .lock()
                .expect("lock")
                .iter()
                .all(|(at, _)| !at.starts_with("elsewhere.test"))
        );
        assert!(net.requests_to("elsewhere.test").is_empty());
    }

    #[tokio::test]
    async fn what_broke_after_connecting_decides_the_layer() {
        // A registry whose manifest answer is over the client's header limit, or not HTTP, is at
        // fault itself (`other`, saying what broke); a reset is the peer refusing; silence is a
        // path that drops, as a dial timeout is.
        let cases = [
            (
                Transport::HeadersTooLarge("message head is too large".into()),
                Layer::Other,
            ),
            (
                Transport::Malformed("invalid HTTP version".into()),
                Layer::Other,
            ),
            (
                Transport::Reset("connection reset by peer".into()),
                Layer::Refused,
            ),
            (
                Transport::TimedOut("operation timed out".into()),
                Layer::Route,
            ),
        ];
        for (transport, layer) in cases {
            let image = Image::new();
            let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
                "r.test/v2/team/app/manifests/v1",
                Reply::Broken(transport.clone()),
            );
            let outcome = Walk::new(
                settings(false),
                vec![endpoint("r.test", true)],
                Arc::new(net),
            )
            .run()
            .await;
            let s = stop(&outcome);
            assert_eq!((s.hop, s.layer), (Hop::Registry, layer), "{transport:?}");
            assert_eq!(*s.evidence, Evidence::Transport(transport.clone()));
            assert_eq!(s.evidence.to_string(), transport.to_string());
        }
    }

    #[tokio::test]
    async fn every_host_goes_through_the_runtimes_proxy_and_credentials_stay_home() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image);
        let (outcome, net) = walk_with(through_proxy(""), net).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        let tunneled = net.tunneled.lock().expect("lock").clone();
        for host in ["r.test", "auth.test", "store.test"] {
            assert!(
                tunneled.contains(&(host.to_string(), "proxy.test:3128".to_string())),
                "{host}: {tunneled:?}"
            );
        }
        // The node itself only dials the proxy, checked once.
        assert_eq!(
            *net.checked.lock().expect("lock"),
            ["http://proxy.test:3128"]
        );
        assert!(outcome.path.iter().any(|h| h.hop == Hop::Proxy));
        assert!(
            net.authorization_sent_to()
                .iter()
                .all(|h| h == "r.test" || h == "auth.test")
        );
    }

    #[tokio::test]
    async fn no_proxy_is_decided_per_host_registry_direct_blobs_proxied() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image);
        let (outcome, net) = walk_with(through_proxy("r.test,auth.test"), net).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        let tunneled: Vec<String> = net
            .tunneled
            .lock()
            .expect("lock")
            .iter()
            .map(|(h, _)| h.clone())
            .collect();
        assert_eq!(tunneled, ["store.test"]);
        let direct = net.checked.lock().expect("lock").clone();
        assert!(
            direct.contains(&"https://r.test".to_string())
                && direct.contains(&"https://auth.test".to_string())
        );
    }
}
