//! Which route Azure uses for an address, from a subnet's effective routes or from routes
//! rebuilt out of the exports when no effective-route export exists.
//!
//! The rules (UDR overview: MicrosoftDocs/azure-docs `articles/virtual-network/virtual-networks-udr-overview.md`):
//! longest prefix first; at equal prefix a user route beats a BGP (gateway) route, which beats a
//! system route; but system routes for the VNet, its peerings and service endpoints win even
//! over more specific BGP routes. A route Azure overrode is exported with `state: Invalid` and
//! is never chosen. Next hop `None` drops the packet. Field names and enum values follow
//! `EffectiveRoute` in Azure/azure-rest-api-specs
//! `specification/network/resource-manager/Microsoft.Network/stable/2023-09-01/networkInterface.json`,
//! plus the values real exports carry beyond that enum (`VNetPeering`, `InterfaceEndpoint`,
//! `VirtualNetworkServiceEndpoint`; Azure/azure-powershell#23091).

use std::net::Ipv4Addr;

use serde_json::Value;

use super::cidr::Prefix;
use super::shape::{self, ResourceId};

/// Who put the route there (`source` in the spec).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteOrigin {
    /// A route table's route (UDR).
    User,
    /// Learned from a virtual network gateway: BGP or the local network gateway's prefixes.
    Gateway,
    /// A system route.
    Default,
}

impl RouteOrigin {
    pub fn parse(text: &str) -> RouteOrigin {
        if shape::same(text, "User") {
            RouteOrigin::User
        } else if shape::same(text, "VirtualNetworkGateway") {
            RouteOrigin::Gateway
        } else {
            RouteOrigin::Default
        }
    }

    /// Higher wins at equal prefix length.
    fn rank(self) -> u8 {
        match self {
            RouteOrigin::User => 2,
            RouteOrigin::Gateway => 1,
            RouteOrigin::Default => 0,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RouteOrigin::User => "User",
            RouteOrigin::Gateway => "VirtualNetworkGateway",
            RouteOrigin::Default => "Default",
        }
    }
}

/// Where the packet goes (`nextHopType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NextHop {
    VnetLocal,
    VnetPeering,
    /// A private endpoint's /32.
    InterfaceEndpoint,
    ServiceEndpoint,
    Gateway,
    Internet,
    Appliance,
    /// Dropped.
    None,
    Other(String),
}

impl NextHop {
    pub fn parse(text: &str) -> NextHop {
        let known = [
            ("VnetLocal", NextHop::VnetLocal),
            ("VNetPeering", NextHop::VnetPeering),
            ("InterfaceEndpoint", NextHop::InterfaceEndpoint),
            ("VirtualNetworkServiceEndpoint", NextHop::ServiceEndpoint),
            ("VirtualNetworkGateway", NextHop::Gateway),
            ("Internet", NextHop::Internet),
            ("VirtualAppliance", NextHop::Appliance),
            ("None", NextHop::None),
        ];
        known
            .into_iter()
            .find(|(name, _)| shape::same(name, text))
            .map_or_else(|| NextHop::Other(text.to_string()), |(_, hop)| hop)
    }

    pub fn as_str(&self) -> &str {
        match self {
            NextHop::VnetLocal => "VnetLocal",
            NextHop::VnetPeering => "VNetPeering",
            NextHop::InterfaceEndpoint => "InterfaceEndpoint",
            NextHop::ServiceEndpoint => "VirtualNetworkServiceEndpoint",
            NextHop::Gateway => "VirtualNetworkGateway",
            NextHop::Internet => "Internet",
            NextHop::Appliance => "VirtualAppliance",
            NextHop::None => "None",
            NextHop::Other(s) => s,
        }
    }

    /// The system routes that beat more specific BGP routes.
    fn is_vnet_system(&self) -> bool {
        matches!(
            self,
            NextHop::VnetLocal | NextHop::VnetPeering | NextHop::ServiceEndpoint
        )
    }
}

/// One route for one prefix.
#[derive(Debug, Clone, PartialEq)]
pub struct Route {
    pub prefix: Prefix,
    pub source: RouteOrigin,
    pub next_hop: NextHop,
    pub next_hop_ip: Option<Ipv4Addr>,
    /// False for `state: Invalid` (overridden by another route).
    pub active: bool,
    /// Where the route comes from, for a person: `route table rt-aks, route to-fw`,
    /// `peering spoke-to-hub`, `local network gateway lng-onprem`, `effective routes of NIC x`.
    pub origin: String,
    /// The resource that holds it, when there is one.
    pub resource: Option<ResourceId>,
}

impl Route {
    pub fn system(prefix: Prefix, next_hop: NextHop, origin: impl Into<String>) -> Route {
        Route {
            prefix,
            source: RouteOrigin::Default,
            next_hop,
            next_hop_ip: None,
            active: true,
            origin: origin.into(),
            resource: None,
        }
    }

    /// `10.0.0.0/8 → None (Default)`.
    pub fn describe(&self) -> String {
        let via = self
            .next_hop_ip
            .map(|ip| format!(" {ip}"))
            .unwrap_or_default();
        format!(
            "{} → {}{via} ({}; {})",
            self.prefix,
            self.next_hop.as_str(),
            self.source.as_str(),
            self.origin
        )
    }
}

/// Effective routes as `az network nic show-effective-route-table` prints them (`{"value": [...]}`
/// or a bare list); one route per prefix of each entry, IPv6 prefixes skipped.
pub fn parse_effective(document: &Value, nic: &str) -> Vec<Route> {
    let mut routes = Vec::new();
    for entry in shape::entries(document) {
        let source = RouteOrigin::parse(shape::text(entry, "source").unwrap_or("Default"));
        let active = !shape::same(shape::text(entry, "state").unwrap_or("Active"), "Invalid");
        let next_hop = NextHop::parse(shape::text(entry, "nextHopType").unwrap_or("None"));
        let next_hop_ip = shape::one_or_many(entry, "nextHopIpAddress")
            .iter()
            .find_map(|ip| ip.parse().ok());
        let name = shape::text(entry, "name").unwrap_or("");
        for prefix in shape::one_or_many(entry, "addressPrefix") {
            if let Some(prefix) = Prefix::parse(&prefix) {
                routes.push(Route {
                    prefix,
                    source,
                    next_hop: next_hop.clone(),
                    next_hop_ip,
                    active,
                    origin: if name.is_empty() {
                        format!("effective routes of NIC {nic}")
                    } else {
                        format!("effective routes of NIC {nic}, route {name}")
                    },
                    resource: None,
                });
            }
        }
    }
    routes
}

/// The route Azure uses for `destination`, or `None` when no route covers it (which the
/// default routes never allow: 0.0.0.0/0 always exists).
pub fn select(routes: &[Route], destination: Ipv4Addr) -> Option<&Route> {
    let covering: Vec<&Route> = routes
        .iter()
        .filter(|r| r.active && r.prefix.contains(destination))
        .collect();
    // VNet, peering and service-endpoint system routes beat BGP routes even when those are
    // more specific: drop such BGP routes before the longest match.
    let vnet_system_len = covering
        .iter()
        .filter(|r| r.source == RouteOrigin::Default && r.next_hop.is_vnet_system())
        .map(|r| r.prefix.prefix_len())
        .max();
    covering
        .into_iter()
        .filter(|r| {
            !(r.source == RouteOrigin::Gateway
                && vnet_system_len.is_some_and(|len| r.prefix.prefix_len() > len))
        })
        .max_by_key(|r| (r.prefix.prefix_len(), r.source.rank()))
}

/// The route a public address takes: public ranges of Azure services are not in the exports,
/// so the answer is the most specific route that covers every public address, normally
/// 0.0.0.0/0.
pub fn select_public(routes: &[Route]) -> Option<&Route> {
    routes
        .iter()
        .filter(|r| r.active && r.prefix.prefix_len() == 0)
        .max_by_key(|r| r.source.rank())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(prefix: &str, source: RouteOrigin, hop: NextHop) -> Route {
        Route {
            prefix: Prefix::parse(prefix).expect("prefix"),
            source,
            next_hop: hop,
            next_hop_ip: None,
            active: true,
            origin: prefix.to_string(),
            resource: None,
        }
    }

    fn ip(text: &str) -> Ipv4Addr {
        text.parse().expect("address")
    }

    #[test]
    fn longest_prefix_wins() {
        let routes = [
            route("0.0.0.0/0", RouteOrigin::Default, NextHop::Internet),
            route("10.0.0.0/8", RouteOrigin::Default, NextHop::None),
            route("10.0.0.0/16", RouteOrigin::Default, NextHop::VnetPeering),
            route(
                "10.0.1.5/32",
                RouteOrigin::Default,
                NextHop::InterfaceEndpoint,
            ),
        ];
        assert_eq!(
            select(&routes, ip("10.0.1.5")).map(|r| &r.next_hop),
            Some(&NextHop::InterfaceEndpoint)
        );
        assert_eq!(
            select(&routes, ip("10.0.2.4")).map(|r| &r.next_hop),
            Some(&NextHop::VnetPeering)
        );
        assert_eq!(
            select(&routes, ip("10.9.0.1")).map(|r| &r.next_hop),
            Some(&NextHop::None)
        );
        assert_eq!(
            select(&routes, ip("20.1.1.1")).map(|r| &r.next_hop),
            Some(&NextHop::Internet)
        );
    }

    #[test]
    fn at_equal_prefix_user_beats_bgp_beats_system() {
        let system = route("0.0.0.0/0", RouteOrigin::Default, NextHop::Internet);
        let bgp = route("0.0.0.0/0", RouteOrigin::Gateway, NextHop::Gateway);
        let user = route("0.0.0.0/0", RouteOrigin::User, NextHop::Appliance);
        let all = [system.clone(), bgp.clone(), user];
        assert_eq!(
            select(&all, ip("8.8.8.8")).map(|r| r.source),
            Some(RouteOrigin::User)
        );
        assert_eq!(
            select(&[system, bgp], ip("8.8.8.8")).map(|r| r.source),
            Some(RouteOrigin::Gateway)
        );
    }

    #[test]
    fn vnet_and_peering_system_routes_beat_more_specific_bgp_routes() {
        let routes = [
            route("10.0.0.0/16", RouteOrigin::Default, NextHop::VnetPeering),
            route("10.0.1.0/24", RouteOrigin::Gateway, NextHop::Gateway),
        ];
        assert_eq!(
            select(&routes, ip("10.0.1.4")).map(|r| &r.next_hop),
            Some(&NextHop::VnetPeering)
        );
        // …but not more specific user routes.
        let routes = [
            route("10.0.0.0/16", RouteOrigin::Default, NextHop::VnetPeering),
            route("10.0.1.0/24", RouteOrigin::User, NextHop::Appliance),
        ];
        assert_eq!(
            select(&routes, ip("10.0.1.4")).map(|r| &r.next_hop),
            Some(&NextHop::Appliance)
        );
    }

    #[test]
    fn invalid_routes_are_never_chosen() {
        let mut overridden = route("0.0.0.0/0", RouteOrigin::Default, NextHop::Internet);
        overridden.active = false;
        let routes = [
            overridden,
            route("0.0.0.0/0", RouteOrigin::User, NextHop::Appliance),
        ];
        assert_eq!(
            select_public(&routes).map(|r| &r.next_hop),
            Some(&NextHop::Appliance)
        );
        assert_eq!(select(&routes[..1], ip("1.1.1.1")), None);
    }

    #[test]
    fn effective_routes_parse_in_both_casings() {
        let document = serde_json::json!({"value": [
            {"source": "Default", "state": "Active", "addressPrefix": ["10.0.0.0/16"], "nextHopType": "VnetLocal", "nextHopIpAddress": []},
            {"source": "Default", "state": "Invalid", "addressPrefix": ["0.0.0.0/0"], "nextHopType": "Internet", "nextHopIpAddress": []},
            {"source": "User", "state": "Active", "name": "to-fw", "addressPrefix": ["0.0.0.0/0"], "nextHopType": "virtualappliance", "nextHopIpAddress": ["10.0.3.4"]},
            {"source": "Default", "state": "Active", "addressPrefix": ["fd00::/8"], "nextHopType": "None", "nextHopIpAddress": []}
        ]});
        let routes = parse_effective(&document, "nic0");
        assert_eq!(routes.len(), 3);
        let public = select_public(&routes).expect("a default route");
        assert_eq!(public.next_hop, NextHop::Appliance);
        assert_eq!(public.next_hop_ip, Some(ip("10.0.3.4")));
        assert!(public.origin.contains("to-fw"));
    }
}
