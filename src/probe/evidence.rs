//! What a failing step observed, as a value: the resolver's answer, the routes, the connect
//! attempts, the proxy's part, the TLS problem, what broke after connecting. Readers decide on
//! the variant and its fields, never on our English; `Display` is the sentence the report has
//! always carried (`verdict.cause`, `fallbacks[].cause`, `hosts[].failure.detail`: wire fields,
//! so the words must not move). [`Evidence::layer`] is the one place a failure's layer is read
//! from what was observed; `stop` applies the hop's rule to it.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::authority::Authority;
use super::observed::body::{BodyProblem, Trickle};
use super::observed::connect::{self, ConnectAttempt, ConnectOutcome};
use super::observed::dns::ServerReply;
use super::observed::route::RouteLookup;
use super::observed::tls::TlsProblem;
use super::observed::transport::Transport;
use super::observed::tunnel::Tunnel;
use super::oci::ManifestProblem;
use super::redirect::RedirectProblem;
use super::refusal::HttpRefusal;
use crate::vocab::Layer;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evidence {
    /// resolv.conf names no nameserver, so nothing could be asked.
    NoNameserver,
    /// The resolver's answer for the host (`outcome` is never an address: that resolved).
    Dns {
        name: String,
        server: IpAddr,
        outcome: ServerReply,
        elapsed_ms: u64,
    },
    /// No kernel route to any address the host resolved to, each lookup as made.
    NoRoute(Vec<RouteLookup>),
    /// Every connect attempt failed (refused, unreachable, timeout), each with its address.
    Connect(Vec<ConnectAttempt>),
    /// The runtime's proxy could not be dialled at its proven address.
    ProxyDial {
        address: SocketAddr,
        /// The proxy as shown (credentials redacted).
        proxy: String,
        error: String,
        /// The proxy's address answered with a refusal (nothing accepts), rather than no way
        /// there.
        refused: bool,
    },
    /// The runtime's proxy did not accept the connection within the connect timeout.
    ProxyDialTimeout {
        address: SocketAddr,
        proxy: String,
        ms: u128,
    },
    /// An `https://` proxy with no trust to verify it with.
    ProxyUntrusted { proxy: String },
    /// The TLS handshake with an `https://` proxy failed.
    ProxyTls {
        proxy: String,
        problem: Option<TlsProblem>,
    },
    /// A host behind a proxy whose own check had not been made: the tool's own mistake.
    ProxyUnchecked { proxy: String },
    /// The proxy refused `CONNECT target` (or never answered it): its status and words.
    Tunnel { target: String, tunnel: Tunnel },
    /// The handshake with the host failed; `through_proxy` when inside a proxy's tunnel.
    Tls {
        problem: TlsProblem,
        through_proxy: bool,
    },
    /// A request to a connected host got no answer: what broke.
    Transport(Transport),
    /// No response headers within the HTTP timeout.
    NoHeaders { ms: u128 },
    /// A body that stalled, broke, ran long or did not verify.
    Body(BodyProblem),
    /// A redirect the runtime cannot follow, or will not follow further.
    Redirect(RedirectProblem),
    /// An HTTP answer that refused the step: its status, meaning and body.
    Refused(Box<HttpRefusal>),
    /// A manifest that cannot be used: its digest, JSON, schema, or no entry for the platform.
    Manifest(Box<ManifestProblem>),
    /// The registry's challenge cannot be answered as the runtime answers it.
    Challenge(ChallengeProblem),
    /// containerd's host configuration leaves the step no way to be asked.
    Config(ConfigProblem),
    /// The walk's total deadline ran out; `reading` when a body was still arriving then.
    Deadline {
        after: Duration,
        reading: Option<Trickle>,
    },
    /// No HTTP client could be built for the host (its trust or proxy): the tool's own failure.
    HttpClient { error: String },
}

impl Evidence {
    /// The layer of what was observed: how the step failed, before the hop's rule (`stop`)
    /// names the failure on the blob or proxy hop.
    pub fn layer(&self) -> Layer {
        match self {
            Evidence::NoNameserver | Evidence::Dns { .. } => Layer::Dns,
            Evidence::NoRoute(_) | Evidence::ProxyDialTimeout { .. } => Layer::Route,
            // No attempt at all is no way there.
            Evidence::Connect(attempts) => {
                connect::worst(attempts).map_or(Layer::Route, |a| a.outcome.layer())
            }
            Evidence::ProxyDial { refused: true, .. } => Layer::Refused,
            Evidence::ProxyDial { refused: false, .. } => Layer::Route,
            Evidence::ProxyTls { .. } | Evidence::Tls { .. } => Layer::Tls,
            Evidence::Tunnel { .. } => Layer::Proxy,
            Evidence::Transport(transport) => transport_layer(transport),
            // Silence after connecting is a path that drops, as a dial timeout is.
            Evidence::NoHeaders { .. } => Layer::Route,
            Evidence::Refused(refusal) => refusal.layer(),
            Evidence::Manifest(problem) => match **problem {
                ManifestProblem::NoPlatform { .. } => Layer::Platform,
                _ => Layer::Other,
            },
            Evidence::Challenge(ChallengeProblem::NoCredentials) => Layer::Auth,
            Evidence::ProxyUntrusted { .. }
            | Evidence::ProxyUnchecked { .. }
            | Evidence::Body(_)
            | Evidence::Redirect(_)
            | Evidence::Challenge(_)
            | Evidence::Config(_)
            | Evidence::Deadline { .. }
            | Evidence::HttpClient { .. } => Layer::Other,
        }
    }
}

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

/// Why a registry's `WWW-Authenticate` challenge went unanswered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChallengeProblem {
    /// `Basic`, and the node has no credential for the registry.
    NoCredentials,
    /// A scheme containerd does not answer; the header as sent.
    Unknown(String),
    /// A `Bearer` realm that is not a URL.
    RealmNotUrl(String),
}

impl fmt::Display for ChallengeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChallengeProblem::NoCredentials => f.write_str(
                "the registry wants Basic credentials and the node sent none (--username/--docker-config)",
            ),
            ChallengeProblem::Unknown(text) => {
                write!(f, "a challenge containerd does not answer: {text:?}")
            }
            ChallengeProblem::RealmNotUrl(realm) => {
                write!(f, "the token realm {realm:?} is not a URL")
            }
        }
    }
}

/// What in containerd's host configuration (hosts.toml, or its absence) stopped the step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigProblem {
    /// No host may do what the step needs: `needs` names the capabilities (`pull and resolve`).
    NoHost { needs: &'static str },
    /// No host is left to fetch a blob from.
    NoBlobHost,
    /// A host's path makes no URL; the text tried and the parser's complaint.
    BadPath { url: String, error: String },
    /// A URL (a redirect's target) that is not `http(s)`, credentials redacted.
    NotHttp { url: String },
    /// The plain-HTTP retry cannot be made for this host.
    NoPlainHttp { authority: Authority },
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigProblem::NoHost { needs } => write!(
                f,
                "no host in hosts.toml may resolve this image (capabilities {needs})"
            ),
            ConfigProblem::NoBlobHost => f.write_str("no host in hosts.toml to fetch from"),
            ConfigProblem::BadPath { url, error } => write!(
                f,
                "hosts.toml gives this host a path that makes no URL ({url}): {error}"
            ),
            ConfigProblem::NotHttp { url } => write!(f, "{url} is not an http(s) URL"),
            ConfigProblem::NoPlainHttp { authority } => {
                write!(f, "cannot speak plain HTTP to {authority}")
            }
        }
    }
}

impl From<RedirectProblem> for Evidence {
    fn from(problem: RedirectProblem) -> Evidence {
        Evidence::Redirect(problem)
    }
}

impl From<HttpRefusal> for Evidence {
    fn from(refusal: HttpRefusal) -> Evidence {
        Evidence::Refused(Box::new(refusal))
    }
}

impl From<ManifestProblem> for Evidence {
    fn from(problem: ManifestProblem) -> Evidence {
        Evidence::Manifest(Box::new(problem))
    }
}

impl From<BodyProblem> for Evidence {
    fn from(problem: BodyProblem) -> Evidence {
        Evidence::Body(problem)
    }
}

impl From<TlsProblem> for Evidence {
    fn from(problem: TlsProblem) -> Evidence {
        Evidence::Tls {
            problem,
            through_proxy: false,
        }
    }
}

impl fmt::Display for Evidence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Evidence::NoNameserver => f.write_str("no nameserver configured in resolv.conf"),
            Evidence::Dns {
                name,
                server,
                outcome,
                elapsed_ms,
            } => match outcome {
                ServerReply::NxDomain => write!(f, "NXDOMAIN for {name} from {server}"),
                ServerReply::NoData => write!(f, "no address for {name} from {server}"),
                ServerReply::ServFail => write!(f, "SERVFAIL for {name} from {server}"),
                ServerReply::Refused => write!(f, "REFUSED for {name} from {server}"),
                ServerReply::Timeout => write!(
                    f,
                    "no answer for {name} from {server} within {elapsed_ms} ms"
                ),
                ServerReply::Error => write!(f, "query for {name} to {server} failed"),
                ServerReply::Answer => write!(f, "{server} answered {name}"),
            },
            Evidence::NoRoute(routes) => {
                let each: Vec<String> = routes.iter().map(RouteLookup::describe).collect();
                f.write_str(&each.join("; "))
            }
            Evidence::Connect(attempts) => {
                let each: Vec<String> = attempts
                    .iter()
                    .map(|a| format!("{}: {}", a.address, attempt_words(a)))
                    .collect();
                f.write_str(&each.join("; "))
            }
            Evidence::ProxyDial {
                address,
                proxy,
                error,
                ..
            } => write!(f, "{address} (the proxy {proxy}): {error}"),
            Evidence::ProxyDialTimeout { address, proxy, ms } => {
                write!(f, "{address} (the proxy {proxy}): no answer within {ms} ms")
            }
            Evidence::ProxyUntrusted { proxy } => {
                write!(f, "no trust to verify the proxy {proxy} with")
            }
            Evidence::ProxyTls { proxy, problem } => {
                write!(f, "TLS to the proxy {proxy}: ")?;
                match problem {
                    Some(problem) => write!(f, "{problem}"),
                    None => Ok(()),
                }
            }
            Evidence::ProxyUnchecked { proxy } => {
                write!(f, "the proxy {proxy} was not checked first")
            }
            Evidence::Tunnel { target, tunnel } => write!(
                f,
                "CONNECT {target} through {}: {}",
                tunnel.proxy, tunnel.detail
            ),
            Evidence::Tls {
                problem,
                through_proxy: false,
            } => write!(f, "{problem}"),
            Evidence::Tls {
                problem,
                through_proxy: true,
            } => write!(
                f,
                "{problem} (through the proxy: a proxy that inspects TLS presents a certificate of its own CA)"
            ),
            Evidence::Transport(transport) => write!(f, "{transport}"),
            Evidence::NoHeaders { ms } => write!(f, "no response headers within {ms} ms"),
            Evidence::Body(problem) => problem.fmt(f),
            Evidence::Redirect(problem) => problem.fmt(f),
            Evidence::Refused(refusal) => refusal.fmt(f),
            Evidence::Manifest(problem) => problem.fmt(f),
            Evidence::Challenge(problem) => problem.fmt(f),
            Evidence::Config(problem) => problem.fmt(f),
            Evidence::Deadline { after, reading } => {
                write!(f, "the total deadline of {} s ran out", after.as_secs_f64())?;
                match reading {
                    Some(trickle) => write!(f, ": {trickle}"),
                    None => Ok(()),
                }
            }
            Evidence::HttpClient { error } => write!(f, "cannot build an HTTP client: {error}"),
        }
    }
}

/// One connect attempt's outcome, as a person reads it.
fn attempt_words(a: &ConnectAttempt) -> String {
    match a.outcome {
        ConnectOutcome::Timeout => format!(
            "timeout after {} ms (silently dropped, or replies cannot come back)",
            a.elapsed_ms
        ),
        ConnectOutcome::Refused => {
            "connection refused (the address answers, nothing accepts on this port)".into()
        }
        ConnectOutcome::Unreachable => {
            format!("unreachable ({})", a.error.as_deref().unwrap_or(""))
        }
        ConnectOutcome::Connected => "connected".into(),
        ConnectOutcome::Error => a.error.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::observed::tls::TlsProblem;

    fn attempt(outcome: ConnectOutcome, error: Option<&str>) -> ConnectAttempt {
        ConnectAttempt {
            address: "10.0.0.5:443".parse().expect("address"),
            outcome,
            elapsed_ms: 3000,
            error: error.map(String::from),
        }
    }

    fn unroutable(ip: &str) -> RouteLookup {
        RouteLookup {
            destination: ip.parse().expect("ip"),
            interface: None,
            gateway: None,
            source: None,
            error: Some("Network is unreachable".into()),
        }
    }

    /// Each variant's words are the sentence the code wrote before the evidence was typed
    /// (`dns::Resolution::failure`, `host::check`, `host::check_through_proxy`, `walk::http`).
    #[test]
    fn each_variant_says_what_the_report_always_said() {
        let server: IpAddr = "10.0.0.10".parse().expect("server");
        let dns = |outcome| Evidence::Dns {
            name: "r.example".into(),
            server,
            outcome,
            elapsed_ms: 2000,
        };
        let address: SocketAddr = "10.0.0.7:3128".parse().expect("address");
        let proxy = "http://proxy.example:3128/".to_string();
        let expired = TlsProblem::Expired {
            not_after: Some("Jan  1 00:00:00 2025 +00:00".into()),
        };
        let cases = [
            (
                Evidence::NoNameserver,
                "no nameserver configured in resolv.conf",
            ),
            (
                Evidence::NoRoute(["10.0.0.5", "10.0.0.6"].map(unroutable).to_vec()),
                "10.0.0.5: no route (Network is unreachable); 10.0.0.6: no route (Network is unreachable)",
            ),
            (
                Evidence::Connect(vec![
                    attempt(ConnectOutcome::Timeout, None),
                    attempt(ConnectOutcome::Refused, None),
                    attempt(ConnectOutcome::Unreachable, Some("No route to host")),
                    attempt(ConnectOutcome::Error, Some("Permission denied")),
                ]),
                "10.0.0.5:443: timeout after 3000 ms (silently dropped, or replies cannot come back); \
                 10.0.0.5:443: connection refused (the address answers, nothing accepts on this port); \
                 10.0.0.5:443: unreachable (No route to host); \
                 10.0.0.5:443: Permission denied",
            ),
            (
                Evidence::ProxyDial {
                    address,
                    proxy: proxy.clone(),
                    error: "Connection refused (os error 111)".into(),
                    refused: true,
                },
                "10.0.0.7:3128 (the proxy http://proxy.example:3128/): Connection refused (os error 111)",
            ),
            (
                Evidence::ProxyDialTimeout {
                    address,
                    proxy: proxy.clone(),
                    ms: 3000,
                },
                "10.0.0.7:3128 (the proxy http://proxy.example:3128/): no answer within 3000 ms",
            ),
            (
                Evidence::ProxyUntrusted {
                    proxy: proxy.clone(),
                },
                "no trust to verify the proxy http://proxy.example:3128/ with",
            ),
            (
                Evidence::ProxyTls {
                    proxy: proxy.clone(),
                    problem: Some(expired.clone()),
                },
                "TLS to the proxy http://proxy.example:3128/: certificate expired: not valid after Jan  1 00:00:00 2025 +00:00",
            ),
            (
                Evidence::ProxyUnchecked {
                    proxy: "proxy.example:3128".into(),
                },
                "the proxy proxy.example:3128 was not checked first",
            ),
            (
                Evidence::Tunnel {
                    target: "r.example:443".into(),
                    tunnel: Tunnel {
                        proxy: proxy.clone(),
                        status: Some(407),
                        detail: "HTTP/1.1 407 Proxy Authentication Required".into(),
                    },
                },
                "CONNECT r.example:443 through http://proxy.example:3128/: HTTP/1.1 407 Proxy Authentication Required",
            ),
            (
                Evidence::from(expired.clone()),
                "certificate expired: not valid after Jan  1 00:00:00 2025 +00:00",
            ),
            (
                Evidence::Tls {
                    problem: expired,
                    through_proxy: true,
                },
                "certificate expired: not valid after Jan  1 00:00:00 2025 +00:00 (through the proxy: a proxy that inspects TLS presents a certificate of its own CA)",
            ),
            (
                Evidence::Transport(Transport::Reset("connection reset by peer".into())),
                "connection reset: connection reset by peer",
            ),
            (
                Evidence::NoHeaders { ms: 5000 },
                "no response headers within 5000 ms",
            ),
            (
                Evidence::from(ManifestProblem::NestedIndex),
                "the platform's entry is itself an index",
            ),
        ];
        for (evidence, words) in cases {
            assert_eq!(evidence.to_string(), words, "{evidence:?}");
        }
        let answers = [
            (
                ServerReply::NxDomain,
                "NXDOMAIN for r.example from 10.0.0.10",
            ),
            (
                ServerReply::NoData,
                "no address for r.example from 10.0.0.10",
            ),
            (
                ServerReply::ServFail,
                "SERVFAIL for r.example from 10.0.0.10",
            ),
            (ServerReply::Refused, "REFUSED for r.example from 10.0.0.10"),
            (
                ServerReply::Timeout,
                "no answer for r.example from 10.0.0.10 within 2000 ms",
            ),
            (
                ServerReply::Error,
                "query for r.example to 10.0.0.10 failed",
            ),
        ];
        for (outcome, words) in answers {
            assert_eq!(dns(outcome).to_string(), words, "{outcome:?}");
        }
    }
}
