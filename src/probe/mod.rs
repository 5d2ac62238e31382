//! `pullpath probe`: the pull path walked from this network namespace, hop by hop, exactly as
//! the runtime pulls.
//!
//! `resolv` reads where we are; `hosts_toml` which hosts containerd tries for the registry and
//! with which trust; `walk` sequences the pull in containerd's order with its fallback rules,
//! deciding with the pure protocol functions of `oci`, `registry` and `redirect`, and reaching
//! the network through the `net` seam — for real through `http`, which checks each host from the
//! ground up with `host` (`dns`, `route`, `connect`, `tls`). What each step saw is plain data in
//! `observed`; a failure is a [`stop::Stop`] carrying its `evidence`, whose layer the evidence
//! decides; [`run`] turns the walk's outcome into a report. The modules below are declared in
//! the order data flows: each uses only those above it (a blank line apart, so that rustfmt
//! keeps the order).

/// `host:port` parsed once (IPv6 literals too), the scheme, metadata addresses.
pub mod authority;

/// The steps of a pull as a value (`dns`, `GET /v2/`, `layer sha256:…`).
pub mod step;

/// What each step saw, as plain data: DNS answers, routes, connects, handshakes, bodies.
pub mod observed;

/// Pure: manifests and indexes, the platform's entry, blob size and digest checks.
pub mod oci;

/// Pure: Go's redirect rules under containerd's limit, and where Authorization may go.
pub mod redirect;

/// An HTTP answer that refused a step: its status, its meaning, what its body said.
pub mod refusal;

/// Pure: the `/v2/` challenge, the token answer, a refused manifest, token grants.
pub mod registry;

/// What a failing step observed, as a value, and the layer it means.
pub mod evidence;

/// Where and why the pull stops: the hop's rule over the evidence's layer.
pub mod stop;

/// What checking one host from DNS up saw, and the evidence of the step that failed.
pub mod check;

/// A service's environment as systemd gives it (parsers pure).
pub mod systemd;

/// The runtime's proxy: Go's decision per request URL, its environment, `CONNECT`.
pub mod proxy;

/// The running containerd, as `/proc` shows it; the listener of a unix socket.
pub mod process;

/// k3s's agent as the kubelet it runs inside: the flags it gives that kubelet.
pub mod rancher;

/// containerd's `config.toml`: the hosts directories and the download limit.
pub mod containerd_config;

/// The kubelet's configuration: the runtime's endpoint.
pub mod kubelet_config;

/// The node's kubelet and the runtime listening on its CRI socket, and how each was found.
pub mod node_daemons;

/// `/etc/resolv.conf` and `/etc/hosts` read as glibc reads them.
pub mod resolv;

/// containerd's `certs.d`: the hosts tried for a registry, in order, each with its trust.
pub mod hosts_toml;

/// The system trust store as Go's `crypto/x509` loads it on Linux.
pub mod system_trust;

/// Names: each nameserver asked directly, every answer kept.
pub mod dns;

/// Routes: the kernel asked over rtnetlink.
pub mod route;

/// TCP to every address of a host at once.
pub mod connect;

/// The handshake with rustls and the host's trust, the chain kept.
pub mod tls;

/// One host checked from DNS up (or through the proxy's tunnel).
pub mod host;

/// The walk's seam to the network: check a host, send a request, read a body.
pub mod net;

/// The live network behind the seam: reqwest pinned to the address a check proved.
pub mod http;

/// A body read as the runtime reads it: chunk by chunk, metered for the deadline.
pub mod body;

/// The path as walked, step by step, worded for people.
pub mod path;

/// `--full`'s progress bars.
pub mod progress;

/// The pull in containerd's order, with its fallback rules.
pub mod walk;

/// `--username` with `--password-stdin`, docker `config.json`, `dockerconfigjson` Secrets.
pub mod creds;

/// The kubelet's credential sources, matched as the kubelet matches them, and its pull loop.
pub mod kubelet_creds;

/// The runtime's own pull over CRI, as the kubelet asks it.
pub mod runtime_pull;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::credentials::Credentials;
use crate::image_ref::ImageRef;
use crate::node_root::NodeRoot;
use crate::runtime::version::{RuntimeIdentity, VersionSource};

pub use check::Timeouts;
pub use oci::Platform;

/// Everything a probe needs, validated.
#[derive(Debug)]
pub struct ProbeConfig {
    pub image: ImageRef,
    pub platform: Platform,
    /// `--username`: the only credential tried, instead of the kubelet's sources.
    pub credentials: Option<Credentials>,
    /// Where the kubelet's credentials come from; `None` with no `--username`: anonymous.
    pub credential_sources: Option<kubelet_creds::Sources>,
    pub timeouts: Timeouts,
    pub deadline: Duration,
    pub full: bool,
    /// `--parallel`: layers downloaded at once, instead of what the node's containerd does.
    pub parallel: Option<usize>,
    pub progress: bool,
    /// The node's filesystem: every node path below is read inside it.
    pub node: NodeRoot,
    /// Where resolv.conf and hosts live on the node (normally /etc).
    pub etc: PathBuf,
    /// Where the runtime's proxy and trust settings are read from.
    pub proxy: ProxySources,
    /// containerd's config.toml on the node, whose `config_path` names the hosts directories.
    pub containerd_config: PathBuf,
    /// `--containerd-certs`: the hosts directories, instead of what config.toml says.
    pub containerd_certs: Option<Vec<PathBuf>>,
    /// `--ca-file`s: paths on this machine, not the node's.
    pub ca_files: Vec<PathBuf>,
    /// How the runtime's version (and so its rules where versions differ) is learned.
    pub runtime: RuntimeQuery,
    /// `--runtime-pull`: also ask the runtime on this CRI socket to pull, as the kubelet does.
    pub runtime_pull: Option<PathBuf>,
    /// The node's kubelet and runtime processes, and how each was found.
    pub daemons: node_daemons::NodeDaemons,
}

/// Where the node's containerd version comes from.
#[derive(Debug, Clone)]
pub enum RuntimeQuery {
    /// `--containerd-version`, already validated.
    Given(RuntimeIdentity),
    /// Ask CRI `Version` on this socket, as the kubelet does first.
    Socket(PathBuf),
}

/// How long the runtime may take to say its version.
const VERSION_TIMEOUT: Duration = Duration::from_secs(3);

impl RuntimeQuery {
    async fn identify(&self) -> RuntimeIdentity {
        match self {
            RuntimeQuery::Given(identity) => identity.clone(),
            RuntimeQuery::Socket(socket) => {
                let shown = socket.display().to_string();
                match crate::runtime::cri::runtime_version(socket, VERSION_TIMEOUT).await {
                    Ok(v) => RuntimeIdentity::from_cri(&shown, &v.name, &v.version),
                    Err(e) => RuntimeIdentity::unknown(&format!(
                        "the runtime could not be asked its version ({e}; --runtime-endpoint or --containerd-version tell it)"
                    )),
                }
            }
        }
    }
}

/// Where the runtime's environment is read from (pullpath's own environment never is).
#[derive(Debug, Clone, Default)]
pub struct ProxySources {
    /// Flags, which win: `HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`.
    pub overrides: std::collections::BTreeMap<String, String>,
    /// Where systemd looks for containerd's unit and drop-ins on the node, first first.
    pub systemd_dirs: Vec<PathBuf>,
    /// The running containerd, as `/proc` showed it (read once per probe).
    pub runtime: Option<process::RunningProcess>,
}

impl ProxySources {
    /// The runtime's environment: the running process's (through `/proc`, which shows the
    /// node's processes on the node and in a `hostPID` pod), else its systemd unit's read inside
    /// the node root, flags over both.
    pub fn read(&self, node: &NodeRoot) -> proxy::RuntimeEnvironment {
        let process = self
            .runtime
            .as_ref()
            .and_then(|p| Some((p.pid, p.environ.clone()?)));
        let unit = systemd::service_environment(node, &self.systemd_dirs, "containerd.service");
        let unit_notes = unit.as_ref().map(|u| u.notes.clone()).unwrap_or_default();
        let mut environment = proxy::RuntimeEnvironment::decide(
            process,
            unit.map(|u| (u.unit, u.vars)),
            &self.overrides,
        );
        environment.notes.extend(unit_notes);
        environment
    }
}

/// Why a probe could not start at all (not a finding: the tool's own failure).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    #[error("cannot configure TLS for {host}: {reason}")]
    Tls { host: String, reason: String },
}

/// What the probe was asked, for the report's header.
#[derive(Debug, Clone)]
pub struct ProbeContext {
    pub image: String,
    pub platform: String,
    pub resolver: resolv::ResolverConfig,
    pub warnings: Vec<String>,
    /// containerd's hosts directories and how they were decided.
    pub hosts_dirs: containerd_config::HostsDirs,
    /// The system trust store as the runtime loads it (`None` off Linux).
    pub system_trust: Option<system_trust::SystemTrustEvidence>,
    /// The runtime's proxy environment, as found.
    pub proxy: proxy::RuntimeEnvironment,
    /// The runtime, as asked (or assumed).
    pub runtime: crate::runtime::version::RuntimeIdentity,
    /// Whether containerd's lines read this registry's hosts differently (then a verdict under
    /// assumed rules is not the node's).
    pub version_dependent_hosts: bool,
    /// Whether every layer was downloaded and verified (`--full`).
    pub full: bool,
    /// How many layers were downloaded at once, and why that many.
    pub downloads: containerd_config::DownloadLimit,
    /// The node's kubelet and runtime processes, and how each was found.
    pub daemons: node_daemons::NodeDaemons,
    pub elapsed_ms: u64,
}

/// What a probe found, for `report` to turn into the report: the walk's outcome (with the last
/// credential tried), everything read on the way, each credential the kubelet's loop tried and
/// how it went, and the runtime's own pull when it was asked.
#[derive(Debug)]
pub struct ProbeRun {
    pub context: ProbeContext,
    pub outcome: walk::WalkRecord,
    pub plan: Option<kubelet_creds::CredentialPlan>,
    pub attempts: Vec<kubelet_creds::CredentialAttempt>,
    pub runtime_pull: Option<runtime_pull::RuntimePull>,
}

pub async fn run(config: ProbeConfig) -> Result<ProbeRun, ProbeError> {
    let started = Instant::now();
    let node = &config.node;
    let resolver = resolv::ResolverConfig::read(node, &config.etc);
    let runtime = config.runtime.identify().await;
    let file = &config.containerd_config;
    let settings = match node.read_to_string(file) {
        Ok(text) => containerd_config::pull_settings(&text, file).map(Some),
        Err(_) => Ok(None),
    };
    let hosts_dirs = match &config.containerd_certs {
        Some(roots) => containerd_config::HostsDirs {
            roots: roots.clone(),
            origin: "--containerd-certs".into(),
        },
        None => containerd_config::hosts_dirs(&settings, file, &runtime),
    };
    let downloads = match config.parallel {
        Some(layers) => containerd_config::DownloadLimit {
            at_once: Some(layers),
            origin: "--parallel".into(),
        },
        None => containerd_config::download_limit(&settings, file, &runtime),
    };
    let hosts = hosts_toml::HostsConfig::read(
        node,
        &hosts_dirs.roots,
        &config.image.registry,
        runtime.line,
    );
    let mut warnings: Vec<String> = resolver.pod_view.iter().cloned().collect();
    if let (true, VersionSource::Unknown(why)) = (hosts.version_dependent, &runtime.source) {
        warnings.push(format!(
            "how containerd reads this registry's hosts depends on its version, and {why}"
        ));
    }
    warnings.extend(hosts.notes.iter().cloned());
    let environment = config.proxy.read(node);
    warnings.extend(environment.notes.iter().cloned());
    let system = system_trust::SystemTrust::load(
        node,
        environment.get("SSL_CERT_FILE"),
        environment.get("SSL_CERT_DIR"),
    );
    let (endpoints, trusts) = trusts_for(node, &system, &hosts.endpoints, &config.ca_files)?;
    let plan = match (&config.credentials, &config.credential_sources) {
        (None, Some(sources)) => Some(kubelet_creds::resolve(sources, &config.image).await),
        _ => None,
    };
    let network = Arc::new(http::LiveNetwork::new(
        resolver.clone(),
        trusts,
        config.timeouts,
    ));
    let (first, rest) = credential_tries(config.credentials.as_ref(), plan.as_ref());
    let walk_with = |candidate: &Option<kubelet_creds::MatchedCredential>| {
        let settings = walk::Settings {
            image: config.image.clone(),
            platform: config.platform.clone(),
            credentials: candidate.as_ref().map(|c| c.credentials.clone()),
            timeouts: config.timeouts,
            deadline: config.deadline,
            full: config.full,
            parallel: downloads.at_once,
            progress: config.progress,
            proxy: environment.config(),
        };
        walk::Walk::new(settings, endpoints.clone(), network.clone()).run()
    };
    let mut outcome = walk_with(&first).await;
    let mut attempts = vec![kubelet_creds::CredentialAttempt::of(first, &outcome)];
    // The kubelet's pull loop: the next credential only when this one was refused.
    for next in rest.into_iter().map(Some) {
        if !attempts
            .last()
            .is_some_and(kubelet_creds::CredentialAttempt::refused)
        {
            break;
        }
        outcome = walk_with(&next).await;
        attempts.push(kubelet_creds::CredentialAttempt::of(next, &outcome));
    }
    let context = ProbeContext {
        image: config.image.to_string(),
        platform: config.platform.to_string(),
        resolver,
        warnings,
        hosts_dirs,
        system_trust: system.evidence.clone(),
        proxy: environment,
        runtime,
        version_dependent_hosts: hosts.version_dependent,
        full: config.full,
        downloads,
        daemons: config.daemons.clone(),
        elapsed_ms: started.elapsed().as_millis() as u64,
    };
    let runtime_pull = match &config.runtime_pull {
        Some(socket) => {
            let credentials = kubelet_sends(&attempts);
            Some(runtime_pull::ask(socket, &config.image, credentials, config.deadline).await)
        }
        None => None,
    };
    Ok(ProbeRun {
        context,
        outcome,
        plan,
        attempts,
        runtime_pull,
    })
}

/// The credential the kubelet sends with its pull: the one its loop ended with (the verdict's),
/// except containerd's own `registry.configs` auth, which the kubelet never sends — containerd
/// uses it when the pull comes with none (k3s keeps registries.yaml's credentials there).
fn kubelet_sends(attempts: &[kubelet_creds::CredentialAttempt]) -> Option<&Credentials> {
    attempts
        .last()
        .and_then(|a| a.candidate.as_ref())
        .filter(|c| {
            !matches!(
                c.source,
                kubelet_creds::CredentialSource::ContainerdConfig(_)
            )
        })
        .map(|c| &c.credentials)
}

/// What the walk is tried with, in order: `--username` alone; else every credential the
/// kubelet found; anonymous only when it found none (k/k `kuberuntime_image.go`). The first
/// try, then the rest.
fn credential_tries(
    explicit: Option<&Credentials>,
    plan: Option<&kubelet_creds::CredentialPlan>,
) -> (
    Option<kubelet_creds::MatchedCredential>,
    Vec<kubelet_creds::MatchedCredential>,
) {
    if let Some(credentials) = explicit {
        let flag = kubelet_creds::MatchedCredential {
            source: kubelet_creds::CredentialSource::Flag,
            key: String::new(),
            credentials: credentials.clone(),
        };
        return (Some(flag), Vec::new());
    }
    let mut candidates = plan.map(|p| p.candidates.clone()).unwrap_or_default();
    if candidates.is_empty() {
        return (None, Vec::new());
    }
    let first = candidates.remove(0);
    (Some(first), candidates)
}
type TrustSet = Vec<(tls::Trust, Arc<rustls::ClientConfig>)>;

/// One trust per distinct (CA files, `skip_verify`) among the hosts, as containerd gives each
/// host its own TLS configuration; `--ca-file`s are added to every one.
fn trusts_for(
    node: &NodeRoot,
    system: &system_trust::SystemTrust,
    endpoints: &[hosts_toml::Endpoint],
    ca_files: &[PathBuf],
) -> Result<(Vec<walk::WalkEndpoint>, TrustSet), ProbeError> {
    let mut keys: Vec<(Vec<PathBuf>, bool)> = Vec::new();
    let mut trusts: TrustSet = Vec::new();
    let mut walk_endpoints = Vec::new();
    for endpoint in endpoints {
        let key = (endpoint.cas.clone(), endpoint.skip_verify);
        let id = match keys.iter().position(|k| *k == key) {
            Some(id) => id,
            None => {
                let mut trust = tls::Trust::load(node, system, &endpoint.cas, ca_files);
                trust.skip_verify = endpoint.skip_verify;
                let config = tls::client_config(&trust).map_err(|e| ProbeError::Tls {
                    host: endpoint.authority.to_string(),
                    reason: e.to_string(),
                })?;
                keys.push(key);
                trusts.push((trust, Arc::new(config)));
                keys.len() - 1
            }
        };
        walk_endpoints.push(walk::WalkEndpoint {
            config: endpoint.clone(),
            trust: net::TrustId(id),
        });
    }
    Ok((walk_endpoints, trusts))
}

#[cfg(test)]
mod tests {
    use super::kubelet_creds::{CredentialAttempt, CredentialSource, MatchedCredential};
    use super::*;

    fn attempt(source: CredentialSource) -> CredentialAttempt {
        CredentialAttempt {
            candidate: Some(MatchedCredential {
                source,
                key: "registry.example.test".into(),
                credentials: Credentials {
                    username: "alice".into(),
                    password: "alice-secret".into(),
                },
            }),
            stop: None,
        }
    }

    #[test]
    fn the_runtime_pull_carries_what_the_kubelet_sends_and_never_containerds_own_auth() {
        let own = attempt(CredentialSource::ContainerdConfig(PathBuf::from(
            "/var/lib/rancher/k3s/agent/etc/containerd/config.toml",
        )));
        assert!(kubelet_sends(std::slice::from_ref(&own)).is_none());
        let node = attempt(CredentialSource::NodeConfig(PathBuf::from(
            "/var/lib/kubelet/config.json",
        )));
        assert_eq!(
            kubelet_sends(&[node]).map(|c| c.username.as_str()),
            Some("alice")
        );
        assert!(kubelet_sends(&[]).is_none());
    }
}
