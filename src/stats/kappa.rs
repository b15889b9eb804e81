//! Judge–human agreement: raw agreement, Cohen's kappa and its seeded bootstrap interval.
//!
//! Cohen (1960), "A coefficient of agreement for nominal scales", Educational and
//! Psychological Measurement 20: κ = (p_o − p_e)/(1 − p_e) with p_o the share of items on
//! which both raters agree and p_e = Σ_k (row share_k)·(column share_k), over the categories
//! {A better, B better, tie, both bad}. Identical to scikit-learn's `cohen_kappa_score`.
//!
//! Degenerate case: p_e = 1 happens only when both raters put every item in one and the same
//! category; κ is then 0/0 and reported as `None` (undefined; scikit-learn returns NaN).

use serde::{Deserialize, Serialize};

use super::StatsError;
use super::interval::{Interval, percentile_interval};
use super::multinomial::CellSampler;
use super::poisson::{resample_rng, uniform_below};

/// A pairwise verdict category, as chosen by the judge or by a human.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelCategory {
    /// Answer A is better.
    A,
    /// Answer B is better.
    B,
    /// A tie.
    Tie,
    /// Both answers are bad.
    BothBad,
}

const CATEGORIES: usize = 4;

/// The 4 × 4 contingency table `judge category × human category`, row-major.
type Table = [u64; CATEGORIES * CATEGORIES];

/// Share of items on which `judge[i] == human[i]`; `None` when there are no items.
pub fn agreement(
    judge: &[LabelCategory],
    human: &[LabelCategory],
) -> Result<Option<f64>, StatsError> {
    let table = contingency(judge, human)?;
    let n: u64 = table.iter().sum();
    Ok((n > 0).then(|| diagonal(&table) as f64 / n as f64))
}

/// Cohen's kappa of the paired labels; `None` for no items or when p_e = 1 (see module docs).
pub fn cohen_kappa(
    judge: &[LabelCategory],
    human: &[LabelCategory],
) -> Result<Option<f64>, StatsError> {
    Ok(kappa_of(&contingency(judge, human)?))
}

/// 95% percentile bootstrap interval of kappa over items, from `resamples` resamples seeded
/// by `seed` (one generator per resample, see `resample_rng`). Resampling items with replacement is drawn
/// as a multinomial over the 16 contingency cells, which has the same distribution.
/// Resamples in which kappa is undefined are left out; `None` when none is defined. Also
/// returns in how many resamples kappa was defined (the interval's sample).
pub fn kappa_bootstrap(
    judge: &[LabelCategory],
    human: &[LabelCategory],
    resamples: usize,
    seed: u64,
) -> Result<(Option<Interval>, usize), StatsError> {
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    let cells = CellSampler::new(&contingency(judge, human)?);
    let mut samples: Vec<f64> = (0..resamples)
        .filter_map(|r| {
            let mut drawn: Table = [0; CATEGORIES * CATEGORIES];
            cells.sample(&mut resample_rng(seed, r), &mut drawn);
            kappa_of(&drawn)
        })
        .collect();
    let defined = samples.len();
    Ok((percentile_interval(&mut samples), defined))
}

/// [`kappa_bootstrap`] over clusters: each cluster (an item labelled by several people) is
/// drawn whole, bringing all its `(judge, human)` pairs, so labels of one item are not taken
/// for independent evidence (the cluster bootstrap, Davison & Hinkley 1997, §3.8). A resample
/// is as many uniform picks among the clusters as there are clusters. Returns the interval and
/// in how many resamples kappa was defined.
pub fn kappa_cluster_bootstrap(
    clusters: &[Vec<(LabelCategory, LabelCategory)>],
    resamples: usize,
    seed: u64,
) -> Result<(Option<Interval>, usize), StatsError> {
    if resamples == 0 {
        return Err(StatsError::NoResamples);
    }
    let tables: Vec<Table> = clusters
        .iter()
        .map(|pairs| {
            let (judge, human): (Vec<_>, Vec<_>) = pairs.iter().copied().unzip();
            contingency(&judge, &human)
        })
        .collect::<Result<_, _>>()?;
    if tables.is_empty() {
        return Ok((None, 0));
    }
    let k = tables.len() as u64;
    let mut samples: Vec<f64> = (0..resamples)
        .filter_map(|r| {
            let mut rng = resample_rng(seed, r);
            let mut drawn: Table = [0; CATEGORIES * CATEGORIES];
            for _ in 0..k {
                let t = &tables[uniform_below(&mut rng, k) as usize];
                drawn.iter_mut().zip(t).for_each(|(d, c)| *d += c);
            }
            kappa_of(&drawn)
        })
        .collect();
    let defined = samples.len();
    Ok((percentile_interval(&mut samples), defined))
}

/// Builds the contingency table, checking that both label lists have the same length.
fn contingency(judge: &[LabelCategory], human: &[LabelCategory]) -> Result<Table, StatsError> {
    if judge.len() != human.len() {
        return Err(StatsError::LengthMismatch {
            what: "human labels",
            expected: judge.len(),
            found: human.len(),
        });
    }
    let mut table = [0; CATEGORIES * CATEGORIES];
    for (&j, &h) in judge.iter().zip(human) {
        table[index(j) * CATEGORIES + index(h)] += 1;
    }
    Ok(table)
}

fn index(category: LabelCategory) -> usize {
    match category {
        LabelCategory::A => 0,
        LabelCategory::B => 1,
        LabelCategory::Tie => 2,
        LabelCategory::BothBad => 3,
    }
}

fn diagonal(table: &Table) -> u64 {
    (0..CATEGORIES).map(|k| table[k * CATEGORIES + k]).sum()
}

/// κ = 1 − (1 − p_o)/(1 − p_e) = 1 − n·(n − agree)/(n² − Σ_k row_k·col_k), from exact
/// integer sums (the form scikit-learn evaluates).
fn kappa_of(table: &Table) -> Option<f64> {
    let n: u64 = table.iter().sum();
    let row = |k: usize| -> u64 { table[k * CATEGORIES..(k + 1) * CATEGORIES].iter().sum() };
    let col = |k: usize| -> u64 { (0..CATEGORIES).map(|r| table[r * CATEGORIES + k]).sum() };
    let chance: u128 = (0..CATEGORIES)
        .map(|k| u128::from(row(k)) * u128::from(col(k)))
        .sum();
    let n2 = u128::from(n) * u128::from(n);
    if n == 0 || chance == n2 {
        return None;
    }
    let disagree = u128::from(n) * u128::from(n - diagonal(table));
    Some(1.0 - disagree as f64 / (n2 - chance) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::read_fixture;
    use LabelCategory::{A, B, BothBad, Tie};
    use proptest::prelude::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Fixture {
        cases: Vec<Case>,
        tolerance: f64,
    }

    #[derive(Deserialize)]
    struct Case {
        name: String,
        judge: Vec<LabelCategory>,
        human: Vec<LabelCategory>,
        expected: Expected,
    }

    #[derive(Deserialize)]
    struct Expected {
        agreement: f64,
        kappa: f64,
    }

    #[test]
    fn matches_kappa_fixture() {
        let fx: Fixture = read_fixture("kappa.json");
        let mut max_err: f64 = 0.0;
        for case in &fx.cases {
            let agree = agreement(&case.judge, &case.human).expect("same length");
            let kappa = cohen_kappa(&case.judge, &case.human).expect("same length");
            let agree = agree.expect("non-empty");
            let kappa = kappa.expect("defined");
            let err = (agree - case.expected.agreement)
                .abs()
                .max((kappa - case.expected.kappa).abs());
            assert!(err <= fx.tolerance, "{}: error {err}", case.name);
            max_err = max_err.max(err);
        }
        eprintln!("kappa.json: max error {max_err:e}");
    }

    #[test]
    fn degenerate_and_empty_inputs_are_undefined() {
        assert_eq!(cohen_kappa(&[Tie, Tie], &[Tie, Tie]), Ok(None));
        assert_eq!(agreement(&[Tie, Tie], &[Tie, Tie]), Ok(Some(1.0)));
        assert_eq!(cohen_kappa(&[], &[]), Ok(None));
        assert_eq!(agreement(&[], &[]), Ok(None));
        // One rater constant, the other not: p_e < 1, kappa defined (and 0).
        assert_eq!(cohen_kappa(&[A, A], &[A, B]), Ok(Some(0.0)));
        assert!(matches!(
            cohen_kappa(&[A], &[]),
            Err(StatsError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn cluster_bootstrap_of_single_pairs_matches_and_clusters_widen() {
        let judge: Vec<_> = (0..120).map(|i| [A, B, Tie, BothBad][i % 4]).collect();
        let human: Vec<_> = (0..120)
            .map(|i| [A, B, Tie, BothBad][(i % 4 + i / 90) % 4])
            .collect();
        let single: Vec<Vec<_>> = judge
            .iter()
            .zip(&human)
            .map(|(&j, &h)| vec![(j, h)])
            .collect();
        let (by_item, _) = kappa_cluster_bootstrap(&single, 2000, 3).expect("ok");
        let (by_row, _) = kappa_bootstrap(&judge, &human, 2000, 3).expect("ok");
        let (by_item, by_row) = (by_item.expect("defined"), by_row.expect("defined"));
        // One pair per cluster: the same distribution (different draws).
        assert!(
            (by_item.width() / by_row.width() - 1.0).abs() < 0.15,
            "{by_item:?} {by_row:?}"
        );
        // Every item labelled four times alike: 4× the rows, the same information.
        let quadrupled: Vec<Vec<_>> = single.iter().map(|c| vec![c[0]; 4]).collect();
        let (clustered, _) = kappa_cluster_bootstrap(&quadrupled, 2000, 3).expect("ok");
        let clustered = clustered.expect("defined");
        assert!(
            (clustered.width() / by_item.width() - 1.0).abs() < 0.15,
            "{clustered:?}"
        );
        let flat: Vec<(LabelCategory, LabelCategory)> = quadrupled.concat();
        let (fj, fh): (Vec<_>, Vec<_>) = flat.into_iter().unzip();
        let (naive, _) = kappa_bootstrap(&fj, &fh, 2000, 3).expect("ok");
        assert!(naive.expect("defined").width() < 0.65 * clustered.width());
        assert_eq!(kappa_cluster_bootstrap(&[], 10, 1), Ok((None, 0)));
    }

    #[test]
    fn bootstrap_interval_is_seeded_and_brackets_kappa() {
        let judge: Vec<_> = (0..200).map(|i| [A, B, Tie, BothBad][i % 4]).collect();
        let human: Vec<_> = (0..200)
            .map(|i| [A, B, Tie, BothBad][(i % 4 + i / 150) % 4])
            .collect();
        let kappa = cohen_kappa(&judge, &human).expect("ok").expect("defined");
        let (ci, defined) = kappa_bootstrap(&judge, &human, 1000, 7).expect("ok");
        let ci = ci.expect("defined");
        assert!(ci.contains(kappa), "{ci:?} vs {kappa}");
        assert_eq!(defined, 1000);
        assert_eq!(
            kappa_bootstrap(&judge, &human, 1000, 7),
            Ok((Some(ci), 1000))
        );
        assert_ne!(
            kappa_bootstrap(&judge, &human, 1000, 8),
            Ok((Some(ci), 1000))
        );
        assert_eq!(kappa_bootstrap(&[Tie], &[Tie], 10, 1), Ok((None, 0)));
        // One item off the diagonal in six: in a resample without it, both sides put every
        // item in one category and kappa is undefined (0/0); those resamples are counted out.
        let (_, defined) =
            kappa_bootstrap(&[A, A, A, A, A, B], &[A, A, A, A, A, B], 1000, 3).expect("valid");
        assert!(
            (200..500).contains(&(1000 - defined)),
            "undefined in {}",
            1000 - defined
        );
    }

    fn category() -> impl Strategy<Value = LabelCategory> {
        prop_oneof![Just(A), Just(B), Just(Tie), Just(BothBad)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Kappa stays in [−1, 1] and agreement in [0, 1].
        #[test]
        fn kappa_is_bounded(pairs in prop::collection::vec((category(), category()), 1..60)) {
            let (judge, human): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
            if let Some(k) = cohen_kappa(&judge, &human).expect("same length") {
                prop_assert!((-1.0..=1.0).contains(&k), "kappa {}", k);
            }
            let a = agreement(&judge, &human).expect("same length").expect("non-empty");
            prop_assert!((0.0..=1.0).contains(&a));
        }
    }
}
