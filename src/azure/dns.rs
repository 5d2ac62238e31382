//! What a registry name resolves to from one VNet, decided from private DNS zones, their VNet
//! links and A records — the way Azure DNS (168.63.129.16) answers inside a VNet.
//!
//! Facts this follows: public DNS answers `<reg>.azurecr.io CNAME <reg>.privatelink.azurecr.io`
//! (and the same for `<reg>.<region>.data.azurecr.io`), so a private zone takes the name over
//! only in VNets linked to it; the zone is `privatelink.azurecr.io` with records `<reg>` and
//! `<reg>.<region>.data`, or one zone per region `<region>.data.privatelink.azurecr.io`
//! (MicrosoftDocs/azure-docs `articles/container-registry/container-registry-private-link.md`,
//! `articles/private-link/private-endpoint-dns.md`); a linked zone without the record answers
//! NXDOMAIN unless the link's `resolutionPolicy` is `NxDomainRedirect`
//! (`articles/dns/private-dns-fallback.md`); a VNet with `dhcpOptions.dnsServers` set uses those
//! servers instead of Azure DNS, and a custom server sees the zone only through a VNet linked
//! to it (`articles/private-link/private-endpoint-dns-integration.md`).

use std::net::Ipv4Addr;

use super::model::{Network, Vnet, Zone};
use super::shape::ResourceId;

/// The Azure DNS virtual IP.
pub const AZURE_DNS: Ipv4Addr = Ipv4Addr::new(168, 63, 129, 16);

/// Whose view of the private zones answers the node.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolver {
    /// Azure DNS answering with the links of this VNet.
    AzureDns { vnet: ResourceId },
    /// A custom server inside an exported VNet; it reaches the zones only by forwarding to
    /// 168.63.129.16 from there, which the exports cannot show.
    CustomInVnet {
        server: Ipv4Addr,
        vnet: ResourceId,
        vnet_name: String,
    },
    /// A custom server outside every exported VNet (on-premises, or not exported).
    CustomOutside { server: Ipv4Addr },
    /// `dnsServers` holds something that is not an IPv4 address.
    Unparsable { server: String },
}

/// The resolver a subnet of `vnet` uses: the first of its DNS servers, or Azure DNS.
pub fn resolver_for(network: &Network, vnet: &Vnet) -> Resolver {
    let Some(first) = vnet.dns_servers.first() else {
        return Resolver::AzureDns {
            vnet: vnet.id.clone(),
        };
    };
    let Ok(server) = first.trim().parse::<Ipv4Addr>() else {
        return Resolver::Unparsable {
            server: first.clone(),
        };
    };
    if server == AZURE_DNS {
        return Resolver::AzureDns {
            vnet: vnet.id.clone(),
        };
    }
    match network.locate(server) {
        Some((host, _)) => Resolver::CustomInVnet {
            server,
            vnet: host.id.clone(),
            vnet_name: host.name.clone(),
        },
        None => Resolver::CustomOutside { server },
    }
}

/// What one name resolves to.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// An A record in a linked private zone.
    Private {
        address: Ipv4Addr,
        zone: String,
        record: String,
    },
    /// No linked zone holds the name: public DNS answers (its address is not in the exports).
    Public { chain: Vec<String> },
    /// A linked zone is authoritative for the name and has no A record for it.
    NxDomain { zone: String, record: String },
    /// The links or records of a zone that would answer were not exported.
    Unknown { zone: String },
}

/// The zone most specific for `name` among `zones`, with the record's relative name.
fn authority<'z>(zones: impl Iterator<Item = &'z Zone>, name: &str) -> Option<(&'z Zone, String)> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    zones
        .filter_map(|z| {
            let zone = z.name.to_ascii_lowercase();
            if name == zone {
                Some((z, "@".to_string()))
            } else {
                name.strip_suffix(&format!(".{zone}"))
                    .map(|label| (z, label.to_string()))
            }
        })
        .max_by_key(|(z, _)| z.name.len())
}

/// `<x>.azurecr.io` → `<x>.privatelink.azurecr.io`: the CNAME public DNS answers with.
pub fn privatelink_name(name: &str) -> Option<String> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.ends_with(".privatelink.azurecr.io") {
        return None;
    }
    name.strip_suffix(".azurecr.io")
        .map(|head| format!("{head}.privatelink.azurecr.io"))
}

/// True when `zone` has a completed link to `vnet`. `None` when its links were not exported.
pub fn linked(zone: &Zone, vnet: &ResourceId) -> Option<bool> {
    zone.links.as_ref().map(|links| {
        links
            .iter()
            .any(|l| l.vnet.as_ref() == Some(vnet) && l.completed())
    })
}

/// Resolve `name` as Azure DNS does for a client in `vnet`, following the public CNAME into
/// `privatelink` once.
pub fn resolve(zones: &[Zone], vnet: &ResourceId, name: &str) -> Answer {
    let mut chain = vec![name.to_ascii_lowercase()];
    let mut current = name.to_ascii_lowercase();
    loop {
        // A zone whose links are unknown might be linked: if it would be the authority for
        // the name, the answer is unknown.
        let candidates = zones.iter().filter(|z| linked(z, vnet) != Some(false));
        if let Some((zone, record)) = authority(candidates, &current) {
            if linked(zone, vnet).is_none() || zone.records.is_none() {
                return Answer::Unknown {
                    zone: zone.name.clone(),
                };
            }
            let found = zone
                .records
                .iter()
                .flatten()
                .find(|r| r.name.eq_ignore_ascii_case(&record))
                .and_then(|r| r.addresses.first().copied());
            match found {
                Some(address) => {
                    return Answer::Private {
                        address,
                        zone: zone.name.clone(),
                        record,
                    };
                }
                None => {
                    let falls_back = zone.links.iter().flatten().any(|l| {
                        l.vnet.as_ref() == Some(vnet) && l.completed() && l.fallback_to_public
                    });
                    if !falls_back {
                        return Answer::NxDomain {
                            zone: zone.name.clone(),
                            record,
                        };
                    }
                }
            }
        }
        match privatelink_name(&current) {
            Some(next) => {
                chain.push(next.clone());
                current = next;
            }
            None => return Answer::Public { chain },
        }
    }
}

/// Why a name that a private endpoint serves resolves publicly from `vnet`: the zone that
/// would answer it and what is missing between that zone and the VNet.
#[derive(Debug, Clone, PartialEq)]
pub enum PublicBecause {
    /// The zone exists (with the record) but has no completed link to the VNet.
    NotLinked {
        zone: String,
        /// `InProgress` when a link exists but has not completed.
        link_state: Option<String>,
    },
    /// No exported zone would answer the privatelink name.
    NoZone { wanted: String },
}

pub fn why_public(zones: &[Zone], vnet: &ResourceId, name: &str) -> PublicBecause {
    let wanted = privatelink_name(name).unwrap_or_else(|| name.to_string());
    match authority(zones.iter(), &wanted) {
        Some((zone, _)) => PublicBecause::NotLinked {
            zone: zone.name.clone(),
            link_state: zone
                .links
                .iter()
                .flatten()
                .find(|l| l.vnet.as_ref() == Some(vnet))
                .and_then(|l| l.state.clone()),
        },
        None => PublicBecause::NoZone { wanted },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::azure::model::{ARecord, Link};

    fn vnet(name: &str) -> ResourceId {
        ResourceId::new(&format!(
            "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/{name}"
        ))
    }

    fn zone(name: &str, linked_to: &[&str], records: &[(&str, &str)]) -> Zone {
        Zone {
            id: None,
            name: name.into(),
            resource_group: None,
            links: Some(
                linked_to
                    .iter()
                    .map(|v| Link {
                        name: format!("{v}-link"),
                        id: None,
                        vnet: Some(vnet(v)),
                        state: Some("Completed".into()),
                        fallback_to_public: false,
                    })
                    .collect(),
            ),
            records: Some(
                records
                    .iter()
                    .map(|(n, ip)| ARecord {
                        name: (*n).into(),
                        id: None,
                        addresses: vec![ip.parse().expect("ip")],
                    })
                    .collect(),
            ),
        }
    }

    #[test]
    fn a_linked_zone_answers_the_login_server_and_data_endpoint() {
        let zones = [zone(
            "privatelink.azurecr.io",
            &["spoke"],
            &[
                ("contosoreg", "10.0.1.5"),
                ("contosoreg.westeurope.data", "10.0.1.6"),
            ],
        )];
        assert!(matches!(
            resolve(&zones, &vnet("SPOKE"), "ContosoReg.azurecr.io"),
            Answer::Private { address, .. } if address == Ipv4Addr::new(10, 0, 1, 5)
        ));
        assert!(matches!(
            resolve(&zones, &vnet("spoke"), "contosoreg.westeurope.data.azurecr.io"),
            Answer::Private { record, .. } if record == "contosoreg.westeurope.data"
        ));
    }

    #[test]
    fn the_per_region_zone_layout_is_more_specific() {
        let zones = [
            zone(
                "privatelink.azurecr.io",
                &["spoke"],
                &[("contosoreg", "10.0.1.5")],
            ),
            zone(
                "westeurope.data.privatelink.azurecr.io",
                &["spoke"],
                &[("contosoreg", "10.0.1.6")],
            ),
        ];
        assert!(matches!(
            resolve(&zones, &vnet("spoke"), "contosoreg.westeurope.data.azurecr.io"),
            Answer::Private { zone, .. } if zone == "westeurope.data.privatelink.azurecr.io"
        ));
    }

    #[test]
    fn an_unlinked_vnet_gets_the_public_answer_and_is_told_why() {
        let zones = [zone(
            "privatelink.azurecr.io",
            &["hub"],
            &[("contosoreg", "10.0.1.5")],
        )];
        assert!(matches!(
            resolve(&zones, &vnet("spoke"), "contosoreg.azurecr.io"),
            Answer::Public { chain } if chain.len() == 2
        ));
        assert_eq!(
            why_public(&zones, &vnet("spoke"), "contosoreg.azurecr.io"),
            PublicBecause::NotLinked {
                zone: "privatelink.azurecr.io".into(),
                link_state: None
            }
        );
        assert!(matches!(
            why_public(&[], &vnet("spoke"), "contosoreg.azurecr.io"),
            PublicBecause::NoZone { wanted } if wanted == "contosoreg.privatelink.azurecr.io"
        ));
    }

    #[test]
    fn a_missing_record_in_a_linked_zone_is_nxdomain_unless_it_falls_back() {
        let mut zones = [zone(
            "privatelink.azurecr.io",
            &["spoke"],
            &[("contosoreg", "10.0.1.5")],
        )];
        let name = "contosoreg.westeurope.data.azurecr.io";
        assert_eq!(
            resolve(&zones, &vnet("spoke"), name),
            Answer::NxDomain {
                zone: "privatelink.azurecr.io".into(),
                record: "contosoreg.westeurope.data".into()
            }
        );
        for link in zones[0].links.iter_mut().flatten() {
            link.fallback_to_public = true;
        }
        assert!(matches!(
            resolve(&zones, &vnet("spoke"), name),
            Answer::Public { .. }
        ));
    }

    #[test]
    fn a_link_in_progress_does_not_count_and_unexported_links_leave_it_open() {
        let mut zones = [zone(
            "privatelink.azurecr.io",
            &["spoke"],
            &[("contosoreg", "10.0.1.5")],
        )];
        for link in zones[0].links.iter_mut().flatten() {
            link.state = Some("InProgress".into());
        }
        assert!(matches!(
            resolve(&zones, &vnet("spoke"), "contosoreg.azurecr.io"),
            Answer::Public { .. }
        ));
        zones[0].links = None;
        assert_eq!(
            resolve(&zones, &vnet("spoke"), "contosoreg.azurecr.io"),
            Answer::Unknown {
                zone: "privatelink.azurecr.io".into()
            }
        );
    }
}
