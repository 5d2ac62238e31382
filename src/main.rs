//! `pullpath`: parse the command line, run, map the outcome to an exit status.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Parser;
use pullpath::cli::{Cli, Command, ExplainArgs, Output};
use pullpath::render::{self, Style};
use pullpath::{exit, failure_text, report};

/// Input beyond this is refused rather than read: event logs are far smaller.
const MAX_INPUT: u64 = 64 * 1024 * 1024;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Explain(args) => explain(args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("pullpath: {e:#}");
            ExitCode::from(exit::USAGE)
        }
    }
}

fn read_input(args: &ExplainArgs) -> anyhow::Result<String> {
    let mut bytes = Vec::new();
    match (&args.file, args.text.is_empty()) {
        (Some(path), _) if path.as_os_str() != "-" => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot open {}", path.display()))?;
            file.take(MAX_INPUT + 1)
                .read_to_end(&mut bytes)
                .with_context(|| format!("cannot read {}", path.display()))?;
        }
        (None, false) => return Ok(args.text.join(" ")),
        _ => {
            std::io::stdin()
                .take(MAX_INPUT + 1)
                .read_to_end(&mut bytes)
                .context("cannot read stdin")?;
        }
    }
    if bytes.len() as u64 > MAX_INPUT {
        bail!(
            "input is larger than {} MiB; pass the pod's events or the runtime log around the failure",
            MAX_INPUT >> 20
        );
    }
    // Binary or mis-encoded input is read as text; invalid bytes become U+FFFD.
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

fn explain(args: ExplainArgs) -> anyhow::Result<u8> {
    let input = read_input(&args)?;
    let explanation = failure_text::explain(&input);
    let Some(report) = report::explain_report(&explanation) else {
        bail!(
            "no failure text given: pass an event message, `kubectl describe pod` output or a runtime log (argument, -f FILE, or stdin)"
        );
    };
    match args.output {
        Output::Json => print!("{}", render::json::render(&report)),
        Output::Text => print!("{}", render::text::explain(&report, Style::detect())),
    }
    Ok(exit::for_verdict(&report.verdict))
}
