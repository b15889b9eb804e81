//! Tied ranks from win rates and their intervals (DESIGN.md §5); no statistics are computed.
//!
//! Models are ordered by win rate, descending. Two models are linked when their win-rate
//! intervals overlap (closed intervals: touching counts); the connected components of that
//! graph share one rank, 1 + the number of models in the groups above ("competition"
//! numbering: 1, 1, 3). Overlap describes separation; it is not a significance test.

use super::StatsError;
use super::interval::Interval;

/// The tie groups in rank order. A group's place is that of its best member; members are
/// listed by win rate, descending (equal win rates keep input order).
pub fn rank_groups(
    win_rate: &[f64],
    intervals: &[Interval],
) -> Result<Vec<Vec<usize>>, StatsError> {
    validate(win_rate, intervals)?;
    let component = overlap_components(intervals);
    let mut order: Vec<usize> = (0..win_rate.len()).collect();
    order.sort_by(|&a, &b| win_rate[b].total_cmp(&win_rate[a]));
    let mut group_of_component = vec![usize::MAX; win_rate.len()];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for model in order {
        let slot = &mut group_of_component[component[model]];
        if *slot == usize::MAX {
            *slot = groups.len();
            groups.push(Vec::new());
        }
        groups[*slot].push(model);
    }
    Ok(groups)
}

/// The rank of every model, in input order (see the module docs for the rule).
pub fn tied_ranks(win_rate: &[f64], intervals: &[Interval]) -> Result<Vec<usize>, StatsError> {
    let mut ranks = vec![0; win_rate.len()];
    let mut above = 0;
    for group in rank_groups(win_rate, intervals)? {
        for &model in &group {
            ranks[model] = above + 1;
        }
        above += group.len();
    }
    Ok(ranks)
}

/// Checks lengths, finiteness and lo ≤ hi.
fn validate(win_rate: &[f64], intervals: &[Interval]) -> Result<(), StatsError> {
    if intervals.len() != win_rate.len() {
        return Err(StatsError::LengthMismatch {
            what: "intervals",
            expected: win_rate.len(),
            found: intervals.len(),
        });
    }
    if win_rate.iter().any(|x| !x.is_finite()) {
        return Err(StatsError::NonFinite { what: "win rates" });
    }
    if intervals
        .iter()
        .any(|ci| !ci.lo.is_finite() || !ci.hi.is_finite())
    {
        return Err(StatsError::NonFinite { what: "intervals" });
    }
    match intervals.iter().position(|ci| ci.lo > ci.hi) {
        Some(index) => Err(StatsError::InvertedInterval { index }),
        None => Ok(()),
    }
}

/// Connected components of the interval-overlap graph: sweeping intervals by lower bound, a
/// new component starts exactly when an interval begins after every earlier one has ended.
fn overlap_components(intervals: &[Interval]) -> Vec<usize> {
    let mut by_lo: Vec<usize> = (0..intervals.len()).collect();
    by_lo.sort_by(|&a, &b| intervals[a].lo.total_cmp(&intervals[b].lo));
    let mut component = vec![0; intervals.len()];
    let mut current = 0;
    let mut reach = f64::NEG_INFINITY;
    for (k, &model) in by_lo.iter().enumerate() {
        if k > 0 && intervals[model].lo > reach {
            current += 1;
        }
        reach = reach.max(intervals[model].hi);
        component[model] = current;
    }
    component
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::read_fixture;
    use proptest::prelude::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Deserialize)]
    struct Fixture {
        cases: Vec<Case>,
    }

    #[derive(Deserialize)]
    struct Case {
        name: String,
        models: Vec<ModelRow>,
        expected: Expected,
    }

    #[derive(Deserialize)]
    struct ModelRow {
        model: String,
        win_rate: f64,
        win_rate_ci: [f64; 2],
    }

    #[derive(Deserialize)]
    struct Expected {
        groups: Vec<Vec<String>>,
        ranks: BTreeMap<String, usize>,
    }

    #[test]
    fn matches_ranks_fixture() {
        let fx: Fixture = read_fixture("ranks.json");
        for case in fx.cases {
            let rates: Vec<f64> = case.models.iter().map(|m| m.win_rate).collect();
            let cis: Vec<Interval> = case
                .models
                .iter()
                .map(|m| Interval {
                    lo: m.win_rate_ci[0],
                    hi: m.win_rate_ci[1],
                })
                .collect();
            let name = |i: usize| case.models[i].model.clone();
            let groups = rank_groups(&rates, &cis).expect("valid case");
            let groups: Vec<Vec<String>> = groups
                .iter()
                .map(|g| g.iter().map(|&i| name(i)).collect())
                .collect();
            assert_eq!(groups, case.expected.groups, "{}", case.name);
            let ranks = tied_ranks(&rates, &cis).expect("valid case");
            for (i, rank) in ranks.into_iter().enumerate() {
                assert_eq!(
                    rank,
                    case.expected.ranks[&name(i)],
                    "{} {}",
                    case.name,
                    name(i)
                );
            }
        }
    }

    #[test]
    fn separated_models_rank_in_win_rate_order_regardless_of_input_order() {
        let rates = [0.2, 0.8, 0.5];
        let cis = [(0.1, 0.3), (0.7, 0.9), (0.4, 0.6)].map(|(lo, hi)| Interval { lo, hi });
        assert_eq!(tied_ranks(&rates, &cis), Ok(vec![3, 1, 2]));
    }

    #[test]
    fn rejects_mismatched_and_inverted_input() {
        let ci = Interval { lo: 0.6, hi: 0.4 };
        assert!(matches!(
            tied_ranks(&[0.5, 0.5], &[ci]),
            Err(StatsError::LengthMismatch { .. })
        ));
        assert_eq!(
            tied_ranks(&[0.5], &[ci]),
            Err(StatsError::InvertedInterval { index: 0 })
        );
        assert!(tied_ranks(&[], &[]).expect("empty is fine").is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Ranks agree with a brute-force transitive closure of the overlap relation.
        #[test]
        fn ranks_match_brute_force(models in prop::collection::vec((0.0f64..1.0, 0.0f64..0.2, 0.0f64..0.2), 1..12)) {
            let rates: Vec<f64> = models.iter().map(|m| m.0).collect();
            let cis: Vec<Interval> = models.iter().map(|m| Interval { lo: m.0 - m.1, hi: m.0 + m.2 }).collect();
            let n = rates.len();
            let mut linked = vec![vec![false; n]; n];
            for i in 0..n {
                for j in 0..n {
                    linked[i][j] = cis[i].overlaps(&cis[j]);
                }
            }
            for k in 0..n { for i in 0..n { for j in 0..n {
                if linked[i][k] && linked[k][j] { linked[i][j] = true; }
            } } }
            let ranks = tied_ranks(&rates, &cis).expect("valid");
            for i in 0..n {
                // Rank = 1 + models outside i's group whose group's best beats i's group's best.
                let best = |g: usize| (0..n).filter(|&m| linked[g][m]).map(|m| rates[m]).fold(f64::MIN, f64::max);
                let above = (0..n).filter(|&m| !linked[i][m] && best(m) > best(i)).count();
                prop_assert_eq!(ranks[i], above + 1);
                for j in 0..n {
                    prop_assert_eq!(linked[i][j], ranks[i] == ranks[j] && component_eq(&cis, &rates, i, j));
                }
            }
        }
    }

    /// Whether `rank_groups` puts models `i` and `j` in one group.
    fn component_eq(cis: &[Interval], rates: &[f64], i: usize, j: usize) -> bool {
        rank_groups(rates, cis)
            .expect("valid")
            .iter()
            .any(|g| g.contains(&i) && g.contains(&j))
    }
}
