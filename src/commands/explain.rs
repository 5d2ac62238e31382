//! `pullpath explain`: failure text (arguments, a file, stdin) → its verdict; or `pod/NAME` (or
//! a workload) read from the cluster, and with `--probe` its failing images probed from the
//! nodes as `fleet` probes them.

use anyhow::{Context, bail};

use crate::cli::{ExplainArgs, FleetArgs, FleetRunArgs, KubeArgs, Output};
use crate::cluster::ObjectRef;
use crate::render::{self, Style};
use crate::{exit, failure_text, report};

/// Explain what the arguments name; the exit status is the worst verdict's.
pub fn run(args: ExplainArgs) -> anyhow::Result<u8> {
    if let [only] = args.text.as_slice()
        && let Some(object) = ObjectRef::parse(only)
    {
        return explain_object(&args, only, &object);
    }
    if args.probe {
        bail!("--probe goes with `explain pod/NAME` (or a workload), not with failure text");
    }
    let k = &args.kube;
    if k.kubeconfig.is_some() || k.context.is_some() || k.namespace.is_some() || k.read_secrets {
        bail!(
            "--kubeconfig, --context, -n and --read-secrets go with `explain pod/NAME` (or deploy/, statefulset/, daemonset/, job/), not with failure text"
        );
    }
    explain_text(&args)
}

/// `explain pod/NAME` (`only`, read as `object`): the object's findings from the cluster, then
/// with `--probe` each failing image from the nodes.
fn explain_object(args: &ExplainArgs, only: &str, object: &ObjectRef) -> anyhow::Result<u8> {
    if args.probe && args.output != Output::Text {
        bail!(
            "--probe prints for people; for JSON or YAML run `pullpath fleet IMAGE --for {only} -o json`"
        );
    }
    let read = super::scan::read_cluster(&args.kube, false, args.output, Some(object));
    if !args.probe {
        return Ok(read.status);
    }
    if read.images.is_empty() {
        println!(
            "
{only} has no image failing to pull: nothing to probe"
        );
        return Ok(read.status);
    }
    // The nodes' own evidence decides the exit status once they were asked.
    let mut worst = exit::PASSED;
    for image in read.images {
        println!();
        worst = worst.max(super::fleet::run(fleet_args(args, only, &image)?)?);
    }
    Ok(worst)
}

/// `explain OBJECT --probe` is `pullpath fleet IMAGE --for OBJECT`: explain's cluster and probe
/// pod flags, and the rest of the run as fleet defines it.
fn fleet_args(args: &ExplainArgs, object: &str, image: &str) -> anyhow::Result<FleetArgs> {
    Ok(FleetArgs {
        image: Some(image.to_string()),
        // The pull secrets are read for the findings (explain's own); the probe pods need none.
        kube: KubeArgs {
            read_secrets: false,
            ..args.kube.clone()
        },
        probe_namespace: args.probe_namespace.clone(),
        probe_image: args.probe_image.clone(),
        node_image: args.node_image.clone(),
        probe_binary: args.probe_binary.clone(),
        probe_image_arch: Vec::new(),
        run: FleetRunArgs {
            for_workload: Some(object.to_string()),
            runtime_pull: args.runtime_pull,
            kubelet_pull: args.kubelet_pull,
            ..FleetRunArgs::defaults()?
        },
        dry_run: false,
        cleanup: false,
        output: args.output,
    })
}

/// Pasted failure text: one verdict, or with pods in it one per (pod, image), grouped.
fn explain_text(args: &ExplainArgs) -> anyhow::Result<u8> {
    let input = read_input(args)?;
    let messages = input.messages;
    if failure_text::names_pods(&messages) && failure_text::any_failing(&messages) {
        // Input about pods: one verdict per (pod, image), grouped, worst first.
        // Nodes in the input (`kubectl get pod,events,nodes`) name the pools, as scan groups.
        let nodes = input.nodes;
        let explained: Vec<_> = failure_text::explain_each_counted(messages, &input.not_listed)
            .into_iter()
            .map(|e| {
                let pool = nodes
                    .iter()
                    .find(|n| Some(&n.name) == e.subject.node.as_ref())
                    .and_then(|n| n.pool.as_ref().map(|p| p.1.clone()));
                let extra = report::findings::FindingInput {
                    pool,
                    ..report::findings::FindingInput::default()
                };
                (e, extra)
            })
            .collect();
        // `any_failing`: at least one subject is explained.
        let report = report::findings::findings_report("explain", &explained, None, Vec::new());
        super::print_report(args.output, &report, |r| {
            render::findings::findings(r, Style::detect())
        });
        return Ok(exit::for_verdict(&report.verdict));
    }
    let explanation = failure_text::explain_messages(messages, input.unlisted);
    let Some(report) = report::explain_report(&explanation) else {
        bail!(
            "no failure text given: pass an event message, `kubectl describe pod` output or a runtime log (argument, -f FILE, or stdin)"
        );
    };
    super::print_report(args.output, &report, |r| {
        render::text::explain(r, Style::detect())
    });
    Ok(exit::for_verdict(&report.verdict))
}

/// The failure text, read as a stream (`failure_text::input`): a file as it is, stdin or a
/// pipe through a temporary copy (JSON is read in two or three passes), arguments from memory.
fn read_input(args: &ExplainArgs) -> anyhow::Result<failure_text::input::Input> {
    use failure_text::input::{LIMITS, read, spool::spool};
    match (&args.file, args.text.is_empty()) {
        (Some(path), _) if path.as_os_str() != "-" => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            let regular = file.metadata().is_ok_and(|m| m.is_file());
            let file = if regular {
                file
            } else {
                spool(file).with_context(|| format!("cannot copy {} to read it", path.display()))?
            };
            read(file, &LIMITS).with_context(|| format!("cannot read {}", path.display()))
        }
        (None, false) => Ok(read(
            std::io::Cursor::new(args.text.join(" ").into_bytes()),
            &LIMITS,
        )?),
        _ => {
            if let Some(file) = stdin_file() {
                return read(file, &LIMITS).context("cannot read stdin");
            }
            let copy = spool(std::io::stdin().lock()).context(
                "cannot copy stdin to a temporary file to read it (set TMPDIR to a directory with room, or pass -f FILE)",
            )?;
            read(copy, &LIMITS).context("cannot read stdin")
        }
    }
}

/// Stdin when it is a regular file at its start (`pullpath explain < events.json`): read where
/// it is, without a copy.
fn stdin_file() -> Option<std::fs::File> {
    use std::io::Seek;
    use std::os::fd::AsFd;
    let mut file = std::fs::File::from(std::io::stdin().as_fd().try_clone_to_owned().ok()?);
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    (regular && file.stream_position().ok()? == 0).then_some(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{self, Command};

    /// `pullpath explain ARGS…` as parsed.
    fn explain_args(line: &[&str]) -> ExplainArgs {
        let argv = ["pullpath", "explain"].iter().chain(line);
        match <cli::Cli as clap::Parser>::try_parse_from(argv).map(|cli| cli.command) {
            Ok(Command::Explain(args)) => args,
            other => panic!("explain parses: {other:?}"),
        }
    }

    #[test]
    fn explain_probe_hands_its_fleet_flags_to_fleet() {
        let args = explain_args(&[
            "pod/web",
            "-n",
            "shop",
            "--probe",
            "--probe-image",
            "r.example/tools/pullpath:1",
            "--kubelet-pull",
            "--runtime-pull",
        ]);
        let fleet = fleet_args(&args, "pod/web", "r.example/team/app:v1").expect("fleet arguments");
        assert!(fleet.run.kubelet_pull && fleet.run.runtime_pull);
        assert_eq!(fleet.run.for_workload.as_deref(), Some("pod/web"));
        assert_eq!(fleet.kube.namespace.as_deref(), Some("shop"));
        assert_eq!(
            fleet.probe_image.as_deref(),
            Some("r.example/tools/pullpath:1")
        );
        // Fleet's own defaults, and explain's request timeout as it was given.
        assert_eq!(fleet.image.as_deref(), Some("r.example/team/app:v1"));
        assert_eq!(fleet.probe_namespace, "pullpath");
        assert_eq!(fleet.kube.request_timeout, args.kube.request_timeout);
        assert!(!fleet.dry_run && !fleet.cleanup && !fleet.run.all_nodes);
    }

    /// No registry through explain: its node image and binaries reach fleet as given.
    /// `--read-secrets` is explain's (the findings' pull secrets): fleet refuses it, so the probe
    /// that follows must not be handed it.
    #[test]
    fn explain_probe_reads_secrets_for_its_findings_not_for_the_probe() {
        let args = explain_args(&["pod/web", "--probe", "--read-secrets"]);
        assert!(args.kube.read_secrets);
        let fleet = fleet_args(&args, "pod/web", "r.example/team/app:v1").expect("fleet arguments");
        assert!(!fleet.kube.read_secrets);
    }

    #[test]
    fn explain_probe_hands_fleet_its_registry_less_start() {
        let args = explain_args(&[
            "pod/web",
            "--probe",
            "--node-image",
            "registry.k8s.io/pause:3.10",
            "--probe-binary",
            "amd64=/opt/pullpath",
            "--probe-binary",
            "arm64=/opt/pullpath-arm64",
        ]);
        let fleet = fleet_args(&args, "pod/web", "r.example/team/app:v1").expect("fleet arguments");
        assert_eq!(fleet.probe_image, None);
        assert_eq!(
            fleet.node_image.as_deref(),
            Some("registry.k8s.io/pause:3.10")
        );
        assert_eq!(
            fleet.probe_binary,
            ["amd64=/opt/pullpath", "arm64=/opt/pullpath-arm64"]
        );
        assert!(!fleet.run.runtime_pull);
    }

    /// The run `explain OBJECT --probe` hands fleet is fleet's own: as `pullpath fleet IMAGE
    /// --for OBJECT` with the same flags parses it, every other run flag at fleet's default.
    #[test]
    fn explain_probe_runs_with_fleets_own_defaults() {
        let args = explain_args(&["pod/web", "--probe", "--runtime-pull"]);
        let fleet = fleet_args(&args, "pod/web", "r.example/team/app:v1").expect("fleet arguments");
        let argv = ["pullpath", "fleet", "r.example/team/app:v1"];
        let flags = ["--for", "pod/web", "--runtime-pull"];
        let Ok(Command::Fleet(parsed)) =
            <cli::Cli as clap::Parser>::try_parse_from(argv.iter().chain(&flags))
                .map(|cli| cli.command)
        else {
            panic!("fleet parses");
        };
        assert_eq!(fleet.run, parsed.run);
        assert_eq!(fleet.run.nodes_per_pool, 1);
        assert_eq!(fleet.run.deadline, std::time::Duration::from_secs(300));
    }
}
