//! Peering, gateway transit and the return path: why a route exists or is missing between a
//! node subnet and the address it must reach.
//!
//! Facts this follows: peering state is `Initiated|Connected|Disconnected` and sync level
//! `FullyInSync|RemoteNotInSync|LocalNotInSync|LocalAndRemoteNotInSync` (REST example
//! `…/2023-09-01/examples/VirtualNetworkPeeringList.json`); both directions must be Connected;
//! a spoke reaches on-premises through the hub's gateway only with `useRemoteGateways` on its
//! peering and `allowGatewayTransit` on the hub's (MicrosoftDocs/azure-docs
//! `articles/vpn-gateway/vpn-gateway-peering-gateway-transit.md`); peering is not transitive,
//! so spoke-to-spoke needs UDRs to an appliance in the hub (MicrosoftDocs/architecture-center
//! `docs/networking/guide/spoke-to-spoke-networking.md`); a static VPN's far side learns nothing
//! from Azure, so the exports cannot prove the return route.

use std::net::Ipv4Addr;

use crate::vocab::{Layer, Owner};

use super::exports::Export;
use super::finding::{Finding, Step, show};
use super::model::{LocalGateway, Network, Peering, Subnet, Vnet};
use super::rebuild;
use super::route::{NextHop, Route, RouteOrigin};

fn network_finding(step: Step, cause: String) -> Finding {
    Finding {
        step,
        layer: Layer::Route,
        owner: Owner::NetworkTeam,
        cause,
        resource: String::new(),
        field: String::new(),
        observed: String::new(),
        expected: String::new(),
        show: String::new(),
        decides: None,
    }
}

/// A finding about one field of a peering.
fn peering_field(
    peering: &Peering,
    owner: &Vnet,
    field: &str,
    observed: String,
    expected: &str,
    cause: String,
) -> Finding {
    let id = peering.id.clone().unwrap_or_else(|| {
        super::shape::ResourceId::new(&format!(
            "{}/virtualNetworkPeerings/{}",
            owner.id, peering.name
        ))
    });
    Finding {
        resource: id.to_string(),
        field: field.to_string(),
        observed,
        expected: expected.to_string(),
        show: show(&id, field),
        ..network_finding(Step::Peering, cause)
    }
}

/// A VNet that has no peering at all toward another.
fn missing_peering(from: &Vnet, to: &Vnet, cause: String) -> Finding {
    Finding {
        resource: from.id.to_string(),
        field: "virtualNetworkPeerings".into(),
        observed: format!("no peering to {}", to.name),
        expected: format!("a Connected peering to {}", to.name),
        show: show(&from.id, "virtualNetworkPeerings[].remoteVirtualNetwork.id"),
        ..network_finding(Step::Peering, cause)
    }
}

/// Both directions of the peering between `from` and `to` carry traffic to `address`.
/// `Ok` holds check items the exports cannot settle.
pub fn check_peering(
    network: &Network,
    from: &Vnet,
    to: &Vnet,
    address: Ipv4Addr,
) -> Result<Vec<String>, Finding> {
    let mut checks = Vec::new();
    let Some(local) = network.peering(from, &to.id) else {
        return Err(missing_peering(
            from,
            to,
            format!(
                "{address} is in VNet {}, which VNet {} has no peering to",
                to.name, from.name
            ),
        ));
    };
    side_carries(local, from, to, address)?;
    match network.peering(to, &from.id) {
        Some(back) => side_carries(back, to, from, address)?,
        None => {
            return Err(missing_peering(
                to,
                from,
                format!(
                    "peering {} has no counterpart on VNet {}: a peering carries traffic only when both sides exist and are Connected",
                    local.name, to.name
                ),
            ));
        }
    }
    if !local.remote_prefixes.iter().any(|p| p.contains(address)) {
        checks.push(format!(
            "peering {} does not list {address} in remoteAddressSpace: sync the peering if {}'s address space changed",
            local.name, to.name
        ));
    }
    Ok(checks)
}

fn side_carries(
    peering: &Peering,
    owner: &Vnet,
    remote: &Vnet,
    address: Ipv4Addr,
) -> Result<(), Finding> {
    if !peering.connected() {
        let state = peering
            .state
            .clone()
            .unwrap_or_else(|| "(not exported)".into());
        return Err(peering_field(
            peering,
            owner,
            "peeringState",
            state.clone(),
            "Connected",
            format!(
                "peering {} on VNet {} is {state}: Azure installs no route over it, so {} (the pull times out)",
                peering.name,
                owner.name,
                default_drop(address)
            ),
        ));
    }
    if !peering.allow_virtual_network_access {
        return Err(peering_field(
            peering,
            owner,
            "allowVirtualNetworkAccess",
            "false".into(),
            "true",
            format!(
                "peering {} on VNet {} does not allow access to {}: traffic to {address} is blocked",
                peering.name, owner.name, remote.name
            ),
        ));
    }
    if let Some(level) = &peering.sync_level
        && !super::shape::same(level, "FullyInSync")
        && !peering.remote_prefixes.iter().any(|p| p.contains(address))
        && owner.address_space.iter().all(|p| !p.contains(address))
    {
        return Err(peering_field(
            peering,
            owner,
            "peeringSyncLevel",
            level.clone(),
            "FullyInSync",
            format!(
                "peering {} is {level} and its remote address space lacks {address}: the address space changed and the peering was not synced",
                peering.name
            ),
        ));
    }
    Ok(())
}

/// The default route that drops a private address nothing else covers, in words.
fn default_drop(address: Ipv4Addr) -> String {
    match super::cidr::dropped_by_default()
        .into_iter()
        .find(|p| p.contains(address))
    {
        Some(range) => format!("the default route {range} → None drops {address}"),
        None => format!("no route carries {address}"),
    }
}

/// Why `address` is dropped from `subnet` (the chosen route is `None`, or there is none).
/// `effective` says the routes are Azure's own (the drop is certain even when the cause is not
/// in the exports); rebuilt routes without the gateway exports leave the drop itself open.
pub fn why_dropped(
    network: &Network,
    vnet: &Vnet,
    subnet: &Subnet,
    address: Ipv4Addr,
    chosen: Option<&Route>,
    effective: bool,
) -> Finding {
    if let Some(route) = chosen
        && route.source == RouteOrigin::User
        && let Some(id) = &route.resource
    {
        return Finding {
            step: Step::Route,
            resource: id.to_string(),
            field: "nextHopType".into(),
            observed: "None".into(),
            expected: "a next hop that reaches the registry (VirtualNetworkGateway, VirtualAppliance, or no route so the system route applies)".into(),
            show: show(id, "nextHopType"),
            ..network_finding(Step::Route, format!("{} drops {address}", route.describe()))
        };
    }
    if let Some((target, _)) = network.locate(address)
        && target.id != vnet.id
    {
        if network.peering(vnet, &target.id).is_some() {
            if let Err(finding) = check_peering(network, vnet, target, address) {
                return finding;
            }
        } else {
            let hub = vnet.peerings.iter().find_map(|p| {
                let hub = network.vnet(p.remote.as_ref()?)?;
                network.peering(hub, &target.id).map(|_| hub)
            });
            let cause = match hub {
                Some(hub) => format!(
                    "{address} is in VNet {}, which VNet {} is not peered with; both peer with {}, but peering is not transitive: spoke-to-spoke traffic needs a route to an appliance in {} that forwards it",
                    target.name, vnet.name, hub.name, hub.name
                ),
                None => format!(
                    "{address} is in VNet {}, which VNet {} is not peered with",
                    target.name, vnet.name
                ),
            };
            return missing_peering(vnet, target, cause);
        }
    }
    let route = chosen.map_or_else(|| "no route".to_string(), Route::describe);
    if !network.local_gateways_known || !network.gateways_known {
        let (file, command) = if network.local_gateways_known {
            (Export::VnetGateways.file(), Export::VnetGateways.command())
        } else {
            (
                Export::LocalGateways.file(),
                Export::LocalGateways.command(),
            )
        };
        let open = format!(
            "whether {address} is behind a gateway: {file} is not readable; produce it with: {command}"
        );
        return Finding {
            decides: (!effective).then_some(open),
            resource: file.to_string(),
            field: String::new(),
            observed: route.clone(),
            expected: format!("a route for {address}"),
            show: command.to_string(),
            ..network_finding(
                Step::Route,
                if effective {
                    format!(
                        "the NIC's effective routes drop {address} ({route}); without {file} the exports cannot say which gateway setting is missing"
                    )
                } else {
                    format!(
                        "the rebuilt routes drop {address} ({route}), but without {file} a gateway route for it cannot be ruled out"
                    )
                },
            )
        };
    }
    if let Some(local) = network
        .local_gateways
        .iter()
        .find(|l| l.prefixes.iter().any(|p| p.contains(address)))
    {
        return transit_gap(network, vnet, subnet, local, address);
    }
    Finding {
        step: Step::Route,
        resource: subnet.id.to_string(),
        field: "routeTable".into(),
        observed: route.clone(),
        expected: format!("a route for {address}: a peering, the gateway's prefixes, or a UDR"),
        show: show(&subnet.id, "routeTable.id"),
        ..network_finding(
            Step::Route,
            format!(
                "{address} is in no exported VNet or local network gateway, and the subnet's route for it is {route}: the packet is dropped"
            ),
        )
    }
}

/// Which flag keeps the local network gateway's prefixes out of `subnet`'s routes.
fn transit_gap(
    network: &Network,
    vnet: &Vnet,
    subnet: &Subnet,
    local: &LocalGateway,
    address: Ipv4Addr,
) -> Finding {
    let reaches = format!(
        "{address} is on-premises (local network gateway {})",
        local.name
    );
    let own_gateway = network
        .gateways
        .iter()
        .any(|g| g.vnet.as_ref() == Some(&vnet.id));
    if !own_gateway {
        let hub_peering = vnet.peerings.iter().find_map(|p| {
            let hub = network.vnet(p.remote.as_ref()?)?;
            network
                .gateways
                .iter()
                .any(|g| g.vnet.as_ref() == Some(&hub.id))
                .then_some((p, hub))
        });
        let Some((spoke_side, hub)) = hub_peering else {
            return Finding {
                resource: vnet.id.to_string(),
                field: "virtualNetworkPeerings".into(),
                observed: "no peering to a VNet with a virtual network gateway".into(),
                expected: "a peering to the hub that holds the gateway, with useRemoteGateways"
                    .into(),
                show: show(&vnet.id, "virtualNetworkPeerings[].remoteVirtualNetwork.id"),
                ..network_finding(
                    Step::Peering,
                    format!(
                        "{reaches}, but VNet {} has no gateway and no peering to one",
                        vnet.name
                    ),
                )
            };
        };
        if !spoke_side.connected()
            && let Err(finding) = side_carries(spoke_side, vnet, hub, address)
        {
            return finding;
        }
        if !spoke_side.use_remote_gateways {
            return peering_field(
                spoke_side,
                vnet,
                "useRemoteGateways",
                "false".into(),
                "true",
                format!(
                    "{reaches}; the spoke's peering {} does not use the hub's gateway, so Azure gives VNet {} no gateway routes and {}",
                    spoke_side.name,
                    vnet.name,
                    default_drop(address)
                ),
            );
        }
        let Some(hub_side) = network.peering(hub, &vnet.id) else {
            return missing_peering(
                hub,
                vnet,
                format!(
                    "{reaches}; hub VNet {} has no peering back to {}",
                    hub.name, vnet.name
                ),
            );
        };
        if let Err(finding) = side_carries(hub_side, hub, vnet, address) {
            return finding;
        }
        if let Some(gateway) = network
            .gateways
            .iter()
            .find(|g| g.vnet.as_ref() == Some(&hub.id))
            .filter(|g| rebuild::basic_sku(g))
        {
            return Finding {
                resource: gateway.id.to_string(),
                field: "sku.name".into(),
                observed: "Basic".into(),
                expected: "a SKU that supports gateway transit (VpnGw1 or higher)".into(),
                show: show(&gateway.id, "sku.name"),
                ..network_finding(
                    Step::Peering,
                    format!(
                        "{reaches}; the hub's gateway {} is Basic, which offers no gateway transit to peered VNets",
                        gateway.name
                    ),
                )
            };
        }
        if !hub_side.allow_gateway_transit {
            return peering_field(
                hub_side,
                hub,
                "allowGatewayTransit",
                "false".into(),
                "true",
                format!(
                    "{reaches}; the hub's peering {} does not allow gateway transit, so the spoke's useRemoteGateways has no effect and {}",
                    hub_side.name,
                    default_drop(address)
                ),
            );
        }
    }
    if let Some(table) = subnet
        .route_table
        .as_ref()
        .and_then(|id| network.route_table(id))
        && table.disable_bgp_route_propagation
    {
        return Finding {
            resource: table.id.to_string(),
            field: "disableBgpRoutePropagation".into(),
            observed: "true".into(),
            expected: format!(
                "false, or a user route for {address} with next hop VirtualNetworkGateway"
            ),
            show: show(&table.id, "disableBgpRoutePropagation"),
            ..network_finding(
                Step::Route,
                format!(
                    "{reaches}; route table {} on subnet {} disables gateway route propagation, so this subnet gets none of the gateway's routes (static or BGP) and {}",
                    table.name,
                    subnet.name,
                    default_drop(address)
                ),
            )
        };
    }
    let gateway = rebuild::gateway_in_reach(network, vnet).map(|(g, _)| g.name.clone());
    Finding {
        decides: Some(
            "the gateway's connections (`az network vpn-connection list`) and the routes Azure actually gives the NIC (`az network nic show-effective-route-table`)".into(),
        ),
        resource: local.id.to_string(),
        field: "localNetworkAddressSpace.addressPrefixes".into(),
        observed: format!("gateway {} in reach, yet no gateway route for {address}", gateway.unwrap_or_default()),
        expected: format!("a VirtualNetworkGateway route covering {address}"),
        show: show(&local.id, "localNetworkAddressSpace.addressPrefixes"),
        ..network_finding(Step::Route, format!("{reaches}; transit is configured but the subnet's routes lack it"))
    }
}

/// What the on-premises side must do for answers to come back: check items, because Azure's
/// exports show only Azure's side.
pub fn return_path(network: &Network, vnet: &Vnet, address: Ipv4Addr) -> Vec<String> {
    let spoke: Vec<String> = vnet.address_space.iter().map(ToString::to_string).collect();
    let spoke = spoke.join(", ");
    let gateway = rebuild::gateway_in_reach(network, vnet).map(|(g, _)| g);
    let local = network
        .local_gateways
        .iter()
        .find(|l| l.prefixes.iter().any(|p| p.contains(address)));
    let mut checks = Vec::new();
    match local {
        Some(local) => checks.push(format!(
            "local network gateway {} lists {address} in localNetworkAddressSpace: Azure sends it into the tunnel",
            local.name
        )),
        None => checks.push(format!(
            "no local network gateway lists {address}: the route was learned over BGP"
        )),
    }
    match gateway {
        Some(g) if g.bgp => checks.push(format!(
            "gateway {} speaks BGP and advertises {spoke}: the on-premises team should see it learned on the tunnel, and nothing filtering it",
            g.name
        )),
        _ => checks.push(format!(
            "on-premises team: the VPN device must route {spoke} (VNet {}) back into the tunnel; a static VPN learns nothing from Azure, and Azure's exports cannot show the far side",
            vnet.name
        )),
    }
    checks
}

/// An appliance as next hop: reachable, and what only its own configuration can show.
/// `Ok` holds check items; the verdict stays undecided because the appliance's rules are not
/// in Azure's network exports.
pub fn appliance(
    network: &Network,
    vnet: &Vnet,
    appliance: Ipv4Addr,
) -> Result<Vec<String>, Finding> {
    let mut checks = Vec::new();
    match network.locate(appliance) {
        Some((home, _)) if home.id != vnet.id => {
            checks.extend(check_peering(network, vnet, home, appliance)?);
            if let Some(p) = network.peering(vnet, &home.id)
                && !p.allow_forwarded_traffic
            {
                checks.push(format!(
                    "peering {} has allowForwardedTraffic false: answers the appliance forwards into VNet {} did not originate in {} (Azure does not always drop them, but set it for a supported path)",
                    p.name, vnet.name, home.name
                ));
            }
        }
        Some(_) => {}
        None => checks.push(format!(
            "the appliance {appliance} is in no exported VNet: check that the node subnet reaches it"
        )),
    }
    Ok(checks)
}

/// True when the chosen route leaves through a path this module explains.
pub fn crosses_peering(route: &Route) -> bool {
    matches!(
        route.next_hop,
        NextHop::VnetPeering | NextHop::InterfaceEndpoint
    )
}

#[cfg(test)]
mod tests;
