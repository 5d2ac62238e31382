//! The analysis: for every node pool and every endpoint of the pull, the steps in the pull's
//! order — DNS, route (with peering, transit and return path), security rules, registry rules —
//! each decided by its own pure function, stopping at the first step that fails. A step the
//! exports cannot decide is recorded as undecided and the walk goes on: a later step that
//! certainly fails still fails the pull. Only a path that is itself unknown (a route table or
//! gateway export missing) stops the walk, undecided: the later steps would judge nothing.

mod dns_step;
mod path_step;
use std::net::Ipv4Addr;

use crate::vocab::{Layer, Owner};

use super::cidr;
use super::exports::{Export, Exports, FileState};
use super::finding::{Finding, Step};
use super::model::{Network, Pool, Subnet, Vnet};
use super::rebuild;
use super::registry::{self, Endpoint};
use super::route::{Route, RouteOrigin};

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
                FileState::Read => "read, without the entry".into(),
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
        cause: match exports.status(file).map(|s| &s.state) {
            Some(FileState::Read) => format!("{what} cannot be decided: {file} does not hold it"),
            _ => format!("{file} is {state}: {what} cannot be decided"),
        },
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
            Some(id) => format!("the path of pool {} (subnet {id})", pool.name),
            None => format!(
                "the path of pool {} (an AKS-managed VNet in the node resource group)",
                pool.name
            ),
        };
        let finding = missing(
            exports,
            Export::Vnets.file(),
            Export::Vnets,
            Step::Dns,
            &cause,
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
                "the routes of subnet {} (route table {})",
                subnet.name,
                id.name()
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
        effective: matches!(routes_from, RoutesFrom::Effective { .. }),
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
            if r.source == RouteOrigin::User
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
    /// The routes are an effective-route export, not rebuilt.
    effective: bool,
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
        if !self.route(endpoint, target, walk).map_err(with)? {
            return Ok(Some(target));
        }
        self.security(endpoint, target, walk).map_err(with)?;
        self.registry_rules(endpoint, target, walk).map_err(with)?;
        Ok(Some(target))
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

#[cfg(test)]
mod tests;
