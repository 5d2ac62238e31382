//! Why a file of the export directory that is there cannot be used. `Display` names the
//! problem, never the content: the report's `exports[].error` and the analysis's words.

use std::fmt;
use std::sync::Arc;

use super::MAX_FILE;

/// The underlying errors are shared (`Arc`) so that a file's state stays `Clone`, as the
/// analysis copies it into findings.
#[derive(Debug, Clone)]
pub enum Unreadable {
    Open(Arc<std::io::Error>),
    Read(Arc<std::io::Error>),
    /// Over [`MAX_FILE`]: refused unread.
    TooLarge,
    /// Nothing but whitespace (after a byte-order mark).
    Empty,
    NotJson(Arc<serde_json::Error>),
}

impl fmt::Display for Unreadable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unreadable::Open(error) => write!(f, "cannot open: {error}"),
            Unreadable::Read(error) => write!(f, "cannot read: {error}"),
            Unreadable::TooLarge => write!(f, "larger than {} MiB", MAX_FILE >> 20),
            Unreadable::Empty => {
                f.write_str("empty (the command that writes it failed or printed nothing)")
            }
            Unreadable::NotJson(error) => write!(f, "not JSON: {error}"),
        }
    }
}

impl std::error::Error for Unreadable {}

/// Equal when the same thing went wrong in the same place: the same kind of I/O error, or
/// JSON refused at the same position for the same class of reason (the errors themselves
/// are not comparable).
impl PartialEq for Unreadable {
    fn eq(&self, other: &Unreadable) -> bool {
        match (self, other) {
            (Unreadable::Open(a), Unreadable::Open(b))
            | (Unreadable::Read(a), Unreadable::Read(b)) => a.kind() == b.kind(),
            (Unreadable::TooLarge, Unreadable::TooLarge)
            | (Unreadable::Empty, Unreadable::Empty) => true,
            (Unreadable::NotJson(a), Unreadable::NotJson(b)) => {
                (a.classify(), a.line(), a.column()) == (b.classify(), b.line(), b.column())
            }
            _ => false,
        }
    }
}

impl Eq for Unreadable {}
