//! Reading the exports into the [`Network`]: each resource from the JSON shapes `az` and the
//! portal write, what a file lacks left absent.

use std::net::Ipv4Addr;

use serde_json::Value;

use super::*;

fn name_of(v: &Value) -> String {
    shape::text(v, "name").unwrap_or("").to_string()
}

fn id_of(v: &Value) -> Option<ResourceId> {
    shape::text(v, "id").map(ResourceId::new)
}

fn prefixes(values: &[String]) -> Vec<Prefix> {
    values.iter().filter_map(|p| Prefix::parse(p)).collect()
}

fn addresses(values: &[String]) -> Vec<Ipv4Addr> {
    values
        .iter()
        .filter_map(|a| a.trim().parse().ok())
        .collect()
}

impl Network {
    pub fn from_exports(exports: &Exports) -> Network {
        let list = |export: Export| -> &[Value] {
            exports
                .get(export.file())
                .map(shape::entries)
                .unwrap_or_default()
        };
        let pools_from = |values: &[Value]| -> Vec<Pool> {
            values
                .iter()
                .filter_map(|p| {
                    Some(Pool {
                        name: shape::text(p, "name")?.to_string(),
                        subnet: shape::text(p, "vnetSubnetId").map(ResourceId::new),
                    })
                })
                .collect()
        };
        let aks = exports.get(Export::Aks.file()).filter(|v| v.is_object());
        let mut pools = pools_from(list(Export::NodePools));
        if pools.is_empty() {
            pools = aks
                .map(|a| pools_from(shape::items(a, "agentPoolProfiles")))
                .unwrap_or_default();
        }
        let cluster = aks.map(|a| Cluster {
            name: name_of(a),
            id: id_of(a),
            node_resource_group: shape::text(a, "nodeResourceGroup").map(str::to_string),
            outbound_type: shape::path(a, &["networkProfile", "outboundType"])
                .and_then(Value::as_str)
                .map(str::to_string),
        });
        let zones = list(Export::PrivateDnsZones)
            .iter()
            .filter_map(|z| zone(z, exports))
            .collect();
        let registry = exports
            .get(Export::Acr.file())
            .filter(|v| v.is_object())
            .and_then(registry);
        let data_endpoints = exports
            .get(Export::AcrEndpoints.file())
            .map(|v| {
                shape::items(v, "dataEndpoints")
                    .iter()
                    .filter_map(|d| {
                        Some((
                            shape::text(d, "endpoint")?.to_string(),
                            shape::text(d, "region").unwrap_or("").to_string(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let pool_of = |nic: &str| pool_for_nic(&pools, nic);
        let effective_routes = exports
            .each(Export::EffectiveRoutes)
            .into_iter()
            .map(|(nic, doc)| NicExport {
                pool: pool_of(&nic),
                data: route::parse_effective(doc, &nic),
                nic,
            })
            .collect();
        let effective_nsgs = exports
            .each(Export::EffectiveNsg)
            .into_iter()
            .map(|(nic, doc)| NicExport {
                pool: pool_of(&nic),
                data: shape::entries(doc).iter().map(effective_nsg).collect(),
                nic,
            })
            .collect();
        let extra_endpoints = list(Export::Endpoints)
            .iter()
            .filter_map(|e| {
                Some((
                    shape::text(e, "host")?.to_string(),
                    shape::text(e, "address")?.trim().parse().ok()?,
                ))
            })
            .collect();
        Network {
            cluster,
            vnets: list(Export::Vnets).iter().filter_map(vnet).collect(),
            route_tables: list(Export::RouteTables)
                .iter()
                .filter_map(route_table)
                .collect(),
            nsgs: list(Export::Nsgs)
                .iter()
                .filter_map(nsg::parse_nsg)
                .collect(),
            private_endpoints: list(Export::PrivateEndpoints)
                .iter()
                .filter_map(private_endpoint)
                .collect(),
            zones,
            zones_known: exports.get(Export::PrivateDnsZones.file()).is_some(),
            gateways_known: exports.get(Export::VnetGateways.file()).is_some(),
            local_gateways_known: exports.get(Export::LocalGateways.file()).is_some(),
            registry,
            data_endpoints,
            gateways: list(Export::VnetGateways)
                .iter()
                .filter_map(gateway)
                .collect(),
            local_gateways: list(Export::LocalGateways)
                .iter()
                .filter_map(local_gateway)
                .collect(),
            effective_routes,
            effective_nsgs,
            extra_endpoints,
            pools,
        }
    }

    pub fn vnet(&self, id: &ResourceId) -> Option<&Vnet> {
        self.vnets.iter().find(|v| &v.id == id)
    }

    /// The subnet and its VNet.
    pub fn subnet(&self, id: &ResourceId) -> Option<(&Vnet, &Subnet)> {
        self.vnets
            .iter()
            .find_map(|v| v.subnets.iter().find(|s| &s.id == id).map(|s| (v, s)))
    }

    /// The VNet and subnet an address lies in.
    pub fn locate(&self, address: Ipv4Addr) -> Option<(&Vnet, Option<&Subnet>)> {
        self.vnets
            .iter()
            .find(|v| v.address_space.iter().any(|p| p.contains(address)))
            .map(|v| {
                let subnet = v
                    .subnets
                    .iter()
                    .find(|s| s.prefixes.iter().any(|p| p.contains(address)));
                (v, subnet)
            })
    }

    pub fn route_table(&self, id: &ResourceId) -> Option<&RouteTable> {
        self.route_tables.iter().find(|t| &t.id == id)
    }

    pub fn nsg(&self, id: &ResourceId) -> Option<&Nsg> {
        self.nsgs.iter().find(|n| n.id.as_ref() == Some(id))
    }

    /// The peering on `from` toward `to`.
    pub fn peering<'a>(&'a self, from: &'a Vnet, to: &ResourceId) -> Option<&'a Peering> {
        from.peerings.iter().find(|p| p.remote.as_ref() == Some(to))
    }
}

/// AKS names a node NIC after its scale set, `aks-<pool>-<id>-vmss…`; a file may also be named
/// after the pool itself.
pub(super) fn pool_for_nic(pools: &[Pool], nic: &str) -> Option<String> {
    let nic = nic.to_ascii_lowercase();
    pools
        .iter()
        .find(|p| {
            let pool = p.name.to_ascii_lowercase();
            nic == pool || nic.starts_with(&format!("aks-{pool}-"))
        })
        .map(|p| p.name.clone())
}

fn vnet(v: &Value) -> Option<Vnet> {
    let id = id_of(v)?;
    let subnets = shape::items(v, "subnets")
        .iter()
        .filter_map(|s| {
            let mut all = shape::one_or_many(s, "addressPrefix");
            all.extend(shape::strings(s, "addressPrefixes"));
            let subnet_id = id_of(s)?;
            Some(Subnet {
                name: shape::text(s, "name")
                    .unwrap_or(subnet_id.name())
                    .to_string(),
                id: subnet_id,
                prefixes: prefixes(&all),
                route_table: shape::reference(s, "routeTable"),
                nsg: shape::reference(s, "networkSecurityGroup"),
                private_endpoint_policies: shape::text(s, "privateEndpointNetworkPolicies")
                    .map(str::to_string),
            })
        })
        .collect();
    let peerings = shape::items(v, "virtualNetworkPeerings")
        .iter()
        .map(peering)
        .collect();
    Some(Vnet {
        name: shape::text(v, "name").unwrap_or(id.name()).to_string(),
        address_space: prefixes(
            &shape::get(v, "addressSpace")
                .map_or_else(Vec::new, |a| shape::strings(a, "addressPrefixes")),
        ),
        dns_servers: shape::get(v, "dhcpOptions")
            .map_or_else(Vec::new, |d| shape::strings(d, "dnsServers")),
        id,
        subnets,
        peerings,
    })
}

fn peering(p: &Value) -> Peering {
    let remote_space = shape::get(p, "remoteAddressSpace")
        .or_else(|| shape::get(p, "remoteVirtualNetworkAddressSpace"))
        .map_or_else(Vec::new, |a| shape::strings(a, "addressPrefixes"));
    Peering {
        id: id_of(p),
        name: name_of(p),
        remote: shape::reference(p, "remoteVirtualNetwork"),
        state: shape::text(p, "peeringState").map(str::to_string),
        sync_level: shape::text(p, "peeringSyncLevel").map(str::to_string),
        // The API's default is true; only an explicit false turns access off.
        allow_virtual_network_access: shape::flag(p, "allowVirtualNetworkAccess").unwrap_or(true),
        allow_forwarded_traffic: shape::flag(p, "allowForwardedTraffic").unwrap_or(false),
        allow_gateway_transit: shape::flag(p, "allowGatewayTransit").unwrap_or(false),
        use_remote_gateways: shape::flag(p, "useRemoteGateways").unwrap_or(false),
        remote_prefixes: prefixes(&remote_space),
    }
}

fn route_table(t: &Value) -> Option<RouteTable> {
    let id = id_of(t)?;
    let name = shape::text(t, "name").unwrap_or(id.name()).to_string();
    let routes = shape::items(t, "routes")
        .iter()
        .filter_map(|r| {
            let route_name = name_of(r);
            Some(Route {
                prefix: Prefix::parse(shape::text(r, "addressPrefix")?)?,
                source: RouteOrigin::User,
                next_hop: NextHop::parse(shape::text(r, "nextHopType")?),
                next_hop_ip: shape::text(r, "nextHopIpAddress").and_then(|ip| ip.parse().ok()),
                active: true,
                origin: format!("route table {name}, route {route_name}"),
                resource: id_of(r).or_else(|| {
                    Some(ResourceId::new(&format!(
                        "{}/routes/{route_name}",
                        id.as_str()
                    )))
                }),
            })
        })
        .collect();
    Some(RouteTable {
        disable_bgp_route_propagation: shape::flag(t, "disableBgpRoutePropagation")
            .unwrap_or(false),
        id,
        name,
        routes,
    })
}

fn private_endpoint(e: &Value) -> Option<PrivateEndpoint> {
    let id = id_of(e)?;
    let mut connections = Vec::new();
    for key in [
        "privateLinkServiceConnections",
        "manualPrivateLinkServiceConnections",
    ] {
        for c in shape::items(e, key) {
            connections.push((
                shape::reference(c, "privateLinkServiceId"),
                shape::strings(c, "groupIds"),
                shape::get(c, "privateLinkServiceConnectionState")
                    .and_then(|s| shape::text(s, "status"))
                    .unwrap_or("Unknown")
                    .to_string(),
            ));
        }
    }
    let dns = shape::items(e, "customDnsConfigs")
        .iter()
        .filter_map(|c| {
            Some((
                shape::text(c, "fqdn")?.trim_end_matches('.').to_string(),
                addresses(&shape::strings(c, "ipAddresses")),
            ))
        })
        .collect();
    Some(PrivateEndpoint {
        name: shape::text(e, "name").unwrap_or(id.name()).to_string(),
        subnet: shape::reference(e, "subnet"),
        id,
        connections,
        dns,
    })
}

fn zone(z: &Value, exports: &Exports) -> Option<Zone> {
    let name = shape::text(z, "name")?.trim_end_matches('.').to_string();
    let id = id_of(z);
    let doc = |export: Export| {
        exports
            .get(&crate::azure::exports::zone_file(export, &name))
            .map(shape::entries)
    };
    let links = doc(Export::PrivateDnsLinks).map(|links| {
        links
            .iter()
            .map(|l| Link {
                name: name_of(l),
                id: id_of(l),
                vnet: shape::reference(l, "virtualNetwork"),
                state: shape::text(l, "virtualNetworkLinkState").map(str::to_string),
                fallback_to_public: shape::text(l, "resolutionPolicy")
                    .is_some_and(|p| shape::same(p, "NxDomainRedirect")),
            })
            .collect()
    });
    let records = doc(Export::PrivateDnsRecords).map(|records| {
        records
            .iter()
            .map(|r| {
                let a = shape::items(r, "aRecords");
                // ARM nests them as `ARecords`; `get` matches either case.
                ARecord {
                    name: name_of(r),
                    id: id_of(r),
                    addresses: a
                        .iter()
                        .filter_map(|x| shape::text(x, "ipv4Address"))
                        .filter_map(|ip| ip.trim().parse().ok())
                        .collect(),
                }
            })
            .collect()
    });
    Some(Zone {
        resource_group: shape::text(z, "resourceGroup")
            .map(str::to_string)
            .or_else(|| id.as_ref()?.resource_group().map(str::to_string)),
        id,
        name,
        links,
        records,
    })
}

fn registry(r: &Value) -> Option<Registry> {
    let name = shape::text(r, "name")?.to_string();
    let rules = shape::get(r, "networkRuleSet");
    Some(Registry {
        id: id_of(r),
        login_server: shape::text(r, "loginServer").map_or_else(
            || format!("{}.azurecr.io", name.to_ascii_lowercase()),
            str::to_string,
        ),
        name,
        location: shape::text(r, "location").map(str::to_string),
        public_network_access: shape::text(r, "publicNetworkAccess").map(str::to_string),
        default_action: rules
            .and_then(|n| shape::text(n, "defaultAction"))
            .map(str::to_string),
        ip_rules: rules
            .map(|n| {
                shape::items(n, "ipRules")
                    .iter()
                    .filter_map(|i| shape::text(i, "ipAddressOrRange").or(shape::text(i, "value")))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        data_endpoint_enabled: shape::flag(r, "dataEndpointEnabled").unwrap_or(false),
        data_endpoint_host_names: shape::strings(r, "dataEndpointHostNames"),
        sku: shape::get(r, "sku")
            .and_then(|s| shape::text(s, "name"))
            .map(str::to_string),
        private_endpoint_connections: shape::items(r, "privateEndpointConnections")
            .iter()
            .map(|c| {
                (
                    shape::reference(c, "privateEndpoint"),
                    shape::get(c, "privateLinkServiceConnectionState")
                        .and_then(|s| shape::text(s, "status"))
                        .unwrap_or("Unknown")
                        .to_string(),
                )
            })
            .collect(),
    })
}

fn gateway(g: &Value) -> Option<Gateway> {
    let id = id_of(g)?;
    let vnet = shape::items(g, "ipConfigurations")
        .iter()
        .find_map(|c| shape::reference(c, "subnet")?.parent("virtualNetworks"));
    Some(Gateway {
        name: shape::text(g, "name").unwrap_or(id.name()).to_string(),
        id,
        vnet,
        gateway_type: shape::text(g, "gatewayType").map(str::to_string),
        bgp: shape::flag(g, "enableBgp").unwrap_or(false),
        sku: shape::get(g, "sku")
            .and_then(|s| shape::text(s, "name"))
            .map(str::to_string),
    })
}

fn local_gateway(l: &Value) -> Option<LocalGateway> {
    let id = id_of(l)?;
    let space = shape::get(l, "localNetworkAddressSpace")
        .map_or_else(Vec::new, |a| shape::strings(a, "addressPrefixes"));
    Some(LocalGateway {
        name: shape::text(l, "name").unwrap_or(id.name()).to_string(),
        id,
        prefixes: prefixes(&space),
        bgp: shape::get(l, "bgpSettings")
            .and_then(|b| shape::text(b, "bgpPeeringAddress"))
            .is_some_and(|a| !a.is_empty()),
    })
}

fn effective_nsg(entry: &Value) -> EffectiveNsg {
    let association = shape::get(entry, "association");
    let on_nic = association.is_some_and(|a| shape::get(a, "networkInterface").is_some());
    let id = shape::reference(entry, "networkSecurityGroup");
    let rules = shape::items(entry, "effectiveSecurityRules")
        .iter()
        .filter_map(|r| nsg::parse_rule(r, "securityRules"))
        .collect();
    EffectiveNsg {
        on_nic,
        nsg: Nsg {
            name: id
                .as_ref()
                .map_or_else(|| "effective".to_string(), |i| i.name().to_string()),
            id,
            rules,
        },
    }
}
