//! containerd's per-registry configuration, `<config_path>/<registry>/hosts.toml`: the CA files
//! it trusts for that registry and the mirrors it tries before the registry itself.

use std::path::{Path, PathBuf};

/// What hosts.toml (and the directory around it) says about one registry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostsConfig {
    /// `[host."…"]` entries, in file order: containerd tries these before `server`.
    pub mirrors: Vec<String>,
    /// CA files: `ca` at the top level and in each `[host]`, and `*.crt` files beside it.
    pub cas: Vec<PathBuf>,
}

impl HostsConfig {
    /// Read `dir/<registry>/`; a missing directory or file is an empty configuration.
    pub fn read(certs_dir: &Path, registry: &str) -> HostsConfig {
        let dir = certs_dir.join(registry);
        let mut config = std::fs::read_to_string(dir.join("hosts.toml"))
            .map(|text| HostsConfig::parse(&text, &dir, registry))
            .unwrap_or_default();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for entry in entries.flatten() {
                let path = entry.path();
                if path.extension().is_some_and(|e| e == "crt") && !config.cas.contains(&path) {
                    config.cas.push(path);
                }
            }
        }
        config.cas.sort();
        config.cas.dedup();
        config
    }

    pub fn parse(text: &str, dir: &Path, registry: &str) -> HostsConfig {
        let mut config = HostsConfig::default();
        let Ok(doc) = text.parse::<toml::Table>() else {
            return config;
        };
        let mut push = |value: Option<&toml::Value>| match value {
            Some(toml::Value::String(s)) => config.cas.push(dir.join(s)),
            Some(toml::Value::Array(a)) => config
                .cas
                .extend(a.iter().filter_map(|v| v.as_str()).map(|s| dir.join(s))),
            _ => {}
        };
        push(doc.get("ca"));
        let server = doc.get("server").and_then(|s| s.as_str()).unwrap_or("");
        if let Some(hosts) = doc.get("host").and_then(|h| h.as_table()) {
            for (url, host) in hosts {
                push(host.get("ca"));
                let host_name = url
                    .trim_start_matches("https://")
                    .trim_start_matches("http://")
                    .trim_end_matches('/');
                // A [host] entry for the registry itself is not a mirror.
                if url.trim_end_matches('/') != server.trim_end_matches('/')
                    && host_name != registry
                {
                    config.mirrors.push(url.clone());
                }
            }
        }
        config
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_in_order_and_every_ca() {
        let text = r#"
server = "https://registry.example.test"
ca = "top.pem"

[host."https://mirror-b.example.test"]
  capabilities = ["pull", "resolve"]
  ca = ["b1.pem", "b2.pem"]

[host."https://mirror-a.example.test"]
  capabilities = ["pull"]

[host."https://registry.example.test"]
  ca = "/abs/reg.pem"
"#;
        let c = HostsConfig::parse(
            text,
            Path::new("/certs/registry.example.test"),
            "registry.example.test",
        );
        assert_eq!(
            c.mirrors,
            [
                "https://mirror-b.example.test",
                "https://mirror-a.example.test"
            ]
        );
        let cas: Vec<&str> = c.cas.iter().filter_map(|p| p.to_str()).collect();
        assert_eq!(
            cas,
            [
                "/certs/registry.example.test/top.pem",
                "/certs/registry.example.test/b1.pem",
                "/certs/registry.example.test/b2.pem",
                "/abs/reg.pem"
            ]
        );
        assert_eq!(
            HostsConfig::parse("not toml [", Path::new("/"), "r"),
            HostsConfig::default()
        );
    }
}
