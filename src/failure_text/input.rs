//! Whatever the user pasted → the failure messages in it, oldest first, each with what it is
//! about (pod, container, image, node) when the input says.
//!
//! Accepted: one message; many lines of messages or a runtime log; `kubectl describe pod[s]`
//! output (every pod's `Events:` table, read by its columns); `kubectl get events -o json`
//! (core/v1 or events.k8s.io/v1); `kubectl get pod[s] -o json|yaml` (a `Pod`, a `PodList`, a
//! `List` such as `kubectl get pod,events,nodes -o json`): every container, init container and
//! ephemeral container waiting on its image, read by [`crate::pod`].
//!
//! Read as streams, never whole: JSON item by item (`json_items`, `objects`), text line by line
//! (`lines`), so a cluster's events (a million, 500 MB) are read in bounded memory. What is
//! held: one item (at most [`LIMITS`]`.item`) or one line (at most [`LIMITS`]`.line`), the
//! messages of failing pods, per distinct event time a counter, and for one verdict over a whole
//! log (or over events with no failing pod) its first MiB of messages and the one that decides
//! (`listing`). YAML alone is read whole, up to [`MAX_YAML`].

mod distinct;
mod json_items;
mod lines;
mod listing;
mod objects;
pub mod spool;

use std::collections::BTreeMap;
use std::io::{Cursor, Read, Seek, SeekFrom};

use serde_json::Value;

use crate::pod::node::{self, NodeFacts};
use crate::pod::{self, ContainerKind};

pub use json_items::FrameError;

/// What a message is about, as far as the input says.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Subject {
    pub namespace: Option<String>,
    pub pod: Option<String>,
    pub node: Option<String>,
    pub container: Option<String>,
    pub container_kind: Option<ContainerKind>,
    pub image: Option<String>,
    /// The container status's `waiting.reason` (`ImagePullBackOff`, …).
    pub waiting_reason: Option<String>,
}

/// One message found in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The message text: a describe table's Message column without its field path, an event's
    /// message, a status's message; a plain line as it was (prefixes such as
    /// `Warning Failed 2m kubelet` kept: harmless).
    pub text: String,
    /// Where it came from, for the report: `line 12`, `event 3`.
    pub origin: String,
    /// What it is about; empty for plain text.
    pub subject: Subject,
    /// When it was first seen (an event's first timestamp, RFC 3339), when the input says.
    pub seen: Option<String>,
}

/// What the input held.
#[derive(Debug, Default)]
pub struct Input {
    pub messages: Vec<Message>,
    /// The Nodes in the input (`kubectl get pod,events,nodes -o json`), for their pools.
    pub nodes: Vec<NodeFacts>,
    /// Messages left out of `messages` past [`listing::MAX_LISTED`]; none would decide.
    pub unlisted: u64,
    /// Per message of a failing pod's events, the events alike it stands for (its text's later
    /// events, and on a bucket's first the texts past `distinct::MAX_DISTINCT`); empty: none.
    pub not_listed: Vec<u64>,
}

/// How much of the input is held at once.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// One JSON item's bytes: no API object is larger (etcd stores at most 1.5 MiB; kubectl's
    /// indented JSON of it stays under 4 MiB).
    pub item: usize,
    /// One line of text: a log or describe line is far shorter.
    pub line: usize,
}

/// `explain`'s limits.
pub const LIMITS: Limits = Limits {
    item: 4 << 20,
    line: 1 << 20,
};

/// YAML is read whole (serde_yaml reads no stream): beyond this, `-o json` is asked for.
pub const MAX_YAML: usize = 64 << 20;

/// Why the input could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Json(#[from] FrameError),
    #[error("malformed JSON item at byte {offset}: {error}")]
    Item {
        offset: u64,
        error: serde_json::Error,
        /// The document's first item, on its first line: perhaps no JSON at all.
        first_item: bool,
        first_line: bool,
    },
    #[error(
        "line {line} is longer than {} MiB: not a log or kubectl output",
        limit >> 20
    )]
    LineTooLong { line: usize, limit: usize },
    #[error(
        "YAML is read whole, up to {} MiB, and this is larger: pass `kubectl get … -o json` instead (read as a stream)",
        MAX_YAML >> 20
    )]
    YamlTooLarge,
    #[error("cannot read the input: {0}")]
    Io(std::io::Error),
}

/// Longest message we classify; the tail of a longer one is cut (and said so by `origin`).
const MAX_MESSAGE: usize = 64 * 1024;

/// Lines that carry a pull failure (or its back-off) in some runtime's words.
const FAILURE_MARKERS: [&str; 14] = [
    "Failed to pull image",
    "failed to pull",
    "Back-off pulling image",
    "ImagePullBackOff",
    "ErrImagePull",
    "Error response from daemon",
    "rpc error",
    "pulling image",
    "Error while pulling",
    "failed to resolve",
    "failed to copy",
    "error pulling",
    "level=error",
    "level=fatal",
];

/// Read the input from its start: JSON item by item (when it starts with `{` or `[` and is one
/// JSON document), else text line by line (YAML, when it looks like it, whole).
pub fn read<R: Read + Seek>(mut input: R, limits: &Limits) -> Result<Input, ReadError> {
    let json = starts_like_json(&mut input)?;
    if json {
        if let Some(found) = objects::read(&mut input, limits.item)?
            && !found.messages.is_empty()
        {
            return Ok(Input {
                messages: found.messages,
                nodes: found.nodes,
                unlisted: found.unlisted,
                not_listed: found.not_listed,
            });
        }
        input.seek(SeekFrom::Start(0)).map_err(ReadError::Io)?;
    }
    let text = lines::read(&mut input, limits.line)?;
    if text.yaml_like && !json {
        input.seek(SeekFrom::Start(0)).map_err(ReadError::Io)?;
        let mut bytes = Vec::new();
        (&mut input)
            .take(MAX_YAML as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(ReadError::Io)?;
        if bytes.len() > MAX_YAML {
            if text.yaml_first_line {
                return Err(ReadError::YamlTooLarge);
            }
        } else if let Some(found) = yaml_objects(&String::from_utf8_lossy(&bytes)) {
            return Ok(found);
        }
    }
    let (messages, unlisted) = text.messages();
    Ok(Input {
        messages,
        nodes: Vec::new(),
        unlisted,
        not_listed: Vec::new(),
    })
}

/// The messages of text held whole (one message, a log, a paste): [`read`] without limits;
/// JSON that breaks is read as the text it is.
pub fn messages(input: &str) -> Vec<Message> {
    let unlimited = Limits {
        item: usize::MAX,
        line: usize::MAX,
    };
    match read(Cursor::new(input.as_bytes()), &unlimited) {
        Ok(found) => found.messages,
        Err(_) => lines::read(input.as_bytes(), usize::MAX)
            .map(|text| text.messages().0)
            .unwrap_or_default(),
    }
}

/// Whether the input's first character (past byte-order marks and whitespace) opens JSON; the
/// input is back at its start after. A read may end inside a byte-order mark: what is held
/// between reads is that part of one at most.
fn starts_like_json<R: Read + Seek>(input: &mut R) -> Result<bool, ReadError> {
    const BOM: &[u8] = "\u{feff}".as_bytes();
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    let json = 'read: loop {
        let n = match input.read(&mut chunk) {
            Ok(0) => break false,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(ReadError::Io(e)),
        };
        pending.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        while at < pending.len() {
            let rest = &pending[at..];
            if rest.starts_with(BOM) {
                at += BOM.len();
            } else if BOM.starts_with(rest) {
                // A mark cut by the read: its rest comes with the next one.
                break;
            } else if rest[0].is_ascii_whitespace() {
                at += 1;
            } else {
                break 'read matches!(rest[0], b'{' | b'[');
            }
        }
        pending.drain(..at);
    };
    input.seek(SeekFrom::Start(0)).map_err(ReadError::Io)?;
    Ok(json)
}

/// `kubectl get … -o yaml` output → its messages and nodes; `None` when it is no YAML of API
/// objects with messages.
fn yaml_objects(text: &str) -> Option<Input> {
    let trimmed = text.trim_start_matches('\u{feff}').trim();
    let value = serde_yaml_ng::from_str::<Value>(trimmed).ok()?;
    let messages = from_json(&value);
    let nodes = items(&value)
        .into_iter()
        .filter(|i| i["kind"] == "Node")
        .filter_map(|i| serde_json::from_value(i.clone()).ok())
        .map(|n| node::facts(&n))
        .collect();
    (!messages.is_empty()).then_some(Input {
        messages,
        nodes,
        unlisted: 0,
        not_listed: Vec::new(),
    })
}

fn items(value: &Value) -> Vec<&Value> {
    match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(o) if o.contains_key("items") => o["items"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default(),
        other => vec![other],
    }
}

/// API objects held whole (one, a list, or an array) → the messages of their pods and events.
pub fn from_json(value: &Value) -> Vec<Message> {
    let items = items(value);
    let mut events = Vec::new();
    let mut pods = Vec::new();
    for item in items {
        let kind = item["kind"].as_str().unwrap_or("");
        if kind == "Pod" || (kind.is_empty() && item.pointer("/status/containerStatuses").is_some())
        {
            if let Ok(p) = pod::from_value(item.clone()) {
                pods.push(p);
            }
        } else if let Some(event) = pod::event_from_value(item) {
            events.push(event);
        }
    }
    from_objects(&pods, &events)
}

/// A pod's containers: (list, name, image).
type Containers = Vec<(ContainerKind, String, String)>;

/// Pods and events, however they were read → messages: the events oldest first, then what
/// each pod's statuses say now. The one conversion `explain` and cluster mode share.
pub fn from_objects(
    pods: &[k8s_openapi::api::core::v1::Pod],
    events: &[pod::PodEvent],
) -> Vec<Message> {
    let mut sorted: Vec<&pod::PodEvent> = events.iter().collect();
    sorted.sort_by(|a, b| a.first_seen.cmp(&b.first_seen));
    let ranked = sorted
        .into_iter()
        .enumerate()
        .map(|(place, e)| (place, e, 0))
        .collect();
    from_ranked(pods, ranked).0
}

/// What the pods say about their containers, to fill in what an event leaves out.
type Known = BTreeMap<(Option<String>, String), (Option<String>, Containers)>;

fn known_containers(pods: &[k8s_openapi::api::core::v1::Pod]) -> Known {
    let mut known = Known::new();
    for p in pods {
        let id = pod::pod_id(p);
        let spec = p.spec.as_ref();
        let mut containers = Vec::new();
        for c in spec.iter().flat_map(|s| s.init_containers.iter().flatten()) {
            containers.push((
                ContainerKind::Init,
                c.name.clone(),
                c.image.clone().unwrap_or_default(),
            ));
        }
        for c in spec.iter().flat_map(|s| s.containers.iter()) {
            containers.push((
                ContainerKind::App,
                c.name.clone(),
                c.image.clone().unwrap_or_default(),
            ));
        }
        for c in spec
            .iter()
            .flat_map(|s| s.ephemeral_containers.iter().flatten())
        {
            containers.push((
                ContainerKind::Ephemeral,
                c.name.clone(),
                c.image.clone().unwrap_or_default(),
            ));
        }
        known.insert((id.namespace, id.name), (pod::node_name(p), containers));
    }
    known
}

/// Pods and events with each event's place in time order (0-based, among every event of the
/// input, kept or not) and the events alike it stands for → messages, events in that order,
/// and per message those events not listed.
fn from_ranked(
    pods: &[k8s_openapi::api::core::v1::Pod],
    mut events: Vec<(usize, &pod::PodEvent, u64)>,
) -> (Vec<Message>, Vec<u64>) {
    let known = known_containers(pods);
    events.sort_by_key(|(place, _, _)| *place);
    let mut out: Vec<Message> = Vec::new();
    let mut not_listed = Vec::new();
    for (i, event, alike) in events {
        not_listed.push(alike);
        let key = (event.pod.namespace.clone(), event.pod.name.clone());
        let about = known.get(&key);
        let image = image_named(&event.message).or_else(|| {
            let (kind, name) = event.container.as_ref()?;
            about?
                .1
                .iter()
                .find(|(k, n, _)| k == kind && n == name)
                .map(|c| c.2.clone())
        });
        let subject = Subject {
            namespace: event.pod.namespace.clone(),
            pod: (!event.pod.name.is_empty()).then(|| event.pod.name.clone()),
            node: event
                .node
                .clone()
                .or_else(|| about.and_then(|a| a.0.clone())),
            container: event.container.as_ref().map(|c| c.1.clone()),
            container_kind: event.container.as_ref().map(|c| c.0),
            image,
            waiting_reason: None,
        };
        out.push(Message {
            text: cap(strip_aggregation(&event.message).to_string()),
            origin: format!("event {}", i + 1),
            subject,
            seen: (!event.first_seen.is_empty()).then(|| event.first_seen.clone()),
        });
    }
    for p in pods {
        let id = pod::pod_id(p);
        for wait in pod::image_waits(p) {
            let text = wait
                .message
                .clone()
                .filter(|m| !m.trim().is_empty())
                .unwrap_or_else(|| wait.reason.clone());
            out.push(Message {
                text: cap(text),
                origin: format!("{}Statuses[{}]", status_list(wait.kind), wait.container),
                subject: Subject {
                    namespace: id.namespace.clone(),
                    pod: Some(id.name.clone()),
                    node: pod::node_name(p),
                    container: Some(wait.container.clone()),
                    container_kind: Some(wait.kind),
                    image: Some(wait.image.clone()),
                    waiting_reason: Some(wait.reason.clone()),
                },
                seen: None,
            });
            not_listed.push(0);
        }
    }
    (out, not_listed)
}

fn status_list(kind: ContainerKind) -> &'static str {
    match kind {
        ContainerKind::Init => "status.initContainer",
        ContainerKind::App => "status.container",
        ContainerKind::Ephemeral => "status.ephemeralContainer",
    }
}

/// client-go's aggregator prefixes repeated similar events (`tools/record/events_cache.go`).
fn strip_aggregation(message: &str) -> &str {
    message
        .strip_prefix("(combined from similar events): ")
        .unwrap_or(message)
}

/// The image a kubelet message names: `… image "X"…`.
pub fn image_named(message: &str) -> Option<String> {
    let at = message.find("image \"")? + "image \"".len();
    let end = message[at..].find('"')?;
    let image = &message[at..at + end];
    (!image.is_empty() && !image.contains(char::is_whitespace)).then(|| image.to_string())
}

/// Whether a line speaks of a pull failure (or its back-off).
pub fn is_failure_line(line: &str) -> bool {
    FAILURE_MARKERS.iter().any(|m| line.contains(m))
}

fn cap(mut text: String) -> String {
    if text.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

#[cfg(test)]
mod tests;
