//! The human view: the verdict first, then evidence, owner, where to look, what will not help.

use std::fmt::Write;

use super::Style;
use crate::report::{ExplainReport, Verdict};

fn headline(verdict: &Verdict, style: Style) -> String {
    if verdict.passed {
        return style.paint("1;32", "✓ passed");
    }
    let layer = verdict.layer.map_or("?".to_string(), |l| l.to_string());
    let mut line = format!("✗ {layer}");
    if let Some(m) = verdict.mechanism {
        let _ = write!(line, " ({m})");
    }
    if let Some(hop) = verdict.hop {
        let _ = write!(line, " · hop {hop}");
    }
    if let Some(host) = &verdict.host {
        let _ = write!(line, " · {host}");
    }
    if !verdict.decided {
        line.push_str(" · undecided");
    }
    style.paint("1;31", &line)
}

fn field(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(out, "  {name:<12}{value}");
}

fn list(out: &mut String, name: &str, items: &[String]) {
    for (i, item) in items.iter().enumerate() {
        field(out, if i == 0 { name } else { "" }, &format!("- {item}"));
    }
}

pub fn explain(report: &ExplainReport, style: Style) -> String {
    let mut out = String::new();
    let v = &report.verdict;
    let _ = writeln!(out, "{}", headline(v, style));
    if let Some(note) = &report.note {
        field(&mut out, "note", note);
    }
    if let Some(cause) = &v.cause {
        field(&mut out, "cause", cause);
    }
    if let Some(url) = &report.url {
        field(&mut out, "request", url);
    }
    if let Some(image) = &report.image {
        field(&mut out, "image", image);
    }
    field(&mut out, "runtime", report.runtime.as_str());
    if let Some(owner) = v.owner {
        field(&mut out, "owner", &style.paint("1", owner.title()));
    }
    if !v.candidates.is_empty() {
        let items: Vec<String> = v
            .candidates
            .iter()
            .map(|c| format!("{}: {}", c.layer, c.why))
            .collect();
        list(&mut out, "could be", &items);
    }
    if let Some(decides) = &v.decides {
        field(&mut out, "decides", decides);
    }
    list(&mut out, "look at", &report.where_to_look);
    list(&mut out, "won't help", &report.will_not_help);
    list(&mut out, "next", &report.next_checks);
    if report.messages.len() > 1 {
        let decided_by = report.decided_by.as_deref().unwrap_or("");
        let items: Vec<String> = report
            .messages
            .iter()
            .map(|m| {
                let mark = if m.origin == decided_by { "→" } else { " " };
                format!(
                    "{mark} {}: {} · {} · {}",
                    m.origin,
                    m.layer,
                    m.hop,
                    m.host.as_deref().unwrap_or("-")
                )
            })
            .collect();
        list(&mut out, "messages", &items);
    }
    out
}
