//! A JSON array of battles (Chatbot Arena's `clean_battle_*.json`) read as JSON Lines, and
//! the shape of a battles file from its first bytes.

use std::io::Read;

/// What a battles file holds, from its first bytes (after a byte order mark and whitespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BattlesShape {
    /// JSON Lines: one battle object per line.
    Lines,
    /// One JSON array of battle objects (Chatbot Arena's `clean_battle_*.json`).
    Array,
    /// gzip-compressed (not read: decompress it first).
    Gzip,
}

/// The shape of a file that starts with `head` (its first few kilobytes).
pub fn battles_shape(head: &[u8]) -> BattlesShape {
    if head.starts_with(&[0x1f, 0x8b]) {
        return BattlesShape::Gzip;
    }
    let body = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') => BattlesShape::Array,
        _ => BattlesShape::Lines,
    }
}

/// Reads a JSON array of objects as JSON Lines, streaming: the outer brackets go, each
/// top-level comma becomes a newline and every newline inside an element a space, so that
/// element k is line k for [`super::parse_battles`] (an error's "line" is the element's number).
/// Strings pass through untouched (raw newlines cannot occur in them). Bytes map one to one
/// or are dropped, so a read transforms its buffer in place.
pub struct ArrayLines<R> {
    inner: R,
    /// Bracket depth: 1 inside the outer array.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// The outer `[` was seen.
    opened: bool,
    /// The outer `]` was seen.
    closed: bool,
    /// Top-level commas seen so far (elements before the current one).
    commas: u64,
    /// The current element has begun (something other than whitespace since the last
    /// top-level comma or the `[`): an empty one is two commas in a row or a trailing comma.
    started: bool,
}

impl<R: Read> ArrayLines<R> {
    /// Wraps a reader positioned anywhere before the outer `[`.
    pub fn new(inner: R) -> ArrayLines<R> {
        ArrayLines {
            inner,
            depth: 0,
            in_string: false,
            escaped: false,
            opened: false,
            closed: false,
            commas: 0,
            started: false,
        }
    }
}

/// A structural error of the outer array, as a read error.
fn array_error(message: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message)
}

impl<R: Read> Read for ArrayLines<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            let n = self.inner.read(buf)?;
            if n == 0 {
                if self.opened && !self.closed {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "the JSON array ends before its closing `]`: the file was cut short (an unfinished download?)",
                    ));
                }
                return Ok(0);
            }
            let mut out = 0;
            for i in 0..n {
                let b = buf[i];
                if self.closed && !b.is_ascii_whitespace() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        "text after the closing `]` of the JSON array (one array per file)",
                    ));
                }
                let keep = if self.in_string {
                    if self.escaped {
                        self.escaped = false;
                    } else if b == b'\\' {
                        self.escaped = true;
                    } else if b == b'"' {
                        self.in_string = false;
                    }
                    Some(b)
                } else {
                    match b {
                        b'"' => {
                            self.in_string = true;
                            self.started = true;
                            Some(b)
                        }
                        b'[' if !self.opened && self.depth == 0 => {
                            self.opened = true;
                            self.depth = 1;
                            // Nothing before the `[` (a byte order mark) begins an element.
                            self.started = false;
                            None
                        }
                        b'[' | b'{' => {
                            self.depth += 1;
                            self.started = true;
                            Some(b)
                        }
                        b']' | b'}' if self.depth > 0 => {
                            self.depth -= 1;
                            // The outer `]` ends the last element's line.
                            if self.depth == 0 {
                                if self.commas > 0 && !self.started {
                                    return Err(array_error(format!(
                                        "the JSON array ends with a comma after element {}, which JSON does not allow",
                                        self.commas
                                    )));
                                }
                                self.closed = true;
                                Some(b'\n')
                            } else {
                                Some(b)
                            }
                        }
                        b',' if self.depth == 1 => {
                            if !self.started {
                                return Err(array_error(if self.commas == 0 {
                                    "the JSON array's first element is empty (a comma right after `[`)".to_string()
                                } else {
                                    format!(
                                        "element {} of the JSON array is empty (two commas in a row)",
                                        self.commas + 1
                                    )
                                }));
                            }
                            self.commas += 1;
                            self.started = false;
                            Some(b'\n')
                        }
                        // Also before the `[`, so that element 1 is line 1.
                        b'\n' | b'\r' if self.depth > 0 || !self.opened => Some(b' '),
                        b' ' | b'\t' | b'\n' | b'\r' => Some(b),
                        _ => {
                            self.started = true;
                            Some(b)
                        }
                    }
                };
                if let Some(b) = keep {
                    buf[out] = b;
                    out += 1;
                }
            }
            // A read that dropped every byte (a lone `[`) must not look like the end.
            if out > 0 {
                return Ok(out);
            }
        }
    }
}
