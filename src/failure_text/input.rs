//! Whatever the user pasted → the failure messages in it, oldest first.
//!
//! Accepted: one message; many lines of messages or a runtime log; `kubectl describe pod`
//! output (its `Events:` table); `kubectl get events -o json` (an `EventList` or one `Event`);
//! `kubectl get pod -o json` (the waiting reasons of its container statuses).

use serde_json::Value;

/// One message found in the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The message text (event prefixes such as `Warning Failed 2m kubelet` kept: harmless).
    pub text: String,
    /// Where it came from, for the report: `line 12`, `event 3`.
    pub origin: String,
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
    if (trimmed.starts_with('{') || trimmed.starts_with('['))
        && let Ok(value) = serde_json::from_str::<Value>(trimmed)
    {
        let found = from_json(&value);
        if !found.is_empty() {
            return found;
        }
    }
    from_text(trimmed)
}

fn from_json(value: &Value) -> Vec<Message> {
    let mut events: Vec<(String, String)> = Vec::new();
    let items: Vec<&Value> = match value {
        Value::Array(items) => items.iter().collect(),
        Value::Object(o) if o.contains_key("items") => o["items"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default(),
        other => vec![other],
    };
    for item in items {
        if let Some(message) = item.get("message").and_then(Value::as_str) {
            // Event: order by when it first happened.
            let when = ["eventTime", "firstTimestamp", "lastTimestamp"]
                .iter()
                .find_map(|k| item.get(*k).and_then(Value::as_str))
                .unwrap_or("")
                .to_string();
            events.push((when, message.to_string()));
        } else if let Some(statuses) = item
            .pointer("/status/containerStatuses")
            .and_then(Value::as_array)
        {
            // Pod: the waiting or terminated message of each container.
            for status in statuses {
                for path in ["/state/waiting/message", "/lastState/terminated/message"] {
                    if let Some(m) = status.pointer(path).and_then(Value::as_str) {
                        events.push((String::new(), m.to_string()));
                    }
                }
            }
        }
    }
    events.sort_by(|a, b| a.0.cmp(&b.0));
    events
        .into_iter()
        .enumerate()
        .map(|(i, (_, text))| Message {
            text: cap(text),
            origin: format!("event {}", i + 1),
        })
        .collect()
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
        }];
    }
    // Each failure line starts a message. A line that is not a log record of its own continues
    // the previous message (old Docker prints one ping error per line); other log lines are noise.
    let mut out: Vec<Message> = Vec::new();
    for (number, line) in lines {
        if is_failure_line(line) {
            out.push(Message {
                text: cap(line.trim().to_string()),
                origin: format!("line {}", number + 1),
            });
        } else if let Some(last) = out.last_mut()
            && !is_log_record(line)
            && last.text.len() < MAX_MESSAGE
        {
            last.text.push('\n');
            last.text.push_str(line.trim());
        }
    }
    out
}

/// A line that starts a record of its own: logfmt, a timestamp, klog's `E0102`, syslog's month.
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
        || l.starts_with(|c: char| c.is_ascii_digit())
        || MONTHS.iter().any(|m| l.starts_with(m))
        || klog
        || (line.starts_with(|c: char| !c.is_whitespace()) && l.contains(" kubelet "))
}

fn is_failure_line(line: &str) -> bool {
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
mod tests {
    use super::*;

    #[test]
    fn describe_output_yields_its_events_in_order() {
        let describe = "Name: web-1\nStatus: Pending\nEvents:\n  Type     Reason     Age   From     Message\n  ----     ------     ----  ----     -------\n  Normal   Scheduled  2m    default-scheduler  Successfully assigned default/web-1 to node-a\n  Normal   Pulling    2m    kubelet  Pulling image \"r.example/app:v1\"\n  Warning  Failed     2m    kubelet  Failed to pull image \"r.example/app:v1\": rpc error: code = Unknown desc = x: no such host\n  Warning  Failed     2m    kubelet  Error: ErrImagePull\n  Normal   BackOff    1m    kubelet  Back-off pulling image \"r.example/app:v1\"\n";
        let found = messages(describe);
        assert_eq!(found.len(), 3, "{found:#?}");
        assert!(found[0].text.contains("no such host"));
        assert!(found[2].text.contains("Back-off"));
    }

    #[test]
    fn events_json_is_ordered_by_first_timestamp() {
        let json = r#"{"kind":"EventList","items":[
            {"message":"Back-off pulling image \"a\"","firstTimestamp":"2026-01-01T00:05:00Z"},
            {"message":"Failed to pull image \"a\": rpc error: code = NotFound desc = not found","firstTimestamp":"2026-01-01T00:01:00Z"}]}"#;
        let found = messages(json);
        assert_eq!(found.len(), 2);
        assert!(found[0].text.contains("NotFound"));
    }

    #[test]
    fn pod_json_yields_its_waiting_messages() {
        let pod = r#"{"kind":"Pod","status":{"containerStatuses":[{"name":"app","state":{"waiting":{"reason":"ErrImagePull","message":"rpc error: code = Unknown desc = failed to pull and unpack image \"r/app:v1\": x509: certificate signed by unknown authority"}}}]}}"#;
        let found = messages(pod);
        assert_eq!(found.len(), 1);
        assert!(found[0].text.contains("x509"));
    }

    #[test]
    fn a_multi_line_single_error_stays_one_message() {
        let text = "Error response from daemon: unable to ping registry\nv2 ping attempt failed with error: Get https://r/v2/: EOF\n";
        assert_eq!(messages(text).len(), 1);
    }

    #[test]
    fn empty_and_huge_inputs() {
        assert!(messages("   \n\n").is_empty());
        let huge = "x".repeat(200_000);
        assert_eq!(messages(&huge)[0].text.len(), MAX_MESSAGE);
    }
}
