//! The run's own objects on the API (its probe pods, the delivered ConfigMaps): deleted by the
//! run's label whatever ends the run, and a request for them that the API refused. The API
//! error in one line that every networked stage words the same.

use std::sync::Arc;

use kube::api::{Api, DeleteParams, ListParams};

/// A request for the run's own objects (its probe pods, the delivered ConfigMaps) that the API
/// refused: what was asked, and the apiserver's answer. `Display` is the report's
/// `cleanup.error` and the reason a delivery does not start. The error is shared so that a
/// run's outcome stays `Clone`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RunObjectsRefused {
    #[error("cannot delete the run's {plural} ({selector}): {}", api_error(error))]
    Delete {
        plural: String,
        selector: String,
        error: Arc<kube::Error>,
    },
    #[error(
        "cannot create ConfigMap {name} in {namespace} (the delivered pullpath): {}",
        api_error(error)
    )]
    Create {
        name: String,
        namespace: String,
        error: Arc<kube::Error>,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleanup {
    pub deleted: usize,
    /// Pods still listed after the delete (deleted but not yet gone, or created meanwhile).
    pub remaining: usize,
    /// Why the list after the delete failed: the delete went through, but nothing proves no
    /// pod is left.
    pub unverified: Option<String>,
}

impl Cleanup {
    /// Two deletes of one run (pods in two namespaces, pods and ConfigMaps) as one; the first
    /// failure when either failed.
    pub fn both(
        a: Result<Cleanup, RunObjectsRefused>,
        b: Result<Cleanup, RunObjectsRefused>,
    ) -> Result<Cleanup, RunObjectsRefused> {
        let (a, b) = (a?, b?);
        Ok(Cleanup {
            deleted: a.deleted + b.deleted,
            remaining: a.remaining + b.remaining,
            unverified: a.unverified.or(b.unverified),
        })
    }
}

/// A delete with no grace period: the run's objects are gone at once.
pub fn at_once() -> DeleteParams {
    DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    }
}

/// Delete every object (pods, the delivered ConfigMaps) matching `selector` in the probe
/// namespace, then count what is left.
pub async fn delete_run<K>(api: &Api<K>, selector: &str) -> Result<Cleanup, RunObjectsRefused>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    K::DynamicType: Default,
{
    let params = ListParams::default().labels(selector);
    let deleted = match api.delete_collection(&at_once(), &params).await {
        Ok(either) => either.left().map_or(0, |list| list.items.len()),
        Err(e) => {
            return Err(RunObjectsRefused::Delete {
                plural: K::plural(&Default::default()).into_owned(),
                selector: selector.to_string(),
                error: Arc::new(e),
            });
        }
    };
    Ok(match api.list(&params).await {
        Ok(list) => Cleanup {
            deleted,
            remaining: list.items.len(),
            unverified: None,
        },
        Err(e) => Cleanup {
            deleted,
            remaining: 0,
            unverified: Some(format!(
                "cannot list the run's {} ({selector}): {}",
                K::plural(&Default::default()),
                api_error(&e)
            )),
        },
    })
}

/// An API error in one line: the apiserver's own message when it sent a Status.
pub fn api_error(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(status) => {
            format!("{} {}: {}", status.code, status.reason, status.message)
        }
        other => other.to_string(),
    }
}
