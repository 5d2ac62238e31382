//! Whatever the user pasted → the failure messages in it, oldest first, each with what it is
//! about (pod, container, image, node) when the input says.
//!
//! Accepted: one message; many lines of messages or a runtime log; `kubectl describe pod[s]`
//! output (every pod's `Events:` table, read by its columns); `kubectl get events -o json`
//! (core/v1 or events.k8s.io/v1); `kubectl get pod[s] -o json|yaml` (a `Pod`, a `PodList`, a
//! `List` such as `kubectl get pod,events,nodes -o json`): every container, init container and
//! ephemeral container waiting on its image, read by [`crate::pod`].

use std::collections::BTreeMap;

use serde_json::Value;

use crate::pod::{self, ContainerKind};

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

pub fn messages(input: &str) -> Vec<Message> {
    let trimmed = input.trim_start_matches('\u{feff}').trim();
    if let Some(value) = api_document(trimmed) {
        let found = from_json(&value);
        if !found.is_empty() {
            return found;
        }
    }
    if let Some(found) = from_describe(trimmed) {
        return found;
    }
    from_text(trimmed)
}

/// The input as API objects, when it is `kubectl get … -o json|yaml` output.
fn api_document(trimmed: &str) -> Option<Value> {
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        serde_json::from_str::<Value>(trimmed).ok()
    } else if looks_like_yaml_object(trimmed) {
        serde_yaml_ng::from_str::<Value>(trimmed).ok()
    } else {
        None
    }
}

/// The Nodes in the input (`kubectl get pod,events,nodes -o json`), for their pools.
pub fn nodes(input: &str) -> Vec<k8s_openapi::api::core::v1::Node> {
    let trimmed = input.trim_start_matches('\u{feff}').trim();
    let Some(value) = api_document(trimmed) else {
        return Vec::new();
    };
    items(&value)
        .into_iter()
        .filter(|i| i["kind"] == "Node")
        .filter_map(|i| serde_json::from_value(i.clone()).ok())
        .collect()
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

/// `kubectl get … -o yaml` starts with `apiVersion:` (or `kind:`/`items:` when reordered).
fn looks_like_yaml_object(text: &str) -> bool {
    ["apiVersion:", "kind:", "items:"]
        .iter()
        .any(|k| text.starts_with(k) || text.contains(&format!("\n{k}")))
}

/// API objects (one, a list, or an array) → the messages of their pods and events.
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
    // What the pods say about their containers, to fill in what an event leaves out.
    let mut known: BTreeMap<(Option<String>, String), (Option<String>, Containers)> =
        BTreeMap::new();
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
    let mut sorted: Vec<&pod::PodEvent> = events.iter().collect();
    sorted.sort_by(|a, b| a.first_seen.cmp(&b.first_seen));
    let mut out: Vec<Message> = Vec::new();
    for (i, event) in sorted.into_iter().enumerate() {
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
        }
    }
    out
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

/// `kubectl describe pod[s]`: each pod's header (name, namespace, node, container images) and
/// its `Events:` table read by columns, so only the Message column is the message; recent
/// kubectl prefixes it with the field path (`spec.initContainers{migrate}: …`).
fn from_describe(text: &str) -> Option<Vec<Message>> {
    let lines: Vec<&str> = text.lines().collect();
    let has_events = lines.iter().any(|l| l.trim_start().starts_with("Events:"));
    let has_pod = lines.iter().any(|l| l.starts_with("Name:"))
        && lines.iter().any(|l| l.trim_end().ends_with("Containers:"));
    if !has_events && !has_pod {
        return None;
    }
    let mut out = Vec::new();
    let mut current = Subject::default();
    let mut images: Vec<(ContainerKind, String, String)> = Vec::new();
    let mut section: Option<ContainerKind> = None;
    let mut container: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let field = |name: &str| line.strip_prefix(name).map(|v| v.trim().to_string());
        if let Some(name) = field("Name:") {
            current = Subject {
                pod: Some(name),
                ..Subject::default()
            };
            images.clear();
            section = None;
        } else if let Some(ns) = field("Namespace:") {
            current.namespace = Some(ns);
        } else if let Some(node) = field("Node:") {
            let node = node.split('/').next().unwrap_or("").to_string();
            current.node = (!node.is_empty() && node != "<none>").then_some(node);
        } else if line.trim_start().starts_with("Events:") {
            let (consumed, rows) = events_table(&lines[i..]);
            i += consumed;
            for (number, message) in rows {
                let (field_path, message) = split_field_path(&message);
                let message = strip_aggregation(message);
                if !is_failure_line(message) {
                    continue;
                }
                let mut subject = current.clone();
                if let Some((kind, name)) = field_path {
                    subject.image = images
                        .iter()
                        .find(|(k, n, _)| *k == kind && *n == name)
                        .map(|c| c.2.clone());
                    subject.container = Some(name);
                    subject.container_kind = Some(kind);
                }
                if let Some(image) = image_named(message) {
                    subject.image = Some(image);
                }
                out.push(Message {
                    text: cap(message.to_string()),
                    origin: format!("line {}", i - consumed + number + 1),
                    subject,
                    seen: None,
                });
            }
            section = None;
        } else if !line.starts_with(' ') {
            section = match line.trim_end() {
                "Init Containers:" => Some(ContainerKind::Init),
                "Containers:" => Some(ContainerKind::App),
                "Ephemeral Containers:" => Some(ContainerKind::Ephemeral),
                _ => None,
            };
            container = None;
        } else if let Some(kind) = section {
            let trimmed = line.trim();
            if line.starts_with("  ") && !line.starts_with("   ") && trimmed.ends_with(':') {
                container = Some(trimmed.trim_end_matches(':').to_string());
            } else if let (Some(image), Some(name)) = (trimmed.strip_prefix("Image:"), &container) {
                images.push((kind, name.clone(), image.trim().to_string()));
            } else if let (Some(reason), Some(name)) = (trimmed.strip_prefix("Reason:"), &container)
                && pod::IMAGE_REASONS.contains(&reason.trim())
            {
                // The container's state: describe prints the waiting reason, not its message.
                let reason = reason.trim().to_string();
                out.push(Message {
                    text: reason.clone(),
                    origin: format!("line {i}"),
                    subject: Subject {
                        container: Some(name.clone()),
                        container_kind: Some(kind),
                        image: images
                            .iter()
                            .find(|(k, n, _)| *k == kind && n == name)
                            .map(|c| c.2.clone()),
                        waiting_reason: Some(reason),
                        ..current.clone()
                    },
                    seen: None,
                });
            }
        }
    }
    (!out.is_empty()).then_some(out)
}

/// The rows of an events table (lines after `Events:`): (row index, Message column). Returns
/// how many lines the table used.
fn events_table(lines: &[&str]) -> (usize, Vec<(usize, String)>) {
    let mut message_column: Option<usize> = None;
    let mut rows = Vec::new();
    let mut used = 0;
    for (n, line) in lines.iter().enumerate() {
        if !line.starts_with(' ') || line.trim().is_empty() {
            break;
        }
        used = n + 1;
        if message_column.is_none() && line.split_whitespace().take(2).eq(["Type", "Reason"]) {
            message_column = line.find("Message");
            continue;
        }
        if is_table_header(line) {
            continue;
        }
        let message = match message_column {
            Some(at)
                if line.len() > at && line.is_char_boundary(at) && line[..at].ends_with(' ') =>
            {
                line[at..].trim()
            }
            _ => line.trim(),
        };
        rows.push((n, message.to_string()));
    }
    (used, rows)
}

/// `spec.containers{web}: Failed to pull …` → (field path, message).
fn split_field_path(message: &str) -> (Option<(ContainerKind, String)>, &str) {
    if message.starts_with("spec.")
        && let Some(end) = message.find("}: ")
        && let Some(path) = pod::parse_field_path(&message[..=end])
    {
        return (Some(path), &message[end + 3..]);
    }
    (None, message)
}

fn from_text(text: &str) -> Vec<Message> {
    // kubectl describe: only the Events table speaks about pulls.
    let body = match text.find("\nEvents:") {
        Some(at) => &text[at + "\nEvents:".len()..],
        None => text,
    };
    let lines: Vec<(usize, &str)> = body
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .filter(|(_, l)| !is_table_header(l))
        .collect();
    if !lines.iter().any(|(_, l)| is_failure_line(l)) {
        // No line speaks of a pull: classify the text as one message (the classifier says so).
        let joined = lines
            .iter()
            .map(|(_, l)| l.trim())
            .collect::<Vec<_>>()
            .join("\n");
        if joined.is_empty() {
            return Vec::new();
        }
        return vec![Message {
            text: cap(joined),
            origin: "input".into(),
            subject: Subject::default(),
            seen: None,
        }];
    }
    // Each failure line starts a message. A line that is not a log record of its own continues
    // the previous message (old Docker prints one ping error per line); other log lines are noise.
    // A message a terminal wrapped continues whatever its next line holds: inside a quoted name
    // (`"r.example/e` + `ks/pause:3.5": failed to pull …`, no character lost at the wrap) or
    // between a gRPC status's code and its `desc`.
    let mut out: Vec<Message> = Vec::new();
    // The number of the line the last message ended on: a wrap continues on the very next one.
    let mut last_line = None;
    // Whether that line ended in a space: a tool that wraps at spaces leaves the space there
    // (`failed to do request: Head ` + `"https://…": server gave HTTP ` + `response to …`).
    let mut ended_in_space = false;
    for (number, line) in lines {
        let next_line = last_line == Some(number.wrapping_sub(1));
        let soft_wrapped = next_line && ended_in_space;
        ended_in_space = line.ends_with([' ', '\t']);
        if let Some(last) = out.last_mut()
            && next_line
            && last.text.len() < MAX_MESSAGE
            && let Some(separator) = wrapped_continuation(&last.text, line)
        {
            last.text.push_str(separator);
            last.text.push_str(line.trim());
            last.text = cap(std::mem::take(&mut last.text));
            last_line = Some(number);
        } else if is_failure_line(line) {
            out.push(Message {
                text: cap(line.trim().to_string()),
                origin: format!("line {}", number + 1),
                subject: Subject::default(),
                seen: None,
            });
            last_line = Some(number);
        } else if let Some(last) = out.last_mut()
            && !is_log_record(line)
            && last.text.len() < MAX_MESSAGE
        {
            last.text.push(if soft_wrapped { ' ' } else { '\n' });
            last.text.push_str(line.trim());
            last_line = Some(number);
        }
    }
    out
}

/// How `line` joins `message` when a terminal wrapped the message before it: nothing inside
/// a quoted name left open, a space between `code = X` and `desc = …`; `None` when the line
/// is not such a continuation.
fn wrapped_continuation(message: &str, raw_line: &str) -> Option<&'static str> {
    let line = raw_line.trim();
    // A record of its own (`time=…`, a timestamp) is never the rest of the one before.
    if is_log_record(raw_line) {
        return None;
    }
    let unescaped_quotes = message
        .char_indices()
        .filter(|&(at, c)| c == '"' && !message[..at].ends_with('\\'))
        .count();
    let open_name = unescaped_quotes % 2 == 1
        && message.ends_with(|c: char| c.is_ascii_alphanumeric() || "./-_:".contains(c))
        // An indented line is a new record of a table or list, not the rest of a name.
        && !raw_line.starts_with(char::is_whitespace);
    if open_name && !message.contains('\n') {
        Some("")
    } else if line.starts_with("desc = ")
        && message
            .trim_end()
            .rsplit_once("code = ")
            .is_some_and(|(_, code)| !code.contains(' '))
    {
        Some(" ")
    } else {
        None
    }
}

/// A line that starts a record of its own: logfmt, a timestamp (its first word holds `-`, `:`,
/// `/` or `.`: `2024-05-01T…`, `10:31:02`, an address `10.0.0.5:`) or a process id before a
/// klog source location (`15542 kuberuntime_image.go:51]`), klog's `E0102`, syslog's month. A
/// bare number is no record: `429 Too Many Requests` continues a wrapped message.
fn is_log_record(line: &str) -> bool {
    const MONTHS: [&str; 12] = [
        "Jan ", "Feb ", "Mar ", "Apr ", "May ", "Jun ", "Jul ", "Aug ", "Sep ", "Oct ", "Nov ",
        "Dec ",
    ];
    let l = line.trim_start();
    let klog = l.len() > 5
        && matches!(l.as_bytes()[0], b'I' | b'W' | b'E' | b'F')
        && l.as_bytes()[1..5].iter().all(u8::is_ascii_digit);
    l.starts_with("time=")
        || l.starts_with("level=")
        || starts_with_timestamp_or_pid(l)
        || MONTHS.iter().any(|m| l.starts_with(m))
        || klog
        || (line.starts_with(|c: char| !c.is_whitespace()) && l.contains(" kubelet "))
}

fn starts_with_timestamp_or_pid(line: &str) -> bool {
    let mut words = line.split_whitespace();
    let Some(first) = words
        .next()
        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()))
    else {
        return false;
    };
    first.contains(['-', ':', '/', '.'])
        || words
            .next()
            .is_some_and(|w| w.ends_with(']') && w.contains(".go:"))
}

/// Whether a line speaks of a pull failure (or its back-off).
pub fn is_failure_line(line: &str) -> bool {
    FAILURE_MARKERS.iter().any(|m| line.contains(m))
}

fn is_table_header(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.starts_with(&["Type", "Reason"]) || words.iter().all(|w| w.chars().all(|c| c == '-'))
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
