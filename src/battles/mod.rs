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
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::sync::Mutex;
use std::sync::mpsc::{channel, sync_channel};

use serde::Deserialize;

use crate::ranking::{Row, RowOutcome};
use crate::stats::{BootstrapUnit, Outcome};

mod array;
mod scan;
mod tasks;

pub(crate) use tasks::label_key;

pub use array::{ArrayLines, BattlesShape, battles_shape};
use scan::Scanner;
#[cfg(test)]
use scan::scan_line;
use tasks::{KeyNumbers, TaskTable};

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
        // The multiply leaves the low bits, which pick a table's bucket, depending on the low
        // input bytes alone (`q1`, `q2`, … of a million question ids fell into a few dozen
        // buckets): fold the high bits down (murmur3's finaliser).
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
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
        "the file holds judge's comparisons by several judges ({}{}); ranked together their verdicts would be pooled: rank one judge with `judge rank --run RUN --judge ID`, or keep one judge's lines. (Rows with a `task` are read as judge's own comparisons, whose `judge` names the judge: a file from elsewhere should name its question `question_id`.)",
        .0.iter().take(SHOWN_JUDGES).map(|j| crate::report::printable(j)).collect::<Vec<_>>().join(", "),
        if .0.len() > SHOWN_JUDGES { ", and more" } else { "" }
    )]
    SeveralJudges(Vec<String>),
    #[error("read error: {0}")]
    Io(#[from] std::io::Error),
}

/// The judges a [`BattlesError::SeveralJudges`] names (a block notes a few more, so that the
/// message can say when there are more than it shows).
const SHOWN_JUDGES: usize = 8;

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

/// What rows of judge's own comparisons say beyond their battles. Judged and flipped
/// comparisons: those whose both orderings gave a verdict (not failed, not decided by a
/// failed generation) and that say whether they flipped, and of them those whose two verdicts
/// disagreed; the order-flip rate is their ratio. And `repeated`: rows whose task and pair of
/// models an earlier row already had (a run holds one comparison of each, so such a file
/// pools runs, and counts one question's comparison twice).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Flips {
    pub judged: u64,
    pub flipped: u64,
    pub repeated: u64,
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

/// Why a row that does not parse may not be JSON at all: Python's `json.dumps` writes `NaN`
/// and `Infinity` for float fields (a timestamp, a score), which JSON does not have.
fn not_json_hint(line: &[u8]) -> &'static str {
    // Only outside strings: `Infinity-Instruct-7B` is a model's name.
    let (mut in_string, mut escaped, mut bare) = (false, false, Vec::new());
    for &b in line {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b) => bare.push(b),
        }
    }
    let holds = |word: &[u8]| bare.windows(word.len()).any(|w| w == word);
    if holds(b"NaN") || holds(b"Infinity") {
        " (NaN and Infinity, as Python's json.dumps writes them, are not JSON: write null, or dump with allow_nan=False)"
    } else {
        ""
    }
}

/// A 64-bit key of a row's task and unordered pair of models (SipHash with fixed keys: the
/// same in every process), for telling rows that repeat a comparison.
fn own_pair_key(task: &[u8], a: &[u8], b: &[u8]) -> u64 {
    use std::hash::{Hash, Hasher};
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    let mut h = std::hash::DefaultHasher::new();
    (task, a, b).hash(&mut h);
    h.finish()
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

/// One parsed block: rows with block-local model and task ids, and the local name tables.
#[derive(Default)]
struct Chunk {
    /// Lines read (an error stops the count at its line).
    lines: usize,
    rows: Vec<Row>,
    models: Vec<String>,
    /// Task labels by [`tasks::label_key`], in order of first appearance.
    tasks: Vec<u128>,
    /// Distinct `judge`s of rows in judge's own format (`task`), at most a few.
    own_judges: Vec<String>,
    /// The flip counts of rows in judge's own format.
    flips: Flips,
    /// [`own_pair_key`] of every row in judge's own format, in file order.
    own_pairs: Vec<u64>,
    error: Option<BattlesError>,
}

impl Chunk {
    /// Notes the `judge` of a row in judge's own format.
    fn note_judge(&mut self, judge: &[u8]) {
        if self.own_judges.len() <= SHOWN_JUDGES
            && !self.own_judges.iter().any(|j| j.as_bytes() == judge)
        {
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
                if let Some(task) = r.task {
                    let (flipped, by_failure) = own_flags(line);
                    chunk.flips.note(r.winner.as_bytes(), flipped, by_failure);
                    chunk.own_pairs.push(own_pair_key(
                        task.as_bytes(),
                        r.model_a.as_bytes(),
                        r.model_b.as_bytes(),
                    ));
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
                    if let Some(task) = &r.task {
                        let (flipped, by_failure) = own_flags(line);
                        chunk.flips.note(r.winner.as_bytes(), flipped, by_failure);
                        chunk.own_pairs.push(own_pair_key(
                            task.text().as_bytes(),
                            r.model_a.as_bytes(),
                            r.model_b.as_bytes(),
                        ));
                    }
                    add_owned(&mut chunk, &mut owned_models, &mut tasks, &r, unit)
                }
                Err(e) => Err(format!(
                    "not a battle row ({e}){}; expected {{\"model_a\", \"model_b\", \"winner\", \"question_id\"?}}",
                    not_json_hint(line)
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
    question: Option<&[u8]>,
    unit: BootstrapUnit,
) -> Result<RowOutcome, String> {
    let outcome = outcome_of(winner)?;
    if a.is_empty() || b.is_empty() {
        return Err("a model name is empty".into());
    }
    if a == b {
        return Err(format!(
            "model `{}` is compared with itself; drop the row",
            quoted(a)
        ));
    }
    if unit == BootstrapUnit::Task {
        match question {
            None => {
                return Err(
                    "no question_id, which the task bootstrap needs (or use --bootstrap-unit comparison)"
                        .into(),
                );
            }
            // Blank ids of unrelated questions would be resampled as one task.
            Some(q) if q.trim_ascii().is_empty() => {
                return Err(
                    "the question_id is empty, which would make every battle with an empty one a single task; give each question its id (or use --bootstrap-unit comparison)"
                        .into(),
                );
            }
            Some(_) => {}
        }
    }
    Ok(outcome)
}

fn add_row<'a>(
    chunk: &mut Chunk,
    models: &mut FastMap<&'a [u8], u32>,
    tasks: &mut TaskTable<'a>,
    (model_a, model_b, winner, question): Fields<'a>,
    unit: BootstrapUnit,
) -> Result<(), String> {
    let outcome = check_row(winner, model_a, model_b, question, unit)?;
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
    let question = r
        .question_id
        .as_ref()
        .or(r.task.as_ref())
        .map(QuestionId::text);
    let outcome = check_row(
        r.winner.as_bytes(),
        r.model_a.as_bytes(),
        r.model_b.as_bytes(),
        question.as_deref().map(str::as_bytes),
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
    /// The rows of judge's own format seen so far, by [`own_pair_key`].
    own_pairs: HashSet<u64>,
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
        for key in chunk.own_pairs {
            self.flips.repeated += u64::from(!self.own_pairs.insert(key));
        }
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
        let models = canonical_numbers(&mut self.models, &mut self.rows, &self.task_ids.keys);
        Ok((models, self.rows, self.judges.pop(), self.flips))
    }
}

/// Renumbers models by name and tasks by [`label_key`] (they were numbered in order of first
/// appearance), in `rows` too, and returns the models in their new order. The bootstrap lays
/// its draws out by these numbers: numbered so, its intervals depend on the battles, not on
/// their order in the file (a both-bad row ahead of a model's first game, or the file
/// sorted, moved them). `judge rank --run` numbers the same way.
fn canonical_numbers(models: &mut [String], rows: &mut [Row], task_keys: &[u128]) -> Vec<String> {
    let renumber = |order: &[u32]| {
        let mut new = vec![0u32; order.len()];
        for (n, &old) in order.iter().enumerate() {
            new[old as usize] = n as u32;
        }
        new
    };
    let mut by_name: Vec<u32> = (0..models.len() as u32).collect();
    by_name.sort_by(|&x, &y| models[x as usize].cmp(&models[y as usize]));
    let model_new = renumber(&by_name);
    let mut by_key: Vec<u32> = (0..task_keys.len() as u32).collect();
    by_key.sort_unstable_by_key(|&t| task_keys[t as usize]);
    let task_new = renumber(&by_key);
    for r in rows.iter_mut() {
        r.a = model_new[r.a as usize];
        r.b = model_new[r.b as usize];
        if r.task != u32::MAX {
            r.task = task_new[r.task as usize];
        }
    }
    by_name
        .iter()
        .map(|&m| std::mem::take(&mut models[m as usize]))
        .collect()
}

#[cfg(test)]
mod tests;
