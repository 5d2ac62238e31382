//! The routes a subnet gets, rebuilt from the exports when Azure could not export effective
//! routes (a stopped node, or a Uniform scale-set NIC): the VNet's own space, its connected
//! peerings, private endpoints' /32s, gateway routes (unless the route table disables BGP
//! propagation) and the route table's user routes, over Azure's default system routes.
//!
//! Rules from the UDR overview (MicrosoftDocs/azure-docs `articles/virtual-network/virtual-networks-udr-overview.md`):
//! the default routes and the `None` ranges; gateway routes (BGP or the local network
//! gateway's prefixes) appear with source and next hop `VirtualNetworkGateway`, and not at all
//! in a subnet whose route table has `disableBgpRoutePropagation`; a spoke gets the hub's
//! gateway routes only with `useRemoteGateways` on its peering and `allowGatewayTransit` on the
//! hub's (`articles/vpn-gateway/vpn-gateway-peering-gateway-transit.md`). A private endpoint
//! adds a /32 in its own VNet and in peered VNets; a user route overrides it only when the
//! endpoint's subnet enables route-table network policies and the route is no wider than the
//! endpoint VNet's address space (`articles/private-link/disable-private-endpoint-network-policy.md`).

use super::cidr::{self, Prefix};
use super::model::{Gateway, Network, Peering, Subnet, Vnet};
use super::route::{NextHop, Route, RouteOrigin};
use super::shape;

/// Transit "can be used with all VPN Gateway SKUs except the Basic SKU" (MicrosoftDocs/azure-docs
/// `articles/vpn-gateway/vpn-gateway-peering-gateway-transit.md`).
pub fn basic_sku(gateway: &Gateway) -> bool {
    gateway
        .sku
        .as_deref()
        .is_some_and(|s| shape::same(s, "Basic"))
}

/// A gateway this VNet's subnets use, and through which peering (none for its own gateway).
pub fn gateway_in_reach<'a>(
    network: &'a Network,
    vnet: &'a Vnet,
) -> Option<(&'a Gateway, Option<&'a Peering>)> {
    let own = network
        .gateways
        .iter()
        .find(|g| g.vnet.as_ref() == Some(&vnet.id));
    if let Some(gateway) = own {
        return Some((gateway, None));
    }
    vnet.peerings
        .iter()
        .filter(|p| p.connected() && p.use_remote_gateways)
        .find_map(|p| {
            let remote = network.vnet(p.remote.as_ref()?)?;
            let back = network.peering(remote, &vnet.id)?;
            if !(back.connected() && back.allow_gateway_transit) {
                return None;
            }
            let gateway = network
                .gateways
                .iter()
                .find(|g| g.vnet.as_ref() == Some(&remote.id))?;
            (!basic_sku(gateway)).then_some((gateway, Some(p)))
        })
}

/// Every route of `subnet` in `vnet`, as Azure would compute them.
pub fn routes(network: &Network, vnet: &Vnet, subnet: &Subnet) -> Vec<Route> {
    let mut routes = Vec::new();
    for prefix in &vnet.address_space {
        routes.push(Route::system(
            *prefix,
            NextHop::VnetLocal,
            format!("address space of VNet {}", vnet.name),
        ));
    }
    routes.push(Route::system(
        Prefix::new(std::net::Ipv4Addr::UNSPECIFIED, 0),
        NextHop::Internet,
        "Azure's default route",
    ));
    for range in cidr::dropped_by_default() {
        // Azure changes these to the VNet when its address space covers them.
        if !vnet.address_space.iter().any(|p| p.covers(range)) {
            routes.push(Route::system(
                range,
                NextHop::None,
                "Azure's default route for a private range",
            ));
        }
    }
    let mut peered = vec![vnet.id.clone()];
    for peering in vnet.peerings.iter().filter(|p| p.connected()) {
        peered.extend(peering.remote.clone());
        for prefix in &peering.remote_prefixes {
            let mut route = Route::system(
                *prefix,
                NextHop::VnetPeering,
                format!("peering {}", peering.name),
            );
            route.resource = peering.id.clone();
            routes.push(route);
        }
    }
    let table = subnet
        .route_table
        .as_ref()
        .and_then(|id| network.route_table(id));
    let user_routes: Vec<Route> = table.map(|t| t.routes.clone()).unwrap_or_default();
    for endpoint in &network.private_endpoints {
        let Some((pe_vnet, pe_subnet)) = endpoint.subnet.as_ref().and_then(|s| network.subnet(s))
        else {
            continue;
        };
        if !peered.contains(&pe_vnet.id) {
            continue;
        }
        let policies = pe_subnet
            .private_endpoint_policies
            .as_deref()
            .is_some_and(|p| shape::same(p, "Enabled") || shape::same(p, "RouteTableEnabled"));
        for address in endpoint.dns.iter().flat_map(|(_, a)| a) {
            let host = Prefix::new(*address, 32);
            if routes.iter().any(|r| r.prefix == host) {
                continue;
            }
            let space = pe_vnet
                .address_space
                .iter()
                .filter(|p| p.contains(*address))
                .map(|p| p.prefix_len())
                .max()
                .unwrap_or(32);
            let overridden = policies
                && user_routes
                    .iter()
                    .any(|u| u.prefix.contains(*address) && u.prefix.prefix_len() >= space);
            let mut route = Route::system(
                host,
                NextHop::InterfaceEndpoint,
                format!("private endpoint {}", endpoint.name),
            );
            route.active = !overridden;
            route.resource = Some(endpoint.id.clone());
            routes.push(route);
        }
    }
    let propagates = !table.is_some_and(|t| t.disable_bgp_route_propagation);
    if propagates && let Some((gateway, _)) = gateway_in_reach(network, vnet) {
        for local in &network.local_gateways {
            for prefix in &local.prefixes {
                routes.push(Route {
                    prefix: *prefix,
                    source: RouteOrigin::Gateway,
                    next_hop: NextHop::Gateway,
                    next_hop_ip: None,
                    active: true,
                    origin: format!(
                        "local network gateway {} through gateway {}",
                        local.name, gateway.name
                    ),
                    resource: Some(local.id.clone()),
                });
            }
        }
    }
    routes.extend(user_routes);
    routes
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::azure::model::fixture;
    use crate::azure::route::select;

    fn hop_for(network: &Network, subnet: &str, address: &str) -> NextHop {
        let (vnet, subnet) = network
            .vnets
            .iter()
            .find_map(|v| v.subnets.iter().find(|s| s.name == subnet).map(|s| (v, s)))
            .expect("subnet");
        let routes = routes(network, vnet, subnet);
        let address: Ipv4Addr = address.parse().expect("address");
        select(&routes, address).expect("a route").next_hop.clone()
    }

    #[test]
    fn a_spoke_subnet_gets_peering_endpoint_gateway_and_default_routes() {
        let network = fixture("healthy");
        assert_eq!(
            hop_for(&network, "aks-system", "10.0.1.5"),
            NextHop::InterfaceEndpoint
        );
        assert_eq!(
            hop_for(&network, "aks-system", "10.0.2.4"),
            NextHop::VnetPeering
        );
        assert_eq!(
            hop_for(&network, "aks-system", "10.1.4.9"),
            NextHop::VnetLocal
        );
        assert_eq!(
            hop_for(&network, "aks-system", "192.168.20.10"),
            NextHop::Gateway
        );
        assert_eq!(hop_for(&network, "aks-system", "10.9.0.1"), NextHop::None);
        assert_eq!(hop_for(&network, "aks-system", "172.20.0.1"), NextHop::None);
        assert_eq!(
            hop_for(&network, "aks-system", "20.50.1.1"),
            NextHop::Internet
        );
    }

    #[test]
    fn without_transit_or_with_propagation_off_the_gateway_routes_vanish() {
        let mut network = fixture("healthy");
        network.route_tables[0].disable_bgp_route_propagation = true;
        assert_eq!(
            hop_for(&network, "aks-user", "192.168.20.10"),
            NextHop::None
        );
        let mut network = fixture("healthy");
        network.vnets[0].peerings[0].allow_gateway_transit = false;
        assert_eq!(
            hop_for(&network, "aks-user", "192.168.20.10"),
            NextHop::None
        );
        assert_eq!(
            hop_for(&network, "aks-user", "10.0.1.5"),
            NextHop::InterfaceEndpoint
        );
    }

    #[test]
    fn a_user_route_overrides_the_endpoint_route_only_under_network_policies() {
        let mut network = fixture("healthy");
        let mut udr = Route::system(
            Prefix::parse("10.0.1.0/24").expect("prefix"),
            NextHop::Appliance,
            "test",
        );
        udr.source = RouteOrigin::User;
        udr.next_hop_ip = Some(Ipv4Addr::new(10, 0, 3, 4));
        network.route_tables[0].routes.push(udr);
        // Policies off: the /32 is longer and stays.
        assert_eq!(
            hop_for(&network, "aks-system", "10.0.1.5"),
            NextHop::InterfaceEndpoint
        );
        network.vnets[0].subnets[1].private_endpoint_policies = Some("RouteTableEnabled".into());
        assert_eq!(
            hop_for(&network, "aks-system", "10.0.1.5"),
            NextHop::Appliance
        );
        // A 0.0.0.0/0 user route never overrides it (wider than the endpoint VNet's space).
        network.route_tables[0].routes[0].prefix = Prefix::parse("0.0.0.0/0").expect("prefix");
        assert_eq!(
            hop_for(&network, "aks-system", "10.0.1.5"),
            NextHop::InterfaceEndpoint
        );
    }

    #[test]
    fn a_disconnected_peering_takes_its_routes_and_endpoints_away() {
        let network = fixture("peering-disconnected");
        assert_eq!(hop_for(&network, "aks-system", "10.0.1.5"), NextHop::None);
        assert_eq!(
            hop_for(&network, "aks-system", "192.168.20.10"),
            NextHop::None
        );
    }
}
