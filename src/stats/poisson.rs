//! Seeded random streams and exact Poisson variates with precomputed parameters.
//!
//! Poisson(μ) uses inversion (sequential search) for μ < 10 and otherwise the transformed
//! rejection with squeeze algorithm PTRS of W. Hörmann, "The transformed rejection method for
//! generating Poisson random variables", Insurance: Mathematics and Economics 12 (1993),
//! 39–45; or, when a mean is drawn from many times, by Walker's alias method over the
//! tabulated pmf: one 64-bit uniform and one table entry per draw. All are exact up to
//! rounding (f64 for the first two; the table rounds each probability to a multiple of 2^−64
//! and drops tails below 1e-20).
//! Setup is done once per mean, never per draw.

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};

use super::multinomial::power_of_two_alias;
use super::refit::REFIT_LANES;

/// Below this mean inversion is used (Hörmann's recommendation for PTRS).
const PTRS_MIN_MEAN: f64 = 10.0;

/// The generator of bootstrap resample `resample`: xoshiro256++ seeded with the first 256
/// bits of ChaCha8 keyed by `seed` (expanded with `SeedableRng::seed_from_u64`) on stream
/// `resample`. Every resample owns an independent, well-separated generator, so results do
/// not depend on how resamples are spread over threads. ChaCha8 alone would do, but a
/// resample draws thousands of numbers and xoshiro makes them about three times faster.
pub(crate) fn resample_rng(seed: u64, resample: usize) -> Xoshiro256 {
    let mut chacha = ChaCha8Rng::seed_from_u64(seed);
    chacha.set_stream(resample as u64);
    Xoshiro256::from_rng(&mut chacha)
}

/// xoshiro256++ (D. Blackman & S. Vigna, "Scrambled linear pseudorandom number generators",
/// ACM TOMS 47(4), 2021): 256 bits of state, period 2^256 − 1, passes BigCrush and PractRand.
#[derive(Debug, Clone)]
pub(crate) struct Xoshiro256 {
    s: [u64; 4],
}

impl Xoshiro256 {
    /// A generator with 256 bits of state from `rng` (never all zero).
    fn from_rng<R: Rng + ?Sized>(rng: &mut R) -> Xoshiro256 {
        let mut s = [0u64; 4];
        while s == [0; 4] {
            s = [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ];
        }
        Xoshiro256 { s }
    }
}

impl rand_core::TryRng for Xoshiro256 {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok((self.try_next_u64()? >> 32) as u32)
    }

    #[inline]
    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        let s = &mut self.s;
        let result = (s[0].wrapping_add(s[3])).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        Ok(result)
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.try_next_u64()?.to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

/// Whether [`fill_lane_uniforms`] runs the four generators in one vector register on this
/// CPU (x86-64 with AVX2). Without that, drawing one lane at a time is faster.
pub(crate) fn lanes_vectorised() -> bool {
    #[cfg(target_arch = "x86_64")]
    return avx2::available();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Fills `out[i][l]` with the next output of `rngs[l]`, `i` in order: the same numbers as
/// `out.len()` calls of `next_u64` on each generator, drawn four generators to one vector
/// register where [`lanes_vectorised`] (about three times fewer instructions per number).
pub(crate) fn fill_lane_uniforms(
    rngs: &mut [Xoshiro256; REFIT_LANES],
    out: &mut [[u64; REFIT_LANES]],
) {
    #[cfg(target_arch = "x86_64")]
    if avx2::available() {
        // SAFETY: the CPU has AVX2.
        unsafe { avx2::fill_uniforms(rngs, out) };
        return;
    }
    fill_lane_uniforms_scalar(rngs, out);
}

/// [`fill_lane_uniforms`] one generator at a time.
fn fill_lane_uniforms_scalar(rngs: &mut [Xoshiro256; REFIT_LANES], out: &mut [[u64; REFIT_LANES]]) {
    for u in out {
        *u = std::array::from_fn(|l| rngs[l].next_u64());
    }
}

/// Fills lane `l` of every cell of `out` with draws from `rngs[l]`, one lane after the other;
/// returns each lane's sum.
fn lane_by_lane(
    rngs: &mut [Xoshiro256; REFIT_LANES],
    out: &mut [[u64; REFIT_LANES]],
    draw: impl Fn(&mut Xoshiro256) -> u64,
) -> [u64; REFIT_LANES] {
    let mut sum = [0; REFIT_LANES];
    for (lane, rng) in rngs.iter_mut().enumerate() {
        for cell in out.iter_mut() {
            cell[lane] = draw(rng);
            sum[lane] += cell[lane];
        }
    }
    sum
}

/// A uniform variate on the open interval (0, 1) with 53 random bits.
pub(crate) fn open_unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    ((rng.next_u64() >> 11) as f64 + 0.5) * SCALE
}

/// An exactly uniform integer in `0..n` (`n > 0`): D. Lemire, "Fast random integer
/// generation in an interval", ACM TOMACS 29 (2019), multiply-shift with rejection.
#[inline]
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
    /// Any μ > 0: alias table (memory grows like √μ).
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

    /// Fills every lane of `out` with independent variates, lane `l` from `rngs[l]` in cell
    /// order (so each lane gets what [`Poisson::fill`] would give it alone), and returns each
    /// lane's sum. With `vectorised`, a table takes the uniforms of all lanes at once, then
    /// looks them up; else it draws lane by lane, which is faster without vector generators.
    /// `vectorised` must be false unless [`lanes_vectorised`] (tests take both paths).
    pub(crate) fn fill_lanes(
        &self,
        rngs: &mut [Xoshiro256; REFIT_LANES],
        out: &mut [[u64; REFIT_LANES]],
        vectorised: bool,
    ) -> [u64; REFIT_LANES] {
        let mut sum = [0; REFIT_LANES];
        match self {
            Poisson::Table(table) if vectorised => {
                fill_lane_uniforms(rngs, out);
                for cell in out {
                    for lane in 0..REFIT_LANES {
                        cell[lane] = table.value(cell[lane]);
                        sum[lane] += cell[lane];
                    }
                }
            }
            // One loop per variant: a table's draws skip the per-draw dispatch.
            Poisson::Table(table) => sum = lane_by_lane(rngs, out, |rng| table.sample(rng)),
            other => sum = lane_by_lane(rngs, out, |rng| other.sample(rng)),
        }
        sum
    }

    /// Poisson(μ) by an alias table (`μ = 0` gives [`Poisson::Zero`]).
    pub(crate) fn tabulated(mu: f64) -> Poisson {
        if mu <= 0.0 {
            Poisson::Zero
        } else {
            Poisson::Table(PoissonTable::new(mu))
        }
    }

    /// At most the number of buckets (16 bytes each) [`Poisson::tabulated`] builds for `mu`.
    pub(crate) fn table_len(mu: f64) -> usize {
        let (lo, hi) = table_range(mu);
        ((hi - lo + 1) as usize).next_power_of_two()
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

/// Walker's alias method over the tabulated pmf (A. J. Walker, "An efficient method for
/// generating discrete random variables with general distributions", ACM TOMS 3 (1977),
/// 253–256; built with Vose's algorithm in exact integers). The pmf is rounded to integer
/// weights summing to exactly 2^64 and spread over 2^m buckets of 2^(64−m) each, so one 64-bit
/// uniform picks a bucket (its top m bits) and decides between the bucket's own value and its
/// alias (the rest, compared with the bucket's threshold): one draw, one table entry, no
/// search and no data-dependent branch. Value k comes out with probability q_k/2^64 exactly,
/// q_k being P(X = k) rounded to a multiple of 2^−64. The same table as
/// [`super::multinomial::PackedAlias`], but in 16-byte buckets holding both candidate values:
/// in the per-cell loop of the bootstrap that measured faster than the packed 8-byte entries.
#[derive(Debug, Clone)]
pub(crate) struct PoissonTable {
    /// Bucket-index bits m.
    bits: u32,
    buckets: Vec<AliasBucket>,
}

/// One bucket: keep `keep` when the low bits are below `threshold`, else take `alias`.
#[derive(Debug, Clone, Copy)]
struct AliasBucket {
    threshold: u64,
    keep: u32,
    alias: u32,
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
        // Integer weights summing to exactly 2^64; the rounding remainder goes to the mode.
        const ONE: u128 = 1 << 64;
        let sum: f64 = pmf.iter().sum();
        // A share below 1 fits a u64, and the cast truncates as one to u128 would, without a
        // library call; a share of 1 (μ so small that e^−μ rounds to 1) saturates to 2^64 − 1
        // and the remainder below gives the mode back its last unit: the same weights.
        let mut weight: Vec<u128> = pmf
            .iter()
            .map(|p| u128::from(((p / sum) * ONE as f64) as u64))
            .collect();
        let assigned: u128 = weight.iter().sum();
        let m = (mode - lo) as usize;
        if assigned <= ONE {
            weight[m] += ONE - assigned;
        } else {
            weight[m] -= assigned - ONE;
        }
        // Values whose weight rounded to 0 can never be drawn: keep the table to the rest.
        let first = weight
            .iter()
            .position(|&q| q > 0)
            .expect("weights sum to 2^64");
        let last = weight
            .iter()
            .rposition(|&q| q > 0)
            .expect("weights sum to 2^64");
        weight.truncate(last + 1);
        weight.drain(..first);
        let lo = lo + first as u64;
        let (bits, threshold, alias) = power_of_two_alias(weight);
        let offset = u32::try_from(lo).expect("table values below 2^32");
        let buckets = (0u32..)
            .zip(threshold.into_iter().zip(alias))
            .map(|(k, (threshold, alias))| AliasBucket {
                threshold,
                keep: offset + k,
                alias: offset + alias,
            })
            .collect();
        PoissonTable { bits, buckets }
    }

    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.value(rng.next_u64())
    }

    /// The value the uniform 64-bit `u` draws.
    #[inline]
    fn value(&self, u: u64) -> u64 {
        let bucket = &self.buckets[(u >> (64 - self.bits)) as usize];
        let rest = u & (u64::MAX >> self.bits);
        u64::from(if rest < bucket.threshold {
            bucket.keep
        } else {
            bucket.alias
        })
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

#[cfg(target_arch = "x86_64")]
#[path = "poisson_avx2.rs"]
mod avx2;

#[cfg(test)]
#[path = "poisson_tests.rs"]
mod tests;
