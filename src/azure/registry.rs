//! The registry's side: which endpoints a pull touches, and whether the registry's own network
//! rules let a node in.
//!
//! Endpoints (MicrosoftDocs/azure-docs `articles/container-registry/container-registry-endpoint-reference.md`):
//! the login server `<reg>.azurecr.io`; layer blobs from `<reg>.<region>.data.azurecr.io` per
//! replica region for registries with dedicated data endpoints **or private endpoints**, and
//! from the registry's storage account `*.blob.core.windows.net` otherwise. Rules
//! (`container-registry-private-link.md`, `container-registry-firewall-access-rules.md`):
//! `publicNetworkAccess: Disabled` refuses every client that arrives over a public address
//! with 403 `client with IP '…' is not allowed access`; `networkRuleSet.defaultAction: Deny`
//! admits only `ipRules`; a private endpoint carries traffic only once its connection is
//! `Approved`. Shapes: `Registry` in Azure/azure-rest-api-specs
//! `specification/containerregistry/…/2023-07-01/containerregistry.json` and `az acr show`.

use std::net::Ipv4Addr;

use crate::advice::ACR_ADDRESS_REFUSAL;
use crate::vocab::{Hop, Layer, Owner};

use super::finding::{Finding, Step, show};
use super::model::{Network, PrivateEndpoint, Registry};
use super::shape;

/// What an endpoint is to the pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Role {
    /// The login server: `/v2/`, the token, manifests.
    Login,
    /// A dedicated data endpoint of one region.
    Data { region: String },
    /// The registry's storage account (dedicated data endpoints off, no private endpoint).
    Storage,
    /// An endpoint outside Azure from `endpoints.json` (an on-premises registry or mirror).
    Outside { address: Ipv4Addr },
}

impl Role {
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Login => "login-server",
            Role::Data { .. } => "data-endpoint",
            Role::Storage => "storage",
            Role::Outside { .. } => "outside-azure",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub host: String,
    pub role: Role,
}

impl Endpoint {
    pub fn hop(&self) -> Hop {
        match self.role {
            Role::Login => Hop::Registry,
            Role::Data { .. } | Role::Storage => Hop::Blob,
            Role::Outside { .. } => Hop::Mirror,
        }
    }

    /// Service tags an NSG or route may name for this endpoint's public addresses.
    pub fn service_tags(&self) -> &'static [&'static str] {
        match self.role {
            Role::Login | Role::Data { .. } => &["AzureContainerRegistry"],
            Role::Storage => &["Storage"],
            Role::Outside { .. } => &[],
        }
    }
}

/// An approved private endpoint of the registry exists (from either side's export).
pub fn has_private_endpoint(network: &Network, registry: &Registry) -> bool {
    let approved = |status: &str| shape::same(status, "Approved");
    registry
        .private_endpoint_connections
        .iter()
        .any(|(_, status)| approved(status))
        || registry.id.as_ref().is_some_and(|id| {
            network
                .private_endpoints
                .iter()
                .any(|pe| pe.connection_to(id).is_some_and(approved))
        })
}

/// The private endpoint that serves `host`, with the addresses it serves it on.
pub fn private_endpoint_for<'a>(
    network: &'a Network,
    host: &str,
) -> Option<(&'a PrivateEndpoint, &'a [Ipv4Addr])> {
    network.private_endpoints.iter().find_map(|pe| {
        pe.dns
            .iter()
            .find(|(fqdn, _)| fqdn.eq_ignore_ascii_case(host))
            .map(|(_, addresses)| (pe, addresses.as_slice()))
    })
}

/// The private endpoint that owns `address`.
pub fn private_endpoint_at(network: &Network, address: Ipv4Addr) -> Option<&PrivateEndpoint> {
    network
        .private_endpoints
        .iter()
        .find(|pe| pe.dns.iter().any(|(_, a)| a.contains(&address)))
}

/// Every endpoint of the pull, login server first.
pub fn endpoints(network: &Network) -> Vec<Endpoint> {
    let mut endpoints = Vec::new();
    if let Some(registry) = &network.registry {
        endpoints.push(Endpoint {
            host: registry.login_server.to_ascii_lowercase(),
            role: Role::Login,
        });
        let mut data: Vec<(String, String)> = network
            .data_endpoints
            .iter()
            .filter(|(host, _)| host.ends_with(".data.azurecr.io"))
            .cloned()
            .collect();
        if data.is_empty() {
            data = registry
                .data_endpoint_host_names
                .iter()
                .map(|h| (h.clone(), region_of(h)))
                .collect();
        }
        if data.is_empty() {
            data = network
                .private_endpoints
                .iter()
                .flat_map(|pe| pe.dns.iter())
                .filter(|(fqdn, _)| {
                    let fqdn = fqdn.to_ascii_lowercase();
                    fqdn.starts_with(&format!("{}.", registry.name.to_ascii_lowercase()))
                        && fqdn.ends_with(".data.azurecr.io")
                })
                .map(|(fqdn, _)| (fqdn.clone(), region_of(fqdn)))
                .collect();
        }
        if data.is_empty()
            && let Some(location) = &registry.location
        {
            let location = location.to_ascii_lowercase().replace(' ', "");
            data.push((
                format!(
                    "{}.{location}.data.azurecr.io",
                    registry.name.to_ascii_lowercase()
                ),
                location,
            ));
        }
        if registry.data_endpoint_enabled || has_private_endpoint(network, registry) {
            let mut seen = Vec::new();
            for (host, region) in data {
                let host = host.to_ascii_lowercase();
                if !seen.contains(&host) {
                    seen.push(host.clone());
                    endpoints.push(Endpoint {
                        host,
                        role: Role::Data { region },
                    });
                }
            }
        } else {
            endpoints.push(Endpoint {
                host: "*.blob.core.windows.net".into(),
                role: Role::Storage,
            });
        }
    }
    for (host, address) in &network.extra_endpoints {
        endpoints.push(Endpoint {
            host: host.to_ascii_lowercase(),
            role: Role::Outside { address: *address },
        });
    }
    endpoints
}

/// `<reg>.<region>.data.azurecr.io` → `<region>`.
fn region_of(host: &str) -> String {
    host.split('.').nth(1).unwrap_or("").to_string()
}

fn rule_finding(
    registry: &Registry,
    layer: Layer,
    field: &str,
    observed: String,
    expected: &str,
    cause: String,
) -> Finding {
    let (resource, show) = match &registry.id {
        Some(id) => (id.to_string(), show(id, field)),
        None => (
            "acr.json".to_string(),
            format!("az acr show -n {} --query \"{field}\"", registry.name),
        ),
    };
    Finding {
        step: Step::RegistryRules,
        layer,
        owner: Owner::RegistryPki,
        cause,
        resource,
        field: field.to_string(),
        observed,
        expected: expected.to_string(),
        show,
        decides: None,
    }
}

/// The registry's rules for a node that arrives over a public address.
pub fn check_public(registry: &Registry, endpoint: &Endpoint) -> Result<(), Finding> {
    if registry
        .public_network_access
        .as_deref()
        .is_some_and(|p| shape::same(p, "Disabled"))
    {
        return Err(rule_finding(
            registry,
            Layer::Forbidden,
            "publicNetworkAccess",
            "Disabled".into(),
            "a private endpoint this pool resolves and reaches, or Enabled with network rules admitting the pool's egress address",
            format!(
                "{} resolves to the registry's public address from this pool, and the registry refuses public clients: the node gets 403 \"client with IP '…' {ACR_ADDRESS_REFUSAL}\"",
                endpoint.host
            ),
        ));
    }
    if registry
        .default_action
        .as_deref()
        .is_some_and(|a| shape::same(a, "Deny"))
    {
        let rules = if registry.ip_rules.is_empty() {
            "none".to_string()
        } else {
            registry.ip_rules.join(", ")
        };
        let mut finding = rule_finding(
            registry,
            Layer::Forbidden,
            "networkRuleSet.ipRules",
            rules.clone(),
            "the pool's egress public address",
            format!(
                "{} is reached over a public address and the registry admits only its IP rules ({rules})",
                endpoint.host
            ),
        );
        finding.decides = Some("whether the pool's egress public address (the cluster's outbound load balancer or NAT gateway, or the appliance that carries 0.0.0.0/0) is among networkRuleSet.ipRules: `az aks show --query networkProfile.loadBalancerProfile.effectiveOutboundIPs`".into());
        return Err(finding);
    }
    Ok(())
}

/// A private endpoint carries traffic only once approved.
pub fn check_private(registry: &Registry, endpoint: &PrivateEndpoint) -> Result<(), Finding> {
    let status = registry
        .id
        .as_ref()
        .and_then(|id| endpoint.connection_to(id))
        .or_else(|| endpoint.connections.first().map(|(_, _, s)| s.as_str()));
    match status {
        Some(s) if !shape::same(s, "Approved") => Err(Finding {
            step: Step::RegistryRules,
            layer: Layer::Route,
            owner: Owner::RegistryPki,
            cause: format!(
                "private endpoint {}'s connection to the registry is {s}: it carries no traffic until the registry's owner approves it",
                endpoint.name
            ),
            resource: endpoint.id.to_string(),
            field: "privateLinkServiceConnections[0].privateLinkServiceConnectionState.status"
                .into(),
            observed: s.to_string(),
            expected: "Approved".into(),
            show: show(
                &endpoint.id,
                "privateLinkServiceConnections[0].privateLinkServiceConnectionState.status",
            ),
            decides: None,
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::azure::model::fixture;

    fn roles(network: &Network) -> Vec<(String, &'static str)> {
        endpoints(network)
            .into_iter()
            .map(|e| (e.host, e.role.as_str()))
            .collect()
    }

    #[test]
    fn endpoints_follow_data_endpoints_and_private_endpoints() {
        let healthy = fixture("healthy");
        assert_eq!(
            roles(&healthy),
            [
                ("contosoreg.azurecr.io".to_string(), "login-server"),
                (
                    "contosoreg.westeurope.data.azurecr.io".to_string(),
                    "data-endpoint"
                ),
                ("mirror.corp.example".to_string(), "outside-azure"),
            ]
        );
        let public = fixture("udr-appliance");
        assert_eq!(
            roles(&public)[1],
            ("*.blob.core.windows.net".to_string(), "storage")
        );
        // A private endpoint serves the data endpoint even with dedicated data endpoints off.
        let mut network = fixture("healthy");
        if let Some(r) = network.registry.as_mut() {
            r.data_endpoint_enabled = false;
            r.data_endpoint_host_names.clear();
        }
        network.data_endpoints.clear();
        assert_eq!(roles(&network)[1].1, "data-endpoint");
    }

    #[test]
    fn every_replica_region_has_its_own_data_endpoint() {
        let mut network = fixture("healthy");
        network.data_endpoints.push((
            "contosoreg.northeurope.data.azurecr.io".into(),
            "northeurope".into(),
        ));
        let all = endpoints(&network);
        assert_eq!(
            all[2].role,
            Role::Data {
                region: "northeurope".into()
            }
        );
        // The replica's record is missing from the zone: that endpoint alone gets NXDOMAIN.
        let spoke = &network.vnets[1].id;
        let answer = crate::azure::dns::resolve(&network.zones, spoke, &all[2].host);
        assert!(
            matches!(answer, crate::azure::dns::Answer::NxDomain { record, .. } if record == "contosoreg.northeurope.data")
        );
        assert!(matches!(
            crate::azure::dns::resolve(&network.zones, spoke, &all[1].host),
            crate::azure::dns::Answer::Private { .. }
        ));
    }

    #[test]
    fn registry_rules_for_public_clients() {
        let network = fixture("public-access-disabled");
        let registry = network.registry.as_ref().expect("registry");
        let login = &endpoints(&network)[0];
        let finding = check_public(registry, login).expect_err("public access disabled");
        assert_eq!(
            (finding.layer, finding.field.as_str()),
            (Layer::Forbidden, "publicNetworkAccess")
        );
        let mut open = registry.clone();
        open.public_network_access = Some("Enabled".into());
        let finding = check_public(&open, login).expect_err("default action Deny");
        assert!(finding.decides.is_some(), "the egress address decides");
        open.default_action = Some("Allow".into());
        assert_eq!(check_public(&open, login), Ok(()));
    }

    #[test]
    fn a_pending_private_endpoint_carries_nothing() {
        let mut network = fixture("healthy");
        let registry = network.registry.clone().expect("registry");
        assert_eq!(
            check_private(&registry, &network.private_endpoints[0]),
            Ok(())
        );
        network.private_endpoints[0].connections[0].2 = "Pending".into();
        let finding = check_private(&registry, &network.private_endpoints[0]).expect_err("pending");
        assert_eq!(finding.observed, "Pending");
    }
}
