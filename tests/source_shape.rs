//! The shape rules of ARCHITECTURE.md that a reviewer would otherwise check by hand: no source
//! file over 600 lines (the generated CRI client aside), the probe engine never imports the
//! report layer (data flows one way: probe → verdict → report), and no error is a bare
//! `String` (`Result<_, String>`): errors are typed, with their evidence.

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
            std::fs::read_to_string(path).is_ok_and(|text| text.contains("crate::report"))
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(reaching.is_empty(), "probe imports report in {reaching:?}");
}

/// The error type of every `Result<…, E>` written in `text` (two type arguments; `io::Result<T>`
/// and `anyhow::Result<T>` have one), with its line, spaces collapsed: however rustfmt wraps
/// the arguments, `Result<Vec<(String, Credentials)>,\n String>` is seen.
fn result_error_types(text: &str) -> Vec<(usize, String)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (start, _) in text.match_indices("Result<") {
        let preceded_by_ident =
            start > 0 && (bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        if preceded_by_ident {
            continue;
        }
        let open = start + "Result<".len();
        // The argument list up to its closing `>`, and where its last top-level comma is.
        let (mut depth, mut last_comma, mut close) = (0i32, None, None);
        for (i, &b) in bytes.iter().enumerate().skip(open) {
            match b {
                b'<' | b'(' | b'[' => depth += 1,
                // `->` in a `Fn() -> T` argument closes nothing.
                b'>' if bytes[i - 1] == b'-' => {}
                b'>' | b')' | b']' if depth > 0 => depth -= 1,
                b'>' => {
                    close = Some(i);
                    break;
                }
                b',' if depth == 0 => last_comma = Some(i),
                // Not a type's argument list (a comparison, a comment's prose).
                b';' | b'{' | b'}' => break,
                _ => {}
            }
        }
        if let (Some(comma), Some(close)) = (last_comma, close) {
            let error: String = text[comma + 1..close].split_whitespace().collect();
            let line = text[..start].matches('\n').count() + 1;
            found.push((line, error));
        }
    }
    found
}

#[test]
fn the_error_type_scanner_sees_wrapped_and_nested_arguments() {
    let text = "fn a() -> Result<Vec<(String, u8)>,\n    String> {}\nfn b() -> io::Result<String> {}\nfn c() -> Result<(), Problem> {}\nfn d(f: Result<Box<dyn Fn() -> u8>, std::string::String>) {}";
    assert_eq!(
        result_error_types(text),
        [
            (1, "String".to_string()),
            (4, "Problem".to_string()),
            (5, "std::string::String".to_string())
        ]
    );
}

#[test]
fn no_error_is_a_bare_string() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut stringly = Vec::new();
    for path in all_sources() {
        let text = std::fs::read_to_string(&path).expect("source");
        for (line, error) in result_error_types(&text) {
            if error == "String" || error == "std::string::String" {
                let shown = path.strip_prefix(root).unwrap_or(&path).display();
                stringly.push(format!("{shown}:{line}"));
            }
        }
    }
    assert!(
        stringly.is_empty(),
        "give these errors a type with their evidence (an enum whose Display is the message): {stringly:?}"
    );
}
