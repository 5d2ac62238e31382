//! The pull in containerd's order, with containerd's fallback rules (read from
//! `remotes/docker/resolver.go` and `fetcher.go`, identical in 1.6, 1.7 and 2.x):
//!
//! - **resolve** (the tag's manifest) asks, in `hosts.toml` order, every host that may `pull`
//!   and `resolve` (only `pull` for a digest). A 404 moves on silently; any other failure is
//!   remembered and moves on too; the pull fails with the *first* non-404 failure, or
//!   "not found" when every host said 404.
//! - **fetch** (a manifest by digest, the config, every layer) asks *every* host in order for
//!   each blob and moves on after any failure to open it, failing with the first failure.
//!   Once a host's answer is being read, a broken or wrong body fails the pull: there is no
//!   fallback after the bytes started.
//!
//! Every host is checked once from DNS up per trust ([`Network::check_host`]); a failed check is
//! cached as its [`Stop`], so a second endpoint reaching the same broken host fails with the
//! same evidence. The Authorization header obtained for a host goes to that host only. Each
//! step is bounded by its timeout, the whole walk by the deadline. Protocol decisions are the
//! pure functions of `oci`, `registry` and `redirect`; this file only sequences them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use url::Url;

use super::authority::{Authority, Scheme};
use super::body::{Meter, next_chunk};
use super::creds::Credentials;
use super::host::{HostCheck, Timeouts};
use super::hosts_toml::Endpoint;
use super::net::{Body, Network, Request, Response, Target, Transport, TrustId};
use super::oci::{self, BlobCheck, Descriptor, MANIFEST_TYPES, Manifest, Platform, ReadManifest};
use super::path::{Path, PathHop};
use super::proxy::ProxyConfig;
use super::redirect::{self, MAX_REDIRECTS, Next};
use super::registry::{self, Challenge, MAX_ERROR_BODY, MAX_MANIFEST, MAX_TOKEN, Ping};
use super::stop::Stop;
use super::tls::TlsEvidence;
use crate::image_ref::{Digest, ImageRef};
use crate::vocab::{Hop, Layer};

/// How much of each layer a quick probe reads.
pub const RANGE_BYTES: usize = 1024;

/// What the walk is asked to do.
#[derive(Debug, Clone)]
pub struct Settings {
    pub image: ImageRef,
    pub platform: Platform,
    pub credentials: Option<Credentials>,
    pub timeouts: Timeouts,
    pub deadline: Duration,
    pub full: bool,
    pub parallel: usize,
    pub progress: bool,
    /// The runtime's proxy settings, decided per request URL as Go decides them.
    pub proxy: ProxyConfig,
}

/// A `hosts.toml` host and the trust it is spoken to with.
#[derive(Debug, Clone)]
pub struct WalkEndpoint {
    pub config: Endpoint,
    pub trust: TrustId,
}

impl WalkEndpoint {
    fn hop(&self) -> Hop {
        if self.config.is_registry {
            Hop::Registry
        } else {
            Hop::Mirror
        }
    }
}

/// `config` or `layer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobKind {
    Config,
    Layer,
}

impl BlobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BlobKind::Config => "config",
            BlobKind::Layer => "layer",
        }
    }
}

/// One blob fetched.
#[derive(Debug, Clone)]
pub struct Blob {
    pub kind: BlobKind,
    pub digest: Digest,
    pub size: u64,
    /// The host that served it, after redirects.
    pub served_by: Authority,
    /// Every host the request crossed to get there, when it was redirected.
    pub via: Vec<Authority>,
    /// Every byte read and its size and digest matched.
    pub verified: bool,
    pub detail: String,
    pub elapsed: Duration,
}

/// A host the pull moved past, as containerd does, and why.
#[derive(Debug, Clone)]
pub struct Fallback {
    pub endpoint: Authority,
    pub hop: Hop,
    /// `resolve v1`, `fetch sha256:…`.
    pub what: String,
    pub stop: Stop,
}

/// Everything a walk observed.
#[derive(Debug)]
pub struct Outcome {
    /// `Err`: where and why the pull stops (the runtime's verdict).
    pub result: Result<(), Stop>,
    pub path: Vec<PathHop>,
    /// Every host checked, in the order first reached.
    pub hosts: Vec<HostCheck>,
    pub blobs: Vec<Blob>,
    pub fallbacks: Vec<Fallback>,
    /// What works but deserves a word (a clear-text redirect …).
    pub warnings: Vec<String>,
}

/// What one request carries besides its endpoint's own headers.
#[derive(Default)]
struct Outgoing {
    headers: Vec<(String, String)>,
    /// An Authorization value for the one host it belongs to (the token realm's Basic).
    credential: Option<(Authority, String)>,
    /// A form to POST (the OAuth token request).
    form: Option<String>,
}

impl Outgoing {
    fn headers(headers: &[(String, String)]) -> Outgoing {
        Outgoing {
            headers: headers.to_vec(),
            ..Outgoing::default()
        }
    }

    fn credential(credential: (Authority, String)) -> Outgoing {
        Outgoing {
            credential: Some(credential),
            ..Outgoing::default()
        }
    }

    fn form(form: String) -> Outgoing {
        Outgoing {
            form: Some(form),
            ..Outgoing::default()
        }
    }
}

/// A blob as read, before it is recorded.
struct Fetched {
    kind: BlobKind,
    desc: Descriptor,
    served_by: Authority,
    /// The hosts its request crossed.
    via: Vec<Authority>,
    /// Whether every byte was read (so `Ok` means verified).
    verified: bool,
    result: Result<String, String>,
    elapsed: Duration,
}

/// What a resolve attempt on one host came to.
enum Miss {
    /// 404: containerd moves on without remembering it.
    NotFound(Stop),
    /// Anything else: remembered, and the pull moves on.
    Failed(Stop),
}

/// What a fetch asks every host for.
#[derive(Clone, Copy)]
enum Fetch<'a> {
    Manifest(&'a Digest),
    Blob { desc: &'a Descriptor, range: bool },
}

pub struct Walk<N: Network> {
    settings: Settings,
    endpoints: Vec<WalkEndpoint>,
    net: Arc<N>,
    checked: HashMap<Target, Result<(), Stop>>,
    /// Hosts whose handshake failed the way containerd 1.7+ retries over plain HTTP.
    answered_plain_http: HashSet<Target>,
    hosts: Vec<HostCheck>,
    /// The `/v2/` handshake per endpoint (host, trust and path).
    authorized: HashMap<(Target, String), Result<(), Stop>>,
    /// Authorization values, each for the one host it was obtained for.
    authorizations: HashMap<Authority, String>,
    path: Path,
    /// The hosts the last request crossed (more than one when it was redirected).
    chain: Vec<Authority>,
    blobs: Vec<Blob>,
    fallbacks: Vec<Fallback>,
    warnings: Vec<String>,
    /// Every body read so far, so the total deadline can say which one was still trickling.
    meters: Vec<Arc<Meter>>,
}

impl<N: Network> Walk<N> {
    /// `endpoints` in containerd's order; never empty (hosts.toml always ends with the registry).
    pub fn new(settings: Settings, endpoints: Vec<WalkEndpoint>, net: Arc<N>) -> Walk<N> {
        Walk {
            settings,
            endpoints,
            net,
            checked: HashMap::new(),
            answered_plain_http: HashSet::new(),
            hosts: Vec::new(),
            authorized: HashMap::new(),
            authorizations: HashMap::new(),
            path: Path::default(),
            chain: Vec::new(),
            blobs: Vec::new(),
            fallbacks: Vec::new(),
            warnings: Vec::new(),
            meters: Vec::new(),
        }
    }

    pub async fn run(mut self) -> Outcome {
        let deadline = self.settings.deadline;
        let result = match tokio::time::timeout(deadline, self.pull()).await {
            Ok(result) => result,
            Err(_) => Err(self.deadline_passed(deadline)),
        };
        Outcome {
            result,
            path: self.path.hops,
            hosts: self.hosts,
            blobs: self.blobs,
            fallbacks: self.fallbacks,
            warnings: self.warnings,
        }
    }

    /// The deadline stops the walk wherever the path is: at a body still being read (a
    /// trickle, named with what it showed), else at the last step.
    fn deadline_passed(&mut self, deadline: Duration) -> Stop {
        let ran_out = format!("the total deadline of {} s ran out", deadline.as_secs_f64());
        let reading = self.meters.iter().rev().find(|m| m.active());
        let (hop, authority, detail) = match (reading, self.path.last()) {
            (Some(meter), _) => (
                meter.hop,
                meter.authority.clone(),
                format!("{ran_out}: {}", meter.trickle()),
            ),
            (None, Some((hop, authority))) => (hop, authority.clone(), ran_out),
            (None, None) => (Hop::Registry, self.registry(), ran_out),
        };
        self.path
            .record(hop, &authority, "deadline", false, detail.clone(), None);
        Stop::new(hop, &authority, Layer::Other, "deadline", detail)
    }

    /// The registry's own host: the last endpoint marked so (hosts.toml's `server`).
    fn registry(&self) -> Authority {
        self.endpoints
            .iter()
            .rev()
            .find(|e| e.config.is_registry)
            .or(self.endpoints.last())
            .map(|e| e.config.authority.clone())
            .or_else(|| Authority::parse(&self.settings.image.registry, 443))
            .unwrap_or(Authority {
                host: self.settings.image.registry.clone(),
                port: 443,
            })
    }

    /// hosts.toml leaves the pull no host to ask.
    fn no_host(&self, why: &str) -> Stop {
        Stop::new(
            Hop::Registry,
            &self.registry(),
            Layer::Other,
            "hosts.toml",
            why,
        )
    }

    async fn pull(&mut self) -> Result<(), Stop> {
        let (served_by, top) = self.resolve().await?;
        let image = match top.manifest {
            Manifest::Index(entries) => {
                let endpoint = &self.endpoints[served_by];
                let (hop, authority) = (endpoint.hop(), endpoint.config.authority.clone());
                let wanted = self.settings.platform.clone();
                let child = match oci::select_platform(&entries, &wanted) {
                    Ok(child) => child.clone(),
                    Err(detail) => {
                        self.path
                            .record(hop, &authority, "platform", false, detail.clone(), None);
                        return Err(Stop::new(
                            hop,
                            &authority,
                            Layer::Platform,
                            "platform",
                            detail,
                        ));
                    }
                };
                let chosen = format!("{wanted} → {}", child.digest);
                self.path
                    .record(hop, &authority, "platform", true, chosen, None);
                self.fetch_manifest(&child.digest).await?.manifest
            }
            image => image,
        };
        let Manifest::Image { config, layers } = image else {
            let at = self.endpoints[served_by].config.authority.clone();
            let hop = self.endpoints[served_by].hop();
            return Err(Stop::new(
                hop,
                &at,
                Layer::Other,
                "platform",
                "the platform's entry is itself an index",
            ));
        };
        self.blob(BlobKind::Config, &config, true).await?;
        if self.settings.full {
            return self.download_layers(&layers).await;
        }
        for layer in &layers {
            self.blob(BlobKind::Layer, layer, false).await?;
        }
        Ok(())
    }

    /// The image's manifest, from the first host that has it.
    async fn resolve(&mut self) -> Result<(usize, ReadManifest), Stop> {
        let asked = self.settings.image.digest.clone();
        let reference = self.settings.image.reference().to_string();
        let candidates: Vec<usize> = (0..self.endpoints.len())
            .filter(|&i| {
                let caps = self.endpoints[i].config.capabilities;
                caps.pull && (asked.is_some() || caps.resolve)
            })
            .collect();
        let step = format!("manifest {reference}");
        let mut first_failure = None;
        let mut not_found = None;
        for i in candidates {
            let (hop, endpoint) = (
                self.endpoints[i].hop(),
                self.endpoints[i].config.authority.clone(),
            );
            match self.manifest_on(i, &reference).await {
                Ok((response, at)) => {
                    // The host answered: what it sent decides, with no fallback after it.
                    let read = self
                        .read_manifest(response, hop, &at, &step, asked.as_ref())
                        .await?;
                    return Ok((i, read));
                }
                Err(Miss::NotFound(stop)) => {
                    self.fell_back(&endpoint, hop, &step, &stop);
                    not_found = Some(stop);
                }
                Err(Miss::Failed(stop)) => {
                    self.fell_back(&endpoint, hop, &step, &stop);
                    first_failure.get_or_insert(stop);
                }
            }
        }
        Err(first_failure.or(not_found).unwrap_or_else(|| {
            self.no_host(
                "no host in hosts.toml may resolve this image (capabilities pull and resolve)",
            )
        }))
    }

    /// `GET …/manifests/<reference>` on one host, up to its answer's status.
    async fn manifest_on(
        &mut self,
        i: usize,
        reference: &str,
    ) -> Result<(Response<N::Body>, Authority), Miss> {
        self.authorize(i).await.map_err(Miss::Failed)?;
        let hop = self.endpoints[i].hop();
        let url = self
            .api_url(i, "manifests", reference)
            .map_err(Miss::Failed)?;
        let step = format!("manifest {reference}");
        let accept = [("Accept".to_string(), MANIFEST_TYPES.to_string())];
        let (response, at) = self
            .get_authorized(i, hop, url, &accept, &step)
            .await
            .map_err(Miss::Failed)?;
        if (200..300).contains(&response.status) {
            return Ok((response, at));
        }
        let stop = self.manifest_refused(response, hop, &at, &step).await;
        if stop.layer == Layer::NotFound {
            Err(Miss::NotFound(stop))
        } else {
            Err(Miss::Failed(stop))
        }
    }

    async fn manifest_refused(
        &mut self,
        response: Response<N::Body>,
        hop: Hop,
        at: &Authority,
        step: &str,
    ) -> Stop {
        let status = response.status;
        let challenge = response.header("www-authenticate").map(String::from);
        let retry = registry::retry_note(status, response.header("retry-after"));
        let body = self
            .read_limited(hop, at, response.body, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let had_auth = self.authorizations.contains_key(at);
        let (layer, mut detail) =
            registry::interpret_manifest_failure(status, challenge.as_deref(), &body, had_auth);
        if let Some(retry) = retry {
            detail = format!("{detail}; {retry}");
        }
        self.path.record(hop, at, step, false, detail.clone(), None);
        Stop::new(hop, at, layer, step, detail)
    }

    async fn read_manifest(
        &mut self,
        response: Response<N::Body>,
        hop: Hop,
        at: &Authority,
        step: &str,
        asked: Option<&Digest>,
    ) -> Result<ReadManifest, Stop> {
        let content_type = response.header("content-type").unwrap_or("?").to_string();
        let read = self
            .read_limited(hop, at, response.body, MAX_MANIFEST)
            .await
            .and_then(|body| oci::interpret_manifest(&body, asked, &content_type));
        match read {
            Ok(read) => {
                self.path
                    .record(hop, at, step, true, read.summary.clone(), None);
                Ok(read)
            }
            Err(detail) => {
                self.path.record(hop, at, step, false, detail.clone(), None);
                Err(Stop::new(hop, at, Layer::Other, step, detail))
            }
        }
    }

    /// A child manifest by digest, from the first host that opens it.
    async fn fetch_manifest(&mut self, digest: &Digest) -> Result<ReadManifest, Stop> {
        let (i, response, at) = self.open_anywhere(Fetch::Manifest(digest)).await?;
        let hop = self.endpoints[i].hop();
        let step = format!("manifest {}", short(digest));
        self.read_manifest(response, hop, &at, &step, Some(digest))
            .await
    }

    /// Open a manifest or blob on every host in order, as containerd's fetcher does.
    async fn open_anywhere(
        &mut self,
        fetch: Fetch<'_>,
    ) -> Result<(usize, Response<N::Body>, Authority), Stop> {
        let mut first = None;
        for i in 0..self.endpoints.len() {
            match self.open_on(i, fetch).await {
                Ok((response, at)) => return Ok((i, response, at)),
                Err(stop) => {
                    let (hop, endpoint) = (
                        self.endpoints[i].hop(),
                        self.endpoints[i].config.authority.clone(),
                    );
                    let what = match fetch {
                        Fetch::Manifest(d) => format!("fetch {}", short(d)),
                        Fetch::Blob { desc, .. } => format!("fetch {}", short(&desc.digest)),
                    };
                    self.fell_back(&endpoint, hop, &what, &stop);
                    first.get_or_insert(stop);
                }
            }
        }
        Err(first.unwrap_or_else(|| self.no_host("no host in hosts.toml to fetch from")))
    }

    async fn open_on(
        &mut self,
        i: usize,
        fetch: Fetch<'_>,
    ) -> Result<(Response<N::Body>, Authority), Stop> {
        self.authorize(i).await?;
        let (hop, url, step, mut headers) = match fetch {
            Fetch::Manifest(digest) => (
                self.endpoints[i].hop(),
                self.api_url(i, "manifests", digest.as_str())?,
                format!("manifest {}", short(digest)),
                vec![("Accept".to_string(), MANIFEST_TYPES.to_string())],
            ),
            Fetch::Blob { desc, .. } => (
                Hop::Blob,
                self.api_url(i, "blobs", desc.digest.as_str())?,
                short(&desc.digest),
                vec![],
            ),
        };
        if let Fetch::Blob { range: true, .. } = fetch {
            headers.push(("Range".into(), format!("bytes=0-{}", RANGE_BYTES - 1)));
        }
        let (response, at) = self.get_authorized(i, hop, url, &headers, &step).await?;
        if (200..300).contains(&response.status) {
            return Ok((response, at));
        }
        if let Fetch::Manifest(_) = fetch {
            return Err(self.manifest_refused(response, hop, &at, &step).await);
        }
        let status = response.status;
        let body = self
            .read_limited(hop, &at, response.body, MAX_ERROR_BODY)
            .await
            .unwrap_or_default();
        let registry_host = self.endpoints.iter().any(|e| e.config.authority == at);
        let detail = format!(
            "{status}: {}",
            registry::body_evidence(&body, &at, registry_host)
        );
        self.path
            .record(hop, &at, &step, false, detail.clone(), None);
        Err(Stop::new(
            hop,
            &at,
            Layer::from_http_status(status),
            step,
            detail,
        ))
    }

    /// The `/v2/` handshake with an endpoint, once: its challenge answered, the Authorization
    /// for its host obtained.
    async fn authorize(&mut self, i: usize) -> Result<(), Stop> {
        let endpoint = &self.endpoints[i];
        let target = Target {
            authority: endpoint.config.authority.clone(),
            scheme: endpoint.config.scheme,
            trust: endpoint.trust,
            via: None,
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
        let step = "GET /v2/";
        let started = Instant::now();
        let (response, at) = self.get(i, hop, url, step, Outgoing::default()).await?;
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
                self.path.record(hop, &at, step, true, detail, elapsed);
                Ok(())
            }
            Ping::Failed(layer, detail) => {
                self.path
                    .record(hop, &at, step, false, detail.clone(), elapsed);
                Err(Stop::new(hop, &at, layer, step, detail))
            }
            Ping::Challenge(challenge_kind) => {
                let shown = registry::shorten(challenge.as_deref().unwrap_or(""), 300);
                self.path.record(
                    hop,
                    &at,
                    step,
                    true,
                    format!("401 challenge: {shown}"),
                    elapsed,
                );
                self.answer(i, hop, &at, challenge_kind, step).await
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
        step: &str,
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
                    Layer::Auth,
                    step,
                    "the registry wants Basic credentials and the node sent none (--username/--docker-config)",
                )),
            },
            Challenge::Bearer { realm, service } => {
                self.token(i, owner, &realm, service.as_deref()).await
            }
            Challenge::Unknown(text) => Err(Stop::new(
                hop,
                owner,
                Layer::Other,
                step,
                format!("a challenge containerd does not answer: {text:?}"),
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
        let step = format!("token {scope}");
        let Ok(mut url) = Url::parse(realm) else {
            let detail = format!("the token realm {realm:?} is not a URL");
            return Err(Stop::new(Hop::Auth, owner, Layer::Other, step, detail));
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
        let answer = body
            .map_err(|e| (Layer::Other, e))
            .and_then(|body| registry::interpret_token(status, &body, &repository));
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
            Err((layer, detail)) => {
                let detail = format!("{detail} ({who})");
                self.path
                    .record(Hop::Auth, &at, &step, false, detail.clone(), elapsed);
                Err(Stop::new(Hop::Auth, &at, layer, step, detail))
            }
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
        step: &str,
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
    async fn get_authorized(
        &mut self,
        i: usize,
        hop: Hop,
        url: Url,
        headers: &[(String, String)],
        step: &str,
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

    /// One GET through its redirects: every host it reaches checked from DNS up, each redirect
    /// in the path, Authorization only to the host it belongs to. Returns the final answer and
    /// the host that gave it.
    async fn get(
        &mut self,
        i: usize,
        hop: Hop,
        mut url: Url,
        step: &str,
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
                let detail = format!("{} is not an http(s) URL", redirect::redact_url(&url));
                return Err(Stop::new(hop, &at, Layer::Other, step, detail));
            };
            // Every request URL is asked whether it goes through the runtime's proxy.
            target.via = self.settings.proxy.proxy_for(&url).cloned();
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
            let response = match tokio::time::timeout(timeout, self.net.send(&target, request))
                .await
            {
                Ok(Ok(response)) => response,
                Ok(Err(transport)) => {
                    let detail = transport.to_string();
                    self.path
                        .record(hop, &at, step, false, detail.clone(), None);
                    return Err(Stop::new(
                        hop,
                        &at,
                        transport_layer(&transport),
                        step,
                        detail,
                    ));
                }
                Err(_) => {
                    let detail = format!("no response headers within {} ms", timeout.as_millis());
                    self.path
                        .record(hop, &at, step, false, detail.clone(), None);
                    return Err(Stop::new(hop, &at, Layer::Route, step, detail));
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
                        let detail = format!(
                            "{at} redirects the credential POST to {}: pullpath does not send the password to another host (containerd would)",
                            redirect::redact_url(&next)
                        );
                        self.path
                            .record(hop, &at, step, false, detail.clone(), None);
                        return Err(Stop::new(hop, &at, Layer::Other, step, detail));
                    }
                    url = next;
                }
                Err(detail) => {
                    self.path
                        .record(hop, &at, step, false, detail.clone(), None);
                    return Err(Stop::new(hop, &at, Layer::Other, step, detail));
                }
            }
        }
        let detail = format!(
            "stopped after {MAX_REDIRECTS} redirects, as containerd does (a redirect loop?)"
        );
        self.path
            .record(hop, &at, step, false, detail.clone(), None);
        Err(Stop::new(hop, &at, Layer::Other, step, detail))
    }

    /// containerd 1.7+'s HTTPS-first try of an `http://` host with TLS settings, settled on
    /// the endpoint's first request: when the server answers the handshake in plain HTTP (or
    /// not at all), the endpoint is spoken to in plain HTTP from then on and `url` follows.
    async fn settle_scheme(&mut self, i: usize, hop: Hop, url: &mut Url) -> Result<(), Stop> {
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
        target.via = self.settings.proxy.proxy_for(url).cloned();
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
                    let detail = format!("cannot speak plain HTTP to {plain}");
                    return Err(Stop::new(
                        hop,
                        &plain,
                        Layer::Other,
                        "http fallback",
                        detail,
                    ));
                }
                let detail = format!(
                    "hosts.toml names http://{plain} with TLS settings: containerd 1.7+ tried HTTPS first, and retries in plain HTTP ({})",
                    stop.detail
                );
                self.path
                    .record(hop, &plain, "http fallback", true, detail, None);
                self.fell_back(&https, hop, "try HTTPS first", &stop);
                Ok(())
            }
            other => other,
        }
    }

    /// A host checked from DNS up, once per trust; a failure is cached with its evidence.
    async fn check_host(&mut self, target: &Target, hop: Hop) -> Result<(), Stop> {
        let at = &target.authority;
        if let Some(done) = self.checked.get(target) {
            return match done {
                Ok(()) => Ok(()),
                Err(earlier) => {
                    let earlier = earlier.clone();
                    let detail = format!("failed before at {}: {}", earlier.step, earlier.detail);
                    self.path.record(hop, at, "host", false, detail, None);
                    let layer = earlier.mechanism_or_layer();
                    Err(Stop::new(hop, at, layer, earlier.step, earlier.detail))
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
                    f.layer,
                    f.step,
                    f.detail.clone(),
                ))
            }
            (Some(f), _) => Err(Stop::new(hop, at, f.layer, f.step, f.detail.clone())),
        };
        self.hosts.push(check);
        self.checked.insert(target.clone(), result.clone());
        result
    }

    /// Fetch one blob on the first host that opens it: fully (verified) or its first bytes.
    async fn blob(&mut self, kind: BlobKind, desc: &Descriptor, full: bool) -> Result<(), Stop> {
        let started = Instant::now();
        let (_, response, at) = self
            .open_anywhere(Fetch::Blob { desc, range: !full })
            .await?;
        let via = self.chain.clone();
        let idle = self.settings.timeouts.http;
        let result = if full {
            let meter = self.meter(Hop::Blob, &at, Some(desc.size));
            verify(response.body, desc, None, idle, &meter).await
        } else {
            let status = response.status;
            let meter = self.meter(Hop::Blob, &at, None);
            read_prefix(response.body, RANGE_BYTES, idle, &meter)
                .await
                .map(|bytes| format!("{status}: read the first {bytes} bytes"))
        };
        self.finish_blob(Fetched {
            kind,
            desc: desc.clone(),
            served_by: at,
            via,
            verified: full,
            result,
            elapsed: started.elapsed(),
        })
    }

    fn finish_blob(&mut self, fetched: Fetched) -> Result<(), Stop> {
        let Fetched {
            kind,
            desc,
            served_by,
            via: chain,
            verified,
            result,
            elapsed,
        } = fetched;
        let ok = result.is_ok();
        let detail = match &result {
            Ok(d) | Err(d) => d.clone(),
        };
        let step = format!("{} {}", kind.as_str(), short(&desc.digest));
        let shown = format!("{detail}{}", via(&chain));
        self.path
            .record(Hop::Blob, &served_by, &step, ok, shown, Some(elapsed));
        self.blobs.push(Blob {
            kind,
            digest: desc.digest.clone(),
            size: desc.size,
            served_by: served_by.clone(),
            via: if chain.len() > 1 { chain } else { vec![] },
            verified: ok && verified,
            detail: detail.clone(),
            elapsed,
        });
        if ok {
            Ok(())
        } else {
            // Content that does not arrive whole and verified is the blob hop's failure.
            Err(Stop::new(Hop::Blob, &served_by, Layer::Blob, step, detail))
        }
    }

    /// `--full`: open every layer in order (host checks and redirects), then download and
    /// verify them in parallel, each hashed on its own task.
    async fn download_layers(&mut self, layers: &[Descriptor]) -> Result<(), Stop> {
        let progress = super::progress::Bars::new(self.settings.progress);
        let mut set = tokio::task::JoinSet::new();
        let semaphore = Arc::new(tokio::sync::Semaphore::new(self.settings.parallel.max(1)));
        let idle = self.settings.timeouts.http;
        let mut opened = Ok(());
        for (index, desc) in layers.iter().enumerate() {
            // The semaphore is never closed, so acquiring only waits.
            let Ok(permit) = semaphore.clone().acquire_owned().await else {
                break;
            };
            let started = Instant::now();
            let (_, response, served_by) =
                match self.open_anywhere(Fetch::Blob { desc, range: false }).await {
                    Ok(opened) => opened,
                    Err(stop) => {
                        opened = Err(stop);
                        break;
                    }
                };
            let via = self.chain.clone();
            let bar = progress.bar(desc);
            let meter = self.meter(Hop::Blob, &served_by, Some(desc.size));
            let desc = desc.clone();
            set.spawn(async move {
                let result = verify(response.body, &desc, Some(&bar), idle, &meter).await;
                bar.finish_and_clear();
                drop(permit);
                let elapsed = started.elapsed();
                let fetched = Fetched {
                    kind: BlobKind::Layer,
                    desc,
                    served_by,
                    via,
                    verified: true,
                    result,
                    elapsed,
                };
                (index, fetched)
            });
        }
        let mut done: Vec<_> = set.join_all().await;
        done.sort_by_key(|(index, _)| *index);
        let mut outcome = Ok(());
        for (_, fetched) in done {
            if let Err(stop) = self.finish_blob(fetched) {
                outcome = outcome.and(Err(stop));
            }
        }
        outcome.and(opened)
    }

    fn fell_back(&mut self, endpoint: &Authority, hop: Hop, what: &str, stop: &Stop) {
        self.fallbacks.push(Fallback {
            endpoint: endpoint.clone(),
            hop,
            what: what.to_string(),
            stop: stop.clone(),
        });
    }

    /// `scheme://host/v2/<repository>/<kind>/<reference>`, with `?ns=` for a mirror as
    /// containerd adds it (`dockerBase.request`, `addNamespace`).
    fn api_url(&self, i: usize, kind: &str, reference: &str) -> Result<Url, Stop> {
        let repository = &self.settings.image.repository;
        self.base_url(i, &format!("/{repository}/{kind}/{reference}"))
    }

    fn base_url(&self, i: usize, rest: &str) -> Result<Url, Stop> {
        let endpoint = &self.endpoints[i].config;
        let scheme = endpoint.scheme;
        let text = format!(
            "{}://{}{}{rest}",
            scheme.as_str(),
            endpoint.authority.for_url(scheme),
            endpoint.path
        );
        let mut url = Url::parse(&text).map_err(|e| {
            let hop = self.endpoints[i].hop();
            let detail =
                format!("hosts.toml gives this host a path that makes no URL ({text}): {e}");
            Stop::new(hop, &endpoint.authority, Layer::Other, "hosts.toml", detail)
        })?;
        let registry = &self.settings.image.registry;
        if rest != "/" && Authority::parse(registry, 443).as_ref() != Some(&endpoint.authority) {
            url.query_pairs_mut().append_pair("ns", registry);
        }
        Ok(url)
    }

    /// A new body to read from `at`, counted from now.
    fn meter(&mut self, hop: Hop, at: &Authority, total: Option<u64>) -> Arc<Meter> {
        let meter = Meter::start(hop, at, total);
        self.meters.push(meter.clone());
        meter
    }

    async fn read_limited(
        &mut self,
        hop: Hop,
        at: &Authority,
        body: N::Body,
        limit: usize,
    ) -> Result<Vec<u8>, String> {
        let meter = self.meter(hop, at, None);
        read_limited(body, limit, self.settings.timeouts.http, &meter).await
    }
}

/// Read a whole body of at most `limit` bytes, each chunk within `idle`.
pub async fn read_limited<B: Body>(
    mut body: B,
    limit: usize,
    idle: Duration,
    meter: &Meter,
) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let result = loop {
        match next_chunk(&mut body, idle, meter).await {
            Err(e) => break Err(e),
            Ok(None) => break Ok(out),
            Ok(Some(chunk)) => {
                if out.len() + chunk.len() > limit {
                    break Err(format!("the body is larger than the {limit}-byte limit"));
                }
                out.extend_from_slice(&chunk);
            }
        }
    };
    meter.finish();
    result
}

/// Read the first `limit` bytes of a body (or all of a shorter one), each chunk within `idle`.
async fn read_prefix<B: Body>(
    mut body: B,
    limit: usize,
    idle: Duration,
    meter: &Meter,
) -> Result<usize, String> {
    let mut seen = 0;
    let result = loop {
        if seen >= limit {
            break Ok(limit);
        }
        match next_chunk(&mut body, idle, meter).await {
            Err(e) => break Err(e),
            Ok(None) => break Ok(seen),
            Ok(Some(chunk)) => seen += chunk.len(),
        }
    };
    meter.finish();
    result
}

/// Download a blob, checking size and digest as it streams, each chunk within `idle`.
async fn verify<B: Body>(
    mut body: B,
    desc: &Descriptor,
    bar: Option<&indicatif::ProgressBar>,
    idle: Duration,
    meter: &Meter,
) -> Result<String, String> {
    let started = Instant::now();
    let mut check = BlobCheck::new(desc);
    let fed = loop {
        let chunk = match next_chunk(&mut body, idle, meter).await {
            Err(e) => break Err(e),
            Ok(None) => break Ok(()),
            Ok(Some(chunk)) => chunk,
        };
        if let Err(e) = check.feed(&chunk) {
            break Err(e);
        }
        if let Some(bar) = bar {
            bar.inc(chunk.len() as u64);
        }
    };
    meter.finish();
    fed?;
    let total = check.finish()?;
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    Ok(format!(
        "{total} bytes verified sha256 ({:.1} MB/s)",
        total as f64 / secs / 1e6
    ))
}

/// ` (via a → b → c)` for a request that crossed more than one host.
fn via(chain: &[Authority]) -> String {
    if chain.len() < 2 {
        return String::new();
    }
    let hosts: Vec<String> = chain.iter().map(ToString::to_string).collect();
    format!(" (via {})", hosts.join(" → "))
}

fn short(digest: &Digest) -> String {
    digest.as_str().chars().take(19).collect()
}

#[cfg(test)]
mod tests;

/// The layer of a request that got no answer from a host it had connected to: silence is a
/// path that drops (`route`, as a dial timeout is), a reset is the peer refusing; a broken,
/// oversized or unreadable answer is the host's own fault (`other`, with what broke).
fn transport_layer(transport: &Transport) -> Layer {
    match transport {
        Transport::TimedOut(_) => Layer::Route,
        Transport::Reset(_) => Layer::Refused,
        Transport::Closed(_)
        | Transport::HeadersTooLarge(_)
        | Transport::Malformed(_)
        | Transport::Tls(_)
        | Transport::Unchecked(_)
        | Transport::Other(_) => Layer::Other,
    }
}
