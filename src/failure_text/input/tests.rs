use super::lines::is_log_record;
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
fn describe_columns_field_paths_and_aggregation_stay_out_of_the_message() {
    let describe = "Name:             worker-0\nNamespace:        shop\nNode:             n1/10.0.0.4\nInit Containers:\n  migrate:\n    Image:          r/m:1\n    State:          Waiting\n      Reason:       ImagePullBackOff\nContainers:\n  app:\n    Image:          r/app:1\nEvents:\n  Type     Reason   Age                From     Message\n  ----     ------   ----               ----     -------\n  Warning  Failed   28m (x4 over 34m)  kubelet  spec.initContainers{migrate}: Failed to pull image \"r/m:1\": rpc error: code = NotFound desc = r/m:1: not found\n  Normal   BackOff  5m (x14 over 34m)  kubelet  spec.initContainers{migrate}: (combined from similar events): Back-off pulling image \"r/m:1\"\n";
    let found = messages(describe);
    assert_eq!(found.len(), 3, "{found:#?}");
    assert_eq!(found[0].text, "ImagePullBackOff");
    assert!(
        found[1].text.starts_with("Failed to pull image"),
        "{found:#?}"
    );
    assert_eq!(found[2].text, "Back-off pulling image \"r/m:1\"");
    let s = &found[1].subject;
    assert_eq!(
        (
            s.pod.as_deref(),
            s.namespace.as_deref(),
            s.node.as_deref(),
            s.container.as_deref(),
            s.image.as_deref()
        ),
        (
            Some("worker-0"),
            Some("shop"),
            Some("n1"),
            Some("migrate"),
            Some("r/m:1")
        )
    );
    assert_eq!(s.container_kind, Some(ContainerKind::Init));
}

#[test]
fn describe_without_events_still_names_the_waiting_containers() {
    let describe = "Name:         a\nNamespace:    shop\nContainers:\n  web:\n    Image:          r/web:1\n    State:          Waiting\n      Reason:       ErrImagePull\n\n\nName:         b\nContainers:\n  web:\n    Image:          r/web:1\n    State:          Running\n";
    let found = messages(describe);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].subject.pod.as_deref(), Some("a"));
    assert_eq!(
        found[0].subject.waiting_reason.as_deref(),
        Some("ErrImagePull")
    );
}

#[test]
fn pod_yaml_is_read_as_a_pod() {
    let yaml = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web-1\n  namespace: shop\nspec:\n  nodeName: n2\n  containers:\n  - name: web\n    image: r/web:1\nstatus:\n  containerStatuses:\n  - name: web\n    image: r/web:1\n    imageID: \"\"\n    ready: false\n    restartCount: 0\n    state:\n      waiting:\n        reason: ErrImagePull\n        message: 'rpc error: code = NotFound desc = r/web:1: not found'\n";
    let found = messages(yaml);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].text,
        "rpc error: code = NotFound desc = r/web:1: not found"
    );
    assert_eq!(found[0].subject.node.as_deref(), Some("n2"));
    assert_eq!(found[0].origin, "status.containerStatuses[web]");
}

#[test]
fn malformed_yaml_and_json_fall_back_to_text_without_panicking() {
    for text in [
        "apiVersion: v1\nkind: Pod\n  - : [",
        "{\"kind\": \"Pod\", \"status\": 5}",
        "kind: Pod\nstatus: {containerStatuses: 7}",
        "{\"items\": [{\"kind\":\"Pod\",\"status\":{\"containerStatuses\":[{\"state\":{\"waiting\":{\"reason\":7}}}]}}]}",
    ] {
        let _ = messages(text);
    }
}

#[test]
fn a_multi_line_single_error_stays_one_message() {
    let text = "Error response from daemon: unable to ping registry\nv2 ping attempt failed with error: Get https://r/v2/: EOF\n";
    assert_eq!(messages(text).len(), 1);
}

#[test]
fn a_message_a_terminal_wrapped_is_joined_again() {
    // Inside a quoted name: nothing was lost at the wrap.
    let text = "Warning  Failed  3m  kubelet  Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image \"r.example/e\nks/pause:3.5\": failed to pull image \"r.example/eks/pause:3.5\": no basic auth credentials";
    let m = messages(text);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].text
            .contains("\"r.example/eks/pause:3.5\": failed to pull image")
    );
    // Between a gRPC code and its desc; a status line that starts with its number.
    let text = "Failed to pull image \"busybox\": rpc error: code = Unknown\ndesc = failed to pull and unpack image \"docker.io/library/busybox:latest\": failed open:\n429 Too Many Requests - Server message: toomanyrequests: limit";
    let m = messages(text);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(m[0].text.contains("code = Unknown desc = failed to pull"));
    assert!(m[0].text.contains("429 Too Many Requests"));
    // Two events, each whole: the second is no continuation of the first; nor is a log
    // record after a message cut off inside a quote.
    let text = "Failed to pull image \"a\": rpc error: code = NotFound desc = x\nFailed to pull image \"b\": rpc error: code = NotFound desc = y";
    assert_eq!(messages(text).len(), 2);
    let text = "Failed to pull image \"r.example/a\nI0102 15:04:05.000000 1 kuberuntime_image.go:51] Failed to pull image \"b\": EOF";
    assert_eq!(messages(text).len(), 2);
    // Nor a failure line after noise: a wrap continues on the very next line only.
    let text = "Failed to pull image \"r.example/a\ntime=\"2026-01-01T00:00:00Z\" level=info msg=progress\nFailed to pull image \"b\": EOF";
    assert_eq!(messages(text).len(), 2);
}

#[test]
fn a_line_wrapped_at_a_space_continues_with_the_space() {
    let text = "ErrImagePull: rpc error: code = Unknown desc = failed to do request: Head \n\"https://r.example/v2/a/manifests/1\": http: server gave HTTP \nresponse to HTTPS client";
    let m = messages(text);
    assert_eq!(m.len(), 1, "{m:?}");
    assert!(
        m[0].text
            .ends_with("Head \"https://r.example/v2/a/manifests/1\": http: server gave HTTP response to HTTPS client"),
        "{}",
        m[0].text
    );
    // A registry's list of errors keeps its lines.
    let text = "Error: reading manifest 1 in r.example/a: errors:\ndenied: requested access to the resource is denied\nunauthorized: authentication required";
    assert!(messages(text)[0].text.contains("errors:\ndenied"));
}

#[test]
fn timestamps_addresses_and_pids_start_records_a_bare_number_does_not() {
    for record in [
        "2024-05-01T10:00:00Z error",
        "10:31:02 kubelet",
        "10.25.2.10: {\"msg\": 1}",
        "15542 kuberuntime_image.go:51] Pull image",
    ] {
        assert!(is_log_record(record), "{record}");
    }
    assert!(!is_log_record("429 Too Many Requests - Server message"));
}

#[test]
fn empty_and_huge_inputs() {
    assert!(messages("   \n\n").is_empty());
    let huge = "x".repeat(200_000);
    assert_eq!(messages(&huge)[0].text.len(), MAX_MESSAGE);
}

/// A reader that gives at most `step` bytes per read, so chunk boundaries fall everywhere:
/// inside a UTF-8 character, a JSON string, an escape, between `\r` and `\n`.
pub(in crate::failure_text::input) struct Trickle<'a> {
    data: Cursor<&'a [u8]>,
    step: usize,
}

impl<'a> Trickle<'a> {
    pub(in crate::failure_text::input) fn new(data: &'a [u8], step: usize) -> Trickle<'a> {
        Trickle {
            data: Cursor::new(data),
            step,
        }
    }
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.step);
        self.data.read(&mut buf[..n])
    }
}

impl Seek for Trickle<'_> {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        self.data.seek(pos)
    }
}

/// `read` of `input` with the real limits, its chunks `step` bytes long.
fn read_in_steps(input: &str, step: usize) -> Result<Input, ReadError> {
    read(Trickle::new(input.as_bytes(), step), &LIMITS)
}

const NOT_FOUND: &str =
    r#"Failed to pull image \"r/é:1\": rpc error: code = NotFound desc = r/é:1: not found"#;

/// An events list of `pods` pods: the middle pod fails to pull; the rest are pulled and
/// started. Two events share each first timestamp, so order among equal times counts too.
fn event_list(pods: usize) -> String {
    let mut items = Vec::new();
    for p in 0..pods {
        let event = |n: usize, reason: &str, message: &str| {
            format!(
                r#"{{"kind":"Event","metadata":{{"namespace":"shop"}},"involvedObject":{{"kind":"Pod","namespace":"shop","name":"p{p}","fieldPath":"spec.containers{{app}}"}},"reason":"{reason}","message":"{message}","firstTimestamp":"2026-01-01T00:{:02}:{:02}Z","source":{{"host":"n{}"}}}}"#,
                (p * 3 + n) / 120 % 60,
                (p * 3 + n) / 2 % 60,
                p % 3
            )
        };
        items.push(event(0, "Pulling", r#"Pulling image \"r/é:1\""#));
        if p == pods / 2 {
            items.push(event(1, "Failed", NOT_FOUND));
            items.push(event(2, "BackOff", r#"Back-off pulling image \"r/é:1\""#));
        } else {
            items.push(event(1, "Pulled", r#"Successfully pulled image \"r/é:1\""#));
            items.push(event(2, "Started", "Started container app"));
        }
    }
    format!(
        "{{\r\n\"apiVersion\": \"v1\",\r\n\"items\": [\r\n{}\r\n],\r\n\"kind\": \"List\"\r\n}}\r\n",
        items.join(",\r\n")
    )
}

#[test]
fn a_streamed_list_gives_what_the_whole_document_gives_at_any_chunk_size() {
    let list = event_list(40);
    let whole = from_json(&serde_json::from_str(&list).expect("JSON"));
    let whole_explained = crate::failure_text::explain_each(whole.clone());
    for step in [1, 2, 3, 7, 64, 4096, 1 << 20] {
        let found = read_in_steps(&list, step).expect("a list").messages;
        // Only the failing pod's events are kept; what is explained is the same, numbered the same.
        assert_eq!(found.len(), 3, "step {step}");
        assert!(
            found
                .iter()
                .all(|m| m.subject.pod.as_deref() == Some("p20"))
        );
        assert_eq!(found[0].origin, "event 61");
        let explained = crate::failure_text::explain_each(found);
        assert_eq!(explained.len(), whole_explained.len());
        for (a, b) in explained.iter().zip(&whole_explained) {
            assert_eq!(a.subject, b.subject, "step {step}");
            let messages = |e: &crate::failure_text::Explained| {
                e.explanation
                    .messages
                    .iter()
                    .map(|(m, _)| m.clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(messages(a), messages(b), "step {step}");
        }
        assert_eq!(explained[0].subject.image.as_deref(), Some("r/é:1"));
    }
}

#[test]
fn events_out_of_time_order_are_placed_as_the_whole_document_places_them() {
    // Reversed: times fall as the input goes on, and equal times come in the other order.
    let mut list: Value = serde_json::from_str(&event_list(30)).expect("JSON");
    if let Some(items) = list["items"].as_array_mut() {
        items.reverse();
        // A Pod of the failing pod between its events, and a Node: neither is an event.
        items.insert(
            7,
            serde_json::json!({"kind": "Node", "metadata": {"name": "n1"}}),
        );
        items.insert(
            40,
            serde_json::json!({"kind": "Pod", "metadata": {"name": "p15", "namespace": "shop"},
                "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "r/é:1"}]}}),
        );
    }
    let text = serde_json::to_string_pretty(&list).expect("JSON text");
    // Without counting times in the first pass (too many distinct ones), a third pass places
    // the kept events alike.
    let third = objects::read_counting(&mut Cursor::new(text.as_bytes()), 1 << 20, 0)
        .expect("a list")
        .expect("JSON");
    let whole = from_json(&list);
    let kept: Vec<Message> = whole
        .into_iter()
        .filter(|m| m.subject.pod.as_deref() == Some("p15"))
        .collect();
    for step in [1, 5, 1 << 20] {
        let found = read_in_steps(&text, step).expect("a list");
        assert_eq!(found.messages, kept, "step {step}");
        assert_eq!(third.messages, kept);
        assert_eq!(found.nodes.len(), 1);
    }
}

#[test]
fn a_list_without_a_failing_pod_keeps_every_event() {
    let list = event_list(1)
        .replace(NOT_FOUND, "Pulled")
        .replace("BackOff", "Pulled");
    let list = list.replace(
        r#"Back-off pulling image \"r/é:1\""#,
        "Started container app",
    );
    let found = read_in_steps(&list, 5).expect("a list").messages;
    assert_eq!(
        found,
        from_json(&serde_json::from_str(&list).expect("JSON"))
    );
    assert_eq!(found.len(), 3);
}

#[test]
fn log_lines_read_alike_at_any_chunk_size_crlf_and_utf8_split() {
    let log = "\u{feff}  \r\ntime=\"2026-01-01T00:00:00Z\" level=info msg=\"démarré\"\r\nFailed to pull image \"r/ü:1\": rpc error: code = Unknown desc = \"r/ü\r\n:1\": EOF\r\nnot a record: continues\r\n";
    let whole = messages(log);
    assert_eq!(whole.len(), 1, "{whole:#?}");
    assert!(!whole[0].text.contains('\r'));
    for step in [1, 2, 3, 5, 1 << 16] {
        assert_eq!(read_in_steps(log, step).expect("text").messages, whole);
    }
}

#[test]
fn broken_json_after_its_first_line_is_an_error_that_names_where() {
    let list = event_list(3);
    let cut = &list[..list.len() / 2];
    match read_in_steps(cut, 1000) {
        Err(e @ ReadError::Json(FrameError::Truncated { .. })) => {
            assert!(e.to_string().contains("truncated"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    // A malformed item: the byte it breaks at, in the whole input.
    let broken = list.replacen(r#""reason":"Pulling""#, r#""reason":Pulling"#, 1);
    match read_in_steps(&broken, 3) {
        Err(ReadError::Item { offset, .. }) => {
            assert_eq!(&broken[offset as usize..][..7], "Pulling");
        }
        other => panic!("{other:?}"),
    }
    // NUL bytes inside a JSON string are no JSON.
    let nul = list.replacen("Pulling image", "Pulling\0image", 1);
    assert!(matches!(
        read_in_steps(&nul, 1 << 20),
        Err(ReadError::Item { .. })
    ));
}

#[test]
fn invalid_utf8_in_a_json_item_reads_as_replacement_characters() {
    let list = event_list(1).replacen('é', "\u{0}", 1).into_bytes();
    // The first `é` becomes a lone continuation byte: invalid UTF-8, read as U+FFFD as before.
    let at = list.iter().position(|b| *b == 0).expect("marker");
    let mut bytes = list.clone();
    bytes[at] = 0xA9;
    let found = read(Cursor::new(&bytes[..]), &LIMITS).expect("read");
    assert_eq!(found.messages.len(), 3);
    assert!(
        found.messages[0].text.contains('\u{FFFD}'),
        "{:?}",
        found.messages
    );
}

#[test]
fn a_huge_line_or_item_is_refused_not_held() {
    let limits = Limits {
        item: 4096,
        line: 4096,
    };
    // One 64 MiB line without an end: refused after the limit, not read on.
    let endless = std::io::repeat(b'x').take(64 << 20);
    let mut counted = Counted(endless, 0);
    let text = lines::read(&mut counted, limits.line);
    assert!(
        matches!(
            text,
            Err(ReadError::LineTooLong {
                line: 1,
                limit: 4096
            })
        ),
        "{:?}",
        text.err()
    );
    assert!(counted.1 < 1 << 20, "read {} bytes", counted.1);
    // An item over the limit.
    let list = format!(
        "{{\"items\":[\n{{\"message\":\"{}\"}}]}}",
        "Failed to pull image ".repeat(1000)
    );
    let e = read(Cursor::new(list.as_bytes()), &limits).expect_err("too large");
    assert!(e.to_string().contains("larger than"), "{e}");
    // NUL bytes in text are text.
    let nul = "\0\0Failed to pull image \"r/a:1\": EOF\0\n\0";
    assert_eq!(read_in_steps(nul, 2).expect("text").messages.len(), 1);
}

/// A reader that counts the bytes taken from it.
struct Counted<R>(R, usize);

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.read(buf)?;
        self.1 += n;
        Ok(n)
    }
}
