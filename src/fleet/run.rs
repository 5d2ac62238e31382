//! The run: the only networked part of fleet. Probe pods are created with bounded parallelism
//! under one overall deadline; one lister reads every pod of the run (by its run label) and the
//! probe namespace's pod events each poll interval, and each node's task hands what it sees of
//! its pod to `life::read` (pure) until that decides: a finished pod (its log is read), the
//! probe image's own pull failure, or a run problem (a refused, unmountable, unadmitted pod, one
//! that never starts or overruns the probe's deadline) named the poll it shows. The pod is then
//! deleted. Whatever ends the run — every node answered, the deadline, or an interrupt — every
//! pod of the run is then deleted by its run label.
//!
//! Requests: per node one create, one log read, one delete; per run two lists per poll interval
//! (the run's pods, the namespace's pod events; not one get per pod: a 1,000-node run costs a
//! few thousand requests, not tens of thousands), and a watch of the run's pods, renewed within
//! the client's request timeout, so that a finished pod is read the moment the kubelet reports
//! it instead of up to a poll interval later (a run of many waves pays that once per wave). The
//! lists stay the ground truth: a watch the API refuses or drops only costs that latency.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Client;
use kube::api::{Api, LogParams, PostParams};

use super::answer::{self, Answer, CreateRefused, Ended, Missing};
use super::config::RunSettings;
use super::ending::Ending;
use super::kubelet_pull::{KubeletPull, KubeletPullPlan};
use super::life::{self, Clocks, Reading};
use super::pod_base;
use super::pod_spec::{self, PodPlan};
use super::progress::{Doing, tell};
use super::run_objects::{Cleanup, RunObjectsRefused, api_error, at_once, delete_run};
use super::run_problem::RunProblem;

mod fresh_node;
mod kubelet;
mod watch;

use kubelet::kubelet_pull_on;
use watch::{GONE_AFTER_LISTS, Seen, poll_lists, watch_pods};

/// A pod log beyond this is not a probe report (the report is a few KiB).
const MAX_LOG_BYTES: i64 = 4 << 20;

/// One node's answer and how long it took (pod created → answer read).
#[derive(Debug, Clone)]
pub struct NodeRun {
    /// The node asked: the one its pod was pinned to, or the fresh node it was scheduled on
    /// (`None`: none came).
    pub node: Option<String>,
    pub pod: String,
    pub answer: Answer,
    /// `--kubelet-pull`: the kubelet's own pull on that node.
    pub kubelet_pull: Option<(KubeletPullPlan, KubeletPull)>,
    pub elapsed: Duration,
    /// `--fresh-node`: how the pod came to its node.
    pub fresh: Option<FreshRun>,
    /// No registry: the image the node held that the probe pod started from, and why.
    pub node_image: Option<super::deliver::node_image::NodeImage>,
}

/// A fresh probe pod's way to its node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FreshRun {
    /// The pool it asked for, and the newest existing node it stands beside.
    pub pool: String,
    pub beside: String,
    /// How long it waited for a node (pod created → bound).
    pub waited: Duration,
    /// The scheduler's and the autoscaler's words, in order, each once.
    pub said: Vec<String>,
    /// The new node's creation and Ready times (RFC 3339), as its Node object gives them.
    pub node_created: Option<String>,
    pub node_ready: Option<String>,
    /// A startup taint the new node still carried when read after the bind.
    pub still_starting: Option<String>,
}

#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// One per plan, in plan order.
    pub runs: Vec<NodeRun>,
    pub ending: Ending,
    /// Probe pods deleted by the final cleanup, or why it failed.
    pub cleanup: Result<Cleanup, RunObjectsRefused>,
    /// Why the probe pods' events could not be read, when they could not.
    pub events_unread: Option<String>,
}

/// Probe every plan's node; `interrupt` resolving ends the run early. The sequence: the
/// lister and a task per node start together, the first of every answer, the deadline and the
/// interrupt ends the wait, every pod of the run is deleted, and each node without an answer
/// is told why.
pub async fn run(
    client: Client,
    settings: &RunSettings,
    run_id: &str,
    plans: Vec<PodPlan>,
    owner: Option<OwnerReference>,
    interrupt: impl Future<Output = ()>,
) -> RunOutcome {
    let api: Api<Pod> = Api::namespaced(client, &settings.namespace);
    let deadline = Instant::now() + settings.deadline;
    let selector = format!("{}={run_id}", pod_base::RUN_LABEL);
    let (seen_tx, seen_rx) = tokio::sync::watch::channel(Seen::default());
    let names: BTreeSet<String> = plans.iter().map(|p| p.name.clone()).collect();
    let lister = async {
        tokio::join!(
            poll_lists(&api, settings, &selector, &names, &seen_tx),
            watch_pods(
                &api,
                &selector,
                &seen_tx,
                settings.request_timeout,
                settings.poll
            )
        );
    };
    let mut tasks = tokio::task::JoinSet::new();
    let permits = Arc::new(tokio::sync::Semaphore::new(settings.parallel.max(1)));
    for (index, plan) in plans.iter().cloned().enumerate() {
        let node = probe_in_turn(
            api.clone(),
            plan,
            owner.clone(),
            settings.clone(),
            seen_rx.clone(),
            permits.clone(),
            deadline,
        );
        tasks.spawn(async move { (index, node.await) });
    }
    let mut slots: Vec<Option<NodeRun>> = vec![None; plans.len()];
    let mut keep = |joined: Result<(usize, Option<NodeRun>), tokio::task::JoinError>| {
        if let Ok((index, run)) = joined {
            slots[index] = run;
        }
    };
    let all_answered = async {
        while let Some(joined) = tasks.join_next().await {
            keep(joined);
        }
    };
    let ending = tokio::select! {
        () = all_answered => Ending::Finished,
        () = lister => Ending::Finished,
        () = tokio::time::sleep_until(deadline.into()) => Ending::Deadline,
        () = interrupt => Ending::Interrupted,
    };
    // Stops every node still running: its pod is deleted below with the rest.
    tasks.abort_all();
    while let Some(joined) = tasks.join_next().await {
        keep(joined);
    }
    let cleanup = delete_every_pod(&api, settings, &selector, &plans).await;
    let seen = seen_rx.borrow().clone();
    let unanswered = Missing::Unanswered {
        ending,
        last_list_error: seen.error,
    };
    RunOutcome {
        runs: every_run(&plans, slots, &unanswered),
        ending,
        cleanup,
        events_unread: seen.events_error,
    }
}

/// One node's turn: a permit (a node that waits for one starts in a later wave, with less of
/// the run left, and only if a probe still fits), its probe, then its kubelet's own pull.
async fn probe_in_turn(
    api: Api<Pod>,
    plan: PodPlan,
    owner: Option<OwnerReference>,
    settings: RunSettings,
    seen: tokio::sync::watch::Receiver<Seen>,
    permits: Arc<tokio::sync::Semaphore>,
    deadline: Instant,
) -> Option<NodeRun> {
    let (_permit, queued) = match permits.clone().try_acquire_owned() {
        Ok(permit) => (permit, false),
        // A closed semaphore cannot happen: it is never closed.
        Err(_) => (permits.acquire_owned().await.ok()?, true),
    };
    let started = Instant::now();
    let left = deadline.saturating_duration_since(started);
    let (answer, fresh) = match life::time_for_a_probe(left, settings.budgets.probe) {
        Err(late) if queued => (Answer::Problem(late), None),
        _ => probe_node(&api, &plan, owner, &settings, seen).await,
    };
    // After the probe, so that its pull does not warm the cache the probe reads.
    let kubelet_pull = match &plan.kubelet_pull {
        Some(pull) => {
            let api = Api::namespaced(api.clone().into_client(), &pull.namespace);
            let answer = kubelet_pull_on(&api, pull, &settings).await;
            Some((pull.clone(), answer))
        }
        None => None,
    };
    Some(node_run(
        &plan,
        answer,
        fresh,
        kubelet_pull,
        started.elapsed(),
    ))
}

/// One node's run as the report reads it: the node asked (a fresh pod's, once it came), its
/// answer, and a fresh pod's way to its node.
pub fn node_run(
    plan: &PodPlan,
    answer: Answer,
    fresh: FreshSeen,
    kubelet_pull: Option<(KubeletPullPlan, KubeletPull)>,
    elapsed: Duration,
) -> NodeRun {
    NodeRun {
        node: match (&plan.fresh, &fresh) {
            (Some(_), Some((node, _))) => node.clone(),
            (Some(_), None) => None,
            (None, _) => Some(plan.node.clone()),
        },
        pod: plan.name.clone(),
        answer,
        kubelet_pull,
        elapsed,
        fresh: plan.fresh.as_ref().map(|placement| FreshRun {
            pool: placement.pool_label.1.clone(),
            beside: plan.node.clone(),
            ..fresh.map(|(_, run)| run).unwrap_or_default()
        }),
        node_image: match &plan.start {
            super::pod_spec::Start::Delivered(d) => Some(super::deliver::node_image::NodeImage {
                image: d.node_image.clone(),
                source: d.node_image_source.clone(),
            }),
            super::pod_spec::Start::Image(_) => None,
        },
    }
}

/// Every plan's run, in plan order: its slot, else no answer, for the reason `unanswered`.
pub fn every_run(
    plans: &[PodPlan],
    slots: Vec<Option<NodeRun>>,
    unanswered: &Missing,
) -> Vec<NodeRun> {
    plans
        .iter()
        .zip(slots)
        .map(|(plan, slot)| {
            slot.unwrap_or_else(|| {
                let why = unanswered.clone();
                node_run(plan, Answer::Missing { why }, None, None, Duration::ZERO)
            })
        })
        .collect()
}

/// Delete every pod of the run by its label: in the probe namespace, and the kubelet-pull
/// pods in the workload's.
async fn delete_every_pod(
    api: &Api<Pod>,
    settings: &RunSettings,
    selector: &str,
    plans: &[PodPlan],
) -> Result<Cleanup, RunObjectsRefused> {
    let cleanup = delete_run(api, selector).await;
    match kubelet_pull_namespace(plans, &settings.namespace) {
        Some(namespace) => {
            let workload: Api<Pod> = Api::namespaced(api.clone().into_client(), &namespace);
            Cleanup::both(cleanup, delete_run(&workload, selector).await)
        }
        None => cleanup,
    }
}

/// The kubelet-pull pods' namespace (the workload's), when it is not the probe namespace.
pub fn kubelet_pull_namespace(plans: &[PodPlan], probe_namespace: &str) -> Option<String> {
    plans
        .iter()
        .find_map(|p| p.kubelet_pull.as_ref())
        .map(|k| k.namespace.clone())
        .filter(|ns| ns != probe_namespace)
}

/// A fresh probe pod's node (when one came) and its way there.
type FreshSeen = Option<(Option<String>, FreshRun)>;

/// One node: create its pod, wait for an answer, read it, delete the pod.
async fn probe_node(
    api: &Api<Pod>,
    plan: &PodPlan,
    owner: Option<OwnerReference>,
    settings: &RunSettings,
    seen: tokio::sync::watch::Receiver<Seen>,
) -> (Answer, FreshSeen) {
    let mut pod = pod_spec::probe_pod(plan);
    pod.metadata.owner_references = owner.map(|o| vec![o]);
    if let Err(e) = api.create(&PostParams::default(), &pod).await {
        if let kube::Error::Api(status) = &e
            && let Some(refusal) = life::admission_refusal(status.code, &status.message)
        {
            return (Answer::Problem(RunProblem::Refused(refusal)), None);
        }
        let answer = Answer::NotCreated {
            code: match &e {
                kube::Error::Api(status) => Some(status.code),
                _ => None,
            },
            why: CreateRefused {
                pod: plan.name.clone(),
                error: api_error(&e),
            },
        };
        return (answer, None);
    }
    let progress = settings.progress.as_ref();
    tell(progress, plan, Doing::Created);
    let mut fresh = plan.fresh.as_ref().map(|_| (None, FreshRun::default()));
    let answer = wait_and_read(api, plan, settings, seen, fresh.as_mut()).await;
    tell(progress, plan, Doing::Answered(Box::new(answer.clone())));
    // Best effort, and off the node's slot: the next node's pod need not wait for this delete
    // (a request per node in every wave); the run's cleanup deletes by label whatever is left.
    let (api, name) = (api.clone(), plan.name.clone());
    tokio::spawn(async move {
        let _ = api.delete(&name, &at_once()).await;
    });
    (answer, fresh)
}

/// Wait for the pod's answer. A fresh pod (`fresh`) first waits for its node, up to
/// `--fresh-node-timeout`, its scheduling words kept; its start budget counts from then.
async fn wait_and_read(
    api: &Api<Pod>,
    plan: &PodPlan,
    settings: &RunSettings,
    mut seen: tokio::sync::watch::Receiver<Seen>,
    mut fresh: Option<&mut (Option<String>, FreshRun)>,
) -> Answer {
    let name = plan.name.as_str();
    // Lists that began before the create finished may not show the pod yet.
    let created_at = seen.borrow().generation + 1;
    let mut created = Instant::now();
    let mut running_since: Option<Instant> = None;
    loop {
        if seen.changed().await.is_err() {
            return Answer::Missing {
                why: Missing::StoppedListing,
            };
        }
        let snapshot = seen.borrow_and_update().clone();
        let Some(pod) = snapshot.pods.get(name) else {
            match gone(&snapshot, name, created_at) {
                Some(why) => return Answer::Missing { why },
                None => continue,
            }
        };
        let events = snapshot.events.get(name).map(Vec::as_slice).unwrap_or(&[]);
        if let Some((node, way)) = fresh.as_deref_mut()
            && node.is_none()
        {
            way.waited = created.elapsed();
            match fresh_node::look(api, plan, settings, pod, events, node, way).await {
                fresh_node::Look::Pending => continue,
                fresh_node::Look::Bound => created = Instant::now(),
                fresh_node::Look::Over(answer) => return *answer,
            }
        }
        if running_since.is_none() && started(pod) {
            running_since = Some(Instant::now());
        }
        let clocks = Clocks {
            since_create: created.elapsed(),
            since_running: running_since.map(|t| t.elapsed()),
        };
        match life::read(pod, events, clocks, settings.budgets, &settings.origin) {
            Reading::Wait => {}
            Reading::ReadLog => return read_log(api, name, pod).await,
            Reading::Answer(answer) => return *answer,
        }
    }
}

/// The probe container has started (running, or already ended).
fn started(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .is_some_and(|s| s.running.is_some() || s.terminated.is_some())
}

async fn read_log(api: &Api<Pod>, name: &str, pod: &Pod) -> Answer {
    let params = LogParams {
        container: Some(pod_spec::CONTAINER.to_string()),
        limit_bytes: Some(MAX_LOG_BYTES),
        ..LogParams::default()
    };
    let log = match api.logs(name, &params).await {
        Ok(log) => log,
        Err(e) => {
            return Answer::Missing {
                why: Missing::LogUnread {
                    pod: name.to_string(),
                    error: api_error(&e),
                },
            };
        }
    };
    if let Some(arch) = life::exec_format_error(&log) {
        return Answer::Problem(arch);
    }
    match answer::from_log(&log) {
        Ok(probe) => Answer::Probe(Box::new(probe)),
        Err(why) => Answer::Missing {
            why: Missing::NoReport {
                why,
                ended: ended(pod),
            },
        },
    }
}

/// How the probe container ended, when the pod says (exited 137, OOMKilled).
fn ended(pod: &Pod) -> Option<Ended> {
    let status = pod.status.as_ref();
    let terminated = status
        .and_then(|s| s.container_statuses.as_ref())
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref());
    match (terminated, status.and_then(|s| s.reason.as_deref())) {
        (Some(t), _) => Some(Ended::Exited {
            code: t.exit_code,
            reason: t.reason.clone(),
        }),
        (None, Some(reason)) => Some(Ended::Pod {
            reason: reason.to_string(),
        }),
        (None, None) => None,
    }
}

/// A pod missing from `snapshot`: gone when lists that began after its create (`created_at`)
/// kept missing it; `None` while it may yet show.
fn gone(snapshot: &Seen, name: &str, created_at: u64) -> Option<Missing> {
    (snapshot.generation > created_at + GONE_AFTER_LISTS).then(|| Missing::Gone {
        pod: name.to_string(),
        list_error: snapshot.error.clone(),
    })
}

#[cfg(test)]
mod tests;
