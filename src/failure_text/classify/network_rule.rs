//! A registry's network rules refusing the node by its address, as Azure Container Registry
//! words it (`denied: client with IP '52.174.10.20' is not allowed access. Refer
//! https://aka.ms/acr/firewall to grant access`; its public network access disabled; a data
//! endpoint answering the same): the address, read public or private as the probe reads a DNS
//! answer ([`crate::probe::observed::dns::is_private`]). What it means is
//! [`crate::advice::RefusedClient`]'s.

use std::net::IpAddr;
use std::sync::LazyLock;

use regex::Regex;

use super::re;
use crate::advice::{ACR_ADDRESS_REFUSAL, RefusedClient};
use crate::probe::observed::dns::is_private;

static CLIENT_IP: LazyLock<Regex> = LazyLock::new(|| {
    re(&format!(
        r"client with IP '?([0-9A-Fa-f.:]+?)'? {ACR_ADDRESS_REFUSAL}"
    ))
});

/// The refused client `text` names, when a registry's network rules refused it.
pub(super) fn refused_client(text: &str) -> Option<RefusedClient> {
    if let Some(c) = CLIENT_IP.captures(text) {
        let address = c[1].to_string();
        return Some(match address.parse::<IpAddr>() {
            Ok(ip) if is_private(ip) => RefusedClient::Private(address),
            _ => RefusedClient::Public(address),
        });
    }
    let lower = text.to_ascii_lowercase();
    (lower.contains("public network access is disabled")
        || lower.contains("aka.ms/acr/firewall")
        || lower.contains(ACR_ADDRESS_REFUSAL) && lower.contains("azurecr.io"))
    .then_some(RefusedClient::Unnamed)
}

#[cfg(test)]
mod tests {
    use super::super::{classify, one};
    use super::*;
    use crate::vocab::{Hop, Layer, Runtime};

    #[test]
    fn the_address_is_read_public_or_private() {
        assert_eq!(
            refused_client(
                "403 Forbidden: denied: client with IP '52.174.10.20' is not allowed access. Refer https://aka.ms/acr/firewall to grant access"
            ),
            Some(RefusedClient::Public("52.174.10.20".into()))
        );
        assert_eq!(
            refused_client("denied: client with IP '10.224.0.5' is not allowed access"),
            Some(RefusedClient::Private("10.224.0.5".into()))
        );
        assert_eq!(
            refused_client("denied: public network access is disabled for this registry"),
            Some(RefusedClient::Unnamed)
        );
        assert_eq!(
            refused_client("denied: requested access to the resource is denied"),
            None
        );
    }

    #[test]
    fn a_refusal_by_address_is_a_decided_forbidden_on_its_hop() {
        let login = classify(
            &one(
                r#"failed to resolve reference "contoso.azurecr.io/web:1": unexpected status from HEAD request to https://contoso.azurecr.io/v2/web/manifests/1: 403 Forbidden: denied: client with IP '52.174.10.20' is not allowed access. Refer https://aka.ms/acr/firewall to grant access"#,
            ),
            Runtime::Containerd,
        );
        assert_eq!((login.layer, login.hop), (Layer::Forbidden, Hop::Registry));
        assert!(login.ambiguity.is_none());
        assert_eq!(
            login.refused_client,
            Some(RefusedClient::Public("52.174.10.20".into()))
        );
        // Without the status the "denied" alone would be read three ways; the address settles it.
        let bare = classify(
            &one(
                "Error response from daemon: Head \"https://contoso.azurecr.io/v2/web/manifests/1\": denied: client with IP '20.1.2.3' is not allowed access",
            ),
            Runtime::Docker,
        );
        assert_eq!(
            (bare.layer, bare.ambiguity.is_none()),
            (Layer::Forbidden, true)
        );
        let data = classify(
            &one(
                r#"failed to copy: httpReadSeeker: failed open: unexpected status code https://contoso.westeurope.data.azurecr.io/v2/web/blobs/sha256:abc: 403 Forbidden: denied: client with IP '10.0.0.4' is not allowed access"#,
            ),
            Runtime::Containerd,
        );
        assert_eq!(
            (data.layer, data.mechanism, data.hop),
            (Layer::Blob, Some(Layer::Forbidden), Hop::Blob)
        );
        assert_eq!(
            data.refused_client,
            Some(RefusedClient::Private("10.0.0.4".into()))
        );
    }
}
