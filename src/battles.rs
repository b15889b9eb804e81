//! Reading battle files in the Chatbot Arena convention (JSON Lines with `model_a`, `model_b`,
//! `winner` and optionally `question_id`; other fields ignored) into compact rows, fast: the
//! input is read in blocks that all cores parse while the next block is read, each merged in
//! file order as soon as it is parsed. Memory holds the rows (16 bytes each), the task labels'
//! keys (24 to 48 bytes each) and a few blocks, never the file.
//!
//! Each line first goes through a small scanner that handles the common shape (a flat object
//! whose four fields are plain strings without escapes; other fields' values are skipped, but
//! checked as JSON as strictly as serde_json checks a field it ignores); anything else —
//! escapes, `null`, a syntax error — goes through serde_json, which also produces the error
//! message. So do the rows of judge's own comparisons.jsonl (they name the question `task`),
//! whose `flipped` and `by_failure` give the file's order-flip rate.

use std::borrow::Cow;
use std::collections::HashMap;
use std::io::Read;
use std::sync::Mutex;
use std::sync::mpsc::{channel, sync_channel};

use serde::Deserialize;

use crate::ranking::{Row, RowOutcome};
use crate::stats::{BootstrapUnit, Outcome};

/// A fast, non-cryptographic hasher for the name tables (the input is a local file: no
/// adversary to flood them).
#[derive(Default)]
struct FastHash(u64);

impl std::hash::Hasher for FastHash {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word))
                .wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type FastMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<FastHash>>;

/// Size of a block handed to a parsing thread (a block ends at a newline, so it holds at
/// least one whole line, however long). Small enough that a file of a megabyte or two keeps
/// every thread busy; the few buffers in flight are reused, so a large file touches only
/// those few megabytes of fresh memory (each new page costs a page fault).
const BLOCK_BYTES: usize = 512 << 10;

/// Why a battles file was refused: the line and what is wrong, or a read error.
#[derive(Debug, thiserror::Error)]
pub enum BattlesError {
    #[error("line {line}: {message}")]
    Line { line: usize, message: String },
    /// judge's own comparisons of several judges: ranking them together pools their verdicts.
    #[error(
        "the file holds judge's comparisons by several judges ({}); ranked together their verdicts would be pooled: rank one judge with `judge rank --run RUN --judge ID`, or keep one judge's lines",
        .0.iter().map(|j| crate::report::printable(j)).collect::<Vec<_>>().join(", ")
    )]
    SeveralJudges(Vec<String>),
    #[error("read error: {0}")]
    Io(#[from] std::io::Error),
}

/// Zero-copy form of a row (fails on escaped strings, then [`OwnedRow`] is tried).
#[derive(Deserialize)]
struct FastRow<'a> {
    model_a: &'a str,
    model_b: &'a str,
    winner: &'a str,
    #[serde(default)]
    question_id: Option<&'a str>,
    #[serde(default)]
    task: Option<&'a str>,
    #[serde(default)]
    judge: Option<&'a str>,
}

#[derive(Deserialize)]
struct OwnedRow<'a> {
    #[serde(borrow)]
    model_a: Cow<'a, str>,
    #[serde(borrow)]
    model_b: Cow<'a, str>,
    #[serde(borrow)]
    winner: Cow<'a, str>,
    #[serde(borrow, default)]
    question_id: Option<QuestionId<'a>>,
    #[serde(borrow, default)]
    task: Option<QuestionId<'a>>,
    #[serde(borrow, default)]
    judge: Option<JudgeField<'a>>,
}

/// `flipped` and `by_failure` of a row of judge's own comparisons, read apart from the row
/// (so that a row is accepted or refused for its battle fields alone, as any other field is
/// only checked to be JSON). `flipped` is `None` unless it is `true` or `false` (a row that
/// does not say cannot count for or against the order-flip rate); a `by_failure` that is not
/// `true` reads as false.
fn own_flags(line: &[u8]) -> (Option<bool>, bool) {
    // Each read on its own: one odd value does not lose the other.
    #[derive(Deserialize)]
    struct Flipped {
        #[serde(default)]
        flipped: Option<bool>,
    }
    #[derive(Deserialize)]
    struct ByFailure {
        #[serde(default)]
        by_failure: Option<bool>,
    }
    let flipped = serde_json::from_slice::<Flipped>(line)
        .ok()
        .and_then(|f| f.flipped);
    let by_failure =
        serde_json::from_slice::<ByFailure>(line).is_ok_and(|f| f.by_failure == Some(true));
    (flipped, by_failure)
}

/// Judged and flipped comparisons of a file of judge's own comparisons: those whose both
/// orderings gave a verdict (not failed, not decided by a failed generation) and that say
/// whether they flipped, and of them those whose two verdicts disagreed. The order-flip rate
/// is their ratio.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flips {
    pub judged: u64,
    pub flipped: u64,
}

impl Flips {
    /// Counts one row of judge's own format.
    fn note(&mut self, winner: &[u8], flipped: Option<bool>, by_failure: bool) {
        let Some(flipped) = flipped else { return };
        if by_failure || winner == b"failed" {
            return;
        }
        self.judged += 1;
        self.flipped += u64::from(flipped);
    }

    /// The order-flip rate, `None` when nothing was judged.
    pub fn rate(self) -> Option<f64> {
        (self.judged > 0).then(|| self.flipped as f64 / self.judged as f64)
    }
}

/// A row's `judge`: a name in judge's own comparisons; in other files whatever the source
/// put there (a labeller id, a list), which is not read.
#[derive(Deserialize)]
#[serde(untagged)]
enum JudgeField<'a> {
    Name(#[serde(borrow)] Cow<'a, str>),
    Other(serde::de::IgnoredAny),
}

impl JudgeField<'_> {
    fn name(&self) -> Option<&str> {
        match self {
            JudgeField::Name(name) => Some(name),
            JudgeField::Other(_) => None,
        }
    }
}

/// A `question_id` as a string or a whole number (some battle datasets number their
/// questions, and pandas writes such numbers as `81.0` once a column has a gap); a number
/// stands for its decimal integer text.
struct QuestionId<'a>(Cow<'a, str>);

impl QuestionId<'_> {
    fn text(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.0.as_ref())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for QuestionId<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = QuestionId<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a whole number")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(QuestionId(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(QuestionId(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(QuestionId(Cow::Owned(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(QuestionId(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(QuestionId(Cow::Owned(v.to_string())))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
                // Whole numbers up to 2^53 are exact in a double: 81.0 is question 81.
                if v.fract() != 0.0 || !v.is_finite() {
                    Err(E::custom(format!(
                        "question_id {v} is not a whole number; expected a string or a whole number"
                    )))
                } else if v.abs() > 9_007_199_254_740_992.0 {
                    Err(E::custom(
                        "a question_id written as a decimal number is above 2^53, where a JSON number may not be exact; write it as a string",
                    ))
                } else {
                    Ok(QuestionId(Cow::Owned(format!("{}", v as i64))))
                }
            }
        }
        d.deserialize_any(Visit)
    }
}

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
/// element k is line k for [`parse_battles`] (an error's "line" is the element's number).
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

/// One parsed block: rows with block-local model and task ids, and the local name tables.
#[derive(Default)]
struct Chunk {
    /// Lines read (an error stops the count at its line).
    lines: usize,
    rows: Vec<Row>,
    models: Vec<String>,
    /// Task labels by [`label_key`], in order of first appearance.
    tasks: Vec<u128>,
    /// Distinct `judge`s of rows in judge's own format (`task`), at most a few.
    own_judges: Vec<String>,
    /// The flip counts of rows in judge's own format.
    flips: Flips,
    error: Option<BattlesError>,
}

impl Chunk {
    /// Notes the `judge` of a row in judge's own format.
    fn note_judge(&mut self, judge: &[u8]) {
        if self.own_judges.len() < 8 && !self.own_judges.iter().any(|j| j.as_bytes() == judge) {
            self.own_judges
                .push(String::from_utf8_lossy(judge).into_owned());
        }
    }
}

/// Parses battles from `reader`: model names in order of first appearance and the rows in
/// file order. `unit` = task requires a `question_id` on every row and numbers the tasks;
/// `unit` = comparison needs no tasks, and every row's task is `u32::MAX`.
pub fn parse_battles(
    reader: impl Read + Send,
    unit: BootstrapUnit,
) -> Result<(Vec<String>, Vec<Row>), BattlesError> {
    parse_battles_judged(reader, unit).map(|(models, rows, _, _)| (models, rows))
}

/// Model names, rows, the judge that a file of judge's own comparisons names, and its flips.
pub type Judged = (Vec<String>, Vec<Row>, Option<String>, Flips);

/// [`parse_battles`], also returning the judge that a file of judge's own comparisons names
/// (one at most: several are refused), `None` for a Chatbot Arena file.
pub fn parse_battles_judged(
    mut reader: impl Read + Send,
    unit: BootstrapUnit,
) -> Result<Judged, BattlesError> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 4);
    let (tx, rx) = sync_channel::<(usize, Vec<u8>)>(threads);
    let rx = Mutex::new(rx);
    // Parsed blocks go back to the reader to be filled again.
    let (back_tx, back_rx) = channel::<Vec<u8>>();
    // Blocks are merged in file order as soon as they are parsed, so a parsed block's rows
    // and labels are freed as it is merged, not held until the whole file is read.
    let merger = Mutex::new(Merger::default());
    let read_result = std::thread::scope(|s| {
        let (rx, merger) = (&rx, &merger);
        for _ in 0..threads {
            let back_tx = back_tx.clone();
            s.spawn(move || {
                loop {
                    let next = rx.lock().expect("receiver lock").recv();
                    let Ok((index, block)) = next else { break };
                    let chunk = parse_block(&block, unit);
                    // The reader may be gone (it stops at the first error): then drop it.
                    let _ = back_tx.send(block);
                    merger.lock().expect("merger lock").add(index, chunk);
                }
            });
        }
        let sent = send_blocks(
            &mut reader,
            || back_rx.try_recv().ok(),
            |index, block| tx.send((index, block)).is_ok(),
        );
        drop(tx);
        sent
    });
    read_result?;
    merger.into_inner().expect("merger lock").finish()
}

/// Reads `reader` in blocks of about [`BLOCK_BYTES`] that end at a newline (or at the end of
/// the input) and hands each to `send` with its index; a block's buffer comes from
/// `recycled` when it has one, else it is new.
fn send_blocks(
    reader: &mut impl Read,
    mut recycled: impl FnMut() -> Option<Vec<u8>>,
    mut send: impl FnMut(usize, Vec<u8>) -> bool,
) -> Result<(), BattlesError> {
    // The start of a line cut off by the end of the previous block.
    let mut carry: Vec<u8> = Vec::new();
    let mut index = 0;
    loop {
        let mut block = recycled().unwrap_or_default();
        block.clear();
        block.extend_from_slice(&carry);
        carry.clear();
        // Until the block ends at a newline: one line may be longer than a block.
        let mut searched = 0;
        let (cut, eof) = loop {
            // Reserved, not zeroed: a small file touches only the pages it fills.
            block.reserve(BLOCK_BYTES);
            let filled = (&mut *reader)
                .take(BLOCK_BYTES as u64)
                .read_to_end(&mut block)?;
            if filled < BLOCK_BYTES {
                break (block.len(), true);
            }
            if let Some(at) = block[searched..].iter().rposition(|&b| b == b'\n') {
                break (searched + at + 1, false);
            }
            searched = block.len();
        };
        carry.extend_from_slice(&block[cut..]);
        block.truncate(cut);
        // A byte order mark (some editors and spreadsheet exports write one) is not data.
        if index == 0 && block.starts_with(b"\xEF\xBB\xBF") {
            block.drain(..3);
        }
        if !block.is_empty() && !send(index, block) {
            return Ok(());
        }
        if eof {
            return Ok(());
        }
        index += 1;
    }
}

/// Parses one block. Line numbers in its error are counted from the block's first line (1);
/// `merge` adds the lines of the blocks before it.
fn parse_block(block: &[u8], unit: BootstrapUnit) -> Chunk {
    let mut chunk = Chunk::default();
    let mut models: FastMap<&[u8], u32> = FastMap::default();
    let mut tasks = TaskTable::default();
    let mut owned_models: FastMap<String, u32> = FastMap::default();
    let mut pos = 0;
    while pos < block.len() {
        chunk.lines += 1;
        // The common case: the scanner reads the row in place and stops at its newline.
        let mut sc = Scanner { s: block, i: pos };
        if let Some(fields) = sc.object() {
            sc.blanks();
            if matches!(sc.peek(), None | Some(b'\n')) {
                pos = sc.i + 1;
                if let Err(message) = add_row(&mut chunk, &mut models, &mut tasks, fields, unit) {
                    chunk.error = Some(BattlesError::Line {
                        line: chunk.lines,
                        message,
                    });
                    return chunk;
                }
                continue;
            }
        }
        let end = block[pos..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(block.len(), |e| pos + e);
        let line = &block[pos..end];
        pos = end + 1;
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // serde would also read a struct from a positional array (`["a", "b", "model_a"]`).
        if line.trim_ascii_start().first() != Some(&b'{') {
            chunk.error = Some(BattlesError::Line {
                line: chunk.lines,
                message: "not a JSON object; a battle is {\"model_a\", \"model_b\", \"winner\", \"question_id\"?}".into(),
            });
            return chunk;
        }
        const BOTH: &str = "both `question_id` and `task` name the question; keep one";
        let result = match serde_json::from_slice::<FastRow>(line) {
            Ok(r) if r.question_id.is_some() && r.task.is_some() => Err(BOTH.to_string()),
            Ok(r) => {
                if let (Some(judge), Some(_)) = (r.judge, r.task) {
                    chunk.note_judge(judge.as_bytes());
                }
                if r.task.is_some() {
                    let (flipped, by_failure) = own_flags(line);
                    chunk.flips.note(r.winner.as_bytes(), flipped, by_failure);
                }
                add_row(
                    &mut chunk,
                    &mut models,
                    &mut tasks,
                    (
                        r.model_a.as_bytes(),
                        r.model_b.as_bytes(),
                        r.winner.as_bytes(),
                        r.question_id.or(r.task).map(str::as_bytes),
                    ),
                    unit,
                )
            }
            Err(_) => match serde_json::from_slice::<OwnedRow>(line) {
                Ok(r) if r.question_id.is_some() && r.task.is_some() => Err(BOTH.to_string()),
                Ok(r) => {
                    if let (Some(judge), Some(_)) =
                        (r.judge.as_ref().and_then(JudgeField::name), &r.task)
                    {
                        chunk.note_judge(judge.as_bytes());
                    }
                    if r.task.is_some() {
                        let (flipped, by_failure) = own_flags(line);
                        chunk.flips.note(r.winner.as_bytes(), flipped, by_failure);
                    }
                    add_owned(&mut chunk, &mut owned_models, &mut tasks, &r, unit)
                }
                Err(e) => Err(format!(
                    "not a battle row ({e}); expected {{\"model_a\", \"model_b\", \"winner\", \"question_id\"?}}"
                )),
            },
        };
        if let Err(message) = result {
            chunk.error = Some(BattlesError::Line {
                line: chunk.lines,
                message,
            });
            return chunk;
        }
    }
    chunk
}

/// The four fields of a plain line, or `None` to let serde_json decide.
#[cfg(test)]
fn scan_line(line: &[u8]) -> Option<Fields<'_>> {
    let mut sc = Scanner { s: line, i: 0 };
    let fields = sc.object()?;
    sc.blanks();
    (sc.i == line.len()).then_some(fields)
}

/// A byte cursor over a block; it never crosses a newline (JSON whitespace inside a row is
/// spaces, tabs and carriage returns only).
struct Scanner<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    /// A flat object with the four fields as plain strings, read in place.
    fn object(&mut self) -> Option<Fields<'a>> {
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
    fn peek(&self) -> Option<u8> {
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
    fn blanks(&mut self) {
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

/// The Chatbot Arena winners, and judge's own `both_bad` and `failed` (a `comparisons.jsonl`
/// read as a battle file).
fn outcome_of(winner: &[u8]) -> Result<RowOutcome, String> {
    match winner {
        b"model_a" => Ok(RowOutcome::Rated(Outcome::AWins)),
        b"model_b" => Ok(RowOutcome::Rated(Outcome::BWins)),
        b"tie" => Ok(RowOutcome::Rated(Outcome::Tie)),
        b"tie (bothbad)" | b"both_bad" => Ok(RowOutcome::Rated(Outcome::BothBad)),
        b"failed" => Ok(RowOutcome::Failed),
        other => Err(format!(
            "unknown winner `{}` (expected model_a, model_b, tie, \"tie (bothbad)\", both_bad or failed)",
            quoted(other)
        )),
    }
}

/// A value from the file as an error quotes it: control characters escaped, and cut to 80
/// characters (a 3 MB winner would make a 3 MB error line).
fn quoted(raw: &[u8]) -> String {
    const SHOWN: usize = 80;
    let text = String::from_utf8_lossy(raw);
    let mut shown: String = text.chars().take(SHOWN).collect();
    if text.chars().nth(SHOWN).is_some() {
        shown.push('…');
    }
    crate::report::printable(&shown).into_owned()
}

fn intern<'a>(
    table: &mut FastMap<&'a [u8], u32>,
    names: &mut Vec<String>,
    name: &'a [u8],
) -> Result<u32, String> {
    if let Some(&i) = table.get(name) {
        return Ok(i);
    }
    let text = std::str::from_utf8(name).map_err(|_| "a name is not valid UTF-8".to_string())?;
    names.push(text.to_string());
    let i = names.len() as u32 - 1;
    table.insert(name, i);
    Ok(i)
}

fn intern_owned(table: &mut FastMap<String, u32>, names: &mut Vec<String>, name: &str) -> u32 {
    if let Some(&i) = table.get(name) {
        return i;
    }
    // An escaped name may equal one already seen in zero-copy form: search the names too.
    let i = names.iter().position(|n| n == name).map_or_else(
        || {
            names.push(name.to_string());
            names.len() as u32 - 1
        },
        |p| p as u32,
    );
    table.insert(name.to_string(), i);
    i
}

/// model_a, model_b, winner, question_id as raw bytes (checked as UTF-8 when first interned).
type Fields<'a> = (&'a [u8], &'a [u8], &'a [u8], Option<&'a [u8]>);

/// Checks a row's fields: the winner, two different models, a question id when the task
/// bootstrap needs one.
fn check_row(
    winner: &[u8],
    a: &[u8],
    b: &[u8],
    has_question: bool,
    unit: BootstrapUnit,
) -> Result<RowOutcome, String> {
    let outcome = outcome_of(winner)?;
    if a.is_empty() || b.is_empty() {
        return Err("a model name is empty".into());
    }
    if a == b {
        return Err(format!("model `{}` is compared with itself", quoted(a)));
    }
    if !has_question && unit == BootstrapUnit::Task {
        return Err(
            "no question_id, which the task bootstrap needs (or use --bootstrap-unit comparison)"
                .into(),
        );
    }
    Ok(outcome)
}

/// A task label's identity: the first 128 bits of its SHA-256. Two distinct labels collide
/// with probability about n²/2^129 (1.5e-27 for a million labels); holding these instead of
/// the labels keeps a million distinct question ids at 16 bytes each, and makes a label that
/// arrives escaped (`q\u00e9`) or as a number (`81`) the same task as its plain text.
fn label_key(label: &[u8]) -> u128 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(label);
    u128::from_le_bytes(digest[..16].try_into().expect("16 of 32 bytes"))
}

/// A block's task labels: by their bytes in the block (no hashing for a label seen before)
/// and by [`label_key`] (labels from both paths of [`parse_block`]).
#[derive(Default)]
struct TaskTable<'a> {
    by_bytes: FastMap<&'a [u8], u32>,
    by_key: FastMap<u128, u32>,
}

impl<'a> TaskTable<'a> {
    /// The block-local number of `label` (UTF-8 text: the scanner checked it), new labels
    /// appended to `keys`.
    fn intern(&mut self, keys: &mut Vec<u128>, label: &'a [u8]) -> u32 {
        if let Some(&i) = self.by_bytes.get(label) {
            return i;
        }
        let i = self.by_key(keys, label);
        self.by_bytes.insert(label, i);
        i
    }

    /// [`TaskTable::intern`] of a decoded label (not cached by its bytes).
    fn by_key(&mut self, keys: &mut Vec<u128>, label: &[u8]) -> u32 {
        let key = label_key(label);
        *self.by_key.entry(key).or_insert_with(|| {
            keys.push(key);
            u32::try_from(keys.len() - 1).expect("fewer than 2^32 tasks")
        })
    }
}

/// Numbers [`label_key`]s in order of first appearance, at 16 bytes per key and 8 of table,
/// each up to twice that as they grow (24 to 48 bytes per key): a million distinct question
/// ids take 25 MB, where a map of `(u128, u32)` slots takes 64 MB (96 MB while it grows). Open addressing on the key's own
/// low bits (a SHA-256 prefix, uniform already), linear probing, at most half full.
#[derive(Default)]
struct KeyNumbers {
    keys: Vec<u128>,
    /// `number + 1` of the key in the slot, 0 for empty; its length is a power of two.
    slots: Vec<u32>,
}

impl KeyNumbers {
    /// The number of `key`: the one it was given before, or the next.
    fn number(&mut self, key: u128) -> u32 {
        if 2 * (self.keys.len() + 1) > self.slots.len() {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut at = key as usize & mask;
        loop {
            match self.slots[at] {
                0 => {
                    self.keys.push(key);
                    let number = u32::try_from(self.keys.len()).expect("fewer than 2^32 tasks");
                    self.slots[at] = number;
                    return number - 1;
                }
                n if self.keys[n as usize - 1] == key => return n - 1,
                _ => at = (at + 1) & mask,
            }
        }
    }

    fn grow(&mut self) {
        let size = (self.slots.len() * 2).max(64);
        self.slots = vec![0; size];
        let mask = size - 1;
        for (i, &key) in self.keys.iter().enumerate() {
            let mut at = key as usize & mask;
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = i as u32 + 1;
        }
    }
}

fn add_row<'a>(
    chunk: &mut Chunk,
    models: &mut FastMap<&'a [u8], u32>,
    tasks: &mut TaskTable<'a>,
    (model_a, model_b, winner, question): Fields<'a>,
    unit: BootstrapUnit,
) -> Result<(), String> {
    let outcome = check_row(winner, model_a, model_b, question.is_some(), unit)?;
    let a = intern(models, &mut chunk.models, model_a)?;
    let b = intern(models, &mut chunk.models, model_b)?;
    let task = match question {
        Some(q) if unit == BootstrapUnit::Task => tasks.intern(&mut chunk.tasks, q),
        _ => u32::MAX,
    };
    chunk.rows.push(Row {
        a,
        b,
        outcome,
        task,
    });
    Ok(())
}

fn add_owned(
    chunk: &mut Chunk,
    models: &mut FastMap<String, u32>,
    tasks: &mut TaskTable<'_>,
    r: &OwnedRow,
    unit: BootstrapUnit,
) -> Result<(), String> {
    let outcome = check_row(
        r.winner.as_bytes(),
        r.model_a.as_bytes(),
        r.model_b.as_bytes(),
        r.question_id.is_some() || r.task.is_some(),
        unit,
    )?;
    let a = intern_owned(models, &mut chunk.models, &r.model_a);
    let b = intern_owned(models, &mut chunk.models, &r.model_b);
    let task = match r
        .question_id
        .as_ref()
        .or(r.task.as_ref())
        .map(QuestionId::text)
    {
        Some(q) if unit == BootstrapUnit::Task => tasks.by_key(&mut chunk.tasks, q.as_bytes()),
        _ => u32::MAX,
    };
    chunk.rows.push(Row {
        a,
        b,
        outcome,
        task,
    });
    Ok(())
}

/// Joins parsed blocks in file order (they may arrive in any order), mapping block-local ids
/// to global ones, with the one judge named by judge's own rows; the first error in file order
/// wins.
#[derive(Default)]
struct Merger {
    models: Vec<String>,
    model_ids: HashMap<String, u32>,
    task_ids: KeyNumbers,
    rows: Vec<Row>,
    lines_before: usize,
    judges: Vec<String>,
    flips: Flips,
    /// The index of the block to join next, and blocks parsed ahead of it.
    next: usize,
    waiting: Vec<(usize, Chunk)>,
    error: Option<BattlesError>,
}

impl Merger {
    fn add(&mut self, index: usize, chunk: Chunk) {
        self.waiting.push((index, chunk));
        while let Some(at) = self.waiting.iter().position(|(i, _)| *i == self.next) {
            let (_, chunk) = self.waiting.swap_remove(at);
            self.next += 1;
            if self.error.is_none() {
                self.join(chunk);
            }
        }
    }

    fn join(&mut self, chunk: Chunk) {
        self.flips.judged += chunk.flips.judged;
        self.flips.flipped += chunk.flips.flipped;
        for j in &chunk.own_judges {
            if !self.judges.contains(j) {
                self.judges.push(j.clone());
            }
        }
        let model_map: Vec<u32> = chunk
            .models
            .into_iter()
            .map(|name| {
                *self.model_ids.entry(name.clone()).or_insert_with(|| {
                    self.models.push(name);
                    self.models.len() as u32 - 1
                })
            })
            .collect();
        let task_map: Vec<u32> = chunk
            .tasks
            .into_iter()
            .map(|key| self.task_ids.number(key))
            .collect();
        self.rows.extend(chunk.rows.iter().map(|r| Row {
            a: model_map[r.a as usize],
            b: model_map[r.b as usize],
            outcome: r.outcome,
            task: if r.task == u32::MAX {
                u32::MAX
            } else {
                task_map[r.task as usize]
            },
        }));
        match chunk.error {
            Some(BattlesError::Line { line, message }) => {
                self.error = Some(BattlesError::Line {
                    line: self.lines_before + line,
                    message,
                });
            }
            Some(e) => self.error = Some(e),
            None => self.lines_before += chunk.lines,
        }
    }

    fn finish(mut self) -> Result<Judged, BattlesError> {
        debug_assert!(self.waiting.is_empty(), "every parsed block is joined");
        if let Some(e) = self.error {
            return Err(e);
        }
        if self.judges.len() > 1 {
            self.judges.sort();
            return Err(BattlesError::SeveralJudges(self.judges));
        }
        Ok((self.models, self.rows, self.judges.pop(), self.flips))
    }
}

#[cfg(test)]
#[path = "battles_tests.rs"]
mod tests;
