//! The shape rules of ARCHITECTURE.md that a reviewer would otherwise check by hand: no source
//! file over 600 lines (the generated CRI client aside), and the probe engine never imports the
//! report layer (data flows one way: probe → verdict → report).

use std::path::{Path, PathBuf};

fn sources(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("src directory").flatten() {
        let path = entry.path();
        if path.is_dir() {
            sources(&path, into);
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
}

fn all_sources() -> Vec<PathBuf> {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 50, "found {} sources", files.len());
    files
}

#[test]
fn no_source_file_is_over_600_lines() {
    let long: Vec<String> = all_sources()
        .into_iter()
        .filter(|path| !path.to_string_lossy().contains("cri_api"))
        .filter_map(|path| {
            let lines = std::fs::read_to_string(&path).ok()?.lines().count();
            (lines > 600).then(|| format!("{} ({lines} lines)", path.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these: {long:?}");
}

#[test]
fn the_probe_engine_does_not_import_the_report_layer() {
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/probe");
    let reaching: Vec<String> = all_sources()
        .into_iter()
        .filter(|path| path.starts_with(&probe))
        .filter(|path| {
            std::fs::read_to_string(path).is_ok_and(|text| {
                text.contains("crate::report") || text.contains("crate::scan_report")
            })
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(reaching.is_empty(), "probe imports report in {reaching:?}");
}
