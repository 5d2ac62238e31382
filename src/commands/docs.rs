//! `pullpath completions SHELL` and `pullpath man [--dir DIR]`.

use anyhow::Context;

use crate::cli::{CompletionsArgs, ManArgs};
use crate::{cli_docs, exit};

/// Print the completion script for the asked shell.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<u8> {
    let written = cli_docs::completions(args.shell, &mut std::io::stdout().lock());
    stdout_closed_is_done(written).context("cannot write the completion script")?;
    Ok(exit::PASSED)
}

/// Print the man page, or write one page per command into `--dir`.
pub fn man(args: ManArgs) -> anyhow::Result<u8> {
    match &args.dir {
        Some(dir) => cli_docs::man_pages(dir)
            .with_context(|| format!("cannot write man pages into {}", dir.display()))?,
        None => stdout_closed_is_done(cli_docs::man_page(&mut std::io::stdout().lock()))
            .context("cannot write the man page")?,
    }
    Ok(exit::PASSED)
}

/// A reader that stopped reading (`pullpath man | head`) is not a failure of ours.
fn stdout_closed_is_done(written: std::io::Result<()>) -> std::io::Result<()> {
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other,
    }
}
