//! The human view: the verdict first, then evidence, owner, where to look, what will not help.

use std::fmt::Write;

use super::Style;
use super::terminal::inline;
use crate::report::ExplainReport;
use crate::verdict::{Fault, Verdict};

pub(super) fn headline(verdict: &Verdict, style: Style) -> String {
    let (fault, seen) = match verdict {
        Verdict::Passed => return style.paint("1;32", "✓ passed"),
        Verdict::Failed(failure) => (Some(&failure.fault), &failure.seen),
        Verdict::Undecided(undecided) => (undecided.leaning.as_ref(), &undecided.seen),
    };
    let mut line = format!("✗ {}", fault.map_or("?".to_string(), Fault::to_string));
    if let Some(hop) = seen.hop {
        let _ = write!(line, " · hop {hop}");
    }
    if let Some(host) = &seen.host {
        let _ = write!(line, " · {}", inline(host));
    }
    if !verdict.is_decided() {
        line.push_str(" · undecided");
    }
    style.paint("1;31", &line)
}

/// The width the text view fits: values wrap under their label, not under column 0.
const WIDTH: usize = 100;
/// Where values start: two spaces and a 12-column label.
const VALUE_COLUMN: usize = 14;

/// One labelled line; the value is outside text, made safe for one line, then wrapped at spaces
/// to [`WIDTH`], its continuation lines under the value.
pub(super) fn field(out: &mut String, name: &str, value: &str) {
    labelled(out, name, &inline(value), 0);
}

/// `value` (already made safe) after the label, wrapped; continuation lines `hang` columns
/// further in than the value (a list item's text, past its `- `).
fn labelled(out: &mut String, name: &str, value: &str, hang: usize) {
    let lines = wrap(value, WIDTH - VALUE_COLUMN, WIDTH - VALUE_COLUMN - hang);
    for (i, line) in lines.iter().enumerate() {
        if i == 0 {
            let _ = writeln!(out, "  {name:<12}{line}");
        } else {
            let _ = writeln!(out, "{:width$}{line}", "", width = VALUE_COLUMN + hang);
        }
    }
}

/// `text` in lines of at most `first` columns, then `rest`, broken at spaces; a word longer
/// than a line (a URL, a path) keeps a line of its own rather than being cut.
fn wrap(text: &str, first: usize, rest: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for word in text.split(' ') {
        let limit = if lines.len() == 1 { first } else { rest };
        let line = lines.last_mut().expect("a line");
        if line.is_empty() || visible_width(line) + 1 + visible_width(word) <= limit {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        } else {
            lines.push(word.to_string());
        }
    }
    lines
}

/// Columns `text` takes on a terminal: characters, less the renderer's colour codes.
fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '\x1b' => in_code = true,
            'm' if in_code => in_code = false,
            _ if in_code => {}
            _ => width += 1,
        }
    }
    width
}

/// The owner, then what else the evidence may mean and what decides.
fn owner_and_candidates(out: &mut String, v: &Verdict, style: Style) {
    if let Some(fault) = v.fault() {
        field(out, "owner", &style.paint("1", fault.owner().title()));
    }
    let Verdict::Undecided(undecided) = v else {
        return;
    };
    let items: Vec<String> = undecided
        .candidates
        .iter()
        .map(|c| format!("{}: {}", c.layer, c.why))
        .collect();
    list(out, "could be", &items);
    if let Some(decides) = &undecided.decides {
        field(out, "decides", decides);
    }
}

/// Labelled items, each wrapped with its continuation lines under the item's text.
pub(super) fn list(out: &mut String, name: &str, items: &[String]) {
    for (i, item) in items.iter().enumerate() {
        let label = if i == 0 { name } else { "" };
        labelled(out, label, &inline(&format!("- {item}")), 2);
    }
}

/// Labelled commands: a command is never wrapped (it is copied whole); its `   # comment`, when
/// the line would pass [`WIDTH`], goes on the lines under it, each a shell comment.
pub(super) fn commands(out: &mut String, name: &str, items: &[String]) {
    for (i, item) in items.iter().enumerate() {
        let label = if i == 0 { name } else { "" };
        let item = inline(item);
        let (command, comment) = match item.split_once("   # ") {
            Some((command, comment)) if VALUE_COLUMN + 2 + visible_width(&item) > WIDTH => {
                (command, Some(comment))
            }
            _ => (item.as_str(), None),
        };
        let _ = writeln!(out, "  {label:<12}- {command}");
        let Some(comment) = comment else {
            continue;
        };
        let hang = VALUE_COLUMN + 2;
        for line in wrap(comment, WIDTH - hang - 2, WIDTH - hang - 2) {
            let _ = writeln!(out, "{:hang$}# {line}", "");
        }
    }
}

pub fn explain(report: &ExplainReport, style: Style) -> String {
    let mut out = String::new();
    let v = &report.verdict;
    let _ = writeln!(out, "{}", headline(v, style));
    if let Some(note) = &report.note {
        field(&mut out, "note", note);
    }
    if let Some(cause) = v.cause() {
        field(&mut out, "cause", cause);
    }
    if let Some(url) = &report.url {
        field(&mut out, "request", url);
    }
    if let Some(image) = &report.image {
        field(&mut out, "image", image);
    }
    field(&mut out, "runtime", report.runtime.as_str());
    if !report.hop_by.is_empty() {
        field(&mut out, "hop from", report.hop_by);
    }
    if let Some(cause) = report.node_cause {
        field(&mut out, "on the node", cause.as_str());
    }
    owner_and_candidates(&mut out, v, style);
    list(&mut out, "look at", &report.where_to_look);
    list(&mut out, "won't help", &report.will_not_help);
    commands(&mut out, "next", &report.next_checks);
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
    if report.messages_unlisted > 0 {
        let more = format!(
            "{} more messages not listed (none decides)",
            report.messages_unlisted
        );
        field(&mut out, "and", &more);
    }
    crate::render::terminal::finish(&out)
}

/// The path drawn hop by hop, then the verdict with its owner and advice.
/// The kubelet's credential sources and the pull loop's tries (usernames and keys only).
fn probe_credentials(out: &mut String, credentials: &crate::report::CredentialsReport) {
    let _ = writeln!(out, "\ncredentials for {}", inline(&credentials.image));
    for source in &credentials.sources {
        let keys = if source.keys.is_empty() {
            String::new()
        } else {
            format!(" [{}]", source.keys.join(", "))
        };
        let detail = source
            .detail
            .as_ref()
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "    {:<11} {} {}{}",
            source.kind,
            inline(&source.name),
            source.outcome,
            inline(&format!("{keys}{detail}"))
        );
    }
    for (i, attempt) in credentials.attempts.iter().enumerate() {
        let who = match (&attempt.username, &attempt.key) {
            (Some(user), Some(key)) => format!("{user} for {key}"),
            (Some(user), None) => user.clone(),
            _ => "no credential".into(),
        };
        let result = if attempt.passed {
            "passed".to_string()
        } else {
            attempt.layer.map_or("stopped", |l| l.as_str()).to_string()
        };
        let used = if i == credentials.used {
            "  (verdict)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "    try {} {} ({}): {result}{used}",
            i + 1,
            attempt.source,
            inline(&who)
        );
    }
    list(out, "credentials", &credentials.decides);
}

pub fn probe(report: &crate::report::ProbeReport, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pullpath probe {}  ({}, {} view)",
        inline(&report.image),
        report.platform,
        report.view
    );
    let servers: Vec<String> = report
        .resolver
        .nameservers
        .iter()
        .map(ToString::to_string)
        .collect();
    let _ = writeln!(
        out,
        "resolver  {} (search: {}; ndots {})",
        if servers.is_empty() {
            "none".to_string()
        } else {
            servers.join(", ")
        },
        if report.resolver.search.is_empty() {
            "-".to_string()
        } else {
            inline(&report.resolver.search.join(" "))
        },
        report.resolver.ndots
    );
    let runtime = &report.runtime;
    let who = match (&runtime.name, &runtime.version) {
        (Some(name), Some(version)) => format!("{name} {version}"),
        _ => "unknown".to_string(),
    };
    let how = match (runtime.source, &runtime.socket) {
        ("cri", Some(socket)) => format!("asked over CRI at {socket}"),
        ("flag", _) => "from --containerd-version".to_string(),
        _ => format!("containerd {} rules assumed", runtime.rules),
    };
    let _ = writeln!(out, "runtime   {who} ({how})");
    let hosts_dirs = match report.hosts_dirs.roots.is_empty() {
        true => "none".to_string(),
        false => report.hosts_dirs.roots.join(":"),
    };
    // Both name node paths (a containerd's `-c`, a config_path): one line each, whatever they hold.
    let _ = writeln!(
        out,
        "hosts     {} ({})",
        inline(&hosts_dirs),
        inline(&report.hosts_dirs.origin)
    );
    if let Some(downloads) = &report.downloads {
        let at_once = match downloads.at_once {
            Some(layers) => format!("{layers} layers at once"),
            None => "every layer at once".to_string(),
        };
        let origin = inline(&downloads.origin);
        let _ = writeln!(out, "download  {at_once} ({origin})");
    }
    if let Some(trust) = &report.system_trust {
        let dirs: Vec<&str> = trust.dirs.iter().map(|d| d.path.as_str()).collect();
        let _ = writeln!(
            out,
            "trust     {} certificates from {}{} (as Go loads them)",
            trust.certificates,
            inline(trust.bundle.as_deref().unwrap_or("no bundle file")),
            if dirs.is_empty() {
                String::new()
            } else {
                inline(&format!(" + {}", dirs.join(", ")))
            }
        );
    }
    for var in &report.proxy {
        let _ = writeln!(
            out,
            "proxy     {}={} (from {})",
            inline(&var.name),
            inline(&var.value),
            inline(&var.source)
        );
    }
    for warning in &report.warnings {
        let _ = writeln!(out, "{} {}", style.paint("1;33", "!"), inline(warning));
    }
    let _ = writeln!(out);
    for hop in &report.path {
        let ok = hop.steps.iter().all(|s| s.ok);
        let mark = if ok {
            style.paint("32", "✓")
        } else {
            style.paint("1;31", "✗")
        };
        let _ = writeln!(out, "{mark} {:<9}{}", hop.hop.as_str(), inline(&hop.host));
        for step in &hop.steps {
            let mark = if step.ok {
                style.paint("32", "✓")
            } else {
                style.paint("1;31", "✗")
            };
            let timing = step
                .elapsed_ms
                .map(|ms| format!("  ({ms} ms)"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "    {mark} {:<22} {}{timing}",
                inline(&step.step),
                inline(&step.detail)
            );
        }
    }
    for fix in &report.hand_fixes {
        let _ = writeln!(
            out,
            "{} hand fix: {}",
            style.paint("1;33", "!"),
            inline(fix)
        );
    }
    if let Some(credentials) = &report.credentials {
        probe_credentials(&mut out, credentials);
    }
    if let Some(pull) = &report.runtime_pull {
        let mark = match pull.agrees {
            Some(true) => style.paint("32", "="),
            Some(false) => style.paint("1;31", "≠"),
            None => style.paint("1;33", "?"),
        };
        let what = match (&pull.image_ref, &pull.message) {
            (Some(image_ref), _) => format!("pulled {image_ref}"),
            (None, Some(message)) => format!("{}: {message}", pull.outcome),
            (None, None) => pull.outcome.to_string(),
        };
        let after = match (pull.cleanup, &pull.cleanup_detail) {
            ("removed", _) => "; removed again (the node did not hold it)".to_string(),
            (_, Some(why)) => format!("; {why}"),
            _ if pull.was_cached => "; the node held it before".to_string(),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "
{mark} runtime's own pull (CRI PullImage): {}",
            inline(&format!("{what}{after}"))
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "{}", headline(&report.verdict, style));
    let v = &report.verdict;
    if v.is_passed() {
        let verified = report.blobs.iter().filter(|b| b.verified).count();
        let _ = writeln!(
            out,
            "  {:<12}{} blobs fetched, {verified} verified in full",
            "blobs",
            report.blobs.len()
        );
    }
    if let Some(cause) = v.cause() {
        field(&mut out, "cause", cause);
    }
    owner_and_candidates(&mut out, v, style);
    list(&mut out, "look at", &report.where_to_look);
    list(&mut out, "won't help", &report.will_not_help);
    crate::render::terminal::finish(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_wrap_under_their_label_within_the_width() {
        let mut out = String::new();
        let long = "word ".repeat(40);
        list(&mut out, "look at", &[long.trim().to_string()]);
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines.len() > 1, "{out}");
        assert!(lines.iter().all(|l| l.chars().count() <= WIDTH), "{out}");
        assert!(lines[0].starts_with("  look at     - word"), "{out}");
        assert!(lines[1].starts_with(&" ".repeat(VALUE_COLUMN + 2)), "{out}");
        assert!(!lines[1][VALUE_COLUMN + 2..].starts_with(' '), "{out}");
        // A word longer than a line keeps a line of its own, whole.
        let url = format!("https://r.example/{}", "a".repeat(120));
        let mut out = String::new();
        field(&mut out, "request", &format!("see {url} now"));
        assert!(out.lines().any(|l| l.trim() == url), "{out}");
    }

    #[test]
    fn a_command_stays_whole_and_its_comment_goes_below_it() {
        let command = format!("az acr show --name {}", "x".repeat(70));
        let mut out = String::new();
        commands(
            &mut out,
            "next",
            &[format!(
                "{command}   # the registry's network rules, and more words"
            )],
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], format!("  next        - {command}"));
        assert!(
            lines[1].trim_start().starts_with("# the registry's"),
            "{out}"
        );
        let mut short = String::new();
        commands(
            &mut short,
            "next",
            &["kubectl get pod POD   # which node".into()],
        );
        assert_eq!(short.lines().count(), 1);
    }
}
