//! The probe report's hosts: each host checked from DNS up (resolution, route, connect, TLS,
//! the proxy's tunnel), as wire types built with `From` from the engine's host checks.

use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

use crate::probe::check::HostCheck;
use crate::probe::observed::{connect, dns, route, tls};
use crate::vocab::{Hop, Layer};

/// One host checked from DNS up.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    pub host: String,
    pub port: u16,
    pub hop: Hop,
    pub dns: DnsReport,
    pub routes: Vec<RouteReport>,
    pub connect: Vec<ConnectReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsReport>,
    /// The address that worked: later requests went exactly there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<SocketAddr>,
    /// Through the runtime's proxy: what it answered to `CONNECT`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<TunnelReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<FailureReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TunnelReport {
    /// The proxy, `http://host:port/` (credentials redacted).
    pub proxy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct DnsReport {
    pub host: String,
    /// `hosts-file`, `dns`, `ip-literal`, or `proxy` (the proxy resolved it).
    pub source: &'static str,
    pub addresses: Vec<IpAddr>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cname_chain: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<IpAddr>,
    pub servers: Vec<ServerAnswerReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hand_fix: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ServerAnswerReport {
    pub server: IpAddr,
    pub name: String,
    /// `answer`, `nodata`, `nxdomain`, `servfail`, `refused`, `timeout`, `error`.
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub addresses: Vec<IpAddr>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cname_chain: Vec<String>,
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct RouteReport {
    pub destination: IpAddr,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gateway: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConnectReport {
    pub address: SocketAddr,
    /// `connected`, `timeout`, `refused`, `unreachable`, `error`.
    pub outcome: &'static str,
    pub elapsed_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TlsReport {
    pub server_name: String,
    pub ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// `problem` as a stable kind (`unknown-authority`, `expired` …, docs/report-schema.md):
    /// what a machine reader matches on, since `problem`'s words are for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem_kind: Option<&'static str>,
    pub chain: Vec<CertReport>,
    /// Where the trusted roots came from.
    pub trusted: Vec<String>,
    /// `skip_verify` accepted a certificate that does not verify: what was wrong with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CertReport {
    pub subject: String,
    pub issuer: String,
    pub names: Vec<String>,
    pub not_before: String,
    pub not_after: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailureReport {
    pub layer: Layer,
    pub step: String,
    pub detail: String,
}

impl From<&HostCheck> for HostReport {
    fn from(h: &HostCheck) -> HostReport {
        HostReport {
            host: h.host.clone(),
            port: h.port,
            hop: h.hop,
            dns: DnsReport::from(&h.dns),
            routes: h.routes.iter().map(RouteReport::from).collect(),
            connect: h.connect.iter().map(ConnectReport::from).collect(),
            tls: h.tls.as_ref().map(TlsReport::from),
            address: h.address,
            tunnel: h.tunnel.as_ref().map(|t| TunnelReport {
                proxy: t.proxy.clone(),
                status: t.status,
                detail: t.detail.clone(),
            }),
            failure: h.failure.as_ref().map(|f| FailureReport {
                layer: f.layer(),
                step: f.step.to_string(),
                detail: f.evidence.to_string(),
            }),
        }
    }
}

impl From<&dns::Resolution> for DnsReport {
    fn from(r: &dns::Resolution) -> DnsReport {
        DnsReport {
            host: r.host.clone(),
            source: r.source.as_str(),
            addresses: r.addresses.clone(),
            cname_chain: r.cname_chain.clone(),
            answered_by: r.answered_by,
            servers: r
                .servers
                .iter()
                .map(|a| ServerAnswerReport {
                    server: a.server,
                    name: a.name.clone(),
                    outcome: match a.outcome {
                        dns::ServerReply::Answer => "answer",
                        dns::ServerReply::NoData => "nodata",
                        dns::ServerReply::NxDomain => "nxdomain",
                        dns::ServerReply::ServFail => "servfail",
                        dns::ServerReply::Refused => "refused",
                        dns::ServerReply::Timeout => "timeout",
                        dns::ServerReply::Error => "error",
                    },
                    addresses: a.addresses.clone(),
                    cname_chain: a.cname_chain.clone(),
                    elapsed_ms: a.elapsed_ms,
                })
                .collect(),
            hand_fix: r.hand_fix.clone(),
        }
    }
}

impl From<&route::RouteLookup> for RouteReport {
    fn from(r: &route::RouteLookup) -> RouteReport {
        RouteReport {
            destination: r.destination,
            interface: r.interface.clone(),
            gateway: r.gateway,
            source: r.source,
            error: r.error.clone(),
        }
    }
}

impl From<&connect::ConnectAttempt> for ConnectReport {
    fn from(a: &connect::ConnectAttempt) -> ConnectReport {
        ConnectReport {
            address: a.address,
            outcome: match a.outcome {
                connect::ConnectOutcome::Connected => "connected",
                connect::ConnectOutcome::Timeout => "timeout",
                connect::ConnectOutcome::Refused => "refused",
                connect::ConnectOutcome::Unreachable => "unreachable",
                connect::ConnectOutcome::Error => "error",
            },
            elapsed_ms: a.elapsed_ms,
            error: a.error.clone(),
        }
    }
}

impl From<&tls::TlsEvidence> for TlsReport {
    fn from(t: &tls::TlsEvidence) -> TlsReport {
        TlsReport {
            server_name: t.server_name.clone(),
            ok: t.ok,
            problem: t.problem.as_ref().map(ToString::to_string),
            problem_kind: t.problem.as_ref().map(tls::TlsProblem::kind),
            chain: t
                .chain
                .iter()
                .map(|c| CertReport {
                    subject: c.subject.clone(),
                    issuer: c.issuer.clone(),
                    names: c.names.clone(),
                    not_before: c.not_before.clone(),
                    not_after: c.not_after.clone(),
                })
                .collect(),
            trusted: t.trusted.clone(),
            skipped: t.skipped.clone(),
            elapsed_ms: t.elapsed_ms,
        }
    }
}
