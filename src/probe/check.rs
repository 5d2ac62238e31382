//! What checking one host from DNS up saw: each step's observations in order and, when one
//! failed, its step and evidence. `host` makes it for real, the walk's tests script it, `path`
//! and the report read it.

use std::net::SocketAddr;
use std::time::Duration;

use super::evidence::Evidence;
use super::observed::connect::ConnectAttempt;
use super::observed::dns::Resolution;
use super::observed::route::RouteLookup;
use super::observed::tls::TlsEvidence;
use super::observed::tunnel::Tunnel;
use super::step::Step;
use crate::vocab::{Hop, Layer};

/// Per-step time limits.
#[derive(Debug, Clone, Copy)]
pub struct Timeouts {
    pub dns: Duration,
    pub connect: Duration,
    pub tls: Duration,
    pub http: Duration,
}

/// The first step of a hop that failed.
#[derive(Debug, Clone)]
pub struct StepFailure {
    pub step: Step,
    /// What was observed.
    pub evidence: Evidence,
}

impl StepFailure {
    /// How the step failed: its evidence's layer.
    pub fn layer(&self) -> Layer {
        self.evidence.layer()
    }
}

/// Everything observed about one host.
#[derive(Debug, Clone)]
pub struct HostCheck {
    pub host: String,
    pub port: u16,
    pub hop: Hop,
    pub dns: Resolution,
    pub routes: Vec<RouteLookup>,
    pub connect: Vec<ConnectAttempt>,
    pub tls: Option<TlsEvidence>,
    /// The address that worked: later HTTP requests go exactly there.
    pub address: Option<SocketAddr>,
    /// For a host reached through the runtime's proxy: the proxy's answer to `CONNECT`.
    pub tunnel: Option<Tunnel>,
    pub failure: Option<StepFailure>,
}

/// A host with nothing checked yet: what a check starts from, and all there is for a host the
/// node itself resolves and dials nothing for (it goes through the proxy).
pub fn unchecked(host: &str, port: u16, hop: Hop) -> HostCheck {
    HostCheck {
        host: host.to_string(),
        port,
        hop,
        dns: Resolution::by_proxy(host),
        routes: vec![],
        connect: vec![],
        tls: None,
        address: None,
        tunnel: None,
        failure: None,
    }
}
