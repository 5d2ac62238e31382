//! The registry API's answers, read as pure functions of status, headers and bytes: the `/v2/`
//! ping and its challenge, the token realm's answer, a failed manifest or blob request.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use super::refusal::{HttpRefusal, Refused, Said};

/// Limits on what a registry may send.
pub const MAX_MANIFEST: usize = 4 * 1024 * 1024;
pub const MAX_TOKEN: usize = 1024 * 1024;
pub const MAX_ERROR_BODY: usize = 64 * 1024;

/// The registry's challenge (`WWW-Authenticate`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
    },
    Unknown(String),
}

impl Challenge {
    pub fn parse(header: &str) -> Challenge {
        let (scheme, params) = header.trim().split_once(' ').unwrap_or((header.trim(), ""));
        let params = parse_params(params);
        match scheme.to_ascii_lowercase().as_str() {
            "basic" => Challenge::Basic,
            "bearer" => match params.get("realm") {
                Some(realm) => Challenge::Bearer {
                    realm: realm.clone(),
                    service: params.get("service").cloned(),
                },
                None => Challenge::Unknown(shorten(header, 300)),
            },
            _ => Challenge::Unknown(shorten(header, 300)),
        }
    }
}

/// What `GET /v2/` said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ping {
    /// 2xx: no authentication.
    Open,
    /// 401 with a challenge to answer.
    Challenge(Challenge),
    /// Anything else: the refusal (its layer is [`HttpRefusal::layer`]).
    Failed(HttpRefusal),
}

pub fn interpret_ping(status: u16, www_authenticate: Option<&str>, body: &[u8]) -> Ping {
    match (status, www_authenticate) {
        (200..=299, _) => Ping::Open,
        (401, Some(challenge)) => Ping::Challenge(Challenge::parse(challenge)),
        (401, None) => Ping::Failed(HttpRefusal::new(
            401,
            Refused::NoChallenge,
            Said::from_registry(body),
        )),
        (status, _) => Ping::Failed(HttpRefusal::new(
            status,
            Refused::Ping,
            Said::from_registry(body),
        )),
    }
}

/// A bearer token and what it grants (when it is a JWT with an `access` claim).
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    pub value: String,
    /// `None` for an opaque token.
    pub granted: Option<Vec<String>>,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Token {{ value: <redacted>, granted: {:?} }}",
            self.granted
        )
    }
}

/// The token realm's answer: a token, or its refusal.
/// containerd's OAuth token request (`auth.FetchTokenWithOAuth`, client id
/// `containerd-client`): the password grant for a user name, the refresh-token grant for an
/// identity token (no user name).
pub fn oauth_form(username: &str, secret: &str, service: Option<&str>, scope: &str) -> String {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("scope", scope);
    if let Some(service) = service {
        form.append_pair("service", service);
    }
    form.append_pair("client_id", "containerd-client");
    if username.is_empty() {
        form.append_pair("grant_type", "refresh_token");
        form.append_pair("refresh_token", secret);
    } else {
        form.append_pair("grant_type", "password");
        form.append_pair("username", username);
        form.append_pair("password", secret);
    }
    form.finish()
}

/// Whether containerd retries a refused OAuth POST as a GET with Basic credentials
/// (`remotes/docker/authorizer.go`: registries without POST answer 404, 401, 400, or 405).
pub fn oauth_falls_back_to_get(status: u16, has_username: bool) -> bool {
    matches!(status, 400 | 401 | 404) || (status == 405 && has_username)
}

/// The token realm's answer to a request made as `asked_as` ("anonymous GET", …).
pub fn interpret_token(
    status: u16,
    body: &[u8],
    repository: &str,
    asked_as: &str,
) -> Result<Token, Box<HttpRefusal>> {
    let asked_as = asked_as.to_string();
    if !(200..=299).contains(&status) {
        return Err(Box::new(HttpRefusal::new(
            status,
            Refused::Token { asked_as },
            Said::from_registry(body),
        )));
    }
    let value = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("token")
                .or(v.get("access_token"))
                .and_then(|t| t.as_str())
                .filter(|t| !t.is_empty())
                .map(String::from)
        })
        .ok_or_else(|| {
            Box::new(HttpRefusal::new(
                status,
                Refused::NoToken { asked_as },
                Said::Empty,
            ))
        })?;
    let granted = granted_actions(&value, repository);
    Ok(Token { value, granted })
}

/// What a failed manifest request means, with the registry's own error code as evidence.
/// `challenge` is the answer's `WWW-Authenticate`; `had_auth` whether a credential was sent.
pub fn interpret_manifest_failure(
    status: u16,
    challenge: Option<&str>,
    body: &[u8],
    had_auth: bool,
) -> HttpRefusal {
    let said = Said::from_registry(body);
    let challenge = challenge.unwrap_or("");
    let refused = match status {
        401 if challenge.contains("insufficient_scope")
            || (had_auth && said.mentions("insufficient")) =>
        {
            Refused::InsufficientScope
        }
        404 if said.has_code("NAME_UNKNOWN") => Refused::RepositoryMissing,
        404 => Refused::ReferenceMissing,
        _ => Refused::Status,
    };
    HttpRefusal::new(status, refused, said)
}

/// What a 408 or 429 on a manifest costs each runtime, with the registry's `Retry-After`.
/// containerd asks again at once, up to five more times, whatever `Retry-After` says
/// (core/remotes/docker/resolver.go, `retryRequest`), so one pull spends six requests of the
/// limit; containers/image (CRI-O, podman) waits `Retry-After` between its tries
/// (docker/docker_client.go, `makeRequestToResolvedURL`). The lab counts both.
pub fn retry_note(status: u16, retry_after: Option<&str>) -> Option<String> {
    if !matches!(status, 408 | 429) {
        return None;
    }
    // The registry's words, kept short and printable: a hostile header prints as nothing worse.
    let value: Option<String> = retry_after.map(|v| {
        v.trim()
            .chars()
            .filter(|c| c.is_ascii_graphic() || *c == ' ')
            .take(40)
            .collect()
    });
    let wait = match value.filter(|v| !v.is_empty()) {
        Some(value) => format!("the registry asks to wait (Retry-After: {value})"),
        None => "the registry names no wait (no Retry-After)".to_string(),
    };
    Some(format!(
        "{wait}; containerd asks again at once, five more times, without waiting, so each pull spends six requests of the limit; CRI-O and podman wait Retry-After between tries"
    ))
}

/// The `access` claim of a JWT, read without verifying (the registry verifies; we only report).
pub fn granted_actions(token: &str, repository: &str) -> Option<Vec<String>> {
    let payload = token.split('.').nth(1)?;
    let claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload.trim_end_matches('=')).ok()?)
            .ok()?;
    let access = claims.get("access")?.as_array()?;
    let mut actions = Vec::new();
    for entry in access {
        if entry.get("name").and_then(|n| n.as_str()) == Some(repository) {
            actions.extend(
                entry
                    .get("actions")?
                    .as_array()?
                    .iter()
                    .filter_map(|a| a.as_str())
                    .map(String::from),
            );
        }
    }
    Some(actions)
}

/// `realm="https://a/token",service="x",scope="repository:a:pull,push"` → map (commas in quotes kept).
fn parse_params(text: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut rest = text.trim();
    while !rest.is_empty() {
        let Some((key, after)) = rest.split_once('=') else {
            break;
        };
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let after = after.trim_start();
        let (value, remaining) = if let Some(quoted) = after.strip_prefix('"') {
            match quoted.find('"') {
                Some(end) => (quoted[..end].to_string(), &quoted[end + 1..]),
                None => (quoted.to_string(), ""),
            }
        } else {
            match after.find(',') {
                Some(end) => (after[..end].trim().to_string(), &after[end..]),
                None => (after.trim().to_string(), ""),
            }
        };
        out.insert(key, value);
        rest = remaining.trim_start().trim_start_matches(',').trim_start();
    }
    out
}

/// At most `limit` characters of `text`.
pub fn shorten(text: &str, limit: usize) -> String {
    text.chars().take(limit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::authority::is_metadata_address;
    use crate::vocab::Layer;

    #[test]
    fn challenges_parse_with_commas_inside_quotes() {
        let c = Challenge::parse(
            r#"Bearer realm="https://auth.example.test/token",service="registry.example.test",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(
            c,
            Challenge::Bearer {
                realm: "https://auth.example.test/token".into(),
                service: Some("registry.example.test".into())
            }
        );
        assert_eq!(Challenge::parse(r#"Basic realm="x""#), Challenge::Basic);
        assert!(matches!(
            Challenge::parse("Negotiate"),
            Challenge::Unknown(_)
        ));
        assert!(matches!(
            Challenge::parse("Bearer service=x"),
            Challenge::Unknown(_)
        ));
    }

    #[test]
    fn pings() {
        assert_eq!(interpret_ping(200, None, b""), Ping::Open);
        assert_eq!(
            interpret_ping(401, Some("Basic realm=x"), b""),
            Ping::Challenge(Challenge::Basic)
        );
        assert!(matches!(
            interpret_ping(401, None, b""),
            Ping::Failed(r) if r.layer() == Layer::Auth
        ));
        assert!(matches!(
            interpret_ping(403, None, b"blocked by policy"),
            Ping::Failed(d)
                if d.layer() == Layer::Forbidden && d.said == Said::Excerpt { text: "blocked by policy".into(), of: None }
                    && d.to_string() == "GET /v2/ answered 403: blocked by policy"
        ));
        assert!(matches!(
            interpret_ping(502, None, b""),
            Ping::Failed(r) if r.layer() == Layer::Other
        ));
    }

    #[test]
    fn the_oauth_form_and_when_containerd_falls_back_to_get() {
        let form = oauth_form("alice", "p&ss word", Some("svc"), "repository:a/b:pull");
        assert_eq!(
            form,
            "scope=repository%3Aa%2Fb%3Apull&service=svc&client_id=containerd-client&grant_type=password&username=alice&password=p%26ss+word"
        );
        let identity = oauth_form("", "refresh-me", None, "repository:a/b:pull");
        assert!(identity.contains("grant_type=refresh_token&refresh_token=refresh-me"));
        for status in [400, 401, 404] {
            assert!(oauth_falls_back_to_get(status, false), "{status}");
        }
        assert!(oauth_falls_back_to_get(405, true));
        assert!(!oauth_falls_back_to_get(405, false));
        assert!(!oauth_falls_back_to_get(403, true));
        assert!(!oauth_falls_back_to_get(500, true));
    }

    #[test]
    fn tokens_and_their_grants() {
        let payload = URL_SAFE_NO_PAD
            .encode(r#"{"access":[{"type":"repository","name":"team-b/app","actions":[]}]}"#);
        let jwt = format!("h.{payload}.s");
        let body = format!(r#"{{"token":"{jwt}"}}"#);
        let token = interpret_token(200, body.as_bytes(), "team-b/app", "GET").expect("token");
        assert_eq!(token.granted, Some(vec![]));
        assert!(
            !format!("{token:?}").contains(&jwt),
            "Debug redacts the token"
        );
        let opaque = interpret_token(200, br#"{"access_token":"abc"}"#, "x", "GET").expect("token");
        assert_eq!(opaque.granted, None);
        assert_eq!(
            interpret_token(200, b"{}", "x", "GET").map_err(|r| (r.layer(), r.refused)),
            Err((
                Layer::Other,
                Refused::NoToken {
                    asked_as: "GET".into()
                }
            ))
        );
        let refused = interpret_token(
            401,
            br#"{"errors":[{"code":"UNAUTHORIZED","message":"bad"}]}"#,
            "x",
            "anonymous GET",
        )
        .map_err(|refusal| (refusal.layer(), refusal.to_string()));
        assert_eq!(
            refused,
            Err((
                Layer::Auth,
                "401: UNAUTHORIZED bad (anonymous GET)".to_string()
            ))
        );
    }

    #[test]
    fn manifest_failures() {
        let detail = interpret_manifest_failure(
            401,
            Some(r#"Bearer realm="r",error="insufficient_scope""#),
            b"",
            true,
        );
        assert_eq!(detail.layer(), Layer::Forbidden);
        assert_eq!(detail.refused, Refused::InsufficientScope);
        assert!(detail.to_string().contains("insufficient_scope"));
        let body = br#"{"errors":[{"code":"NAME_UNKNOWN","message":"repository name not known"}]}"#;
        let detail = interpret_manifest_failure(404, None, body, true);
        assert_eq!(detail.layer(), Layer::NotFound);
        assert_eq!(detail.refused, Refused::RepositoryMissing);
        assert!(detail.to_string().contains("repository does not exist"));
        let tag = interpret_manifest_failure(404, None, b"", true);
        assert_eq!(tag.refused, Refused::ReferenceMissing);
        assert_eq!(
            interpret_manifest_failure(401, None, b"", false).layer(),
            Layer::Auth
        );
        assert_eq!(
            interpret_manifest_failure(429, None, b"", false).layer(),
            Layer::RateLimit
        );
        assert_eq!(
            interpret_manifest_failure(500, None, b"", false).layer(),
            Layer::Other
        );
        assert_eq!(Said::from_registry(b"\x00\x01"), Said::Empty);
    }

    #[test]
    fn a_rate_limit_says_what_each_runtime_spends_and_the_wait_asked() {
        let note = retry_note(429, Some("1")).expect("a note for 429");
        assert!(
            note.contains("Retry-After: 1") && note.contains("six requests"),
            "{note}"
        );
        assert!(
            retry_note(408, None)
                .expect("a note for 408")
                .contains("no Retry-After")
        );
        let hostile = retry_note(429, Some(&format!("\x1b[31m{}", "9".repeat(500)))).expect("note");
        assert!(
            !hostile.contains('\x1b') && hostile.len() < 300,
            "{hostile}"
        );
        assert_eq!(retry_note(404, Some("1")), None);
        assert_eq!(retry_note(503, Some("30")), None);
    }

    #[test]
    fn link_local_and_metadata_addresses_are_never_quoted() {
        let at =
            |host: &str| crate::probe::authority::Authority::parse(host, 443).expect("authority");
        for metadata in [
            "169.254.169.254",
            "[fe80::1]",
            "[fd00:ec2::254]",
            "metadata.google.internal",
        ] {
            let shown = Said::from_host(b"{\"AccessKeyId\":\"AKIA\"}", &at(metadata), false);
            assert!(
                matches!(shown, Said::Withheld { .. }),
                "{metadata}: {shown}"
            );
            assert!(!shown.to_string().contains("AKIA"), "{shown}");
        }
        assert!(!is_metadata_address("10.0.0.1"));
    }
}
