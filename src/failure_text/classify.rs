//! An error chain → a diagnosis: which hop (from the operation and URL) and which layer (from
//! the innermost cause).
//!
//! The hop comes from the outer links and the failing request: `failed to copy`,
//! `httpReadSeeker`, a `/blobs/` path or a storage host is the blob hop; `failed to fetch …
//! token` or a realm URL is the auth hop. The layer comes from the cause of the innermost
//! request, read in the runtime's order: a `lookup NAME on SERVER` clause makes it DNS whatever
//! failed inside the lookup; then TLS, the connection, and only then what the server answered.

use std::sync::LazyLock;

use regex::Regex;

use super::chain::{Chain, Request};
use crate::vocab::{Hop, Layer, Runtime};

/// What one attempt's text says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnosis {
    pub layer: Layer,
    /// For layer `blob`: how the blob hop failed (dns, route, refused, tls, a status → other …).
    pub mechanism: Option<Layer>,
    pub hop: Hop,
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

static LOOKUP: LazyLock<Regex> = LazyLock::new(|| re(r"^lookup ([^\s]+?)(?: on ([^\s]+))?$"));
static STATUS: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?:^|[\s:\[])(4\d\d|5\d\d)(?: [A-Z][A-Za-z ]+| response body)|HTTP (?:status|code)[: ]+(\d{3})|status code[= ](\d{3})|HTTP (\d{3}) response",
    )
});
static STORAGE_HOST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(\.blob\.core\.windows\.net|\.data\.azurecr\.io|cloudflare|\.cdn\.|cdn\d*\.|^cdn|\.s3[.-]|s3\.amazonaws\.com|storage\.googleapis\.com|\.cloudfront\.net|prod-registry-k8s-io|\.r2\.cloudflarestorage|quay-registry\.s3|\.blob\.)",
    )
});

/// Classify one attempt of a message the `runtime` wrote (named once per message, from the
/// whole text: log prefixes such as `dockerd[123]:` name it).
pub fn classify(chain: &Chain, runtime: Runtime) -> Diagnosis {
    let request = chain.innermost_request();
    let cause_links = chain.cause_links();
    let cause_text = cause_links.join(": ");
    let (mechanism, ambiguity) = mechanism(chain, &cause_text);
    let hop = hop(chain, request, mechanism);
    let layer = match hop {
        Hop::Blob => Layer::Blob,
        Hop::Proxy => Layer::Proxy,
        _ => mechanism,
    };
    let lookup_name = cause_links
        .iter()
        .find_map(|l| LOOKUP.captures(l).map(|c| c[1].to_string()));
    let host = request
        .map(|r| r.host.clone())
        .or(lookup_name)
        .or_else(|| chain.image.as_deref().and_then(registry_of));
    let causal = !is_bare_backoff(&chain.text) && about_a_pull(chain);
    Diagnosis {
        layer,
        mechanism: (layer == Layer::Blob || layer == Layer::Proxy).then_some(mechanism),
        hop,
        host,
        url: request.map(|r| r.url.clone()),
        runtime,
        image: chain.image.clone(),
        cause: innermost_cause(chain, cause_links),
        ambiguity: if is_bare_backoff(&chain.text) {
            Some(backoff_ambiguity())
        } else {
            ambiguity
        },
        causal,
        about_a_pull: about_a_pull(chain),
    }
}

/// Words only image pulls, registries and runtimes use.
fn about_a_pull(chain: &Chain) -> bool {
    const MARKERS: [&str; 12] = [
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
    ];
    !chain.requests.is_empty() || MARKERS.iter().any(|m| chain.text.contains(m))
}

fn backoff_ambiguity() -> Ambiguity {
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

fn is_bare_backoff(text: &str) -> bool {
    (text.contains("Back-off pulling image")
        || text.contains("ImagePullBackOff")
        || text.trim_end().ends_with("ErrImagePull"))
        && !text.contains("rpc error")
        && !text.contains("Error response from daemon")
}

/// The image reference's registry (`nginx` → `docker.io`).
fn registry_of(image: &str) -> Option<String> {
    let first = image.split('/').next()?;
    if image.contains('/') && (first.contains(['.', ':']) || first == "localhost") {
        Some(first.to_ascii_lowercase())
    } else if image.contains('*') {
        None
    } else {
        Some("docker.io".into())
    }
}

pub fn runtime(text: &str) -> Runtime {
    const CONTAINERD: [&str; 10] = [
        "failed to pull and unpack image",
        "failed to resolve reference",
        "failed to resolve image",
        "unexpected status from HEAD request",
        "httpReadSeeker",
        "httpReaderSeeker",
        "failed to copy:",
        "failed to extract layer",
        "no match for current platform",
        "ctr: ",
    ];
    const CRIO: [&str; 11] = [
        "pinging container registry",
        "error pinging docker registry",
        "Error reading manifest",
        "Error choosing image instance",
        "Error determining manifest MIME type",
        "Error writing blob",
        "writing blob",
        "reading blob",
        "reading manifest",
        "initializing source docker://",
        "crio",
    ];
    const DOCKER: [&str; 7] = [
        "Error response from daemon",
        "error pulling image configuration",
        "Error while pulling image",
        "dockerd",
        "docker: Error",
        "Docker API",
        "DockerApiException",
    ];
    if DOCKER.iter().any(|m| text.contains(m)) {
        Runtime::Docker
    } else if CRIO.iter().any(|m| text.contains(m)) {
        Runtime::Crio
    } else if CONTAINERD.iter().any(|m| text.contains(m)) || text.contains("no match for platform")
    {
        Runtime::Containerd
    } else {
        Runtime::Unknown
    }
}

fn hop(chain: &Chain, request: Option<&Request>, mechanism: Layer) -> Hop {
    let text = &chain.text;
    if mechanism == Layer::Proxy {
        return Hop::Proxy;
    }
    // Blob: the runtime's copy/read-seeker context, the config download, or the request itself.
    let blob_context = chain.has_link(&[
        "failed to copy",
        "httpReadSeeker",
        "httpReaderSeeker",
        "error pulling image configuration",
        "download failed after attempts",
        "Error writing blob",
        "writing blob",
        "storing blob",
        "error reading blob",
        "reading blob",
        "failed to fetch blob",
        "failed commit on ref",
        "unexpected commit digest",
        "layer verification failed",
        "short read",
    ]);
    let blob_request =
        request.is_some_and(|r| r.path.contains("/blobs/") || STORAGE_HOST.is_match(&r.host));
    if blob_context || blob_request {
        return Hop::Blob;
    }
    let auth_context = chain.has_link(&[
        "failed to fetch oauth token",
        "failed to fetch anonymous token",
        "fetching token",
        "GetAuthorizationToken",
    ]);
    let auth_request = request.is_some_and(|r| {
        r.path.ends_with("/token")
            || r.path.contains("/oauth2/token")
            || r.path.contains("/service/token")
            || r.host.starts_with("auth.")
            || r.host.starts_with("api.ecr.")
    });
    if auth_context || auth_request {
        return Hop::Auth;
    }
    let registry_signal = request.is_some()
        || mechanism != Layer::Other
        || STATUS.is_match(text)
        || [
            "Error response from daemon",
            "failed to resolve reference",
            "manifest",
            "registry",
            "pull access denied",
        ]
        .iter()
        .any(|m| text.contains(m));
    // Local failures (disk, unpack, the runtime's own socket) name no request.
    let local = [
        "no space left on device",
        "failed to extract layer",
        "failed to connect: ",
        "code = 4 desc",
        "code = DeadlineExceeded desc = context deadline exceeded",
    ]
    .iter()
    .any(|m| text.contains(m));
    if registry_signal && !local && !is_bare_backoff(text) {
        Hop::Registry
    } else {
        Hop::Unknown
    }
}

/// The mechanism of the innermost cause, in the order a pull meets them.
fn mechanism(chain: &Chain, cause: &str) -> (Layer, Option<Ambiguity>) {
    let text = chain.text.as_str();
    let any = |needles: &[&str], hay: &str| needles.iter().any(|n| hay.contains(n));

    // The proxy itself.
    if chain.has_link(&["proxyconnect tcp"])
        || any(&["Proxy Authentication Required", " 407 "], text)
    {
        return (Layer::Proxy, None);
    }
    // DNS: a lookup clause decides, whatever failed inside it (timeout, refused, SERVFAIL).
    let lookup = chain
        .cause_links()
        .iter()
        .any(|l| LOOKUP.is_match(l) || l.starts_with("resolving host"));
    if lookup
        || any(
            &[
                "no such host",
                "Temporary failure in name resolution",
                "Name or service not known",
                "server misbehaving",
                "Could not resolve host",
                "could not resolve host",
                "nodename nor servname",
            ],
            cause,
        )
    {
        return (Layer::Dns, None);
    }
    // TLS, before timeouts: "TLS handshake timeout" is a handshake that did not finish.
    if any(
        &[
            "x509:",
            "tls:",
            "TLS handshake",
            "certificate",
            "server gave HTTP response to HTTPS client",
            "first record does not look like a TLS handshake",
            "\\x15\\x03",
        ],
        cause,
    ) {
        return (Layer::Tls, None);
    }
    // The connection.
    if any(
        &[
            "i/o timeout",
            "network is unreachable",
            "no route to host",
            "host is unreachable",
            "Client.Timeout exceeded",
            "request canceled while waiting for connection",
            "connection timed out",
            "awaiting headers",
            "cannot assign requested address",
        ],
        cause,
    ) || (cause.contains("context deadline exceeded") && chain.innermost_request().is_some())
    {
        return (Layer::Route, None);
    }
    if any(
        &[
            "connection refused",
            "connection reset by peer",
            "broken pipe",
            "server closed",
            "unexpected EOF",
            "GOAWAY",
        ],
        cause,
    ) || chain
        .cause_links()
        .last()
        .is_some_and(|l| l == "EOF" || l.ends_with(" EOF") || l.ends_with(": EOF"))
    {
        return (Layer::Refused, None);
    }
    // What the registry answered: its error codes, then the HTTP status.
    if any(
        &[
            "toomanyrequests",
            "Too Many Requests",
            "rate limit",
            "Rate exceeded",
            "pull rate limit",
        ],
        text,
    ) {
        return (Layer::RateLimit, None);
    }
    if any(
        &[
            "no match for platform",
            "no match for current platform",
            "no matching manifest for",
            "no image found in manifest list",
            "does not match the specified platform",
            "image with reference",
            "no manifest for platform",
            "cannot be used on this platform",
        ],
        text,
    ) {
        return (Layer::Platform, None);
    }
    // Unpacking on the node: the download is done; "not found" here is the node's own store.
    if any(
        &[
            "failed to extract layer",
            "failed to unpack image on snapshotter",
            "content store",
            "no space left on device",
            "failed to mount",
        ],
        text,
    ) {
        return (Layer::Other, None);
    }
    if text.contains("pull access denied")
        || text.contains("repository does not exist or may require")
        || text.contains("access to the resource is denied")
        || text.contains("denied: ")
    {
        // Docker Hub answers insufficient_scope for a repository that does not exist, so there
        // the scope error says nothing about rights; elsewhere it means the token lacked them.
        let docker_hub = chain
            .image
            .as_deref()
            .and_then(registry_of)
            .is_none_or(|r| r == "docker.io")
            && chain.requests.iter().all(|r| r.host.ends_with("docker.io"));
        let scope = text.contains("insufficient_scope") && !docker_hub;
        return (
            if scope {
                Layer::Forbidden
            } else {
                Layer::NotFound
            },
            Some(denied_ambiguity(scope)),
        );
    }
    let status = status_code(cause).or_else(|| status_code(text));
    match status {
        Some(401) => return (Layer::Auth, None),
        Some(403) => return (Layer::Forbidden, None),
        Some(404) => return (Layer::NotFound, None),
        Some(429) => return (Layer::RateLimit, None),
        Some(407) => return (Layer::Proxy, None),
        Some(_) => return (Layer::Other, None),
        None => {}
    }
    if any(
        &[
            "unauthorized",
            "authentication required",
            "no basic auth credentials",
            "incorrect username or password",
            "UNAUTHORIZED",
            "invalid username/password",
        ],
        text,
    ) {
        return (Layer::Auth, None);
    }
    if any(
        &[
            "insufficient_scope",
            "forbidden",
            "Forbidden",
            "\"denied\"",
            "DENIED",
        ],
        text,
    ) {
        return (Layer::Forbidden, None);
    }
    if any(
        &[
            "manifest unknown",
            "name unknown",
            "blob unknown",
            "not found",
            "NAME_UNKNOWN",
            "MANIFEST_UNKNOWN",
        ],
        text,
    ) {
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

fn denied_ambiguity(scope: bool) -> Ambiguity {
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
            "the node sent no valid credentials for this registry",
        ),
    ];
    if scope {
        candidates.swap(0, 1);
    }
    Ambiguity {
        candidates,
        decides: "a probe with the node's own identity: if the registry lists the repository's tags for that identity the tag is the problem; \
                  a token without the pull scope means missing rights; a repository missing for an admin means a wrong name",
    }
}

fn status_code(text: &str) -> Option<u16> {
    STATUS.captures_iter(text).find_map(|c| {
        (1..=4)
            .find_map(|i| c.get(i))
            .and_then(|m| m.as_str().parse().ok())
    })
}

/// Links that only wrap the cause: the kubelet's and the runtime's outer context.
const WRAPPERS: [&str; 14] = [
    "Failed to pull image",
    "failed to pull image",
    "rpc error",
    "code = ",
    "failed to pull and unpack image",
    "failed to resolve reference",
    "failed to resolve image",
    "Error response from daemon",
    "Error while pulling image",
    "pulling image",
    "ErrImagePull",
    "level=",
    "initializing source",
    "reading manifest",
];

/// The innermost cause in the runtime's words, with the lookup or dial that frames it.
fn innermost_cause(chain: &Chain, cause_links: &[String]) -> String {
    let framed: Vec<&str> = cause_links
        .iter()
        .map(String::as_str)
        .filter(|l| !l.is_empty())
        .skip_while(|l| {
            chain.innermost_request().is_none()
                && (*l == "Error" || WRAPPERS.iter().any(|w| l.contains(w)))
        })
        .collect();
    let text = if framed.is_empty() {
        chain.text.trim()
    } else {
        &framed.join(": ")
    };
    let text = text.trim_end_matches(['"', ']', '.']);
    let mut out: String = text.chars().take(400).collect();
    if text.chars().count() > 400 {
        out.push('…');
    }
    out
}
