//! Exact multinomial draws over many cells (the bootstrap's resampling step).
//!
//! Resampling N rows with replacement from cells holding w_c rows each is a draw from
//! Multinomial(N, w/N). We draw it by Poissonisation: X_c ~ Poisson(Λ·w_c/N) independently,
//! with Λ = N − 2√N. Given M = Σ X_c, X is Multinomial(M, w/N) (Johnson, Kotz & Balakrishnan,
//! *Discrete Multivariate Distributions*, 1997, ch. 35), so when M ≤ N adding N − M independent
//! single draws (Walker's alias method, built with Vose's algorithm in exact integers) gives
//! Multinomial(N, w/N) exactly; when M > N (probability ≈ 2%) everything is drawn again.
//! The cost is one Poisson per cell plus about 2√N alias draws. Cells with equal weights
//! share one Poisson sampler, built once: an alias table while the tables fit a fixed memory
//! budget (most frequent weights first), otherwise Hörmann's PTRS.

use std::collections::BTreeMap;

use rand_core::Rng;

use super::poisson::{Poisson, uniform_below};

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
    alias: AliasTable,
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
            alias: AliasTable::new(weights),
        }
    }

    /// Number of cells.
    pub(crate) fn len(&self) -> usize {
        self.cells
    }

    /// Total items per draw (N).
    pub(crate) fn total(&self) -> u64 {
        self.total
    }

    /// Writes one multinomial draw of N items into `out` (one count per cell).
    pub(crate) fn sample<R: Rng + ?Sized>(&self, rng: &mut R, out: &mut [u64]) {
        debug_assert_eq!(out.len(), self.len());
        let drawn = loop {
            let mut drawn = 0;
            let mut rest = &mut *out;
            for &(k, len) in &self.runs {
                let (run, tail) = rest.split_at_mut(len as usize);
                drawn += self.poisson[k as usize].fill(rng, run);
                rest = tail;
            }
            if drawn <= self.total {
                break drawn;
            }
        };
        for _ in drawn..self.total {
            out[self.alias.sample(rng)] += 1;
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

/// Walker's alias table for exact integer weights: bucket j (chosen uniformly) keeps j with
/// probability threshold_j / N and otherwise yields alias_j. Built with Vose's algorithm
/// (M. D. Vose, IEEE Trans. Software Eng. 17, 1991) on masses w_c·C, each bucket holding N.
#[derive(Debug, Clone)]
struct AliasTable {
    total: u64,
    threshold: Vec<u64>,
    alias: Vec<u32>,
}

impl AliasTable {
    fn new(weights: &[u64]) -> AliasTable {
        let total: u64 = weights.iter().sum();
        let cells = weights.len() as u128;
        let mut mass: Vec<u128> = weights.iter().map(|&w| u128::from(w) * cells).collect();
        let (threshold, alias) = vose(&mut mass, u128::from(total));
        AliasTable {
            total,
            threshold,
            alias,
        }
    }

    /// One cell index, drawn with probability w_c / N (requires N > 0).
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> usize {
        let bucket = uniform_below(rng, self.threshold.len() as u64) as usize;
        let keep = uniform_below(rng, self.total) < self.threshold[bucket];
        let alias = self.alias[bucket] as usize;
        // A select, not a branch: which way it goes is a coin flip the CPU cannot predict.
        [alias, bucket][usize::from(keep)]
    }
}

/// Vose's alias construction in exact integers: `mass` (consumed) holds each bucket's
/// integer mass and they sum to `mass.len() × full`. Returns per bucket the threshold below
/// which (out of `full`) the bucket keeps itself, and its alias otherwise; a bucket that is
/// never short keeps the threshold `full`.
pub(crate) fn vose(mass: &mut [u128], full: u128) -> (Vec<u64>, Vec<u32>) {
    let index = |c: usize| u32::try_from(c).expect("fewer than 2^32 buckets");
    let mut threshold = vec![u64::try_from(full).expect("a bucket holds below 2^64"); mass.len()];
    let mut alias: Vec<u32> = (0..mass.len()).map(index).collect();
    let (mut small, mut large): (Vec<usize>, Vec<usize>) =
        (0..mass.len()).partition(|&c| mass[c] < full);
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
