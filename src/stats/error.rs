//! The error type of the statistics core: invalid inputs and numerical failures, never I/O.

use thiserror::Error;

/// Everything that can go wrong in `stats`. Variants carry the offending values.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum StatsError {
    /// A model index is not below the number of models.
    #[error("model index {index} is out of range (there are {n_models} models)")]
    ModelOutOfRange {
        /// The offending index.
        index: usize,
        /// The number of models the counts were built for.
        n_models: usize,
    },
    /// A comparison pits a model against itself.
    #[error("model {index} is compared with itself (a comparison needs two different models)")]
    SelfComparison {
        /// The model index that appears on both sides.
        index: usize,
    },
    /// The Bradley–Terry prior must be finite and strictly positive.
    #[error("prior {prior} is invalid (expected a finite number greater than 0)")]
    InvalidPrior {
        /// The rejected prior.
        prior: f64,
    },
    /// A vector has the wrong length (a warm start, a full fit, a list of intervals, labels).
    #[error("{what} has length {found} (expected {expected})")]
    LengthMismatch {
        /// Which input was wrong.
        what: &'static str,
        /// The required length.
        expected: usize,
        /// The length that was passed.
        found: usize,
    },
    /// A value that must be finite (a win rate, an interval bound, a warm start) is not.
    #[error("{what} contains a non-finite value")]
    NonFinite {
        /// Which input was wrong.
        what: &'static str,
    },
    /// An interval whose lower bound exceeds its upper bound.
    #[error("interval {index} has lo > hi (an interval must satisfy lo <= hi)")]
    InvertedInterval {
        /// Position of the interval in the input.
        index: usize,
    },
    /// A bootstrap was asked for zero resamples.
    #[error("the bootstrap needs at least one resample (the product default is 1000)")]
    NoResamples,
    /// A pass count exceeds its total.
    #[error("{passed} passed out of {total} is impossible (passed must not exceed total)")]
    PassedExceedsTotal {
        /// The number of passes.
        passed: u64,
        /// The number of attempts.
        total: u64,
    },
    /// Newton's method did not reach the tolerance. The objective is strictly convex and
    /// smooth, but with a prior near 0 the common level of the strengths is pinned only by
    /// the prior, and the Hessian becomes numerically singular.
    #[error(
        "the Bradley-Terry fit did not converge after {iterations} iterations (with a very small --prior the ratings' common level is nearly unpinned; use a larger one, e.g. the default 0.1)"
    )]
    NotConverged {
        /// Iterations performed.
        iterations: usize,
    },
    /// A task label of the bootstrap's input does not fit in 32 bits.
    #[error("task label {0} is out of range (labels of the task bootstrap are below 2^32)")]
    TaskLabelOutOfRange(usize),
    /// A task bootstrap was asked of an input built without per-task cells.
    #[error("this input was aggregated without tasks, so it cannot be resampled by task")]
    NoTaskData,
}
