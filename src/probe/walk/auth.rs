//! The registry's auth protocol as containerd's authorizer speaks it: the `/v2/` handshake,
//! the challenge answered with Basic or a token, the token request (OAuth POST, GET fallback).

use std::time::Instant;

use url::Url;

use super::Walk;
use super::http::Outgoing;
use crate::probe::authority::Authority;
use crate::probe::evidence::{ChallengeProblem, Evidence};
use crate::probe::net::{Network, Response, Target};
use crate::probe::registry::{self, Challenge, MAX_ERROR_BODY, MAX_TOKEN, Ping};
use crate::probe::step::Step;
use crate::probe::stop::Stop;
use crate::vocab::Hop;

impl<N: Network> Walk<N> {
    /// The `/v2/` handshake with an endpoint, once: its challenge answered, the Authorization
    /// for its host obtained.
    pub(super) async fn authorize(&mut self, i: usize) -> Result<(), Stop> {
        let endpoint = &self.endpoints[i];
        let target = Target {
            authority: endpoint.config.authority.clone(),
            scheme: endpoint.config.scheme,
            trust: endpoint.trust,
            proxy_url: None,
        };
        let key = (target, endpoint.config.path.clone());
        if let Some(done) = self.authorized.get(&key) {
            return done.clone();
        }
        let result = self.ping(i).await;
        self.authorized.insert(key, result.clone());
        result
    }

    async fn ping(&mut self, i: usize) -> Result<(), Stop> {
        let hop = self.endpoints[i].hop();
        let url = self.base_url(i, "/")?;
        let step = Step::Ping;
        let started = Instant::now();
        let (response, at) = self.get(i, hop, url, &step, Outgoing::default()).await?;
        let status = response.status;
        let challenge = response.header("www-authenticate").map(String::from);
        let body = self
            .read_limited(hop, &at, response.body, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let elapsed = Some(started.elapsed());
        match registry::interpret_ping(status, challenge.as_deref(), &body) {
            Ping::Open => {
                let detail = format!("{status}: no authentication required");
                self.path.record(hop, &at, &step, true, detail, elapsed);
                Ok(())
            }
            Ping::Failed(refusal) => Err(self.fail(hop, &at, step, refusal, elapsed)),
            Ping::Challenge(challenge_kind) => {
                let shown = registry::shorten(challenge.as_deref().unwrap_or(""), 300);
                self.path.record(
                    hop,
                    &at,
                    &step,
                    true,
                    format!("401 challenge: {shown}"),
                    elapsed,
                );
                self.answer(i, hop, &at, challenge_kind, &step).await
            }
        }
    }

    /// Answer a host's challenge: Basic with the credentials, or a token from the realm.
    async fn answer(
        &mut self,
        i: usize,
        hop: Hop,
        owner: &Authority,
        challenge: Challenge,
        step: &Step,
    ) -> Result<(), Stop> {
        match challenge {
            Challenge::Basic => match &self.settings.credentials {
                Some(c) => {
                    self.authorizations.insert(owner.clone(), c.basic());
                    Ok(())
                }
                None => Err(Stop::new(
                    hop,
                    owner,
                    step.clone(),
                    Evidence::Challenge(ChallengeProblem::NoCredentials),
                )),
            },
            Challenge::Bearer { realm, service } => {
                self.token(i, owner, &realm, service.as_deref()).await
            }
            Challenge::Unknown(text) => Err(Stop::new(
                hop,
                owner,
                step.clone(),
                Evidence::Challenge(ChallengeProblem::Unknown(text)),
            )),
        }
    }

    /// A bearer token for `owner` from the realm (itself a host checked from DNS up).
    async fn token(
        &mut self,
        i: usize,
        owner: &Authority,
        realm: &str,
        service: Option<&str>,
    ) -> Result<(), Stop> {
        let repository = self.settings.image.repository.clone();
        let scope = format!("repository:{repository}:pull");
        let step = Step::Token {
            scope: scope.clone(),
        };
        let Ok(mut url) = Url::parse(realm) else {
            let problem = Evidence::Challenge(ChallengeProblem::RealmNotUrl(realm.to_string()));
            return Err(Stop::new(Hop::Auth, owner, step, problem));
        };
        let realm_url = url.clone();
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &scope);
        }
        let started = Instant::now();
        let (response, at, who) = self
            .fetch_token(i, realm_url, url, &step, service, &scope)
            .await?;
        let status = response.status;
        let body = self
            .read_limited(Hop::Auth, &at, response.body, MAX_TOKEN)
            .await;
        let elapsed = Some(started.elapsed());
        let answer = body.map_err(Evidence::Body).and_then(|body| {
            registry::interpret_token(status, &body, &repository, &who).map_err(Evidence::Refused)
        });
        match answer {
            Ok(token) => {
                let detail = match &token.granted {
                    Some(actions) if actions.is_empty() => {
                        format!("{status} {who}: token grants nothing on {repository}")
                    }
                    Some(actions) => format!(
                        "{status} {who}: token grants {} on {repository}",
                        actions.join(",")
                    ),
                    None => format!("{status} {who}: opaque token"),
                };
                self.path
                    .record(Hop::Auth, &at, &step, true, detail, elapsed);
                self.authorizations
                    .insert(owner.clone(), format!("Bearer {}", token.value));
                Ok(())
            }
            Err(evidence) => Err(self.fail(Hop::Auth, &at, step, evidence, elapsed)),
        }
    }

    /// The token request as containerd sends it (`authorizer.go`): with a secret, an OAuth
    /// POST of the form to the realm, retried as a GET (`url`: the realm with service and
    /// scope) with Basic credentials when the realm does not take POSTs; without one, an
    /// anonymous GET. Returns the answer, its host, and how it was asked.
    async fn fetch_token(
        &mut self,
        i: usize,
        realm: Url,
        url: Url,
        step: &Step,
        service: Option<&str>,
        scope: &str,
    ) -> Result<(Response<N::Body>, Authority, String), Stop> {
        // The realm is where the challenge says credentials go; to its own host only.
        let (Some(c), Some(realm_host)) = (self.settings.credentials.clone(), Authority::of(&url))
        else {
            let (response, at) = self
                .get(i, Hop::Auth, url, step, Outgoing::default())
                .await?;
            return Ok((response, at, "anonymous GET".to_string()));
        };
        let form = registry::oauth_form(&c.username, &c.password, service, scope);
        let (response, at) = self
            .get(i, Hop::Auth, realm, step, Outgoing::form(form))
            .await?;
        let who = format!("as {}", c.username);
        if !registry::oauth_falls_back_to_get(response.status, !c.username.is_empty()) {
            return Ok((response, at, format!("{who}: OAuth POST")));
        }
        let detail = format!(
            "{}: the realm refused the OAuth POST; containerd retries with a GET",
            response.status
        );
        self.path.record(Hop::Auth, &at, step, true, detail, None);
        let credential = (realm_host, c.basic());
        let (response, at) = self
            .get(i, Hop::Auth, url, step, Outgoing::credential(credential))
            .await?;
        Ok((response, at, format!("{who}: OAuth POST, then GET")))
    }

    /// [`Walk::get`], answering a challenge from a host the request was redirected to, as
    /// containerd's authorizer does for any host it meets.
    pub(super) async fn get_authorized(
        &mut self,
        i: usize,
        hop: Hop,
        url: Url,
        headers: &[(String, String)],
        step: &Step,
    ) -> Result<(Response<N::Body>, Authority), Stop> {
        let (response, at) = self
            .get(i, hop, url.clone(), step, Outgoing::headers(headers))
            .await?;
        if response.status != 401 || self.authorizations.contains_key(&at) {
            return Ok((response, at));
        }
        let Some(challenge) = response.header("www-authenticate").map(Challenge::parse) else {
            return Ok((response, at));
        };
        if !matches!(challenge, Challenge::Bearer { .. } | Challenge::Basic) {
            return Ok((response, at));
        }
        self.answer(i, hop, &at, challenge, step).await?;
        self.get(i, hop, url, step, Outgoing::headers(headers))
            .await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use super::super::scripted::*;
    use super::*;
    use crate::vocab::Layer;

    #[tokio::test]
    async fn an_api_front_that_redirects_to_a_backend_with_its_own_challenge() {
        // registry.k8s.io-style: every /v2/ request of the front 307s to a regional backend.
        let image = Image::new();
        let mut net = registry(Scripted::default(), "backend.test", "store.test", &image);
        net = net
            .reply("r.test/v2/", redirect("https://backend.test/v2/"))
            .reply(
                "r.test/v2/team/app/manifests/v1",
                redirect("https://backend.test/v2/team/app/manifests/v1"),
            );
        for (digest, _) in image.blobs() {
            net = net.reply(
                &format!("r.test/v2/team/app/blobs/{digest}"),
                redirect(&format!("https://backend.test/v2/team/app/blobs/{digest}")),
            );
        }
        let (outcome, net) = walk(net, vec![endpoint("r.test", true)], false).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        let with_auth = net.authorization_sent_to();
        assert!(with_auth.contains(&"backend.test".to_string()));
        assert!(
            !with_auth.contains(&"r.test".to_string())
                && !with_auth.contains(&"store.test".to_string())
        );
        let manifest_hosts: Vec<&str> = outcome
            .path
            .iter()
            .filter(|h| h.hop == Hop::Registry)
            .map(|h| h.authority.host.as_str())
            .collect();
        assert!(manifest_hosts.contains(&"r.test") && manifest_hosts.contains(&"backend.test"));
    }

    #[tokio::test]
    async fn anonymous_pulls_send_no_credential_anywhere() {
        let image = Image::new();
        let net = Arc::new(registry(
            Scripted::default(),
            "r.test",
            "store.test",
            &image,
        ));
        let mut s = settings(false);
        s.credentials = None;
        let outcome = Walk::new(s, vec![endpoint("r.test", true)], net.clone())
            .run()
            .await;
        assert!(outcome.result.is_ok());
        let sent = net.sent.lock().expect("lock");
        let token_request = sent
            .iter()
            .find(|(at, _)| at.starts_with("auth.test/token"))
            .expect("token");
        assert!(!token_request.1.iter().any(|(n, _)| n == "Authorization"));
        assert!(
            outcome
                .path
                .iter()
                .any(|h| h.steps.iter().any(|s| s.detail.contains("anonymous GET")))
        );
    }

    #[tokio::test]
    async fn with_a_secret_the_token_is_an_oauth_post_as_containerd_sends_it() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image);
        let (outcome, net) = walk(net, vec![endpoint("r.test", true)], false).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        let posted = net.posted.lock().expect("lock").clone();
        assert_eq!(posted.len(), 1, "{posted:?}");
        let (at, form) = &posted[0];
        assert_eq!(at, "auth.test/token");
        let fields: HashMap<String, String> = url::form_urlencoded::parse(form.as_bytes())
            .into_owned()
            .collect();
        assert_eq!(fields["grant_type"], "password");
        assert_eq!(fields["client_id"], "containerd-client");
        assert_eq!(fields["username"], "alice");
        assert_eq!(fields["scope"], "repository:team/app:pull");
        assert_eq!(fields["service"], "svc");
        // No GET to the realm: the POST answered.
        assert!(net.requests_to("auth.test/token").len() == 1);
    }

    #[tokio::test]
    async fn a_realm_without_post_gets_the_get_with_basic_credentials() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply_to_post("auth.test/token", status(404));
        let (outcome, net) = walk(net, vec![endpoint("r.test", true)], false).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        let to_realm = net.requests_to("auth.test/token");
        assert_eq!(to_realm.len(), 2, "{to_realm:?}");
        assert!(to_realm[1].contains("scope=repository"), "{to_realm:?}");
        assert!(
            net.authorization_sent_to()
                .contains(&"auth.test".to_string())
        );
        assert!(
            outcome
                .path
                .iter()
                .flat_map(|h| &h.steps)
                .any(|s| s.detail.contains("refused the OAuth POST")),
            "{:?}",
            outcome.path
        );
    }

    #[tokio::test]
    async fn a_realm_that_forbids_the_post_is_not_asked_again() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply_to_post("auth.test/token", status(403));
        let (outcome, net) = walk(net, vec![endpoint("r.test", true)], false).await;
        let stop = stop(&outcome);
        assert_eq!((stop.hop, stop.layer), (Hop::Auth, Layer::Forbidden));
        assert!(
            stop.evidence.to_string().contains("OAuth POST"),
            "{}",
            stop.evidence
        );
        assert_eq!(net.requests_to("auth.test/token").len(), 1);
    }

    #[tokio::test]
    async fn without_a_secret_the_token_is_an_anonymous_get() {
        let image = Image::new();
        let mut anonymous = settings(false);
        anonymous.credentials = None;
        let net = registry(Scripted::default(), "r.test", "store.test", &image);
        let (outcome, net) = walk_with(anonymous, net).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        assert!(net.posted.lock().expect("lock").is_empty());
        assert!(net.authorization_sent_to().iter().all(|h| h != "auth.test"));
    }
}
