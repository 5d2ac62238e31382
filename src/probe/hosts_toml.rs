//! containerd's registry host configuration, `<config_path>/<dir>/hosts.toml`, read into the
//! ordered list of hosts containerd tries for one registry, as containerd 1.6–2.x builds it
//! (`remotes/docker/config/hosts.go`, `config_unix.go`):
//!
//! - the directory is `host_port_` (for `host:port`), then `host`, then `_default`;
//! - without a hosts.toml (or with an empty one) the one host is the registry itself, with the
//!   directory's `*.crt` files as CAs; a hosts.toml that does not decode is logged by
//!   containerd and treated the same way;
//! - otherwise every `[host."…"]` in file order, then `server` (or the registry when `server`
//!   is absent) last;
//! - each host: `capabilities` (default pull, resolve, push), `ca` (a path or a list, relative to
//!   the directory), `skip_verify`, `header`, and `/v2` appended to its path unless it already
//!   ends so or `override_path` is set. Docker Hub's default host is `registry-1.docker.io`; a
//!   localhost registry without configuration is spoken to over plain HTTP.

use std::path::{Path, PathBuf};

use super::authority::{Authority, Scheme};

/// What a host may be asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    pub pull: bool,
    pub resolve: bool,
    pub push: bool,
}

impl Capabilities {
    pub const ALL: Capabilities = Capabilities {
        pull: true,
        resolve: true,
        push: true,
    };
}

/// One host containerd tries for the registry, in its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub scheme: Scheme,
    pub authority: Authority,
    /// The API path prefix, `/v2` unless `override_path` says otherwise.
    pub path: String,
    pub capabilities: Capabilities,
    /// CA files this host trusts besides the system store.
    pub cas: Vec<PathBuf>,
    pub skip_verify: bool,
    /// `header` entries, sent with every request to this host.
    pub headers: Vec<(String, String)>,
    /// True for the registry's own host (`server`, or the default), false for a mirror.
    pub is_registry: bool,
}

/// The hosts for one registry, and where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsConfig {
    /// The directory containerd would read, when one exists.
    pub dir: Option<PathBuf>,
    pub endpoints: Vec<Endpoint>,
    /// What a reader should know: a file containerd ignores, a capability it refuses …
    pub notes: Vec<String>,
}

/// The directory name containerd looks for first: `host_port_` for `host:port`.
fn host_directory(registry: &str) -> Option<String> {
    let at = registry.rfind(':').filter(|&at| at > 0)?;
    Some(format!("{}_{}_", &registry[..at], &registry[at + 1..]))
}

impl HostsConfig {
    /// The configuration for `registry` (as the image reference names it, e.g. `docker.io`)
    /// under `certs_dir`; `None` for `certs_dir` means containerd has no `config_path`.
    pub fn read(certs_dir: Option<&Path>, registry: &str) -> HostsConfig {
        let dir = certs_dir.and_then(|root| {
            host_directory(registry)
                .into_iter()
                .chain([registry.to_string(), "_default".to_string()])
                .map(|name| root.join(name))
                .find(|p| p.is_dir())
        });
        let Some(dir) = dir else {
            let endpoint = default_endpoint(registry, vec![]);
            let notes = (endpoint.scheme == Scheme::Http)
                .then(|| format!(
                    "no hosts.toml for {registry}: containerd 1.6 and 1.7 speak plain HTTP to a localhost registry (2.x tries TLS without verification first)"
                ))
                .into_iter()
                .collect();
            return HostsConfig {
                dir: None,
                endpoints: vec![endpoint],
                notes,
            };
        };
        let text = std::fs::read_to_string(dir.join("hosts.toml")).unwrap_or_default();
        let mut config = HostsConfig::parse(&text, &dir, registry);
        config.dir = Some(dir);
        config
    }

    /// Parse a hosts.toml of directory `dir` for `registry`.
    pub fn parse(text: &str, dir: &Path, registry: &str) -> HostsConfig {
        let cert_files = || crt_files(dir);
        if text.trim().is_empty() {
            return HostsConfig {
                dir: Some(dir.to_path_buf()),
                endpoints: vec![default_endpoint(registry, cert_files())],
                notes: vec![],
            };
        }
        match parse_hosts(text, dir, registry) {
            Ok((endpoints, notes)) => HostsConfig {
                dir: Some(dir.to_path_buf()),
                endpoints,
                notes,
            },
            Err(why) => HostsConfig {
                dir: Some(dir.to_path_buf()),
                endpoints: vec![default_endpoint(registry, cert_files())],
                notes: vec![format!(
                    "{}/hosts.toml does not decode ({why}): containerd logs \"failed to decode hosts.toml\" and uses only the directory's *.crt files",
                    dir.display()
                )],
            },
        }
    }
}

/// The registry itself, as containerd builds it without configuration.
fn default_endpoint(registry: &str, cas: Vec<PathBuf>) -> Endpoint {
    let host = if registry == "docker.io" {
        "registry-1.docker.io"
    } else {
        registry
    };
    let authority = Authority::parse(host, 443).unwrap_or(Authority {
        host: host.to_string(),
        port: 443,
    });
    let localhost = authority.host == "localhost"
        || authority
            .host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    let scheme = if localhost {
        Scheme::Http
    } else {
        Scheme::Https
    };
    Endpoint {
        authority: Authority::parse(host, scheme.default_port()).unwrap_or(authority),
        scheme,
        path: "/v2".into(),
        capabilities: Capabilities::ALL,
        cas,
        skip_verify: localhost,
        headers: vec![],
        is_registry: true,
    }
}

fn crt_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "crt"))
        .collect();
    files.sort();
    files
}

fn parse_hosts(
    text: &str,
    dir: &Path,
    registry: &str,
) -> Result<(Vec<Endpoint>, Vec<String>), String> {
    // `preserve_order` keeps `[host."…"]` tables in file order, which is containerd's order.
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| e.message().to_string())?;
    let mut notes = Vec::new();
    let mut endpoints = Vec::new();
    match doc.get("host") {
        Some(toml::Value::Table(hosts)) => {
            for (key, value) in hosts {
                let table = value
                    .as_table()
                    .ok_or_else(|| format!("host {key:?} is not a table"))?;
                endpoints.push(parse_host(key, table, dir, false)?);
            }
        }
        Some(_) => return Err("`host` is not a table".into()),
        None => notes.push(
            "hosts.toml has no [host] table: containerd 1.6 and 1.7 reject such a file and use only the directory's *.crt files; 2.x reads it"
                .to_string(),
        ),
    }
    let server = match doc.get("server") {
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => return Err("`server` is not a string".into()),
        None => String::new(),
    };
    let mut last = if server.is_empty() {
        let mut default = default_endpoint(registry, vec![]);
        // The top level's settings still apply to the default host; its capabilities are all.
        let top = parse_host("https://placeholder", &doc, dir, true)?;
        default.cas = top.cas;
        default.skip_verify = top.skip_verify || default.skip_verify;
        default.headers = top.headers;
        default
    } else {
        parse_host(&server, &doc, dir, true)?
    };
    last.is_registry = true;
    for endpoint in &mut endpoints {
        endpoint.is_registry = endpoint.authority == last.authority;
    }
    for endpoint in &endpoints {
        if !endpoint.capabilities.pull && !endpoint.capabilities.resolve {
            notes.push(format!(
                "host {} has neither pull nor resolve: containerd never asks it for a manifest; blobs it still tries",
                endpoint.authority
            ));
        }
    }
    endpoints.push(last);
    Ok((endpoints, notes))
}

/// One `[host."url"]` table (or the top level, for `server`).
fn parse_host(
    url: &str,
    table: &toml::Table,
    dir: &Path,
    top_level: bool,
) -> Result<Endpoint, String> {
    let with_scheme = if url.starts_with("http") {
        url.to_string()
    } else {
        format!("https://{url}")
    };
    let parsed = url::Url::parse(&with_scheme).map_err(|e| format!("host {url:?}: {e}"))?;
    let scheme = Scheme::of(&parsed).ok_or_else(|| format!("host {url:?}: not http(s)"))?;
    let authority = Authority::of(&parsed).ok_or_else(|| format!("host {url:?} names no host"))?;
    let override_path = table
        .get("override_path")
        .and_then(toml::Value::as_bool)
        .unwrap_or(false);
    let raw_path = parsed.path().trim_end_matches('/');
    let path = if raw_path.is_empty() {
        if override_path {
            String::new()
        } else {
            "/v2".into()
        }
    } else if raw_path.ends_with("/v2") || override_path {
        raw_path.to_string()
    } else {
        format!("{raw_path}/v2")
    };
    let capabilities = match table.get("capabilities") {
        None => Capabilities::ALL,
        Some(toml::Value::Array(list)) if list.is_empty() => Capabilities::ALL,
        Some(toml::Value::Array(list)) => {
            let mut caps = Capabilities {
                pull: false,
                resolve: false,
                push: false,
            };
            for c in list {
                match c.as_str().map(str::to_ascii_lowercase).as_deref() {
                    Some("pull") => caps.pull = true,
                    Some("resolve") => caps.resolve = true,
                    Some("push") => caps.push = true,
                    _ => return Err(format!("unknown capability {c}")),
                }
            }
            caps
        }
        Some(other) => return Err(format!("capabilities {other} is not a list")),
    };
    let absolute = |p: &str| {
        let p = Path::new(p);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            dir.join(p)
        }
    };
    let cas = match table.get("ca") {
        None => vec![],
        Some(toml::Value::String(s)) => vec![absolute(s)],
        Some(toml::Value::Array(list)) => list
            .iter()
            .map(|v| v.as_str().map(absolute).ok_or("ca list entries are paths"))
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("invalid type {} for \"ca\"", other.type_str())),
    };
    let skip_verify = table
        .get("skip_verify")
        .and_then(toml::Value::as_bool)
        .unwrap_or(false);
    let mut headers = Vec::new();
    if let Some(toml::Value::Table(h)) = table.get("header") {
        for (name, value) in h {
            match value {
                toml::Value::String(s) => headers.push((name.clone(), s.clone())),
                toml::Value::Array(list) => {
                    for v in list {
                        let s = v.as_str().ok_or(format!("header {name:?}: not a string"))?;
                        headers.push((name.clone(), s.to_string()));
                    }
                }
                other => {
                    return Err(format!(
                        "invalid type {} for header {name:?}",
                        other.type_str()
                    ));
                }
            }
        }
    }
    Ok(Endpoint {
        scheme,
        authority,
        path,
        capabilities,
        cas,
        skip_verify,
        headers,
        is_registry: top_level,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn authorities(c: &HostsConfig) -> Vec<String> {
        c.endpoints
            .iter()
            .map(|e| e.authority.to_string())
            .collect()
    }

    #[test]
    fn hosts_in_file_order_then_server() {
        let text = r#"
server = "https://registry.example.test"
ca = "top.pem"

[host."https://mirror-b.example.test"]
  capabilities = ["pull", "resolve"]
  ca = ["b1.pem", "b2.pem"]
  [host."https://mirror-b.example.test".header]
    x-tenant = "a"

[host."mirror-a.example.test:5000/cache"]
  capabilities = ["pull"]
  skip_verify = true

[host."http://plain.example.test/v2/proxy"]
  override_path = true

[host."https://registry.example.test"]
  ca = "/abs/reg.pem"
"#;
        let dir = Path::new("/certs/registry.example.test");
        let c = HostsConfig::parse(text, dir, "registry.example.test");
        assert_eq!(
            authorities(&c),
            [
                "mirror-b.example.test",
                "mirror-a.example.test:5000",
                "plain.example.test:80",
                "registry.example.test",
                "registry.example.test"
            ]
        );
        let e = &c.endpoints;
        assert_eq!(e[0].cas, [dir.join("b1.pem"), dir.join("b2.pem")]);
        assert_eq!(e[0].headers, [("x-tenant".to_string(), "a".to_string())]);
        assert!(!e[0].capabilities.push && e[0].capabilities.resolve);
        assert!(!e[1].capabilities.resolve && e[1].skip_verify);
        assert_eq!(e[1].path, "/cache/v2");
        assert_eq!(
            (e[2].scheme, e[2].path.as_str()),
            (Scheme::Http, "/v2/proxy")
        );
        assert_eq!(e[3].cas, [PathBuf::from("/abs/reg.pem")]);
        assert!(e[3].is_registry && !e[0].is_registry);
        assert_eq!(e[4].cas, [dir.join("top.pem")]);
        assert_eq!(e[4].capabilities, Capabilities::ALL);
    }

    #[test]
    fn what_containerd_does_without_a_usable_file() {
        let dir = Path::new("/nonexistent");
        let broken = HostsConfig::parse("not toml [", dir, "r.example");
        assert_eq!(authorities(&broken), ["r.example"]);
        assert!(broken.notes[0].contains("does not decode"));
        let unknown = HostsConfig::parse(
            "[host.\"https://m.example\"]\ncapabilities = [\"fetch\"]\n",
            dir,
            "r.example",
        );
        assert_eq!(authorities(&unknown), ["r.example"]);
        let no_hosts = HostsConfig::parse("server = \"https://r.example\"\n", dir, "r.example");
        assert_eq!(authorities(&no_hosts), ["r.example"]);
        assert!(no_hosts.notes[0].contains("no [host] table"));
        let hub = HostsConfig::read(None, "docker.io");
        assert_eq!(authorities(&hub), ["registry-1.docker.io"]);
        let local = HostsConfig::read(None, "localhost:5000");
        assert_eq!(local.endpoints[0].scheme, Scheme::Http);
        let default = HostsConfig::parse("[host.\"https://m.example\"]\n", dir, "r.example");
        assert_eq!(authorities(&default), ["m.example", "r.example"]);
    }

    #[test]
    fn directory_names() {
        assert_eq!(
            host_directory("r.example:5000").as_deref(),
            Some("r.example_5000_")
        );
        assert_eq!(host_directory("r.example"), None);
        let root = std::env::temp_dir().join(format!("pullpath-hosts-{}", std::process::id()));
        let port_dir = root.join("r.example_5000_");
        let default_dir = root.join("_default");
        std::fs::create_dir_all(&port_dir).expect("dir");
        std::fs::create_dir_all(&default_dir).expect("dir");
        std::fs::write(
            port_dir.join("hosts.toml"),
            "[host.\"https://m.example\"]\n",
        )
        .expect("write");
        let by_port = HostsConfig::read(Some(&root), "r.example:5000");
        assert_eq!(by_port.dir.as_deref(), Some(port_dir.as_path()));
        assert_eq!(authorities(&by_port), ["m.example", "r.example:5000"]);
        let fallback = HostsConfig::read(Some(&root), "other.example");
        assert_eq!(fallback.dir.as_deref(), Some(default_dir.as_path()));
        let _ = std::fs::remove_dir_all(&root);
    }
}
