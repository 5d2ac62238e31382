//! The shape rules of ARCHITECTURE.md that a reviewer would otherwise check by hand: no source
//! file over 600 lines of code outside its tests (the generated CRI client aside); data flows one
//! way (a module imports only the modules declared before it in `lib.rs`, and the same inside
//! `fleet/` and `probe/`; no circle among the children of any module); no error is a bare
//! `String` (`Result<_, String>`): errors are typed, with their evidence.

use std::collections::{BTreeMap, BTreeSet};
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
fn no_source_file_has_over_600_lines_of_code_outside_its_tests() {
    let long: Vec<String> = modules()
        .into_iter()
        .filter(|m| !m.test_only && !m.file.to_string_lossy().contains("cri_api"))
        .filter_map(|m| {
            let lines = m.code.lines().count();
            (lines > 600).then(|| format!("{} ({lines} lines)", m.file.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these: {long:?}");
}

/// The modules whose children are checked against the order they are declared in: the crate
/// (lib.rs lists its modules bottom first) and the two pipelines inside it.
const ORDERED_PARENTS: [&[&str]; 3] = [&[], &["fleet"], &["probe"]];

#[test]
fn a_module_imports_only_what_is_declared_before_it() {
    let modules = modules();
    let mut backwards = Vec::new();
    for parent in ORDERED_PARENTS {
        let order = declared_children(&modules, parent);
        assert!(order.len() > 3, "{parent:?} declares {order:?}");
        for (from, to) in sibling_imports(&modules, parent) {
            match (order.get(&from), order.get(&to)) {
                (Some(f), Some(t)) if t < f => {}
                (_, None) => backwards.push(format!(
                    "{}: {from} imports {to}, an item of its parent (the parent is the top: move {to} into the stage that makes it)",
                    parent.join("::")
                )),
                _ => backwards.push(format!(
                    "{}: {from} imports {to}, declared after it",
                    parent.join("::")
                )),
            }
        }
    }
    assert!(backwards.is_empty(), "arrows back up: {backwards:#?}");
}

#[test]
fn no_module_has_a_circle_among_its_children() {
    let modules = modules();
    let parents: BTreeSet<Vec<String>> = modules
        .iter()
        .filter(|m| !m.path.is_empty())
        .map(|m| m.path[..m.path.len() - 1].to_vec())
        .collect();
    let mut circles = Vec::new();
    for parent in parents {
        let parent: Vec<&str> = parent.iter().map(String::as_str).collect();
        let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (from, to) in sibling_imports(&modules, &parent) {
            graph.entry(from).or_default().insert(to);
        }
        if let Some(circle) = find_circle(&graph) {
            circles.push(format!("{}: {}", parent.join("::"), circle.join(" → ")));
        }
    }
    assert!(circles.is_empty(), "circles: {circles:#?}");
}

#[test]
fn the_import_reader_sees_trees_inline_paths_and_skips_comments_strings_and_tests() {
    let text = "use crate::{a::X, b::{self, Y as Z}};\n// crate::c::Z\nfn f() { super::d::g(\"crate::e\"); let c = '\"'; crate::f::h() }\n#[cfg(test)]\nmod tests {\n    use crate::g::T;\n}\n";
    let paths = imports(&code_of(text));
    let shown: BTreeSet<String> = paths.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        shown,
        [
            "crate::a::X",
            "crate::b",
            "crate::b::Y",
            "crate::f::h",
            "super::d::g"
        ]
        .into_iter()
        .map(String::from)
        .collect()
    );
    let mut graph = BTreeMap::new();
    graph.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    graph.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    assert_eq!(find_circle(&graph), None);
    graph.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(find_circle(&graph).map(|c| c.len()), Some(4));
}

/// One source file as a module of the library crate.
struct Module {
    file: PathBuf,
    /// Its path in the crate: `src/fleet/run.rs` is `["fleet", "run"]`, `lib.rs` is `[]`.
    path: Vec<String>,
    text: String,
    /// Its code outside `#[cfg(test)]` modules, comments and literals blanked: what imports
    /// and line counts are read from, made once.
    code: String,
    /// Declared under `#[cfg(test)]` (a `tests.rs`, a scripted network): not part of the flow.
    test_only: bool,
}

/// Every file of the library crate (`main.rs` is the binary's, which imports by `pullpath::`).
fn modules() -> Vec<Module> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: Vec<Module> = all_sources()
        .into_iter()
        .filter(|file| !file.ends_with("main.rs"))
        .map(|file| {
            let relative = file
                .strip_prefix(&src)
                .expect("under src")
                .with_extension("");
            let mut path: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if matches!(path.last().map(String::as_str), Some("mod" | "lib")) {
                path.pop();
            }
            let text = std::fs::read_to_string(&file).expect("source");
            Module {
                file,
                path,
                code: code_of(&text),
                text,
                test_only: false,
            }
        })
        .collect();
    let test_children: BTreeSet<Vec<String>> = modules
        .iter()
        .flat_map(|m| {
            cfg_test_children(&m.text).into_iter().map(|child| {
                let mut path = m.path.clone();
                path.push(child);
                path
            })
        })
        .collect();
    for m in &mut modules {
        m.test_only = test_children.iter().any(|t| m.path.starts_with(t));
    }
    modules
}

/// The names of `#[cfg(test)] mod NAME;` declarations: children that are tests.
fn cfg_test_children(text: &str) -> Vec<String> {
    let mut children = Vec::new();
    let mut lines = text.lines().map(str::trim);
    while let Some(line) = lines.next() {
        if line == "#[cfg(test)]"
            && let Some(declaration) = lines.next()
            && let Some(name) = declaration
                .trim_start_matches("pub ")
                .strip_prefix("mod ")
                .and_then(|rest| rest.strip_suffix(';'))
        {
            children.push(name.to_string());
        }
    }
    children
}

/// The children of `parent` in the order its file declares them (`mod x;` / `pub mod x;`), as
/// positions.
fn declared_children(modules: &[Module], parent: &[&str]) -> BTreeMap<String, usize> {
    let file = modules
        .iter()
        .find(|m| m.path == parent)
        .expect("the parent module's file");
    file.code
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub mod ")
                .or_else(|| line.strip_prefix("pub(crate) mod "))
                .or_else(|| line.strip_prefix("mod "))?;
            Some(rest.strip_suffix(';')?.to_string())
        })
        .enumerate()
        .map(|(position, name)| (name, position))
        .collect()
}

/// Every (importing child, imported sibling-or-item) pair under `parent`: a file inside child
/// `a` of `parent` naming `parent::b…` (by `crate::`, `super::` or `self::`, in a `use` or inline).
fn sibling_imports(modules: &[Module], parent: &[&str]) -> BTreeSet<(String, String)> {
    let mut pairs = BTreeSet::new();
    for m in modules.iter().filter(|m| !m.test_only) {
        if m.path.len() <= parent.len() || m.path.iter().zip(parent).any(|(a, b)| a != b) {
            continue;
        }
        let from = &m.path[parent.len()];
        for import in imports(&m.code) {
            let Some(absolute) = absolute(&m.path, &import) else {
                continue;
            };
            if absolute.len() > parent.len()
                && absolute.iter().zip(parent).all(|(a, b)| a == b)
                && &absolute[parent.len()] != from
            {
                pairs.insert((from.clone(), absolute[parent.len()].clone()));
            }
        }
    }
    pairs
}

/// `import` (starting `crate`, `super` or `self`) as a path from the crate root, seen from the
/// file module `at`.
fn absolute(at: &[String], import: &[String]) -> Option<Vec<String>> {
    let mut base: Vec<String> = at.to_vec();
    let mut rest = import;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().map(String::as_str) == Some("super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// The paths a piece of code names from its own crate: every `use` tree expanded, and every
/// inline `crate::…`, `super::…` or `self::…` path.
fn imports(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find("use ") {
        let preceded_by_ident = rest[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        let after = &rest[start + 4..];
        let end = after.find(';').unwrap_or(after.len());
        if !preceded_by_ident {
            let tree = after[..end]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let tree = ["::", "{", "}", ","].iter().fold(tree, |tree, mark| {
                tree.replace(&format!(" {mark}"), mark)
                    .replace(&format!("{mark} "), mark)
            });
            expand_use_tree("", &tree, &mut found);
        }
        rest = &after[end..];
    }
    let bytes = code.as_bytes();
    for root in ["crate::", "super::", "self::"] {
        for (start, _) in code.match_indices(root) {
            let preceded = start > 0
                && (bytes[start - 1].is_ascii_alphanumeric()
                    || bytes[start - 1] == b'_'
                    || bytes[start - 1] == b':');
            if preceded {
                continue;
            }
            let path: String = code[start..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            found.push(segments(&path));
        }
    }
    found
        .into_iter()
        .filter(|p| {
            p.len() > 1
                && matches!(
                    p.first().map(String::as_str),
                    Some("crate" | "super" | "self")
                )
        })
        .collect()
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// `a::{b, c::{d, self}}` (no space but in `x as y`) into its paths; `x as y` keeps `x`.
fn expand_use_tree(prefix: &str, tree: &str, into: &mut Vec<Vec<String>>) {
    let Some(open) = tree.find('{') else {
        let path = tree.split(" as ").next().unwrap_or(tree);
        let full = format!("{prefix}{path}");
        let mut parts = segments(&full);
        if parts.last().is_some_and(|p| p == "self" || p == "*") && parts.len() > 1 {
            parts.pop();
        }
        into.push(parts);
        return;
    };
    let head = format!("{prefix}{}", &tree[..open]);
    let body = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut depth, mut from) = (0, 0);
    for (i, c) in body.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                expand_use_tree(&head, &body[from..i], into);
                from = i + 1;
            }
            _ => {}
        }
    }
    if from < body.len() {
        expand_use_tree(&head, &body[from..], into);
    }
}

/// `text`'s code: its `#[cfg(test)] mod NAME { … }` blocks removed, comments and the contents
/// of literals blanked.
fn code_of(text: &str) -> String {
    strip_comments_and_strings(&without_test_modules(text))
}

/// `text` without its `#[cfg(test)] mod NAME { … }` blocks.
fn without_test_modules(text: &str) -> String {
    let code = strip_comments_and_strings(text);
    let mut kept = String::new();
    let mut from = 0;
    let mut search = 0;
    while let Some(found) = code[search..].find("#[cfg(test)]") {
        let at = search + found;
        let after = code[at + "#[cfg(test)]".len()..].trim_start();
        let block = after.starts_with("mod ")
            && after
                .find(['{', ';'])
                .is_some_and(|i| after.as_bytes()[i] == b'{');
        search = at + 1;
        if !block {
            continue;
        }
        let open = code[at..].find('{').map(|i| at + i).expect("a block");
        let mut depth = 0;
        let mut close = code.len();
        for (i, b) in code.bytes().enumerate().skip(open) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        kept.push_str(&text[from..at]);
        from = close.min(text.len());
        search = from;
    }
    kept.push_str(&text[from..]);
    kept
}

/// `text` with its comments and the contents of its string and char literals blanked, byte for
/// byte (so positions and lines stay where they were).
fn strip_comments_and_strings(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for b in &mut out[from..to] {
            if *b != b'\n' {
                *b = b' ';
            }
        }
    };
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                let end = text[i..].find('\n').map_or(bytes.len(), |e| i + e);
                blank(&mut out, i, end);
                i = end;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                let end = text[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |e| i + 2 + e + 2);
                blank(&mut out, i, end);
                i = end;
            }
            b'r' if matches!(bytes.get(i + 1), Some(b'"' | b'#'))
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                let hashes = bytes[i + 1..].iter().take_while(|&&b| b == b'#').count();
                if bytes.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let body = i + 2 + hashes;
                let end = text[body..].find(&close).map_or(bytes.len(), |e| body + e);
                blank(&mut out, body, end);
                i = end + close.len();
            }
            b'"' => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != b'"' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                blank(&mut out, i + 1, j.min(bytes.len()));
                i = j + 1;
            }
            // A char literal ('x', '\n', '"'), not a lifetime ('a).
            b'\'' if bytes.get(i + 1) == Some(&b'\\') => {
                let end = text[i + 2..]
                    .find('\'')
                    .map_or(bytes.len(), |e| i + 2 + e + 1);
                blank(&mut out, i + 1, end - 1);
                i = end;
            }
            b'\'' if bytes.get(i + 2) == Some(&b'\'') => {
                blank(&mut out, i + 1, i + 2);
                i += 3;
            }
            _ => i += 1,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A circle in `graph`, as the nodes around it (the first repeated at the end), if any.
fn find_circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        stack: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(at) = stack.iter().position(|n| n == node) {
            let mut circle = stack[at..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        stack.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(circle) = visit(next, graph, stack, done) {
                return Some(circle);
            }
        }
        stack.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
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
