//! The fleet report (`pullpath.fleet/v1`): serialize-only wire types, documented in
//! docs/fleet.md with their schema docs/fleet.schema.json, built from the node choice and the
//! run's answers by pure functions. One row per node, a comparison per pool, the verdict of the
//! worst eligible pool (the exit status follows it).

use std::collections::BTreeMap;

use super::answer::{Answer, TrustSeen};
use super::ending::Ending;
use super::kubelet_pull;
use super::run::RunOutcome;
use super::select::NodeChoice;
use crate::verdict::{Seen, Undecided, Verdict};
use crate::vocab::Layer;

mod wire;
pub use wire::*;

/// The run's inputs the report names.
pub struct Header {
    pub image: String,
    pub run_id: String,
    pub probe_namespace: String,
    pub probe_image: String,
    /// `--probe-image-arch`; `None`: the probe image's architectures are unknown.
    pub probe_arches: Option<Vec<String>>,
    /// No registry: what was delivered; `None` with a probe image.
    pub delivery: Option<DeliveryReport>,
    pub workload: Option<String>,
    /// The `--for` workload's `imagePullSecrets` (names): the kubelet tries them before the
    /// node's own credentials, and the probe pod cannot read them.
    pub pull_secrets: Vec<String>,
    /// Why the Karpenter NodePools were not read (pools without nodes may be missing).
    pub node_pools_unread: Option<String>,
    /// `--pools` entries that name no pool.
    pub unmatched_pools: Vec<String>,
    /// Seconds since the epoch, for ages.
    pub now: i64,
    pub elapsed_ms: u64,
}

/// The verdict on a node the run could not hear from: no layer, only why.
fn undecided(why: &str) -> Verdict {
    Verdict::Undecided(Undecided {
        leaning: None,
        seen: Seen {
            cause: Some(why.to_string()),
            ..Seen::default()
        },
        candidates: Vec::new(),
        decides: Some(
            "a probe report from this node: rerun fleet for it, or look at the probe pod's events"
                .into(),
        ),
    })
}

/// Worse verdicts sort first: a decided failure (earlier layer on the pull path first), then
/// an undecided one, then a pass.
fn severity(v: &Verdict) -> (u8, usize) {
    match v {
        Verdict::Failed(failure) => {
            let layer = failure.fault.layer();
            (0, Layer::ALL.iter().position(|l| *l == layer).unwrap_or(0))
        }
        Verdict::Undecided(_) => (1, 0),
        Verdict::Passed => (2, 0),
    }
}

/// A probe's row status: its verdict, unless the node holds the image (then a failure only
/// means it works from cache).
fn probe_status(verdict: &Verdict, cached: bool) -> &'static str {
    match (verdict, cached) {
        (Verdict::Passed, _) => "passed",
        (_, true) => "works-from-cache",
        (Verdict::Failed(_), false) => "failed",
        (Verdict::Undecided(_), false) => "undecided",
    }
}

/// The probe reads the node's own credentials; the workload's pods also bring their pull
/// secrets, which the kubelet tries first (kuberuntime_image.go `pullImage`) and the probe pod
/// cannot read. So a probe refused at auth has not heard the workload's answer: the kubelet's
/// own pull with those secrets (`--kubelet-pull`) decides it, and without that the verdict is
/// undecided, leaning auth.
pub fn with_pull_secrets(
    verdict: Verdict,
    pull_secrets: &[String],
    kubelet: Option<&kubelet_pull::KubeletPull>,
) -> Verdict {
    let Verdict::Failed(failure) = &verdict else {
        return verdict;
    };
    if failure.fault.layer() != Layer::Auth || pull_secrets.is_empty() {
        return verdict;
    }
    match kubelet {
        Some(kubelet_pull::KubeletPull::Pulled { .. }) => Verdict::Passed,
        Some(kubelet_pull::KubeletPull::Failed { .. }) => verdict,
        Some(kubelet_pull::KubeletPull::NoAnswer { .. }) | None => Verdict::Undecided(Undecided {
            leaning: Some(failure.fault),
            seen: failure.seen.clone(),
            candidates: Vec::new(),
            decides: Some(format!(
                "the node's own credentials were refused, but the workload's pods also bring the pull secret{} {}, which the kubelet tries first and the probe pod cannot read: --kubelet-pull pulls with them and decides (or `pullpath explain pod/NAME --read-secrets`)",
                if pull_secrets.len() == 1 { "" } else { "s" },
                pull_secrets.join(", ")
            )),
        }),
    }
}

/// A row's status, verdict, hand fixes, source and message when the run could not hear from
/// its node: no layer, only why.
fn no_answer(
    why: &str,
) -> (
    &'static str,
    Verdict,
    Vec<String>,
    &'static str,
    Option<String>,
) {
    ("no-answer", undecided(why), Vec::new(), "run", None)
}

fn row(candidate: &NodeChoice, run: Option<&super::run::NodeRun>, header: &Header) -> NodeRow {
    let now = header.now;
    let cached = candidate.listed || candidate.running;
    let (status, verdict, hand_fixes, source, message) = match run.map(|r| &r.answer) {
        Some(Answer::Probe(p)) => {
            let kubelet = run.and_then(|r| r.kubelet_pull.as_ref()).map(|(_, k)| k);
            let verdict = with_pull_secrets(p.verdict.clone(), &header.pull_secrets, kubelet);
            (
                probe_status(&verdict, cached),
                verdict,
                p.hand_fixes.clone(),
                "probe",
                None,
            )
        }
        Some(Answer::ProbeImagePull {
            explained, message, ..
        }) => (
            "probe-image-failed",
            explained.verdict.clone(),
            Vec::new(),
            "probe-pod",
            Some(message.clone()),
        ),
        Some(Answer::Missing { why }) => no_answer(&why.to_string()),
        Some(Answer::NotCreated { why, .. }) => no_answer(&why.to_string()),
        Some(Answer::Problem(problem)) => no_answer(&problem.describe()),
        None => no_answer("not probed"),
    };
    // Beside the probe's own verdict, before the pull secrets' reading of it.
    let probe_verdict = match run.map(|r| &r.answer) {
        Some(Answer::Probe(p)) => &p.verdict,
        _ => &verdict,
    };
    let kubelet_pull = run
        .and_then(|r| r.kubelet_pull.as_ref())
        .map(|(plan, pull)| {
            kubelet_pull::report(
                pull,
                probe_verdict,
                format!("{}/{}", plan.namespace, plan.name),
            )
        });
    NodeRow {
        node: candidate.facts.name.clone(),
        pool: candidate.pool.clone(),
        created: candidate.facts.created.clone(),
        age_seconds: candidate.facts.created_seconds.map(|c| (now - c).max(0)),
        eligible: candidate.eligible.as_ref().map(Result::is_ok),
        not_eligible_because: candidate
            .eligible
            .as_ref()
            .and_then(|e| e.as_ref().err().map(ToString::to_string)),
        chosen_because: candidate.why.to_string(),
        status,
        verdict,
        cached,
        cache_evidence: [("running", candidate.running), ("listed", candidate.listed)]
            .into_iter()
            .filter_map(|(name, held)| held.then_some(name))
            .collect(),
        hand_fixes,
        source,
        probe_pod_message: message,
        probe_pod: run.map(|r| r.pod.clone()).unwrap_or_default(),
        node_image: run
            .and_then(|r| r.node_image.as_ref())
            .map(|chosen| NodeImageReport {
                image: chosen.image.clone(),
                source: chosen.source.kind(),
                why: chosen.source.describe(),
            }),
        elapsed_ms: run.map_or(0, |r| {
            u64::try_from(r.elapsed.as_millis()).unwrap_or(u64::MAX)
        }),
        runtime_pull: match run.map(|r| &r.answer) {
            Some(Answer::Probe(p)) => p.runtime.clone(),
            _ => None,
        },
        kubelet_pull,
        problem: match run.map(|r| &r.answer) {
            Some(Answer::Problem(problem)) => Some(ProblemReport {
                node: Some(candidate.facts.name.clone()),
                pool: Some(candidate.pool.clone()),
                kind: problem.kind(),
                message: problem.describe(),
            }),
            _ => None,
        },
        fresh_node: None,
    }
}

/// The row of the node a scale-up made for `run`, beside the pool's newest `existing` row (none
/// for a pool with no node: `beside` then stands for the pool).
fn fresh_row(
    beside: &NodeChoice,
    run: &super::run::NodeRun,
    way: &super::run::FreshRun,
    existing: Option<&NodeRow>,
    header: &Header,
) -> NodeRow {
    let mut row = row(beside, Some(run), header);
    let came = run.node.is_some();
    row.node = match &run.node {
        Some(node) => node.clone(),
        None => format!("(a fresh node of pool {})", way.pool),
    };
    row.created = None;
    row.age_seconds = None;
    row.chosen_because = match &beside.evidence {
        Some(found) if beside.nodeless => format!(
            "--fresh-node: a node the pool's autoscaler created for this run (the pool had none: {found})"
        ),
        _ => "--fresh-node: a node the pool's autoscaler created for this run".to_string(),
    };
    row.cached = false;
    row.cache_evidence = Vec::new();
    if let Some(problem) = row.problem.as_mut() {
        problem.node = Some(row.node.clone());
    }
    let layer = |r: &NodeRow| r.verdict.layer().map(|l| l.as_str());
    let difference = existing.filter(|_| came).and_then(|existing| {
        super::fresh::difference(
            (row.status, layer(&row)),
            (existing.status, layer(existing)),
            &existing.hand_fixes,
        )
    });
    row.fresh_node = Some(FreshNodeReport {
        compared_with: existing.map(|e| e.node.clone()),
        compared_status: existing.map(|e| e.status),
        difference,
        node_created: way.node_created.clone(),
        node_ready: way.node_ready.clone(),
        still_starting: way.still_starting.clone(),
        waited_ms: u64::try_from(way.waited.as_millis()).unwrap_or(u64::MAX),
        scheduling: way.said.clone(),
        note: super::fresh::SCALE_DOWN_NOTE,
    });
    row
}

/// What a verdict says in a few words: `refused on the registry hop to r.example:5000`.
pub fn verdict_words(v: &Verdict) -> String {
    let failure = match v {
        Verdict::Passed => return "passes".to_string(),
        Verdict::Undecided(_) => {
            return format!(
                "has no decided answer ({})",
                v.cause().unwrap_or("undecided")
            );
        }
        Verdict::Failed(failure) => failure,
    };
    let mut words = format!("fails at {}", failure.fault.layer().as_str());
    if let Some(hop) = failure.seen.hop {
        words.push_str(&format!(" on the {} hop", hop.as_str()));
    }
    if let Some(host) = &failure.seen.host {
        words.push_str(&format!(" to {host}"));
    }
    words
}

fn pool_row(pool: &str, members: &[&NodeChoice], rows: &[&NodeRow]) -> PoolRow {
    let worst_row = rows.iter().min_by_key(|r| severity(&r.verdict));
    let worst = worst_row
        .map(|r| r.verdict.clone())
        .unwrap_or_else(|| undecided("no Ready node of this pool was probed"));
    let through_probe_image = worst_row.is_some_and(|r| r.status == "probe-image-failed");
    let eligible = if members.iter().all(|m| m.eligible.is_none()) {
        None
    } else {
        Some(members.iter().any(|m| matches!(m.eligible, Some(Ok(())))))
    };
    let passed = rows.iter().filter(|r| r.verdict.is_passed()).count();
    let failed = rows.len() - passed;
    let cached_nodes = members.iter().filter(|m| m.listed || m.running).count();
    let mut summary = if rows.is_empty() {
        format!("pool `{pool}`: no node probed")
    } else if failed == 0 {
        format!(
            "pool `{pool}` passes ({} node{} probed)",
            rows.len(),
            if rows.len() == 1 { "" } else { "s" }
        )
    } else {
        let cause = worst.cause().map(|c| format!(": {c}")).unwrap_or_default();
        format!(
            "pool `{pool}` {}{} on {failed} of {} probed node{}{cause}",
            verdict_words(&worst),
            if through_probe_image {
                " (pulling the probe image itself: the probe could not start)"
            } else {
                ""
            },
            rows.len(),
            if rows.len() == 1 { "" } else { "s" }
        )
    };
    let from_cache: Vec<&str> = rows
        .iter()
        .filter(|r| r.status == "works-from-cache")
        .map(|r| r.node.as_str())
        .collect();
    if !from_cache.is_empty() {
        summary.push_str(&format!(
            "; {} only works from cache (it holds the image; a fresh pull fails)",
            from_cache.join(", ")
        ));
    } else if cached_nodes > 0 {
        summary.push_str(&format!(
            "; {cached_nodes} node{} of `{pool}` hold{} the image from cache",
            if cached_nodes == 1 { "" } else { "s" },
            if cached_nodes == 1 { "s" } else { "" }
        ));
    }
    for r in rows.iter().filter(|r| !r.hand_fixes.is_empty()) {
        summary.push_str(&format!(
            "; {} has a hand fix a replaced node would lack: {}",
            r.node,
            r.hand_fixes.join("; ")
        ));
    }
    if eligible == Some(false) {
        let why = members
            .iter()
            .find_map(|m| m.eligible.as_ref().and_then(|e| e.as_ref().err()))
            .map(ToString::to_string)
            .unwrap_or_default();
        summary.push_str(&format!(" — not eligible for the workload ({why})"));
    }
    PoolRow {
        pool: pool.to_string(),
        eligible,
        nodes: members.len(),
        probed: rows.len(),
        passed,
        failed,
        cached_nodes,
        verdict: worst,
        summary,
    }
}

/// A CA some nodes trust and others do not: node A verified host H's chain ending at issuer X
/// while node B, asked for the same host, did not trust X (`unknown authority`). A has a CA in
/// its store (or containerd's certs.d) that B lacks: installed by hand, or missing from B's
/// image. Said on every node that trusts it, naming the nodes that do not.
pub fn trust_only_here(seen: &[(&str, &str, &[TrustSeen])]) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (node, _, trust) in seen {
        for t in trust.iter().filter(|t| t.verified) {
            let lacking: Vec<String> = seen
                .iter()
                .filter(|(other, _, _)| other != node)
                .filter(|(_, _, theirs)| {
                    theirs
                        .iter()
                        .any(|o| o.host == t.host && o.issuer == t.issuer && o.unknown_authority)
                })
                .map(|(other, pool, _)| format!("{other} (pool {pool})"))
                .collect();
            if !lacking.is_empty() {
                out.entry(node.to_string()).or_default().push(format!(
                    "trusts the CA {:?} that {} is signed by, which {} lack{}: a CA added to this node by hand, or missing from the others' image",
                    t.issuer,
                    t.host,
                    lacking.join(", "),
                    if lacking.len() == 1 { "s" } else { "" }
                ));
            }
        }
    }
    out
}

/// The report of a run over `candidates` (every node read, chosen or not).
pub fn build(header: Header, candidates: &[NodeChoice], outcome: &RunOutcome) -> FleetReport {
    let mut nodes: Vec<NodeRow> = candidates
        .iter()
        .filter(|c| c.chosen)
        .map(|c| {
            let run = outcome
                .runs
                .iter()
                .find(|r| r.node.as_ref() == Some(&c.facts.name) && r.fresh.is_none());
            row(c, run, &header)
        })
        .collect();
    let fresh_rows: Vec<NodeRow> = outcome
        .runs
        .iter()
        .filter_map(|run| {
            let way = run.fresh.as_ref()?;
            let beside = candidates.iter().find(|c| c.facts.name == way.beside)?;
            let existing = nodes.iter().find(|n| n.node == way.beside);
            if existing.is_none() && !beside.nodeless {
                return None;
            }
            Some(fresh_row(beside, run, way, existing, &header))
        })
        .collect();
    nodes.extend(fresh_rows);
    let seen: Vec<(&str, &str, &[TrustSeen])> = outcome
        .runs
        .iter()
        .filter_map(|r| match &r.answer {
            Answer::Probe(p) => {
                let node = r.node.as_deref()?;
                let pool = nodes.iter().find(|n| n.node == node)?.pool.as_str();
                Some((node, pool, p.trust.as_slice()))
            }
            _ => None,
        })
        .collect();
    let extra = trust_only_here(&seen);
    for row in &mut nodes {
        if let Some(fixes) = extra.get(&row.node) {
            row.hand_fixes.extend(fixes.iter().cloned());
        }
    }
    let mut pool_names: Vec<&str> = candidates.iter().map(|c| c.pool.as_str()).collect();
    pool_names.dedup();
    let mut pools: Vec<PoolRow> = pool_names
        .iter()
        .map(|pool| {
            let members: Vec<&NodeChoice> = candidates.iter().filter(|c| c.pool == *pool).collect();
            let rows: Vec<&NodeRow> = nodes.iter().filter(|r| r.pool == *pool).collect();
            pool_row(pool, &members, &rows)
        })
        .filter(|p| p.probed > 0)
        .collect();
    // Eligible pools first, worst first; then by name.
    pools.sort_by(|a, b| {
        (a.eligible == Some(false))
            .cmp(&(b.eligible == Some(false)))
            .then(severity(&a.verdict).cmp(&severity(&b.verdict)))
            .then(a.pool.cmp(&b.pool))
    });
    let verdict = pools
        .iter()
        .filter(|p| p.eligible != Some(false))
        .map(|p| &p.verdict)
        .min_by_key(|v| severity(v))
        .cloned()
        .unwrap_or_else(|| {
            if pools.is_empty() {
                undecided("no node was probed")
            } else {
                Verdict::Passed
            }
        });
    // A fresh node that answers otherwise than its pool's newest: said on the pool's line.
    for pool in &mut pools {
        if let Some(difference) = nodes
            .iter()
            .filter(|n| n.pool == pool.pool)
            .find_map(|n| n.fresh_node.as_ref()?.difference.clone())
        {
            pool.summary.push_str(&format!(" — {difference}"));
        }
    }
    let summary = pools.iter().map(|p| p.summary.clone()).collect();
    // A pool with no node is a row of its own once a fresh node was asked for it.
    let skipped = candidates
        .iter()
        .filter(|c| !c.chosen)
        .filter(|c| !(c.nodeless && nodes.iter().any(|n| n.pool == c.pool)))
        .map(|c| SkippedNode {
            node: c.facts.name.clone(),
            pool: c.pool.clone(),
            why: c.why.to_string(),
            evidence: c.evidence.clone(),
        })
        .collect();
    let mut problems: Vec<ProblemReport> = nodes.iter().filter_map(|n| n.problem.clone()).collect();
    if header.probe_arches.is_none() && header.delivery.is_none() {
        problems.push(ProblemReport {
            node: None,
            pool: None,
            kind: "probe-image-arch-unknown",
            message: "the probe image's architectures are unknown (--probe-image-arch): a node it has no variant for ends in `exec format error`, named for that node".into(),
        });
    }
    if let Some(why) = &header.node_pools_unread {
        problems.push(ProblemReport {
            node: None,
            pool: None,
            kind: "nodepools-unread",
            message: format!("{why}: Karpenter NodePools without nodes (AKS node auto-provisioning's too) are not in this run; see deploy/rbac-fleet.yaml"),
        });
    }
    for pool in &header.unmatched_pools {
        problems.push(ProblemReport {
            node: None,
            pool: Some(pool.clone()),
            kind: "pool-not-found",
            message: format!("--pools {pool}: no node of the cluster is in a pool of that name; a node group at zero is named with its label, --pools LABEL={pool} (e.g. kubernetes.azure.com/agentpool={pool}, eks.amazonaws.com/nodegroup={pool})"),
        });
    }
    if let Some(why) = &outcome.events_unread {
        problems.push(ProblemReport {
            node: None,
            pool: None,
            kind: "events-unread",
            message: format!("{why}: a probe pod that cannot mount its volumes is named only when --start-budget runs out"),
        });
    }
    let cleanup = match &outcome.cleanup {
        Ok(c) => CleanupReport {
            deleted: c.deleted,
            remaining: c.remaining,
            unverified: c.unverified.clone(),
            error: None,
            unowned: None,
        },
        Err(e) => CleanupReport {
            deleted: 0,
            remaining: 0,
            unverified: None,
            error: Some(e.to_string()),
            unowned: None,
        },
    };
    FleetReport {
        schema: SCHEMA,
        command: "fleet",
        image: header.image,
        run_id: header.run_id,
        probe_namespace: header.probe_namespace,
        probe_image: header.probe_image,
        delivery: header.delivery,
        workload: header.workload,
        verdict,
        ending: match outcome.ending {
            Ending::Finished => "finished",
            Ending::Deadline => "deadline",
            Ending::Interrupted => "interrupted",
        },
        nodes,
        pools,
        summary,
        skipped,
        problems,
        cleanup,
        elapsed_ms: header.elapsed_ms,
    }
}

#[cfg(test)]
mod tests;
