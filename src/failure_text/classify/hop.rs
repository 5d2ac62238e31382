//! Which hop of the pull failed (registry, auth, blob, proxy), from the operation, the failing
//! request and the content it fetched, so the layer is reported where it broke.

use std::sync::LazyLock;

use regex::Regex;

use super::layer::{NODE_WORDS, is_bare_eof};
use super::named::STATUS;
use super::{is_bare_backoff, re};
use crate::failure_text::chain::{Chain, Request};
use crate::vocab::{Hop, Layer};

static STORAGE_HOST: LazyLock<Regex> = LazyLock::new(|| {
    re(
        r"(?i)(\.blob\.core\.windows\.net|\.data\.azurecr\.io|cloudflare|\.cdn\.|cdn\d*\.|^cdn|\.s3[.-]|s3\.amazonaws\.com|storage\.googleapis\.com|\.cloudfront\.net|prod-registry-k8s-io|\.r2\.cloudflarestorage|quay-registry\.s3|\.blob\.)",
    )
});
/// The v1 protocol's layer download, `GET /v1/images/ID/layer` (moby registry/session.go,
/// `GetRemoteImageLayer`: `registry + "images/" + imgID + "/layer"`).
static V1_LAYER: LazyLock<Regex> = LazyLock::new(|| re(r"/v1/images/[0-9a-f]+/layer$"));
/// containerd's ingest reference names the kind of content it was writing
/// (core/remotes/handlers.go, `MakeRefKey`): `manifest-`, `index-`, `config-`, `layer-`.
static REF_KIND: LazyLock<Regex> = LazyLock::new(|| re(r#"failed commit on ref "([a-z]+)-"#));

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

/// What in the text decided the hop, for the explanation's evidence.
pub type HopEvidence = &'static str;

fn content(chain: &Chain, request: Option<&Request>) -> Option<(Content, HopEvidence)> {
    if let Some(kind) = REF_KIND.captures(&chain.text) {
        let by = "containerd's ingest reference names the content it was writing";
        return match &kind[1] {
            "manifest" | "index" => Some((Content::Manifest, by)),
            _ => Some((Content::Blob, by)),
        };
    }
    // An object store's XML error document (S3, Google Cloud Storage, Azure Blob Storage all
    // answer `<Error><Code>…</Code>`): registries answer JSON, so this came from where the
    // registry keeps its blobs.
    if chain.text.contains("<Error><Code>") {
        return Some((Content::Blob, "an object store's XML error document"));
    }
    let r = request?;
    if r.path.contains("/manifests/") {
        Some((Content::Manifest, "the request's /manifests/ path"))
    } else if r.path.contains("/blobs/") {
        // containerd resolves a digest reference with HEAD on /manifests/, then on /blobs/
        // (core/remotes/docker/resolver.go): a HEAD while resolving is the manifest step.
        let resolving = r.method == "HEAD" && chain.text.contains("resolve");
        Some(if resolving {
            (
                Content::Manifest,
                "a HEAD on /blobs/ while resolving the reference",
            )
        } else {
            (Content::Blob, "the request's /blobs/ path")
        })
    } else if V1_LAYER.is_match(&r.path) {
        Some((Content::Blob, "the request's v1 /images/ID/layer path"))
    } else if STORAGE_HOST.is_match(&r.host) {
        Some((Content::Blob, "the request's host is blob storage"))
    } else {
        None
    }
}

pub(super) fn hop(
    chain: &Chain,
    request: Option<&Request>,
    mechanism: Layer,
) -> (Hop, HopEvidence) {
    let text = &chain.text;
    if mechanism == Layer::Proxy {
        return (
            Hop::Proxy,
            "the proxy's own failure (its dial, its address or its answer)",
        );
    }
    // The node's own store failed after the bytes arrived (containers/image's
    // `writing blob: adding layer with blob …` is storage applying a verified layer): no hop.
    if request.is_none() && mechanism == Layer::Other && is_local(text, mechanism) {
        return (
            Hop::Unknown,
            "no request failed: the node's own store or runtime did",
        );
    }
    let blob = match content(chain, request) {
        Some((kind, by)) => (kind == Content::Blob).then_some(by),
        None if chain.has_link(&BLOB_OPERATIONS) => {
            Some("a blob download step in the runtime's words")
        }
        None if is_bare_eof(chain) => Some("a bare EOF, most often a layer body cut off"),
        None => None,
    };
    if let Some(by) = blob {
        return (Hop::Blob, by);
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
    if auth_context {
        return (Hop::Auth, "the runtime's token step");
    }
    let auth_request = request.is_some_and(|r| {
        r.path.ends_with("/token")
            || r.path.contains("/oauth2/token")
            || r.path.contains("/service/token")
            || r.host.starts_with("auth.")
            || r.host.starts_with("api.ecr.")
            || (r.url.contains("scope=") && r.url.contains("service="))
    });
    if auth_request {
        return (Hop::Auth, "the request's token URL");
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
        let by = if request.is_some() {
            "a request to the registry (ping or manifest)"
        } else {
            "the registry's answer, with no URL"
        };
        (Hop::Registry, by)
    } else {
        (
            Hop::Unknown,
            "nothing in the text names the failing request",
        )
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

#[cfg(test)]
mod tests {
    use super::super::one;
    use super::*;

    #[test]
    fn the_content_kind_decides_blob_or_registry() {
        let kind = |text: &str| {
            let c = one(text);
            content(&c, c.innermost_request()).map(|(kind, _)| kind)
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
}

#[cfg(test)]
mod evidence {
    use super::super::one;
    use super::*;

    fn hop_of(text: &str) -> (Hop, HopEvidence) {
        let c = one(text);
        let (mechanism, _) = super::super::layer::mechanism(&c, &c.cause_links().join(": "));
        hop(&c, c.innermost_request(), mechanism)
    }

    #[test]
    fn a_v1_layer_path_is_the_blob_hop() {
        // moby/moby#8163: a 1 GB layer read from a v1 registry timed out.
        let (h, by) = hop_of(
            "2014/09/22 14:25:06 Error pulling image (1) from private-docker-registry.example.com:5000/foo/bar, Get http://private-docker-registry.example.com:5000/v1/images/11b019d183c6557531fefbd843feb742c348add458fa4b9780920f4545f2107a/layer: read tcp xxx.xxx.xxx.xxx:5000: i/o timeout",
        );
        assert_eq!(h, Hop::Blob);
        assert!(by.contains("layer path"), "{by}");
    }

    #[test]
    fn the_hop_says_what_decided_it() {
        // ketches/registry-proxy#3: the token URL on auth.docker.io.
        let (h, by) = hop_of(
            r#"ctr: failed to resolve reference "docker.ketches.cn/library/nginx:latest": failed to authorize: failed to fetch anonymous token: Get "https://auth.docker.io/token?scope=repository%3Alibrary%2Fnginx%3Apull&service=registry.docker.io": dial tcp 199.59.148.222:443: i/o timeout"#,
        );
        assert_eq!((h, by), (Hop::Auth, "the runtime's token step"));
        // kuard#16: the config blob on Google Cloud Storage.
        let (h, by) = hop_of(
            "error pulling image configuration: Get https://storage.googleapis.com/artifacts.kuar-demo.appspot.com/containers/images/sha256:a92d: x509: certificate signed by unknown authority",
        );
        assert_eq!((h, by), (Hop::Blob, "the request's host is blob storage"));
        // conda-forge/status#205: a 500 on /blobs/ is the blob hop's failure.
        let (h, by) = hop_of(
            "unknown: failed to copy: httpReadSeeker: failed open: unexpected status from GET request to https://quay.io/v2/condaforge/linux-anvil-x86_64/blobs/sha256:96c9: 500 Internal Server Error",
        );
        assert_eq!((h, by), (Hop::Blob, "the request's /blobs/ path"));
    }
}
