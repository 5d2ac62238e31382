//! The human view of a multi-finding report: the groups, worst first, then each finding as
//! `explain` prints it, with where it happened (node, pool, cache) and its pull secrets.

use std::fmt::Write;

use super::Style;
use super::terminal::inline;
use super::text::{commands, explain, field, headline, list};
use crate::report::findings::{FindingReport, FindingsReport, GroupReport, MAX_LISTED_PER_GROUP};

pub fn findings(report: &FindingsReport, style: Style) -> String {
    let mut out = String::new();
    if report.findings.is_empty() {
        let _ = writeln!(out, "{}", headline(&report.verdict, style));
        let pods = report.scope.as_ref().map_or(0, |s| s.pods_read);
        field(
            &mut out,
            "pods",
            &format!("{pods} read, none waiting on an image"),
        );
    }
    // Every finding, listed or only counted (`GroupReport::unlisted`).
    let total: usize = report.groups.iter().map(|g| g.count).sum();
    if total > 1 {
        let pods: std::collections::BTreeSet<&str> = report
            .groups
            .iter()
            .flat_map(|g| g.pods.iter().map(String::as_str))
            .collect();
        let _ = writeln!(
            out,
            "{} failing pulls · {} pods · {} groups (worst first)",
            total,
            pods.len(),
            report.groups.len()
        );
        for group in &report.groups {
            group_line(&mut out, group, style);
        }
    }
    for unread in &report.unread {
        let _ = writeln!(
            out,
            "{} could not read {}: {}",
            style.paint("1;33", "!"),
            inline(&unread.what),
            inline(&unread.reason)
        );
    }
    for finding in &report.findings {
        if !out.is_empty() {
            out.push('\n');
        }
        finding_block(&mut out, finding, style);
    }
    crate::render::terminal::finish(&out)
}

fn group_line(out: &mut String, g: &GroupReport, style: Style) {
    let mut line = format!("✗ {}", g.layer.map_or("?".into(), |l| l.to_string()));
    if let Some(host) = &g.host {
        let _ = write!(line, " · {host}");
    }
    let _ = write!(line, " · pool {}", g.pool.as_deref().unwrap_or("-"));
    if !g.decided {
        line.push_str(" · undecided");
    }
    let _ = writeln!(
        out,
        "  {}  {} on {} node{}{}",
        style.paint("1;31", &inline(&line)),
        plural(g.count, "pull"),
        g.nodes.len(),
        if g.nodes.len() == 1 { "" } else { "s" },
        g.first_seen
            .as_ref()
            .map(|s| format!(" · first seen {s}"))
            .unwrap_or_default()
    );
    // A huge outage's group names thousands of pods: a screenful of them, the rest counted
    // (-o json names every one).
    let shown = g.pods.len().min(MAX_LISTED_PER_GROUP);
    let mut pods = g.pods[..shown].join(", ");
    if g.pods.len() > shown {
        let _ = write!(pods, " and {} more", g.pods.len() - shown);
    }
    let _ = writeln!(out, "      {}", inline(&pods));
    if g.unlisted > 0 {
        let _ = writeln!(
            out,
            "      {} listed below, {} more not listed",
            plural(g.findings.len(), "finding"),
            g.unlisted
        );
    }
}

fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

fn finding_block(out: &mut String, f: &FindingReport, style: Style) {
    let mut title = match &f.pod.namespace {
        Some(ns) => format!("── {ns}/{}", f.pod.name),
        None => format!("── {}", f.pod.name),
    };
    if let Some(c) = &f.container {
        let kind = match c.kind {
            Some("init") => "init container",
            Some("ephemeral") => "ephemeral container",
            _ => "container",
        };
        let _ = write!(title, " · {kind} {}", c.name);
        if let Some(reason) = &c.waiting_reason {
            let _ = write!(title, " ({reason})");
        }
    }
    if let Some(node) = &f.pod.node {
        let _ = write!(title, " · node {node}");
    }
    if let Some(w) = &f.pod.workload {
        let _ = write!(title, " · {w}");
    }
    // Names and reasons from the API: outside text, kept to this line.
    let _ = writeln!(out, "{}", style.paint("1", &inline(&title)));
    out.push_str(&explain(&f.report, style));
    if let Some(w) = &f.location {
        let n = &w.node;
        let mut parts = vec![format!("node {}", n.name)];
        parts.push(match (&n.pool, &n.pool_label) {
            (Some(pool), Some(label)) => format!("pool {pool} ({label})"),
            _ => "no pool label".to_string(),
        });
        if let Some(age) = n.age_seconds {
            parts.push(format!("{} old", human_age(age)));
        }
        for v in [&n.kubelet, &n.runtime, &n.os_image].into_iter().flatten() {
            parts.push(v.clone());
        }
        if let Some(zone) = &n.zone {
            parts.push(format!("zone {zone}"));
        }
        field(out, "where", &parts.join(" · "));
        field(out, "cache", &w.cache.summary);
        let holders: Vec<String> = w
            .cache
            .holders
            .iter()
            .map(|h| {
                format!(
                    "{} (pool {}{}): {}",
                    h.node,
                    h.pool.as_deref().unwrap_or("-"),
                    h.created
                        .as_ref()
                        .map(|c| format!(", created {c}"))
                        .unwrap_or_default(),
                    match (&h.image_id, h.evidence) {
                        (Some(id), _) => format!("runs {id}"),
                        (None, e) => e.to_string(),
                    }
                )
            })
            .collect();
        list(out, "", &holders);
    }
    let secrets: Vec<String> = f
        .pull_secrets
        .iter()
        .map(|s| format!("{} (from {}): {}", s.name, s.from, s.note))
        .collect();
    list(out, "secrets", &secrets);
    commands(out, "then", &f.next_commands);
}

/// `2400` → `40m`, `3_700_000` → `42d`.
pub fn human_age(seconds: i64) -> String {
    match seconds {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}
