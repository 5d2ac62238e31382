//! The path as walked: every hop in order, each with its steps and what they showed, worded for
//! the person reading the report.

use std::time::Duration;

use super::authority::Authority;
use super::check::HostCheck;
use super::observed::dns::{NameSource, is_private};
use super::step::Step;
use crate::vocab::Hop;

/// One hop of the path: a host, reached for one purpose, with its steps in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathHop {
    pub hop: Hop,
    pub authority: Authority,
    pub steps: Vec<PathStep>,
}

/// One step: dns, route, connect, tls, `GET /v2/`, `token …`, `manifest …`, a redirect, a blob.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathStep {
    pub step: String,
    pub ok: bool,
    pub detail: String,
    pub elapsed: Option<Duration>,
}

/// The path being recorded.
#[derive(Debug, Default)]
pub struct PullPath {
    pub hops: Vec<PathHop>,
}

impl PullPath {
    /// Record a step under `hop`/`authority`, starting a new hop entry when the path moves on.
    pub fn record(
        &mut self,
        hop: Hop,
        authority: &Authority,
        step: impl std::fmt::Display,
        ok: bool,
        detail: impl Into<String>,
        elapsed: Option<Duration>,
    ) {
        let same = self
            .hops
            .last()
            .is_some_and(|h| h.hop == hop && h.authority == *authority);
        if !same {
            self.hops.push(PathHop {
                hop,
                authority: authority.clone(),
                steps: vec![],
            });
        }
        if let Some(last) = self.hops.last_mut() {
            last.steps.push(PathStep {
                step: step.to_string(),
                ok,
                detail: detail.into(),
                elapsed,
            });
        }
    }

    /// The hop and host the path is at: where a deadline finds the walk.
    pub fn last(&self) -> Option<(Hop, &Authority)> {
        self.hops.last().map(|h| (h.hop, &h.authority))
    }

    /// A host's check, step by step, up to the first that failed.
    pub fn record_host(&mut self, authority: &Authority, check: &HostCheck) {
        let hop = check.hop;
        if let Some(tunnel) = &check.tunnel {
            let ok = tunnel.is_open();
            let detail = format!("through {}: {}", tunnel.proxy, tunnel.detail);
            self.record(hop, authority, Step::Tunnel, ok, detail, None);
            self.record_tls(authority, check);
            return;
        }
        if check.dns.source == NameSource::Proxy {
            if let Some(f) = &check.failure {
                self.record(hop, authority, &f.step, false, f.evidence.to_string(), None);
            }
            return;
        }
        let dns = &check.dns;
        let dns_ok = !dns.addresses.is_empty();
        self.record(hop, authority, Step::Dns, dns_ok, dns_words(check), None);
        if !dns_ok || check.routes.is_empty() {
            return;
        }
        let route_ok = check.routes.iter().any(|r| r.has_route());
        let detail = check
            .routes
            .iter()
            .map(|r| r.describe())
            .collect::<Vec<_>>()
            .join("; ");
        self.record(hop, authority, Step::Route, route_ok, detail, None);
        if !route_ok || check.connect.is_empty() {
            return;
        }
        let detail = match (&check.address, &check.failure) {
            (Some(a), _) => {
                let ms = check
                    .connect
                    .iter()
                    .find(|c| c.address == *a)
                    .map_or(0, |c| c.elapsed_ms);
                format!("{a} in {ms} ms")
            }
            (None, Some(f)) => f.evidence.to_string(),
            (None, None) => String::new(),
        };
        self.record(
            hop,
            authority,
            Step::Connect,
            check.address.is_some(),
            detail,
            None,
        );
        self.record_tls(authority, check);
        if let Some(f) = check.failure.as_ref().filter(|f| f.step == Step::Http) {
            self.record(
                hop,
                authority,
                Step::Http,
                false,
                f.evidence.to_string(),
                None,
            );
        }
    }

    fn record_tls(&mut self, authority: &Authority, check: &HostCheck) {
        let hop = check.hop;
        if let Some(tls) = &check.tls {
            let detail = match (&tls.problem, tls.chain.first()) {
                (Some(p), _) => p.to_string(),
                (None, Some(leaf)) => format!(
                    "{} issued by {}, valid until {}",
                    leaf.names.join(", "),
                    leaf.issuer,
                    leaf.not_after
                ),
                (None, None) => "handshake complete".into(),
            };
            let elapsed = Some(Duration::from_millis(tls.elapsed_ms));
            self.record(hop, authority, Step::Tls, tls.ok, detail, elapsed);
        }
    }
}

/// What DNS said about a host, for the path.
fn dns_words(check: &HostCheck) -> String {
    let dns = &check.dns;
    if let Some(why) = dns.failure() {
        return why.to_string();
    }
    if dns.source == NameSource::IpLiteral {
        return "IP literal, no lookup".into();
    }
    let scope = |a: &std::net::IpAddr| if is_private(*a) { "private" } else { "public" };
    let mut s = dns
        .addresses
        .iter()
        .map(|a| format!("{a} ({})", scope(a)))
        .collect::<Vec<_>>()
        .join(", ");
    if !dns.cname_chain.is_empty() {
        s.push_str(&format!(" via CNAME {}", dns.cname_chain.join(" → ")));
    }
    match (dns.source, dns.answered_by) {
        (NameSource::HostsFile, _) => s.push_str(" from /etc/hosts (hand fix)"),
        (_, Some(server)) => s.push_str(&format!(" (answered by {server})")),
        _ => {}
    }
    if let Some(public) = dns.public_behind_private_link() {
        let list: Vec<String> = public.public.iter().map(ToString::to_string).collect();
        s.push_str(&format!(
            "; public address {} behind a privatelink name: the private zone may not be linked",
            list.join(", ")
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_group_under_their_hop_and_host() {
        let registry = Authority::parse("r.example", 443).expect("a");
        let store = Authority::parse("store.example", 443).expect("a");
        let mut path = PullPath::default();
        path.record(Hop::Registry, &registry, "dns", true, "10.0.0.1", None);
        path.record(Hop::Registry, &registry, "tls", true, "ok", None);
        path.record(Hop::Blob, &store, "layer", false, "unreachable", None);
        path.record(Hop::Registry, &registry, "manifest", true, "ok", None);
        let shape: Vec<(Hop, usize)> = path.hops.iter().map(|h| (h.hop, h.steps.len())).collect();
        assert_eq!(
            shape,
            [(Hop::Registry, 2), (Hop::Blob, 1), (Hop::Registry, 1)]
        );
        assert_eq!(path.last(), Some((Hop::Registry, &registry)));
    }
}
