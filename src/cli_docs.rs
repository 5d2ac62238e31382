//! Shell completions and man pages, generated from the clap definitions in [`crate::cli`], so
//! they cannot drift from the flags the binary accepts.

use std::io::{self, Write};
use std::path::Path;

use clap_complete::Shell;

use crate::cli::command_named;

/// The command name completions and man pages are written for (kubectl completes its plugins
/// itself, so the plugin name is not used here).
const NAME: &str = "pullpath";

/// The completion script for `shell`.
pub fn completions(shell: Shell, out: &mut dyn Write) -> io::Result<()> {
    let mut buffer = Vec::new();
    clap_complete::generate(shell, &mut command_named(NAME), NAME, &mut buffer);
    // clap_complete panics on nothing but a failed write, so write here where it is an error.
    out.write_all(&buffer)?;
    out.flush()
}

/// The man page of `pullpath` itself (its subcommands listed), as roff.
pub fn man_page(out: &mut dyn Write) -> io::Result<()> {
    clap_mangen::Man::new(command_named(NAME)).render(out)?;
    out.flush()
}

/// `pullpath.1` and one page per subcommand (`pullpath-probe.1`, …) into `dir`.
pub fn man_pages(dir: &Path) -> io::Result<()> {
    clap_mangen::generate_to(command_named(NAME), dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subcommand_is_completed_in_every_shell() {
        for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
            let mut script = Vec::new();
            completions(shell, &mut script).expect("written to memory");
            let script = String::from_utf8(script).expect("UTF-8");
            for subcommand in ["explain", "probe", "completions", "man"] {
                assert!(script.contains(subcommand), "{shell}: no {subcommand}");
            }
            assert!(
                script.contains("--full"),
                "{shell}: probe's flags are completed"
            );
        }
    }

    #[test]
    fn the_man_page_lists_the_subcommands() {
        let mut page = Vec::new();
        man_page(&mut page).expect("written to memory");
        let page = String::from_utf8(page).expect("UTF-8");
        assert!(page.contains(".TH pullpath 1"), "{page}");
        for subcommand in ["explain", "probe", "completions"] {
            assert!(
                page.contains(&format!("pullpath\\-{subcommand}")),
                "no {subcommand}"
            );
        }
    }
}
