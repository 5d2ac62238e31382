use super::*;
use crate::azure::model::fixture;

fn outcome<'a>(analysis: &'a Analysis, pool: &str, host: &str) -> &'a EndpointAnalysis {
    analysis
        .pools
        .iter()
        .find(|p| p.pool == pool)
        .and_then(|p| p.endpoints.iter().find(|e| e.endpoint.host == host))
        .expect("pool and endpoint")
}

#[test]
fn an_undecided_step_does_not_hide_a_later_certain_failure() {
    let mut network = fixture("udr-appliance");
    let deny = crate::azure::nsg::parse_rule(
        &serde_json::json!({"name": "deny-internet", "priority": 100, "direction": "Outbound",
            "access": "Deny", "protocol": "Tcp", "sourceAddressPrefix": "*",
            "destinationAddressPrefix": "Internet", "destinationPortRange": "443"}),
        "securityRules",
    )
    .expect("rule");
    network.nsgs[0].rules.push(deny);
    let analysis = analyse(&network, &Exports::default(), Some("user"));
    let login = outcome(&analysis, "user", "contosoreg.azurecr.io");
    assert!(
        matches!(&login.outcome, Outcome::Failed(f) if f.field == "securityRules/deny-internet"),
        "{:?}",
        login.outcome
    );
    let states: Vec<_> = login.steps.iter().map(|s| (s.step, s.ok)).collect();
    assert_eq!(
        states,
        [
            (Step::Dns, Some(true)),
            (Step::Route, None),
            (Step::Nsg, Some(false))
        ]
    );
}

#[test]
fn a_public_answer_fails_only_when_the_registry_refuses_public_clients() {
    let mut network = fixture("zone-not-linked");
    let open = |network: &mut Network, access: &str, action: &str| {
        if let Some(r) = network.registry.as_mut() {
            r.public_network_access = Some(access.into());
            r.default_action = Some(action.into());
        }
    };
    open(&mut network, "Enabled", "Allow");
    let analysis = analyse(&network, &Exports::default(), Some("system"));
    let login = outcome(&analysis, "system", "contosoreg.azurecr.io");
    assert_eq!(login.outcome, Outcome::Passed, "{:?}", login.steps);
    assert!(login.checks.iter().any(|c| c.contains("not linked")));
    open(&mut network, "Enabled", "Deny");
    let analysis = analyse(&network, &Exports::default(), Some("system"));
    let login = outcome(&analysis, "system", "contosoreg.azurecr.io");
    assert!(
        matches!(&login.outcome, Outcome::Undecided(f) if f.field == "virtualNetworkLinks" && f.decides.is_some()),
        "{:?}",
        login.outcome
    );
}

fn spoke_mut(network: &mut Network) -> &mut Vnet {
    network
        .vnets
        .iter_mut()
        .find(|v| v.name == "vnet-spoke")
        .expect("spoke")
}

#[test]
fn a_dns_server_the_node_cannot_reach_fails_dns_on_the_route() {
    let mut network = fixture("custom-dns-no-forward");
    spoke_mut(&mut network).peerings[0].state = Some("Disconnected".into());
    let analysis = analyse(&network, &Exports::default(), Some("system"));
    let login = outcome(&analysis, "system", "contosoreg.azurecr.io");
    let Outcome::Failed(finding) = &login.outcome else {
        panic!("{:?}", login.outcome)
    };
    assert_eq!((finding.step, finding.layer), (Step::Dns, Layer::Dns));
    assert_eq!(finding.field, "peeringState");
    assert_eq!(finding.owner, Owner::NetworkTeam);
    assert!(
        finding
            .cause
            .contains("cannot reach its DNS server 10.0.2.4")
    );
}

#[test]
fn an_on_premises_dns_server_leaves_dns_undecided_with_what_decides() {
    let mut network = fixture("healthy");
    spoke_mut(&mut network).dns_servers = vec!["192.168.1.10".into()];
    let analysis = analyse(&network, &Exports::default(), Some("user"));
    let login = outcome(&analysis, "user", "contosoreg.azurecr.io");
    assert!(
        matches!(&login.outcome, Outcome::Undecided(f)
            if f.field == "dhcpOptions.dnsServers"
                && f.decides.as_deref().is_some_and(|d| d.contains("conditionally forwards azurecr.io"))),
        "{:?}",
        login.outcome
    );
    // The mirror's address is given, so its path is still decided.
    assert_eq!(
        outcome(&analysis, "user", "mirror.corp.example").outcome,
        Outcome::Passed
    );
}

#[test]
fn the_private_endpoint_subnet_nsg_counts_where_its_policies_apply() {
    let mut network = fixture("healthy");
    let deny = crate::azure::nsg::parse_rule(
        &serde_json::json!({"name": "deny-spoke", "priority": 100, "direction": "Inbound",
            "access": "Deny", "protocol": "*", "sourceAddressPrefix": "10.1.0.0/16",
            "destinationAddressPrefix": "*", "destinationPortRange": "*"}),
        "securityRules",
    )
    .expect("rule");
    let nsg_id = crate::azure::shape::ResourceId::new(
        "/subscriptions/s/resourceGroups/rg-hub/providers/Microsoft.Network/networkSecurityGroups/nsg-endpoints",
    );
    network.nsgs.push(crate::azure::nsg::Nsg {
        id: Some(nsg_id.clone()),
        name: "nsg-endpoints".into(),
        rules: vec![deny],
    });
    let hub = network
        .vnets
        .iter_mut()
        .find(|v| v.name == "vnet-hub")
        .expect("hub");
    let endpoints = hub
        .subnets
        .iter_mut()
        .find(|s| s.name == "snet-endpoints")
        .expect("subnet");
    endpoints.nsg = Some(nsg_id);
    let passes = analyse(&network, &Exports::default(), Some("system"));
    assert_eq!(
        outcome(&passes, "system", "contosoreg.azurecr.io").outcome,
        Outcome::Passed,
        "policies Disabled: the endpoint subnet's NSG does not apply to the endpoint"
    );
    let hub = network
        .vnets
        .iter_mut()
        .find(|v| v.name == "vnet-hub")
        .expect("hub");
    for subnet in &mut hub.subnets {
        subnet.private_endpoint_policies = Some("NetworkSecurityGroupEnabled".into());
    }
    let fails = analyse(&network, &Exports::default(), Some("system"));
    let login = outcome(&fails, "system", "contosoreg.azurecr.io");
    assert!(
        matches!(&login.outcome, Outcome::Failed(f) if f.step == Step::Nsg && f.field == "securityRules/deny-spoke" && f.cause.contains("private endpoint subnet")),
        "{:?}",
        login.outcome
    );
}

#[test]
fn a_pool_without_a_subnet_id_lives_in_the_node_resource_groups_vnet() {
    let mut network = fixture("healthy");
    let mut managed = spoke_mut(&mut network).clone();
    managed.id = crate::azure::shape::ResourceId::new(
        "/subscriptions/s/resourcegroups/mc_rg-aks_aks-prod_westeurope/providers/Microsoft.Network/virtualNetworks/aks-vnet-1234",
    );
    managed.name = "aks-vnet-1234".into();
    network.vnets.push(managed);
    network.pools[0].subnet = None;
    let analysis = analyse(&network, &Exports::default(), Some("system"));
    assert_eq!(analysis.pools[0].vnet.as_deref(), Some("aks-vnet-1234"));
    // Unknown node resource group: said, not guessed.
    if let Some(c) = network.cluster.as_mut() {
        c.node_resource_group = None;
    }
    let analysis = analyse(&network, &Exports::default(), Some("system"));
    let login = outcome(&analysis, "system", "contosoreg.azurecr.io");
    assert!(
        matches!(&login.outcome, Outcome::Undecided(f) if f.cause.contains("AKS-managed VNet")),
        "{:?}",
        login.outcome
    );
}

#[test]
fn the_first_failing_step_stops_the_walk() {
    let network = fixture("zone-not-linked");
    let analysis = analyse(&network, &Exports::default(), None);
    let login = outcome(&analysis, "system", "contosoreg.azurecr.io");
    assert_eq!(login.steps.len(), 1, "{:?}", login.steps);
    assert!(matches!(&login.outcome, Outcome::Failed(f) if f.step == Step::Dns));
}
