//! `pullpath explain pod/NAME` and `pullpath scan` against the API stand-in
//! (tests/support/kube_api.rs, an AKS-shaped world in tests/fixtures/cluster/aks-shop): every
//! scenario of the cluster issue, and verdicts equal to `explain` of the same objects pasted.

#[path = "support/kube_api.rs"]
mod kube_api;
mod support;

use std::path::PathBuf;
use std::process::{Command, Output};

use kube_api::{ApiServer, Fault, World};
use serde_json::Value;

struct Cluster {
    server: ApiServer,
    dir: PathBuf,
    config: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// "Now" for the world: the new pool's nodes are 50 minutes old.
const REFERENCE: &str = "2026-12-01T09:10:00Z";

fn shop() -> Cluster {
    cluster(World::load("aks-shop"), "shop")
}

fn cluster(world: World, namespace: &str) -> Cluster {
    let server = ApiServer::start(world.pinned_at(REFERENCE));
    let dir = std::env::temp_dir().join(format!(
        "pullpath-cluster-{}-{}",
        std::process::id(),
        server.addr.port()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = server.kubeconfig(&dir, namespace);
    Cluster {
        server,
        dir,
        config,
    }
}

impl Cluster {
    fn pullpath(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_pullpath"))
            .args(args)
            .arg("--kubeconfig")
            .arg(&self.config)
            .env("NO_COLOR", "1")
            .env_remove("KUBECONFIG")
            .output()
            .expect("pullpath runs")
    }

    /// `--output json`, validated against docs/findings.schema.json: (exit status, report).
    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        let out = self.pullpath(&all);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{args:?}: {e}\nstdout: {}\nstderr: {}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        support::assert_valid_findings(&report);
        (out.status.code().unwrap_or(-1), report)
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// (layer, pool, count) of each group, in report order.
fn groups(report: &Value) -> Vec<(&str, &str, u64)> {
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            (
                g["layer"].as_str().unwrap_or(""),
                g["pool"].as_str().unwrap_or(""),
                g["count"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

fn finding<'a>(report: &'a Value, pod: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["pod"]["name"] == pod)
        .unwrap_or_else(|| panic!("no finding for {pod}: {report:#}"))
}

#[test]
fn a_fresh_node_in_a_new_pool_failing_at_dns_names_the_cache_lie() {
    let c = shop();
    let (code, r) = c.json(&["explain", "pod/web-6d8f7c9b5-k2x9p"]);
    assert_eq!(code, 10, "{r:#}");
    let f = &r["findings"][0];
    assert_eq!(f["report"]["verdict"]["layer"], "dns");
    assert_eq!(f["report"]["verdict"]["host"], "shopacr.azurecr.io");
    assert_eq!(f["pod"]["workload"], "Deployment/web");
    let node = &f["where"]["node"];
    assert_eq!(node["name"], "aks-userv2-16180339-vmss000000");
    assert_eq!(
        (node["pool"].as_str(), node["pool_label"].as_str()),
        (Some("userv2"), Some("kubernetes.azure.com/agentpool"))
    );
    assert_eq!(node["kubelet"], "v1.33.5");
    assert_eq!(node["zone"], "eastus-1");
    assert!(
        node["age_seconds"]
            .as_i64()
            .is_some_and(|a| (2900..4000).contains(&a)),
        "{node}"
    );
    let cache = &f["where"]["cache"];
    assert_eq!(cache["cache_lie"], true);
    let holders: Vec<(&str, &str, &str)> = cache["holders"]
        .as_array()
        .expect("holders")
        .iter()
        .map(|h| {
            (
                h["node"].as_str().unwrap_or(""),
                h["pool"].as_str().unwrap_or(""),
                h["evidence"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        holders,
        vec![
            ("aks-user-27182818-vmss000000", "user", "running"),
            ("aks-user-27182818-vmss000001", "user", "running")
        ]
    );
    assert!(
        cache["summary"]
            .as_str()
            .is_some_and(|s| s.contains("scale-up or node replacement is the trigger")),
        "{cache}"
    );
    let next = f["next_commands"][0].as_str().unwrap_or("");
    assert!(
        next.starts_with("kubectl debug node/aks-userv2-16180339-vmss000000"),
        "{next}"
    );
    // The text view says the same.
    let text = String::from_utf8_lossy(&c.pullpath(&["explain", "pod/web-6d8f7c9b5-k2x9p"]).stdout)
        .into_owned();
    assert!(
        text.contains("✗ dns · hop registry · shopacr.azurecr.io"),
        "{text}"
    );
    assert!(text.contains("the cache lie: 2 older nodes hold"), "{text}");
}

#[test]
fn a_deployment_resolves_to_its_failing_pods_only() {
    let c = shop();
    let (code, r) = c.json(&["explain", "deploy/web"]);
    assert_eq!(code, 10);
    let pods: Vec<&str> = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["pod"]["name"].as_str())
        .collect();
    assert_eq!(pods, vec!["web-6d8f7c9b5-k2x9p", "web-6d8f7c9b5-m4q7z"]);
    assert_eq!(
        r["scope"]["pods_read"], 4,
        "the deployment's four pods were read, two fail"
    );
    assert!(
        c.server
            .served()
            .iter()
            .any(|q| q.contains("labelSelector=app%3Dweb")),
        "{:?}",
        c.server.served()
    );
}

#[test]
fn an_init_container_with_a_bare_back_off_is_decided_by_the_earlier_event() {
    let c = shop();
    let (code, r) = c.json(&["explain", "statefulset/worker"]);
    assert_eq!(code, 16, "{r:#}");
    let f = finding(&r, "worker-0");
    assert_eq!(f["container"]["kind"], "init");
    assert_eq!(f["container"]["name"], "migrate");
    assert_eq!(f["container"]["waiting_reason"], "ImagePullBackOff");
    assert_eq!(f["report"]["verdict"]["layer"], "notfound");
    // The status holds only `Back-off pulling image "…"`; the cause is in an earlier event.
    assert!(
        f["report"]["decided_by"]
            .as_str()
            .is_some_and(|d| d.starts_with("event ")),
        "{f:#}"
    );
    assert_eq!(
        f["report"]["verdict"]["cause"],
        "shopacr.azurecr.io/shop/migrate:1.9.0: not found"
    );
    assert_eq!(f["where"]["cache"]["cache_lie"], false);
}

#[test]
fn a_pull_secret_for_another_registry_is_named_without_its_value() {
    let c = cluster(World::load("aks-shop"), "billing");
    let out = c.pullpath(&[
        "explain",
        "pod/billing-api-7c9d8e6f5-x1y2z",
        "--read-secrets",
        "-o",
        "json",
    ]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        !text.contains("ghp_FAKE") && !text.contains("YmlsbGluZy1ib3Q"),
        "a secret value leaked: {text}"
    );
    let r: Value = serde_json::from_str(&text).expect("JSON");
    support::assert_valid_findings(&r);
    assert_eq!(out.status.code(), Some(14));
    let f = &r["findings"][0];
    assert_eq!(f["report"]["verdict"]["layer"], "auth");
    assert_eq!(f["pod"]["workload"], "Deployment/billing-api");
    let secrets = f["pull_secrets"].as_array().expect("secrets");
    assert_eq!(
        secrets.len(),
        1,
        "the pod's secret, the service account's being the same: {secrets:?}"
    );
    let s = &secrets[0];
    assert_eq!(
        (s["name"].as_str(), s["from"].as_str()),
        (Some("ghcr-cred"), Some("pod"))
    );
    assert_eq!(
        (s["exists"].as_bool(), s["type"].as_str()),
        (Some(true), Some("kubernetes.io/dockerconfigjson"))
    );
    assert_eq!(s["registries"], serde_json::json!(["ghcr.io"]));
    assert_eq!(s["matches_image"], false);
    assert!(
        s["note"]
            .as_str()
            .is_some_and(|n| n.contains("none matches shopacr.azurecr.io")),
        "{s}"
    );
    let text = String::from_utf8_lossy(
        &c.pullpath(&[
            "explain",
            "pod/billing-api-7c9d8e6f5-x1y2z",
            "--read-secrets",
        ])
        .stdout,
    )
    .into_owned();
    assert!(!text.contains("ghp_FAKE"), "{text}");
}

#[test]
fn without_read_secrets_no_secret_is_requested() {
    let c = cluster(World::load("aks-shop"), "billing");
    let (_, r) = c.json(&["explain", "pod/billing-api-7c9d8e6f5-x1y2z"]);
    let s = &r["findings"][0]["pull_secrets"][0];
    assert!(
        s.get("exists").is_none() && s.get("registries").is_none(),
        "{s}"
    );
    assert!(
        s["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("not read")),
        "{s}"
    );
    assert!(
        !c.server.served().iter().any(|q| q.contains("/secrets")),
        "{:?}",
        c.server.served()
    );
    let next: Vec<&str> = r["findings"][0]["next_commands"]
        .as_array()
        .expect("next")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        next.iter().any(|n| n.contains("--read-secrets")),
        "{next:?}"
    );
}

#[test]
fn a_missing_secret_on_a_karpenter_node() {
    let c = cluster(World::load("aks-shop"), "billing");
    let (code, r) = c.json(&["explain", "po/reports-5f6a7b8c9-q1w2e", "--read-secrets"]);
    assert_eq!(code, 14);
    let f = &r["findings"][0];
    assert_eq!(f["where"]["node"]["pool_label"], "karpenter.sh/nodepool");
    assert_eq!(f["pool"], "default");
    let s = &f["pull_secrets"][0];
    assert_eq!(
        (s["name"].as_str(), s["exists"].as_bool()),
        (Some("acr-pull"), Some(false))
    );
    assert!(
        s["note"]
            .as_str()
            .is_some_and(|n| n.contains("does not exist in billing")),
        "{s}"
    );
}

#[test]
fn scan_groups_three_failing_workloads_in_two_groups() {
    let c = shop();
    let (code, r) = c.json(&["scan"]);
    assert_eq!(code, 10, "{r:#}");
    assert_eq!(r["command"], "scan");
    assert_eq!(r["scope"]["namespace"], "shop");
    assert_eq!(r["scope"]["pods_read"], 7);
    let groups = groups(&r);
    assert_eq!(groups, vec![("dns", "userv2", 3), ("notfound", "user", 1)]);
    assert_eq!(r["groups"][0]["nodes"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        r["groups"][0]["first_seen"].as_str().map(|s| s.len()),
        Some(20)
    );
    let workloads: std::collections::BTreeSet<&str> = r["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["pod"]["workload"].as_str())
        .collect();
    assert_eq!(
        workloads.into_iter().collect::<Vec<_>>(),
        vec!["Deployment/cart", "Deployment/web", "StatefulSet/worker"]
    );
    // One events list for the namespace, not one per pod.
    assert_eq!(
        c.server
            .served()
            .iter()
            .filter(|q| q.contains("/events"))
            .count(),
        1,
        "{:?}",
        c.server.served()
    );
    let text = String::from_utf8_lossy(&c.pullpath(&["scan"]).stdout).into_owned();
    assert!(text.starts_with("4 failing pulls · 4 pods · 2 groups (worst first)\n  ✗ dns · shopacr.azurecr.io · pool userv2  3 pulls on 2 nodes"), "{text}");
}

#[test]
fn scan_of_all_namespaces_orders_groups_worst_first() {
    let c = shop();
    let (code, r) = c.json(&["scan", "-A"]);
    assert_eq!(code, 10);
    let groups = groups(&r);
    assert_eq!(
        groups,
        vec![
            ("dns", "userv2", 3),
            ("auth", "default", 1),
            ("auth", "user", 1),
            ("notfound", "user", 1)
        ]
    );
    assert_eq!(r["scope"]["all_namespaces"], true);
}

#[test]
fn forbidden_events_are_said_and_the_verdict_stays_honest() {
    let world = World::load("aks-shop")
        .with_fault(Fault::forbid("list", "", "events"))
        .with_fault(Fault::forbid("list", "events.k8s.io", "events"));
    let c = cluster(world, "shop");
    let (code, r) = c.json(&["explain", "pod/worker-0"]);
    // Only the bare back-off of the status is left: undecided, and the report says why.
    assert_eq!(code, 3, "{r:#}");
    let unread: Vec<&str> = r["unread"]
        .as_array()
        .expect("unread")
        .iter()
        .filter_map(|u| u["what"].as_str())
        .collect();
    assert_eq!(
        unread,
        vec![
            "list events of pod worker-0 in shop",
            "list events.events.k8s.io of pod worker-0 in shop"
        ]
    );
    assert!(
        r["unread"][0]["reason"]
            .as_str()
            .is_some_and(|m| m.contains(
                "cannot list resource \"events\" in API group \"\" in the namespace \"shop\""
            )),
        "{r:#}"
    );
    let text =
        String::from_utf8_lossy(&c.pullpath(&["explain", "pod/worker-0"]).stdout).into_owned();
    assert!(
        text.contains("! could not read list events of pod worker-0 in shop: 403 Forbidden"),
        "{text}"
    );
}

#[test]
fn events_k8s_io_is_read_where_core_events_are_refused() {
    let c = cluster(
        World::load("aks-shop").with_fault(Fault::forbid("list", "", "events")),
        "shop",
    );
    let (code, r) = c.json(&["explain", "pod/worker-0"]);
    assert_eq!(code, 16, "{r:#}");
    assert!(r.get("unread").is_none(), "the second API answered: {r:#}");
    assert!(
        c.server.served().iter().any(|q| q.contains(
            "/apis/events.k8s.io/v1/namespaces/shop/events?&fieldSelector=regarding.uid"
        )),
        "{:?}",
        c.server.served()
    );
}

/// Each API error is one line, and its exit status says whose it is: a pod that is not there
/// (66), a refusal (77), a server that cannot be reached (69), a kubeconfig that is not there
/// (66) or that cannot be used (78).
#[test]
fn api_errors_are_one_line_and_exit_by_whose_they_are() {
    let c = shop();
    let out = c.pullpath(&["explain", "pod/nope"]);
    assert_eq!(out.status.code(), Some(66));
    assert_eq!(
        stderr(&out),
        "pullpath: get pods \"nope\" in shop not found (404)\n"
    );
    let forbidden = cluster(
        World::load("aks-shop").with_fault(Fault::forbid("list", "", "pods")),
        "shop",
    );
    let out = forbidden.pullpath(&["scan"]);
    assert_eq!(out.status.code(), Some(77));
    let line = stderr(&out);
    assert!(
        line.contains("cannot list resource \"pods\" in API group \"\" in the namespace \"shop\"")
            && line.lines().count() == 1,
        "{line}"
    );
    // A wrong token: 401.
    let text = std::fs::read_to_string(&c.config)
        .expect("kubeconfig")
        .replace(kube_api::TOKEN, "wrong");
    let bad = c.dir.join("bad-token");
    std::fs::write(&bad, text).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["scan", "--kubeconfig"])
        .arg(&bad)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(77));
    assert!(
        stderr(&out).contains("401 Unauthorized"),
        "{}",
        stderr(&out)
    );
    // Nothing listens: refused on loopback (the port was just released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let text = std::fs::read_to_string(&c.config)
        .expect("kubeconfig")
        .replace(&c.server.addr.port().to_string(), &port.to_string());
    let closed = c.dir.join("closed");
    std::fs::write(&closed, text).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["explain", "pod/worker-0", "--kubeconfig"])
        .arg(&closed)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(69));
    assert!(
        stderr(&out).starts_with("pullpath: could not reach the API server at https://127.0.0.1:")
            && stderr(&out).contains("Connection refused"),
        "{}",
        stderr(&out)
    );
    assert_eq!(stderr(&out).lines().count(), 1);
    // A kubeconfig that is not there: its path once, the system's reason.
    let missing = c.dir.join("nonexistent");
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["scan", "--kubeconfig"])
        .arg(&missing)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(66));
    assert_eq!(
        stderr(&out),
        format!(
            "pullpath: cannot read the kubeconfig {}: No such file or directory (os error 2)\n",
            missing.display()
        )
    );
    // One that names a context it does not have: the configuration (78).
    let out = c.pullpath(&["scan", "--context", "nowhere"]);
    assert_eq!(out.status.code(), Some(78), "{}", stderr(&out));
    assert!(stderr(&out).contains("nowhere"), "{}", stderr(&out));
}

#[test]
fn kubeconfig_list_and_context_follow_kubectl() {
    let c = shop();
    let kept = std::fs::read_to_string(&c.config).expect("kubeconfig");
    // A second context, current, pointing nowhere; --context picks the stand-in.
    let two = kept.replace(
        "contexts:\n",
        "contexts:\n- name: elsewhere\n  context:\n    cluster: standin\n    user: standin\n    namespace: billing\n",
    ).replace("current-context: standin", "current-context: elsewhere");
    let path = c.dir.join("two-contexts");
    std::fs::write(&path, two).expect("write");
    let run = |args: &[&str], kubeconfig: &str| {
        Command::new(env!("CARGO_BIN_EXE_pullpath"))
            .args(args)
            .env("KUBECONFIG", kubeconfig)
            .env("NO_COLOR", "1")
            .output()
            .expect("runs")
    };
    let empty = c.dir.join("empty");
    std::fs::write(&empty, "apiVersion: v1\nkind: Config\npreferences: {}\n").expect("write");
    let list = format!("{}:{}", empty.display(), path.display());
    // The current context's namespace is billing: worker-0 is not there.
    let out = run(&["explain", "pod/worker-0"], &list);
    assert_eq!(out.status.code(), Some(66));
    assert_eq!(
        stderr(&out),
        "pullpath: get pods \"worker-0\" in billing not found (404)\n"
    );
    assert_eq!(
        run(&["explain", "pod/worker-0", "--context", "standin"], &list)
            .status
            .code(),
        Some(16)
    );
    assert_eq!(
        run(&["explain", "pod/worker-0", "-n", "shop"], &list)
            .status
            .code(),
        Some(16)
    );
}

/// The same pod's objects as kubectl prints them, pasted into `explain`, give the same report
/// as `explain pod/NAME` reads from the API.
#[test]
fn verdicts_equal_explain_of_the_same_objects_pasted() {
    let c = shop();
    for pod in [
        "web-6d8f7c9b5-k2x9p",
        "web-6d8f7c9b5-m4q7z",
        "cart-5b7d9f6c4-r2d2x",
        "worker-0",
    ] {
        let (_, from_api) = c.json(&["explain", &format!("pod/{pod}")]);
        let pod_json: Value = serde_json::from_str(&kube_api::run_kubectl(
            &c.config,
            &["get", "pod", pod, "-o", "json"],
        ))
        .expect("pod");
        let uid = pod_json["metadata"]["uid"].as_str().expect("uid");
        let events: Value = serde_json::from_str(&kube_api::run_kubectl(
            &c.config,
            &[
                "get",
                "events",
                "--field-selector",
                &format!("involvedObject.uid={uid}"),
                "-o",
                "json",
            ],
        ))
        .expect("events");
        let mut items = vec![pod_json];
        items.extend(events["items"].as_array().cloned().unwrap_or_default());
        let pasted =
            serde_json::json!({"kind": "List", "apiVersion": "v1", "items": items}).to_string();
        let out = {
            use std::io::Write;
            let mut child = Command::new(env!("CARGO_BIN_EXE_pullpath"))
                .args(["explain", "-o", "json"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("runs");
            child
                .stdin
                .take()
                .expect("stdin")
                .write_all(pasted.as_bytes())
                .expect("write");
            child.wait_with_output().expect("exits")
        };
        let from_text: Value = serde_json::from_slice(&out.stdout).expect("JSON");
        assert_eq!(
            from_api["findings"][0]["report"], from_text["findings"][0]["report"],
            "{pod}"
        );
        assert_eq!(from_api["verdict"], from_text["verdict"], "{pod}");
    }
}

/// (API group, resource, verb) of a request path as RBAC sees it.
fn rbac_request(request: &str) -> Option<(String, String, String)> {
    let path = request.split_whitespace().nth(1)?.split('?').next()?;
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, rest) = match parts.as_slice() {
        ["api", "v1", rest @ ..] => ("", rest),
        ["apis", group, _, rest @ ..] => (*group, rest),
        _ => return None,
    };
    let (resource, named) = match rest {
        ["namespaces", _, resource] => (*resource, false),
        ["namespaces", _, resource, _] => (*resource, true),
        [resource] => (*resource, false),
        [resource, _] => (*resource, true),
        _ => return None,
    };
    Some((
        group.into(),
        resource.into(),
        if named { "get" } else { "list" }.into(),
    ))
}

/// The rules of each ClusterRole in deploy/rbac-read.yaml: (role, group, resource, verb).
/// The rules of deploy/rbac-read.yaml and of its `--read-secrets` companion.
fn rbac_rules() -> Vec<(String, String, String, String)> {
    let read = |name: &str| {
        std::fs::read_to_string(support::repo().join("deploy").join(name)).expect("rbac file")
    };
    let text = format!(
        "{}\n---\n{}",
        read("rbac-read.yaml"),
        read("rbac-read-secrets.yaml")
    );
    let mut rules = Vec::new();
    for doc in serde_yaml_ng::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(doc).expect("YAML document");
        if value["kind"] != "ClusterRole" {
            continue;
        }
        let role = value["metadata"]["name"].as_str().unwrap_or("").to_string();
        for rule in value["rules"].as_array().into_iter().flatten() {
            let strings = |key: &str| -> Vec<String> {
                rule[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            };
            for g in strings("apiGroups") {
                for r in strings("resources") {
                    for v in strings("verbs") {
                        rules.push((role.clone(), g.clone(), r.clone(), v.clone()));
                    }
                }
            }
        }
    }
    rules
}

/// deploy/rbac-read.yaml grants every request pullpath makes in these scenarios, secrets only
/// in the --read-secrets role, and no verb that is not a read.
#[test]
fn rbac_read_yaml_grants_what_pullpath_asks_and_no_more() {
    let rules = rbac_rules();
    assert!(
        rules.iter().all(|r| r.3 == "get" || r.3 == "list"),
        "{rules:?}"
    );
    assert!(
        rules
            .iter()
            .filter(|r| r.2 == "secrets")
            .all(|r| r.0 == "pullpath-read-secrets"),
        "{rules:?}"
    );
    let c = shop();
    for args in [
        &["scan", "-A", "--read-secrets"][..],
        &["explain", "deploy/web"],
        &["explain", "statefulset/worker"],
        &["explain", "ds/node-agent", "-n", "kube-system"],
        &["explain", "job/ledger-export-29391840", "-n", "billing"],
        &[
            "explain",
            "pod/billing-api-7c9d8e6f5-x1y2z",
            "-n",
            "billing",
            "--read-secrets",
        ],
    ] {
        assert!(
            c.pullpath(args).status.code().is_some_and(|s| s != 70),
            "{args:?}"
        );
    }
    let mut needed: std::collections::BTreeSet<(String, String, String)> =
        std::collections::BTreeSet::new();
    for request in c.server.served() {
        needed.insert(
            rbac_request(&request).unwrap_or_else(|| panic!("unexpected request {request}")),
        );
    }
    for (group, resource, verb) in &needed {
        assert!(
            rules
                .iter()
                .any(|r| &r.1 == group && &r.2 == resource && &r.3 == verb),
            "deploy/rbac-read.yaml lacks {verb} {resource} in group {group:?}"
        );
    }
    // Least privilege: every rule is used by some scenario (events.k8s.io is the fallback,
    // tested on its own above).
    let unused: Vec<_> = rules
        .iter()
        .filter(|r| !needed.contains(&(r.1.clone(), r.2.clone(), r.3.clone())))
        .map(|r| format!("{} {} {}", r.3, r.1, r.2))
        .collect();
    assert_eq!(unused, vec!["list events.k8s.io events"]);
}

#[test]
fn a_pod_that_pulled_its_image_passes() {
    let c = shop();
    let (code, r) = c.json(&["explain", "pod/web-6d8f7c9b5-7tqlw"]);
    assert_eq!(code, 0, "{r:#}");
    assert_eq!(r["verdict"]["passed"], true);
    assert_eq!(r["findings"], serde_json::json!([]));
    let text = String::from_utf8_lossy(&c.pullpath(&["explain", "pod/web-6d8f7c9b5-7tqlw"]).stdout)
        .into_owned();
    assert!(text.contains("1 read, none waiting on an image"), "{text}");
}

#[test]
fn core_events_not_served_fall_back_to_events_k8s_io() {
    let c = cluster(
        World::load("aks-shop").with_fault(Fault::not_served("", "events")),
        "shop",
    );
    let (code, r) = c.json(&["explain", "pod/worker-0"]);
    assert_eq!(code, 16, "{r:#}");
    assert_eq!(
        r["findings"][0]["report"]["verdict"]["cause"],
        "shopacr.azurecr.io/shop/migrate:1.9.0: not found"
    );
    assert!(r.get("unread").is_none(), "{r:#}");
}

#[test]
fn unreadable_nodes_leave_the_pool_unknown_and_say_so() {
    let c = cluster(
        World::load("aks-shop").with_fault(Fault::forbid("list", "", "nodes")),
        "shop",
    );
    let (code, r) = c.json(&["scan"]);
    assert_eq!(code, 10);
    assert_eq!(r["unread"][0]["what"], "list nodes (cluster scope)");
    let f = finding(&r, "web-6d8f7c9b5-k2x9p");
    assert!(f.get("pool").is_none(), "{f:#}");
    assert_eq!(f["where"]["node"]["name"], "aks-userv2-16180339-vmss000000");
    // The running pods still show which nodes hold the image; their age is unknown, so no lie
    // is claimed.
    assert_eq!(
        f["where"]["cache"]["holders"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(f["where"]["cache"]["cache_lie"], false);
    let summary = f["where"]["cache"]["summary"].as_str().unwrap_or("");
    assert!(
        summary.contains("creation times were not read"),
        "{summary}"
    );
    assert_eq!(groups(&r), vec![("dns", "", 3), ("notfound", "", 1)]);
}

/// An API server that accepts the connection and never answers: `--request-timeout` bounds it.
#[test]
fn a_silent_api_server_times_out_with_one_line() {
    let c = shop();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("addr").port();
    // Hold every connection open without a byte in reply, until the test ends.
    let holder = std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().take(4).flatten() {
            held.push(stream);
        }
        std::thread::sleep(std::time::Duration::from_secs(8));
    });
    let text = std::fs::read_to_string(&c.config)
        .expect("kubeconfig")
        .replace(&c.server.addr.port().to_string(), &port.to_string());
    let path = c.dir.join("silent");
    std::fs::write(&path, text).expect("write");
    let started = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["scan", "--request-timeout", "1s", "--kubeconfig"])
        .arg(&path)
        .output()
        .expect("runs");
    let elapsed = started.elapsed();
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert!(
        stderr(&out).starts_with("pullpath: could not reach the API server at https://127.0.0.1:"),
        "{}",
        stderr(&out)
    );
    assert!(
        stderr(&out).contains("deadline has elapsed"),
        "{}",
        stderr(&out)
    );
    assert!(
        elapsed < std::time::Duration::from_secs(7),
        "took {elapsed:?}: {}",
        stderr(&out)
    );
    drop(holder);
}

#[test]
fn daemonsets_and_jobs_resolve_by_their_selectors() {
    let c = shop();
    let (code, r) = c.json(&["explain", "daemonset/node-agent", "-n", "kube-system"]);
    assert_eq!(
        (code, r["scope"]["pods_read"].as_u64()),
        (0, Some(1)),
        "{r:#}"
    );
    assert!(
        c.server
            .served()
            .iter()
            .any(|q| q.contains("labelSelector=app+in+%28node-agent%29")),
        "{:?}",
        c.server.served()
    );
    let (code, r) = c.json(&["explain", "job/ledger-export-29391840", "-n", "billing"]);
    assert_eq!(
        (code, r["scope"]["pods_read"].as_u64()),
        (0, Some(1)),
        "{r:#}"
    );
    let out = c.pullpath(&["explain", "deploy/nope"]);
    assert_eq!(out.status.code(), Some(66));
    assert_eq!(
        stderr(&out),
        "pullpath: get deployments \"nope\" in shop not found (404)\n"
    );
}

/// The requests for `path` the stand-in served, with their `Impersonate-*` headers.
fn impersonation_of(server: &ApiServer, path: &str) -> Vec<Vec<(String, String)>> {
    server
        .impersonation
        .lock()
        .expect("impersonation log")
        .iter()
        .filter(|(request, _)| request == &format!("GET {path}"))
        .map(|(_, headers)| headers.clone())
        .collect()
}

/// kubectl's flags for the API, read by the real kubectl and by pullpath from the same
/// kubeconfig: the current context points at a cluster and user that do not work, `--cluster`
/// and `--user` pick the stand-in's; `--as`, `--as-group` (twice) and `--as-uid` reach the
/// API server as the same `Impersonate-*` headers from both; `--request-timeout` takes Go
/// durations and 0 from both.
#[test]
fn kubectls_flags_reach_the_api_server_as_kubectls_do() {
    let c = shop();
    let kept = std::fs::read_to_string(&c.config).expect("kubeconfig");
    // A current context whose cluster is nowhere and whose user has the wrong token.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let broken = kept
        .replace(
            "clusters:\n",
            &format!("clusters:\n- name: nowhere\n  cluster:\n    server: https://127.0.0.1:{port}\n"),
        )
        .replace(
            "contexts:\n",
            "contexts:\n- name: broken\n  context:\n    cluster: nowhere\n    user: wrong\n    namespace: shop\n",
        )
        .replace(
            "users:\n",
            "users:\n- name: wrong\n  user:\n    token: not-the-token\n",
        )
        .replace("current-context: standin", "current-context: broken");
    let config = c.dir.join("broken-context");
    std::fs::write(&config, broken).expect("write");
    let identity = [
        "--cluster",
        "standin",
        "--user",
        "standin",
        "--as",
        "system:serviceaccount:ops:pullpath",
        "--as-group",
        "system:serviceaccounts",
        "--as-group",
        "ops:readers",
        "--as-uid",
        "4242",
    ];
    let pod = "/api/v1/namespaces/shop/pods/worker-0";
    for timeout in ["1m30s", "0", "90"] {
        let mut args = vec!["get", "--raw", pod, "--request-timeout", timeout];
        args.extend(identity);
        let read = kube_api::run_kubectl(&config, &args);
        assert!(read.contains("\"worker-0\""), "kubectl {timeout}: {read}");
    }
    let by_kubectl = impersonation_of(&c.server, pod);
    c.server.impersonation.lock().expect("log").clear();
    for timeout in ["1m30s", "0", "90"] {
        let mut args = vec!["explain", "pod/worker-0", "--request-timeout", timeout];
        args.extend(identity);
        let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
            .args(&args)
            .arg("--kubeconfig")
            .arg(&config)
            .env_remove("KUBECONFIG")
            .output()
            .expect("pullpath runs");
        // worker-0 waits on a DNS failure: the pod was read, and explained.
        assert_eq!(out.status.code(), Some(16), "{timeout}: {}", stderr(&out));
    }
    let by_pullpath = impersonation_of(&c.server, pod);
    let expected: Vec<(String, String)> = [
        ("impersonate-user", "system:serviceaccount:ops:pullpath"),
        ("impersonate-uid", "4242"),
        ("impersonate-group", "system:serviceaccounts"),
        ("impersonate-group", "ops:readers"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let sorted = |mut headers: Vec<(String, String)>| {
        headers.sort();
        headers
    };
    assert_eq!(by_kubectl.len(), 3, "{by_kubectl:?}");
    assert_eq!(by_pullpath.len(), 3, "{by_pullpath:?}");
    for headers in by_kubectl.iter().chain(&by_pullpath) {
        assert_eq!(sorted(headers.clone()), sorted(expected.clone()));
        // The groups in the order given.
        let groups: Vec<&str> = headers
            .iter()
            .filter(|(k, _)| k == "impersonate-group")
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(groups, ["system:serviceaccounts", "ops:readers"]);
    }
    // Without the overrides, both follow the broken context: nothing reaches the stand-in.
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["explain", "pod/worker-0", "--kubeconfig"])
        .arg(&config)
        .env_remove("KUBECONFIG")
        .output()
        .expect("pullpath runs");
    assert_eq!(out.status.code(), Some(69), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("https://127.0.0.1:{port}")));
    // --as-group alone is refused by both: impersonating groups needs a user.
    let alone = Command::new(kube_api::kubectl())
        .args(["get", "--raw", pod, "--as-group", "g", "--kubeconfig"])
        .arg(&c.config)
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubectl runs");
    assert!(!alone.status.success());
    let out = c.pullpath(&["explain", "pod/worker-0", "--as-group", "g"]);
    assert_eq!(out.status.code(), Some(64), "{}", stderr(&out));
}

/// `-o yaml` is `-o json`'s document, as kubectl's are, with the same exit status.
#[test]
fn yaml_output_is_the_json_document() {
    let c = shop();
    let (code, json) = c.json(&["scan"]);
    let out = c.pullpath(&["scan", "-o", "yaml"]);
    assert_eq!(out.status.code(), Some(code));
    let yaml: Value = serde_yaml_ng::from_slice(&out.stdout).expect("YAML");
    assert_eq!(yaml, json);
}

/// A dry run that can plan no probe pod says why on stderr and exits 78, printing no List:
/// here the test build of pullpath is dynamically linked, so there is nothing to deliver to
/// the nodes without `--probe-binary` or `--probe-image`.
#[test]
fn a_dry_run_that_plans_nothing_says_why_and_fails() {
    let nodes: Value = serde_json::from_slice(
        &std::fs::read(kube_api::fixtures().join("aks-shop/nodes.json")).expect("fixture"),
    )
    .expect("JSON");
    let mut objects = nodes["items"].as_array().cloned().unwrap_or_default();
    objects.push(kube_api::namespace(
        "pullpath",
        serde_json::json!({"pod-security.kubernetes.io/enforce": "privileged"}),
    ));
    let c = cluster(World::from_objects(objects), "shop");
    let out = c.pullpath(&[
        "fleet",
        "shopacr.azurecr.io/shop/web:2.4.1",
        "--dry-run",
        "--node-image",
        "registry.k8s.io/pause:3.10",
    ]);
    assert_eq!(out.status.code(), Some(78), "{}", stderr(&out));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let said = stderr(&out);
    assert!(
        said.starts_with("pullpath: --dry-run: no probe pod could be planned: ")
            && said.contains("no pullpath binary to deliver")
            && said.lines().count() == 1,
        "{said}"
    );
}
