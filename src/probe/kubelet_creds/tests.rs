use super::*;
use crate::probe::process::RunningProcess;

fn cred(user: &str) -> Credentials {
    Credentials {
        username: user.into(),
        password: format!("pw-{user}"),
    }
}

#[test]
fn lookup_returns_every_match_most_specific_first() {
    let mut keyring = Keyring::default();
    let s = Source::PullSecret("a.json".into());
    keyring.add("quay.io", s.clone(), cred("host"));
    keyring.add("https://quay.io/team", s.clone(), cred("team"));
    keyring.add("*.quay.io", s.clone(), cred("glob"));
    keyring.add("quay.io/team/app", s.clone(), cred("app"));
    keyring.add("other.io", s.clone(), cred("other"));
    let users: Vec<String> = keyring
        .lookup("quay.io/team/app")
        .into_iter()
        .map(|c| c.credentials.username)
        .collect();
    assert_eq!(users, ["app", "team", "host"]);
    assert!(keyring.lookup("registry.io/x").is_empty());
}

#[test]
fn docker_hub_falls_back_to_index_docker_io() {
    let mut keyring = Keyring::default();
    keyring.add(
        "https://index.docker.io/v1/",
        Source::NodeConfig("config.json".into()),
        cred("hub"),
    );
    assert_eq!(keyring.lookup("docker.io/library/nginx").len(), 1);
    assert!(keyring.lookup("registry.io/library/nginx").is_empty());
}

const CONFIG: &str = r#"
apiVersion: kubelet.config.k8s.io/v1
kind: CredentialProviderConfig
providers:
- name: acr-credential-provider
  matchImages: ["*.azurecr.io", "registry.io:8080/path"]
  defaultCacheDuration: "10m"
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  args: [/etc/kubernetes/azure.json]
  env: [{name: A, value: b}]
"#;

#[test]
fn provider_config_parses_and_validates() {
    let providers = parse_provider_config(CONFIG, "c.yaml").expect("valid");
    assert_eq!(providers.len(), 1);
    assert_eq!(providers[0].name, "acr-credential-provider");
    assert_eq!(providers[0].args, ["/etc/kubernetes/azure.json"]);
    assert_eq!(providers[0].env[0].name, "A");
    let invalid = [
        CONFIG.replace("kubelet.config.k8s.io/v1", "v1"),
        CONFIG.replace("kind: CredentialProviderConfig", "kind: Pod"),
        CONFIG.replace("  defaultCacheDuration: \"10m\"\n", ""),
        CONFIG.replace("credentialprovider.kubelet.k8s.io/v1", "nope/v1"),
        CONFIG.replace("name: acr-credential-provider", "name: ../x"),
        "providers: [".to_string(),
        // A parser's "invalid type: string \"hunter2\"" must not carry the value out.
        CONFIG.replace("args: [/etc/kubernetes/azure.json]", "args: hunter2"),
    ];
    for text in invalid {
        let result = parse_provider_config(&text, "c.yaml");
        assert!(matches!(result, Err(ConfigError::Invalid { .. })), "{text}");
        assert!(!format!("{result:?}").contains("hunter2"), "{result:?}");
    }
}

#[test]
fn provider_config_directory_merges_in_order_and_rejects_duplicates() {
    let dir = std::env::temp_dir().join(format!("pullpath-cpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("b.yaml"),
        CONFIG.replace("acr-credential", "second"),
    )
    .expect("b");
    std::fs::write(dir.join("a.yaml"), CONFIG).expect("a");
    std::fs::write(dir.join("notes.txt"), "ignored").expect("txt");
    let names: Vec<String> = read_provider_config(&crate::node_root::NodeRoot::host(), &dir)
        .expect("merged")
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["acr-credential-provider", "second-provider"]);
    std::fs::write(dir.join("c.yml"), CONFIG).expect("c");
    assert!(matches!(
        read_provider_config(&crate::node_root::NodeRoot::host(), &dir),
        Err(ConfigError::Duplicate { .. })
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn provider_responses_are_checked_without_quoting_them() {
    let good = br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","auth":{"*.azurecr.io":{"username":"u","password":"hunter2"}}}"#;
    let auths = parse_provider_response(good, PROVIDER_API_V1).expect("valid");
    assert_eq!(auths[0].0, "*.azurecr.io");
    assert_eq!(auths[0].1.password, "hunter2");
    let bad: [&[u8]; 4] = [
        b"hunter2 not json",
        br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1beta1","kind":"CredentialProviderResponse","cacheKeyType":"Image","auth":{"x":{"password":"hunter2"}}}"#,
        br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Forever","auth":{"x":{"password":"hunter2"}}}"#,
        br#"{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Image","auth":{"x":"hunter2"}}"#,
    ];
    for out in bad {
        let err = parse_provider_response(out, PROVIDER_API_V1).expect_err("rejected");
        assert!(!err.contains("hunter2"), "{err}");
    }
}

#[test]
fn stderr_is_shortened_and_redacted() {
    let text = redact_stderr(
        b"AccessDenied password=hunter2 token: abc eyJhbGciOi.x.y AKIAAAAAAAAAAAAAAAAAAAAAAAAA",
    );
    for secret in ["hunter2", "abc", "eyJ", "AKIA"] {
        assert!(!text.contains(secret), "{text}");
    }
    assert!(text.starts_with("AccessDenied"));
    let long = redact_stderr("word ".repeat(200).as_bytes());
    assert!(long.chars().count() <= STDERR_KEPT + 1);
}

#[test]
fn the_request_names_the_repository() {
    let image = ImageRef::parse("registry.io:5000/team/app:v1").expect("ref");
    let request: serde_json::Value =
        serde_json::from_str(&provider_request(PROVIDER_API_V1, &lookup_image(&image)))
            .expect("json");
    assert_eq!(request["image"], "registry.io:5000/team/app");
    assert_eq!(request["kind"], "CredentialProviderRequest");
    assert_eq!(request["apiVersion"], PROVIDER_API_V1);
}

#[test]
fn node_config_search_follows_the_kubelet() {
    let search = node_config_search(
        Path::new("/var/lib/kubelet"),
        Some(Path::new("/w")),
        Some(Path::new("/root")),
    );
    let json: Vec<String> = search
        .config_json_dirs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(
        json,
        ["/var/lib/kubelet", "/w", "/root/.docker", "/.docker"]
    );
    let legacy: Vec<String> = search
        .dockercfg_dirs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(legacy, ["/var/lib/kubelet", "/w", "/root", "/"]);
}

#[test]
fn the_running_kubelet_is_read_from_proc() {
    let proc = std::env::temp_dir().join(format!("pullpath-proc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&proc);
    for (pid, comm) in [("7", "containerd"), ("42", "kubelet")] {
        std::fs::create_dir_all(proc.join(pid)).expect("pid dir");
        std::fs::write(proc.join(pid).join("comm"), format!("{comm}\n")).expect("comm");
    }
    std::fs::write(
        proc.join("42/cmdline"),
        b"/usr/bin/kubelet\0--root-dir=/data/kubelet\0--image-credential-provider-config\0/etc/cp.yaml\0-image-credential-provider-bin-dir=/opt/cp\0--v=2\0",
    )
    .expect("cmdline");
    std::fs::write(
        proc.join("42/environ"),
        b"HOME=/root\0HTTPS_PROXY=http://p:3128\0",
    )
    .expect("environ");
    let kubelet = RunningProcess::read(&proc, None, "kubelet").expect("found by name");
    assert_eq!(kubelet.pid, 42);
    assert_eq!(kubelet.flag("root-dir").as_deref(), Some("/data/kubelet"));
    assert_eq!(
        kubelet.flag("image-credential-provider-config").as_deref(),
        Some("/etc/cp.yaml")
    );
    assert_eq!(
        kubelet.flag("image-credential-provider-bin-dir").as_deref(),
        Some("/opt/cp")
    );
    assert_eq!(kubelet.flag("image-credential-provider"), None);
    assert_eq!(
        kubelet
            .environ
            .as_ref()
            .and_then(|e| e.get("HOME"))
            .map(String::as_str),
        Some("/root")
    );
    assert!(RunningProcess::read(&proc, Some(99), "kubelet").is_none());
    let _ = std::fs::remove_dir_all(&proc);
}

#[test]
fn containerd_registry_auth_is_read_for_the_exact_host() {
    let v1 = r#"
version = 2
[plugins."io.containerd.grpc.v1.cri".registry.configs."registry.io:5000".auth]
  username = "ci"
  password = "hunter2"
[plugins."io.containerd.grpc.v1.cri".registry.configs."gcr.io".auth]
  auth = "dTpwdw=="
  username = "ignored"
[plugins."io.containerd.grpc.v1.cri".registry.configs."token.io".auth]
  identitytoken = "hunter2"
"#;
    let found = containerd_registry_auth(v1, "registry.io:5000").expect("parses");
    assert_eq!(found.map(|c| c.username).as_deref(), Some("ci"));
    assert_eq!(
        containerd_registry_auth(v1, "registry.io").expect("parses"),
        None
    );
    let overridden = containerd_registry_auth(v1, "gcr.io")
        .expect("parses")
        .expect("entry");
    assert_eq!(
        (overridden.username.as_str(), overridden.password.as_str()),
        ("u", "pw")
    );
    let token = containerd_registry_auth(v1, "token.io").expect_err("identity token");
    assert!(
        token.contains("refresh token") && !token.contains("hunter2"),
        "{token}"
    );
    let v2 = r#"
version = 3
[plugins."io.containerd.cri.v1.images".registry.configs."registry.io".auth]
  username = "two"
  password = "hunter2"
"#;
    let found = containerd_registry_auth(v2, "registry.io").expect("parses");
    assert_eq!(found.map(|c| c.username).as_deref(), Some("two"));
    let bad = containerd_registry_auth("password = \"hunter2", "x").expect_err("not TOML");
    assert!(!bad.contains("hunter2"), "{bad}");
}
