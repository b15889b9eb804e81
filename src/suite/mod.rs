//! A suite of tasks: `suites/<suite>/suite.toml`, `tasks/<id>/prompt.md` (+ optional
//! `check.py`) and optional hand-written answer sets `answers/<set>/<id>.md`. Parsing and
//! validation are pure (`parse`); reading the folder is `load`.

mod load;
mod parse;

use std::collections::BTreeMap;

pub use load::{load_suite, read_suite_files};
pub use parse::{SuiteError, parse_suite};

/// One task of a suite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    /// The folder name under `tasks/`.
    pub id: String,
    /// The contents of `prompt.md`.
    pub prompt: String,
    /// The contents of the optional hidden test `check.py`.
    pub check: Option<String>,
}

/// A validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    pub name: String,
    pub version: String,
    /// Suite-level context given to every model (and to the judge).
    pub context: String,
    /// What "better" means for this suite (the judge's only suite-owned input).
    pub criteria: String,
    /// Tasks sorted by id.
    pub tasks: Vec<Task>,
    /// Answer sets: set name → task id → answer text (a leading byte order mark removed).
    pub answers: BTreeMap<String, BTreeMap<String, String>>,
    /// Answer sets that cannot be replayed, and why (the first problem found: a file for a
    /// task the suite lacks, one not `<task>.md`, a folder, text that is not UTF-8). Only a
    /// command that replays such a set refuses it: a stray file in `answers/` must not stop
    /// the runs that never use it.
    pub answer_problems: BTreeMap<String, String>,
    /// SHA-256 (hex) over suite.toml and every task file: what every model is asked and
    /// how it is checked. Answer sets are not part of it: they are model outputs (copied
    /// into a run's outputs.jsonl), and a new one must not end the runs before it.
    pub hash: String,
    /// The hash as runs recorded it before answer sets were left out of it (over answers/
    /// too), which such runs still match.
    pub hash_with_answers: String,
    /// A short digest (the first 16 hex digits of its SHA-256) of each file [`Suite::hash`]
    /// covers, by path: recorded with a run so that a changed suite can name what changed.
    pub file_digests: BTreeMap<String, String>,
}

impl Suite {
    /// Whether `recorded` (a run manifest's suite hash) is this suite's, by either hash.
    pub fn is_recorded_as(&self, recorded: &str) -> bool {
        recorded == self.hash || recorded == self.hash_with_answers
    }

    /// What changed in this suite since a run recorded `recorded` (its [`Suite::file_digests`]),
    /// as `tasks/a/prompt.md changed, tasks/b/check.py added`, a few files at most; `None` when
    /// the run recorded none (runs made before they were recorded) or every file matches.
    pub fn changes_since(&self, recorded: &BTreeMap<String, String>) -> Option<String> {
        const SHOWN: usize = 3;
        if recorded.is_empty() {
            return None;
        }
        let now = &self.file_digests;
        let mut changes: Vec<String> = Vec::new();
        for (path, digest) in now {
            match recorded.get(path) {
                Some(old) if old == digest => {}
                Some(_) => changes.push(format!("{path} changed")),
                None => changes.push(format!("{path} added")),
            }
        }
        changes.extend(
            recorded
                .keys()
                .filter(|p| !now.contains_key(*p))
                .map(|p| format!("{p} removed")),
        );
        if changes.is_empty() {
            return None;
        }
        let more = changes.len().saturating_sub(SHOWN);
        changes.truncate(SHOWN);
        if more > 0 {
            changes.push(format!("and {more} more"));
        }
        Some(changes.join(", "))
    }

    /// The task with this id.
    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks
            .binary_search_by(|t| t.id.as_str().cmp(id))
            .ok()
            .map(|i| &self.tasks[i])
    }
}
