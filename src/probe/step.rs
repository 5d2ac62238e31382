//! The steps of a pull, as a value: which step a stop or a path entry names. `Display` gives
//! the words the report has always carried (`verdict.step`, `path[].steps[].step`,
//! `hosts[].failure.step`: wire fields, so the words must not move).

use std::fmt;

use crate::image_ref::Digest;

/// `config` or `layer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobKind {
    Config,
    Layer,
}

impl BlobKind {
    pub fn as_str(self) -> &'static str {
        match self {
            BlobKind::Config => "config",
            BlobKind::Layer => "layer",
        }
    }
}

/// One step of the pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Resolving the host's name.
    Dns,
    /// The kernel's route to its addresses.
    Route,
    /// TCP to the host, or to the proxy in front of it.
    Connect,
    /// The handshake with the host.
    Tls,
    /// The handshake with an `https://` proxy.
    ProxyTls,
    /// `CONNECT host:port` through the runtime's proxy.
    Tunnel,
    /// The HTTP client for a host whose check passed.
    Http,
    /// A host met again whose check failed before.
    Host,
    /// containerd's host configuration.
    HostsToml,
    /// containerd 1.7+'s retry of an HTTPS-first host in plain HTTP.
    HttpFallback,
    /// The walk's total deadline.
    Deadline,
    /// The platform's entry of an index.
    Platform,
    /// The `/v2/` handshake.
    Ping,
    /// The token request for a scope (`repository:team/app:pull`).
    Token { scope: String },
    /// The manifest of a reference, a tag or a digest, as the image names it.
    Manifest(String),
    /// A manifest fetched by its digest (a platform's, from an index).
    ManifestByDigest(Digest),
    /// Opening a blob on a host.
    OpenBlob(Digest),
    /// Reading a config or layer.
    Blob(BlobKind, Digest),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Dns => f.write_str("dns"),
            Step::Route => f.write_str("route"),
            Step::Connect => f.write_str("connect"),
            Step::Tls => f.write_str("tls"),
            Step::ProxyTls => f.write_str("proxy tls"),
            Step::Tunnel => f.write_str("CONNECT"),
            Step::Http => f.write_str("http"),
            Step::Host => f.write_str("host"),
            Step::HostsToml => f.write_str("hosts.toml"),
            Step::HttpFallback => f.write_str("http fallback"),
            Step::Deadline => f.write_str("deadline"),
            Step::Platform => f.write_str("platform"),
            Step::Ping => f.write_str("GET /v2/"),
            Step::Token { scope } => write!(f, "token {scope}"),
            Step::Manifest(reference) => write!(f, "manifest {reference}"),
            Step::ManifestByDigest(digest) => write!(f, "manifest {}", short_digest(digest)),
            Step::OpenBlob(digest) => f.write_str(&short_digest(digest)),
            Step::Blob(kind, digest) => write!(f, "{} {}", kind.as_str(), short_digest(digest)),
        }
    }
}

/// `sha256:` and the first 12 hex digits: enough to tell a manifest's blobs apart.
pub fn short_digest(digest: &Digest) -> String {
    digest.as_str().chars().take(19).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_says_what_the_report_always_said() {
        let digest = Digest::parse(&format!("sha256:{}", "ab".repeat(32))).expect("digest");
        let cases = [
            (Step::Ping, "GET /v2/".to_string()),
            (Step::Tunnel, "CONNECT".into()),
            (Step::ProxyTls, "proxy tls".into()),
            (Step::HttpFallback, "http fallback".into()),
            (
                Step::Token {
                    scope: "repository:team/app:pull".into(),
                },
                "token repository:team/app:pull".into(),
            ),
            (Step::Manifest("v1".into()), "manifest v1".into()),
            (
                Step::ManifestByDigest(digest.clone()),
                "manifest sha256:abababababab".into(),
            ),
            (Step::OpenBlob(digest.clone()), "sha256:abababababab".into()),
            (
                Step::Blob(BlobKind::Layer, digest),
                "layer sha256:abababababab".into(),
            ),
        ];
        for (step, words) in cases {
            assert_eq!(step.to_string(), words, "{step:?}");
        }
    }
}
