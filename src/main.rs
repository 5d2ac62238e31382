//! `pullpath`: parse the command line, run the command, map the outcome to an exit status.

use std::ffi::OsString;
use std::path::Path;
use std::process::ExitCode;

use pullpath::cli::{self, Command};
use pullpath::commands::{self, print_error};
use pullpath::{exit, probe};

fn main() -> ExitCode {
    let argv: Vec<OsString> = std::env::args_os().collect();
    // A credential plugin run inside the node's root (see `in_node_root`): not a command for
    // people, so not in the command line's definitions.
    if argv
        .get(1)
        .is_some_and(|a| a == probe::kubelet_creds::ROOT_EXEC)
        && argv.len() >= 4
    {
        let error = probe::kubelet_creds::exec_in_root(
            Path::new(&argv[2]),
            Path::new(&argv[3]),
            &argv[4..],
        );
        print_error(&format!(
            "cannot run {} in the node's root: {error}",
            argv[3].to_string_lossy()
        ));
        return ExitCode::from(exit::INTERNAL);
    }
    let cli = match cli::try_parse_from(argv) {
        Ok(cli) => cli,
        // --help and --version print and succeed; a bad command line is a usage error (64).
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(exit::USAGE);
        }
    };
    let outcome = match cli.command {
        Command::Explain(args) => commands::explain::run(args),
        Command::Scan(args) => commands::scan::run(args),
        Command::Probe(args) => commands::probe::run(args),
        Command::Completions(args) => commands::docs::completions(args),
        Command::Man(args) => commands::docs::man(args),
        Command::Azure(args) => commands::azure::run(args),
        Command::Fleet(args) => commands::fleet::run(args),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        // A command's own error: what was asked cannot be done as asked.
        Err(e) => {
            print_error(&format!("{e:#}"));
            ExitCode::from(exit::USAGE)
        }
    }
}
