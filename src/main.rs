//! `pullpath`: parse the command line, run, map the outcome to an exit status.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, bail};
use pullpath::cli::{
    self, AzureArgs, AzureCommand, Command, ExplainArgs, FleetArgs, KubeArgs, ManArgs, Output,
    ProbeArgs, ScanArgs,
};
use pullpath::cluster::{self, ObjectRef};
use pullpath::probe::{self, creds};
use pullpath::render::{self, Style};
use pullpath::{azure, cli_docs, configure, exit, failure_text, report};

fn main() -> ExitCode {
    // A credential plugin run inside the node's root (see `in_node_root`): not a command for
    // people, so not in the command line's definitions.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv
        .get(1)
        .is_some_and(|a| a == probe::kubelet_creds::ROOT_EXEC)
        && argv.len() >= 4
    {
        let error = probe::kubelet_creds::exec_in_root(
            std::path::Path::new(&argv[2]),
            std::path::Path::new(&argv[3]),
            &argv[4..],
        );
        print_error(&format!(
            "cannot run {} in the node's root: {error}",
            argv[3].to_string_lossy()
        ));
        return ExitCode::from(exit::INTERNAL);
    }
    let cli = match cli::try_parse_from(argv) {
        Ok(cli) => cli,
        // --help and --version print and succeed; a bad command line is a usage error (64).
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(exit::USAGE);
        }
    };
    let outcome = match cli.command {
        Command::Explain(args) => explain(args),
        Command::Probe(args) => probe_command(args),
        Command::Completions(args) => {
            let written = cli_docs::completions(args.shell, &mut std::io::stdout().lock());
            stdout_closed_is_done(written)
                .context("cannot write the completion script")
                .map(|()| exit::PASSED)
        }
        Command::Man(args) => man(args),
        Command::Azure(args) => azure_command(args),
        Command::Scan(args) => scan(args),
        Command::Fleet(args) => fleet_command(args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            print_error(&format!("{e:#}"));
            ExitCode::from(exit::USAGE)
        }
    }
}

/// pullpath's own error on stderr, one line: its text can hold what a registry, an API server or
/// a file said, so it is made safe for the terminal as every text output is.
fn print_error(error: &dyn std::fmt::Display) {
    eprintln!("pullpath: {}", render::terminal::inline(&error.to_string()));
}

fn man(args: ManArgs) -> anyhow::Result<u8> {
    match &args.dir {
        Some(dir) => cli_docs::man_pages(dir)
            .with_context(|| format!("cannot write man pages into {}", dir.display()))?,
        None => stdout_closed_is_done(cli_docs::man_page(&mut std::io::stdout().lock()))
            .context("cannot write the man page")?,
    }
    Ok(exit::PASSED)
}

/// A reader that stopped reading (`pullpath man | head`) is not a failure of ours.
fn stdout_closed_is_done(written: std::io::Result<()>) -> std::io::Result<()> {
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
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

fn explain(args: ExplainArgs) -> anyhow::Result<u8> {
    if let [only] = args.text.as_slice()
        && let Some(object) = ObjectRef::parse(only)
    {
        if args.probe && args.output == Output::Json {
            bail!(
                "--probe prints for people; for JSON run `pullpath fleet IMAGE --for {only} -o json`"
            );
        }
        let (status, images) = read_cluster(&args.kube, false, args.output, Some(&object))?;
        if !args.probe {
            return Ok(status);
        }
        if images.is_empty() {
            println!(
                "
{only} has no image failing to pull: nothing to probe"
            );
            return Ok(status);
        }
        // The nodes' own evidence decides the exit status once they were asked.
        let mut worst = exit::PASSED;
        for image in images {
            println!();
            worst = worst.max(probe_from_nodes(&args, only, &image)?);
        }
        return Ok(worst);
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
    let input = read_input(&args)?;
    let messages = input.messages;
    if failure_text::names_pods(&messages) && failure_text::any_failing(&messages) {
        // Input about pods: one verdict per (pod, image), grouped, worst first.
        // Nodes in the input (`kubectl get pod,events,nodes`) name the pools, as scan groups.
        let nodes = input.nodes;
        let explained: Vec<_> = failure_text::explain_each(messages)
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
        match args.output {
            Output::Json => print!("{}", render::json::render(&report)),
            Output::Text => print!("{}", render::findings::findings(&report, Style::detect())),
        }
        return Ok(exit::for_verdict(&report.verdict));
    }
    let explanation = failure_text::explain_messages(messages, input.unlisted);
    let Some(report) = report::explain_report(&explanation) else {
        bail!(
            "no failure text given: pass an event message, `kubectl describe pod` output or a runtime log (argument, -f FILE, or stdin)"
        );
    };
    match args.output {
        Output::Json => print!("{}", render::json::render(&report)),
        Output::Text => print!("{}", render::text::explain(&report, Style::detect())),
    }
    Ok(exit::for_verdict(&report.verdict))
}

fn probe_command(args: ProbeArgs) -> anyhow::Result<u8> {
    let credentials = if args.password_stdin {
        let mut password = String::new();
        std::io::stdin()
            .take(64 * 1024)
            .read_to_string(&mut password)
            .context("cannot read the password from stdin")?;
        let password = password.trim_end_matches(['\r', '\n']).to_string();
        if password.is_empty() {
            bail!("--password-stdin: stdin held no password");
        }
        Some(creds::Credentials {
            username: args.username.clone().unwrap_or_default(),
            password,
        })
    } else {
        None
    };
    let progress =
        args.output == Output::Text && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let config = configure::probe(&args, credentials, std::path::Path::new("/proc"), progress)?;
    let Some(runtime) = async_runtime() else {
        return Ok(exit::INTERNAL);
    };
    let report = match runtime.block_on(probe::run(config)) {
        Ok(run) => report::ProbeReport::from_run(run),
        Err(e) => {
            print_error(&e);
            return Ok(exit::INTERNAL);
        }
    };
    match args.output {
        Output::Json => print!("{}", render::json::render(&report)),
        Output::Text => print!("{}", render::text::probe(&report, Style::detect())),
    }
    Ok(exit::for_verdict(&report.verdict))
}

fn azure_command(args: AzureArgs) -> anyhow::Result<u8> {
    match args.command {
        AzureCommand::Commands(a) => {
            print!(
                "{}",
                azure::commands::script(&azure::commands::Target {
                    cluster: &a.cluster,
                    resource_group: &a.resource_group,
                    registry: &a.registry,
                    out: &a.out,
                })
            );
            Ok(exit::PASSED)
        }
        AzureCommand::Analyse(a) => {
            let report = azure::run(&a.dir, a.pool.as_deref())?;
            match a.output {
                Output::Json => print!("{}", render::json::render(&report)),
                Output::Text => print!("{}", azure::text::render(&report, Style::detect())),
            }
            Ok(exit::for_verdict(&report.verdict))
        }
    }
}

fn scan(args: ScanArgs) -> anyhow::Result<u8> {
    cluster_command(&args.kube, args.all_namespaces, args.output, None)
}

/// `explain pod/NAME` (with `object`) or `scan`: read the cluster, explain each failing pull
/// as `explain` would, print the findings. API errors are pullpath's own: one line, exit 70.
fn cluster_command(
    kube: &KubeArgs,
    all_namespaces: bool,
    output: Output,
    object: Option<ObjectRef>,
) -> anyhow::Result<u8> {
    read_cluster(kube, all_namespaces, output, object.as_ref()).map(|(status, _)| status)
}

/// `explain OBJECT --probe`: `pullpath fleet IMAGE --for OBJECT` with explain's cluster flags.
fn probe_from_nodes(args: &ExplainArgs, object: &str, image: &str) -> anyhow::Result<u8> {
    fleet_command(fleet_args(args, object, image)?)
}

/// The fleet arguments `explain OBJECT --probe` stands for: every fleet default (clap's, for
/// a fleet of IMAGE), then explain's own settings field by field.
fn fleet_args(args: &ExplainArgs, object: &str, image: &str) -> anyhow::Result<FleetArgs> {
    let Command::Fleet(mut fleet) =
        <cli::Cli as clap::Parser>::try_parse_from(["pullpath", "fleet", image])?.command
    else {
        bail!("internal: fleet's defaults did not parse as fleet");
    };
    fleet.for_workload = Some(object.to_string());
    fleet.probe_image.clone_from(&args.probe_image);
    fleet.node_image.clone_from(&args.node_image);
    fleet.probe_binary.clone_from(&args.probe_binary);
    fleet.runtime_pull = args.runtime_pull;
    fleet.probe_namespace.clone_from(&args.probe_namespace);
    fleet.kubelet_pull = args.kubelet_pull;
    fleet.kube = args.kube.clone();
    Ok(fleet)
}

/// Read the cluster (one object, or a scan), print its findings, and return the exit status
/// and every image a finding is about.
fn read_cluster(
    kube: &KubeArgs,
    all_namespaces: bool,
    output: Output,
    object: Option<&ObjectRef>,
) -> anyhow::Result<(u8, Vec<String>)> {
    let target = cluster::Target {
        kubeconfig: kube.kubeconfig.clone(),
        context: kube.context.clone(),
        namespace: kube.namespace.clone(),
        all_namespaces,
        read_secrets: kube.read_secrets,
        request_timeout: kube.request_timeout,
    };
    let Some(runtime) = async_runtime() else {
        return Ok((exit::INTERNAL, vec![]));
    };
    let read = runtime.block_on(async {
        let session = cluster::read::connect(&target).await?;
        match object {
            Some(object) => session.read_object(&target, object).await,
            None => session.read_scan(&target).await,
        }
    });
    let snapshot = match read {
        Ok(snapshot) => snapshot,
        Err(e) => {
            print_error(&e);
            return Ok((exit::INTERNAL, vec![]));
        }
    };
    let findings = cluster::findings::findings(&snapshot);
    let scope = report::findings::ScopeReport {
        namespace: snapshot.namespace.clone(),
        all_namespaces: snapshot.all_namespaces,
        pods_read: snapshot.pods.len(),
    };
    let unread = snapshot
        .unread
        .iter()
        .map(|u| report::findings::UnreadReport {
            what: u.what.clone(),
            reason: u.reason.clone(),
        })
        .collect();
    let command = if object.is_some() { "explain" } else { "scan" };
    let report = report::findings::findings_report(command, &findings, Some(scope), unread);
    match output {
        Output::Json => print!("{}", render::json::render(&report)),
        Output::Text => print!("{}", render::findings::findings(&report, Style::detect())),
    }
    let mut images: Vec<String> = findings
        .iter()
        .filter(|(e, _)| e.explanation.verdict().is_some())
        .filter_map(|(e, _)| e.subject.image.clone())
        .collect();
    images.sort();
    images.dedup();
    Ok((exit::for_verdict(&report.verdict), images))
}

/// The async runtime; `None` (said on stderr) when it cannot start: not the user's input,
/// pullpath itself could not run.
fn async_runtime() -> Option<tokio::runtime::Runtime> {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => Some(runtime),
        Err(e) => {
            print_error(&format!("cannot start the async runtime: {e}"));
            None
        }
    }
}

/// `pullpath fleet`: probe pods on the chosen nodes, compared per pool; `--cleanup` removes
/// leftovers. API errors are pullpath's own (exit 70); findings exit by the worst eligible pool.
fn fleet_command(args: FleetArgs) -> anyhow::Result<u8> {
    use pullpath::fleet;
    if args.kube.read_secrets {
        bail!("--read-secrets goes with explain and scan, not fleet");
    }
    let target = cluster::Target {
        kubeconfig: args.kube.kubeconfig.clone(),
        context: args.kube.context.clone(),
        namespace: args.kube.namespace.clone(),
        all_namespaces: false,
        read_secrets: false,
        request_timeout: args.kube.request_timeout,
    };
    let Some(runtime) = async_runtime() else {
        return Ok(exit::INTERNAL);
    };
    if args.cleanup {
        return match runtime.block_on(fleet::cleanup(&target, &args.probe_namespace)) {
            Ok(done) => {
                println!(
                    "deleted {} probe pod{} from {} ({})",
                    done.deleted,
                    if done.deleted == 1 { "" } else { "s" },
                    args.probe_namespace,
                    match &done.unverified {
                        Some(why) => format!(
                            "whether any is left is unknown: {}",
                            render::terminal::inline(why)
                        ),
                        None => format!("{} still terminating", done.remaining),
                    }
                );
                Ok(exit::PASSED)
            }
            Err(e) => {
                print_error(&e);
                Ok(exit::INTERNAL)
            }
        };
    }
    let config = configure::fleet(&args, target)?;
    if args.dry_run {
        return match runtime.block_on(fleet::plan(&config)) {
            Ok(plan) => {
                print!(
                    "{}",
                    render::json::render(&fleet::manifest(&plan, &config.probe_namespace))
                );
                Ok(exit::PASSED)
            }
            Err(e) => {
                print_error(&e);
                Ok(exit::INTERNAL)
            }
        };
    }
    if args.fresh_node && !args.yes && !fresh_nodes_agreed()? {
        eprintln!("not started: no fresh node asked for");
        return Ok(exit::USAGE);
    }
    // On a terminal, a progress line per probe pod on stderr while the run waits.
    let mut config = config;
    let steps = (args.output == Output::Text
        && std::io::IsTerminal::is_terminal(&std::io::stderr()))
    .then(|| {
        let (sink, steps) = tokio::sync::mpsc::unbounded_channel();
        config.settings.progress = Some(sink);
        steps
    });
    let report = runtime.block_on(async move {
        let drawing = steps.map(|steps| tokio::spawn(fleet::progress_view::draw(steps)));
        let report = fleet::fleet(&config, interrupted()).await;
        // The last sender goes with the configuration: the drawing ends once it has drawn all.
        drop(config);
        if let Some(drawing) = drawing {
            let _ = drawing.await;
        }
        report
    });
    let report = match report {
        Ok(report) => report,
        Err(e) => {
            print_error(&e);
            return Ok(exit::INTERNAL);
        }
    };
    match args.output {
        Output::Json => print!("{}", render::json::render(&report)),
        Output::Text => print!("{}", fleet::text::render(&report, Style::detect())),
    }
    if report.cleanup.error.is_some() {
        return Ok(exit::INTERNAL);
    }
    Ok(exit::for_verdict(&report.verdict))
}

/// `--fresh-node` costs nodes: say so and ask on a terminal; without one, `--yes` is needed.
fn fresh_nodes_agreed() -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    eprintln!(
        "--fresh-node: each chosen pool's autoscaler will add a node for a probe pod, at a node's price while it runs; {}.",
        pullpath::fleet::fresh::SCALE_DOWN_NOTE
    );
    if !std::io::stdin().is_terminal() {
        bail!("--fresh-node asks before it starts, and stdin is not a terminal: pass --yes");
    }
    eprint!("Go on? [y/N] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM. The handlers are installed when this is called
/// (inside the runtime, before any probe pod exists), so a signal at any point of the run is
/// caught and its pods deleted; one that cannot be listened for never resolves.
fn interrupted() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt()).ok();
    let mut terminate = signal(SignalKind::terminate()).ok();
    async move {
        tokio::select! {
            () = next(interrupt.as_mut()) => {}
            () = next(terminate.as_mut()) => {}
        }
    }
}

/// The next delivery of a signal; never, when it could not be listened for.
async fn next(signal: Option<&mut tokio::signal::unix::Signal>) {
    match signal {
        Some(s) => {
            s.recv().await;
        }
        None => std::future::pending::<()>().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explain_probe_hands_its_fleet_flags_to_fleet() {
        let parsed = <cli::Cli as clap::Parser>::try_parse_from([
            "pullpath",
            "explain",
            "pod/web",
            "-n",
            "shop",
            "--probe",
            "--probe-image",
            "r.example/tools/pullpath:1",
            "--kubelet-pull",
            "--runtime-pull",
        ])
        .expect("explain parses");
        let Command::Explain(args) = parsed.command else {
            panic!("explain");
        };
        let fleet = fleet_args(&args, "pod/web", "r.example/team/app:v1").expect("fleet arguments");
        assert!(fleet.kubelet_pull && fleet.runtime_pull);
        assert_eq!(fleet.for_workload.as_deref(), Some("pod/web"));
        assert_eq!(fleet.kube.namespace.as_deref(), Some("shop"));
        assert_eq!(
            fleet.probe_image.as_deref(),
            Some("r.example/tools/pullpath:1")
        );
        // Fleet's own defaults, and explain's request timeout as it was given.
        assert_eq!(fleet.image.as_deref(), Some("r.example/team/app:v1"));
        assert_eq!(fleet.probe_namespace, "pullpath");
        assert_eq!(fleet.kube.request_timeout, args.kube.request_timeout);
        assert!(!fleet.dry_run && !fleet.cleanup && !fleet.all_nodes);
    }

    /// No registry through explain: its node image and binaries reach fleet as given.
    #[test]
    fn explain_probe_hands_fleet_its_registry_less_start() {
        let parsed = <cli::Cli as clap::Parser>::try_parse_from([
            "pullpath",
            "explain",
            "pod/web",
            "--probe",
            "--node-image",
            "registry.k8s.io/pause:3.10",
            "--probe-binary",
            "amd64=/opt/pullpath",
            "--probe-binary",
            "arm64=/opt/pullpath-arm64",
        ])
        .expect("explain parses");
        let Command::Explain(args) = parsed.command else {
            panic!("explain");
        };
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
        assert!(!fleet.runtime_pull);
    }
}
