//! A large cluster's `kubectl get events -A -o json`, generated in its shape (the fields
//! `explain` reads and a few more, indented by two: about 500 bytes an event, as in issue 30's
//! measurement of 120,000 events in 60 MB): the input of
//! tests/explain_stream.rs and of `cargo bench --bench explain`. Written to any writer, so the
//! bench can make half a gigabyte without holding it.
//!
//! One pod in a hundred fails to pull its image, by turns for one of three causes ([`CAUSES`]);
//! the others are scheduled, pull, create and start. Their first timestamps spread evenly over
//! `seconds` (an hour: events live an hour, `--event-ttl`), so many share one as a busy
//! cluster's do; a span of as many seconds as events makes each time its own.

use std::io::{self, Write};

/// Each cause: its layer (the report's word), the image and the host it names, the message.
pub const CAUSES: [(&str, &str, &str); 3] = [
    (
        "notfound",
        "registry.example.test/shop/gone:v1",
        "rpc error: code = NotFound desc = failed to pull and unpack image \\\"registry.example.test/shop/gone:v1\\\": failed to resolve reference \\\"registry.example.test/shop/gone:v1\\\": registry.example.test/shop/gone:v1: not found",
    ),
    (
        "dns",
        "mirror.example.test/shop/app:v1",
        "rpc error: code = Unknown desc = failed to pull and unpack image \\\"mirror.example.test/shop/app:v1\\\": failed to resolve reference \\\"mirror.example.test/shop/app:v1\\\": failed to do request: Head \\\"https://mirror.example.test/v2/shop/app/manifests/v1\\\": dial tcp: lookup mirror.example.test on 10.0.0.10:53: read udp 10.0.0.5:41000->10.0.0.10:53: i/o timeout",
    ),
    (
        "auth",
        "private.example.test/shop/app:v1",
        "rpc error: code = Unknown desc = failed to pull and unpack image \\\"private.example.test/shop/app:v1\\\": failed to resolve reference \\\"private.example.test/shop/app:v1\\\": failed to authorize: failed to fetch anonymous token: unexpected status from GET request to https://private.example.test/token?scope=repository%3Ashop%2Fapp%3Apull&service=private.example.test: 401 Unauthorized",
    ),
];

/// What was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Generated {
    pub events: usize,
    pub bytes: u64,
    /// Failing pods per cause, in [`CAUSES`] order.
    pub failing: [usize; 3],
}

/// Write an event list of at least `events` events (whole pods: a few more at most), their
/// first timestamps over `seconds`.
pub fn write_events(out: impl Write, events: usize, seconds: usize) -> io::Result<Generated> {
    let mut out = Counting {
        inner: out,
        bytes: 0,
    };
    out.write_all(b"{\n\"apiVersion\": \"v1\",\n\"items\": [\n")?;
    let mut written = 0;
    let mut failing = [0; 3];
    let mut pod = 0;
    while written < events {
        let ns = format!("team-{}", pod % 37);
        let name = format!(
            "web-{:x}-{pod:06}",
            0x5f3a_u32.wrapping_mul(pod as u32 + 1) >> 4
        );
        let node = format!("ip-10-0-{}-{}.ec2.internal", pod % 16, pod % 250);
        let fails = pod % 100 == 37;
        let (cause, image) = if fails {
            let cause = pod / 100 % 3;
            failing[cause] += 1;
            (Some(CAUSES[cause].2), CAUSES[cause].1)
        } else {
            (None, "registry.example.test/shop/app:v1")
        };
        let pulled = format!(
            "Successfully pulled image \\\"{image}\\\" in 1.204s (1.204s including waiting). Image size: 52428800 bytes."
        );
        let pulling = format!("Pulling image \\\"{image}\\\"");
        let scheduled = format!("Successfully assigned {ns}/{name} to {node}");
        let mut list: Vec<(&str, &str, String)> = vec![
            ("Normal", "Scheduled", scheduled),
            ("Normal", "Pulling", pulling),
        ];
        match cause {
            Some(cause) => list.extend([
                (
                    "Warning",
                    "Failed",
                    format!("Failed to pull image \\\"{image}\\\": {cause}"),
                ),
                ("Warning", "Failed", "Error: ErrImagePull".to_string()),
                (
                    "Normal",
                    "BackOff",
                    format!("Back-off pulling image \\\"{image}\\\""),
                ),
                ("Warning", "Failed", "Error: ImagePullBackOff".to_string()),
            ]),
            None => list.extend([
                ("Normal", "Pulled", pulled),
                ("Normal", "Created", "Created container: app".to_string()),
                ("Normal", "Started", "Started container app".to_string()),
            ]),
        }
        for (kind, reason, message) in list {
            let at = (written, events, seconds);
            write_event(&mut out, at, [kind, reason, &message], [&ns, &name, &node])?;
            written += 1;
        }
        pod += 1;
    }
    finish(out, written, failing)
}

/// A registry outage (issue 45): `pods` pods all fail to pull, each its four messages
/// (the pull's failure by turns for one of [`CAUSES`], `ErrImagePull`, the back-off and
/// `ImagePullBackOff`) repeated as the kubelet's back-off retries, `events` in all, the pods'
/// events interleaved, their first timestamps over `seconds`.
pub fn write_outage(
    out: impl Write,
    events: usize,
    pods: usize,
    seconds: usize,
) -> io::Result<Generated> {
    let mut out = Counting {
        inner: out,
        bytes: 0,
    };
    out.write_all(b"{\n\"apiVersion\": \"v1\",\n\"items\": [\n")?;
    let mut failing = [0; 3];
    for pod in 0..pods.min(events) {
        failing[pod % 3] += 1;
    }
    let pods = pods.max(1);
    for written in 0..events {
        let pod = written % pods;
        let (_, image, cause) = CAUSES[pod % 3];
        let ns = format!("team-{}", pod % 37);
        let name = format!("web-{pod:06}");
        let node = format!("ip-10-0-{}-{}.ec2.internal", pod % 16, pod % 250);
        let (kind, reason, message) = match written / pods % 4 {
            0 => (
                "Warning",
                "Failed",
                format!("Failed to pull image \\\"{image}\\\": {cause}"),
            ),
            1 => ("Warning", "Failed", "Error: ErrImagePull".to_string()),
            2 => (
                "Normal",
                "BackOff",
                format!("Back-off pulling image \\\"{image}\\\""),
            ),
            _ => ("Warning", "Failed", "Error: ImagePullBackOff".to_string()),
        };
        let at = (written, events, seconds);
        write_event(&mut out, at, [kind, reason, &message], [&ns, &name, &node])?;
    }
    finish(out, events, failing)
}

/// One event of the list, as kubectl prints it: the `written`th of `events` (its first
/// timestamp placed over `seconds`), its type, reason and message, about a pod (namespace,
/// name, node).
fn write_event(
    out: &mut impl Write,
    (written, events, seconds): (usize, usize, usize),
    [kind, reason, message]: [&str; 3],
    [ns, name, node]: [&str; 3],
) -> io::Result<()> {
    if written > 0 {
        out.write_all(b",\n")?;
    }
    let time = timestamp(written * seconds / events.max(1));
    let field_path = if reason == "Scheduled" {
        String::new()
    } else {
        "\n      \"fieldPath\": \"spec.containers{app}\",".to_string()
    };
    write!(
        out,
        r#"  {{
    "firstTimestamp": "{time}",
    "involvedObject": {{{field_path}
      "kind": "Pod",
      "name": "{name}",
      "namespace": "{ns}"
    }},
    "kind": "Event",
    "message": "{message}",
    "metadata": {{
      "name": "{name}.{written:x}",
      "namespace": "{ns}"
    }},
    "reason": "{reason}",
    "source": {{
      "host": "{node}"
    }},
    "type": "{kind}"
  }}"#
    )
}

/// The list's end, and what was written.
fn finish<W: Write>(
    mut out: Counting<W>,
    events: usize,
    failing: [usize; 3],
) -> io::Result<Generated> {
    out.write_all(
        b"\n],\n\"kind\": \"List\",\n\"metadata\": {\n  \"resourceVersion\": \"\"\n}\n}\n",
    )?;
    out.flush()?;
    Ok(Generated {
        events,
        bytes: out.bytes,
        failing,
    })
}

/// RFC 3339, `seconds` after 2026-12-01T00:00:00Z (within the month).
fn timestamp(seconds: usize) -> String {
    let (day, rest) = (seconds / 86_400 % 30, seconds % 86_400);
    format!(
        "2026-12-{:02}T{:02}:{:02}:{:02}Z",
        day + 1,
        rest / 3600,
        rest / 60 % 60,
        rest % 60
    )
}

struct Counting<W> {
    inner: W,
    bytes: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
