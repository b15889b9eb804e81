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

impl OutputRecord {
    /// The (task, model) identity of the record.
    pub fn key(&self) -> (&str, &str) {
        (&self.task, &self.model)
    }
}
