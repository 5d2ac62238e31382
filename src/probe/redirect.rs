//! Redirects, followed as containerd's HTTP client follows them: Go's `net/http` rules
//! (301, 302, 303, 307 and 308 with a `Location`, relative locations resolved against the
//! request URL, `https` → `http` followed) under containerd's limit of 10
//! (`remotes/docker/resolver.go`, `CheckRedirect`: "stopped after 10 redirects").

use url::Url;

use super::authority::{Authority, Scheme};

/// containerd stops after this many redirects.
pub const MAX_REDIRECTS: usize = 10;

/// What an answer means for the request that got it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Not a redirect (or a 3xx without `Location`, which Go hands back as the answer).
    Final,
    /// Follow to this URL.
    Follow(Url),
}

/// A redirect the runtime cannot follow, or will not follow further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedirectProblem {
    /// The `Location` does not resolve against the request URL: Go's own parse error.
    Unusable {
        status: u16,
        location: String,
        error: String,
    },
    /// The `Location` is not an http(s) URL with a host (shown without its query).
    NotHttp { status: u16, target: String },
    /// More than [`MAX_REDIRECTS`] in a row.
    TooMany,
    /// The token request's POST (it carries the password) redirected to another host.
    CredentialElsewhere { from: Authority, target: String },
}

impl std::fmt::Display for RedirectProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedirectProblem::Unusable {
                status,
                location,
                error,
            } => write!(
                f,
                "{status} with an unusable Location {location:?}: {error}"
            ),
            RedirectProblem::NotHttp { status, target } => {
                write!(f, "{status} to {target}, which is not an http(s) URL")
            }
            RedirectProblem::TooMany => write!(
                f,
                "stopped after {MAX_REDIRECTS} redirects, as containerd does (a redirect loop?)"
            ),
            RedirectProblem::CredentialElsewhere { from, target } => write!(
                f,
                "{from} redirects the credential POST to {target}: pullpath does not send the password to another host (containerd would)"
            ),
        }
    }
}

/// The next request after an answer with `status` and `location` to a request for `current`.
pub fn interpret_redirect(
    current: &Url,
    status: u16,
    location: Option<&str>,
) -> Result<Next, RedirectProblem> {
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return Ok(Next::Final);
    }
    let Some(location) = location else {
        return Ok(Next::Final);
    };
    let next = current
        .join(location.trim())
        .map_err(|e| RedirectProblem::Unusable {
            status,
            location: location.to_string(),
            error: e.to_string(),
        })?;
    if Scheme::of(&next).is_none() || next.host().is_none() {
        return Err(RedirectProblem::NotHttp {
            status,
            target: redact_url(&next),
        });
    }
    Ok(Next::Follow(next))
}

/// True when a redirect sends the request from TLS to clear text.
pub fn is_downgrade(from: &Url, to: &Url) -> bool {
    from.scheme() == "https" && to.scheme() == "http"
}

/// Whether a request to `target` carries the Authorization header obtained for `owner`: only
/// to the very host and port it was obtained for. (Go's client would also keep it for a
/// subdomain; pullpath never lets a registry's credential reach another host.)
pub fn carries_authorization(owner: &Authority, target: &Authority) -> bool {
    owner == target
}

/// A URL without its query: signed URLs carry credentials there.
pub fn redact_url(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.query().is_some() {
        shown.set_query(Some("…"));
    }
    let _ = shown.set_password(None);
    shown.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).expect("url")
    }

    #[test]
    fn follows_what_go_follows() {
        let here = url("https://r.example/v2/a/blobs/sha256:1");
        for status in [301, 302, 303, 307, 308] {
            assert_eq!(
                interpret_redirect(&here, status, Some("https://store.example/x?sig=1")),
                Ok(Next::Follow(url("https://store.example/x?sig=1")))
            );
        }
        assert_eq!(
            interpret_redirect(&here, 200, Some("https://x/")),
            Ok(Next::Final)
        );
        assert_eq!(
            interpret_redirect(&here, 304, Some("https://x/")),
            Ok(Next::Final)
        );
        assert_eq!(interpret_redirect(&here, 307, None), Ok(Next::Final));
    }

    #[test]
    fn relative_locations_and_downgrades() {
        let here = url("https://r.example/v2/a/blobs/sha256:1");
        assert_eq!(
            interpret_redirect(&here, 307, Some("/storage/1")),
            Ok(Next::Follow(url("https://r.example/storage/1")))
        );
        assert_eq!(
            interpret_redirect(&here, 302, Some("../other")),
            Ok(Next::Follow(url("https://r.example/v2/a/other")))
        );
        let Ok(Next::Follow(plain)) =
            interpret_redirect(&here, 302, Some("http://minio.example:9000/b"))
        else {
            panic!("followed")
        };
        assert!(is_downgrade(&here, &plain));
        assert!(!is_downgrade(&plain, &here));
        assert_eq!(
            interpret_redirect(&here, 302, Some("ftp://x/y")),
            Err(RedirectProblem::NotHttp {
                status: 302,
                target: "ftp://x/y".into()
            })
        );
        assert!(matches!(
            interpret_redirect(&here, 302, Some("http://[::1")),
            Err(RedirectProblem::Unusable { status: 302, .. })
        ));
    }

    #[test]
    fn authorization_stays_with_its_host() {
        let registry = Authority::parse("r.example", 443).expect("a");
        let same = Authority::parse("r.example:443", 443).expect("a");
        let sub = Authority::parse("blob.r.example", 443).expect("a");
        let other_port = Authority::parse("r.example:5000", 443).expect("a");
        assert!(carries_authorization(&registry, &same));
        assert!(!carries_authorization(&registry, &sub));
        assert!(!carries_authorization(&registry, &other_port));
    }

    #[test]
    fn signed_urls_are_not_shown() {
        let shown = redact_url(&url("https://u:pw@store.example/blob?sig=SECRET&se=1"));
        assert!(!shown.contains("SECRET") && !shown.contains("pw"));
    }
}
