//! The walk's decisions against a scripted network, in memory (no socket is opened): every
//! fallback rule of containerd, the cached failure, credential scoping, redirects and their
//! limit, the deadline and stalled bodies (in tokio's paused time, so nothing sleeps).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::*;
use crate::probe::authority::Scheme;
use crate::probe::dns::Resolution;
use crate::probe::host::Failure;
use crate::probe::hosts_toml::Capabilities;
use crate::probe::net::Transport;
use crate::probe::oci::sha256_digest;

/// What a scripted host answers to one path.
#[derive(Clone)]
enum Reply {
    Answer {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Vec<u8>,
    },
    /// Headers, then a body that never sends another byte.
    StalledBody { status: u16, first: Vec<u8> },
    /// Never answers.
    Silent,
    /// The connection breaks: no response.
    Broken(Transport),
    /// Headers, then the body one byte a second, never ending before the walk's deadline.
    Trickle { status: u16, bytes: usize },
}

fn ok(body: impl Into<Vec<u8>>) -> Reply {
    Reply::Answer {
        status: 200,
        headers: vec![],
        body: body.into(),
    }
}

fn status(code: u16) -> Reply {
    Reply::Answer {
        status: code,
        headers: vec![],
        body: br#"{"errors":[{"code":"X","message":"scripted"}]}"#.to_vec(),
    }
}

fn redirect(to: &str) -> Reply {
    Reply::Answer {
        status: 307,
        headers: vec![("location", to.to_string())],
        body: vec![],
    }
}

fn challenge(realm: &str) -> Reply {
    Reply::Answer {
        status: 401,
        headers: vec![(
            "www-authenticate",
            format!(r#"Bearer realm="{realm}",service="svc""#),
        )],
        body: vec![],
    }
}

/// A request as sent: `host/path?query` and its headers.
type Sent = (String, Vec<(String, String)>);

/// A scripted network: hosts that pass or fail their check, and answers per `host/path`.
#[derive(Default)]
struct Scripted {
    broken_hosts: HashMap<String, (Layer, &'static str)>,
    /// Hosts whose `CONNECT` the proxy answers with this status.
    refused_tunnels: HashMap<String, u16>,
    /// Every host checked through a proxy, with the proxy.
    tunneled: Mutex<Vec<(String, String)>>,
    replies: HashMap<String, Reply>,
    /// Answers to a POST, by `host/path`, where they differ from the GET's.
    post_replies: HashMap<String, Reply>,
    /// Every form POSTed: `host/path` and the body.
    posted: Mutex<Vec<(String, String)>>,
    /// Hosts that answer a TLS handshake in plain HTTP (and pass a plain HTTP check).
    plain_http: Vec<String>,
    /// Every request sent: `host/path` and its headers.
    sent: Mutex<Vec<Sent>>,
    checked: Mutex<Vec<String>>,
}

impl Scripted {
    fn reply(mut self, at: &str, reply: Reply) -> Scripted {
        self.replies.insert(at.to_string(), reply);
        self
    }

    fn broken(mut self, host: &str, layer: Layer, step: &'static str) -> Scripted {
        self.broken_hosts.insert(host.to_string(), (layer, step));
        self
    }

    fn reply_to_post(mut self, at: &str, reply: Reply) -> Scripted {
        self.post_replies.insert(at.to_string(), reply);
        self
    }

    fn speaks_plain_http(mut self, host: &str) -> Scripted {
        self.plain_http.push(host.to_string());
        self
    }

    fn refuse_tunnel(mut self, host: &str, status: u16) -> Scripted {
        self.refused_tunnels.insert(host.to_string(), status);
        self
    }

    fn requests_to(&self, prefix: &str) -> Vec<String> {
        self.sent
            .lock()
            .expect("lock")
            .iter()
            .map(|(at, _)| at.clone())
            .filter(|at| at.starts_with(prefix))
            .collect()
    }

    fn authorization_sent_to(&self) -> Vec<String> {
        self.sent
            .lock()
            .expect("lock")
            .iter()
            .filter(|(_, h)| {
                h.iter()
                    .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
            })
            .map(|(at, _)| at.split('/').next().unwrap_or("").to_string())
            .collect()
    }
}

struct ScriptedBody {
    chunks: VecDeque<Bytes>,
    stall: bool,
    /// Each chunk comes this long after the one before.
    every: Option<Duration>,
}

impl Body for ScriptedBody {
    async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        if let Some(every) = self.every {
            tokio::time::sleep(every).await;
        }
        match self.chunks.pop_front() {
            Some(c) => Ok(Some(c)),
            None if self.stall => std::future::pending().await,
            None => Ok(None),
        }
    }
}

impl Network for Scripted {
    type Body = ScriptedBody;

    async fn check_host(&self, target: &Target, hop: Hop) -> HostCheck {
        let name = target.authority.to_string();
        if let Some(via) = &target.via {
            let proxy = Authority::of(via).expect("proxy").to_string();
            self.tunneled
                .lock()
                .expect("lock")
                .push((name.clone(), proxy.clone()));
            let mut check =
                crate::probe::host::unchecked(&target.authority.host, target.authority.port, hop);
            let status = self.refused_tunnels.get(&name).copied().unwrap_or(200);
            check.tunnel = Some(crate::probe::host::Tunnel {
                proxy: proxy.clone(),
                status: Some(status),
                detail: format!("{status}"),
            });
            if status != 200 {
                check.failure = Some(Failure {
                    layer: Layer::Proxy,
                    step: "CONNECT",
                    detail: format!("CONNECT {name} through {proxy}: {status}"),
                });
            }
            return check;
        }
        self.checked
            .lock()
            .expect("lock")
            .push(format!("{}://{name}", target.scheme.as_str()));
        let mut failure = self.broken_hosts.get(&name).map(|(layer, step)| Failure {
            layer: *layer,
            step,
            detail: format!("scripted {step} failure of {name}"),
        });
        let mut tls = None;
        if self.plain_http.contains(&name) && target.scheme == Scheme::Https {
            failure = Some(Failure {
                layer: Layer::Tls,
                step: "tls",
                detail: "the server answered TLS with plain HTTP".into(),
            });
            tls = Some(crate::probe::tls::TlsEvidence {
                server_name: target.authority.host.clone(),
                ok: false,
                problem: Some("plain HTTP".into()),
                chain: vec![],
                trusted: vec![],
                skipped: None,
                answered_plain_http: true,
                timed_out: false,
                elapsed_ms: 1,
            });
        }
        HostCheck {
            host: target.authority.host.clone(),
            port: target.authority.port,
            hop,
            dns: Resolution {
                host: target.authority.host.clone(),
                source: crate::probe::dns::Source::Dns,
                addresses: vec!["10.9.9.9".parse().expect("ip")],
                cname_chain: vec![],
                answered_by: None,
                servers: vec![],
                hand_fix: None,
            },
            routes: vec![],
            connect: vec![],
            tls,
            address: None,
            tunnel: None,
            failure,
        }
    }

    async fn send(
        &self,
        target: &Target,
        request: Request,
    ) -> Result<Response<ScriptedBody>, Transport> {
        let at = format!("{}{}", target.authority, request.url.path());
        self.sent.lock().expect("lock").push((
            format!(
                "{at}{}",
                request
                    .url
                    .query()
                    .map(|q| format!("?{q}"))
                    .unwrap_or_default()
            ),
            request.headers.clone(),
        ));
        let posted = request.form.is_some();
        if let Some(form) = &request.form {
            self.posted
                .lock()
                .expect("lock")
                .push((at.clone(), form.clone()));
        }
        let reply = posted
            .then(|| self.post_replies.get(&at))
            .flatten()
            .or_else(|| self.replies.get(&at))
            .cloned()
            .unwrap_or_else(|| status(404));
        let headers = |list: &[(&'static str, String)]| {
            let mut map = HeaderMap::new();
            for (n, v) in list {
                map.insert(
                    HeaderName::from_static(n),
                    HeaderValue::from_str(v).expect("header"),
                );
            }
            map
        };
        match reply {
            Reply::Answer {
                status,
                headers: h,
                body,
            } => Ok(Response {
                status,
                headers: headers(&h),
                body: ScriptedBody {
                    chunks: body.chunks(7).map(Bytes::copy_from_slice).collect(),
                    stall: false,
                    every: None,
                },
            }),
            Reply::StalledBody { status, first } => Ok(Response {
                status,
                headers: HeaderMap::new(),
                body: ScriptedBody {
                    chunks: VecDeque::from([Bytes::from(first)]),
                    stall: true,
                    every: None,
                },
            }),
            Reply::Silent => std::future::pending().await,
            Reply::Broken(transport) => Err(transport),
            Reply::Trickle { status, bytes } => Ok(Response {
                status,
                headers: HeaderMap::new(),
                body: ScriptedBody {
                    chunks: std::iter::repeat_n(Bytes::from_static(b"x"), bytes).collect(),
                    stall: false,
                    every: Some(Duration::from_secs(1)),
                },
            }),
        }
    }
}

/// An image: a config and two layers, and the manifest naming them.
struct Image {
    config: Vec<u8>,
    layers: Vec<Vec<u8>>,
    manifest: Vec<u8>,
}

impl Image {
    fn new() -> Image {
        let config = br#"{"architecture":"amd64","os":"linux"}"#.to_vec();
        let layers = vec![b"layer one bytes".to_vec(), vec![7u8; 3000]];
        let desc = |b: &[u8], t: &str| {
            format!(
                r#"{{"mediaType":"{t}","digest":"{}","size":{}}}"#,
                sha256_digest(b),
                b.len()
            )
        };
        let manifest = format!(
            r#"{{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{},"layers":[{},{}]}}"#,
            desc(&config, "application/vnd.oci.image.config.v1+json"),
            desc(&layers[0], "application/vnd.oci.image.layer.v1.tar+gzip"),
            desc(&layers[1], "application/vnd.oci.image.layer.v1.tar+gzip"),
        )
        .into_bytes();
        Image {
            config,
            layers,
            manifest,
        }
    }

    fn blobs(&self) -> Vec<(String, Vec<u8>)> {
        std::iter::once(&self.config)
            .chain(&self.layers)
            .map(|b| (sha256_digest(b).to_string(), b.clone()))
            .collect()
    }
}

fn jwt() -> String {
    let claims = URL_SAFE_NO_PAD
        .encode(r#"{"access":[{"type":"repository","name":"team/app","actions":["pull"]}]}"#);
    format!("eyJhbGciOiJub25lIn0.{claims}.sig")
}

/// A registry host with token auth whose blobs redirect to `store`, serving `image`.
fn registry(net: Scripted, host: &str, store: &str, image: &Image) -> Scripted {
    let mut net = net
        .reply(&format!("{host}/v2/"), challenge("https://auth.test/token"))
        .reply("auth.test/token", ok(format!(r#"{{"token":"{}"}}"#, jwt())))
        .reply(
            &format!("{host}/v2/team/app/manifests/v1"),
            ok(image.manifest.clone()),
        );
    for (digest, bytes) in image.blobs() {
        let key = format!("{store}/{host}/{digest}");
        net = net
            .reply(
                &format!("{host}/v2/team/app/blobs/{digest}"),
                redirect(&format!("https://{key}?sig=SECRET")),
            )
            .reply(&key, ok(bytes));
    }
    net
}

fn endpoint(host: &str, is_registry: bool) -> WalkEndpoint {
    WalkEndpoint {
        config: Endpoint {
            scheme: Scheme::Https,
            authority: Authority::parse(host, 443).expect("authority"),
            path: "/v2".into(),
            capabilities: Capabilities::ALL,
            cas: vec![],
            skip_verify: false,
            headers: vec![],
            is_registry,
            http_fallback: None,
        },
        trust: TrustId(0),
    }
}

/// hosts.toml with the mirror `m.test` before the registry `r.test`.
fn mirror_then_registry() -> Vec<WalkEndpoint> {
    vec![endpoint("m.test", false), endpoint("r.test", true)]
}

fn settings(full: bool) -> Settings {
    Settings {
        image: ImageRef::parse("r.test/team/app:v1").expect("image"),
        platform: Platform::parse("linux/amd64").expect("platform"),
        credentials: Some(Credentials {
            username: "alice".into(),
            password: "alice-secret".into(),
        }),
        timeouts: Timeouts {
            dns: Duration::from_secs(2),
            connect: Duration::from_secs(2),
            tls: Duration::from_secs(2),
            http: Duration::from_secs(5),
        },
        deadline: Duration::from_secs(60),
        full,
        parallel: 2,
        progress: false,
        proxy: ProxyConfig::default(),
    }
}

async fn walk(net: Scripted, endpoints: Vec<WalkEndpoint>, full: bool) -> (Outcome, Arc<Scripted>) {
    let net = Arc::new(net);
    let outcome = Walk::new(settings(full), endpoints, net.clone())
        .run()
        .await;
    (outcome, net)
}

/// A walk of the registry `r.test` alone with these settings.
async fn walk_with(settings: Settings, net: Scripted) -> (Outcome, Arc<Scripted>) {
    let net = Arc::new(net);
    let outcome = Walk::new(settings, vec![endpoint("r.test", true)], net.clone())
        .run()
        .await;
    (outcome, net)
}

fn stop(outcome: &Outcome) -> &Stop {
    outcome.result.as_ref().expect_err("the pull fails")
}

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
    let store_hops: Vec<&PathHop> = outcome.path.iter().filter(|h| h.hop == Hop::Blob).collect();
    assert!(
        store_hops
            .iter()
            .all(|h| h.steps.iter().all(|s| !s.detail.contains("SECRET")))
    );
}

#[tokio::test]
async fn resolve_moves_past_a_failing_mirror_and_says_so() {
    let image = Image::new();
    let net = registry(Scripted::default(), "r.test", "store.test", &image)
        .reply("m.test/v2/", status(500));
    let (outcome, _) = walk(net, mirror_then_registry(), false).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    assert!(
        outcome
            .fallbacks
            .iter()
            .any(|f| f.endpoint.host == "m.test" && f.stop.layer == Layer::Other)
    );
}

#[tokio::test]
async fn the_first_non_404_failure_is_the_pulls() {
    let image = Image::new();
    // The mirror does not resolve; the registry has no such tag: containerd reports the mirror.
    let net = registry(Scripted::default(), "r.test", "store.test", &image)
        .broken("m.test", Layer::Dns, "dns")
        .reply("r.test/v2/team/app/manifests/v1", status(404));
    let (outcome, _) = walk(net, mirror_then_registry(), false).await;
    let s = stop(&outcome);
    assert_eq!(
        (s.hop, s.layer, s.authority.host.as_str()),
        (Hop::Mirror, Layer::Dns, "m.test")
    );

    // Every host says 404: not found, from the last host asked.
    let net = registry(Scripted::default(), "r.test", "store.test", &image)
        .reply("m.test/v2/", ok(""))
        .reply("r.test/v2/team/app/manifests/v1", status(404));
    let (outcome, _) = walk(net, mirror_then_registry(), false).await;
    let s = stop(&outcome);
    assert_eq!(
        (s.hop, s.layer, s.authority.host.as_str()),
        (Hop::Registry, Layer::NotFound, "r.test")
    );

    // A 404 on the mirror and a 401 on the registry: the 401 decides.
    let net = registry(Scripted::default(), "r.test", "store.test", &image)
        .reply("m.test/v2/", ok(""))
        .reply("auth.test/token", status(401));
    let (outcome, _) = walk(net, mirror_then_registry(), false).await;
    let s = stop(&outcome);
    assert_eq!((s.hop, s.layer), (Hop::Auth, Layer::Auth));
}

#[tokio::test]
async fn a_blob_the_mirror_cannot_serve_comes_from_the_next_host() {
    let image = Image::new();
    // The mirror serves manifests, but its blob redirects land on a host without a route.
    let mut net = registry(Scripted::default(), "r.test", "store.test", &image);
    net = registry(net, "m.test", "badstore.test", &image).broken(
        "badstore.test",
        Layer::Route,
        "route",
    );
    let (outcome, _) = walk(net, mirror_then_registry(), true).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    assert!(
        outcome
            .blobs
            .iter()
            .all(|b| b.served_by.host == "store.test")
    );
    assert!(outcome.fallbacks.iter().any(
        |f| f.stop.authority.host == "badstore.test" && f.stop.mechanism == Some(Layer::Route)
    ));
}

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
    assert!(s.detail.contains("scripted tls failure"), "{}", s.detail);
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
async fn a_mirror_without_resolve_is_not_asked_for_the_tag_but_serves_blobs() {
    let image = Image::new();
    let mut net = registry(Scripted::default(), "r.test", "store.test", &image);
    net = registry(net, "m.test", "mstore.test", &image);
    let mut mirror = endpoint("m.test", false);
    mirror.config.capabilities = Capabilities {
        pull: true,
        resolve: false,
        push: false,
    };
    let (outcome, net) = walk(net, vec![mirror, endpoint("r.test", true)], false).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    assert!(net.requests_to("m.test/v2/team/app/manifests/").is_empty());
    assert!(
        outcome
            .blobs
            .iter()
            .all(|b| b.served_by.host == "mstore.test")
    );
    assert!(
        net.requests_to("m.test/v2/team/app/blobs/")
            .iter()
            .all(|r| r.contains("ns=r.test"))
    );
}

#[tokio::test]
async fn a_mirror_404_for_a_blob_moves_on() {
    let image = Image::new();
    let mut net = registry(Scripted::default(), "r.test", "store.test", &image);
    net = registry(net, "m.test", "mstore.test", &image);
    let layer = sha256_digest(&image.layers[1]);
    net = net.reply(&format!("m.test/v2/team/app/blobs/{layer}"), status(404));
    let (outcome, _) = walk(net, mirror_then_registry(), true).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    let served: Vec<&str> = outcome
        .blobs
        .iter()
        .map(|b| b.served_by.host.as_str())
        .collect();
    assert_eq!(served, ["mstore.test", "mstore.test", "store.test"]);
}

#[tokio::test]
async fn a_corrupt_layer_fails_on_the_blob_hop_naming_both_digests() {
    let image = Image::new();
    let layer = sha256_digest(&image.layers[0]);
    let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
        &format!("store.test/r.test/{layer}"),
        ok(b"LAYER ONE BYTES".to_vec()),
    );
    let (outcome, _) = walk(net, vec![endpoint("r.test", true)], true).await;
    let s = stop(&outcome);
    assert_eq!(
        (s.hop, s.layer, s.mechanism),
        (Hop::Blob, Layer::Blob, Some(Layer::Other))
    );
    assert_eq!(s.authority.host, "store.test");
    assert!(
        s.detail.contains(layer.as_str()) && s.detail.contains("hash to sha256:"),
        "{}",
        s.detail
    );
}

#[tokio::test]
async fn a_manifest_by_digest_must_hash_to_it() {
    let image = Image::new();
    let asked = sha256_digest(b"what the pod spec pins");
    let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
        &format!("r.test/v2/team/app/manifests/{asked}"),
        ok(image.manifest.clone()),
    );
    let net = Arc::new(net);
    let mut s = settings(false);
    s.image = ImageRef::parse(&format!("r.test/team/app@{asked}")).expect("image");
    let outcome = Walk::new(s, vec![endpoint("r.test", true)], net)
        .run()
        .await;
    let s = stop(&outcome);
    assert_eq!((s.hop, s.layer), (Hop::Registry, Layer::Other));
    assert!(s.detail.contains("digest mismatch"), "{}", s.detail);
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
    assert!(s.detail.contains("deadline of 3 s"), "{}", s.detail);
}

#[tokio::test(start_paused = true)]
async fn a_body_silent_longer_than_the_http_timeout_stops() {
    let image = Image::new();
    let layer = sha256_digest(&image.layers[1]);
    let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
        &format!("store.test/r.test/{layer}"),
        Reply::StalledBody {
            status: 200,
            first: vec![7u8; 100],
        },
    );
    let (outcome, _) = walk(net, vec![endpoint("r.test", true)], true).await;
    let s = stop(&outcome);
    assert_eq!(
        (s.hop, s.layer, s.authority.host.as_str()),
        (Hop::Blob, Layer::Blob, "store.test")
    );
    assert!(
        s.detail
            .contains("stalled: no data for 5000 ms after 100 bytes"),
        "{}",
        s.detail
    );

    // The same silence in a manifest body.
    let net = registry(Scripted::default(), "r.test", "store.test", &image).reply(
        "r.test/v2/team/app/manifests/v1",
        Reply::StalledBody {
            status: 200,
            first: b"{".to_vec(),
        },
    );
    let (outcome, _) = walk(net, vec![endpoint("r.test", true)], false).await;
    assert!(stop(&outcome).detail.contains("stalled"));
}

#[tokio::test(start_paused = true)]
async fn headers_that_never_come_are_a_route_failure_after_the_http_timeout() {
    let image = Image::new();
    let net = registry(Scripted::default(), "r.test", "store.test", &image)
        .reply("r.test/v2/", Reply::Silent);
    let (outcome, _) = walk(net, vec![endpoint("r.test", true)], false).await;
    let s = stop(&outcome);
    assert_eq!((s.hop, s.layer), (Hop::Registry, Layer::Route));
    assert!(s.detail.contains("5000 ms"));
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
    assert!(s.detail.contains("after 10 redirects"), "{}", s.detail);
}

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
    assert!(s.detail.contains("offers linux/amd64") && !s.detail.contains("unknown"));
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

fn through_proxy(no_proxy: &str) -> Settings {
    let mut s = settings(false);
    s.proxy = ProxyConfig::from_env(&std::collections::BTreeMap::from([
        (
            "HTTPS_PROXY".to_string(),
            "http://u:pw@proxy.test:3128".to_string(),
        ),
        ("NO_PROXY".to_string(), no_proxy.to_string()),
    ]));
    s
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
    assert!(s.detail.contains("CONNECT store.test"), "{}", s.detail);

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
    assert!(s.detail.contains("scripted dns failure"), "{}", s.detail);
}

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
    assert!(stop.detail.contains("OAuth POST"), "{}", stop.detail);
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
        stop.detail.contains("does not send the password"),
        "{}",
        stop.detail
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
        assert!(s.detail.contains(&transport.to_string()), "{}", s.detail);
    }
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
        s.detail
    );
    assert!(s.detail.contains("trickled"), "{}", s.detail);
    assert!(s.detail.contains("of 3000 bytes"), "{}", s.detail);
    assert!(
        s.detail.contains("image_pull_progress_timeout"),
        "{}",
        s.detail
    );
}
