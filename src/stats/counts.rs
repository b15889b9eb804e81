//! Comparison outcomes and their aggregation into per-pair counts; no fitting, no sampling.

use serde::{Deserialize, Serialize};

use super::StatsError;

/// The result of one comparison between model `a` and model `b`.
///
/// Ties count half a win for each side; `BothBad` rows are excluded from every rating but are
/// still counted (DESIGN.md §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Model `a` won.
    AWins,
    /// Model `b` won.
    BWins,
    /// A tie: half a win for each side.
    Tie,
    /// Both answers were bad: excluded from ratings, counted for reporting.
    BothBad,
}

impl Outcome {
    /// The same comparison seen with the two models swapped.
    pub fn swapped(self) -> Outcome {
        match self {
            Outcome::AWins => Outcome::BWins,
            Outcome::BWins => Outcome::AWins,
            other => other,
        }
    }
}

/// The tallies of one unordered pair, seen from a chosen side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PairTally {
    /// Wins of the first model of the query.
    pub wins_first: u64,
    /// Wins of the second model of the query.
    pub wins_second: u64,
    /// Ties between them.
    pub ties: u64,
}

impl PairTally {
    /// Comparisons that enter the ratings (wins and ties).
    pub fn rated(&self) -> u64 {
        self.wins_first + self.wins_second + self.ties
    }
}

/// Comparison counts per unordered pair of models, plus both-bad counts per model.
///
/// This is everything a Bradley–Terry fit needs: the likelihood depends on the rows only
/// through, per pair, the wins of each side and the ties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairCounts {
    n_models: usize,
    /// Indexed by [`pair_index`]: `tallies[k] = [wins of lower index, wins of higher, ties]`.
    tallies: Vec<[u64; 3]>,
    both_bad: Vec<u64>,
}

impl PairCounts {
    /// Empty counts for `n_models` models (indices `0..n_models`).
    pub fn new(n_models: usize) -> PairCounts {
        PairCounts {
            n_models,
            tallies: vec![[0; 3]; n_pairs(n_models)],
            both_bad: vec![0; n_models],
        }
    }

    /// Records one comparison of model `a` against model `b`.
    pub fn add(&mut self, a: usize, b: usize, outcome: Outcome) -> Result<(), StatsError> {
        self.add_count(a, b, outcome, 1)
    }

    /// Records `count` identical comparisons of model `a` against model `b`.
    pub fn add_count(
        &mut self,
        a: usize,
        b: usize,
        outcome: Outcome,
        count: u64,
    ) -> Result<(), StatsError> {
        let (pair, cell) = locate(self.n_models, a, b, outcome)?;
        self.add_located(a, b, pair, cell, count);
        Ok(())
    }

    /// [`PairCounts::add_count`] for a row already [`locate`]d.
    #[inline]
    pub(crate) fn add_located(
        &mut self,
        a: usize,
        b: usize,
        pair: usize,
        cell: Option<usize>,
        count: u64,
    ) {
        match cell {
            Some(cell) => self.tallies[pair][cell] += count,
            None => {
                self.both_bad[a] += count;
                self.both_bad[b] += count;
            }
        }
    }

    /// Adds every count of `other` (same models) to these.
    pub(crate) fn merge(&mut self, other: &PairCounts) {
        debug_assert_eq!(self.n_models, other.n_models);
        for (t, o) in self.tallies.iter_mut().zip(&other.tallies) {
            for (x, y) in t.iter_mut().zip(o) {
                *x += y;
            }
        }
        for (x, y) in self.both_bad.iter_mut().zip(&other.both_bad) {
            *x += y;
        }
    }

    /// Per model: `[wins, losses, ties, both bad]`, summed from the pair tallies.
    pub fn per_model(&self) -> Vec<[u64; 4]> {
        let p = self.n_models;
        let mut out = vec![[0u64; 4]; p];
        for i in 0..p {
            for j in i + 1..p {
                let [lo, hi, ties] = self.tallies[pair_index(p, i, j)];
                out[i][0] += lo;
                out[i][1] += hi;
                out[i][2] += ties;
                out[j][0] += hi;
                out[j][1] += lo;
                out[j][2] += ties;
            }
        }
        for (o, &both_bad) in out.iter_mut().zip(&self.both_bad) {
            o[3] = both_bad;
        }
        out
    }

    /// The number of models.
    pub fn n_models(&self) -> usize {
        self.n_models
    }

    /// The tallies between models `i` and `j`, seen from `i` (`wins_first` = wins of `i`).
    pub fn pair(&self, i: usize, j: usize) -> Result<PairTally, StatsError> {
        let (k, _) = locate(self.n_models, i, j, Outcome::Tie)?;
        let [lo, hi, ties] = self.tallies[k];
        let (wins_first, wins_second) = if i < j { (lo, hi) } else { (hi, lo) };
        Ok(PairTally {
            wins_first,
            wins_second,
            ties,
        })
    }

    /// Both-bad comparisons that involved `model` (excluded from ratings).
    pub fn both_bad(&self, model: usize) -> u64 {
        self.both_bad.get(model).copied().unwrap_or(0)
    }

    /// Rated comparisons (wins and ties) that involved `model`.
    pub fn rated_matches(&self, model: usize) -> u64 {
        (0..self.n_models)
            .filter(|&other| other != model)
            .filter_map(|other| self.pair(model, other).ok())
            .map(|tally| tally.rated())
            .sum()
    }

    /// Total rated comparisons (wins and ties) over all pairs.
    pub fn rated_total(&self) -> u64 {
        self.tallies.iter().flatten().sum()
    }

    /// Total both-bad comparisons (each counted once, not once per model).
    pub fn both_bad_total(&self) -> u64 {
        self.both_bad.iter().sum::<u64>() / 2
    }

    /// Raw tallies by pair index, `[wins of lower index, wins of higher index, ties]`.
    pub(crate) fn tallies(&self) -> &[[u64; 3]] {
        &self.tallies
    }
}

/// Number of unordered pairs of `n_models` models.
pub(crate) fn n_pairs(n_models: usize) -> usize {
    n_models * n_models.saturating_sub(1) / 2
}

/// Index of the unordered pair `i < j` in row-major order of the strict upper triangle.
pub(crate) fn pair_index(n_models: usize, i: usize, j: usize) -> usize {
    debug_assert!(i < j && j < n_models);
    i * (2 * n_models - i - 1) / 2 + (j - i - 1)
}

/// Validates a comparison and returns its pair index and tally cell
/// (`0` = lower index wins, `1` = higher index wins, `2` = tie, `None` = both bad).
#[inline]
pub(crate) fn locate(
    n_models: usize,
    a: usize,
    b: usize,
    outcome: Outcome,
) -> Result<(usize, Option<usize>), StatsError> {
    for index in [a, b] {
        if index >= n_models {
            return Err(StatsError::ModelOutOfRange { index, n_models });
        }
    }
    if a == b {
        return Err(StatsError::SelfComparison { index: a });
    }
    // Branch-free: outcomes and orders come in no predictable sequence. Cell by outcome
    // (AWins, BWins, Tie, BothBad) and by whether a is the higher index (then a's win is
    // the higher index's win); 3 stands for both bad.
    const CELL: [[u8; 2]; 4] = [[0, 1], [1, 0], [2, 2], [3, 3]];
    let (lo, hi) = (a.min(b), a.max(b));
    let cell = usize::from(CELL[outcome as usize][usize::from(a > b)]);
    let cell = (cell < 3).then_some(cell);
    Ok((pair_index(n_models, lo, hi), cell))
}

/// The pairs that were ever compared, with their models, in pair-index order.
///
/// Bradley–Terry sums only over these; a bootstrap resample can never create a new pair.
#[derive(Debug, Clone)]
pub(crate) struct ActivePairs {
    /// `(i, j)` with `i < j` for every pair with at least one rated comparison.
    pub(crate) models: Vec<(usize, usize)>,
    /// Pair index → position in `models`, `u32::MAX` when the pair is inactive.
    pub(crate) slot: Vec<u32>,
}

impl ActivePairs {
    /// Collects the pairs of `counts` with at least one rated comparison.
    pub(crate) fn from_counts(counts: &PairCounts) -> ActivePairs {
        let p = counts.n_models();
        let mut models = Vec::new();
        let mut slot = vec![u32::MAX; n_pairs(p)];
        for i in 0..p {
            for j in i + 1..p {
                let k = pair_index(p, i, j);
                if counts.tallies()[k].iter().sum::<u64>() > 0 {
                    slot[k] = u32::try_from(models.len()).expect("fewer than 2^32 model pairs");
                    models.push((i, j));
                }
            }
        }
        ActivePairs { models, slot }
    }
}

/// Per active pair: `w` = wins of the lower index + ties/2, `n` = rated comparisons.
///
/// This is the sufficient statistic of the Bradley–Terry likelihood.
#[derive(Debug, Clone, Default)]
pub(crate) struct PairData {
    /// Wins of the lower-index model, ties counting one half.
    pub(crate) w: Vec<f64>,
    /// Rated comparisons of the pair.
    pub(crate) n: Vec<f64>,
}

impl PairData {
    /// The full-data sufficient statistics of `counts` over `active`.
    pub(crate) fn from_counts(counts: &PairCounts, active: &ActivePairs) -> PairData {
        let p = counts.n_models();
        let (w, n) = active
            .models
            .iter()
            .map(|&(i, j)| {
                let [lo, hi, ties] = counts.tallies()[pair_index(p, i, j)];
                (lo as f64 + 0.5 * ties as f64, (lo + hi + ties) as f64)
            })
            .unzip();
        PairData { w, n }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_index_enumerates_upper_triangle_in_order() {
        let p = 6;
        let mut expected = 0;
        for i in 0..p {
            for j in i + 1..p {
                assert_eq!(pair_index(p, i, j), expected);
                expected += 1;
            }
        }
        assert_eq!(expected, n_pairs(p));
    }

    #[test]
    fn add_is_symmetric_under_swapping_sides() {
        let mut left = PairCounts::new(3);
        let mut right = PairCounts::new(3);
        for (a, b, o) in [
            (0, 2, Outcome::AWins),
            (2, 1, Outcome::Tie),
            (1, 0, Outcome::BWins),
        ] {
            left.add(a, b, o).expect("valid row");
            right.add(b, a, o.swapped()).expect("valid row");
        }
        assert_eq!(left, right);
        let tally = left.pair(0, 1).expect("valid pair");
        assert_eq!((tally.wins_first, tally.wins_second, tally.ties), (1, 0, 0));
    }

    #[test]
    fn add_rejects_bad_indices() {
        let mut counts = PairCounts::new(2);
        assert_eq!(
            counts.add(0, 2, Outcome::Tie),
            Err(StatsError::ModelOutOfRange {
                index: 2,
                n_models: 2
            })
        );
        assert_eq!(
            counts.add(1, 1, Outcome::Tie),
            Err(StatsError::SelfComparison { index: 1 })
        );
    }

    #[test]
    fn both_bad_is_counted_but_not_rated() {
        let mut counts = PairCounts::new(3);
        counts.add(0, 1, Outcome::BothBad).expect("valid row");
        counts.add(0, 2, Outcome::AWins).expect("valid row");
        assert_eq!(counts.both_bad(0), 1);
        assert_eq!(counts.both_bad(2), 0);
        assert_eq!(counts.both_bad_total(), 1);
        assert_eq!(counts.rated_total(), 1);
        assert_eq!(counts.rated_matches(0), 1);
        assert_eq!(ActivePairs::from_counts(&counts).models, vec![(0, 2)]);
    }
}
