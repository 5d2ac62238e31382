use super::*;
use serde_json::json;

#[test]
fn a_report_among_other_lines_with_unknown_fields() {
    let log = "pullpath: warning: something\n{\n  \"schema\": \"pullpath.report/v1\", \"command\": \"probe\", \"future\": [1],\n  \"verdict\": {\"passed\": false, \"decided\": true, \"layer\": \"refused\", \"hop\": \"registry\", \"host\": \"r.example:5000\", \"cause\": \"connection refused\"},\n  \"hand_fixes\": [\"/etc/hosts maps r.example\"], \"elapsed_ms\": 12\n}\n";
    let a = from_log(log).expect("parsed");
    let Verdict::Failed(failure) = &a.verdict else {
        panic!("not a failure: {:?}", a.verdict);
    };
    assert_eq!(failure.fault.layer(), Layer::Refused);
    assert_eq!(failure.seen.hop, Some(Hop::Registry));
    assert_eq!(failure.seen.host.as_deref(), Some("r.example:5000"));
    assert_eq!(a.hand_fixes.len(), 1);
}

#[test]
fn an_unknown_authority_is_read_from_the_problems_kind_not_its_words() {
    let report = |tls: &str| {
        format!(
            r#"{{"schema": "pullpath.report/v1", "command": "probe", "verdict": {{"passed": false, "decided": true, "layer": "tls"}},
            "hosts": [{{"host": "r.example", "port": 443, "tls": {tls}}}]}}"#
        )
    };
    let unknown = from_log(&report(
        r#"{"ok": false, "problem": "certificate signed by unknown authority: issuer \"CN=Corp\" is not in the trusted roots", "problem_kind": "unknown-authority", "chain": [{"issuer": "CN=Corp"}]}"#,
    ))
    .expect("report");
    assert_eq!(
        unknown.trust,
        [TrustSeen {
            host: "r.example:443".into(),
            issuer: "CN=Corp".into(),
            verified: false,
            unknown_authority: true,
        }]
    );
    // The words alone decide nothing; another kind is not an unknown authority.
    for tls in [
        r#"{"ok": false, "problem": "unknown authority", "chain": [{"issuer": "CN=Corp"}]}"#,
        r#"{"ok": false, "problem": "certificate expired", "problem_kind": "expired", "chain": [{"issuer": "CN=Corp"}]}"#,
    ] {
        let read = from_log(&report(tls)).expect("report");
        assert!(!read.trust[0].unknown_authority, "{tls}");
    }
}

#[test]
fn garbage_other_schemas_and_unknown_layers_are_clear_errors() {
    assert_eq!(
        from_log("").expect_err("empty"),
        UnreadableReport::NoReport {
            last_line: "empty".into()
        }
    );
    assert_eq!(
        from_log("exec format error\n").expect_err("none"),
        UnreadableReport::NoReport {
            last_line: "last line: \"exec format error\"".into()
        }
    );
    assert!(matches!(
        from_log("{not json").expect_err("bad"),
        UnreadableReport::Malformed { .. }
    ));
    let other = r#"{"schema": "pullpath.findings/v1", "command": "scan", "verdict": {"passed": true, "decided": true}}"#;
    let refused = from_log(other).expect_err("other");
    assert_eq!(
        refused,
        UnreadableReport::OtherSchema {
            schema: "pullpath.findings/v1".into(),
            command: "scan".into()
        }
    );
    assert!(refused.to_string().contains("another version"));
    let unknown = r#"{"schema": "pullpath.report/v1", "command": "probe", "verdict": {"passed": false, "decided": true, "layer": "quantum"}}"#;
    assert_eq!(
        from_log(unknown).expect_err("layer"),
        UnreadableReport::UnknownLayer {
            name: "quantum".into()
        }
    );
}

#[test]
fn the_verdict_reads_back_into_its_states_and_a_failure_without_a_layer_is_refused() {
    let report = |verdict: &str| {
        format!(r#"{{"schema": "pullpath.report/v1", "command": "probe", "verdict": {verdict}}}"#)
    };
    let passed = from_log(&report(r#"{"passed": true, "decided": true}"#)).expect("passed");
    assert_eq!(passed.verdict, Verdict::Passed);
    let blob = from_log(&report(
        r#"{"passed": false, "decided": true, "layer": "blob", "hop": "blob", "host": "s.example", "mechanism": "route"}"#,
    ))
    .expect("blob");
    let fault = blob.verdict.fault().expect("a fault");
    assert_eq!(
        (fault.layer(), fault.mechanism(), fault.owner()),
        (
            Layer::Blob,
            Some(Layer::Route),
            crate::vocab::Owner::NetworkTeam
        )
    );
    // An undecided report keeps its leaning; without `decided` a failure is undecided.
    let leaning = from_log(&report(r#"{"passed": false, "layer": "dns"}"#)).expect("leaning");
    assert!(
        matches!(&leaning.verdict, Verdict::Undecided(u) if u.leaning.map(|f| f.layer()) == Some(Layer::Dns))
    );
    let nameless = report(r#"{"passed": false, "decided": true, "cause": "x"}"#);
    assert_eq!(
        from_log(&nameless).expect_err("no layer"),
        UnreadableReport::FailedWithoutLayer
    );
}

#[test]
fn the_probe_images_own_pull_failure_is_explained() {
    let message = "rpc error: code = Unknown desc = failed to pull and unpack image \"r.example/tools/pullpath:0.1.0\": failed to resolve reference \"r.example/tools/pullpath:0.1.0\": failed to do request: Head \"https://r.example/v2/tools/pullpath/manifests/0.1.0\": dial tcp 10.0.0.5:443: i/o timeout";
    let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "pullpath"},
        "spec": {"containers": [{"name": "probe", "image": "r.example/tools/pullpath:0.1.0"}]},
        "status": {"phase": "Pending", "containerStatuses": [{"name": "probe", "image": "r.example/tools/pullpath:0.1.0", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"waiting": {"reason": "ErrImagePull", "message": message}}}]}
    }))
    .expect("pod");
    let Some(Answer::ProbeImagePull {
        explained, reason, ..
    }) = probe_image_pull(&pod)
    else {
        panic!("not explained");
    };
    assert_eq!(reason, "ErrImagePull");
    assert_eq!(explained.verdict.layer(), Some(Layer::Route));
    assert_eq!(
        explained.verdict.seen().and_then(|s| s.host.as_deref()),
        Some("r.example")
    );
    // A back-off that names no cause is waited past; one that carries it is explained.
    let backoff = |text: &str| {
        let mut p = pod.clone();
        let waiting = p
            .status
            .as_mut()
            .and_then(|s| s.container_statuses.as_mut())
            .and_then(|c| c[0].state.as_mut())
            .and_then(|s| s.waiting.as_mut())
            .expect("waiting");
        waiting.reason = Some("ImagePullBackOff".into());
        waiting.message = Some(text.into());
        probe_image_pull(&p)
    };
    assert!(backoff("Back-off pulling image \"r.example/tools/pullpath:0.1.0\"").is_none());
    assert!(matches!(
        backoff(&format!(
            "Back-off pulling image \"r.example/tools/pullpath:0.1.0\": ErrImagePull: {message}"
        )),
        Some(Answer::ProbeImagePull { .. })
    ));
}
