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
