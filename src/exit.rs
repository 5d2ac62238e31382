//! Exit statuses: the outcome in a number scripts can branch on (documented in the README).

use crate::cluster::ClusterError;
use crate::verdict::Verdict;
use crate::vocab::Layer;

/// Nothing failed.
pub const PASSED: u8 = 0;
/// The evidence fits more than one layer.
pub const UNDECIDED: u8 = 3;
/// Bad command line or unreadable input (sysexits.h `EX_USAGE`).
pub const USAGE: u8 = 64;
/// What the user named does not exist: a kubeconfig file, the pod or workload asked about
/// (`EX_NOINPUT`).
pub const NO_INPUT: u8 = 66;
/// The cluster could not do it: its API server unreachable or silent, or answering with a
/// server error (`EX_UNAVAILABLE`).
pub const UNAVAILABLE: u8 = 69;
/// pullpath itself failed.
pub const INTERNAL: u8 = 70;
/// The API server refused the credentials (401) or the request (403) (`EX_NOPERM`).
pub const NO_PERMISSION: u8 = 77;
/// The kubeconfig cannot be used as it is, or a fleet dry run can plan no probe pod with what it
/// was given (`EX_CONFIG`).
pub const CONFIG: u8 = 78;

/// The status for a layer: 10 + its place in the vocabulary.
pub fn for_layer(layer: Layer) -> u8 {
    let index = Layer::ALL
        .iter()
        .position(|l| *l == layer)
        .unwrap_or(Layer::ALL.len() - 1);
    10 + u8::try_from(index).unwrap_or(11)
}

/// The status of a verdict: passed, undecided, or its failing layer's.
pub fn for_verdict(verdict: &Verdict) -> u8 {
    match verdict {
        Verdict::Passed => PASSED,
        Verdict::Failed(failure) => for_layer(failure.fault.layer()),
        Verdict::Undecided(_) => UNDECIDED,
    }
}

/// The status of a cluster read or write that failed: whose the fault is, as far as the error
/// tells (an answer without a status, code 0, is not known to be the cluster's).
pub fn for_cluster_error(error: &ClusterError) -> u8 {
    match error {
        ClusterError::Config(_) => CONFIG,
        ClusterError::KubeconfigUnreadable { .. } | ClusterError::NotFound { .. } => NO_INPUT,
        ClusterError::Unreachable { .. } | ClusterError::Timeout(_) => UNAVAILABLE,
        ClusterError::Unauthorized { .. } | ClusterError::Forbidden { .. } => NO_PERMISSION,
        ClusterError::Api { code, .. } => match code {
            401 | 403 => NO_PERMISSION,
            404 => NO_INPUT,
            429 | 500..=599 => UNAVAILABLE,
            _ => INTERNAL,
        },
        ClusterError::NoSelector { .. } => USAGE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{Failure, Fault, Seen, Undecided};
    use crate::vocab::Owner;

    #[test]
    fn every_layer_has_its_own_status() {
        let codes: std::collections::BTreeSet<u8> =
            Layer::ALL.iter().map(|l| for_layer(*l)).collect();
        assert_eq!(codes.len(), Layer::ALL.len());
        assert_eq!(for_layer(Layer::Dns), 10);
        assert_eq!(for_layer(Layer::Other), 21);
    }

    #[test]
    fn each_verdict_has_its_status_and_an_undecided_leaning_is_not_a_failure() {
        let fault = Fault::new(Layer::Tls, None, Owner::RegistryPki);
        let failed = Verdict::Failed(Failure {
            fault,
            seen: Seen::default(),
        });
        let leaning = Verdict::Undecided(Undecided {
            leaning: Some(fault),
            seen: Seen::default(),
            candidates: Vec::new(),
            decides: None,
        });
        assert_eq!(for_verdict(&Verdict::Passed), PASSED);
        assert_eq!(for_verdict(&failed), 13);
        assert_eq!(for_verdict(&leaning), UNDECIDED);
    }

    /// The user's configuration, the cluster's answer and pullpath's own fault each have theirs.
    #[test]
    fn cluster_errors_say_whose_fault_it_is() {
        let api = |code| ClusterError::Api {
            code,
            what: "get pods".into(),
            message: String::new(),
        };
        let unreachable = ClusterError::Unreachable {
            server: "https://127.0.0.1:1".into(),
            cause: "refused".into(),
        };
        let missing = ClusterError::KubeconfigUnreadable {
            path: "/nonexistent".into(),
            cause: "No such file or directory (os error 2)".into(),
        };
        assert_eq!(for_cluster_error(&missing), NO_INPUT);
        assert_eq!(for_cluster_error(&ClusterError::Config("x".into())), CONFIG);
        assert_eq!(for_cluster_error(&unreachable), UNAVAILABLE);
        assert_eq!(
            for_cluster_error(&ClusterError::Timeout(std::time::Duration::from_secs(1))),
            UNAVAILABLE
        );
        assert_eq!(for_cluster_error(&api(503)), UNAVAILABLE);
        assert_eq!(for_cluster_error(&api(429)), UNAVAILABLE);
        assert_eq!(for_cluster_error(&api(403)), NO_PERMISSION);
        assert_eq!(for_cluster_error(&api(404)), NO_INPUT);
        assert_eq!(for_cluster_error(&api(0)), INTERNAL);
        assert_eq!(for_cluster_error(&api(422)), INTERNAL);
    }
}
