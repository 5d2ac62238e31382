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
use crate::image_ref::named_registry;
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
    /// Whether the runtime presented a credential, when its words say so.
    pub credential: Option<Credential>,
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

    /// The check that confirms it.
    pub fn next_check(self, host: &str) -> String {
        match self {
            Credential::NotSent => format!(
                "kubectl get pod POD -o jsonpath='{{.spec.imagePullSecrets}}'   # then the secret's .dockerconfigjson: one key must be {host}; or the credential provider's matchImages"
            ),
            Credential::Sent => format!(
                "pullpath probe IMAGE --docker-config SECRET.json   # the same credential against {host}: a 401 confirms it is wrong or expired"
            ),
        }
    }
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
        r"(?:^|[\s:\[])(4\d\d|5\d\d)(?: [A-Z][A-Za-z ]+| response body| \()|HTTP (?:status|code)[: ]+(\d{3})|status code[= ](\d{3})|HTTP (\d{3}) response|(?:http code|StatusCode): (\d{3})|Status (\d{3}) trying to pull",
    )
});
static STORAGE_HOST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(\.blob\.core\.windows\.net|\.data\.azurecr\.io|cloudflare|\.cdn\.|cdn\d*\.|^cdn|\.s3[.-]|s3\.amazonaws\.com|storage\.googleapis\.com|\.cloudfront\.net|prod-registry-k8s-io|\.r2\.cloudflarestorage|quay-registry\.s3|\.blob\.)",
    )
});
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
/// containerd's ingest reference names the kind of content it was writing
/// (core/remotes/handlers.go, `MakeRefKey`): `manifest-`, `index-`, `config-`, `layer-`.
static REF_KIND: LazyLock<Regex> = LazyLock::new(|| re(r#"failed commit on ref "([a-z]+)-"#));
/// Go's transport reports a proxy that answers CONNECT with anything but 200 as the bare reason
/// phrase (net/http transport.go: `errors.New(text)` of `resp.Status`), with no code and no
/// wrapping: `Get "https://r/v2/": Bad Gateway`.
static REASON_PHRASE: LazyLock<Regex> =
    LazyLock::new(|| re(r"^[A-Z][a-z]+(?:[A-Z][a-z]+)*(?: [A-Z][a-z]+)*$"));

/// Classify one attempt of a message the `runtime` wrote (named once per message, from the
/// whole text: log prefixes such as `dockerd[123]:` name it).
pub fn classify(chain: &Chain, runtime: Runtime) -> Diagnosis {
    let request = chain.innermost_request();
    let cause_links = chain.cause_links();
    let cause_text = cause_links.join(": ");
    let bare_backoff = is_bare_backoff(&chain.text);
    let (mechanism, ambiguity) = if bare_backoff {
        (Layer::Other, Some(backoff_ambiguity()))
    } else {
        mechanism(chain, &cause_text)
    };
    let hop = hop(chain, request, mechanism);
    let layer = match hop {
        Hop::Blob => Layer::Blob,
        Hop::Proxy => Layer::Proxy,
        _ => mechanism,
    };
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
        });
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
    let host = proxy
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
        });
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
        host,
        url: request.map(|r| r.url.clone()),
        runtime,
        image: chain.image.clone(),
        cause: innermost_cause(chain, cause_links),
        ambiguity,
        causal: !bare_backoff && about_a_pull,
        about_a_pull,
        credential,
    }
}

/// The registry API is HTTPS: its default port is no part of the host's name.
fn without_https_port(host: String) -> String {
    match host.strip_suffix(":443") {
        Some(bare) => bare.to_string(),
        None => host,
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

/// A back-off line without its cause. The kubelet from 1.32 on appends the cause
/// (`Back-off pulling image "X": ErrImagePull: <cause>`); before, and in the container status
/// (`ImagePullBackOff`, `ErrImagePull`), nothing follows.
fn is_bare_backoff(text: &str) -> bool {
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

/// The image reference's registry (`nginx` → `docker.io`).
fn registry_of(image: &str) -> Option<String> {
    if let Some(registry) = named_registry(image) {
        Some(registry.to_ascii_lowercase())
    } else if image.contains('*') && crate::image_ref::registry_read_as_repository(image).is_none()
    {
        // A masked first component may have been the registry.
        None
    } else {
        Some("docker.io".into())
    }
}

/// Each runtime's own words, from its source: containerd (core/remotes/docker, core/content,
/// the CRI plugin), CRI-O and podman (containers/image docker/, copy/, storage/), Docker (moby
/// daemon/internal/distribution, buildkit, the v1-era client).
const CONTAINERD_WORDS: &[&str] = &[
    "failed to pull and unpack image",
    "failed to resolve reference",
    "failed to resolve image",
    "unexpected status from HEAD request",
    "httpReadSeeker",
    "httpReaderSeeker",
    "failed to copy:",
    "failed to extract layer",
    "no match for current platform",
    "no match for platform",
    "failed commit on ref",
    "failed to read expected number of bytes",
    "pulling from host",
    "ctr: ",
    // client/pull.go and core/unpack: the pull's unpack step. (The resolver's own words,
    // `failed to do request`, `failed to authorize`, are containerd's library, which tools
    // such as helm and buildkit print too: they name no runtime.)
    "failed to unpack image on snapshotter",
    "failed to prepare extraction snapshot",
    "nerdctl",
    // The ECS agent on Fargate, which pulls with containerd.
    "pull image manifest has been retried",
    // The resolver's log line for a host it moves past (core/remotes/docker/resolver.go), the
    // journal's process name, and containerd's own plugin ids and state directory.
    "trying next host",
    "containerd[",
    "io.containerd.",
    "/var/lib/containerd/",
];
const CRIO_WORDS: &[&str] = &[
    "pinging container registry",
    "pinging docker registry",
    "Error reading manifest",
    "Error choosing image instance",
    "choosing an image from manifest list",
    "Error determining manifest MIME type",
    "parsing image configuration",
    "Error writing blob",
    "writing blob",
    "reading blob",
    "reading manifest",
    "initializing source docker://",
    "Error initializing source",
    "unable to retrieve auth token",
    "Source image rejected",
    "did not resolve to an alias",
    "crio",
    // containers/image copy/ (copy.go, single.go, blob.go), storage/storage_dest.go and
    // docker/docker_client.go; CRI-O's mirror list; podman's progress line (containers/common
    // libimage) and its own name in a log prefix.
    "copying system image from manifest list",
    "trying to reuse blob",
    "adding layer with blob",
    "Requesting bearer token",
    "reading config blob",
    "partial pull of blob",
    "initializing image from source",
    "determining manifest MIME type",
    "Mirrors also failed",
    "Trying to pull ",
    "podman",
    // docker/docker_client.go's token request, misspelt as it is printed; c/storage's home;
    // the short-name policy (pkg/shortnames), the configuration's home and image/unparsed.go's
    // digest check of a manifest it read.
    "Requesting bear token",
    "/var/lib/containers/storage",
    "short name mode is enforcing",
    "/etc/containers/",
    "Manifest does not match provided manifest digest",
];
const DOCKER_WORDS: &[&str] = &[
    "Error response from daemon",
    "error pulling image configuration",
    "Error while pulling image",
    "dockerd",
    "docker-current",
    "docker: ",
    "Docker API",
    "DockerApiException",
    "CannotPullECRContainerError",
    "in the manifest list entries",
    "failed to register layer",
    "trying to pull repository",
    "Trying to pull repository",
    "not found in repository",
    "failed to solve: ",
    // The classic builder's `COPY --from` / `FROM` of an image it cannot pull
    // (daemon/builder/dockerfile/dispatchers.go), and the command itself when pasted.
    "invalid from flag value",
    "docker pull ",
    // docker compose v2's progress line; compose v1 and buildx print `ERROR: ` (see `runtime`).
    "✘ Image ",
    // The daemon's state directory and its blob download's temporary file
    // (distribution/pull_v2.go), a platform check of daemon/images, and the Engine API as its
    // clients print a failed call: docker-py (`500 Server Error … for url:
    // http+docker://localhost/v1.45/images/create?…`), dockerode and docker-java (`(HTTP code
    // 500) server error - {"message": …}`).
    "/var/lib/docker/",
    "GetImageBlob",
    "cannot be used on this platform",
    "http+docker://",
    "/images/create",
    "(HTTP code ",
    "server error - {",
    " Server Error: Internal Server Error (",
    // distribution/pull_v2.go's refusal of a schema 1 manifest (Docker 25 and later); the
    // daemon's words lowercased by a tool; go-dockerclient (`API error (500): …`, the
    // kubelet's dockertools and CI plugins); BuildKit's progress step; the CLI's temporary
    // file and credential helper protocol.
    "[DEPRECATION NOTICE] Docker Image Format v1",
    "error response from daemon",
    "API error (",
    "load metadata for ",
    ".docker_temp_",
    "error getting credentials - err",
];

pub fn runtime(text: &str) -> Runtime {
    let any = |words: &[&str]| words.iter().any(|w| text.contains(w));
    // helm pulls charts with containerd's resolver (ORAS): its words are containerd's library,
    // printed by no node's runtime.
    if any(&["Error: INSTALLATION FAILED", "Error: UPGRADE FAILED"]) {
        return Runtime::Unknown;
    }
    // Docker's tools print their error as `ERROR: …` (compose v1, buildx; buildkit's progress
    // as `#N ERROR: …`), where podman and the containers/image tools print `Error: …`.
    let docker_tool = text.trim_start().starts_with("ERROR: ")
        || text.trim_start().starts_with('#')
            && text
                .split_once(' ')
                .is_some_and(|(_, rest)| rest.starts_with("ERROR: "));
    if docker_tool || any(DOCKER_WORDS) {
        Runtime::Docker
    } else if any(CRIO_WORDS) {
        Runtime::Crio
    } else if any(CONTAINERD_WORDS) {
        Runtime::Containerd
    } else {
        Runtime::Unknown
    }
}

/// Operations that download a blob (a config or a layer), in each runtime's words.
const BLOB_OPERATIONS: [&str; 25] = [
    "failed to copy",
    "httpReadSeeker",
    "httpReaderSeeker",
    "failed to read expected number of bytes",
    "short read: expected",
    "failed commit on ref",
    "unexpected commit digest",
    "error pulling image configuration",
    "download failed after attempts",
    "layer verification failed",
    "unknown blob",
    "parsing image configuration",
    "Error fetching blob",
    "fetching blob",
    "Error writing blob",
    "writing blob",
    "storing blob",
    "happened during read",
    "Digest did not match",
    "error reading blob",
    "reading blob",
    "failed to fetch blob",
    // containers/image copy/single.go (the config) and docker/docker_image_src.go (partial
    // pulls, a manifest's external URLs). Not its `copying layer:` / `copying config:`, which
    // wrap only a cancelled context (the semaphore), no download.
    "reading config blob",
    "partial pull of blob",
    "external blob",
];

/// What kind of content the failing step fetched, when the text says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Content {
    /// A manifest or index: the registry hop, even inside containerd's copy (`failed to copy:
    /// httpReadSeeker: … /manifests/sha256:…`).
    Manifest,
    /// A config or layer blob.
    Blob,
}

fn content(chain: &Chain, request: Option<&Request>) -> Option<Content> {
    if let Some(kind) = REF_KIND.captures(&chain.text) {
        return match &kind[1] {
            "manifest" | "index" => Some(Content::Manifest),
            _ => Some(Content::Blob),
        };
    }
    // An object store's XML error document (S3, Google Cloud Storage, Azure Blob Storage all
    // answer `<Error><Code>…</Code>`): registries answer JSON, so this came from where the
    // registry keeps its blobs.
    if chain.text.contains("<Error><Code>") {
        return Some(Content::Blob);
    }
    let r = request?;
    if r.path.contains("/manifests/") {
        Some(Content::Manifest)
    } else if r.path.contains("/blobs/") {
        // containerd resolves a digest reference with HEAD on /manifests/, then on /blobs/
        // (core/remotes/docker/resolver.go): a HEAD while resolving is the manifest step.
        let resolving = r.method == "HEAD" && chain.text.contains("resolve");
        Some(if resolving {
            Content::Manifest
        } else {
            Content::Blob
        })
    } else if STORAGE_HOST.is_match(&r.host) {
        Some(Content::Blob)
    } else {
        None
    }
}

fn hop(chain: &Chain, request: Option<&Request>, mechanism: Layer) -> Hop {
    let text = &chain.text;
    if mechanism == Layer::Proxy {
        return Hop::Proxy;
    }
    // The node's own store failed after the bytes arrived (containers/image's
    // `writing blob: adding layer with blob …` is storage applying a verified layer): no hop.
    if request.is_none() && mechanism == Layer::Other && is_local(text, mechanism) {
        return Hop::Unknown;
    }
    let blob = match content(chain, request) {
        Some(kind) => kind == Content::Blob,
        None => chain.has_link(&BLOB_OPERATIONS) || is_bare_eof(chain),
    };
    if blob {
        return Hop::Blob;
    }
    let auth_context = chain.has_link(&[
        "failed to fetch oauth token",
        "failed to fetch anonymous token",
        "fetching token",
        "GetAuthorizationToken",
        "unable to retrieve auth token",
        "Requesting bearer token",
        "Requesting bear token",
    ]);
    let auth_request = request.is_some_and(|r| {
        r.path.ends_with("/token")
            || r.path.contains("/oauth2/token")
            || r.path.contains("/service/token")
            || r.host.starts_with("auth.")
            || r.host.starts_with("api.ecr.")
            || (r.url.contains("scope=") && r.url.contains("service="))
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
    if registry_signal && !is_local(text, mechanism) && !is_bare_backoff(text) {
        Hop::Registry
    } else {
        Hop::Unknown
    }
}

/// Failures on the node itself, whatever the mechanism underneath: the runtime's own socket,
/// the kubelet's deadline and limits, running a binary of another architecture.
const LOCAL: [&str; 5] = [
    "failed to connect: ",
    "code = 4 desc",
    "code = DeadlineExceeded desc = context deadline exceeded",
    "pull QPS exceeded",
    "exec format error",
];

fn is_local(text: &str, mechanism: Layer) -> bool {
    LOCAL.iter().any(|m| text.contains(m))
        || (mechanism == Layer::Other && NODE_WORDS.iter().any(|m| text.contains(m)))
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
const ROUTE_WORDS: [&str; 9] = [
    "i/o timeout",
    "network is unreachable",
    "no route to host",
    "host is unreachable",
    "Client.Timeout exceeded",
    "request canceled while waiting for connection",
    "connection timed out",
    "awaiting headers",
    "cannot assign requested address",
];
const REFUSED_WORDS: [&str; 6] = [
    "connection refused",
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
const NODE_WORDS: &[&str] = &[
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
/// A registry's "denied" that names why: a network rule (ACR `client with IP … is not allowed
/// access`) or a named permission (GCP `Permission "…" denied`, AWS `is not authorized to
/// perform`). Both mean the caller was recognised and refused.
const NAMED_REFUSAL_WORDS: [&str; 4] = [
    "is not allowed access",
    "client with IP",
    "Permission \"",
    "is not authorized to perform",
];

/// The mechanism of the innermost cause, in the order a pull meets them.
fn mechanism(chain: &Chain, cause: &str) -> (Layer, Option<Ambiguity>) {
    let text = chain.text.as_str();
    let any = |needles: &[&str], hay: &str| needles.iter().any(|n| hay.contains(n));

    // The proxy itself.
    if chain.has_link(&["proxyconnect tcp"])
        || any(&PROXY_WORDS, text)
        || any(&MIDDLEBOX_WORDS, cause)
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

/// `pull access denied`, `repository does not exist or may require …`, `denied: …`: the
/// prefix says only that the registry refused; what follows it decides. containerd ≥ 1.7 puts
/// the prefix before any `authorization failed` (core/remotes/docker/resolver.go), whatever
/// failed underneath, so the words after it are read, not the prefix.
fn denied(chain: &Chain, cause: &str) -> (Layer, Option<Ambiguity>) {
    let text = chain.text.as_str();
    // A registry host written without its repository was asked of Docker Hub as
    // `library/HOST`, which does not exist: the name decides.
    if chain
        .image
        .as_deref()
        .and_then(crate::image_ref::registry_read_as_repository)
        .is_some()
    {
        return (Layer::NotFound, None);
    }
    // A Basic challenge the kubelet passed no secret for (authorizer.go): missing credentials.
    // A bearer token the registry calls `invalid_token` (RFC 6750 §3.1: expired, revoked,
    // malformed) or an expired ECR token: the credential, not the rights.
    if text.contains("no basic auth credentials")
        || text.contains("authorization token has expired")
        || text.contains("invalid_token")
    {
        return (Layer::Auth, None);
    }
    // A token request that failed: its status decides, as on any other request.
    if chain.has_link(&[
        "failed to fetch anonymous token",
        "failed to fetch oauth token",
    ]) {
        match status_code(cause).or_else(|| status_code(text)) {
            Some(401) => return (Layer::Auth, None),
            Some(403) => return (Layer::Forbidden, None),
            _ => {}
        }
    }
    // A named refusal, or an explicit 403 (containerd 2.x joins the body of a follow-up GET to
    // a HEAD's 403: `…: 403 Forbidden\ndenied: …`): the caller was recognised and refused.
    if NAMED_REFUSAL_WORDS.iter().any(|w| text.contains(w)) || status_code(cause) == Some(403) {
        return (Layer::Forbidden, None);
    }
    if text.contains("insufficient_scope") {
        // Docker Hub answers insufficient_scope for a repository that does not exist, so there
        // the scope error says nothing about rights; elsewhere the token lacked them.
        let docker_hub = chain
            .image
            .as_deref()
            .and_then(registry_of)
            .is_none_or(|r| r == "docker.io")
            && chain.requests.iter().all(|r| r.host.ends_with("docker.io"));
        return if docker_hub {
            (Layer::NotFound, Some(denied_ambiguity(Layer::NotFound)))
        } else {
            (Layer::Forbidden, Some(denied_ambiguity(Layer::Forbidden)))
        };
    }
    if status_code(cause) == Some(401) {
        return (Layer::Auth, None);
    }
    // The error code's bare message: the registry refused a caller it recognised (DENIED is a
    // 403 in the distribution spec) — or hides a repository that does not exist behind it.
    if is_bare_denied(chain) {
        return (Layer::Forbidden, Some(denied_ambiguity(Layer::Forbidden)));
    }
    (Layer::NotFound, Some(denied_ambiguity(Layer::NotFound)))
}

/// The registry's answer is the word `denied` and nothing more (GHCR, Docker's `Error response
/// from daemon: denied`).
fn is_bare_denied(chain: &Chain) -> bool {
    chain.links.last().is_some_and(|l| l == "denied")
}

/// The three meanings of a registry's "denied", `first` the most likely.
fn denied_ambiguity(first: Layer) -> Ambiguity {
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

/// `unexpected EOF` (or `EOF`) and nothing around it: no request, no operation. Most often the
/// last line of a pull whose layer body was cut, but the text cannot say which request it was.
fn is_bare_eof(chain: &Chain) -> bool {
    chain.requests.is_empty()
        && chain.links.len() <= 2
        && chain
            .links
            .last()
            .is_some_and(|l| l == "unexpected EOF" || l == "EOF")
}

fn bare_eof_ambiguity() -> Ambiguity {
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

fn connect_refused_ambiguity() -> Ambiguity {
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

fn status_code(text: &str) -> Option<u16> {
    STATUS.captures_iter(text).find_map(|c| {
        (1..=6)
            .find_map(|i| c.get(i))
            .and_then(|m| m.as_str().parse().ok())
    })
}

/// Links that only wrap the cause: the kubelet's and the runtime's outer context.
const WRAPPERS: [&str; 17] = [
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
    "Back-off pulling image",
    "choosing an image from manifest list",
    "Error choosing image instance",
];

/// A pasted event line's columns before its message (`Warning  Failed  3s (x2 over 20s)
/// kubelet  spec.containers{app}`): recent kubectl ends them with the field path and a colon,
/// so they become a link of their own. They are the event's, not the cause's.
fn is_event_columns(link: &str) -> bool {
    let link = link.trim_start();
    let typed = (link.starts_with('W') || link.starts_with('N'))
        && ["Warning ", "Normal ", "Warning\t", "Normal\t"]
            .iter()
            .any(|t| link.starts_with(t));
    typed
        || link.ends_with('}')
            && link
                .rsplit([' ', '\t'])
                .next()
                .is_some_and(|last| last.starts_with("spec."))
}

/// The innermost cause in the runtime's words, with the lookup or dial that frames it.
fn innermost_cause(chain: &Chain, cause_links: &[String]) -> String {
    let framed: Vec<&str> = cause_links
        .iter()
        .map(String::as_str)
        .filter(|l| !l.is_empty())
        .skip_while(|l| {
            is_event_columns(l)
                || chain.innermost_request().is_none()
                    && (*l == "Error" || *l == "errors" || WRAPPERS.iter().any(|w| l.contains(w)))
        })
        .collect();
    let text = if framed.is_empty() {
        chain.text.trim()
    } else {
        &framed.join(": ")
    };
    let text = text.trim_end_matches([']', '.']);
    // A closing quote stays when it closes a quoted name (`Back-off pulling image "x"`); one
    // left over from an outer quoted log value goes.
    let text = if text.ends_with('"') && text.matches('"').count() % 2 == 1 {
        text.trim_end_matches('"')
    } else {
        text
    };
    let mut out: String = text.chars().take(400).collect();
    if text.chars().count() > 400 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure_text::chain;

    fn one(text: &str) -> Chain {
        chain::parse(text).remove(0)
    }

    #[test]
    fn the_content_kind_decides_blob_or_registry() {
        let kind = |text: &str| {
            let c = one(text);
            content(&c, c.innermost_request())
        };
        assert_eq!(
            kind(r#"failed commit on ref "layer-sha256:abc": unexpected commit digest"#),
            Some(Content::Blob)
        );
        assert_eq!(
            kind(r#"failed commit on ref "index-sha256:abc": failed size validation"#),
            Some(Content::Manifest)
        );
        assert_eq!(
            kind(
                "failed to copy: httpReadSeeker: failed open: content at https://r.example/v2/a/manifests/sha256:abc not found"
            ),
            Some(Content::Manifest)
        );
        assert_eq!(
            kind(
                "failed to resolve reference \"r.example/a@sha256:abc\": unexpected status from HEAD request to https://r.example/v2/a/blobs/sha256:abc: 403 Forbidden"
            ),
            Some(Content::Manifest),
            "a HEAD while resolving is the manifest step"
        );
        assert_eq!(
            kind(
                r#"failed to copy: httpReadSeeker: failed open: failed to do request: Get "https://r.example/v2/a/blobs/sha256:abc": EOF"#
            ),
            Some(Content::Blob)
        );
        assert_eq!(kind("failed to copy: unexpected EOF"), None);
    }

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

    #[test]
    fn denied_is_read_by_the_words_after_it() {
        let layer = |tail: &str| {
            let c = one(&format!(
                r#"failed to resolve reference "r.example/a:1": pull access denied, repository does not exist or may require authorization: {tail}"#
            ));
            let (layer, ambiguity) = mechanism(&c, &c.cause_links().join(": "));
            (layer, ambiguity.is_some())
        };
        assert_eq!(
            layer("authorization failed: no basic auth credentials"),
            (Layer::Auth, false)
        );
        assert_eq!(
            layer("server message: insufficient_scope: authorization failed"),
            (Layer::Forbidden, true)
        );
        assert_eq!(
            layer("server message: invalid_token: authorization failed"),
            (Layer::Auth, false)
        );
        assert_eq!(
            layer("denied: requested access to the resource is denied"),
            (Layer::NotFound, true)
        );
    }

    #[test]
    fn a_registry_named_without_its_repository_was_asked_of_docker_hub() {
        // Docker's words, with a CI log's mask; containerd's, with the name it normalised.
        for text in [
            "Error response from daemon: pull access denied for ***.dkr.ecr.eu-west-1.amazonaws.com, repository does not exist or may require 'docker login': denied: requested access to the resource is denied",
            r#"failed to resolve reference "docker.io/library/r.example.com:latest": pull access denied, repository does not exist or may require authorization: server message: insufficient_scope: authorization failed"#,
        ] {
            let d = classify(&one(text), runtime(text));
            assert_eq!(
                (d.layer, d.ambiguity.is_none(), d.host.as_deref()),
                (Layer::NotFound, true, Some("docker.io")),
                "{text}"
            );
        }
        // With a repository the name decides nothing: still the three meanings of "denied".
        let text = "Error response from daemon: pull access denied for ***.dkr.ecr.eu-west-1.amazonaws.com/app, repository does not exist or may require 'docker login': denied: requested access to the resource is denied";
        let d = classify(&one(text), runtime(text));
        assert!(d.ambiguity.is_some());
        assert_eq!(
            d.host.as_deref(),
            Some("***.dkr.ecr.eu-west-1.amazonaws.com")
        );
    }

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
