//! fleet's progress on a terminal: a line per probe pod (a pool's node, a pool's fresh node),
//! each step of the run drawn over the last, the answer left standing. On stderr, so the
//! report on stdout stays whole; every word made safe for the terminal (`terminal::inline`).
//! Here, not in `render`: it reads fleet's steps, and `render` sits below fleet.

use std::collections::BTreeMap;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::progress::{Doing, Step};
use crate::render::terminal::inline;

/// Draw every step `steps` brings until the run drops its senders.
pub async fn draw(mut steps: tokio::sync::mpsc::UnboundedReceiver<Step>) {
    let multi = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{spinner} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    let mut lines: BTreeMap<String, ProgressBar> = BTreeMap::new();
    while let Some(step) = steps.recv().await {
        let bar = lines.entry(step.line.clone()).or_insert_with(|| {
            let bar = multi.add(ProgressBar::new_spinner());
            bar.set_style(style.clone());
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        let words = inline(&step.to_string());
        match step.doing {
            Doing::Answered(_) => bar.finish_with_message(words),
            _ => bar.set_message(words),
        }
    }
    for bar in lines.values().filter(|b| !b.is_finished()) {
        bar.abandon();
    }
}
