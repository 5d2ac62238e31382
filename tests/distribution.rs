//! What operators install: shell completions that each shell accepts and completes from, man
//! pages that groff renders without warnings, and `--version` naming the commit.
//! (bash, zsh, fish and groff come from scripts/install-deps.sh.)

mod support;
use support::succeeded;

use std::path::Path;
use std::process::{Command, Output};

use support::scratch::Scratch;

const SUBCOMMANDS: [&str; 4] = ["explain", "probe", "completions", "man"];

fn pullpath(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(args)
        .output()
        .expect("pullpath runs")
}

fn stdout_of(args: &[&str]) -> String {
    let out = pullpath(args);
    assert!(
        out.status.success(),
        "pullpath {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

/// Run a shell tool; panics naming the install script when the tool is missing.
fn run(program: &str, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} ({e}): run scripts/install-deps.sh"))
}

#[test]
fn bash_completion_parses_and_completes_subcommands_and_flags() {
    let dir = Scratch::new("bash");
    std::fs::write(
        dir.path().join("pullpath.bash"),
        stdout_of(&["completions", "bash"]),
    )
    .expect("write");
    succeeded("bash -n", run("bash", &["-n", "pullpath.bash"], dir.path()));
    // Ask the completion function what bash would offer, as bash does on <TAB>.
    let complete = |words: &str, cword: usize| {
        let script = format!(
            "source ./pullpath.bash; COMP_WORDS=({words}); COMP_CWORD={cword}; \
             _pullpath pullpath \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
             printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        succeeded("bash completion", run("bash", &["-c", &script], dir.path()))
    };
    let offered = complete("pullpath ''", 1);
    for subcommand in SUBCOMMANDS {
        assert!(
            offered.lines().any(|l| l == subcommand),
            "{subcommand}:\n{offered}"
        );
    }
    let flags = complete("pullpath probe --f", 2);
    assert!(flags.lines().any(|l| l == "--full"), "{flags}");
    let shells = complete("pullpath completions ''", 2);
    for shell in ["bash", "zsh", "fish"] {
        assert!(shells.lines().any(|l| l == shell), "{shell}:\n{shells}");
    }
}

#[test]
fn zsh_completion_parses_and_registers_for_pullpath() {
    let dir = Scratch::new("zsh");
    std::fs::write(
        dir.path().join("_pullpath"),
        stdout_of(&["completions", "zsh"]),
    )
    .expect("write");
    succeeded("zsh -n", run("zsh", &["-n", "_pullpath"], dir.path()));
    let registered = succeeded(
        "zsh compinit",
        run(
            "zsh",
            &[
                "-fc",
                "autoload -Uz compinit && compinit -u -d ./zcompdump && source ./_pullpath && print -r -- $_comps[pullpath]",
            ],
            dir.path(),
        ),
    );
    assert_eq!(registered.trim(), "_pullpath");
    let script = std::fs::read_to_string(dir.path().join("_pullpath")).expect("read");
    for subcommand in SUBCOMMANDS {
        assert!(script.contains(&format!("'{subcommand}:")), "{subcommand}");
    }
}

#[test]
fn fish_completion_parses_and_completes_subcommands_and_flags() {
    let dir = Scratch::new("fish");
    std::fs::write(
        dir.path().join("pullpath.fish"),
        stdout_of(&["completions", "fish"]),
    )
    .expect("write");
    succeeded(
        "fish --no-execute",
        run("fish", &["--no-execute", "pullpath.fish"], dir.path()),
    );
    let complete = |line: &str| {
        let script = format!("source ./pullpath.fish; complete -C '{line}'");
        succeeded("fish complete", run("fish", &["-c", &script], dir.path()))
    };
    let offered = complete("pullpath ");
    for subcommand in SUBCOMMANDS {
        assert!(
            offered
                .lines()
                .any(|l| l.split('\t').next() == Some(subcommand)),
            "{subcommand}:\n{offered}"
        );
    }
    assert!(complete("pullpath probe --f").contains("--full\t"));
}

#[test]
fn man_pages_render_without_warnings_and_cover_every_subcommand() {
    let dir = Scratch::new("man");
    std::fs::write(dir.path().join("pullpath.1"), stdout_of(&["man"])).expect("write");
    let groff = |page: &str| {
        let out = run(
            "groff",
            &["-k", "-man", "-Tutf8", "-ww", "-P-cbu", page],
            dir.path(),
        );
        let text = succeeded("groff", &out);
        assert!(
            out.stderr.is_empty(),
            "groff warns on {page}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let page = groff("pullpath.1");
    assert!(page.contains("SUBCOMMANDS"), "{page}");
    for subcommand in SUBCOMMANDS {
        assert!(
            page.contains(&format!("pullpath-{subcommand}(1)")),
            "{subcommand}:\n{page}"
        );
    }

    let pages = dir.path().join("pages");
    std::fs::create_dir(&pages).expect("mkdir");
    stdout_of(&["man", "--dir", pages.to_str().expect("UTF-8 path")]);
    let probe = groff("pages/pullpath-probe.1");
    assert!(probe.contains("--full"), "{probe}");
    assert!(pages.join("pullpath-explain.1").is_file());
}

#[test]
fn man_into_a_missing_directory_is_a_usage_error() {
    let out = pullpath(&["man", "--dir", "/nonexistent/pullpath-man"]);
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("/nonexistent/pullpath-man"), "{stderr}");
}

#[test]
fn completions_for_an_unknown_shell_is_a_usage_error() {
    let out = pullpath(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash"));
}

#[test]
fn version_names_the_commit_it_was_built_from() {
    let version = stdout_of(&["--version"]);
    let manifest = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(manifest)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = match git(&["rev-parse", "--show-toplevel"]) {
        Some(top)
            if Path::new(&top).canonicalize().ok() == Path::new(manifest).canonicalize().ok() =>
        {
            git(&["rev-parse", "--short=12", "HEAD"]).expect("HEAD")
        }
        _ => "unknown, not built from a git checkout".to_string(),
    };
    assert_eq!(
        version.trim(),
        format!("pullpath {} (commit {commit})", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn bad_probe_flags_are_usage_errors_that_never_echo_a_password() {
    let out = pullpath(&[
        "probe",
        "registry.example.test/app:v1",
        "--https-proxy",
        "http://user:s3cret@[broken",
    ]);
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--https-proxy"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
    let out = pullpath(&[
        "probe",
        "registry.example.test/app:v1",
        "--containerd-version",
        "latest",
    ]);
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--containerd-version"));
}
