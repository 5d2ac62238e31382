//! The kubelet's credential sources against real files and a real exec plugin: a shell script
//! written at test time that speaks the kubelet's exec protocol (k/k
//! `pkg/credentialprovider/plugin/plugin.go`: the `CredentialProviderRequest` on stdin, the
//! `CredentialProviderResponse` on stdout). No network: the plugins only read and write pipes.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use pullpath::image_ref::ImageRef;
use pullpath::probe::kubelet_creds::{
    CredentialPlan, CredentialSource, DockerConfigProblem, NodeConfigSearch, PluginProblem,
    ResponseProblem, SourceOutcome, SourceProblem, Sources, resolve,
};
use support::scratch::Scratch;

const PLUGIN_PASSWORD: &str = "plugin-s3cret-token";
const SECRET_PASSWORD: &str = "secret-pw-for-pod";
const NODE_PASSWORD: &str = "node-pw-on-disk";

/// A node: a provider config naming `plugin`, its bin dir, a kubelet root dir, an empty home.
struct Node {
    dir: Scratch,
}

impl Node {
    fn new(name: &str) -> Node {
        let node = Node {
            dir: Scratch::new(name),
        };
        for sub in ["bin", "root", "home", "cwd"] {
            std::fs::create_dir_all(node.path(sub)).expect("node dir");
        }
        node
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// A provider `name` with `match_images`, whose binary runs `script` (sh).
    fn plugin(&self, name: &str, match_images: &[&str], script: &str) {
        let config = serde_json::json!({
            "apiVersion": "kubelet.config.k8s.io/v1",
            "kind": "CredentialProviderConfig",
            "providers": [{
                "name": name,
                "matchImages": match_images,
                "defaultCacheDuration": "10m",
                "apiVersion": "credentialprovider.kubelet.k8s.io/v1",
                "args": ["get-credentials", "--flag"],
                "env": [{"name": "PLUGIN_ENV", "value": "from-config"}],
            }],
        });
        std::fs::write(self.path("provider.json"), config.to_string()).expect("config");
        let binary = self.path("bin").join(name);
        std::fs::write(&binary, format!("#!/bin/sh\n{script}\n")).expect("plugin");
        std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    fn node_config(&self, registry: &str, user: &str, password: &str) {
        std::fs::write(
            self.path("root").join("config.json"),
            docker_config(registry, user, password),
        )
        .expect("node config.json");
    }

    fn sources(&self, pull_secrets: Vec<PathBuf>, timeout: Duration) -> Sources {
        let provider = self.path("provider.json");
        Sources {
            node: pullpath::node_root::NodeRoot::host(),
            pull_secrets,
            // The kubelet's order with this node's directories (no real / or $HOME).
            node_config: NodeConfigSearch {
                config_json_dirs: vec![
                    self.path("root"),
                    self.path("cwd"),
                    self.path("home/.docker"),
                ],
                dockercfg_dirs: vec![self.path("root"), self.path("cwd"), self.path("home")],
            },
            provider_config: provider.exists().then_some(provider),
            provider_bin_dir: Some(self.path("bin")),
            plugin_timeout: timeout,
            containerd_config: Some(self.path("containerd.toml")),
            kubelet_environment: None,
            origins: vec![],
        }
    }
}

fn docker_config(registry: &str, user: &str, password: &str) -> String {
    serde_json::json!({"auths": {registry: {"username": user, "password": password}}}).to_string()
}

/// A plugin answering every request with `user` for `auth_key`, after saving its request,
/// argv and environment where the test can read them.
fn answering_plugin(dir: &Path, auth_key: &str, user: &str) -> String {
    let seen = dir.display();
    format!(
        r#"cat > {seen}/request.json
echo "$@" > {seen}/argv
echo "$PLUGIN_ENV $KUBELET_ONLY $CARGO_PKG_NAME" > {seen}/env
cat <<EOF
{{"apiVersion":"credentialprovider.kubelet.k8s.io/v1","kind":"CredentialProviderResponse","cacheKeyType":"Registry","cacheDuration":"5m","auth":{{"{auth_key}":{{"username":"{user}","password":"{PLUGIN_PASSWORD}"}}}}}}
EOF"#
    )
}

fn image(text: &str) -> ImageRef {
    ImageRef::parse(text).expect("image reference")
}

fn outcome_of<'a>(plan: &'a CredentialPlan, kind: &str) -> &'a SourceOutcome {
    &plan
        .sources
        .iter()
        .find(|e| e.source.kind() == kind)
        .unwrap_or_else(|| panic!("no {kind} evidence in {plan:?}"))
        .outcome
}

/// Nothing a plan prints (its `Debug`, every evidence text) holds a password.
fn assert_no_secret(plan: &CredentialPlan) {
    let shown = format!("{plan:?}");
    for secret in [PLUGIN_PASSWORD, SECRET_PASSWORD, NODE_PASSWORD] {
        assert!(!shown.contains(secret), "{secret} leaked: {shown}");
    }
}

#[tokio::test]
async fn a_matching_plugin_answers_as_the_kubelet_asked() {
    let node = Node::new("cp-match");
    node.plugin(
        "acr-credential-provider",
        &["*.azurecr.io"],
        &answering_plugin(
            node.dir.path(),
            "*.azurecr.io",
            "00000000-0000-0000-0000-000000000000",
        ),
    );
    let plan = resolve(
        &node.sources(vec![], Duration::from_secs(20)),
        &image("team.azurecr.io/app/web:v1"),
    )
    .await;
    assert_eq!(plan.candidates.len(), 1, "{plan:?}");
    let candidate = &plan.candidates[0];
    assert_eq!(
        candidate.source,
        CredentialSource::Provider("acr-credential-provider".into())
    );
    assert_eq!(candidate.key, "*.azurecr.io");
    assert_eq!(
        candidate.credentials.username,
        "00000000-0000-0000-0000-000000000000"
    );
    assert_eq!(candidate.credentials.password, PLUGIN_PASSWORD);
    // The request the kubelet sends: the repository without its tag; argv and env from config.
    let request: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(node.dir.path().join("request.json")).expect("request"),
    )
    .expect("request JSON");
    assert_eq!(request["image"], "team.azurecr.io/app/web");
    assert_eq!(request["kind"], "CredentialProviderRequest");
    assert_eq!(
        request["apiVersion"],
        "credentialprovider.kubelet.k8s.io/v1"
    );
    let argv = std::fs::read_to_string(node.dir.path().join("argv")).expect("argv");
    assert_eq!(argv.trim(), "get-credentials --flag");
    let env = std::fs::read_to_string(node.dir.path().join("env")).expect("env");
    assert_eq!(
        env.trim(),
        "from-config  pullpath",
        "our environment, plus env"
    );
    // With the running kubelet's environment, that one replaces ours.
    let mut sources = node.sources(vec![], Duration::from_secs(20));
    sources.kubelet_environment = Some(
        [("KUBELET_ONLY", "kubelet"), ("PATH", "/usr/bin:/bin")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    resolve(&sources, &image("team.azurecr.io/app/web:v1")).await;
    let env = std::fs::read_to_string(node.dir.path().join("env")).expect("env");
    assert_eq!(
        env.trim(),
        "from-config kubelet",
        "the kubelet's environment, plus env"
    );
    assert_no_secret(&plan);
}

#[tokio::test]
async fn match_images_without_the_port_misses_and_the_plugin_is_not_run() {
    let node = Node::new("cp-port");
    node.plugin(
        "registry-provider",
        &["registry.io"],
        &answering_plugin(node.dir.path(), "registry.io", "u"),
    );
    let plan = resolve(
        &node.sources(vec![], Duration::from_secs(20)),
        &image("registry.io:5000/team/app:v1"),
    )
    .await;
    assert!(plan.candidates.is_empty(), "{plan:?}");
    let SourceOutcome::NoMatch { keys, near } = outcome_of(&plan, "provider") else {
        panic!("provider should not match: {plan:?}");
    };
    assert_eq!(keys, &["registry.io"]);
    assert!(
        near.iter()
            .any(|n| n.contains("no port") && n.contains("registry.io:5000")),
        "{near:?}"
    );
    assert!(
        !node.dir.path().join("request.json").exists(),
        "the plugin ran"
    );
}

#[tokio::test]
async fn a_plugin_exiting_non_zero_is_evidence_with_its_stderr_redacted() {
    let node = Node::new("cp-exit");
    node.plugin(
        "ecr-credential-provider",
        &["*.dkr.ecr.*.amazonaws.com"],
        &format!(
            "echo 'AccessDeniedException: not authorized password={PLUGIN_PASSWORD}' >&2\nexit 3"
        ),
    );
    node.node_config("other.example", "node", NODE_PASSWORD);
    let plan = resolve(
        &node.sources(vec![], Duration::from_secs(20)),
        &image("123.dkr.ecr.us-east-1.amazonaws.com/app:v1"),
    )
    .await;
    assert!(plan.candidates.is_empty(), "{plan:?}");
    let SourceOutcome::Failed(SourceProblem::Plugin(problem)) = outcome_of(&plan, "provider")
    else {
        panic!("the plugin failed: {plan:?}");
    };
    let PluginProblem::Exited { status, stderr, .. } = &**problem else {
        panic!("the plugin exited: {problem:?}");
    };
    assert_eq!(status.code(), Some(3));
    assert!(stderr.contains("AccessDeniedException"), "{stderr}");
    assert!(matches!(
        outcome_of(&plan, "node-config"),
        SourceOutcome::NoMatch { .. }
    ));
    assert_no_secret(&plan);
}

#[tokio::test]
async fn a_plugin_that_never_answers_is_cut_at_the_timeout() {
    let node = Node::new("cp-timeout");
    // Opening a FIFO nobody writes blocks for ever: a plugin stuck on its metadata service.
    node.plugin(
        "stuck-provider",
        &["registry.io"],
        "mkfifo \"$0.fifo\" 2>/dev/null; exec cat \"$0.fifo\"",
    );
    let started = Instant::now();
    let plan = resolve(
        &node.sources(vec![], Duration::from_millis(300)),
        &image("registry.io/app:v1"),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "not cut: {:?}",
        started.elapsed()
    );
    let SourceOutcome::Failed(SourceProblem::Plugin(problem)) = outcome_of(&plan, "provider")
    else {
        panic!("the plugin timed out: {plan:?}");
    };
    let PluginProblem::Timeout { timeout, .. } = &**problem else {
        panic!("the plugin timed out: {problem:?}");
    };
    assert_eq!(*timeout, Duration::from_millis(300));
    assert!(plan.candidates.is_empty());
}

#[tokio::test]
async fn a_plugin_answering_garbage_is_evidence_without_its_stdout() {
    let node = Node::new("cp-garbage");
    node.plugin(
        "garbage-provider",
        &["registry.io"],
        &format!("echo 'username: u password: {PLUGIN_PASSWORD}'"),
    );
    let plan = resolve(
        &node.sources(vec![], Duration::from_secs(20)),
        &image("registry.io/app:v1"),
    )
    .await;
    let SourceOutcome::Failed(SourceProblem::Plugin(problem)) = outcome_of(&plan, "provider")
    else {
        panic!("garbage is a failure: {plan:?}");
    };
    assert!(
        matches!(
            &**problem,
            PluginProblem::Response {
                problem: ResponseProblem::NotJson,
                ..
            }
        ),
        "{problem:?}"
    );
    assert!(plan.candidates.is_empty());
    assert_no_secret(&plan);
}

#[tokio::test]
async fn the_node_config_json_is_the_only_source() {
    let node = Node::new("cp-node");
    node.node_config("https://registry.io", "node-user", NODE_PASSWORD);
    let plan = resolve(
        &node.sources(vec![], Duration::from_secs(20)),
        &image("registry.io/team/app:v1"),
    )
    .await;
    assert_eq!(plan.candidates.len(), 1, "{plan:?}");
    assert_eq!(
        plan.candidates[0].source,
        CredentialSource::NodeConfig(node.path("root").join("config.json"))
    );
    assert_eq!(plan.candidates[0].key, "registry.io");
    assert_eq!(plan.candidates[0].credentials.username, "node-user");
    assert!(matches!(
        outcome_of(&plan, "provider"),
        SourceOutcome::Absent(_)
    ));
    assert_no_secret(&plan);
}

#[tokio::test]
async fn a_pull_secret_for_another_host_does_not_match() {
    let node = Node::new("cp-other");
    let secret = node.path("secret.json");
    let encoded = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(docker_config(
            "other.registry.io",
            "pod",
            SECRET_PASSWORD,
        ))
    };
    std::fs::write(
        &secret,
        serde_json::json!({"kind": "Secret", "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": encoded}})
        .to_string(),
    )
    .expect("secret");
    let plan = resolve(
        &node.sources(vec![secret.clone()], Duration::from_secs(20)),
        &image("registry.io/team/app:v1"),
    )
    .await;
    assert!(plan.candidates.is_empty(), "{plan:?}");
    let SourceOutcome::NoMatch { keys, .. } = outcome_of(&plan, "pull-secret") else {
        panic!("the secret is for another host: {plan:?}");
    };
    assert_eq!(keys, &["other.registry.io"]);
    assert!(matches!(
        outcome_of(&plan, "node-config"),
        SourceOutcome::Absent(_)
    ));
    assert_no_secret(&plan);
}

#[tokio::test]
async fn every_source_answers_in_the_kubelets_order() {
    let node = Node::new("cp-order");
    let secret = node.path("secret.json");
    std::fs::write(
        &secret,
        docker_config("registry.io/team", "pod", SECRET_PASSWORD),
    )
    .expect("secret");
    node.node_config("registry.io", "node", NODE_PASSWORD);
    node.plugin(
        "provider",
        &["registry.io"],
        &answering_plugin(node.dir.path(), "registry.io", "plugin"),
    );
    let plan = resolve(
        &node.sources(vec![secret], Duration::from_secs(20)),
        &image("registry.io/team/app:v1"),
    )
    .await;
    let users: Vec<&str> = plan
        .candidates
        .iter()
        .map(|c| c.credentials.username.as_str())
        .collect();
    assert_eq!(users, ["pod", "node", "plugin"], "{plan:?}");
    assert_no_secret(&plan);
}

/// A registry stand-in on 127.0.0.1 (plain HTTP, as containerd speaks to a loopback registry
/// without hosts.toml) that challenges with Basic and accepts only `good:GOOD_PASSWORD`, then
/// knows no manifest: a refused credential is an `auth` stop, the accepted one a `notfound`.
const GOOD_PASSWORD: &str = "good-pw-accepted";

async fn basic_registry() -> u16 {
    use base64::Engine;
    use tokio::io::AsyncWriteExt;
    let accepted = format!(
        "authorization: basic {}",
        base64::engine::general_purpose::STANDARD
            .encode(format!("good:{GOOD_PASSWORD}"))
            .to_ascii_lowercase()
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("listen on loopback");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let accepted = accepted.clone();
            tokio::spawn(async move {
                let Some(head) = support::read_request_head(&mut tcp).await else {
                    return;
                };
                let head = head.to_ascii_lowercase();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                let (status, headers, body) = if !head.contains(&accepted) {
                    (
                        "401 Unauthorized",
                        "WWW-Authenticate: Basic realm=\"stand-in\"\r\n",
                        r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}"#,
                    )
                } else if path == "/v2/" {
                    ("200 OK", "", "{}")
                } else {
                    (
                        "404 Not Found",
                        "",
                        r#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#,
                    )
                };
                let reply = format!(
                    "HTTP/1.1 {status}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tcp.write_all(reply.as_bytes()).await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread")]
async fn probe_tries_each_matching_credential_until_one_is_not_refused() {
    let port = basic_registry().await;
    let node = Node::new("cp-loop");
    let registry = format!("127.0.0.1:{port}");
    // The more specific key comes first in the kubelet's keyring: it holds the wrong password.
    let specific = node.path("specific.json");
    std::fs::write(
        &specific,
        docker_config(&format!("{registry}/team"), "stale", SECRET_PASSWORD),
    )
    .expect("secret");
    let host_wide = node.path("host.json");
    std::fs::write(&host_wide, docker_config(&registry, "good", GOOD_PASSWORD)).expect("secret");
    let image = format!("{registry}/team/app:v1");
    let flags = [
        "--docker-config".into(),
        host_wide.into_os_string(),
        "--docker-config".into(),
        specific.into_os_string(),
    ];
    let out = probe_on(&node, &image, &flags, "json").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for secret in [SECRET_PASSWORD, GOOD_PASSWORD] {
        assert!(
            !stdout.contains(secret) && !stderr.contains(secret),
            "{secret} leaked"
        );
    }
    let report: serde_json::Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("JSON: {e}; stderr {stderr}"));
    support::assert_valid_report(&report);
    let credentials = &report["credentials"];
    let attempts = credentials["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{credentials:#}");
    assert_eq!(attempts[0]["username"], "stale");
    assert_eq!(attempts[0]["key"], format!("{registry}/team"));
    assert_eq!(attempts[0]["layer"], "auth", "{credentials:#}");
    assert_eq!(attempts[1]["username"], "good");
    assert_eq!(attempts[1]["source"], "pull-secret");
    assert_eq!(attempts[1]["layer"], "notfound", "{credentials:#}");
    assert_eq!(credentials["used"], 1);
    assert_eq!(report["verdict"]["layer"], "notfound", "{report:#}");
}

#[tokio::test(flavor = "multi_thread")]
async fn probe_with_no_matching_source_goes_anonymous_and_says_what_would_decide() {
    let port = basic_registry().await;
    let node = Node::new("cp-anon");
    let registry = format!("127.0.0.1:{port}");
    // matchImages names the host without the port: the kubelet would not run the plugin.
    node.plugin(
        "provider",
        &["127.0.0.1"],
        &answering_plugin(node.dir.path(), "127.0.0.1", "plugin"),
    );
    let image = format!("{registry}/team/app:v1");
    let flags = [
        "--image-credential-provider-config".into(),
        node.path("provider.json").into_os_string(),
        "--image-credential-provider-bin-dir".into(),
        node.path("bin").into_os_string(),
    ];
    let out = probe_on(&node, &image, &flags, "json").await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("JSON: {e}; stderr {}", String::from_utf8_lossy(&out.stderr)));
    support::assert_valid_report(&report);
    let credentials = &report["credentials"];
    assert_eq!(
        credentials["attempts"][0]["source"], "anonymous",
        "{credentials:#}"
    );
    assert_eq!(report["verdict"]["layer"], "auth", "{report:#}");
    let decides = credentials["decides"][0].as_str().expect("decides");
    assert!(
        decides.contains("no source matches") && decides.contains(&format!("port {port}")),
        "{decides}"
    );
    assert!(
        !node.dir.path().join("request.json").exists(),
        "the plugin ran"
    );
    let text = probe_on(&node, &image, &flags, "text").await;
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("credentials for") && text.contains("try 1 anonymous (no credential): auth"),
        "{text}"
    );
}

/// `pullpath probe IMAGE` on this node: its kubelet root dir, an empty certs.d, and a home and
/// working directory of its own (the kubelet's other config.json paths).
async fn probe_on(
    node: &Node,
    image: &str,
    flags: &[std::ffi::OsString],
    output: &str,
) -> std::process::Output {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_pullpath"));
    command
        .args(["probe", image, "-o", output, "--http-timeout", "5s"])
        .args(flags)
        .arg("--kubelet-root-dir")
        .arg(node.path("root"))
        .arg("--containerd-certs")
        .arg(node.path("certs.d"))
        // Not a kubelet: its command line names no provider config, so nothing of this
        // machine's (a real kubelet's) leaks into the test.
        .arg("--containerd-config")
        .arg(node.path("containerd.toml"))
        .arg("--kubelet-pid")
        .arg(std::process::id().to_string())
        // Nor a runtime: no machine's containerd environment or CRI socket is read either.
        .arg("--runtime-pid")
        .arg(std::process::id().to_string())
        .arg("--runtime-endpoint")
        .arg(node.path("no-containerd.sock"))
        .env("HOME", node.path("home"))
        .current_dir(node.path("cwd"));
    tokio::task::spawn_blocking(move || command.output().expect("probe runs"))
        .await
        .expect("probe")
}

#[tokio::test]
async fn token_mode_missing_binaries_and_bad_secrets_are_reported_not_skipped() {
    let node = Node::new("cp-edges");
    node.plugin(
        "sa-provider",
        &["registry.io"],
        &answering_plugin(node.dir.path(), "registry.io", "u"),
    );
    // Service-account-token mode: the same provider with tokenAttributes.
    let mut config: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(node.path("provider.json")).expect("config"))
            .expect("json");
    config["providers"][0]["tokenAttributes"] = serde_json::json!({
        "serviceAccountTokenAudience": "api://AKSIdentityBinding",
        "cacheType": "ServiceAccount",
        "requireServiceAccount": true,
    });
    let mut missing = config["providers"][0].clone();
    missing["name"] = "absent-provider".into();
    missing
        .as_object_mut()
        .expect("object")
        .remove("tokenAttributes");
    config["providers"]
        .as_array_mut()
        .expect("providers")
        .push(missing);
    std::fs::write(node.path("provider.json"), config.to_string()).expect("config");
    let broken = node.path("broken.json");
    std::fs::write(
        &broken,
        format!(r#"{{"auths": {{"registry.io": {{"auth": "{SECRET_PASSWORD}"#),
    )
    .expect("secret");
    let plan = resolve(
        &node.sources(vec![broken], Duration::from_secs(20)),
        &image("registry.io/app:v1"),
    )
    .await;
    let by_name = |name: &str| {
        plan.sources
            .iter()
            .find(|e| e.source.name() == name)
            .map(|e| e.outcome.clone())
            .unwrap_or_else(|| panic!("no {name}: {plan:?}"))
    };
    let SourceOutcome::NeedsPod(why) = by_name("sa-provider") else {
        panic!("token mode: {plan:?}");
    };
    assert!(why.contains("checked only in cluster mode"), "{why}");
    assert!(
        !node.dir.path().join("request.json").exists(),
        "the plugin ran"
    );
    let SourceOutcome::Failed(SourceProblem::Plugin(problem)) = by_name("absent-provider") else {
        panic!("missing binary: {plan:?}");
    };
    assert!(
        matches!(&*problem, PluginProblem::NoBinary { .. }),
        "{problem:?}"
    );
    let SourceOutcome::Failed(SourceProblem::PullSecret(problem)) =
        outcome_of(&plan, "pull-secret")
    else {
        panic!("bad secret: {plan:?}");
    };
    assert!(
        matches!(&**problem, DockerConfigProblem::Invalid { .. }),
        "{problem:?}"
    );
    assert!(plan.candidates.is_empty());
    assert_no_secret(&plan);
}

#[tokio::test(flavor = "multi_thread")]
async fn when_every_matching_credential_is_refused_the_report_says_so() {
    let port = basic_registry().await;
    let node = Node::new("cp-refused");
    let registry = format!("127.0.0.1:{port}");
    node.node_config(&registry, "stale", NODE_PASSWORD);
    let image = format!("{registry}/team/app:v1");
    for output in ["json", "text"] {
        let out = probe_on(&node, &image, &[], output).await;
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stdout.contains(NODE_PASSWORD) && !stderr.contains(NODE_PASSWORD),
            "the password leaked in {output}"
        );
        if output == "text" {
            assert!(stdout.contains("try 1 node-config (stale for"), "{stdout}");
            continue;
        }
        let report: serde_json::Value = serde_json::from_str(&stdout).expect("JSON report");
        support::assert_valid_report(&report);
        let credentials = &report["credentials"];
        assert_eq!(credentials["attempts"].as_array().map(Vec::len), Some(1));
        assert_eq!(credentials["attempts"][0]["source"], "node-config");
        assert_eq!(credentials["attempts"][0]["layer"], "auth");
        let decides = credentials["decides"][0].as_str().expect("decides");
        assert!(decides.contains("every credential matching"), "{decides}");
        assert!(
            credentials["origins"]
                .as_array()
                .expect("origins")
                .iter()
                .any(|o| o
                    .as_str()
                    .is_some_and(|o| o.starts_with("--root-dir ") && o.ends_with("(flag)"))),
            "{credentials:#}"
        );
        assert_eq!(report["verdict"]["layer"], "auth");
    }
}

#[tokio::test]
async fn containerd_own_auth_applies_only_when_the_kubelet_sends_none() {
    let node = Node::new("cp-containerd");
    std::fs::write(
        node.path("containerd.toml"),
        format!(
            "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"registry.io\".auth]\n  username = \"runtime\"\n  password = \"{NODE_PASSWORD}\"\n"
        ),
    )
    .expect("config.toml");
    let target = image("registry.io/team/app:v1");
    let alone = resolve(&node.sources(vec![], Duration::from_secs(20)), &target).await;
    let users: Vec<&str> = alone
        .candidates
        .iter()
        .map(|c| c.credentials.username.as_str())
        .collect();
    assert_eq!(users, ["runtime"], "{alone:?}");
    assert_eq!(
        alone.candidates[0].source,
        CredentialSource::ContainerdConfig(node.path("containerd.toml"))
    );
    assert_no_secret(&alone);
    let secret = node.path("secret.json");
    std::fs::write(
        &secret,
        docker_config("registry.io", "pod", SECRET_PASSWORD),
    )
    .expect("secret");
    let with_kubelet = resolve(
        &node.sources(vec![secret], Duration::from_secs(20)),
        &target,
    )
    .await;
    let users: Vec<&str> = with_kubelet
        .candidates
        .iter()
        .map(|c| c.credentials.username.as_str())
        .collect();
    assert_eq!(users, ["pod"], "{with_kubelet:?}");
    assert!(matches!(
        outcome_of(&with_kubelet, "containerd-config"),
        SourceOutcome::NotUsed(why) if why.contains("only when the kubelet sends no credential")
    ));
}
