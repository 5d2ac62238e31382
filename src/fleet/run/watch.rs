//! The watch of the run's pods beside the polled lists: a finished probe pod is read the
//! moment the kubelet reports it.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, WatchEvent, WatchParams};

use super::Seen;

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
