//! The penalised Bradley–Terry fit (Newton's method), ratings and expected win rates; no I/O.
//!
//! Model (DESIGN.md §5; Bradley & Terry 1952, "Rank analysis of incomplete block designs",
//! Biometrika 39): P(i beats j) = σ(θ_i − θ_j). We maximise
//! Σ_k [s_k·log σ(θ_a−θ_b) + (1−s_k)·log σ(θ_b−θ_a)] − (λ/2)·Σ_i θ_i², with s = 1 for a win,
//! 0.5 for a tie, 0 for a loss; both-bad rows are excluded. The penalty is a Gaussian prior
//! that keeps the optimum finite and makes the objective strictly concave; summing the
//! stationarity conditions gives λ·Σθ_i = 0, so the mean strength is 0 at the optimum.

use super::StatsError;
use super::counts::{ActivePairs, PairCounts, PairData};
use super::linalg::cholesky_solve;

/// The default prior precision λ (`--prior`).
pub const DEFAULT_PRIOR: f64 = 0.1;
/// Rating of a model with θ = 0.
pub const RATING_BASE: f64 = 1000.0;
/// Rating points per unit of θ: 400/ln 10, so 400 points mean 10:1 odds (the Elo scale).
pub const RATING_SCALE: f64 = 400.0 / std::f64::consts::LN_10;

/// Newton stops once a full step moves no strength by more than this. Convergence is
/// quadratic, so the error after that last step is of order this value squared.
const STEP_TOL: f64 = 1e-9;
/// Steps this small are accepted without the sufficient-decrease test, whose objective
/// difference would be dominated by rounding.
const TINY_STEP: f64 = 1e-7;
/// Armijo sufficient-decrease constant of the backtracking line search.
const ARMIJO: f64 = 1e-4;
/// More iterations than this means something is badly wrong (Newton needs ~5–15 from 0).
const MAX_ITERATIONS: usize = 200;
/// Halvings before the line search gives up on decreasing the objective.
const MAX_HALVINGS: usize = 60;

/// A fitted Bradley–Terry model.
#[derive(Debug, Clone, PartialEq)]
pub struct BtFit {
    /// Strengths θ_i (natural-log odds scale), summing to 0.
    pub theta: Vec<f64>,
    /// Ratings `RATING_BASE + RATING_SCALE·θ_i`.
    pub rating: Vec<f64>,
    /// Expected win rate of each model against the field, see [`win_rates`].
    pub win_rate: Vec<f64>,
    /// Newton iterations used.
    pub iterations: usize,
}

impl BtFit {
    /// Derives ratings and win rates from strengths.
    pub fn from_theta(theta: Vec<f64>, iterations: usize) -> BtFit {
        BtFit {
            rating: theta.iter().map(|&t| rating_from_theta(t)).collect(),
            win_rate: win_rates(&theta),
            theta,
            iterations,
        }
    }
}

/// Fits the penalised Bradley–Terry model to `counts` with prior precision `prior` (λ > 0).
///
/// Newton's method on the penalised negative log-likelihood (its Hessian is positive definite
/// because λ > 0) with Cholesky solves and a backtracking Armijo line search, iterated to full
/// double precision. `warm_start` (length `n_models`) is the starting θ; zeros otherwise.
/// A model without rated games gets θ = 0 from the prior; one model gives θ = [0].
pub fn fit_bradley_terry(
    counts: &PairCounts,
    prior: f64,
    warm_start: Option<&[f64]>,
) -> Result<BtFit, StatsError> {
    check_prior(prior)?;
    let p = counts.n_models();
    let mut theta = match warm_start {
        Some(start) => checked_start(start, p)?,
        None => vec![0.0; p],
    };
    let active = ActivePairs::from_counts(counts);
    let data = PairData::from_counts(counts, &active);
    let iterations = Newton::new(p).solve(&active.models, &data, prior, &mut theta)?;
    Ok(BtFit::from_theta(theta, iterations))
}

/// Rating of strength θ: `1000 + (400/ln 10)·θ`.
pub fn rating_from_theta(theta: f64) -> f64 {
    RATING_BASE + RATING_SCALE * theta
}

/// Expected win rate against the field: for model i, the mean over the other models j of
/// σ(θ_i − θ_j). With a single model there is no field and the rate is defined as 0.5.
pub fn win_rates(theta: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; theta.len()];
    win_rates_into(theta, &mut out);
    out
}

/// [`win_rates`] into a caller-provided buffer (one exponential per pair).
pub(crate) fn win_rates_into(theta: &[f64], out: &mut [f64]) {
    let p = theta.len();
    out.fill(0.0);
    if p < 2 {
        out.fill(0.5);
        return;
    }
    for i in 0..p {
        for j in i + 1..p {
            let (fwd, back) = sigmoid_pair(theta[i] - theta[j]);
            out[i] += fwd;
            out[j] += back;
        }
    }
    let field = (p - 1) as f64;
    out.iter_mut().for_each(|x| *x /= field);
}

/// The logistic function σ(d) = 1/(1 + e^(−d)).
pub fn sigmoid(d: f64) -> f64 {
    sigmoid_pair(d).0
}

/// `(σ(d), σ(−d))`, both computed without cancellation.
fn sigmoid_pair(d: f64) -> (f64, f64) {
    let e = (-d.abs()).exp();
    let (big, small) = (1.0 / (1.0 + e), e / (1.0 + e));
    if d >= 0.0 { (big, small) } else { (small, big) }
}

/// Rejects a prior that is not finite and positive.
pub(crate) fn check_prior(prior: f64) -> Result<(), StatsError> {
    if prior.is_finite() && prior > 0.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidPrior { prior })
    }
}

/// Copies a warm start after checking its length and values.
pub(crate) fn checked_start(start: &[f64], p: usize) -> Result<Vec<f64>, StatsError> {
    if start.len() != p {
        return Err(StatsError::LengthMismatch {
            what: "warm start",
            expected: p,
            found: start.len(),
        });
    }
    if start.iter().any(|t| !t.is_finite()) {
        return Err(StatsError::NonFinite { what: "warm start" });
    }
    Ok(start.to_vec())
}

/// Reusable buffers for Newton's method on `p` models (one per bootstrap thread).
#[derive(Debug, Clone)]
pub(crate) struct Newton {
    p: usize,
    grad: Vec<f64>,
    hess: Vec<f64>,
    step: Vec<f64>,
    trial: Vec<f64>,
}

impl Newton {
    /// Buffers for `p` models.
    pub(crate) fn new(p: usize) -> Newton {
        Newton {
            p,
            grad: vec![0.0; p],
            hess: vec![0.0; p * p],
            step: vec![0.0; p],
            trial: vec![0.0; p],
        }
    }

    /// Minimises the penalised negative log-likelihood of `data` (over `pairs`) starting at
    /// `theta`, which receives the optimum. Returns the number of Newton iterations.
    pub(crate) fn solve(
        &mut self,
        pairs: &[(usize, usize)],
        data: &PairData,
        prior: f64,
        theta: &mut [f64],
    ) -> Result<usize, StatsError> {
        debug_assert_eq!(theta.len(), self.p);
        let mut f = evaluate(pairs, data, prior, theta, &mut self.grad, &mut self.hess);
        for iteration in 1..=MAX_ITERATIONS {
            self.step
                .iter_mut()
                .zip(&self.grad)
                .for_each(|(s, g)| *s = -g);
            if !cholesky_solve(&mut self.hess, &mut self.step, self.p) {
                return Err(StatsError::NotConverged {
                    iterations: iteration,
                });
            }
            let slope: f64 = self.step.iter().zip(&self.grad).map(|(s, g)| s * g).sum();
            let step_max = self.step.iter().fold(0.0_f64, |m, s| m.max(s.abs()));
            let (t, f_new) = self.line_search(pairs, data, prior, theta, f, slope, step_max);
            theta.copy_from_slice(&self.trial);
            f = f_new;
            if t == 1.0 && step_max < STEP_TOL {
                return Ok(iteration);
            }
        }
        Err(StatsError::NotConverged {
            iterations: MAX_ITERATIONS,
        })
    }

    /// Backtracking along `self.step` until the Armijo condition holds. Leaves the accepted
    /// point in `self.trial` with its gradient and Hessian in the buffers; returns the step
    /// length and objective there.
    #[expect(clippy::too_many_arguments, reason = "internal helper of one loop")]
    fn line_search(
        &mut self,
        pairs: &[(usize, usize)],
        data: &PairData,
        prior: f64,
        theta: &[f64],
        f: f64,
        slope: f64,
        step_max: f64,
    ) -> (f64, f64) {
        let mut t = 1.0;
        for _ in 0..MAX_HALVINGS {
            for ((x, &t0), s) in self.trial.iter_mut().zip(theta).zip(&self.step) {
                *x = t0 + t * s;
            }
            let f_new = evaluate(
                pairs,
                data,
                prior,
                &self.trial,
                &mut self.grad,
                &mut self.hess,
            );
            if f_new <= f + ARMIJO * t * slope || t * step_max < TINY_STEP {
                return (t, f_new);
            }
            t *= 0.5;
        }
        // No decrease is possible in floating point: we are at the optimum already.
        self.trial.copy_from_slice(theta);
        let f_here = evaluate(pairs, data, prior, theta, &mut self.grad, &mut self.hess);
        (0.0, f_here)
    }
}

/// Objective (penalised negative log-likelihood), gradient and lower-triangle Hessian at θ.
///
/// Per pair with d = θ_i − θ_j: NLL = n·softplus(d) − w·d, ∂/∂d = n·σ(d) − w,
/// ∂²/∂d² = n·σ(d)·σ(−d). Built from pair-level sums, never from rows.
fn evaluate(
    pairs: &[(usize, usize)],
    data: &PairData,
    prior: f64,
    theta: &[f64],
    grad: &mut [f64],
    hess: &mut [f64],
) -> f64 {
    let p = theta.len();
    hess.fill(0.0);
    let mut f = 0.0;
    for (i, &t) in theta.iter().enumerate() {
        f += 0.5 * prior * t * t;
        grad[i] = prior * t;
        hess[i * p + i] = prior;
    }
    for ((&(i, j), &w), &n) in pairs.iter().zip(&data.w).zip(&data.n) {
        if n == 0.0 {
            continue;
        }
        let d = theta[i] - theta[j];
        let e = (-d.abs()).exp();
        let inv = 1.0 / (1.0 + e);
        let sig = if d >= 0.0 { inv } else { e * inv };
        f += n * (d.max(0.0) + e.ln_1p()) - w * d;
        let r = n * sig - w;
        grad[i] += r;
        grad[j] -= r;
        let h = n * e * inv * inv;
        hess[i * p + i] += h;
        hess[j * p + j] += h;
        hess[j * p + i] -= h;
    }
    f
}

#[cfg(test)]
#[path = "bradley_terry_tests.rs"]
mod tests;
