//! A registry's "denied": the prefix says only that the registry refused, so the words after
//! it decide between a missing repository, missing rights and missing credentials.

use super::Ambiguity;
use super::named::{registry_of, status_code};
use super::prose::denied_ambiguity;
use crate::failure_text::chain::Chain;
use crate::vocab::Layer;

/// A registry's "denied" that names why: a network rule (ACR `client with IP … is not allowed
/// access`) or a named permission (GCP `Permission "…" denied`, AWS `is not authorized to
/// perform`). Both mean the caller was recognised and refused.
const NAMED_REFUSAL_WORDS: [&str; 4] = [
    "is not allowed access",
    "client with IP",
    "Permission \"",
    "is not authorized to perform",
];

/// `pull access denied`, `repository does not exist or may require …`, `denied: …`: the
/// prefix says only that the registry refused; what follows it decides. containerd ≥ 1.7 puts
/// the prefix before any `authorization failed` (core/remotes/docker/resolver.go), whatever
/// failed underneath, so the words after it are read, not the prefix.
pub(super) fn denied(chain: &Chain, cause: &str) -> (Layer, Option<Ambiguity>) {
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
pub(super) fn is_bare_denied(chain: &Chain) -> bool {
    chain.links.last().is_some_and(|l| l == "denied")
}

#[cfg(test)]
mod tests {
    use super::super::layer::mechanism;
    use super::super::one;
    use super::super::{classify, runtime};
    use super::*;

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
}
