//! The commands: each subcommand's workflow, from its parsed flags to a printed report and an
//! exit status. `main` parses and dispatches here; nothing in the crate imports these.
//!
//! A command's own failure (a bad flag value, unreadable input) is its `Err`, which `main`
//! prints as a usage error; pullpath failing while it runs (the async runtime, the Kubernetes
//! API) is said here on stderr and returned as [`exit::INTERNAL`].

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

/// The exit status of a run that failed inside pullpath: said on stderr, [`exit::INTERNAL`].
fn internal(error: &dyn std::fmt::Display) -> u8 {
    print_error(error);
    exit::INTERNAL
}
