//! What a handshake showed: the chain the server presented and, when it failed, the problem
//! as a value (unknown authority with the issuer, a wrong name with both names, expiry with
//! the dates, an HTTP answer, a timeout), from which the report's words come.

use rustls::{AlertDescription, CertificateError};

/// One certificate as presented.
#[derive(Debug, Clone)]
pub struct CertSummary {
    pub subject: String,
    pub issuer: String,
    pub names: Vec<String>,
    pub not_before: String,
    pub not_after: String,
}

/// The handshake's evidence.
#[derive(Debug, Clone)]
pub struct TlsEvidence {
    pub server_name: String,
    pub ok: bool,
    /// What was wrong: unknown CA, wrong name, expired, timeout, plain HTTP.
    pub problem: Option<TlsProblem>,
    pub chain: Vec<CertSummary>,
    pub trusted: Vec<String>,
    /// Set when `skip_verify` accepted a certificate that does not verify: what was wrong.
    pub skipped: Option<String>,
    /// The server answered the ClientHello with an HTTP response (`HTTP/…`).
    pub answered_plain_http: bool,
    /// No TLS answer came within the timeout.
    pub timed_out: bool,
    pub elapsed_ms: u64,
}

impl TlsEvidence {
    /// Whether containerd (1.7 and later), trying HTTPS first on a host configured as
    /// `http://` with TLS settings, would retry it over plain HTTP: Go's `isTLSError`
    /// (`remotes/docker/resolver.go`) accepts exactly a record header reading `HTTP/` and a
    /// handshake timeout.
    pub fn containerd_retries_over_http(&self) -> bool {
        !self.ok && (self.answered_plain_http || self.timed_out)
    }
}

/// What was wrong with a handshake, kept typed from rustls's error so readers decide on the
/// kind (fleet asks "unknown authority?") and never on our English. `Display` is the sentence
/// the report has always carried in `hosts[].tls.problem`, `failure.detail` and `cause`: those
/// are wire fields, so the words must not move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsProblem {
    /// The chain ends at a CA outside the trusted roots; `issuer` is the leaf's issuer (`None`
    /// when no certificate was seen).
    UnknownAuthority {
        issuer: Option<String>,
    },
    /// The leaf is not for the name asked; `presented` are its names.
    NameMismatch {
        presented: Option<Vec<String>>,
        server_name: String,
    },
    Expired {
        not_after: Option<String>,
    },
    NotYetValid {
        not_before: Option<String>,
    },
    /// Another certificate error rustls reports, as rustls names it (`{:?}`).
    Rejected(String),
    /// The server sent a fatal alert during the handshake.
    Alert(AlertDescription),
    /// The answer was not TLS at all.
    NotTls,
    /// The answer to the ClientHello began `HTTP/` (containerd retries such a host over HTTP).
    PlainHttp,
    /// No TLS answer within the handshake timeout (containerd retries this too).
    Timeout {
        ms: u128,
    },
    /// The host's name cannot be a TLS server name.
    ServerName {
        name: String,
        reason: String,
    },
    /// The client configuration could not be built from the trust (no handshake was tried).
    Setup(String),
    /// Any other handshake failure, in rustls's or the transport's words.
    Other(String),
}

impl TlsProblem {
    /// The stable name of the problem (`hosts[].tls.problem_kind`, docs/report-schema.md):
    /// what machine readers match on instead of the sentence.
    pub fn kind(&self) -> &'static str {
        match self {
            TlsProblem::UnknownAuthority { .. } => "unknown-authority",
            TlsProblem::NameMismatch { .. } => "name-mismatch",
            TlsProblem::Expired { .. } => "expired",
            TlsProblem::NotYetValid { .. } => "not-yet-valid",
            TlsProblem::Rejected(_) => "certificate-rejected",
            TlsProblem::Alert(_) => "alert",
            TlsProblem::NotTls => "not-tls",
            TlsProblem::PlainHttp => "plain-http",
            TlsProblem::Timeout { .. } => "timeout",
            TlsProblem::ServerName { .. } => "server-name",
            TlsProblem::Setup(_) => "setup",
            TlsProblem::Other(_) => "other",
        }
    }

    /// Every kind, for the schema's enum and its test.
    pub const KINDS: [&'static str; 12] = [
        "unknown-authority",
        "name-mismatch",
        "expired",
        "not-yet-valid",
        "certificate-rejected",
        "alert",
        "not-tls",
        "plain-http",
        "timeout",
        "server-name",
        "setup",
        "other",
    ];

    /// rustls's error (when the failure was one) mapped to its kind, with the facts of the
    /// presented leaf a person needs; `error` is the transport's words for anything else.
    pub(crate) fn of(
        rustls_error: Option<&rustls::Error>,
        error: &str,
        chain: &[CertSummary],
        server_name: &str,
    ) -> TlsProblem {
        let leaf = chain.first();
        match rustls_error {
            Some(rustls::Error::InvalidCertificate(cert)) => match cert {
                CertificateError::UnknownIssuer => TlsProblem::UnknownAuthority {
                    issuer: leaf.map(|c| c.issuer.clone()),
                },
                CertificateError::NotValidForName
                | CertificateError::NotValidForNameContext { .. } => TlsProblem::NameMismatch {
                    presented: leaf.map(|c| c.names.clone()),
                    server_name: server_name.to_string(),
                },
                CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
                    TlsProblem::Expired {
                        not_after: leaf.map(|c| c.not_after.clone()),
                    }
                }
                CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
                    TlsProblem::NotYetValid {
                        not_before: leaf.map(|c| c.not_before.clone()),
                    }
                }
                other => TlsProblem::Rejected(format!("{other:?}")),
            },
            Some(rustls::Error::InvalidMessage(_))
            | Some(rustls::Error::InappropriateMessage { .. }) => TlsProblem::NotTls,
            Some(rustls::Error::AlertReceived(alert)) => TlsProblem::Alert(*alert),
            Some(other) => TlsProblem::Other(other.to_string()),
            None => TlsProblem::Other(error.to_string()),
        }
    }
}

impl std::fmt::Display for TlsProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let or_unknown = |s: &Option<String>| s.clone().unwrap_or_else(|| "?".to_string());
        match self {
            TlsProblem::UnknownAuthority { issuer } => write!(
                f,
                "certificate signed by unknown authority: issuer {:?} is not in the trusted roots",
                issuer.as_deref().unwrap_or("?")
            ),
            TlsProblem::NameMismatch {
                presented,
                server_name,
            } => write!(
                f,
                "certificate is for {}, not {server_name}",
                presented.as_ref().map_or("?".to_string(), |n| n.join(", "))
            ),
            TlsProblem::Expired { not_after } => write!(
                f,
                "certificate expired: not valid after {}",
                or_unknown(not_after)
            ),
            TlsProblem::NotYetValid { not_before } => write!(
                f,
                "certificate not valid yet: not before {}",
                or_unknown(not_before)
            ),
            TlsProblem::Rejected(what) => write!(f, "certificate rejected: {what}"),
            TlsProblem::Alert(alert) => write!(
                f,
                "TLS handshake failed: {}",
                rustls::Error::AlertReceived(*alert)
            ),
            TlsProblem::NotTls => {
                f.write_str("the server did not answer TLS (plain HTTP on an HTTPS port?)")
            }
            TlsProblem::PlainHttp => {
                f.write_str("the server answered TLS with plain HTTP (an http:// endpoint?)")
            }
            TlsProblem::Timeout { ms } => {
                write!(f, "handshake timeout: no TLS answer within {ms} ms")
            }
            TlsProblem::ServerName { name, reason } => {
                write!(f, "{name} is not a valid TLS server name: {reason}")
            }
            TlsProblem::Setup(why) => f.write_str(why),
            TlsProblem::Other(words) => write!(f, "TLS handshake failed: {words}"),
        }
    }
}
