//! Cluster mode, read side: `pullpath explain pod/NAME` and `pullpath scan` from the
//! Kubernetes API, through kube-rs with kubectl's conventions.
//!
//! `read` fetches (the only async, networked part); `findings` turns what was read into the
//! same explained subjects `explain` makes of pasted text (through `failure_text::input`), plus
//! where it happened: the node's facts ([`crate::pod::node`]: pool, age, versions), `cache` (the cache lie), `keyring` (which
//! pull-secret entry the kubelet would use). API errors are [`ClusterError`]s, each with its
//! exit status (`exit::for_cluster_error`: the user's configuration, the cluster's answer, or
//! pullpath's own fault); a read that is refused part-way is reported as unread.

/// The cache lie: which other nodes hold the image, and whether they are older.
pub mod cache;
/// What was read → explained subjects, with where, secrets and the next command.
pub mod findings;
/// Which pull-secret entries the kubelet would use for an image (keys only, never values).
pub mod keyring;
/// API requests retried as client-go retries them (429 and 5xx with `Retry-After`).
pub mod retry;
/// The API read: the pod or workload's pods, events, nodes, service accounts, pull secrets.
pub mod read;

use std::path::PathBuf;
use std::time::Duration;

/// Where to read, as kubectl's flags say it.
#[derive(Debug, Clone)]
pub struct Target {
    /// `--kubeconfig`; else `KUBECONFIG` (a list of files), else `~/.kube/config`, else the
    /// in-cluster service account.
    pub kubeconfig: Option<PathBuf>,
    pub context: Option<String>,
    /// `--cluster`, `--user`, `--as`, `--as-group`, `--as-uid`.
    pub overrides: Overrides,
    /// `-n`; else the context's namespace.
    pub namespace: Option<String>,
    /// `-A` (scan only).
    pub all_namespaces: bool,
    /// `--read-secrets`: read pull secrets' registry keys (RBAC `get secrets`).
    pub read_secrets: bool,
    /// `--request-timeout`: one API request, connect and TLS included; zero for no limit, as
    /// kubectl's `0`.
    pub request_timeout: Duration,
}

/// What kubectl's flags override in the kubeconfig's context: its cluster and user, and who to
/// impersonate (sent as the `Impersonate-User`, `Impersonate-Group` and `Impersonate-Uid`
/// headers, as client-go's `transport.NewImpersonatingRoundTripper` sends them).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub cluster: Option<String>,
    pub user: Option<String>,
    /// `--as`.
    pub impersonate: Option<String>,
    /// `--as-group`, in the order given.
    pub impersonate_groups: Vec<String>,
    /// `--as-uid`.
    pub impersonate_uid: Option<String>,
}

/// The whole read may take this many request timeouts (a scan makes a handful of requests
/// plus one per service account and secret).
pub const READ_DEADLINE_REQUESTS: u32 = 6;

/// What `explain` was asked about: `pod/NAME` or a workload resolved to its pods.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ObjectRef {
    Pod(String),
    Workload { kind: WorkloadKind, name: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkloadKind {
    Deployment,
    StatefulSet,
    DaemonSet,
    Job,
}

impl WorkloadKind {
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Deployment => "Deployment",
            WorkloadKind::StatefulSet => "StatefulSet",
            WorkloadKind::DaemonSet => "DaemonSet",
            WorkloadKind::Job => "Job",
        }
    }
}

impl ObjectRef {
    /// `pod/web-1`, `po/…`, `pods/…`, `deploy/…`, `deployment/…`, `sts/…`, `statefulset/…`,
    /// `ds/…`, `daemonset/…`, `job/…` (kubectl's names and short names); `None` for anything
    /// else, which `explain` then reads as failure text.
    pub fn parse(text: &str) -> Option<ObjectRef> {
        let (kind, name) = text.trim().split_once('/')?;
        let valid_name = !name.is_empty()
            && name.len() <= 253
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.'));
        if !valid_name {
            return None;
        }
        let name = name.to_string();
        let workload = |kind| {
            Some(ObjectRef::Workload {
                kind,
                name: name.clone(),
            })
        };
        match kind.to_ascii_lowercase().as_str() {
            "pod" | "po" | "pods" => Some(ObjectRef::Pod(name.clone())),
            "deploy" | "deployment" | "deployments" | "deployment.apps" => {
                workload(WorkloadKind::Deployment)
            }
            "sts" | "statefulset" | "statefulsets" | "statefulset.apps" => {
                workload(WorkloadKind::StatefulSet)
            }
            "ds" | "daemonset" | "daemonsets" | "daemonset.apps" => {
                workload(WorkloadKind::DaemonSet)
            }
            "job" | "jobs" | "job.batch" => workload(WorkloadKind::Job),
            _ => None,
        }
    }
}

/// The tool's own errors in cluster mode: each prints as one line naming what failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("no usable Kubernetes configuration: {0}")]
    Config(String),
    /// A kubeconfig file named (by `--kubeconfig` or `KUBECONFIG`) that cannot be read.
    #[error("cannot read the kubeconfig {}: {cause}", path.display())]
    KubeconfigUnreadable { path: PathBuf, cause: String },
    /// No HTTP answer: connect, TLS or the request timed out.
    #[error("could not reach the API server at {server}: {cause}")]
    Unreachable { server: String, cause: String },
    #[error(
        "the API server {server} rejected the credentials (401 Unauthorized): check the kubeconfig's user or token"
    )]
    Unauthorized { server: String },
    /// The apiserver's own message names the verb, resource and namespace.
    #[error("forbidden (403): {message}; see deploy/rbac-read.yaml")]
    Forbidden { message: String },
    #[error("{what} not found (404)")]
    NotFound { what: String },
    #[error("{what}: it has no label selector to find its pods by")]
    NoSelector { what: String },
    /// `code` 0: the request got no status (refused before it was sent, or no answer).
    #[error("{}", api_text(*code, what, message))]
    Api {
        code: u16,
        what: String,
        message: String,
    },
    #[error("reading the cluster took longer than {0:?}")]
    Timeout(Duration),
}

/// An API answer in words: its status, or, with none (code 0), what failed and why.
fn api_text(code: u16, what: &str, message: &str) -> String {
    match code {
        0 => format!("{what} failed: {message}"),
        code => format!("the API server answered {code} to {what}: {message}"),
    }
}

/// The cause when `error` got no answer from the API server (the connection, TLS, a timeout):
/// `None` when the server answered, or when the request failed before it was sent.
pub fn unanswered(error: &kube::Error) -> Option<String> {
    match error {
        kube::Error::HyperError(inner) => Some(one_line(inner)),
        kube::Error::Service(inner) => Some(one_line(inner.as_ref())),
        _ => None,
    }
}

impl ClusterError {
    /// An API error for request `what` (`get pods "web-1" in shop`).
    pub fn from_kube(error: kube::Error, what: &str, server: &str) -> ClusterError {
        match error {
            kube::Error::Api(status) => match status.code {
                401 => ClusterError::Unauthorized {
                    server: server.to_string(),
                },
                403 => ClusterError::Forbidden {
                    message: if status.message.is_empty() {
                        format!("cannot {what}")
                    } else {
                        status.message.clone()
                    },
                },
                404 => ClusterError::NotFound {
                    what: what.to_string(),
                },
                code => ClusterError::Api {
                    code,
                    what: what.to_string(),
                    message: status.message.clone(),
                },
            },
            other => match unanswered(&other) {
                Some(cause) => ClusterError::Unreachable {
                    server: server.to_string(),
                    cause,
                },
                // An answer pullpath could not read, or a request it could not build.
                None => ClusterError::Api {
                    code: 0,
                    what: what.to_string(),
                    message: one_line(&other),
                },
            },
        }
    }
}

/// An error and its sources on one line.
fn one_line(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_refs_as_kubectl_names_them() {
        assert_eq!(
            ObjectRef::parse("pod/web-1"),
            Some(ObjectRef::Pod("web-1".into()))
        );
        assert_eq!(
            ObjectRef::parse("po/web-1"),
            Some(ObjectRef::Pod("web-1".into()))
        );
        assert_eq!(
            ObjectRef::parse("pods/web-1"),
            Some(ObjectRef::Pod("web-1".into()))
        );
        assert_eq!(
            ObjectRef::parse("deploy/web"),
            Some(ObjectRef::Workload {
                kind: WorkloadKind::Deployment,
                name: "web".into()
            })
        );
        assert_eq!(
            ObjectRef::parse("statefulset/worker"),
            Some(ObjectRef::Workload {
                kind: WorkloadKind::StatefulSet,
                name: "worker".into()
            })
        );
        assert!(matches!(
            ObjectRef::parse("ds/agent"),
            Some(ObjectRef::Workload {
                kind: WorkloadKind::DaemonSet,
                ..
            })
        ));
        assert!(matches!(
            ObjectRef::parse("job/migrate"),
            Some(ObjectRef::Workload {
                kind: WorkloadKind::Job,
                ..
            })
        ));
        // Failure text is not an object reference.
        assert_eq!(ObjectRef::parse("svc/web"), None);
        assert_eq!(
            ObjectRef::parse("Failed to pull image \"r/app:1\": rpc error"),
            None
        );
        assert_eq!(ObjectRef::parse("https://r.example/v2/"), None);
        assert_eq!(ObjectRef::parse("pod/"), None);
    }
}
