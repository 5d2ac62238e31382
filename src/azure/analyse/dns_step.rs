//! The DNS step of the walk: which resolver answers the pool, and what it answers for the
//! endpoint (the decision itself is [`crate::azure::dns`]).

use std::net::Ipv4Addr;

use crate::azure::dns::{self, Answer, PublicBecause, Resolver};
use crate::azure::exports::{Export, zone_file};
use crate::azure::finding::{Finding, Step, show};
use crate::azure::peering;
use crate::azure::registry::{self, Endpoint, Role};
use crate::azure::route::{self, NextHop};
use crate::azure::shape;
use crate::vocab::{Layer, Owner};

use super::{PoolContext, Target, Walk, join, missing};

impl PoolContext<'_> {
    pub(super) fn dns(
        &self,
        endpoint: &Endpoint,
        walk: &mut Walk,
    ) -> Result<Option<Target>, Finding> {
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
                if !self.reach_dns_server(server, walk)? {
                    return Ok(None);
                }
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
                if !self.reach_dns_server(server, walk)? {
                    return Ok(None);
                }
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
    /// `Ok(false)` when the exports cannot tell (recorded as undecided).
    fn reach_dns_server(&self, server: Ipv4Addr, walk: &mut Walk) -> Result<bool, Finding> {
        let chosen = route::select(&self.routes, server);
        if chosen.is_none_or(|r| r.next_hop == NextHop::None) {
            let mut finding = peering::why_dropped(
                self.network,
                self.vnet,
                self.subnet,
                server,
                chosen,
                self.effective,
            );
            finding.cause = format!(
                "the node cannot reach its DNS server {server}: {}",
                finding.cause
            );
            finding.layer = Layer::Dns;
            finding.step = Step::Dns;
            if finding.decides.is_some() {
                walk.undecided(finding);
                return Ok(false);
            }
            return Err(finding);
        }
        Ok(true)
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
