//! Whether a network security group lets the pull's TCP/443 through.
//!
//! Rules are evaluated in priority order, lowest number first, and the first rule that matches
//! decides; outbound traffic must pass the NIC's NSG and then the subnet's, inbound the
//! subnet's and then the NIC's (MicrosoftDocs/azure-docs
//! `articles/virtual-network/network-security-group-how-it-works.md`). Rule fields follow
//! `SecurityRule` and `EffectiveNetworkSecurityRule` in Azure/azure-rest-api-specs
//! `…/stable/2023-09-01/networkSecurityGroup.json` and `networkInterface.json`; when the export
//! carries no default rules, Azure's defaults are added (network-security-groups-overview:
//! AllowVnet 65000, AllowInternetOutBound / AllowAzureLoadBalancerInBound 65001, DenyAll 65500).

use std::net::Ipv4Addr;

use serde_json::Value;

use super::cidr::{self, Prefix};
use super::shape::{self, ResourceId};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Inbound,
    Outbound,
}

/// One security rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// `securityRules/<name>` or `defaultSecurityRules/<name>`, as effective-NSG exports name them.
    pub name: String,
    pub priority: u32,
    pub direction: Direction,
    pub allow: bool,
    /// `Tcp`, `Udp`, `Icmp`, `*`, `All`.
    pub protocol: String,
    pub sources: Vec<String>,
    pub destinations: Vec<String>,
    pub ports: Vec<String>,
    /// The prefixes a service tag or `*` stands for, when the export expanded them.
    pub expanded_sources: Vec<Prefix>,
    pub expanded_destinations: Vec<Prefix>,
}

/// One group of rules: an NSG (from `nsgs.json`) or one entry of an effective-NSG export.
#[derive(Debug, Clone)]
pub struct Nsg {
    pub id: Option<ResourceId>,
    pub name: String,
    pub rules: Vec<Rule>,
}

/// The far end of the flow as the rules see it.
#[derive(Debug, Clone, Copy)]
pub enum Peer<'a> {
    Address(Ipv4Addr),
    /// A public address of an Azure service: matched by `*`, `Internet` and these service tags.
    Public(&'a [&'a str]),
}

/// One TCP flow to test.
#[derive(Debug, Clone, Copy)]
pub struct Flow<'a> {
    pub direction: Direction,
    /// The node's side for outbound, the client's for inbound (an address of the node subnet).
    pub source: Ipv4Addr,
    pub destination: Peer<'a>,
    pub port: u16,
    /// What the `VirtualNetwork` tag covers here: the VNet, its peerings, gateway prefixes.
    pub virtual_network: &'a [Prefix],
}

/// Which rule decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub allowed: bool,
    pub rule: Rule,
}

/// The first rule, by priority, that matches the flow.
pub fn evaluate(nsg: &Nsg, flow: &Flow) -> Decision {
    let mut rules: Vec<&Rule> = nsg
        .rules
        .iter()
        .filter(|r| r.direction == flow.direction)
        .collect();
    let defaults = default_rules(flow.direction);
    if !rules
        .iter()
        .any(|r| r.name.starts_with("defaultSecurityRules/"))
    {
        rules.extend(defaults.iter());
    }
    rules.sort_by_key(|r| r.priority);
    let matched = rules.into_iter().find(|r| matches(r, flow));
    match matched {
        Some(rule) => Decision {
            allowed: rule.allow,
            rule: rule.clone(),
        },
        // Unreachable with the defaults in place (DenyAll matches everything); deny to be safe.
        None => Decision {
            allowed: false,
            rule: defaults[2].clone(),
        },
    }
}

fn matches(rule: &Rule, flow: &Flow) -> bool {
    let protocol = ["tcp", "*", "all"]
        .iter()
        .any(|p| rule.protocol.eq_ignore_ascii_case(p));
    protocol
        && ports_match(&rule.ports, flow.port)
        && side_matches(
            &rule.sources,
            &rule.expanded_sources,
            Peer::Address(flow.source),
            flow,
        )
        && side_matches(
            &rule.destinations,
            &rule.expanded_destinations,
            flow.destination,
            flow,
        )
}

fn ports_match(ports: &[String], port: u16) -> bool {
    ports.iter().any(|range| {
        let range = range.trim();
        if range == "*" {
            return true;
        }
        let (low, high) = range.split_once('-').unwrap_or((range, range));
        match (low.trim().parse::<u16>(), high.trim().parse::<u16>()) {
            (Ok(low), Ok(high)) => (low..=high).contains(&port),
            _ => false,
        }
    })
}

fn side_matches(prefixes: &[String], expanded: &[Prefix], peer: Peer, flow: &Flow) -> bool {
    prefixes
        .iter()
        .any(|p| prefix_matches(p, expanded, peer, flow))
}

fn prefix_matches(text: &str, expanded: &[Prefix], peer: Peer, flow: &Flow) -> bool {
    let text = text.trim();
    if text == "*" || shape::same(text, "Any") {
        return true;
    }
    match peer {
        Peer::Address(ip) => {
            if let Some(prefix) = Prefix::parse(text) {
                return prefix.contains(ip);
            }
            if expanded.iter().any(|p| p.contains(ip)) {
                return true;
            }
            if shape::same(text, "VirtualNetwork") {
                return flow.virtual_network.iter().any(|p| p.contains(ip));
            }
            if shape::same(text, "Internet") {
                return cidr::is_public(ip);
            }
            if shape::same(text, "AzureLoadBalancer") {
                return ip == Ipv4Addr::new(168, 63, 129, 16);
            }
            false
        }
        Peer::Public(tags) => {
            shape::same(text, "Internet")
                || tags.iter().any(|tag| {
                    // `AzureContainerRegistry` also matches `AzureContainerRegistry.WestEurope`:
                    // the regional tag is a subset, and a region is not known for a public
                    // address, so a regional rule counts as matching.
                    shape::same(text, tag)
                        || text
                            .to_ascii_lowercase()
                            .starts_with(&format!("{}.", tag.to_ascii_lowercase()))
                })
        }
    }
}

/// Azure's default rules for one direction, lowest priority last.
pub fn default_rules(direction: Direction) -> [Rule; 3] {
    let rule = |name: &str, priority, allow, source: &str, destination: &str| Rule {
        name: format!("defaultSecurityRules/{name}"),
        priority,
        direction,
        allow,
        protocol: "*".into(),
        sources: vec![source.into()],
        destinations: vec![destination.into()],
        ports: vec!["*".into()],
        expanded_sources: Vec::new(),
        expanded_destinations: Vec::new(),
    };
    match direction {
        Direction::Outbound => [
            rule(
                "AllowVnetOutBound",
                65000,
                true,
                "VirtualNetwork",
                "VirtualNetwork",
            ),
            rule("AllowInternetOutBound", 65001, true, "*", "Internet"),
            rule("DenyAllOutBound", 65500, false, "*", "*"),
        ],
        Direction::Inbound => [
            rule(
                "AllowVnetInBound",
                65000,
                true,
                "VirtualNetwork",
                "VirtualNetwork",
            ),
            rule(
                "AllowAzureLoadBalancerInBound",
                65001,
                true,
                "AzureLoadBalancer",
                "*",
            ),
            rule("DenyAllInBound", 65500, false, "*", "*"),
        ],
    }
}

/// One rule from `nsgs.json` (`securityRules[]`, `defaultSecurityRules[]`) or an effective-NSG
/// export (`effectiveSecurityRules[]`); `kind` prefixes bare names.
pub fn parse_rule(value: &Value, kind: &str) -> Option<Rule> {
    let name = shape::text(value, "name")?;
    let name = if name.contains('/') {
        name.to_string()
    } else {
        format!("{kind}/{name}")
    };
    let direction = if shape::same(shape::text(value, "direction")?, "Inbound") {
        Direction::Inbound
    } else {
        Direction::Outbound
    };
    let priority = shape::get(value, "priority")
        .and_then(|p| p.as_u64().or_else(|| p.as_str()?.parse().ok()))
        .and_then(|p| u32::try_from(p).ok())?;
    let both = |one: &str, many: &str| {
        let mut all = shape::one_or_many(value, one);
        all.extend(shape::strings(value, many));
        all
    };
    let expanded = |key: &str| -> Vec<Prefix> {
        shape::strings(value, key)
            .iter()
            .filter_map(|p| Prefix::parse(p))
            .collect()
    };
    Some(Rule {
        name,
        priority,
        direction,
        allow: shape::same(shape::text(value, "access").unwrap_or("Deny"), "Allow"),
        protocol: shape::text(value, "protocol").unwrap_or("*").to_string(),
        sources: both("sourceAddressPrefix", "sourceAddressPrefixes"),
        destinations: both("destinationAddressPrefix", "destinationAddressPrefixes"),
        ports: both("destinationPortRange", "destinationPortRanges"),
        expanded_sources: expanded("expandedSourceAddressPrefix"),
        expanded_destinations: expanded("expandedDestinationAddressPrefix"),
    })
}

/// An NSG resource as `az network nsg list` (or ARM) prints it.
pub fn parse_nsg(value: &Value) -> Option<Nsg> {
    let id = shape::text(value, "id").map(ResourceId::new);
    let name = shape::text(value, "name")
        .map(str::to_string)
        .or_else(|| id.as_ref().map(|i| i.name().to_string()))?;
    let mut rules: Vec<Rule> = shape::items(value, "securityRules")
        .iter()
        .filter_map(|r| parse_rule(r, "securityRules"))
        .collect();
    rules.extend(
        shape::items(value, "defaultSecurityRules")
            .iter()
            .filter_map(|r| parse_rule(r, "defaultSecurityRules")),
    );
    Some(Nsg { id, name, rules })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ip(text: &str) -> Ipv4Addr {
        text.parse().expect("address")
    }

    fn nsg(rules: Value) -> Nsg {
        parse_nsg(&json!({"name": "nsg-aks", "id": "/x/nsg-aks", "securityRules": rules}))
            .expect("nsg")
    }

    fn outbound<'a>(to: Peer<'a>, vnet: &'a [Prefix]) -> Flow<'a> {
        Flow {
            direction: Direction::Outbound,
            source: ip("10.1.0.4"),
            destination: to,
            port: 443,
            virtual_network: vnet,
        }
    }

    #[test]
    fn a_deny_before_the_defaults_decides() {
        let nsg = nsg(
            json!([{"name": "deny-endpoints", "priority": 200, "direction": "Outbound",
            "access": "Deny", "protocol": "Tcp", "sourceAddressPrefix": "*",
            "destinationAddressPrefix": "10.0.1.0/24", "destinationPortRange": "443"}]),
        );
        let vnet = [Prefix::parse("10.0.0.0/8").expect("p")];
        let decision = evaluate(&nsg, &outbound(Peer::Address(ip("10.0.1.5")), &vnet));
        assert!(!decision.allowed);
        assert_eq!(decision.rule.name, "securityRules/deny-endpoints");
        let elsewhere = evaluate(&nsg, &outbound(Peer::Address(ip("10.0.2.5")), &vnet));
        assert!(elsewhere.allowed);
        assert_eq!(
            elsewhere.rule.name,
            "defaultSecurityRules/AllowVnetOutBound"
        );
    }

    #[test]
    fn priority_not_order_decides_and_ports_and_protocols_count() {
        let nsg = nsg(json!([
            {"name": "deny-all-https", "priority": 4000, "direction": "Outbound", "access": "Deny",
             "protocol": "*", "sourceAddressPrefix": "*", "destinationAddressPrefix": "*", "destinationPortRange": "443"},
            {"name": "allow-acr", "priority": 100, "direction": "Outbound", "access": "Allow",
             "protocol": "Tcp", "sourceAddressPrefix": "VirtualNetwork", "destinationAddressPrefix": "AzureContainerRegistry",
             "destinationPortRanges": ["80", "440-450"]},
            {"name": "deny-udp", "priority": 50, "direction": "Outbound", "access": "Deny",
             "protocol": "Udp", "sourceAddressPrefix": "*", "destinationAddressPrefix": "*", "destinationPortRange": "*"}
        ]));
        let vnet = [Prefix::parse("10.1.0.0/16").expect("p")];
        let acr = ["AzureContainerRegistry"];
        let storage = ["Storage"];
        let to_acr = evaluate(&nsg, &outbound(Peer::Public(&acr), &vnet));
        assert!(to_acr.allowed, "{to_acr:?}");
        let to_storage = evaluate(&nsg, &outbound(Peer::Public(&storage), &vnet));
        assert_eq!(to_storage.rule.name, "securityRules/deny-all-https");
    }

    #[test]
    fn effective_rules_match_on_their_expanded_prefixes() {
        let rule = parse_rule(
            &json!({"name": "securityRules/deny-hub", "protocol": "All", "direction": "Outbound",
                "access": "Deny", "priority": 300, "destinationAddressPrefix": "HubTag",
                "destinationPortRange": "0-65535", "sourceAddressPrefix": "*",
                "expandedDestinationAddressPrefix": ["10.0.0.0/16"]}),
            "securityRules",
        )
        .expect("rule");
        let nsg = Nsg {
            id: None,
            name: "effective".into(),
            rules: vec![rule],
        };
        let decision = evaluate(&nsg, &outbound(Peer::Address(ip("10.0.1.5")), &[]));
        assert!(!decision.allowed);
    }

    #[test]
    fn without_rules_the_defaults_apply() {
        let empty = nsg(json!([]));
        let vnet = [Prefix::parse("10.1.0.0/16").expect("p")];
        assert!(evaluate(&empty, &outbound(Peer::Address(ip("10.1.9.9")), &vnet)).allowed);
        // An RFC 1918 address outside the VNet tag is neither VirtualNetwork nor Internet.
        let other = evaluate(&empty, &outbound(Peer::Address(ip("192.168.20.10")), &vnet));
        assert_eq!(other.rule.name, "defaultSecurityRules/DenyAllOutBound");
        let inbound = Flow {
            direction: Direction::Inbound,
            ..outbound(Peer::Address(ip("10.0.1.5")), &vnet)
        };
        assert_eq!(
            evaluate(&empty, &inbound).rule.name,
            "defaultSecurityRules/DenyAllInBound"
        );
    }

    #[test]
    fn malformed_rules_are_skipped() {
        assert_eq!(parse_rule(&json!({"name": "x"}), "securityRules"), None);
        assert_eq!(parse_rule(&json!([1, 2]), "securityRules"), None);
    }
}
