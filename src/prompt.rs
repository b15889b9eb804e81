//! Judge prompts: parses the tool-owned pairwise template and renders it for one blind judge call
//! (DESIGN §2 rules 4 and 8). Pure: the template text, inputs and seed are passed in; it never
//! reads `prompts/`, never sees a model name in what it renders, and never touches the network.
//!
//! # Template format (`prompts/pairwise.md`)
//!
//! The template holds two messages. Its first non-blank line is the marker `---system---`; the
//! text after it, up to a line `---user---`, is the system message, and the text after that is
//! the user message. Each marker appears exactly once, alone on its line; `\r\n` line endings
//! are read as `\n`, and blank lines at either end of a message are dropped.
//!
//! Placeholders are written `{{name}}` (lowercase letters, digits, `_`). The template may hold
//! no other `{{`, so a typo is an error and never reaches a judge.
//!
//! | placeholder | count | where | filled with |
//! |---|---|---|---|
//! | `{{suite_guidance}}` | exactly 1, alone on its line | either message | the suite's `context` and `criteria`, each introduced by a line saying what it is (trimmed; an empty part is left out with its introduction; see [`suite_guidance`]) |
//! | `{{task}}` | exactly 1, alone on its line | user | the task prompt inside a `TASK` fence |
//! | `{{answer_1}}` | exactly 1, alone on its line | user | the answer shown first inside an `ANSWER_1` fence |
//! | `{{answer_2}}` | exactly 1, after `{{answer_1}}`, alone on its line | user | the answer shown second inside an `ANSWER_2` fence |
//! | `{{nonce}}` | any | either message | the call's fence nonce |
//!
//! `{{suite_guidance}}` is the only slot the suite owns; every other word is the tool's.
//!
//! # Fences and the nonce
//!
//! A fenced value is rendered as three parts, with trailing line breaks of the value removed:
//!
//! ```text
//! <<<ANSWER_1 3f0c9a1be27d4405>>>
//! …the answer, verbatim…
//! <<<END_ANSWER_1 3f0c9a1be27d4405>>>
//! ```
//!
//! The nonce comes from [`fence_nonce`]: 16 hex digits of a SHA-256 over the run seed, the
//! task's text and the two answers as shown (and the ordering when they are equal). It is
//! deterministic and depends only on what the call shows, so a repeated run sends the
//! identical request and hits the cache, also after models are renamed or reordered; an
//! answer cannot hold its own call's nonce, a hash over that very answer, so it cannot close
//! its own fence. It reveals none of its inputs. If any input
//! contains the nonce (ASCII case ignored), rendering fails with
//! [`PromptError::NonceCollision`] rather than produce a fence the answer could forge.
//!
//! Substitution is single-pass: a value that contains `{{answer_2}}` or any other placeholder
//! text is copied as it is and never expanded.
//!
//! # The rendered template and its hash
//!
//! [`template_sha256`] fills only the suite slot and leaves `{{task}}`, `{{answer_1}}`,
//! `{{answer_2}}` and `{{nonce}}` as written. That text — both messages, each after its marker
//! line — is the *rendered template* of a run: it is written once to
//! `runs/<run>/prompts/<sha256>.md`, and every judgment records its SHA-256 as `prompt_sha256`.
//! Every prompt [`render_pairwise`] builds for the same template and suite is that text with the
//! four per-call placeholders filled in as described above.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

/// The marker line that opens the system message of a template.
pub const SYSTEM_MARKER: &str = "---system---";

/// The marker line that ends the system message and opens the user message.
pub const USER_MARKER: &str = "---user---";

/// How many hex digits [`fence_nonce`] returns.
pub const NONCE_HEX_LEN: usize = 16;

/// Which model of a pair is shown first: `Ab` shows the pair's first model as "Answer 1".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// The pair's first model is Answer 1.
    Ab,
    /// The pair's second model is Answer 1.
    Ba,
}

impl Order {
    /// The record value: `"ab"` or `"ba"` (same as the serde form).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Order::Ab => "ab",
            Order::Ba => "ba",
        }
    }

    /// Puts the pair `(a, b)` in display order: `(Answer 1, Answer 2)`.
    pub fn arrange<T>(self, (a, b): (T, T)) -> (T, T) {
        match self {
            Order::Ab => (a, b),
            Order::Ba => (b, a),
        }
    }
}

/// One of the two messages a template yields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Section {
    /// The system message: the text after [`SYSTEM_MARKER`].
    System,
    /// The user message: the text after [`USER_MARKER`].
    User,
}

impl Section {
    /// `"system"` or `"user"`.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Section::System => "system",
            Section::User => "user",
        }
    }
}

impl fmt::Display for Section {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a template is refused or a prompt cannot be rendered. Line numbers are 1-based lines of
/// the template text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PromptError {
    /// A marker line is missing.
    #[error("the judge template has no `{marker}` line (add it alone on its own line)")]
    MissingMarker {
        /// The missing marker.
        marker: &'static str,
    },
    /// A marker line appears twice.
    #[error("the judge template has a second `{marker}` line at line {line} (keep exactly one)")]
    DuplicateMarker {
        /// The repeated marker.
        marker: &'static str,
        /// Where it appears the second time.
        line: usize,
    },
    /// Text (or the user marker) comes before the system marker.
    #[error(
        "line {line} of the judge template comes before the `---system---` line (start with it)"
    )]
    TextBeforeSystemMarker {
        /// The first offending line.
        line: usize,
    },
    /// A message is empty.
    #[error("the {section} message of the judge template is empty")]
    EmptySection {
        /// The empty message.
        section: Section,
    },
    /// A `{{` does not start a well-formed `{{name}}` placeholder.
    #[error(
        "line {line} of the judge template has a `{{{{` that is not a `{{{{name}}}}` placeholder"
    )]
    MalformedPlaceholder {
        /// Where the `{{` is.
        line: usize,
    },
    /// A placeholder name the template format does not define.
    #[error(
        "line {line} of the judge template has the unknown placeholder `{{{{{name}}}}}` \
         (expected one of: task, answer_1, answer_2, suite_guidance, nonce)"
    )]
    UnknownPlaceholder {
        /// The unknown name, without braces.
        name: String,
        /// Where it is.
        line: usize,
    },
    /// A required placeholder is absent.
    #[error("the judge template has no `{placeholder}` placeholder (it needs exactly one)")]
    MissingPlaceholder {
        /// The missing placeholder, with braces.
        placeholder: &'static str,
    },
    /// A placeholder that must appear once appears again.
    #[error("the judge template repeats `{placeholder}` at line {line} (it needs exactly one)")]
    DuplicatePlaceholder {
        /// The repeated placeholder, with braces.
        placeholder: &'static str,
        /// Where it appears the second time.
        line: usize,
    },
    /// A block placeholder shares its line with other text.
    #[error(
        "the placeholder `{placeholder}` at line {line} of the judge template must be alone on its line"
    )]
    PlaceholderNotOnOwnLine {
        /// The placeholder, with braces.
        placeholder: &'static str,
        /// Where it is.
        line: usize,
    },
    /// The task or an answer is placed in the system message.
    #[error(
        "the placeholder `{placeholder}` at line {line} of the judge template must be in the user message"
    )]
    PlaceholderInSystemMessage {
        /// The placeholder, with braces.
        placeholder: &'static str,
        /// Where it is.
        line: usize,
    },
    /// `{{answer_2}}` comes before `{{answer_1}}`.
    #[error(
        "the judge template puts `{{{{answer_2}}}}` (line {answer_2_line}) before \
         `{{{{answer_1}}}}` (line {answer_1_line})"
    )]
    AnswersOutOfOrder {
        /// Where `{{answer_1}}` is.
        answer_1_line: usize,
        /// Where `{{answer_2}}` is.
        answer_2_line: usize,
    },
    /// The nonce is not 16 to 64 lowercase hex digits.
    #[error("the fence nonce `{nonce}` is not 16 to 64 lowercase hex digits")]
    InvalidNonce {
        /// The rejected nonce.
        nonce: String,
    },
    /// An input contains the nonce, so it could forge a fence.
    #[error("the {field} contains the fence nonce, so it could forge a fence (use another seed)")]
    NonceCollision {
        /// The input holding it: `task`, `answer_1`, `answer_2`, `suite context`, `suite criteria`.
        field: &'static str,
    },
}

/// A placeholder the template format defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Task,
    Answer1,
    Answer2,
    SuiteGuidance,
    Nonce,
}

impl Slot {
    const ALL: [Slot; 5] = [
        Slot::Task,
        Slot::Answer1,
        Slot::Answer2,
        Slot::SuiteGuidance,
        Slot::Nonce,
    ];

    /// The placeholder as written in a template.
    const fn placeholder(self) -> &'static str {
        match self {
            Slot::Task => "{{task}}",
            Slot::Answer1 => "{{answer_1}}",
            Slot::Answer2 => "{{answer_2}}",
            Slot::SuiteGuidance => "{{suite_guidance}}",
            Slot::Nonce => "{{nonce}}",
        }
    }

    /// The placeholder for a name written between the braces, if the format defines it.
    fn from_name(name: &str) -> Option<Slot> {
        Slot::ALL.into_iter().find(|slot| {
            let braced = slot.placeholder();
            braced.len() == name.len() + 4 && &braced[2..braced.len() - 2] == name
        })
    }

    /// Block placeholders expand to paragraphs and must be alone on their line.
    const fn is_block(self) -> bool {
        !matches!(self, Slot::Nonce)
    }
}

/// A run of literal text or a placeholder.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Slot(Slot),
}

/// Where one placeholder was found.
#[derive(Debug, Clone, Copy)]
struct Found {
    slot: Slot,
    section: Section,
    line: usize,
}

/// The raw text of one message and the template line it starts on.
#[derive(Debug, Clone, Copy)]
struct SectionSource<'a> {
    text: &'a str,
    first_line: usize,
}

/// The validated pairwise judge template: a system and a user message with placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairwiseTemplate {
    system: Vec<Piece>,
    user: Vec<Piece>,
}

/// Everything that fills one rendered judge prompt. Holds no model name by design.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairwiseInput<'a> {
    /// The task prompt (`tasks/<id>/prompt.md`).
    pub task: &'a str,
    /// The answer shown first, "Answer 1".
    pub answer_1: &'a str,
    /// The answer shown second, "Answer 2".
    pub answer_2: &'a str,
    /// The suite's `context`; may be empty.
    pub suite_context: &'a str,
    /// The suite's `criteria`: what "better" means.
    pub suite_criteria: &'a str,
    /// The call's fence nonce, from [`fence_nonce`].
    pub nonce: &'a str,
}

/// The two messages of one judge call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedPrompt {
    /// The system message.
    pub system: String,
    /// The user message.
    pub user: String,
}

impl PairwiseTemplate {
    /// Parses and validates template text in the format described in the module doc.
    ///
    /// # Errors
    ///
    /// A [`PromptError`] naming the first problem: a missing, repeated or misplaced marker or
    /// placeholder, an unknown or malformed placeholder, or an empty message.
    pub fn parse(text: &str) -> Result<Self, PromptError> {
        let text = text.replace("\r\n", "\n");
        let [system_source, user_source] = split_sections(&text)?;
        let mut found = Vec::new();
        let system = parse_section(system_source, Section::System, &mut found)?;
        let user = parse_section(user_source, Section::User, &mut found)?;
        validate_placeholders(&found)?;
        Ok(PairwiseTemplate { system, user })
    }
}

/// Finds the two marker lines and returns the text of each message.
fn split_sections(text: &str) -> Result<[SectionSource<'_>; 2], PromptError> {
    // (line number, byte offset where the marker line starts, byte offset just after it)
    let mut system: Option<(usize, usize, usize)> = None;
    let mut user: Option<(usize, usize, usize)> = None;
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = index + 1;
        let marker = (number, offset, offset + line.len());
        match line.trim() {
            SYSTEM_MARKER => record_marker(&mut system, SYSTEM_MARKER, marker)?,
            "" => {}
            _ if system.is_none() => {
                return Err(PromptError::TextBeforeSystemMarker { line: number });
            }
            USER_MARKER => record_marker(&mut user, USER_MARKER, marker)?,
            _ => {}
        }
        offset += line.len();
    }
    let missing = |marker| PromptError::MissingMarker { marker };
    let (system_line, _, system_end) = system.ok_or(missing(SYSTEM_MARKER))?;
    let (user_line, user_start, user_end) = user.ok_or(missing(USER_MARKER))?;
    Ok([
        SectionSource {
            text: &text[system_end..user_start],
            first_line: system_line + 1,
        },
        SectionSource {
            text: &text[user_end..],
            first_line: user_line + 1,
        },
    ])
}

/// Stores a marker's position, refusing a second one.
fn record_marker(
    slot: &mut Option<(usize, usize, usize)>,
    marker: &'static str,
    position: (usize, usize, usize),
) -> Result<(), PromptError> {
    if slot.is_some() {
        return Err(PromptError::DuplicateMarker {
            marker,
            line: position.0,
        });
    }
    *slot = Some(position);
    Ok(())
}

/// Splits one message into literal text and placeholders, trimming blank ends.
fn parse_section(
    source: SectionSource<'_>,
    section: Section,
    found: &mut Vec<Found>,
) -> Result<Vec<Piece>, PromptError> {
    let text = source.text.trim();
    if text.is_empty() {
        return Err(PromptError::EmptySection { section });
    }
    let leading = source.text.len() - source.text.trim_start().len();
    let leading_lines = source.text[..leading].matches('\n').count();
    let first_line = source.first_line + leading_lines;
    let mut pieces = Vec::new();
    let mut cursor = 0;
    while let Some(relative) = text[cursor..].find("{{") {
        let start = cursor + relative;
        let line = first_line + text[..start].matches('\n').count();
        let slot = read_placeholder(&text[start..], line)?;
        let end = start + slot.placeholder().len();
        if slot.is_block() && !alone_on_line(text, start, end) {
            let placeholder = slot.placeholder();
            return Err(PromptError::PlaceholderNotOnOwnLine { placeholder, line });
        }
        pieces.push(Piece::Text(text[cursor..start].to_owned()));
        pieces.push(Piece::Slot(slot));
        found.push(Found {
            slot,
            section,
            line,
        });
        cursor = end;
    }
    pieces.push(Piece::Text(text[cursor..].to_owned()));
    pieces.retain(|piece| piece != &Piece::Text(String::new()));
    Ok(pieces)
}

/// Reads the placeholder at the start of `rest`, which begins with `{{`.
fn read_placeholder(rest: &str, line: usize) -> Result<Slot, PromptError> {
    let malformed = PromptError::MalformedPlaceholder { line };
    let inner = &rest[2..];
    let name = &inner[..inner.find("}}").ok_or(malformed.clone())?];
    let well_formed = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if !well_formed {
        return Err(malformed);
    }
    Slot::from_name(name).ok_or_else(|| PromptError::UnknownPlaceholder {
        name: name.to_owned(),
        line,
    })
}

/// Whether `text[start..end]` is a whole line of `text`.
fn alone_on_line(text: &str, start: usize, end: usize) -> bool {
    let starts_line = start == 0 || text[..start].ends_with('\n');
    let ends_line = end == text.len() || text[end..].starts_with('\n');
    starts_line && ends_line
}

/// Checks counts, placement and order of the placeholders found in both messages.
fn validate_placeholders(found: &[Found]) -> Result<(), PromptError> {
    let once = [
        Slot::SuiteGuidance,
        Slot::Task,
        Slot::Answer1,
        Slot::Answer2,
    ];
    let mut lines = [0; 4];
    for (index, slot) in once.into_iter().enumerate() {
        let placeholder = slot.placeholder();
        let mut hits = found.iter().filter(|hit| hit.slot == slot);
        let first = hits
            .next()
            .ok_or(PromptError::MissingPlaceholder { placeholder })?;
        if let Some(second) = hits.next() {
            let line = second.line;
            return Err(PromptError::DuplicatePlaceholder { placeholder, line });
        }
        if slot != Slot::SuiteGuidance && first.section == Section::System {
            let line = first.line;
            return Err(PromptError::PlaceholderInSystemMessage { placeholder, line });
        }
        lines[index] = first.line;
    }
    let [_, _, answer_1_line, answer_2_line] = lines;
    if answer_2_line < answer_1_line {
        return Err(PromptError::AnswersOutOfOrder {
            answer_1_line,
            answer_2_line,
        });
    }
    Ok(())
}

/// Derives the fence nonce for one judge call: the first [`NONCE_HEX_LEN`] lowercase hex digits
/// of a SHA-256 over the seed, the task's text and the two answers in the order shown, and
/// the ordering only when the answers are equal (so that both orderings stay two calls).
/// Each string is length-prefixed, so no two inputs share an encoding.
///
/// The nonce, and so the request, depends only on what the judge is shown: renaming or
/// reordering models or tasks asks nothing again. An answer cannot carry its own call's
/// nonce, which is a hash over that answer; it reveals none of its inputs.
#[must_use]
pub fn fence_nonce(seed: u64, task: &str, answers: (&str, &str), order: Order) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"judge/fence-nonce/v2\0");
    hasher.update(seed.to_le_bytes());
    let order = if answers.0 == answers.1 {
        order.as_str()
    } else {
        ""
    };
    for field in [task, answers.0, answers.1, order] {
        hasher.update((field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    let mut nonce = crate::hex(&hasher.finalize());
    nonce.truncate(NONCE_HEX_LEN);
    nonce
}

/// Renders the system and user messages of one judge call.
///
/// # Errors
///
/// [`PromptError::InvalidNonce`] if the nonce is not 16–64 lowercase hex digits, and
/// [`PromptError::NonceCollision`] if any input contains it.
pub fn render_pairwise(
    t: &PairwiseTemplate,
    inp: &PairwiseInput<'_>,
) -> Result<RenderedPrompt, PromptError> {
    check_nonce(inp)?;
    let guidance = suite_guidance(inp.suite_context, inp.suite_criteria);
    let fill = |slot: Slot, out: &mut String| match slot {
        Slot::Task => push_fenced(out, "TASK", inp.nonce, inp.task),
        Slot::Answer1 => push_fenced(out, "ANSWER_1", inp.nonce, inp.answer_1),
        Slot::Answer2 => push_fenced(out, "ANSWER_2", inp.nonce, inp.answer_2),
        Slot::SuiteGuidance => out.push_str(&guidance),
        Slot::Nonce => out.push_str(inp.nonce),
    };
    Ok(RenderedPrompt {
        system: render_pieces(&t.system, &fill),
        user: render_pieces(&t.user, &fill),
    })
}

/// The rendered template of a run and its SHA-256 (lowercase hex), returned as
/// `(sha256, text)`.
///
/// The text is `---system---`, the system message, `---user---`, the user message (each on its
/// own line, ending in a newline) with only the suite slot filled: `{{task}}`, `{{answer_1}}`,
/// `{{answer_2}}` and `{{nonce}}` stay as written. The caller writes it once to
/// `runs/<run>/prompts/<sha256>.md` and records the hash as every judgment's `prompt_sha256`.
#[must_use]
pub fn template_sha256(
    t: &PairwiseTemplate,
    suite_context: &str,
    suite_criteria: &str,
) -> (String, String) {
    let guidance = suite_guidance(suite_context, suite_criteria);
    let fill = |slot: Slot, out: &mut String| match slot {
        Slot::SuiteGuidance => out.push_str(&guidance),
        other => out.push_str(other.placeholder()),
    };
    let text = format!(
        "{SYSTEM_MARKER}\n{}\n{USER_MARKER}\n{}\n",
        render_pieces(&t.system, &fill),
        render_pieces(&t.user, &fill)
    );
    (crate::sha256_hex(&text), text)
}

/// Refuses a malformed nonce, or one that any input contains.
fn check_nonce(inp: &PairwiseInput<'_>) -> Result<(), PromptError> {
    let nonce = inp.nonce;
    let hex = nonce
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !hex || !(NONCE_HEX_LEN..=64).contains(&nonce.len()) {
        return Err(PromptError::InvalidNonce {
            nonce: nonce.to_owned(),
        });
    }
    let fields = [
        ("task", inp.task),
        ("answer_1", inp.answer_1),
        ("answer_2", inp.answer_2),
        ("suite context", inp.suite_context),
        ("suite criteria", inp.suite_criteria),
    ];
    match fields
        .into_iter()
        .find(|(_, text)| contains_ignoring_case(text, nonce))
    {
        Some((field, _)) => Err(PromptError::NonceCollision { field }),
        None => Ok(()),
    }
}

/// Whether `haystack` contains `needle`, ignoring ASCII case.
fn contains_ignoring_case(haystack: &str, needle: &str) -> bool {
    haystack
        .as_bytes()
        .windows(needle.len())
        .any(|window| window.eq_ignore_ascii_case(needle.as_bytes()))
}

/// The suite slot: trimmed context, a blank line, trimmed criteria; empty parts left out.
/// The suite's part of the judge prompt: its `context`, introduced as what the answering
/// models were told (it is written to them: "You are answering…"), then its `criteria`,
/// introduced as what makes an answer better; each trimmed, an empty part left out with its
/// introduction. Labellers are shown the same text.
pub fn suite_guidance(context: &str, criteria: &str) -> String {
    let parts: Vec<String> = [
        (
            "The answers were written to this brief, which every model was given:",
            context,
        ),
        ("What makes one answer better than another:", criteria),
    ]
    .into_iter()
    .filter(|(_, part)| !part.trim().is_empty())
    .map(|(intro, part)| format!("{intro}\n\n{}", part.trim()))
    .collect();
    parts.join("\n\n")
}

/// Appends `body` between an opening and a closing fence line carrying `nonce`.
fn push_fenced(out: &mut String, label: &str, nonce: &str, body: &str) {
    let body = body.trim_end_matches(['\r', '\n']);
    for part in [
        "<<<",
        label,
        " ",
        nonce,
        ">>>\n",
        body,
        "\n<<<END_",
        label,
        " ",
        nonce,
        ">>>",
    ] {
        out.push_str(part);
    }
}

/// Concatenates a message's pieces, filling each placeholder once (no re-expansion).
fn render_pieces(pieces: &[Piece], fill: &dyn Fn(Slot, &mut String)) -> String {
    let mut out = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(text) => out.push_str(text),
            Piece::Slot(slot) => fill(*slot, &mut out),
        }
    }
    out
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
