//! Test-only helpers: reading the reference fixtures and mapping their rows to indices.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::counts::Outcome;

/// Parses `tests/fixtures/stats/<name>` (copied from shared/data/stats).
pub(crate) fn read_fixture<T: DeserializeOwned>(name: &str) -> T {
    let path = format!("{}/tests/fixtures/stats/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {path}: {e}"))
}

/// One comparison row of a fixture.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Row {
    pub(crate) model_a: String,
    pub(crate) model_b: String,
    pub(crate) winner: String,
    #[serde(default)]
    pub(crate) question_id: Option<String>,
}

/// The fixture spelling of an outcome (Chatbot Arena convention).
pub(crate) fn outcome(winner: &str) -> Outcome {
    match winner {
        "model_a" => Outcome::AWins,
        "model_b" => Outcome::BWins,
        "tie" => Outcome::Tie,
        "tie (bothbad)" => Outcome::BothBad,
        other => panic!("unknown winner {other:?}"),
    }
}

/// Model names ↔ indices (index = position in the given list).
pub(crate) struct ModelNames {
    index: BTreeMap<String, usize>,
}

impl ModelNames {
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a String>) -> ModelNames {
        let index = names
            .into_iter()
            .enumerate()
            .map(|(i, n)| (n.clone(), i))
            .collect();
        ModelNames { index }
    }

    pub(crate) fn from_keys<'a>(keys: impl IntoIterator<Item = &'a String>) -> ModelNames {
        ModelNames::new(keys)
    }

    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    pub(crate) fn index(&self, name: &str) -> usize {
        self.index[name]
    }

    pub(crate) fn row(&self, row: &Row) -> (usize, usize, Outcome) {
        (
            self.index(&row.model_a),
            self.index(&row.model_b),
            outcome(&row.winner),
        )
    }
}

/// A deterministic xorshift64 stream for tests: each call gives a number below its argument
/// (with a slight modulo bias, irrelevant to tests).
pub(crate) fn small_numbers(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut state = seed | 1;
    move |below| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % below
    }
}

/// A deterministic synthetic data set: every pair of `n_models` meets in turn over `rows`
/// rows on `tasks` tasks, strengths spread evenly over [−1, 1], about 15% ties and 5% both
/// bad. Outcomes come from a fixed arithmetic sequence, not an RNG, so tests can rely on it.
pub(crate) fn synthetic_rows(
    n_models: usize,
    rows: usize,
    tasks: usize,
) -> Vec<(usize, usize, Outcome, usize)> {
    let strength = |i: usize| 2.0 * i as f64 / (n_models - 1).max(1) as f64 - 1.0;
    let pairs: Vec<(usize, usize)> = (0..n_models)
        .flat_map(|i| (i + 1..n_models).map(move |j| (i, j)))
        .collect();
    (0..rows)
        .map(|r| {
            let (i, j) = pairs[r % pairs.len()];
            // A low-discrepancy uniform (golden-ratio sequence) drives the outcome.
            let u = (r as f64 * 0.618_033_988_749_895).fract();
            let p_i = 1.0 / (1.0 + (strength(j) - strength(i)).exp());
            let outcome = if u < 0.05 {
                Outcome::BothBad
            } else if u < 0.20 {
                Outcome::Tie
            } else if (u - 0.20) / 0.80 < p_i {
                Outcome::AWins
            } else {
                Outcome::BWins
            };
            let (a, b, outcome) = if r % 2 == 0 {
                (i, j, outcome)
            } else {
                (j, i, outcome.swapped())
            };
            (a, b, outcome, r % tasks)
        })
        .collect()
}
