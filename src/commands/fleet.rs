//! `pullpath fleet`: probe pods on the chosen nodes, compared per pool; `--dry-run` prints them,
//! `--cleanup` removes leftovers.

use anyhow::bail;

use crate::cli::{FleetArgs, Output};
use crate::fleet;
use crate::render::{self, Style};
use crate::{configure, exit};

/// Run the fleet as the flags say. A cluster that cannot be used exits as
/// `exit::for_cluster_error` says; findings exit by the worst eligible pool.
pub fn run(args: FleetArgs) -> anyhow::Result<u8> {
    if args.kube.read_secrets {
        bail!("--read-secrets goes with explain and scan, not fleet");
    }
    let target = configure::cluster_target(&args.kube, false);
    let Some(runtime) = super::async_runtime() else {
        return Ok(exit::INTERNAL);
    };
    if args.cleanup {
        return Ok(
            match runtime.block_on(fleet::cleanup(&target, &args.probe_namespace)) {
                Ok(done) => {
                    print!("{}", cleanup_text(&done, &args.probe_namespace));
                    // A namespace whose leftovers the API would not delete: they are still there.
                    if done.kubelet_pull.iter().any(|(_, d)| d.is_err()) {
                        exit::INTERNAL
                    } else {
                        exit::PASSED
                    }
                }
                Err(e) => super::cluster_failed(&e),
            },
        );
    }
    let mut config = configure::fleet(&args, target)?;
    if args.dry_run {
        return Ok(match runtime.block_on(fleet::plan(&config)) {
            // An empty List would read as "nothing to do": say why nothing could be planned.
            Ok(plan) if plan.pods.is_empty() => {
                super::print_error(&nothing_planned(&plan));
                exit::CONFIG
            }
            Ok(plan) => {
                print!(
                    "{}",
                    render::json::render(&fleet::manifest(&plan, &config.probe_namespace))
                );
                exit::PASSED
            }
            Err(e) => super::cluster_failed(&e),
        });
    }
    if args.run.fresh_node && !args.run.yes && !fresh_nodes_agreed()? {
        eprintln!("not started: no fresh node asked for");
        return Ok(exit::USAGE);
    }
    // On a terminal, a progress line per probe pod on stderr while the run waits.
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
        Err(e) => return Ok(super::cluster_failed(&e)),
    };
    super::print_report(args.output, &report, |r| {
        fleet::text::render(r, Style::detect())
    });
    if report.cleanup.error.is_some() {
        return Ok(exit::INTERNAL);
    }
    Ok(exit::for_verdict(&report.verdict))
}

/// Why a dry run planned no probe pod, on one line: each problem once, with the nodes it
/// stopped; or that no node was chosen at all.
fn nothing_planned(plan: &fleet::Plan) -> String {
    let mut problems: Vec<(String, Vec<&str>)> = Vec::new();
    for (node, problem) in &plan.unprobed {
        let said = problem.describe();
        match problems.iter_mut().find(|(p, _)| *p == said) {
            Some((_, nodes)) => nodes.push(node),
            None => problems.push((said, vec![node])),
        }
    }
    let mut why: Vec<String> = problems
        .iter()
        .map(|(problem, nodes)| format!("{} ({problem})", nodes.join(", ")))
        .collect();
    if why.is_empty() {
        why.push("no Ready node matches the pools, --pools and -l given".into());
    }
    if !plan.unmatched_pools.is_empty() {
        why.push(format!(
            "--pools {} names no pool",
            plan.unmatched_pools.join(",")
        ));
    }
    format!(
        "--dry-run: no probe pod could be planned: {}",
        why.join("; ")
    )
}

/// `--fresh-node` costs nodes: say so and ask on a terminal; without one, `--yes` is needed.
fn fresh_nodes_agreed() -> anyhow::Result<bool> {
    use std::io::{BufRead, IsTerminal, Write};
    eprintln!(
        "--fresh-node: each chosen pool's autoscaler will add a node for a probe pod, at a node's price while it runs; {}.",
        fleet::fresh::SCALE_DOWN_NOTE
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

/// What `--cleanup` did, a line per namespace.
fn cleanup_text(done: &fleet::CleanupDone, probe_namespace: &str) -> String {
    use std::fmt::Write;
    let inline = render::terminal::inline;
    let deleted = |what: &str, c: &fleet::run_objects::Cleanup, namespace: &str| {
        format!(
            "deleted {} {what}{} from {} ({})",
            c.deleted,
            if c.deleted == 1 { "" } else { "s" },
            inline(namespace),
            match &c.unverified {
                Some(why) => format!("whether any is left is unknown: {}", inline(why)),
                None => format!("{} still terminating", c.remaining),
            }
        )
    };
    let mut out = deleted("probe pod", &done.probe_namespace, probe_namespace) + "\n";
    for (namespace, result) in &done.kubelet_pull {
        let _ = match result {
            Ok(c) => writeln!(out, "{}", deleted("kubelet-pull pod", c, namespace)),
            Err(refused) => writeln!(out, "{}", inline(&refused.to_string())),
        };
    }
    if let Some(why) = &done.kubelet_pull_unlisted {
        let _ = writeln!(
            out,
            "whether kubelet-pull pods are left in other namespaces is unknown: {}",
            inline(why)
        );
    }
    out
}
