//! A plugin's stderr made fit for the report: short, and with anything that looks like a
//! secret replaced, because plugins print tokens in their errors.

/// How much of a plugin's stderr the report keeps.
const STDERR_KEPT: usize = 300;

/// A plugin's stderr for the report: the first line(s), shortened, with anything that looks
/// like a secret (long unbroken tokens, `password=…`) replaced.
pub fn redact_stderr(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let mut out: Vec<String> = Vec::new();
    let mut hide_next = false;
    for word in text.split_whitespace() {
        let lower = word.to_ascii_lowercase();
        let secretish = hide_next
            || word.starts_with("eyJ")
            || (word.len() >= 24
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+/=_-.".contains(c)));
        hide_next = lower.ends_with("password:") || lower.ends_with("token:");
        let word = if secretish {
            "<redacted>".to_string()
        } else if let Some((name, _)) = word.split_once('=').filter(|(name, _)| {
            let n = name.to_ascii_lowercase();
            n.contains("pass") || n.contains("token") || n.contains("secret")
        }) {
            format!("{name}=<redacted>")
        } else {
            word.to_string()
        };
        out.push(word);
    }
    let joined = out.join(" ");
    if joined.chars().count() > STDERR_KEPT {
        let cut: String = joined.chars().take(STDERR_KEPT).collect();
        format!("{cut}…")
    } else {
        joined
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stderr_is_shortened_and_redacted() {
        let text = redact_stderr(
            b"AccessDenied password=hunter2 token: abc eyJhbGciOi.x.y AKIAAAAAAAAAAAAAAAAAAAAAAAAA",
        );
        for secret in ["hunter2", "abc", "eyJ", "AKIA"] {
            assert!(!text.contains(secret), "{text}");
        }
        assert!(text.starts_with("AccessDenied"));
        let long = redact_stderr("word ".repeat(200).as_bytes());
        assert!(long.chars().count() <= STDERR_KEPT + 1);
    }
}
