//! What each TCP connect attempt to a host's addresses came to.

use std::net::SocketAddr;

use crate::vocab::Layer;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectOutcome {
    Connected,
    /// No answer within the timeout: a silent drop, or replies that cannot come back.
    Timeout,
    /// RST: the address answers, nothing listens (or a firewall rejects).
    Refused,
    /// The kernel or a router said there is no way there.
    Unreachable,
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectAttempt {
    pub address: SocketAddr,
    pub outcome: ConnectOutcome,
    pub elapsed_ms: u64,
    pub error: Option<String>,
}

impl ConnectOutcome {
    /// The layer a failed connection belongs to.
    pub fn layer(self) -> Layer {
        match self {
            ConnectOutcome::Refused => Layer::Refused,
            _ => Layer::Route,
        }
    }
}

/// The most telling failure among attempts: refused beats unreachable beats timeout, because a
/// refusal proves a path exists.
pub fn worst(attempts: &[ConnectAttempt]) -> Option<&ConnectAttempt> {
    let rank = |o: ConnectOutcome| match o {
        ConnectOutcome::Refused => 0,
        ConnectOutcome::Unreachable => 1,
        ConnectOutcome::Timeout => 2,
        _ => 3,
    };
    attempts
        .iter()
        .filter(|a| a.outcome != ConnectOutcome::Connected)
        .min_by_key(|a| rank(a.outcome))
}
