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
use super::linalg::{cholesky_factor, cholesky_solve, solve_factored};
use super::refit::{LaneRefit, Lanes, REFIT_LANES};

/// The default prior precision λ (`--prior`).
pub const DEFAULT_PRIOR: f64 = 0.1;
/// Rating of a model with θ = 0.
pub const RATING_BASE: f64 = 1000.0;
/// Rating points per unit of θ: 400/ln 10, so 400 points mean 10:1 odds (the Elo scale).
pub const RATING_SCALE: f64 = 400.0 / std::f64::consts::LN_10;

/// The full fit stops once a full Newton step moves no strength by more than this.
/// Convergence is quadratic, so the error after that last step is of order its square.
const FULL_FIT_STEP_TOL: f64 = 1e-9;
/// Below this step length (in θ) a Newton step that is not at most half the one before
/// means rounding, not the model, sets the step: in the quadratic regime each step is far
/// shorter than half the last. Reached when a direction's curvature is ~λ (an unbeaten model
/// under a prior near zero) beside curvatures of hundreds: the solve then carries ~1e-9 of
/// noise, and the fit is as exact as double precision makes it (1e-6 θ is 2e-4 rating
/// points).
const ROUNDING_FLOOR: f64 = 1e-6;
/// Newton steps with ‖Δ‖∞ ≤ this are taken whole without evaluating the objective: they
/// provably satisfy the Armijo condition (see [`Newton::solve`]).
const CERTIFIED_STEP: f64 = 0.5;
/// Armijo sufficient-decrease constant of the backtracking line search for longer steps.
const ARMIJO: f64 = 1e-4;
/// More iterations than this means something is badly wrong (Newton needs ~5–15 from 0).
const MAX_ITERATIONS: usize = 200;

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
/// because λ > 0) with Cholesky solves; steps longer than 0.5 in θ are backtracked (Armijo),
/// shorter ones provably decrease the objective (see `Newton::solve`). Iterated to full
/// double precision. `warm_start` (length `n_models`) is the starting θ; zeros otherwise.
/// A model without rated games gets θ = 0 from the prior; one model gives θ = `[0]`.
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
    let iterations =
        Newton::new(p).solve(&active.models, &data, prior, &mut theta, FULL_FIT_STEP_TOL)?;
    Ok(BtFit::from_theta(theta, iterations))
}

/// Rating of strength θ: `1000 + (400/ln 10)·θ`.
pub fn rating_from_theta(theta: f64) -> f64 {
    RATING_BASE + RATING_SCALE * theta
}

/// Expected win rate against the field: for model i, the mean over the other models j of
/// σ(θ_i − θ_j). With a single model there is no field and the rate is defined as 0.5.
/// Computed exactly as for every bootstrap resample (see `LaneRefit::win_rates`).
pub fn win_rates(theta: &[f64]) -> Vec<f64> {
    let mut refit = LaneRefit::new(theta.len());
    refit.set_theta_lane(0, theta);
    let mut out = vec![0.0; theta.len()];
    refit.win_rates(1, &mut out);
    out
}

/// Below this E_i + E_j, σ is computed from θ directly.
pub(super) const UNDERFLOW_GUARD: f64 = 1e-280;

/// e^(θ_i − max θ), so that σ(θ_i − θ_j) = E_i/(E_i + E_j) costs a division, not an
/// exponential, per pair.
struct Exponentials<'a> {
    e: &'a [f64],
}

impl<'a> Exponentials<'a> {
    fn new(theta: &[f64], buf: &'a mut Vec<f64>) -> Exponentials<'a> {
        let top = theta.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        buf.clear();
        buf.extend(theta.iter().map(|t| (t - top).exp()));
        Exponentials { e: buf }
    }

    /// `(σ(θ_i − θ_j), σ(θ_j − θ_i))`; falls back to the direct formula in the (never seen
    /// in practice) case where both exponentials underflow.
    fn sigmoid_pair(&self, theta: &[f64], i: usize, j: usize) -> (f64, f64) {
        guarded_sigmoid_pair(self.e[i], self.e[j], theta[i] - theta[j])
    }
}

/// `(σ(d), σ(−d))` for d = θ_i − θ_j from E_i = e^(θ_i − c) and E_j = e^(θ_j − c), any c:
/// E_i/(E_i + E_j) and E_j/(E_i + E_j), unless their sum is below [`UNDERFLOW_GUARD`]
/// (then from d directly).
pub(super) fn guarded_sigmoid_pair(ei: f64, ej: f64, d: f64) -> (f64, f64) {
    let sum = ei + ej;
    if sum > UNDERFLOW_GUARD {
        (ei / sum, ej / sum)
    } else {
        sigmoid_pair(d)
    }
}

/// The logistic function σ(d) = 1/(1 + e^(−d)).
pub fn sigmoid(d: f64) -> f64 {
    sigmoid_pair(d).0
}

/// `(σ(d), σ(−d))`, both computed without cancellation.
pub(super) fn sigmoid_pair(d: f64) -> (f64, f64) {
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
    expo: Vec<f64>,
    groups: Groups,
}

/// The connected groups of the comparison graph (models linked by pairs with games), to keep
/// the strengths of each group summing to zero. The likelihood does not change when a group's
/// strengths all move by one constant, so the prior alone fixes that level, at Σθ = 0 over the
/// group (the group's gradient sums to λ·Σθ): the optimum lies in that subspace, and Newton's
/// method stays in it exactly. Off it, with a prior of 1e-8 the step along the level is
/// rounding noise divided by λ, and never gets short enough to stop.
#[derive(Debug, Clone, Default)]
pub(crate) struct Groups {
    /// Group of each model.
    of: Vec<usize>,
    /// Per group: sum, then mean, of the vector being centred.
    sums: Vec<f64>,
    sizes: Vec<f64>,
}

impl Groups {
    /// The groups of `p` models linked by the `pairs` whose `n` is positive.
    pub(crate) fn find(&mut self, p: usize, pairs: &[(usize, usize)], n: &[f64]) {
        // Union–find with path halving.
        let mut parent: Vec<usize> = (0..p).collect();
        fn root(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                parent[x] = parent[parent[x]];
                x = parent[x];
            }
            x
        }
        for (&(i, j), &games) in pairs.iter().zip(n) {
            if games > 0.0 {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                if a != b {
                    parent[a.max(b)] = a.min(b);
                }
            }
        }
        let mut number = vec![usize::MAX; p];
        self.of.clear();
        let mut groups = 0;
        for i in 0..p {
            let r = root(&mut parent, i);
            if number[r] == usize::MAX {
                number[r] = groups;
                groups += 1;
            }
            self.of.push(number[r]);
        }
        self.sums.clear();
        self.sums.resize(groups, 0.0);
        self.sizes.clear();
        self.sizes.resize(groups, 0.0);
        for &g in &self.of {
            self.sizes[g] += 1.0;
        }
    }

    /// Subtracts from `x` its mean over each group.
    pub(crate) fn center(&mut self, x: &mut [f64]) {
        self.sums.fill(0.0);
        for (&g, &v) in self.of.iter().zip(x.iter()) {
            self.sums[g] += v;
        }
        for (sum, size) in self.sums.iter_mut().zip(&self.sizes) {
            *sum /= size;
        }
        for (&g, v) in self.of.iter().zip(x.iter_mut()) {
            *v -= self.sums[g];
        }
    }
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
            expo: Vec::with_capacity(p),
            groups: Groups::default(),
        }
    }

    /// Minimises the penalised negative log-likelihood f of `data` (over `pairs`) from
    /// `theta`, which receives the optimum; stops after a whole step with ‖Δ‖∞ < `step_tol`.
    /// Returns the number of Newton iterations.
    ///
    /// Step acceptance. Along the Newton step Δ let φ(t) = f(θ + tΔ); then φ'(0) = −D and
    /// φ''(0) = D with D = ΔᵀHΔ. Each pair's curvature n·σ'(d) satisfies
    /// |d/dd ln σ'(d)| = |1 − 2σ(d)| ≤ 1, and d moves by at most 2s·t with s = ‖Δ‖∞, so
    /// φ''(t) ≤ e^(2st)·D (the prior's curvature is constant). Integrating,
    /// φ(1) − φ(0) ≤ −D·(1 − K(s)) with K(s) = (e^(2s) − 1 − 2s)/(4s²), and K(0.5) = e − 2 < 0.72:
    /// a whole step with s ≤ 0.5 always decreases f by at least 0.28·D, which is the Armijo
    /// condition with constant 0.28. Longer steps use backtracking on the objective (Boyd &
    /// Vandenberghe, *Convex Optimization*, 2004, §9.5), which therefore ends after at most
    /// log2(2s) halvings. Either way f decreases and Newton converges quadratically.
    pub(crate) fn solve(
        &mut self,
        pairs: &[(usize, usize)],
        data: &PairData,
        prior: f64,
        theta: &mut [f64],
        step_tol: f64,
    ) -> Result<usize, StatsError> {
        debug_assert_eq!(theta.len(), self.p);
        // Every group's strengths sum to zero at the optimum (see [`Groups`]): start there and
        // keep every step there.
        self.groups.find(self.p, pairs, &data.n);
        self.groups.center(theta);
        let mut last_size = f64::INFINITY;
        for iteration in 1..=MAX_ITERATIONS {
            let expo = Exponentials::new(theta, &mut self.expo);
            gradient_hessian(
                pairs,
                data,
                prior,
                theta,
                &expo,
                &mut self.grad,
                &mut self.hess,
            );
            self.step
                .iter_mut()
                .zip(&self.grad)
                .for_each(|(s, g)| *s = -g);
            if !cholesky_solve(&mut self.hess, &mut self.step, self.p) {
                return Err(StatsError::NotConverged {
                    iterations: iteration,
                });
            }
            self.groups.center(&mut self.step);
            let size = self.step.iter().fold(0.0_f64, |m, s| m.max(s.abs()));
            if !size.is_finite() {
                return Err(StatsError::NotConverged {
                    iterations: iteration,
                });
            }
            if size <= CERTIFIED_STEP {
                theta.iter_mut().zip(&self.step).for_each(|(t, s)| *t += s);
                if size < step_tol || (size < ROUNDING_FLOOR && size > 0.5 * last_size) {
                    return Ok(iteration);
                }
                last_size = size;
            } else {
                self.backtrack(pairs, data, prior, theta, size);
            }
        }
        Err(StatsError::NotConverged {
            iterations: MAX_ITERATIONS,
        })
    }

    /// Halves the step until the Armijo condition holds or the step is short enough to be
    /// certified, then moves `theta` there.
    fn backtrack(
        &mut self,
        pairs: &[(usize, usize)],
        data: &PairData,
        prior: f64,
        theta: &mut [f64],
        size: f64,
    ) {
        let slope: f64 = self.step.iter().zip(&self.grad).map(|(s, g)| s * g).sum();
        let f0 = objective(pairs, data, prior, theta);
        let mut t = 1.0;
        while t * size > CERTIFIED_STEP {
            for ((x, &t0), s) in self.trial.iter_mut().zip(theta.iter()).zip(&self.step) {
                *x = t0 + t * s;
            }
            if objective(pairs, data, prior, &self.trial) <= f0 + ARMIJO * t * slope {
                break;
            }
            t *= 0.5;
        }
        theta
            .iter_mut()
            .zip(&self.step)
            .for_each(|(x, s)| *x += t * s);
    }
}

/// What refits of perturbed data (bootstrap resamples) reuse from the full-data optimum θ̂:
/// σ at θ̂ and the inverse of the full-data Hessian H(θ̂). A refit starts one Newton step
/// away, θ₀ = θ̂ − H(θ̂)⁻¹·g(θ̂) with g the gradient of the *resampled* objective (its error is
/// second order in the perturbation), and goes on with chord steps (see
/// [`super::refit::LaneRefit::refit`]).
#[derive(Debug, Clone)]
pub(crate) struct LinearisedStart {
    theta: Vec<f64>,
    /// σ(θ̂_i − θ̂_j) per pair.
    sigma: Vec<f64>,
    /// H(θ̂)⁻¹, the inverse of the full-data Hessian (row-major, symmetric). Formed once, so
    /// every step is a matrix–vector product of independent multiply-adds instead of two
    /// triangular solves, whose every entry waits for the one before.
    inverse: Vec<f64>,
    prior: f64,
}

impl LinearisedStart {
    /// Precomputes σ and H(θ̂)⁻¹ for the full data; `None` if the Hessian is not numerically
    /// positive definite (then start at θ̂ itself).
    pub(crate) fn new(
        pairs: &[(usize, usize)],
        full: &PairData,
        prior: f64,
        theta: &[f64],
    ) -> Option<LinearisedStart> {
        let p = theta.len();
        let mut buf = Vec::new();
        let expo = Exponentials::new(theta, &mut buf);
        let (mut grad, mut factor) = (vec![0.0; p], vec![0.0; p * p]);
        gradient_hessian(pairs, full, prior, theta, &expo, &mut grad, &mut factor);
        let sigma = pairs
            .iter()
            .map(|&(i, j)| expo.sigmoid_pair(theta, i, j).0)
            .collect();
        if !cholesky_factor(&mut factor, p) {
            return None;
        }
        // Column k of H⁻¹ solves H x = e_k; H⁻¹ is symmetric, so it is also row k.
        let mut inverse = vec![0.0; p * p];
        for (k, column) in inverse.chunks_exact_mut(p).enumerate() {
            column[k] = 1.0;
            solve_factored(&factor, column, p);
        }
        Some(LinearisedStart {
            theta: theta.to_vec(),
            sigma,
            inverse,
            prior,
        })
    }

    /// `out = H(θ̂)⁻¹·g` for every lane, summed as Σ_k g_k·(row k) so that the inner loop is
    /// an axpy over models and lanes.
    #[inline(always)]
    pub(super) fn apply_inverse_lanes(&self, g: &[Lanes], out: &mut [Lanes]) {
        let p = self.theta.len();
        out.fill([0.0; REFIT_LANES]);
        for (row, gk) in self.inverse.chunks_exact(p).zip(g) {
            for (o, &h) in out.iter_mut().zip(row) {
                for l in 0..REFIT_LANES {
                    o[l] += gk[l] * h;
                }
            }
        }
    }

    /// θ̂.
    pub(super) fn theta(&self) -> &[f64] {
        &self.theta
    }

    /// σ(θ̂_i − θ̂_j) per pair.
    pub(super) fn sigma(&self) -> &[f64] {
        &self.sigma
    }

    /// The prior λ.
    pub(super) fn prior(&self) -> f64 {
        self.prior
    }
}

/// Gradient and upper-triangle Hessian of the penalised negative log-likelihood at θ.
///
/// Per pair with d = θ_i − θ_j: NLL = n·softplus(d) − w·d, ∂/∂d = n·σ(d) − w,
/// ∂²/∂d² = n·σ(d)·σ(−d). Built from pair-level sums, never from rows.
fn gradient_hessian(
    pairs: &[(usize, usize)],
    data: &PairData,
    prior: f64,
    theta: &[f64],
    expo: &Exponentials<'_>,
    grad: &mut [f64],
    hess: &mut [f64],
) {
    let p = theta.len();
    hess.fill(0.0);
    for (i, &t) in theta.iter().enumerate() {
        grad[i] = prior * t;
        hess[i * p + i] = prior;
    }
    for ((&(i, j), &w), &n) in pairs.iter().zip(&data.w).zip(&data.n) {
        let (sig, sig_back) = expo.sigmoid_pair(theta, i, j);
        let r = n * sig - w;
        grad[i] += r;
        grad[j] -= r;
        let h = n * sig * sig_back;
        hess[i * p + i] += h;
        hess[j * p + j] += h;
        hess[i * p + j] -= h;
    }
}

/// The penalised negative log-likelihood Σ_pairs [n·softplus(d) − w·d] + (λ/2)·Σθ², with
/// softplus(d) = max(d, 0) + ln(1 + e^(−|d|)) (no overflow, no cancellation).
fn objective(pairs: &[(usize, usize)], data: &PairData, prior: f64, theta: &[f64]) -> f64 {
    let penalty: f64 = theta.iter().map(|t| 0.5 * prior * t * t).sum();
    let likelihood: f64 = pairs
        .iter()
        .zip(&data.w)
        .zip(&data.n)
        .map(|((&(i, j), &w), &n)| {
            let d = theta[i] - theta[j];
            n * (d.max(0.0) + (-d.abs()).exp().ln_1p()) - w * d
        })
        .sum();
    penalty + likelihood
}

#[cfg(test)]
#[path = "bradley_terry_tests.rs"]
mod tests;
