use super::*;

#[test]
fn passwords_are_redacted_even_in_values_that_are_no_url() {
    assert_eq!(
        redact_value("http://bob:pw@proxy.corp:3128"),
        "http://bob:REDACTED@proxy.corp:3128/"
    );
    assert_eq!(
        redact_value("http://user:s3cret@[broken"),
        "http://user:REDACTED@[broken"
    );
    assert_eq!(
        redact_value("bob:pw@proxy.corp:3128"),
        "bob:REDACTED@proxy.corp:3128"
    );
    assert_eq!(redact_value("proxy.corp:3128"), "proxy.corp:3128");
    assert_eq!(
        redact_value("http://proxy.corp:3128"),
        "http://proxy.corp:3128"
    );
}

fn config(https: &str, no_proxy: &str) -> ProxyConfig {
    let mut env = BTreeMap::new();
    env.insert("HTTPS_PROXY".to_string(), https.to_string());
    env.insert("no_proxy".to_string(), no_proxy.to_string());
    ProxyConfig::from_env(&env)
}

fn proxied(c: &ProxyConfig, url: &str) -> bool {
    c.proxy_for(&Url::parse(url).expect("url")).is_some()
}

#[test]
fn names_and_forms_as_go_reads_them() {
    let mut env = BTreeMap::new();
    env.insert("https_proxy".to_string(), "proxy.corp:3128".to_string());
    env.insert("HTTPS_PROXY".to_string(), String::new());
    env.insert("HTTP_PROXY".to_string(), "http://p2:8080".to_string());
    let c = ProxyConfig::from_env(&env);
    assert_eq!(
        c.https_proxy.as_ref().map(Url::as_str),
        Some("http://proxy.corp:3128/")
    );
    assert_eq!(
        c.http_proxy.as_ref().map(Url::as_str),
        Some("http://p2:8080/")
    );
    // https:// requests use HTTPS_PROXY only; http:// ones HTTP_PROXY only.
    let only_http = ProxyConfig::from_env(&BTreeMap::from([(
        "HTTP_PROXY".to_string(),
        "p:1".to_string(),
    )]));
    assert!(!proxied(&only_http, "https://r.example/v2/"));
    assert!(proxied(&only_http, "http://store.example/blob"));
}

#[test]
fn no_proxy_matching_follows_go() {
    let c = config(
        "http://proxy:3128",
        "foo.com, .y.com, *.z.com, 10.0.0.0/8, 192.168.1.5, r.example:5000, [fd00::1]:443",
    );
    for (url, want) in [
        ("https://foo.com/", false),
        ("https://bar.foo.com/", false),
        ("https://xfoo.com/", true),
        ("https://x.y.com/", false),
        ("https://y.com/", true),
        ("https://a.z.com/", false),
        ("https://z.com/", true),
        ("https://10.1.2.3/", false),
        ("https://11.1.2.3/", true),
        ("https://192.168.1.5/", false),
        ("https://r.example:5000/", false),
        ("https://r.example/", true),
        ("https://[fd00::1]/", false),
        ("https://localhost:5000/", false),
        ("https://127.0.0.1/", false),
        ("https://[::1]/", false),
        ("https://FOO.com/", false),
    ] {
        assert_eq!(proxied(&c, url), want, "{url}");
    }
    assert!(!proxied(&config("p:1", "*"), "https://anything.example/"));
    // A domain entry never matches an IP literal, nor a CIDR a name.
    let c = config("p:1", "10.0.0.1.nip.io,10.0.0.0/8");
    assert!(proxied(&c, "https://10.nip.example/"));
    assert!(!proxied(&config("", "x"), "https://r.example/"));
}

#[test]
fn connect_answers() {
    assert_eq!(
        interpret_connect(b"HTTP/1.1 200 Connection established", b""),
        Ok(200)
    );
    let (code, words) = interpret_connect(
        b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic",
        b"<html>Access denied</html>",
    )
    .expect_err("407");
    assert_eq!(code, Some(407));
    assert!(
        words.contains("credentials") && words.contains("Access denied"),
        "{words}"
    );
    let (code, words) = interpret_connect(b"HTTP/1.0 403 Filtered", b"").expect_err("403");
    assert_eq!(code, Some(403));
    assert!(words.contains("policy"));
    assert!(
        interpret_connect(b"HTTP/1.1 502 Bad Gateway", b"")
            .expect_err("502")
            .1
            .contains("could not reach")
    );
    assert_eq!(
        interpret_connect(b"SSH-2.0-OpenSSH", b"")
            .expect_err("garbage")
            .0,
        None
    );
    let auth = basic_authorization(&Url::parse("http://us%40er:p%3Ass@proxy:3128").expect("url"));
    assert_eq!(auth.as_deref(), Some("Basic dXNAZXI6cDpzcw=="));
    assert_eq!(
        basic_authorization(&Url::parse("http://proxy:3128").expect("url")),
        None
    );
}

#[test]
fn passwords_are_redacted() {
    let url = Url::parse("http://user:s3cret@proxy:3128").expect("url");
    let shown = redact_proxy(&url);
    assert!(!shown.contains("s3cret") && shown.contains("user"));
}

#[test]
fn the_running_process_wins_over_a_changed_drop_in() {
    let running = BTreeMap::from([("HTTPS_PROXY".to_string(), "http://old:3128".to_string())]);
    let unit = BTreeMap::from([(
        "HTTPS_PROXY".to_string(),
        (
            "http://user:pw@new:3128".to_string(),
            "/etc/systemd/system/containerd.service.d/http-proxy.conf".to_string(),
        ),
    )]);
    let env = RuntimeEnvironment::decide(
        Some((42, running)),
        Some(("containerd.service".into(), unit)),
        &BTreeMap::new(),
    );
    assert_eq!(env.vars["HTTPS_PROXY"].0, "http://old:3128");
    assert!(
        env.notes[0].contains("restart containerd"),
        "{:?}",
        env.notes
    );
    assert!(!env.notes[0].contains(":pw@"), "{:?}", env.notes);
    let flags = BTreeMap::from([("NO_PROXY".to_string(), "r.example".to_string())]);
    let env = RuntimeEnvironment::decide(None, None, &flags);
    // Trust variables the unit does not set are said as trust, never as a proxy setting; the
    // same proxy on disk and running says nothing of proxies.
    let proxy = ("HTTPS_PROXY".to_string(), "http://p:3128".to_string());
    let running = BTreeMap::from([
        proxy.clone(),
        ("SSL_CERT_DIR".to_string(), "/etc/pki/certs".to_string()),
        ("SSL_CERT_FILE".to_string(), "/etc/pki/ca.pem".to_string()),
    ]);
    let unit = BTreeMap::from([(proxy.0, (proxy.1, "containerd.service".to_string()))]);
    let trust = RuntimeEnvironment::decide(
        Some((7, running)),
        Some(("containerd.service".into(), unit)),
        &BTreeMap::new(),
    );
    assert_eq!(
        trust.notes,
        [
            "containerd.service on disk sets no SSL_CERT_FILE or SSL_CERT_DIR but the running containerd (pid 7) has SSL_CERT_DIR=/etc/pki/certs, SSL_CERT_FILE=/etc/pki/ca.pem, which choose the CA certificates it trusts: a unit changed since containerd started takes effect only after `systemctl daemon-reload && systemctl restart containerd`, a value set outside the unit (systemd's DefaultEnvironment, a wrapper) stays; this probe trusts as the running process does"
        ]
    );
    assert_eq!(
        env.vars["NO_PROXY"],
        ("r.example".into(), "command line".into())
    );
}

#[test]
fn environ_is_nul_separated() {
    let environ = b"PATH=/bin\0HTTPS_PROXY=http://p:3128\0\0";
    assert_eq!(parse_environ(environ)["HTTPS_PROXY"], "http://p:3128");
}
