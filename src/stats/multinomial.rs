//! Exact multinomial draws over many cells (the bootstrap's resampling step).
//!
//! Resampling N rows with replacement from cells holding w_c rows each is a draw from
//! Multinomial(N, w/N). We draw it by Poissonisation: X_c ~ Poisson(Λ·w_c/N) independently,
//! with Λ = N − 2√N. Given M = Σ X_c, X is Multinomial(M, w/N) (Johnson, Kotz & Balakrishnan,
//! *Discrete Multivariate Distributions*, 1997, ch. 35), so when M ≤ N adding N − M independent
//! single draws (Walker's alias method, [`PackedAlias`]) gives Multinomial(N, w/N); when
//! M > N (probability ≈ 2%) everything is drawn again. This is exact up to the rounding of
//! every probability, of the Poisson tables and of the single draws alike, to a multiple of
//! 2^−64.
//! The cost is one Poisson per cell plus about 2√N alias draws. Cells with equal weights
//! share one Poisson sampler, built once: an alias table while the tables fit a fixed memory
//! budget (most frequent weights first), otherwise Hörmann's PTRS.

use std::collections::BTreeMap;
use std::ops::Range;

use rand_core::Rng;

use super::poisson::{Poisson, Xoshiro256, fill_lane_uniforms, lanes_vectorised};
use super::refit::REFIT_LANES;

/// How many standard deviations below N the Poisson total is aimed.
const POISSON_MARGIN_SDS: f64 = 2.0;
/// Total alias-table buckets (16 bytes each) a sampler may build: 1 MiB.
const TABLE_BUDGET: usize = 1 << 16;

/// Multinomial(N, w/N) sampler for fixed integer weights w (N = Σ w).
#[derive(Debug, Clone)]
pub(crate) struct CellSampler {
    total: u64,
    /// One sampler per distinct weight.
    poisson: Vec<Poisson>,
    /// Consecutive cells sharing a sampler: (index in `poisson`, number of cells). Callers
    /// that order cells by weight get one run per distinct weight, which keeps each table
    /// in cache and dispatches once per run.
    runs: Vec<(u32, u32)>,
    cells: usize,
    alias: PackedAlias,
}

impl CellSampler {
    /// A sampler drawing `Σ weights` items over cells with the given weights (any order;
    /// ordering by weight makes sampling faster).
    pub(crate) fn new(weights: &[u64]) -> CellSampler {
        let total: u64 = weights.iter().sum();
        let (poisson, index) = samplers_by_weight(weights, total);
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for w in weights {
            match runs.last_mut() {
                Some((k, len)) if *k == index[w] => *len += 1,
                _ => runs.push((index[w], 1)),
            }
        }
        CellSampler {
            total,
            poisson,
            runs,
            cells: weights.len(),
            alias: PackedAlias::from_weights(weights),
        }
    }

    /// Number of cells.
    pub(crate) fn len(&self) -> usize {
        self.cells
    }

    /// Each run of cells sharing a sampler: the sampler and the run's cells.
    fn runs(&self) -> impl Iterator<Item = (&Poisson, Range<usize>)> {
        self.runs.iter().scan(0, |start, &(k, len)| {
            let cells = *start..*start + len as usize;
            *start = cells.end;
            Some((&self.poisson[k as usize], cells))
        })
    }

    /// Writes one multinomial draw of N items into `out` (one count per cell).
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [u64]) {
        debug_assert_eq!(out.len(), self.len());
        let drawn = loop {
            let drawn = self
                .runs()
                .map(|(poisson, cells)| poisson.fill(rng, &mut out[cells]))
                .sum();
            if drawn <= self.total {
                break drawn;
            }
        };
        for _ in drawn..self.total {
            out[self.alias.pick(rng.next_u64())] += 1;
        }
    }

    /// Writes one multinomial draw of N items per lane into `out` (per cell, one count per
    /// lane), lane `l` drawing from `rngs[l]` exactly what [`CellSampler::sample`] would draw
    /// from it alone. Where [`lanes_vectorised`], the lanes' generators step together for
    /// the Poisson draws and for as many top-ups as every lane needs; redraws (when a lane's
    /// Poisson total overshoots N) and the rest of the top-ups go lane by lane.
    pub(crate) fn sample_lanes(
        &self,
        rngs: &mut [Xoshiro256; REFIT_LANES],
        out: &mut [[u64; REFIT_LANES]],
    ) {
        self.sample_lanes_by(rngs, out, lanes_vectorised());
    }

    /// [`CellSampler::sample_lanes`] with the generators stepping together or not
    /// (`vectorised` only where [`lanes_vectorised`]): the same draws either way.
    fn sample_lanes_by(
        &self,
        rngs: &mut [Xoshiro256; REFIT_LANES],
        out: &mut [[u64; REFIT_LANES]],
        vectorised: bool,
    ) {
        debug_assert_eq!(out.len(), self.len());
        let mut drawn = [0; REFIT_LANES];
        for (poisson, cells) in self.runs() {
            let sums = poisson.fill_lanes(rngs, &mut out[cells], vectorised);
            for (d, s) in drawn.iter_mut().zip(sums) {
                *d += s;
            }
        }
        for (lane, rng) in rngs.iter_mut().enumerate() {
            while drawn[lane] > self.total {
                drawn[lane] = 0;
                for (poisson, cells) in self.runs() {
                    for cell in &mut out[cells] {
                        cell[lane] = poisson.sample(rng);
                        drawn[lane] += cell[lane];
                    }
                }
            }
        }
        let short = drawn.map(|d| self.total - d);
        let common = if vectorised {
            short.iter().copied().min().unwrap_or(0)
        } else {
            0
        };
        let mut uniforms = [[0; REFIT_LANES]; 64];
        let mut left = common as usize;
        while left > 0 {
            let chunk = &mut uniforms[..left.min(64)];
            fill_lane_uniforms(rngs, chunk);
            for u in &*chunk {
                for (lane, &u) in u.iter().enumerate() {
                    out[self.alias.pick(u)][lane] += 1;
                }
            }
            left -= chunk.len();
        }
        for (lane, rng) in rngs.iter_mut().enumerate() {
            for _ in common..short[lane] {
                out[self.alias.pick(rng.next_u64())][lane] += 1;
            }
        }
    }
}

/// One Poisson sampler per distinct weight, with mean Λ·w/N, Λ = N − 2√N; the most frequent
/// weights get alias tables while [`TABLE_BUDGET`] lasts. Returns the samplers and the index
/// of each weight's sampler.
fn samplers_by_weight(weights: &[u64], total: u64) -> (Vec<Poisson>, BTreeMap<u64, u32>) {
    let n = total as f64;
    let lambda = (n - POISSON_MARGIN_SDS * n.sqrt()).max(0.0);
    let mean = |w: u64| {
        if total == 0 {
            0.0
        } else {
            lambda * (w as f64 / n)
        }
    };
    let mut frequency: BTreeMap<u64, usize> = BTreeMap::new();
    weights
        .iter()
        .for_each(|&w| *frequency.entry(w).or_default() += 1);
    let mut distinct: Vec<(u64, usize)> = frequency.into_iter().collect();
    distinct.sort_by_key(|&(w, cells)| (std::cmp::Reverse(cells), w));
    let mut budget = TABLE_BUDGET;
    let mut index = BTreeMap::new();
    let poisson = distinct
        .iter()
        .enumerate()
        .map(|(k, &(w, _))| {
            index.insert(w, u32::try_from(k).expect("fewer than 2^32 cells"));
            let len = Poisson::table_len(mean(w));
            if len <= budget {
                budget -= len;
                Poisson::tabulated(mean(w))
            } else {
                Poisson::new(mean(w))
            }
        })
        .collect();
    (poisson, index)
}

/// Walker's alias table (A. J. Walker, "An efficient method for generating discrete random
/// variables with general distributions", ACM TOMS 3 (1977), 253–256) over 2^m buckets,
/// built with Vose's algorithm in exact integers on masses that sum to exactly 2^64. One
/// 64-bit uniform u picks a bucket (its top m bits) and decides between the bucket itself and
/// its alias (the remaining 64 − m bits against the bucket's threshold): one draw, one 8-byte
/// entry, no search and no data-dependent branch. Index k comes out with probability
/// mass_k/2^64 exactly. Each entry packs threshold·2^m + alias (a threshold is below 2^(64−m)).
#[derive(Debug, Clone)]
pub(crate) struct PackedAlias {
    /// Bucket-index bits m (at least 1).
    bits: u32,
    /// threshold·2^m + alias per bucket.
    entries: Vec<u64>,
}

impl PackedAlias {
    /// A table drawing index k with probability `mass[k]`/2^64; the masses must sum to
    /// exactly 2^64 and there must be fewer than 2^32 of them.
    fn new(mass: Vec<u128>) -> PackedAlias {
        let (bits, threshold, alias) = power_of_two_alias(mass);
        let full = 1u128 << (64 - bits);
        let entries = (0u64..)
            .zip(threshold.into_iter().zip(alias))
            .map(|(bucket, (threshold, alias))| {
                if u128::from(threshold) >= full {
                    // Never short: keeps itself for every u (the largest aliases to itself).
                    (((full - 1) as u64) << bits) | bucket
                } else {
                    (threshold << bits) | u64::from(alias)
                }
            })
            .collect();
        PackedAlias { bits, entries }
    }

    /// Draws cell c with probability `weights[c]`/N (N = Σ weights > 0), each probability
    /// rounded down to a multiple of 2^−64 and the remainder (below 2^−64 per cell) given to
    /// the heaviest cell; a cell of weight 0 is never drawn. With N = 0 the table is never
    /// to be drawn from.
    fn from_weights(weights: &[u64]) -> PackedAlias {
        let total = u128::from(weights.iter().sum::<u64>());
        if total == 0 {
            return PackedAlias::new(vec![1 << 64]);
        }
        let mut mass: Vec<u128> = weights
            .iter()
            .map(|&w| (u128::from(w) << 64) / total)
            .collect();
        let assigned: u128 = mass.iter().sum();
        let heaviest = (0..weights.len())
            .max_by_key(|&c| weights[c])
            .expect("weights are not all zero");
        mass[heaviest] += (1 << 64) - assigned;
        PackedAlias::new(mass)
    }

    /// The index the uniform 64-bit `u` draws.
    #[inline]
    fn pick(&self, u: u64) -> usize {
        let bucket = u >> (64 - self.bits);
        let entry = self.entries[bucket as usize];
        let mask = (1u64 << self.bits) - 1;
        // (u·2^m) | mask < threshold·2^m + alias  ⇔  rest < threshold, as alias ≤ mask.
        let keep = ((u << self.bits) | mask) < entry;
        // A select, not a branch: which way it goes is a coin flip the CPU cannot predict.
        [entry & mask, bucket][usize::from(keep)] as usize
    }

    /// Each index's total mass over all buckets (indices with none left out).
    #[cfg(test)]
    fn masses(&self) -> BTreeMap<usize, u128> {
        let full = 1u128 << (64 - self.bits);
        let mask = (1u64 << self.bits) - 1;
        let mut mass = BTreeMap::new();
        for (bucket, &entry) in (0usize..).zip(&self.entries) {
            let alias = (entry & mask) as usize;
            let threshold = u128::from(entry >> self.bits);
            let keep = if alias == bucket { full } else { threshold };
            *mass.entry(bucket).or_default() += keep;
            *mass.entry(alias).or_default() += full - keep;
        }
        mass.retain(|_, m| *m > 0);
        mass
    }
}

/// Walker's alias table over 2^m buckets (m ≥ 1, the fewest that hold every index) for
/// integer masses summing to exactly 2^64: returns m and, per bucket, the threshold (out of
/// 2^(64−m)) below which the bucket keeps itself, and its alias otherwise. Shared by
/// [`PackedAlias`] and the Poisson tables, which store the same table in different layouts.
pub(crate) fn power_of_two_alias(mut mass: Vec<u128>) -> (u32, Vec<u64>, Vec<u32>) {
    debug_assert_eq!(mass.iter().sum::<u128>(), 1 << 64);
    let bits = mass.len().next_power_of_two().trailing_zeros().max(1);
    mass.resize(1 << bits, 0);
    let (threshold, alias) = vose(&mut mass, 1u128 << (64 - bits));
    (bits, threshold, alias)
}

/// Vose's alias construction in exact integers: `mass` (consumed) holds each bucket's
/// integer mass and they sum to `mass.len() × full`. Returns per bucket the threshold below
/// which (out of `full`) the bucket keeps itself, and its alias otherwise; a bucket that is
/// never short keeps the threshold `full`.
fn vose(mass: &mut [u128], full: u128) -> (Vec<u64>, Vec<u32>) {
    let index = |c: usize| u32::try_from(c).expect("fewer than 2^32 buckets");
    let mut threshold = vec![u64::try_from(full).expect("a bucket holds below 2^64"); mass.len()];
    let mut alias: Vec<u32> = (0..mass.len()).map(index).collect();
    let mut small = Vec::with_capacity(mass.len());
    let mut large = Vec::with_capacity(mass.len());
    for (c, &m) in mass.iter().enumerate() {
        if m < full { &mut small } else { &mut large }.push(c);
    }
    // While a bucket is short some other bucket is over-full (the masses add up).
    while let (Some(s), Some(&l)) = (small.pop(), large.last()) {
        threshold[s] = u64::try_from(mass[s]).expect("below a bucket");
        alias[s] = index(l);
        mass[l] -= full - mass[s];
        if mass[l] < full {
            large.pop();
            small.push(l);
        }
    }
    (threshold, alias)
}

#[cfg(test)]
#[path = "multinomial_tests.rs"]
mod tests;
