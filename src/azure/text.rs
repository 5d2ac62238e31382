//! The text view of the azure report: per pool, one line per endpoint; for each failure its
//! resource, field, command and advice; the overall verdict last. It reads only the report.

use std::fmt::Write;

use crate::render::Style;
use crate::render::terminal::inline;
use crate::verdict::{Fault, Verdict};

use super::wire::AzureReport;

/// One labelled line; the value comes from the exports (outside text), kept to this line.
fn line(out: &mut String, indent: usize, name: &str, value: &str) {
    let _ = writeln!(out, "{:indent$}{name:<12}{}", "", inline(value));
}

fn lines(out: &mut String, indent: usize, name: &str, items: &[String]) {
    for (i, item) in items.iter().enumerate() {
        line(
            out,
            indent,
            if i == 0 { name } else { "" },
            &format!("- {item}"),
        );
    }
}

/// The text view: per pool, one line per endpoint, and for each failure its resource, field,
/// command and advice; the overall verdict last.
pub fn render(report: &AzureReport, style: Style) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "pullpath azure analyse  (cluster {}, registry {})",
        inline(report.cluster.as_deref().unwrap_or("?")),
        inline(report.registry.as_deref().unwrap_or("?"))
    );
    for note in &report.unconcluded {
        let _ = writeln!(out, "{} {}", style.paint("1;33", "!"), inline(note));
    }
    for pool in &report.pools {
        let _ = writeln!(out);
        let routes = match (pool.routes, &pool.nic) {
            ("effective", Some(nic)) => format!("effective routes of NIC {nic}"),
            ("rebuilt", _) => "routes rebuilt from route table, peerings and gateways".into(),
            _ => "routes unknown".into(),
        };
        let _ = writeln!(
            out,
            "pool {}  ({})",
            style.paint("1", &inline(&pool.pool)),
            inline(&format!(
                "VNet {}, subnet {}; {routes}",
                pool.vnet.as_deref().unwrap_or("?"),
                pool.subnet
                    .as_deref()
                    .and_then(|s| s.rsplit('/').next())
                    .unwrap_or("?")
            ))
        );
        for e in &pool.endpoints {
            let v = &e.verdict;
            let named = v.fault().map_or("?".to_string(), Fault::to_string);
            let step = e.step.map_or("", |s| s.as_str());
            let (mark, what) = match v {
                Verdict::Passed => (
                    style.paint("32", "✓"),
                    format!("→ {}", e.resolves_to.as_deref().unwrap_or("-")),
                ),
                Verdict::Failed(_) => (style.paint("1;31", "✗"), format!("{named} at step {step}")),
                Verdict::Undecided(_) => (
                    style.paint("1;33", "?"),
                    format!("undecided ({named}) at step {step}"),
                ),
            };
            let _ = writeln!(
                out,
                "  {mark} {:<44} {}",
                inline(&format!("{} [{}]", e.host, e.role)),
                inline(&what)
            );
            if v.is_passed() {
                continue;
            }
            if let Some(cause) = v.cause() {
                line(&mut out, 6, "cause", cause);
            }
            if let Some(resource) = &e.resource {
                line(&mut out, 6, "resource", resource);
            }
            if let Some(field) = &e.field {
                line(
                    &mut out,
                    6,
                    "field",
                    &format!(
                        "{field}: {} (want {})",
                        e.observed.as_deref().unwrap_or("?"),
                        e.expected.as_deref().unwrap_or("?")
                    ),
                );
            }
            if let Some(show) = &e.show {
                line(&mut out, 6, "show", show);
            }
            if let Some(fault) = v.fault() {
                line(
                    &mut out,
                    6,
                    "owner",
                    &style.paint("1", fault.owner().title()),
                );
            }
            if let Verdict::Undecided(undecided) = v
                && let Some(decides) = &undecided.decides
            {
                line(&mut out, 6, "decides", decides);
            }
            lines(
                &mut out,
                6,
                "look at",
                &e.where_to_look[1.min(e.where_to_look.len())..],
            );
            lines(&mut out, 6, "won't help", &e.will_not_help);
        }
        let mut checks: Vec<&String> = pool
            .endpoints
            .iter()
            .flat_map(|e| e.checks.iter())
            .collect();
        let mut seen = Vec::new();
        checks.retain(|c| {
            let fresh = !seen.contains(c);
            seen.push(*c);
            fresh
        });
        let checks: Vec<String> = checks.into_iter().cloned().collect();
        lines(&mut out, 2, "check", &checks);
    }
    let _ = writeln!(out);
    let v = &report.verdict;
    let headline = if v.is_passed() {
        style.paint(
            "1;32",
            "✓ passed: every pool reaches every endpoint as far as the exports show",
        )
    } else {
        let named = v.fault().map_or("?".to_string(), Fault::to_string);
        let (pool, host) = match &report.decided_by {
            Some(d) => (d.pool.as_str(), d.host.as_str()),
            None => {
                let cause = v.cause().unwrap_or("nothing analysed");
                let _ = writeln!(
                    out,
                    "{}",
                    style.paint("1;33", &inline(&format!("? undecided: {cause}")))
                );
                return out;
            }
        };
        if v.is_decided() {
            style.paint("1;31", &format!("✗ {named} · pool {pool} · {host}"))
        } else {
            style.paint(
                "1;33",
                &format!("? {named} · pool {pool} · {host} · undecided"),
            )
        }
    };
    let _ = writeln!(out, "{headline}");
    crate::render::terminal::finish(&out)
}
