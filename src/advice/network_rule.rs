//! A registry's network rules refused the node by its address: Azure Container Registry's
//! `403 … denied: client with IP '…' is not allowed access. Refer https://aka.ms/acr/firewall`,
//! its public network access disabled, a data endpoint refusing the same way.
//!
//! The registry answered, so the layer is `forbidden` (the vocabulary's: a network rule of the
//! registry refusing the caller); but no credential is at fault, and the address says where the
//! node came from (MicrosoftDocs/azure-docs `container-registry-private-link.md`,
//! `container-registry-access-selected-networks.md`, `container-registry-vnet.md`): a public
//! address means the node reached the registry's public endpoint — its resolver does not see the
//! private DNS zone `privatelink.azurecr.io` (or the zone is not linked to the node's VNet), or
//! the node's egress address is not one the rules allow; a private address means it came over a
//! VNet path (a subnet's service endpoint) that the rules do not admit. `pullpath azure`
//! (`azure::registry::check_public`) reaches the same refusal from the exports.

use crate::vocab::Owner;

/// The words ACR answers a client its network rules refuse with, after `client with IP '…'`.
pub const ACR_ADDRESS_REFUSAL: &str = "is not allowed access";

/// Where the refused node came from, as the registry's answer names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefusedClient {
    /// The node arrived at the registry's public endpoint from this public address.
    Public(String),
    /// The node arrived from this private address: a VNet path the rules do not admit.
    Private(String),
    /// The registry refuses public clients and its answer names no address.
    Unnamed,
}

impl RefusedClient {
    /// Who fixes it: the resolver that sends the node to the public endpoint, or the network
    /// path and rules for a private address.
    pub fn owner(&self) -> Owner {
        match self {
            RefusedClient::Public(_) | RefusedClient::Unnamed => Owner::DnsTeam,
            RefusedClient::Private(_) => Owner::NetworkTeam,
        }
    }

    /// What the address means, in words, for `host`.
    pub fn meaning(&self, host: &str) -> String {
        match self {
            RefusedClient::Public(ip) => format!(
                "the registry refused the public address {ip}: the node reached {host}'s public endpoint, not a private endpoint. Either its resolver does not see the private DNS zone (privatelink.azurecr.io not linked to the node's VNet, or a custom DNS server without a forwarder to 168.63.129.16), or, with no private endpoint meant, the node's egress address {ip} is not among the registry's network rules"
            ),
            RefusedClient::Private(ip) => format!(
                "the registry refused the private address {ip}: the node came over a VNet path (its subnet's service endpoint) that the registry's network rules do not admit, instead of a private endpoint; the subnet is missing from the rules, or {host} resolves past the private endpoint the node should use"
            ),
            RefusedClient::Unnamed => format!(
                "the registry refuses public clients, and the node reached {host}'s public endpoint: its resolver does not send it to the private endpoint (privatelink.azurecr.io not linked to the node's VNet, or a custom DNS server without a forwarder)"
            ),
        }
    }

    /// What will not help, whatever the address.
    pub fn will_not_help(&self) -> Vec<String> {
        vec![
            "imagePullSecrets, `az aks update --attach-acr` or another AcrPull assignment: the registry refused the node's address before it looked at any identity".into(),
            "re-entering the same credentials: they were never the question".into(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_address_decides_who_fixes_it_and_what_it_means() {
        let public = RefusedClient::Public("52.174.10.20".into());
        assert_eq!(public.owner(), Owner::DnsTeam);
        let words = public.meaning("contoso.azurecr.io");
        assert!(words.contains("public endpoint") && words.contains("privatelink.azurecr.io"));
        assert!(words.contains("egress address 52.174.10.20"));
        let private = RefusedClient::Private("10.240.0.4".into());
        assert_eq!(private.owner(), Owner::NetworkTeam);
        assert!(private.meaning("r").contains("service endpoint"));
        assert!(
            public
                .will_not_help()
                .iter()
                .all(|w| !w.to_lowercase().contains("dns"))
        );
    }
}
