//! Sequential Elo ratings over comparisons in recorded order (a secondary leaderboard column).
//!
//! Elo (1978), *The Rating of Chessplayers, Past and Present*: expected score
//! E_a = 1/(1 + 10^((R_b − R_a)/400)); after a match R_a += K·(S_a − E_a) and R_b −= the same
//! amount (zero-sum). DESIGN.md §5: start 1000, ties score 0.5, K = 32 while either side has
//! fewer than 30 recorded matches before this one, else 16. Both-bad rows are skipped: they
//! neither change ratings nor count as matches (the reference fixture's convention).

use serde::Serialize;

use super::StatsError;
use super::counts::{Outcome, locate};

/// Every model's rating before its first match.
pub const ELO_START: f64 = 1000.0;
/// K while either side has fewer than [`ELO_ESTABLISHED_MATCHES`] matches.
pub const ELO_K_NEW: f64 = 32.0;
/// K once both sides have at least [`ELO_ESTABLISHED_MATCHES`] matches.
pub const ELO_K_ESTABLISHED: f64 = 16.0;
/// Matches after which a model counts as established.
pub const ELO_ESTABLISHED_MATCHES: u64 = 30;

/// ln(10)/400: the exponent of the expected-score formula on the natural scale.
const LN10_OVER_400: f64 = std::f64::consts::LN_10 / 400.0;

/// One model's Elo result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EloEntry {
    /// Final rating; `None` ("unavailable") for a model that never played a rated match.
    pub rating: Option<f64>,
    /// Rated matches played (both-bad rows excluded).
    pub matches: u64,
}

/// Runs Elo over `rows` `(model a, model b, outcome)` in the given order, for `n_models`
/// models; returns one entry per model index.
pub fn elo(
    n_models: usize,
    rows: impl IntoIterator<Item = (usize, usize, Outcome)>,
) -> Result<Vec<EloEntry>, StatsError> {
    let mut rating = vec![ELO_START; n_models];
    let mut matches = vec![0u64; n_models];
    for (a, b, outcome) in rows {
        locate(n_models, a, b, outcome)?;
        if outcome == Outcome::BothBad {
            continue;
        }
        // By outcome (AWins, BWins, Tie): a lookup, as outcomes come in no predictable order.
        const SCORE: [f64; 3] = [1.0, 0.0, 0.5];
        let score = SCORE[outcome as usize];
        // 10^x as e^(x·ln 10): the same value to rounding, and exp is much cheaper than pow.
        let expected = 1.0 / (1.0 + ((rating[b] - rating[a]) * LN10_OVER_400).exp());
        let established = matches[a].min(matches[b]) >= ELO_ESTABLISHED_MATCHES;
        let k = if established {
            ELO_K_ESTABLISHED
        } else {
            ELO_K_NEW
        };
        let delta = k * (score - expected);
        rating[a] += delta;
        rating[b] -= delta;
        matches[a] += 1;
        matches[b] += 1;
    }
    Ok(rating
        .into_iter()
        .zip(matches)
        .map(|(r, m)| EloEntry {
            rating: (m > 0).then_some(r),
            matches: m,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::{ModelNames, Row, read_fixture};
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Deserialize)]
    struct Fixture {
        comparisons: Vec<Row>,
        expected: BTreeMap<String, Expected>,
        tolerance: f64,
    }

    #[derive(Deserialize)]
    struct Expected {
        elo: f64,
        matches: u64,
    }

    #[test]
    fn matches_elo_fixture() {
        let fx: Fixture = read_fixture("elo.json");
        let names = ModelNames::from_keys(fx.expected.keys());
        let rows = fx.comparisons.iter().map(|r| names.row(r));
        let got = elo(names.len(), rows).expect("valid rows");
        let mut max_err: f64 = 0.0;
        for (name, want) in &fx.expected {
            let entry = got[names.index(name)];
            let rating = entry.rating.expect("every model played");
            max_err = max_err.max((rating - want.elo).abs());
            assert_eq!(entry.matches, want.matches, "{name} matches");
        }
        eprintln!("elo.json: max rating error {max_err:e}");
        assert!(max_err <= fx.tolerance, "max error {max_err}");
    }

    #[test]
    fn first_match_moves_both_by_sixteen_and_sums_to_zero() {
        let got = elo(3, [(0, 1, Outcome::AWins), (1, 2, Outcome::BothBad)]).expect("valid");
        assert_eq!(got[0].rating, Some(1016.0));
        assert_eq!(got[1].rating, Some(984.0));
        assert_eq!(
            got[2],
            EloEntry {
                rating: None,
                matches: 0
            }
        );
    }

    #[test]
    fn k_drops_once_both_sides_have_thirty_matches() {
        let rows: Vec<_> = (0..30).map(|_| (0, 1, Outcome::Tie)).collect();
        let before = elo(2, rows.clone()).expect("valid");
        assert_eq!(before[0].rating, Some(1000.0));
        let mut more = rows;
        more.push((0, 1, Outcome::AWins));
        let after = elo(2, more).expect("valid");
        assert_eq!(after[0].rating, Some(1008.0));
    }
}
