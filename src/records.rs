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
}

/// An output record without its text and call details: what a leaderboard needs of it
/// (read from `outputs.jsonl` by `rank`, whose memory then does not grow with the answers).
#[derive(Debug, Clone, Deserialize)]
pub struct OutputBrief {
    pub task: String,
    pub model: String,
    pub status: Status,
    pub cost_usd: Option<f64>,
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
