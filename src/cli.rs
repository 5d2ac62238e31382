//! The command line, raw: clap definitions only. `main` turns them into work.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Why can't this Kubernetes node pull this image?
#[derive(Debug, Parser)]
#[command(name = "pullpath", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read failure text and name the layer, hop, host and owner.
    ///
    /// Accepts an event message, `kubectl describe pod` output, `kubectl get events -o json`,
    /// `kubectl get pod -o json` or a runtime log: as arguments, from a file, or on stdin.
    Explain(ExplainArgs),
}

#[derive(Debug, clap::Args)]
pub struct ExplainArgs {
    /// The failure text (several arguments are joined by spaces). Reads stdin when absent.
    pub text: Vec<String>,
    /// Read the failure text from this file (`-` for stdin).
    #[arg(short = 'f', long = "file", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    #[arg(short, long, value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// For people.
    Text,
    /// The versioned report (docs/report-schema.md).
    Json,
}
