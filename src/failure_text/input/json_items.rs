//! A JSON document read item by item from any reader, never whole: the elements of a
//! top-level array, the elements of a top-level object's `items` array (`kubectl get … -o json`:
//! `List`, `EventList`, `PodList`), or a top-level object without `items` as its one item.
//!
//! Only the document's structure is scanned here (strings, brackets, the top-level keys); each
//! item's bytes are handed on whole, to be parsed on their own. Memory holds one item at most
//! (and a read buffer): an item over the limit is refused with its byte offset, never grown
//! into; an error names the byte in the whole input.
//!
//! Why a scan and not serde_json's own streaming (a `DeserializeSeed` over `items`): it was
//! written for speed, and measurement does not bear that out. On a million kubectl-shaped
//! events (514 MB, 2026-12-05) this scan plus each item's parse from its slice runs at about
//! 130 MB/s a pass; serde_json reading the same file from a `BufReader` into a small struct per
//! item ran at 152 MB/s. Replacing it with a seed (items as owned structs, Pods kept as
//! `Value`, the item limit on a counting reader) is the next step; until then the scan is
//! tested at every chunk boundary and fuzzed through `input::read` (fuzz target `pod`).

use std::io::{self, Read};

/// One item of the document: its bytes and where they start in the input.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    pub bytes: &'a [u8],
    /// Byte offset of the item's first byte in the input.
    pub offset: u64,
    /// Whether no line ended before the item: a document that fails on its first line may
    /// never have been JSON (a log line that starts with `[` or `{`).
    pub first_line: bool,
}

/// Why the document could not be read as JSON.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    #[error("cannot read the input: {0}")]
    Io(#[from] io::Error),
    #[error("malformed JSON at byte {offset}: {what}")]
    Malformed {
        offset: u64,
        what: &'static str,
        /// Whether the input had no line end before `offset`.
        first_line: bool,
    },
    #[error("the JSON ends at byte {offset} inside a value: truncated input")]
    Truncated { offset: u64, first_line: bool },
    #[error(
        "the JSON item at byte {offset} is larger than {} MiB: no API object is; the input is not a kubectl listing",
        limit >> 20
    )]
    TooLarge { offset: u64, limit: usize },
    /// More than whitespace after the document's value: several documents (JSON lines, a log
    /// whose first line is JSON), to be read as text.
    #[error("more text after the JSON value at byte {offset}")]
    Trailing { offset: u64 },
}

/// Deepest nesting scanned; serde_json itself refuses items nested deeper than 128.
const MAX_DEPTH: usize = 1024;
/// Bytes asked of the reader at a time.
const CHUNK: usize = 256 * 1024;

/// Where the scan is in the top-level object (keys are tracked only there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TopKey {
    /// After `{` (`first`: nothing yet, `}` may close) or after `,`.
    ExpectKey {
        first: bool,
    },
    InKey,
    ExpectColon,
    ExpectValue,
    /// Inside or after a value: `,` or `}` comes next at this depth.
    InValue,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Top {
    Start,
    Object,
    Array,
    Done,
}

/// The scan's state between chunks.
struct Scan {
    top: Top,
    stack: Vec<u8>,
    in_string: bool,
    escaped: bool,
    key: TopKey,
    /// The current top-level key's first bytes (enough to tell `items`).
    key_bytes: Vec<u8>,
    key_overflow: bool,
    /// The top-level object has an `items` key: it is a list, not an item.
    saw_items: bool,
    /// The stack depth whose elements are items, while inside that array.
    items_depth: Option<usize>,
    /// The current item's first byte, and whether a `,` asked for one.
    item_start: Option<u64>,
    after_comma: bool,
    top_start: u64,
    first_newline: Option<u64>,
}

/// Scan `reader`, calling `each` with every item in order. `limit` bounds one item's bytes.
pub fn for_each_item<R: Read, E: From<FrameError>>(
    mut reader: R,
    limit: usize,
    mut each: impl FnMut(Frame<'_>) -> Result<(), E>,
) -> Result<(), E> {
    let mut scan = Scan {
        top: Top::Start,
        stack: Vec::new(),
        in_string: false,
        escaped: false,
        key: TopKey::ExpectKey { first: true },
        key_bytes: Vec::new(),
        key_overflow: false,
        saw_items: false,
        items_depth: None,
        item_start: None,
        after_comma: false,
        top_start: 0,
        first_newline: None,
    };
    // `buf[..filled]` is the input from offset `base` on: the current item's bytes so far and
    // what was read after them. It is compacted only when full, so each byte is moved at most
    // about once whatever sizes the reader gives; it grows only for an item longer than it
    // (up to `limit`, refused beyond).
    let mut buf: Vec<u8> = vec![0; CHUNK];
    let mut filled = 0;
    let mut base: u64 = 0;
    loop {
        if filled == buf.len() {
            let keep = scan.needed_from().unwrap_or(base + filled as u64);
            let drop = (keep - base) as usize;
            buf.copy_within(drop..filled, 0);
            filled -= drop;
            base = keep;
            if filled > buf.len() / 2 {
                buf.resize(buf.len() * 2, 0);
            }
        }
        let n = loop {
            match reader.read(&mut buf[filled..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(FrameError::Io(e).into()),
            }
        };
        if n == 0 {
            let end = base + filled as u64;
            return match scan.top {
                Top::Done => Ok(()),
                _ => Err(FrameError::Truncated {
                    offset: end,
                    first_line: scan.first_newline.is_none(),
                }
                .into()),
            };
        }
        let end = filled + n;
        let mut at = filled;
        while at < end {
            let skip = scan.skippable(&buf[at..end]);
            if skip > 0 {
                at += skip;
                scan.check_limit(base + at as u64, limit)?;
                continue;
            }
            let offset = base + at as u64;
            let byte = buf[at];
            at += 1;
            if let Some((start, end)) = scan.step(byte, offset, limit)? {
                let bytes = &buf[(start - base) as usize..(end - base) as usize];
                each(Frame {
                    bytes: trim_end(bytes),
                    offset: start,
                    first_line: scan.first_newline.is_none_or(|n| n > start),
                })?;
            }
        }
        filled += n;
    }
}

fn trim_end(bytes: &[u8]) -> &[u8] {
    let end = bytes
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |p| p + 1);
    &bytes[..end]
}

impl Scan {
    /// Refuse the item once it holds more than `limit` bytes before `offset`.
    fn check_limit(&self, offset: u64, limit: usize) -> Result<(), FrameError> {
        match self.needed_from() {
            Some(start) if offset - start > limit as u64 => Err(FrameError::TooLarge {
                offset: start,
                limit,
            }),
            _ => Ok(()),
        }
    }

    /// How many of `bytes` [`Scan::step`] would pass over without a change but to its offset:
    /// plain string content (no quote, no backslash, no escape pending; a top-level key is read
    /// byte by byte), or whitespace between values once the first line end is known. Most of
    /// kubectl's JSON is these, so they are skipped at memchr's speed, not byte by byte.
    fn skippable(&self, bytes: &[u8]) -> usize {
        if self.in_string {
            if self.escaped || (self.at_top_key() && self.key == TopKey::InKey) {
                return 0;
            }
            memchr::memchr2(b'"', b'\\', bytes).unwrap_or(bytes.len())
        } else if self.first_newline.is_some() {
            bytes
                .iter()
                .position(|b| !b.is_ascii_whitespace())
                .unwrap_or(bytes.len())
        } else {
            0
        }
    }

    /// The first input offset an item still needs (the current item's start, or the top-level
    /// object's while it may be an item itself); `None` when nothing before the scan is needed.
    fn needed_from(&self) -> Option<u64> {
        self.item_start
            .or((self.top == Top::Object && !self.saw_items).then_some(self.top_start))
    }

    /// One byte; returns an item's span (input offsets, end exclusive) when one ends here.
    fn step(&mut self, b: u8, offset: u64, limit: usize) -> Result<Option<(u64, u64)>, FrameError> {
        self.check_limit(offset, limit)?;
        if self.in_string {
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.at_top_key() && self.key == TopKey::InKey {
                    self.key = TopKey::ExpectColon;
                }
            } else if self.at_top_key() && self.key == TopKey::InKey {
                if self.key_bytes.len() < 8 {
                    self.key_bytes.push(b);
                } else {
                    self.key_overflow = true;
                }
            }
            return Ok(None);
        }
        let first_line = self.first_newline.is_none();
        let malformed = move |what| FrameError::Malformed {
            offset,
            what,
            first_line,
        };
        if b.is_ascii_whitespace() {
            if b == b'\n' && self.first_newline.is_none() {
                self.first_newline = Some(offset);
            }
            return Ok(None);
        }
        match self.top {
            Top::Done => return Err(FrameError::Trailing { offset }),
            Top::Start => {
                return match b {
                    // A byte-order mark before the document.
                    0xEF | 0xBB | 0xBF => Ok(None),
                    b'{' => {
                        self.top = Top::Object;
                        self.top_start = offset;
                        self.stack.push(b);
                        Ok(None)
                    }
                    b'[' => {
                        self.top = Top::Array;
                        self.stack.push(b);
                        self.items_depth = Some(1);
                        Ok(None)
                    }
                    _ => Err(malformed("a JSON document starts with { or [")),
                };
            }
            Top::Object | Top::Array => {}
        }
        let depth = self.stack.len();
        // Elements of the items array.
        if Some(depth) == self.items_depth {
            match b {
                b',' | b']' => {
                    let item = self.item_start.take().map(|start| (start, offset));
                    if item.is_none() && (b == b',' || self.after_comma) {
                        return Err(malformed("an empty item in a list"));
                    }
                    self.after_comma = b == b',';
                    if b == b']' {
                        self.close(b, offset)?;
                        self.items_depth = None;
                    }
                    return Ok(item);
                }
                b'}' => return Err(malformed("a } closes a [")),
                _ => {
                    if self.item_start.is_none() {
                        self.item_start = Some(offset);
                        self.after_comma = false;
                    }
                }
            }
        } else if self.at_top_key() {
            if let Some(span) = self.top_key_byte(b, offset)? {
                return Ok(Some(span));
            }
            return Ok(None);
        }
        self.structure(b, offset)?;
        Ok(None)
    }

    /// Strings and brackets at any depth.
    fn structure(&mut self, b: u8, offset: u64) -> Result<(), FrameError> {
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => {
                if self.stack.len() >= MAX_DEPTH {
                    return Err(FrameError::Malformed {
                        offset,
                        what: "nested deeper than 1024",
                        first_line: self.first_newline.is_none(),
                    });
                }
                self.stack.push(b);
            }
            b'}' | b']' => self.close(b, offset)?,
            _ => {}
        }
        Ok(())
    }

    fn close(&mut self, b: u8, offset: u64) -> Result<(), FrameError> {
        let open = if b == b'}' { b'{' } else { b'[' };
        if self.stack.pop() != Some(open) {
            return Err(FrameError::Malformed {
                offset,
                what: "a closing bracket that matches no opening one",
                first_line: self.first_newline.is_none(),
            });
        }
        if self.stack.is_empty() {
            self.top = Top::Done;
        }
        Ok(())
    }

    /// Directly inside the top-level object, where its keys are.
    fn at_top_key(&self) -> bool {
        self.top == Top::Object && self.stack.len() == 1
    }

    /// A byte directly inside the top-level object (not in a string); the object's own span
    /// when it closes as an item (no `items` key).
    fn top_key_byte(&mut self, b: u8, offset: u64) -> Result<Option<(u64, u64)>, FrameError> {
        let first_line = self.first_newline.is_none();
        let malformed = move |what| FrameError::Malformed {
            offset,
            what,
            first_line,
        };
        match (self.key, b) {
            (TopKey::ExpectKey { .. }, b'"') => {
                self.key = TopKey::InKey;
                self.key_bytes.clear();
                self.key_overflow = false;
                self.in_string = true;
            }
            (TopKey::ExpectColon, b':') => self.key = TopKey::ExpectValue,
            (TopKey::ExpectValue, _) if !matches!(b, b',' | b'}' | b']' | b':') => {
                if self.key_bytes == b"items" && !self.key_overflow {
                    self.saw_items = true;
                    if b == b'[' {
                        self.items_depth = Some(2);
                        self.after_comma = false;
                    }
                }
                self.key = TopKey::InValue;
                self.structure(b, offset)?;
            }
            (TopKey::InValue, b',') => self.key = TopKey::ExpectKey { first: false },
            (TopKey::InValue | TopKey::ExpectKey { first: true }, b'}') => {
                self.close(b, offset)?;
                if !self.saw_items {
                    return Ok(Some((self.top_start, offset + 1)));
                }
            }
            // The rest of a number, `true`, `false` or `null`.
            (TopKey::InValue, _) if !matches!(b, b'"' | b'{' | b'[' | b']' | b':') => {}
            (TopKey::InValue, b']') => {
                return Err(malformed("a ] closes a {"));
            }
            _ => return Err(malformed("not a key, colon or value where one belongs")),
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
