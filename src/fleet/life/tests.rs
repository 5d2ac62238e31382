use super::*;
use serde_json::{Value, json};

const BUDGETS: Budgets = Budgets {
    start: Duration::from_secs(120),
    probe: Duration::from_secs(120),
};

fn origin(same: bool) -> ProbeOrigin {
    ProbeOrigin {
        same_registry: same,
        registry: "mirror.example".into(),
    }
}

fn pod(status: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "pullpath-fleet-x-0", "namespace": "pullpath"},
        "spec": {"containers": [{"name": "probe", "image": "mirror.example/tools/pullpath:1"}]},
        "status": status,
    }))
    .expect("pod")
}

fn waiting(reason: &str, message: &str) -> Pod {
    pod(
        json!({"phase": "Pending", "containerStatuses": [{"name": "probe", "image": "mirror.example/tools/pullpath:1",
            "imageID": "", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason, "message": message}}}]}),
    )
}

fn event(reason: &str, message: &str) -> Event {
    serde_json::from_value(json!({
        "metadata": {"name": "e", "namespace": "pullpath"},
        "involvedObject": {"kind": "Pod", "name": "pullpath-fleet-x-0", "namespace": "pullpath"},
        "reason": reason, "message": message, "type": "Warning", "count": 1,
    }))
    .expect("event")
}

fn at(since_create: u64) -> Clocks {
    Clocks {
        since_create: Duration::from_secs(since_create),
        since_running: None,
    }
}

fn problem_of(r: Reading) -> RunProblem {
    match r {
        Reading::Answer(answer) => match *answer {
            Answer::Problem(p) => p,
            other => panic!("not a problem: {other:?}"),
        },
        other => panic!("not a problem: {other:?}"),
    }
}

#[test]
fn a_failed_mount_event_is_named_at_once() {
    let pending = pod(json!({"phase": "Pending"}));
    let message = "MountVolume.SetUp failed for volume \"node-containerd\" : hostPath /etc/containerd doesn't exist";
    let p = problem_of(read(
        &pending,
        &[
            event("Scheduled", "assigned"),
            event("FailedMount", message),
        ],
        at(1),
        BUDGETS,
        &origin(true),
    ));
    assert_eq!(
        p,
        RunProblem::MountFailed {
            message: message.into()
        }
    );
    assert_eq!(p.kind(), "mount-failed");
    assert!(p.describe().contains("/etc/containerd"));
    // Without the event, it is only waited on, until the start budget.
    assert!(matches!(
        read(&pending, &[], at(1), BUDGETS, &origin(true)),
        Reading::Wait
    ));
    assert!(matches!(
        problem_of(read(&pending, &[], at(121), BUDGETS, &origin(true))),
        RunProblem::NeverStarted { .. }
    ));
}

#[test]
fn a_sandbox_the_runtime_cannot_create_is_named_at_once() {
    let message = "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox image \"r.example/pause:3.10\": failed to pull image \"r.example/pause:3.10\": i/o timeout";
    let p = problem_of(read(
        &waiting("ContainerCreating", ""),
        &[event("FailedCreatePodSandBox", message)],
        at(1),
        BUDGETS,
        &origin(true),
    ));
    assert_eq!(p.kind(), "sandbox-not-created");
    assert!(
        p.describe().contains("r.example/pause:3.10"),
        "{}",
        p.describe()
    );
}

#[test]
fn the_kubelets_admission_refusals_and_the_deadline() {
    let rejected = pod(json!({"phase": "Failed", "reason": "OutOfcpu",
            "message": "Pod was rejected: Node didn't have enough resource: cpu, requested: 50, used: 3980, capacity: 4000"}));
    let p = problem_of(read(&rejected, &[], at(1), BUDGETS, &origin(true)));
    assert!(matches!(&p, RunProblem::NotAdmitted { reason, message }
            if reason == "OutOfcpu" && message.contains("enough resource: cpu")));
    let affinity = pod(
        json!({"phase": "Failed", "reason": "NodeAffinity", "message": "Pod was rejected: Predicate NodeAffinity failed"}),
    );
    assert_eq!(
        problem_of(read(&affinity, &[], at(1), BUDGETS, &origin(true))).kind(),
        "not-admitted"
    );
    let deadline = pod(
        json!({"phase": "Failed", "reason": "DeadlineExceeded", "message": "Pod was active on the node longer than the specified deadline"}),
    );
    assert_eq!(
        problem_of(read(&deadline, &[], at(200), BUDGETS, &origin(true))).kind(),
        "probe-deadline"
    );
    // A probe that ran and failed is read from its log.
    let ended = pod(
        json!({"phase": "Failed", "containerStatuses": [{"name": "probe", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 12, "reason": "Error"}}}]}),
    );
    assert!(matches!(
        read(&ended, &[], at(5), BUDGETS, &origin(true)),
        Reading::ReadLog
    ));
}

#[test]
fn waiting_reasons_that_never_resolve_are_problems() {
    let never = waiting(
        "ErrImageNeverPull",
        "Container image \"mirror.example/tools/pullpath:1\" is not present with pull policy of Never",
    );
    assert_eq!(
        problem_of(read(&never, &[], at(1), BUDGETS, &origin(true))).kind(),
        "probe-image-never-pulled"
    );
    let config = waiting(
        "CreateContainerConfigError",
        "container has runAsNonRoot and image will run as root",
    );
    assert!(matches!(
        problem_of(read(&config, &[], at(1), BUDGETS, &origin(true))),
        RunProblem::ContainerNotCreated { reason, .. } if reason == "CreateContainerConfigError"
    ));
}

#[test]
fn the_probe_images_pull_is_a_finding_only_from_the_images_own_registry() {
    let message = "failed to pull and unpack image \"mirror.example/tools/pullpath:1\": failed to resolve reference \"mirror.example/tools/pullpath:1\": failed to do request: Head \"https://mirror.example/v2/tools/pullpath/manifests/1\": dial tcp 10.0.0.5:443: i/o timeout";
    let stuck = waiting("ErrImagePull", message);
    assert!(matches!(
        read(&stuck, &[], at(1), BUDGETS, &origin(true)),
        Reading::Answer(a) if matches!(*a, Answer::ProbeImagePull { .. })
    ));
    let p = problem_of(read(&stuck, &[], at(1), BUDGETS, &origin(false)));
    assert!(
        matches!(&p, RunProblem::ProbeImageUnpulled { registry, .. } if registry == "mirror.example")
    );
    assert!(p.describe().contains("another registry than the image's"));
}

#[test]
fn a_probe_running_past_its_deadline_ends_its_wait() {
    let running = pod(json!({"phase": "Running"}));
    let clocks = |running: u64| Clocks {
        since_create: Duration::from_secs(running + 2),
        since_running: Some(Duration::from_secs(running)),
    };
    assert!(matches!(
        read(&running, &[], clocks(130), BUDGETS, &origin(true)),
        Reading::Wait
    ));
    assert_eq!(
        problem_of(read(&running, &[], clocks(136), BUDGETS, &origin(true))).kind(),
        "probe-deadline"
    );
}

#[test]
fn admission_refusals_name_the_webhook_the_level_or_the_policy() {
    let webhook = "pods \"pullpath-fleet-x-0\" is forbidden: admission webhook \"validation.gatekeeper.sh\" denied the request: [no-host-path] hostPath is not allowed";
    assert_eq!(
        admission_refusal(403, webhook),
        Some(Refusal::Webhook {
            name: "validation.gatekeeper.sh".into(),
            code: 403,
            message: webhook.into()
        })
    );
    let psa = "pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": host namespaces (hostNetwork=true), hostPath volumes (volumes \"node-hosts\", \"node-resolv-conf\")";
    assert!(matches!(admission_refusal(403, psa),
            Some(Refusal::PodSecurity { level, .. }) if level == "baseline:latest"));
    let rbac = "pods is forbidden: User \"u\" cannot create resource \"pods\" in API group \"\" in the namespace \"pullpath\"";
    assert_eq!(admission_refusal(403, rbac), None);
    let policy = "configmaps \"pullpath-ab12-amd64-stage\" is forbidden: ValidatingAdmissionPolicy 'pullpath-delivered-code' with binding 'pullpath-delivered-code' denied request: a pullpath-stage key holds a release's first stage exactly";
    assert_eq!(
        admission_refusal(422, policy),
        Some(Refusal::Policy {
            name: "pullpath-delivered-code".into(),
            message: "a pullpath-stage key holds a release's first stage exactly".into()
        })
    );
}

#[test]
fn a_wave_starts_only_with_time_for_a_probe() {
    let needs = Duration::from_secs(120);
    assert!(time_for_a_probe(Duration::from_secs(121), needs).is_ok());
    let late = time_for_a_probe(Duration::from_secs(30), needs).expect_err("late");
    assert!(
        late.describe()
            .contains("30s of the run's --deadline were left")
    );
    assert!(exec_format_error("exec /usr/local/bin/pullpath: exec format error").is_some());
    assert!(exec_format_error("{\"schema\": \"pullpath.report/v1\"}").is_none());
}
