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
//!
//! Each job has its module: `host_order` (which hosts are asked, and what a miss means),
//! `auth` (the registry's token protocol), `http` (one request through its redirects, proxy
//! and Authorization scoping), `http_fallback` (containerd's HTTPS-first try), `host_cache`
//! (one check per host), `blobs` (reading and verifying content) and `urls`.

mod auth;
mod blobs;
mod host_cache;
mod host_order;
mod http;
mod http_fallback;
#[cfg(test)]
mod scripted;
mod urls;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use super::authority::Authority;
use super::body::Meter;
use super::check::{HostCheck, Timeouts};
use super::evidence::{ConfigProblem, Evidence};
use super::hosts_toml::Endpoint;
use super::net::{Network, Target, TrustId};
use super::observed::body::BodyProblem;
use super::oci::{self, Manifest, Platform};
use super::path::{PathHop, PullPath};
use super::proxy::ProxyConfig;
use super::step::Step;
use super::stop::Stop;
use crate::credentials::Credentials;
use crate::image_ref::{Digest, ImageRef};
use crate::vocab::Hop;

use super::body::read_limited;
use super::step::BlobKind;

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
    /// Layers downloaded at once with `full`; `None`: every layer at once.
    pub parallel: Option<usize>,
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

/// One blob fetched.
#[derive(Debug, Clone)]
pub struct Blob {
    pub kind: BlobKind,
    pub digest: Digest,
    pub size: u64,
    /// The host that served it, after redirects.
    pub served_by: Authority,
    /// Every host the request crossed to get there, when it was redirected.
    pub redirects: Vec<Authority>,
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
    /// What containerd does after this failure.
    pub then: FallbackTo,
}

/// Where containerd goes after a failure it moves past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FallbackTo {
    /// The next host of the registry's hosts (a mirror failed; the registry is next).
    NextHost,
    /// The same host again in plain HTTP (1.7+'s `NewHTTPFallback`, after HTTPS met an HTTP
    /// answer).
    PlainHttp,
}

/// Everything a walk observed.
#[derive(Debug)]
pub struct WalkRecord {
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
    path: PullPath,
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
            path: PullPath::default(),
            chain: Vec::new(),
            blobs: Vec::new(),
            fallbacks: Vec::new(),
            warnings: Vec::new(),
            meters: Vec::new(),
        }
    }

    pub async fn run(mut self) -> WalkRecord {
        let deadline = self.settings.deadline;
        let result = match tokio::time::timeout(deadline, self.pull()).await {
            Ok(result) => result,
            Err(_) => Err(self.deadline_passed(deadline)),
        };
        WalkRecord {
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
        let reading = self.meters.iter().rev().find(|m| m.active());
        let (hop, authority) = match (reading, self.path.last()) {
            (Some(meter), _) => (meter.hop, meter.authority.clone()),
            (None, Some((hop, authority))) => (hop, authority.clone()),
            (None, None) => (Hop::Registry, self.registry()),
        };
        let evidence = Evidence::Deadline {
            after: deadline,
            reading: reading.map(|meter| meter.trickle()),
        };
        self.fail(hop, &authority, Step::Deadline, evidence, None)
    }

    /// A step that failed: recorded on the path once, in its evidence's words, and returned as
    /// the walk's stop.
    fn fail(
        &mut self,
        hop: Hop,
        at: &Authority,
        step: Step,
        evidence: impl Into<Evidence>,
        elapsed: Option<Duration>,
    ) -> Stop {
        let stop = Stop::new(hop, at, step, evidence);
        let detail = stop.evidence.to_string();
        self.path
            .record(hop, at, &stop.step, false, detail, elapsed);
        stop
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
    fn no_host(&self, problem: ConfigProblem) -> Stop {
        Stop::new(
            Hop::Registry,
            &self.registry(),
            Step::HostsToml,
            Evidence::Config(problem),
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
                    Err(problem) => {
                        return Err(self.fail(hop, &authority, Step::Platform, problem, None));
                    }
                };
                let chosen = format!("{wanted} → {}", child.digest);
                self.path
                    .record(hop, &authority, Step::Platform, true, chosen, None);
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
                Step::Platform,
                oci::ManifestProblem::NestedIndex,
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

    fn fell_back(
        &mut self,
        endpoint: &Authority,
        hop: Hop,
        what: &str,
        stop: &Stop,
        then: FallbackTo,
    ) {
        self.fallbacks.push(Fallback {
            endpoint: endpoint.clone(),
            hop,
            what: what.to_string(),
            stop: stop.clone(),
            then,
        });
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
    ) -> Result<Vec<u8>, BodyProblem> {
        let meter = self.meter(hop, at, None);
        read_limited(body, limit, self.settings.timeouts.http, &meter).await
    }
}

#[cfg(test)]
mod tests {
    use super::scripted::*;
    use super::*;
    use crate::probe::evidence::Evidence;
    use crate::probe::oci::sha256_digest;
    use crate::vocab::Layer;

    #[tokio::test]
    async fn a_healthy_pull_keeps_the_authorization_on_the_registry() {
        let image = Image::new();
        let net = registry(Scripted::default(), "r.test", "store.test", &image);
        let (outcome, net) = walk(net, vec![endpoint("r.test", true)], true).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);
        assert_eq!(outcome.blobs.len(), 3);
        assert!(
            outcome
                .blobs
                .iter()
                .all(|b| b.verified && b.served_by.host == "store.test")
        );
        let with_auth = net.authorization_sent_to();
        assert!(
            with_auth.iter().all(|h| h == "r.test" || h == "auth.test"),
            "{with_auth:?}"
        );
        assert!(with_auth.contains(&"r.test".to_string()));
        let store_hops: Vec<&PathHop> =
            outcome.path.iter().filter(|h| h.hop == Hop::Blob).collect();
        assert!(
            store_hops
                .iter()
                .all(|h| h.steps.iter().all(|s| !s.detail.contains("SECRET")))
        );
    }

    #[tokio::test]
    async fn an_index_gives_the_nodes_platform_and_never_an_attestation() {
        let image = Image::new();
        let child = sha256_digest(&image.manifest);
        let index = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[
            {{"digest":"{}","size":5,"platform":{{"os":"unknown","architecture":"unknown"}}}},
            {{"digest":"{child}","size":{},"platform":{{"os":"linux","architecture":"amd64"}}}}]}}"#,
            sha256_digest(b"attestation"),
            image.manifest.len()
        );
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply("r.test/v2/team/app/manifests/v1", ok(index.clone()))
            .reply(
                &format!("r.test/v2/team/app/manifests/{child}"),
                ok(image.manifest.clone()),
            );
        let (outcome, _) = walk(net, vec![endpoint("r.test", true)], false).await;
        assert!(outcome.result.is_ok(), "{:?}", outcome.result);

        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply("r.test/v2/team/app/manifests/v1", ok(index));
        let mut s = settings(false);
        s.platform = Platform::parse("linux/arm64").expect("platform");
        let outcome = Walk::new(s, vec![endpoint("r.test", true)], Arc::new(net))
            .run()
            .await;
        let s = stop(&outcome);
        assert_eq!(s.layer, Layer::Platform);
        let Evidence::Manifest(problem) = &*s.evidence else {
            panic!("a manifest problem: {:?}", s.evidence)
        };
        let oci::ManifestProblem::NoPlatform { wanted, offered } = &**problem else {
            panic!("no platform: {problem:?}")
        };
        assert_eq!(wanted.to_string(), "linux/arm64");
        // The attestation entry (`unknown/unknown`) is not offered.
        let offered: Vec<String> = offered.iter().map(ToString::to_string).collect();
        assert_eq!(offered, ["linux/amd64"]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_deadline_on_a_blob_hop_is_a_blob_failure() {
        let image = Image::new();
        let layer = sha256_digest(&image.layers[1]);
        let net = registry(Scripted::default(), "r.test", "store.test", &image)
            .reply(&format!("store.test/r.test/{layer}"), Reply::Silent);
        let net = Arc::new(net);
        let mut s = settings(false);
        s.deadline = Duration::from_secs(3);
        s.timeouts.http = Duration::from_secs(30);
        let outcome = Walk::new(s, vec![endpoint("r.test", true)], net)
            .run()
            .await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.mechanism),
            (Hop::Blob, Layer::Blob, Some(Layer::Other))
        );
        assert!(
            matches!(
                &*s.evidence,
                Evidence::Deadline { after, reading: None } if *after == Duration::from_secs(3)
            ),
            "{:?}",
            s.evidence
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickling_layer_is_named_with_its_rate_when_the_deadline_ends_it() {
        // One byte a second never trips the idle timeout (5 s): the total deadline ends the walk,
        // and the stop names the trickling host, what it sent and what containerd would do.
        let image = Image::new();
        let layer = sha256_digest(&image.layers[1]);
        let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
            &format!("store.test/r.test/{layer}"),
            Reply::Trickle {
                status: 200,
                bytes: 3000,
            },
        );
        let mut s = settings(true);
        s.deadline = Duration::from_secs(30);
        let outcome = Walk::new(s, vec![endpoint("r.test", true)], Arc::new(net))
            .run()
            .await;
        let s = stop(&outcome);
        assert_eq!(
            (s.hop, s.layer, s.authority.host.as_str()),
            (Hop::Blob, Layer::Blob, "store.test"),
            "{}",
            s.evidence
        );
        let Evidence::Deadline {
            after,
            reading: Some(trickle),
        } = &*s.evidence
        else {
            panic!(
                "the deadline, with the body still arriving: {:?}",
                s.evidence
            );
        };
        assert_eq!(*after, Duration::from_secs(30));
        assert_eq!(
            (trickle.authority.host.as_str(), trickle.total),
            ("store.test", Some(3000))
        );
        // One byte a second: what arrived before the deadline, at about that rate.
        assert!((25..=31).contains(&trickle.bytes), "{trickle:?}");
        assert!((0.8..=1.2).contains(&trickle.rate()), "{trickle:?}");
        assert!(
            s.evidence
                .to_string()
                .contains("image_pull_progress_timeout"),
            "{}",
            s.evidence
        );
    }
}
