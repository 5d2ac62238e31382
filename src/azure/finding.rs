//! A failing (or undecidable) step of one pool's path to one endpoint, as a value carrying its
//! evidence: the exact resource and field, what was seen, what the pull needs, and the
//! read-only `az` command that shows it.

use crate::vocab::{Layer, Owner};

use super::shape::ResourceId;

/// The steps of the pull's network path, in the order they are decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Step {
    Dns,
    Route,
    Peering,
    ReturnPath,
    Nsg,
    RegistryRules,
}

impl Step {
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Dns => "dns",
            Step::Route => "route",
            Step::Peering => "peering",
            Step::ReturnPath => "return-path",
            Step::Nsg => "nsg",
            Step::RegistryRules => "registry-rules",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub step: Step,
    /// The layer the node's pull will fail at (`dns`, `route`, `forbidden`).
    pub layer: Layer,
    pub owner: Owner,
    /// What happens to the pull, in words.
    pub cause: String,
    /// The resource id (or export file) that holds the wrong field.
    pub resource: String,
    pub field: String,
    pub observed: String,
    pub expected: String,
    /// The read-only `az` command that shows the field.
    pub show: String,
    /// Set when the exports cannot decide: what would.
    pub decides: Option<String>,
}

/// The `az … show` that prints `query` of the resource `id`, chosen by the id's resource type.
pub fn show(id: &ResourceId, query: &str) -> String {
    let has = |segment: &str| id.segment(segment).is_some();
    let group = if has("virtualNetworkPeerings") {
        "network vnet peering"
    } else if has("subnets") {
        "network vnet subnet"
    } else if has("routeTables") && has("routes") {
        "network route-table route"
    } else if has("routeTables") {
        "network route-table"
    } else if has("networkSecurityGroups") && has("securityRules") {
        "network nsg rule"
    } else if has("networkSecurityGroups") {
        "network nsg"
    } else if has("privateDnsZones") && has("virtualNetworkLinks") {
        "network private-dns link vnet"
    } else if has("privateDnsZones") && has("A") {
        "network private-dns record-set a"
    } else if has("privateDnsZones") {
        "network private-dns zone"
    } else if has("privateEndpoints") {
        "network private-endpoint"
    } else if has("virtualNetworkGateways") {
        "network vnet-gateway"
    } else if has("localNetworkGateways") {
        "network local-gateway"
    } else if has("registries") {
        "acr"
    } else if has("managedClusters") && has("agentPools") {
        "aks nodepool"
    } else if has("managedClusters") {
        "aks"
    } else if has("virtualNetworks") {
        "network vnet"
    } else {
        "resource"
    };
    format!("az {group} show --ids '{id}' --query \"{query}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_show_command_follows_the_resource_type() {
        let peering = ResourceId::new(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/spoke/virtualNetworkPeerings/spoke-to-hub",
        );
        assert_eq!(
            show(&peering, "useRemoteGateways"),
            format!("az network vnet peering show --ids '{peering}' --query \"useRemoteGateways\"")
        );
        let route = ResourceId::new(
            "/subscriptions/s/resourcegroups/rg/providers/microsoft.network/routetables/rt/routes/to-fw",
        );
        assert!(show(&route, "nextHopIpAddress").starts_with("az network route-table route show"));
        let acr = ResourceId::new(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.ContainerRegistry/registries/contosoreg",
        );
        assert!(show(&acr, "publicNetworkAccess").starts_with("az acr show"));
    }
}
