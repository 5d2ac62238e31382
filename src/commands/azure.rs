//! `pullpath azure commands` and `pullpath azure analyse DIR`.

use crate::cli::{AzureArgs, AzureCommand};
use crate::render::Style;
use crate::{azure, exit};

/// Print the export script, or analyse an export directory and print its report.
pub fn run(args: AzureArgs) -> anyhow::Result<u8> {
    match args.command {
        AzureCommand::Commands(a) => {
            print!(
                "{}",
                azure::commands::script(&azure::commands::Target {
                    cluster: &a.cluster,
                    resource_group: &a.resource_group,
                    registry: &a.registry,
                    out: &a.out,
                })
            );
            Ok(exit::PASSED)
        }
        AzureCommand::Analyse(a) => {
            let report = azure::run(&a.dir, a.pool.as_deref())?;
            super::print_report(a.output, &report, |r| {
                azure::text::render(r, Style::detect())
            });
            Ok(exit::for_verdict(&report.verdict))
        }
    }
}
