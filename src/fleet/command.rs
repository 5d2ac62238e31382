//! `pullpath fleet` as a whole: the plan, the delivered binaries sent, the run, the chosen
//! nodes that could not start standing as rows of their own, and the report; and
//! `pullpath fleet --cleanup`.

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ListParams};

use super::answer::Answer;
use super::config::{FleetConfig, ProbeSource};
use super::deliver;
use super::owner;
use super::plan::{Plan, plan};
use super::pod_base::{COMPONENT_LABEL, KUBELET_PULL_COMPONENT, MANAGED_BY};
use super::report::{self, FleetReport};
use super::run::{self, FreshRun, NodeRun, RunOutcome};
use super::run_objects::{Cleanup, RunObjectsRefused, api_error, delete_run};
use crate::cluster::{self, ClusterError, Target};

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
    admitted(&plan, namespace).await?;
    // No pod, no owner: nothing would name it.
    let (owned, unowned) = if plan.pods.is_empty() {
        (None, None)
    } else {
        let deadline = config.settings.deadline;
        match owner::create(&plan.client, namespace, &plan.run_id, deadline).await {
            Ok(owner) => (Some(owner), None),
            Err(why) => (None, Some(why)),
        }
    };
    let sent = send_binaries(&plan, namespace, owned.as_ref(), &mut interrupt).await?;
    let mut outcome = run::run(
        plan.client.clone(),
        &config.settings,
        &plan.run_id,
        plan.pods.clone(),
        owned.clone(),
        interrupt,
    )
    .await;
    if !plan.payloads.is_empty() {
        let deleted = deliver::send::delete(&plan.client, namespace, &plan.run_id).await;
        outcome.cleanup = Cleanup::both(outcome.cleanup, deleted);
    }
    if let Some(owner) = &owned {
        owner::delete(&plan.client, namespace, owner).await;
    }
    outcome.runs.extend(unprobed_runs(&plan));
    if let Some(refused) = none_created(&outcome, &config.probe_namespace) {
        return Err(refused);
    }
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let header = header(config, &plan, sent, now(), elapsed_ms);
    let mut report = report::build(header, &plan.candidates, &outcome);
    report.cleanup.unowned = unowned.map(|why| why.to_string());
    Ok(report)
}

/// No registry: the binaries first, shared by every probe pod of the run; what was sent, or
/// `None` when nothing is to be sent or the run was interrupted meanwhile (its pods are then
/// not created: the run ends at once). A refusal ends the run before any pod.
async fn send_binaries(
    plan: &Plan,
    namespace: &str,
    owner: Option<&OwnerReference>,
    interrupt: &mut (impl Future<Output = ()> + Unpin),
) -> Result<Option<deliver::send::Sent>, ClusterError> {
    if plan.payloads.is_empty() || plan.pods.is_empty() {
        return Ok(None);
    }
    let creating =
        deliver::send::create(&plan.client, namespace, &plan.run_id, &plan.payloads, owner);
    let created = tokio::select! {
        created = creating => created,
        () = interrupt => return Ok(None),
    };
    match created {
        Ok(sent) => Ok(Some(sent)),
        Err(why) => {
            let _ = deliver::send::delete(&plan.client, namespace, &plan.run_id).await;
            Err(ClusterError::Api {
                code: 0,
                what: format!("create configmaps in {namespace}"),
                message: format!("{why} (see deploy/rbac-fleet.yaml)"),
            })
        }
    }
}

/// Before any object is made: the run's first delivered ConfigMap (the first stage) and its
/// first probe pod, created with `dryRun=All` (admission runs, nothing is stored), so that a
/// cluster whose admission policies would refuse them (deploy/admission-policy.yaml pins a
/// release's binary and stage) refuses the run before it starts, naming the policy and its rule,
/// instead of after the binaries were sent. A webhook's or Pod Security's refusal, and any other
/// error, is left to the run, which words it per node as before.
async fn admitted(plan: &Plan, namespace: &str) -> Result<(), ClusterError> {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::PostParams;
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let refused = |what: String, e: kube::Error| {
        match &e {
        kube::Error::Api(status) => super::life::admission_refusal(status.code, &status.message)
            .filter(|refusal| matches!(refusal, super::run_problem::Refusal::Policy { .. }))
            .map(|refusal| ClusterError::Api {
                code: status.code,
                what,
                message: format!(
                    "not started: {} (docs/security.md: the policy admits a release's binaries; `scripts/render-deploy.sh` pins them)",
                    super::run_problem::RunProblem::Refused(refusal).describe()
                ),
            }),
        _ => None,
    }
    };
    let Some(first) = plan.pods.first() else {
        return Ok(());
    };
    if let Some(payload) = plan.payloads.first()
        && let Some((name, key, bytes)) = deliver::objects(&plan.run_id, payload).into_iter().next()
    {
        let object = deliver::config_map(&plan.run_id, namespace, &name, &key, bytes);
        let api: Api<ConfigMap> = Api::namespaced(plan.client.clone(), namespace);
        if let Err(e) = api.create(&dry_run, &object).await
            && let Some(refusal) = refused(format!("create configmap {name} (dry run)"), e)
        {
            return Err(refusal);
        }
    }
    let api: Api<Pod> = Api::namespaced(plan.client.clone(), namespace);
    let pod = super::pod_spec::probe_pod(first);
    match api.create(&dry_run, &pod).await {
        Err(e) => match refused(format!("create pod {} (dry run)", first.name), e) {
            Some(refusal) => Err(refusal),
            None => Ok(()),
        },
        Ok(_) => Ok(()),
    }
}

/// A run of its own for each chosen node no probe pod was made for: its problem as the answer.
/// A pool with no node stands as its fresh node's row.
pub fn unprobed_runs(plan: &Plan) -> Vec<NodeRun> {
    plan.unprobed
        .iter()
        .map(|(node, problem)| NodeRun {
            node: Some(node.clone()),
            pod: String::new(),
            answer: Answer::Problem(problem.clone()),
            kubelet_pull: None,
            node_image: None,
            elapsed: std::time::Duration::ZERO,
            fresh: plan
                .candidates
                .iter()
                .find(|c| c.nodeless && c.facts.name == *node)
                .map(|c| FreshRun {
                    pool: c.pool.clone(),
                    beside: node.clone(),
                    ..FreshRun::default()
                }),
        })
        .collect()
}

/// The report's header: what was asked, how the probe came to the nodes, when and how long.
fn header(
    config: &FleetConfig,
    plan: &Plan,
    sent: Option<deliver::send::Sent>,
    now: i64,
    elapsed_ms: u64,
) -> report::Header {
    report::Header {
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
        now,
        elapsed_ms,
    }
}

/// What `pullpath fleet --cleanup` removed: pullpath's probe pods and delivered ConfigMaps in the
/// probe namespace, and the `--kubelet-pull` pods a killed run left in workload namespaces.
#[derive(Debug)]
pub struct CleanupDone {
    pub probe_namespace: Cleanup,
    /// Each workload namespace that held kubelet-pull pods, and how deleting them went (the
    /// fleet role reaches a workload namespace only where an admin applied its kubelet-pull Role).
    pub kubelet_pull: Vec<(String, Result<Cleanup, RunObjectsRefused>)>,
    /// Why the kubelet-pull pods of other namespaces could not be looked for.
    pub kubelet_pull_unlisted: Option<String>,
}

/// `pullpath fleet --cleanup`: delete every probe pod and delivered ConfigMap pullpath left in
/// the probe namespace, then the kubelet-pull pods it left elsewhere (found cluster-wide by their
/// component label: only those, never another pod of pullpath's).
pub async fn cleanup(target: &Target, probe_namespace: &str) -> Result<CleanupDone, ClusterError> {
    let session = cluster::read::connect(target).await?;
    let api: Api<Pod> = Api::namespaced(session.client(), probe_namespace);
    let selector = format!("{}={}", MANAGED_BY.0, MANAGED_BY.1);
    // The API server's status when it answered; its address and the cause when it did not.
    let failed = |refused: RunObjectsRefused| {
        let answer = match &refused {
            RunObjectsRefused::Delete { error, .. } => Some(error.as_ref()),
            _ => None,
        };
        if let Some(cause) = answer.and_then(cluster::unanswered) {
            return ClusterError::Unreachable {
                server: session.server.clone(),
                cause,
            };
        }
        ClusterError::Api {
            code: match answer {
                Some(kube::Error::Api(status)) => status.code,
                _ => 0,
            },
            what: format!("delete pods, configmaps and jobs in {probe_namespace} ({selector})"),
            message: refused.to_string(),
        }
    };
    let pods = delete_run(&api, &selector).await;
    let maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(session.client(), probe_namespace);
    let owners: Api<k8s_openapi::api::batch::v1::Job> =
        Api::namespaced(session.client(), probe_namespace);
    let maps = delete_run(&maps, &selector).await;
    // The killed runs' owner Jobs go too; they are not what the count answers (probe objects).
    let owners = delete_run(&owners, &selector).await.map(|_| Cleanup {
        deleted: 0,
        remaining: 0,
        unverified: None,
    });
    let probe = Cleanup::both(Cleanup::both(pods, maps), owners).map_err(failed)?;
    let kubelet_pull = format!("{selector},{COMPONENT_LABEL}={KUBELET_PULL_COMPONENT}");
    let everywhere: Api<Pod> = Api::all(session.client());
    let (mut done, mut unlisted) = (Vec::new(), None);
    match everywhere
        .list(&ListParams::default().labels(&kubelet_pull))
        .await
    {
        Ok(list) => {
            let namespaces: BTreeSet<String> = list
                .items
                .into_iter()
                .filter_map(|pod| pod.metadata.namespace)
                .filter(|ns| ns != probe_namespace)
                .collect();
            for namespace in namespaces {
                let api: Api<Pod> = Api::namespaced(session.client(), &namespace);
                done.push((namespace, delete_run(&api, &kubelet_pull).await));
            }
        }
        Err(e) => {
            unlisted = Some(format!(
                "cannot list kubelet-pull pods in every namespace ({kubelet_pull}): {}",
                api_error(&e)
            ))
        }
    }
    Ok(CleanupDone {
        probe_namespace: probe,
        kubelet_pull: done,
        kubelet_pull_unlisted: unlisted,
    })
}

/// When the API refused every probe pod, fleet cannot work at all: that is pullpath's own
/// error (exit 70), not a finding about the nodes.
fn none_created(outcome: &RunOutcome, namespace: &str) -> Option<ClusterError> {
    let mut refusals = outcome.runs.iter().map(|r| match &r.answer {
        Answer::NotCreated { code, why } => Some((*code, why.clone())),
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
