//! The real network behind [`super::net::Network`]: each host checked from DNS up
//! ([`super::host::check`]), then spoken to over HTTP/1.1 by a client pinned to the very
//! address the check proved, with the TLS trust of the `hosts.toml` host it belongs to. A host
//! the runtime reaches through its proxy is checked through a `CONNECT` tunnel and spoken to
//! through that proxy; which host goes through which proxy, and every redirect, the walk
//! decides.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use reqwest::Client;
use rustls::ClientConfig;

use super::authority::Scheme;
use super::check::{self, HostCheck, StepFailure, Timeouts};
use super::evidence::Evidence;
use super::host;
use super::net::{Body, Network, Request, Response, Target};
use super::observed::transport::Transport;
use super::resolv::ResolverConfig;
use super::step::Step;
use super::tls::Trust;
use crate::vocab::Hop;

pub struct LiveNetwork {
    resolver: ResolverConfig,
    /// Indexed by `TrustId`.
    trusts: Vec<(Trust, Arc<ClientConfig>)>,
    timeouts: Timeouts,
    clients: Mutex<HashMap<Target, Client>>,
    /// The address each directly checked host was proven at (a proxy's is needed later).
    proven: Mutex<HashMap<super::authority::Authority, std::net::SocketAddr>>,
}

impl LiveNetwork {
    /// `trusts[i]` is [`TrustId`]`(i)`, with the rustls configuration built from it.
    pub fn new(
        resolver: ResolverConfig,
        trusts: Vec<(Trust, Arc<ClientConfig>)>,
        timeouts: Timeouts,
    ) -> LiveNetwork {
        LiveNetwork {
            resolver,
            trusts,
            timeouts,
            clients: Mutex::new(HashMap::new()),
            proven: Mutex::new(HashMap::new()),
        }
    }

    fn proven(&self, authority: &super::authority::Authority) -> Option<std::net::SocketAddr> {
        self.proven.lock().ok()?.get(authority).copied()
    }

    fn client(&self, target: &Target, check: &HostCheck) -> reqwest::Result<Client> {
        let mut builder = Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .http1_only()
            .connect_timeout(self.timeouts.connect)
            .pool_max_idle_per_host(16)
            .user_agent(concat!("pullpath/", env!("CARGO_PKG_VERSION")));
        if let Some((_, config)) = self.trusts.get(target.trust.0) {
            builder = builder.tls_backend_preconfigured((**config).clone());
        }
        match (&target.proxy_url, target.proxy()) {
            (Some(proxy_url), Some(proxy)) => {
                // Through the proxy the check went through, at the address it was proven at.
                builder = builder.proxy(reqwest::Proxy::all(proxy_url.as_str())?);
                if let Some(address) = self.proven(&proxy.authority)
                    && proxy.authority.host.parse::<std::net::IpAddr>().is_err()
                {
                    builder = builder.resolve(&proxy.authority.host, address);
                }
            }
            _ => {
                builder = builder.no_proxy();
                if let Some(address) = check.address
                    && target.authority.host.parse::<std::net::IpAddr>().is_err()
                {
                    // Requests go exactly to the address this check proved, not a fresh lookup's.
                    builder = builder.resolve(&target.authority.host, address);
                }
            }
        }
        builder.build()
    }
}

impl Network for LiveNetwork {
    type Body = LiveBody;

    async fn check_host(&self, target: &Target, hop: Hop) -> HostCheck {
        let trust = match target.scheme {
            Scheme::Https => self.trusts.get(target.trust.0).map(|(t, _)| t),
            Scheme::Http => None,
        };
        let mut check = match (&target.proxy_url, target.proxy()) {
            (Some(proxy_url), Some(proxy)) => match self.proven(&proxy.authority) {
                Some(address) => {
                    host::check_through_proxy(
                        &target.authority.host,
                        target.authority.port,
                        hop,
                        proxy_url,
                        address,
                        trust,
                        self.trusts.get(target.trust.0).map(|(t, _)| t),
                        self.timeouts,
                    )
                    .await
                }
                None => {
                    // Never dialled: the proxy's own check must come first.
                    return HostCheck {
                        failure: Some(StepFailure {
                            step: Step::Tunnel,
                            evidence: Evidence::ProxyUnchecked {
                                proxy: proxy.authority.to_string(),
                            },
                        }),
                        ..check::unchecked(&target.authority.host, target.authority.port, hop)
                    };
                }
            },
            _ => {
                let check = host::check(
                    &target.authority.host,
                    target.authority.port,
                    hop,
                    &self.resolver,
                    trust,
                    self.timeouts,
                )
                .await;
                if let (Some(address), Ok(mut proven)) = (check.address, self.proven.lock()) {
                    proven.insert(target.authority.clone(), address);
                }
                check
            }
        };
        if check.failure.is_none() {
            match self.client(target, &check) {
                Ok(client) => {
                    if let Ok(mut clients) = self.clients.lock() {
                        clients.insert(target.clone(), client);
                    }
                }
                Err(e) => {
                    check.failure = Some(StepFailure {
                        step: Step::Http,
                        evidence: Evidence::HttpClient {
                            error: error_chain(&e),
                        },
                    })
                }
            }
        }
        check
    }

    async fn send(
        &self,
        target: &Target,
        request: Request,
    ) -> Result<Response<LiveBody>, Transport> {
        let client = self
            .clients
            .lock()
            .ok()
            .and_then(|clients| clients.get(target).cloned())
            .ok_or_else(|| Transport::Unchecked(target.authority.to_string()))?;
        let mut builder = match request.form {
            Some(form) => client
                .post(request.url.clone())
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(form),
            None => client.get(request.url.clone()),
        };
        for (name, value) in &request.headers {
            builder = builder.header(name.as_str(), value.as_str());
        }
        match builder.send().await {
            Ok(response) => Ok(Response {
                status: response.status().as_u16(),
                headers: response.headers().clone(),
                body: LiveBody(response),
            }),
            Err(e) => Err(transport_failure(&e)),
        }
    }
}

pub struct LiveBody(reqwest::Response);

impl Body for LiveBody {
    async fn chunk(&mut self) -> Result<Option<Bytes>, Transport> {
        self.0.chunk().await.map_err(|e| transport_failure(&e))
    }
}

/// What broke, from a request's error and its sources: hyper's parse and connection errors,
/// the socket's error kind, rustls's alerts. The transport's words are kept beside the kind.
fn transport_failure(error: &reqwest::Error) -> Transport {
    let words = error_chain(error);
    if error.is_timeout() {
        return Transport::TimedOut(words);
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = source {
        if let Some(hyper) = e.downcast_ref::<hyper::Error>() {
            if hyper.is_parse_too_large() {
                return Transport::HeadersTooLarge(words);
            }
            if hyper.is_parse() || hyper.is_parse_status() {
                return Transport::Malformed(words);
            }
            if hyper.is_incomplete_message() {
                return Transport::Closed(words);
            }
            if hyper.is_timeout() {
                return Transport::TimedOut(words);
            }
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            match io.kind() {
                ConnectionReset | ConnectionAborted | ConnectionRefused | BrokenPipe => {
                    return Transport::Reset(words);
                }
                TimedOut => return Transport::TimedOut(words),
                UnexpectedEof => return Transport::Closed(words),
                _ => {}
            }
        }
        if e.downcast_ref::<rustls::Error>().is_some() {
            return Transport::Tls(words);
        }
        source = e.source();
    }
    Transport::Other(words)
}

/// An error with its sources, as one line.
pub fn error_chain(error: &dyn std::error::Error) -> String {
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
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// How a server on 127.0.0.1 ends one request.
    enum Ending {
        /// A status line and this many bytes of headers.
        HugeHeaders(usize),
        /// Bytes that are not HTTP.
        Garbage,
        /// The request read, then the connection closed without a word.
        Close,
        /// The request read, then a TCP reset.
        Reset,
    }

    async fn failure_of(ending: Ending) -> Transport {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            let mut request = [0u8; 4096];
            let _ = tcp.read(&mut request).await;
            match ending {
                Ending::HugeHeaders(bytes) => {
                    let mut reply = b"HTTP/1.1 200 OK\r\n".to_vec();
                    while reply.len() < bytes {
                        reply.extend_from_slice(b"X-Filler: ");
                        reply.extend(std::iter::repeat_n(b'a', 1000));
                        reply.extend_from_slice(b"\r\n");
                    }
                    let _ = tcp.write_all(&reply).await;
                }
                Ending::Garbage => {
                    let _ = tcp.write_all(b"SSH-2.0-OpenSSH_9.2\r\n\r\n").await;
                }
                Ending::Close => {}
                Ending::Reset => {
                    let _ = tcp.set_zero_linger();
                }
            }
        });
        // The probe's own TLS configuration (ring), as every client here is built.
        let trust = super::super::tls::Trust {
            roots: std::sync::Arc::new(rustls::RootCertStore::empty()),
            sources: Vec::new(),
            skip_verify: false,
        };
        let tls = super::super::tls::client_config(&trust).expect("TLS configuration");
        let client = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .no_proxy()
            .build()
            .expect("client");
        let error = client
            .get(format!("http://{address}/v2/"))
            .send()
            .await
            .expect_err("the server does not answer with HTTP");
        transport_failure(&error)
    }

    #[tokio::test]
    async fn what_broke_after_the_connection_is_named() {
        assert!(
            matches!(
                failure_of(Ending::HugeHeaders(2 << 20)).await,
                Transport::HeadersTooLarge(_)
            ),
            "2 MiB of response headers"
        );
        let garbage = failure_of(Ending::Garbage).await;
        assert!(matches!(garbage, Transport::Malformed(_)), "{garbage:?}");
        let closed = failure_of(Ending::Close).await;
        assert!(matches!(closed, Transport::Closed(_)), "{closed:?}");
        let reset = failure_of(Ending::Reset).await;
        assert!(
            matches!(reset, Transport::Reset(_) | Transport::Closed(_)),
            "{reset:?}"
        );
    }
}
