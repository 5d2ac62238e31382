//! Records the git commit pullpath is built from, for `pullpath --version`.
//!
//! Only the local checkout is read (no network). A build outside a git checkout (a source
//! archive, `cargo install` of a packaged crate) or without git says so instead of failing;
//! `PULLPATH_GIT_COMMIT` set in the environment wins (release builds from an archive).

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=PULLPATH_GIT_COMMIT");
    let commit = std::env::var("PULLPATH_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown, not built from a git checkout".to_string());
    println!("cargo:rustc-env=PULLPATH_GIT_COMMIT={}", commit.trim());
}

/// `git rev-parse HEAD` of the checkout holding this crate, and a rebuild when HEAD moves.
fn git_commit() -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
    };
    // The checkout must be this crate's own, not a repository that happens to contain it.
    let top = git(&["rev-parse", "--show-toplevel"])?;
    if !same_directory(Path::new(&top), Path::new(env!("CARGO_MANIFEST_DIR"))) {
        return None;
    }
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    // HEAD names the branch; the branch's ref (loose or packed) names the commit.
    for path in ["HEAD", "packed-refs"] {
        watch(git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            path,
        ]));
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch(git(&[
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            &branch,
        ]));
    }
    Some(commit)
}

/// Rebuild when this file changes. A file that does not exist is not watched: cargo would take
/// its absence as a change and rerun on every build.
fn watch(file: Option<String>) {
    if let Some(file) = file.filter(|f| Path::new(f).exists()) {
        println!("cargo:rerun-if-changed={file}");
    }
}

/// Two spellings of one directory (git prints the resolved path; cargo may not).
fn same_directory(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
