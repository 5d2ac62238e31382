//! scripts/release.sh and scripts/image.sh, run as a release would run them (dev profile: no
//! release build in tests): the archive holds a static, stripped binary that runs, its
//! completions and man pages; the sha256 file and the krew manifest name the archive's digest;
//! the OCI layout is one that skopeo reads, one layer holding that binary, non-root, labelled.

mod support;
use support::succeeded;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use sha2::{Digest, Sha256};
use support::repo;
use support::scratch::Scratch;

const TARGET: &str = "x86_64-unknown-linux-gnu";

fn run(program: &str, args: &[&str], dir: &Path) -> Output {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("{program} ({e}): run scripts/install-deps.sh"))
}

fn sha256_hex(path: &Path) -> String {
    let bytes = std::fs::read(path).expect("read");
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Program headers and sections, as readelf prints them.
fn readelf(binary: &Path) -> String {
    let path = binary.to_str().expect("UTF-8");
    succeeded("readelf", run("readelf", &["-lSW", path], &repo()))
}

fn assert_static_and_stripped(binary: &Path) {
    let elf = readelf(binary);
    assert!(
        !elf.contains("Requesting program interpreter"),
        "{} is dynamically linked",
        binary.display()
    );
    assert!(
        !elf.contains(".symtab"),
        "{} is not stripped",
        binary.display()
    );
    assert!(
        !elf.contains(".debug_info"),
        "{} keeps debug info",
        binary.display()
    );
}

/// The layout build.rs asks of the linker for a static binary: the probe's code in
/// `.text.probe` (`link/probe-code.ld`) and its relocations packed (`.relr.dyn`), both part of
/// what a probe maps (docs/benchmarks.md). `stripped` is the archive's binary; `built` the same
/// before `strip`, whose symbols say where the probe's functions and fleet's went: the probe's
/// sequencer and pull walk (run by every probe) inside `.text.probe`, fleet's own functions (a
/// probe never runs them) outside it.
fn assert_laid_out_for_the_probe(stripped: &Path, built: &Path) {
    use object::{Object, ObjectSection, ObjectSymbol};
    // release.sh builds in this process's environment, so build.rs saw the same opt-out.
    if std::env::var_os("PULLPATH_NO_CODE_ORDER").is_some_and(|v| v != "0") {
        return;
    }
    let elf = readelf(stripped);
    for section in [".text.probe", ".relr.dyn"] {
        assert!(
            elf.contains(section),
            "{} has no {section} section",
            stripped.display()
        );
    }

    let bytes = std::fs::read(built).expect("read the built binary");
    let file = object::File::parse(&*bytes).expect("the built binary is ELF");
    let section = file.section_by_name(".text.probe").expect(".text.probe");
    let probe_section = section.address()..section.address() + section.size();
    let placed = |path: &str| -> (usize, usize) {
        let addresses: Vec<u64> = file
            .symbols()
            .filter(|s| s.kind() == object::SymbolKind::Text)
            .filter(|s| s.name().is_ok_and(|n| defined_under(n, path)))
            .map(|s| s.address())
            .collect();
        let inside = addresses
            .iter()
            .filter(|a| probe_section.contains(a))
            .count();
        (inside, addresses.len())
    };
    for probe_code in ["8pullpath5probe3run", "8pullpath5probe4walk"] {
        let (inside, all) = placed(probe_code);
        assert!(all > 0, "no symbol {probe_code}… in {}", built.display());
        assert!(
            inside > 0,
            "none of the {all} {probe_code}… functions is in .text.probe"
        );
    }
    let (inside, all) = placed("8pullpath5fleet");
    assert!(all > 0, "no fleet function in {}", built.display());
    assert_eq!(
        inside, 0,
        "{inside} of {all} fleet functions were placed with the probe's"
    );
}

/// Whether the function a symbol names is defined under `path` (its segments as the mangling
/// spells them, `8pullpath5fleet`), in the function's own path, not in its generic parameters:
/// a legacy name (`_ZN`) starts with the path; a v0 name (.cargo/config.toml) reaches its
/// first crate root after the tags of nesting (`N` and a namespace), generic arguments (`I`)
/// and impls (`M`, `X`, `Y`, each with an optional `s…_` disambiguator), and the root's
/// disambiguator (`Cs…_`) is followed by the path. So `tokio::…::block_on<probe::run::{closure}>`
/// is tokio's, not the probe's.
fn defined_under(name: &str, path: &str) -> bool {
    if let Some(legacy) = name.strip_prefix("_ZN") {
        return legacy.starts_with(path);
    }
    let Some(mut rest) = name.strip_prefix("_R") else {
        return false;
    };
    loop {
        let mut chars = rest.chars();
        match chars.next() {
            Some('N') => {
                chars.next();
                rest = chars.as_str();
            }
            Some('I') => rest = chars.as_str(),
            Some('M' | 'X' | 'Y') => rest = past_disambiguator(chars.as_str()),
            Some('C') => return past_disambiguator(chars.as_str()).starts_with(path),
            _ => return false,
        }
    }
}

/// What follows a v0 disambiguator (`s<base62>_`), if `rest` starts with one.
fn past_disambiguator(rest: &str) -> &str {
    match rest.strip_prefix('s') {
        Some(disambiguated) => disambiguated.split_once('_').map_or("", |(_, after)| after),
        None => rest,
    }
}

/// `pullpath --version` of `binary`: the version and the commit of this checkout.
fn assert_runs(binary: &Path) {
    let version = succeeded(
        "--version",
        run(binary.to_str().expect("UTF-8"), &["--version"], &repo()),
    );
    assert!(
        version.starts_with(&format!("pullpath {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
}

struct Release {
    _scratch: Scratch,
    dist: PathBuf,
    name: String,
}

fn release(name: &str) -> Release {
    let scratch = Scratch::new(name);
    let dist = scratch.path().join("dist");
    let dist_arg = dist.to_str().expect("UTF-8").to_string();
    succeeded(
        "scripts/release.sh",
        run(
            "bash",
            &["scripts/release.sh", "--profile", "dev", "--out", &dist_arg],
            &repo(),
        ),
    );
    Release {
        _scratch: scratch,
        dist,
        name: format!("pullpath-v{}-{TARGET}", env!("CARGO_PKG_VERSION")),
    }
}

#[test]
fn release_archive_holds_a_static_stripped_binary_completions_and_man_pages() {
    let release = release("release-archive");
    let archive = release.dist.join(format!("{}.tar.gz", release.name));
    // Unpack the archive itself, not the staging directory beside it.
    let unpacked = release.dist.join("unpacked");
    std::fs::create_dir(&unpacked).expect("mkdir");
    succeeded(
        "tar",
        run(
            "tar",
            &["-xzf", archive.to_str().expect("UTF-8"), "-C", "unpacked"],
            &release.dist,
        ),
    );
    let root = unpacked.join(&release.name);
    let binary = root.join("pullpath");
    assert_static_and_stripped(&binary);
    // release.sh's build before it strips it (the dev profile: target/TARGET/debug).
    let built = repo().join("target").join(TARGET).join("debug/pullpath");
    assert_laid_out_for_the_probe(&binary, &built);
    assert_runs(&binary);
    for file in [
        "LICENSE",
        "README.md",
        "completions/pullpath.bash",
        "completions/_pullpath",
        "completions/pullpath.fish",
        "man/pullpath.1",
        "man/pullpath-probe.1",
        "man/pullpath-explain.1",
    ] {
        let path = root.join(file);
        assert!(
            path.metadata().is_ok_and(|m| m.len() > 0),
            "{file} missing or empty in the archive"
        );
    }

    // The sha256 file is `sha256sum` output for the archive.
    let sha_file =
        std::fs::read_to_string(release.dist.join(format!("{}.tar.gz.sha256", release.name)))
            .expect("sha256 file");
    let digest = sha256_hex(&archive);
    assert_eq!(sha_file, format!("{digest}  {}.tar.gz\n", release.name));

    // The krew manifest names this archive, its digest, and files that are in it.
    let manifest: Value = serde_yaml_ng::from_str(
        &std::fs::read_to_string(release.dist.join("pullpath.yaml")).expect("krew manifest"),
    )
    .expect("krew manifest is YAML");
    assert_eq!(manifest["kind"], "Plugin");
    assert_eq!(
        manifest["apiVersion"],
        "krew.googlecontainertools.github.com/v1alpha2"
    );
    assert_eq!(manifest["metadata"]["name"], "pullpath");
    assert_eq!(
        manifest["spec"]["version"],
        format!("v{}", env!("CARGO_PKG_VERSION"))
    );
    let platforms = manifest["spec"]["platforms"].as_array().expect("platforms");
    let amd64 = platforms
        .iter()
        .find(|p| p["selector"]["matchLabels"]["arch"] == "amd64")
        .expect("a linux/amd64 platform");
    assert_eq!(amd64["selector"]["matchLabels"]["os"], "linux");
    assert_eq!(amd64["sha256"], digest.as_str());
    assert!(
        amd64["uri"]
            .as_str()
            .is_some_and(|u| u.ends_with(&format!("/{}.tar.gz", release.name))),
        "{amd64:#}"
    );
    assert_eq!(amd64["bin"], "pullpath");
    for file in amd64["files"].as_array().expect("files") {
        let from = file["from"].as_str().expect("from");
        assert!(
            unpacked.join(from).is_file(),
            "krew copies {from}, which the archive lacks"
        );
    }
    assert!(
        amd64["files"]
            .as_array()
            .expect("files")
            .iter()
            .any(|f| f["from"].as_str().is_some_and(|p| p.ends_with("/pullpath"))),
        "krew must install the binary named by bin"
    );
}

#[test]
fn probe_image_is_an_oci_layout_skopeo_reads_with_one_non_root_layer() {
    let release = release("release-image");
    let binary = release.dist.join(&release.name).join("pullpath");
    let image = release.dist.join("image");
    let tag = format!("v{}", env!("CARGO_PKG_VERSION"));
    let built = succeeded(
        "scripts/image.sh",
        run(
            "bash",
            &[
                "scripts/image.sh",
                "--binary",
                binary.to_str().expect("UTF-8"),
                "--out",
                image.to_str().expect("UTF-8"),
            ],
            &repo(),
        ),
    );
    assert!(
        built.contains("MB in all"),
        "the image states its size: {built}"
    );

    let reference = format!("oci:{}:{tag}", image.display());
    let skopeo = |args: &[&str]| -> Value {
        let out = succeeded("skopeo", run("skopeo", args, &repo()));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    };
    let inspected = skopeo(&["inspect", &reference]);
    assert_eq!(inspected["Os"], "linux");
    assert_eq!(inspected["Architecture"], "amd64");
    let labels = &inspected["Labels"];
    assert_eq!(labels["org.opencontainers.image.title"], "pullpath");
    assert_eq!(
        labels["org.opencontainers.image.version"],
        env!("CARGO_PKG_VERSION")
    );
    assert!(labels["org.opencontainers.image.revision"].is_string());
    assert_eq!(labels["org.opencontainers.image.licenses"], "Apache-2.0");
    let layers = inspected["Layers"].as_array().expect("layers");
    assert_eq!(layers.len(), 1, "one layer: {inspected:#}");

    let raw = skopeo(&["inspect", "--raw", &reference]);
    assert_eq!(raw["mediaType"], "application/vnd.oci.image.index.v1+json");
    let platforms: Vec<String> = raw["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["platform"]["os"].as_str().unwrap_or("?"),
                m["platform"]["architecture"].as_str().unwrap_or("?")
            )
        })
        .collect();
    assert_eq!(platforms, ["linux/amd64"]);

    let config = skopeo(&["inspect", "--config", &reference]);
    assert_eq!(config["config"]["User"], "65532:65532");
    assert_eq!(config["config"]["Entrypoint"][0], "/usr/local/bin/pullpath");

    // The layer is the scratch-equivalent root: the static binary (which runs), passwd, group, tmp.
    let digest = layers[0].as_str().expect("digest");
    let blob = image
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"));
    let listing = succeeded(
        "tar",
        run("tar", &["-tzf", blob.to_str().expect("UTF-8")], &repo()),
    );
    let mut entries: Vec<&str> = listing.lines().filter(|l| !l.ends_with('/')).collect();
    entries.sort_unstable();
    assert_eq!(
        entries,
        ["etc/group", "etc/passwd", "usr/local/bin/pullpath"]
    );
    let rootfs = release.dist.join("rootfs");
    std::fs::create_dir(&rootfs).expect("mkdir");
    succeeded(
        "tar",
        run(
            "tar",
            &[
                "-xzf",
                blob.to_str().expect("UTF-8"),
                "-C",
                rootfs.to_str().expect("UTF-8"),
            ],
            &repo(),
        ),
    );
    let passwd = std::fs::read_to_string(rootfs.join("etc/passwd")).expect("passwd");
    assert!(passwd.contains(":65532:65532:"), "{passwd}");
    assert_runs(&rootfs.join("usr/local/bin/pullpath"));
}

#[test]
fn image_refuses_a_dynamically_linked_binary() {
    let scratch = Scratch::new("image-dynamic");
    // The test build of pullpath is an ordinary, dynamically linked binary.
    let out = run(
        "bash",
        &[
            "scripts/image.sh",
            "--binary",
            env!("CARGO_BIN_EXE_pullpath"),
            "--out",
            scratch.path().join("image").to_str().expect("UTF-8"),
        ],
        &repo(),
    );
    assert_eq!(out.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&out.stderr).contains("dynamically linked"));
    assert!(!scratch.path().join("image").exists());
}

/// build.rs packs a dynamic binary's relocations (DT_RELR) when the C library it links against
/// applies them, which glibc says by defining `GLIBC_ABI_DT_RELR` (2.36+), and the link then
/// records that need, so an older loader refuses the binary by that name instead of running it
/// unrelocated. Checked on the test suite's own `pullpath`, which every other test runs.
#[test]
fn a_dynamic_binary_packs_its_relocations_where_its_c_library_applies_them() {
    if std::env::var_os("PULLPATH_NO_CODE_ORDER").is_some_and(|v| v != "0") {
        return;
    }
    let libc = succeeded(
        "cc -print-file-name",
        run("cc", &["-print-file-name=libc.so.6"], &repo()),
    );
    let marker = b"GLIBC_ABI_DT_RELR";
    let applies = std::fs::read(libc.trim())
        .is_ok_and(|library| library.windows(marker.len()).any(|w| w == marker));

    let binary = env!("CARGO_BIN_EXE_pullpath");
    let elf = succeeded("readelf", run("readelf", &["-SVW", binary], &repo()));
    assert_eq!(
        elf.contains(".relr.dyn"),
        applies,
        "{binary}: packed relocations present should be {applies} ({})",
        libc.trim()
    );
    assert_eq!(
        elf.contains("Name: GLIBC_ABI_DT_RELR"),
        applies,
        "{binary}: the recorded need for GLIBC_ABI_DT_RELR should be {applies}"
    );
}

/// The names the layout check reads, as rustc 1.95 spells them in a release build and a test
/// build of pullpath.
#[test]
fn defined_under_reads_the_functions_own_path_not_its_parameters() {
    let probe_run = "8pullpath5probe3run";
    for own in [
        "_ZN8pullpath5probe3run28_$u7b$$u7b$closure$u7d$$u7d$17h0123456789abcdefE",
        "_RNvNtCsgDNiASH24TO_8pullpath5probe3run",
        "_RNCNvNtCsgDNiASH24TO_8pullpath5probe3run0B5_",
        "_RNCNvNtCscjAWnvntunV_8pullpath5probe3run0Csh8Ptven3w2s_8pullpath",
    ] {
        assert!(defined_under(own, probe_run), "{own}");
    }
    assert!(defined_under(
        "_RNvMs0_NtNtCscjAWnvntunV_8pullpath5probe4walkINtB5_4WalkNtNtB9_4http11LiveNetworkE4pull",
        "8pullpath5probe4walk"
    ));
    for other in [
        // tokio's block_on, instantiated for the probe's future
        "_RINvMNtNtCslJocj4vuEkW_5tokio7runtime7runtimeNtB3_7Runtime8block_onNCNvNtCsgDNiASH24TO_8pullpath5probe3run0ECsh8Ptven3w2s_8pullpath",
        "_RNCINvMs2_NtNtCslJocj4vuEkW_5tokio7runtime4parkNtB8_16CachedParkThread8block_onINtNtCsgEmfK2I1SDS_4core3pin3PinINtNtCslNYArtu3iFV_5alloc5boxed3BoxNCNvNtCsgDNiASH24TO_8pullpath5probe3run0EEE0Csh8Ptven3w2s_8pullpath",
        "_RNvNtCsgDNiASH24TO_8pullpath5probe7runtime",
        "_ZN4core3ptr13drop_in_place17h0123456789abcdefE",
        "ring_core_0_17_14__x25519_sc_reduce",
    ] {
        assert!(!defined_under(other, probe_run), "{other}");
    }
}
