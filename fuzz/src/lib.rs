//! What the fuzz targets share: one input cut into the several texts a parser takes.
//!
//! A target's input is its parser's main text, optionally followed by further arguments, each
//! after a `0xFF` byte (never part of UTF-8, so a seed copied from a fixture is one argument
//! as it is). A missing argument takes the target's default.

use std::borrow::Cow;

/// The byte between arguments.
pub const SEPARATOR: u8 = 0xFF;

/// The input's arguments, the first `n - 1` cut at [`SEPARATOR`], the last holding the rest.
pub fn parts(data: &[u8], n: usize) -> Vec<&[u8]> {
    data.splitn(n, |b| *b == SEPARATOR).collect()
}

/// Argument `i` as text (invalid UTF-8 replaced), or `default` when the input has fewer.
pub fn text<'a>(parts: &[&'a [u8]], i: usize, default: &'a str) -> Cow<'a, str> {
    parts
        .get(i)
        .map_or(Cow::Borrowed(default), |p| String::from_utf8_lossy(p))
}

/// Argument `i` as bytes, or `default` when the input has fewer.
pub fn bytes<'a>(parts: &[&'a [u8]], i: usize, default: &'a [u8]) -> &'a [u8] {
    parts.get(i).copied().unwrap_or(default)
}

/// A small number from argument `i` (its first two bytes), for statuses and choices.
pub fn number(parts: &[&[u8]], i: usize, default: u16) -> u16 {
    match parts.get(i) {
        Some([a, b, ..]) => u16::from_be_bytes([*a, *b]),
        Some([a]) => u16::from(*a),
        _ => default,
    }
}
