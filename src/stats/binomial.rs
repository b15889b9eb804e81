//! Exact binomial and multinomial sampling for the bootstraps; randomness is passed in.
//!
//! Binomial variates use inversion (sequential search from 0) when `n·min(p, 1−p) < 10`, and
//! otherwise the transformed-rejection algorithm BTRD of W. Hörmann, "The generation of
//! binomial random variates", Journal of Statistical Computation and Simulation 46 (1993),
//! 101–110. Both are exact: their output follows Binomial(n, p) up to the precision of f64.
//! A multinomial draw is a chain of conditional binomials (O(cells), not O(draws)).

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// Below this mean (of the smaller tail probability) inversion is used; Hörmann's setting.
const BTRD_MIN_MEAN: f64 = 10.0;

/// The generator of bootstrap resample `resample`: ChaCha8 keyed by `seed` (expanded with
/// `SeedableRng::seed_from_u64`) on stream `resample`. Every resample owns an independent
/// stream, so results do not depend on how resamples are spread over threads.
pub(crate) fn resample_rng(seed: u64, resample: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(resample as u64);
    rng
}

/// A uniform variate on the open interval (0, 1) with 53 random bits.
fn open_unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    ((rng.next_u64() >> 11) as f64 + 0.5) * SCALE
}

/// One Binomial(n, p) variate; `p` outside (0, 1) gives the degenerate answer.
pub(crate) fn binomial<R: Rng + ?Sized>(rng: &mut R, n: u64, p: f64) -> u64 {
    if n == 0 || p.is_nan() || p <= 0.0 {
        0
    } else if p >= 1.0 {
        n
    } else if p > 0.5 {
        n - binomial_half(rng, n, 1.0 - p)
    } else {
        binomial_half(rng, n, p)
    }
}

/// Binomial(n, p) for 0 < p ≤ 1/2.
fn binomial_half<R: Rng + ?Sized>(rng: &mut R, n: u64, p: f64) -> u64 {
    if (n as f64) * p < BTRD_MIN_MEAN {
        inversion(rng, n, p)
    } else {
        Btrd::new(n, p).sample(rng)
    }
}

/// Inversion by sequential search, using the pmf recurrence
/// f(k) = f(k−1)·((n+1)/k − 1)·p/(1−p); expected cost n·p + 1 steps.
fn inversion<R: Rng + ?Sized>(rng: &mut R, n: u64, p: f64) -> u64 {
    let s = p / (1.0 - p);
    let a = (n as f64 + 1.0) * s;
    let f0 = (n as f64 * (-p).ln_1p()).exp();
    loop {
        let mut u = open_unit(rng);
        let mut f = f0;
        let mut k = 0;
        // Restart on the (probability ~1e-16) rounding escape past the support.
        while k <= n && f > 0.0 {
            if u < f {
                return k;
            }
            u -= f;
            k += 1;
            f *= a / k as f64 - s;
        }
    }
}

/// Setup constants of BTRD for one (n, p) with p ≤ 1/2 and n·p ≥ 10 (Hörmann 1993, step 0).
struct Btrd {
    n: f64,
    p: f64,
    m: f64,
    r: f64,
    nr: f64,
    npq: f64,
    a: f64,
    b: f64,
    c: f64,
    alpha: f64,
    v_r: f64,
    u_rv_r: f64,
}

impl Btrd {
    fn new(n: u64, p: f64) -> Btrd {
        let n = n as f64;
        let q = 1.0 - p;
        let npq = n * p * q;
        let sqrt_npq = npq.sqrt();
        let b = 1.15 + 2.53 * sqrt_npq;
        let v_r = 0.92 - 4.2 / b;
        Btrd {
            n,
            p,
            m: ((n + 1.0) * p).floor(),
            r: p / q,
            nr: (n + 1.0) * p / q,
            npq,
            a: -0.0873 + 0.0248 * b + 0.01 * p,
            b,
            c: n * p + 0.5,
            alpha: (2.83 + 5.1 / b) * sqrt_npq,
            v_r,
            u_rv_r: 0.86 * v_r,
        }
    }

    /// Steps 1–3 of BTRD: a triangular-box fast path, then transformed rejection with
    /// recursive (near the mode) or Stirling-based (far from it) evaluation of f(k)/f(m).
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        loop {
            let mut v = open_unit(rng);
            let u = if v <= self.u_rv_r {
                let u = v / self.v_r - 0.43;
                if let Some(k) = self.candidate(u) {
                    return k as u64;
                }
                continue;
            } else if v >= self.v_r {
                open_unit(rng) - 0.5
            } else {
                let u = v / self.v_r - 0.93;
                v = open_unit(rng) * self.v_r;
                0.5_f64.copysign(u) - u
            };
            let Some(k) = self.candidate(u) else { continue };
            let us = 0.5 - u.abs();
            v *= self.alpha / (self.a / (us * us) + self.b);
            if self.accept(k, v) {
                return k as u64;
            }
        }
    }

    /// k = ⌊(2a/(0.5−|u|) + b)·u + c⌋ if it lies in the support.
    fn candidate(&self, u: f64) -> Option<f64> {
        let us = 0.5 - u.abs();
        let k = ((2.0 * self.a / us + self.b) * u + self.c).floor();
        (k >= 0.0 && k <= self.n).then_some(k)
    }

    /// Acceptance test v ≤ f(k)/f(m) (steps 2.3–3.2).
    fn accept(&self, k: f64, mut v: f64) -> bool {
        let km = (k - self.m).abs();
        if km <= 15.0 {
            let mut f = 1.0;
            let mut i = self.m.min(k) + 1.0;
            while i <= self.m.max(k) {
                let ratio = self.nr / i - self.r;
                if self.m < k {
                    f *= ratio
                } else {
                    v *= ratio
                }
                i += 1.0;
            }
            return v <= f;
        }
        let v = v.ln();
        let rho = (km / self.npq) * (((km / 3.0 + 0.625) * km + 1.0 / 6.0) / self.npq + 0.5);
        let t = -km * km / (2.0 * self.npq);
        if v < t - rho {
            return true;
        }
        if v > t + rho {
            return false;
        }
        let (n, m, r) = (self.n, self.m, self.r);
        let nm = n - m + 1.0;
        let h = (m + 0.5) * ((m + 1.0) / (r * nm)).ln() + stirling_tail(m) + stirling_tail(n - m);
        let nk = n - k + 1.0;
        let bound = h + (n + 1.0) * (nm / nk).ln() + (k + 0.5) * (nk * r / (k + 1.0)).ln()
            - stirling_tail(k)
            - stirling_tail(n - k);
        debug_assert!(self.p <= 0.5);
        v <= bound
    }
}

/// fc(k) = ln k! − (k + ½)·ln(k + 1) + (k + 1) − ½·ln(2π), the Stirling-series remainder:
/// exact (summed logarithms) for k < 10, the series 1/12x − 1/360x³ + 1/1260x⁵ (x = k + 1)
/// beyond, as in Hörmann (1993).
fn stirling_tail(k: f64) -> f64 {
    if k < 10.0 {
        let ln_fact: f64 = (2..=k as u64).map(|i| (i as f64).ln()).sum();
        let half_ln_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
        ln_fact - (k + 0.5) * (k + 1.0).ln() + (k + 1.0) - half_ln_2pi
    } else {
        let x = 1.0 / (k + 1.0);
        let x2 = x * x;
        (1.0 / 12.0 - (1.0 / 360.0 - x2 / 1260.0) * x2) * x
    }
}

/// A multinomial over fixed cells with probabilities proportional to integer weights,
/// drawn as a chain of conditional binomials: cell c gets
/// Binomial(draws left, w_c / Σ_{c' ≥ c} w_c').
#[derive(Debug, Clone)]
pub(crate) struct Multinomial {
    conditional: Vec<f64>,
}

impl Multinomial {
    /// Cells with the given non-negative weights (counts).
    pub(crate) fn new(weights: &[u64]) -> Multinomial {
        let mut rest: u64 = weights.iter().sum();
        let conditional = weights
            .iter()
            .map(|&w| {
                let p = if rest == 0 {
                    0.0
                } else {
                    w as f64 / rest as f64
                };
                rest -= w;
                p
            })
            .collect();
        Multinomial { conditional }
    }

    /// Number of cells.
    pub(crate) fn len(&self) -> usize {
        self.conditional.len()
    }

    /// Writes one draw of `draws` items over the cells into `out` (length [`Self::len`]).
    #[cfg(test)]
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R, draws: u64, out: &mut [u64]) {
        debug_assert_eq!(out.len(), self.len());
        out.fill(0);
        self.for_each_draw(rng, draws, |cell, x| out[cell] = x);
    }

    /// Draws `draws` items over the cells and calls `visit(cell, count)` for every cell
    /// that received at least one, in cell order.
    pub(crate) fn for_each_draw<R, F>(&self, rng: &mut R, draws: u64, mut visit: F)
    where
        R: Rng + ?Sized,
        F: FnMut(usize, u64),
    {
        let mut left = draws;
        for (cell, &p) in self.conditional.iter().enumerate() {
            if left == 0 {
                break;
            }
            let x = binomial(rng, left, p);
            if x > 0 {
                visit(cell, x);
                left -= x;
            }
        }
    }
}

#[cfg(test)]
#[path = "binomial_tests.rs"]
mod tests;
