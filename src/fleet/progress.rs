//! What a run says while it waits: one step at a time per probe pod, sent by `run` and drawn
//! by the command line (a line per pod on a terminal: the pinned probe of a pool's node, and
//! with `--fresh-node` the pool's fresh probe). Data and its words (`Display`); `progress_view`
//! draws them.

use super::answer::Answer;

/// Where a run's steps go; `None` in `RunSettings`: nobody is watching.
pub type Sink = tokio::sync::mpsc::UnboundedSender<Step>;

/// One probe pod's news.
#[derive(Debug, Clone)]
pub struct Step {
    /// The pod's line: its node, or `fresh node of pool P`.
    pub line: String,
    pub doing: Doing,
}

#[derive(Debug, Clone)]
pub enum Doing {
    /// The pod was created; its node runs it next.
    Created,
    /// A fresh pod waits for its node: how long and the scheduler's or autoscaler's latest word,
    /// as `fresh::waiting_words` puts them.
    Waiting { words: String },
    /// A fresh pod's node came: its name, and its creation and Ready times when known.
    OnNode {
        node: String,
        created: Option<String>,
        ready: Option<String>,
    },
    /// The answer read (or the run problem that ended the wait).
    Answered(Box<Answer>),
}

/// The line a pod's steps are drawn on.
pub fn line_of(plan: &super::pod_spec::PodPlan) -> String {
    match &plan.fresh {
        Some(fresh) => format!("fresh node of pool {}", fresh.pool_label.1),
        None => plan.node.clone(),
    }
}

/// Send `doing` for `plan`'s line when someone watches; a closed sink is no reason to stop.
pub fn tell(sink: Option<&Sink>, plan: &super::pod_spec::PodPlan, doing: Doing) {
    if let Some(sink) = sink {
        let _ = sink.send(Step {
            line: line_of(plan),
            doing,
        });
    }
}

impl std::fmt::Display for Step {
    /// `fresh node of pool user: pending 40 s: scale-up of aks-user-vmss 1→2 (max 3)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: ", self.line)?;
        match &self.doing {
            Doing::Created => f.write_str("probe pod created"),
            Doing::Waiting { words, .. } => f.write_str(words),
            Doing::OnNode {
                node,
                created,
                ready,
            } => {
                write!(f, "on new node {node}")?;
                if let Some(created) = created {
                    write!(f, ", created {created}")?;
                }
                if let Some(ready) = ready {
                    write!(f, ", Ready {ready}")?;
                }
                f.write_str("; probing")
            }
            Doing::Answered(answer) => f.write_str(&answered(answer)),
        }
    }
}

/// An answer in a few words.
fn answered(answer: &Answer) -> String {
    match answer {
        Answer::Probe(probe) => {
            let verdict = &probe.verdict;
            match (verdict.is_passed(), verdict.layer()) {
                (true, _) => "passes".to_string(),
                (false, Some(layer)) => format!(
                    "fails at {layer}{}",
                    verdict
                        .cause()
                        .map(|c| format!(": {c}"))
                        .unwrap_or_default()
                ),
                (false, None) => format!("undecided: {}", verdict.cause().unwrap_or("")),
            }
        }
        Answer::ProbeImagePull { reason, .. } => format!("the probe pod's own image: {reason}"),
        Answer::Missing { why } => format!("no answer: {why}"),
        Answer::NotCreated { why, .. } => format!("no answer: {why}"),
        Answer::Problem(problem) => format!("run problem: {}", problem.describe()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::run_problem::RunProblem;

    fn step(doing: Doing) -> String {
        Step {
            line: "fresh node of pool user".into(),
            doing,
        }
        .to_string()
    }

    #[test]
    fn each_step_is_one_line_in_the_words_of_the_wait() {
        assert_eq!(
            step(Doing::Created),
            "fresh node of pool user: probe pod created"
        );
        assert_eq!(
            step(Doing::Waiting {
                words: "pending 40 s: scale-up of aks-user-vmss 1→2 (max 3)".into(),
            }),
            "fresh node of pool user: pending 40 s: scale-up of aks-user-vmss 1→2 (max 3)"
        );
        assert_eq!(
            step(Doing::OnNode {
                node: "aks-user-vmss000001".into(),
                created: Some("2026-12-05T09:00:00Z".into()),
                ready: Some("2026-12-05T09:00:42Z".into()),
            }),
            "fresh node of pool user: on new node aks-user-vmss000001, created 2026-12-05T09:00:00Z, Ready 2026-12-05T09:00:42Z; probing"
        );
        let refused = step(Doing::Answered(Box::new(Answer::Problem(
            RunProblem::ScaleUpRefused {
                reason: "NotTriggerScaleUp".into(),
                message: "pod didn't trigger scale-up: 1 max node group size reached".into(),
            },
        ))));
        assert!(
            refused.starts_with("fresh node of pool user: run problem: no fresh node")
                && refused.contains("max node group size reached"),
            "{refused}"
        );
    }
}
