//! The network as the exports describe it: typed, ids compared without case, both JSON shapes
//! read (see [`shape`](crate::azure::shape)). Field names follow the REST specs in Azure/azure-rest-api-specs
//! (`specification/network/resource-manager/Microsoft.Network/stable/2023-09-01/`
//! `virtualNetwork.json`, `routeTable.json`, `privateEndpoint.json`, `virtualNetworkGateway.json`;
//! `specification/privatedns/…/2020-06-01/privatedns.json`;
//! `specification/containerregistry/…/2023-07-01/containerregistry.json`;
//! `specification/containerservice/…/managedClusters.json`) and `az`'s flattening of them.
//!
//! Building never fails: what a file lacks is simply absent here, and the analysis says which
//! conclusion that leaves open.

use std::net::Ipv4Addr;

use super::cidr::Prefix;
use super::exports::{Export, Exports};
use super::nsg::{self, Nsg};
use super::route::{self, NextHop, Route, RouteOrigin};
use super::shape::{self, ResourceId};

mod read;

#[derive(Debug, Clone, Default)]
pub struct Network {
    pub cluster: Option<Cluster>,
    pub pools: Vec<Pool>,
    pub vnets: Vec<Vnet>,
    pub route_tables: Vec<RouteTable>,
    pub nsgs: Vec<Nsg>,
    pub private_endpoints: Vec<PrivateEndpoint>,
    pub zones: Vec<Zone>,
    /// False when `private-dns-zones.json` was missing or unreadable: no zone is then known
    /// not to exist.
    pub zones_known: bool,
    /// False when `vnet-gateways.json` / `local-gateways.json` were missing or unreadable.
    pub gateways_known: bool,
    pub local_gateways_known: bool,
    pub registry: Option<Registry>,
    /// `az acr show-endpoints`: `dataEndpoints[].endpoint` with their regions.
    pub data_endpoints: Vec<(String, String)>,
    pub gateways: Vec<Gateway>,
    pub local_gateways: Vec<LocalGateway>,
    pub effective_routes: Vec<NicExport<Vec<Route>>>,
    pub effective_nsgs: Vec<NicExport<Vec<EffectiveNsg>>>,
    /// Endpoints outside Azure the pull also touches (`endpoints.json`).
    pub extra_endpoints: Vec<(String, Ipv4Addr)>,
}

#[derive(Debug, Clone)]
pub struct Cluster {
    pub name: String,
    pub id: Option<ResourceId>,
    pub node_resource_group: Option<String>,
    pub outbound_type: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Pool {
    pub name: String,
    /// `vnetSubnetId`; `None` for an AKS-managed VNet in the node resource group.
    pub subnet: Option<ResourceId>,
}

#[derive(Debug, Clone)]
pub struct Vnet {
    pub id: ResourceId,
    pub name: String,
    pub address_space: Vec<Prefix>,
    /// `dhcpOptions.dnsServers`; empty means Azure DNS.
    pub dns_servers: Vec<String>,
    pub subnets: Vec<Subnet>,
    pub peerings: Vec<Peering>,
}

#[derive(Debug, Clone)]
pub struct Subnet {
    pub id: ResourceId,
    pub name: String,
    pub prefixes: Vec<Prefix>,
    pub route_table: Option<ResourceId>,
    pub nsg: Option<ResourceId>,
    /// `privateEndpointNetworkPolicies`: `Disabled`, `Enabled`, `NetworkSecurityGroupEnabled`,
    /// `RouteTableEnabled`.
    pub private_endpoint_policies: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Peering {
    pub id: Option<ResourceId>,
    pub name: String,
    pub remote: Option<ResourceId>,
    pub state: Option<String>,
    pub sync_level: Option<String>,
    pub allow_virtual_network_access: bool,
    pub allow_forwarded_traffic: bool,
    pub allow_gateway_transit: bool,
    pub use_remote_gateways: bool,
    pub remote_prefixes: Vec<Prefix>,
}

impl Peering {
    pub fn connected(&self) -> bool {
        self.state
            .as_deref()
            .is_some_and(|s| shape::same(s, "Connected"))
    }
}

#[derive(Debug, Clone)]
pub struct RouteTable {
    pub id: ResourceId,
    pub name: String,
    pub disable_bgp_route_propagation: bool,
    pub routes: Vec<Route>,
}

#[derive(Debug, Clone)]
pub struct PrivateEndpoint {
    pub id: ResourceId,
    pub name: String,
    pub subnet: Option<ResourceId>,
    /// (target resource, group ids, connection status)
    pub connections: Vec<(Option<ResourceId>, Vec<String>, String)>,
    /// `customDnsConfigs[]`: fqdn → addresses.
    pub dns: Vec<(String, Vec<Ipv4Addr>)>,
}

impl PrivateEndpoint {
    /// The connection to `target`, with its status.
    pub fn connection_to(&self, target: &ResourceId) -> Option<&str> {
        self.connections
            .iter()
            .find(|(t, _, _)| t.as_ref() == Some(target))
            .map(|(_, _, status)| status.as_str())
    }
}

#[derive(Debug, Clone)]
pub struct Zone {
    pub id: Option<ResourceId>,
    pub name: String,
    pub resource_group: Option<String>,
    /// `None` when `private-dns-links/<zone>.json` is missing or unreadable.
    pub links: Option<Vec<Link>>,
    pub records: Option<Vec<ARecord>>,
}

#[derive(Debug, Clone)]
pub struct Link {
    pub name: String,
    pub id: Option<ResourceId>,
    pub vnet: Option<ResourceId>,
    /// `virtualNetworkLinkState`: `Completed` or `InProgress`.
    pub state: Option<String>,
    /// `resolutionPolicy: NxDomainRedirect`: an NXDOMAIN falls back to public resolution.
    pub fallback_to_public: bool,
}

impl Link {
    pub fn completed(&self) -> bool {
        // Older exports lack the field; a link listed without it is taken as in effect.
        self.state
            .as_deref()
            .is_none_or(|s| shape::same(s, "Completed"))
    }
}

#[derive(Debug, Clone)]
pub struct ARecord {
    /// Relative name (`contosoreg`, `contosoreg.westeurope.data`, `@`).
    pub name: String,
    pub id: Option<ResourceId>,
    pub addresses: Vec<Ipv4Addr>,
}

#[derive(Debug, Clone)]
pub struct Registry {
    pub id: Option<ResourceId>,
    pub name: String,
    pub login_server: String,
    pub location: Option<String>,
    pub public_network_access: Option<String>,
    pub default_action: Option<String>,
    pub ip_rules: Vec<String>,
    pub data_endpoint_enabled: bool,
    pub data_endpoint_host_names: Vec<String>,
    pub sku: Option<String>,
    /// `privateEndpointConnections[]`: (private endpoint, status).
    pub private_endpoint_connections: Vec<(Option<ResourceId>, String)>,
}

#[derive(Debug, Clone)]
pub struct Gateway {
    pub id: ResourceId,
    pub name: String,
    /// The VNet whose GatewaySubnet holds it.
    pub vnet: Option<ResourceId>,
    pub gateway_type: Option<String>,
    pub bgp: bool,
    pub sku: Option<String>,
}

#[derive(Debug, Clone)]
pub struct LocalGateway {
    pub id: ResourceId,
    pub name: String,
    pub prefixes: Vec<Prefix>,
    pub bgp: bool,
}

/// One per-NIC export, with the pool its name maps to.
#[derive(Debug, Clone)]
pub struct NicExport<T> {
    pub nic: String,
    pub pool: Option<String>,
    pub data: T,
}

/// One entry of `az network nic list-effective-nsg`.
#[derive(Debug, Clone)]
pub struct EffectiveNsg {
    /// True when associated with the NIC, false for the subnet.
    pub on_nic: bool,
    pub nsg: Nsg,
}

/// The network of one fixture export set, for the decisions' unit tests.
#[cfg(test)]
pub(crate) fn fixture(scenario: &str) -> Network {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/azure")
        .join(scenario);
    let exports = Exports::load(&dir).expect("fixture directory");
    Network::from_exports(&exports)
}

#[cfg(test)]
mod tests {
    use super::read::pool_for_nic;
    use super::*;

    #[test]
    fn node_nics_map_to_their_pool() {
        let pools = [
            Pool {
                name: "system".into(),
                subnet: None,
            },
            Pool {
                name: "sys".into(),
                subnet: None,
            },
        ];
        assert_eq!(
            pool_for_nic(&pools, "AKS-SYSTEM-12345678-VMSS").as_deref(),
            Some("system")
        );
        assert_eq!(pool_for_nic(&pools, "sys").as_deref(), Some("sys"));
        assert_eq!(pool_for_nic(&pools, "aks-gpu-1-vmss"), None);
    }

    #[test]
    fn the_healthy_fixture_reads_into_the_model() {
        let network = fixture("healthy");
        assert_eq!(network.pools.len(), 2);
        assert_eq!(network.vnets.len(), 2);
        let spoke = network
            .vnets
            .iter()
            .find(|v| v.name == "vnet-spoke")
            .expect("spoke");
        assert!(spoke.peerings[0].use_remote_gateways && spoke.peerings[0].connected());
        assert_eq!(network.zones[0].records.as_ref().map(Vec::len), Some(2));
        assert_eq!(
            network.gateways[0].vnet.as_ref().map(ResourceId::name),
            Some("vnet-hub")
        );
        assert_eq!(network.extra_endpoints.len(), 1);
        let arm = fixture("arm-shaped");
        assert_eq!(arm.pools.len(), 2);
        assert!(
            arm.pools.iter().all(|p| p.subnet.is_some()),
            "vnetSubnetID under properties"
        );
        assert_eq!(
            arm.vnets[1].subnets[0].route_table,
            spoke.subnets[0].route_table
        );
    }
}
