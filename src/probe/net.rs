//! The walk's seam to the network, at the level the walk reasons about: "check this host from
//! DNS up" and "send this request to a host that passed". `http`'s `LiveNetwork` is the
//! real one (DNS, route, TCP, TLS, HTTP/1.1); the walk's tests script one in memory, so every
//! decision the walk makes — fallback, caching, credential scoping, redirects, limits,
//! deadlines — is tested without a socket, and the lab proves the real thing.
//!
//! Time limits are not the network's business: the walk bounds every send and every body
//! chunk itself, so one rule holds for both networks.

use std::future::Future;

use bytes::Bytes;
use reqwest::header::HeaderMap;
use url::Url;

use super::authority::{Authority, Scheme};
use super::check::HostCheck;
use super::observed::transport::Transport;
use crate::vocab::Hop;

/// Which trust (CA set and `skip_verify`) a host is checked and spoken to with: containerd
/// gives each `hosts.toml` host its own TLS configuration, and every host reached through it
/// (token realm, redirect targets) uses that configuration too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrustId(pub usize);

/// One host as the walk addresses it.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Target {
    pub authority: Authority,
    pub scheme: Scheme,
    pub trust: TrustId,
    /// The HTTP proxy requests to this host go through (the runtime's `HTTPS_PROXY` …), with
    /// any credentials it carries; `None` for a direct connection.
    pub proxy_url: Option<Url>,
}

impl Target {
    /// A direct target for `url`.
    pub fn of(url: &Url, trust: TrustId) -> Option<Target> {
        Some(Target {
            authority: Authority::of(url)?,
            scheme: Scheme::of(url)?,
            trust,
            proxy_url: None,
        })
    }

    /// The proxy host itself, as a target to check from DNS up (TLS for an `https://` proxy).
    pub fn proxy(&self) -> Option<Target> {
        let proxy = self.proxy_url.as_ref()?;
        Some(Target {
            authority: Authority::of(proxy)?,
            scheme: Scheme::of(proxy)?,
            trust: self.trust,
            proxy_url: None,
        })
    }
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The proxy URL may carry a password.
        let proxy = self.proxy_url.as_ref().map(super::proxy::redact_proxy);
        write!(
            f,
            "Target({}://{}, {:?}, proxy {proxy:?})",
            self.scheme.as_str(),
            self.authority,
            self.trust
        )
    }
}

/// A GET to send, or a POST of a form (the OAuth token request).
#[derive(Clone)]
pub struct Request {
    pub url: Url,
    pub headers: Vec<(String, String)>,
    /// An `application/x-www-form-urlencoded` body, sent as a POST; it may hold a password.
    pub form: Option<String>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may be credentials: only their names are shown.
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        // The form may hold a password: never shown.
        let method = if self.form.is_some() { "POST" } else { "GET" };
        write!(
            f,
            "{method} {} headers {names:?}",
            super::redirect::redact_url(&self.url)
        )
    }
}

/// An answer: status and headers, the body still to be read.
pub struct Response<B> {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: B,
}

impl<B> Response<B> {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// A response body, read chunk by chunk (`None` at its end); a connection that breaks while
/// it arrives says what broke.
pub trait Body: Send + 'static {
    fn chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, Transport>> + Send;
}

pub trait Network: Send + Sync + 'static {
    type Body: Body;

    /// Resolve, route, connect and (for `https`) handshake with `target`, recording everything.
    /// For a target `via` a proxy (whose own check passed before), the node resolves nothing:
    /// it asks the proxy to `CONNECT` and handshakes inside the tunnel. Requests to a target
    /// are sent only after its check passed.
    fn check_host(&self, target: &Target, hop: Hop) -> impl Future<Output = HostCheck> + Send;

    /// Send one request to a host whose check passed; redirects are the walk's to follow.
    fn send(
        &self,
        target: &Target,
        request: Request,
    ) -> impl Future<Output = Result<Response<Self::Body>, Transport>> + Send;
}
