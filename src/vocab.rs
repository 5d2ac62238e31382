//! The shared vocabulary of shared/DESIGN.md: layers, hops, owners, runtimes.
//!
//! Every verdict, whether it comes from a probe or from failure text, speaks in these words, and
//! the JSON report spells them exactly as [`Layer::as_str`] and friends do.

use std::fmt;

use serde::Serialize;

/// Why a hop failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// The name did not resolve (NXDOMAIN, SERVFAIL, resolver unreachable).
    Dns,
    /// No TCP connection: no route, unreachable, dial or header timeout.
    Route,
    /// Something answered and closed: refused, reset, EOF.
    Refused,
    /// Certificate or handshake.
    Tls,
    /// 401: no or wrong credentials.
    Auth,
    /// 403, denied, insufficient scope.
    Forbidden,
    /// Repository, tag or digest missing.
    #[serde(rename = "notfound")]
    NotFound,
    /// No manifest for the node's OS/architecture.
    Platform,
    /// 429, toomanyrequests.
    #[serde(rename = "ratelimit")]
    RateLimit,
    /// The proxy itself failed.
    Proxy,
    /// The manifest step worked and a blob download failed (mechanism in `cause`).
    Blob,
    /// Everything else: 5xx, invalid reference, disk full, runtime deadlines, bare back-off.
    Other,
}

impl Layer {
    pub const ALL: [Layer; 12] = [
        Layer::Dns,
        Layer::Route,
        Layer::Refused,
        Layer::Tls,
        Layer::Auth,
        Layer::Forbidden,
        Layer::NotFound,
        Layer::Platform,
        Layer::RateLimit,
        Layer::Proxy,
        Layer::Blob,
        Layer::Other,
    ];

    /// What an HTTP error status means on any request of a pull, probe's and explain's alike.
    pub fn from_http_status(status: u16) -> Layer {
        match status {
            401 => Layer::Auth,
            403 => Layer::Forbidden,
            404 => Layer::NotFound,
            407 => Layer::Proxy,
            429 => Layer::RateLimit,
            _ => Layer::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Dns => "dns",
            Layer::Route => "route",
            Layer::Refused => "refused",
            Layer::Tls => "tls",
            Layer::Auth => "auth",
            Layer::Forbidden => "forbidden",
            Layer::NotFound => "notfound",
            Layer::Platform => "platform",
            Layer::RateLimit => "ratelimit",
            Layer::Proxy => "proxy",
            Layer::Blob => "blob",
            Layer::Other => "other",
        }
    }
}

/// Which request of the pull failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Hop {
    /// The registry API: ping, manifest.
    Registry,
    /// The token realm (or a cloud credential API).
    Auth,
    /// Config and layer blobs, after redirects.
    Blob,
    /// The HTTP(S) proxy in between.
    Proxy,
    /// A containerd `hosts.toml` mirror.
    Mirror,
    /// The text names no request.
    Unknown,
}

impl Hop {
    pub fn as_str(self) -> &'static str {
        match self {
            Hop::Registry => "registry",
            Hop::Auth => "auth",
            Hop::Blob => "blob",
            Hop::Proxy => "proxy",
            Hop::Mirror => "mirror",
            Hop::Unknown => "unknown",
        }
    }

    /// The vocabulary's hop rule (shared/DESIGN.md), the one place it is written: anything
    /// failing on the blob hop is layer `blob`, with how it failed beside it as the mechanism
    /// (`other` when the blob itself is what failed: a digest mismatch); anything failing on the
    /// proxy hop is layer `proxy`; elsewhere the mechanism is the layer. Probe, explain and the
    /// Azure analysis all name their layer through it.
    pub fn layer_of(self, mechanism: Layer) -> (Layer, Option<Layer>) {
        match (self, mechanism) {
            (Hop::Blob, Layer::Blob) => (Layer::Blob, Some(Layer::Other)),
            (Hop::Blob, mechanism) => (Layer::Blob, Some(mechanism)),
            (Hop::Proxy, _) => (Layer::Proxy, None),
            (_, layer) => (layer, None),
        }
    }
}

/// Who fixes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Owner {
    /// Resolvers, private zone links, conditional forwarders.
    DnsTeam,
    /// Routes, gateway transit, firewalls, return paths, proxies.
    NetworkTeam,
    /// The registry and its certificates, storage and limits.
    RegistryPki,
    /// Credentials, roles, scopes.
    Identity,
    /// Image name, tag, platform.
    ApplicationTeam,
    /// The node itself: runtime, disk, kubelet.
    NodeOperator,
}

impl Owner {
    pub fn as_str(self) -> &'static str {
        match self {
            Owner::DnsTeam => "dns-team",
            Owner::NetworkTeam => "network-team",
            Owner::RegistryPki => "registry-pki",
            Owner::Identity => "identity",
            Owner::ApplicationTeam => "application-team",
            Owner::NodeOperator => "node-operator",
        }
    }

    /// Words for a person.
    pub fn title(self) -> &'static str {
        match self {
            Owner::DnsTeam => "DNS team (resolver, private zone links)",
            Owner::NetworkTeam => "network team (routes, firewall, return path, proxy)",
            Owner::RegistryPki => "registry / PKI (certificates, trust, registry service)",
            Owner::Identity => "identity (credentials, role, scope)",
            Owner::ApplicationTeam => "application team (image name, tag, platform)",
            Owner::NodeOperator => "node operator (runtime, disk, kubelet)",
        }
    }
}

/// What failed on the node itself, beside the layer: the kubelet or the runtime stopped the pull
/// (or never started it) for a reason of the node's or the workload's own, with no request of
/// the pull to blame. A typed cause rather than a layer of its own: the layers name where on the
/// pull path a request broke and are shared by every command, the exit statuses and the labelled
/// corpus, where these are `other` (or `ratelimit` for the kubelet's own limit, or `blob` for a
/// transfer cut short); the cause says which node matter it is, and the advice follows it
/// (docs/report-schema.md, `node_cause`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum NodeCause {
    /// The image is not on the node and `imagePullPolicy: Never` forbids pulling it
    /// (`ErrImageNeverPull`): the workload's spec.
    PullPolicy,
    /// The node's disk filled while the layers were written or unpacked (`ENOSPC`).
    Disk,
    /// Extracting or unpacking a downloaded layer into the snapshotter or storage failed.
    Unpack,
    /// The pull ran out of time with the transfer under way: a slow download, the runtime's
    /// progress timeout (containerd's `image_pull_progress_timeout`) or the call's deadline.
    SlowTransfer,
    /// The deadline of the kubelet's call to the runtime ran out, and the text does not say
    /// whether bytes were flowing (a slow transfer) or a dial was hanging (a route).
    PullDeadline,
    /// The kubelet's own pull limit (`registryPullQPS`, `registryBurst`): no request was made.
    PullQps,
    /// The kubelet could not parse the image reference (`InvalidImageName`).
    InvalidName,
    /// The kubelet could not ask the runtime about the image (`ImageInspectError`).
    Inspect,
}

impl NodeCause {
    pub fn as_str(self) -> &'static str {
        match self {
            NodeCause::PullPolicy => "pull-policy",
            NodeCause::Disk => "disk",
            NodeCause::Unpack => "unpack",
            NodeCause::SlowTransfer => "slow-transfer",
            NodeCause::PullDeadline => "pull-deadline",
            NodeCause::PullQps => "pull-qps",
            NodeCause::InvalidName => "invalid-name",
            NodeCause::Inspect => "inspect",
        }
    }
}

/// The program that produced a failure text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    Containerd,
    Crio,
    Docker,
    Unknown,
}

impl Runtime {
    pub fn as_str(self) -> &'static str {
        match self {
            Runtime::Containerd => "containerd",
            Runtime::Crio => "crio",
            Runtime::Docker => "docker",
            Runtime::Unknown => "unknown",
        }
    }
}

macro_rules! display_as_str {
    ($($t:ty),*) => {$(
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
display_as_str!(Layer, Hop, Owner, Runtime, NodeCause);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hop_rule_names_every_layer() {
        assert_eq!(
            Hop::Blob.layer_of(Layer::Route),
            (Layer::Blob, Some(Layer::Route))
        );
        assert_eq!(
            Hop::Blob.layer_of(Layer::Blob),
            (Layer::Blob, Some(Layer::Other))
        );
        assert_eq!(Hop::Proxy.layer_of(Layer::Refused), (Layer::Proxy, None));
        for hop in [Hop::Registry, Hop::Auth, Hop::Mirror, Hop::Unknown] {
            assert_eq!(hop.layer_of(Layer::Tls), (Layer::Tls, None), "{hop}");
        }
    }
}
