//! `pullpath probe IMAGE`: walk the pull path from here and print the verdict.

use std::io::Read;

use anyhow::{Context, bail};

use crate::cli::{Output, ProbeArgs};
use crate::credentials::Credentials;
use crate::probe;
use crate::render::{self, Style};
use crate::{configure, exit, report};

/// Probe the image as the flags say; the exit status is the verdict's.
pub fn run(args: ProbeArgs) -> anyhow::Result<u8> {
    // The probe reads a Linux node (/proc, rtnetlink, containerd's socket): elsewhere it would
    // speak for a machine no kubelet pulls on.
    if !cfg!(target_os = "linux") {
        bail!(
            "probe runs on a Linux node (or in a pod on one); on this system use explain, scan or fleet"
        );
    }
    let credentials = if args.password_stdin {
        Some(password_from_stdin(&args)?)
    } else {
        None
    };
    let progress =
        args.output == Output::Text && std::io::IsTerminal::is_terminal(&std::io::stderr());
    let config = configure::probe(&args, credentials, std::path::Path::new("/proc"), progress)?;
    let Some(runtime) = super::async_runtime() else {
        return Ok(exit::INTERNAL);
    };
    let report = match runtime.block_on(probe::run(config)) {
        Ok(run) => report::ProbeReport::from_run(run),
        Err(e) => return Ok(super::internal(&e)),
    };
    super::print_report(args.output, &report, |r| {
        render::text::probe(r, Style::detect())
    });
    Ok(exit::for_verdict(&report.verdict))
}

/// `--username` with `--password-stdin`: the password is stdin's text, its line end trimmed.
fn password_from_stdin(args: &ProbeArgs) -> anyhow::Result<Credentials> {
    let mut password = String::new();
    std::io::stdin()
        .take(64 * 1024)
        .read_to_string(&mut password)
        .context("cannot read the password from stdin")?;
    let password = password.trim_end_matches(['\r', '\n']).to_string();
    if password.is_empty() {
        bail!("--password-stdin: stdin held no password");
    }
    Ok(Credentials {
        username: args.username.clone().unwrap_or_default(),
        password,
    })
}
