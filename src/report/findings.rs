//! The multi-finding report (`pullpath.findings/v1`): `explain` of input about several pods,
//! `explain pod/NAME` and `scan`. A list of findings, one per (pod, container image), each
//! carrying the same explain report a pasted message gets, grouped by (layer, host, pool),
//! worst first.
//!
//! Serialize-only wire types, documented in docs/report-schema.md and docs/findings.schema.json;
//! built from the engine's values, never read back. Bump [`FINDINGS_SCHEMA`] when a field changes
//! meaning or disappears; adding fields is compatible.

use std::cmp::Ordering;

use serde::Serialize;

use crate::failure_text::Explained;
use crate::report::{ExplainReport, explain_report};
use crate::verdict::Verdict;
use crate::vocab::Layer;

/// Names the multi-finding format and its version.
pub const FINDINGS_SCHEMA: &str = "pullpath.findings/v1";

/// `explain` (several pods, or pod input), `explain pod/NAME` and `scan`, `--output json`.
#[derive(Debug, Clone, Serialize)]
pub struct FindingsReport {
    pub schema: &'static str,
    /// `explain` or `scan`.
    pub command: &'static str,
    /// The worst finding's verdict (passed when nothing fails); the exit status follows it.
    pub verdict: Verdict,
    /// What was read (cluster mode): namespace or all namespaces, pods read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeReport>,
    /// Worst group first, then by pod.
    pub findings: Vec<FindingReport>,
    /// Findings grouped by (layer, host, pool), worst first.
    pub groups: Vec<GroupReport>,
    /// What could not be read (an API request refused), and why: the findings lack it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<UnreadReport>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScopeReport {
    /// `None` for all namespaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub all_namespaces: bool,
    pub pods_read: usize,
}

/// One (pod, container image) stuck on its pull.
#[derive(Debug, Clone, Serialize)]
pub struct FindingReport {
    pub pod: PodReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// The node's pool (cluster mode, or when the input held the Node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Exactly what `explain` prints for this pod's messages (`pullpath.report/v1`).
    pub report: ExplainReport,
    /// Cluster mode: the node, its pool, and which nodes hold the image.
    #[serde(rename = "where", skip_serializing_if = "Option::is_none")]
    pub location: Option<WhereReport>,
    /// Cluster mode: the pod's and its service account's imagePullSecrets.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pull_secrets: Vec<PullSecretReport>,
    /// Cluster mode: what to run next.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub next_commands: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PodReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// `Deployment/web`, `StatefulSet/worker`, … (cluster mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ContainerReport {
    pub name: String,
    /// `init`, `app` or `ephemeral`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_reason: Option<String>,
}

/// Findings that share layer, host and pool.
#[derive(Debug, Clone, Serialize)]
pub struct GroupReport {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layer: Option<Layer>,
    /// True when every finding of the group is decided.
    pub decided: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// How many findings (pod, image) the group holds.
    pub count: usize,
    /// `namespace/name` of each pod.
    pub pods: Vec<String>,
    pub nodes: Vec<String>,
    /// The earliest event time of the group's messages (RFC 3339), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_seen: Option<String>,
    /// Indices into `findings`: the group's first [`MAX_LISTED_PER_GROUP`] findings.
    pub findings: Vec<usize>,
    /// The group's findings beyond those listed (`count` less `findings`).
    #[serde(skip_serializing_if = "is_zero")]
    pub unlisted: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Findings listed per group: a registry outage fails every pod of a cluster alike, and past a
/// screenful of the same verdict the rest say nothing new (each group still counts and names
/// every pod and node). What is held while reporting grows with the findings listed.
pub const MAX_LISTED_PER_GROUP: usize = 20;

/// The node a pod landed on, and the cache state of its image across the cluster.
#[derive(Debug, Clone, Serialize)]
pub struct WhereReport {
    pub node: NodeReport,
    pub cache: CacheReport,
}

#[derive(Debug, Clone, Serialize)]
pub struct NodeReport {
    pub name: String,
    /// The pool, or `None` for a node no provider label names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// The label the pool was read from (`kubernetes.azure.com/agentpool`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool_label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kubelet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub os_image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zone: Option<String>,
}

/// Which other nodes hold the image, and what that means.
#[derive(Debug, Clone, Serialize)]
pub struct CacheReport {
    /// Nodes holding the image, by pool and age.
    pub holders: Vec<HolderReport>,
    /// True when a node holding the image is older than the failing node: the cache lie.
    pub cache_lie: bool,
    /// What the evidence says, in words (including what absence does not prove).
    pub summary: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct HolderReport {
    pub node: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// `running` (a pod on it runs the image: its imageID) or `listed` (node.status.images).
    pub evidence: &'static str,
    /// The image ID (digest) seen, when running.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
}

/// One imagePullSecret. Values are never read into the report.
#[derive(Debug, Clone, Serialize)]
pub struct PullSecretReport {
    pub name: String,
    /// `pod` or `serviceaccount`.
    pub from: &'static str,
    /// `None` when it could not be read (RBAC); `Some(false)` when it does not exist.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub secret_type: Option<String>,
    /// The registries it holds entries for (host names only, with --read-secrets).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub registries: Vec<String>,
    /// Whether an entry matches the image by the kubelet's keyring rules (with --read-secrets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches_image: Option<bool>,
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct UnreadReport {
    /// `list events in shop`, …
    pub what: String,
    pub reason: String,
}

/// What a finding is built from: one explained subject and what cluster mode adds.
#[derive(Debug, Clone, Default)]
pub struct FindingInput {
    pub workload: Option<String>,
    pub pool: Option<String>,
    pub location: Option<WhereReport>,
    pub pull_secrets: Vec<PullSecretReport>,
    pub next_commands: Vec<String>,
}

/// Build the report: each subject explained as `explain` would, grouped, worst first.
pub fn findings_report(
    command: &'static str,
    explained: &[(Explained, FindingInput)],
    scope: Option<ScopeReport>,
    unread: Vec<UnreadReport>,
) -> FindingsReport {
    let built = explained.iter().filter_map(|(e, extra)| {
        let report = explain_report(&e.explanation)?;
        let seen = e
            .explanation
            .messages
            .iter()
            .filter_map(|(m, _)| m.seen.clone())
            .min();
        let s = &e.subject;
        Some((
            FindingReport {
                pod: PodReport {
                    namespace: s.namespace.clone(),
                    name: s.pod.clone().unwrap_or_default(),
                    node: s.node.clone(),
                    workload: extra.workload.clone(),
                },
                container: s.container.as_ref().map(|name| ContainerReport {
                    name: name.clone(),
                    kind: s.container_kind.map(|k| k.as_str()),
                    waiting_reason: s.waiting_reason.clone(),
                }),
                image: s.image.clone(),
                pool: extra.pool.clone(),
                report,
                location: extra.location.clone(),
                pull_secrets: extra.pull_secrets.clone(),
                next_commands: extra.next_commands.clone(),
            },
            seen,
        ))
    });
    // Group by (layer, host, pool), in order of first appearance; each finding past its group's
    // listing is counted and dropped as soon as it is grouped.
    let mut listed: Vec<FindingReport> = Vec::new();
    let mut groups: Vec<GroupReport> = Vec::new();
    for (f, seen) in built {
        let v = &f.report.verdict;
        let host = v.seen().and_then(|s| s.host.clone());
        let key = (v.layer(), host, f.pool.clone());
        let at = match groups
            .iter()
            .position(|g| (g.layer, g.host.clone(), g.pool.clone()) == key)
        {
            Some(at) => at,
            None => {
                groups.push(GroupReport {
                    layer: key.0,
                    decided: true,
                    host: key.1,
                    pool: key.2,
                    count: 0,
                    pods: Vec::new(),
                    nodes: Vec::new(),
                    first_seen: None,
                    findings: Vec::new(),
                    unlisted: 0,
                });
                groups.len() - 1
            }
        };
        let g = &mut groups[at];
        g.decided &= v.is_decided();
        g.count += 1;
        let pod = match &f.pod.namespace {
            Some(ns) => format!("{ns}/{}", f.pod.name),
            None => f.pod.name.clone(),
        };
        if !g.pods.contains(&pod) {
            g.pods.push(pod);
        }
        if let Some(node) = &f.pod.node
            && !g.nodes.contains(node)
        {
            g.nodes.push(node.clone());
        }
        if let Some(seen) = seen
            && g.first_seen.as_ref().is_none_or(|s| seen < *s)
        {
            g.first_seen = Some(seen);
        }
        if g.findings.len() < MAX_LISTED_PER_GROUP {
            g.findings.push(listed.len());
            listed.push(f);
        } else {
            g.unlisted += 1;
        }
    }
    groups.sort_by(worse_first);
    // Findings in group order; indices renumbered to match.
    let order: Vec<usize> = groups
        .iter()
        .flat_map(|g| g.findings.iter().copied())
        .collect();
    let mut slots: Vec<Option<FindingReport>> = listed.into_iter().map(Some).collect();
    let findings: Vec<FindingReport> = order.iter().filter_map(|&i| slots[i].take()).collect();
    let mut next = 0;
    for g in &mut groups {
        g.findings = (next..next + g.findings.len()).collect();
        next += g.findings.len();
    }
    let verdict = findings
        .first()
        .map_or(Verdict::Passed, |f| f.report.verdict.clone());
    FindingsReport {
        schema: FINDINGS_SCHEMA,
        command,
        verdict,
        scope,
        findings,
        groups,
        unread,
    }
}

/// Worst first: a decided failure before an undecided one (it names what to fix), then the
/// group that stops more pods, then the layer earlier on the pull path (it hides the later
/// ones), then by host and pool so the order is stable.
pub fn worse_first(a: &GroupReport, b: &GroupReport) -> Ordering {
    let layer_rank = |g: &GroupReport| {
        g.layer
            .and_then(|l| Layer::ALL.iter().position(|x| *x == l))
            .unwrap_or(Layer::ALL.len())
    };
    b.decided
        .cmp(&a.decided)
        .then(b.count.cmp(&a.count))
        .then(layer_rank(a).cmp(&layer_rank(b)))
        .then(a.host.cmp(&b.host))
        .then(a.pool.cmp(&b.pool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failure_text::{Message, Subject, explain_each};

    fn message(pod: &str, text: &str) -> Message {
        Message {
            text: text.into(),
            origin: "event".into(),
            subject: Subject {
                namespace: Some("shop".into()),
                pod: Some(pod.into()),
                ..Subject::default()
            },
            seen: Some(format!("2026-12-01T08:0{}:00Z", pod.len() % 10)),
        }
    }

    const DNS: &str = r#"Failed to pull image "r.example/a:1": rpc error: code = Unknown desc = failed to pull and unpack image "r.example/a:1": failed to resolve reference "r.example/a:1": failed to do request: Head "https://r.example/v2/a/manifests/1": dial tcp: lookup r.example on 10.0.0.10:53: no such host"#;
    const NOTFOUND: &str = r#"Failed to pull image "r.example/b:1": rpc error: code = NotFound desc = failed to pull and unpack image "r.example/b:1": failed to resolve reference "r.example/b:1": r.example/b:1: not found"#;

    #[test]
    fn the_larger_decided_group_comes_first_and_decides_the_verdict() {
        let explained = explain_each(vec![
            message("b-1", NOTFOUND),
            message("a-1", DNS),
            message("a-2", DNS),
        ]);
        let inputs: Vec<_> = explained
            .into_iter()
            .map(|e| (e, FindingInput::default()))
            .collect();
        let report = findings_report("explain", &inputs, None, Vec::new());
        assert_eq!(report.groups.len(), 2);
        assert_eq!(report.groups[0].layer, Some(Layer::Dns));
        assert_eq!(report.groups[0].count, 2);
        assert_eq!(report.groups[0].findings, vec![0, 1]);
        assert_eq!(report.groups[1].findings, vec![2]);
        assert_eq!(report.findings[2].pod.name, "b-1");
        assert_eq!(report.verdict.layer(), Some(Layer::Dns));
    }

    #[test]
    fn undecided_comes_after_decided_even_when_larger() {
        let g = |decided, count, layer| GroupReport {
            layer: Some(layer),
            decided,
            host: None,
            pool: None,
            count,
            pods: Vec::new(),
            nodes: Vec::new(),
            first_seen: None,
            findings: Vec::new(),
            unlisted: 0,
        };
        let mut groups = [
            g(false, 5, Layer::Other),
            g(true, 1, Layer::Tls),
            g(true, 1, Layer::Dns),
        ];
        groups.sort_by(worse_first);
        let layers: Vec<_> = groups.iter().map(|g| g.layer).collect();
        assert_eq!(
            layers,
            vec![Some(Layer::Dns), Some(Layer::Tls), Some(Layer::Other)]
        );
    }

    #[test]
    fn nothing_failing_is_a_pass() {
        let report = findings_report("scan", &[], None, Vec::new());
        assert!(report.verdict.is_passed());
        assert!(report.groups.is_empty());
    }
}
