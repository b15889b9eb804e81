//! Bradley–Terry refits of [`REFIT_LANES`] bootstrap resamples side by side.
//!
//! The chord method on the full-data Hessian inverse of [`LinearisedStart`] on several
//! resamples at once: every per-pair and per-model quantity is a small array with one entry
//! per resample (a lane), so one pass over the pairs and one over the Hessian inverse serve
//! every lane, and the divisions σ = E_i/(E_i + E_j) run two to a vector instruction. Lanes
//! never mix: each does exactly the arithmetic of its own refit, and a lane that has stopped
//! is frozen, so a resample's result does not depend on which resamples share its batch
//! (nor, therefore, on the number of threads).

use super::bradley_terry::{LinearisedStart, UNDERFLOW_GUARD, guarded_sigmoid_pair, sigmoid_pair};
use super::counts::PairData;

/// Resamples refitted together.
pub(crate) const REFIT_LANES: usize = 4;

/// One value per lane.
pub(crate) type Lanes = [f64; REFIT_LANES];

/// Steps of the chord method before giving up on it.
const CHORD_ITERATIONS: usize = 30;

/// Resampled per-pair sufficient statistics of one batch: lane l of `w[k]` and `n[k]`
/// belongs to the batch's resample l (see [`PairData`]).
#[derive(Debug, Clone)]
pub(crate) struct LaneData {
    pub(crate) w: Vec<Lanes>,
    pub(crate) n: Vec<Lanes>,
}

impl LaneData {
    /// Zeros for `pairs` pairs.
    pub(crate) fn new(pairs: usize) -> LaneData {
        LaneData {
            w: vec![[0.0; REFIT_LANES]; pairs],
            n: vec![[0.0; REFIT_LANES]; pairs],
        }
    }

    /// Lane `lane` as [`PairData`] (into `out`, reusing its buffers).
    pub(crate) fn lane_into(&self, lane: usize, out: &mut PairData) {
        out.w.clear();
        out.w.extend(self.w.iter().map(|x| x[lane]));
        out.n.clear();
        out.n.extend(self.n.iter().map(|x| x[lane]));
    }
}

/// Buffers for refitting a batch of `p` models.
#[derive(Debug, Clone)]
pub(crate) struct LaneRefit {
    theta: Vec<Lanes>,
    /// E_i = e^(θ_i − max θ) per lane.
    e: Vec<Lanes>,
    grad: Vec<Lanes>,
    step: Vec<Lanes>,
}

impl LaneRefit {
    /// Buffers for `p` models.
    pub(crate) fn new(p: usize) -> LaneRefit {
        let zeros = vec![[0.0; REFIT_LANES]; p];
        LaneRefit {
            theta: zeros.clone(),
            e: zeros.clone(),
            grad: zeros.clone(),
            step: zeros,
        }
    }

    /// Lane `lane` of θ.
    pub(crate) fn theta_lane(&self, lane: usize, out: &mut [f64]) {
        for (o, t) in out.iter_mut().zip(&self.theta) {
            *o = t[lane];
        }
    }

    /// Sets lane `lane` of θ.
    pub(crate) fn set_theta_lane(&mut self, lane: usize, theta: &[f64]) {
        for (t, &x) in self.theta.iter_mut().zip(theta) {
            t[lane] = x;
        }
    }

    /// Refits the first `count` lanes of `data` from the linearised start θ₀ = θ̂ − H⁻¹g(θ̂)
    /// with chord steps θ ← θ − H(θ̂)⁻¹·g(θ) (Ortega & Rheinboldt 1970, §7.1), O(pairs + p²)
    /// each. Resampled data differ from the full data by O(1/√N), so H(θ̂)⁻¹H(θ) is close to
    /// the identity and the steps shrink geometrically by a ratio ρ ≤ ½ (else the lane gives
    /// up, unless its step is already below `tol`: rounding noise does not shrink). The
    /// distance left after a step of size s is then about s·ρ/(1 − ρ): a lane stops when that
    /// estimate (ρ from its last two steps) is below `tol`. Returns per lane whether it
    /// converged; θ of a lane that gave up is where it stopped (for a full Newton solve).
    pub(crate) fn refit(
        &mut self,
        linearised: &LinearisedStart,
        pairs: &[(usize, usize)],
        data: &LaneData,
        count: usize,
        tol: f64,
    ) -> [bool; REFIT_LANES] {
        debug_assert!(count <= REFIT_LANES);
        let mut previous = self.start(linearised, pairs, data);
        let mut converged = [false; REFIT_LANES];
        let mut active: [bool; REFIT_LANES] = std::array::from_fn(|l| l < count);
        for _ in 0..CHORD_ITERATIONS {
            if !active.contains(&true) {
                break;
            }
            let no_underflow = self.exponentials();
            self.gradient(linearised.prior(), pairs, data, no_underflow);
            linearised.apply_inverse_lanes(&self.grad, &mut self.step);
            let size = max_abs(&self.step);
            let mut moving = [false; REFIT_LANES];
            for l in 0..REFIT_LANES {
                if !active[l] {
                    continue;
                }
                if !size[l].is_finite() || (size[l] > 0.5 * previous[l] && size[l] >= tol) {
                    active[l] = false;
                    continue;
                }
                moving[l] = true;
                let ratio = if previous[l] > 0.0 {
                    (size[l] / previous[l]).min(0.5)
                } else {
                    0.0
                };
                if size[l] * ratio / (1.0 - ratio) < tol {
                    converged[l] = true;
                    active[l] = false;
                }
                previous[l] = size[l];
            }
            for (t, s) in self.theta.iter_mut().zip(&self.step) {
                for l in 0..REFIT_LANES {
                    t[l] = if moving[l] { t[l] - s[l] } else { t[l] };
                }
            }
        }
        converged
    }

    /// θ₀ = θ̂ − H(θ̂)⁻¹·g(θ̂) per lane, g being the lane's resampled gradient at θ̂ (where σ is
    /// already known); returns the size ‖θ₀ − θ̂‖∞ of each lane's step.
    pub(super) fn start(
        &mut self,
        linearised: &LinearisedStart,
        pairs: &[(usize, usize)],
        data: &LaneData,
    ) -> Lanes {
        let (theta_hat, sigma) = (linearised.theta(), linearised.sigma());
        for (g, &t) in self.grad.iter_mut().zip(theta_hat) {
            *g = [linearised.prior() * t; REFIT_LANES];
        }
        add_residuals(pairs, data, &mut self.grad, |k, _, _| {
            [sigma[k]; REFIT_LANES]
        });
        linearised.apply_inverse_lanes(&self.grad, &mut self.step);
        for ((t, &t0), s) in self.theta.iter_mut().zip(theta_hat).zip(&self.step) {
            for l in 0..REFIT_LANES {
                t[l] = t0 - s[l];
            }
        }
        max_abs(&self.step)
    }

    /// E = e^(θ − max θ) per lane into `self.e`; returns whether no pair in any lane can
    /// underflow (every E_i + E_j above [`UNDERFLOW_GUARD`]).
    fn exponentials(&mut self) -> bool {
        let mut top = [f64::NEG_INFINITY; REFIT_LANES];
        for t in &self.theta {
            for l in 0..REFIT_LANES {
                top[l] = top[l].max(t[l]);
            }
        }
        let mut smallest = f64::INFINITY;
        for (e, t) in self.e.iter_mut().zip(&self.theta) {
            for l in 0..REFIT_LANES {
                e[l] = (t[l] - top[l]).exp();
                smallest = smallest.min(e[l]);
            }
        }
        smallest > UNDERFLOW_GUARD
    }

    /// The gradient of every lane's penalised negative log-likelihood at its θ.
    fn gradient(&mut self, prior: f64, pairs: &[(usize, usize)], data: &LaneData, fast: bool) {
        for (g, t) in self.grad.iter_mut().zip(&self.theta) {
            for l in 0..REFIT_LANES {
                g[l] = prior * t[l];
            }
        }
        let (e, theta) = (&self.e, &self.theta);
        if fast {
            // The common case, free of the fallback's calls so that it vectorises.
            add_residuals(pairs, data, &mut self.grad, |_, i, j| {
                std::array::from_fn(|l| e[i][l] / (e[i][l] + e[j][l]))
            });
        } else {
            add_residuals(pairs, data, &mut self.grad, |_, i, j| {
                std::array::from_fn(|l| {
                    guarded_sigmoid_pair(e[i][l], e[j][l], theta[i][l] - theta[j][l]).0
                })
            });
        }
    }

    /// The expected win rate against the field of every model in the first `count` lanes
    /// (see [`super::bradley_terry::win_rates`]), lane l into row l of the row-major
    /// `count × p` matrix `out`.
    pub(crate) fn win_rates(&mut self, count: usize, out: &mut [f64]) {
        let p = self.theta.len();
        debug_assert_eq!(out.len(), count * p);
        if p < 2 {
            out.fill(0.5);
            return;
        }
        let fast = self.exponentials();
        let (e, theta) = (&self.e, &self.theta);
        let sums = &mut self.grad;
        sums.fill([0.0; REFIT_LANES]);
        // Each pair once: σ(θ_i − θ_j) and σ(θ_j − θ_i) share one division.
        for i in 0..p {
            let (head, tail) = sums.split_at_mut(i + 1);
            let si = &mut head[i];
            for (j, sj) in (i + 1..p).zip(tail) {
                let (fwd, back): (Lanes, Lanes) = if fast {
                    let inv: Lanes = std::array::from_fn(|l| 1.0 / (e[i][l] + e[j][l]));
                    (
                        std::array::from_fn(|l| e[i][l] * inv[l]),
                        std::array::from_fn(|l| e[j][l] * inv[l]),
                    )
                } else {
                    // The same arithmetic as above wherever it is safe, so that a lane's
                    // result never depends on the other lanes' taking this path.
                    let both: [(f64, f64); REFIT_LANES] = std::array::from_fn(|l| {
                        let sum = e[i][l] + e[j][l];
                        if sum > UNDERFLOW_GUARD {
                            let inv = 1.0 / sum;
                            (e[i][l] * inv, e[j][l] * inv)
                        } else {
                            sigmoid_pair(theta[i][l] - theta[j][l])
                        }
                    });
                    (both.map(|b| b.0), both.map(|b| b.1))
                };
                for l in 0..REFIT_LANES {
                    si[l] += fwd[l];
                    sj[l] += back[l];
                }
            }
        }
        let field = (p - 1) as f64;
        for (lane, row) in out.chunks_exact_mut(p).enumerate() {
            for (x, s) in row.iter_mut().zip(sums.iter()) {
                *x = s[lane] / field;
            }
        }
    }
}

/// ‖x‖∞ per lane.
fn max_abs(x: &[Lanes]) -> Lanes {
    let mut size = [0.0_f64; REFIT_LANES];
    for v in x {
        for l in 0..REFIT_LANES {
            size[l] = size[l].max(v[l].abs());
        }
    }
    size
}

/// Adds each pair's residual r = n·σ − w to `grad[i]` and subtracts it from `grad[j]`, lane
/// by lane; `sigma(k, i, j)` is σ(θ_i − θ_j) for pair `k` = (i, j).
#[inline(always)]
fn add_residuals(
    pairs: &[(usize, usize)],
    data: &LaneData,
    grad: &mut [Lanes],
    sigma: impl Fn(usize, usize, usize) -> Lanes,
) {
    // Pairs come sorted by their first model, so its sums stay in registers for the run of
    // its pairs instead of going through memory once per pair.
    let (mut current, mut sum) = (usize::MAX, [0.0; REFIT_LANES]);
    for (k, ((&(i, j), w), n)) in pairs.iter().zip(&data.w).zip(&data.n).enumerate() {
        let s = sigma(k, i, j);
        let r: Lanes = std::array::from_fn(|l| n[l] * s[l] - w[l]);
        if i != current {
            if let Some(g) = grad.get_mut(current) {
                g.iter_mut().zip(sum).for_each(|(g, s)| *g += s);
            }
            (current, sum) = (i, [0.0; REFIT_LANES]);
        }
        let gj = &mut grad[j];
        for l in 0..REFIT_LANES {
            sum[l] += r[l];
            gj[l] -= r[l];
        }
    }
    if let Some(g) = grad.get_mut(current) {
        g.iter_mut().zip(sum).for_each(|(g, s)| *g += s);
    }
}
