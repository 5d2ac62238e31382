//! deploy/admission-policy.yaml read as an attacker holding the `pullpath-fleet` role would read
//! it (issue: least privilege that holds): the probe pods fleet creates, both ways, and
//! deploy/probe-pod.yaml are admitted; every pod that would run anything but pullpath's probe,
//! or the probe with more than it needs, is refused — each attack a test of its own. The rules
//! are evaluated by a real CEL implementation (`support::admission`).

mod support;

use pullpath::fleet::deliver::{Delivered, STAGE, config_map, embedded_stage, sha256_hex};
use pullpath::fleet::pod_spec::{PodPlan, Start, probe_pod};
use serde_json::{Value, json};
use support::admission::{documents, policy, policy_named, refusals};

const DIGEST: &str = "sha256:5f2bb2b94c3d2a1e1c8b5e1e9d1d0d6a8e0f6b7c8d9e0f1a2b3c4d5e6f708192";
/// The SHA-256 of the release's static pullpath, as render-deploy.sh pins it.
const PROBE_SHA256: &str = "0d6a8e0f6b7c8d9e0f1a2b3c4d5e6f7081925f2bb2b94c3d2a1e1c8b5e1e9d1d";
const CONTAINER: &str = "/spec/containers/0";

/// The pod policy with the release's probe image digest and probe binary rendered in, as the
/// install does.
fn rendered_policy() -> Value {
    let mut policy = policy();
    let text = serde_json::to_string(&policy).expect("JSON");
    policy =
        serde_json::from_str(&text.replace("sha256:REPLACE-WITH-THE-PROBE-IMAGE-DIGEST", DIGEST))
            .expect("JSON");
    let binaries = variable(&mut policy, "probeBinaries");
    assert_eq!(*binaries, "[]", "unrendered, nothing is delivered");
    *binaries = json!(format!("['{PROBE_SHA256}']"));
    policy
}

/// The expression of the policy's variable `name`.
fn variable<'a>(policy: &'a mut Value, name: &str) -> &'a mut Value {
    policy["spec"]["variables"]
        .as_array_mut()
        .expect("variables")
        .iter_mut()
        .find(|v| v["name"] == name)
        .map(|v| &mut v["expression"])
        .unwrap_or_else(|| panic!("variable {name}"))
}

fn plan(start: Start) -> PodPlan {
    PodPlan {
        fresh: None,
        name: "pullpath-fleet-ab12-0".into(),
        namespace: "pullpath".into(),
        node: "aks-user-1".into(),
        run_id: "ab12".into(),
        start,
        image: "r.example/team/app:v1".into(),
        full: true,
        runtime_pull: true,
        deadline_seconds: 300,
        runtime_version: Some("containerd://1.7.27".into()),
        kubelet_pull: None,
    }
}

fn pod(start: Start) -> Value {
    serde_json::to_value(probe_pod(&plan(start))).expect("pod JSON")
}

/// Fleet's probe pod with `--probe-image` by digest.
fn from_image() -> Value {
    pod(Start::Image(format!("r.example/tools/pullpath@{DIGEST}")))
}

/// Fleet's probe pod with no registry: the node's sandbox image and the delivered binary.
fn delivered_on(node_image: &str) -> Value {
    pod(Start::Delivered(Delivered {
        node_image: node_image.to_string(),
        node_image_source: pullpath::fleet::deliver::node_image::Source::Sandbox,
        config_maps: vec![
            ("pullpath-ab12-amd64-stage".into(), "pullpath-stage".into()),
            ("pullpath-ab12-amd64-0".into(), "part-0000-of-0002".into()),
            ("pullpath-ab12-amd64-1".into(), "part-0001-of-0002".into()),
        ],
        size: 14_000_000,
        sha256: PROBE_SHA256.into(),
    }))
}

fn delivered() -> Value {
    delivered_on("registry.k8s.io/pause:3.10")
}

fn admitted(object: &Value) -> bool {
    refusals(&rendered_policy(), object).is_empty()
}

/// `object` with `change` made at `pointer`.
fn with(mut object: Value, pointer: &str, change: impl FnOnce(&mut Value)) -> Value {
    let shown = object.to_string();
    change(
        object
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer} in {shown}")),
    );
    object
}

#[test]
fn fleets_probe_pods_are_admitted_both_ways() {
    for pod in [from_image(), delivered()] {
        assert_eq!(
            refusals(&rendered_policy(), &pod),
            Vec::<String>::new(),
            "{pod:#}"
        );
    }
    let minimal = pod(Start::Image(format!("r.example/tools/pullpath@{DIGEST}")));
    let minimal = with(minimal, &format!("{CONTAINER}/args"), |args| {
        args.as_array_mut().expect("args").retain(|a| a != "--full")
    });
    assert!(admitted(&minimal), "{minimal:#}");
}

#[test]
fn deploy_probe_pod_yaml_is_admitted_once_named_by_digest() {
    let text = std::fs::read_to_string(support::repo().join("deploy/probe-pod.yaml"))
        .expect("deploy/probe-pod.yaml");
    let text = text.replace(
        "registry.example.com/tools/pullpath:0.1.0",
        &format!("registry.example.com/tools/pullpath@{DIGEST}"),
    );
    let pod: Value = serde_yaml_ng::from_str(&text).expect("a Pod");
    assert_eq!(
        refusals(&rendered_policy(), &pod),
        Vec::<String>::new(),
        "{pod:#}"
    );
    // As written (a tag), it is not: the policy admits the probe image by digest only.
    let tagged: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(support::repo().join("deploy/probe-pod.yaml")).expect("file"),
    )
    .expect("a Pod");
    assert!(!admitted(&tagged));
}

#[test]
fn no_parameter_object_decides_what_is_admitted() {
    // The fleet role may create and delete ConfigMaps in the probe namespace: a policy reading
    // its pins from one would admit whatever the role wrote there.
    let policy = policy();
    assert!(policy["spec"].get("paramKind").is_none(), "{policy:#}");
    let text = std::fs::read_to_string(support::repo().join("deploy/admission-policy.yaml"))
        .expect("file");
    assert!(!text.contains("paramRef") && !text.contains("params."));
    // And the role can touch no admission object.
    let rbac = std::fs::read_to_string(support::repo().join("deploy/rbac-fleet.yaml"))
        .expect("deploy/rbac-fleet.yaml");
    for object in documents(&rbac) {
        for rule in object["rules"].as_array().into_iter().flatten() {
            let groups = rule["apiGroups"].to_string();
            let resources = rule["resources"].to_string();
            assert!(
                !groups.contains("admissionregistration") && !groups.contains('*'),
                "{rule}"
            );
            assert!(!resources.contains('*'), "{rule}");
        }
    }
}

/// `scripts/render-deploy.sh ARGS`: its exit status and the YAML documents it printed.
fn render(args: &[&str]) -> (i32, Vec<Value>) {
    let out = std::process::Command::new("bash")
        .arg(support::repo().join("scripts/render-deploy.sh"))
        .args(args)
        .output()
        .expect("bash runs");
    let text = String::from_utf8_lossy(&out.stdout);
    (out.status.code().unwrap_or(-1), documents(&text))
}

/// The first stage this build of pullpath carries (build.rs), as render-deploy.sh finds it.
fn release_binary() -> (std::path::PathBuf, Vec<u8>, String) {
    let path = std::path::PathBuf::from(env!("CARGO_BIN_EXE_pullpath"));
    let bytes = std::fs::read(&path).expect("the pullpath binary");
    let stage = embedded_stage(&bytes)
        .expect("built with its first stage")
        .to_vec();
    (path, stage, sha256_hex(&bytes))
}

/// The rendered policy named `name` among `documents`.
fn named<'a>(documents: &'a [Value], name: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d["kind"] == "ValidatingAdmissionPolicy" && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("policy {name}"))
}

/// Fleet's ConfigMap of the first stage, holding `stage`.
fn stage_config_map(stage: &[u8]) -> Value {
    let map = config_map(
        "ab12",
        "pullpath",
        "pullpath-ab12-amd64-stage",
        STAGE,
        stage,
    );
    serde_json::to_value(map).expect("JSON")
}

#[test]
fn the_rendered_deploy_pins_this_release_and_nothing_else() {
    let (binary, stage, sha256) = release_binary();
    let binary = binary.to_str().expect("a UTF-8 path");
    let (code, documents) = render(&[
        "--probe-image-digest",
        DIGEST,
        "--probe-binary",
        binary,
        "--group",
        "platform-oncall",
    ]);
    assert_eq!(code, 0);
    let kinds: Vec<&str> = documents
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "Role",
            "RoleBinding",
            "ClusterRole",
            "ClusterRoleBinding",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding"
        ]
    );
    let pods = named(&documents, "pullpath-probe-pods");
    assert_eq!(refusals(pods, &from_image()), Vec::<String>::new());
    // The binary's own digest is what a delivered pod must name; the test's is not admitted.
    let pinned = args(delivered(), |a| a[2] = json!(sha256));
    assert_eq!(refusals(pods, &pinned), Vec::<String>::new());
    assert!(!refusals(pods, &delivered()).is_empty());
    // Its stage, byte for byte, in fleet's immutable ConfigMap; one byte changed is not.
    let code_policy = named(&documents, "pullpath-delivered-code");
    assert_eq!(
        refusals(code_policy, &stage_config_map(&stage)),
        Vec::<String>::new()
    );
    let mut altered = stage.clone();
    let last = altered.len() - 1;
    altered[last] ^= 1;
    assert!(!refusals(code_policy, &stage_config_map(&altered)).is_empty());
    for binding in documents.iter().filter(|d| {
        d["kind"]
            .as_str()
            .is_some_and(|k| k.ends_with("RoleBinding"))
    }) {
        assert_eq!(
            binding["subjects"][0]["name"], "platform-oncall",
            "{binding:#}"
        );
        assert!(
            binding["roleRef"]["name"]
                .as_str()
                .is_some_and(|r| r.starts_with("pullpath-fleet")),
            "{binding:#}"
        );
    }
    // No probe binary: only the probe image by digest runs, and no stage is admitted.
    let (_, documents) = render(&["--probe-image-digest", DIGEST]);
    assert!(refusals(named(&documents, "pullpath-probe-pods"), &from_image()).is_empty());
    assert!(!refusals(named(&documents, "pullpath-probe-pods"), &pinned).is_empty());
    assert!(
        !refusals(
            named(&documents, "pullpath-delivered-code"),
            &stage_config_map(&stage)
        )
        .is_empty()
    );
}

#[test]
fn render_deploy_refuses_what_would_write_a_rule_of_its_own() {
    for args in [
        &["--probe-image-digest", "sha256:abc"][..],
        &["--probe-image-digest", DIGEST, "--group", "a\nkind: User"],
        &[
            "--probe-image-digest",
            DIGEST,
            "--node-images",
            "r.example/a:1",
        ],
        &[],
    ] {
        let (code, documents) = render(args);
        assert_eq!((code, documents.len()), (64, 0), "{args:?}");
    }
    // A file that is no pullpath release pins nothing: refused, as is a missing one.
    let not_pullpath = support::repo().join("deploy/namespace.yaml");
    let (code, documents) = render(&[
        "--probe-image-digest",
        DIGEST,
        "--probe-binary",
        not_pullpath.to_str().expect("path"),
    ]);
    assert_eq!((code, documents.len()), (65, 0));
    let (code, _) = render(&[
        "--probe-image-digest",
        DIGEST,
        "--probe-binary",
        "/nonexistent/pullpath",
    ]);
    assert_eq!(code, 66);
}

/// The delivered-code policy with `stage` pinned, as render-deploy.sh writes it.
fn code_policy_pinning(stage: &[u8]) -> Value {
    let mut policy = policy_named("pullpath-delivered-code");
    let literal: String = stage.iter().map(|b| format!("\\x{b:02x}")).collect();
    *variable(&mut policy, "stages") = json!(format!("[b'{literal}']"));
    policy
}

#[test]
fn only_the_pinned_first_stage_may_be_delivered_and_only_immutable() {
    let stage = b"\x7fELF the release's stage".to_vec();
    let policy = code_policy_pinning(&stage);
    assert_eq!(
        refusals(&policy, &stage_config_map(&stage)),
        Vec::<String>::new()
    );
    // The parts carry no stage: any bytes, the stage checks what they inflate to.
    let part = serde_json::to_value(config_map(
        "ab12",
        "pullpath",
        "pullpath-ab12-amd64-0",
        "part-0000-of-0001",
        b"\x78\x9cattacker",
    ))
    .expect("JSON");
    assert!(refusals(&policy, &part).is_empty());
    let attacks = [
        ("another stage", stage_config_map(b"\x7fELF the attacker's")),
        (
            "the stage with a byte more",
            stage_config_map(&[&stage[..], b"!"].concat()),
        ),
        ("a mutable stage", {
            let mut map = stage_config_map(&stage);
            map["immutable"] = json!(false);
            map
        }),
        ("immutable unset", {
            let mut map = stage_config_map(&stage);
            map.as_object_mut().expect("map").remove("immutable");
            map
        }),
        ("the stage as text data", {
            let mut map = stage_config_map(&stage);
            map["data"] = json!({STAGE: "#!/bin/sh\nexec sh"});
            map
        }),
    ];
    for (name, attack) in attacks {
        assert!(!refusals(&policy, &attack).is_empty(), "{name}: {attack:#}");
    }
    // Unrendered, no stage at all.
    assert!(
        !refusals(
            &policy_named("pullpath-delivered-code"),
            &stage_config_map(&stage)
        )
        .is_empty()
    );
}

#[test]
fn any_image_the_node_holds_may_start_the_pinned_stage_and_nothing_of_its_own() {
    // None of the image's code runs: the command is the delivered stage, which runs only the
    // pinned binary, with no environment. So a DaemonSet's image serves as well as pause.
    for image in [
        "registry.k8s.io/pause:3.10",
        "mcr.microsoft.com/oss/kubernetes/kube-proxy:v1.31.2",
        "docker.io/rancher/mirrored-pause:3.6",
    ] {
        assert!(admitted(&delivered_on(image)), "{image}");
    }
    assert!(!admitted(&container(
        delivered_on("docker.io/library/busybox:1"),
        |c| { c["imagePullPolicy"] = json!("IfNotPresent") }
    )));
}

/// One attack: `$pod` (built from an admitted pod) must be refused.
macro_rules! refused {
    ($($name:ident: $pod:expr;)*) => {$(
        #[test]
        fn $name() {
            let pod: Value = $pod;
            assert!(!admitted(&pod), "admitted: {pod:#}");
        }
    )*};
}

fn container(pod: Value, change: impl FnOnce(&mut Value)) -> Value {
    with(pod, CONTAINER, change)
}

fn args(pod: Value, change: impl FnOnce(&mut Vec<Value>)) -> Value {
    with(pod, &format!("{CONTAINER}/args"), |a| {
        change(a.as_array_mut().expect("args"))
    })
}

fn volumes(pod: Value, change: impl FnOnce(&mut Vec<Value>)) -> Value {
    with(pod, "/spec/volumes", |v| {
        change(v.as_array_mut().expect("volumes"))
    })
}

refused! {
    privileged: container(from_image(), |c| c["securityContext"]["privileged"] = json!(true));
    an_added_capability: container(from_image(), |c| {
        c["securityContext"]["capabilities"]["add"] = json!(["SYS_PTRACE", "SYS_ADMIN"])
    });
    every_capability_kept: container(from_image(), |c| {
        c["securityContext"]["capabilities"]["drop"] = json!([])
    });
    privilege_escalation: container(from_image(), |c| {
        c["securityContext"]["allowPrivilegeEscalation"] = json!(true)
    });
    a_writable_root_filesystem: container(from_image(), |c| {
        c["securityContext"]["readOnlyRootFilesystem"] = json!(false)
    });
    a_writable_node_root: container(from_image(), |c| c["volumeMounts"][0]["readOnly"] = json!(false));
    another_host_path: volumes(from_image(), |v| v[0]["hostPath"]["path"] = json!("/var/lib/kubelet"));
    the_runtime_socket_as_a_host_path: volumes(from_image(), |v| {
        v[0]["hostPath"] = json!({"path": "/run/containerd/containerd.sock", "type": "Socket"})
    });
    a_host_path_of_any_type: volumes(from_image(), |v| v[0]["hostPath"] = json!({"path": "/"}));
    the_node_root_mounted_elsewhere: container(from_image(), |c| {
        c["volumeMounts"][0]["mountPath"] = json!("/usr/local/bin")
    });
    a_sub_path_of_the_node_root: container(from_image(), |c| {
        c["volumeMounts"][0]["subPath"] = json!("etc")
    });
    mount_propagation_from_the_node: container(from_image(), |c| {
        c["volumeMounts"][0]["mountPropagation"] = json!("HostToContainer")
    });
    an_empty_dir_on_disk: volumes(delivered(), |v| {
        for volume in v.iter_mut().filter(|v| v.get("emptyDir").is_some()) {
            volume["emptyDir"] = json!({});
        }
    });
    a_second_container: with(from_image(), "/spec/containers", |c| {
        let second = c[0].clone();
        c.as_array_mut().expect("containers").push(second)
    });
    an_init_container: with(from_image(), "/spec", |s| {
        s["initContainers"] = json!([{"name": "x", "image": "busybox", "command": ["/bin/sh"]}])
    });
    an_ephemeral_container: with(from_image(), "/spec", |s| {
        s["ephemeralContainers"] = json!([{"name": "x", "image": "busybox", "command": ["/bin/sh"]}])
    });
    a_post_start_hook: container(from_image(), |c| {
        c["lifecycle"] = json!({"postStart": {"exec": {"command": ["/bin/sh", "-c", "id"]}}})
    });
    a_startup_probe: container(from_image(), |c| {
        c["startupProbe"] = json!({"exec": {"command": ["/bin/sh", "-c", "id"]}})
    });
    a_liveness_probe: container(from_image(), |c| {
        c["livenessProbe"] = json!({"exec": {"command": ["/bin/sh", "-c", "id"]}})
    });
    env_from_a_secret_the_role_cannot_get: container(from_image(), |c| {
        c["env"] = json!([{"name": "X", "valueFrom": {"secretKeyRef": {"name": "azure-creds", "key": "k"}}}])
    });
    env_from_a_config_map: container(from_image(), |c| {
        c["envFrom"] = json!([{"configMapRef": {"name": "attacker"}}])
    });
    environment_that_steers_the_probe: container(from_image(), |c| {
        c["env"] = json!([{"name": "SSL_CERT_FILE", "value": "/host/tmp/evil.pem"}])
    });
    a_projected_item_mapping_another_key_to_the_stage: volumes(delivered(), |v| {
        let projected = v.iter_mut().find(|v| v.get("projected").is_some()).expect("projected");
        projected["projected"]["sources"][0]["configMap"]["items"][0]["key"] = json!("attacker");
    });
    a_projected_config_map_without_items: volumes(delivered(), |v| {
        let projected = v.iter_mut().find(|v| v.get("projected").is_some()).expect("projected");
        projected["projected"]["sources"][0]["configMap"] = json!({"name": "attacker"});
    });
    a_projected_service_account_token: volumes(delivered(), |v| {
        let projected = v.iter_mut().find(|v| v.get("projected").is_some()).expect("projected");
        projected["projected"]["sources"]
            .as_array_mut()
            .expect("sources")
            .push(json!({"serviceAccountToken": {"path": "token"}}));
    });
    a_secret_volume: volumes(from_image(), |v| {
        v.push(json!({"name": "s", "secret": {"secretName": "azure-creds"}}))
    });
    selinux_spc_t: container(from_image(), |c| {
        c["securityContext"]["seLinuxOptions"] = json!({"type": "spc_t"})
    });
    selinux_spc_t_for_the_pod: with(from_image(), "/spec/securityContext", |s| {
        s["seLinuxOptions"] = json!({"type": "spc_t"})
    });
    seccomp_unconfined: with(from_image(), "/spec/securityContext", |s| {
        s["seccompProfile"] = json!({"type": "Unconfined"})
    });
    seccomp_unconfined_for_the_container: container(from_image(), |c| {
        c["securityContext"]["seccompProfile"] = json!({"type": "Unconfined"})
    });
    no_seccomp_profile_at_all: with(from_image(), "/spec/securityContext", |s| {
        s.as_object_mut().expect("securityContext").remove("seccompProfile");
    });
    a_node_apparmor_profile: container(from_image(), |c| {
        c["securityContext"]["appArmorProfile"] = json!({"type": "Localhost", "localhostProfile": "x"})
    });
    an_unmasked_proc: container(from_image(), |c| c["securityContext"]["procMount"] = json!("Unmasked"));
    sysctls: with(from_image(), "/spec/securityContext", |s| {
        s["sysctls"] = json!([{"name": "kernel.shm_rmid_forced", "value": "1"}])
    });
    windows_host_process_without_os: with(from_image(), "/spec", |s| {
        s.as_object_mut().expect("spec").remove("os");
        s["securityContext"]["windowsOptions"] = json!({"hostProcess": true});
    });
    host_ipc: with(from_image(), "/spec", |s| s["hostIPC"] = json!(true));
    a_runtime_class: with(from_image(), "/spec", |s| s["runtimeClassName"] = json!("privileged"));
    another_service_account_with_its_token: with(from_image(), "/spec", |s| {
        s["serviceAccountName"] = json!("pullpath-controller");
        s["automountServiceAccountToken"] = json!(true);
    });
    another_service_account: with(from_image(), "/spec", |s| s["serviceAccountName"] = json!("admin"));
    another_image_running_its_own_entrypoint: container(delivered_on("docker.io/library/busybox:1"), |c| {
        c.as_object_mut().expect("container").remove("command");
    });
    an_unpinned_probe_binary: args(delivered(), |a| a[2] = json!("1".repeat(64)));
    the_pinned_digest_not_where_the_stage_reads_it: args(delivered(), |a| {
        let pinned = a.remove(2);
        a.push(pinned);
    });
    a_tag_instead_of_the_digest: pod(Start::Image("r.example/tools/pullpath:1".into()));
    the_probe_image_pulled_by_another_digest: container(from_image(), |c| {
        c["image"] = json!("r.example/tools/pullpath@sha256:0000000000000000000000000000000000000000000000000000000000000000")
    });
    a_shell_as_command: container(from_image(), |c| c["command"] = json!(["/bin/sh"]));
    a_shell_as_the_delivered_command: container(delivered(), |c| c["command"] = json!(["/bin/sh"]));
    the_internal_exec_subcommand: container(from_image(), |c| {
        c["args"] = json!(["__exec-in-node-root", "/host", "/bin/sh"])
    });
    the_internal_exec_subcommand_delivered: args(delivered(), |a| {
        let dashes = a.iter().position(|x| x == "--").expect("--");
        a.truncate(dashes + 1);
        a.extend([json!("__exec-in-node-root"), json!("/host"), json!("/bin/sh")]);
    });
    another_host_root: args(from_image(), |a| {
        let at = a.iter().position(|x| x == "/host").expect("/host");
        a[at] = json!("/host/tmp/attacker");
    });
    a_second_host_root: args(from_image(), |a| a.extend([json!("--host-root"), json!("/tmp")]));
    a_host_root_with_equals: args(from_image(), |a| a.push(json!("--host-root=/tmp")));
    a_kubelet_root_dir: args(from_image(), |a| a.extend([json!("--kubelet-root-dir"), json!("/host/tmp")]));
    a_ca_file: args(from_image(), |a| a.extend([json!("--ca-file"), json!("/host/tmp/ca.pem")]));
    a_runtime_endpoint: args(from_image(), |a| {
        a.extend([json!("--runtime-endpoint"), json!("/host/run/attacker.sock")])
    });
    an_argument_holding_a_space: args(from_image(), |a| a.push(json!("--full --kubelet-root-dir /host/tmp")));
    an_image_argument_that_is_a_flag: args(from_image(), |a| a[1] = json!("--kubelet-root-dir"));
    the_stage_writing_elsewhere: args(delivered(), |a| a[0] = json!("/host/usr/local/bin/pullpath"));
    the_stage_reading_a_part_from_elsewhere: args(delivered(), |a| a[3] = json!("/host/tmp/part-0000-of-0002"));
}
