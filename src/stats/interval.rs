//! Confidence intervals and the percentile rule that turns bootstrap samples into one.

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
}
