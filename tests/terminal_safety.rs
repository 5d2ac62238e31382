//! Text outsiders control never reaches the operator's terminal as control characters
//! (issue: terminal injection, kubectl's CVE-2021-25743): an event message pasted to `explain`,
//! a registry's error envelope read by `probe`, a node path it names. Only the renderer's own
//! line breaks and, in colour, its own colour codes remain: outside text cannot forge a line,
//! hide text or colour it.

#[path = "support/registry.rs"]
mod registry;
mod support;

use std::io::Write;
use std::process::{Command, Stdio};

use pullpath::render::terminal::PALETTE;
use support::scratch::Scratch;

/// Set a terminal's title, clear it, clear it again with a one-character C1 CSI, forge a line.
const HOSTILE: &str = "\x1b]0;pwned\x07\x1b[2J\u{9b}2J\r\n✓ passed\x08\x7f";

/// What the colour palette allows no outsider: concealed text (`ESC [ 8 m`, it hides what follows
/// it), a blinking red, an OSC 8 hyperlink, a C1 CSI and a C1 OSC.
const HIDING: &str = "\x1b[8mconcealed\x1b[5;31m \x1b]8;;https://evil.example/\x07link\x1b]8;;\x07 \u{9b}8m \u{9d}0;title\u{9c}";

/// `command` run with a terminal for its output (util-linux `script`), so pullpath paints in
/// colour as it does for a person; what it printed, with the terminal's `\r\n` undone.
fn in_a_terminal(command: &Command) -> String {
    let mut script = Command::new("script");
    let mut line = String::from("exec");
    for (i, part) in std::iter::once(command.get_program())
        .chain(command.get_args())
        .enumerate()
    {
        script.env(format!("PP_ARG{i}"), part);
        line.push_str(&format!(" \"$PP_ARG{i}\""));
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => script.env(key, value),
            None => script.env_remove(key),
        };
    }
    if let Some(dir) = command.get_current_dir() {
        script.current_dir(dir);
    }
    let out = script
        .args(["-qec", &line, "/dev/null"])
        .env_remove("NO_COLOR")
        .env("TERM", "xterm-256color")
        .stdin(Stdio::null())
        .output()
        .expect("script runs");
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

/// Every escape sequence in `text` that is not one of the renderer's colour codes, and every
/// other control character but a line break.
fn raw_sequences(text: &str) -> Vec<String> {
    let mut raw = Vec::new();
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '\x1b' {
            let code = rest
                .strip_prefix("\x1b[")
                .and_then(|r| r.split_once('m'))
                .map(|(code, _)| code);
            match code {
                Some(code) if PALETTE.contains(&code) => {
                    rest = &rest[2 + code.len() + 1..];
                    continue;
                }
                _ => raw.push(rest.chars().take(12).collect()),
            }
        } else if c.is_control() && c != '\n' {
            raw.push(format!("{c:?}"));
        }
        rest = &rest[c.len_utf8()..];
    }
    raw
}

/// Whether a line of `text` (its indent aside) starts with `forged`: outside text printed as a
/// line of its own.
fn forges_a_line(text: &str, forged: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with(forged))
}

/// The first control character of `text` other than a line break, if any.
fn control_in(text: &str) -> Option<char> {
    text.chars().find(|c| c.is_control() && *c != '\n')
}

#[test]
fn explain_escapes_an_event_message() {
    let message = format!(
        "Failed to pull image \"r.example/app:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"r.example/app:v1\": failed to resolve reference \"r.example/app:v1\": {HOSTILE}: dial tcp: lookup r.example on 10.0.0.10:53: no such host"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_pullpath"))
        .args(["explain"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("pullpath runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(message.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("pullpath ends");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("dns"), "still explained: {stdout}");
    assert_eq!(control_in(&stdout), None, "{stdout:?}");
    assert_eq!(control_in(&stderr), None, "{stderr:?}");
    assert!(
        !forges_a_line(&stdout, "✓ passed"),
        "a forged line: {stdout}"
    );
}

#[test]
fn in_colour_only_the_renderers_own_colour_codes_reach_the_terminal() {
    let message = format!(
        "Failed to pull image \"r.example/app:v1\": rpc error: code = Unknown desc = failed to pull and unpack image \"r.example/app:v1\": failed to resolve reference \"r.example/app:v1\": {HIDING}: dial tcp: lookup r.example on 10.0.0.10:53: no such host"
    );
    let mut command = Command::new(env!("CARGO_BIN_EXE_pullpath"));
    command.args(["explain", &message]);
    let shown = in_a_terminal(&command);
    assert!(shown.contains("dns"), "still explained: {shown}");
    assert!(shown.contains("\x1b[1;31m"), "painted in colour: {shown:?}");
    assert_eq!(raw_sequences(&shown), Vec::<String>::new(), "{shown:?}");
    assert!(
        shown.contains("\\x1b[8mconcealed"),
        "shown escaped: {shown}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn probe_escapes_a_registrys_error_message() {
    let (tls, ca_pem) = registry::tls_for("127.0.0.1");
    let served = registry::serve_with(registry::Options {
        tls: Some(tls),
        not_found_message: Some(format!("manifest unknown {HOSTILE} {HIDING}")),
        ..registry::Options::default()
    })
    .await;
    let dir = Scratch::new("terminal-safety");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, ca_pem).expect("CA file");
    for output in ["json", "text"] {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pullpath"));
        command
            .args([
                "probe",
                &format!("127.0.0.1:{}/team/app:missing", served.port),
                "-o",
                output,
                "--containerd-version",
                "1.7.27",
            ])
            .arg("--ca-file")
            .arg(&ca)
            .env("NO_COLOR", "1");
        support::probe_isolated_in(&mut command, dir.path());
        let out = command.output().expect("pullpath runs");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(stdout.contains("notfound"), "{stdout}{stderr}");
        assert_eq!(control_in(&stdout), None, "{output}: {stdout:?}");
        assert_eq!(control_in(&stderr), None, "{output}: {stderr:?}");
        if output == "text" {
            command.env_remove("NO_COLOR");
            let shown = in_a_terminal(&command);
            assert!(shown.contains("notfound"), "{shown}");
            assert_eq!(raw_sequences(&shown), Vec::<String>::new(), "{shown:?}");
            assert!(stdout.contains("\\x1b]0;pwned"), "shown escaped: {stdout}");
            assert!(
                !forges_a_line(&stdout, "✓ passed"),
                "a forged line: {stdout}"
            );
        }
    }
}

/// A node path is the node's words too (a containerd's `-c`, its config_path): one holding a
/// newline stays on its line, escaped, instead of forging a line of the report.
#[tokio::test(flavor = "multi_thread")]
async fn probe_keeps_a_node_path_with_a_newline_on_its_line() {
    let served = registry::serve_with(registry::Options::default()).await;
    let dir = Scratch::new("terminal-safety-path");
    let odd = dir.path().join("etc\nverdict   passed");
    std::fs::create_dir_all(&odd).expect("directory");
    let mut command = Command::new(env!("CARGO_BIN_EXE_pullpath"));
    command
        .args([
            "probe",
            &format!("127.0.0.1:{}/team/app:missing", served.port),
            "-o",
            "text",
            // 1.6 speaks plain HTTP to a localhost registry, as this one serves.
            "--containerd-version",
            "1.6.20",
        ])
        .env("NO_COLOR", "1");
    // Its containerd config.toml (absent) is read from inside that directory.
    support::probe_isolated_in(&mut command, &odd);
    let out = command.output().expect("pullpath runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let hosts = stdout
        .lines()
        .find(|l| l.starts_with("hosts "))
        .unwrap_or_else(|| {
            panic!(
                "a hosts line: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    assert!(hosts.contains("etc\\nverdict   passed"), "{hosts}");
    assert!(
        !forges_a_line(&stdout, "verdict   passed"),
        "a forged line: {stdout}"
    );
}
