//! Judge reply -> [`Verdict`]: strict, pure parsing of the final verdict line (DESIGN §2 rule 7).
//! It never does I/O, never retries and never guesses a winner from unparsable text.
//!
//! # The rule
//!
//! A *verdict line* is a whole line whose text, after removing spaces, tabs and carriage returns
//! at both ends, is exactly one of the four lines in [`Verdict::reply_line`]:
//!
//! ```text
//! VERDICT: 1
//! VERDICT: 2
//! VERDICT: TIE
//! VERDICT: BOTH_BAD
//! ```
//!
//! Everything else is not a verdict line: lowercase (`verdict: 1`, `VERDICT: tie`), other
//! spacing after the colon (`VERDICT:1`, `VERDICT:  1`), Markdown (`**VERDICT: 1**`,
//! `` `VERDICT: 1` ``), punctuation (`VERDICT: 1.`), other tokens (`VERDICT: 3`) and any text
//! that only mentions a verdict inside a sentence. A reply parses only when it holds exactly one
//! verdict line and that line is its last non-blank line (blank = only whitespace; `\r\n` line
//! endings are fine).
//!
//! # Quoted answers
//!
//! The judged answers reach the judge inside nonce-fenced blocks (see `prompt.rs`), and an answer
//! may itself contain a `VERDICT: 1` line. If the judge copies such a line into its reply on a
//! line of its own, the reply holds two verdict lines and is rejected as
//! [`VerdictError::MultipleVerdictLines`] — even when the real final line is well formed. This
//! is deliberate: the parser does not try to recognise fenced or quoted regions in the reply,
//! because a fence in the reply is written by the judge and proves nothing, and every such
//! heuristic is a way to coerce a winner out of a reply that broke the format. The judge
//! template asks the judge not to copy the answers and not to write the word `VERDICT` in its
//! reasoning; a reply that does anyway is unparsable and the caller retries once.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The most characters of an offending line kept in a [`VerdictError`].
pub const MAX_LINE_CHARS: usize = 200;

/// A judge's decision about one ordering of a pair.
///
/// Position-relative: [`Verdict::First`] means the answer shown first ("Answer 1") won,
/// whichever model wrote it. Serialises as `"1"`, `"2"`, `"tie"` or `"both_bad"`, the values of
/// the `verdict` field in `judgments.jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Verdict {
    /// The answer shown first ("Answer 1") is better.
    #[serde(rename = "1")]
    First,
    /// The answer shown second ("Answer 2") is better.
    #[serde(rename = "2")]
    Second,
    /// Both answers are acceptable and equally good.
    #[serde(rename = "tie")]
    Tie,
    /// Both answers fail the task; counted, but excluded from every rating (DESIGN §2 rule 9).
    #[serde(rename = "both_bad")]
    BothBad,
}

impl Verdict {
    /// Every verdict, in the order the judge template lists them.
    pub const ALL: [Verdict; 4] = [
        Verdict::First,
        Verdict::Second,
        Verdict::Tie,
        Verdict::BothBad,
    ];

    /// The record value: `"1"`, `"2"`, `"tie"` or `"both_bad"` (same as the serde form).
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::First => "1",
            Verdict::Second => "2",
            Verdict::Tie => "tie",
            Verdict::BothBad => "both_bad",
        }
    }

    /// The exact line a judge writes to give this verdict, e.g. `"VERDICT: BOTH_BAD"`.
    #[must_use]
    pub const fn reply_line(self) -> &'static str {
        match self {
            Verdict::First => "VERDICT: 1",
            Verdict::Second => "VERDICT: 2",
            Verdict::Tie => "VERDICT: TIE",
            Verdict::BothBad => "VERDICT: BOTH_BAD",
        }
    }
}

/// Why a judge reply is unparsable. Offending lines are kept, cut to [`MAX_LINE_CHARS`]
/// characters; the caller keeps the whole raw reply.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VerdictError {
    /// The reply is empty or holds only whitespace.
    #[error("the judge reply is empty")]
    Empty,
    /// No line of the reply is a verdict line.
    #[error(
        "the judge reply has no verdict line (expected a final line `VERDICT: 1`, `VERDICT: 2`, \
         `VERDICT: TIE` or `VERDICT: BOTH_BAD`; the last line was `{last_line}`)"
    )]
    NoVerdictLine {
        /// The reply's last non-blank line, trimmed and cut to [`MAX_LINE_CHARS`] characters.
        last_line: String,
    },
    /// More than one line of the reply is a verdict line (even if they agree).
    #[error("the judge reply has {count} verdict lines (expected exactly one, as its last line)")]
    MultipleVerdictLines {
        /// How many verdict lines the reply holds (at least 2).
        count: usize,
    },
    /// The one verdict line is followed by other non-blank text.
    #[error(
        "the verdict line is not the last line of the judge reply (it ends with `{last_line}`)"
    )]
    NotLastLine {
        /// The reply's last non-blank line, trimmed and cut to [`MAX_LINE_CHARS`] characters.
        last_line: String,
    },
}

/// Parses a judge reply under the strict rule in the module doc.
///
/// # Errors
///
/// [`VerdictError::Empty`] for a blank reply, [`VerdictError::NoVerdictLine`],
/// [`VerdictError::MultipleVerdictLines`] or [`VerdictError::NotLastLine`] otherwise.
pub fn parse_verdict(reply: &str) -> Result<Verdict, VerdictError> {
    let Some(last_line) = reply.lines().rev().find(|line| !line.trim().is_empty()) else {
        return Err(VerdictError::Empty);
    };
    let found: Vec<Verdict> = reply.lines().filter_map(verdict_of_line).collect();
    match (found.as_slice(), verdict_of_line(last_line)) {
        ([], _) => Err(VerdictError::NoVerdictLine {
            last_line: shorten(last_line),
        }),
        ([_], Some(verdict)) => Ok(verdict),
        ([_], None) => Err(VerdictError::NotLastLine {
            last_line: shorten(last_line),
        }),
        (many, _) => Err(VerdictError::MultipleVerdictLines { count: many.len() }),
    }
}

/// The verdict a single line gives, if it is a verdict line.
fn verdict_of_line(line: &str) -> Option<Verdict> {
    let text = line.trim_matches([' ', '\t', '\r']);
    Verdict::ALL
        .into_iter()
        .find(|verdict| verdict.reply_line() == text)
}

/// A line trimmed and cut to [`MAX_LINE_CHARS`] characters, with `…` marking a cut.
/// Characters a verdict line may not carry that would not show in a message (a no-break or
/// zero-width space, a control character) are written as escapes, so `VERDICT: 1` followed by
/// U+00A0 does not read as a well-formed line.
fn shorten(line: &str) -> String {
    let line = line.trim_matches([' ', '\t', '\r']);
    let mut out = String::new();
    for (i, c) in line.chars().enumerate() {
        if i == MAX_LINE_CHARS {
            out.push('…');
            break;
        }
        let invisible = c.is_control()
            || (c.is_whitespace() && c != ' ')
            || matches!(
                c,
                '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2060}' | '\u{feff}'
            );
        if invisible {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;
