//! The layer a failure happened in, from the innermost cause read in the order a pull meets
//! them (proxy, node, DNS, TLS, connection, then what the registry answered).

use std::sync::LazyLock;

use regex::Regex;

use super::denied::{denied, is_bare_denied};
use super::named::status_code;
use super::prose::{bare_eof_ambiguity, connect_refused_ambiguity};
use super::{Ambiguity, re};
use crate::failure_text::chain::Chain;
use crate::vocab::Layer;

pub(super) static LOOKUP: LazyLock<Regex> =
    LazyLock::new(|| re(r"^lookup ([^\s]+?)(?: on ([^\s]+))?$"));
/// Go's transport reports a proxy that answers CONNECT with anything but 200 as the bare reason
/// phrase (net/http transport.go: `errors.New(text)` of `resp.Status`), with no code and no
/// wrapping: `Get "https://r/v2/": Bad Gateway`.
static REASON_PHRASE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[A-Z][a-z]+(?:[A-Z][a-z]+)*(?: [A-Z][a-z]+)*$"));

/// A dial (`dial tcp A:P`, Docker Desktop's `connecting to A:P`) to an address other than the
/// request's. Go's transport dials `cm.addr()`, the proxy's address when a proxy is set
/// (net/http transport.go, `dialConn`), so the address in the error is the one it dialled.
static DIALED: LazyLock<Regex> = LazyLock::new(|| {
    re(r"(?:dial tcp|connecting to) (\[[0-9A-Fa-f:]+\]|[A-Za-z0-9.-]+):(\d+)(?::|\s|$)")
});
/// Docker Desktop's own HTTP proxy, which its engine and containerd use
/// (docs.docker.com, Desktop networking: `http.docker.internal:3128`).
const DESKTOP_PROXY_HOSTS: [&str; 1] = ["http.docker.internal"];

/// A proxy named only by its address: the runtime asked for a registry that is not on this
/// machine, yet dialled a loopback port other than the registry's (a local proxy such as
/// `127.0.0.1:7890`, a SOCKS port), or Docker Desktop's proxy host. The text need not say
/// "proxy": the address is what gives it away. `dial tcp [::1]:443` for a registry whose name
/// resolved to loopback is the registry's port, and stays the registry's.
pub(super) fn unnamed_proxy(chain: &Chain) -> Option<String> {
    // Cheap words first: most texts name no loopback address and no Desktop proxy at all.
    if !["127.", "[::1]", "localhost", "docker.internal"]
        .iter()
        .any(|m| chain.text.contains(m))
    {
        return None;
    }
    let request = chain.innermost_request()?;
    let (host, port) = match request.host.rsplit_once(':') {
        Some((h, p))
            if p.bytes().all(|b| b.is_ascii_digit())
                && (!h.starts_with('[') || h.ends_with(']')) =>
        {
            (h, p)
        }
        _ => (
            request.host.as_str(),
            if request.url.starts_with("http://") {
                "80"
            } else {
                "443"
            },
        ),
    };
    if is_loopback(host) {
        return None;
    }
    let dialled = DIALED.captures_iter(&chain.text).find_map(|c| {
        let (addr, dial_port) = (c[1].to_ascii_lowercase(), &c[2]);
        let proxy = DESKTOP_PROXY_HOSTS.contains(&addr.as_str())
            || (is_loopback(&addr) && dial_port != port);
        proxy.then(|| format!("{addr}:{dial_port}"))
    });
    dialled.or_else(|| {
        chain.cause_links().iter().find_map(|l| {
            let name = LOOKUP.captures(l)?.get(1)?.as_str().to_ascii_lowercase();
            DESKTOP_PROXY_HOSTS.contains(&name.as_str()).then_some(name)
        })
    })
}

fn is_loopback(host: &str) -> bool {
    host.starts_with("127.") || host == "[::1]" || host.eq_ignore_ascii_case("localhost")
}

/// The proxy itself failed: its dial, its authentication, its policy page.
const PROXY_WORDS: [&str; 3] = [
    "Proxy Authentication Required",
    " 407 ",
    "error connecting to proxy",
];
/// An answer that names the proxy or TLS-inspecting middlebox that made it (its block page, or
/// the interception CA Go names as the candidate authority): the middlebox, not the registry.
const MIDDLEBOX_WORDS: [&str; 10] = [
    "Zscaler",
    "zscaler",
    "Squid",
    "squid/",
    "Blue Coat",
    "BlueCoat",
    "FortiGuard",
    "Fortinet",
    "Forcepoint",
    "Netskope",
];
const DNS_WORDS: [&str; 7] = [
    "no such host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "server misbehaving",
    "Could not resolve host",
    "could not resolve host",
    "nodename nor servname",
];
const TLS_WORDS: [&str; 7] = [
    "x509:",
    "tls:",
    "TLS handshake",
    "certificate",
    "server gave HTTP response to HTTPS client",
    "first record does not look like a TLS handshake",
    "\\x15\\x03",
];
/// Windows spells the socket errors in its own words: Go's `syscall.Errno.Error` on Windows asks
/// `FormatMessage` (go/src/syscall/syscall_windows.go), so `connectex:` and `wsarecv:` carry the
/// system's message for WSAETIMEDOUT (10060), WSAECONNREFUSED (10061), WSAECONNRESET (10054).
const ROUTE_WORDS: [&str; 10] = [
    "i/o timeout",
    "network is unreachable",
    "no route to host",
    "host is unreachable",
    "Client.Timeout exceeded",
    "request canceled while waiting for connection",
    "connection timed out",
    "awaiting headers",
    "cannot assign requested address",
    "did not properly respond after a period of time",
];
const REFUSED_WORDS: [&str; 8] = [
    "connection refused",
    "actively refused it",
    "forcibly closed by the remote host",
    "connection reset by peer",
    "broken pipe",
    "server closed",
    "unexpected EOF",
    "GOAWAY",
];
const RATELIMIT_WORDS: [&str; 7] = [
    "toomanyrequests",
    "too many requests to registry",
    "Too Many Requests",
    "rate limit",
    "Rate exceeded",
    "pull rate limit",
    "pull QPS exceeded",
];
const PLATFORM_WORDS: [&str; 11] = [
    "no match for platform",
    "no match for current platform",
    "no matching manifest for",
    "no image found in manifest list",
    "no image found in image index",
    "does not match the specified platform",
    "image with reference",
    "no manifest for platform",
    "cannot be used on this platform",
    "exec format error",
    "exec user process caused: exec format",
];
/// The download finished but what arrived is not what the manifest promised.
const INTEGRITY_WORDS: [&str; 6] = [
    "Digest did not match",
    "digest mismatch",
    "unexpected commit digest",
    "failed size validation",
    "layer verification failed",
    "filesystem layer verification failed",
];
/// On the node, before a request or after the download: unpacking, snapshots, disk, the
/// kubelet's pull secrets and credential provider plugins, signature policy, the reference
/// itself. A "not found" or "unauthorized" here is the node's own store, secret or plugin.
pub(super) const NODE_WORDS: &[&str] = &[
    "failed to extract layer",
    // containers/image storage/storage_dest.go commits a downloaded, verified layer, and
    // containers/storage unpacks it.
    "adding layer with blob",
    "processing tar file",
    "error unpacking image",
    "failed to resolve rootfs",
    // CRI-O's short-name policy (containers/image pkg/shortnames): registries.conf decides.
    "did not resolve to an alias",
    "short-name resolution enforced",
    "ErrImageNeverPull",
    "failed to unpack image on snapshotter",
    "failed to prepare extraction snapshot",
    "content store",
    // containerd's local content store, for an ingest it no longer holds
    // (core/content/local/store.go: `ingest ref %q: not found`): the node's store, not the
    // registry's 404.
    "ingest ref ",
    "no space left on device",
    "failed to mount",
    "failed to register layer",
    "Unable to retrieve pull secret",
    "Source image rejected",
    "A signature was required",
    "signature verification failed",
    "trying and failing to pull image",
    "credential provider",
    "credential-provider",
    "CredentialProvider",
    "error getting credentials",
    "docker-credential-",
    "invalid reference format",
    "InvalidImageName",
    "repository name must be lowercase",
    "couldn't parse image reference",
    "failed to parse image reference",
    // The node's containers/image configuration itself (registries.conf, policy.json), and its
    // digest check of a manifest already read (image/unparsed.go): no request failed.
    "registries configuration",
    "invalid policy in",
    "Manifest does not match provided manifest digest",
];
const AUTH_WORDS: [&str; 8] = [
    "unauthorized",
    "authentication required",
    "no basic auth credentials",
    "incorrect username or password",
    "UNAUTHORIZED",
    "invalid username/password",
    "authorization token has expired",
    "Not Authorized",
];
const FORBIDDEN_WORDS: [&str; 6] = [
    "insufficient_scope",
    "forbidden",
    "Forbidden",
    "\"denied\"",
    "DENIED",
    "is not authorized to perform",
];
const NOTFOUND_WORDS: [&str; 7] = [
    "manifest unknown",
    "name unknown",
    "blob unknown",
    "unknown blob",
    "not found",
    "NAME_UNKNOWN",
    "MANIFEST_UNKNOWN",
];

/// The mechanism of the innermost cause, in the order a pull meets them.
pub(super) fn mechanism(chain: &Chain, cause: &str) -> (Layer, Option<Ambiguity>) {
    let text = chain.text.as_str();
    let any = |needles: &[&str], hay: &str| needles.iter().any(|n| hay.contains(n));

    // The proxy itself.
    if chain.has_link(&["proxyconnect tcp"])
        || any(&PROXY_WORDS, text)
        || any(&MIDDLEBOX_WORDS, cause)
        || unnamed_proxy(chain).is_some()
    {
        return (Layer::Proxy, None);
    }
    // On the node, with no request made: the node's words decide, whatever they wrap (an
    // unpack that finds no manifest for the node's platform is still the platform).
    if chain.requests.is_empty() && any(NODE_WORDS, text) && !any(&PLATFORM_WORDS, text) {
        return (Layer::Other, None);
    }
    // DNS: a lookup clause decides, whatever failed inside it (timeout, refused, SERVFAIL).
    let lookup = chain
        .cause_links()
        .iter()
        .any(|l| LOOKUP.is_match(l) || l.starts_with("resolving host"));
    if lookup || any(&DNS_WORDS, cause) {
        return (Layer::Dns, None);
    }
    // TLS, before timeouts: "TLS handshake timeout" is a handshake that did not finish.
    if any(&TLS_WORDS, cause) {
        return (Layer::Tls, None);
    }
    // The connection. Go prints these in lowercase; a paste through a translator or a
    // word processor may not (`dial TCP …: I/O timeout`).
    let lowercase_cause = cause.to_ascii_lowercase();
    if any(&ROUTE_WORDS, cause)
        || any(&["i/o timeout", "no route to host"], &lowercase_cause)
        || (cause.contains("context deadline exceeded") && chain.innermost_request().is_some())
    {
        return (Layer::Route, None);
    }
    if any(&REFUSED_WORDS, cause)
        || chain
            .cause_links()
            .last()
            .is_some_and(|l| l == "EOF" || l.ends_with(" EOF") || l.ends_with(": EOF"))
    {
        return (Layer::Refused, is_bare_eof(chain).then(bare_eof_ambiguity));
    }
    // A request answered by nothing but a reason phrase: the proxy refused CONNECT.
    if let Some(r) = chain.innermost_request()
        && chain.links.len() == r.link + 2
        && chain
            .links
            .last()
            .is_some_and(|l| l != "EOF" && REASON_PHRASE.is_match(l))
    {
        return (Layer::Proxy, Some(connect_refused_ambiguity()));
    }
    // What the registry answered: its error codes, then the HTTP status.
    if any(&RATELIMIT_WORDS, text) {
        return (Layer::RateLimit, None);
    }
    if any(&PLATFORM_WORDS, text) {
        return (Layer::Platform, None);
    }
    if any(&INTEGRITY_WORDS, text) || any(NODE_WORDS, text) {
        return (Layer::Other, None);
    }
    // A network rule of the registry refused the node's address: the registry says so
    // outright, so its "denied" has one meaning.
    if super::network_rule::refused_client(text).is_some() {
        return (Layer::Forbidden, None);
    }
    if text.contains("pull access denied")
        || text.contains("repository does not exist or may require")
        || text.contains("access to the resource is denied")
        || text.contains("denied: ")
        || is_bare_denied(chain)
    {
        return denied(chain, cause);
    }
    let status = status_code(cause).or_else(|| status_code(text));
    if let Some(status) = status {
        // The same reading of a status as the probe's.
        return (Layer::from_http_status(status), None);
    }
    if any(&AUTH_WORDS, text) {
        return (Layer::Auth, None);
    }
    if any(&FORBIDDEN_WORDS, text) {
        return (Layer::Forbidden, None);
    }
    if any(&NOTFOUND_WORDS, text) {
        return (Layer::NotFound, None);
    }
    // containerd handles 401 and 404 on HEAD itself: what reaches "unexpected status" without a
    // code was most likely a 403, but the code is cut off.
    if text.contains("unexpected status from HEAD request") {
        return (
            Layer::Forbidden,
            Some(Ambiguity {
                candidates: vec![
                    (
                        Layer::Forbidden,
                        "403: the identity or a network rule of the registry refuses the node",
                    ),
                    (Layer::RateLimit, "429: the registry's pull limit"),
                    (Layer::Other, "5xx: the registry failed"),
                ],
                decides: "the status code, which the text cuts off: the runtime's log, or a probe from the node",
            }),
        );
    }
    (Layer::Other, None)
}

/// `unexpected EOF` (or `EOF`) and nothing around it: no request, no operation. Most often the
/// last line of a pull whose layer body was cut, but the text cannot say which request it was.
pub(super) fn is_bare_eof(chain: &Chain) -> bool {
    chain.requests.is_empty()
        && chain.links.len() <= 2
        && chain
            .links
            .last()
            .is_some_and(|l| l == "unexpected EOF" || l == "EOF")
}

#[cfg(test)]
mod tests {
    use super::super::{classify, one};
    use super::*;
    use crate::vocab::{Hop, Runtime};

    fn verdict(text: &str) -> (Layer, Hop, Option<String>) {
        let d = classify(&one(text), Runtime::Unknown);
        (d.layer, d.hop, d.host)
    }

    #[test]
    fn a_proxy_named_only_by_its_loopback_address_is_the_proxy() {
        // docker/for-win#13994: Docker Desktop relays to the user's proxy on 127.0.0.1:1081.
        assert_eq!(
            verdict(
                r#"Error response from daemon: Get "https://registry-1.docker.io/v2/": writing response to registry-1.docker.io:443: connecting to 127.0.0.1:1081: dial tcp 127.0.0.1:1081: connectex: No connection could be made because the target machine actively refused it."#
            ),
            (Layer::Proxy, Hop::Proxy, Some("127.0.0.1:1081".into()))
        );
        assert_eq!(
            verdict(
                r#"Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup http.docker.internal on 192.168.65.7:53: no such host"#
            ),
            (
                Layer::Proxy,
                Hop::Proxy,
                Some("http.docker.internal".into())
            )
        );
    }

    #[test]
    fn a_loopback_dial_on_the_registrys_own_port_stays_the_registrys() {
        // docker/for-mac#1556: the registry's name resolved to loopback.
        assert_eq!(
            verdict("Get https://registry-1.docker.io/v2/: dial tcp [::1]:443: getsockopt: connection refused").0,
            Layer::Refused
        );
        // containers/buildah#5270: the registry is localhost.
        assert_eq!(
            verdict(
                r#"Error: initializing source docker://localhost/x:1: pinging container registry localhost: Get "https://localhost/v2/": dial tcp [::1]:443: connect: connection refused"#
            )
            .0,
            Layer::Refused
        );
        // docker-archive/docker-registry#1006: a registry on localhost:5000.
        assert_eq!(
            verdict("FATA[0000] Error: v1 ping attempt failed with error: Get http://localhost:5000/v1/_ping: dial tcp 127.0.0.1:5000: connection refused").0,
            Layer::Refused
        );
    }

    #[test]
    fn windows_socket_messages_are_read_as_the_errors_they_are() {
        // moby/moby#37127, wrapped by PowerShell inside the sentence.
        assert_eq!(
            verdict(
                "docker : Error response from daemon: Get https://registry-1.docker.io/v2/: dial tcp 35.169.231.249:443: connectex: No connection could be made because the target \nmachine actively refused it."
            )
            .0,
            Layer::Refused
        );
        assert_eq!(
            verdict(
                r#"failed to do request: Get "https://mcr.microsoft.com/v2/windows/servercore/blobs/sha256:44": dial tcp 204.79.197.219:443: connectex: A connection attempt failed because the connected party did not properly respond after a period of time, or established connection failed because connected host has failed to respond."#
            ),
            (Layer::Blob, Hop::Blob, Some("mcr.microsoft.com".into()))
        );
    }

    #[test]
    fn an_ingest_the_local_store_lost_is_the_node_not_the_registry() {
        // containerd core/content/local/store.go: `ingest ref %q: not found`.
        let (layer, hop, _) = verdict(
            r#"failed to pull and unpack image "docker.io/library/nginx:latest": failed commit on ref "layer-sha256:abc": failed to commit: ingest ref "layer-sha256:abc": not found"#,
        );
        assert_eq!((layer, hop), (Layer::Other, Hop::Unknown));
    }
}
