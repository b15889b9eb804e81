//! The scanner for the common shape of a battle line: a flat object whose four fields are
//! plain strings, read in place without allocating.

use super::Fields;

/// The four fields of a plain line, or `None` to let serde_json decide.
#[cfg(test)]
pub(super) fn scan_line(line: &[u8]) -> Option<Fields<'_>> {
    let mut sc = Scanner { s: line, i: 0 };
    let fields = sc.object()?;
    sc.blanks();
    (sc.i == line.len()).then_some(fields)
}

/// A byte cursor over a block; it never crosses a newline (JSON whitespace inside a row is
/// spaces, tabs and carriage returns only).
pub(super) struct Scanner<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
}

impl<'a> Scanner<'a> {
    /// A flat object with the four fields as plain strings, read in place.
    pub(super) fn object(&mut self) -> Option<Fields<'a>> {
        let mut found: [Option<&'a [u8]>; 4] = [None; 4];
        let (mut by_task, mut judge) = (false, None);
        self.blanks();
        self.eat(b'{')?;
        self.blanks();
        if self.peek()? == b'}' {
            return None;
        }
        loop {
            self.blanks();
            let key = self.plain_text()?;
            self.blanks();
            self.eat(b':')?;
            self.blanks();
            // `task` is judge's own name for the question (a comparisons.jsonl).
            let position = [
                "model_a",
                "model_b",
                "winner",
                "question_id",
                "task",
                "judge",
            ]
            .iter()
            .position(|k| k.as_bytes() == key);
            by_task |= position == Some(4);
            // Text judge keeps no copy of (a key, the judge, a question id the comparison
            // bootstrap does not number) must still be UTF-8, as serde_json wants it (model
            // names are checked as they are interned, the winner against its few spellings).
            match position.map(|k| k.min(5)) {
                Some(5) if judge.is_some() => return None,
                // A `judge` that is not a string (other sources' metadata) is not read, but
                // checked as serde_json checks it, on the one path that reads it.
                Some(5) if self.peek()? != b'"' => return None,
                Some(5) => judge = Some(self.plain_text()?),
                Some(4) if found[3].is_some() => return None,
                Some(k) if k < 4 && found[k].is_some() => return None,
                Some(3 | 4) if self.peek()? != b'"' => found[3] = Some(self.integer()?),
                Some(3 | 4) => found[3] = Some(self.plain_text()?),
                Some(k) => found[k] = Some(self.plain_string()?),
                None => self.skip_value()?,
            }
            self.blanks();
            match self.next()? {
                b',' => continue,
                b'}' => break,
                _ => return None,
            }
        }
        // judge's own comparisons (they name the question `task`) also carry `flipped` and
        // `by_failure`: serde_json reads those rows whole. Such files are a run's size, and
        // Chatbot Arena's rows keep this path to themselves.
        if by_task {
            return None;
        }
        Some((found[0]?, found[1]?, found[2]?, found[3]))
    }
    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        Some(b)
    }
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.next()? == b).then_some(())
    }
    #[inline]
    pub(super) fn blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r')) {
            self.i += 1;
        }
    }
    /// A string without escapes or control characters: its bytes.
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        self.plain_bytes(false)
    }
    /// [`Scanner::plain_string`] that is also valid UTF-8 (checked only when a byte is not
    /// ASCII).
    fn plain_text(&mut self) -> Option<&'a [u8]> {
        self.plain_bytes(true)
    }
    #[inline(always)]
    fn plain_bytes(&mut self, utf8: bool) -> Option<&'a [u8]> {
        self.eat(b'"')?;
        let start = self.i;
        let mut high = 0u8;
        loop {
            match self.next()? {
                b'"' => {
                    let text = &self.s[start..self.i - 1];
                    let valid = !utf8 || high < 0x80 || std::str::from_utf8(text).is_ok();
                    return valid.then_some(text);
                }
                b'\\' => return None,
                c if c < 0x20 => return None,
                c => high |= c,
            }
        }
    }
    /// A whole number in plain decimal (an optional minus, digits): its bytes. Anything
    /// else (a fraction, an exponent) is left to serde_json, which refuses it.
    fn integer(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        if self.peek()? == b'-' {
            self.i += 1;
        }
        let digits = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
        let end_ok = !matches!(self.peek(), Some(b'.' | b'e' | b'E'));
        // Canonical decimals only (no `-0`, no leading zeros, which are not JSON anyway):
        // anything else goes to serde_json, which names the task by the number's value.
        let text = &self.s[digits..self.i];
        let canonical = text == b"0" && start == digits || !text.starts_with(b"0");
        // serde_json reads a whole number exactly only within i64 and u64; beyond them it
        // reads a double, which a question id refuses.
        let exact = std::str::from_utf8(&self.s[start..self.i])
            .ok()
            .and_then(|t| t.parse::<i128>().ok())
            .is_some_and(|v| i128::from(i64::MIN) <= v && v <= i128::from(u64::MAX));
        (self.i > digits && end_ok && canonical && exact).then(|| &self.s[start..self.i])
    }
    /// Skips one JSON value of a field judge does not read, checked as strictly as
    /// serde_json checks a field it ignores (syntax only: no number range, no UTF-8 inside
    /// strings); `None` leaves the line to serde_json, which names what is wrong. Nested
    /// deeper than serde_json's limit is left to it too.
    fn skip_value(&mut self) -> Option<()> {
        self.skip_nested(0)
    }
    fn skip_nested(&mut self, depth: usize) -> Option<()> {
        const SERDE_DEPTH: usize = 100;
        let close = match self.peek()? {
            b'"' => return self.skip_string(),
            b't' => return self.literal(b"true"),
            b'f' => return self.literal(b"false"),
            b'n' => return self.literal(b"null"),
            b'{' => b'}',
            b'[' => b']',
            _ => return self.number(),
        };
        if depth >= SERDE_DEPTH {
            return None;
        }
        self.i += 1;
        self.blanks();
        if self.peek()? == close {
            self.i += 1;
            return Some(());
        }
        loop {
            self.blanks();
            if close == b'}' {
                self.skip_string()?;
                self.blanks();
                self.eat(b':')?;
                self.blanks();
            }
            self.skip_nested(depth + 1)?;
            self.blanks();
            match self.next()? {
                b',' => {}
                c if c == close => return Some(()),
                _ => return None,
            }
        }
    }
    /// A string; its escapes must be JSON's.
    fn skip_string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            match self.next()? {
                b'"' => return Some(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            self.next().filter(u8::is_ascii_hexdigit)?;
                        }
                    }
                    _ => return None,
                },
                c if c < 0x20 => return None,
                _ => {}
            }
        }
    }
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        let end = self.i + word.len();
        (self.s.get(self.i..end)? == word).then(|| self.i = end)
    }
    /// A number by JSON's grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        if self.peek()? == b'-' {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }
    fn digits(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.i += 1;
        }
    }
    fn some_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }
}
