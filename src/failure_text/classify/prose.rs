//! The sentences a diagnosis carries: what a credential's presence means and how to check it,
//! and, where the text fits more than one layer, each meaning and what decides between them.

use super::{Ambiguity, Credential};
use crate::vocab::Layer;

impl Credential {
    /// The evidence, in words, for `host`.
    pub fn evidence(self, host: &str) -> String {
        match self {
            Credential::NotSent => format!(
                "the node sent no credential for {host} (the runtime asked for an anonymous token or found no basic-auth secret): the kubelet found no pull secret, node docker config or credential provider entry matching {host} exactly"
            ),
            Credential::Sent => format!(
                "the node sent a credential for {host} (the runtime's OAuth token request): if the answer is 401 that credential is wrong, expired or for another registry; if 403, it lacks the rights"
            ),
        }
    }

    /// The check that confirms it; `pod` names the pod for kubectl (`-n NAMESPACE NAME`, or
    /// `POD` where the input names none), `image` the image (or `IMAGE`).
    pub fn next_check(self, host: &str, pod: &str, image: &str) -> String {
        match self {
            Credential::NotSent => format!(
                "kubectl get pod {pod} -o jsonpath='{{.spec.imagePullSecrets}}'   # then the secret's .dockerconfigjson: one key must be {host}; or the credential provider's matchImages"
            ),
            Credential::Sent => format!(
                "pullpath probe {image} --docker-config SECRET.json   # the same credential against {host}: a 401 confirms it is wrong or expired"
            ),
        }
    }
}

pub(super) fn backoff_ambiguity() -> Ambiguity {
    Ambiguity {
        candidates: vec![
            (Layer::NotFound, "the image or tag does not exist"),
            (
                Layer::Auth,
                "the node has no valid credentials for the registry",
            ),
            (Layer::Dns, "the node cannot resolve the registry"),
            (Layer::Route, "the node cannot reach the registry"),
        ],
        decides: "the earlier `Failed to pull image` event or the runtime's log carries the cause; `kubectl describe pod` lists it above the back-off",
    }
}

/// The three meanings of a registry's "denied", `first` the most likely.
pub(super) fn denied_ambiguity(first: Layer) -> Ambiguity {
    let mut candidates = vec![
        (
            Layer::NotFound,
            "the repository does not exist (registries answer \"denied\" so as not to reveal which)",
        ),
        (
            Layer::Forbidden,
            "the identity may not read this repository (its token lacks the pull scope)",
        ),
        (
            Layer::Auth,
            "the node sent no valid credentials for this registry (an anonymous token has no scope on a private repository)",
        ),
    ];
    if let Some(at) = candidates.iter().position(|(l, _)| *l == first) {
        let chosen = candidates.remove(at);
        candidates.insert(0, chosen);
    }
    Ambiguity {
        candidates,
        decides: "a probe with the node's own identity: if the registry lists the repository's tags for that identity the tag is the problem; \
                  a token without the pull scope means missing rights; a repository missing for an admin means a wrong name",
    }
}

pub(super) fn bare_eof_ambiguity() -> Ambiguity {
    Ambiguity {
        candidates: vec![
            (
                Layer::Blob,
                "a download cut short: most bytes of a pull are layer bodies, and io.ErrUnexpectedEOF is a body that ended early",
            ),
            (
                Layer::Refused,
                "a connection to the registry closed before it answered",
            ),
        ],
        decides: "the lines before this one (which request was in flight: a layer download or the manifest), or a `pullpath probe --full` from the node",
    }
}

pub(super) fn connect_refused_ambiguity() -> Ambiguity {
    Ambiguity {
        candidates: vec![
            (
                Layer::Proxy,
                "an HTTP proxy answered CONNECT with this status: Go reports that as the bare reason phrase",
            ),
            (
                Layer::Other,
                "the registry itself answered with this status (runtimes then print the code too)",
            ),
        ],
        decides: "the runtime's proxy environment (HTTPS_PROXY in its service unit) and the proxy's log; `pullpath probe` from the node with the same proxy",
    }
}

/// `context deadline exceeded` with nothing inside it: the deadline of the call ran out while the
/// pull was running, and the text does not say what it was doing.
pub(super) fn deadline_ambiguity() -> Ambiguity {
    Ambiguity {
        candidates: vec![
            (
                Layer::Other,
                "the transfer was too slow for the deadline: a large image on a slow path, the runtime's progress timeout (containerd's image_pull_progress_timeout) or the kubelet's deadline on the CRI call",
            ),
            (
                Layer::Route,
                "the runtime was still dialling a registry or mirror that never answered (each dial waits 30 s before the next host)",
            ),
        ],
        decides: "the runtime's log on the node around the event's time (`journalctl -u containerd`): `cancel pulling image … because of no progress` or layer downloads in progress mean a slow transfer, a `dial tcp … i/o timeout` means the route; `pullpath probe IMAGE --full` from the node times every layer",
    }
}
