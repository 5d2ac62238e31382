use std::process::ExitCode;

use clap::Parser;

/// Why can't this Kubernetes node pull this image?
#[derive(Debug, Parser)]
#[command(name = "pullpath", version, about, long_about = None)]
struct Cli {}

fn main() -> ExitCode {
    let _cli = Cli::parse();
    ExitCode::SUCCESS
}
