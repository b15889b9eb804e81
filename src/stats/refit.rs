//! Bradley–Terry refits of [`REFIT_LANES`] bootstrap resamples side by side.
//!
//! The chord method on the full-data Hessian inverse of [`LinearisedStart`] on several
//! resamples at once: every per-pair and per-model quantity is a small array with one entry
//! per resample (a lane), so one pass over the pairs and one over the Hessian inverse serve
//! every lane, and the divisions σ = E_i/(E_i + E_j) run two (four with AVX2) to a vector
//! instruction. Lanes never mix: each does exactly the arithmetic of its own refit, and a
//! lane that has stopped is frozen, so a resample's result does not depend on which
//! resamples share its batch (nor, therefore, on the number of threads).

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
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            // SAFETY: the CPU has AVX2.
            return unsafe { self.refit_avx2(linearised, pairs, data, count, tol) };
        }
        self.refit_with(linearised, pairs, data, count, tol)
    }

    /// [`LaneRefit::refit`] compiled for AVX2 (not FMA: the same bits as without).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn refit_avx2(
        &mut self,
        linearised: &LinearisedStart,
        pairs: &[(usize, usize)],
        data: &LaneData,
        count: usize,
        tol: f64,
    ) -> [bool; REFIT_LANES] {
        self.refit_with(linearised, pairs, data, count, tol)
    }

    /// The body of [`LaneRefit::refit`].
    #[inline(always)]
    fn refit_with(
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
    #[inline(always)]
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
    #[inline(always)]
    fn exponentials(&mut self) -> bool {
        let mut top = [f64::NEG_INFINITY; REFIT_LANES];
        for t in &self.theta {
            for l in 0..REFIT_LANES {
                top[l] = top[l].max(t[l]);
            }
        }
        for (e, t) in self.e.iter_mut().zip(&self.theta) {
            for l in 0..REFIT_LANES {
                e[l] = exp_reduced(t[l] - top[l]);
            }
        }
        // Apart, so that the loop above has no branch: arguments outside its range.
        let mut smallest = f64::INFINITY;
        for (e, t) in self.e.iter_mut().zip(&self.theta) {
            for l in 0..REFIT_LANES {
                let x = t[l] - top[l];
                if !(EXP_REDUCED_MIN..=0.0).contains(&x) {
                    e[l] = x.exp();
                }
                smallest = smallest.min(e[l]);
            }
        }
        smallest > UNDERFLOW_GUARD
    }

    /// The gradient of every lane's penalised negative log-likelihood at its θ.
    #[inline(always)]
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
        #[cfg(target_arch = "x86_64")]
        if has_avx2() {
            // SAFETY: the CPU has AVX2.
            return unsafe { self.win_rates_avx2(count, out) };
        }
        self.win_rates_with(count, out);
    }

    /// [`LaneRefit::win_rates`] compiled for AVX2 (not FMA: the same bits as without).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn win_rates_avx2(&mut self, count: usize, out: &mut [f64]) {
        self.win_rates_with(count, out);
    }

    /// The body of [`LaneRefit::win_rates`].
    #[inline(always)]
    fn win_rates_with(&mut self, count: usize, out: &mut [f64]) {
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

/// The least argument [`exp_reduced`] takes: e^x is a normal number down to about −708.4.
const EXP_REDUCED_MIN: f64 = -708.0;

/// e^x for x in [[`EXP_REDUCED_MIN`], 0] (any other argument gives a wrong value): the
/// reduction and rational approximation of fdlibm's `e_exp.c` (Sun Microsystems, 1993;
/// error below 1 ulp). Plain additions, multiplications and one division, no branch and no
/// library call, so that the refits' exponentials go four lanes to a vector instruction and,
/// within that range, give the same bits on every CPU and C library.
#[inline(always)]
fn exp_reduced(x: f64) -> f64 {
    const INV_LN2: f64 = std::f64::consts::LOG2_E;
    // ln 2 in two parts, the first with 32 trailing zero bits: k·LN2_HI is exact.
    const LN2_HI: f64 = 0.693_147_180_369_123_8;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const P1: f64 = 0.166_666_666_666_666_02;
    const P2: f64 = -0.002_777_777_777_701_559_3;
    const P3: f64 = 6.613_756_321_437_934e-5;
    const P4: f64 = -1.653_390_220_546_525_2e-6;
    const P5: f64 = 4.138_136_797_057_238_5e-8;
    // Adding 1.5·2^52 rounds to the nearest integer k and leaves k in the low bits.
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    let shifted = x * INV_LN2 + SHIFT;
    let k = shifted - SHIFT;
    let hi = x - k * LN2_HI;
    let lo = k * LN2_LO;
    let r = hi - lo;
    let r2 = r * r;
    let c = r - r2 * (P1 + r2 * (P2 + r2 * (P3 + r2 * (P4 + r2 * P5))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    // 2^k: the exponent field k + 1023 (the bits of 1.5·2^52 all shift out).
    y * f64::from_bits(shifted.to_bits().wrapping_add(1023) << 52)
}

/// ‖x‖∞ per lane.
#[inline(always)]
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

/// Whether the CPU has AVX2 (false in a test that set [`PORTABLE`] on its thread).
#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    #[cfg(test)]
    if PORTABLE.with(std::cell::Cell::get) {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx2")
}

#[cfg(test)]
thread_local! {
    /// Makes the refits this thread runs take the portable path, as on a CPU without AVX2, so
    /// that tests can check both paths give the same bits on any machine.
    pub(super) static PORTABLE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Within one unit in the last place of the C library's e^x over the whole range (the
    /// ends included), and exactly 1 at 0.
    #[test]
    fn exp_reduced_is_within_an_ulp() {
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let uniform = |state: &mut u64| {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            (*state >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut xs: Vec<f64> = (0..200_000)
            .map(|_| EXP_REDUCED_MIN * uniform(&mut state))
            .collect();
        xs.extend((0..200_000).map(|_| -uniform(&mut state) * 1e-3));
        xs.extend([
            0.0,
            -0.0,
            EXP_REDUCED_MIN,
            -1e-300,
            -0.5 * std::f64::consts::LN_2,
        ]);
        for x in xs {
            let (got, want) = (exp_reduced(x), x.exp());
            let ulps = got.to_bits().abs_diff(want.to_bits());
            assert!(ulps <= 1, "e^{x}: {got} against {want} ({ulps} ulps)");
        }
        assert_eq!(exp_reduced(0.0), 1.0);
    }
}
