//! The lab, as tests see it: the scenario catalog, scenario switching and namespace commands.
//!
//! Every lab test holds [`LabGuard`] while it runs: scenarios are machine-wide state, so lab
//! tests take an exclusive file lock and run one at a time, whatever the test runner does.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::Deserialize;

/// deploy/admission-policy.yaml's rules evaluated against an object.
pub mod admission;
/// A lab node's root directory (what its probe pod mounts at /host).
pub mod lab_node;
/// Node roots laid out as node images lay them out.
pub mod node_image;
/// A scratch directory per test.
pub mod scratch;

/// A probe on loopback reads none of this machine's node state: its kubelet (root dir, pid and
/// so its provider flags), containerd (config, proxy environment, drop-ins, CRI socket, so the
/// line followed is the assumed one) and home are the test's own `dir`, mostly empty.
pub fn probe_isolated_in(command: &mut Command, dir: &Path) {
    let own_pid = std::process::id().to_string();
    command
        .arg("--kubelet-root-dir")
        .arg(dir)
        .args(["--kubelet-pid", &own_pid, "--runtime-pid", &own_pid])
        .arg("--containerd-config")
        .arg(dir.join("no-containerd-config.toml"))
        .arg("--systemd-dir")
        .arg(dir.join("no-systemd"))
        .arg("--runtime-endpoint")
        .arg(dir.join("no-containerd.sock"))
        .env("HOME", dir)
        .current_dir(dir);
}

/// A command's stdout, after asserting it succeeded (its output in the failure).
pub fn succeeded(what: &str, out: impl std::borrow::Borrow<std::process::Output>) -> String {
    let out = out.borrow();
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The repository root (where `lab/` lives).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One entry of `lab/scenarios.toml`.
#[derive(Debug, Clone, Deserialize)]
pub struct Scenario {
    pub summary: String,
    pub image: String,
    pub identity: String,
    pub faults: Vec<String>,
    #[serde(default)]
    pub pod_reaches_registry: bool,
    #[serde(default)]
    pub hand_fix: Option<String>,
    #[serde(default)]
    pub cached_on: Option<String>,
    /// A mirror that fails before the pull falls back to the registry.
    #[serde(default)]
    pub mirror_fallback: Option<String>,
    /// Fragments the mirror's (cache.example.test) request log must show during the pull.
    #[serde(default)]
    pub mirror_log_has: Vec<String>,
    /// Fragments it must not show: requests containerd does not send to that mirror.
    #[serde(default)]
    pub mirror_log_lacks: Vec<String>,
    /// Extra `pullpath probe` flags the scenario needs (e.g. `--full` to verify layer bytes).
    #[serde(default)]
    pub probe_args: Vec<String>,
    pub expect: Expect,
    /// Where a containerd line's outcome differs (its hosts.toml rules): the verdict on that
    /// line, keyed `1.6`, `1.7` or `2.1`.
    #[serde(default)]
    pub expect_on: BTreeMap<String, Expect>,
    /// Where podman (containers/image) ends differently from containerd: its verdict.
    #[serde(default)]
    pub podman: Option<Expect>,
    /// For a `kubelet-creds` scenario: the credential source the probe must report.
    #[serde(default)]
    pub kubelet_source: Option<KubeletSource>,
}

impl Scenario {
    /// The verdict on the lab's containerd `version` (`""` is Debian 12's 1.6).
    pub fn expect_for(&self, version: &str) -> &Expect {
        let version = if version.is_empty() { "1.6" } else { version };
        self.expect_on.get(version).unwrap_or(&self.expect)
    }
}

/// Where the lab keeps containerd `version`'s message for a scenario: Debian 12's 1.6 at the
/// top, 1.7 and 2.1 in a directory each.
pub fn containerd_fixture(version: &str, scenario: &str) -> PathBuf {
    match version {
        "" | "1.6" => repo().join(format!("tests/fixtures/containerd/{scenario}.txt")),
        v => repo().join(format!("tests/fixtures/containerd/{v}/{scenario}.txt")),
    }
}

/// The verdict a correct diagnosis names.
#[derive(Debug, Clone, Deserialize)]
pub struct Expect {
    pub outcome: String,
    pub layer: Option<String>,
    pub cause: Option<String>,
    pub hop: Option<String>,
    pub host: Option<String>,
    /// A fragment containerd's real error text contains.
    pub runtime: Option<String>,
    /// The runtime's text alone cannot decide the layer (`layer` is then one candidate).
    #[serde(default)]
    pub undecided: bool,
}

#[derive(Deserialize)]
struct Catalog {
    scenario: BTreeMap<String, Scenario>,
}

pub fn catalog() -> BTreeMap<String, Scenario> {
    let text =
        std::fs::read_to_string(repo().join("lab/scenarios.toml")).expect("lab/scenarios.toml");
    toml::from_str::<Catalog>(&text)
        .expect("lab/scenarios.toml parses")
        .scenario
}

/// The lab identities' passwords (lab/tokend.py); `anonymous` has none.
pub fn password(identity: &str) -> Option<&'static str> {
    login(identity).map(|(_, password)| password)
}

/// An identity's user name and password: `alice-stale` is alice with a password the token
/// service refuses (what lab/credential_provider.py answers with `--identity stale`).
pub fn login(identity: &str) -> Option<(&'static str, &'static str)> {
    match identity {
        "alice" => Some(("alice", "alice-secret")),
        "admin" => Some(("admin", "admin-secret")),
        "alice-stale" => Some(("alice", "alice-stale-token")),
        _ => None,
    }
}

/// Every secret the lab hands out, which no report, log or error may show.
pub const LAB_SECRETS: [&str; 4] = [
    "alice-secret",
    "admin-secret",
    "alice-stale-token",
    "proxy-secret",
];

/// The source a scenario's report must name for the kubelet's credentials.
#[derive(Debug, Clone, Deserialize)]
pub struct KubeletSource {
    pub kind: String,
    pub outcome: String,
}

/// What `lab/lab.py status` reports.
#[derive(Debug, Deserialize)]
pub struct Status {
    pub up: bool,
    pub state: PathBuf,
    pub sockets: BTreeMap<String, PathBuf>,
    pub namespaces: BTreeMap<String, String>,
    pub ca: PathBuf,
    pub images: PathBuf,
    pub logs: PathBuf,
    /// Where the node's containerd unit drop-ins live (probe `--systemd-dir`).
    #[serde(default)]
    pub systemd: PathBuf,
    /// The containerd version the lab runs (`PULLPATH_LAB_CONTAINERD`: 1.6, 1.7, 2.1).
    #[serde(default)]
    pub containerd: String,
    /// The node's kubelet credential files (provider.yaml, bin/, root/, pull-secret.json).
    #[serde(default)]
    pub kubelet: PathBuf,
    /// The roots of the nodes laid out as node images (`al2023`, `k3s`): the files their
    /// containerd reads at node paths.
    #[serde(default)]
    pub roots: BTreeMap<String, PathBuf>,
}

/// Exclusive use of the lab for one test.
pub struct LabGuard {
    _lock: File,
    pub status: Status,
}

fn lab_py(args: &[&str]) -> Output {
    Command::new("python3")
        .arg(repo().join("lab/lab.py"))
        .args(args)
        .output()
        .expect("python3 runs lab/lab.py")
}

/// Take the lab; fails the test with a clear message when the lab is not up.
pub fn lab() -> LabGuard {
    let out = lab_py(&["status"]);
    assert!(
        out.status.success(),
        "lab/lab.py status failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Status = serde_json::from_slice(&out.stdout).expect("status is JSON");
    assert!(
        status.up,
        "the lab is not up: run `python3 lab/lab.py up` as root (the README's test command does)"
    );
    let lock = File::create(status.state.join("test.lock")).expect("lock file");
    lock.lock().expect("exclusive lab lock");
    LabGuard {
        _lock: lock,
        status,
    }
}

impl LabGuard {
    /// Switch the lab to a scenario; panics with the lab's own explanation if that fails.
    pub fn switch(&self, scenario: &str) {
        let out = lab_py(&["scenario", scenario]);
        assert!(
            out.status.success(),
            "switching to scenario {scenario} failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The pid of a node's running containerd in this machine's /proc (it changes with every
    /// scenario switch; the lab keeps it beside the node's containerd state).
    pub fn runtime_pid(&self, node: &str) -> u32 {
        let file = self.status.state.join("containerd").join(node).join("pid");
        std::fs::read_to_string(&file)
            .ok()
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or_else(|| panic!("no pid in {}", file.display()))
    }

    pub fn socket(&self, node: &str) -> &Path {
        &self.status.sockets[node]
    }

    /// Run a command inside a lab namespace (`node`, `pod`, ...).
    pub fn in_ns(&self, host: &str, cmd: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.status.namespaces[host]])
            .args(cmd)
            .output()
            .expect("ip netns exec runs")
    }
}

/// Validate a report against docs/report.schema.json; panics listing every violation.
pub fn assert_valid_report(report: &serde_json::Value) {
    let validator =
        jsonschema::validator_for(&docs_schema("report.schema.json")).expect("schema compiles");
    assert_valid(&validator, "report.schema.json", report);
}

/// A `pullpath fleet -o json` run's report, validated against docs/fleet.schema.json.
pub fn fleet_report(out: &Output) -> serde_json::Value {
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "fleet JSON: {e}\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    assert_valid_fleet(&report);
    report
}

/// A fleet report's row for `node`.
pub fn fleet_row<'a>(report: &'a serde_json::Value, node: &str) -> &'a serde_json::Value {
    report["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|r| r["node"] == node)
        .unwrap_or_else(|| panic!("no row for {node}: {report:#}"))
}

/// Validate a `pullpath fleet` report against docs/fleet.schema.json.
pub fn assert_valid_fleet(report: &serde_json::Value) {
    let validator =
        jsonschema::validator_for(&docs_schema("fleet.schema.json")).expect("schema compiles");
    assert_valid(&validator, "fleet.schema.json", report);
}

/// Validate a multi-finding report against docs/findings.schema.json, its references into
/// report.schema.json resolved from docs/ (never fetched).
pub fn assert_valid_findings(report: &serde_json::Value) {
    let validator = jsonschema::options()
        .with_retriever(DocsSchemas)
        .build(&docs_schema("findings.schema.json"))
        .expect("findings schema compiles");
    assert_valid(&validator, "findings.schema.json", report);
}

fn docs_schema(file: &str) -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(repo().join("docs").join(file)).expect("schema file"),
    )
    .expect("schema is JSON")
}

/// Serves `https://pullpath.invalid/<file>` from docs/.
struct DocsSchemas;

impl jsonschema::Retrieve for DocsSchemas {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> Result<serde_json::Value, Box<dyn std::error::Error + Send + Sync>> {
        match uri.path().as_str().trim_start_matches('/') {
            file @ ("report.schema.json" | "findings.schema.json") => Ok(docs_schema(file)),
            other => Err(format!("no local schema {other}").into()),
        }
    }
}

fn assert_valid(validator: &jsonschema::Validator, file: &str, report: &serde_json::Value) {
    let errors: Vec<String> = validator
        .iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "report violates docs/{file}:\n{}\n{report:#}",
        errors.join("\n")
    );
}

/// Remove what varies between runs (ephemeral ports, the clock) so kept messages compare.
pub fn normalise(message: &str) -> String {
    let masked = mask_clock(message);
    let message = masked.as_str();
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    // `10.10.1.2:43210->` -> `10.10.1.2:PORT->`
    while let Some(at) = rest.find("->") {
        let (head, tail) = rest.split_at(at);
        let cut = head
            .rfind(':')
            .filter(|&c| head[c + 1..].chars().all(|ch| ch.is_ascii_digit()));
        match cut {
            Some(c) if c + 1 < head.len() => {
                out.push_str(&head[..=c]);
                out.push_str("PORT");
            }
            _ => out.push_str(head),
        }
        out.push_str("->");
        rest = &tail[2..];
    }
    out.push_str(rest);
    out
}

/// `current time 2026-12-02T15:15:56Z is after` -> `current time TIME is after`.
fn mask_clock(message: &str) -> String {
    const MARK: &str = "current time ";
    match message.find(MARK) {
        Some(at) => {
            let start = at + MARK.len();
            let end = message[start..]
                .find(' ')
                .map_or(message.len(), |e| start + e);
            format!("{}TIME{}", &message[..start], &message[end..])
        }
        None => message.to_string(),
    }
}

/// `rpc error: code = DeadlineExceeded desc` -> `rpc error: code = CODE desc`.
pub fn mask_code(message: &str) -> String {
    match (message.find("code = "), message.find(" desc = ")) {
        (Some(start), Some(end)) if start < end => {
            format!("{}code = CODE{}", &message[..start], &message[end..])
        }
        _ => message.to_string(),
    }
}

/// A loopback test server's read of one request head (up to its blank line, at most 16 KiB),
/// byte by byte so nothing of a body is consumed; `None` when the client closed first.
pub async fn read_request_head<S>(tcp: &mut S) -> Option<String>
where
    S: tokio::io::AsyncRead + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") && head.len() < 16384 {
        if tcp.read(&mut byte).await.unwrap_or(0) == 0 {
            return None;
        }
        head.push(byte[0]);
    }
    Some(String::from_utf8_lossy(&head).into_owned())
}

/// A stand-in for a static amd64 pullpath: an ELF header without a program interpreter, `len`
/// bytes that do not compress, and `stage` behind build.rs's first-stage marker. Enough for
/// fleet to deliver it (nothing executes it).
pub fn synthetic_static_pullpath(dir: &Path, len: usize, stage: &[u8]) -> PathBuf {
    let mut bytes = vec![0u8; 64 + 56];
    bytes[..4].copy_from_slice(b"\x7fELF");
    bytes[4] = 2;
    bytes[5] = 1;
    bytes[18..20].copy_from_slice(&62u16.to_le_bytes());
    bytes[32..40].copy_from_slice(&64u64.to_le_bytes());
    bytes[54..56].copy_from_slice(&56u16.to_le_bytes());
    bytes[56..58].copy_from_slice(&1u16.to_le_bytes());
    bytes[64..68].copy_from_slice(&1u32.to_le_bytes());
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    bytes.extend((0..len).map(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u8
    }));
    bytes.extend_from_slice(b"PULLPATH-STAGE:");
    bytes.extend_from_slice(&(stage.len() as u64).to_le_bytes());
    bytes.extend_from_slice(stage);
    let path = dir.join("pullpath-amd64");
    std::fs::write(&path, bytes).expect("write the binary");
    path
}
