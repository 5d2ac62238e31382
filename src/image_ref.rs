//! Image references, read the way containerd reads them (docker reference grammar).
//!
//! `nginx` is `docker.io/library/nginx:latest`, fetched from `registry-1.docker.io`;
//! `localhost:5000/app@sha256:…` keeps its port; an IP literal (`[::1]:5000`, `10.0.0.5`) is a
//! registry host too.

use std::fmt;

use serde::Serialize;

/// A content digest, `sha256:` followed by 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(transparent)]
pub struct Digest(String);

impl Digest {
    pub fn parse(text: &str) -> Result<Digest, RefError> {
        let hex = text
            .strip_prefix("sha256:")
            .ok_or_else(|| RefError::Digest(text.to_string()))?;
        if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(Digest(text.to_string()))
        } else {
            Err(RefError::Digest(text.to_string()))
        }
    }

    /// The digest of sha256 output given as lowercase hex (as [`hex`] writes it).
    pub fn from_sha256_hex(hex: &str) -> Digest {
        debug_assert!(hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        Digest(format!("sha256:{hex}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Lowercase hex of a hash output, as digests spell it.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Why a reference is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error("empty image reference")]
    Empty,
    #[error("invalid digest {0:?}: want sha256: followed by 64 lowercase hex digits")]
    Digest(String),
    #[error("invalid tag {0:?}: want up to 128 of [A-Za-z0-9_.-], not starting with . or -")]
    Tag(String),
    #[error("invalid repository {0:?}: want lowercase path components of [a-z0-9._-]")]
    Repository(String),
    #[error("invalid registry host {0:?}")]
    Registry(String),
}

/// A parsed image reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ImageRef {
    /// The registry as the reference names it (`docker.io` for Docker Hub), with its port.
    pub registry: String,
    pub repository: String,
    pub tag: Option<String>,
    pub digest: Option<Digest>,
}

impl ImageRef {
    pub fn parse(text: &str) -> Result<ImageRef, RefError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(RefError::Empty);
        }
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(Digest::parse(digest)?)),
            None => (text, None),
        };
        // A tag is after the last ':' that follows the last '/' (a port's ':' comes before it).
        let last_slash = name.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match name[last_slash..].rfind(':') {
            Some(i) => {
                let at = last_slash + i;
                (&name[..at], Some(name[at + 1..].to_string()))
            }
            None => (name, None),
        };
        if let Some(tag) = &tag {
            let valid = !tag.is_empty()
                && tag.len() <= 128
                && !tag.starts_with(['.', '-'])
                && tag
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
            if !valid {
                return Err(RefError::Tag(tag.clone()));
            }
        }
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest)) if is_registry(first) => (first.to_string(), rest.to_string()),
            _ => ("docker.io".to_string(), name.to_string()),
        };
        if !is_domain_and_port(&registry) {
            return Err(RefError::Registry(registry));
        }
        let repository = if registry == "docker.io" && !repository.contains('/') {
            format!("library/{repository}")
        } else {
            repository
        };
        let valid_repo = !repository.is_empty()
            && repository.split('/').all(|part| {
                !part.is_empty()
                    && part.bytes().all(|b| {
                        b.is_ascii_lowercase()
                            || b.is_ascii_digit()
                            || matches!(b, b'.' | b'_' | b'-')
                    })
            });
        if !valid_repo {
            return Err(RefError::Repository(repository));
        }
        let tag = if tag.is_none() && digest.is_none() {
            Some("latest".to_string())
        } else {
            tag
        };
        Ok(ImageRef {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// The host the API is served from: Docker Hub's API lives on `registry-1.docker.io`.
    pub fn api_host(&self) -> &str {
        if self.registry == "docker.io" {
            "registry-1.docker.io"
        } else {
            &self.registry
        }
    }

    /// What to ask `/v2/<repository>/manifests/<reference>` for: the digest wins over the tag.
    pub fn reference(&self) -> &str {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d.as_str(),
            (None, Some(t)) => t,
            (None, None) => "latest",
        }
    }
}

/// The reference grammar's domain (distribution's `reference` package, `regexp.go`): DNS-like
/// components of letters, digits and inner `-`, joined by `.`, or a bracketed IPv6 literal;
/// then an optional `:port` of digits. Nothing else, so a name the API accepted from any pod
/// spec (it does not check image strings) cannot carry other characters into pullpath.
pub fn is_domain_and_port(text: &str) -> bool {
    let (host, port) = match text.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((inside, after)) => {
                let v6 = !inside.is_empty()
                    && inside.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
                if !v6 {
                    return false;
                }
                ("", after)
            }
            None => return false,
        },
        None => match text.split_once(':') {
            Some((host, _)) => (host, &text[host.len()..]),
            None => (text, ""),
        },
    };
    let port_ok = match port.strip_prefix(':') {
        Some(digits) => !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
        None => port.is_empty(),
    };
    let component = |c: &str| {
        let bytes = c.as_bytes();
        !bytes.is_empty()
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-')
            && bytes[0] != b'-'
            && bytes[bytes.len() - 1] != b'-'
    };
    let host_ok = text.starts_with('[') || host.split('.').all(component);
    port_ok && host_ok
}

impl fmt::Display for ImageRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// The registry a reference names itself (`r.example:5000/app` → `r.example:5000`), without
/// parsing the rest: none for a short name such as `app` or `team/app`.
pub fn named_registry(reference: &str) -> Option<&str> {
    let (first, _) = reference.split_once('/')?;
    is_registry(first).then_some(first)
}

/// The registry host of a reference written without its repository (`r.example.com`,
/// `123456789012.dkr.ecr.eu-west-1.amazonaws.com:v1`), as the runtime normalised it or as
/// written. A name without `/` is a Docker Hub official image (`docker.io/library/NAME`,
/// distribution/reference `splitDockerDomain`), so such a pull asks Docker Hub for a
/// repository named after the host, and Docker Hub answers "denied" for it. Official images
/// have no dotted names, so a dotted name ending in an alphabetic label is a registry. A CI
/// log's `***` mask stands in for a secret part of the name.
pub fn registry_read_as_repository(reference: &str) -> Option<&str> {
    let name = ["docker.io/library/", "index.docker.io/library/"]
        .iter()
        .find_map(|prefix| reference.strip_prefix(prefix))
        .unwrap_or(reference);
    if name.contains('/') {
        return None;
    }
    let name = name.split([':', '@']).next().unwrap_or(name);
    let (_, last_label) = name.rsplit_once('.')?;
    let hostlike = last_label.len() >= 2
        && last_label.bytes().all(|b| b.is_ascii_alphabetic())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'*'));
    hostlike.then_some(name)
}

/// Docker's rule: the first component is a registry if it has a dot or a port, or is
/// `localhost`, or is an IPv6 literal.
fn is_registry(first: &str) -> bool {
    first.contains(['.', ':']) || first == "localhost" || first.starts_with('[')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ImageRef {
        ImageRef::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn docker_hub_short_names_get_library_and_latest() {
        let r = parse("nginx");
        assert_eq!(r.to_string(), "docker.io/library/nginx:latest");
        assert_eq!(r.api_host(), "registry-1.docker.io");
        assert_eq!(
            parse("bitnami/redis:7").to_string(),
            "docker.io/bitnami/redis:7"
        );
    }

    #[test]
    fn named_registry_only_for_qualified_names() {
        assert_eq!(
            named_registry("r.example:5000/app:v1"),
            Some("r.example:5000")
        );
        assert_eq!(named_registry("localhost/app"), Some("localhost"));
        assert_eq!(named_registry("team/app:v1"), None);
        assert_eq!(named_registry("nginx"), None);
    }

    #[test]
    fn a_registry_written_without_its_repository_is_read_as_docker_hub() {
        let ecr = "123456789012.dkr.ecr.eu-west-1.amazonaws.com";
        assert_eq!(registry_read_as_repository(ecr), Some(ecr));
        // As containerd prints it, normalised, and with a tag or the CI log's mask.
        assert_eq!(
            registry_read_as_repository(&format!("docker.io/library/{ecr}:latest")),
            Some(ecr)
        );
        assert_eq!(
            registry_read_as_repository("***.dkr.ecr.eu-west-1.amazonaws.com"),
            Some("***.dkr.ecr.eu-west-1.amazonaws.com")
        );
        // The parse agrees: Docker Hub, library/NAME.
        assert_eq!(
            parse(ecr).to_string(),
            format!("docker.io/library/{ecr}:latest")
        );
        for fine in [
            "nginx",
            "nginx:1.27",
            "team/app",
            "r.example.com/app",
            "docker.io/library/nginx:latest",
            "python:3.12",
        ] {
            assert_eq!(registry_read_as_repository(fine), None, "{fine}");
        }
    }

    #[test]
    fn ports_and_ip_literals_are_registries() {
        let r = parse("localhost:5000/app:v1");
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.reference()),
            ("localhost:5000", "app", "v1")
        );
        assert_eq!(parse("10.0.0.5/team/app").registry, "10.0.0.5");
        assert_eq!(parse("[::1]:5000/app:v2").registry, "[::1]:5000");
        assert_eq!(
            parse("registry.example.test:8443/a/b/c").repository,
            "a/b/c"
        );
    }

    #[test]
    fn digest_wins_over_tag() {
        let d = format!("sha256:{}", "ab".repeat(32));
        let r = parse(&format!("registry.example.test/app:v1@{d}"));
        assert_eq!(r.reference(), d);
        assert_eq!(r.tag.as_deref(), Some("v1"));
        assert_eq!(parse(&format!("app@{d}")).tag, None);
    }

    #[test]
    fn bad_references_are_named() {
        assert_eq!(ImageRef::parse(" "), Err(RefError::Empty));
        assert!(matches!(
            ImageRef::parse("app@sha256:xyz"),
            Err(RefError::Digest(_))
        ));
        assert!(matches!(ImageRef::parse("app:-bad"), Err(RefError::Tag(_))));
        assert!(matches!(
            ImageRef::parse("registry.example.test/App"),
            Err(RefError::Repository(_))
        ));
        assert!(matches!(
            ImageRef::parse("registry.example.test//x"),
            Err(RefError::Repository(_))
        ));
    }

    #[test]
    fn a_domain_as_the_reference_grammar_has_it() {
        // distribution/reference's domain cases.
        for good in [
            "docker.io",
            "localhost:5000",
            "r.example",
            "127.0.0.1:5000",
            "[2001:db8::1]",
            "[2001:db8::1]:5000",
            "xn--bcher-kva.example",
            "a-b.c",
        ] {
            assert!(is_domain_and_port(good), "{good}");
        }
        for bad in [
            "",
            "-r.example",
            "r-.example",
            "r..example",
            "r.example:",
            "r.example:50a",
            "r_x.example",
            "[2001:db8::1",
            "[zz]",
            "\u{FFFD}index.\u{FFFD}",
            "r.example ",
        ] {
            assert!(!is_domain_and_port(bad), "{bad:?}");
        }
        assert!(matches!(
            ImageRef::parse("\u{FFFD}index.\u{FFFD}/x"),
            Err(RefError::Registry(_))
        ));
    }
}
