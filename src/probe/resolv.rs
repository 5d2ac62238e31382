//! Where am I: the host's resolver configuration, read as glibc reads it.
//!
//! `/etc/resolv.conf` gives nameservers (at most three), the search list and `ndots`;
//! `/etc/hosts` is consulted first (nsswitch `files dns`). Inside `ip netns exec`, these are the
//! namespace's own files, which is exactly what the node's runtime sees.

use std::net::IpAddr;
use std::path::Path;

use crate::node_root::NodeRoot;

/// The resolver configuration of this host.
#[derive(Debug, Clone)]
pub struct ResolverConfig {
    pub nameservers: Vec<IpAddr>,
    pub search: Vec<String>,
    pub ndots: u32,
    /// `/etc/hosts` entries: (address, names).
    pub hosts: Vec<(IpAddr, Vec<String>)>,
    /// Why this looks like a pod's resolver rather than a node's, if it does.
    pub pod_view: Option<String>,
}

/// glibc's limit on nameservers.
const MAX_NAMESERVERS: usize = 3;

impl ResolverConfig {
    /// Read `dir/resolv.conf` and `dir/hosts` (node paths, normally `/etc`) inside the node root,
    /// so AKS Ubuntu's `/etc/resolv.conf` → `/run/systemd/resolve/resolv.conf` is the node's
    /// file; missing files mean defaults.
    pub fn read(node: &NodeRoot, dir: &Path) -> ResolverConfig {
        let resolv = node
            .read_to_string(&dir.join("resolv.conf"))
            .unwrap_or_default();
        let hosts = node.read_to_string(&dir.join("hosts")).unwrap_or_default();
        ResolverConfig::parse(&resolv, &hosts)
    }

    pub fn parse(resolv: &str, hosts: &str) -> ResolverConfig {
        let mut nameservers = Vec::new();
        let mut search = Vec::new();
        let mut ndots = 1;
        for line in resolv.lines() {
            let line = line.split(['#', ';']).next().unwrap_or("");
            let mut words = line.split_whitespace();
            match words.next() {
                Some("nameserver") => {
                    if let Some(ip) = words.next().and_then(|w| w.parse().ok())
                        && nameservers.len() < MAX_NAMESERVERS
                    {
                        nameservers.push(ip);
                    }
                }
                // The last `search` or `domain` line wins, as in glibc.
                Some("search") => {
                    search = words.map(|w| w.trim_end_matches('.').to_string()).collect()
                }
                Some("domain") => {
                    search = words
                        .take(1)
                        .map(|w| w.trim_end_matches('.').to_string())
                        .collect()
                }
                Some("options") => {
                    for option in words {
                        if let Some(n) = option
                            .strip_prefix("ndots:")
                            .and_then(|n| n.parse::<u32>().ok())
                        {
                            ndots = n.min(15);
                        }
                    }
                }
                _ => {}
            }
        }
        let hosts = hosts
            .lines()
            .filter_map(|line| {
                let line = line.split('#').next().unwrap_or("");
                let mut words = line.split_whitespace();
                let ip: IpAddr = words.next()?.parse().ok()?;
                let names: Vec<String> = words.map(|w| w.to_ascii_lowercase()).collect();
                (!names.is_empty()).then_some((ip, names))
            })
            .collect();
        let pod_view = pod_view(&search, ndots);
        ResolverConfig {
            nameservers,
            search,
            ndots,
            hosts,
            pod_view,
        }
    }

    /// Addresses `/etc/hosts` gives for a name.
    pub fn hosts_entry(&self, name: &str) -> Vec<IpAddr> {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        self.hosts
            .iter()
            .filter(|(_, names)| names.contains(&name))
            .map(|(ip, _)| *ip)
            .collect()
    }

    /// The names glibc asks for, in order: with fewer dots than `ndots` the search list comes
    /// first; otherwise the name as given first. A trailing dot means the name alone.
    pub fn candidates(&self, name: &str) -> Vec<String> {
        if let Some(absolute) = name.strip_suffix('.') {
            return vec![absolute.to_string()];
        }
        let dots = name.matches('.').count() as u32;
        let searched = self.search.iter().map(|s| format!("{name}.{s}"));
        if dots >= self.ndots {
            std::iter::once(name.to_string()).chain(searched).collect()
        } else {
            searched.chain(std::iter::once(name.to_string())).collect()
        }
    }
}

/// A cluster search domain or ndots:5 is how kubelet writes a pod's resolv.conf.
fn pod_view(search: &[String], ndots: u32) -> Option<String> {
    let cluster = search
        .iter()
        .find(|s| s.starts_with("svc.") || s.contains(".svc.") || s == &"cluster.local");
    match cluster {
        Some(domain) => Some(format!(
            "the search list holds the cluster domain {domain} (ndots:{ndots}): this is a pod's resolver, and a pod's view does not speak for the node's pull"
        )),
        None if ndots >= 5 => Some(
            "ndots:5 is what the kubelet writes into pods' resolv.conf: this may be a pod's view, which does not speak for the node's pull".to_string(),
        ),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_glibc() {
        let c = ResolverConfig::parse(
            "# comment\nnameserver 10.0.0.2\nnameserver fe80::1\nnameserver 10.0.0.3\nnameserver 10.0.0.4\nsearch a.example b.example\noptions ndots:2 timeout:1\n",
            "127.0.0.1 localhost\n10.1.1.1 Registry.Example.test reg # hand fix\n",
        );
        assert_eq!(c.nameservers.len(), 3);
        assert_eq!(c.search, ["a.example", "b.example"]);
        assert_eq!(c.ndots, 2);
        assert_eq!(
            c.hosts_entry("registry.example.test"),
            ["10.1.1.1".parse::<IpAddr>().expect("ip")]
        );
        assert!(c.pod_view.is_none());
    }

    #[test]
    fn search_order_follows_ndots() {
        let c = ResolverConfig::parse(
            "search svc.cluster.local cluster.local\noptions ndots:5\n",
            "",
        );
        assert_eq!(
            c.candidates("registry.example.test")[0],
            "registry.example.test.svc.cluster.local"
        );
        assert_eq!(
            c.candidates("registry.example.test")
                .last()
                .map(String::as_str),
            Some("registry.example.test")
        );
        assert_eq!(
            c.candidates("registry.example.test."),
            ["registry.example.test"]
        );
        assert!(c.pod_view.as_deref().is_some_and(|w| w.contains("pod")));
        let node = ResolverConfig::parse("nameserver 10.0.0.2\nsearch corp.example\n", "");
        assert_eq!(node.candidates("r.example")[0], "r.example");
    }
}
