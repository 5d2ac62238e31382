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
//!   ends so or `override_path` is set. Docker Hub's default host is `registry-1.docker.io`.
//!
//! Where containerd's release lines differ (a file without `[host]`, an `http://` host with TLS
//! settings, an unconfigured localhost registry), the rules of the node's line are followed:
//! see [`crate::runtime::version`].

use std::path::{Path, PathBuf};

use super::authority::{Authority, Scheme};
use crate::node_root::NodeRoot;
use crate::runtime::version::ContainerdLine;
use undecodable::Undecodable;

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
    /// containerd 1.7+ tries an `http://` host that has TLS settings over HTTPS first and, when
    /// the server answers the handshake with HTTP (or not at all), retries it here in plain HTTP.
    pub http_fallback: Option<Authority>,
}

/// The hosts for one registry, and where they came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostsConfig {
    /// The directory containerd would read, when one exists.
    pub dir: Option<PathBuf>,
    pub endpoints: Vec<Endpoint>,
    /// What a reader should know: a file containerd ignores, a capability it refuses …
    pub notes: Vec<String>,
    /// A rule that differs between containerd's release lines decided these hosts.
    pub version_dependent: bool,
}

/// The directory name containerd looks for first: `host_port_` for `host:port`.
fn host_directory(registry: &str) -> Option<String> {
    let at = registry.rfind(':').filter(|&at| at > 0)?;
    Some(format!("{}_{}_", &registry[..at], &registry[at + 1..]))
}

impl HostsConfig {
    /// The configuration for `registry` (as the image reference names it, e.g. `docker.io`)
    /// under containerd's hosts roots (`config_path`, node paths, in order) by the rules of
    /// `line`: in each root `host_port_`, `host`, then `_default`, the first root holding one
    /// winning (containerd's `hostDirFromRoots`). No roots: containerd reads no hosts directory.
    pub fn read(
        node: &NodeRoot,
        roots: &[PathBuf],
        registry: &str,
        line: ContainerdLine,
    ) -> HostsConfig {
        let dir = roots.iter().find_map(|root| {
            host_directory(registry)
                .into_iter()
                .chain([registry.to_string(), "_default".to_string()])
                .map(|name| root.join(name))
                .find(|p| node.is_dir(p))
        });
        let found = dir.map(|dir| Directory {
            text: node
                .read_to_string(&dir.join("hosts.toml"))
                .unwrap_or_default(),
            crt: crt_files(node, &dir),
            path: dir,
        });
        HostsConfig::decide(found.as_ref(), registry, line)
    }

    /// Parse a hosts.toml of directory `dir` for `registry`, by the rules of `line`.
    pub fn parse(text: &str, dir: &Path, registry: &str, line: ContainerdLine) -> HostsConfig {
        let found = Directory {
            text: text.to_string(),
            crt: crt_files(&NodeRoot::host(), dir),
            path: dir.to_path_buf(),
        };
        HostsConfig::decide(Some(&found), registry, line)
    }

    /// `line`'s configuration, marked version-dependent when another line's hosts differ.
    fn decide(found: Option<&Directory>, registry: &str, line: ContainerdLine) -> HostsConfig {
        let mut every: Vec<(ContainerdLine, HostsConfig)> = ContainerdLine::ALL
            .into_iter()
            .map(|each| (each, build(found, registry, each)))
            .collect();
        let differ = every
            .windows(2)
            .any(|w| w[0].1.endpoints != w[1].1.endpoints);
        let at = every
            .iter()
            .position(|(each, _)| *each == line)
            .unwrap_or(0);
        let mut config = every.swap_remove(at).1;
        config.version_dependent = differ;
        config
    }
}

/// A registry's directory under `config_path`, read once: its hosts.toml (empty when there
/// is none) and its `*.crt` files.
struct Directory {
    path: PathBuf,
    text: String,
    crt: Vec<PathBuf>,
}

/// The hosts containerd of `line` builds from a registry's directory (`None`: it has none).
fn build(found: Option<&Directory>, registry: &str, line: ContainerdLine) -> HostsConfig {
    let config = |endpoints, notes| HostsConfig {
        dir: found.map(|d| d.path.clone()),
        endpoints,
        notes,
        version_dependent: false,
    };
    let Some(found) = found else {
        let endpoint = default_endpoint(registry, vec![], line);
        let notes = is_localhost(&endpoint.authority)
            .then(|| localhost_note(registry, &endpoint, line))
            .into_iter()
            .collect();
        return config(vec![endpoint], notes);
    };
    let with_crt = || vec![default_endpoint(registry, found.crt.clone(), line)];
    if found.text.trim().is_empty() {
        return config(with_crt(), vec![]);
    }
    match parse_hosts(&found.text, &found.path, registry, line) {
        Ok((endpoints, notes)) => config(endpoints, notes),
        Err(why) => config(
            with_crt(),
            vec![format!(
                "{}/hosts.toml does not decode ({why}): containerd logs \"failed to decode hosts.toml\" and uses only the directory's *.crt files",
                found.path.display()
            )],
        ),
    }
}

/// The registry itself, as containerd builds it without configuration.
fn default_endpoint(registry: &str, cas: Vec<PathBuf>, line: ContainerdLine) -> Endpoint {
    let host = if registry == "docker.io" {
        "registry-1.docker.io"
    } else {
        registry
    };
    let https = Authority::parse(host, 443).unwrap_or(Authority {
        host: host.to_string(),
        port: 443,
    });
    let mut endpoint = Endpoint {
        authority: https.clone(),
        scheme: Scheme::Https,
        path: "/v2".into(),
        capabilities: Capabilities::ALL,
        cas,
        skip_verify: false,
        headers: vec![],
        is_registry: true,
        http_fallback: None,
    };
    if !is_localhost(&https) {
        return endpoint;
    }
    let port = host_port(host);
    let plain = Authority::parse(host, 80).unwrap_or(https);
    match (line.tries_https_first(), port) {
        // 1.6: plain HTTP, without verification, whatever the port.
        (false, _) => {
            endpoint.scheme = Scheme::Http;
            endpoint.authority = plain;
            endpoint.skip_verify = true;
        }
        // 1.7+: HTTPS without verification when the port says so, HTTP for port 80.
        (true, None | Some(443)) => endpoint.skip_verify = true,
        (true, Some(80)) => {
            endpoint.scheme = Scheme::Http;
            endpoint.authority = plain;
        }
        // 1.7+, any other port: ambiguous, HTTPS first (skip_verify counts as TLS settings).
        (true, Some(_)) => {
            endpoint.skip_verify = true;
            endpoint.http_fallback = Some(plain);
        }
    }
    endpoint
}

fn is_localhost(authority: &Authority) -> bool {
    authority.host == "localhost"
        || authority
            .host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The port written in `host:port`, if one is.
fn host_port(host: &str) -> Option<u16> {
    let (_, port) = host.rsplit_once(':')?;
    if host.ends_with(']') {
        return None;
    }
    port.parse().ok()
}

fn localhost_note(registry: &str, endpoint: &Endpoint, line: ContainerdLine) -> String {
    let how = match (endpoint.scheme, &endpoint.http_fallback) {
        (Scheme::Http, _) => "plain HTTP".to_string(),
        (Scheme::Https, Some(_)) => {
            "HTTPS without verification first, then plain HTTP if the server answers HTTP"
                .to_string()
        }
        (Scheme::Https, None) => "HTTPS without verification".to_string(),
    };
    format!(
        "no hosts.toml for the localhost registry {registry}: containerd {} speaks {how} to it (containerd 1.6 speaks plain HTTP on any port)",
        line.as_str()
    )
}

fn crt_files(node: &NodeRoot, dir: &Path) -> Vec<PathBuf> {
    // `read_dir` sorts by name.
    node.read_dir(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "crt"))
        .collect()
}

fn parse_hosts(
    text: &str,
    dir: &Path,
    registry: &str,
    line: ContainerdLine,
) -> Result<(Vec<Endpoint>, Vec<String>), Undecodable> {
    // `preserve_order` keeps `[host."…"]` tables in file order, which is containerd's order.
    let doc: toml::Table = text.parse().map_err(Undecodable::Toml)?;
    let mut notes = Vec::new();
    let mut endpoints = Vec::new();
    match doc.get("host") {
        Some(toml::Value::Table(hosts)) => {
            for (key, value) in hosts {
                let table = value
                    .as_table()
                    .ok_or_else(|| Undecodable::HostNotTable { key: key.clone() })?;
                endpoints.push(parse_host(key, table, dir, false, line)?);
            }
        }
        Some(_) => return Err(Undecodable::HostTreeNotTable),
        // 1.6 and 1.7 fail to decode it (`getSortedHosts`: "invalid `host` tree").
        None if !line.reads_hosts_without_host_table() => {
            return Err(Undecodable::NoHostTable { line });
        }
        None => notes.push(format!(
            "hosts.toml has no [host] table: containerd {} reads it (1.6 and 1.7 would use only the directory's *.crt files)",
            line.as_str()
        )),
    }
    let server = match doc.get("server") {
        Some(toml::Value::String(s)) => s.clone(),
        Some(_) => return Err(Undecodable::ServerNotString),
        None => String::new(),
    };
    let mut last = if server.is_empty() {
        let mut default = default_endpoint(registry, vec![], line);
        // The top level's settings still apply to the default host; its capabilities are all.
        let top = parse_host("https://placeholder", &doc, dir, true, line)?;
        default.cas = top.cas;
        default.skip_verify = top.skip_verify || default.skip_verify;
        default.headers = top.headers;
        default
    } else {
        parse_host(&server, &doc, dir, true, line)?
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
    line: ContainerdLine,
) -> Result<Endpoint, Undecodable> {
    let with_scheme = if url.starts_with("http") {
        url.to_string()
    } else {
        format!("https://{url}")
    };
    let parsed = url::Url::parse(&with_scheme).map_err(|error| Undecodable::BadUrl {
        url: url.to_string(),
        error,
    })?;
    let scheme = Scheme::of(&parsed).ok_or_else(|| Undecodable::NotHttp {
        url: url.to_string(),
    })?;
    let authority = Authority::of(&parsed).ok_or_else(|| Undecodable::NoHost {
        url: url.to_string(),
    })?;
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
                    _ => return Err(Undecodable::UnknownCapability { value: c.clone() }),
                }
            }
            caps
        }
        Some(other) => {
            return Err(Undecodable::CapabilitiesNotList {
                value: other.clone(),
            });
        }
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
            .map(|v| {
                v.as_str()
                    .map(absolute)
                    .ok_or_else(|| Undecodable::CaEntryNotPath { value: v.clone() })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(Undecodable::CaWrongType {
                type_name: other.type_str(),
            });
        }
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
                        let s = v.as_str().ok_or_else(|| Undecodable::HeaderNotString {
                            name: name.clone(),
                            value: v.clone(),
                        })?;
                        headers.push((name.clone(), s.to_string()));
                    }
                }
                other => {
                    return Err(Undecodable::HeaderWrongType {
                        name: name.clone(),
                        type_name: other.type_str(),
                    });
                }
            }
        }
    }
    // TLS settings on an http:// host (their presence, even `skip_verify = false`, as Go's
    // nil checks): 1.7+ tries HTTPS first unless the port is 80 — on the URL's own port, or
    // 443 when it names none — and falls back to the HTTP URL.
    let tls_settings = ["ca", "client", "skip_verify"]
        .iter()
        .any(|key| table.contains_key(*key));
    // The port as written: the URL parser forgets an explicit `:80`.
    let written_port = with_scheme
        .split_once("://")
        .and_then(|(_, rest)| host_port(rest.split('/').next().unwrap_or("")));
    let (scheme, authority, http_fallback) = if scheme == Scheme::Http
        && tls_settings
        && written_port != Some(80)
        && line.tries_https_first()
    {
        let https = Authority {
            host: authority.host.clone(),
            port: written_port.unwrap_or(443),
        };
        (Scheme::Https, https, Some(authority))
    } else {
        (scheme, authority, None)
    };
    Ok(Endpoint {
        scheme,
        authority,
        path,
        capabilities,
        cas,
        skip_verify,
        headers,
        is_registry: top_level,
        http_fallback,
    })
}

#[cfg(test)]
mod tests;
mod undecodable;
