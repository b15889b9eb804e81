//! Wilson score intervals for pass rates (checks, rubric compliance); pure arithmetic.
//!
//! Wilson (1927), "Probable inference, the law of succession, and statistical inference",
//! JASA 22: with p̂ = x/n and z the 97.5% standard-normal quantile,
//! centre = (p̂ + z²/2n)/(1 + z²/n), half-width = z/(1 + z²/n)·sqrt(p̂(1−p̂)/n + z²/4n²).

use super::StatsError;
use super::interval::Interval;

/// The exact 97.5% quantile of the standard normal distribution, Φ⁻¹(0.975) (the reference
/// fixture uses this value, not 1.96).
pub const WILSON_Z: f64 = 1.959_963_984_540_054;

/// The 95% Wilson score interval for `passed` successes out of `total`, within [0, 1];
/// `None` ("unavailable") when `total` is 0.
pub fn wilson_interval(passed: u64, total: u64) -> Result<Option<Interval>, StatsError> {
    if passed > total {
        return Err(StatsError::PassedExceedsTotal { passed, total });
    }
    if total == 0 {
        return Ok(None);
    }
    let n = total as f64;
    let p = passed as f64 / n;
    let z2 = WILSON_Z * WILSON_Z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = WILSON_Z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    // At x = 0 and x = n the bounds are exactly 0 and 1; rounding would miss them by an ulp.
    let lo = if passed == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if passed == total {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Ok(Some(Interval { lo, hi }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::read_fixture;
    use proptest::prelude::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Fixture {
        cases: Vec<Case>,
        tolerance: f64,
    }

    #[derive(Deserialize)]
    struct Case {
        passed: u64,
        total: u64,
        expected: Option<[f64; 2]>,
    }

    #[test]
    fn matches_wilson_fixture() {
        let fx: Fixture = read_fixture("wilson.json");
        let mut max_err: f64 = 0.0;
        for case in &fx.cases {
            let got = wilson_interval(case.passed, case.total).expect("valid counts");
            match (got, case.expected) {
                (None, None) => {}
                (Some(ci), Some([lo, hi])) => {
                    max_err = max_err.max((ci.lo - lo).abs()).max((ci.hi - hi).abs());
                }
                (got, want) => panic!("{}/{}: {got:?} vs {want:?}", case.passed, case.total),
            }
        }
        eprintln!("wilson.json: max error {max_err:e}");
        assert!(max_err <= fx.tolerance, "max error {max_err}");
    }

    #[test]
    fn rejects_more_passes_than_attempts() {
        assert_eq!(
            wilson_interval(3, 2),
            Err(StatsError::PassedExceedsTotal {
                passed: 3,
                total: 2
            })
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The interval lies in [0, 1] and contains p̂.
        #[test]
        fn contains_estimate_within_unit_interval(total in 1u64..1_000_000, frac in 0.0f64..=1.0) {
            let passed = ((total as f64) * frac).round() as u64;
            let ci = wilson_interval(passed, total).expect("valid").expect("total > 0");
            let p = passed as f64 / total as f64;
            prop_assert!(0.0 <= ci.lo && ci.lo <= p && p <= ci.hi && ci.hi <= 1.0, "{:?} {}", ci, p);
        }
    }
}
