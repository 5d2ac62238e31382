//! Help fits the terminal: every command's `-h` and `--help`, at 80 and 100 columns (clap's
//! `wrap_help` reads the width from the terminal, else `COLUMNS`; pullpath caps it at 100).

use std::process::Command;

const COMMANDS: [&[&str]; 10] = [
    &[],
    &["explain"],
    &["scan"],
    &["probe"],
    &["fleet"],
    &["azure"],
    &["azure", "commands"],
    &["azure", "analyse"],
    &["completions"],
    &["man"],
];

fn help(command: &[&str], flag: &str, columns: usize) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(command)
        .arg(flag)
        .env("COLUMNS", columns.to_string())
        .output()
        .expect("pullpath runs");
    assert!(out.status.success(), "{command:?} {flag}");
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn every_help_fits_80_and_100_columns() {
    for command in COMMANDS {
        for flag in ["-h", "--help"] {
            for columns in [80, 100] {
                let text = help(command, flag, columns);
                let over: Vec<&str> = text
                    .lines()
                    .filter(|line| line.chars().count() > columns)
                    .collect();
                assert!(
                    over.is_empty(),
                    "{command:?} {flag} at {columns}: {over:#?}"
                );
            }
        }
    }
    // A wider terminal still gets lines of at most 100 columns.
    let wide = help(&["fleet"], "--help", 200);
    assert!(
        wide.lines().all(|line| line.chars().count() <= 100),
        "{wide}"
    );
}

/// The help says what the code needs and does: the probe pod mounts the node's `/` and names it
/// with --host-root; fleet probes the newest existing node unless --fresh-node.
#[test]
fn help_says_what_the_probe_and_fleet_really_do() {
    let words = |text: String| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let probe = words(help(&["probe"], "--help", 100));
    assert!(probe.contains("node's `/` mounted read-only"), "{probe}");
    assert!(!probe.contains("/etc mounted"), "{probe}");
    let fleet = words(help(&["fleet"], "--help", 100));
    assert!(
        fleet.contains("from the newest node of every pool"),
        "{fleet}"
    );
    assert!(!fleet.contains("from fresh nodes"), "{fleet}");
}

/// kubectl's flags for the API are on every command that talks to it.
#[test]
fn every_command_that_reads_the_cluster_takes_kubectls_flags() {
    for command in ["explain", "scan", "fleet"] {
        let text = help(&[command], "--help", 100);
        for flag in [
            "--kubeconfig",
            "--context",
            "--cluster",
            "--user",
            "--as <USER>",
            "--as-group",
            "--as-uid",
            "--namespace",
            "--request-timeout",
            "yaml",
        ] {
            assert!(text.contains(flag), "{command}: no {flag}");
        }
    }
}
