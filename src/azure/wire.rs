//! The report of `pullpath azure analyse`: serialize-only types built from the analysis
//! (documented in docs/azure.md, schema docs/azure-report.schema.json).
//! Each endpoint's verdict is the report family's [`Verdict`](crate::verdict::Verdict); advice comes from
//! [`crate::advice::advise`], led by the exact resource and field. [`text`](crate::azure::text) prints it.

use serde::Serialize;

use crate::advice::{Look, advise};
use crate::verdict::{Candidate, Failure, Fault, Seen, Undecided, Verdict};
use crate::vocab::{Hop, Layer, Owner};

use super::analyse::{Analysis, EndpointAnalysis, Outcome, PoolAnalysis, RoutesFrom};
use super::exports::{Exports, FileState};
use super::finding::{Finding, Step};

/// Names the format and its version; bump when a field changes meaning or disappears.
pub const SCHEMA: &str = "pullpath.azure/v1";

#[derive(Debug, Clone, Serialize)]
pub struct AzureReport {
    pub schema: &'static str,
    pub command: &'static str,
    /// The first failing pool × endpoint (or the first undecided one), as a verdict.
    pub verdict: Verdict,
    /// The pool and endpoint the top verdict is about.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<DecidedBy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<String>,
    pub exports: Vec<ExportReport>,
    pub pools: Vec<PoolReport>,
    /// What could not be concluded, each naming the file and the command that produces it.
    pub unconcluded: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DecidedBy {
    pub pool: String,
    pub host: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct ExportReport {
    pub file: String,
    /// `read`, `missing`, `unreadable`.
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub command: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct PoolReport {
    pub pool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vnet: Option<String>,
    /// `effective` (exported for `nic`), `rebuilt` (from route tables, peerings, gateways), `unknown`.
    pub routes: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nic: Option<String>,
    pub endpoints: Vec<EndpointReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct EndpointReport {
    pub host: String,
    /// `login-server`, `data-endpoint`, `storage`, `outside-azure`.
    pub role: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolves_to: Option<String>,
    pub verdict: Verdict,
    /// The step that failed (or could not be decided).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<Step>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// The read-only `az` command that shows the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub show: Option<String>,
    pub where_to_look: Vec<String>,
    pub will_not_help: Vec<String>,
    pub steps: Vec<StepReport>,
    pub checks: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    pub step: Step,
    /// `passed`, `failed`, `undecided`.
    pub status: &'static str,
    pub detail: String,
}

/// The verdict of one endpoint's outcome.
fn verdict(hop: Hop, host: &str, outcome: &Outcome) -> Verdict {
    let (finding, decided) = match outcome {
        Outcome::Passed => return Verdict::Passed,
        Outcome::Failed(f) => (f, true),
        Outcome::Undecided(f) => (f, false),
    };
    let (layer, mechanism) = hop.layer_of(finding.layer);
    let fault = Fault::new(layer, mechanism, finding.owner);
    let seen = Seen {
        hop: Some(hop),
        host: Some(host.to_string()),
        cause: Some(finding.cause.clone()),
    };
    if decided {
        return Verdict::Failed(Failure { fault, seen });
    }
    Verdict::Undecided(Undecided {
        leaning: Some(fault),
        seen,
        candidates: vec![Candidate {
            layer: fault.layer(),
            why: finding.cause.clone(),
        }],
        decides: finding.decides.clone(),
    })
}

fn endpoint_report(e: &EndpointAnalysis) -> EndpointReport {
    let hop = e.endpoint.hop();
    let verdict = verdict(hop, &e.endpoint.host, &e.outcome);
    let finding: Option<&Finding> = match &e.outcome {
        Outcome::Passed => None,
        Outcome::Failed(f) | Outcome::Undecided(f) => Some(f),
    };
    let (where_to_look, will_not_help) = match (finding, verdict.fault()) {
        (Some(f), Some(fault)) => {
            let advice = advise(fault.layer(), fault.mechanism(), hop, &e.endpoint.host);
            let mut look = vec![if f.field.is_empty() {
                format!("{}: `{}`", f.resource, f.show)
            } else {
                format!(
                    "{} {}: {} (want {}): `{}`",
                    f.resource, f.field, f.observed, f.expected, f.show
                )
            }];
            // The shared advice's "next: pullpath azure" is this very report.
            look.extend(
                advice
                    .where_to_look
                    .iter()
                    .filter(|w| !matches!(w, Look::AzureExports { .. }))
                    .map(Look::to_string),
            );
            (look, advice.will_not_help)
        }
        _ => (Vec::new(), Vec::new()),
    };
    let nonempty = |s: &String| (!s.is_empty()).then(|| s.clone());
    EndpointReport {
        host: e.endpoint.host.clone(),
        role: e.endpoint.role.as_str(),
        region: match &e.endpoint.role {
            super::registry::Role::Data { region } if !region.is_empty() => Some(region.clone()),
            _ => None,
        },
        resolves_to: e.resolves_to.clone(),
        step: finding.map(|f| f.step),
        resource: finding.and_then(|f| nonempty(&f.resource)),
        field: finding.and_then(|f| nonempty(&f.field)),
        observed: finding.and_then(|f| nonempty(&f.observed)),
        expected: finding.and_then(|f| nonempty(&f.expected)),
        show: finding.and_then(|f| nonempty(&f.show)),
        verdict,
        where_to_look,
        will_not_help,
        steps: e
            .steps
            .iter()
            .map(|s| StepReport {
                step: s.step,
                status: match s.ok {
                    Some(true) => "passed",
                    Some(false) => "failed",
                    None => "undecided",
                },
                detail: s.detail.clone(),
            })
            .collect(),
        checks: e.checks.clone(),
    }
}

fn pool_report(p: &PoolAnalysis) -> PoolReport {
    let (routes, nic) = match &p.routes_from {
        Some(RoutesFrom::Effective { nic }) => ("effective", Some(nic.clone())),
        Some(RoutesFrom::Rebuilt) => ("rebuilt", None),
        None => ("unknown", None),
    };
    PoolReport {
        pool: p.pool.clone(),
        subnet: p.subnet.clone(),
        vnet: p.vnet.clone(),
        routes,
        nic,
        endpoints: p.endpoints.iter().map(endpoint_report).collect(),
    }
}

pub fn report(analysis: &Analysis, exports: &Exports) -> AzureReport {
    let pools: Vec<PoolReport> = analysis.pools.iter().map(pool_report).collect();
    let all = || {
        pools
            .iter()
            .flat_map(|p| p.endpoints.iter().map(move |e| (p, e)))
    };
    let first_failed = all().find(|(_, e)| matches!(e.verdict, Verdict::Failed(_)));
    let first_undecided = all().find(|(_, e)| !e.verdict.is_decided());
    let decider = first_failed.or(first_undecided);
    let decided_by = decider.map(|(p, e)| DecidedBy {
        pool: p.pool.clone(),
        host: e.host.clone(),
    });
    let verdict = match decider {
        Some((_, e)) => e.verdict.clone(),
        None if all().next().is_none() => Verdict::Undecided(Undecided {
            leaning: Some(Fault::new(Layer::Other, None, Owner::NetworkTeam)),
            seen: Seen {
                hop: Some(Hop::Unknown),
                host: None,
                cause: Some("no pool × endpoint could be analysed from these exports".into()),
            },
            candidates: Vec::new(),
            decides: analysis.unconcluded.first().cloned(),
        }),
        None => Verdict::Passed,
    };
    AzureReport {
        schema: SCHEMA,
        command: "azure analyse",
        verdict,
        decided_by,
        cluster: analysis.cluster.clone(),
        registry: analysis.registry.clone(),
        exports: exports
            .files
            .iter()
            .map(|f| ExportReport {
                file: f.file.clone(),
                state: match f.state {
                    FileState::Read => "read",
                    FileState::Missing => "missing",
                    FileState::Unreadable(_) => "unreadable",
                },
                error: match &f.state {
                    FileState::Unreadable(why) => Some(why.to_string()),
                    _ => None,
                },
                command: f.command(),
            })
            .collect(),
        pools,
        unconcluded: analysis.unconcluded.clone(),
    }
}
