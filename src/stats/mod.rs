//! The statistics core (DESIGN.md §5): Bradley–Terry, bootstrap intervals, Elo, tied ranks,
//! Wilson intervals and Cohen's kappa. Plain f64 code: no I/O, no clock, no global RNG —
//! seeds and thread counts are passed in.

mod bootstrap;
mod bootstrap_input;
mod bradley_terry;
mod counts;
mod elo;
mod error;
mod fisher;
mod interval;
mod kappa;
mod linalg;
mod multinomial;
mod poisson;
mod ranks;
mod refit;
mod separation;
mod task_sums;
mod wilson;

#[cfg(test)]
mod test_support;

pub use bootstrap::{
    BootstrapResult, BootstrapUnit, DEFAULT_RESAMPLES, bootstrap, tasks_are_single_rows,
};
pub use bootstrap_input::{BootstrapInput, BootstrapInputBuilder};
pub use bradley_terry::{
    BtFit, DEFAULT_PRIOR, RATING_BASE, RATING_SCALE, fit_bradley_terry, rating_from_theta, sigmoid,
    win_rates,
};
pub use counts::{Outcome, PairCounts, PairTally};
pub use elo::{ELO_ESTABLISHED_MATCHES, ELO_K_ESTABLISHED, ELO_K_NEW, ELO_START, EloEntry, elo};
pub use error::StatsError;
pub use fisher::hypergeometric_upper_tail;
pub use interval::{
    Interval, IntervalTails, LOWER_QUANTILE, UPPER_QUANTILE, percentile_interval, quantile_sorted,
};
pub use kappa::{LabelCategory, agreement, cohen_kappa, kappa_bootstrap, kappa_cluster_bootstrap};
pub use ranks::{rank_groups, tied_ranks};
pub(crate) use separation::unlinked_groups;
pub use wilson::{WILSON_Z, wilson_interval};
