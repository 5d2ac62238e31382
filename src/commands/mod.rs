//! The commands: each subcommand's workflow, from its parsed flags to a printed report and an
//! exit status. `main` parses and dispatches here; nothing in the crate imports these.
//!
//! A command's own failure (a bad flag value, unreadable input) is its `Err`, which `main`
//! prints as a usage error; a cluster that cannot be used is said here on stderr with its own
//! status ([`exit::for_cluster_error`]), and pullpath failing while it runs (the async runtime)
//! with [`exit::INTERNAL`].

use crate::cli::Output;
use crate::{exit, render};

/// `pullpath azure`: the export commands, or the analysis of what they wrote.
pub mod azure;
/// `pullpath completions` and `pullpath man`: generated from the command line's definitions.
pub mod docs;
/// `pullpath explain`: failure text, or a cluster object and, with `--probe`, its nodes.
pub mod explain;
/// `pullpath fleet`: probe pods on the chosen nodes, compared per pool.
pub mod fleet;
/// `pullpath probe`: the pull path walked from this network namespace.
pub mod probe;
/// `pullpath scan`, and the cluster read that `explain pod/NAME` shares with it.
pub mod scan;

/// pullpath's own error on stderr, one line: its text can hold what a registry, an API server or
/// a file said, so it is made safe for the terminal as every text output is.
pub fn print_error(error: &dyn std::fmt::Display) {
    eprintln!("pullpath: {}", render::terminal::inline(&error.to_string()));
}

/// Print a report as `-o` asks: JSON, YAML (the same document, as `kubectl -o yaml` is its
/// `-o json`), or the command's own text.
fn print_report<T: serde::Serialize>(output: Output, report: &T, text: impl FnOnce(&T) -> String) {
    match output {
        Output::Json => print!("{}", render::json::render(report)),
        Output::Yaml => print!("{}", yaml(report)),
        Output::Text => print!("{}", text(report)),
    }
}

/// The report as YAML. The emitter writes every control character as an escape (`\e`, `\x9B`)
/// inside a double-quoted scalar, so the text is as safe for a terminal as the JSON.
fn yaml<T: serde::Serialize>(report: &T) -> String {
    // Serializing plain structs of strings and enums cannot fail.
    serde_yaml_ng::to_string(report).expect("report serializes")
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

/// The exit status of a cluster read or write that failed: said on stderr, its status whose
/// fault it is.
fn cluster_failed(error: &crate::cluster::ClusterError) -> u8 {
    print_error(error);
    exit::for_cluster_error(error)
}

/// The exit status of a run that failed inside pullpath: said on stderr, [`exit::INTERNAL`].
fn internal(error: &dyn std::fmt::Display) -> u8 {
    print_error(error);
    exit::INTERNAL
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `-o yaml` is the JSON document's data, with control characters escaped.
    #[test]
    fn yaml_is_the_json_documents_data_and_escapes_controls() {
        let report = serde_json::json!({
            "verdict": {"layer": "tls", "cause": "x\u{9b}2J\u{7f}\u{1b}]0;t\u{7}"},
            "hops": [1, 2]
        });
        let text = yaml(&report);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text}");
        let back: serde_json::Value = serde_yaml_ng::from_str(&text).expect("YAML");
        assert_eq!(back, report);
    }
}
