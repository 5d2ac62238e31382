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
/// section (`.text.probe`) ahead of `.text`: `probe --full` maps 3.0 MiB of a release build's
/// code, where it mapped 9.1 of its 16 before (the kernel maps code in 64 KiB windows around
/// each fault: docs/benchmarks.md, issue 26). The script names functions by their v0 symbol
/// names (`.cargo/config.toml`); a build whose RUSTFLAGS replace that links as correctly, only
/// less ordered. Only the `pullpath` binary, only on Linux (ELF: GNU ld and lld both read the
/// script's `INSERT`), only where it is worth its cost: optimised builds and static ones (the
/// release archives', whatever their profile). Matching its thousands of patterns against
/// every section of an unoptimised build costs the linker about 45 s a link, for a memory
/// figure no node sees. `PULLPATH_NO_CODE_ORDER=1` links without it (a linker that reads no
/// scripts, such as mold). The script only moves sections: a pattern that matches nothing
/// changes nothing.
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
    // Every start applies the binary's relative relocations, reading all of them: 40,000 in
    // `.rela.dyn`, 420 KiB. Packed (DT_RELR) they are a few KiB. A static binary (the release
    // archives', scripts/release.sh) applies them itself with the C library it is linked with
    // (glibc 2.36+). A dynamic one leaves them to the system's loader: packed only when the C
    // library it links against can apply them, which is the one `cargo install` runs it with.
    // The linker then records the need (`GLIBC_ABI_DT_RELR`), so a copy moved to an older
    // glibc refuses to start with that name rather than run unrelocated.
    if static_c || links_glibc_with_dt_relr() {
        println!("cargo:rustc-link-arg-bin=pullpath=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the target's shared C library is a glibc that applies packed relocations: it
/// defines the version `GLIBC_ABI_DT_RELR` (glibc 2.36: commit 57292f57, "Add GLIBC_ABI_DT_RELR
/// for DT_RELR support"; lld and GNU ld then record the need). Asked of the compiler
/// driver the link runs through (`RUSTC_LINKER`, else `cc`), so a cross build asks its own
/// sysroot. Anything unclear (no driver, no such file, not glibc) answers no: unpacked is
/// always correct.
fn links_glibc_with_dt_relr() -> bool {
    let glibc = std::env::var("CARGO_CFG_TARGET_ENV").is_ok_and(|env| env == "gnu");
    if !glibc {
        return false;
    }
    let driver = std::env::var("RUSTC_LINKER").unwrap_or_else(|_| "cc".to_string());
    let Ok(out) = Command::new(driver)
        .arg("-print-file-name=libc.so.6")
        .output()
    else {
        return false;
    };
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // The driver echoes the bare name when it finds no such file.
    if !out.status.success() || !Path::new(&path).is_absolute() {
        return false;
    }
    println!("cargo:rerun-if-changed={path}");
    std::fs::read(&path).is_ok_and(|library| {
        library
            .windows(b"GLIBC_ABI_DT_RELR".len())
            .any(|w| w == b"GLIBC_ABI_DT_RELR")
    })
}

/// `stage/pullpath-stage.rs` built for the target with rustc alone: no std, `panic=abort` (which
/// a cargo profile cannot give one target), no C library, stripped; written
/// to `OUT_DIR/pullpath-stage` behind a marker and its length, which pullpath embeds and
/// `fleet::deliver::embedded_stage` finds again (in this binary or another architecture's).
/// Where it cannot be built (no core library or linker for the target), a warning, and an empty
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
        // No C library and no start files: the stage brings its own `_start` and system calls
        // (stage/sys.rs); a position-dependent executable, so nothing needs relocating at start.
        .args(["-C", "relocation-model=static"])
        .args([
            "-C",
            "link-arg=-nostartfiles",
            "-C",
            "link-arg=-nostdlib",
            "-C",
            "link-arg=-static",
            "-C",
            "link-arg=-Wl,--build-id=none",
        ])
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
