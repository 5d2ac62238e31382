//! Text read line by line, never whole: `kubectl describe pod[s]` output and logs (one
//! message or many, a runtime's journal, kubelet lines). Both readings run over the same lines
//! at once, as each line arrives; which one answers is known at the end (describe output has an
//! `Events:` table or a pod's `Name:` and `Containers:`). Memory holds one line and the
//! messages found, each cut at `MAX_MESSAGE`.

use std::io::{BufRead, BufReader, Read};

use super::listing::Listing;
use super::{
    MAX_MESSAGE, Message, ReadError, Subject, cap, image_named, is_failure_line, strip_aggregation,
};
use crate::pod::{self, ContainerKind};

/// What the lines held, read both ways.
pub struct Text {
    /// As `kubectl describe` output, when the text is that.
    pub describe: Option<Vec<Message>>,
    /// As messages or a log, and how many it left out (`listing`).
    pub plain: (Vec<Message>, u64),
    /// Whether the text looks like `kubectl get … -o yaml` (a line starts with `apiVersion:`,
    /// `kind:` or `items:`), and whether its first line does.
    pub yaml_like: bool,
    pub yaml_first_line: bool,
}

impl Text {
    /// Describe output's messages when it is that, else the plain reading's; with how many
    /// messages were left out.
    pub fn messages(self) -> (Vec<Message>, u64) {
        match self.describe {
            Some(messages) => (messages, 0),
            None => self.plain,
        }
    }
}

/// Read `input` (from its start: leading byte-order marks and whitespace skipped, as pasted
/// text is trimmed) line by line; a line over `max_line` bytes is refused, never held.
pub fn read<R: Read>(input: R, max_line: usize) -> Result<Text, ReadError> {
    let mut reader = BufReader::with_capacity(256 * 1024, input);
    let mut describe = Describe::default();
    let mut plain = Plain::default();
    let (mut yaml_like, mut yaml_first_line) = (false, false);
    let mut bytes = Vec::new();
    let mut number = 0;
    let mut first = true;
    while next_line(&mut reader, &mut bytes, max_line, number)? {
        let decoded = String::from_utf8_lossy(&bytes);
        let mut line: &str = &decoded;
        if number == 0 {
            // Trimmed at its start as pasted text always was: byte-order marks, then
            // whitespace, blank lines too; lines number from the first that holds more. Done
            // on lines, not bytes, so a mark cut by a read is still one mark.
            if first {
                line = line.trim_start_matches('\u{feff}');
                first = false;
            }
            line = line.trim_start();
            if line.is_empty() {
                continue;
            }
        }
        let yaml = ["apiVersion:", "kind:", "items:"]
            .iter()
            .any(|k| line.starts_with(k));
        yaml_like |= yaml;
        yaml_first_line |= yaml && number == 0;
        describe.line(number, line);
        plain.line(number, line);
        number += 1;
    }
    Ok(Text {
        describe: describe.finish(),
        plain: plain.finish(),
        yaml_like,
        yaml_first_line,
    })
}

/// The next line into `line` (without its `\n` or `\r\n`); `false` at the end.
fn next_line<R: BufRead>(
    reader: &mut R,
    line: &mut Vec<u8>,
    max_line: usize,
    number: usize,
) -> Result<bool, ReadError> {
    line.clear();
    let mut any = false;
    loop {
        let buf = reader.fill_buf().map_err(ReadError::Io)?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        let (take, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        if line.len() + take > max_line.saturating_add(1) {
            return Err(ReadError::LineTooLong {
                line: number + 1,
                limit: max_line,
            });
        }
        line.extend_from_slice(&buf[..take]);
        reader.consume(take);
        if done {
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(true);
        }
    }
}

/// `kubectl describe pod[s]`: each pod's header (name, namespace, node, container images) and
/// its `Events:` table read by columns, so only the Message column is the message; recent
/// kubectl prefixes it with the field path (`spec.initContainers{migrate}: …`).
#[derive(Default)]
struct Describe {
    out: Vec<Message>,
    current: Subject,
    images: Vec<(ContainerKind, String, String)>,
    section: Option<ContainerKind>,
    container: Option<String>,
    /// Inside an events table: where its Message column starts, once its header was read.
    table: Option<Option<usize>>,
    has_events: bool,
    has_name: bool,
    has_containers: bool,
}

impl Describe {
    fn line(&mut self, number: usize, line: &str) {
        self.has_events |= line.trim_start().starts_with("Events:");
        self.has_name |= line.starts_with("Name:");
        self.has_containers |= line.trim_end().ends_with("Containers:");
        if let Some(column) = self.table {
            if line.starts_with(' ') && !line.trim().is_empty() {
                self.table_row(number, line, column);
                return;
            }
            self.table = None;
        }
        let field = |name: &str| line.strip_prefix(name).map(|v| v.trim().to_string());
        if let Some(name) = field("Name:") {
            self.current = Subject {
                pod: Some(name),
                ..Subject::default()
            };
            self.images.clear();
            self.section = None;
        } else if let Some(ns) = field("Namespace:") {
            self.current.namespace = Some(ns);
        } else if let Some(node) = field("Node:") {
            let node = node.split('/').next().unwrap_or("").to_string();
            self.current.node = (!node.is_empty() && node != "<none>").then_some(node);
        } else if line.trim_start().starts_with("Events:") {
            self.table = Some(None);
            self.section = None;
        } else if !line.starts_with(' ') {
            self.section = match line.trim_end() {
                "Init Containers:" => Some(ContainerKind::Init),
                "Containers:" => Some(ContainerKind::App),
                "Ephemeral Containers:" => Some(ContainerKind::Ephemeral),
                _ => None,
            };
            self.container = None;
        } else if let Some(kind) = self.section {
            self.container_line(number, line, kind);
        }
    }

    /// A line of an events table: its header, or a row whose Message column is a message.
    fn table_row(&mut self, number: usize, line: &str, column: Option<usize>) {
        if column.is_none() && line.split_whitespace().take(2).eq(["Type", "Reason"]) {
            self.table = Some(line.find("Message"));
            return;
        }
        if is_table_header(line) {
            return;
        }
        let message = match column {
            Some(at)
                if line.len() > at && line.is_char_boundary(at) && line[..at].ends_with(' ') =>
            {
                line[at..].trim()
            }
            _ => line.trim(),
        };
        let (field_path, message) = split_field_path(message);
        let message = strip_aggregation(message);
        if !is_failure_line(message) {
            return;
        }
        let mut subject = self.current.clone();
        if let Some((kind, name)) = field_path {
            subject.image = self
                .images
                .iter()
                .find(|(k, n, _)| *k == kind && *n == name)
                .map(|c| c.2.clone());
            subject.container = Some(name);
            subject.container_kind = Some(kind);
        }
        if let Some(image) = image_named(message) {
            subject.image = Some(image);
        }
        self.out.push(Message {
            text: cap(message.to_string()),
            origin: format!("line {}", number + 1),
            subject,
            seen: None,
        });
    }

    /// A line under `Containers:` (and the like): a container's name, image, waiting reason.
    fn container_line(&mut self, number: usize, line: &str, kind: ContainerKind) {
        let trimmed = line.trim();
        if line.starts_with("  ") && !line.starts_with("   ") && trimmed.ends_with(':') {
            self.container = Some(trimmed.trim_end_matches(':').to_string());
        } else if let (Some(image), Some(name)) = (trimmed.strip_prefix("Image:"), &self.container)
        {
            self.images
                .push((kind, name.clone(), image.trim().to_string()));
        } else if let (Some(reason), Some(name)) =
            (trimmed.strip_prefix("Reason:"), &self.container)
            && pod::IMAGE_REASONS.contains(&reason.trim())
        {
            // The container's state: describe prints the waiting reason, not its message.
            let reason = reason.trim().to_string();
            self.out.push(Message {
                text: reason.clone(),
                origin: format!("line {}", number + 1),
                subject: Subject {
                    container: Some(name.clone()),
                    container_kind: Some(kind),
                    image: self
                        .images
                        .iter()
                        .find(|(k, n, _)| *k == kind && n == name)
                        .map(|c| c.2.clone()),
                    waiting_reason: Some(reason),
                    ..self.current.clone()
                },
                seen: None,
            });
        }
    }

    fn finish(self) -> Option<Vec<Message>> {
        let is_describe = self.has_events || (self.has_name && self.has_containers);
        (is_describe && !self.out.is_empty()).then_some(self.out)
    }
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

/// Messages or a log: each failure line starts a message. A line that is not a log record of
/// its own continues the previous message (old Docker prints one ping error per line); other
/// log lines are noise. A message a terminal wrapped continues whatever its next line holds:
/// inside a quoted name (`"r.example/e` + `ks/pause:3.5": failed to pull …`, no character lost
/// at the wrap) or between a gRPC status's code and its `desc`. Text with no failure line is
/// one message (the classifier says what it is). In describe-like text only the `Events:`
/// table speaks about pulls: what comes before the first line starting `Events:` is dropped.
#[derive(Default)]
struct Plain {
    out: Listing,
    /// The first line of the body (after `Events:`), so lines number from it.
    body_start: usize,
    cut: bool,
    /// The lines so far, joined, in case none speaks of a pull (cut past `MAX_MESSAGE`).
    joined: String,
    any_failure: bool,
    /// The number of the line the last message ended on: a wrap continues on the very next one.
    last_line: Option<usize>,
    /// Whether that line ended in a space: a tool that wraps at spaces leaves the space there
    /// (`failed to do request: Head ` + `"https://…": server gave HTTP ` + `response to …`).
    ended_in_space: bool,
}

impl Plain {
    fn line(&mut self, number: usize, raw: &str) {
        let mut line = raw;
        if !self.cut
            && number > 0
            && let Some(rest) = raw.strip_prefix("Events:")
        {
            *self = Plain {
                body_start: number,
                cut: true,
                ..Plain::default()
            };
            line = rest;
        }
        if line.trim().is_empty() || is_table_header(line) {
            return;
        }
        let number = number - self.body_start;
        if !self.any_failure && self.joined.len() <= MAX_MESSAGE {
            if !self.joined.is_empty() {
                self.joined.push('\n');
            }
            self.joined.push_str(line.trim());
        }
        let failure = is_failure_line(line);
        self.any_failure |= failure;
        let next_line = self.last_line == Some(number.wrapping_sub(1));
        let soft_wrapped = next_line && self.ended_in_space;
        self.ended_in_space = line.ends_with([' ', '\t']);
        if let Some(last) = self.out.last_mut()
            && next_line
            && last.text.len() < MAX_MESSAGE
            && let Some(separator) = wrapped_continuation(&last.text, line)
        {
            last.text.push_str(separator);
            last.text.push_str(line.trim());
            last.text = cap(std::mem::take(&mut last.text));
            self.last_line = Some(number);
        } else if failure {
            self.out.push(Message {
                text: cap(line.trim().to_string()),
                origin: format!("line {}", number + 1),
                subject: Subject::default(),
                seen: None,
            });
            self.last_line = Some(number);
        } else if let Some(last) = self.out.last_mut()
            && !is_log_record(line)
            && last.text.len() < MAX_MESSAGE
        {
            last.text.push(if soft_wrapped { ' ' } else { '\n' });
            last.text.push_str(line.trim());
            self.last_line = Some(number);
        }
    }

    fn finish(self) -> (Vec<Message>, u64) {
        if self.any_failure {
            return self.out.finish();
        }
        if self.joined.is_empty() {
            return (Vec::new(), 0);
        }
        let whole = Message {
            text: cap(self.joined),
            origin: "input".into(),
            subject: Subject::default(),
            seen: None,
        };
        (vec![whole], 0)
    }
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
pub(super) fn is_log_record(line: &str) -> bool {
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

fn is_table_header(line: &str) -> bool {
    let words: Vec<&str> = line.split_whitespace().collect();
    words.starts_with(&["Type", "Reason"]) || words.iter().all(|w| w.chars().all(|c| c == '-'))
}
