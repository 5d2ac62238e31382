use super::*;

/// The line these tests read with unless they compare lines.
const LINE: ContainerdLine = ContainerdLine::V1_7;

fn authorities(c: &HostsConfig) -> Vec<String> {
    c.endpoints
        .iter()
        .map(|e| e.authority.to_string())
        .collect()
}

#[test]
fn hosts_in_file_order_then_server() {
    let text = r#"
server = "https://registry.example.test"
ca = "top.pem"

[host."https://mirror-b.example.test"]
  capabilities = ["pull", "resolve"]
  ca = ["b1.pem", "b2.pem"]
  [host."https://mirror-b.example.test".header]
    x-tenant = "a"

[host."mirror-a.example.test:5000/cache"]
  capabilities = ["pull"]
  skip_verify = true

[host."http://plain.example.test/v2/proxy"]
  override_path = true

[host."https://registry.example.test"]
  ca = "/abs/reg.pem"
"#;
    let dir = Path::new("/certs/registry.example.test");
    let c = HostsConfig::parse(text, dir, "registry.example.test", LINE);
    assert_eq!(
        authorities(&c),
        [
            "mirror-b.example.test",
            "mirror-a.example.test:5000",
            "plain.example.test:80",
            "registry.example.test",
            "registry.example.test"
        ]
    );
    let e = &c.endpoints;
    assert_eq!(e[0].cas, [dir.join("b1.pem"), dir.join("b2.pem")]);
    assert_eq!(e[0].headers, [("x-tenant".to_string(), "a".to_string())]);
    assert!(!e[0].capabilities.push && e[0].capabilities.resolve);
    assert!(!e[1].capabilities.resolve && e[1].skip_verify);
    assert_eq!(e[1].path, "/cache/v2");
    assert_eq!(
        (e[2].scheme, e[2].path.as_str()),
        (Scheme::Http, "/v2/proxy")
    );
    assert_eq!(e[3].cas, [PathBuf::from("/abs/reg.pem")]);
    assert!(e[3].is_registry && !e[0].is_registry);
    assert_eq!(e[4].cas, [dir.join("top.pem")]);
    assert_eq!(e[4].capabilities, Capabilities::ALL);
}

#[test]
fn what_containerd_does_without_a_usable_file() {
    let dir = Path::new("/nonexistent");
    let broken = HostsConfig::parse("not toml [", dir, "r.example", LINE);
    assert_eq!(authorities(&broken), ["r.example"]);
    assert!(broken.notes[0].contains("does not decode"));
    let unknown = HostsConfig::parse(
        "[host.\"https://m.example\"]\ncapabilities = [\"fetch\"]\n",
        dir,
        "r.example",
        LINE,
    );
    assert_eq!(authorities(&unknown), ["r.example"]);
    let no_hosts = HostsConfig::parse("server = \"https://r.example\"\n", dir, "r.example", LINE);
    assert_eq!(authorities(&no_hosts), ["r.example"]);
    assert!(no_hosts.notes[0].contains("no [host] table"));
    // The same hosts either way: nothing here depends on the version.
    assert!(!no_hosts.version_dependent);
    assert!(!hub_is_version_dependent());
    let hub = HostsConfig::read(&NodeRoot::host(), &[], "docker.io", LINE);
    assert_eq!(authorities(&hub), ["registry-1.docker.io"]);
    let default = HostsConfig::parse("[host.\"https://m.example\"]\n", dir, "r.example", LINE);
    assert_eq!(authorities(&default), ["m.example", "r.example"]);
}

#[test]
fn directory_names() {
    assert_eq!(
        host_directory("r.example:5000").as_deref(),
        Some("r.example_5000_")
    );
    assert_eq!(host_directory("r.example"), None);
    let root = std::env::temp_dir().join(format!("pullpath-hosts-{}", std::process::id()));
    let port_dir = root.join("r.example_5000_");
    let default_dir = root.join("_default");
    std::fs::create_dir_all(&port_dir).expect("dir");
    std::fs::create_dir_all(&default_dir).expect("dir");
    std::fs::write(
        port_dir.join("hosts.toml"),
        "[host.\"https://m.example\"]\n",
    )
    .expect("write");
    let host = NodeRoot::host();
    let by_port = HostsConfig::read(&host, std::slice::from_ref(&root), "r.example:5000", LINE);
    assert_eq!(by_port.dir.as_deref(), Some(port_dir.as_path()));
    assert_eq!(authorities(&by_port), ["m.example", "r.example:5000"]);
    let fallback = HostsConfig::read(&host, std::slice::from_ref(&root), "other.example", LINE);
    assert_eq!(fallback.dir.as_deref(), Some(default_dir.as_path()));
    // config_path lists roots: the first root holding any directory for the host wins, its
    // `_default` before a later root's own directory for the host.
    let later = root.join("later");
    std::fs::create_dir_all(later.join("other.example")).expect("dir");
    let first_wins =
        HostsConfig::read(&host, &[root.clone(), later.clone()], "other.example", LINE);
    assert_eq!(first_wins.dir.as_deref(), Some(default_dir.as_path()));
    let second = HostsConfig::read(
        &host,
        &[root.join("absent"), later.clone()],
        "other.example",
        LINE,
    );
    assert_eq!(second.dir, Some(later.join("other.example")));
    // Inside a node root: the directory is named by its node path.
    let node = NodeRoot::at(&root);
    let mapped = HostsConfig::read(&node, &[PathBuf::from("/later")], "other.example", LINE);
    assert_eq!(mapped.dir, Some(PathBuf::from("/later/other.example")));
    let _ = std::fs::remove_dir_all(&root);
}

fn hub_is_version_dependent() -> bool {
    HostsConfig::read(&NodeRoot::host(), &[], "docker.io", LINE).version_dependent
}

#[test]
fn a_file_without_host_tables_is_read_only_by_2x() {
    let dir = Path::new("/nonexistent/alias.example.test");
    let text = "server = \"https://registry.example.test\"\nca = \"/pki/ca.pem\"\n";
    for line in [ContainerdLine::V1_6, ContainerdLine::V1_7] {
        let old = HostsConfig::parse(text, dir, "alias.example.test", line);
        assert_eq!(authorities(&old), ["alias.example.test"], "{line:?}");
        assert!(old.notes[0].contains("does not decode"), "{:?}", old.notes);
    }
    let new = HostsConfig::parse(text, dir, "alias.example.test", ContainerdLine::V2);
    assert_eq!(authorities(&new), ["registry.example.test"]);
    assert_eq!(new.endpoints[0].cas, [PathBuf::from("/pki/ca.pem")]);
    assert!(new.version_dependent);
}

#[test]
fn an_http_host_with_tls_settings_is_tried_over_https_first_from_1_7() {
    let dir = Path::new("/certs/r.example");
    let text = "[host.\"http://r.example:5000\"]\n  skip_verify = true\n[host.\"http://plain.example:5001\"]\n[host.\"http://r.example:80\"]\n  ca = \"ca.pem\"\n[host.\"http://r.example\"]\n  ca = \"ca.pem\"\n";
    let old = HostsConfig::parse(text, dir, "r.example", ContainerdLine::V1_6);
    assert!(
        old.endpoints
            .iter()
            .take(4)
            .all(|e| e.scheme == Scheme::Http && e.http_fallback.is_none())
    );
    let new = HostsConfig::parse(text, dir, "r.example", ContainerdLine::V1_7);
    let e = &new.endpoints;
    // TLS settings, port 5000: HTTPS on 5000 first, plain HTTP on 5000 after.
    assert_eq!(
        (e[0].scheme, e[0].authority.to_string()),
        (Scheme::Https, "r.example:5000".into())
    );
    assert_eq!(
        e[0].http_fallback
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("r.example:5000")
    );
    // No TLS settings: plain HTTP, as in 1.6.
    assert_eq!(
        (e[1].scheme, e[1].http_fallback.is_none()),
        (Scheme::Http, true)
    );
    // Port 80 written: never HTTPS.
    assert_eq!(
        (e[2].scheme, e[2].http_fallback.is_none()),
        (Scheme::Http, true)
    );
    // No port: HTTPS on 443 first, then HTTP on 80.
    assert_eq!((e[3].scheme, e[3].authority.port), (Scheme::Https, 443));
    assert_eq!(e[3].http_fallback.as_ref().map(|a| a.port), Some(80));
    assert!(new.version_dependent);
}

#[test]
fn an_unconfigured_localhost_registry_per_line() {
    let read = |registry: &str, line| HostsConfig::read(&NodeRoot::host(), &[], registry, line);
    let old = read("localhost:5000", ContainerdLine::V1_6);
    assert_eq!(
        (old.endpoints[0].scheme, old.endpoints[0].skip_verify),
        (Scheme::Http, true)
    );
    assert!(old.notes[0].contains("plain HTTP"), "{:?}", old.notes);
    let ambiguous = read("localhost:5000", ContainerdLine::V2);
    assert_eq!(ambiguous.endpoints[0].scheme, Scheme::Https);
    assert_eq!(ambiguous.endpoints[0].authority.port, 5000);
    assert!(ambiguous.endpoints[0].http_fallback.is_some());
    let no_port = read("127.0.0.1", ContainerdLine::V1_7);
    assert_eq!(
        (
            no_port.endpoints[0].scheme,
            no_port.endpoints[0].skip_verify
        ),
        (Scheme::Https, true)
    );
    assert!(no_port.endpoints[0].http_fallback.is_none());
    let port_80 = read("localhost:80", ContainerdLine::V1_7);
    assert_eq!(
        (
            port_80.endpoints[0].scheme,
            port_80.endpoints[0].skip_verify
        ),
        (Scheme::Http, false)
    );
    assert!(ambiguous.version_dependent && port_80.version_dependent);
    assert!(!read("r.example:5000", ContainerdLine::V1_6).version_dependent);
}

#[test]
fn why_a_file_does_not_decode_is_a_value() {
    let dir = Path::new("/nonexistent");
    let refused = |text: &str, line| parse_hosts(text, dir, "r.example", line).err();
    assert!(matches!(
        refused("not toml [", LINE),
        Some(Undecodable::Toml(_))
    ));
    assert_eq!(
        refused("server = \"https://r.example\"\n", ContainerdLine::V1_6),
        Some(Undecodable::NoHostTable {
            line: ContainerdLine::V1_6
        })
    );
    assert_eq!(
        refused("host = 1\n", LINE),
        Some(Undecodable::HostTreeNotTable)
    );
    assert_eq!(
        refused("server = 1\n[host.\"https://m.example\"]\n", LINE),
        Some(Undecodable::ServerNotString)
    );
    assert_eq!(
        refused(
            "[host.\"https://m.example\"]\ncapabilities = [\"fetch\"]\n",
            LINE
        ),
        Some(Undecodable::UnknownCapability {
            value: toml::Value::String("fetch".into())
        })
    );
    assert_eq!(
        refused("[host.\"https://m.example\"]\nca = 7\n", LINE),
        Some(Undecodable::CaWrongType {
            type_name: "integer"
        })
    );
    assert_eq!(
        refused("[host.\"https://m.example\"]\nheader = { X = [1] }\n", LINE),
        Some(Undecodable::HeaderNotString {
            name: "X".into(),
            value: toml::Value::Integer(1)
        })
    );
    assert!(matches!(
        refused("[host.\"httpx://m.example\"]\n", LINE),
        Some(Undecodable::NotHttp { url }) if url == "httpx://m.example"
    ));
}
