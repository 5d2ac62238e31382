use super::*;

#[test]
fn splits_links_outside_quotes_and_names_requests() {
    let chains = parse(
        r#"failed to resolve reference "r.example/app:v1": failed to do request: Head "https://r.example/v2/app/manifests/v1": dial tcp: lookup r.example on 10.0.0.2:53: no such host"#,
    );
    assert_eq!(chains.len(), 1);
    let c = &chains[0];
    assert_eq!(
        c.links,
        [
            r#"failed to resolve reference "r.example/app:v1""#,
            "failed to do request",
            r#"Head "https://r.example/v2/app/manifests/v1""#,
            "dial tcp",
            "lookup r.example on 10.0.0.2:53",
            "no such host"
        ]
    );
    let r = c.innermost_request().expect("a request");
    assert_eq!(
        (r.method.as_str(), r.host.as_str(), r.path.as_str()),
        ("HEAD", "r.example", "/v2/app/manifests/v1")
    );
    assert_eq!(
        c.cause_links().first().map(String::as_str),
        Some("dial tcp")
    );
    assert_eq!(c.image.as_deref(), Some("r.example/app:v1"));
}

#[test]
fn splits_kubelet_attempt_lists() {
    let chains = parse(
        r#"Failed to pull image "x": [rpc error: code = Unknown desc = a: EOF, rpc error: code = Unknown desc = b: 401 Unauthorized]"#,
    );
    assert_eq!(chains.len(), 2);
    assert!(chains[0].text.ends_with("a: EOF"));
    assert!(chains[1].text.starts_with("rpc error"));
}

#[test]
fn unescapes_log_quotes() {
    let chains =
        parse(r#"msg="failed to pull \"r.example/app:v1\": Get \"https://blob.example/x\": EOF""#);
    assert_eq!(chains[0].requests[0].host, "blob.example");
}

#[test]
fn only_the_first_error_of_a_registry_list_is_kept() {
    let chains = parse(
        "reading manifest v1 in r.example/app: errors:\ndenied: requested access to the resource is denied\nunauthorized: authentication required\n",
    );
    assert_eq!(
        chains[0].links.last().map(String::as_str),
        Some("requested access to the resource is denied")
    );
    assert!(!chains[0].text.contains("unauthorized"));
}

#[test]
fn documentation_links_are_no_requests() {
    let chains = parse(
        "failed to copy: httpReadSeeker: failed open: unexpected status code https://registry-1.docker.io/v2/x/manifests/sha256:abc: 429 Too Many Requests - Server message: toomanyrequests: upgrade: https://www.docker.com/increase-rate-limit",
    );
    let hosts: Vec<&str> = chains[0].requests.iter().map(|r| r.host.as_str()).collect();
    assert_eq!(hosts, ["registry-1.docker.io"]);
    let realm =
        parse("Get https://quay.io/v2/auth?scope=repository%3Ax%3Apull&service=quay.io: EOF");
    assert!(realm[0].requests[0].url.contains("service=quay.io"));
}

#[test]
fn images_after_a_verb_are_quoted() {
    let chains = parse(
        "pulling image failed: rpc error: code = Unknown desc = Error choosing image instance: no image found",
    );
    assert_eq!(chains[0].image, None);
    let chains = parse(
        "Error: choosing an image from manifest list docker://quay.io/x/y:1: no image found in image index for architecture \"arm64\"",
    );
    assert_eq!(chains[0].image.as_deref(), Some("quay.io/x/y:1"));
}

#[test]
fn urls_people_broke_ipv6_literals_and_default_ports() {
    let host = |text: &str| parse(text)[0].requests.first().map(|r| r.host.clone());
    assert_eq!(
        host("Get https: /index.docker.io/v1/repositories/x/images: EOF").as_deref(),
        Some("index.docker.io")
    );
    assert_eq!(
        host("Get https:/r.example/v2/: EOF").as_deref(),
        Some("r.example")
    );
    assert_eq!(
        host(r#"Get "https://[fd00::5]:5000/v2/": EOF"#).as_deref(),
        Some("[fd00::5]:5000")
    );
    assert_eq!(
        host(r#"Head "https://R.example:443/v2/a/manifests/1": EOF"#).as_deref(),
        Some("r.example")
    );
    assert_eq!(
        host("Get http://r.example:443/v2/: EOF").as_deref(),
        Some("r.example:443"),
        "443 is only https's default"
    );
}

#[test]
fn credentials_in_a_url_are_neither_host_nor_reported() {
    let chains = parse(r#"Get "https://bob:s3cret@r.example:5000/v2/": EOF"#);
    let r = &chains[0].requests[0];
    assert_eq!(r.host, "r.example:5000");
    assert_eq!(r.url, "https://r.example:5000/v2/");
    assert!(!r.url.contains("s3cret"));
}

#[test]
fn mirror_failures_before_the_primary_error_are_left_out() {
    let chains = parse(
        r#"rpc error: code = Unknown desc = (Mirrors also failed: [mirror.example/x/y:1: pinging container registry mirror.example: Get "https://mirror.example/v2/": dial tcp 10.0.0.9:443: i/o timeout (after 30s)]): quay.io/x/y:1: reading manifest 1 in quay.io/x/y: manifest unknown"#,
    );
    let c = &chains[0];
    assert!(c.requests.is_empty(), "{:?}", c.requests);
    assert!(!c.text.contains("mirror.example"));
    assert_eq!(c.links.last().map(String::as_str), Some("manifest unknown"));
    assert_eq!(c.image.as_deref(), Some("quay.io/x/y"));
}

#[test]
fn a_platform_is_no_image() {
    let chains = parse(
        "Error response from daemon: no matching manifest for linux/arm64/v8 in the manifest list entries",
    );
    assert_eq!(chains[0].image, None);
    assert_eq!(
        parse("Error response from daemon: manifest for linuxserver/x:1 not found")[0]
            .image
            .as_deref(),
        Some("linuxserver/x:1")
    );
}

#[test]
fn images_named_by_commands_and_docker_wording() {
    let image = |text: &str| parse(text)[0].image.clone();
    assert_eq!(
        image("Error response from daemon: repository r.example/a not found: does not exist or no pull access").as_deref(),
        Some("r.example/a")
    );
    assert_eq!(
        image("$ docker pull -q r.example/a:1\nError response from daemon: manifest unknown")
            .as_deref(),
        Some("r.example/a:1")
    );
    assert_eq!(
        image(
            "Error response from daemon: pull access denied, repository does not exist or may require authorization"
        ),
        None
    );
}

#[test]
fn unquoted_urls_of_old_go_and_ports() {
    let chains = parse(
        "Error while pulling image: Get http://localhost:5001/v1/repositories/app/images: dial tcp [::1]:5001: getsockopt: connection refused",
    );
    let r = &chains[0].requests[0];
    assert_eq!(
        (r.host.as_str(), r.path.as_str()),
        ("localhost:5001", "/v1/repositories/app/images")
    );
}
