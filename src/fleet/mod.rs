//! `pullpath fleet IMAGE`: a fresh pull checked from every node pool, on nodes nobody fixed by
//! hand. Kubernetes is the engine: pullpath only reads nodes, creates a short-lived probe pod
//! per chosen node, reads its log and deletes it.
//!
//! Data flows one way: the Nodes read → `select` (pools, the newest Ready node of each,
//! `eligibility` from the workload's scheduling rules) → `pod_spec` (one probe pod per node) →
//! `run` (create, wait, read the log, delete; the only networked part), reading each pod's
//! life through `life` (pure: a refused, unmountable, unadmitted or stuck pod is a run problem
//! for that node) → `answer` (the probe's report parsed back, or the probe pod's own pull
//! failure explained) → `report` (rows, pools, run problems, the worst eligible pool's verdict)
//! → `text` or JSON. With `--kubelet-pull`, `kubelet_pull` makes each node's second pod, the
//! kubelet's own pull, read beside the probe's answer.

pub mod answer;
pub mod deliver;
pub mod eligibility;
pub mod fresh;
pub mod kubelet_pull;
pub mod life;
pub mod nodeless;
pub mod pod_spec;
pub mod progress;
pub mod reads;
pub mod report;
pub mod run;
pub mod select;
pub mod text;

use std::future::Future;
use std::time::Instant;

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};

use crate::cluster::{self, ClusterError, ObjectRef, Target};
use crate::image_ref::ImageRef;
use eligibility::Constraints;
use kubelet_pull::KubeletPullPlan;
use pod_spec::PodPlan;
use report::FleetReport;
use run::RunSettings;
use select::Choice;

/// How the probe pods start: the one place it is decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeSource {
    /// `--probe-image`: each node pulls it like any image.
    Image(String),
    /// No registry (the default): an image each node holds, pullpath delivered through the API
    /// (`deliver`).
    Delivered(deliver::prepare::Given),
}

impl ProbeSource {
    /// The report's `probe_image`: the image, or how the probe reached the nodes.
    pub fn describe(&self) -> String {
        match self {
            ProbeSource::Image(image) => image.clone(),
            ProbeSource::Delivered(given) => format!(
                "none: pullpath delivered through the API, started from {}",
                given
                    .node_image
                    .as_deref()
                    .unwrap_or("each node's sandbox image")
            ),
        }
    }
}

/// The probe's source from `--probe-image`, `--node-image` and `--probe-binary ARCH=PATH`:
/// a probe image, else delivery through the API; a `--probe-binary` that is not `ARCH=PATH`
/// is refused.
pub fn probe_source(
    probe_image: Option<&str>,
    node_image: Option<&str>,
    probe_binaries: &[String],
) -> Result<ProbeSource, deliver::prepare::NotArchPath> {
    let given = |text: Option<&str>| {
        text.map(str::trim)
            .filter(|g| !g.is_empty())
            .map(str::to_string)
    };
    if let Some(image) = given(probe_image) {
        return Ok(ProbeSource::Image(image));
    }
    let mut binaries = std::collections::BTreeMap::new();
    for text in probe_binaries {
        let Some((arch, path)) = text
            .split_once('=')
            .filter(|(a, p)| !a.trim().is_empty() && !p.trim().is_empty())
        else {
            return Err(deliver::prepare::NotArchPath {
                given: text.clone(),
            });
        };
        binaries.insert(
            arch.trim().to_string(),
            std::path::PathBuf::from(path.trim()),
        );
    }
    Ok(ProbeSource::Delivered(deliver::prepare::Given {
        node_image: given(node_image),
        binaries,
    }))
}

/// Whether the probe image comes from `image`'s registry host (a delivered probe comes from
/// no registry).
pub fn probe_origin(image: &ImageRef, source: &ProbeSource) -> life::ProbeOrigin {
    let ProbeSource::Image(probe_image) = source else {
        return life::ProbeOrigin {
            same_registry: false,
            registry: String::new(),
        };
    };
    let registry = ImageRef::parse(probe_image)
        .map(|p| p.registry)
        .unwrap_or_else(|_| probe_image.to_string());
    life::ProbeOrigin {
        same_registry: registry == image.registry,
        registry,
    }
}

/// The validated settings of one run.
#[derive(Debug, Clone)]
pub struct FleetConfig {
    pub target: Target,
    pub image: String,
    pub probe: ProbeSource,
    /// `--probe-image-arch`: the architectures the probe image has; `None`: unknown.
    pub probe_arches: Option<Vec<String>>,
    pub probe_namespace: String,
    /// `--for`: the workload whose nodeSelector, affinity and tolerations decide eligibility.
    pub workload: Option<ObjectRef>,
    /// `--selector`: only nodes matching this label selector are read.
    pub selector: Option<String>,
    pub choice: Choice,
    pub full: bool,
    /// `--runtime-pull`: each probe pod also asks the node's runtime to pull over CRI.
    pub runtime_pull: bool,
    /// `--kubelet-pull`: after each probe pod, a pod in the workload's namespace that has the
    /// node's kubelet pull the image itself.
    pub kubelet_pull: bool,
    /// `--fresh-node`: each chosen pool also from a node its autoscaler creates for the run.
    pub fresh_node: bool,
    pub settings: RunSettings,
}

/// A run id: short, lower-case hex, unique enough to tell concurrent runs apart.
pub fn run_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let mixed = (nanos as u64) ^ (u64::from(std::process::id()) << 40);
    format!("{:010x}", mixed & 0xff_ffff_ffff)
}

/// What a run will do: every node read, each chosen or not, and a probe pod per chosen node.
pub struct Plan {
    pub run_id: String,
    pub candidates: Vec<select::NodeChoice>,
    pub pods: Vec<PodPlan>,
    /// Chosen nodes no probe pod is made for, and why (the probe image lacks their
    /// architecture; no image or binary to deliver).
    pub unprobed: Vec<(String, life::RunProblem)>,
    /// No registry: the binaries delivered through the API, one per architecture probed.
    pub payloads: Vec<deliver::Payload>,
    pub workload: Option<String>,
    /// The NodePools could not be read: pools without nodes may be missing from the run.
    pub node_pools_unread: Option<reads::NodePoolsUnread>,
    /// `--pools` entries that name no pool: no node of that name, no `LABEL=` to ask for one.
    pub unmatched_pools: Vec<String>,
    /// The workload's `imagePullSecrets` (names).
    pub pull_secrets: Vec<String>,
    client: kube::Client,
}

/// The architectures a probe pod can start on: the probe image's (`--probe-image-arch`; `None`
/// when unknown), or those pullpath can deliver a binary for (its own, `--probe-binary`).
fn startable_arches(config: &FleetConfig) -> Option<Vec<String>> {
    match &config.probe {
        ProbeSource::Image(_) => config.probe_arches.clone(),
        ProbeSource::Delivered(given) => {
            let own = crate::probe::oci::Platform::host().architecture;
            let others = given.binaries.keys().filter(|a| **a != own).cloned();
            Some(std::iter::once(own.clone()).chain(others).collect())
        }
    }
}

/// The chosen node's architecture when the probe image is known to lack it.
fn lacks_arch(candidate: &select::NodeChoice, has: Option<&[String]>) -> Option<life::RunProblem> {
    let (arch, has) = (candidate.arch.as_ref()?, has?);
    (!has.iter().any(|h| h.eq_ignore_ascii_case(arch))).then(|| {
        life::RunProblem::ProbeImageLacksArch {
            arch: arch.clone(),
            has: has.to_vec(),
        }
    })
}

/// Read the cluster (nodes, where the image runs, the `--for` workload) and choose the nodes;
/// creates nothing. `pullpath fleet --dry-run` prints the result.
pub async fn plan(config: &FleetConfig) -> Result<Plan, ClusterError> {
    let image = ImageRef::parse(&config.image).map_err(|e| {
        ClusterError::Config(format!("{:?} is not an image reference: {e}", config.image))
    })?;
    let session = cluster::read::connect(&config.target).await?;
    let client = session.client();
    // A refusal names fleet's RBAC, not the read-only one cluster mode points at.
    let fail = |e: kube::Error, what: &str| match ClusterError::from_kube(e, what, &session.server)
    {
        ClusterError::Forbidden { message } => ClusterError::Api {
            code: 403,
            what: what.to_string(),
            message: format!("{message}; see deploy/rbac-fleet.yaml"),
        },
        other => other,
    };
    let mut params = ListParams::default();
    if let Some(selector) = &config.selector {
        params = params.labels(selector);
    }
    let nodes = Api::<Node>::all(client.clone())
        .list(&params)
        .await
        .map_err(|e| fail(e, "list nodes (cluster scope)"))?
        .items;
    let namespace = config
        .target
        .namespace
        .clone()
        .unwrap_or_else(|| session.default_namespace.clone());
    // One get per namespace the run creates pods in, before any pod: the API refuses a pod in
    // a namespace that does not exist, or is being deleted, and would refuse every node's.
    reads::namespace_usable(&client, &config.probe_namespace, "probe namespace").await?;
    if config.kubelet_pull {
        reads::namespace_usable(&client, &namespace, "workload's namespace (--kubelet-pull)")
            .await?;
    }
    let (constraints, landed, workload, identity) = match &config.workload {
        None => (None, None, None, (None, Vec::new())),
        Some(object) => {
            let (what, spec, node) = reads::workload_spec(client.clone(), object, &namespace)
                .await
                .map_err(|unread| fail(unread.error, &unread.request))?;
            let identity = (
                spec.service_account_name.clone(),
                spec.image_pull_secrets
                    .iter()
                    .flatten()
                    .map(|s| s.name.clone())
                    .collect(),
            );
            (
                Some(Constraints::from_spec(&what, &spec)),
                node,
                Some(what),
                identity,
            )
        }
    };
    let running_on = reads::running_on(client.clone(), &image).await;
    let choice = Choice {
        also: landed.or_else(|| config.choice.also.clone()),
        ..config.choice.clone()
    };
    let mut candidates = select::choose(&nodes, &image, &running_on, constraints.as_ref(), &choice);
    // Pools with no node yet: a row each, and with --fresh-node a probe on the node their
    // autoscaler makes. A --selector names nodes, so it leaves them out.
    let with_nodes = nodeless::pools_with_nodes(&nodes);
    let (nodeless, node_pools_unread) = match &config.selector {
        Some(_) => (Vec::new(), None),
        None => {
            let (items, unread) = match reads::node_pools(&client).await {
                Ok(items) => (items, None),
                Err(unread) => (Vec::new(), Some(unread)),
            };
            let mut found = nodeless::from_node_pools(&items, &with_nodes, &choice.pools);
            found.extend(nodeless::from_pools_flag(&choice.pools, &with_nodes));
            (found, unread)
        }
    };
    let startable = startable_arches(config);
    candidates.extend(nodeless.iter().map(|pool| {
        let arch = pool.fresh_arch(startable.as_deref());
        pool.candidate(constraints.as_ref(), config.fresh_node, arch)
    }));
    let unmatched = nodeless::unmatched_pools(&choice.pools, &with_nodes, &nodeless);
    let id = run_id();
    let has = config.probe_arches.as_deref();
    // Probed where they are, and (--fresh-node) the pools with no node, on a node made for it.
    let chosen: Vec<&select::NodeChoice> = candidates
        .iter()
        .filter(|c| c.chosen || (c.nodeless && config.fresh_node))
        .collect();
    let (payloads, starts) = match &config.probe {
        ProbeSource::Image(image) => {
            let start = |c: &select::NodeChoice| match lacks_arch(c, has) {
                Some(problem) => Err(problem),
                None => Ok(pod_spec::Start::Image(image.clone())),
            };
            (Vec::new(), chosen.iter().map(|c| start(c)).collect())
        }
        ProbeSource::Delivered(given) => {
            let prepared = deliver::prepare::prepare(&id, &chosen, &nodes, given);
            let starts: Vec<_> = chosen
                .iter()
                .map(|c| match prepared.starts.get(&c.facts.name) {
                    Some(Ok(delivered)) => Ok(pod_spec::Start::Delivered(delivered.clone())),
                    Some(Err(problem)) => Err(problem.clone()),
                    None => Err(life::RunProblem::NoNodeImage),
                })
                .collect();
            (prepared.payloads, starts)
        }
    };
    let unprobed = chosen
        .iter()
        .zip(&starts)
        .filter_map(|(c, s)| Some((c.facts.name.clone(), s.clone().err()?)))
        .collect();
    let started: Vec<(&select::NodeChoice, pod_spec::Start)> = chosen
        .iter()
        .zip(starts)
        .filter_map(|(c, s)| Some((*c, s.ok()?)))
        .collect();
    let fresh = match config.fresh_node {
        false => Vec::new(),
        true => fresh::plans(&id, &started, &nodes, constraints.as_ref(), config),
    };
    let mut pods: Vec<PodPlan> = started
        .into_iter()
        .filter(|(c, _)| !c.nodeless)
        .enumerate()
        .map(|(i, (c, start))| PodPlan {
            kubelet_pull: config.kubelet_pull.then(|| KubeletPullPlan {
                name: format!("pullpath-fleet-{id}-{i}-kubelet"),
                namespace: namespace.clone(),
                node: c.facts.name.clone(),
                run_id: id.clone(),
                image: config.image.clone(),
                service_account: identity.0.clone(),
                pull_secrets: identity.1.clone(),
                deadline_seconds: config.settings.budgets.start.as_secs().max(10),
            }),
            name: format!("pullpath-fleet-{id}-{i}"),
            fresh: None,
            namespace: config.probe_namespace.clone(),
            node: c.facts.name.clone(),
            run_id: id.clone(),
            start,
            image: config.image.clone(),
            full: config.full,
            runtime_pull: config.runtime_pull,
            // activeDeadlineSeconds: the probe's own budget, not the run's.
            deadline_seconds: config.settings.budgets.probe.as_secs().max(10),
            runtime_version: c.facts.runtime.clone(),
        })
        .collect();
    pods.extend(fresh);
    Ok(Plan {
        run_id: id,
        candidates,
        node_pools_unread,
        unmatched_pools: unmatched,
        pods,
        unprobed,
        payloads,
        workload,
        pull_secrets: identity.1,
        client,
    })
}

/// Every object a plan's run would create as one `List` (what `kubectl apply -f` reads): the
/// delivered ConfigMaps first (their data elided), then the probe pods.
pub fn manifest(plan: &Plan, namespace: &str) -> serde_json::Value {
    let delivered = plan.payloads.iter().flat_map(|payload| {
        deliver::objects(&plan.run_id, payload)
            .into_iter()
            .map(|(name, key, bytes)| {
                let mut object = serde_json::to_value(deliver::config_map(
                    &plan.run_id,
                    namespace,
                    &name,
                    &key,
                    &[],
                ))
                .unwrap_or_default();
                object["binaryData"][&key] = format!(
                    "(elided: {} bytes of the {} pullpath binary)",
                    bytes.len(),
                    payload.arch
                )
                .into();
                object
            })
    });
    let items: Vec<serde_json::Value> = delivered
        .chain(
            plan.pods
                .iter()
                .flat_map(|p| {
                    let kubelet_pull = p.kubelet_pull.as_ref().map(kubelet_pull::pod);
                    std::iter::once(pod_spec::probe_pod(p)).chain(kubelet_pull)
                })
                .map(|pod| serde_json::to_value(pod).unwrap_or_default()),
        )
        .collect();
    serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items})
}

/// Read the cluster, probe the chosen nodes, report. `interrupt` ends the run early (its pods
/// are deleted all the same).
pub async fn fleet(
    config: &FleetConfig,
    interrupt: impl Future<Output = ()>,
) -> Result<FleetReport, ClusterError> {
    let started = Instant::now();
    let plan = plan(config).await?;
    let mut interrupt = std::pin::pin!(interrupt);
    let namespace = &config.probe_namespace;
    // No registry: the binaries first, shared by every probe pod of the run.
    let sent = if plan.payloads.is_empty() || plan.pods.is_empty() {
        None
    } else {
        let creating = deliver::send::create(&plan.client, namespace, &plan.run_id, &plan.payloads);
        let created = tokio::select! {
            created = creating => Some(created),
            () = &mut interrupt => None,
        };
        match created {
            Some(Ok(sent)) => Some(sent),
            Some(Err(why)) => {
                let _ = deliver::send::delete(&plan.client, namespace, &plan.run_id).await;
                return Err(ClusterError::Api {
                    code: 0,
                    what: format!("create configmaps in {namespace}"),
                    message: format!("{why} (see deploy/rbac-fleet.yaml)"),
                });
            }
            // Interrupted: the pods are not created; the run below ends at once.
            None => None,
        }
    };
    let mut outcome = run::run(
        plan.client.clone(),
        &config.settings,
        &plan.run_id,
        plan.pods.clone(),
        interrupt,
    )
    .await;
    if !plan.payloads.is_empty() {
        let deleted = deliver::send::delete(&plan.client, namespace, &plan.run_id).await;
        outcome.cleanup = run::Cleanup::both(outcome.cleanup, deleted);
    }
    outcome
        .runs
        .extend(plan.unprobed.iter().map(|(node, problem)| {
            run::NodeRun {
                node: node.clone(),
                pod: String::new(),
                answer: answer::Answer::Problem(problem.clone()),
                kubelet_pull: None,
                elapsed: std::time::Duration::ZERO,
                // A pool with no node stands as its fresh node's row.
                fresh: plan
                    .candidates
                    .iter()
                    .find(|c| c.nodeless && c.facts.name == *node)
                    .map(|c| run::FreshRun {
                        pool: c.pool.clone(),
                        beside: node.clone(),
                        ..run::FreshRun::default()
                    }),
            }
        }));
    if let Some(refused) = none_created(&outcome, &config.probe_namespace) {
        return Err(refused);
    }
    let header = report::Header {
        image: config.image.clone(),
        run_id: plan.run_id.clone(),
        probe_namespace: config.probe_namespace.clone(),
        probe_image: config.probe.describe(),
        probe_arches: config.probe_arches.clone(),
        delivery: match &config.probe {
            ProbeSource::Image(_) => None,
            ProbeSource::Delivered(_) => Some(report::DeliveryReport::new(&plan.payloads, sent)),
        },
        workload: plan.workload.clone(),
        pull_secrets: plan.pull_secrets.clone(),
        node_pools_unread: plan.node_pools_unread.as_ref().map(|u| u.to_string()),
        unmatched_pools: plan.unmatched_pools.clone(),
        now: now(),
        elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    };
    Ok(report::build(header, &plan.candidates, &outcome))
}

/// `pullpath fleet --cleanup`: delete every probe pod pullpath left in the probe namespace.
pub async fn cleanup(target: &Target, probe_namespace: &str) -> Result<run::Cleanup, ClusterError> {
    let session = cluster::read::connect(target).await?;
    let api: Api<Pod> = Api::namespaced(session.client(), probe_namespace);
    let selector = format!("{}={}", pod_spec::MANAGED_BY.0, pod_spec::MANAGED_BY.1);
    let failed = |message| ClusterError::Api {
        code: 0,
        what: format!("delete pods and configmaps in {probe_namespace} ({selector})"),
        message,
    };
    let pods = run::delete_run(&api, &selector).await;
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(session.client(), probe_namespace);
    run::Cleanup::both(pods, run::delete_run(&maps, &selector).await)
        .map_err(|refused| failed(refused.to_string()))
}

/// When the API refused every probe pod, fleet cannot work at all: that is pullpath's own
/// error (exit 70), not a finding about the nodes.
fn none_created(outcome: &run::RunOutcome, namespace: &str) -> Option<ClusterError> {
    let mut refusals = outcome.runs.iter().map(|r| match &r.answer {
        answer::Answer::NotCreated { code, why } => Some((*code, why.clone())),
        _ => None,
    });
    let (code, why) = refusals.next()??;
    if !refusals.all(|r| r.is_some()) {
        return None;
    }
    Some(ClusterError::Api {
        code: code.unwrap_or(0),
        what: format!("create pods in {namespace}"),
        message: format!(
            "{why} (every probe pod was refused: see deploy/rbac-fleet.yaml and deploy/namespace.yaml)"
        ),
    })
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests;
