//! A probe pod's view of its node: `pullpath probe --host-root ROOT`, where ROOT is a node's
//! filesystem laid out as node images lay it out (`../shared/notes/nodes.md`), against a TLS
//! registry with Basic authentication on 127.0.0.1.
//!
//! Each node is built so that reading a node path in the *probe's* filesystem instead of the
//! node's gives another answer: the registry's name is only in the node's /etc/hosts, its CA only
//! in the node's trust store behind Azure Linux's absolute links, its credential only from a
//! credential provider plugin that reads a root-only file by absolute node path (so it must run
//! inside the node's root, with the node's /bin/sh and libc), and the proxy only in systemd's
//! manager-wide `DefaultEnvironment=`. The chroot needs root, as the lab tests do.
//!
//! Nodes with more than one containerd (Bottlerocket's host-containerd; Docker's beside k3s's
//! or RKE2's) hold the registry's credential only in the config of the containerd the kubelet
//! talks to: the probe must find that one by the socket it listens on. Their daemons are
//! stand-ins named as the real ones, each listening at its node path in a mount namespace of
//! its own (the node root's /run bound on /run), so that /proc/net/unix shows what a node's shows.

#[path = "support/registry.rs"]
mod registry;
mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use support::node_image::{
    NodeTree, aks_credential_provider, aks_resolver, azure_linux_trust, bottlerocket, cos,
    docker_containerd, rancher,
};
use support::scratch::Scratch;

const NAME: &str = "registry.node.test";
const USER: &str = "00000000-0000-0000-0000-000000000000";
const SECRET: &str = "s3cret-from-the-node-identity";

/// A node's root filesystem under a scratch directory.
struct NodeFs {
    _scratch: Scratch,
    tree: NodeTree,
}

impl NodeFs {
    fn new(name: &str) -> NodeFs {
        let scratch = Scratch::new(name);
        let tree = NodeTree::at_root(scratch.path());
        NodeFs {
            _scratch: scratch,
            tree,
        }
    }

    fn root(&self) -> &Path {
        &self.tree.root
    }

    fn file(&self, node_path: &str, text: &str, mode: u32) {
        self.tree.file(node_path, text, mode);
    }
}

/// The node's resolver (AKS's links, here with no reachable server) and hosts file naming the
/// registry.
fn resolver(node: &NodeFs) {
    aks_resolver(
        &node.tree,
        "nameserver 127.0.0.1\n",
        &format!("127.0.0.1 localhost\n127.0.0.1 {NAME}\n"),
    );
}

/// containerd 1.7's config as AKS writes it: `config_path` names the hosts directory.
fn containerd(node: &NodeFs) {
    node.file(
        "/etc/containerd/config.toml",
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\n  config_path = \"/etc/containerd/certs.d\"\n",
        0o644,
    );
    std::fs::create_dir_all(node.root().join("etc/containerd/certs.d")).expect("certs.d");
}

/// AKS's credential provider, answering for the test registry's name and port.
fn credential_provider(node: &NodeFs, port: u16) {
    aks_credential_provider(&node.tree, &format!("{NAME}:{port}"), USER, SECRET);
}

/// A process whose command line carries the kubelet's real credential provider flags (node
/// paths), as the node's kubelet does; the probe reads them from /proc.
fn kubelet() -> Child {
    stand_in(&[
        "--image-credential-provider-config=/var/lib/kubelet/credential-provider-config.yaml",
        "--image-credential-provider-bin-dir",
        "/var/lib/kubelet/credential-provider",
    ])
}

/// The node's containerd as /proc shows it: started with its config file, no proxy or trust
/// variable in its environment. (This machine's own containerd, if one runs, is not the node's.)
fn runtime() -> Child {
    stand_in(&["--config", "/etc/containerd/config.toml"])
}

/// A process that waits, with `flags` on its command line and the environment systemd gives a
/// unit, in `/` as systemd starts it.
fn stand_in(flags: &[&str]) -> Child {
    Command::new("python3")
        .args(["-c", "import sys; sys.stdin.read()"])
        .args(flags)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .current_dir("/")
        .stdin(Stdio::piped())
        .spawn()
        .expect("the stand-in runs")
}

/// A node daemon as /proc shows it: named `comm`, `argv` (its flags) after its program (python3
/// and the stand-in's script), its environment a unit's. With `listen` (a node path) it listens
/// there, bound in a mount namespace of its own where the node root's /run is /run, so that
/// /proc/net/unix shows the node path as the node's daemon binds it; returned once listening.
struct NodeDaemon {
    child: Child,
}

impl NodeDaemon {
    fn start(root: &Path, comm: &str, argv: &[&str], listen: Option<&str>) -> NodeDaemon {
        let script =
            std::env::temp_dir().join(format!("pullpath-daemon-{}.py", std::process::id()));
        std::fs::write(
            &script,
            "import os, socket, sys\nwith open('/proc/self/comm', 'w') as f:\n    f.write(os.environ['STAND_IN_COMM'])\npath = os.environ.get('STAND_IN_LISTEN')\nif path:\n    os.makedirs(os.path.dirname(path), exist_ok=True)\n    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n    s.bind(path)\n    s.listen(16)\nsys.stdout.write('ready\\n')\nsys.stdout.flush()\nsys.stdin.read()\n",
        )
        .expect("the stand-in's script");
        let mut command = match listen {
            Some(_) => {
                std::fs::create_dir_all(root.join("run")).expect("the node's /run");
                let mut c = Command::new("unshare");
                c.args(["-m", "--propagation", "private", "sh", "-c"])
                    .arg("mount --bind \"$0\" /run && exec python3 \"$@\"")
                    .arg(root.join("run"));
                c
            }
            None => Command::new("python3"),
        };
        command
            .arg(&script)
            .args(argv)
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("STAND_IN_COMM", comm)
            .env("STAND_IN_LISTEN", listen.unwrap_or_default())
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        let mut child = command.spawn().expect("the stand-in runs");
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.as_mut().expect("stdout")),
            &mut ready,
        )
        .expect("the stand-in says it is ready");
        assert_eq!(ready, "ready\n", "the stand-in {comm} did not start");
        NodeDaemon { child }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for NodeDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `pullpath probe IMAGE` with the node's kubelet and containerd processes as given (`runtime`
/// `None`: none visible, as in a pod without hostPID).
fn probe(root: Option<&Path>, image: &str, kubelet: u32, runtime: Option<u32>) -> (Value, String) {
    let dir = Scratch::new("node-root-probe");
    let socket = dir.path().join("no-containerd.sock");
    let args = [
        "--kubelet-pid".to_string(),
        kubelet.to_string(),
        // pid 0 is no process.
        "--runtime-pid".to_string(),
        runtime.unwrap_or(0).to_string(),
        "--runtime-endpoint".to_string(),
        socket.display().to_string(),
    ];
    probe_with(root, image, &args)
}

/// `pullpath probe IMAGE` as a probe pod runs it, with `args` besides: the node's processes
/// found through /proc as the probe finds them unless `args` names them.
fn probe_with(root: Option<&Path>, image: &str, args: &[String]) -> (Value, String) {
    let dir = Scratch::new("node-root-probe");
    let mut command = Command::new(env!("CARGO_BIN_EXE_pullpath"));
    command.args([
        "probe",
        image,
        "-o",
        "json",
        "--http-timeout",
        "5s",
        "--dns-timeout",
        "1s",
    ]);
    if let Some(root) = root {
        command.arg("--host-root").arg(root);
    }
    command
        .args(["--containerd-version", "1.7.27"])
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir(dir.path());
    let out = command.output().expect("pullpath runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let report: Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("JSON report: {e}\n{stdout}\n{stderr}"));
    support::assert_valid_report(&report);
    (report, format!("{stdout}{stderr}"))
}

fn require_root() {
    let uid = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|l| l.split_whitespace().next().map(str::to_string))
        })
        .unwrap_or_default();
    assert_eq!(
        uid, "0",
        "these tests chroot into a node root: run them as root"
    );
}

/// A TLS registry with Basic authentication (USER's SECRET), as root; the registry and its CA.
async fn basic_auth_registry() -> (registry::Registry, String) {
    require_root();
    let (tls, ca_pem) = registry::tls_for(NAME);
    let served = registry::serve_with(registry::Options {
        tls: Some(tls),
        basic: Some((USER.to_string(), SECRET.to_string())),
        ..registry::Options::default()
    })
    .await;
    (served, ca_pem)
}

/// A TLS registry with Basic authentication, and an Azure Linux node that trusts it, names it in
/// its hosts file and holds its credential behind a plugin; the image to pull.
async fn azure_linux_node(name: &str) -> (NodeFs, String) {
    let (served, ca_pem) = basic_auth_registry().await;
    let node = NodeFs::new(name);
    resolver(&node);
    azure_linux_trust(&node.tree, &ca_pem);
    containerd(&node);
    credential_provider(&node, served.port);
    (node, format!("{NAME}:{}/team/app:v1", served.port))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_azure_linux_node_pulls_with_its_own_trust_resolver_and_plugin() {
    let (node, image) = azure_linux_node("node-root-azl").await;
    let kubelet = kubelet();
    let runtime = runtime();

    let (report, output) = probe(Some(node.root()), &image, kubelet.id(), Some(runtime.id()));
    assert_eq!(report["verdict"]["passed"], true, "{report:#}");
    // Which credential: the plugin's, run inside the node's root.
    let attempts = &report["credentials"]["attempts"];
    assert_eq!(
        (attempts[0]["source"].as_str(), attempts[0]["name"].as_str()),
        (Some("provider"), Some("acr-credential-provider")),
        "{report:#}"
    );
    // Which trust: Go's second bundle, found through the node's links.
    assert_eq!(
        report["system_trust"]["bundle"], "/etc/pki/tls/certs/ca-bundle.crt",
        "{report:#}"
    );
    assert_eq!(report["hosts_dirs"]["roots"][0], "/etc/containerd/certs.d");
    assert!(
        report["hosts_dirs"]["origin"]
            .as_str()
            .is_some_and(|o| o.contains("config_path in /etc/containerd/config.toml")),
        "{report:#}"
    );
    assert!(!output.contains(SECRET), "the plugin's password is printed");

    // The same node read through the probe's own filesystem: the name does not resolve.
    let (host_view, _) = probe(None, &image, kubelet.id(), Some(runtime.id()));
    assert_ne!(host_view["verdict"]["passed"], true, "{host_view:#}");
    for mut process in [kubelet, runtime] {
        let _ = process.kill();
        let _ = process.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_outside_the_node_root_would_not_find_its_file() {
    // The kubelet's flags name the plugin; its file argument is a node path. Its answer decides
    // auth: with the file the pull passes, and the probe reads the file in the node only.
    let (node, image) = azure_linux_node("node-root-no-azure-json").await;
    std::fs::remove_file(node.root().join("etc/kubernetes/azure.json")).expect("remove");
    let kubelet = kubelet();
    let runtime = runtime();
    let (report, output) = probe(Some(node.root()), &image, kubelet.id(), Some(runtime.id()));
    assert_eq!(report["verdict"]["layer"], "auth", "{report:#}");
    let sources = report["credentials"]["sources"].to_string();
    assert!(
        sources.contains("cannot open /etc/kubernetes/azure.json"),
        "the plugin's own error, from inside the node: {sources}"
    );
    assert!(!output.contains(SECRET));
    for mut process in [kubelet, runtime] {
        let _ = process.kill();
        let _ = process.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_managers_default_environment_is_the_runtimes_proxy() {
    // AKS writes the HTTP proxy into /etc/systemd/system.conf.d/proxy.conf for every unit; with
    // no running containerd in sight, the probe reads containerd's unit and that file on the
    // node, and the pull goes to the proxy (here a closed port: the proxy layer).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let proxy_port = closed.local_addr().expect("address").port();
    drop(closed);
    let served = registry::serve().await;
    let node = NodeFs::new("node-root-proxy");
    resolver(&node);
    containerd(&node);
    node.file(
        "/etc/systemd/system.conf.d/proxy.conf",
        &format!("[Manager]\nDefaultEnvironment=\"HTTPS_PROXY=http://127.0.0.1:{proxy_port}\" \"HTTP_PROXY=http://127.0.0.1:{proxy_port}\"\n"),
        0o644,
    );
    node.file(
        "/usr/lib/systemd/system/containerd.service",
        "[Service]\nExecStart=/usr/bin/containerd\n",
        0o644,
    );
    node.tree.link("/lib", "usr/lib");
    let mut kubelet = kubelet();
    let image = format!("{NAME}:{}/team/app:v1", served.port);
    // No running containerd in sight, as in a pod without hostPID: its unit is read.
    let (report, _) = probe(Some(node.root()), &image, kubelet.id(), None);
    let proxy = report["proxy"].as_array().expect("proxy vars");
    assert!(
        proxy.iter().any(|v| v["name"] == "HTTPS_PROXY"
            && v["source"] == "/etc/systemd/system.conf.d/proxy.conf"),
        "{report:#}"
    );
    assert_eq!(report["verdict"]["layer"], "proxy", "{report:#}");
    let _ = kubelet.kill();
    let _ = kubelet.wait();
}

/// A TLS registry with Basic authentication whose credential only the node's runtime config
/// holds, a node naming it in its hosts file; the registry (`host:port`), its CA and the image.
async fn registry_for_runtime_auth(node: &NodeFs) -> (String, String, String) {
    let (served, ca_pem) = basic_auth_registry().await;
    node.file("/etc/resolv.conf", "nameserver 127.0.0.1\n", 0o644);
    node.file(
        "/etc/hosts",
        &format!("127.0.0.1 localhost\n127.0.0.1 {NAME}\n"),
        0o644,
    );
    let host = format!("{NAME}:{}", served.port);
    let image = format!("{host}/team/app:v1");
    (host, ca_pem, image)
}

/// The kubelet stand-ins' name: not `kubelet`, so that the k3s node's probe, which finds no
/// kubelet process and so k3s, is not shown another test's kubelet (the probe names these by
/// `--kubelet-pid`).
const KUBELET_COMM: &str = "kubelet-standin";

fn pid_args(flag: &str, pid: u32) -> Vec<String> {
    vec![flag.to_string(), pid.to_string()]
}

#[tokio::test(flavor = "multi_thread")]
async fn on_bottlerocket_the_runtime_is_the_kubernetes_containerd_not_host_containerd() {
    let node = NodeFs::new("node-root-bottlerocket");
    let (host, ca_pem, image) = registry_for_runtime_auth(&node).await;
    bottlerocket::lay_out(&node.tree, &ca_pem, &host, USER, SECRET);
    // host-containerd starts first: the lowest pid named containerd.
    let host_containerd = NodeDaemon::start(
        node.root(),
        "containerd",
        &bottlerocket::HOST_CONTAINERD[1..],
        Some(bottlerocket::HOST_CONTAINERD_SOCKET),
    );
    let containerd = NodeDaemon::start(
        node.root(),
        "containerd",
        &bottlerocket::CONTAINERD[1..],
        Some(bottlerocket::CONTAINERD_SOCKET),
    );
    let kubelet = NodeDaemon::start(node.root(), KUBELET_COMM, &bottlerocket::KUBELET[1..], None);

    let (report, output) = probe_with(
        Some(node.root()),
        &image,
        &pid_args("--kubelet-pid", kubelet.pid()),
    );
    assert_eq!(report["verdict"]["passed"], true, "{report:#}");
    let runtime = &report["node_processes"]["runtime"];
    assert_eq!(runtime["pid"], containerd.pid(), "{report:#}");
    assert_eq!(runtime["found_by"], "socket-listener", "{report:#}");
    assert_eq!(
        report["node_processes"]["endpoint_origin"],
        format!(
            "the running kubelet's --container-runtime-endpoint (pid {})",
            kubelet.pid()
        )
    );
    // The credential the Kubernetes containerd's config.toml holds, used as containerd uses it.
    let attempts = &report["credentials"]["attempts"];
    assert_eq!(attempts[0]["source"], "containerd-config", "{report:#}");
    assert_eq!(
        report["system_trust"]["bundle"],
        "/etc/pki/tls/certs/ca-bundle.crt"
    );
    assert!(!output.contains(SECRET), "the password is printed");

    // The lowest pid named containerd, as the probe took it before: host-containerd's config
    // has no credential, and the node seems to send none.
    let (wrong, _) = probe_with(
        Some(node.root()),
        &image,
        &[
            pid_args("--kubelet-pid", kubelet.pid()),
            pid_args("--runtime-pid", host_containerd.pid()),
        ]
        .concat(),
    );
    assert_eq!(wrong["verdict"]["layer"], "auth", "{wrong:#}");
}

/// A k3s or RKE2 node (`distro`) whose runtime's config holds the registry's credential, with
/// Docker's containerd started first (no credential: the lowest pid named containerd), the
/// agent (named `comm`), and its containerd child; the image, the agent and its containerd.
async fn rancher_node(name: &str, distro: &str, comm: &str) -> (NodeFs, String, [NodeDaemon; 3]) {
    let node = NodeFs::new(name);
    let (host, ca_pem, image) = registry_for_runtime_auth(&node).await;
    rancher::lay_out(&node.tree, distro, &ca_pem, &host, USER, SECRET);
    let docker = NodeDaemon::start(
        node.root(),
        "containerd",
        &docker_containerd::COMMAND[1..],
        Some(docker_containerd::SOCKET),
    );
    let agent = NodeDaemon::start(node.root(), comm, rancher::AGENT, None);
    let command = rancher::containerd(distro);
    let argv: Vec<&str> = command.iter().skip(1).map(String::as_str).collect();
    let containerd = NodeDaemon::start(node.root(), "containerd", &argv, Some(rancher::SOCKET));
    (node, image, [docker, agent, containerd])
}

#[tokio::test(flavor = "multi_thread")]
async fn on_rke2_the_runtime_is_the_containerd_its_kubelet_talks_to() {
    let (node, image, [_docker, _agent, containerd]) =
        rancher_node("node-root-rke2", "rke2", "rke2").await;
    let kubelet = NodeDaemon::start(node.root(), KUBELET_COMM, &rancher::RKE2_KUBELET[1..], None);

    let (report, _) = probe_with(
        Some(node.root()),
        &image,
        &pid_args("--kubelet-pid", kubelet.pid()),
    );
    assert_eq!(report["verdict"]["passed"], true, "{report:#}");
    assert_eq!(report["node_processes"]["runtime"]["pid"], containerd.pid());
    assert_eq!(
        report["node_processes"]["runtime"]["found_by"],
        "socket-listener"
    );
    assert_eq!(
        report["hosts_dirs"]["roots"][0], "/var/lib/rancher/rke2/agent/etc/containerd/certs.d",
        "{report:#}"
    );
    assert_eq!(
        report["credentials"]["attempts"][0]["source"],
        "containerd-config"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn on_k3s_the_kubelet_is_inside_k3s_and_the_runtime_its_child() {
    let (node, image, [_docker, agent, containerd]) =
        rancher_node("node-root-k3s", "k3s", "k3s-agent").await;

    // No kubelet process, and nothing named: the probe finds k3s and its child by itself.
    let (report, _) = probe_with(Some(node.root()), &image, &[]);
    assert_eq!(report["verdict"]["passed"], true, "{report:#}");
    let processes = &report["node_processes"];
    assert_eq!(processes["kubelet"]["found_by"], "embedded", "{report:#}");
    assert_eq!(processes["kubelet"]["pid"], agent.pid());
    assert_eq!(
        processes["endpoint"],
        "unix:///run/k3s/containerd/containerd.sock"
    );
    assert_eq!(processes["runtime"]["pid"], containerd.pid(), "{report:#}");
    assert!(
        processes["notes"].to_string().contains("max-pods=110"),
        "k3s's config.yaml read: {report:#}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn on_cos_the_kubelets_provider_runs_from_home_kubernetes_bin() {
    require_root();
    let (tls, ca_pem) = registry::tls_for(NAME);
    let served = registry::serve_with(registry::Options {
        tls: Some(tls),
        basic: Some(("_token".to_string(), SECRET.to_string())),
        ..registry::Options::default()
    })
    .await;
    let node = NodeFs::new("node-root-cos");
    let host = format!("{NAME}:{}", served.port);
    resolver(&node);
    containerd(&node);
    cos::lay_out(&node.tree, &host, SECRET);
    // COS's (Gentoo's) bundle, the first of Go's list.
    node.file("/etc/ssl/certs/ca-certificates.crt", &ca_pem, 0o644);
    let kubelet = NodeDaemon::start(node.root(), KUBELET_COMM, &cos::KUBELET[1..], None);
    let runtime = runtime();
    let (report, output) = probe(
        Some(node.root()),
        &format!("{host}/team/app:v1"),
        kubelet.pid(),
        Some(runtime.id()),
    );
    assert_eq!(report["verdict"]["passed"], true, "{report:#}");
    let attempt = &report["credentials"]["attempts"][0];
    assert_eq!(
        (attempt["source"].as_str(), attempt["name"].as_str()),
        (Some("provider"), Some("auth-provider-gcp")),
        "{report:#}"
    );
    assert!(
        report["credentials"]["origins"]
            .to_string()
            .contains("--image-credential-provider-bin-dir /home/kubernetes/bin"),
        "{report:#}"
    );
    assert!(!output.contains(SECRET), "the token is printed");
    let mut runtime = runtime;
    let _ = runtime.kill();
    let _ = runtime.wait();
}
