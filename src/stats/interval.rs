//! Confidence intervals and the percentile rule that turns bootstrap samples into one.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

/// Lower quantile of a 95% percentile interval.
pub const LOWER_QUANTILE: f64 = 0.025;
/// Upper quantile of a 95% percentile interval.
pub const UPPER_QUANTILE: f64 = 0.975;

/// A closed interval `[lo, hi]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
}

impl Interval {
    /// `hi − lo`.
    pub fn width(&self) -> f64 {
        self.hi - self.lo
    }

    /// Whether `x` lies in `[lo, hi]`.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// Whether two closed intervals share a point (touching counts).
    pub fn overlaps(&self, other: &Interval) -> bool {
        self.lo <= other.hi && other.lo <= self.hi
    }
}

/// The `q`-quantile of `sorted` (ascending, non-empty) by linear interpolation between order
/// statistics at position (len − 1)·q: Hyndman & Fan (1996) definition 7, numpy's default
/// `percentile(method="linear")`.
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of an empty sample");
    let (below, frac) = quantile_position(sorted.len(), q);
    let above = (below + 1).min(sorted.len() - 1);
    sorted[below] + frac * (sorted[above] - sorted[below])
}

/// The order statistic just below position (len − 1)·q and the fraction of the way to the next.
fn quantile_position(len: usize, q: f64) -> (usize, f64) {
    let h = (len - 1) as f64 * q.clamp(0.0, 1.0);
    let below = h.floor() as usize;
    (below, h - below as f64)
}

/// The 95% percentile interval (2.5% and 97.5% quantiles, the same values as
/// [`quantile_sorted`] of the sorted sample) of `samples`, which are reordered in place.
/// `None` for an empty sample. Selection, not sorting: O(n) per bound.
pub fn percentile_interval(samples: &mut [f64]) -> Option<Interval> {
    if samples.is_empty() {
        return None;
    }
    Some(Interval {
        lo: quantile_select(samples, LOWER_QUANTILE),
        hi: quantile_select(samples, UPPER_QUANTILE),
    })
}

/// [`quantile_sorted`] without sorting: the order statistic below the position by selection,
/// the one above as the smallest value after it.
fn quantile_select(samples: &mut [f64], q: f64) -> f64 {
    let (below, frac) = quantile_position(samples.len(), q);
    let (_, &mut at_below, after) = samples.select_nth_unstable_by(below, f64::total_cmp);
    let at_above = after
        .iter()
        .copied()
        .min_by(f64::total_cmp)
        .unwrap_or(at_below);
    at_below + frac * (at_above - at_below)
}

/// The 95% percentile interval of a stream of `total` samples, holding only the order
/// statistics it needs: the ⌊(total − 1)·0.025⌋ + 2 smallest and the
/// total − ⌊(total − 1)·0.975⌋ largest values (26 each of 1000), about 5% of the stream.
/// The result is exactly [`percentile_interval`] of the whole stream, whatever the order in
/// which the values come.
#[derive(Debug, Clone)]
pub struct IntervalTails {
    total: usize,
    seen: usize,
    /// The smallest values so far as [`order_key`]s (largest on top), at most `keep_low`.
    low: BinaryHeap<i64>,
    keep_low: usize,
    /// The largest values so far as [`order_key`]s (smallest on top), at most `keep_high`.
    high: BinaryHeap<Reverse<i64>>,
    keep_high: usize,
    /// A value enters `low` only below this key: its top once full, `i64::MAX` before.
    low_bar: i64,
    /// A value enters `high` only above this key: its top once full, `i64::MIN` before.
    high_bar: i64,
}

impl IntervalTails {
    /// Tails of a stream of `total` (at least one) samples.
    pub fn new(total: usize) -> IntervalTails {
        let (keep_low, keep_high) = IntervalTails::keeps(total);
        IntervalTails {
            total,
            seen: 0,
            low: BinaryHeap::with_capacity(keep_low),
            keep_low,
            high: BinaryHeap::with_capacity(keep_high),
            keep_high,
            low_bar: i64::MAX,
            high_bar: i64::MIN,
        }
    }

    /// The values the tails of a stream of `total` samples hold at most.
    pub fn held(total: usize) -> usize {
        let (low, high) = IntervalTails::keeps(total);
        low + high
    }

    /// How many of the smallest and of the largest of `total` samples the interval needs.
    fn keeps(total: usize) -> (usize, usize) {
        assert!(total > 0, "an interval of no samples");
        let (below_lo, _) = quantile_position(total, LOWER_QUANTILE);
        let (below_hi, _) = quantile_position(total, UPPER_QUANTILE);
        ((below_lo + 2).min(total), total - below_hi)
    }

    /// Takes one sample (at most `total` in all). Most samples belong to neither tail and
    /// cost two comparisons.
    #[inline]
    pub fn push(&mut self, x: f64) {
        debug_assert!(self.seen < self.total, "more samples than announced");
        self.seen += 1;
        let k = order_key(x);
        self.push_key_low(k);
        self.push_key_high(k);
    }

    /// Takes every sample `other` took (another part of the same stream: both made for the
    /// same `total`). The smallest values of the whole are among the smallest of its parts,
    /// and the largest among theirs, so the merged tails are those of one stream.
    pub fn merge(&mut self, other: &IntervalTails) {
        assert_eq!(
            self.total, other.total,
            "tails of streams of different lengths"
        );
        debug_assert!(
            self.seen + other.seen <= self.total,
            "more samples than announced"
        );
        for &k in &other.low {
            self.push_key_low(k);
        }
        for &Reverse(k) in &other.high {
            self.push_key_high(k);
        }
        self.seen += other.seen;
    }

    /// Adds `k` to the low tail if it belongs there.
    #[inline]
    fn push_key_low(&mut self, k: i64) {
        if k < self.low_bar || self.low.len() < self.keep_low {
            if self.low.len() < self.keep_low {
                self.low.push(k);
            } else if let Some(mut top) = self.low.peek_mut() {
                *top = k;
            }
            if self.low.len() == self.keep_low {
                self.low_bar = self.low.peek().copied().unwrap_or(i64::MAX);
            }
        }
    }

    /// Adds `k` to the high tail if it belongs there.
    #[inline]
    fn push_key_high(&mut self, k: i64) {
        if k > self.high_bar || self.high.len() < self.keep_high {
            if self.high.len() < self.keep_high {
                self.high.push(Reverse(k));
            } else if let Some(mut top) = self.high.peek_mut() {
                *top = Reverse(k);
            }
            if self.high.len() == self.keep_high {
                self.high_bar = self.high.peek().map_or(i64::MIN, |r| r.0);
            }
        }
    }

    /// The interval, once all `total` samples are in; `None` before.
    pub fn interval(&self) -> Option<Interval> {
        if self.seen != self.total {
            return None;
        }
        let mut low: Vec<i64> = self.low.iter().copied().collect();
        low.sort_unstable();
        let low: Vec<f64> = low.into_iter().map(from_order_key).collect();
        let mut high: Vec<i64> = self.high.iter().map(|r| r.0).collect();
        high.sort_unstable();
        let high: Vec<f64> = high.into_iter().map(from_order_key).collect();
        // `low` holds order statistics 0.., `high` those from ⌊(total − 1)·0.975⌋ on.
        let bound = |sorted: &[f64], offset: usize, q: f64| {
            let (below, frac) = quantile_position(self.total, q);
            let at_below = sorted[below - offset];
            let at_above = sorted.get(below - offset + 1).copied().unwrap_or(at_below);
            at_below + frac * (at_above - at_below)
        };
        let (below_hi, _) = quantile_position(self.total, UPPER_QUANTILE);
        Some(Interval {
            lo: bound(&low, 0, LOWER_QUANTILE),
            hi: bound(&high, below_hi, UPPER_QUANTILE),
        })
    }
}

/// An integer whose order is [`f64::total_cmp`]'s (the order [`percentile_interval`] selects
/// by): the bits, with those after the sign flipped for negative values.
#[inline]
fn order_key(x: f64) -> i64 {
    let bits = x.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// The f64 whose [`order_key`] is `key` (the map is its own inverse).
fn from_order_key(key: i64) -> f64 {
    f64::from_bits((key ^ ((((key >> 63) as u64) >> 1) as i64)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_follow_numpy_linear_rule() {
        // numpy.percentile([1, 2, 3, 4, 10], [2.5, 50, 97.5]) = [1.1, 3.0, 9.4]
        let xs = [1.0, 2.0, 3.0, 4.0, 10.0];
        assert!((quantile_sorted(&xs, 0.025) - 1.1).abs() < 1e-12);
        assert_eq!(quantile_sorted(&xs, 0.5), 3.0);
        assert!((quantile_sorted(&xs, 0.975) - 9.4).abs() < 1e-12);
        assert_eq!(quantile_sorted(&[5.0], 0.975), 5.0);
    }

    proptest::proptest! {
        /// Selection gives exactly the quantiles of the sorted sample.
        #[test]
        fn selection_matches_sorting(xs in proptest::collection::vec(-1e3f64..1e3, 1..300)) {
            let mut sorted = xs.clone();
            sorted.sort_by(f64::total_cmp);
            let mut work = xs;
            let ci = percentile_interval(&mut work).expect("non-empty");
            proptest::prop_assert_eq!(ci.lo, quantile_sorted(&sorted, LOWER_QUANTILE));
            proptest::prop_assert_eq!(ci.hi, quantile_sorted(&sorted, UPPER_QUANTILE));
        }
    }

    #[test]
    fn percentile_interval_handles_reversed_input_and_empty() {
        let mut xs: Vec<f64> = (0..1001).rev().map(f64::from).collect();
        let ci = percentile_interval(&mut xs).expect("non-empty");
        assert_eq!((ci.lo, ci.hi), (25.0, 975.0));
        assert_eq!(percentile_interval(&mut []), None);
    }

    #[test]
    fn touching_intervals_overlap() {
        let a = Interval { lo: 0.2, hi: 0.4 };
        assert!(a.overlaps(&Interval { lo: 0.4, hi: 0.6 }));
        assert!(!a.overlaps(&Interval { lo: 0.41, hi: 0.6 }));
    }

    proptest::proptest! {
        /// The tails give exactly the interval of the whole sample, in any order, with ties.
        #[test]
        fn tails_match_the_whole_sample(
            xs in proptest::collection::vec(-20i32..20, 1..400),
            scale in 0.1f64..10.0,
            rotate in 0usize..400,
        ) {
            let mut xs: Vec<f64> = xs.into_iter().map(|x| f64::from(x) * scale).collect();
            let n = xs.len();
            xs.rotate_left(rotate % n);
            let mut tails = IntervalTails::new(n);
            for (k, &x) in xs.iter().enumerate() {
                proptest::prop_assert_eq!(tails.interval(), None, "early at {}", k);
                tails.push(x);
            }
            let mut whole = xs;
            proptest::prop_assert_eq!(tails.interval(), percentile_interval(&mut whole));
        }
    }

    proptest::proptest! {
        /// The integer key orders every f64 (infinities, zeros of both signs, NaNs) as
        /// `total_cmp` does, and maps back to the same bits.
        #[test]
        fn order_key_is_total_cmp(a in proptest::num::f64::ANY, b in proptest::num::f64::ANY) {
            proptest::prop_assert_eq!(order_key(a).cmp(&order_key(b)), a.total_cmp(&b));
            proptest::prop_assert_eq!(from_order_key(order_key(a)).to_bits(), a.to_bits());
        }
    }

    proptest::proptest! {
        /// Tails of the parts of a stream, merged, are the tails of the whole stream.
        #[test]
        fn merged_tails_match_the_whole_sample(
            xs in proptest::collection::vec(-20i32..20, 1..400),
            cuts in proptest::collection::vec(0usize..400, 0..4),
        ) {
            let xs: Vec<f64> = xs.into_iter().map(f64::from).collect();
            let n = xs.len();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (n + 1)).collect();
            cuts.push(0);
            cuts.push(n);
            cuts.sort_unstable();
            let mut merged = IntervalTails::new(n);
            for part in cuts.windows(2) {
                let mut tails = IntervalTails::new(n);
                for &x in &xs[part[0]..part[1]] {
                    tails.push(x);
                }
                merged.merge(&tails);
            }
            let mut whole = xs;
            proptest::prop_assert_eq!(merged.interval(), percentile_interval(&mut whole));
        }
    }

    #[test]
    fn tails_keep_about_five_percent() {
        let tails = IntervalTails::new(1000);
        assert_eq!((tails.keep_low, tails.keep_high), (26, 26));
        assert_eq!(IntervalTails::held(1000), 52);
        let tails = IntervalTails::new(1);
        assert_eq!((tails.keep_low, tails.keep_high), (1, 1));
        let mut big = IntervalTails::new(1_000_000);
        for k in 0..1_000_000u64 {
            // A permutation of 0..10^6 (7919 is prime and coprime with 10^6).
            big.push(((k * 7919) % 1_000_000) as f64);
        }
        assert!(big.low.len() + big.high.len() <= 50_003);
        let ci = big.interval().expect("complete");
        // numpy.percentile(range(10**6), [2.5, 97.5]) = [24999.975, 974999.025]
        assert!((ci.lo - 24_999.975).abs() < 1e-6 && (ci.hi - 974_999.025).abs() < 1e-6);
    }
}
