use super::*;
use crate::azure::model::{Network, fixture};

fn spoke(network: &Network) -> (&Vnet, &Subnet) {
    let vnet = network
        .vnets
        .iter()
        .find(|v| v.name == "vnet-spoke")
        .expect("spoke");
    (vnet, &vnet.subnets[0])
}

fn dropped(network: &Network, address: &str) -> Finding {
    let (vnet, subnet) = spoke(network);
    why_dropped(
        network,
        vnet,
        subnet,
        address.parse().expect("ip"),
        None,
        false,
    )
}

#[test]
fn each_transit_flag_is_named_on_its_own_side() {
    let finding = dropped(&fixture("no-use-remote-gateways"), "192.168.20.10");
    assert_eq!(
        (finding.field.as_str(), finding.observed.as_str()),
        ("useRemoteGateways", "false")
    );
    assert!(finding.resource.ends_with("spoke-to-hub"));
    let finding = dropped(&fixture("no-gateway-transit"), "192.168.20.10");
    assert_eq!(finding.field, "allowGatewayTransit");
    assert!(finding.resource.ends_with("hub-to-spoke"));
    let finding = dropped(&fixture("bgp-propagation-disabled"), "192.168.20.10");
    assert_eq!(finding.field, "disableBgpRoutePropagation");
    assert_eq!(finding.step, Step::Route);
}

#[test]
fn a_basic_gateway_offers_no_transit() {
    let mut network = fixture("healthy");
    network.gateways[0].sku = Some("Basic".into());
    let finding = dropped(&network, "192.168.20.10");
    assert_eq!(
        (finding.field.as_str(), finding.observed.as_str()),
        ("sku.name", "Basic")
    );
    assert!(finding.resource.ends_with("vgw-hub"));
}

#[test]
fn a_peering_without_its_counterpart_or_connection_is_named() {
    let finding = dropped(&fixture("peering-disconnected"), "10.0.1.5");
    assert_eq!(finding.field, "peeringState");
    assert_eq!(finding.observed, "Disconnected");
    assert!(
        finding.cause.contains("10.0.0.0/8 → None"),
        "{}",
        finding.cause
    );
    let mut network = fixture("healthy");
    network.vnets[0].peerings.clear();
    let (vnet, _) = spoke(&network);
    let hub = &network.vnets[0];
    let finding = check_peering(&network, vnet, hub, "10.0.1.5".parse().expect("ip"))
        .expect_err("one-sided peering");
    assert_eq!(finding.field, "virtualNetworkPeerings");
    assert!(finding.resource.ends_with("vnet-hub"));
}

#[test]
fn spoke_to_spoke_is_not_transitive() {
    let mut network = fixture("healthy");
    let mut other = network.vnets[1].clone();
    other.id = crate::azure::shape::ResourceId::new(
        &other.id.as_str().replace("vnet-spoke", "vnet-spoke2"),
    );
    other.name = "vnet-spoke2".into();
    other.address_space = vec![crate::azure::cidr::Prefix::parse("10.5.0.0/16").expect("p")];
    other.peerings.clear();
    let mut hub_side = network.vnets[0].peerings[0].clone();
    hub_side.name = "hub-to-spoke2".into();
    hub_side.remote = Some(other.id.clone());
    network.vnets[0].peerings.push(hub_side);
    network.vnets.push(other);
    let finding = dropped(&network, "10.5.0.4");
    assert!(
        finding.cause.contains("not transitive"),
        "{}",
        finding.cause
    );
    assert_eq!(finding.field, "virtualNetworkPeerings");
}

#[test]
fn the_return_path_is_a_check_for_the_far_side() {
    let mut network = fixture("healthy");
    let address = "192.168.20.10".parse().expect("ip");
    let checks = return_path(&network, &network.vnets[1], address);
    assert!(checks.iter().any(|c| c.contains("lng-onprem")));
    assert!(checks.iter().any(|c| c.contains("static VPN")));
    network.gateways[0].bgp = true;
    let checks = return_path(&network, &network.vnets[1], address);
    assert!(checks.iter().any(|c| c.contains("speaks BGP")));
}
