//! The kubelet's keyring rules, read from its source (k/k `pkg/credentialprovider/keyring.go`,
//! `URLsMatch`, `ParseSchemelessURL`, `isDefaultRegistryMatch`): which docker config key a
//! credential is used for with an image. One set of rules for the probe (the node's config.json,
//! plugins' answers, pull secrets given as files) and cluster mode (a pod's imagePullSecrets).
//!
//! A key is a URL with its scheme stripped; it covers an image when the ports are equal, the
//! host has as many DNS labels as the image's registry, each matching its glob (Go's
//! `filepath.Match`: `*`, `?`, `[…]`, never across a `.`), and the key's path is a *string*
//! prefix of the image's path — `r.example/team` covers `r.example/team-b/app`, as the kubelet
//! decides (`strings.HasPrefix(targetURL.Path, globURL.Path)`). Docker Hub images fall back to
//! the `index.docker.io` key when nothing else matched. All matching is on bytes: no input can
//! make it slice inside a character.

use crate::image_ref::ImageRef;

/// What the kubelet matches: `registry/repository` (Docker Hub as `docker.io/library/x`).
pub fn lookup_image(image: &ImageRef) -> String {
    format!("{}/{}", image.registry, image.repository)
}

/// A key as the keyring stores it: scheme stripped, a leading `/v1/` or `/v2/` dropped, a bare
/// `/` path dropped (`https://index.docker.io/v1/` is `index.docker.io`).
pub fn normalize_key(location: &str) -> String {
    let rest = location
        .strip_prefix("https://")
        .or_else(|| location.strip_prefix("http://"))
        .unwrap_or(location);
    let (host, path) = split_host_path(rest);
    let path = if path.starts_with("/v2/") || path.starts_with("/v1/") {
        &path[3..]
    } else {
        path
    };
    if path.is_empty() || path == "/" {
        host.to_string()
    } else {
        format!("{host}{path}")
    }
}

fn split_host_path(schemeless: &str) -> (&str, &str) {
    match schemeless.find('/') {
        Some(i) => (&schemeless[..i], &schemeless[i..]),
        None => (schemeless, ""),
    }
}

/// Go's `net.SplitHostPort` as the kubelet uses it: no parsable port means the whole is the host.
fn split_port(host: &str) -> (&str, &str) {
    match host.rsplit_once(':') {
        Some((name, port)) if !name.contains(':') && !name.is_empty() => (name, port),
        _ => (host, ""),
    }
}

/// Whether `target` matches `glob` as the kubelet's `URLsMatch` decides: equal ports, the same
/// number of DNS labels each matching its glob (Go's `filepath.Match`: `*` never crosses a
/// `.`), and the glob's path a string prefix of the target's. Both are schemeless.
pub fn urls_match(glob: &str, target: &str) -> bool {
    let (glob_host, glob_path) = split_host_path(glob);
    let (target_host, target_path) = split_host_path(target);
    let (glob_name, glob_port) = split_port(glob_host);
    let (target_name, target_port) = split_port(target_host);
    if glob_port != target_port || !target_path.starts_with(glob_path) {
        return false;
    }
    let glob_labels: Vec<&str> = glob_name.split('.').collect();
    let target_labels: Vec<&str> = target_name.split('.').collect();
    glob_labels.len() == target_labels.len()
        && glob_labels
            .iter()
            .zip(&target_labels)
            .all(|(g, t)| label_matches(g, t))
}

/// Whether one DNS label matches its glob, as Go's `filepath.Match` decides (`None`, a malformed
/// pattern, is no match for the kubelet).
fn label_matches(pattern: &str, label: &str) -> bool {
    let mut failed = std::collections::HashSet::new();
    glob_match(pattern.as_bytes(), label.as_bytes(), &mut failed) == Some(true)
}

/// Go's `filepath.Match` on one label (no separator inside): `*`, `?`, `[class]` with ranges
/// and `^`, `\` escapes; `None` for a malformed pattern. Every (pattern, text) suffix pair that
/// failed is remembered in `failed`, so a key of many `*` (a pull secret is outside input) costs
/// at most pattern × text steps instead of one per way of splitting the text: fuzzing found
/// `********` against a long label taking seconds.
fn glob_match(
    pattern: &[u8],
    text: &[u8],
    failed: &mut std::collections::HashSet<(usize, usize)>,
) -> Option<bool> {
    let state = (pattern.len(), text.len());
    if failed.contains(&state) {
        return Some(false);
    }
    let result = glob_step(pattern, text, failed);
    if result == Some(false) {
        failed.insert(state);
    }
    result
}

fn glob_step(
    pattern: &[u8],
    text: &[u8],
    failed: &mut std::collections::HashSet<(usize, usize)>,
) -> Option<bool> {
    match pattern.split_first() {
        None => Some(text.is_empty()),
        Some((b'*', rest)) => {
            for skip in 0..=text.len() {
                if glob_match(rest, &text[skip..], failed)? {
                    return Some(true);
                }
            }
            Some(false)
        }
        Some((b'?', rest)) => match text.split_first() {
            Some((_, tail)) => glob_match(rest, tail, failed),
            None => {
                glob_match(rest, b"", failed)?;
                Some(false)
            }
        },
        Some((b'[', rest)) => {
            let (matched, after) = class_match(rest, text.first().copied())?;
            match (matched, text.split_first()) {
                (true, Some((_, tail))) => glob_match(after, tail, failed),
                _ => Some(false),
            }
        }
        Some((b'\\', rest)) => {
            let (&literal, rest) = rest.split_first()?;
            match text.split_first() {
                Some((&c, tail)) if c == literal => glob_match(rest, tail, failed),
                _ => Some(false),
            }
        }
        Some((&literal, rest)) => match text.split_first() {
            Some((&c, tail)) if c == literal => glob_match(rest, tail, failed),
            _ => Some(false),
        },
    }
}

/// A `[...]` class (the pattern after `[`): whether `c` is in it, and the pattern after `]`.
fn class_match(mut pattern: &[u8], c: Option<u8>) -> Option<(bool, &[u8])> {
    let negated = pattern.first() == Some(&b'^');
    if negated {
        pattern = &pattern[1..];
    }
    let mut matched = false;
    let mut first = true;
    loop {
        let (&lo, rest) = pattern.split_first()?;
        if lo == b']' && !first {
            pattern = rest;
            break;
        }
        first = false;
        let (lo, rest) = if lo == b'\\' {
            let (&l, r) = rest.split_first()?;
            (l, r)
        } else {
            (lo, rest)
        };
        let (hi, rest) = match rest {
            [b'-', b']', ..] => (lo, rest),
            [b'-', b'\\', h, r @ ..] => (*h, r),
            [b'-', h, r @ ..] => (*h, r),
            _ => (lo, rest),
        };
        if c.is_some_and(|c| lo <= c && c <= hi) {
            matched = true;
        }
        pattern = rest;
    }
    Some((matched != negated, pattern))
}

/// Why a key that looks close does not match: the words for "what would decide".
pub fn near_miss(glob: &str, target: &str) -> Option<String> {
    let (glob_host, glob_path) = split_host_path(glob);
    let (target_host, target_path) = split_host_path(target);
    let (glob_name, glob_port) = split_port(glob_host);
    let (target_name, target_port) = split_port(target_host);
    let names_match = urls_match(glob_name, target_name);
    if names_match && glob_port != target_port {
        let has = |port: &str| {
            if port.is_empty() {
                "no port".to_string()
            } else {
                format!("port {port}")
            }
        };
        return Some(format!(
            "`{glob}` has {} but the image's registry `{target_host}` has {}: the kubelet requires equal ports",
            has(glob_port),
            has(target_port)
        ));
    }
    if names_match && !target_path.starts_with(glob_path) {
        return Some(format!(
            "`{glob}` covers only the path `{glob_path}`, not `{target_path}`"
        ));
    }
    let glob_labels = glob_name.split('.').count();
    let target_labels = target_name.split('.').count();
    if glob_name.contains('*')
        && glob_labels != target_labels
        && target_name.ends_with(glob_name.trim_start_matches(['*', '.']))
    {
        return Some(format!(
            "`{glob}` has {glob_labels} DNS labels and `{target_name}` has {target_labels}: each `*` matches exactly one label"
        ));
    }
    None
}

/// k/k keyring.go `isDefaultRegistryMatch`.
pub fn is_default_registry(image: &str) -> bool {
    let first = image.split('/').next().unwrap_or_default();
    if first.is_empty() {
        return false;
    }
    !image.contains('/')
        || first == "docker.io"
        || first == "index.docker.io"
        || !first.contains(['.', ':'])
}

/// The keys (as written in a `config.json` or a pull secret) that answer `target` (an image as
/// [`lookup_image`] writes it), in the order the kubelet's `BasicDockerKeyring.Lookup` tries
/// them: every key that covers the target, the most specific first (its index is reverse-sorted
/// by normalized key, so `quay.io/team` comes before `quay.io`); only when none does and the
/// image is on Docker Hub, the `index.docker.io` key. The one order for the probe's keyring and
/// cluster mode's pull secrets.
pub fn lookup_order<'k, K: AsRef<str>>(keys: &'k [K], target: &str) -> Vec<&'k K> {
    let mut normalized: Vec<(String, &K)> = keys
        .iter()
        .map(|key| (normalize_key(key.as_ref()), key))
        .collect();
    // Stable: keys that normalize alike keep the order they were given in, as the kubelet keeps
    // the credentials under one key in the order they were added.
    normalized.sort_by(|(a, _), (b, _)| b.cmp(a));
    let covering: Vec<&K> = normalized
        .iter()
        .filter(|(key, _)| urls_match(key, target))
        .map(|(_, key)| *key)
        .collect();
    if !covering.is_empty() || !is_default_registry(target) {
        return covering;
    }
    normalized
        .iter()
        .filter(|(key, _)| key == "index.docker.io")
        .map(|(_, key)| *key)
        .collect()
}

/// Whether the kubelet would use the docker config entry under `key` (as written in a
/// `config.json` or a pull secret) for `image`: the key covers the image, or it is Docker Hub's
/// `index.docker.io` and the image is on Docker Hub (the kubelet's fallback when no other key
/// matched).
pub fn key_covers(key: &str, image: &ImageRef) -> bool {
    let key = normalize_key(key);
    let target = lookup_image(image);
    urls_match(&key, &target) || (key == "index.docker.io" && is_default_registry(&target))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_match_as_the_kubelet() {
        // (glob, target, matches) — cases from k/k keyring_test.go's TestURLsMatch and the brief.
        let table = [
            ("*.azurecr.io", "team.azurecr.io/app", true),
            ("*.azurecr.io", "a.b.azurecr.io/app", false),
            ("*.io", "a.k8s.io", false),
            ("app*.k8s.io", "app1.k8s.io/x", true),
            (
                "*.dkr.ecr.*.amazonaws.com",
                "123.dkr.ecr.us-east-1.amazonaws.com/app",
                true,
            ),
            ("registry.io", "registry.io:5000/x", false),
            ("registry.io:5000", "registry.io/x", false),
            ("registry.io:5000", "registry.io:5000/x", true),
            ("registry.io:8080/path", "registry.io:8080/path/app", true),
            ("registry.io:8080/path", "registry.io:8080/other", false),
            ("registry.io/team", "registry.io/teamx/app", true),
            ("r?.io", "r1.io/a", true),
            ("[a-c].io", "b.io/a", true),
            ("[^a-c].io", "b.io/a", false),
            ("[a-c.io", "b.io/a", false),
            ("gcr.io", "gcr.io", true),
        ];
        for (glob, target, want) in table {
            assert_eq!(urls_match(glob, target), want, "{glob} vs {target}");
        }
    }

    #[test]
    fn keys_are_normalized() {
        let table = [
            ("https://index.docker.io/v1/", "index.docker.io"),
            ("http://registry.io:5000", "registry.io:5000"),
            ("registry.io/v2/team", "registry.io/team"),
            ("registry.io/", "registry.io"),
            ("quay.io/team/app", "quay.io/team/app"),
        ];
        for (location, key) in table {
            assert_eq!(normalize_key(location), key, "{location}");
        }
    }

    #[test]
    fn near_misses_say_what_would_decide() {
        let port = near_miss("registry.io", "registry.io:5000/app").expect("port miss");
        assert!(port.contains("no port") && port.contains("5000"), "{port}");
        let labels = near_miss("*.azurecr.io", "a.b.azurecr.io/app").expect("label miss");
        assert!(labels.contains("one label"), "{labels}");
        let path = near_miss("registry.io/team", "registry.io/other").expect("path miss");
        assert!(path.contains("/team"), "{path}");
        assert_eq!(near_miss("quay.io", "gcr.io/x"), None);
    }

    #[test]
    fn a_key_covers_an_image_as_the_kubelet_decides() {
        let image = |text: &str| ImageRef::parse(text).expect("image");
        // The path is a string prefix (`strings.HasPrefix`), not a whole segment.
        assert!(key_covers(
            "r.example/team",
            &image("r.example/team-b/app:1")
        ));
        assert!(key_covers(
            "https://index.docker.io/v1/",
            &image("nginx:1.25")
        ));
        assert!(!key_covers("registry-1.docker.io", &image("nginx:1.25")));
        assert!(!key_covers(
            "shopacr.azurecr.io:443",
            &image("shopacr.azurecr.io/shop/web:2")
        ));
    }

    #[test]
    fn keys_answer_most_specific_first_and_docker_hub_falls_back() {
        let keys = [
            "quay.io",
            "https://index.docker.io/v1/",
            "quay.io/team",
            "*.io",
            "quay.io/team/app",
        ];
        assert_eq!(
            lookup_order(&keys, "quay.io/team/app"),
            [&"quay.io/team/app", &"quay.io/team", &"quay.io", &"*.io"]
        );
        assert_eq!(
            lookup_order(&keys, "quay.io/other/app"),
            [&"quay.io", &"*.io"]
        );
        // Docker Hub takes index.docker.io only when no other key answered.
        // (`*.io` covers `docker.io` as it covers any two-label host.)
        assert_eq!(lookup_order(&keys, "docker.io/library/nginx"), [&"*.io"]);
        assert_eq!(
            lookup_order(&keys[..3], "docker.io/library/nginx"),
            [&"https://index.docker.io/v1/"]
        );
        assert_eq!(
            lookup_order(&["docker.io", "index.docker.io"], "docker.io/library/nginx"),
            [&"docker.io"]
        );
        assert!(lookup_order(&keys, "registry.example.com/team/app").is_empty());
    }

    #[test]
    fn many_stars_cost_no_more_than_pattern_times_text() {
        // Found by the keyring fuzz target: eight `*` against 40 bytes that never match took
        // seconds by trying every split of the text; remembered failures make it immediate.
        let stars = "*".repeat(40) + "x";
        let label = "\u{ce}".repeat(60);
        // Without the remembered failures these take longer than the test runner waits.
        assert!(!urls_match(
            &format!("{stars}.io"),
            &format!("{label}.io/app")
        ));
        assert!(!urls_match(
            "*a*a*a*a*a*a*a*a*a*a*b.io",
            &format!("{}.io/x", "a".repeat(60))
        ));
        assert!(urls_match("*a*a*b.io", "xxaxxaxxb.io/x"));
    }

    #[test]
    fn multi_byte_keys_and_hosts_never_panic() {
        // Found by fuzzing: a glob label sliced inside a character.
        for (key, target) in [
            ("*\u{FFFD}./", "\u{FFFD}index.\u{FFFD}/x"),
            ("*é.io", "ééé.io/x"),
            ("[é-ü].io", "ö.io/x"),
            ("?.io", "é.io/x"),
        ] {
            let _ = urls_match(key, target);
            let _ = near_miss(key, target);
        }
    }
}
