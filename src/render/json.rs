//! `--output json`: the report as one JSON document (schema in docs/report.schema.json).

use std::fmt::Write;

use serde::Serialize;

pub fn render<T: Serialize>(report: &T) -> String {
    // Serializing plain structs of strings and enums cannot fail.
    let text = serde_json::to_string_pretty(report).expect("report serializes") + "\n";
    escape_c1(&text)
}

/// serde escapes C0 controls in strings but writes DEL and the C1 controls (U+007F–U+009F,
/// among them the one-character CSI U+009B) as they are, and a terminal showing the JSON may
/// act on them. Outside strings JSON is ASCII, so every such character is inside a string,
/// where `\uXXXX` is the same value.
fn escape_c1(text: &str) -> String {
    if !text.chars().any(|c| ('\u{7f}'..='\u{9f}').contains(&c)) {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if ('\u{7f}'..='\u{9f}').contains(&c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c1_controls_are_json_escapes_and_the_value_is_the_same() {
        let value = serde_json::json!({"cause": "x\u{9b}2J\u{7f}\u{1b}]0;t\u{7}"});
        let text = render(&value);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).expect("still JSON");
        assert_eq!(back, value);
    }
}
