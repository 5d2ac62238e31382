//! An error chain → a diagnosis: which hop (from the operation and URL) and which layer (from
//! the innermost cause).
//!
//! The hop comes from the outer links and the failing request: `failed to copy`,
//! `httpReadSeeker`, a `/blobs/` path or a storage host is the blob hop; `failed to fetch …
//! token` or a realm URL is the auth hop. The layer comes from the cause of the innermost
//! request, read in the runtime's order: a `lookup NAME on SERVER` clause makes it DNS whatever
//! failed inside the lookup; then TLS, the connection, and only then what the server answered.
//!
//! Each job has its module: `named` (what a message names outright: the HTTP status, the
//! image's registry), `runtime` (which runtime wrote the text), `hop`, `layer` (the
//! mechanism of the innermost cause) and its `denied` sub-classifier, `host` (which host
//! failed), `cause` (the innermost cause cleaned for the report) and `prose` (the sentences a
//! diagnosis carries); this file puts their answers together.

mod named;
mod prose;
mod runtime;
mod cause;
mod denied;
mod network_rule;
mod layer;
mod node;
mod host;
mod hop;

use regex::Regex;

use super::chain::Chain;
use crate::advice::RefusedClient;
use crate::vocab::{Hop, Layer, NodeCause, Runtime};

use cause::innermost_cause;
use hop::hop;
use host::failing_host;
use layer::mechanism;
use named::registry_of;
use network_rule::refused_client;
use node::node_cause;
use prose::backoff_ambiguity;
pub use runtime::runtime;

/// What one attempt's text says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub layer: Layer,
    /// For layer `blob`: how the blob hop failed (dns, route, refused, tls, a status → other …).
    pub mechanism: Option<Layer>,
    pub hop: Hop,
    /// What in the text decided the hop (a token URL, a `/blobs/` path, a proxy's words …).
    pub hop_by: &'static str,
    /// The failing host (`host[:port]`), or the image's registry when the text names no URL.
    pub host: Option<String>,
    pub url: Option<String>,
    pub runtime: Runtime,
    pub image: Option<String>,
    /// The innermost cause, as the runtime wrote it.
    pub cause: String,
    /// When the text cannot decide: the other layers it may be, and what decides.
    pub ambiguity: Option<Ambiguity>,
    /// Whether this text carries a cause at all (a bare back-off line does not).
    pub causal: bool,
    /// Whether the text speaks of an image pull at all.
    pub about_a_pull: bool,
    /// Whether the runtime presented a credential, when its words say so.
    pub credential: Option<Credential>,
    /// The node's own failure, when the text names one (`layer` then says where it stopped:
    /// `other`, `ratelimit` for the kubelet's limit, `blob` for a transfer cut short).
    pub node_cause: Option<NodeCause>,
    /// The registry's network rules refused the node by its address (layer `forbidden`).
    pub refused_client: Option<RefusedClient>,
}

/// What the runtime's words say about the credential it presented. containerd names the token
/// request it made (core/remotes/docker/authorizer.go): with a secret from the kubelet it POSTs
/// for an OAuth token (`failed to fetch oauth token`), without one it GETs an anonymous token
/// (`failed to fetch anonymous token`); a Basic challenge with no secret fails as
/// `no basic auth credentials`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credential {
    /// The kubelet passed no credential for this host, so the runtime asked anonymously.
    NotSent,
    /// The runtime presented a credential; the answer shown is what it got for it.
    Sent,
}

/// The text fits more than one layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ambiguity {
    pub candidates: Vec<(Layer, &'static str)>,
    pub decides: &'static str,
}

fn re(pattern: &str) -> Regex {
    Regex::new(pattern).expect("static regex")
}

/// Classify one attempt of a message the `runtime` wrote (named once per message, from the
/// whole text: log prefixes such as `dockerd[123]:` name it).
pub fn classify(chain: &Chain, runtime: Runtime) -> Diagnosis {
    let request = chain.innermost_request();
    let cause_links = chain.cause_links();
    let cause_text = cause_links.join(": ");
    let bare_backoff = is_bare_backoff(&chain.text);
    let (mut mechanism, mut ambiguity) = if bare_backoff {
        (Layer::Other, Some(backoff_ambiguity()))
    } else {
        mechanism(chain, &cause_text)
    };
    let node = node_cause(chain, mechanism).filter(|_| !bare_backoff);
    if let Some(reading) = &node {
        mechanism = reading.mechanism.unwrap_or(mechanism);
        ambiguity = ambiguity.or_else(|| reading.ambiguity.clone());
    }
    let refused = (mechanism == Layer::Forbidden)
        .then(|| refused_client(&chain.text))
        .flatten();
    let (hop, hop_by) = hop(chain, request, mechanism);
    let (layer, _) = hop.layer_of(mechanism);
    let host = failing_host(chain, runtime, request, cause_links, hop, mechanism);
    let about_a_pull = about_a_pull(chain);
    // Only where the answer concerned the credential: a token host that cannot be reached says
    // nothing about what was sent.
    let credential = credential(chain).filter(|_| {
        matches!(layer, Layer::Auth | Layer::Forbidden)
            || ambiguity
                .as_ref()
                .is_some_and(|a| a.candidates.iter().any(|(l, _)| *l == Layer::Auth))
    });
    Diagnosis {
        layer,
        mechanism: (layer == Layer::Blob).then_some(mechanism),
        hop,
        hop_by,
        host,
        url: request.map(|r| r.url.clone()),
        runtime,
        image: chain.image.clone(),
        cause: innermost_cause(chain, cause_links),
        ambiguity,
        causal: !bare_backoff && about_a_pull,
        about_a_pull,
        credential,
        node_cause: node.map(|n| n.cause),
        refused_client: refused,
    }
}

impl Diagnosis {
    /// The host the kubelet chooses credentials for: the image's registry (credentials are
    /// matched by registry, never by the token realm's host), else the failing host.
    pub fn credential_host(&self) -> String {
        self.image
            .as_deref()
            .and_then(registry_of)
            .or_else(|| self.host.clone())
            .unwrap_or_else(|| "the registry".into())
    }
}

/// Words only image pulls, registries and runtimes use.
fn about_a_pull(chain: &Chain) -> bool {
    const MARKERS: [&str; 14] = [
        "image",
        "Image",
        "registry",
        "manifest",
        "layer",
        "blob",
        "pull",
        "Pull",
        "rpc error",
        "containerd",
        "daemon",
        "kubelet",
        // containers/image names the source as a transport reference, and its token step.
        "docker://",
        "auth token",
    ];
    !chain.requests.is_empty() || MARKERS.iter().any(|m| chain.text.contains(m))
}

fn credential(chain: &Chain) -> Option<Credential> {
    if chain.has_link(&[
        "failed to fetch anonymous token",
        "no basic auth credentials",
    ]) {
        Some(Credential::NotSent)
    } else if chain.has_link(&["failed to fetch oauth token"]) {
        Some(Credential::Sent)
    } else {
        None
    }
}

/// A back-off line without its cause. The kubelet from 1.32 on appends the cause
/// (`Back-off pulling image "X": ErrImagePull: <cause>`); before, and in the container status
/// (`ImagePullBackOff`, `ErrImagePull`), nothing follows.
pub(super) fn is_bare_backoff(text: &str) -> bool {
    const BACKOFF: &str = "Back-off pulling image";
    let tail = if let Some(at) = text.find(BACKOFF) {
        let rest = text[at + BACKOFF.len()..].trim_start();
        match rest.strip_prefix('"') {
            Some(quoted) => quoted.find('"').map_or("", |end| &quoted[end + 1..]),
            None => rest.split_once(' ').map_or("", |(_, after)| after),
        }
    } else {
        match ["ImagePullBackOff", "ErrImagePull"]
            .iter()
            .filter_map(|m| text.rfind(m).map(|at| at + m.len()))
            .max()
        {
            Some(end) => &text[end..],
            None => return false,
        }
    };
    let tail = tail.trim_start_matches([':', ' ', '.', '"']);
    let tail = tail
        .strip_prefix("ErrImagePull")
        .unwrap_or(tail)
        .trim_matches([':', ' ', '.', '"']);
    tail.is_empty() && !text.contains("rpc error") && !text.contains("Error response from daemon")
}

/// The first attempt of `text`, as the submodules' tests read it.
#[cfg(test)]
fn one(text: &str) -> Chain {
    super::chain::parse(text).remove(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_lines_are_bare_only_without_a_cause() {
        assert!(is_bare_backoff(r#"Back-off pulling image "x:1""#));
        assert!(is_bare_backoff(
            r#"ImagePullBackOff: Back-off pulling image "x:1""#
        ));
        assert!(is_bare_backoff("Error: ErrImagePull"));
        assert!(!is_bare_backoff(
            r#"Back-off pulling image "x:1": ErrImagePull: pull QPS exceeded"#
        ));
        assert!(!is_bare_backoff("Failed to pull image \"x:1\": not found"));
    }
}
