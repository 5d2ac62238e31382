//! A request for the run's own objects (its probe pods, the delivered ConfigMaps) that the API
//! refused: what was asked, and the apiserver's answer. `Display` is the report's
//! `cleanup.error` and the reason a delivery does not start.

use std::sync::Arc;

/// The error is shared so that a run's outcome stays `Clone`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RunObjectsRefused {
    #[error(
        "cannot delete the run's {plural} ({selector}): {}",
        super::api_error(error)
    )]
    Delete {
        plural: String,
        selector: String,
        error: Arc<kube::Error>,
    },
    #[error(
        "cannot create ConfigMap {name} in {namespace} (the delivered pullpath): {}",
        super::api_error(error)
    )]
    Create {
        name: String,
        namespace: String,
        error: Arc<kube::Error>,
    },
}
