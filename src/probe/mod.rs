//! `pullpath probe`: the pull path walked from this network namespace, hop by hop.
//!
//! `resolv` reads where we are, `dns`/`route`/`connect`/`tls` check one host from the ground up
//! (`host` ties them together), `walk` goes through the registry API in the runtime's order,
//! and [`run`] turns what was observed into a report.

pub mod connect;
pub mod creds;
pub mod dns;
pub mod host;
pub mod hosts_toml;
pub mod progress;
pub mod resolv;
pub mod route;
pub mod tls;
pub mod walk;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::advice::advise;
use crate::image_ref::ImageRef;
use crate::report::{ProbeReport, SCHEMA, Verdict};
use crate::vocab::Layer;

pub use host::Timeouts;
pub use walk::Platform;

/// Everything a probe needs, validated.
#[derive(Debug)]
pub struct ProbeConfig {
    pub image: ImageRef,
    pub platform: Platform,
    pub credentials: Option<creds::Credentials>,
    pub timeouts: Timeouts,
    pub deadline: Duration,
    pub full: bool,
    pub parallel: usize,
    pub progress: bool,
    /// Where resolv.conf and hosts live (normally /etc).
    pub etc: PathBuf,
    pub containerd_certs: Option<PathBuf>,
    pub ca_files: Vec<PathBuf>,
}

pub async fn run(config: ProbeConfig) -> ProbeReport {
    let started = Instant::now();
    let resolver = resolv::ResolverConfig::read(&config.etc);
    let registry = config.image.api_host().to_string();
    let hosts_config = config
        .containerd_certs
        .as_deref()
        .map(|dir| hosts_toml::HostsConfig::read(dir, &config.image.registry))
        .unwrap_or_default();
    let trust = tls::Trust::load(&hosts_config.cas, &config.ca_files);
    let mut warnings = Vec::new();
    let mut mirrors = Vec::new();
    for url in &hosts_config.mirrors {
        match url::Url::parse(url) {
            Ok(u) if u.scheme() == "https" && u.host_str().is_some() => mirrors.push(match u.port() {
                Some(p) => format!("{}:{p}", u.host_str().unwrap_or_default()),
                None => u.host_str().unwrap_or_default().to_string(),
            }),
            _ => warnings.push(format!("containerd's hosts.toml names the mirror {url}, which this probe does not walk (only https:// mirrors)")),
        }
    }
    if let Some(pod) = &resolver.pod_view {
        warnings.push(pod.clone());
    }
    let settings = walk::Settings {
        image: config.image.clone(),
        platform: config.platform.clone(),
        credentials: config.credentials.clone(),
        timeouts: config.timeouts,
        full: config.full,
        parallel: config.parallel,
        progress: config.progress,
        mirrors,
    };
    let tls_config = match tls::client_config(&trust) {
        Ok(c) => c,
        Err(e) => {
            // Without a TLS configuration nothing can be checked: say so as the verdict.
            let mut report = empty_report(&config, resolver, warnings, started);
            report.verdict = failed(
                Layer::Other,
                crate::vocab::Hop::Unknown,
                &registry,
                format!("cannot configure TLS: {e}"),
            );
            return report;
        }
    };
    let mut walk = walk::Walk::new(settings, resolver.clone(), trust, tls_config);
    let finished = tokio::time::timeout(config.deadline, walk.run()).await;
    if finished.is_err() {
        let at = walk
            .path
            .last()
            .map(|h| h.host.clone())
            .unwrap_or(registry.clone());
        let hop = walk
            .path
            .last()
            .map_or(crate::vocab::Hop::Registry, |h| h.hop);
        walk.stopped.get_or_insert(walk::Stopped {
            hop,
            host: at,
            layer: Layer::Other,
            detail: format!(
                "the total deadline of {} s ran out",
                config.deadline.as_secs()
            ),
            mechanism: None,
        });
    }
    for (mirror, failure) in &walk.fallbacks {
        warnings.push(format!(
            "mirror {mirror} failed ({} at {}: {}); containerd falls back to the next host, so every pull pays for this failure first",
            failure.layer, failure.host, failure.detail
        ));
    }
    let hosts = walk.hosts();
    let hand_fixes: Vec<String> = hosts
        .iter()
        .filter_map(|h| h.dns.hand_fix.clone())
        .collect();
    let mut report = empty_report(&config, resolver, warnings, started);
    report.verdict = match &walk.stopped {
        None => Verdict::passed(),
        Some(s) => {
            let mechanism = s.mechanism;
            let mut v = failed(s.layer, s.hop, &s.host, s.detail.clone());
            v.mechanism = mechanism;
            let mut advice = advise(s.layer, mechanism, s.hop, &s.host);
            if let Some(zone) = hosts
                .iter()
                .find(|h| h.host == s.host.split(':').next().unwrap_or(&s.host))
                .and_then(unlinked_private_zone)
                && matches!(
                    mechanism.unwrap_or(s.layer),
                    Layer::Route | Layer::Refused | Layer::Tls
                )
            {
                // The connection failed because DNS sent the node to the public address.
                advice.owner = crate::vocab::Owner::DnsTeam;
                advice.where_to_look.insert(0, zone);
            }
            v.owner = Some(advice.owner);
            report.where_to_look = advice.where_to_look;
            report.will_not_help = advice.will_not_help;
            v
        }
    };
    report.path = walk.path.clone();
    report.blobs = walk.blobs.clone();
    report.hosts = hosts;
    report.hand_fixes = hand_fixes;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    report
}

/// A name that resolves through a privatelink CNAME to public addresses only: the node's
/// resolver answers from public DNS, so the private zone is not linked to it.
fn unlinked_private_zone(check: &host::HostCheck) -> Option<String> {
    let dns = &check.dns;
    let via = dns.cname_chain.iter().find(|c| c.contains("privatelink"))?;
    let all_public =
        !dns.addresses.is_empty() && dns.addresses.iter().all(|a| !dns::is_private(*a));
    all_public.then(|| {
        format!(
            "{} resolves through {via} to public {}: the node's resolver is not linked to the private zone for {via}, so the node is sent to the public endpoint",
            check.host,
            dns.addresses.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )
    })
}

fn failed(layer: Layer, hop: crate::vocab::Hop, host: &str, cause: String) -> Verdict {
    Verdict {
        passed: false,
        layer: Some(layer),
        hop: Some(hop),
        host: Some(host.to_string()),
        cause: Some(cause),
        mechanism: None,
        owner: None,
        decided: true,
        candidates: vec![],
        decides: None,
    }
}

fn empty_report(
    config: &ProbeConfig,
    resolver: resolv::ResolverConfig,
    warnings: Vec<String>,
    started: Instant,
) -> ProbeReport {
    ProbeReport {
        schema: SCHEMA,
        command: "probe",
        image: config.image.to_string(),
        platform: config.platform.to_string(),
        verdict: Verdict::passed(),
        view: if resolver.pod_view.is_some() {
            "pod"
        } else {
            "node"
        },
        resolver,
        path: vec![],
        hosts: vec![],
        blobs: vec![],
        hand_fixes: vec![],
        warnings,
        where_to_look: vec![],
        will_not_help: vec![],
        elapsed_ms: started.elapsed().as_millis() as u64,
    }
}
