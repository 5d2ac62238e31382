//! One host of the pull path, checked from DNS up: resolve, route, connect, TLS. Every host the
//! pull touches (registry, token realm, each blob host after a redirect) goes through this once.

use std::net::SocketAddr;

use super::check::{HostCheck, StepFailure, Timeouts, unchecked};
use super::connect;
use super::dns;
use super::evidence::Evidence;
use super::observed::tunnel::Tunnel;
use super::resolv::ResolverConfig;
use super::route;
use super::step::Step;
use super::tls::{self, Trust};
use crate::vocab::Hop;

/// Check `host:port` from DNS up; `trust` is `None` for a plain-HTTP host (no handshake).
pub async fn check(
    host: &str,
    port: u16,
    hop: Hop,
    resolver: &ResolverConfig,
    trust: Option<&Trust>,
    timeouts: Timeouts,
) -> HostCheck {
    let dns = dns::resolve(host, resolver, timeouts.dns).await;
    let mut check = HostCheck {
        dns,
        ..unchecked(host, port, hop)
    };
    if let Some(why) = check.dns.failure() {
        check.failure = Some(StepFailure {
            step: Step::Dns,
            evidence: why,
        });
        return check;
    }
    let addresses = check.dns.addresses.clone();
    check.routes =
        tokio::task::spawn_blocking(move || addresses.into_iter().map(route::lookup).collect())
            .await
            .unwrap_or_default();
    let routable: Vec<_> = check
        .routes
        .iter()
        .filter(|r| r.has_route())
        .map(|r| r.destination)
        .collect();
    if routable.is_empty() {
        check.failure = Some(StepFailure {
            step: Step::Route,
            evidence: Evidence::NoRoute(check.routes.clone()),
        });
        return check;
    }
    let (winner, attempts) = connect::connect_any(&routable, port, timeouts.connect).await;
    check.connect = attempts;
    let Some((address, stream)) = winner else {
        check.failure = Some(StepFailure {
            step: Step::Connect,
            evidence: Evidence::Connect(check.connect.clone()),
        });
        return check;
    };
    check.address = Some(address);
    let Some(trust) = trust else {
        // Plain HTTP: connected is all there is to check before the request.
        drop(stream);
        return check;
    };
    let evidence = tls::handshake(stream, host, trust, timeouts.tls).await;
    if let Some(problem) = &evidence.problem {
        check.failure = Some(StepFailure {
            step: Step::Tls,
            evidence: Evidence::from(problem.clone()),
        });
    }
    check.tls = Some(evidence);
    check
}

/// `host:port` through an HTTP proxy at `proxy` (already checked, proven at `address`): TCP to
/// it, `CONNECT`, then the TLS handshake with `host` inside the tunnel when `trust` is given.
/// The node resolves nothing: the proxy does.
#[allow(clippy::too_many_arguments)]
pub async fn check_through_proxy(
    host: &str,
    port: u16,
    hop: Hop,
    proxy: &url::Url,
    address: SocketAddr,
    trust: Option<&Trust>,
    proxy_trust: Option<&Trust>,
    timeouts: Timeouts,
) -> HostCheck {
    let shown = super::proxy::redact_proxy(proxy);
    let mut check = unchecked(host, port, hop);
    let fail = |check: &mut HostCheck, step: Step, evidence: Evidence| {
        check.failure = Some(StepFailure { step, evidence });
    };
    let stream =
        match tokio::time::timeout(timeouts.connect, tokio::net::TcpStream::connect(address)).await
        {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                let evidence = Evidence::ProxyDial {
                    address,
                    proxy: shown,
                    error: e.to_string(),
                    refused: e.kind() == std::io::ErrorKind::ConnectionRefused,
                };
                fail(&mut check, Step::Connect, evidence);
                return check;
            }
            Err(_) => {
                let evidence = Evidence::ProxyDialTimeout {
                    address,
                    proxy: shown,
                    ms: timeouts.connect.as_millis(),
                };
                fail(&mut check, Step::Connect, evidence);
                return check;
            }
        };
    if proxy.scheme() != "https" {
        return through_tunnel(check, stream, host, port, proxy, trust, timeouts).await;
    }
    // An https:// proxy: TLS to the proxy itself first, verified with the same trust the
    // runtime's transport gives the host (Go uses its TLSClientConfig for the proxy too).
    let proxy_name = proxy
        .host_str()
        .unwrap_or_default()
        .trim_matches(['[', ']']);
    let Some(proxy_trust) = proxy_trust else {
        fail(
            &mut check,
            Step::ProxyTls,
            Evidence::ProxyUntrusted { proxy: shown },
        );
        return check;
    };
    match tls::handshake_over(stream, proxy_name, proxy_trust, timeouts.tls).await {
        (_, Some(session)) => {
            through_tunnel(check, session, host, port, proxy, trust, timeouts).await
        }
        (evidence, None) => {
            let evidence = Evidence::ProxyTls {
                proxy: shown,
                problem: evidence.problem,
            };
            fail(&mut check, Step::ProxyTls, evidence);
            check
        }
    }
}

/// `CONNECT` over a connection to the proxy, then the handshake with `host` inside the tunnel.
async fn through_tunnel<S>(
    mut check: HostCheck,
    stream: S,
    host: &str,
    port: u16,
    proxy: &url::Url,
    trust: Option<&Trust>,
    timeouts: Timeouts,
) -> HostCheck
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let authorization = super::proxy::basic_authorization(proxy);
    let (stream, tunnel) =
        super::proxy::connect(stream, host, port, authorization.as_deref(), timeouts.http).await;
    let tunnel = Tunnel {
        proxy: super::proxy::redact_proxy(proxy),
        ..tunnel
    };
    let Some(stream) = stream else {
        check.tunnel = Some(tunnel.clone());
        check.failure = Some(StepFailure {
            step: Step::Tunnel,
            evidence: Evidence::Tunnel {
                target: format!("{host}:{port}"),
                tunnel,
            },
        });
        return check;
    };
    check.tunnel = Some(tunnel);
    let Some(trust) = trust else {
        return check;
    };
    let (evidence, _) = tls::handshake_over(stream, host, trust, timeouts.tls).await;
    if let Some(problem) = &evidence.problem {
        check.failure = Some(StepFailure {
            step: Step::Tls,
            evidence: Evidence::Tls {
                problem: problem.clone(),
                through_proxy: true,
            },
        });
    }
    check.tls = Some(evidence);
    check
}
