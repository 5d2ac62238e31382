//! Failure text → the runtime's error chain.
//!
//! Go errors nest as `context: context: cause`, outermost first. A kubelet event may hold
//! several attempts (`[rpc error: …, rpc error: …]`), a log line escapes its quotes
//! (`msg="…\"x\"…"`). This module undoes the escaping, splits attempts, splits each attempt at
//! `": "` outside quotes, and names the requests (`Get "https://…"`), dials, lookups and
//! statuses it finds, in order. It decides nothing; `classify` does.

use std::sync::LazyLock;

use regex::Regex;

use crate::image_ref::named_registry;

/// One attempt's chain, outermost link first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chain {
    /// The attempt's text, unescaped.
    pub text: String,
    /// The links, split at `": "` outside quotes.
    pub links: Vec<String>,
    /// Requests in the order they appear (the last one is the innermost).
    pub requests: Vec<Request>,
    /// The image the text names, if any (`Failed to pull image "X"`, `pull access denied for X`).
    pub image: Option<String>,
}

/// `Get "https://host/path"` as it appears in a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Index of the link holding it.
    pub link: usize,
    pub method: String,
    pub url: String,
    /// `host[:port]` of the URL.
    pub host: String,
    /// The URL's path, without the query.
    pub path: String,
}

static REQUEST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\b(GET|HEAD|POST|PUT|Get|Head|Post|Put|(?:GET|HEAD|POST) request to)\s+"?(https?://[^\s"]+?)"?(?:: |:$|\s|$|")"#)
        .expect("static regex")
});
/// The authority of a URL: an IPv6 literal first (`[fd00::5]:5000`), else a name or IPv4 with an
/// optional port, ending at a quote or bracket around the URL (people redact names as
/// `<acrname>.azurecr.io`, so angle brackets stay). It reads URLs that [`without_userinfo`]
/// has cleared of a `user:password@`.
static URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"https?://(\[[0-9a-fA-F:.]+\](?::\d+)?|[^/\s"'?:\[\](),;@]+(?::\d+)?)([^\s"'?]*)"#)
        .expect("static regex")
});
/// A bare host name a rendered page made a link of: `[quay.io](http://quay.io/)`.
static MARKDOWN_AUTOLINK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\[([A-Za-z0-9][A-Za-z0-9.:-]*)\]\(https?://[^)\s]*\)").expect("static regex")
});
/// A URL whose `//` a person broke when pasting (`https: /host/…`, `https:/host/…`), which
/// forums do to keep a link from being made.
static BROKEN_URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(https?): ?/([A-Za-z0-9\[])").expect("static regex"));
/// Where the runtimes name the image. After a verb (`pull image`, `Back-off pulling image`) the
/// name is always quoted, and requiring the quote keeps `pulling image failed` from naming an
/// image called "failed"; the other contexts name it bare. A CI log (GitHub Actions) masks a
/// secret part of the name as `***`.
static IMAGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:(?:[Pp]ull|pulling|unpack|resolve|get sandbox) image\s*"|resolve reference\s*"|Back-off pulling image\s*"|resolve ref |pull access denied for |manifest for |repositories/|(?:^|[^+A-Za-z])docker://|trying to pull repository |reading manifest \S+ in |authn lookup for |✘ Image )((?:\*\*\*|[A-Za-z0-9])[A-Za-z0-9._:/@\[\]*-]*)"#,
    )
    .expect("static regex")
});
/// Rarer places a name appears, read only when [`IMAGE`] found no qualified name (keeping the
/// common path to one regex): any quoted name after "image" (the kubelet's `Pulling image "X"`,
/// `Container image "X"`, a structured log's `image="X"`),
/// `failed to pull "X"`, podman's `Trying to pull X...` and `unable to pull X: …` (not the ECS
/// agent's `unable to pull secrets or registry auth`), Docker's builder `invalid from
/// flag value X`, a pasted `docker pull X` command, Docker's `repository X not found:
/// does not exist or no pull access` (moby daemon/internal/distribution/errors.go), kubeadm's
/// `failed to pull image X: output: …`, the kubelet's `credential provider plugin P for image
/// X`, and Docker's schema 1 notice (`Suggest the author of X to upgrade`).
static IMAGE_ELSEWHERE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?:(?-u:\b)[Ii]mage\s*"|(?-u:\b)image=\\?"|to pull "|[Tt]rying to pull |invalid from flag value |(?:docker|podman|nerdctl|crictl) (?:image )?pull (?:-\S+ )*|[Ff]ailed to pull image |provider plugin \S+ for image |Suggest the author of )([A-Za-z0-9][A-Za-z0-9._:/@\[\]-]*)|repository ([A-Za-z0-9][A-Za-z0-9._:/@-]*) not found: does not exist|unable to pull ([A-Za-z0-9][A-Za-z0-9._:/@\[\]-]*): "#,
    )
    .expect("static regex")
});

/// Split failure text into attempts and parse each one's chain.
pub fn parse(text: &str) -> Vec<Chain> {
    let text = without_typographic_quotes(text);
    let (values, whole) = log_values(&text);
    let text = repair_urls(&values);
    let text = without_markdown_autolinks(&text);
    let mut chains: Vec<Chain> = split_attempts(&text)
        .into_iter()
        .map(parse_attempt)
        .collect();
    // A log record may name the image outside the values read (klog's `image="X"`, kubeadm's
    // `failed to pull image X: output: time=… msg="…"`).
    if let Some(whole) = whole
        && chains.iter().any(|c| c.image.is_none())
    {
        let outside = image_in(&whole);
        for chain in chains.iter_mut().filter(|c| c.image.is_none()) {
            chain.image.clone_from(&outside);
        }
    }
    chains
}

/// A paste through a word processor or a translator curls its quotes (`Head“ https://…`):
/// the runtimes print straight ones.
fn without_typographic_quotes(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains(['“', '”', '„', '‘', '’']) {
        text.replace(['“', '”', '„'], "\"")
            .replace(['‘', '’'], "'")
            .into()
    } else {
        text.into()
    }
}

/// A paste copied from a rendered page keeps the page's links of bare host names as markdown:
/// `lookup [quay.io](http://quay.io/) on …`. The name is what the runtime printed.
fn without_markdown_autolinks(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains("](http") {
        MARKDOWN_AUTOLINK.replace_all(text, "$1")
    } else {
        text.into()
    }
}

/// `https: /host` and `https:/host` back to `https://host`; a well-formed URL is left alone.
fn repair_urls(text: &str) -> std::borrow::Cow<'_, str> {
    // The regex only where a scheme is followed by anything but `//` (this runs per message).
    let broken = text.match_indices("http").any(|(at, _)| {
        let rest = text[at + 4..].strip_prefix('s').unwrap_or(&text[at + 4..]);
        rest.strip_prefix(':')
            .map(|r| r.strip_prefix(' ').unwrap_or(r))
            .is_some_and(|r| r.starts_with('/') && !r.starts_with("//"))
    });
    if broken {
        BROKEN_URL.replace_all(text, "$1://$2")
    } else {
        text.into()
    }
}

/// Log lines quote their message: `msg="failed … \"x\""`. The quoted values of the logfmt
/// keys that carry errors (`msg`, `error`, `err`, and a `message` such as Argo's
/// `new.message="ErrImagePull: …"`), one level of escaping undone; and, when those values are
/// all that was kept, the whole record unescaped the same way (`None`: the text is no record).
fn log_values(text: &str) -> (String, Option<String>) {
    let values: Vec<String> = ["msg=\"", "error=\"", "err=\"", "message=\""]
        .iter()
        .filter_map(|key| logfmt_value(text, key))
        .collect();
    if values.is_empty() {
        (unescaped(text.to_string()), None)
    } else {
        (
            unescaped(values.join(": ")),
            Some(unescaped(text.to_string())),
        )
    }
}

/// One level of a log value's escaping undone (`\"` and `\\\"` are quotes).
fn unescaped(text: String) -> String {
    if text.contains("\\\"") {
        text.replace("\\\\\\\"", "\"").replace("\\\"", "\"")
    } else {
        text
    }
}

/// The raw (still escaped) value of `key"…"` up to the first unescaped quote.
fn logfmt_value(text: &str, key: &str) -> Option<String> {
    let start = text.find(key)? + key.len();
    let bytes = text.as_bytes();
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(text[start..i].to_string()),
            _ => i += 1,
        }
    }
    Some(text[start..].to_string())
}

/// The kubelet joins the errors of several attempts as `[err1, err2]`; each starts with
/// `rpc error:` (or `Error response from daemon`). Split there; otherwise one attempt.
fn split_attempts(text: &str) -> Vec<&str> {
    const MARKERS: [&str; 2] = [", rpc error: ", ", Error response from daemon: "];
    let mut starts = vec![0];
    for marker in MARKERS {
        let mut from = 0;
        while let Some(at) = text[from..].find(marker) {
            starts.push(from + at + 2);
            from += at + marker.len();
        }
    }
    starts.sort_unstable();
    starts.dedup();
    let mut out = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).map_or(text.len(), |&next| next - 2);
        out.push(&text[start..end]);
    }
    out
}

fn parse_attempt(text: &str) -> Chain {
    let text = primary_of_error_list(text);
    let text = without_mirror_failures(text);
    let text = text.as_ref();
    let links = split_links(text);
    let mut requests = Vec::new();
    for (i, link) in links.iter().enumerate() {
        for caps in REQUEST.captures_iter(link) {
            let method = caps[1]
                .split_whitespace()
                .next()
                .unwrap_or("GET")
                .to_ascii_uppercase();
            let url = without_userinfo(caps[2].trim_end_matches(['"', ',', '.', ';']));
            if let Some(u) = URL.captures(&url) {
                requests.push(Request {
                    link: i,
                    method,
                    host: authority(&url, &u[1]),
                    path: u[2].to_string(),
                    url: url.clone(),
                });
            }
        }
    }
    // Old Docker messages name the URL without a method: `… endpoint https://host/v2/: …`,
    // containerd's `unexpected status code https://host/v2/…`. Only URLs of the registry API
    // count: a registry's message may carry a documentation link (`https://www.docker.com/
    // increase-rate-limit`), which is no request.
    if requests.is_empty() {
        for (i, link) in links.iter().enumerate() {
            for found in URL.find_iter(link) {
                let url = without_userinfo(
                    link[found.start()..]
                        .split([' ', '"', '\n'])
                        .next()
                        .unwrap_or_default()
                        .trim_end_matches([',', '.', ';', ')']),
                );
                let Some(u) = URL.captures(&url) else {
                    continue;
                };
                if is_api_url(&url, &u[2]) {
                    requests.push(Request {
                        link: i,
                        method: "GET".into(),
                        host: authority(&url, &u[1]),
                        path: u[2].to_string(),
                        url: url.clone(),
                    });
                }
            }
        }
    }
    Chain {
        text: text.to_string(),
        links,
        requests,
        image: image_in(text),
    }
}

/// The image a text names: the first name it gives, unless a later one is the same image with
/// its registry spelled out (CRI-O: `docker://x: reading manifest latest in docker.io/library/x`).
fn image_in(text: &str) -> Option<String> {
    let names_in = |re: &Regex| -> Vec<String> {
        re.captures_iter(text)
            .filter_map(|c| c.get(1).or(c.get(2)).or(c.get(3)))
            .map(|m| m.as_str().trim_end_matches([':', '.', ',']).to_string())
            .filter(|i| !i.is_empty() && !i.starts_with("sha256") && !is_platform(i))
            .collect()
    };
    let mut names: Vec<String> = engine_api_image(text).into_iter().collect();
    names.extend(names_in(&IMAGE));
    // Every context of IMAGE_ELSEWHERE holds one of these words: a cheap test before the regex.
    let elsewhere = [
        "mage \"",
        "mage\"",
        "to pull ",
        " pull ",
        "repository ",
        "invalid from flag value",
        "for image ",
        "Suggest the author",
        "image=",
    ]
    .iter()
    .any(|w| text.contains(w));
    if elsewhere && !names.iter().any(|i| named_registry(i).is_some()) {
        names.extend(names_in(&IMAGE_ELSEWHERE));
    }
    names
        .iter()
        .find(|i| named_registry(i).is_some())
        .or(names.first())
        .cloned()
}

/// The image of a failed Docker Engine API pull as its clients print the call
/// (`…/images/create?tag=2023.2&fromImage=r.example%3A8193%2Fteam%2Fapp`): the socket's URL
/// is no registry's, the query names the image.
fn engine_api_image(text: &str) -> Option<String> {
    let at = text.find("/images/create?")? + "/images/create?".len();
    let query = text[at..]
        .split(|c: char| c.is_whitespace() || c == '"')
        .next()?
        .trim_end_matches([':', ',', ')']);
    let mut from = None;
    let mut tag = None;
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "fromImage" => from = Some(value.into_owned()),
            "tag" => tag = Some(value.into_owned()),
            _ => {}
        }
    }
    let from = from.filter(|f| !f.is_empty())?;
    Some(match tag.filter(|t| !t.is_empty()) {
        Some(tag) => format!("{from}:{tag}"),
        None => from,
    })
}

/// The URL without the `user:password@` a pasted proxy or registry URL may carry: a
/// credential never reaches the report.
fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// A URL's `host[:port]` as the host is named everywhere else: lowercase, and without the
/// scheme's default port (`https://r.example:443/` is `r.example`).
fn authority(url: &str, host: &str) -> String {
    let default = if url.starts_with("https:") {
        ":443"
    } else {
        ":80"
    };
    let host = host.strip_suffix(default).unwrap_or(host);
    host.to_ascii_lowercase()
}

/// `linux/arm64/v8`: Docker's `no matching manifest for linux/arm64/v8 in the manifest list
/// entries` names the platform where other messages name the image.
fn is_platform(name: &str) -> bool {
    const OSES: [&str; 6] = [
        "linux/", "windows/", "darwin/", "freebsd/", "solaris/", "aix/",
    ];
    const ARCHES: [&str; 10] = [
        "amd64", "arm64", "arm", "386", "ppc64le", "ppc64", "s390x", "riscv64", "mips64le", "wasm",
    ];
    OSES.iter().any(|os| {
        name.strip_prefix(os).is_some_and(|rest| {
            let arch = rest.split('/').next().unwrap_or_default();
            ARCHES.contains(&arch)
        })
    })
}

/// A URL a runtime requests: the registry API (`/v1/`, `/v2/`), a token realm (its query
/// names the scope and service), or a blob's storage location after a redirect (Distribution's
/// storage path `…/docker/registry/v2/blobs/…`, or a signed URL: S3's `X-Amz-`, Azure's `sig=`,
/// Cloudflare's `verify=`, GCS's `Signature=`).
fn is_api_url(url: &str, path: &str) -> bool {
    const SIGNED: [&str; 5] = ["X-Amz-", "sig=", "verify=", "Signature=", "Expires="];
    path.starts_with("/v2/")
        || path.starts_with("/v1/")
        || path.ends_with("/token")
        || path.contains("/blobs/")
        || (url.contains("scope=") && url.contains("service="))
        || (url.contains('?') && SIGNED.iter().any(|s| url.contains(s)))
}

/// A registry may answer with a list of errors, which the distribution client prints as
/// `errors:\n<first>\n<second>\n`. The first comes from the `WWW-Authenticate` challenge and is
/// the specific one (`denied` for a valid token without rights, where the body only says
/// `unauthorized`); containers/image keeps only that one since (docker/errors.go,
/// `registryHTTPResponseToError`), and so does this reading of older runtimes' lists.
fn primary_of_error_list(text: &str) -> &str {
    const LIST: &str = "errors:\n";
    let Some(at) = text.find(LIST) else {
        return text;
    };
    let first = at + LIST.len();
    match text[first..].find('\n') {
        Some(end) => &text[..first + end],
        None => text,
    }
}

/// CRI-O and podman try the mirrors of registries.conf first and report them before the
/// primary location's error: `(Mirrors also failed: [m1: …]\n[m2: …]): REF: <primary error>`
/// (containers/image docker/docker_image_src.go). The primary error is the one the pull failed
/// with, and the mirrors' hosts are not its host: the parenthesis goes.
fn without_mirror_failures(text: &str) -> std::borrow::Cow<'_, str> {
    const MIRRORS: &str = "(Mirrors also failed: ";
    let Some(start) = text.find(MIRRORS) else {
        return text.into();
    };
    let mut depth = 0usize;
    for (at, c) in text[start..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    let rest = &text[start + at + 1..];
                    let rest = rest.strip_prefix(": ").unwrap_or(rest);
                    return format!("{}{rest}", &text[..start]).into();
                }
            }
            _ => {}
        }
    }
    text.into()
}

/// Split at `": "` (and `":\n"`) outside double quotes, the way Go wraps errors.
fn split_links(text: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ':' if !quoted && matches!(chars.peek(), Some(' ' | '\n')) => {
                links.push(current.trim().to_string());
                current.clear();
            }
            _ => current.push(c),
        }
    }
    links.push(current.trim().to_string());
    links.retain(|l| !l.is_empty());
    links
}

impl Chain {
    /// The innermost request: the one the cause belongs to.
    pub fn innermost_request(&self) -> Option<&Request> {
        self.requests.last()
    }

    /// The links after the innermost request's link: the cause of that request.
    pub fn cause_links(&self) -> &[String] {
        match self.innermost_request() {
            Some(r) if r.link + 1 < self.links.len() => &self.links[r.link + 1..],
            Some(r) => &self.links[r.link..],
            None => &self.links,
        }
    }

    /// Whether a link holds one of `words` at its start or after a space (case-sensitive, as
    /// Go prints them). No allocation: this runs for every message of a large log.
    pub fn has_link(&self, words: &[&str]) -> bool {
        self.links.iter().any(|l| {
            words.iter().any(|w| {
                l.match_indices(w)
                    .any(|(at, _)| at == 0 || l.as_bytes()[at - 1] == b' ')
            })
        })
    }
}

#[cfg(test)]
mod tests;
