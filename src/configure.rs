//! The command line's arguments → the engine's configuration, in one place: each setting from
//! its flag, else from what the node says (its kubelet's and containerd's command lines and
//! environments under `proc`, their files in the node root), else the default, saying which.
//! `main` only reads what the terminal gives (stdin, whether stderr is one) and hands it here.

use std::path::{Path, PathBuf};

use anyhow::{Context, anyhow, bail};

use crate::cli::{FleetArgs, KubeArgs, ProbeArgs};
use crate::cluster::{self, ObjectRef};
use crate::credentials::Credentials;
use crate::fleet;
use crate::image_ref::ImageRef;
use crate::node_root::NodeRoot;
use crate::probe::process::RunningProcess;
use crate::probe::{self, Platform, ProbeConfig, Timeouts};
use crate::runtime::version::RuntimeIdentity;

/// `pullpath probe`'s configuration: `credentials` from `--username`/`--password-stdin` when
/// given, the node's processes read under `proc` (`/proc` on a node or with hostPID),
/// `progress` when a terminal shows it.
pub fn probe(
    args: &ProbeArgs,
    credentials: Option<Credentials>,
    proc: &Path,
    progress: bool,
) -> anyhow::Result<ProbeConfig> {
    let image = ImageRef::parse(&args.image)
        .with_context(|| format!("{:?} is not an image reference", args.image))?;
    let platform = match &args.platform {
        Some(p) => Platform::parse(p)
            .with_context(|| format!("--platform {p:?}: want os/arch[/variant]"))?,
        None => Platform::host(),
    };
    // The node's kubelet and the runtime listening on its CRI socket, each read once through
    // /proc (the node's processes, on the node or with hostPID).
    let node = NodeRoot::at(&args.host_root);
    let daemons = probe::node_daemons::NodeDaemons::find(probe::node_daemons::Lookup {
        proc,
        node: &node,
        kubelet_pid: args.kubelet_pid,
        runtime_pid: args.runtime_pid,
        endpoint: args.runtime_endpoint.as_deref(),
    });
    let kubelet = daemons.kubelet.as_ref().map(|d| d.process.clone());
    let containerd = daemons.runtime.as_ref().map(|d| d.process.clone());
    let containerd_config = containerd_config(args, containerd.as_ref());
    // The kubelet's sources, unless `--username` names the one credential to use.
    let credential_sources = credentials.is_none().then(|| {
        kubelet_sources(
            args,
            proc,
            kubelet.as_ref(),
            &node,
            containerd_config.clone(),
        )
    });
    for (flag, value) in [
        ("--https-proxy", &args.https_proxy),
        ("--http-proxy", &args.http_proxy),
    ] {
        // Stricter than Go's fallback to `http://VALUE`, which turns a broken URL into a
        // proxy named `http`: a flag with a scheme must be a URL with a host.
        let readable = |value: &str| match value.contains("://") {
            true => url::Url::parse(value).is_ok_and(|u| u.host_str().is_some()),
            false => probe::proxy::parse_proxy(value).is_some(),
        };
        if let Some(value) = value.as_deref().filter(|v| !v.is_empty())
            && !readable(value)
        {
            bail!(
                "{flag} {:?} is not a proxy URL (want http://host:port or https://host:port)",
                probe::proxy::redact_value(value)
            );
        }
    }
    // The runtime's socket is a node path (the kubelet's own unless given): in a probe pod, the
    // node's socket under its root.
    let endpoint = daemons.endpoint.value.clone();
    let node_socket = PathBuf::from(endpoint.strip_prefix("unix://").unwrap_or(&endpoint));
    let socket = node.resolve(&node_socket).unwrap_or(node_socket);
    let runtime = match &args.containerd_version {
        Some(version) => probe::RuntimeQuery::Given(
            RuntimeIdentity::from_flag(version)
                .map_err(|e| anyhow!("--containerd-version: {e}"))?,
        ),
        None => probe::RuntimeQuery::Socket(socket.clone()),
    };
    let runtime_pull = args.runtime_pull.then_some(socket);
    let config = ProbeConfig {
        image,
        platform,
        credentials,
        credential_sources,
        timeouts: Timeouts {
            dns: args.dns_timeout,
            connect: args.connect_timeout,
            tls: args.tls_timeout,
            http: args.http_timeout,
        },
        deadline: args.deadline,
        full: args.full,
        parallel: args.parallel.map(usize::from),
        progress,
        node,
        etc: args.etc.clone(),
        proxy: probe::ProxySources {
            overrides: [
                ("HTTPS_PROXY", &args.https_proxy),
                ("HTTP_PROXY", &args.http_proxy),
                ("NO_PROXY", &args.no_proxy),
            ]
            .into_iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.clone()?)))
            .collect(),
            systemd_dirs: if args.systemd_dirs.is_empty() {
                probe::systemd::UNIT_DIRS.map(PathBuf::from).to_vec()
            } else {
                args.systemd_dirs.clone()
            },
            runtime: containerd,
        },
        containerd_config,
        containerd_certs: args
            .containerd_certs
            .as_deref()
            .map(probe::containerd_config::split_config_path),
        ca_files: args.ca_files.clone(),
        runtime,
        runtime_pull,
        daemons,
    };
    Ok(config)
}

/// The cluster `explain pod/NAME`, `scan` and `fleet` read, from kubectl's flags; every namespace
/// with `all_namespaces` (`scan -A`).
pub fn cluster_target(kube: &KubeArgs, all_namespaces: bool) -> cluster::Target {
    cluster::Target {
        kubeconfig: kube.kubeconfig.clone(),
        context: kube.context.clone(),
        overrides: cluster::Overrides {
            cluster: kube.cluster.clone(),
            user: kube.user.clone(),
            impersonate: kube.as_user.clone(),
            impersonate_groups: kube.as_groups.clone(),
            impersonate_uid: kube.as_uid.clone(),
        },
        namespace: kube.namespace.clone(),
        all_namespaces,
        read_secrets: kube.read_secrets,
        request_timeout: kube.request_timeout,
    }
}

/// `pullpath fleet`'s configuration for a run (not `--cleanup`) against `target`.
pub fn fleet(args: &FleetArgs, target: cluster::Target) -> anyhow::Result<fleet::FleetConfig> {
    let run = &args.run;
    let workload = match &run.for_workload {
        Some(text) => Some(ObjectRef::parse(text).with_context(|| {
            format!("--for {text:?}: want pod/NAME, deploy/NAME, sts/NAME, ds/NAME or job/NAME")
        })?),
        None => None,
    };
    // clap requires IMAGE unless --cleanup.
    let image = args.image.clone().unwrap_or_default();
    let image_ref =
        ImageRef::parse(&image).with_context(|| format!("{image:?} is not an image reference"))?;
    let probe = fleet::probe_source(
        args.probe_image.as_deref(),
        args.node_image.as_deref(),
        &args.probe_binary,
    )?;
    for (flag, image) in [
        ("--probe-image", args.probe_image.as_deref()),
        ("--node-image", args.node_image.as_deref()),
    ] {
        if let Some(image) = image {
            ImageRef::parse(image)
                .with_context(|| format!("{flag} {image:?} is not an image reference"))?;
        }
    }
    let probe_deadline = run.probe_deadline.min(run.deadline);
    // A fresh node's wait comes before its probe: the run lasts at least both.
    let deadline = match run.fresh_node {
        true => run
            .deadline
            .max(run.fresh_node_timeout + run.start_budget + probe_deadline),
        false => run.deadline,
    };
    Ok(fleet::FleetConfig {
        target,
        image,
        probe_arches: (!args.probe_image_arch.is_empty()).then(|| args.probe_image_arch.clone()),
        settings: fleet::config::RunSettings {
            namespace: args.probe_namespace.clone(),
            parallel: usize::from(run.parallel),
            deadline,
            poll: run.poll_interval,
            budgets: fleet::life::Budgets {
                start: run.start_budget,
                probe: probe_deadline,
            },
            origin: fleet::probe_origin(&image_ref, &probe),
            // The run's watches and reads need a bound: `--request-timeout 0` (no limit on a
            // request) leaves the run's deadline as the only one.
            request_timeout: match args.kube.request_timeout.is_zero() {
                true => deadline,
                false => args.kube.request_timeout,
            },
            fresh_wait: run.fresh_node_timeout,
            progress: None,
        },
        fresh_node: run.fresh_node,
        probe,
        probe_namespace: args.probe_namespace.clone(),
        workload,
        selector: run.selector.clone(),
        choice: fleet::select::Choice {
            nodes_per_pool: usize::from(run.nodes_per_pool),
            all_nodes: run.all_nodes,
            pools: run.pools.clone(),
            also: None,
        },
        full: run.full,
        runtime_pull: run.runtime_pull,
        kubelet_pull: run.kubelet_pull,
    })
}

/// The kubelet's credential sources: each setting from its flag, else the running kubelet's
/// command line, else the kubelet's default, saying which.
fn kubelet_sources(
    args: &ProbeArgs,
    proc: &Path,
    kubelet: Option<&RunningProcess>,
    node: &NodeRoot,
    containerd_config: PathBuf,
) -> probe::kubelet_creds::Sources {
    let mut origins = Vec::new();
    let mut setting = |flag: &str, given: &Option<PathBuf>, default: Option<&str>| {
        if let Some(path) = given {
            origins.push(format!("--{flag} {} (flag)", path.display()));
            return Some(path.clone());
        }
        if let Some((pid, value)) = kubelet.and_then(|k| Some((k.pid, k.flag(flag)?))) {
            origins.push(format!("--{flag} {value} (the running kubelet, pid {pid})"));
            return Some(PathBuf::from(value));
        }
        let default = default.map(PathBuf::from);
        origins.push(match &default {
            Some(path) => format!("--{flag} {} (the kubelet's default)", path.display()),
            None => format!("--{flag}: not set (no flag, no running kubelet naming it)"),
        });
        default
    };
    let root_dir =
        setting("root-dir", &args.kubelet_root_dir, Some("/var/lib/kubelet")).unwrap_or_default();
    let provider_config = setting(
        "image-credential-provider-config",
        &args.image_credential_provider_config,
        None,
    );
    let provider_bin_dir = setting(
        "image-credential-provider-bin-dir",
        &args.image_credential_provider_bin_dir,
        None,
    );
    // The kubelet searches its own working directory and $HOME, not ours; seen through /proc,
    // its working directory is a node path. In a node root with no kubelet in sight, systemd's
    // defaults for a unit without `User=`: `/` and no $HOME.
    let (working_dir, home) = match kubelet {
        Some(k) => (
            std::fs::read_link(proc.join(k.pid.to_string()).join("cwd")).ok(),
            k.environ
                .as_ref()
                .and_then(|e| e.get("HOME"))
                .map(PathBuf::from),
        ),
        None if !node.is_host() => (Some(PathBuf::from("/")), None),
        None => (
            std::env::current_dir().ok(),
            std::env::var_os("HOME").map(PathBuf::from),
        ),
    };
    probe::kubelet_creds::Sources {
        node: node.clone(),
        pull_secrets: args.docker_config.clone(),
        node_config: probe::kubelet_creds::node_config_search(
            &root_dir,
            working_dir.as_deref(),
            home.as_deref(),
        ),
        provider_config,
        provider_bin_dir,
        plugin_timeout: args.credential_provider_timeout,
        containerd_config: Some(containerd_config),
        // An unreadable environment is an empty one for the plugins, as it is for the kubelet's.
        kubelet_environment: kubelet.map(|k| k.environ.clone().unwrap_or_default()),
        origins,
    }
}

/// containerd's config.toml (a node path): the flag, else the one the running containerd was
/// started with, else its default.
fn containerd_config(args: &ProbeArgs, containerd: Option<&RunningProcess>) -> PathBuf {
    args.containerd_config
        .clone()
        .or_else(|| containerd.and_then(|c| probe::containerd_config::config_flag(&c.args)))
        .unwrap_or_else(|| PathBuf::from(probe::containerd_config::DEFAULT_CONFIG))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(line: &[&str]) -> ProbeArgs {
        let mut argv = vec!["pullpath", "probe"];
        argv.extend(line);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Probe(args) => args,
            _ => panic!("probe"),
        }
    }

    fn fleet_args(line: &[&str]) -> FleetArgs {
        let mut argv = vec!["pullpath", "fleet"];
        argv.extend(line);
        match crate::cli::Cli::parse_from(argv).command {
            crate::cli::Command::Fleet(args) => args,
            _ => panic!("fleet"),
        }
    }

    fn target() -> cluster::Target {
        cluster::Target {
            kubeconfig: None,
            context: None,
            overrides: cluster::Overrides::default(),
            namespace: None,
            all_namespaces: false,
            read_secrets: false,
            request_timeout: std::time::Duration::from_secs(10),
        }
    }

    /// Fleet's configuration: a probe's own deadline never outlasts the run's, the probe image
    /// is required and must be a reference, and `--for` must name a workload.
    #[test]
    fn fleet_settings_follow_the_flags_and_refuse_what_cannot_run() {
        let config = fleet(
            &fleet_args(&[
                "r.example/team/app:v1",
                "--probe-image",
                "r.example/tools/pullpath:1",
                "--deadline",
                "30s",
                "--probe-deadline",
                "90s",
                "--for",
                "deploy/web",
            ]),
            target(),
        )
        .expect("a configuration");
        assert_eq!(
            config.settings.budgets.probe,
            std::time::Duration::from_secs(30)
        );
        assert!(config.settings.origin.same_registry);
        assert!(config.workload.is_some());
        // No probe image: pullpath is delivered through the API.
        let delivered =
            fleet(&fleet_args(&["r.example/team/app:v1"]), target()).expect("no registry needed");
        assert!(matches!(delivered.probe, fleet::ProbeSource::Delivered(_)));
        assert!(!delivered.settings.origin.same_registry);
        let given = fleet(
            &fleet_args(&[
                "r.example/team/app:v1",
                "--node-image",
                "registry.k8s.io/pause:3.10",
                "--probe-binary",
                "arm64=/opt/pullpath-arm64",
            ]),
            target(),
        )
        .expect("delivered with the node image and a binary given");
        let fleet::ProbeSource::Delivered(given) = given.probe else {
            panic!("delivered");
        };
        assert_eq!(
            given.node_image.as_deref(),
            Some("registry.k8s.io/pause:3.10")
        );
        assert_eq!(
            given.binaries.get("arm64").map(|p| p.display().to_string()),
            Some("/opt/pullpath-arm64".into())
        );
        for bad in [
            &["--probe-binary", "/opt/pullpath"][..],
            &["--node-image", "Not An Image"],
        ] {
            let mut argv = vec!["r.example/team/app:v1"];
            argv.extend(bad);
            let error = fleet(&fleet_args(&argv), target()).expect_err("refused");
            // What the user reads names the flag.
            assert!(error.to_string().contains(bad[0]), "{error}");
        }
        let not_arch_path = fleet(
            &fleet_args(&["r.example/team/app:v1", "--probe-binary", "/opt/pullpath"]),
            target(),
        )
        .expect_err("refused");
        assert_eq!(
            not_arch_path.downcast_ref::<fleet::deliver::prepare::NotArchPath>(),
            Some(&fleet::deliver::prepare::NotArchPath {
                given: "/opt/pullpath".into()
            })
        );
        let bad_for = fleet(
            &fleet_args(&[
                "r.example/team/app:v1",
                "--probe-image",
                "r.example/tools/pullpath:1",
                "--for",
                "web",
            ]),
            target(),
        )
        .expect_err("not a workload")
        .to_string();
        assert!(bad_for.contains("--for \"web\""), "{bad_for}");
    }

    /// A `/proc` holding one process: its name, command line, environment and working
    /// directory, as the kernel shows them.
    fn proc_with(dir: &Path, pid: u32, comm: &str, argv: &[&str], env: &[&str]) {
        let at = dir.join(pid.to_string());
        std::fs::create_dir_all(&at).expect("proc dir");
        std::fs::write(at.join("comm"), format!("{comm}\n")).expect("comm");
        std::fs::write(at.join("cmdline"), argv.join("\0") + "\0").expect("cmdline");
        std::fs::write(at.join("environ"), env.join("\0") + "\0").expect("environ");
        std::os::unix::fs::symlink("/var/lib/kubelet", at.join("cwd")).expect("cwd");
    }

    /// Each kubelet setting comes from its flag, else the running kubelet's command line (read
    /// under the given /proc, its working directory too), else the default, and says which.
    #[test]
    fn kubelet_settings_come_from_the_flag_then_the_running_kubelet_then_the_default() {
        let dir = std::env::temp_dir().join(format!("pullpath-configure-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let proc = dir.join("proc");
        proc_with(
            &proc,
            4242,
            "kubelet",
            &[
                "/usr/local/bin/kubelet",
                "--image-credential-provider-config=/var/lib/kubelet/credential-provider-config.yaml",
                "--image-credential-provider-bin-dir",
                "/var/lib/kubelet/credential-provider",
            ],
            &["HOME=/root"],
        );
        let config = probe(
            &args(&[
                "r.example/team/app:v1",
                "--kubelet-root-dir",
                "/srv/kubelet",
                "--runtime-pid",
                "1",
            ]),
            None,
            &proc,
            false,
        )
        .expect("a configuration");
        let sources = config.credential_sources.expect("the kubelet's sources");
        assert_eq!(
            sources.provider_config.as_deref(),
            Some(Path::new(
                "/var/lib/kubelet/credential-provider-config.yaml"
            ))
        );
        assert_eq!(
            sources.provider_bin_dir.as_deref(),
            Some(Path::new("/var/lib/kubelet/credential-provider"))
        );
        let said = sources.origins.join("\n");
        assert!(said.contains("--root-dir /srv/kubelet (flag)"), "{said}");
        assert!(said.contains("(the running kubelet, pid 4242)"), "{said}");
        // The kubelet's own environment is what its plugins get.
        assert_eq!(
            sources
                .kubelet_environment
                .as_ref()
                .and_then(|e| e.get("HOME"))
                .map(String::as_str),
            Some("/root")
        );
        // `--username` names the one credential: no kubelet sources then.
        let given = Credentials {
            username: "alice".into(),
            password: "secret".into(),
        };
        let config = probe(&args(&["r.example/team/app:v1"]), Some(given), &proc, false)
            .expect("a configuration");
        assert!(config.credential_sources.is_none());
        // A proxy flag that is not a URL is refused, its password never echoed.
        let refused = probe(
            &args(&[
                "r.example/team/app:v1",
                "--https-proxy",
                "http://user:hunter2@",
            ]),
            None,
            &proc,
            false,
        )
        .expect_err("not a proxy URL")
        .to_string();
        assert!(
            refused.contains("--https-proxy") && !refused.contains("hunter2"),
            "{refused}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
