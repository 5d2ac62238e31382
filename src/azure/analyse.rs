//! The analysis: for every node pool and every endpoint of the pull, the steps in the pull's
//! order — DNS, route (with peering, transit and return path), security rules, registry rules —
//! each decided by its own pure function, stopping at the first step that fails. A step the
//! exports cannot decide is recorded as undecided and the walk goes on: a later step that
//! certainly fails still fails the pull.

use std::net::Ipv4Addr;

use crate::vocab::{Layer, Owner};

use super::cidr::{self, Prefix};
use super::dns::{self, Answer, PublicBecause, Resolver};
use super::exports::{Export, Exports, FileState, zone_file};
use super::finding::{Finding, Step, show};
use super::model::{Network, Pool, Subnet, Vnet};
use super::nsg::{self, Direction, Flow, Nsg, Peer};
use super::peering;
use super::rebuild;
use super::registry::{self, Endpoint, Role};
use super::route::{self, NextHop, Route, Source};
use super::shape;

/// Where a pool's routes came from.
#[derive(Debug, Clone, PartialEq)]
pub enum RoutesFrom {
    /// `effective-routes/<nic>.json`.
    Effective { nic: String },
    /// Rebuilt from the route table, peerings and gateways.
    Rebuilt,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    Failed(Finding),
    Undecided(Finding),
}

/// One step as walked.
#[derive(Debug, Clone)]
pub struct StepLog {
    pub step: Step,
    /// `Some(true)` passed, `Some(false)` failed, `None` undecided.
    pub ok: Option<bool>,
    pub detail: String,
}

#[derive(Debug, Clone)]
pub struct EndpointAnalysis {
    pub endpoint: Endpoint,
    /// What the name resolves to from this pool: an address, or `public`.
    pub resolves_to: Option<String>,
    pub steps: Vec<StepLog>,
    pub outcome: Outcome,
    /// What the exports cannot show and someone should check.
    pub checks: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct PoolAnalysis {
    pub pool: String,
    pub subnet: Option<String>,
    pub vnet: Option<String>,
    pub routes_from: Option<RoutesFrom>,
    pub endpoints: Vec<EndpointAnalysis>,
}

#[derive(Debug, Clone)]
pub struct Analysis {
    pub cluster: Option<String>,
    pub registry: Option<String>,
    pub pools: Vec<PoolAnalysis>,
    /// Conclusions the exports did not allow, each naming the file and its command.
    pub unconcluded: Vec<String>,
}

/// A finding that says an export is missing or unreadable.
fn missing(exports: &Exports, file: &str, export: Export, step: Step, what: &str) -> Finding {
    let (state, command) = match exports.status(file) {
        Some(status) => (
            match &status.state {
                FileState::Unreadable(why) => format!("unreadable ({why})"),
                FileState::Missing => "missing".into(),
                FileState::Read => "without the entry".into(),
            },
            status.command(),
        ),
        None => ("missing".into(), export.command().to_string()),
    };
    Finding {
        step,
        layer: match step {
            Step::Dns => Layer::Dns,
            Step::RegistryRules => Layer::Forbidden,
            _ => Layer::Route,
        },
        owner: Owner::NetworkTeam,
        cause: format!("{file} is {state}: {what} cannot be decided"),
        resource: file.to_string(),
        field: String::new(),
        observed: state,
        expected: "the export".into(),
        show: command.clone(),
        decides: Some(format!("the export {file}: {command}")),
    }
}

/// Run the analysis; `only_pool` restricts it to one pool (by name, any case).
pub fn analyse(network: &Network, exports: &Exports, only_pool: Option<&str>) -> Analysis {
    let mut unconcluded = Vec::new();
    for status in &exports.files {
        let needed = !status.export.optional() || status.state != FileState::Missing;
        if needed && status.state != FileState::Read {
            let state = match &status.state {
                FileState::Unreadable(why) => format!("is unreadable ({why})"),
                _ => "is missing".into(),
            };
            unconcluded.push(format!(
                "{} {state}; produce it with: {}",
                status.file,
                status.command()
            ));
        }
    }
    if network.pools.is_empty() {
        unconcluded.push(
            "no node pools known (aks.json and nodepools.json): no pool's path could be analysed"
                .into(),
        );
    }
    if network.registry.is_none() {
        unconcluded.push("no registry known (acr.json): its login server, data endpoints and rules were not analysed".into());
    }
    let endpoints = registry::endpoints(network);
    let pools = network
        .pools
        .iter()
        .filter(|p| only_pool.is_none_or(|only| p.name.eq_ignore_ascii_case(only)))
        .map(|pool| analyse_pool(network, exports, pool, &endpoints))
        .collect();
    Analysis {
        cluster: network.cluster.as_ref().map(|c| c.name.clone()),
        registry: network.registry.as_ref().map(|r| r.login_server.clone()),
        pools,
        unconcluded,
    }
}

/// The pool's subnet id; an AKS-managed VNet (no `vnetSubnetId`) lives in the node resource group.
fn pool_subnet<'a>(network: &'a Network, pool: &Pool) -> Option<(&'a Vnet, &'a Subnet)> {
    match &pool.subnet {
        Some(id) => network.subnet(id),
        None => {
            let node_rg = network.cluster.as_ref()?.node_resource_group.as_deref()?;
            network
                .vnets
                .iter()
                .filter(|v| {
                    v.id.resource_group()
                        .is_some_and(|rg| rg.eq_ignore_ascii_case(node_rg))
                })
                .find_map(|v| v.subnets.first().map(|s| (v, s)))
        }
    }
}

fn analyse_pool(
    network: &Network,
    exports: &Exports,
    pool: &Pool,
    endpoints: &[Endpoint],
) -> PoolAnalysis {
    let Some((vnet, subnet)) = pool_subnet(network, pool) else {
        let cause = match &pool.subnet {
            Some(id) => format!("pool {}'s subnet {id}", pool.name),
            None => format!(
                "pool {}'s AKS-managed VNet in the node resource group",
                pool.name
            ),
        };
        let finding = missing(
            exports,
            Export::Vnets.file(),
            Export::Vnets,
            Step::Dns,
            &format!("{cause} is not in vnets.json, so every step"),
        );
        return PoolAnalysis {
            pool: pool.name.clone(),
            subnet: pool.subnet.as_ref().map(ToString::to_string),
            vnet: None,
            routes_from: None,
            endpoints: endpoints
                .iter()
                .map(|e| EndpointAnalysis {
                    endpoint: e.clone(),
                    resolves_to: None,
                    steps: vec![StepLog {
                        step: Step::Dns,
                        ok: None,
                        detail: finding.cause.clone(),
                    }],
                    outcome: Outcome::Undecided(finding.clone()),
                    checks: Vec::new(),
                })
                .collect(),
        };
    };
    let effective = network.effective_routes.iter().find(|e| {
        e.pool
            .as_deref()
            .is_some_and(|p| p.eq_ignore_ascii_case(&pool.name))
    });
    let (routes, routes_from) = match effective {
        Some(e) => (
            with_route_table_ids(network, subnet, &e.data),
            RoutesFrom::Effective { nic: e.nic.clone() },
        ),
        None => (rebuild::routes(network, vnet, subnet), RoutesFrom::Rebuilt),
    };
    let route_gap = match (&routes_from, &subnet.route_table) {
        (RoutesFrom::Rebuilt, Some(id)) if network.route_table(id).is_none() => Some(missing(
            exports,
            Export::RouteTables.file(),
            Export::RouteTables,
            Step::Route,
            &format!(
                "route table {} of subnet {}, so the subnet's routes",
                id.name(),
                subnet.name
            ),
        )),
        _ => None,
    };
    let context = PoolContext {
        network,
        exports,
        pool,
        vnet,
        subnet,
        routes,
        route_gap,
        node: node_address(subnet),
    };
    PoolAnalysis {
        pool: pool.name.clone(),
        subnet: Some(subnet.id.to_string()),
        vnet: Some(vnet.name.clone()),
        endpoints: endpoints.iter().map(|e| context.endpoint(e)).collect(),
        routes_from: Some(routes_from),
    }
}

/// Effective user routes name no resource; the subnet's route table holds the same route
/// (prefix and next hop), so point at it: that is where the field is changed.
fn with_route_table_ids(network: &Network, subnet: &Subnet, routes: &[Route]) -> Vec<Route> {
    let table = subnet
        .route_table
        .as_ref()
        .and_then(|id| network.route_table(id));
    routes
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if r.source == Source::User
                && r.resource.is_none()
                && let Some(same) = table.and_then(|t| {
                    t.routes.iter().find(|u| {
                        u.prefix == r.prefix
                            && u.next_hop == r.next_hop
                            && u.next_hop_ip == r.next_hop_ip
                    })
                })
            {
                r.resource.clone_from(&same.resource);
            }
            r
        })
        .collect()
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

/// An address of the node subnet: Azure reserves the first four, so the first node gets `.4`.
fn node_address(subnet: &Subnet) -> Ipv4Addr {
    subnet
        .prefixes
        .first()
        .map_or(Ipv4Addr::UNSPECIFIED, |p| p.nth(4))
}

/// Where the pull goes after DNS.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Address(Ipv4Addr),
    Public,
}

struct PoolContext<'a> {
    network: &'a Network,
    exports: &'a Exports,
    pool: &'a Pool,
    vnet: &'a Vnet,
    subnet: &'a Subnet,
    routes: Vec<Route>,
    route_gap: Option<Finding>,
    node: Ipv4Addr,
}

/// One endpoint's walk, collected as it goes.
struct Walk {
    steps: Vec<StepLog>,
    checks: Vec<String>,
    undecided: Option<Finding>,
}

impl Walk {
    fn pass(&mut self, step: Step, detail: String) {
        self.steps.push(StepLog {
            step,
            ok: Some(true),
            detail,
        });
    }

    fn undecided(&mut self, finding: Finding) {
        self.steps.push(StepLog {
            step: finding.step,
            ok: None,
            detail: finding.cause.clone(),
        });
        if self.undecided.is_none() {
            self.undecided = Some(finding);
        }
    }

    fn fail(&mut self, finding: &Finding) {
        self.steps.push(StepLog {
            step: finding.step,
            ok: Some(false),
            detail: finding.cause.clone(),
        });
    }
}

impl PoolContext<'_> {
    fn endpoint(&self, endpoint: &Endpoint) -> EndpointAnalysis {
        let mut walk = Walk {
            steps: Vec::new(),
            checks: Vec::new(),
            undecided: None,
        };
        let result = self.walk(endpoint, &mut walk);
        let (resolves_to, outcome) = match result {
            Ok(target) => (
                target.map(describe_target),
                match walk.undecided.take() {
                    Some(finding) => Outcome::Undecided(finding),
                    None => Outcome::Passed,
                },
            ),
            Err((target, finding)) => {
                walk.fail(&finding);
                (target.map(describe_target), Outcome::Failed(finding))
            }
        };
        EndpointAnalysis {
            endpoint: endpoint.clone(),
            resolves_to,
            steps: walk.steps,
            outcome,
            checks: walk.checks,
        }
    }

    /// The steps in order; `Err` is the first step that certainly fails.
    fn walk(
        &self,
        endpoint: &Endpoint,
        walk: &mut Walk,
    ) -> Result<Option<Target>, (Option<Target>, Finding)> {
        let target = match self.dns(endpoint, walk) {
            Ok(Some(target)) => target,
            Ok(None) => return Ok(None),
            Err(finding) => return Err((None, finding)),
        };
        let with = |f: Finding| (Some(target), f);
        self.route(endpoint, target, walk).map_err(with)?;
        self.security(endpoint, target, walk).map_err(with)?;
        self.registry_rules(endpoint, target, walk).map_err(with)?;
        Ok(Some(target))
    }

    fn dns(&self, endpoint: &Endpoint, walk: &mut Walk) -> Result<Option<Target>, Finding> {
        match &endpoint.role {
            Role::Outside { address } => {
                walk.pass(Step::Dns, format!("{address}, as endpoints.json gives it"));
                walk.checks.push(format!(
                    "the resolver of VNet {} must answer {} with {address}: names outside Azure's zones are not in the exports",
                    self.vnet.name, endpoint.host
                ));
                return Ok(Some(Target::Address(*address)));
            }
            Role::Storage => {
                walk.pass(
                    Step::Dns,
                    "the registry's storage account: a public name, given with each layer's redirect".into(),
                );
                return Ok(Some(Target::Public));
            }
            Role::Login | Role::Data { .. } => {}
        }
        let resolver_vnet = match dns::resolver_for(self.network, self.vnet) {
            Resolver::AzureDns { vnet } => vnet,
            Resolver::Unparsable { server } => {
                walk.undecided(Finding {
                    decides: Some("what the VNet's DNS server answers".into()),
                    ..dns_finding(
                        &self.vnet.id,
                        "dhcpOptions.dnsServers",
                        server.clone(),
                        "IPv4 addresses of DNS servers",
                        format!(
                            "VNet {}'s DNS server {server:?} is not an IPv4 address",
                            self.vnet.name
                        ),
                    )
                });
                return Ok(None);
            }
            Resolver::CustomOutside { server } => {
                self.reach_dns_server(server)?;
                walk.undecided(Finding {
                    decides: Some(format!(
                        "whether {server} conditionally forwards azurecr.io to a resolver inside a VNet linked to privatelink.azurecr.io (for example a DNS private resolver's inbound endpoint); its configuration is not in Azure's exports"
                    )),
                    ..dns_finding(
                        &self.vnet.id,
                        "dhcpOptions.dnsServers",
                        server.to_string(),
                        "Azure DNS, or a server in a VNet linked to the registry's private zone",
                        format!(
                            "VNet {} resolves through {server}, which is in no exported VNet (on-premises?): what it answers for {} is not in the exports",
                            self.vnet.name, endpoint.host
                        ),
                    )
                });
                return Ok(None);
            }
            Resolver::CustomInVnet {
                server,
                vnet,
                vnet_name,
            } => {
                self.reach_dns_server(server)?;
                walk.checks.push(format!(
                    "DNS server {server} (VNet {vnet_name}) must forward to 168.63.129.16, or conditionally forward azurecr.io there: its configuration is not in the exports"
                ));
                vnet
            }
        };
        let custom_note = if resolver_vnet == self.vnet.id {
            String::new()
        } else {
            let server = self.vnet.dns_servers.first().cloned().unwrap_or_default();
            let host = self
                .network
                .vnet(&resolver_vnet)
                .map_or("?", |v| v.name.as_str());
            format!(
                " (VNet {} uses DNS server {server} in VNet {host}, so {host}'s links decide, not {}'s)",
                self.vnet.name, self.vnet.name
            )
        };
        if !self.network.zones_known {
            walk.undecided(missing(
                self.exports,
                Export::PrivateDnsZones.file(),
                Export::PrivateDnsZones,
                Step::Dns,
                &format!("whether {} has a private answer", endpoint.host),
            ));
            return Ok(None);
        }
        let serving_pe = registry::private_endpoint_for(self.network, &endpoint.host);
        match dns::resolve(&self.network.zones, &resolver_vnet, &endpoint.host) {
            Answer::Private {
                address,
                zone,
                record,
            } => {
                if let Some((pe, addresses)) = serving_pe
                    && !addresses.is_empty()
                    && !addresses.contains(&address)
                {
                    let served = join(addresses);
                    return Err(self.record_finding(
                        &zone,
                        &record,
                        address.to_string(),
                        &served,
                        format!(
                            "{} resolves to {address} from record {record} in {zone}, but private endpoint {} serves it at {served}: the record is stale",
                            endpoint.host, pe.name
                        ),
                    ));
                }
                walk.pass(
                    Step::Dns,
                    format!("{address} (A record {record} in {zone}){custom_note}"),
                );
                Ok(Some(Target::Address(address)))
            }
            Answer::NxDomain { zone, record } => {
                let wanted = serving_pe
                    .map_or_else(|| "the private endpoint's address".into(), |(_, a)| join(a));
                Err(self.record_finding(
                    &zone,
                    &record,
                    "no A record".into(),
                    &format!("{record} → {wanted}"),
                    format!(
                        "{zone} is linked to the resolving VNet and has no A record {record}: {} gets NXDOMAIN{custom_note} (\"If all records aren't configured, the registry may be unreachable\")",
                        endpoint.host
                    ),
                ))
            }
            Answer::Unknown { zone } => {
                let links = zone_file(Export::PrivateDnsLinks, &zone);
                let records = zone_file(Export::PrivateDnsRecords, &zone);
                let file = if self.exports.get(&links).is_none() {
                    links
                } else {
                    records
                };
                let export = if file.starts_with("private-dns-links") {
                    Export::PrivateDnsLinks
                } else {
                    Export::PrivateDnsRecords
                };
                walk.undecided(missing(
                    self.exports,
                    &file,
                    export,
                    Step::Dns,
                    &format!("what {zone} answers for {}", endpoint.host),
                ));
                Ok(None)
            }
            Answer::Public { chain } => {
                let private_intended = serving_pe.is_some()
                    || self
                        .network
                        .registry
                        .as_ref()
                        .is_some_and(|r| registry::has_private_endpoint(self.network, r));
                if !private_intended {
                    walk.pass(
                        Step::Dns,
                        format!("public address (via {}); the registry has no approved private endpoint", chain.join(" → ")),
                    );
                    return Ok(Some(Target::Public));
                }
                let finding = self.public_finding(endpoint, &resolver_vnet, &custom_note);
                // Whether the public answer breaks the pull is the registry's rule: refused
                // outright, it fails here (the DNS gap is the cause); admitted, the pull takes
                // the public path and the gap is a check; admitted only for some addresses,
                // it stays open.
                match self
                    .network
                    .registry
                    .as_ref()
                    .map(|r| registry::check_public(r, endpoint))
                {
                    Some(Err(rule)) if rule.decides.is_none() => Err(finding),
                    Some(Err(rule)) => {
                        walk.undecided(Finding {
                            decides: rule.decides,
                            ..finding
                        });
                        Ok(Some(Target::Public))
                    }
                    _ => {
                        walk.checks.push(format!(
                            "{} (the pull works over the public path only while the registry admits it)",
                            finding.cause
                        ));
                        walk.pass(
                            Step::Dns,
                            "public address, although a private endpoint serves this name".into(),
                        );
                        Ok(Some(Target::Public))
                    }
                }
            }
        }
    }

    /// The route to the VNet's own DNS server: a resolver the node cannot reach answers nothing.
    fn reach_dns_server(&self, server: Ipv4Addr) -> Result<(), Finding> {
        let chosen = route::select(&self.routes, server);
        if chosen.is_none_or(|r| r.next_hop == NextHop::None) {
            let mut finding =
                peering::why_dropped(self.network, self.vnet, self.subnet, server, chosen);
            finding.cause = format!(
                "the node cannot reach its DNS server {server}: {}",
                finding.cause
            );
            finding.layer = Layer::Dns;
            finding.step = Step::Dns;
            return Err(finding);
        }
        Ok(())
    }

    fn record_finding(
        &self,
        zone: &str,
        record: &str,
        observed: String,
        expected: &str,
        cause: String,
    ) -> Finding {
        let zone_model = self
            .network
            .zones
            .iter()
            .find(|z| z.name.eq_ignore_ascii_case(zone));
        let rg = zone_model
            .and_then(|z| z.resource_group.clone())
            .unwrap_or_else(|| "$ZONE_RG".into());
        let resource = zone_model.and_then(|z| z.id.as_ref()).map_or_else(
            || zone_file(Export::PrivateDnsRecords, zone),
            |id| format!("{id}/A/{record}"),
        );
        Finding {
            resource,
            show: format!(
                "az network private-dns record-set a list -g {rg} -z {zone} --query \"[].{{name:name, a:aRecords[].ipv4Address}}\""
            ),
            ..dns_finding_plain(&format!("aRecords ({record})"), observed, expected, cause)
        }
    }

    fn public_finding(
        &self,
        endpoint: &Endpoint,
        resolver_vnet: &shape::ResourceId,
        custom_note: &str,
    ) -> Finding {
        let consequence = match &self.network.registry {
            Some(r) if r.public_network_access.as_deref().is_some_and(|p| shape::same(p, "Disabled")) => {
                "the registry's public access is Disabled, so the node gets 403 \"client with IP '…' is not allowed access\"".to_string()
            }
            _ => "the pull leaves by the public path instead of the private endpoint".to_string(),
        };
        let vnet_name = self
            .network
            .vnet(resolver_vnet)
            .map_or_else(|| resolver_vnet.name().to_string(), |v| v.name.clone());
        match dns::why_public(&self.network.zones, resolver_vnet, &endpoint.host) {
            PublicBecause::NotLinked { zone, link_state } => {
                let z = self
                    .network
                    .zones
                    .iter()
                    .find(|z| z.name.eq_ignore_ascii_case(&zone));
                let rg = z
                    .and_then(|z| z.resource_group.clone())
                    .unwrap_or_else(|| "$ZONE_RG".into());
                let observed = match link_state {
                    Some(state) => format!("link to {vnet_name} is {state}"),
                    None => format!("no link to VNet {vnet_name}"),
                };
                Finding {
                    resource: z.and_then(|z| z.id.as_ref()).map_or_else(
                        || zone_file(Export::PrivateDnsLinks, &zone),
                        ToString::to_string,
                    ),
                    show: format!(
                        "az network private-dns link vnet list -g {rg} -z {zone} --query \"[].{{vnet:virtualNetwork.id, state:virtualNetworkLinkState}}\""
                    ),
                    ..dns_finding_plain(
                        "virtualNetworkLinks",
                        observed,
                        &format!(
                            "a link to VNet {vnet_name} ({resolver_vnet}) with virtualNetworkLinkState Completed"
                        ),
                        format!(
                            "{} has a private endpoint, but {zone} is not linked to VNet {vnet_name}, so Azure DNS there answers the public address{custom_note}: {consequence}",
                            endpoint.host
                        ),
                    )
                }
            }
            PublicBecause::NoZone { wanted } => Finding {
                resource: Export::PrivateDnsZones.file().into(),
                show: "az network private-dns zone list --query \"[].name\"".into(),
                ..dns_finding_plain(
                    "name",
                    format!("no zone answers {wanted}"),
                    "privatelink.azurecr.io (or {region}.data.privatelink.azurecr.io) linked to the VNet, with the registry's records",
                    format!(
                        "{} has a private endpoint, but no private DNS zone answers {wanted}, so it resolves to the public address{custom_note}: {consequence}",
                        endpoint.host
                    ),
                )
            },
        }
    }

    fn route(&self, endpoint: &Endpoint, target: Target, walk: &mut Walk) -> Result<(), Finding> {
        if let Some(gap) = &self.route_gap {
            walk.undecided(gap.clone());
            return Ok(());
        }
        let chosen = match target {
            Target::Address(a) => route::select(&self.routes, a),
            Target::Public => route::select_public(&self.routes),
        };
        let dropped = chosen.is_none_or(|r| r.next_hop == NextHop::None);
        if dropped {
            return Err(match target {
                Target::Address(a) => sibling_route(self.network, self.pool, self.subnet, a)
                    .unwrap_or_else(|| {
                        peering::why_dropped(self.network, self.vnet, self.subnet, a, chosen)
                    }),
                Target::Public => public_drop(self.subnet, chosen),
            });
        }
        let Some(route) = chosen else { return Ok(()) };
        let shown = route.describe();
        match (&route.next_hop, target) {
            (NextHop::VnetPeering | NextHop::InterfaceEndpoint, Target::Address(a)) => {
                if let Some((home, _)) = self.network.locate(a)
                    && home.id != self.vnet.id
                {
                    walk.checks
                        .extend(peering::check_peering(self.network, self.vnet, home, a)?);
                    walk.pass(
                        Step::Peering,
                        format!("{} ↔ {}: Connected both ways", self.vnet.name, home.name),
                    );
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
                if udr_cluster && route.source == Source::Default {
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
        Ok(())
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

    fn security(
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
                                    "NSG {} on subnet {}, so the outbound rules",
                                    id.name(),
                                    self.subnet.name
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

    fn registry_rules(
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

fn join(addresses: &[Ipv4Addr]) -> String {
    addresses
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe_target(target: Target) -> String {
    match target {
        Target::Address(a) if cidr::is_public(a) => format!("{a} (public)"),
        Target::Address(a) => a.to_string(),
        Target::Public => "public address".into(),
    }
}

fn dns_finding_plain(field: &str, observed: String, expected: &str, cause: String) -> Finding {
    Finding {
        step: Step::Dns,
        layer: Layer::Dns,
        owner: Owner::DnsTeam,
        cause,
        resource: String::new(),
        field: field.into(),
        observed,
        expected: expected.into(),
        show: String::new(),
        decides: None,
    }
}

fn dns_finding(
    id: &shape::ResourceId,
    field: &str,
    observed: String,
    expected: &str,
    cause: String,
) -> Finding {
    Finding {
        resource: id.to_string(),
        show: show(id, field),
        ..dns_finding_plain(field, observed, expected, cause)
    }
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

#[cfg(test)]
mod tests {
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
        let deny = nsg::parse_rule(
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

    #[test]
    fn the_first_failing_step_stops_the_walk() {
        let network = fixture("zone-not-linked");
        let analysis = analyse(&network, &Exports::default(), None);
        let login = outcome(&analysis, "system", "contosoreg.azurecr.io");
        assert_eq!(login.steps.len(), 1, "{:?}", login.steps);
        assert!(matches!(&login.outcome, Outcome::Failed(f) if f.step == Step::Dns));
    }
}
