//! Renderers read a report and print it; they never look at the engine.

pub mod findings;
pub mod json;
pub mod terminal;
pub mod text;

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// ANSI colours and ✓/✗ for a terminal.
    Color,
    /// The same layout without escape codes.
    Plain,
}

impl Style {
    /// Colour on a terminal unless NO_COLOR is set.
    pub fn detect() -> Style {
        use std::io::IsTerminal;
        if std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none() {
            Style::Color
        } else {
            Style::Plain
        }
    }

    pub(crate) fn paint(self, code: &str, text: &str) -> String {
        debug_assert!(
            terminal::PALETTE.contains(&code),
            "{code}: not in the palette, so the terminal would be shown it escaped"
        );
        match self {
            Style::Color => format!("\x1b[{code}m{text}\x1b[0m"),
            Style::Plain => text.to_string(),
        }
    }
}
