//! Which host failed, from every place a runtime names one (a URL, a lookup, a proxy, a dial, a
//! certificate, the image), so the report and the next check point at the right machine.

use std::sync::LazyLock;

use regex::Regex;

use super::layer::{LOOKUP, unnamed_proxy};
use super::named::registry_of;
use super::re;
use crate::failure_text::chain::{Chain, Request};
use crate::image_ref::named_registry;
use crate::vocab::{Hop, Layer, Runtime};

/// The proxy's own address: Go's transport wraps the dial to the proxy as `proxyconnect tcp`.
static PROXY_ADDRESS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:proxyconnect tcp|error connecting to proxy \S+): (?:dial tcp (\[[0-9a-fA-F:]+\]:\d+|[^\s:\[]+:\d+)|dial tcp: lookup ([^\s:]+))",
    )
});
/// Hosts the runtimes name without a URL: containerd 1.6 `pulling from host H failed with
/// status code`, containers/image `pinging container registry H`, Docker Desktop's dialer
/// `dialing H:443 with direct connection` (the default port is no part of the host's name), and
/// a `dial tcp H:443` by name (Go dials resolved addresses, but proxies and other clients name
/// the host; a name has a letter, so `dial tcp 10.0.0.1:443` names none), and the name Go's
/// x509 verification wanted (`certificate is valid for A, B, not H`).
static NAMED_HOST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:(?:pulling from host|pinging (?:container|docker) registry|dialing) ([A-Za-z0-9][A-Za-z0-9.-]*(?::\d+)?)|dial tcp ([A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z][A-Za-z0-9.-]*(?::\d+)?)|x509: certificate is (?:valid for [^\n]*?, not|not valid for any names, but wanted to match) ([A-Za-z0-9][A-Za-z0-9.-]*))(?::|\s|$)",
    )
});
/// The peer of a read or write on a connection already open (`read tcp LOCAL->PEER: …`): an
/// address, named only where nothing names the host (not even the image's registry).
static PEER_ADDRESS: LazyLock<Regex> =
    LazyLock::new(|| re(r"(?:read|write) tcp \S+->(\[[0-9A-Fa-f:]+\]:\d+|[0-9.]+:\d+)(?::|\s|$)"));
/// Docker Hub's rate-limit answer, in its own words (its body and documentation link).
const DOCKER_HUB_BODY: [&str; 2] = [
    "You have reached your pull rate limit",
    "docker.com/increase-rate-limit",
];

/// The failing host: the proxy when the proxy failed, the name a failed lookup asked for, the
/// request's host, a host the runtime named without a URL, else the image's registry.
pub(super) fn failing_host(
    chain: &Chain,
    runtime: Runtime,
    request: Option<&Request>,
    cause_links: &[String],
    hop: Hop,
    mechanism: Layer,
) -> Option<String> {
    let lookup_name = cause_links
        .iter()
        // A name as DNS compares it: lowercase, and `r.example.` (fully qualified) is `r.example`.
        .find_map(|l| {
            LOOKUP
                .captures(l)
                .map(|c| c[1].trim_end_matches('.').to_ascii_lowercase())
        });
    let proxy = (hop == Hop::Proxy)
        .then(|| PROXY_ADDRESS.captures(&chain.text))
        .flatten()
        .and_then(|c| {
            c.get(1)
                .or(c.get(2))
                .map(|m| m.as_str().to_ascii_lowercase())
        })
        .or_else(|| (hop == Hop::Proxy).then(|| unnamed_proxy(chain)).flatten());
    let named = || {
        NAMED_HOST.captures(&chain.text).and_then(|c| {
            let host = c
                .get(1)
                .or(c.get(2))
                .or(c.get(3))?
                .as_str()
                .to_ascii_lowercase();
            Some(without_https_port(host))
        })
    };
    // A lookup that failed names the host that failed, even where the request's URL names
    // another (a redacted paste, or a resolver asked for a name the URL does not show).
    proxy
        .or_else(|| lookup_name.clone().filter(|_| mechanism == Layer::Dns))
        .or_else(|| request.map(|r| r.host.clone()))
        .or(lookup_name)
        .or_else(named)
        .or_else(|| {
            let image = chain.image.as_deref()?;
            // CRI-O and podman resolve a short name through registries.conf's search list,
            // so a short name there implies no registry; containerd and Docker mean docker.io.
            // But containers/image's `docker://NAME` is NAME as its docker transport parsed it,
            // Docker's way (docker/docker_transport.go): after any short-name resolution.
            if runtime == Runtime::Crio && !chain.text.contains(&format!("docker://{image}")) {
                named_registry(image).map(str::to_ascii_lowercase)
            } else {
                registry_of(image)
            }
        })
        .or_else(|| {
            // Docker Hub's own answer names it even when the runtime printed no URL.
            DOCKER_HUB_BODY
                .iter()
                .any(|w| chain.text.contains(w))
                .then(|| "docker.io".to_string())
        })
        .or_else(|| {
            PEER_ADDRESS
                .captures(&chain.text)
                .map(|c| without_https_port(c[1].to_string()))
        })
}

/// The registry API is HTTPS: its default port is no part of the host's name.
fn without_https_port(host: String) -> String {
    match host.strip_suffix(":443") {
        Some(bare) => bare.to_string(),
        None => host,
    }
}

#[cfg(test)]
mod tests {
    use super::super::classify;
    use super::super::one;
    use super::*;

    #[test]
    fn the_proxy_address_is_the_failing_host() {
        let d = classify(
            &one(
                r#"Get "https://r.example/v2/": proxyconnect tcp: dial tcp [fd00::1]:3128: connect: connection refused"#,
            ),
            Runtime::Unknown,
        );
        assert_eq!(
            (d.layer, d.hop, d.host.as_deref()),
            (Layer::Proxy, Hop::Proxy, Some("[fd00::1]:3128"))
        );
    }
}
