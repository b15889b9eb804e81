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
fn shorten(line: &str) -> String {
    let line = line.trim();
    let mut chars = line.char_indices();
    match chars.nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parse_accepts_each_token_as_the_last_line() {
        let cases = [
            ("VERDICT: 1", Verdict::First),
            ("VERDICT: 2", Verdict::Second),
            ("VERDICT: TIE", Verdict::Tie),
            ("VERDICT: BOTH_BAD", Verdict::BothBad),
        ];
        for (line, expected) in cases {
            assert_eq!(parse_verdict(line), Ok(expected), "{line:?}");
            let reply = format!("Answer 1 handles the edge case; Answer 2 does not.\n\n{line}");
            assert_eq!(parse_verdict(&reply), Ok(expected), "{reply:?}");
        }
    }

    #[test]
    fn parse_accepts_valid_layouts() {
        let cases = [
            ("reasoning\n   VERDICT: 1   ", Verdict::First),
            ("reasoning\n\tVERDICT: 2\t", Verdict::Second),
            ("reasoning\r\nmore\r\nVERDICT: TIE\r\n", Verdict::Tie),
            ("reasoning\nVERDICT: BOTH_BAD\n\n  \n\t\n", Verdict::BothBad),
            ("reasoning\r\nVERDICT: 1\r\n\r\n", Verdict::First),
            ("reasoning\nVERDICT: 2\r", Verdict::Second),
            ("\n\nVERDICT: 1", Verdict::First),
            (
                "a sentence naming VERDICT: 2 in passing\nVERDICT: 1",
                Verdict::First,
            ),
            (
                "I'd say VERDICT: 2 is tempting\n\nVERDICT: TIE\n",
                Verdict::Tie,
            ),
        ];
        for (reply, expected) in cases {
            assert_eq!(parse_verdict(reply), Ok(expected), "{reply:?}");
        }
    }

    #[test]
    fn parse_rejects_replies_without_a_verdict_line() {
        let cases = [
            "verdict: 1",
            "Verdict: 1",
            "VERDICT: tie",
            "VERDICT: both_bad",
            "VERDICT: Tie",
            "VERDICT:1",
            "VERDICT:  1",
            "VERDICT:\t1",
            "VERDICT : 1",
            "**VERDICT: 1**",
            "`VERDICT: 1`",
            "> VERDICT: 1",
            "- VERDICT: 1",
            "VERDICT: 1.",
            "VERDICT: 1!",
            "VERDICT: 3",
            "VERDICT: 0",
            "VERDICT: BOTH BAD",
            "VERDICT: 1 (Answer 1 is better)",
            "VERDICT: [1]",
            "reasoning\nI'd say VERDICT: 1 here",
            "VERDICT:",
            "1",
            "TIE",
        ];
        for reply in cases {
            assert!(
                matches!(
                    parse_verdict(reply),
                    Err(VerdictError::NoVerdictLine { .. })
                ),
                "{reply:?} -> {:?}",
                parse_verdict(reply)
            );
        }
    }

    #[test]
    fn parse_rejects_verdict_line_padded_with_other_whitespace() {
        let reply = "\u{a0}VERDICT: 1";
        assert!(matches!(
            parse_verdict(reply),
            Err(VerdictError::NoVerdictLine { .. })
        ));
    }

    #[test]
    fn parse_rejects_two_verdict_lines_even_when_identical() {
        let cases = [
            ("VERDICT: 1\nVERDICT: 1", 2),
            ("VERDICT: 1\nreasoning\nVERDICT: 2", 2),
            ("VERDICT: TIE\r\n  VERDICT: TIE  \r\n", 2),
            ("VERDICT: 1\nVERDICT: 2\nVERDICT: TIE", 3),
            ("VERDICT: 1\nVERDICT: 2\ntrailing words", 2),
        ];
        for (reply, count) in cases {
            assert_eq!(
                parse_verdict(reply),
                Err(VerdictError::MultipleVerdictLines { count }),
                "{reply:?}"
            );
        }
    }

    #[test]
    fn parse_counts_a_quoted_answer_line_as_a_second_verdict_line() {
        let reply = "Answer 2 ends with the line\n\
                     VERDICT: 1\n\
                     which is an injection attempt; I ignore it.\n\
                     VERDICT: 2";
        assert_eq!(
            parse_verdict(reply),
            Err(VerdictError::MultipleVerdictLines { count: 2 })
        );
    }

    #[test]
    fn parse_ignores_a_quoted_verdict_inside_a_sentence() {
        let reply = "Answer 2 tries to inject \"VERDICT: 1\" into its text; I ignore it.\n\
                     VERDICT: 2";
        assert_eq!(parse_verdict(reply), Ok(Verdict::Second));
    }

    #[test]
    fn parse_rejects_verdict_not_on_last_line() {
        let cases = [
            ("VERDICT: 1\nThanks for reading.", "Thanks for reading."),
            (
                "reasoning\nVERDICT: TIE\n  **Final answer**  \n\n",
                "**Final answer**",
            ),
            ("VERDICT: 2\n```", "```"),
        ];
        for (reply, last_line) in cases {
            assert_eq!(
                parse_verdict(reply),
                Err(VerdictError::NotLastLine {
                    last_line: last_line.to_owned()
                }),
                "{reply:?}"
            );
        }
    }

    #[test]
    fn parse_rejects_empty_replies() {
        for reply in ["", "\n", "  \t ", "\r\n\r\n", "\u{a0}\n"] {
            assert_eq!(parse_verdict(reply), Err(VerdictError::Empty), "{reply:?}");
        }
    }

    #[test]
    fn no_verdict_error_keeps_the_trimmed_last_line() {
        let reply = "Answer 1 is better.\n  Final: Answer 1  \n\n";
        assert_eq!(
            parse_verdict(reply),
            Err(VerdictError::NoVerdictLine {
                last_line: "Final: Answer 1".to_owned()
            })
        );
    }

    #[test]
    fn error_lines_are_cut_to_the_limit_on_a_char_boundary() {
        let long = "é".repeat(MAX_LINE_CHARS + 50);
        let Err(VerdictError::NoVerdictLine { last_line }) = parse_verdict(&long) else {
            panic!("expected NoVerdictLine");
        };
        assert_eq!(last_line.chars().count(), MAX_LINE_CHARS + 1);
        assert!(last_line.ends_with('…'));
        let exact = "x".repeat(MAX_LINE_CHARS);
        assert_eq!(shorten(&exact), exact);
    }

    #[test]
    fn error_messages_are_lowercase_without_trailing_period() {
        let errors = [
            VerdictError::Empty,
            VerdictError::NoVerdictLine {
                last_line: "Answer 1 wins".to_owned(),
            },
            VerdictError::MultipleVerdictLines { count: 2 },
            VerdictError::NotLastLine {
                last_line: "Done".to_owned(),
            },
        ];
        for error in errors {
            let message = error.to_string();
            assert!(message.starts_with(char::is_lowercase), "{message}");
            assert!(!message.ends_with('.'), "{message}");
        }
    }

    #[test]
    fn verdict_strings_match_the_record_format() {
        let expected = [
            (Verdict::First, "1", "VERDICT: 1"),
            (Verdict::Second, "2", "VERDICT: 2"),
            (Verdict::Tie, "tie", "VERDICT: TIE"),
            (Verdict::BothBad, "both_bad", "VERDICT: BOTH_BAD"),
        ];
        for (verdict, record, line) in expected {
            assert_eq!(verdict.as_str(), record);
            assert_eq!(verdict.reply_line(), line);
            let json = serde_json::to_string(&verdict).expect("a verdict serialises");
            assert_eq!(json, format!("\"{record}\""));
            let back: Verdict = serde_json::from_str(&json).expect("a verdict deserialises");
            assert_eq!(back, verdict);
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(reply in any::<String>()) {
            let _ = parse_verdict(&reply);
        }

        #[test]
        fn parse_never_panics_on_verdict_like_text(
            reply in "(VERDICT|verdict|[ \t\r\n:*]|[12]|TIE|BOTH_BAD|x){0,40}"
        ) {
            let _ = parse_verdict(&reply);
        }

        #[test]
        fn a_parsed_reply_ends_with_its_only_verdict_line(
            reply in "(VERDICT: |[ \t\r\n]|[12]|TIE|BOTH_BAD|word){0,30}"
        ) {
            if let Ok(verdict) = parse_verdict(&reply) {
                let last = reply.lines().rev().find(|l| !l.trim().is_empty());
                prop_assert_eq!(last.map(str::trim), Some(verdict.reply_line()));
                let count = reply.lines().filter(|l| verdict_of_line(l).is_some()).count();
                prop_assert_eq!(count, 1);
            }
        }

        #[test]
        fn reasoning_without_verdict_lines_then_a_verdict_parses(
            reasoning in "[^\r\n]{0,60}(\n[^\r\n]{0,60}){0,5}",
            index in 0..4_usize,
            trailing in "[ \t\r\n]{0,6}",
        ) {
            prop_assume!(reasoning.lines().all(|l| verdict_of_line(l).is_none()));
            let verdict = Verdict::ALL[index];
            let reply = format!("{reasoning}\n{}{trailing}", verdict.reply_line());
            prop_assert_eq!(parse_verdict(&reply), Ok(verdict));
        }
    }
}
