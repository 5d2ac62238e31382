//! Records the git commit pullpath is built from, for `pullpath --version`, and builds the
//! first stage of a probe pod that needs no registry (`stage/pullpath-stage.rs`, embedded into
//! pullpath: `fleet::deliver`).
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
    stage();
    probe_code_order();
}

/// Hands the linker `link/probe-code.ld`, which places the functions a probe runs in one output
/// section (`.text.probe`) ahead of `.text`: `probe --full` maps 4.5 MiB of the release
/// archive's code, where a release build mapped 9.1 of its 16 before (the kernel maps code in
/// 64 KiB windows around each fault: docs/benchmarks.md, issue 26). Only the `pullpath`
/// binary, only on Linux (ELF: GNU ld and lld both read the script's `INSERT`), only where it is
/// worth its cost: optimised builds and static ones (the release archives', whatever their
/// profile). Matching its 3,000 patterns against every section of an unoptimised build costs
/// the linker about 45 s a link, for a memory figure no node sees. `PULLPATH_NO_CODE_ORDER=1`
/// links without it (a linker that reads no scripts, such as mold). The script only moves
/// sections: a pattern that matches nothing changes nothing.
fn probe_code_order() {
    println!("cargo:rerun-if-env-changed=PULLPATH_NO_CODE_ORDER");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("link/probe-code.ld");
    println!("cargo:rerun-if-changed={}", script.display());
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let opted_out = std::env::var_os("PULLPATH_NO_CODE_ORDER").is_some_and(|v| v != "0");
    if !linux || opted_out {
        return;
    }
    let optimised = std::env::var("OPT_LEVEL").is_ok_and(|level| level != "0");
    let static_c = std::env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|features| features.split(',').any(|f| f == "crt-static"));
    if (optimised || static_c) && script.exists() {
        println!(
            "cargo:rustc-link-arg-bin=pullpath=-Wl,-T,{}",
            script.display()
        );
    }
    // A static binary (the release archives', scripts/release.sh) relocates itself at start,
    // and every relocation of its 40,000 in `.rela.dyn` is read then: packed (DT_RELR, which
    // the static C library it is linked with applies since glibc 2.36), they are a few KiB
    // instead of 420. A dynamic binary is left alone: an older glibc than the one linked
    // against would ignore them.
    if static_c {
        println!("cargo:rustc-link-arg-bin=pullpath=-Wl,-z,pack-relative-relocs");
    }
}

/// `stage/pullpath-stage.rs` built for the target with rustc alone: no std, `panic=abort` (which
/// a cargo profile cannot give one target), the C library linked statically, stripped; written
/// to `OUT_DIR/pullpath-stage` behind a marker and its length, which pullpath embeds and
/// `fleet::deliver::embedded_stage` finds again (in this binary or another architecture's).
/// Where it cannot be built (no static C library for the target), a warning, and an empty
/// stage: fleet then says so and asks for `--probe-image`.
fn stage() {
    println!("cargo:rerun-if-changed=stage");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let target = std::env::var("TARGET").expect("TARGET");
    let built = out.join("pullpath-stage.elf");
    let mut command = Command::new(rustc);
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("stage/pullpath-stage.rs"))
        .args([
            "--edition",
            "2024",
            "--crate-type",
            "bin",
            "--target",
            &target,
        ])
        .args([
            "-C",
            "panic=abort",
            "-C",
            "opt-level=s",
            "-C",
            "strip=symbols",
        ])
        .args(["-C", "target-feature=+crt-static", "-C", "codegen-units=1"])
        // The C library and libgcc's unwinder it names, statically, whatever rustc put before.
        .args([
            "-C",
            "link-arg=-Wl,-Bstatic",
            "-C",
            "link-arg=-Wl,--start-group",
        ])
        .args([
            "-C",
            "link-arg=-lc",
            "-C",
            "link-arg=-lgcc_eh",
            "-C",
            "link-arg=-lgcc",
        ])
        .args(["-C", "link-arg=-Wl,--end-group"])
        .arg("-o")
        .arg(&built)
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        command.arg("-C").arg(format!("linker={linker}"));
    }
    let stage = match command.output() {
        Ok(o) if o.status.success() => std::fs::read(&built).unwrap_or_default(),
        Ok(o) => {
            let why = String::from_utf8_lossy(&o.stderr);
            let first = why.lines().find(|l| l.contains("error")).unwrap_or("");
            println!(
                "cargo:warning=pullpath-stage not built for {target} (fleet will need --probe-image): {first}"
            );
            Vec::new()
        }
        Err(e) => {
            println!("cargo:warning=pullpath-stage not built for {target}: {e}");
            Vec::new()
        }
    };
    let mut embedded = b"PULLPATH-STAGE:".to_vec();
    embedded.extend_from_slice(&(stage.len() as u64).to_le_bytes());
    embedded.extend_from_slice(&stage);
    std::fs::write(out.join("pullpath-stage"), embedded).expect("write the embedded stage");
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
        let loose = git(&["rev-parse", "--path-format=absolute", "--git-path", &branch]);
        // Its directory too: after `git pack-refs` the loose ref is gone, and the next commit
        // writes it anew, which only the directory shows (cargo scans a watched directory).
        watch(
            loose
                .as_deref()
                .and_then(|l| Some(Path::new(l).parent()?.display().to_string())),
        );
        watch(loose);
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
