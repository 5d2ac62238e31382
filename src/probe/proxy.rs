//! The runtime's HTTP proxy, decided as containerd decides it: Go's `net/http` reads
//! `HTTPS_PROXY`/`https_proxy`, `HTTP_PROXY`/`http_proxy` and `NO_PROXY`/`no_proxy` from the
//! process's own environment once, and asks for every request URL — the registry, its token
//! realm, every blob host a redirect reaches — whether it goes through the proxy
//! (`golang.org/x/net/http/httpproxy`, `Config.ProxyFunc`). This file is that decision, pure;
//! where the runtime's environment comes from is [`RuntimeEnvironment`]'s job.

use std::collections::BTreeMap;
use std::net::IpAddr;

use url::Url;

/// The proxy settings of one process, as Go reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProxyConfig {
    /// The proxy for `https://` requests (`HTTPS_PROXY`, else `https_proxy`).
    pub https_proxy: Option<Url>,
    /// The proxy for `http://` requests (`HTTP_PROXY`, else `http_proxy`).
    pub http_proxy: Option<Url>,
    /// `NO_PROXY` (else `no_proxy`) as written.
    pub no_proxy: String,
}

impl ProxyConfig {
    /// From environment variables, Go's way: the upper-case name first, then the lower-case one;
    /// an empty value counts as unset; `host:port` means `http://host:port`.
    pub fn from_env(env: &BTreeMap<String, String>) -> ProxyConfig {
        let any = |names: [&str; 2]| {
            names
                .iter()
                .filter_map(|n| env.get(*n))
                .find(|v| !v.is_empty())
                .cloned()
        };
        ProxyConfig {
            https_proxy: any(["HTTPS_PROXY", "https_proxy"]).and_then(|v| parse_proxy(&v)),
            http_proxy: any(["HTTP_PROXY", "http_proxy"]).and_then(|v| parse_proxy(&v)),
            no_proxy: any(["NO_PROXY", "no_proxy"]).unwrap_or_default(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.https_proxy.is_none() && self.http_proxy.is_none()
    }

    /// The proxy a request for `url` goes through, or `None` for a direct connection.
    pub fn proxy_for(&self, url: &Url) -> Option<&Url> {
        let proxy = match url.scheme() {
            "https" => self.https_proxy.as_ref(),
            "http" => self.http_proxy.as_ref(),
            _ => None,
        }?;
        let host = url
            .host_str()?
            .trim_start_matches('[')
            .trim_end_matches(']');
        let port = url.port_or_known_default()?;
        self.use_proxy(&host.to_ascii_lowercase(), port)
            .then_some(proxy)
    }

    /// Go's `useProxy`: never for localhost or a loopback address; not for a `NO_PROXY` match.
    fn use_proxy(&self, host: &str, port: u16) -> bool {
        if host == "localhost" {
            return false;
        }
        let ip = host.parse::<IpAddr>().ok();
        if ip.is_some_and(|ip| ip.is_loopback()) {
            return false;
        }
        !self
            .no_proxy
            .split(',')
            .map(|entry| entry.trim().to_ascii_lowercase())
            .filter(|entry| !entry.is_empty())
            .any(|entry| no_proxy_matches(&entry, host, port, ip))
    }
}

/// One `NO_PROXY` entry against a request's host and port (Go's matchers: `*`, CIDR, IP with an
/// optional port, and domains — `foo.com` matches it and its subdomains, `.foo.com` and
/// `*.foo.com` subdomains only; a domain never matches an IP literal).
fn no_proxy_matches(entry: &str, host: &str, port: u16, ip: Option<IpAddr>) -> bool {
    if entry == "*" {
        return true;
    }
    if let Some((net, bits)) = entry.split_once('/')
        && let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u8>())
    {
        return ip.is_some_and(|ip| in_cidr(ip, net, bits));
    }
    let (entry_host, entry_port) = split_host_port(entry);
    let port_ok = entry_port.is_none_or(|p| p == port);
    if let Ok(entry_ip) = entry_host.parse::<IpAddr>() {
        return ip == Some(entry_ip) && port_ok;
    }
    if ip.is_some() || entry_host.is_empty() {
        return false;
    }
    let domain = entry_host.strip_prefix('*').unwrap_or(entry_host);
    let (suffix, also_exact) = match domain.strip_prefix('.') {
        Some(_) => (domain.to_string(), false),
        None => (format!(".{domain}"), true),
    };
    (host.ends_with(&suffix) || (also_exact && host == &suffix[1..])) && port_ok
}

/// `host:port` (or `[v6]:port`) → (host, port); a bare host has no port.
fn split_host_port(entry: &str) -> (&str, Option<u16>) {
    if let Some(rest) = entry.strip_prefix('[')
        && let Some((ip, after)) = rest.split_once(']')
    {
        return (ip, after.strip_prefix(':').and_then(|p| p.parse().ok()));
    }
    match entry.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => match port.parse() {
            Ok(port) => (host, Some(port)),
            Err(_) => (entry, None),
        },
        _ => (entry, None),
    }
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    match (ip, net) {
        (IpAddr::V4(ip), IpAddr::V4(net)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(ip) & mask == u32::from(net) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(net)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(ip) & mask == u128::from(net) & mask
        }
        _ => false,
    }
}

/// Go's `parseProxy`: a URL, or `host[:port]` taken as `http://host[:port]`.
pub fn parse_proxy(value: &str) -> Option<Url> {
    match Url::parse(value) {
        Ok(url) if url.host_str().is_some() && !url.scheme().is_empty() => Some(url),
        _ => Url::parse(&format!("http://{value}")).ok(),
    }
}

/// `Proxy-Authorization: Basic …` for a proxy URL that carries `user:password`, as Go sends it.
pub fn basic_authorization(proxy: &Url) -> Option<String> {
    use base64::Engine;
    let user = proxy.username();
    if user.is_empty() {
        return None;
    }
    let decode = |s: &str| percent_decode(s);
    let pair = format!(
        "{}:{}",
        decode(user),
        decode(proxy.password().unwrap_or(""))
    );
    Some(format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(pair)
    ))
}

fn percent_decode(s: &str) -> String {
    url::form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// What a proxy's answer to `CONNECT` means: `Ok` for a 2xx, else its status and words. `head`
/// is the answer up to the blank line, `body` whatever followed it.
pub fn interpret_connect(head: &[u8], body: &[u8]) -> Result<u16, (Option<u16>, String)> {
    let text = String::from_utf8_lossy(head);
    let status_line = text.lines().next().unwrap_or("").trim().to_string();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/"));
    let Some(code) = status else {
        return Err((
            None,
            format!(
                "the proxy did not answer in HTTP ({:?})",
                status_line.chars().take(80).collect::<String>()
            ),
        ));
    };
    if (200..300).contains(&code) {
        return Ok(code);
    }
    let meaning = match code {
        407 => {
            "the proxy wants credentials (Proxy-Authorization) the runtime's proxy URL does not give or it refuses"
        }
        403 => "the proxy's policy denies this destination",
        502..=504 => "the proxy could not reach the destination itself",
        _ => "the proxy refused the tunnel",
    };
    let page: String = String::from_utf8_lossy(body)
        .chars()
        .filter(|c| !c.is_control())
        .take(200)
        .collect();
    let page = if page.trim().is_empty() {
        String::new()
    } else {
        format!("; its page says: {}", page.trim())
    };
    Err((Some(code), format!("{status_line}: {meaning}{page}")))
}

/// `CONNECT host:port` over a connection to the proxy, its answer read within `timeout` (at most
/// 16 KiB of head). The stream comes back as the tunnel when the proxy said 2xx.
pub async fn connect<S>(
    mut stream: S,
    host: &str,
    port: u16,
    authorization: Option<&str>,
    timeout: std::time::Duration,
) -> (Option<S>, super::observed::tunnel::Tunnel)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let authority = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(value) = authorization {
        request.push_str(&format!("Proxy-Authorization: {value}\r\n"));
    }
    request.push_str("\r\n");
    let exchange = async {
        stream.write_all(request.as_bytes()).await?;
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = [0u8; 1024];
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                return Ok::<_, std::io::Error>((buf[..end].to_vec(), buf[end + 4..].to_vec()));
            }
            if buf.len() > 16 * 1024 {
                return Ok((buf, vec![]));
            }
            let n = stream.read(&mut chunk).await?;
            if n == 0 {
                return Ok((buf, vec![]));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    };
    let tunnel = |status, detail| super::observed::tunnel::Tunnel {
        proxy: String::new(),
        status,
        detail,
    };
    match tokio::time::timeout(timeout, exchange).await {
        Err(_) => (
            None,
            tunnel(
                None,
                format!("no answer to CONNECT within {} ms", timeout.as_millis()),
            ),
        ),
        Ok(Err(e)) => (
            None,
            tunnel(None, format!("the connection broke during CONNECT: {e}")),
        ),
        Ok(Ok((head, body))) => match interpret_connect(&head, &body) {
            Ok(code) => (
                Some(stream),
                tunnel(Some(code), format!("{code}: tunnel open")),
            ),
            Err((code, detail)) => (None, tunnel(code, detail)),
        },
    }
}

/// A proxy variable's value fit to print: a URL's password replaced — also in a value that
/// is no URL pullpath can read (`user:pass@host:3128`, a broken host), where whatever stands
/// between the user name's `:` and the authority's last `@` is taken for the password.
pub fn redact_value(value: &str) -> String {
    if let Ok(url) = Url::parse(value)
        && url.password().is_some()
    {
        return redact_proxy(&url);
    }
    let start = value.find("://").map_or(0, |i| i + 3);
    let end = value[start..].find('/').map_or(value.len(), |i| start + i);
    let authority = &value[start..end];
    match (authority.find(':'), authority.rfind('@')) {
        (Some(colon), Some(at)) if colon < at => format!(
            "{}:REDACTED{}",
            &value[..start + colon],
            &value[start + at..]
        ),
        _ => value.to_string(),
    }
}

/// A proxy URL fit to print: its password replaced.
pub fn redact_proxy(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("REDACTED"));
    }
    shown.to_string()
}

use super::systemd::SourcedVars;

/// The runtime's environment as far as a pull depends on it (its proxy and its trust), value by
/// value with where each was found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeEnvironment {
    /// The proxy and trust variables in force, and where each came from.
    pub vars: SourcedVars,
    /// What a reader must know: a drop-in the running process does not have, an unreadable
    /// file …
    pub notes: Vec<String>,
}

/// The proxy variables Go reads.
pub const PROXY_VARS: [&str; 6] = [
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
];

/// The variables Go's `crypto/x509` reads for the system trust store on Linux.
pub const TRUST_VARS: [&str; 2] = ["SSL_CERT_FILE", "SSL_CERT_DIR"];

/// Whether a variable changes how the runtime pulls: its proxy or its trust.
fn pull_var(name: &str) -> bool {
    PROXY_VARS.contains(&name) || TRUST_VARS.contains(&name)
}

impl RuntimeEnvironment {
    /// A variable's value and where it was set, when set.
    pub fn get(&self, name: &str) -> Option<(&str, &str)> {
        self.vars
            .get(name)
            .map(|(value, source)| (value.as_str(), source.as_str()))
    }

    /// The proxy variables only, with where each came from.
    pub fn proxy_vars(&self) -> impl Iterator<Item = (&String, &(String, String))> {
        self.vars
            .iter()
            .filter(|(name, _)| PROXY_VARS.contains(&name.as_str()))
    }

    pub fn config(&self) -> ProxyConfig {
        let env = self
            .vars
            .iter()
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect();
        ProxyConfig::from_env(&env)
    }

    /// The runtime's environment: the running process's when `process` is given, else its
    /// systemd unit's; flags (`overrides`) win over both. The two are compared: a drop-in
    /// changed without a restart is not what the runtime runs with.
    pub fn decide(
        process: Option<(u32, BTreeMap<String, String>)>,
        unit: Option<(String, SourcedVars)>,
        overrides: &BTreeMap<String, String>,
    ) -> RuntimeEnvironment {
        let mut found = RuntimeEnvironment::default();
        let for_pull = |k: &String| pull_var(k);
        match (&process, &unit) {
            (Some((pid, env)), unit) => {
                for (k, v) in env.iter().filter(|(k, _)| for_pull(k)) {
                    found.vars.insert(
                        k.clone(),
                        (
                            v.clone(),
                            format!("/proc/{pid}/environ (the running containerd)"),
                        ),
                    );
                }
                if let Some((unit_name, unit_env)) = unit {
                    // Proxy and trust variables are compared apart: each difference is said
                    // for what it changes, and a trust variable is never called a proxy.
                    let set = |vars: &mut dyn Iterator<Item = (&String, &String)>,
                               names: &[&str]| {
                        vars.filter(|(k, _)| names.contains(&k.as_str()))
                            .map(|(k, v)| (k.clone(), v.clone()))
                            .collect::<BTreeMap<String, String>>()
                    };
                    for names in [&PROXY_VARS[..], &TRUST_VARS[..]] {
                        let on_disk = set(&mut unit_env.iter().map(|(k, (v, _))| (k, v)), names);
                        let running = set(&mut env.iter(), names);
                        if on_disk == running {
                            continue;
                        }
                        let (on_disk, running) = (words(&on_disk, names), words(&running, names));
                        found.notes.push(if names == TRUST_VARS {
                            // Go's crypto/x509 reads SSL_CERT_FILE and SSL_CERT_DIR for the
                            // system roots (root_unix.go): the running process's decide.
                            format!(
                                "{unit_name} on disk sets {on_disk} but the running containerd (pid {pid}) has {running}, which choose the CA certificates it trusts: a unit changed since containerd started takes effect only after `systemctl daemon-reload && systemctl restart containerd`, a value set outside the unit (systemd's DefaultEnvironment, a wrapper) stays; this probe trusts as the running process does"
                            )
                        } else {
                            format!(
                                "{unit_name} on disk sets {on_disk} but the running containerd (pid {pid}) has {running}: the runtime reads its environment when it starts, so the change takes effect only after `systemctl daemon-reload && systemctl restart containerd`; this probe follows the running process"
                            )
                        });
                    }
                }
            }
            (None, Some((_, unit_env))) => {
                for (k, (v, source)) in unit_env.iter().filter(|(k, _)| for_pull(k)) {
                    found.vars.insert(k.clone(), (v.clone(), source.clone()));
                }
                found.notes.push(
                    "the running containerd's environment is not visible here (no /proc of its pid namespace): the proxy settings come from its systemd unit, which the running process may not have loaded yet"
                        .into(),
                );
            }
            (None, None) => {}
        }
        for (k, v) in overrides {
            found
                .vars
                .insert(k.clone(), (v.clone(), "command line".into()));
        }
        found
    }
}

/// `HTTPS_PROXY=http://p:3128, NO_PROXY=…` (proxy passwords redacted); with none set, `no proxy`
/// or `no SSL_CERT_FILE or SSL_CERT_DIR`, as `names` is the proxy variables or the trust ones.
fn words(vars: &BTreeMap<String, String>, names: &[&str]) -> String {
    if vars.is_empty() {
        return match names == TRUST_VARS {
            true => format!("no {}", names.join(" or ")),
            false => "no proxy".into(),
        };
    }
    vars.iter()
        .map(|(k, v)| format!("{k}={}", redact_value(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `/proc/<pid>/environ`: NUL-separated `KEY=value`.
pub fn parse_environ(bytes: &[u8]) -> BTreeMap<String, String> {
    bytes
        .split(|b| *b == 0)
        .filter_map(|kv| {
            let text = String::from_utf8_lossy(kv);
            let (k, v) = text.split_once('=')?;
            Some((k.to_string(), v.to_string()))
        })
        .collect()
}

#[cfg(test)]
mod tests;
