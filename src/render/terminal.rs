//! Text that anyone can put in front of pullpath — an event message, a registry's error
//! envelope, a header, an image name, a host — made safe for the operator's terminal.
//!
//! kubectl shipped this bug (CVE-2021-25743): an event message holding `ESC ] 0 ; … BEL` sets the
//! terminal's title, `ESC [ 2 J` clears it, a C1 `CSI` (U+009B) does the same in one
//! character, and a bare newline forges a line of output. Every text output goes through here:
//! [`inline`] for a value inside a line (every control character escaped, newlines included,
//! the value cut when very long), and [`finish`] for a whole rendered text (every control
//! character escaped but the renderer's own newlines and its colour codes). JSON output is not
//! touched: serde escapes control characters there.

use std::fmt::Write;

/// Untrusted values longer than this (in characters) are cut, with the original length said.
pub const MAX_VALUE_CHARS: usize = 2048;

/// A value made safe for one line: every C0 control (newline and tab included), DEL and C1
/// control escaped as `\n`, `\t`, `\x1b`, `\u{9b}`…, colour codes too (an outside value has
/// no colours of its own: `ESC [ 8 m` would hide what follows it), and a value over
/// [`MAX_VALUE_CHARS`] cut with `… (N characters)`.
pub fn inline(value: &str) -> String {
    escape(value, false)
}

/// A whole rendered text made safe: as [`inline`], but its line breaks and the renderer's own
/// colour codes (those of [`PALETTE`]) kept, and nothing cut.
pub fn finish(text: &str) -> String {
    escape(text, true)
}

/// The colour codes pullpath's renderers paint with (`Style::paint`), and the reset that ends
/// each: the only escape sequences [`finish`] lets through. None hides, blinks or moves text.
pub const PALETTE: [&str; 8] = ["0", "1", "1;31", "1;32", "1;33", "31", "32", "33"];

fn escape(text: &str, renderers_own: bool) -> String {
    let keep_newlines = renderers_own;
    let mut out = String::with_capacity(text.len());
    let mut chars = text.char_indices().peekable();
    let mut count = 0usize;
    let total = text.chars().count();
    while let Some((at, c)) = chars.next() {
        if !keep_newlines && count == MAX_VALUE_CHARS && total > MAX_VALUE_CHARS {
            let _ = write!(out, "… ({total} characters)");
            break;
        }
        count += 1;
        match c {
            '\n' if keep_newlines => out.push('\n'),
            '\x1b' => match colour_code(&text[at..]).filter(|_| renderers_own) {
                Some(len) => {
                    out.push_str(&text[at..at + len]);
                    // Skip the rest of the sequence: it was copied whole.
                    while chars.peek().is_some_and(|(next, _)| *next < at + len) {
                        chars.next();
                    }
                }
                None => out.push_str("\\x1b"),
            },
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let code = u32::from(c);
                if code < 0x80 {
                    let _ = write!(out, "\\x{code:02x}");
                } else {
                    let _ = write!(out, "\\u{{{code:x}}}");
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// The length of one of the renderer's colour codes (SGR `ESC [ code m`, the code one of
/// [`PALETTE`]) at the start of `text`: it changes colours and nothing else (no title, no
/// clearing, no cursor, no concealed or blinking text).
fn colour_code(text: &str) -> Option<usize> {
    let rest = text.strip_prefix("\x1b[")?;
    let params = rest
        .bytes()
        .take_while(|b| b.is_ascii_digit() || *b == b';')
        .count();
    let code = &rest[..params];
    (rest.as_bytes().get(params) == Some(&b'm') && PALETTE.contains(&code))
        .then_some(2 + params + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No control character survives but `\n` (in `finish`) and a colour code's own ESC.
    fn has_raw_control(text: &str, newlines_allowed: bool) -> bool {
        let mut rest = text;
        while let Some(c) = rest.chars().next() {
            if let Some(len) = (c == '\x1b').then(|| colour_code(rest)).flatten() {
                rest = &rest[len..];
                continue;
            }
            if c.is_control() && !(newlines_allowed && c == '\n') {
                return true;
            }
            rest = &rest[c.len_utf8()..];
        }
        false
    }

    #[test]
    fn titles_clears_c1_and_forged_lines_are_escaped() {
        let hostile = "pull failed\x1b]0;pwned\x07\x1b[2J\u{9b}2J\r\n✓ passed\x7f";
        let value = inline(hostile);
        assert_eq!(
            value,
            "pull failed\\x1b]0;pwned\\x07\\x1b[2J\\u{9b}2J\\r\\n✓ passed\\x7f"
        );
        assert!(!has_raw_control(&value, false));
        let text = finish(&format!("line one\n{hostile}\n"));
        assert!(!has_raw_control(&text, true), "{text:?}");
        assert_eq!(
            text.lines().count(),
            3,
            "only the renderer's own line breaks"
        );
    }

    #[test]
    fn the_renderers_colour_codes_are_kept_and_nothing_else() {
        let painted = "\x1b[1;31m✗ dns\x1b[0m";
        assert_eq!(finish(painted), painted);
        // An outside value's colour codes are escaped: concealed text, blinking, any colour.
        assert_eq!(inline(painted), "\\x1b[1;31m✗ dns\\x1b[0m");
        assert_eq!(inline("a\x1b[8mhidden"), "a\\x1b[8mhidden");
        // The whole text keeps only the palette's codes.
        assert_eq!(finish("\x1b[8mhidden\x1b[0m"), "\\x1b[8mhidden\x1b[0m");
        assert_eq!(finish("\x1b[5;31mblink"), "\\x1b[5;31mblink");
        // A colour code's look-alikes are not colour codes.
        assert_eq!(finish("\x1b[2J"), "\\x1b[2J");
        assert_eq!(finish("\x1b[31"), "\\x1b[31");
        assert_eq!(inline("\x1b"), "\\x1b");
    }

    #[test]
    fn long_values_are_cut_with_their_length() {
        let long = "a".repeat(MAX_VALUE_CHARS + 10);
        let cut = inline(&long);
        assert!(cut.ends_with(&format!("… ({} characters)", MAX_VALUE_CHARS + 10)));
        assert_eq!(
            cut.split('…').next().map(str::len),
            Some(MAX_VALUE_CHARS),
            "exactly the first {MAX_VALUE_CHARS} characters kept"
        );
        assert_eq!(inline("short"), "short");
        assert_eq!(finish(&long), long, "whole outputs are not cut");
    }
}
