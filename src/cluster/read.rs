//! Reading the cluster: the only networked part of cluster mode. Each read is one API request
//! (get or list, with the selectors kubectl would use); a refused read that the report can do
//! without (events, nodes, other namespaces, service accounts, secrets) becomes an [`Unread`]
//! entry, while one it cannot (the pod itself) is a [`ClusterError`].

use std::collections::BTreeSet;

use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod, Secret, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};

use super::{
    ClusterError, ObjectRef, READ_DEADLINE_REQUESTS, Target, WorkloadKind, keyring, one_line,
};
use crate::pod::{self, PodEvent};

/// A connected client and what its configuration says.
pub struct Session {
    client: Client,
    /// The whole read's limit; `None` with `--request-timeout 0`.
    deadline: Option<std::time::Duration>,
    pub server: String,
    pub default_namespace: String,
}

/// A read that was refused; the report says what is missing and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unread {
    pub what: String,
    pub reason: String,
}

/// What a pull secret lookup found. Values are never kept: only the registry keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretLookup {
    Found {
        secret_type: String,
        registries: Result<Vec<String>, keyring::NoRegistryKeys>,
    },
    Missing,
    Unread(String),
    /// Not asked for (no `--read-secrets`).
    NotRead,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretState {
    pub namespace: String,
    pub name: String,
    pub lookup: SecretLookup,
}

/// A service account's imagePullSecrets: `None` when it could not be read or does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountState {
    pub namespace: String,
    pub name: String,
    pub pull_secrets: Option<Vec<String>>,
}

/// Everything read for one `explain pod/NAME` or `scan`.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// `None` for all namespaces.
    pub namespace: Option<String>,
    pub all_namespaces: bool,
    /// Pods in scope (the object's pods, or every pod of the namespace for scan).
    pub pods: Vec<Pod>,
    pub events: Vec<PodEvent>,
    pub nodes: Vec<Node>,
    /// Pods anywhere the cache evidence may come from.
    pub other_pods: Vec<Pod>,
    pub accounts: Vec<AccountState>,
    pub secrets: Vec<SecretState>,
    pub unread: Vec<Unread>,
    /// Seconds since the epoch when read.
    pub now: i64,
    pub read_secrets: bool,
}

/// Connect with kubectl's rules: `--kubeconfig`, else `KUBECONFIG` (a list), else
/// `~/.kube/config`, else the in-cluster service account; `--context` picks the context,
/// `--cluster` and `--user` replace its cluster and user, `--as`, `--as-group` and `--as-uid`
/// impersonate (over the kubeconfig user's own `as`, as kubectl's flags are).
pub async fn connect(target: &Target) -> Result<Session, ClusterError> {
    // rustls with the ring provider, chosen here rather than left to feature unification.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let overrides = &target.overrides;
    let options = KubeConfigOptions {
        context: target.context.clone(),
        cluster: overrides.cluster.clone(),
        user: overrides.user.clone(),
    };
    let home_config = std::env::var_os("HOME")
        .map(|h| std::path::PathBuf::from(h).join(".kube/config"))
        .filter(|p| p.exists());
    let mut config = if let Some(path) = &target.kubeconfig {
        let file = Kubeconfig::read_from(path).map_err(kubeconfig_error)?;
        Config::from_custom_kubeconfig(file, &options)
            .await
            .map_err(kubeconfig_error)?
    } else if std::env::var_os("KUBECONFIG").is_some() || home_config.is_some() {
        Config::from_kubeconfig(&options)
            .await
            .map_err(kubeconfig_error)?
    } else if let Some(flag) = [
        ("--context", &target.context),
        ("--cluster", &overrides.cluster),
        ("--user", &overrides.user),
    ]
    .into_iter()
    .find_map(|(flag, given)| given.as_ref().map(|_| flag))
    {
        return Err(ClusterError::Config(format!(
            "{flag} needs a kubeconfig (--kubeconfig, KUBECONFIG or ~/.kube/config)"
        )));
    } else {
        Config::incluster().map_err(|e| {
            ClusterError::Config(format!(
                "no kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config) and not in a pod: {}",
                one_line(&e)
            ))
        })?
    };
    if let Some(user) = &overrides.impersonate {
        config.auth_info.impersonate = Some(user.clone());
    }
    if !overrides.impersonate_groups.is_empty() {
        config.auth_info.impersonate_groups = Some(overrides.impersonate_groups.clone());
    }
    if let Some(uid) = &overrides.impersonate_uid {
        config.auth_info.impersonate_uid = Some(uid.clone());
    }
    // Zero is kubectl's "no limit": no timeout on the request, nor on the whole read.
    let timeout = (!target.request_timeout.is_zero()).then_some(target.request_timeout);
    config.connect_timeout = timeout;
    config.read_timeout = timeout;
    config.write_timeout = timeout;
    let server = config.cluster_url.to_string();
    let default_namespace = config.default_namespace.clone();
    let client = super::retry::client(config).map_err(|e| ClusterError::Config(one_line(&e)))?;
    Ok(Session {
        client,
        deadline: timeout.map(|t| t.saturating_mul(READ_DEADLINE_REQUESTS)),
        server: server.trim_end_matches('/').to_string(),
        default_namespace,
    })
}

/// A kubeconfig that could not be read or used: a named file that cannot be read is said with
/// its path and the system's reason (kube's own text quotes the path twice).
fn kubeconfig_error(error: KubeconfigError) -> ClusterError {
    match error {
        KubeconfigError::ReadConfig(cause, path) => ClusterError::KubeconfigUnreadable {
            path,
            cause: cause.to_string(),
        },
        other => ClusterError::Config(one_line(&other)),
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

impl Session {
    /// The connected client, for commands that write (fleet's probe pods).
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    fn fail(&self, e: kube::Error, what: &str) -> ClusterError {
        ClusterError::from_kube(e, what, &self.server)
    }

    /// A read the report can do without: a refusal (403, 404) becomes `unread`; an API server
    /// that stops answering is still an error.
    fn optional<T>(
        &self,
        result: Result<T, kube::Error>,
        what: &str,
        unread: &mut Vec<Unread>,
    ) -> Result<Option<T>, ClusterError> {
        match result {
            Ok(v) => Ok(Some(v)),
            Err(kube::Error::Api(status)) if matches!(status.code, 403 | 404) => {
                unread.push(Unread {
                    what: what.to_string(),
                    reason: format!("{} {}: {}", status.code, status.reason, status.message),
                });
                Ok(None)
            }
            Err(e) => Err(self.fail(e, what)),
        }
    }

    /// `explain pod/NAME` or `explain deploy/NAME` in `namespace`.
    pub async fn read_object(
        &self,
        target: &Target,
        object: &ObjectRef,
    ) -> Result<Snapshot, ClusterError> {
        let namespace = target
            .namespace
            .clone()
            .unwrap_or_else(|| self.default_namespace.clone());
        self.within(self.read_object_in(target, object, &namespace))
            .await
    }

    /// A whole read, within the session's deadline when it has one.
    async fn within<T>(
        &self,
        read: impl std::future::Future<Output = Result<T, ClusterError>>,
    ) -> Result<T, ClusterError> {
        match self.deadline {
            Some(deadline) => tokio::time::timeout(deadline, read)
                .await
                .map_err(|_| ClusterError::Timeout(deadline))?,
            None => read.await,
        }
    }

    async fn read_object_in(
        &self,
        target: &Target,
        object: &ObjectRef,
        ns: &str,
    ) -> Result<Snapshot, ClusterError> {
        let pods_api: Api<Pod> = Api::namespaced(self.client.clone(), ns);
        let pods = match object {
            ObjectRef::Pod(name) => {
                let what = format!("get pods \"{name}\" in {ns}");
                vec![pods_api.get(name).await.map_err(|e| self.fail(e, &what))?]
            }
            ObjectRef::Workload { kind, name } => {
                let what = format!(
                    "get {} \"{name}\" in {ns}",
                    kind.as_str().to_lowercase() + "s"
                );
                let selector = self
                    .workload_selector(*kind, name, ns)
                    .await
                    .map_err(|e| self.fail(e, &what))?;
                let Some(selector) = selector.as_ref().and_then(label_selector) else {
                    return Err(ClusterError::NoSelector { what });
                };
                let what = format!("list pods in {ns} (labelSelector {selector})");
                pods_api
                    .list(&ListParams::default().labels(&selector))
                    .await
                    .map_err(|e| self.fail(e, &what))?
                    .items
            }
        };
        let mut snapshot = Snapshot {
            namespace: Some(ns.to_string()),
            all_namespaces: false,
            pods,
            now: now(),
            read_secrets: target.read_secrets,
            ..Snapshot::default()
        };
        let failing = pod::stuck(&snapshot.pods);
        for p in &failing {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let name = p.metadata.name.clone().unwrap_or_default();
            let events = self
                .events(ns, Some((&name, &uid)), &mut snapshot.unread)
                .await?;
            snapshot.events.extend(events);
        }
        self.read_context(&failing, &mut snapshot, Some(ns)).await?;
        Ok(snapshot)
    }

    /// `scan`: every pod of the namespace (or all), and the context of the failing ones.
    pub async fn read_scan(&self, target: &Target) -> Result<Snapshot, ClusterError> {
        self.within(self.read_scan_in(target)).await
    }

    async fn read_scan_in(&self, target: &Target) -> Result<Snapshot, ClusterError> {
        let ns = if target.all_namespaces {
            None
        } else {
            Some(
                target
                    .namespace
                    .clone()
                    .unwrap_or_else(|| self.default_namespace.clone()),
            )
        };
        let (api, what): (Api<Pod>, String) = match &ns {
            Some(ns) => (
                Api::namespaced(self.client.clone(), ns),
                format!("list pods in {ns}"),
            ),
            None => (
                Api::all(self.client.clone()),
                "list pods in all namespaces".to_string(),
            ),
        };
        let pods = api
            .list(&ListParams::default())
            .await
            .map_err(|e| self.fail(e, &what))?
            .items;
        let mut snapshot = Snapshot {
            namespace: ns.clone(),
            all_namespaces: target.all_namespaces,
            pods,
            now: now(),
            read_secrets: target.read_secrets,
            ..Snapshot::default()
        };
        let failing = pod::stuck(&snapshot.pods);
        if !failing.is_empty() {
            let events = match &ns {
                Some(ns) => self.events(ns, None, &mut snapshot.unread).await?,
                None => self.events_all(&mut snapshot.unread).await?,
            };
            let uids: BTreeSet<String> = failing
                .iter()
                .filter_map(|p| p.metadata.uid.clone())
                .collect();
            snapshot.events = events
                .into_iter()
                .filter(|e| e.pod.uid.as_ref().is_none_or(|u| uids.contains(u)))
                .collect();
        }
        if target.all_namespaces {
            snapshot.other_pods = snapshot.pods.clone();
        }
        self.read_context(&failing, &mut snapshot, ns.as_deref())
            .await?;
        Ok(snapshot)
    }

    /// Nodes, pods holding images elsewhere, service accounts and pull secrets.
    async fn read_context(
        &self,
        failing: &[Pod],
        snapshot: &mut Snapshot,
        ns: Option<&str>,
    ) -> Result<(), ClusterError> {
        if failing.is_empty() {
            return Ok(());
        }
        let nodes: Api<Node> = Api::all(self.client.clone());
        let listed = nodes.list(&ListParams::default()).await;
        if let Some(list) =
            self.optional(listed, "list nodes (cluster scope)", &mut snapshot.unread)?
        {
            snapshot.nodes = list.items;
        }
        if snapshot.other_pods.is_empty() {
            let all: Api<Pod> = Api::all(self.client.clone());
            let listed = all.list(&ListParams::default()).await;
            match self.optional(
                listed,
                "list pods in all namespaces (which nodes run the image)",
                &mut snapshot.unread,
            )? {
                Some(list) => snapshot.other_pods = list.items,
                None => {
                    if let Some(ns) = ns {
                        let here: Api<Pod> = Api::namespaced(self.client.clone(), ns);
                        let listed = here.list(&ListParams::default()).await;
                        if let Some(list) = self.optional(
                            listed,
                            &format!("list pods in {ns}"),
                            &mut snapshot.unread,
                        )? {
                            snapshot.other_pods = list.items;
                        }
                    }
                }
            }
        }
        let mut accounts: BTreeSet<(String, String)> = BTreeSet::new();
        let mut secrets: BTreeSet<(String, String)> = BTreeSet::new();
        for p in failing {
            let pod_ns = p.metadata.namespace.clone().unwrap_or_default();
            let spec = p.spec.as_ref();
            let account = spec
                .and_then(|s| s.service_account_name.clone())
                .unwrap_or_else(|| "default".into());
            accounts.insert((pod_ns.clone(), account));
            for s in spec
                .iter()
                .flat_map(|s| s.image_pull_secrets.iter().flatten())
            {
                secrets.insert((pod_ns.clone(), s.name.clone()));
            }
        }
        for (ns, name) in accounts {
            let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), &ns);
            let what = format!("get serviceaccounts \"{name}\" in {ns}");
            let got = self.optional(api.get(&name).await, &what, &mut snapshot.unread)?;
            let pull_secrets = got.map(|sa| {
                sa.image_pull_secrets
                    .unwrap_or_default()
                    .into_iter()
                    .map(|r| r.name)
                    .collect::<Vec<_>>()
            });
            for s in pull_secrets.iter().flatten() {
                secrets.insert((ns.clone(), s.clone()));
            }
            snapshot.accounts.push(AccountState {
                namespace: ns,
                name,
                pull_secrets,
            });
        }
        for (ns, name) in secrets {
            let lookup = if snapshot.read_secrets {
                let api: Api<Secret> = Api::namespaced(self.client.clone(), &ns);
                match api.get(&name).await {
                    Ok(secret) => {
                        let secret_type = secret.type_.clone().unwrap_or_else(|| "Opaque".into());
                        let data: Vec<(String, Vec<u8>)> = secret
                            .data
                            .unwrap_or_default()
                            .into_iter()
                            .map(|(k, v)| (k, v.0))
                            .collect();
                        let registries = keyring::registry_keys(&secret_type, &data);
                        SecretLookup::Found {
                            secret_type,
                            registries,
                        }
                    }
                    Err(kube::Error::Api(status)) if status.code == 404 => SecretLookup::Missing,
                    Err(kube::Error::Api(status)) if status.code == 403 => {
                        let reason = format!("403 {}: {}", status.reason, status.message);
                        snapshot.unread.push(Unread {
                            what: format!("get secrets \"{name}\" in {ns}"),
                            reason: reason.clone(),
                        });
                        SecretLookup::Unread(reason)
                    }
                    Err(e) => return Err(self.fail(e, &format!("get secrets \"{name}\" in {ns}"))),
                }
            } else {
                SecretLookup::NotRead
            };
            snapshot.secrets.push(SecretState {
                namespace: ns,
                name,
                lookup,
            });
        }
        Ok(())
    }

    async fn workload_selector(
        &self,
        kind: WorkloadKind,
        name: &str,
        ns: &str,
    ) -> Result<Option<LabelSelector>, kube::Error> {
        let client = self.client.clone();
        Ok(match kind {
            WorkloadKind::Deployment => Api::<Deployment>::namespaced(client, ns)
                .get(name)
                .await?
                .spec
                .map(|s| s.selector),
            WorkloadKind::StatefulSet => Api::<StatefulSet>::namespaced(client, ns)
                .get(name)
                .await?
                .spec
                .map(|s| s.selector),
            WorkloadKind::DaemonSet => Api::<DaemonSet>::namespaced(client, ns)
                .get(name)
                .await?
                .spec
                .map(|s| s.selector),
            WorkloadKind::Job => Api::<Job>::namespaced(client, ns)
                .get(name)
                .await?
                .spec
                .and_then(|s| s.selector),
        })
    }

    /// A pod's events (or a namespace's): core/v1 by `involvedObject.uid`; events.k8s.io/v1 by
    /// `regarding.uid` when core/v1 is refused or not served.
    async fn events(
        &self,
        ns: &str,
        pod: Option<(&str, &str)>,
        unread: &mut Vec<Unread>,
    ) -> Result<Vec<PodEvent>, ClusterError> {
        let subject = pod.map_or(format!("in {ns}"), |(name, _)| {
            format!("of pod {name} in {ns}")
        });
        let before = unread.len();
        for (group, field) in [
            ("", "involvedObject.uid"),
            ("events.k8s.io", "regarding.uid"),
        ] {
            let resource = ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(group, "v1", "Event"),
                "events",
            );
            let api: Api<DynamicObject> = Api::namespaced_with(self.client.clone(), ns, &resource);
            let params = match pod {
                Some((_, uid)) => ListParams::default().fields(&format!("{field}={uid}")),
                None => ListParams::default(),
            };
            let api_name = if group.is_empty() {
                "events"
            } else {
                "events.events.k8s.io"
            };
            if let Some(list) = self.optional(
                api.list(&params).await,
                &format!("list {api_name} {subject}"),
                unread,
            )? {
                // The other API answered: nothing is missing.
                unread.truncate(before);
                return Ok(to_pod_events(&list.items));
            }
        }
        Ok(Vec::new())
    }

    async fn events_all(&self, unread: &mut Vec<Unread>) -> Result<Vec<PodEvent>, ClusterError> {
        let resource =
            ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Event"), "events");
        let api: Api<DynamicObject> = Api::all_with(self.client.clone(), &resource);
        let listed = api.list(&ListParams::default()).await;
        Ok(self
            .optional(listed, "list events in all namespaces", unread)?
            .map(|list| to_pod_events(&list.items))
            .unwrap_or_default())
    }
}

/// Events as the API sent them → the reader pasted events go through.
fn to_pod_events(items: &[DynamicObject]) -> Vec<PodEvent> {
    items
        .iter()
        .filter_map(|o| serde_json::to_value(o).ok())
        .filter_map(|v| pod::event_from_value(&v))
        .collect()
}

/// A LabelSelector as the `labelSelector` query parameter (`matchLabels` and `matchExpressions`).
pub fn label_selector(selector: &LabelSelector) -> Option<String> {
    let mut terms: Vec<String> = selector
        .match_labels
        .iter()
        .flatten()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in selector.match_expressions.iter().flatten() {
        let values = e.values.clone().unwrap_or_default().join(",");
        terms.push(match e.operator.as_str() {
            "In" => format!("{} in ({values})", e.key),
            "NotIn" => format!("{} notin ({values})", e.key),
            "Exists" => e.key.clone(),
            "DoesNotExist" => format!("!{}", e.key),
            _ => return None,
        });
    }
    (!terms.is_empty()).then(|| terms.join(","))
}
