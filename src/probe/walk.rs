//! The pull, walked in the runtime's order: `/v2/` and its challenge, the token from the realm
//! host, the manifest (and the platform's manifest from an index), the config blob, then every
//! layer — following redirects by hand, checking each new host from DNS up, and sending the
//! registry's Authorization header to the registry's own host only.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::header::{ACCEPT, AUTHORIZATION, HeaderMap, LOCATION, RANGE, WWW_AUTHENTICATE};
use reqwest::{Client, StatusCode};
use rustls::ClientConfig;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use url::Url;

use super::creds::Credentials;
use super::host::{self, HostCheck, Timeouts};
use super::resolv::ResolverConfig;
use super::tls::Trust;
use crate::image_ref::{ImageRef, hex};
use crate::report::{BlobReport, HopReport, StepReport};
use crate::vocab::{Hop, Layer};

/// Limits on what a registry may send us.
pub const MAX_MANIFEST: usize = 4 * 1024 * 1024;
pub const MAX_TOKEN: usize = 1024 * 1024;
pub const MAX_CONFIG: usize = 16 * 1024 * 1024;
pub const MAX_ERROR_BODY: usize = 64 * 1024;
pub const MAX_REDIRECTS: usize = 5;
/// How much of each layer a quick probe reads.
pub const RANGE_BYTES: u64 = 1024;

const MANIFEST_TYPES: &str = "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json";

/// The first failure, which decides the verdict.
#[derive(Debug, Clone)]
pub struct Stopped {
    pub hop: Hop,
    pub host: String,
    pub layer: Layer,
    pub detail: String,
    /// On the blob hop: how it failed (dns, route, tls, a status …), the layer being `blob`.
    pub mechanism: Option<Layer>,
}

pub struct Settings {
    pub image: ImageRef,
    pub platform: Platform,
    pub credentials: Option<Credentials>,
    pub timeouts: Timeouts,
    pub full: bool,
    pub parallel: usize,
    pub progress: bool,
    /// containerd's mirrors for this registry (`host[:port]`), tried in order before it.
    pub mirrors: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Platform {
    pub os: String,
    pub architecture: String,
    pub variant: Option<String>,
}

impl Platform {
    /// This machine's platform, in OCI words.
    pub fn host() -> Platform {
        let architecture = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            "powerpc64" => "ppc64le",
            other => other,
        };
        Platform {
            os: "linux".into(),
            architecture: architecture.into(),
            variant: None,
        }
    }

    /// `os/arch[/variant]`.
    pub fn parse(text: &str) -> Option<Platform> {
        let mut parts = text.split('/');
        let os = parts.next().filter(|s| !s.is_empty())?;
        let architecture = parts.next().filter(|s| !s.is_empty())?;
        let variant = parts.next().map(String::from);
        parts.next().is_none().then(|| Platform {
            os: os.into(),
            architecture: architecture.into(),
            variant,
        })
    }

    fn matches(&self, p: &PlatformJson) -> bool {
        p.os == self.os
            && p.architecture == self.architecture
            && (self.variant.is_none() || p.variant == self.variant)
    }
}

impl std::fmt::Display for Platform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.os, self.architecture)?;
        if let Some(v) = &self.variant {
            write!(f, "/{v}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Descriptor {
    #[serde(rename = "mediaType", default)]
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default)]
    pub platform: Option<PlatformJson>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct PlatformJson {
    #[serde(default)]
    pub os: String,
    #[serde(default)]
    pub architecture: String,
    #[serde(default)]
    pub variant: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ManifestJson {
    #[serde(rename = "mediaType", default)]
    media_type: String,
    #[serde(default)]
    manifests: Option<Vec<Descriptor>>,
    #[serde(default)]
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Vec<Descriptor>,
}

/// The state of one walk.
pub struct Walk {
    settings: Settings,
    resolver: ResolverConfig,
    trust: Trust,
    tls: Arc<ClientConfig>,
    /// The API host of the endpoint being walked: a mirror, then the registry.
    registry: String,
    /// `registry` for the registry itself, `mirror` for a mirror.
    api_hop: Hop,
    /// `?ns=<registry>` on a mirror's requests, as containerd sends it.
    namespace: String,
    checked: HashMap<String, (HostCheck, Option<Client>)>,
    pub path: Vec<HopReport>,
    pub blobs: Vec<BlobReport>,
    pub stopped: Option<Stopped>,
    /// Mirrors that failed before the pull fell back to the next endpoint.
    pub fallbacks: Vec<(String, Stopped)>,
}

type Step<T> = Result<T, ()>;

impl Walk {
    pub fn new(
        settings: Settings,
        resolver: ResolverConfig,
        trust: Trust,
        tls: ClientConfig,
    ) -> Walk {
        let registry = settings.image.api_host().to_string();
        Walk {
            settings,
            resolver,
            trust,
            tls: Arc::new(tls),
            registry,
            api_hop: Hop::Registry,
            namespace: String::new(),
            checked: HashMap::new(),
            path: Vec::new(),
            blobs: Vec::new(),
            stopped: None,
            fallbacks: Vec::new(),
        }
    }

    /// Every host checked, in the order the path first reached it.
    pub fn hosts(&self) -> Vec<HostCheck> {
        let mut hosts: Vec<(&String, &HostCheck)> = self
            .checked
            .iter()
            .map(|(authority, (h, _))| (authority, h))
            .collect();
        hosts.sort_by_key(|(authority, _)| {
            self.path
                .iter()
                .position(|p| &p.host == *authority)
                .unwrap_or(usize::MAX)
        });
        hosts.into_iter().map(|(_, h)| h.clone()).collect()
    }

    /// Walk the pull; the outcome is in `self.stopped` (None: every step passed). In
    /// containerd's order: each mirror of hosts.toml, then the registry; a failing endpoint
    /// sends the pull on to the next, and the last one's failure is the pull's.
    pub async fn run(&mut self) {
        let registry = self.settings.image.api_host().to_string();
        let mut endpoints: Vec<(String, Hop)> = self
            .settings
            .mirrors
            .iter()
            .map(|m| (m.clone(), Hop::Mirror))
            .collect();
        endpoints.push((registry.clone(), Hop::Registry));
        let last = endpoints.len() - 1;
        for (index, (endpoint, hop)) in endpoints.into_iter().enumerate() {
            self.namespace = if hop == Hop::Mirror {
                format!("?ns={}", self.settings.image.registry)
            } else {
                String::new()
            };
            self.registry = endpoint.clone();
            self.api_hop = hop;
            self.stopped = None;
            if self.pull().await.is_ok() || index == last {
                return;
            }
            if let Some(stopped) = self.stopped.take() {
                self.fallbacks.push((endpoint, stopped));
            }
            // What a failed mirror fetched is not the pull's: the next endpoint starts over.
            self.blobs.clear();
        }
    }

    async fn pull(&mut self) -> Step<()> {
        let registry = self.registry.clone();
        self.host(&registry, self.api_hop).await?;
        let auth = self.authenticate().await?;
        let image = self.settings.image.clone();
        let (manifest, _) = self
            .manifest(&image.repository, image.reference(), auth.as_deref())
            .await?;
        let manifest = self
            .select_platform(manifest, &image.repository, auth.as_deref())
            .await?;
        let config = manifest.config.clone().ok_or_else(|| {
            self.stop(
                self.api_hop,
                &registry,
                Layer::Other,
                "the manifest has no config descriptor".into(),
            );
        })?;
        self.blob(&image.repository, &config, "config", true, auth.as_deref())
            .await?;
        let full = self.settings.full;
        if full {
            self.download_layers(&image.repository, &manifest.layers, auth.as_deref())
                .await?;
        } else {
            for layer in &manifest.layers {
                self.blob(&image.repository, layer, "layer", false, auth.as_deref())
                    .await?;
            }
        }
        Ok(())
    }

    /// Stop the walk at its first failure. Any failure on the blob hop is layer `blob`, with
    /// the failing mechanism kept beside it (shared/DESIGN.md): that rule lives here only.
    fn stop(&mut self, hop: Hop, host: &str, layer: Layer, detail: String) {
        if self.stopped.is_some() {
            return;
        }
        let (layer, mechanism) = match (hop, layer) {
            (Hop::Blob, Layer::Blob) => (Layer::Blob, Some(Layer::Other)),
            (Hop::Blob, mechanism) => (Layer::Blob, Some(mechanism)),
            (_, layer) => (layer, None),
        };
        self.stopped = Some(Stopped {
            hop,
            host: host.to_string(),
            layer,
            detail,
            mechanism,
        });
    }

    /// Record a failed step and stop the walk there.
    fn fail<T>(
        &mut self,
        hop: Hop,
        host: &str,
        step: &str,
        layer: Layer,
        detail: String,
        elapsed: Option<Duration>,
    ) -> Step<T> {
        self.record(hop, host, step, false, detail.clone(), elapsed);
        self.stop(hop, host, layer, detail);
        Err(())
    }

    /// Record a step under `hop`/`host`, starting a new hop entry when the path moves on.
    fn record(
        &mut self,
        hop: Hop,
        host: &str,
        step: &str,
        ok: bool,
        detail: String,
        elapsed: Option<Duration>,
    ) {
        let same = self
            .path
            .last()
            .is_some_and(|h| h.hop == hop && h.host == host);
        if !same {
            self.path.push(HopReport {
                hop,
                host: host.to_string(),
                steps: vec![],
            });
        }
        if let Some(last) = self.path.last_mut() {
            last.steps.push(StepReport {
                step: step.to_string(),
                ok,
                detail,
                elapsed_ms: elapsed.map(|d| d.as_millis() as u64),
            });
        }
    }

    /// Check a host from DNS up once; return an HTTP client pinned to the address that worked.
    async fn host(&mut self, authority: &str, hop: Hop) -> Step<Client> {
        if let Some((check, client)) = self.checked.get(authority) {
            return match (client, &check.failure) {
                (Some(c), None) => Ok(c.clone()),
                _ => Err(()),
            };
        }
        let (name, port) = split_authority(authority);
        let check = host::check(
            &name,
            port,
            hop,
            &self.resolver,
            &self.trust,
            self.settings.timeouts,
        )
        .await;
        self.record_host(authority, &check);
        if let Some(f) = &check.failure {
            let (layer, detail) = (f.layer, f.detail.clone());
            self.checked.insert(authority.to_string(), (check, None));
            self.stop(hop, authority, layer, detail);
            return Err(());
        }
        let client = self.client(&name, &check);
        match client {
            Ok(client) => {
                self.checked
                    .insert(authority.to_string(), (check, Some(client.clone())));
                Ok(client)
            }
            Err(e) => {
                self.checked.insert(authority.to_string(), (check, None));
                self.stop(
                    hop,
                    authority,
                    Layer::Other,
                    format!("cannot build an HTTP client: {e}"),
                );
                Err(())
            }
        }
    }

    fn record_host(&mut self, authority: &str, check: &HostCheck) {
        let (hop, host) = (check.hop, authority.to_string());
        let dns = &check.dns;
        let dns_ok = !dns.addresses.is_empty();
        let dns_detail = match (dns.failure(), dns.source) {
            (Some(why), _) => why,
            (None, "ip-literal") => "IP literal, no lookup".into(),
            (None, source) => {
                let scope = |a: &std::net::IpAddr| {
                    if super::dns::is_private(*a) {
                        "private"
                    } else {
                        "public"
                    }
                };
                let mut s = dns
                    .addresses
                    .iter()
                    .map(|a| format!("{a} ({})", scope(a)))
                    .collect::<Vec<_>>()
                    .join(", ");
                if !dns.cname_chain.is_empty() {
                    s.push_str(&format!(" via CNAME {}", dns.cname_chain.join(" → ")));
                }
                match (source, dns.answered_by) {
                    ("hosts-file", _) => s.push_str(" from /etc/hosts (hand fix)"),
                    (_, Some(server)) => s.push_str(&format!(" (answered by {server})")),
                    _ => {}
                }
                let public: Vec<String> = dns
                    .addresses
                    .iter()
                    .filter(|a| !super::dns::is_private(**a))
                    .map(ToString::to_string)
                    .collect();
                if !public.is_empty() && dns.cname_chain.iter().any(|c| c.contains("privatelink")) {
                    s.push_str(&format!("; public address {} behind a privatelink name: the private zone may not be linked", public.join(", ")));
                }
                s
            }
        };
        self.record(hop, &host, "dns", dns_ok, dns_detail, None);
        if !dns_ok {
            return;
        }
        if check.routes.is_empty() {
            return;
        }
        let route_ok = check.routes.iter().any(|r| r.has_route());
        let detail = check
            .routes
            .iter()
            .map(|r| r.describe())
            .collect::<Vec<_>>()
            .join("; ");
        self.record(hop, &host, "route", route_ok, detail, None);
        if !route_ok || check.connect.is_empty() {
            return;
        }
        let connected = check.address.is_some();
        let detail = match (&check.address, &check.failure) {
            (Some(a), _) => {
                let ms = check
                    .connect
                    .iter()
                    .find(|c| c.address == *a)
                    .map_or(0, |c| c.elapsed_ms);
                format!("{a} in {ms} ms")
            }
            (None, Some(f)) => f.detail.clone(),
            (None, None) => String::new(),
        };
        self.record(hop, &host, "connect", connected, detail, None);
        if let Some(tls) = &check.tls {
            let detail = match (&tls.problem, tls.chain.first()) {
                (Some(p), _) => p.clone(),
                (None, Some(leaf)) => format!(
                    "{} issued by {}, valid until {}",
                    leaf.names.join(", "),
                    leaf.issuer,
                    leaf.not_after
                ),
                (None, None) => "handshake complete".into(),
            };
            self.record(
                hop,
                &host,
                "tls",
                tls.ok,
                detail,
                Some(Duration::from_millis(tls.elapsed_ms)),
            );
        }
    }

    fn client(&self, name: &str, check: &HostCheck) -> reqwest::Result<Client> {
        let mut builder = Client::builder()
            .tls_backend_preconfigured((*self.tls).clone())
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .http1_only()
            .connect_timeout(self.settings.timeouts.connect)
            .pool_max_idle_per_host(16)
            .user_agent(concat!("pullpath/", env!("CARGO_PKG_VERSION")));
        if let Some(address) = check.address
            && name.parse::<std::net::IpAddr>().is_err()
        {
            // Requests go exactly to the address this check proved, not a fresh lookup's.
            builder = builder.resolve(name, address);
        }
        builder.build()
    }

    /// Send with the HTTP timeout; a transport failure stops the walk on `hop`.
    async fn send(
        &mut self,
        hop: Hop,
        host: &str,
        request: reqwest::RequestBuilder,
    ) -> Step<reqwest::Response> {
        let timeout = self.settings.timeouts.http;
        match tokio::time::timeout(timeout, request.send()).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(e)) => {
                let layer = if e.is_timeout() {
                    Layer::Route
                } else {
                    Layer::Refused
                };
                let detail = format!("request failed: {}", error_chain(&e));
                self.fail(hop, host, "http", layer, detail, None)
            }
            Err(_) => {
                let detail = format!("no response headers within {} ms", timeout.as_millis());
                self.fail(hop, host, "http", Layer::Route, detail, None)
            }
        }
    }

    /// `GET /v2/` and the challenge: returns the Authorization value for registry requests.
    async fn authenticate(&mut self) -> Step<Option<String>> {
        let registry = self.registry.clone();
        let client = self.host(&registry, self.api_hop).await?;
        let started = Instant::now();
        let response = self
            .send(
                self.api_hop,
                &registry,
                client.get(format!("https://{registry}/v2/")),
            )
            .await?;
        let status = response.status();
        let challenge = response
            .headers()
            .get(WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let _ = read_limited(response, MAX_ERROR_BODY).await;
        match (status, challenge) {
            (s, _) if s.is_success() => {
                self.record(
                    self.api_hop,
                    &registry,
                    "GET /v2/",
                    true,
                    format!("{s}: no authentication required"),
                    Some(started.elapsed()),
                );
                Ok(None)
            }
            (StatusCode::UNAUTHORIZED, Some(challenge)) => {
                let parsed = Challenge::parse(&challenge);
                self.record(
                    self.api_hop,
                    &registry,
                    "GET /v2/",
                    true,
                    format!("401 challenge: {}", redact_challenge(&challenge)),
                    Some(started.elapsed()),
                );
                match parsed {
                    Challenge::Basic => match self.settings.credentials.clone() {
                        Some(c) => Ok(Some(c.basic())),
                        None => {
                            let detail = "the registry wants Basic credentials and none were given (--username/--docker-config)".to_string();
                            self.stop(self.api_hop, &registry, Layer::Auth, detail);
                            Err(())
                        }
                    },
                    Challenge::Bearer { realm, service } => {
                        self.token(&realm, service.as_deref()).await.map(Some)
                    }
                    Challenge::Unknown => {
                        self.stop(
                            self.api_hop,
                            &registry,
                            Layer::Other,
                            format!("unknown challenge {challenge:?}"),
                        );
                        Err(())
                    }
                }
            }
            (status, _) => {
                let layer = status_layer(status);
                let detail = format!("GET /v2/ answered {status}");
                self.fail(
                    self.api_hop,
                    &registry,
                    "GET /v2/",
                    layer,
                    detail,
                    Some(started.elapsed()),
                )
            }
        }
    }

    /// Fetch a token from the realm (itself a hop checked from DNS up).
    async fn token(&mut self, realm: &str, service: Option<&str>) -> Step<String> {
        let registry = self.registry.clone();
        let Ok(mut url) = Url::parse(realm) else {
            self.stop(
                Hop::Auth,
                &registry,
                Layer::Other,
                format!("the registry's token realm {realm:?} is not a URL"),
            );
            return Err(());
        };
        let realm_host = authority_of(&url);
        let client = self.host(&realm_host, Hop::Auth).await?;
        let scope = format!("repository:{}:pull", self.settings.image.repository);
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = service {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &scope);
        }
        let mut request = client.get(url.clone());
        let who = match &self.settings.credentials {
            Some(c) => {
                // The realm is where credentials are meant to go: the registry's challenge sent us.
                request = request.header(AUTHORIZATION, c.basic());
                format!("as {}", c.username)
            }
            None => "anonymously".to_string(),
        };
        let started = Instant::now();
        let response = self.send(Hop::Auth, &realm_host, request).await?;
        let status = response.status();
        let body = read_limited(response, MAX_TOKEN).await;
        let step = format!("token {scope}");
        if !status.is_success() {
            let layer = status_layer(status);
            let detail = format!(
                "{status} {who}: {}",
                error_summary(&body.unwrap_or_default())
            );
            return self.fail(
                Hop::Auth,
                &realm_host,
                &step,
                layer,
                detail,
                Some(started.elapsed()),
            );
        }
        let token = body
            .ok()
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .and_then(|v| {
                v.get("token")
                    .or(v.get("access_token"))
                    .and_then(|t| t.as_str())
                    .map(String::from)
            });
        let Some(token) = token else {
            let detail = format!("{status} {who} but no token in the answer");
            return self.fail(
                Hop::Auth,
                &realm_host,
                &step,
                Layer::Other,
                detail,
                Some(started.elapsed()),
            );
        };
        let granted = granted_actions(&token, &self.settings.image.repository);
        let detail = match &granted {
            Some(actions) if actions.is_empty() => format!(
                "{status} {who}: token grants nothing on {}",
                self.settings.image.repository
            ),
            Some(actions) => format!(
                "{status} {who}: token grants {} on {}",
                actions.join(","),
                self.settings.image.repository
            ),
            None => format!("{status} {who}: opaque token"),
        };
        self.record(
            Hop::Auth,
            &realm_host,
            &step,
            true,
            detail,
            Some(started.elapsed()),
        );
        Ok(format!("Bearer {token}"))
    }

    async fn manifest(
        &mut self,
        repository: &str,
        reference: &str,
        auth: Option<&str>,
    ) -> Step<(ManifestJson, String)> {
        let registry = self.registry.clone();
        let client = self.host(&registry, self.api_hop).await?;
        let mut request = client
            .get(format!(
                "https://{registry}/v2/{repository}/manifests/{reference}{}",
                self.namespace
            ))
            .header(ACCEPT, MANIFEST_TYPES);
        if let Some(auth) = auth {
            request = request.header(AUTHORIZATION, auth);
        }
        let started = Instant::now();
        let step = format!("manifest {reference}");
        let response = self.send(self.api_hop, &registry, request).await?;
        let status = response.status();
        let headers = response.headers().clone();
        if !status.is_success() {
            let body = read_limited(response, MAX_ERROR_BODY)
                .await
                .unwrap_or_default();
            let (layer, detail) = manifest_failure(status, &headers, &body, auth.is_some());
            let elapsed = Some(started.elapsed());
            return self.fail(self.api_hop, &registry, &step, layer, detail, elapsed);
        }
        let content_type = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("?")
            .to_string();
        let parsed = match read_limited(response, MAX_MANIFEST).await {
            Ok(body) => parse_manifest(&body, reference, &content_type),
            Err(e) => Err(e),
        };
        let elapsed = Some(started.elapsed());
        match parsed {
            Ok((manifest, digest, summary)) => {
                self.record(self.api_hop, &registry, &step, true, summary, elapsed);
                Ok((manifest, digest))
            }
            Err(detail) => self.fail(
                self.api_hop,
                &registry,
                &step,
                Layer::Other,
                detail,
                elapsed,
            ),
        }
    }

    async fn select_platform(
        &mut self,
        manifest: ManifestJson,
        repository: &str,
        auth: Option<&str>,
    ) -> Step<ManifestJson> {
        let Some(entries) = &manifest.manifests else {
            return Ok(manifest);
        };
        let registry = self.registry.clone();
        let wanted = self.settings.platform.clone();
        let Some(entry) = entries
            .iter()
            .find(|d| d.platform.as_ref().is_some_and(|p| wanted.matches(p)))
        else {
            let offered: Vec<String> = entries
                .iter()
                .filter_map(|d| d.platform.as_ref())
                .map(|p| {
                    format!(
                        "{}/{}{}",
                        p.os,
                        p.architecture,
                        p.variant
                            .as_ref()
                            .map(|v| format!("/{v}"))
                            .unwrap_or_default()
                    )
                })
                .collect();
            let detail = format!(
                "no manifest for {wanted} in the index; it offers {}",
                offered.join(", ")
            );
            return self.fail(
                self.api_hop,
                &registry,
                "platform",
                Layer::Platform,
                detail,
                None,
            );
        };
        let digest = entry.digest.clone();
        self.record(
            self.api_hop,
            &registry,
            "platform",
            true,
            format!("{wanted} → {digest}"),
            None,
        );
        let (child, _) = self.manifest(repository, &digest, auth).await?;
        Ok(child)
    }

    /// GET a blob through its redirects; returns the final response and the host that served it.
    async fn open_blob(
        &mut self,
        repository: &str,
        desc: &Descriptor,
        range: bool,
        auth: Option<&str>,
    ) -> Step<(reqwest::Response, String, Hop)> {
        let registry = self.registry.clone();
        let mut url = format!(
            "https://{registry}/v2/{repository}/blobs/{}{}",
            desc.digest, self.namespace
        );
        let mut authority = registry.clone();
        for _ in 0..=MAX_REDIRECTS {
            let hop = if authority == registry {
                self.api_hop
            } else {
                Hop::Blob
            };
            let client = self.host(&authority, hop).await?;
            let mut request = client.get(&url);
            // The registry's credential goes to the registry's own host and nowhere else.
            if let Some(auth) = auth
                && authority == registry
            {
                request = request.header(AUTHORIZATION, auth);
            }
            if range {
                request = request.header(RANGE, format!("bytes=0-{}", RANGE_BYTES - 1));
            }
            let response = self.send(Hop::Blob, &authority, request).await?;
            let status = response.status();
            if status.is_redirection() {
                let step = short(&desc.digest);
                let Some(next) = response
                    .headers()
                    .get(LOCATION)
                    .and_then(|l| l.to_str().ok())
                    .and_then(|l| Url::parse(&url).ok()?.join(l).ok())
                else {
                    let detail = format!("{status} without a usable Location");
                    return self.fail(Hop::Blob, &authority, &step, Layer::Other, detail, None);
                };
                if next.scheme() != "https" {
                    let detail = format!("redirected to non-HTTPS {}", redact_url(&next));
                    return self.fail(Hop::Blob, &authority, &step, Layer::Other, detail, None);
                }
                let next_authority = authority_of(&next);
                self.record(
                    Hop::Blob,
                    &authority,
                    &short(&desc.digest),
                    true,
                    format!("{status} → {}", redact_url(&next)),
                    None,
                );
                url = next.to_string();
                authority = next_authority;
                continue;
            }
            if !status.is_success() {
                let body = read_limited(response, MAX_ERROR_BODY)
                    .await
                    .unwrap_or_default();
                let detail = format!("{status}: {}", error_summary(&body));
                let step = short(&desc.digest);
                return self.fail(
                    Hop::Blob,
                    &authority,
                    &step,
                    status_layer(status),
                    detail,
                    None,
                );
            }
            return Ok((response, authority, hop));
        }
        let detail = format!("more than {MAX_REDIRECTS} redirects (a redirect loop)");
        self.fail(
            Hop::Blob,
            &authority,
            &short(&desc.digest),
            Layer::Other,
            detail,
            None,
        )
    }

    /// Fetch one blob: fully (verified) or its first bytes.
    async fn blob(
        &mut self,
        repository: &str,
        desc: &Descriptor,
        kind: &str,
        full: bool,
        auth: Option<&str>,
    ) -> Step<()> {
        let started = Instant::now();
        let (response, authority, _) = self.open_blob(repository, desc, !full, auth).await?;
        let status = response.status();
        let result = if full {
            verify_stream(response, desc, None, self.settings.timeouts.http).await
        } else {
            read_limited(response, RANGE_BYTES as usize)
                .await
                .map(|b| format!("{status}: read the first {} bytes", b.len()))
        };
        self.finish_blob(kind, desc, &authority, result, started.elapsed())
    }

    fn finish_blob(
        &mut self,
        kind: &str,
        desc: &Descriptor,
        authority: &str,
        result: Result<String, String>,
        elapsed: Duration,
    ) -> Step<()> {
        let ok = result.is_ok();
        let detail = match &result {
            Ok(d) | Err(d) => d.clone(),
        };
        self.record(
            Hop::Blob,
            authority,
            &format!("{kind} {}", short(&desc.digest)),
            ok,
            detail.clone(),
            Some(elapsed),
        );
        self.blobs.push(BlobReport {
            kind: kind.to_string(),
            digest: desc.digest.clone(),
            size: desc.size,
            host: authority.to_string(),
            verified: ok && (kind == "config" || self.settings.full),
            detail: detail.clone(),
            elapsed_ms: elapsed.as_millis() as u64,
        });
        if ok {
            Ok(())
        } else {
            // Content that does not verify is the blob hop's failure, mechanism `other`.
            self.stop(Hop::Blob, authority, Layer::Other, detail);
            Err(())
        }
    }

    /// `--full`: open every layer (redirects and host checks in order), then download and
    /// verify them in parallel, each hashed on its own task.
    async fn download_layers(
        &mut self,
        repository: &str,
        layers: &[Descriptor],
        auth: Option<&str>,
    ) -> Step<()> {
        let progress = super::progress::Bars::new(self.settings.progress);
        let mut set = tokio::task::JoinSet::new();
        let semaphore = Arc::new(tokio::sync::Semaphore::new(self.settings.parallel.max(1)));
        for (index, desc) in layers.iter().enumerate() {
            let permit = semaphore.clone().acquire_owned().await.map_err(|_| ())?;
            let started = Instant::now();
            let (response, authority, _) = self.open_blob(repository, desc, false, auth).await?;
            let bar = progress.bar(desc);
            let desc = desc.clone();
            let idle = self.settings.timeouts.http;
            set.spawn(async move {
                let result = verify_stream(response, &desc, Some(&bar), idle).await;
                bar.finish_and_clear();
                drop(permit);
                (index, desc, authority, result, started.elapsed())
            });
        }
        let mut done: Vec<_> = set.join_all().await;
        done.sort_by_key(|(index, ..)| *index);
        let mut outcome = Ok(());
        for (_, desc, authority, result, elapsed) in done {
            if self
                .finish_blob("layer", &desc, &authority, result, elapsed)
                .is_err()
            {
                outcome = Err(());
            }
        }
        outcome
    }
}

/// A manifest body → the manifest, its digest (checked when it was asked for by digest) and a
/// one-line summary for the path.
fn parse_manifest(
    body: &[u8],
    reference: &str,
    content_type: &str,
) -> Result<(ManifestJson, String, String), String> {
    let digest = format!("sha256:{}", hex(&Sha256::digest(body)));
    if reference.starts_with("sha256:") && reference != digest {
        return Err(format!(
            "manifest digest mismatch: asked {reference}, got {digest}"
        ));
    }
    let manifest: ManifestJson =
        serde_json::from_slice(body).map_err(|e| format!("the manifest is not valid JSON: {e}"))?;
    let media = if manifest.media_type.is_empty() {
        content_type
    } else {
        &manifest.media_type
    };
    let summary = match &manifest.manifests {
        Some(entries) => format!("index {media} {digest} ({} platforms)", entries.len()),
        None => format!(
            "manifest {media} {digest} ({} layers)",
            manifest.layers.len()
        ),
    };
    Ok((manifest, digest, summary))
}

/// Read the body, hashing as it streams; check size and digest. Memory stays flat whatever the
/// layer's size.
async fn verify_stream(
    mut response: reqwest::Response,
    desc: &Descriptor,
    bar: Option<&indicatif::ProgressBar>,
    idle: Duration,
) -> Result<String, String> {
    let started = Instant::now();
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    loop {
        let chunk = match tokio::time::timeout(idle, response.chunk()).await {
            Err(_) => {
                return Err(format!(
                    "stalled: no data for {} ms after {total} bytes",
                    idle.as_millis()
                ));
            }
            Ok(Err(e)) => {
                return Err(format!(
                    "download broke after {total} bytes: {}",
                    error_chain(&e)
                ));
            }
            Ok(Ok(None)) => break,
            Ok(Ok(Some(chunk))) => chunk,
        };
        total += chunk.len() as u64;
        if total > desc.size {
            return Err(format!(
                "more bytes than the manifest's size {}: the body does not match",
                desc.size
            ));
        }
        hasher.update(&chunk);
        if let Some(bar) = bar {
            bar.inc(chunk.len() as u64);
        }
    }
    if total != desc.size {
        return Err(format!(
            "got {total} bytes, the manifest says {}",
            desc.size
        ));
    }
    let digest = format!("sha256:{}", hex(&hasher.finalize()));
    if digest != desc.digest {
        return Err(format!(
            "digest mismatch: got {digest}, want {}",
            desc.digest
        ));
    }
    let secs = started.elapsed().as_secs_f64().max(1e-6);
    Ok(format!(
        "{total} bytes verified sha256 ({:.1} MB/s)",
        total as f64 / secs / 1e6
    ))
}

/// Read at most `limit` bytes; more is an error (a hostile or broken server).
pub async fn read_limited(
    mut response: reqwest::Response,
    limit: usize,
) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), response.chunk()).await {
            Err(_) => return Err(format!("body stalled after {} bytes", body.len())),
            Ok(Err(e)) => {
                return Err(format!(
                    "body broke after {} bytes: {}",
                    body.len(),
                    error_chain(&e)
                ));
            }
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(chunk))) => {
                if body.len() + chunk.len() > limit {
                    // A ranged read stops at its limit; anything else larger is refused.
                    let room = limit - body.len();
                    body.extend_from_slice(&chunk[..room]);
                    return if limit == RANGE_BYTES as usize {
                        Ok(body)
                    } else {
                        Err(format!("body larger than the {limit}-byte limit"))
                    };
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}

/// The registry's challenge.
#[derive(Debug, PartialEq, Eq)]
enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
    Unknown,
}

impl Challenge {
    fn parse(header: &str) -> Challenge {
        let (scheme, params) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
        let params = parse_params(params);
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => Challenge::Basic,
            "bearer" => match params.get("realm") {
                Some(realm) => Challenge::Bearer {
                    realm: realm.clone(),
                    service: params.get("service").cloned(),
                },
                None => Challenge::Unknown,
            },
            _ => Challenge::Unknown,
        }
    }
}

/// `realm="https://a/token",service="x",scope="repository:a:pull,push"` → map (commas in quotes kept).
fn parse_params(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (quoted[..end].to_string(), &quoted[end + 1..]),
                None => (quoted.to_string(), ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (after[..end].trim().to_string(), &after[end..]),
                None => (after.trim().to_string(), ""),
            }
        };
        out.insert(key, value);
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    out
}

fn redact_challenge(challenge: &str) -> String {
    challenge.chars().take(300).collect()
}

/// What a 4xx/5xx on the manifest means, with the registry's own error code as evidence.
fn manifest_failure(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    had_auth: bool,
) -> (Layer, String) {
    let challenge = headers
        .get(WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let summary = error_summary(body);
    match status {
        StatusCode::UNAUTHORIZED
            if challenge.contains("insufficient_scope")
                || (had_auth && summary.contains("insufficient")) =>
        {
            (
                Layer::Forbidden,
                format!(
                    "401 insufficient_scope: the token does not allow pulling this repository ({summary}); \
                 a registry that hides missing repositories answers the same, so an identity with wider rights tells them apart"
                ),
            )
        }
        StatusCode::UNAUTHORIZED => (Layer::Auth, format!("401: {summary}")),
        StatusCode::FORBIDDEN => (Layer::Forbidden, format!("403: {summary}")),
        StatusCode::NOT_FOUND => {
            let what = if summary.contains("NAME_UNKNOWN") {
                "the repository does not exist"
            } else {
                "the tag or digest does not exist"
            };
            (Layer::NotFound, format!("404 {what}: {summary}"))
        }
        StatusCode::TOO_MANY_REQUESTS => (Layer::RateLimit, format!("429: {summary}")),
        s => (Layer::Other, format!("{s}: {summary}")),
    }
}

fn status_layer(status: StatusCode) -> Layer {
    match status.as_u16() {
        401 => Layer::Auth,
        403 => Layer::Forbidden,
        404 => Layer::NotFound,
        407 => Layer::Proxy,
        429 => Layer::RateLimit,
        _ => Layer::Other,
    }
}

/// The registry's error envelope (`{"errors":[{"code","message"}]}`) in one line, or the start
/// of whatever else the body was.
fn error_summary(body: &[u8]) -> String {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(body)
        && let Some(errors) = value.get("errors").and_then(|e| e.as_array())
    {
        return errors
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e.get("code").and_then(|c| c.as_str()).unwrap_or(""),
                    e.get("message").and_then(|m| m.as_str()).unwrap_or("")
                )
                .trim()
                .to_string()
            })
            .collect::<Vec<_>>()
            .join("; ");
    }
    let text = String::from_utf8_lossy(body);
    let text: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    if text.is_empty() {
        "(empty body)".into()
    } else {
        text
    }
}

/// The `access` claim of a JWT, read without verifying (the registry verifies; we only report).
fn granted_actions(token: &str, repository: &str) -> Option<Vec<String>> {
    let payload = token.split('.').nth(1)?;
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?)
            .ok()?;
    let access = claims.get("access")?.as_array()?;
    let mut actions = Vec::new();
    for entry in access {
        if entry.get("name").and_then(|n| n.as_str()) == Some(repository) {
            actions.extend(
                entry
                    .get("actions")?
                    .as_array()?
                    .iter()
                    .filter_map(|a| a.as_str())
                    .map(String::from),
            );
        }
    }
    Some(actions)
}

/// `host[:port]` of a URL (the port only when it is not 443).
fn authority_of(url: &Url) -> String {
    let host = url.host_str().unwrap_or("");
    match url.port() {
        Some(p) if p != 443 => format!("{host}:{p}"),
        _ => host.to_string(),
    }
}

/// `host:port` → (host, port), IPv6 brackets kept off the name.
fn split_authority(authority: &str) -> (String, u16) {
    if let Some(rest) = authority.strip_prefix('[')
        && let Some((ip, port)) = rest.split_once(']')
    {
        return (
            ip.to_string(),
            port.trim_start_matches(':').parse().unwrap_or(443),
        );
    }
    match authority.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) && !port.is_empty() => {
            (host.to_string(), port.parse().unwrap_or(443))
        }
        _ => (authority.to_string(), 443),
    }
}

/// A URL without its query: signed URLs carry credentials there.
fn redact_url(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.query().is_some() {
        shown.set_query(Some("…"));
    }
    shown.to_string()
}

fn short(digest: &str) -> String {
    digest.chars().take(19).collect()
}

/// An error with its sources, as one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_parse_with_commas_inside_quotes() {
        let c = Challenge::parse(
            r#"Bearer realm="https://auth.example.test/token",service="registry.example.test",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(
            c,
            Challenge::Bearer {
                realm: "https://auth.example.test/token".into(),
                service: Some("registry.example.test".into())
            }
        );
        assert_eq!(Challenge::parse(r#"Basic realm="x""#), Challenge::Basic);
        assert_eq!(Challenge::parse("Negotiate"), Challenge::Unknown);
    }

    #[test]
    fn authorities_and_platforms() {
        assert_eq!(
            split_authority("r.example:5000"),
            ("r.example".into(), 5000)
        );
        assert_eq!(split_authority("[::1]:5000"), ("::1".into(), 5000));
        assert_eq!(split_authority("r.example"), ("r.example".into(), 443));
        assert_eq!(
            Platform::parse("linux/arm64/v8")
                .map(|p| p.to_string())
                .as_deref(),
            Some("linux/arm64/v8")
        );
        assert!(Platform::parse("linux").is_none());
    }

    #[test]
    fn token_claims_show_granted_actions() {
        let payload = URL_SAFE_NO_PAD
            .encode(r#"{"access":[{"type":"repository","name":"team-b/app","actions":[]}]}"#);
        assert_eq!(
            granted_actions(&format!("h.{payload}.s"), "team-b/app"),
            Some(vec![])
        );
        assert_eq!(granted_actions("opaque", "x"), None);
    }

    #[test]
    fn signed_url_queries_are_not_shown() {
        let url = Url::parse("https://store.example/blob?sig=SECRET&se=1").expect("url");
        assert!(!redact_url(&url).contains("SECRET"));
    }
}
