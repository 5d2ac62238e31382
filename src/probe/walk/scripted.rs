//! The scripted network the walk's tests run against, in memory (no socket is opened), and the
//! image, registry and settings they share: one place to script hosts, so each module's tests
//! say only what they check.
//!
//! The walk's tests check its decisions this way: every fallback rule of containerd, the cached
//! failure, credential scoping, redirects and their limit, the deadline and stalled bodies (in
//! tokio's paused time, so nothing sleeps).

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use bytes::Bytes;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::*;
use crate::probe::authority::Scheme;
use crate::probe::check::StepFailure;
use crate::probe::hosts_toml::Capabilities;
use crate::probe::net::{Body, Request, Response};
use crate::probe::observed::dns::Resolution;
use crate::probe::observed::transport::Transport;
use crate::probe::oci::sha256_digest;
use crate::probe::step::Step;
use crate::vocab::Layer;

/// What a scripted host answers to one path.
#[derive(Clone)]
pub(super) enum Reply {
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

pub(super) fn ok(body: impl Into<Vec<u8>>) -> Reply {
    Reply::Answer {
        status: 200,
        headers: vec![],
        body: body.into(),
    }
}

pub(super) fn status(code: u16) -> Reply {
    Reply::Answer {
        status: code,
        headers: vec![],
        body: br#"{"errors":[{"code":"X","message":"scripted"}]}"#.to_vec(),
    }
}

pub(super) fn redirect(to: &str) -> Reply {
    Reply::Answer {
        status: 307,
        headers: vec![("location", to.to_string())],
        body: vec![],
    }
}

pub(super) fn challenge(realm: &str) -> Reply {
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
pub(super) type Sent = (String, Vec<(String, String)>);

/// A scripted network: hosts that pass or fail their check, and answers per `host/path`.
#[derive(Default)]
pub(super) struct Scripted {
    pub(super) broken_hosts: HashMap<String, (Layer, &'static str)>,
    /// Hosts whose `CONNECT` the proxy answers with this status.
    pub(super) refused_tunnels: HashMap<String, u16>,
    /// Every host checked through a proxy, with the proxy.
    pub(super) tunneled: Mutex<Vec<(String, String)>>,
    pub(super) replies: HashMap<String, Reply>,
    /// Answers to a POST, by `host/path`, where they differ from the GET's.
    pub(super) post_replies: HashMap<String, Reply>,
    /// Every form POSTed: `host/path` and the body.
    pub(super) posted: Mutex<Vec<(String, String)>>,
    /// Hosts that answer a TLS handshake in plain HTTP (and pass a plain HTTP check).
    pub(super) plain_http: Vec<String>,
    /// Every request sent: `host/path` and its headers.
    pub(super) sent: Mutex<Vec<Sent>>,
    pub(super) checked: Mutex<Vec<String>>,
}

/// What a host scripted as broken at `layer` shows: an NXDOMAIN, a server that speaks no TLS,
/// else no route.
fn broken_evidence(layer: Layer, name: &str) -> crate::probe::evidence::Evidence {
    use crate::probe::evidence::Evidence;
    match layer {
        Layer::Dns => Evidence::Dns {
            name: name.to_string(),
            server: std::net::Ipv4Addr::new(10, 0, 0, 10).into(),
            outcome: crate::probe::observed::dns::ServerReply::NxDomain,
            elapsed_ms: 1,
        },
        Layer::Tls => Evidence::Tls {
            problem: crate::probe::observed::tls::TlsProblem::NotTls,
            through_proxy: false,
        },
        _ => Evidence::NoRoute(Vec::new()),
    }
}

/// A host check's step by its name, as tests script it.
fn step_named(name: &str) -> Step {
    match name {
        "dns" => Step::Dns,
        "route" => Step::Route,
        "connect" => Step::Connect,
        "tls" => Step::Tls,
        other => panic!("no host check step {other:?}"),
    }
}

impl Scripted {
    pub(super) fn reply(mut self, at: &str, reply: Reply) -> Scripted {
        self.replies.insert(at.to_string(), reply);
        self
    }

    pub(super) fn broken(mut self, host: &str, layer: Layer, step: &'static str) -> Scripted {
        self.broken_hosts.insert(host.to_string(), (layer, step));
        self
    }

    pub(super) fn reply_to_post(mut self, at: &str, reply: Reply) -> Scripted {
        self.post_replies.insert(at.to_string(), reply);
        self
    }

    pub(super) fn speaks_plain_http(mut self, host: &str) -> Scripted {
        self.plain_http.push(host.to_string());
        self
    }

    pub(super) fn refuse_tunnel(mut self, host: &str, status: u16) -> Scripted {
        self.refused_tunnels.insert(host.to_string(), status);
        self
    }

    pub(super) fn requests_to(&self, prefix: &str) -> Vec<String> {
        self.sent
            .lock()
            .expect("lock")
            .iter()
            .map(|(at, _)| at.clone())
            .filter(|at| at.starts_with(prefix))
            .collect()
    }

    pub(super) fn authorization_sent_to(&self) -> Vec<String> {
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

pub(super) struct ScriptedBody {
    pub(super) chunks: VecDeque<Bytes>,
    pub(super) stall: bool,
    /// Each chunk comes this long after the one before.
    pub(super) every: Option<Duration>,
}

impl Body for ScriptedBody {
    async fn chunk(&mut self) -> Result<Option<Bytes>, Transport> {
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
        if let Some(proxy_url) = &target.proxy_url {
            let proxy = Authority::of(proxy_url).expect("proxy").to_string();
            self.tunneled
                .lock()
                .expect("lock")
                .push((name.clone(), proxy.clone()));
            let mut check =
                crate::probe::check::unchecked(&target.authority.host, target.authority.port, hop);
            let status = self.refused_tunnels.get(&name).copied().unwrap_or(200);
            check.tunnel = Some(crate::probe::observed::tunnel::Tunnel {
                proxy: proxy.clone(),
                status: Some(status),
                detail: format!("{status}"),
            });
            if status != 200 {
                check.failure = Some(StepFailure {
                    step: Step::Tunnel,
                    evidence: crate::probe::evidence::Evidence::Tunnel {
                        target: name.clone(),
                        tunnel: check.tunnel.clone().expect("the tunnel"),
                    },
                });
            }
            return check;
        }
        self.checked
            .lock()
            .expect("lock")
            .push(format!("{}://{name}", target.scheme.as_str()));
        let mut failure = self
            .broken_hosts
            .get(&name)
            .map(|(layer, step)| StepFailure {
                step: step_named(step),
                evidence: broken_evidence(*layer, &target.authority.host),
            });
        let mut tls = None;
        if self.plain_http.contains(&name) && target.scheme == Scheme::Https {
            failure = Some(StepFailure {
                step: Step::Tls,
                evidence: crate::probe::observed::tls::TlsProblem::PlainHttp.into(),
            });
            tls = Some(crate::probe::observed::tls::TlsEvidence {
                server_name: target.authority.host.clone(),
                ok: false,
                problem: Some(crate::probe::observed::tls::TlsProblem::PlainHttp),
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
                source: crate::probe::observed::dns::NameSource::Dns,
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
pub(super) struct Image {
    pub(super) config: Vec<u8>,
    pub(super) layers: Vec<Vec<u8>>,
    pub(super) manifest: Vec<u8>,
}

impl Image {
    pub(super) fn new() -> Image {
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

    pub(super) fn blobs(&self) -> Vec<(String, Vec<u8>)> {
        std::iter::once(&self.config)
            .chain(&self.layers)
            .map(|b| (sha256_digest(b).to_string(), b.clone()))
            .collect()
    }
}

pub(super) fn jwt() -> String {
    let claims = URL_SAFE_NO_PAD
        .encode(r#"{"access":[{"type":"repository","name":"team/app","actions":["pull"]}]}"#);
    format!("eyJhbGciOiJub25lIn0.{claims}.sig")
}

/// A registry host with token auth whose blobs redirect to `store`, serving `image`.
pub(super) fn registry(net: Scripted, host: &str, store: &str, image: &Image) -> Scripted {
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

pub(super) fn endpoint(host: &str, is_registry: bool) -> WalkEndpoint {
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
pub(super) fn mirror_then_registry() -> Vec<WalkEndpoint> {
    vec![endpoint("m.test", false), endpoint("r.test", true)]
}

pub(super) fn settings(full: bool) -> Settings {
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
        parallel: Some(2),
        progress: false,
        proxy: ProxyConfig::default(),
    }
}

pub(super) async fn walk(
    net: Scripted,
    endpoints: Vec<WalkEndpoint>,
    full: bool,
) -> (WalkRecord, Arc<Scripted>) {
    let net = Arc::new(net);
    let outcome = Walk::new(settings(full), endpoints, net.clone())
        .run()
        .await;
    (outcome, net)
}

/// A walk of the registry `r.test` alone with these settings.
pub(super) async fn walk_with(settings: Settings, net: Scripted) -> (WalkRecord, Arc<Scripted>) {
    let net = Arc::new(net);
    let outcome = Walk::new(settings, vec![endpoint("r.test", true)], net.clone())
        .run()
        .await;
    (outcome, net)
}

pub(super) fn stop(outcome: &WalkRecord) -> &Stop {
    outcome.result.as_ref().expect_err("the pull fails")
}

pub(super) fn through_proxy(no_proxy: &str) -> Settings {
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
