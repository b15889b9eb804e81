//! The seeded percentile bootstrap of Bradley–Terry ratings and win rates, over threads.
//!
//! Efron & Tibshirani (1993), *An Introduction to the Bootstrap*, ch. 13 (percentile
//! intervals); the task unit is the cluster bootstrap (Davison & Hinkley 1997, §3.8).
//! Each resample draws aggregated cell counts (see [`super::bootstrap_input`]) and refits
//! with chord steps (Newton's method as the fallback), started one linearised Newton step
//! away from the full-data strengths, four resamples side by side (see
//! [`super::refit`]). Resample `r` draws from its
//! own generator (`resample_rng(seed, r)`: xoshiro256++ seeded from ChaCha8 stream `r`), so
//! the result is the same for every thread count and batch layout. Memory is
//! O(cells + models × resamples/20), independent of the number of rows: of each model's
//! resampled values only the two 2.5% tails are kept ([`IntervalTails`]; while they are at
//! most [`OWN_TAILS_BYTES`], each thread keeps its own copy).

use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::StatsError;
use super::bootstrap_input::{BootstrapInput, Scratch};
use super::bradley_terry::{
    BtFit, LinearisedStart, Newton, check_prior, checked_start, rating_from_theta,
};
use super::counts::PairData;
use super::interval::{Interval, IntervalTails};
use super::refit::{LaneData, LaneRefit, REFIT_LANES};
use super::task_sums::LANES;

/// The default number of resamples (`--resamples`).
pub const DEFAULT_RESAMPLES: usize = 1000;

/// Resample fits stop after a whole Newton step shorter than this (in θ); by quadratic
/// convergence the remaining error is of order its square (~1e-8 θ, ~1e-6 rating points),
/// far below the resampling noise the intervals describe (checked by a test).
const RESAMPLE_STEP_TOL: f64 = 1e-4;
/// Estimated distance to the converged θ at which the chord refinement of a resample stops
/// (see `LaneRefit::refit`): 1e-4 θ is 0.017 rating points. The estimate can fall a few
/// times short (the largest error seen is 2.6e-4 θ); tests hold every refit within 5e-4 θ of
/// the converged one and below 1% of the spread of the resampled strengths, whereas the Monte
/// Carlo error of a 2.5% bound at 1000 resamples is about 8% of that spread. From 1e-5 to
/// 1e-4 the refits take about 30% fewer iterations.
pub(crate) const CHORD_TOL: f64 = 1e-4;

/// What a bootstrap resample draws with replacement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BootstrapUnit {
    /// Rated comparison rows (both-bad rows are counted, never drawn).
    #[default]
    Comparison,
    /// Tasks, each bringing all its comparisons (cluster bootstrap).
    Task,
}

/// 95% percentile intervals per model, in model-index order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BootstrapResult {
    /// Interval of the strength θ.
    pub theta: Vec<Interval>,
    /// Interval of the rating (the θ interval mapped through the rating scale).
    pub rating: Vec<Interval>,
    /// Interval of the expected win rate against the field.
    pub win_rate: Vec<Interval>,
    /// Resamples drawn.
    pub resamples: usize,
    /// The resampling unit.
    pub unit: BootstrapUnit,
    /// The seed.
    pub seed: u64,
}

/// Runs `resamples` bootstrap resamples of `input` by `unit` on `threads` threads (0 counts
/// as 1; pass `std::thread::available_parallelism()`), refitting Bradley–Terry with `prior`
/// warm-started at `full_fit.theta`, and returns 95% percentile intervals (2.5% and 97.5%
/// quantiles by linear interpolation, numpy's default).
pub fn bootstrap(
    input: &BootstrapInput,
    unit: BootstrapUnit,
    prior: f64,
    resamples: usize,
    seed: u64,
    threads: usize,
    full_fit: &BtFit,
) -> Result<BootstrapResult, StatsError> {
    check_prior(prior)?;
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    if unit == BootstrapUnit::Task && !input.has_tasks() {
        return Err(StatsError::NoTaskData);
    }
    let reported = unit;
    // Every task one row: picking T of the T tasks is picking T of the T rows, the comparison
    // bootstrap's multinomial over the cells (one draw per cell, not one per task).
    let unit = if unit == BootstrapUnit::Task && tasks_are_single_rows(input) {
        BootstrapUnit::Comparison
    } else {
        unit
    };
    let p = input.n_models();
    let start = checked_start(&full_fit.theta, p)?;
    let mut tails = Tails::new(p, resamples);
    if p > 0 {
        let pairs = &input.active.models;
        let full = PairData::from_counts(input.counts(), &input.active);
        let job = Job {
            input,
            unit,
            prior,
            seed,
            start: &start,
            linearised: LinearisedStart::new(pairs, &full, prior, &start),
        };
        if unit == BootstrapUnit::Comparison {
            // Before the threads start, so that none waits on another building it.
            input.prepare_comparisons();
        }
        run_parallel(
            &job,
            threads.clamp(1, resamples.div_ceil(CHUNK)),
            resamples,
            &mut tails,
        )?;
    }
    let intervals = |columns: &[IntervalTails]| -> Vec<Interval> {
        columns
            .iter()
            .map(|c| c.interval().expect("every resample was tallied"))
            .collect()
    };
    let (theta_ci, win_ci) = (intervals(&tails.theta), intervals(&tails.win));
    Ok(BootstrapResult {
        rating: theta_ci
            .iter()
            .map(|ci| Interval {
                lo: rating_from_theta(ci.lo),
                hi: rating_from_theta(ci.hi),
            })
            .collect(),
        win_rate: win_ci,
        theta: theta_ci,
        resamples,
        unit: reported,
        seed,
    })
}

/// Whether every task holds exactly one rated row: then resampling tasks is
/// resampling rows (Chatbot Arena's battle files give every battle its own `question_id`).
pub fn tasks_are_single_rows(input: &BootstrapInput) -> bool {
    input.has_tasks() && input.n_tasks() as u64 == input.rows()
}

/// What every worker needs.
struct Job<'a> {
    input: &'a BootstrapInput,
    unit: BootstrapUnit,
    prior: f64,
    seed: u64,
    start: &'a [f64],
    linearised: Option<LinearisedStart>,
}

/// Resamples handed to a thread at a time (a multiple of [`LANES`]).
const CHUNK: usize = 2 * LANES;

/// The tails of every model's resampled θ and win rate (see [`IntervalTails`]): all the
/// intervals need, about 5% of the resamples.
struct Tails {
    theta: Vec<IntervalTails>,
    win: Vec<IntervalTails>,
}

impl Tails {
    /// The bytes the tails of `resamples` resamples of `p` models hold at most.
    fn bytes(p: usize, resamples: usize) -> usize {
        2 * p * IntervalTails::held(resamples) * std::mem::size_of::<i64>()
    }

    /// Tails of `resamples` resamples of `p` models.
    fn new(p: usize, resamples: usize) -> Tails {
        // Each made anew: a clone would not keep the room `new` gives the tails.
        let tails = || (0..p).map(|_| IntervalTails::new(resamples)).collect();
        Tails {
            theta: tails(),
            win: tails(),
        }
    }

    /// Takes what another part of the resamples gave (see [`IntervalTails::merge`]).
    fn merge(&mut self, other: &Tails) {
        for (mine, theirs) in self.theta.iter_mut().zip(&other.theta) {
            mine.merge(theirs);
        }
        for (mine, theirs) in self.win.iter_mut().zip(&other.win) {
            mine.merge(theirs);
        }
    }

    /// Takes the row-major `rows × p` results of some resamples.
    fn push(&mut self, theta: &[f64], win: &[f64]) {
        let p = self.theta.len();
        for (row, win_row) in theta.chunks_exact(p).zip(win.chunks_exact(p)) {
            for ((tails, &x), (win_tails, &w)) in self
                .theta
                .iter_mut()
                .zip(row)
                .zip(self.win.iter_mut().zip(win_row))
            {
                tails.push(x);
                win_tails.push(w);
            }
        }
    }
}

/// Hands out chunks of [`CHUNK`] resamples to `threads` threads (the caller's included) as
/// they become free, so that a slower core takes fewer. Small tails (at most
/// [`OWN_TAILS_BYTES`] each) are kept by every thread for what it ran and merged into
/// `tails` at the end, with no lock per chunk; larger ones are shared under a lock, so that
/// their memory does not grow with the number of threads. The tails keep order statistics,
/// which do not depend on the order in which resamples arrive, so the result does not
/// depend on who ran what.
fn run_parallel(
    job: &Job<'_>,
    threads: usize,
    resamples: usize,
    tails: &mut Tails,
) -> Result<(), StatsError> {
    let p = job.start.len();
    let own_tails = Tails::bytes(p, resamples) <= own_tails_bytes();
    let chunks = Mutex::new((0..resamples).step_by(CHUNK));
    let shared = Mutex::new(tails);
    // `spawned`: a thread of its own, which keeps its own tails when they are small.
    let work = |spawned: bool| -> Result<Option<Tails>, StatsError> {
        let mut worker = Worker::new(job);
        let mut own = (spawned && own_tails).then(|| Tails::new(p, resamples));
        let (mut theta, mut win) = (vec![0.0; CHUNK * p], vec![0.0; CHUNK * p]);
        loop {
            let next = chunks.lock().expect("a bootstrap worker panicked").next();
            let Some(first) = next else {
                return Ok(own);
            };
            let rows = (resamples - first).min(CHUNK) * p;
            worker.run(first, &mut theta[..rows], &mut win[..rows])?;
            match own.as_mut() {
                Some(own) => own.push(&theta[..rows], &win[..rows]),
                None => shared
                    .lock()
                    .expect("a bootstrap worker panicked")
                    .push(&theta[..rows], &win[..rows]),
            }
        }
    };
    std::thread::scope(|scope| {
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(|| work(true))).collect();
        let mut result = work(false).map(drop);
        for handle in handles {
            match handle.join().expect("a bootstrap worker panicked") {
                Ok(Some(theirs)) => shared
                    .lock()
                    .expect("a bootstrap worker panicked")
                    .merge(&theirs),
                Ok(None) => {}
                Err(e) => result = result.and(Err(e)),
            }
        }
        result
    })
}

/// The largest tails a thread keeps for itself (see [`run_parallel`]): 1 MiB, the tails of
/// about 13,000 resamples of 100 models.
const OWN_TAILS_BYTES: usize = 1 << 20;

/// [`OWN_TAILS_BYTES`], or in tests what this thread set in [`OWN_TAILS_LIMIT`].
fn own_tails_bytes() -> usize {
    #[cfg(test)]
    if let Some(limit) = OWN_TAILS_LIMIT.with(std::cell::Cell::get) {
        return limit;
    }
    OWN_TAILS_BYTES
}

#[cfg(test)]
thread_local! {
    /// Replaces [`OWN_TAILS_BYTES`] for the bootstraps this thread starts.
    static OWN_TAILS_LIMIT: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// One thread's buffers.
struct Worker<'a> {
    job: &'a Job<'a>,
    /// The resamples drawn together, [`REFIT_LANES`] per group: [`LANES`] for the task unit
    /// (they share a pass over the task cells), one group for the comparison unit.
    batch: Vec<LaneData>,
    refit: LaneRefit,
    newton: Newton,
    single: PairData,
    scratch: Scratch,
}

impl<'a> Worker<'a> {
    fn new(job: &'a Job<'a>) -> Worker<'a> {
        let p = job.start.len();
        let width = match job.unit {
            BootstrapUnit::Comparison => REFIT_LANES,
            BootstrapUnit::Task => LANES,
        };
        let pairs = job.input.active.models.len();
        Worker {
            job,
            batch: vec![LaneData::new(pairs); width.div_ceil(REFIT_LANES)],
            refit: LaneRefit::new(p),
            newton: Newton::new(p),
            single: PairData::default(),
            scratch: Scratch::default(),
        }
    }

    /// Resamples `first..first + theta.len()/p` into the given output rows.
    fn run(&mut self, first: usize, theta: &mut [f64], win: &mut [f64]) -> Result<(), StatsError> {
        let p = self.job.start.len();
        let width = self.batch.len() * REFIT_LANES;
        let rows = theta.chunks_mut(p * width).zip(win.chunks_mut(p * width));
        for (b, (theta_rows, win_rows)) in rows.enumerate() {
            let count = theta_rows.len() / p;
            let start = first + b * width;
            let job = self.job;
            job.input.resample_batch(
                job.unit,
                job.seed,
                start,
                count,
                &mut self.batch,
                &mut self.scratch,
            );
            let groups = theta_rows
                .chunks_mut(p * REFIT_LANES)
                .zip(win_rows.chunks_mut(p * REFIT_LANES));
            for (g, (theta_group, win_group)) in groups.enumerate() {
                self.fit_group(g, theta_group, win_group)?;
            }
        }
        Ok(())
    }

    /// Refits the resamples drawn into `self.batch[g]` (as many as `theta.len()/p`) and
    /// writes their θ and win rates.
    fn fit_group(
        &mut self,
        g: usize,
        theta: &mut [f64],
        win: &mut [f64],
    ) -> Result<(), StatsError> {
        let job = self.job;
        let p = job.start.len();
        let count = theta.len() / p;
        let pairs = &job.input.active.models;
        let data = &self.batch[g];
        let converged = match &job.linearised {
            Some(linearised) => self.refit.refit(linearised, pairs, data, count, CHORD_TOL),
            None => {
                for lane in 0..count {
                    self.refit.set_theta_lane(lane, job.start);
                }
                [false; REFIT_LANES]
            }
        };
        for (lane, th) in theta.chunks_mut(p).enumerate() {
            self.refit.theta_lane(lane, th);
            if !converged[lane] {
                // The chord method gave up: Newton's method from where it stopped.
                data.lane_into(lane, &mut self.single);
                self.newton
                    .solve(pairs, &self.single, job.prior, th, RESAMPLE_STEP_TOL)?;
                self.refit.set_theta_lane(lane, th);
            }
        }
        self.refit.win_rates(count, win);
        Ok(())
    }
}

#[cfg(test)]
#[path = "bootstrap_tests.rs"]
mod tests;
