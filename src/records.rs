//! The records a run writes, one JSON object per line (DESIGN §3). Field names are snake_case
//! and stable; changing one bumps [`SCHEMA_VERSION`].

use serde::{Deserialize, Serialize};

use crate::config::GenerationSettings;
use crate::provider::{ErrorClass, Usage};

/// Version of every file a run writes (manifest, records, leaderboards).
pub const SCHEMA_VERSION: u32 = 1;

/// Whether an item produced a usable output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Failed,
}

/// Why an item failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedError {
    pub class: ErrorClass,
    pub message: String,
    /// HTTP status of the last attempt, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,
}

/// One line of `outputs.jsonl`: the output of one model for one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutputRecord {
    pub task: String,
    pub model: String,
    pub status: Status,
    /// The reply text (`null` when failed).
    pub text: Option<String>,
    pub error: Option<RecordedError>,
    /// `stop`, `length` (cut off by the token cap), … as the provider reported it.
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
    /// `null` when the model is unpriced or made no call.
    pub cost_usd: Option<f64>,
    /// The cache entry this output came from or went to (`null` for `files` models).
    pub cache_key: Option<String>,
    /// Served from the cache without a request.
    pub from_cache: bool,
    /// HTTP attempts made (0 for cache hits and `files` models).
    pub attempts: u32,
    pub settings: GenerationSettings,
    /// What the failed records this one replaced (`--retry-failed`) were billed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<Replaced>,
}

/// Usage and cost billed to failed records that a record replaced (`--retry-failed`), summed
/// over every replacement, so that a run's costs keep every billed call. A replaced failure
/// without usage (a timeout, a 5xx: the provider did not say it billed it) adds nothing, as
/// with the retries inside one call.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Replaced {
    pub usage: Usage,
    /// `null` when unpriced.
    pub cost_usd: Option<f64>,
}

impl Replaced {
    /// What a failed record with this `usage`, `cost_usd` and `replaced` passes on to the
    /// record that replaces it; `None` when no billed usage is known.
    pub fn passed_on(
        usage: Option<Usage>,
        cost_usd: Option<f64>,
        replaced: Option<Replaced>,
    ) -> Option<Replaced> {
        let own = usage.map(|usage| Replaced { usage, cost_usd });
        match (own, replaced) {
            (Some(a), Some(b)) => Some(Replaced {
                usage: Usage {
                    input_tokens: a.usage.input_tokens.saturating_add(b.usage.input_tokens),
                    output_tokens: a.usage.output_tokens.saturating_add(b.usage.output_tokens),
                },
                cost_usd: a.cost_usd.zip(b.cost_usd).map(|(x, y)| x + y),
            }),
            (a, b) => a.or(b),
        }
    }
}

/// A record's whole cost: its own `cost_usd` plus what the failed records it replaced were
/// billed; `None` when either is unknown or unpriced.
pub fn total_cost(cost_usd: Option<f64>, replaced: Option<Replaced>) -> Option<f64> {
    match replaced {
        None => cost_usd,
        Some(r) => cost_usd.zip(r.cost_usd).map(|(a, b)| a + b),
    }
}

/// An output record without its text and call details: what a leaderboard needs of it
/// (read from `outputs.jsonl` by `rank`, whose memory then does not grow with the answers).
#[derive(Debug, Clone, Deserialize)]
pub struct OutputBrief {
    pub task: String,
    pub model: String,
    pub status: Status,
    pub cost_usd: Option<f64>,
    #[serde(default)]
    pub replaced: Option<Replaced>,
}

/// A record of `outputs.jsonl`, read whole ([`OutputRecord`]) or in brief ([`OutputBrief`]).
pub trait OutputRow: serde::de::DeserializeOwned {
    /// The (task, model) it answers.
    fn item(&self) -> (&str, &str);

    /// Whether it is `ok` without a `text`, which judge never writes (an edited file).
    fn ok_without_text(&self) -> bool {
        false
    }
}

impl OutputRow for OutputRecord {
    fn item(&self) -> (&str, &str) {
        (&self.task, &self.model)
    }

    fn ok_without_text(&self) -> bool {
        self.status == Status::Ok && self.text.is_none()
    }
}

impl OutputRow for OutputBrief {
    fn item(&self) -> (&str, &str) {
        (&self.task, &self.model)
    }
}

impl OutputRecord {
    /// An output whose cost is unknown: the model has no price, or no usage came back (a
    /// failure too: a request that timed out may still have been billed). The leaderboard's
    /// cost is `n/a` then, and generate's counts it as unknown.
    pub fn cost_unknown(&self) -> bool {
        self.cost_usd.is_none()
    }

    /// Its cost with what the failed records it replaced were billed ([`total_cost`]).
    pub fn total_cost(&self) -> Option<f64> {
        total_cost(self.cost_usd, self.replaced)
    }
}

/// The `verdict` field of a judgment: a parsed verdict, or `failed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum JudgmentVerdict {
    /// `1`, `2`, `tie` or `both_bad` (position-relative: 1 = the answer shown first).
    Parsed(crate::verdict::Verdict),
    /// Unparsable after the retry, or the call failed.
    Failed(FailedMarker),
}

/// Read from its string with an error that names the values (serde's untagged enums say only
/// "did not match any variant").
impl<'de> Deserialize<'de> for JudgmentVerdict {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::verdict::Verdict;
        let s = std::borrow::Cow::<'de, str>::deserialize(d)?;
        Ok(match &*s {
            "1" => Self::Parsed(Verdict::First),
            "2" => Self::Parsed(Verdict::Second),
            "tie" => Self::Parsed(Verdict::Tie),
            "both_bad" => Self::Parsed(Verdict::BothBad),
            "failed" => Self::Failed(FailedMarker::Failed),
            other => {
                return Err(serde::de::Error::custom(format!(
                    "unknown verdict `{other}` (expected \"1\", \"2\", \"tie\", \"both_bad\" or \"failed\")"
                )));
            }
        })
    }
}

/// The literal `"failed"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailedMarker {
    Failed,
}

/// One line of `judgments.jsonl`: one judge call about one ordering of one pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgmentRecord {
    pub task: String,
    pub judge: String,
    /// The model shown as Answer 1.
    pub first: String,
    /// The model shown as Answer 2.
    pub second: String,
    /// `ab`: `first` is the pair's `model_a`; `ba`: swapped.
    pub order: crate::prompt::Order,
    pub verdict: JudgmentVerdict,
    /// The judge's last reply, verbatim (`null` when no reply came).
    pub raw: Option<String>,
    /// Calls made (2 when the first reply was unparsable).
    pub attempts: u32,
    /// Hash of the rendered template in `prompts/<sha256>.md`.
    pub prompt_sha256: String,
    /// Cache entry of the last call.
    pub cache_key: Option<String>,
    pub from_cache: bool,
    pub usage: Option<Usage>,
    pub cost_usd: Option<f64>,
    /// Why the verdict is `failed`.
    pub error: Option<RecordedError>,
    /// What the failed records this one replaced (`--retry-failed`) were billed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced: Option<Replaced>,
    /// What this invocation's calls cost (attempts served from the cache cost nothing now):
    /// for the progress bar, never written.
    #[serde(skip)]
    pub spent_usd: f64,
}

/// The `winner` field of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Winner {
    ModelA,
    ModelB,
    Tie,
    BothBad,
    Failed,
}

/// One line of `comparisons.jsonl`: the combined result of both orderings of one pair on one
/// task by one judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRecord {
    pub task: String,
    pub judge: String,
    pub model_a: String,
    pub model_b: String,
    pub winner: Winner,
    /// The two orderings disagreed (recorded as a tie).
    pub flipped: bool,
    /// Decided by a failed generation, without asking the judge.
    pub by_failure: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaced_failures_pass_on_billed_usage_and_cost() {
        let u = |i, o| Usage {
            input_tokens: i,
            output_tokens: o,
        };
        // Nothing known billed: nothing passed on.
        assert_eq!(Replaced::passed_on(None, None, None), None);
        let first = Replaced::passed_on(Some(u(10, 2)), Some(0.5), None);
        assert_eq!(
            first,
            Some(Replaced {
                usage: u(10, 2),
                cost_usd: Some(0.5)
            })
        );
        // A failure without usage keeps what it had replaced; a billed one adds to it.
        assert_eq!(Replaced::passed_on(None, None, first), first);
        let second = Replaced::passed_on(Some(u(1, 1)), Some(0.25), first).unwrap();
        assert_eq!(second.usage, u(11, 3));
        assert_eq!(second.cost_usd, Some(0.75));
        // Unpriced stays unknown.
        let unpriced = Replaced::passed_on(Some(u(1, 1)), None, first).unwrap();
        assert_eq!(unpriced.cost_usd, None);
        assert_eq!(total_cost(Some(1.0), Some(second)), Some(1.75));
        assert_eq!(total_cost(Some(1.0), Some(unpriced)), None);
        assert_eq!(total_cost(None, Some(second)), None);
        assert_eq!(total_cost(Some(1.0), None), Some(1.0));
    }

    #[test]
    fn judgment_verdicts_round_trip_and_a_bad_one_names_the_values() {
        use crate::verdict::Verdict;
        for v in [
            JudgmentVerdict::Parsed(Verdict::First),
            JudgmentVerdict::Parsed(Verdict::Second),
            JudgmentVerdict::Parsed(Verdict::Tie),
            JudgmentVerdict::Parsed(Verdict::BothBad),
            JudgmentVerdict::Failed(FailedMarker::Failed),
        ] {
            let text = serde_json::to_string(&v).expect("serialises");
            assert_eq!(
                serde_json::from_str::<JudgmentVerdict>(&text).expect("reads"),
                v
            );
        }
        let e = serde_json::from_str::<JudgmentVerdict>("\"maybe\"")
            .expect_err("unknown")
            .to_string();
        assert!(e.contains("unknown verdict `maybe` (expected"), "{e}");
        assert!(serde_json::from_str::<JudgmentVerdict>("1").is_err());
    }
}
