//! The steps after DNS: route (with peering, transit and return path), security rules and
//! the registry's own rules, each asked of its decision module.

use std::net::Ipv4Addr;

use crate::azure::cidr::Prefix;
use crate::azure::exports::Export;
use crate::azure::finding::{Finding, Step, show};
use crate::azure::model::{Network, Pool, Subnet, Vnet};
use crate::azure::nsg::{self, Direction, Flow, Nsg, Peer};
use crate::azure::peering;
use crate::azure::rebuild;
use crate::azure::registry::{self, Endpoint, Role};
use crate::azure::route::{self, NextHop, Route, RouteOrigin};
use crate::azure::shape;
use crate::vocab::{Layer, Owner};

use super::{PoolContext, Target, Walk, missing, pool_subnet};

impl PoolContext<'_> {
    /// `Ok(false)` when the path itself is unknown: the later steps have nothing to judge.
    pub(super) fn route(
        &self,
        endpoint: &Endpoint,
        target: Target,
        walk: &mut Walk,
    ) -> Result<bool, Finding> {
        if let Some(gap) = &self.route_gap {
            walk.undecided(gap.clone());
            return Ok(false);
        }
        let chosen = match target {
            Target::Address(a) => route::select(&self.routes, a),
            Target::Public => route::select_public(&self.routes),
        };
        let dropped = chosen.is_none_or(|r| r.next_hop == NextHop::None);
        if dropped {
            let finding = match target {
                Target::Address(a) => sibling_route(self.network, self.pool, self.subnet, a)
                    .unwrap_or_else(|| {
                        peering::why_dropped(
                            self.network,
                            self.vnet,
                            self.subnet,
                            a,
                            chosen,
                            self.effective,
                        )
                    }),
                Target::Public => public_drop(self.subnet, chosen),
            };
            // A drop the exports cannot confirm stays open; the later steps still run.
            if finding.decides.is_some() {
                walk.undecided(finding);
                return Ok(false);
            }
            return Err(finding);
        }
        let Some(route) = chosen else {
            return Ok(false);
        };
        let shown = route.describe();
        match (&route.next_hop, target) {
            (NextHop::VnetPeering | NextHop::InterfaceEndpoint, Target::Address(a)) => {
                match self.network.locate(a) {
                    Some((home, _)) if home.id != self.vnet.id => {
                        walk.checks
                            .extend(peering::check_peering(self.network, self.vnet, home, a)?);
                        walk.pass(
                            Step::Peering,
                            format!("{} ↔ {}: Connected both ways", self.vnet.name, home.name),
                        );
                    }
                    Some(_) => {}
                    None => walk.checks.push(format!(
                        "the VNet that holds {a} is not in vnets.json (another subscription?): only {}'s side of the peering was checked",
                        self.vnet.name
                    )),
                }
                walk.pass(Step::Route, shown);
            }
            (NextHop::Gateway, Target::Address(a)) => {
                walk.pass(Step::Route, shown);
                let checks = peering::return_path(self.network, self.vnet, a);
                walk.pass(Step::ReturnPath, checks.join("; "));
                walk.checks.extend(checks);
            }
            (NextHop::Appliance, _) => {
                let Some(appliance) = route.next_hop_ip else {
                    return Err(route_field(
                        route,
                        "nextHopIpAddress",
                        "(none)",
                        "the appliance's address",
                        format!("{shown} names no appliance address"),
                    ));
                };
                walk.checks
                    .extend(peering::appliance(self.network, self.vnet, appliance)?);
                walk.undecided(Finding {
                    decides: Some(format!(
                        "the appliance {appliance}'s own rules and routes: that it forwards TCP 443 to {} (an FQDN or network rule) and sends the answers back; they are not in Azure's network exports",
                        endpoint.host
                    )),
                    ..route_field(
                        route,
                        "nextHopIpAddress",
                        &appliance.to_string(),
                        &format!("an appliance that forwards TCP 443 to {}", endpoint.host),
                        format!("the pool's traffic to {} goes to the appliance {appliance} ({shown})", endpoint.host),
                    )
                });
            }
            (NextHop::Internet, Target::Public) => {
                let udr_cluster = self
                    .network
                    .cluster
                    .as_ref()
                    .and_then(|c| c.outbound_type.as_deref())
                    .is_some_and(|t| shape::same(t, "userDefinedRouting"));
                if udr_cluster && route.source == RouteOrigin::Default {
                    return Err(Finding {
                        step: Step::Route,
                        layer: Layer::Route,
                        owner: Owner::NetworkTeam,
                        cause: format!(
                            "the cluster's outboundType is userDefinedRouting, so AKS created no outbound path, yet subnet {} has no 0.0.0.0/0 user route: {} is unreachable from pool {}",
                            self.subnet.name, endpoint.host, self.pool.name
                        ),
                        resource: self.subnet.id.to_string(),
                        field: "routeTable".into(),
                        observed: self
                            .subnet
                            .route_table
                            .as_ref()
                            .map_or_else(|| "(none)".into(), ToString::to_string),
                        expected:
                            "the cluster's route table, with 0.0.0.0/0 to the egress appliance"
                                .into(),
                        show: show(&self.subnet.id, "routeTable.id"),
                        decides: None,
                    });
                }
                walk.pass(Step::Route, shown);
            }
            _ => walk.pass(Step::Route, shown),
        }
        Ok(true)
    }

    /// What the `VirtualNetwork` service tag covers for a subnet of `vnet`.
    fn virtual_network_tag(&self, vnet: &Vnet) -> Vec<Prefix> {
        let mut prefixes = vnet.address_space.clone();
        for p in vnet.peerings.iter().filter(|p| p.connected()) {
            prefixes.extend(p.remote_prefixes.iter().copied());
        }
        // The tag also covers the prefixes of user routes (service-tags-overview).
        for subnet in &vnet.subnets {
            if let Some(table) = subnet
                .route_table
                .as_ref()
                .and_then(|id| self.network.route_table(id))
            {
                prefixes.extend(
                    table
                        .routes
                        .iter()
                        .map(|r| r.prefix)
                        .filter(|p| p.prefix_len() > 0),
                );
            }
        }
        if rebuild::gateway_in_reach(self.network, vnet).is_some() {
            for l in &self.network.local_gateways {
                prefixes.extend(l.prefixes.iter().copied());
            }
        }
        prefixes
    }

    pub(super) fn security(
        &self,
        endpoint: &Endpoint,
        target: Target,
        walk: &mut Walk,
    ) -> Result<(), Finding> {
        let tag = self.virtual_network_tag(self.vnet);
        let destination = match target {
            Target::Address(a) => Peer::Address(a),
            Target::Public => Peer::Public(endpoint.service_tags()),
        };
        let flow = Flow {
            direction: Direction::Outbound,
            source: self.node,
            destination,
            port: 443,
            virtual_network: &tag,
        };
        let effective = self.network.effective_nsgs.iter().find(|e| {
            e.pool
                .as_deref()
                .is_some_and(|p| p.eq_ignore_ascii_case(&self.pool.name))
        });
        let mut groups: Vec<(&Nsg, &str)> = Vec::new();
        match effective {
            // NIC first, then subnet: outbound order.
            Some(e) => {
                let mut entries: Vec<_> = e.data.iter().collect();
                entries.sort_by_key(|g| !g.on_nic);
                groups.extend(entries.into_iter().map(|g| {
                    (
                        &g.nsg,
                        if g.on_nic {
                            "NIC (effective)"
                        } else {
                            "subnet (effective)"
                        },
                    )
                }));
            }
            None => {
                if let Some(id) = &self.subnet.nsg {
                    match self.network.nsg(id) {
                        Some(n) => groups.push((n, "subnet")),
                        None => {
                            walk.undecided(missing(
                                self.exports,
                                Export::Nsgs.file(),
                                Export::Nsgs,
                                Step::Nsg,
                                &format!(
                                    "the outbound rules of subnet {} (NSG {})",
                                    self.subnet.name,
                                    id.name()
                                ),
                            ));
                        }
                    }
                }
            }
        }
        let mut passed = Vec::new();
        for (group, place) in groups {
            let decision = nsg::evaluate(group, &flow);
            if !decision.allowed {
                return Err(nsg_finding(
                    group,
                    &decision.rule,
                    place,
                    self.node,
                    endpoint,
                    target,
                ));
            }
            passed.push(format!(
                "{place} NSG {}: {} allows",
                group.name, decision.rule.name
            ));
        }
        // The private endpoint's side, where its subnet applies NSGs to private endpoints.
        if let Target::Address(a) = target
            && let Some(pe) = registry::private_endpoint_at(self.network, a)
            && let Some((pe_vnet, pe_subnet)) =
                pe.subnet.as_ref().and_then(|s| self.network.subnet(s))
            && pe_subnet
                .private_endpoint_policies
                .as_deref()
                .is_some_and(|p| {
                    shape::same(p, "Enabled") || shape::same(p, "NetworkSecurityGroupEnabled")
                })
            && let Some(group) = pe_subnet.nsg.as_ref().and_then(|id| self.network.nsg(id))
        {
            let tag = self.virtual_network_tag(pe_vnet);
            let inbound = Flow {
                direction: Direction::Inbound,
                source: self.node,
                destination: Peer::Address(a),
                port: 443,
                virtual_network: &tag,
            };
            let decision = nsg::evaluate(group, &inbound);
            if !decision.allowed {
                return Err(nsg_finding(
                    group,
                    &decision.rule,
                    "private endpoint subnet",
                    self.node,
                    endpoint,
                    target,
                ));
            }
            passed.push(format!(
                "private endpoint subnet NSG {}: {} allows inbound",
                group.name, decision.rule.name
            ));
        }
        if passed.is_empty() {
            passed.push("no NSG on the subnet".into());
            if effective.is_none() {
                walk.checks.push(format!(
                    "a NIC-level NSG on pool {}'s nodes would show only in effective-nsg/<nic>.json",
                    self.pool.name
                ));
            }
        }
        walk.pass(Step::Nsg, passed.join("; "));
        Ok(())
    }

    pub(super) fn registry_rules(
        &self,
        endpoint: &Endpoint,
        target: Target,
        walk: &mut Walk,
    ) -> Result<(), Finding> {
        let Some(registry) = &self.network.registry else {
            return Ok(());
        };
        if matches!(endpoint.role, Role::Outside { .. }) {
            return Ok(());
        }
        match target {
            Target::Public => match registry::check_public(registry, endpoint) {
                Ok(()) => walk.pass(Step::RegistryRules, "public access allowed".into()),
                Err(finding) if finding.decides.is_some() => walk.undecided(finding),
                Err(finding) => return Err(finding),
            },
            Target::Address(a) => {
                if let Some(pe) = registry::private_endpoint_at(self.network, a) {
                    registry::check_private(registry, pe)?;
                    walk.pass(
                        Step::RegistryRules,
                        format!("private endpoint {} approved", pe.name),
                    );
                }
            }
        }
        Ok(())
    }
}

/// A user route another pool's subnet has for `address` and this subnet lacks: the usual
/// cause when one pool pulls and another does not.
fn sibling_route(
    network: &Network,
    pool: &Pool,
    subnet: &Subnet,
    address: Ipv4Addr,
) -> Option<Finding> {
    network
        .pools
        .iter()
        .filter(|p| p.name != pool.name)
        .find_map(|other| {
            let (_, other_subnet) = pool_subnet(network, other)?;
            let table_id = other_subnet.route_table.as_ref()?;
            if subnet.route_table.as_ref() == Some(table_id) {
                return None;
            }
            let table = network.route_table(table_id)?;
            let route = table
                .routes
                .iter()
                .filter(|r| r.prefix.contains(address) && r.next_hop != NextHop::None)
                .max_by_key(|r| r.prefix.prefix_len())?;
            let observed = subnet
                .route_table
                .as_ref()
                .map_or_else(|| "(none)".into(), |t| t.name().to_string());
            Some(Finding {
                step: Step::Route,
                layer: Layer::Route,
                owner: Owner::NetworkTeam,
                cause: format!(
                    "pool {}'s subnet {} has route table {} whose route {} carries {address}; pool {}'s subnet {} has {} and no such route, so {address} is dropped there",
                    other.name,
                    other_subnet.name,
                    table.name,
                    route.describe(),
                    pool.name,
                    subnet.name,
                    if subnet.route_table.is_some() {
                        format!("route table {observed}")
                    } else {
                        "no route table".to_string()
                    }
                ),
                resource: subnet.id.to_string(),
                field: "routeTable".into(),
                observed,
                expected: format!(
                    "{} (as on subnet {}), or the same route in this subnet's table",
                    table.name, other_subnet.name
                ),
                show: show(&subnet.id, "routeTable.id"),
                decides: None,
            })
        })
}

fn route_field(
    route: &Route,
    field: &str,
    observed: &str,
    expected: &str,
    cause: String,
) -> Finding {
    let (resource, show_cmd) = match &route.resource {
        Some(id) => (id.to_string(), show(id, field)),
        None => (
            route.origin.clone(),
            "az network nic show-effective-route-table --ids \"$NIC_ID\" -o table".into(),
        ),
    };
    Finding {
        step: Step::Route,
        layer: Layer::Route,
        owner: Owner::NetworkTeam,
        cause,
        resource,
        field: field.into(),
        observed: observed.into(),
        expected: expected.into(),
        show: show_cmd,
        decides: None,
    }
}

/// A public address dropped: only a user route can send 0.0.0.0/0 to `None`.
fn public_drop(subnet: &Subnet, chosen: Option<&Route>) -> Finding {
    match chosen {
        Some(route) => route_field(
            route,
            "nextHopType",
            "None",
            "Internet, or an appliance that reaches the registry",
            format!(
                "the registry's public address is dropped by {}",
                route.describe()
            ),
        ),
        None => Finding {
            step: Step::Route,
            layer: Layer::Route,
            owner: Owner::NetworkTeam,
            cause: format!("subnet {} has no route for public addresses", subnet.name),
            resource: subnet.id.to_string(),
            field: "routeTable".into(),
            observed: "no 0.0.0.0/0 route".into(),
            expected: "a default route".into(),
            show: show(&subnet.id, "routeTable.id"),
            decides: None,
        },
    }
}

fn nsg_finding(
    group: &Nsg,
    rule: &nsg::Rule,
    place: &str,
    node: Ipv4Addr,
    endpoint: &Endpoint,
    target: Target,
) -> Finding {
    let short = rule.name.rsplit('/').next().unwrap_or(&rule.name);
    let to = match target {
        Target::Address(a) => a.to_string(),
        Target::Public => format!("{}'s public address", endpoint.host),
    };
    let (resource, show_cmd) = match &group.id {
        Some(id) => (
            format!("{id}/{}", rule.name),
            show(
                id,
                &format!(
                    "{}[?name=='{short}']",
                    if rule.name.starts_with("default") {
                        "defaultSecurityRules"
                    } else {
                        "securityRules"
                    }
                ),
            ),
        ),
        None => (
            group.name.clone(),
            "az network nic list-effective-nsg --ids \"$NIC_ID\"".into(),
        ),
    };
    let direction = match rule.direction {
        Direction::Inbound => "inbound",
        Direction::Outbound => "outbound",
    };
    Finding {
        step: Step::Nsg,
        layer: Layer::Route,
        owner: Owner::NetworkTeam,
        cause: format!(
            "the {place} NSG {} denies {direction} TCP 443 from {node} to {to} by rule {short} (priority {}): the connection times out",
            group.name, rule.priority
        ),
        resource,
        field: rule.name.clone(),
        observed: format!("Deny, priority {}", rule.priority),
        expected: "an Allow for TCP 443 to the registry at a lower priority number".into(),
        show: show_cmd,
        decides: None,
    }
}
