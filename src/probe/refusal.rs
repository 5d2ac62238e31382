//! An HTTP answer that refused a step of the pull, as typed evidence: its status, what the
//! status means for that request, and what its body said (the registry's error envelope, an
//! excerpt, or nothing when the sender must not be quoted). Pure: built from status and bytes
//! by `registry`, carried as `Evidence::Refused`, shown in the words the report has always used.

use std::fmt;

use super::authority::Authority;
use crate::vocab::Layer;

/// One entry of a registry's error envelope (`{"errors":[{"code","message"}]}`, the
/// distribution spec's error format).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryError {
    pub code: String,
    pub message: String,
}

/// What a refusing answer's body said, as much as may be shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// The registry's error envelope: its codes and messages, from anyone.
    Envelope(Vec<RegistryError>),
    /// Not an envelope: the start of the body, control characters dropped. `of` is the body's
    /// whole length and its sender when the excerpt was cut short for a host that is not a
    /// registry (a blob store, a CDN a redirect led to).
    Excerpt {
        text: String,
        of: Option<(usize, String)>,
    },
    /// No body at all.
    Empty,
    /// A link-local or cloud metadata address answered: its body (instance credentials,
    /// perhaps) is never printed.
    Withheld { host: String },
}

/// The most of a registry's own non-envelope body shown, in characters.
const REGISTRY_EXCERPT: usize = 200;
/// The most of another host's body shown, in characters.
const OTHER_HOST_EXCERPT: usize = 80;

impl Said {
    /// What `body` says, from a registry (whose words are shown at more length).
    pub fn from_registry(body: &[u8]) -> Said {
        if let Some(errors) = envelope(body) {
            return Said::Envelope(errors);
        }
        let text: String = String::from_utf8_lossy(body)
            .chars()
            .filter(|c| !c.is_control())
            .take(REGISTRY_EXCERPT)
            .collect();
        match text.is_empty() {
            true => Said::Empty,
            false => Said::Excerpt { text, of: None },
        }
    }

    /// What `body` from `from` may show: an envelope from anyone; otherwise an excerpt from a
    /// registry host, a shorter one from any other host, and nothing from a link-local or
    /// metadata address (a registry can redirect a pull there).
    pub fn from_host(body: &[u8], from: &Authority, registry_host: bool) -> Said {
        if super::authority::is_metadata_address(&from.host) {
            return Said::Withheld {
                host: from.host.clone(),
            };
        }
        match Said::from_registry(body) {
            Said::Excerpt { text, .. }
                if !registry_host && text.chars().count() > OTHER_HOST_EXCERPT =>
            {
                Said::Excerpt {
                    text: text.chars().take(OTHER_HOST_EXCERPT).collect(),
                    of: Some((body.len(), from.host.clone())),
                }
            }
            said => said,
        }
    }

    /// Whether any envelope entry's code or message holds `word` (as registries word it).
    pub fn mentions(&self, word: &str) -> bool {
        match self {
            Said::Envelope(errors) => errors
                .iter()
                .any(|e| e.code.contains(word) || e.message.contains(word)),
            Said::Excerpt { text, .. } => text.contains(word),
            Said::Empty | Said::Withheld { .. } => false,
        }
    }

    /// Whether the envelope carries the error `code` (`NAME_UNKNOWN`, `MANIFEST_UNKNOWN`, …).
    pub fn has_code(&self, code: &str) -> bool {
        matches!(self, Said::Envelope(errors) if errors.iter().any(|e| e.code == code))
    }
}

/// The envelope's entries, when `body` is one.
fn envelope(body: &[u8]) -> Option<Vec<RegistryError>> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let errors = value.get("errors")?.as_array()?;
    let field = |e: &serde_json::Value, key: &str| {
        e.get(key)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    Some(
        errors
            .iter()
            .map(|e| RegistryError {
                code: field(e, "code"),
                message: field(e, "message"),
            })
            .collect(),
    )
}

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Said::Envelope(errors) => {
                let each: Vec<String> = errors
                    .iter()
                    .map(|e| format!("{} {}", e.code, e.message).trim().to_string())
                    .collect();
                f.write_str(&each.join("; "))
            }
            Said::Excerpt { text, of: None } => f.write_str(text),
            Said::Excerpt {
                text,
                of: Some((bytes, host)),
            } => write!(f, "{text}… ({bytes} bytes from {host})"),
            Said::Empty => f.write_str("(empty body)"),
            Said::Withheld { host } => write!(
                f,
                "(body not shown: {host} is a link-local or metadata address)"
            ),
        }
    }
}

/// What the status meant for the request it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// `GET /v2/` answered neither 2xx nor a 401 challenge.
    Ping,
    /// A 401 with no `WWW-Authenticate` challenge to answer.
    NoChallenge,
    /// The token realm refused; `asked_as` says how it was asked ("anonymous GET", …).
    Token { asked_as: String },
    /// The token realm answered 2xx without a token.
    NoToken { asked_as: String },
    /// 401 `insufficient_scope` on the manifest: no rights, or a repository hidden as missing.
    InsufficientScope,
    /// 404 with `NAME_UNKNOWN`: the repository does not exist.
    RepositoryMissing,
    /// 404 otherwise: the tag or digest does not exist.
    ReferenceMissing,
    /// Any other refusal of a manifest or blob request.
    Status,
}

/// A refusing HTTP answer: its status, its meaning, its body, and for 408/429 what each
/// runtime does about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRefusal {
    pub status: u16,
    pub refused: Refused,
    pub said: Said,
    /// `registry::retry_note`, for a rate limit or a request timeout.
    pub retry: Option<String>,
}

impl HttpRefusal {
    pub fn new(status: u16, refused: Refused, said: Said) -> HttpRefusal {
        HttpRefusal {
            status,
            refused,
            said,
            retry: None,
        }
    }

    /// The layer the refusal means: a status's own layer, unless what was refused says more
    /// (a 401 `insufficient_scope` is a missing right, a token realm's 2xx without a token is
    /// the realm's fault).
    pub fn layer(&self) -> Layer {
        match self.refused {
            Refused::NoChallenge => Layer::Auth,
            Refused::NoToken { .. } => Layer::Other,
            Refused::InsufficientScope => Layer::Forbidden,
            Refused::RepositoryMissing | Refused::ReferenceMissing => Layer::NotFound,
            Refused::Ping | Refused::Token { .. } | Refused::Status => {
                Layer::from_http_status(self.status)
            }
        }
    }
}

impl fmt::Display for HttpRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let HttpRefusal { status, said, .. } = self;
        match &self.refused {
            Refused::Ping => write!(f, "GET /v2/ answered {status}: {said}")?,
            Refused::NoChallenge => {
                write!(f, "{status} without a WWW-Authenticate challenge: {said}")?
            }
            Refused::Token { asked_as } => write!(f, "{status}: {said} ({asked_as})")?,
            Refused::NoToken { asked_as } => {
                write!(f, "{status} but no token in the answer ({asked_as})")?
            }
            Refused::InsufficientScope => write!(
                f,
                "{status} insufficient_scope: the token does not allow pulling this repository ({said}); \
                 a registry that hides missing repositories answers the same, so an identity with wider rights tells them apart"
            )?,
            Refused::RepositoryMissing => {
                write!(f, "{status} the repository does not exist: {said}")?
            }
            Refused::ReferenceMissing => {
                write!(f, "{status} the tag or digest does not exist: {said}")?
            }
            Refused::Status => write!(f, "{status}: {said}")?,
        }
        match &self.retry {
            Some(retry) => write!(f, "; {retry}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(host: &str) -> Authority {
        Authority {
            host: host.into(),
            port: 443,
        }
    }

    #[test]
    fn an_envelope_is_read_as_codes_and_messages_from_anyone() {
        let body = br#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known"},{"code":"DENIED"}]}"#;
        let said = Said::from_host(body, &from("blob.example"), false);
        assert!(said.has_code("NAME_UNKNOWN") && !said.has_code("UNKNOWN"));
        assert!(said.mentions("not known"));
        assert_eq!(
            said.to_string(),
            "NAME_UNKNOWN repository name not known; DENIED"
        );
    }

    #[test]
    fn another_hosts_body_is_cut_and_a_metadata_address_is_never_quoted() {
        let long = "x".repeat(500);
        let said = Said::from_host(long.as_bytes(), &from("cdn.example"), false);
        assert_eq!(
            said,
            Said::Excerpt {
                text: "x".repeat(80),
                of: Some((500, "cdn.example".into()))
            }
        );
        assert!(said.to_string().ends_with("… (500 bytes from cdn.example)"));
        let registry = Said::from_host(long.as_bytes(), &from("r.example"), true);
        assert_eq!(registry.to_string().len(), 200);
        let metadata = Said::from_host(b"{\"AccessKeyId\":\"A\"}", &from("169.254.169.254"), false);
        assert_eq!(
            metadata,
            Said::Withheld {
                host: "169.254.169.254".into()
            }
        );
        assert!(!metadata.to_string().contains("AccessKeyId"));
    }

    #[test]
    fn control_characters_never_reach_an_excerpt_and_no_body_is_said_so() {
        let said = Said::from_registry(b"\x1b]0;pwned\x07 bad\r\n");
        assert_eq!(said.to_string(), "]0;pwned bad");
        assert_eq!(Said::from_registry(b""), Said::Empty);
        assert_eq!(Said::from_registry(b"\n\t").to_string(), "(empty body)");
    }

    #[test]
    fn a_refusal_reads_as_its_status_meaning_body_and_retry_note() {
        let mut refusal = HttpRefusal::new(
            429,
            Refused::Status,
            Said::Excerpt {
                text: "slow down".into(),
                of: None,
            },
        );
        assert_eq!(refusal.to_string(), "429: slow down");
        refusal.retry = Some("the registry asks to wait".into());
        assert_eq!(
            refusal.to_string(),
            "429: slow down; the registry asks to wait"
        );
        let token = HttpRefusal::new(
            401,
            Refused::Token {
                asked_as: "anonymous GET".into(),
            },
            Said::Empty,
        );
        assert_eq!(token.to_string(), "401: (empty body) (anonymous GET)");
    }
}
