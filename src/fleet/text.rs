//! The fleet report for people: the pools first (the answer), then one line per node, then
//! what was not probed and what was left behind. Reads the report, never the engine. A run
//! problem is said once, numbered, under "run problems": the pool lines and the table refer to
//! it by its number.

use std::fmt::Write;

use super::report::{FleetReport, NodeRow, ProblemReport, verdict_words};
use crate::render::Style;
use crate::render::terminal::inline;

/// `50m`, `3h`, `12d`.
fn age(seconds: Option<i64>) -> String {
    match seconds {
        None => "?".to_string(),
        Some(s) if s < 3600 => format!("{}m", s / 60),
        Some(s) if s < 172_800 => format!("{}h", s / 3600),
        Some(s) => format!("{}d", s / 86_400),
    }
}

/// The run's problems, each (kind, message) once with the nodes it stopped, in report order.
fn distinct_problems(problems: &[ProblemReport]) -> Vec<(&ProblemReport, Vec<String>)> {
    let mut distinct: Vec<(&ProblemReport, Vec<String>)> = Vec::new();
    for p in problems {
        let whose = match (&p.node, &p.pool) {
            (Some(node), Some(pool)) => Some(format!("{node} ({pool})")),
            (Some(node), None) => Some(node.clone()),
            _ => None,
        };
        let same = |(q, _): &&mut (&ProblemReport, Vec<String>)| {
            q.kind == p.kind && q.message == p.message
        };
        match distinct.iter_mut().find(same) {
            Some((_, nodes)) => nodes.extend(whose),
            None => distinct.push((p, whose.into_iter().collect())),
        }
    }
    distinct
}

/// The number ("run problem N") of the problem whose message is `message`.
fn problem_number(distinct: &[(&ProblemReport, Vec<String>)], message: &str) -> Option<usize> {
    distinct
        .iter()
        .position(|(p, _)| p.message == message)
        .map(|i| i + 1)
}

fn result(row: &NodeRow, distinct: &[(&ProblemReport, Vec<String>)]) -> String {
    let v = &row.verdict;
    let numbered = row
        .problem
        .as_ref()
        .and_then(|p| problem_number(distinct, &p.message));
    let mut text = match (row.status, numbered) {
        ("no-answer", Some(n)) => format!("run problem {n} (below); no verdict"),
        (status, _) => match status {
            "passed" => "passes".to_string(),
            "works-from-cache" => format!("works from cache; a fresh pull {}", verdict_words(v)),
            "probe-image-failed" => format!("probe pod's own image pull {}", verdict_words(v)),
            "no-answer" if row.problem.is_some() => "run problem (below); no verdict".to_string(),
            "no-answer" => format!("no answer: {}", v.cause().unwrap_or("")),
            _ => verdict_words(v),
        },
    };
    if !v.is_passed()
        && row.status != "no-answer"
        && let Some(cause) = v.cause()
    {
        text.push_str(&format!(" ({cause})"));
    }
    if !row.hand_fixes.is_empty() {
        text.push_str(" [hand fix: ");
        text.push_str(&row.hand_fixes.join("; "));
        text.push(']');
    }
    if let Some(pull) = &row.runtime_pull {
        let said = match (&pull.outcome[..], &pull.message) {
            ("pulled", _) => "pulled".to_string(),
            (outcome, Some(message)) => format!("{outcome}: {message}"),
            (outcome, None) => outcome.to_string(),
        };
        text.push_str(&match pull.agrees {
            Some(true) => format!(" [runtime agrees: {said}]"),
            Some(false) => format!(" [DISAGREEMENT: the runtime's own pull {said}]"),
            None => format!(" [runtime not asked: {said}]"),
        });
    }
    if let Some(pull) = &row.kubelet_pull {
        let said = match pull.outcome {
            "pulled" => "pulled".to_string(),
            outcome => format!("{outcome}: {}", pull.message),
        };
        text.push_str(&match pull.agrees {
            Some(true) => format!(" [kubelet agrees: {said}]"),
            Some(false) => format!(" [DISAGREEMENT: the kubelet's own pull {said}]"),
            None => format!(" [kubelet: {said}]"),
        });
    }
    text
}

pub fn render(report: &FleetReport, style: Style) -> String {
    let mut out = String::new();
    let distinct = distinct_problems(&report.problems);
    let pools = report.pools.len();
    let _ = writeln!(
        out,
        "{}",
        style.paint(
            "1",
            &format!(
                "pullpath fleet {}: {} node{} in {pools} pool{} probed ({:.1}s, run {})",
                report.image,
                report.nodes.len(),
                if report.nodes.len() == 1 { "" } else { "s" },
                if pools == 1 { "" } else { "s" },
                report.elapsed_ms as f64 / 1000.0,
                report.run_id
            )
        )
    );
    if let Some(w) = &report.workload {
        let _ = writeln!(out, "eligibility from {w}");
    }
    match report.ending {
        "deadline" => {
            let _ = writeln!(
                out,
                "{}",
                style.paint(
                    "1;33",
                    "! the run's deadline ended it: nodes without an answer are marked"
                )
            );
        }
        "interrupted" => {
            let _ = writeln!(
                out,
                "{}",
                style.paint("1;33", "! interrupted: nodes without an answer are marked")
            );
        }
        _ => {}
    }
    let _ = writeln!(out);
    for (pool, summary) in report.pools.iter().zip(&report.summary) {
        let mark = if pool.verdict.is_passed() {
            style.paint("1;32", "✓")
        } else {
            style.paint("1;31", "✗")
        };
        // A run problem's words stand once, under "run problems": here its number.
        let mut summary = summary.clone();
        for (n, (p, _)) in distinct.iter().enumerate() {
            summary = summary.replace(&p.message, &format!("run problem {} (below)", n + 1));
        }
        let _ = writeln!(out, "{mark} {summary}");
    }
    let _ = writeln!(out);
    let width = |f: &dyn Fn(&NodeRow) -> usize, min: usize| {
        report.nodes.iter().map(f).max().unwrap_or(0).max(min)
    };
    let (wp, wn) = (width(&|r| r.pool.len(), 4), width(&|r| r.node.len(), 4));
    let eligibility = report.workload.is_some();
    let _ = writeln!(
        out,
        "{:wp$}  {:wn$}  {:>4}  {}{:6}  {:>6}  RESULT",
        "POOL",
        "NODE",
        "AGE",
        if eligibility { "ELIGIBLE  " } else { "" },
        "CACHED",
        "TIME"
    );
    for r in &report.nodes {
        let eligible = match r.eligible {
            Some(true) => "yes       ",
            Some(false) => "no        ",
            None => "",
        };
        let line = format!(
            "{:wp$}  {:wn$}  {:>4}  {eligible}{:6}  {:>5.1}s  {}",
            r.pool,
            r.node,
            age(r.age_seconds),
            if r.cached { "yes" } else { "-" },
            r.elapsed_ms as f64 / 1000.0,
            result(r, &distinct)
        );
        let code = match r.status {
            "passed" => "32",
            "no-answer" | "undecided" => "33",
            _ => "31",
        };
        // Every line below holds outside text (a probe pod's answer, the API's words): each is
        // kept to its line.
        let _ = writeln!(out, "{}", style.paint(code, &inline(&line)));
        if let Some(why) = &r.not_eligible_because {
            let _ = writeln!(out, "{:wp$}  {:wn$}  not eligible: {}", "", "", inline(why));
        }
        // The pause image is the expected start; another image the node held is worth a line.
        if let Some(chosen) = r.node_image.as_ref().filter(|c| c.source == "running") {
            let line = format!("probe started from {} ({})", chosen.image, chosen.why);
            let _ = writeln!(out, "{:wp$}  {:wn$}  {}", "", "", inline(&line));
        }
        if let Some(fresh) = &r.fresh_node {
            let came = format!(
                "fresh node (--fresh-node), after {:.0}s{}",
                fresh.waited_ms as f64 / 1000.0,
                fresh
                    .scheduling
                    .last()
                    .map(|s| format!("; last scheduling event: {s}"))
                    .unwrap_or_default()
            );
            let _ = writeln!(out, "{:wp$}  {:wn$}  {}", "", "", inline(&came));
            if let Some(difference) = &fresh.difference {
                let line = format!("{:wp$}  {:wn$}  ! {difference}", "", "");
                let _ = writeln!(out, "{}", style.paint("1;33", &inline(&line)));
            }
        }
    }
    if !report.skipped.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "not probed:");
        for s in &report.skipped {
            let evidence = s
                .evidence
                .as_deref()
                .map(|e| format!(" [{e}]"))
                .unwrap_or_default();
            let line = format!("{} ({}): {}{evidence}", s.node, s.pool, s.why);
            let _ = writeln!(out, "  {}", inline(&line));
        }
    }
    if !report.problems.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "run problems (the run could not ask; no verdict on the pool):"
        );
        for (n, (p, nodes)) in distinct.iter().enumerate() {
            let whose = match nodes.is_empty() {
                true => String::new(),
                false => format!("{}: ", nodes.join(", ")),
            };
            let line = format!("  {}. {whose}{} — {}", n + 1, p.kind, p.message);
            let _ = writeln!(out, "{}", style.paint("33", &inline(&line)));
        }
    }
    if let Some(fresh) = report.nodes.iter().find_map(|r| r.fresh_node.as_ref()) {
        let _ = writeln!(out);
        let _ = writeln!(out, "fresh nodes: {}", inline(fresh.note));
    }
    let _ = writeln!(out);
    let c = &report.cleanup;
    let _ = match &c.error {
        Some(e) => writeln!(
            out,
            "{}",
            style.paint(
                "1;31",
                &inline(&format!(
                    "probe pods NOT cleaned up: {e}; run `pullpath fleet --cleanup -n {}`",
                    report.probe_namespace
                ))
            )
        ),
        None if c.unverified.is_some() => writeln!(
            out,
            "probe pods: deleted by run label in {}, but whether any is left is unknown ({}); `pullpath fleet --cleanup` removes leftovers",
            report.probe_namespace,
            inline(c.unverified.as_deref().unwrap_or_default())
        ),
        None if c.remaining > 0 => writeln!(
            out,
            "probe pods: {} deleted, {} still terminating in {} (`pullpath fleet --cleanup` removes leftovers)",
            c.deleted, c.remaining, report.probe_namespace
        ),
        None => writeln!(
            out,
            "probe pods: all deleted from {} (run label pullpath/run={})",
            report.probe_namespace, report.run_id
        ),
    };
    crate::render::terminal::finish(&out)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::fleet::answer::Answer;
    use crate::fleet::ending::Ending;
    use crate::fleet::report::{Header, build};
    use crate::fleet::run::{NodeRun, RunOutcome};
    use crate::fleet::run_objects::Cleanup;
    use crate::fleet::run_problem::RunProblem;
    use crate::fleet::select::{ChoiceReason, NodeChoice};
    use crate::pod::node::NodeFacts;

    fn chosen(name: &str) -> NodeChoice {
        NodeChoice {
            facts: NodeFacts::named(name),
            pool: "user".into(),
            ready: true,
            eligible: None,
            listed: false,
            running: false,
            chosen: true,
            why: ChoiceReason::Newest { rank: 1 },
            evidence: None,
            arch: None,
            nodeless: false,
        }
    }

    /// Two nodes stopped by the same run problem: its words once, numbered, with both nodes;
    /// the pool line and the table rows refer to it.
    #[test]
    fn a_run_problem_is_said_once_and_referred_to() {
        let candidates = [chosen("node-a"), chosen("node-b")];
        let outcome = RunOutcome {
            runs: ["node-a", "node-b"]
                .into_iter()
                .map(|node| NodeRun {
                    node: Some(node.into()),
                    pod: format!("pullpath-fleet-x-{node}"),
                    answer: Answer::Problem(RunProblem::NoNodeImage { pods_unread: None }),
                    node_image: None,
                    kubelet_pull: None,
                    elapsed: Duration::from_millis(20),
                    fresh: None,
                })
                .collect(),
            ending: Ending::Finished,
            cleanup: Ok(Cleanup {
                deleted: 0,
                remaining: 0,
                unverified: None,
            }),
            events_unread: None,
        };
        let header = Header {
            image: "r.example/app:1".into(),
            run_id: "0123456789".into(),
            probe_namespace: "pullpath".into(),
            probe_image: "r.example/pullpath:0.1.0".into(),
            probe_arches: Some(vec!["amd64".into()]),
            delivery: None,
            workload: None,
            pull_secrets: Vec::new(),
            node_pools_unread: None,
            unmatched_pools: Vec::new(),
            now: 0,
            elapsed_ms: 30,
        };
        let report = build(header, &candidates, &outcome);
        let text = render(&report, Style::Plain);
        let words = RunProblem::NoNodeImage { pods_unread: None }.describe();
        assert_eq!(text.matches(&words).count(), 1, "{text}");
        assert!(
            text.contains(&format!(
                "  1. node-a (user), node-b (user): no-node-image — {words}"
            )),
            "{text}"
        );
        assert_eq!(
            text.matches("run problem 1 (below); no verdict").count(),
            2,
            "{text}"
        );
        assert!(
            text.lines()
                .any(|l| l.contains("pool `user`") && l.contains("run problem 1 (below)")),
            "{text}"
        );
    }
}
