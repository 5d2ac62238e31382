//! What the run sees of its pods: the polled lists (the run's pods, the namespace's pod
//! events) as the ground truth, and the watch beside them, by which a finished probe pod is
//! read the moment the kubelet reports it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::{Api, ListParams, WatchEvent, WatchParams};

use crate::fleet::config::RunSettings;
use crate::fleet::run_objects::api_error;

/// What the lister last saw: the run's pods by name, or why it could not list them.
#[derive(Debug, Clone, Default)]
pub(super) struct Seen {
    /// Counts lists; a pod absent from a list that began after its create is gone.
    pub generation: u64,
    pub pods: BTreeMap<String, Pod>,
    /// The events of each of the run's pods (`involvedObject.name`).
    pub events: BTreeMap<String, Vec<Event>>,
    pub error: Option<String>,
    /// Why the events could not be listed (a pod that cannot mount is then only seen when its
    /// start budget runs out).
    pub events_error: Option<String>,
}

/// A pod missing from this many lists after it was created was deleted by someone else.
pub(super) const GONE_AFTER_LISTS: u64 = 3;

/// A list of the run's pods, or of their events, that failed: what was listed, the API's words.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum ListFailed {
    #[error("cannot list the probe pods ({selector}): {error}")]
    Pods { selector: String, error: String },
    #[error("cannot list the probe pods' events in {namespace}: {error}")]
    Events { namespace: String, error: String },
}

/// Every poll interval, the run's pods and the namespace's pod events listed (together), into
/// what the node tasks see.
pub(super) async fn poll_lists(
    api: &Api<Pod>,
    settings: &RunSettings,
    selector: &str,
    names: &BTreeSet<String>,
    seen: &tokio::sync::watch::Sender<Seen>,
) {
    let events_api: Api<Event> = Api::namespaced(api.clone().into_client(), &settings.namespace);
    let params = ListParams::default().labels(selector);
    // Events carry no labels: every pod event of the namespace, kept for the run's pods.
    let event_params = ListParams::default().fields("involvedObject.kind=Pod");
    let mut generation = 0;
    loop {
        tokio::time::sleep(settings.poll).await;
        generation += 1;
        let (pods, events) = tokio::join!(api.list(&params), events_api.list(&event_params));
        let pods = pods.map(|list| list.items).map_err(|e| ListFailed::Pods {
            selector: selector.to_string(),
            error: api_error(&e),
        });
        let events = events
            .map(|list| list.items)
            .map_err(|e| ListFailed::Events {
                namespace: settings.namespace.clone(),
                error: api_error(&e),
            });
        let next = next_seen(&seen.borrow(), generation, pods, events, names);
        seen.send_replace(next);
    }
}

/// What the run sees after list `generation`: the pods listed (a list that began before the
/// watch's news of a finished pod does not undo it) and the run's pods' events; a failed list
/// keeps what was seen before and says why.
pub(super) fn next_seen(
    previous: &Seen,
    generation: u64,
    pods: Result<Vec<Pod>, ListFailed>,
    events: Result<Vec<Event>, ListFailed>,
    names: &BTreeSet<String>,
) -> Seen {
    let (events, events_error) = match events {
        Ok(items) => (events_by_pod(items, names), None),
        Err(failed) => (previous.events.clone(), Some(failed.to_string())),
    };
    match pods {
        Ok(items) => Seen {
            generation,
            pods: items
                .into_iter()
                .filter_map(|p| Some((p.metadata.name.clone()?, p)))
                .map(|(name, listed)| {
                    let pod = match previous.pods.get(&name) {
                        Some(known) if finished(known) && !finished(&listed) => known.clone(),
                        _ => listed,
                    };
                    (name, pod)
                })
                .collect(),
            events,
            error: None,
            events_error,
        },
        Err(failed) => Seen {
            generation,
            error: Some(failed.to_string()),
            events,
            events_error,
            ..previous.clone()
        },
    }
}

/// The run's pod events, by pod, only for the run's pods.
fn events_by_pod(events: Vec<Event>, names: &BTreeSet<String>) -> BTreeMap<String, Vec<Event>> {
    let mut by_pod: BTreeMap<String, Vec<Event>> = BTreeMap::new();
    for event in events {
        if let Some(name) = event
            .involved_object
            .name
            .clone()
            .filter(|n| names.contains(n))
        {
            by_pod.entry(name).or_default().push(event);
        }
    }
    by_pod
}

/// A pod in a terminal phase: the API never moves it back (pod lifecycle: Succeeded and Failed
/// are final).
pub(super) fn finished(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Each change of the run's pods as the API reports it, into what the node tasks see: a
/// finished pod is read at once. The watch is renewed before the client's request timeout
/// would cut it; one the API refuses (RBAC without `watch`, a proxy that cannot stream) ends
/// here, and the polled lists carry the run alone.
pub(super) async fn watch_pods(
    api: &Api<Pod>,
    selector: &str,
    seen: &tokio::sync::watch::Sender<Seen>,
    request_timeout: Duration,
    poll: Duration,
) {
    let window = u32::try_from(request_timeout.as_secs().saturating_sub(1).max(1)).unwrap_or(290);
    let params = WatchParams::default()
        .labels(selector)
        .timeout(window)
        .disable_bookmarks();
    loop {
        let opened = Instant::now();
        let stream = match api.watch(&params, "0").await {
            Ok(stream) => stream,
            Err(kube::Error::Api(status)) if [403, 404, 405].contains(&status.code) => return,
            Err(_) => {
                tokio::time::sleep(poll).await;
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(WatchEvent::Added(pod) | WatchEvent::Modified(pod)) => {
                    if let Some(name) = pod.metadata.name.clone() {
                        seen.send_modify(|s| {
                            s.pods.insert(name, pod);
                        });
                    }
                }
                // A pod gone is told by the lists (after GONE_AFTER_LISTS of them).
                Ok(WatchEvent::Deleted(_) | WatchEvent::Bookmark(_)) => {}
                Ok(WatchEvent::Error(_)) | Err(_) => break,
            }
        }
        // A watch that ends at once (an error, a server that will not hold it) is not renewed
        // in a busy loop.
        if opened.elapsed() < Duration::from_secs(1) {
            tokio::time::sleep(poll).await;
        }
    }
}
