//! What DNS answered: each server's reply for each name asked, and the resolution a host got
//! (its addresses, where they came from, the CNAME chain).

use std::net::IpAddr;

/// What one nameserver said about one name.
#[derive(Debug, Clone)]
pub struct ServerAnswer {
    pub server: IpAddr,
    pub name: String,
    pub outcome: ServerReply,
    pub addresses: Vec<IpAddr>,
    pub cname_chain: Vec<String>,
    pub elapsed_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerReply {
    Answer,
    /// The name exists but has no address record.
    NoData,
    NxDomain,
    ServFail,
    Refused,
    Timeout,
    Error,
}

/// Where a host's addresses came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameSource {
    /// The node's nameservers.
    Dns,
    /// `/etc/hosts` (a hand fix, when it hides what DNS says).
    HostsFile,
    /// The name is an IP literal: nothing to look up.
    IpLiteral,
    /// The runtime's proxy resolves it (`CONNECT host`), not the node.
    Proxy,
}

impl NameSource {
    /// The report's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            NameSource::Dns => "dns",
            NameSource::HostsFile => "hosts-file",
            NameSource::IpLiteral => "ip-literal",
            NameSource::Proxy => "proxy",
        }
    }
}

/// The resolution of one host.
#[derive(Debug, Clone)]
pub struct Resolution {
    pub host: String,
    pub source: NameSource,
    pub addresses: Vec<IpAddr>,
    pub cname_chain: Vec<String>,
    pub answered_by: Option<IpAddr>,
    /// Every server's answer for every name asked.
    pub servers: Vec<ServerAnswer>,
    /// Set when `/etc/hosts` decided: what the entry is, and what DNS alone would give.
    pub hand_fix: Option<String>,
}

/// A name that resolved through a `privatelink` CNAME to public addresses: the node's
/// resolver answered from public DNS, so the private zone is not linked to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicBehindPrivateLink {
    /// The privatelink name in the CNAME chain.
    pub privatelink_name: String,
    /// The public addresses it gave.
    pub public: Vec<IpAddr>,
    /// True when every address is public: the node is sent to the public endpoint only.
    pub only_public: bool,
}

impl Resolution {
    /// A host the node does not resolve because the runtime's proxy does (`CONNECT host`).
    pub fn by_proxy(host: &str) -> Resolution {
        Resolution {
            host: host.to_string(),
            source: NameSource::Proxy,
            addresses: vec![],
            cname_chain: vec![],
            answered_by: None,
            servers: vec![],
            hand_fix: None,
        }
    }

    /// The privatelink rule, in one place.
    pub fn public_behind_private_link(&self) -> Option<PublicBehindPrivateLink> {
        let privatelink_name = self
            .cname_chain
            .iter()
            .find(|c| c.contains("privatelink"))?;
        let public: Vec<IpAddr> = self
            .addresses
            .iter()
            .copied()
            .filter(|a| !is_private(*a))
            .collect();
        (!public.is_empty()).then(|| PublicBehindPrivateLink {
            privatelink_name: privatelink_name.clone(),
            only_public: public.len() == self.addresses.len(),
            public,
        })
    }
}

/// Private (RFC 1918, CGNAT, ULA, loopback, link-local) or public.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || (o[0] == 100 && (64..128).contains(&o[1]))
        }
        IpAddr::V6(v6) => {
            v6.is_loopback()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}
