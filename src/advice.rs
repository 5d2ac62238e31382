//! What a person does with a verdict: who owns it, where to look, what will not help.
//!
//! One table for probe and explain alike, keyed by layer (and, for the blob hop, by the
//! mechanism underneath), so both commands give the same advice for the same failure.

use crate::vocab::{Hop, Layer, NodeCause, Owner};

mod network_rule;
mod node;
pub mod platform;

pub use network_rule::{ACR_ADDRESS_REFUSAL, RefusedClient};

/// Advice for one verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advice {
    pub owner: Owner,
    pub where_to_look: Vec<Look>,
    pub will_not_help: Vec<String>,
}

impl Advice {
    /// The places to look, in words, in order: what reports carry.
    pub fn where_to_look_words(&self) -> Vec<String> {
        self.where_to_look.iter().map(Look::to_string).collect()
    }
}

/// One place to look. The places code adjusts (replaces, drops, puts first) are variants of
/// their own, so advice is changed by what a place is, never by searching its words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Look {
    /// A place from the layer's table, in its words.
    Table(String),
    /// The certificate `host` presents to the node, fetched directly from the node.
    CertificateFromNode { host: String },
    /// The certificate the node gets for `host` through its proxy at `proxy` (`host:port`).
    CertificateThroughProxy { proxy: String, host: String },
    /// `pullpath azure`: the exports name the missing route, flag, link or rule for `registry`.
    AzureExports { registry: String },
    /// Something observed about this failure, in words (the credential presented, DNS sending
    /// the node to a public address through a privatelink name): the first thing to check.
    Observed(String),
    /// The image names a registry with no repository, so Docker Hub was asked for `name`.
    RegistryWithoutRepository { name: String },
}

impl std::fmt::Display for Look {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Look::Table(words) | Look::Observed(words) => f.write_str(words),
            Look::CertificateFromNode { host } => write!(
                f,
                "the certificate {host} presents: `openssl s_client -connect {host}:443 -servername {host}` from the node"
            ),
            Look::CertificateThroughProxy { proxy, host } => write!(
                f,
                "the certificate the node gets through its proxy: `openssl s_client -proxy {proxy} -connect {host}:443 -servername {host}`; an issuer of the proxy's own CA means the proxy inspects TLS: exempt the registry's hosts from inspection, or add the proxy's CA to the runtime's trust"
            ),
            Look::AzureExports { registry } => write!(
                f,
                "next: `pullpath azure commands --cluster CLUSTER -g RG --registry {registry}`, run the printed read-only `az` commands, then `pullpath azure analyse DIR`: which route, peering flag, DNS link or rule is missing, for every node pool"
            ),
            Look::RegistryWithoutRepository { name } => write!(
                f,
                "the image name `{name}` is a registry with no repository: a name without `/` is read as Docker Hub's `docker.io/library/{name}`, so the pull asked Docker Hub; write `{name}/REPOSITORY:TAG`"
            ),
        }
    }
}

impl From<String> for Look {
    fn from(words: String) -> Self {
        Look::Table(words)
    }
}

impl From<&str> for Look {
    fn from(words: &str) -> Self {
        Look::Table(words.to_string())
    }
}

const NODE_NOT_POD: &str = "a VPN sidecar, pod DNS settings or a test from inside a pod: the node pulls through its own network and resolver before any container of the pod exists";
const CREDENTIALS_NO_ROUTE: &str = "imagePullSecrets or other credentials: no credential installs a route, changes a resolver or opens a firewall";

/// What was observed beyond the layer that changes who owns a failure.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Observed {
    /// DNS sent the node to a public address through a privatelink name: the words saying so.
    /// A connection that then fails is the DNS team's, not the network's.
    pub public_behind_private_link: Option<String>,
    /// Whether the runtime presented a credential for the failing host, in words: the first
    /// thing to check when the answer was about the credential.
    pub credential: Option<String>,
    /// The failing host was reached through the runtime's proxy (its URL, credentials redacted).
    pub through_proxy: Option<String>,
    /// The image names a registry host and no repository, so it was pulled from Docker Hub
    /// ([`crate::image_ref::registry_read_as_repository`]): the name, whatever the layer.
    pub registry_as_repository: Option<String>,
    /// The node's own failure (disk, pull policy, a slow transfer …): its advice replaces the
    /// layer's, whose places belong to a request that failed.
    pub node_cause: Option<NodeCause>,
    /// The registry's network rules refused the node by its address: no identity is at fault,
    /// and the address says where the node came from.
    pub refused_client: Option<RefusedClient>,
}

/// Advice for a failure, with what was observed about it: computed once, for both commands.
pub fn advise_observed(
    layer: Layer,
    mechanism: Option<Layer>,
    hop: Hop,
    host: &str,
    observed: &Observed,
) -> Advice {
    let mut advice = match observed.node_cause {
        Some(cause) => node::advise_node(cause),
        None => advise(layer, mechanism, hop, host),
    };
    if let Some(client) = &observed.refused_client {
        // The registry's own rules, not the identity's rights: the layer's table speaks of the
        // identity first, so its places give way.
        advice = Advice {
            owner: client.owner(),
            where_to_look: vec![
                Look::Observed(client.meaning(host)),
                "the registry's network rules: public network access, the IP and virtual network rules, its private endpoints and their approval".into(),
            ],
            will_not_help: client.will_not_help(),
        };
        advice.where_to_look.extend(azure_exports(host));
    }
    if let Some(credential) = &observed.credential {
        advice
            .where_to_look
            .insert(0, Look::Observed(credential.clone()));
    }
    if let Some(proxy) = &observed.through_proxy
        && mechanism.unwrap_or(layer) == Layer::Tls
    {
        // Through a proxy the certificate may be the proxy's own: check it the way the node
        // sees it, through the proxy.
        let authority = url::Url::parse(proxy)
            .ok()
            .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
            .unwrap_or_else(|| proxy.clone());
        advice
            .where_to_look
            .retain(|w| !matches!(w, Look::CertificateFromNode { .. }));
        advice.where_to_look.insert(
            0,
            Look::CertificateThroughProxy {
                proxy: authority,
                host: host.to_string(),
            },
        );
    }
    if let Some(zone) = &observed.public_behind_private_link
        && matches!(
            mechanism.unwrap_or(layer),
            Layer::Route | Layer::Refused | Layer::Tls
        )
    {
        advice.owner = Owner::DnsTeam;
        advice.where_to_look.insert(0, Look::Observed(zone.clone()));
    }
    if let Some(name) = &observed.registry_as_repository {
        // Whatever failed on the way to Docker Hub, the fix is the name in the pod spec.
        advice.owner = Owner::ApplicationTeam;
        advice
            .where_to_look
            .insert(0, Look::RegistryWithoutRepository { name: name.clone() });
    }
    advice
}

/// Advice for a failure at `layer` on `hop` against `host` (`mechanism` for the blob hop).
pub fn advise(layer: Layer, mechanism: Option<Layer>, hop: Hop, host: &str) -> Advice {
    let named = host;
    let host = if host.is_empty() {
        "the registry"
    } else {
        host
    };
    let s = |t: &str| Look::Table(t.replace("{host}", host));
    let mut advice = match layer {
        Layer::Dns => Advice {
            owner: Owner::DnsTeam,
            where_to_look: vec![
                s("the node's /etc/resolv.conf and the resolver it names: does it answer {host}?"),
                s("the private DNS zone for {host} and its link to the node's network (VNet/VPC link, conditional forwarder)"),
                "an /etc/hosts entry on older nodes that hides the same gap (a hand fix)".into(),
            ],
            will_not_help: vec![CREDENTIALS_NO_ROUTE.into(), NODE_NOT_POD.into()],
        },
        Layer::Route => Advice {
            owner: Owner::NetworkTeam,
            where_to_look: vec![
                s("the node subnet's route table toward {host}'s address (peering, gateway transit, UDR)"),
                "firewalls and security groups in both directions, and the return route from the registry's network".into(),
                "an egress allow-list or proxy the node must use".into(),
            ],
            will_not_help: vec![CREDENTIALS_NO_ROUTE.into(), NODE_NOT_POD.into()],
        },
        Layer::Refused => Advice {
            owner: Owner::NetworkTeam,
            where_to_look: vec![
                s("whether {host} listens on that address and port (the resolved address may be the wrong one)"),
                "a firewall or load balancer that resets or closes the connection".into(),
            ],
            will_not_help: vec![CREDENTIALS_NO_ROUTE.into()],
        },
        Layer::Tls => Advice {
            owner: Owner::RegistryPki,
            where_to_look: vec![
                Look::CertificateFromNode { host: host.to_string() },
                s("the runtime's trust for {host}: /etc/containerd/certs.d/{host}/hosts.toml (`ca = …`) and the node's system store"),
                "a TLS-inspecting proxy or firewall that replaces the certificate".into(),
            ],
            will_not_help: vec![
                "imagePullSecrets: credentials make no untrusted certificate valid".into(),
                "adding the CA inside the pod or the image: the runtime verifies with the node's trust".into(),
            ],
        },
        Layer::Auth => Advice {
            owner: Owner::Identity,
            where_to_look: vec![
                "the pod's imagePullSecrets (namespace, registry name inside the secret, expiry)".into(),
                "the node's identity or kubelet credential provider for this registry".into(),
            ],
            will_not_help: vec!["network or DNS changes: the registry answered, so the path works".into()],
        },
        Layer::Forbidden => Advice {
            owner: Owner::Identity,
            where_to_look: vec![
                "the identity's role or scope on this repository (pull rights)".into(),
                "the registry's network rules (public access disabled, IP allow-lists)".into(),
            ],
            will_not_help: vec![
                "re-entering the same credentials: they are accepted but lack the rights".into(),
                "DNS changes: the registry answered".into(),
            ],
        },
        Layer::NotFound => Advice {
            owner: Owner::ApplicationTeam,
            where_to_look: vec![
                "the image name and tag in the pod spec (typos, a tag never pushed, the wrong registry path)".into(),
                "the registry's tag list for the repository".into(),
            ],
            will_not_help: vec!["network or DNS changes: the registry answered".into()],
        },
        Layer::Platform => Advice {
            owner: Owner::ApplicationTeam,
            where_to_look: vec![
                "the platforms in the image index against the node's OS and architecture (`kubectl get node -o wide`)".into(),
                "node selectors that send the pod to a node pool of another architecture".into(),
            ],
            will_not_help: vec!["credentials or network changes: the manifest was fetched".into()],
        },
        // The kubelet's own limit (`pull QPS exceeded`): no request left the node.
        Layer::RateLimit if hop == Hop::Unknown => node::advise_node(NodeCause::PullQps),
        Layer::RateLimit => Advice {
            owner: Owner::Identity,
            where_to_look: vec![
                "authenticated pulls (a pull secret raises the limit) or a pull-through mirror".into(),
                "how many nodes pull the same image at once (scale-up, node replacement)".into(),
            ],
            will_not_help: vec!["restarting the pod right away: it spends the limit again (containerd asks six times for each refused pull, without waiting for Retry-After)".into()],
        },
        Layer::Proxy => Advice {
            owner: Owner::NetworkTeam,
            where_to_look: vec![
                "the runtime's proxy settings (HTTPS_PROXY / NO_PROXY in containerd's service environment)".into(),
                "the proxy's own log and its allow-list for the registry and blob hosts".into(),
            ],
            will_not_help: vec!["registry credentials: the proxy refused before the registry was reached".into()],
        },
        Layer::Blob => blob(mechanism, named),
        Layer::Other => Advice {
            owner: if hop == Hop::Unknown { Owner::NodeOperator } else { Owner::RegistryPki },
            where_to_look: vec![
                "the runtime's log on the node (journalctl -u containerd) around the event's time".into(),
                "the registry's status when it answered 5xx".into(),
            ],
            will_not_help: vec![],
        },
    };
    if let Some(step) = azure_next_step(layer, mechanism, host) {
        advice.where_to_look.push(step);
    }
    advice
}

/// For DNS and route failures on an ACR host (`*.azurecr.io`, its data endpoints included),
/// the Azure exports can name the missing link, route or flag per node pool.
fn azure_next_step(layer: Layer, mechanism: Option<Layer>, host: &str) -> Option<Look> {
    let network = matches!(layer, Layer::Dns | Layer::Route)
        || (layer == Layer::Blob && matches!(mechanism, Some(Layer::Dns | Layer::Route)));
    network.then(|| azure_exports(host)).flatten()
}

/// `pullpath azure` for an ACR host (`*.azurecr.io`, its data endpoints included).
fn azure_exports(host: &str) -> Option<Look> {
    match platform::Platform::of(host)? {
        platform::Platform::Acr { registry } => Some(Look::AzureExports { registry }),
        _ => None,
    }
}

/// `host` as the text named it, empty when it named none.
fn blob(mechanism: Option<Layer>, host: &str) -> Advice {
    let owner = match mechanism {
        Some(Layer::Dns) => Owner::DnsTeam,
        Some(Layer::Tls) => Owner::RegistryPki,
        Some(Layer::Route | Layer::Refused | Layer::Proxy) => Owner::NetworkTeam,
        Some(Layer::Auth | Layer::Forbidden) => Owner::Identity,
        _ => Owner::RegistryPki,
    };
    Advice {
        owner,
        where_to_look: vec![
            format!("{}: the node's DNS answer, route and firewall allow-list for it (registry data endpoints, storage accounts, CDNs)", if host.is_empty() {
                "the blob host (the text names none: the registry's storage or CDN endpoint its redirects lead to)".to_string()
            } else {
                format!("the blob host {host}")
            }).into(),
            "the registry's documented data endpoints: every one must be reachable from the node, not just the registry host".into(),
        ],
        will_not_help: vec![
            "registry credentials: blob hosts take signed URLs, and the registry's Authorization header is not sent to them".into(),
            "opening the firewall for the registry host alone: the manifest already came through, the layers come from another host".into(),
            NODE_NOT_POD.into(),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_layers_say_credentials_will_not_help() {
        for layer in [Layer::Dns, Layer::Route, Layer::Refused] {
            let advice = advise(layer, None, Hop::Registry, "r.example");
            assert!(
                advice
                    .will_not_help
                    .iter()
                    .any(|w| w.contains("credential")),
                "{layer}"
            );
        }
    }

    #[test]
    fn dns_to_the_public_endpoint_makes_a_failed_connection_the_dns_teams() {
        let observed = Observed {
            public_behind_private_link: Some("r resolves through privatelink".into()),
            ..Observed::default()
        };
        let advice = advise_observed(Layer::Route, None, Hop::Registry, "r", &observed);
        assert_eq!(advice.owner, Owner::DnsTeam);
        assert!(advice.where_to_look[0].to_string().contains("privatelink"));
        let auth = advise_observed(Layer::Auth, None, Hop::Auth, "r", &observed);
        assert_eq!(auth.owner, Owner::Identity);
    }

    #[test]
    fn a_registry_without_a_repository_is_the_names_fault_whatever_failed() {
        let observed = Observed {
            registry_as_repository: Some("r.example.com".into()),
            ..Observed::default()
        };
        for layer in [Layer::NotFound, Layer::Dns] {
            let advice = advise_observed(layer, None, Hop::Registry, "docker.io", &observed);
            assert_eq!(advice.owner, Owner::ApplicationTeam, "{layer}");
            assert!(
                advice.where_to_look[0]
                    .to_string()
                    .contains("`docker.io/library/r.example.com`"),
                "{advice:?}"
            );
        }
    }

    #[test]
    fn dns_and_route_failures_on_acr_hosts_point_to_pullpath_azure() {
        let mentions = |a: &Advice| {
            a.where_to_look
                .iter()
                .any(|w| matches!(w, Look::AzureExports { .. }))
        };
        let login = advise(Layer::Dns, None, Hop::Registry, "contosoreg.azurecr.io:443");
        assert!(mentions(&login));
        assert!(
            login
                .where_to_look
                .iter()
                .any(|w| w.to_string().contains("--registry contosoreg`"))
        );
        let data = advise(
            Layer::Blob,
            Some(Layer::Route),
            Hop::Blob,
            "contosoreg.westeurope.data.azurecr.io",
        );
        assert!(mentions(&data));
        assert!(mentions(&advise(
            Layer::Route,
            None,
            Hop::Registry,
            "ContosoReg.AzureCR.io"
        )));
        // Not for other layers, nor other registries.
        assert!(!mentions(&advise(
            Layer::Auth,
            None,
            Hop::Registry,
            "contosoreg.azurecr.io"
        )));
        assert!(!mentions(&advise(
            Layer::Dns,
            None,
            Hop::Registry,
            "registry.example.com"
        )));
        assert!(!mentions(&advise(
            Layer::Dns,
            None,
            Hop::Registry,
            "azurecr.io.evil.example"
        )));
    }

    #[test]
    fn blob_owner_follows_the_mechanism_and_names_the_host() {
        let advice = advise(
            Layer::Blob,
            Some(Layer::Dns),
            Hop::Blob,
            "store.blob.example",
        );
        assert_eq!(advice.owner, Owner::DnsTeam);
        assert!(
            advice.where_to_look[0]
                .to_string()
                .contains("store.blob.example")
        );
        assert_eq!(
            advise(Layer::Blob, Some(Layer::Route), Hop::Blob, "x").owner,
            Owner::NetworkTeam
        );
    }
}
