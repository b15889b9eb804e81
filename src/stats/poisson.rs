//! Seeded random streams and exact Poisson variates with precomputed parameters.
//!
//! Poisson(μ) uses inversion (sequential search) for μ < 10 and otherwise the transformed
//! rejection with squeeze algorithm PTRS of W. Hörmann, "The transformed rejection method for
//! generating Poisson random variables", Insurance: Mathematics and Economics 12 (1993),
//! 39–45; or, when a mean is drawn from many times, by table inversion with a guide table
//! (H.-C. Chen & Y. Asau, "On generating random variates from an empirical distribution",
//! AIIE Transactions 6 (1974), 163–166): one uniform and one or two comparisons per draw.
//! All are exact up to f64 rounding (the table drops tails below 1e-20 in probability).
//! Setup is done once per mean, never per draw.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

/// Below this mean inversion is used (Hörmann's recommendation for PTRS).
const PTRS_MIN_MEAN: f64 = 10.0;

/// The generator of bootstrap resample `resample`: ChaCha8 keyed by `seed` (expanded with
/// `SeedableRng::seed_from_u64`) on stream `resample`. Every resample owns an independent
/// stream, so results do not depend on how resamples are spread over threads.
pub(crate) fn resample_rng(seed: u64, resample: usize) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(resample as u64);
    rng
}

/// A uniform variate on the open interval (0, 1) with 53 random bits.
pub(crate) fn open_unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    ((rng.next_u64() >> 11) as f64 + 0.5) * SCALE
}

/// An exactly uniform integer in `0..n` (`n > 0`): D. Lemire, "Fast random integer
/// generation in an interval", ACM TOMACS 29 (2019), multiply-shift with rejection.
pub(crate) fn uniform_below<R: Rng + ?Sized>(rng: &mut R, n: u64) -> u64 {
    debug_assert!(n > 0);
    let mut product = u128::from(rng.next_u64()) * u128::from(n);
    if (product as u64) < n {
        let threshold = n.wrapping_neg() % n;
        while (product as u64) < threshold {
            product = u128::from(rng.next_u64()) * u128::from(n);
        }
    }
    (product >> 64) as u64
}

/// ln k! for integer-valued `k ≥ 0`: summed logarithms below 10, else the Stirling series
/// ln Γ(x) = (x − ½)·ln x − x + ½·ln 2π + 1/12x − 1/360x³ + 1/1260x⁵ − 1/1680x⁷, x = k + 1
/// (absolute error below 1e-13).
pub(crate) fn ln_factorial(k: f64) -> f64 {
    if k < 10.0 {
        return (2..=k as u64).map(|i| (i as f64).ln()).sum();
    }
    let x = k + 1.0;
    let r = 1.0 / x;
    let r2 = r * r;
    let series = (1.0 / 12.0 - (1.0 / 360.0 - (1.0 / 1260.0 - r2 / 1680.0) * r2) * r2) * r;
    (x - 0.5) * x.ln() - x + 0.5 * (2.0 * std::f64::consts::PI).ln() + series
}

/// A Poisson distribution with its sampling constants precomputed.
#[derive(Debug, Clone)]
pub(crate) enum Poisson {
    /// μ = 0: always 0.
    Zero,
    /// μ < 10: sequential search from 0.
    Inversion {
        /// The mean.
        mu: f64,
        /// e^(−μ) = P(X = 0).
        p0: f64,
    },
    /// μ ≥ 10: PTRS.
    Ptrs(Ptrs),
    /// Any μ > 0: guide-table inversion (memory grows like √μ).
    Table(PoissonTable),
}

/// PTRS constants (Hörmann 1993, Algorithm PTRS, step 0).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ptrs {
    mu: f64,
    ln_mu: f64,
    a: f64,
    b: f64,
    v_r: f64,
    ln_inv_alpha: f64,
}

impl Poisson {
    /// Poisson(μ) for a finite μ ≥ 0.
    pub(crate) fn new(mu: f64) -> Poisson {
        debug_assert!(mu.is_finite() && mu >= 0.0);
        if mu <= 0.0 {
            Poisson::Zero
        } else if mu < PTRS_MIN_MEAN {
            Poisson::Inversion {
                mu,
                p0: (-mu).exp(),
            }
        } else {
            let b = 0.931 + 2.53 * mu.sqrt();
            Poisson::Ptrs(Ptrs {
                mu,
                ln_mu: mu.ln(),
                a: -0.059 + 0.02483 * b,
                b,
                v_r: 0.9277 - 3.6224 / (b - 2.0),
                ln_inv_alpha: (1.1239 + 1.1328 / (b - 3.4)).ln(),
            })
        }
    }

    /// One variate.
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        match self {
            Poisson::Zero => 0,
            Poisson::Inversion { mu, p0 } => inversion(rng, *mu, *p0),
            Poisson::Ptrs(ptrs) => ptrs.sample(rng),
            Poisson::Table(table) => table.sample(rng),
        }
    }

    /// Fills `out` with independent variates and returns their sum (one dispatch for all).
    pub(crate) fn fill<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [u64]) -> u64 {
        let mut sum = 0;
        match self {
            Poisson::Table(table) => out.iter_mut().for_each(|x| {
                *x = table.sample(rng);
                sum += *x;
            }),
            other => out.iter_mut().for_each(|x| {
                *x = other.sample(rng);
                sum += *x;
            }),
        }
        sum
    }

    /// Poisson(μ) by table inversion (`μ = 0` gives [`Poisson::Zero`]).
    pub(crate) fn tabulated(mu: f64) -> Poisson {
        if mu <= 0.0 {
            Poisson::Zero
        } else {
            Poisson::Table(PoissonTable::new(mu))
        }
    }

    /// Entries of the table [`Poisson::tabulated`] would build for mean `mu`.
    pub(crate) fn table_len(mu: f64) -> usize {
        let (lo, hi) = table_range(mu);
        (hi - lo + 1) as usize
    }
}

/// The support kept in a table: μ ± 12√μ plus a margin, so each dropped tail has probability
/// below 1e-20 (Poisson tails are lighter than any such bound at this distance).
fn table_range(mu: f64) -> (u64, u64) {
    let spread = 12.0 * mu.sqrt();
    let lo = (mu - spread - 20.0).max(0.0) as u64;
    let hi = (mu + spread + 25.0) as u64;
    (lo, hi)
}

/// Inversion of a tabulated CDF, started from a guide table: `guide[j]` is the first entry
/// whose CDF exceeds j/len, so a draw inspects one or two entries on average.
#[derive(Debug, Clone)]
pub(crate) struct PoissonTable {
    first: u64,
    /// P(X ≤ first + i) − P(X < first); the last entry is exactly 1.
    cdf: Vec<f64>,
    guide: Vec<u32>,
}

impl PoissonTable {
    fn new(mu: f64) -> PoissonTable {
        let (lo, hi) = table_range(mu);
        let mode = (mu.floor() as u64).clamp(lo, hi);
        let mut pmf = vec![0.0; (hi - lo + 1) as usize];
        let at_mode = (-mu + mode as f64 * mu.ln() - ln_factorial(mode as f64)).exp();
        pmf[(mode - lo) as usize] = at_mode;
        // Recurrences outward from the mode: P(k) = P(k − 1)·μ/k.
        for k in mode + 1..=hi {
            pmf[(k - lo) as usize] = pmf[(k - lo - 1) as usize] * mu / k as f64;
        }
        for k in (lo..mode).rev() {
            pmf[(k - lo) as usize] = pmf[(k - lo + 1) as usize] * (k + 1) as f64 / mu;
        }
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = pmf
            .iter()
            .map(|p| {
                acc += p;
                acc
            })
            .collect();
        *cdf.last_mut().expect("non-empty range") = 1.0;
        let len = cdf.len();
        let mut guide = Vec::with_capacity(len);
        let mut i = 0;
        for j in 0..len {
            while cdf[i] <= j as f64 / len as f64 {
                i += 1;
            }
            guide.push(u32::try_from(i).expect("table shorter than 2^32"));
        }
        PoissonTable {
            first: lo,
            cdf,
            guide,
        }
    }

    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u = open_unit(rng);
        let j = ((u * self.cdf.len() as f64) as usize).min(self.cdf.len() - 1);
        let mut i = self.guide[j] as usize;
        while u >= self.cdf[i] {
            i += 1;
        }
        self.first + i as u64
    }
}

/// Sequential search with the recurrence P(k) = P(k − 1)·μ/k; about μ + 1 steps.
fn inversion<R: Rng + ?Sized>(rng: &mut R, mu: f64, p0: f64) -> u64 {
    loop {
        let mut u = open_unit(rng);
        let (mut k, mut pk) = (0, p0);
        // The loop ends by underflow only on a ~1e-16 rounding escape; then draw again.
        while pk > 0.0 {
            if u < pk {
                return k;
            }
            u -= pk;
            k += 1;
            pk *= mu / k as f64;
        }
    }
}

impl Ptrs {
    /// Steps 1–3 of PTRS: k = ⌊(2a/u_s + b)·u + μ + 0.43⌋ from a uniform u on (−½, ½),
    /// accepted at once inside the squeeze (u_s ≥ 0.07 and v ≤ v_r), else by comparing
    /// ln(v·α⁻¹/(a/u_s² + b)) with ln P(k) = −μ + k·ln μ − ln k!.
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        loop {
            let u = open_unit(rng) - 0.5;
            let v = open_unit(rng);
            let us = 0.5 - u.abs();
            let x = (2.0 * self.a / us + self.b) * u + self.mu + 0.43;
            // k = ⌊x⌋: for x ≥ 0 the saturating cast truncates, which is the floor (and
            // avoids a libm call on baseline x86-64).
            if us >= 0.07 && v <= self.v_r {
                debug_assert!(x >= 0.0);
                return x as u64;
            }
            if x < 0.0 || (us < 0.013 && v > us) {
                continue;
            }
            let k = x as u64;
            let kf = k as f64;
            let lhs = v.ln() + self.ln_inv_alpha - (self.a / (us * us) + self.b).ln();
            if lhs <= -self.mu + kf * self.ln_mu - ln_factorial(kf) {
                return k;
            }
        }
    }
}

#[cfg(test)]
#[path = "poisson_tests.rs"]
mod tests;
