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

/// The next request after an answer with `status` and `location` to a request for `current`.
pub fn interpret_redirect(
    current: &Url,
    status: u16,
    location: Option<&str>,
) -> Result<Next, String> {
    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
        return Ok(Next::Final);
    }
    let Some(location) = location else {
        return Ok(Next::Final);
    };
    let next = current
        .join(location.trim())
        .map_err(|e| format!("{status} with an unusable Location {location:?}: {e}"))?;
    if Scheme::of(&next).is_none() || next.host().is_none() {
        return Err(format!(
            "{status} to {}, which is not an http(s) URL",
            redact_url(&next)
        ));
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
        assert!(interpret_redirect(&here, 302, Some("ftp://x/y")).is_err());
        assert!(interpret_redirect(&here, 302, Some("http://[::1")).is_err());
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
