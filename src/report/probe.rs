//! `pullpath probe --output json`: the wire types, built from the walk's [`WalkRecord`] and the
//! host checks with `From`. The engine's types do not serialize; renaming an engine field
//! cannot change this format (docs/report-schema.md).

use std::net::IpAddr;

use serde::Serialize;

use super::SCHEMA;

mod credentials;
mod hosts;
mod processes;

use crate::advice::{Advice, Observed, advise_observed};
use crate::probe::check::HostCheck;
use crate::probe::path::PathHop;
use crate::probe::resolv::ResolverConfig;
use crate::probe::runtime_pull::{Answer, Cleanup, RuntimePull};
use crate::probe::stop::Stop;
use crate::probe::walk::{Blob, Fallback, FallbackTo, WalkRecord};
use crate::probe::{ProbeContext, ProbeRun};
use crate::runtime::version::{RuntimeIdentity, VersionSource};
use crate::verdict::{Failure, Fault, Seen, Verdict};
use crate::vocab::{Hop, Layer, Owner};
pub use credentials::{CredentialAttemptReport, CredentialSourceReport, CredentialsReport};
pub use hosts::{
    CertReport, ConnectReport, DnsReport, FailureReport, HostReport, RouteReport,
    ServerAnswerReport, TlsReport, TunnelReport,
};
pub use processes::{NodeProcessesReport, ProcessReport};

/// `pullpath probe --output json`.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeReport {
    pub schema: &'static str,
    pub command: &'static str,
    pub image: String,
    pub platform: String,
    pub verdict: Verdict,
    /// The node's runtime, and whose rules were followed where containerd's versions differ.
    pub runtime: RuntimeReport,
    /// `node`, or `pod` when the resolver configuration looks like a pod's.
    pub view: &'static str,
    pub resolver: ResolverReport,
    /// containerd's registry hosts directories (`config_path`) and how they were decided.
    pub hosts_dirs: HostsDirsReport,
    /// The node's kubelet and runtime processes, and how each was found.
    pub node_processes: NodeProcessesReport,
    /// With `--full`: how many layers were downloaded at once, and why that many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub downloads: Option<DownloadsReport>,
    /// The system trust store as the runtime (a Go program) loads it; absent off Linux.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub system_trust: Option<SystemTrustReport>,
    /// The path in the order it was walked.
    pub path: Vec<HopReport>,
    /// Every host checked, with its full evidence (DNS answers, routes, connects, TLS chain).
    pub hosts: Vec<HostReport>,
    pub blobs: Vec<BlobReport>,
    /// The runtime's proxy settings and where each came from (none: direct connections).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub proxy: Vec<ProxyVarReport>,
    /// Hosts the pull moved past, as the runtime does, and why.
    pub fallbacks: Vec<FallbackReport>,
    /// The kubelet's credential sources for the image, and each credential tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credentials: Option<CredentialsReport>,
    /// With `--runtime-pull`: the runtime's own pull over CRI, beside the probe's verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_pull: Option<RuntimePullReport>,
    /// Things that work now but will not survive a node replacement.
    pub hand_fixes: Vec<String>,
    pub warnings: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub where_to_look: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub will_not_help: Vec<String>,
    pub elapsed_ms: u64,
}

impl ProbeReport {
    /// The report of a probe: its walk, the credentials the kubelet would try and how each
    /// went, and the runtime's own pull when it was asked.
    pub fn from_run(run: ProbeRun) -> ProbeReport {
        let mut report = ProbeReport::new(run.context, &run.outcome);
        report.credentials = run
            .plan
            .as_ref()
            .map(|plan| CredentialsReport::new(plan, &run.attempts));
        if let Some(pulled) = &run.runtime_pull {
            report.add_runtime_pull(pulled);
        }
        report
    }

    /// The report of a walk.
    pub fn new(context: ProbeContext, outcome: &WalkRecord) -> ProbeReport {
        let hosts: Vec<HostReport> = outcome.hosts.iter().map(HostReport::from).collect();
        let hand_fixes = outcome
            .hosts
            .iter()
            .filter_map(|h| h.dns.hand_fix.clone())
            .collect();
        let (verdict, advice) = match &outcome.result {
            Ok(()) => (Verdict::Passed, None),
            Err(stop) => {
                let advice = advise_stop(stop, &outcome.hosts, &context.image);
                let verdict = context
                    .runtime
                    .settle(stopped(stop, advice.owner), context.version_dependent_hosts);
                (verdict, Some(advice))
            }
        };
        let mut warnings = context.warnings;
        warnings.extend(outcome.warnings.iter().cloned());
        if outcome.result.is_ok() {
            warnings.extend(fallback_warnings(&outcome.fallbacks));
            if !context.full {
                warnings.push(format!(
                    "each layer was opened and its first {} bytes read, not downloaded: `--full` downloads every layer and checks its digest, as the runtime does",
                    crate::probe::walk::RANGE_BYTES
                ));
            }
        }
        let (where_to_look, will_not_help) = advice.map_or((vec![], vec![]), |a| {
            (a.where_to_look_words(), a.will_not_help)
        });
        ProbeReport {
            schema: SCHEMA,
            command: "probe",
            image: context.image,
            platform: context.platform,
            verdict,
            runtime: RuntimeReport::from(&context.runtime),
            view: if context.resolver.pod_view.is_some() {
                "pod"
            } else {
                "node"
            },
            resolver: ResolverReport::from(&context.resolver),
            hosts_dirs: HostsDirsReport {
                roots: context
                    .hosts_dirs
                    .roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect(),
                origin: context.hosts_dirs.origin.clone(),
            },
            node_processes: NodeProcessesReport::from(&context.daemons),
            downloads: context.full.then(|| DownloadsReport {
                at_once: context.downloads.at_once,
                origin: context.downloads.origin.clone(),
            }),
            system_trust: context.system_trust.as_ref().map(SystemTrustReport::from),
            path: outcome.path.iter().map(HopReport::from).collect(),
            hosts,
            blobs: outcome.blobs.iter().map(BlobReport::from).collect(),
            proxy: context
                .proxy
                .proxy_vars()
                .map(|(name, (value, source))| ProxyVarReport {
                    name: name.clone(),
                    value: crate::probe::proxy::redact_value(value),
                    source: source.clone(),
                })
                .collect(),
            fallbacks: outcome.fallbacks.iter().map(FallbackReport::from).collect(),
            credentials: None,
            runtime_pull: None,
            hand_fixes,
            warnings,
            where_to_look,
            will_not_help,
            elapsed_ms: context.elapsed_ms,
        }
    }
}

/// The runtime's own pull (`--runtime-pull`).
#[derive(Debug, Clone, Serialize)]
pub struct RuntimePullReport {
    /// `pulled`, `failed` (the runtime's error in `message`) or `unasked` (why in `message`).
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_ref: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The node held the image before.
    pub was_cached: bool,
    /// `nothing`, `removed` (the node did not hold it: removed again) or `kept` (why in
    /// `cleanup_detail`).
    pub cleanup: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleanup_detail: Option<String>,
    /// Whether the runtime's outcome is the probe's verdict (absent when it was not asked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agrees: Option<bool>,
}

impl ProbeReport {
    /// Add the runtime's own answer; a disagreement with the verdict is a loud warning.
    pub fn add_runtime_pull(&mut self, pulled: &RuntimePull) {
        let (outcome, image_ref, message) = match &pulled.answer {
            Answer::Pulled(image_ref) => ("pulled", Some(image_ref.clone()), None),
            Answer::Failed(message) => ("failed", None, Some(message.clone())),
            Answer::Unasked(why) => ("unasked", None, Some(why.clone())),
        };
        let agrees = match &pulled.answer {
            Answer::Unasked(_) => None,
            answer => Some(matches!(answer, Answer::Pulled(_)) == self.verdict.is_passed()),
        };
        let (cleanup, cleanup_detail) = match &pulled.cleanup {
            Cleanup::Nothing => ("nothing", None),
            Cleanup::Removed => ("removed", None),
            Cleanup::Kept(why) => ("kept", Some(why.clone())),
        };
        if agrees == Some(false) {
            let probe = if self.verdict.is_passed() {
                "passed"
            } else {
                "failed"
            };
            self.warnings.insert(
                0,
                format!(
                    "DISAGREEMENT: the runtime's own pull {outcome} where the probe {probe}: the runtime's answer is the truth for this node{}",
                    message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default()
                ),
            );
        }
        self.runtime_pull = Some(RuntimePullReport {
            outcome,
            image_ref,
            message,
            was_cached: pulled.was_cached,
            cleanup,
            cleanup_detail,
            agrees,
        });
    }
}

/// The runtime section.
#[derive(Debug, Clone, Serialize)]
pub struct RuntimeReport {
    /// As the runtime names itself (`containerd`); absent when it could not be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// `cri` (asked over CRI `Version`), `flag` (`--containerd-version`) or `assumed`.
    pub source: &'static str,
    /// The CRI socket asked, for `cri`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<String>,
    /// Whose rules were followed where containerd's versions differ: `1.6`, `1.7` or `2.x`.
    pub rules: &'static str,
    /// Why the version is assumed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl From<&RuntimeIdentity> for RuntimeReport {
    fn from(identity: &RuntimeIdentity) -> RuntimeReport {
        let (source, socket, detail) = match &identity.source {
            VersionSource::Cri(socket) => ("cri", Some(socket.clone()), None),
            VersionSource::Flag => ("flag", None, None),
            VersionSource::Unknown(why) => ("assumed", None, Some(why.clone())),
        };
        RuntimeReport {
            name: identity.name.clone(),
            version: identity.version.clone(),
            source,
            socket,
            rules: identity.line.as_str(),
            detail,
        }
    }
}

/// One warning per distinct failure the pull moved past, with how many requests met it.
fn fallback_warnings(fallbacks: &[Fallback]) -> Vec<String> {
    let mut seen: Vec<(String, usize, FallbackTo)> = Vec::new();
    for f in fallbacks {
        let words = format!(
            "{} {} failed ({} at {}: {})",
            f.hop, f.endpoint, f.stop.layer, f.stop.authority, f.stop.evidence
        );
        match seen.iter_mut().find(|(w, _, _)| *w == words) {
            Some((_, count, _)) => *count += 1,
            None => seen.push((words, 1, f.then)),
        }
    }
    seen.into_iter()
        .map(|(words, count, then)| {
            let times = if count > 1 {
                format!(" for {count} requests")
            } else {
                String::new()
            };
            let next = match then {
                FallbackTo::NextHost => "containerd moves on to the next host",
                FallbackTo::PlainHttp => "containerd retries the same host in plain HTTP",
            };
            format!("{words}{times}; {next}, so every pull pays for this failure first")
        })
        .collect()
}

/// Advice for where the walk stopped, with what DNS showed about the failing host and what
/// the image's name shows.
fn advise_stop(stop: &Stop, hosts: &[HostCheck], image: &str) -> Advice {
    let public_behind_private_link = hosts
        .iter()
        .find(|h| h.host == stop.authority.host)
        .and_then(|h| {
            let public = h.dns.public_behind_private_link()?;
            public.only_public.then(|| {
                let list: Vec<String> = public.public.iter().map(ToString::to_string).collect();
                format!(
                    "{} resolves through {} to public {}: the node's resolver is not linked to the private zone for {}, so the node is sent to the public endpoint",
                    h.host,
                    public.privatelink_name,
                    list.join(", "),
                    public.privatelink_name
                )
            })
        });
    let through_proxy = hosts
        .iter()
        .find(|h| h.host == stop.authority.host && h.tunnel.is_some())
        .and_then(|h| h.tunnel.as_ref().map(|t| t.proxy.clone()));
    let observed = Observed {
        public_behind_private_link,
        credential: None,
        through_proxy,
        registry_as_repository: crate::image_ref::registry_read_as_repository(image)
            .map(str::to_string),
        ..Observed::default()
    };
    advise_observed(
        stop.layer,
        stop.mechanism,
        stop.hop,
        &stop.authority.to_string(),
        &observed,
    )
}

/// The verdict of a probe that stopped at `stop`; `owner` is the advice's.
fn stopped(stop: &Stop, owner: Owner) -> Verdict {
    Verdict::Failed(Failure {
        fault: Fault::new(stop.layer, stop.mechanism, owner),
        seen: Seen {
            hop: Some(stop.hop),
            host: Some(stop.authority.to_string()),
            cause: Some(stop.evidence.to_string()),
        },
    })
}

/// One hop of the path as walked, in order, with its steps.
#[derive(Debug, Clone, Serialize)]
pub struct HopReport {
    pub hop: Hop,
    /// `host[:port]`.
    pub host: String,
    pub steps: Vec<StepReport>,
}

/// One step: dns, route, connect, tls, `GET /v2/`, `token …`, `manifest …`, a redirect, a blob.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    pub step: String,
    pub ok: bool,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
}

impl From<&PathHop> for HopReport {
    fn from(h: &PathHop) -> HopReport {
        HopReport {
            hop: h.hop,
            host: h.authority.to_string(),
            steps: h
                .steps
                .iter()
                .map(|s| StepReport {
                    step: s.step.clone(),
                    ok: s.ok,
                    detail: s.detail.clone(),
                    elapsed_ms: s.elapsed.map(|d| d.as_millis() as u64),
                })
                .collect(),
        }
    }
}

/// One blob fetched.
#[derive(Debug, Clone, Serialize)]
pub struct BlobReport {
    /// `config` or `layer`.
    pub kind: &'static str,
    pub digest: String,
    pub size: u64,
    /// The host that served it (after redirects).
    pub host: String,
    /// Every host its request crossed, when it was redirected (`registry → relay → store`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<String>,
    /// True when every byte was downloaded and its size and sha256 matched.
    pub verified: bool,
    pub detail: String,
    pub elapsed_ms: u64,
}

impl From<&Blob> for BlobReport {
    fn from(b: &Blob) -> BlobReport {
        BlobReport {
            kind: b.kind.as_str(),
            digest: b.digest.to_string(),
            size: b.size,
            host: b.served_by.to_string(),
            via: b.redirects.iter().map(ToString::to_string).collect(),
            verified: b.verified,
            detail: b.detail.clone(),
            elapsed_ms: b.elapsed.as_millis() as u64,
        }
    }
}

/// One proxy variable of the runtime's environment.
#[derive(Debug, Clone, Serialize)]
pub struct ProxyVarReport {
    /// `HTTPS_PROXY`, `no_proxy`, …
    pub name: String,
    /// Its value, any password replaced.
    pub value: String,
    /// Where it was found: `/proc/PID/environ`, a unit file, `command line`.
    pub source: String,
}

/// A host the pull moved past.
#[derive(Debug, Clone, Serialize)]
pub struct FallbackReport {
    /// The hosts.toml host that failed.
    pub endpoint: String,
    pub hop: Hop,
    /// `manifest v1`, `fetch sha256:…`.
    pub what: String,
    pub layer: Layer,
    /// The host where it failed (the endpoint, its token realm or a redirect target).
    pub host: String,
    pub cause: String,
}

impl From<&Fallback> for FallbackReport {
    fn from(f: &Fallback) -> FallbackReport {
        FallbackReport {
            endpoint: f.endpoint.to_string(),
            hop: f.hop,
            what: f.what.clone(),
            layer: f.stop.layer,
            host: f.stop.authority.to_string(),
            cause: f.stop.evidence.to_string(),
        }
    }
}

/// The resolver configuration read.
#[derive(Debug, Clone, Serialize)]
pub struct ResolverReport {
    pub nameservers: Vec<IpAddr>,
    pub search: Vec<String>,
    pub ndots: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_view: Option<String>,
}

impl From<&ResolverConfig> for ResolverReport {
    fn from(r: &ResolverConfig) -> ResolverReport {
        ResolverReport {
            nameservers: r.nameservers.clone(),
            search: r.search.clone(),
            ndots: r.ndots,
            pod_view: r.pod_view.clone(),
        }
    }
}

/// containerd's hosts directories, in the order it reads them (node paths).
#[derive(Debug, Clone, Serialize)]
pub struct HostsDirsReport {
    pub roots: Vec<String>,
    /// `config_path in /etc/containerd/config.toml`, `--containerd-certs`, or the default that
    /// applied and why.
    pub origin: String,
}

/// Layers downloaded at once with `--full`.
#[derive(Debug, Clone, Serialize)]
pub struct DownloadsReport {
    /// `null`: every layer at once (the node's containerd sets no limit).
    pub at_once: Option<usize>,
    /// `--parallel`, the `max_concurrent_downloads` setting that applied, or containerd's
    /// default.
    pub origin: String,
}

/// The system trust store as Go's `crypto/x509` loads it on Linux, read on the node.
#[derive(Debug, Clone, Serialize)]
pub struct SystemTrustReport {
    /// The bundle file read (the first readable of the list), a node path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// `go-default`, or `SSL_CERT_FILE from FILE` (the runtime's environment).
    pub bundle_list: String,
    /// Every directory read, with the certificates its files held.
    pub dirs: Vec<TrustDirReport>,
    /// `go-default`, or `SSL_CERT_DIR from FILE`.
    pub dir_list: String,
    pub certificates: usize,
}

/// One directory of the system trust store.
#[derive(Debug, Clone, Serialize)]
pub struct TrustDirReport {
    pub path: String,
    pub certificates: usize,
}

impl From<&crate::probe::system_trust::SystemTrustEvidence> for SystemTrustReport {
    fn from(e: &crate::probe::system_trust::SystemTrustEvidence) -> SystemTrustReport {
        use crate::probe::system_trust::ListOrigin;
        let list = |origin: &ListOrigin| match origin {
            ListOrigin::GoDefault => "go-default".to_string(),
            ListOrigin::Environment { var, source } => format!("{var} from {source}"),
        };
        SystemTrustReport {
            bundle: e.file.as_ref().map(|f| f.display().to_string()),
            bundle_list: list(&e.files_from),
            dirs: e
                .dirs
                .iter()
                .map(|(path, certificates)| TrustDirReport {
                    path: path.display().to_string(),
                    certificates: *certificates,
                })
                .collect(),
            dir_list: list(&e.dirs_from),
            certificates: e.certificates,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::authority::Authority;

    /// A failure containerd moves past is told with where it goes next: another host, or the
    /// same host in plain HTTP; the same failure twice is one warning with its count.
    #[test]
    fn a_fallback_warning_says_where_containerd_goes_next() {
        let local = Authority::parse("127.0.0.1:5000", 443).expect("authority");
        let mirror = Authority::parse("cache.example.test", 443).expect("authority");
        let fallback = |endpoint: &Authority, then| Fallback {
            endpoint: endpoint.clone(),
            hop: Hop::Registry,
            what: "resolve v1".into(),
            stop: Stop::new(
                Hop::Registry,
                endpoint,
                crate::probe::step::Step::Tls,
                crate::probe::observed::tls::TlsProblem::PlainHttp,
            ),
            then,
        };
        let warnings = fallback_warnings(&[
            fallback(&local, FallbackTo::PlainHttp),
            fallback(&mirror, FallbackTo::NextHost),
            fallback(&mirror, FallbackTo::NextHost),
        ]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("127.0.0.1:5000")
                && warnings[0].contains("retries the same host in plain HTTP"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].contains("for 2 requests")
                && warnings[1].contains("moves on to the next host"),
            "{warnings:?}"
        );
    }
}
