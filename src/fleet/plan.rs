//! What a run will do, decided before anything is created: the cluster read once (its nodes,
//! where the image runs, the `--for` workload, the NodePools), then pure steps — the nodes
//! chosen and the pools with no node yet, how each chosen node's probe starts (or the problem
//! that keeps it from starting), and a probe pod per chosen node (with `--fresh-node`, one per
//! pool on a node its autoscaler makes). `pullpath fleet --dry-run` prints the result.

use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams};

use super::config::{FleetConfig, ProbeSource};
use super::deliver;
use super::eligibility::Constraints;
use super::fresh::{self, FreshPlacement};
use super::kubelet_pull::{self, KubeletPullPlan};
use super::nodeless::{self, NodelessPool};
use super::pod_spec::{self, PodPlan, Start};
use super::reads::{self, NodePoolsUnread};
use super::run_problem::RunProblem;
use super::select::{self, Choice, NodeChoice};
use crate::cluster::{self, ClusterError};
use crate::image_ref::ImageRef;

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
    pub candidates: Vec<NodeChoice>,
    pub pods: Vec<PodPlan>,
    /// Chosen nodes no probe pod is made for, and why (the probe image lacks their
    /// architecture; no image or binary to deliver).
    pub unprobed: Vec<(String, RunProblem)>,
    /// No registry: the binaries delivered through the API, one per architecture probed.
    pub payloads: Vec<deliver::Payload>,
    pub workload: Option<String>,
    /// The NodePools could not be read: pools without nodes may be missing from the run.
    pub node_pools_unread: Option<NodePoolsUnread>,
    /// `--pools` entries that name no pool: no node of that name, no `LABEL=` to ask for one.
    pub unmatched_pools: Vec<String>,
    /// The workload's `imagePullSecrets` (names).
    pub pull_secrets: Vec<String>,
    pub(super) client: kube::Client,
}

/// What `--for` says of the workload; all empty without one.
#[derive(Debug, Clone, Default)]
pub struct Workload {
    /// `kind/name`, as the report names it.
    pub what: Option<String>,
    /// Its nodeSelector, affinity and tolerations.
    pub constraints: Option<Constraints>,
    /// The node a `--for pod/NAME` landed on: always probed.
    pub landed: Option<String>,
    /// Its `serviceAccountName` and `imagePullSecrets` (names): the kubelet-pull pod's own.
    pub service_account: Option<String>,
    pub pull_secrets: Vec<String>,
}

/// Everything the cluster said before the run decides anything.
pub struct ClusterRead {
    pub nodes: Vec<Node>,
    /// The workload's namespace (`-n`, else the context's): the kubelet-pull pods' own.
    pub namespace: String,
    pub workload: Workload,
    /// The nodes a pod runs the image on now.
    pub running_on: std::collections::BTreeSet<String>,
    /// The images each node's running containers use (no registry: what a probe pod may start
    /// from), from the same list of pods.
    pub held: deliver::node_image::Held,
    /// The NodePools; `None`: not asked (`--selector` names nodes, so it leaves them out).
    pub node_pools: Option<Result<Vec<serde_json::Value>, NodePoolsUnread>>,
}

/// Read the cluster (nodes, where the image runs, the `--for` workload) and choose the nodes;
/// creates nothing. `pullpath fleet --dry-run` prints the result.
pub async fn plan(config: &FleetConfig) -> Result<Plan, ClusterError> {
    let image = ImageRef::parse(&config.image).map_err(|e| {
        ClusterError::Config(format!("{:?} is not an image reference: {e}", config.image))
    })?;
    let session = cluster::read::connect(&config.target).await?;
    let client = session.client();
    let read = read_cluster(config, &image, &client, &session).await?;
    Ok(decide(config, &image, read, run_id(), client))
}

/// The cluster's answers, in the order a refusal is best named: the nodes, the namespaces the
/// run creates pods in, the workload, where the image runs, the NodePools.
async fn read_cluster(
    config: &FleetConfig,
    image: &ImageRef,
    client: &kube::Client,
    session: &cluster::read::Session,
) -> Result<ClusterRead, ClusterError> {
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
    reads::namespace_usable(client, &config.probe_namespace, "probe namespace").await?;
    if config.kubelet_pull {
        reads::namespace_usable(client, &namespace, "workload's namespace (--kubelet-pull)")
            .await?;
    }
    let workload = match &config.workload {
        None => Workload::default(),
        Some(object) => {
            let (what, spec, landed) = reads::workload_spec(client.clone(), object, &namespace)
                .await
                .map_err(|unread| fail(unread.error, &unread.request))?;
            Workload {
                constraints: Some(Constraints::from_spec(&what, &spec)),
                service_account: spec.service_account_name.clone(),
                pull_secrets: spec
                    .image_pull_secrets
                    .iter()
                    .flatten()
                    .map(|s| s.name.clone())
                    .collect(),
                what: Some(what),
                landed,
            }
        }
    };
    let pods = reads::pods(client.clone()).await;
    let running_on = pods
        .as_ref()
        .map(|pods| reads::running_on(pods, image))
        .unwrap_or_default();
    let held = match &pods {
        Ok(pods) => deliver::node_image::Held {
            running: deliver::node_image::running_images(pods),
            pods_unread: None,
        },
        Err(why) => deliver::node_image::Held {
            running: Default::default(),
            pods_unread: Some(why.to_string()),
        },
    };
    let node_pools = match &config.selector {
        Some(_) => None,
        None => Some(reads::node_pools(client).await),
    };
    Ok(ClusterRead {
        nodes,
        namespace,
        workload,
        running_on,
        held,
        node_pools,
    })
}

/// The run decided from what the cluster said: which nodes, how each probe starts, its pods.
pub fn decide(
    config: &FleetConfig,
    image: &ImageRef,
    read: ClusterRead,
    id: String,
    client: kube::Client,
) -> Plan {
    let ClusterRead {
        nodes,
        namespace,
        workload,
        running_on,
        held,
        node_pools,
    } = read;
    let choice = Choice {
        also: workload
            .landed
            .clone()
            .or_else(|| config.choice.also.clone()),
        ..config.choice.clone()
    };
    let with_nodes = nodeless::pools_with_nodes(&nodes);
    let nodeless = nodeless_pools(node_pools.as_ref(), &with_nodes, &choice.pools);
    let candidates = candidates(
        config,
        &nodes,
        image,
        &running_on,
        &workload,
        &choice,
        &nodeless,
    );
    // Probed where they are, and (--fresh-node) the pools with no node, on a node made for it.
    let chosen: Vec<&NodeChoice> = candidates
        .iter()
        .filter(|c| c.chosen || (c.nodeless && config.fresh_node))
        .collect();
    let (payloads, starts) = starts(config, &id, &chosen, &nodes, &held);
    let Sorted { unprobed, started } = sort_by_start(&chosen, starts);
    let mut pods = pinned_pods(config, &id, &started, &namespace, &workload);
    if config.fresh_node {
        let constraints = workload.constraints.as_ref();
        pods.extend(fresh_pods(
            config,
            &id,
            &started,
            &nodes,
            constraints,
            &nodeless,
        ));
    }
    let unmatched_pools = nodeless::unmatched_pools(&choice.pools, &with_nodes, &nodeless);
    Plan {
        run_id: id,
        node_pools_unread: node_pools.and_then(Result::err),
        unmatched_pools,
        pods,
        unprobed,
        payloads,
        workload: workload.what,
        pull_secrets: workload.pull_secrets,
        candidates,
        client,
    }
}

/// The pools with no node yet: the NodePools read (none when not asked) that no node is in,
/// and `--pools LABEL=VALUE` entries no node matches.
pub fn nodeless_pools(
    node_pools: Option<&Result<Vec<serde_json::Value>, NodePoolsUnread>>,
    with_nodes: &[(String, String)],
    pools: &[String],
) -> Vec<NodelessPool> {
    let Some(read) = node_pools else {
        return Vec::new();
    };
    let items = read.as_ref().map_or(&[][..], Vec::as_slice);
    let mut found = nodeless::from_node_pools(items, with_nodes, pools);
    found.extend(nodeless::from_pools_flag(pools, with_nodes));
    found
}

/// Every node read, chosen or not, then a row per pool with no node: with `--fresh-node` a
/// probe on the node its autoscaler makes.
pub fn candidates(
    config: &FleetConfig,
    nodes: &[Node],
    image: &ImageRef,
    running_on: &std::collections::BTreeSet<String>,
    workload: &Workload,
    choice: &Choice,
    nodeless: &[NodelessPool],
) -> Vec<NodeChoice> {
    let constraints = workload.constraints.as_ref();
    let mut candidates = select::choose(nodes, image, running_on, constraints, choice);
    let startable = startable_arches(config);
    candidates.extend(nodeless.iter().map(|pool| {
        let arch = pool.fresh_arch(startable.as_deref());
        pool.candidate(constraints, config.fresh_node, arch)
    }));
    candidates
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
fn lacks_arch(candidate: &NodeChoice, has: Option<&[String]>) -> Option<RunProblem> {
    let (arch, has) = (candidate.arch.as_ref()?, has?);
    (!has.iter().any(|h| h.eq_ignore_ascii_case(arch))).then(|| RunProblem::ProbeImageLacksArch {
        arch: arch.clone(),
        has: has.to_vec(),
    })
}

/// How each `chosen` node's probe starts, or the problem that keeps it from starting; with no
/// registry, the binaries to deliver (one per architecture).
pub fn starts(
    config: &FleetConfig,
    id: &str,
    chosen: &[&NodeChoice],
    nodes: &[Node],
    held: &deliver::node_image::Held,
) -> (Vec<deliver::Payload>, Vec<Result<Start, RunProblem>>) {
    match &config.probe {
        ProbeSource::Image(image) => {
            let has = config.probe_arches.as_deref();
            let start = |c: &NodeChoice| match lacks_arch(c, has) {
                Some(problem) => Err(problem),
                None => Ok(Start::Image(image.clone())),
            };
            (Vec::new(), chosen.iter().map(|c| start(c)).collect())
        }
        ProbeSource::Delivered(given) => {
            let prepared = deliver::prepare::prepare(id, chosen, nodes, held, given);
            let starts = chosen
                .iter()
                .map(|c| match prepared.starts.get(&c.facts.name) {
                    Some(Ok(delivered)) => Ok(Start::Delivered(delivered.clone())),
                    Some(Err(problem)) => Err(problem.clone()),
                    None => Err(RunProblem::NoNodeImage {
                        pods_unread: held.pods_unread.clone(),
                    }),
                })
                .collect();
            (prepared.payloads, starts)
        }
    }
}

/// A run's chosen nodes, by their starts.
pub struct Sorted<'a> {
    /// Those that cannot start, by name, with why.
    pub unprobed: Vec<(String, RunProblem)>,
    /// Those that can, with their start.
    pub started: Vec<(&'a NodeChoice, Start)>,
}

/// Sort `chosen` nodes by their `starts` (one each, in order).
pub fn sort_by_start<'a>(
    chosen: &[&'a NodeChoice],
    starts: Vec<Result<Start, RunProblem>>,
) -> Sorted<'a> {
    let mut sorted = Sorted {
        unprobed: Vec::new(),
        started: Vec::new(),
    };
    for (c, start) in chosen.iter().zip(starts) {
        match start {
            Ok(start) => sorted.started.push((*c, start)),
            Err(problem) => sorted.unprobed.push((c.facts.name.clone(), problem)),
        }
    }
    sorted
}

/// A probe pod pinned to each started node that exists (a pool with no node has only its
/// fresh pod), with `--kubelet-pull` its kubelet-pull pod in the workload's `namespace`.
pub fn pinned_pods(
    config: &FleetConfig,
    id: &str,
    started: &[(&NodeChoice, Start)],
    namespace: &str,
    workload: &Workload,
) -> Vec<PodPlan> {
    started
        .iter()
        .filter(|(c, _)| !c.nodeless)
        .enumerate()
        .map(|(i, (c, start))| PodPlan {
            kubelet_pull: config.kubelet_pull.then(|| KubeletPullPlan {
                name: format!("pullpath-fleet-{id}-{i}-kubelet"),
                namespace: namespace.to_string(),
                node: c.facts.name.clone(),
                run_id: id.to_string(),
                image: config.image.clone(),
                service_account: workload.service_account.clone(),
                pull_secrets: workload.pull_secrets.clone(),
                deadline_seconds: config.settings.budgets.start.as_secs().max(10),
            }),
            ..probe_pod(config, id, format!("pullpath-fleet-{id}-{i}"), c, start)
        })
        .collect()
}

/// The probe pod `name` for `candidate`'s node, pinned to it; fresh or with a kubelet-pull
/// pod, its caller says so.
fn probe_pod(
    config: &FleetConfig,
    id: &str,
    name: String,
    candidate: &NodeChoice,
    start: &Start,
) -> PodPlan {
    PodPlan {
        name,
        namespace: config.probe_namespace.clone(),
        node: candidate.facts.name.clone(),
        fresh: None,
        run_id: id.to_string(),
        start: start.clone(),
        image: config.image.clone(),
        full: config.full,
        runtime_pull: config.runtime_pull,
        // activeDeadlineSeconds: the probe's own budget, not the run's.
        deadline_seconds: config.settings.budgets.probe.as_secs().max(10),
        runtime_version: candidate.facts.runtime.clone(),
        kubelet_pull: None,
    }
}

/// Per chosen pool, a fresh probe pod beside its newest probed node (`started`, each with its
/// start): the same start (a pool's nodes share their image and architecture), placed on a
/// node the autoscaler creates. A pool without a pool label gets none: there is nothing to ask
/// a node for.
pub fn fresh_pods(
    config: &FleetConfig,
    id: &str,
    started: &[(&NodeChoice, Start)],
    nodes: &[Node],
    constraints: Option<&Constraints>,
    nodeless: &[NodelessPool],
) -> Vec<PodPlan> {
    let existing: Vec<String> = nodes
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    // The pool's own taints: those its nodes share, else (no node yet) its NodePool's.
    let pool_taints = |pool: &str| {
        let members: Vec<&Node> = nodes
            .iter()
            .filter(|n| select::pool_of(&crate::pod::node::facts(n)) == pool)
            .collect();
        match members.is_empty() {
            false => fresh::shared_taints(&members),
            true => nodeless
                .iter()
                .find(|p| p.name == pool)
                .map(|p| p.taints.clone())
                .unwrap_or_default(),
        }
    };
    let workload = constraints.map(|k| k.tolerations.as_slice());
    let mut pools = std::collections::BTreeSet::new();
    started
        .iter()
        .filter(|(c, _)| pools.insert(c.pool.clone()))
        .filter_map(|(c, start)| Some((c, start, c.facts.pool.clone()?)))
        .enumerate()
        .map(|(i, (c, start, pool_label))| PodPlan {
            fresh: Some(FreshPlacement {
                pool_label,
                existing: existing.clone(),
                tolerations: fresh::tolerations(workload, &pool_taints(&c.pool)),
                arch: c.arch.clone(),
            }),
            ..probe_pod(
                config,
                id,
                format!("pullpath-fleet-{id}-fresh-{i}"),
                c,
                start,
            )
        })
        .collect()
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

#[cfg(test)]
mod tests;
