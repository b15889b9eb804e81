//! Tests of the multinomial sampler: it must match resampling rows with replacement.

use super::*;
use crate::stats::poisson::{resample_rng, uniform_below};
use proptest::prelude::*;
use rand_core::Rng;

/// Running sums for per-cell means and all covariances.
struct Moments {
    count: f64,
    sum: Vec<f64>,
    cross: Vec<f64>,
}

impl Moments {
    fn new(k: usize) -> Moments {
        Moments {
            count: 0.0,
            sum: vec![0.0; k],
            cross: vec![0.0; k * k],
        }
    }

    fn push(&mut self, x: &[u64]) {
        let k = self.sum.len();
        self.count += 1.0;
        for i in 0..k {
            self.sum[i] += x[i] as f64;
            for j in 0..k {
                self.cross[i * k + j] += (x[i] * x[j]) as f64;
            }
        }
    }

    fn mean(&self, i: usize) -> f64 {
        self.sum[i] / self.count
    }

    fn cov(&self, i: usize, j: usize) -> f64 {
        self.cross[i * self.sum.len() + j] / self.count - self.mean(i) * self.mean(j)
    }
}

/// The multinomial over cells has the moments of row resampling — mean N·p_c, variance
/// N·p_c·(1 − p_c), covariance −N·p_c·p_d — and so does explicit row resampling (N uniform
/// row indices), simulated alongside as the reference.
#[test]
fn multinomial_over_cells_matches_row_resampling() {
    let weights = [7u64, 0, 3, 12, 1, 5, 40];
    let k = weights.len();
    let rows: Vec<usize> = (0..k)
        .flat_map(|c| std::iter::repeat_n(c, weights[c] as usize))
        .collect();
    let n = rows.len() as u64;
    let sampler = CellSampler::new(&weights);
    assert_eq!((sampler.len(), sampler.total), (k, n));
    let reps = 40_000;
    let (mut cells, mut by_rows) = (Moments::new(k), Moments::new(k));
    let mut out = vec![0u64; k];
    for r in 0..reps {
        let mut rng = resample_rng(99, r);
        sampler.sample(&mut rng, &mut out);
        assert_eq!(out.iter().sum::<u64>(), n);
        assert_eq!(out[1], 0, "an empty cell is never drawn");
        cells.push(&out);
        let mut counts = vec![0u64; k];
        for _ in 0..n {
            counts[rows[uniform_below(&mut rng, n) as usize]] += 1;
        }
        by_rows.push(&counts);
    }
    let nf = n as f64;
    let var = |c: usize| nf * weights[c] as f64 / nf * (1.0 - weights[c] as f64 / nf);
    for i in 0..k {
        for j in 0..k {
            let (pi, pj) = (weights[i] as f64 / nf, weights[j] as f64 / nf);
            let want = if i == j { var(i) } else { -nf * pi * pj };
            // Five standard errors of the sample covariance (plus the variance's excess).
            let extra = if i == j { var(i) } else { 0.0 };
            let tol = 5.0 * ((var(i) * var(j) + want * want + extra) / reps as f64).sqrt() + 1e-12;
            for (name, m) in [("cells", &cells), ("rows", &by_rows)] {
                if i == j {
                    let se = (var(i) / reps as f64).sqrt();
                    assert!(
                        (m.mean(i) - nf * pi).abs() <= 5.0 * se + 1e-12,
                        "{name} mean {i}"
                    );
                }
                let got = m.cov(i, j);
                assert!(
                    (got - want).abs() <= tol,
                    "{name} cov({i},{j}) {got} vs {want} ± {tol}"
                );
            }
        }
    }
}

/// The whole joint distribution matches the exact multinomial pmf (Pearson chi-square over
/// all outcomes, pooled to expected counts of at least 20): N = 20 exercises both the
/// Poisson part (Λ ≈ 11) and the alias top-up.
#[test]
fn joint_distribution_is_exactly_multinomial() {
    let weights = [3u64, 5, 12];
    let n = 20u64;
    let sampler = CellSampler::new(&weights);
    let draws = 150_000;
    let mut observed = std::collections::BTreeMap::new();
    let mut out = [0u64; 3];
    for r in 0..draws {
        sampler.sample(&mut resample_rng(2024, r), &mut out);
        *observed.entry((out[0], out[1])).or_insert(0usize) += 1;
    }
    let ln_fact = |k: u64| (1..=k).map(|i| (i as f64).ln()).sum::<f64>();
    let p: Vec<f64> = weights.iter().map(|&w| w as f64 / n as f64).collect();
    let (mut stat, mut bins, mut exp_acc, mut obs_acc) = (0.0, 0, 0.0, 0usize);
    for x0 in 0..=n {
        for x1 in 0..=n - x0 {
            let x2 = n - x0 - x1;
            let ln_p = ln_fact(n) - ln_fact(x0) - ln_fact(x1) - ln_fact(x2)
                + x0 as f64 * p[0].ln()
                + x1 as f64 * p[1].ln()
                + x2 as f64 * p[2].ln();
            exp_acc += draws as f64 * ln_p.exp();
            obs_acc += observed.get(&(x0, x1)).copied().unwrap_or(0);
            if exp_acc >= 20.0 {
                stat += (obs_acc as f64 - exp_acc).powi(2) / exp_acc;
                bins += 1;
                (exp_acc, obs_acc) = (0.0, 0);
            }
        }
    }
    stat += (obs_acc as f64 - exp_acc).powi(2) / exp_acc.max(1e-300);
    let df = bins as f64;
    assert!(
        stat < df + 6.0 * (2.0 * df).sqrt() + 10.0,
        "chi2 {stat:.1} with {df} df"
    );
}

#[test]
fn alias_table_draws_each_cell_with_its_exact_share() {
    let weights = [1u64, 0, 2, 997];
    let table = PackedAlias::from_weights(&weights);
    // Each share rounded down to a multiple of 2^-64, the remainder (below one unit per cell)
    // on the heaviest cell, nothing on the empty one.
    let mass = table.masses();
    assert_eq!(mass.values().sum::<u128>(), 1 << 64);
    assert_eq!(mass.get(&1), None);
    for c in [0, 2] {
        assert_eq!(mass[&c], (u128::from(weights[c]) << 64) / 1000);
    }
    assert!(mass[&3] - (997u128 << 64) / 1000 < 4);
    let mut rng = resample_rng(17, 0);
    let mut counts = [0u64; 4];
    let draws = 1_000_000;
    for _ in 0..draws {
        counts[table.pick(rng.next_u64())] += 1;
    }
    assert_eq!(counts[1], 0);
    for c in [0, 2, 3] {
        let p = weights[c] as f64 / 1000.0;
        let se = (draws as f64 * p * (1.0 - p)).sqrt();
        assert!(
            (counts[c] as f64 - draws as f64 * p).abs() < 5.0 * se,
            "{counts:?}"
        );
    }
}

/// Every bucket decides exactly at its threshold, and a bucket that is never short keeps
/// every uniform, the largest included.
#[test]
fn packed_alias_decides_exactly_at_thresholds() {
    // Two buckets of 2^63: index 0 has mass 2^62 (half of bucket 0), index 1 the rest.
    let table = PackedAlias::new(vec![1 << 62, 3 << 62]);
    assert_eq!(table.pick(0), 0);
    assert_eq!(table.pick((1 << 62) - 1), 0);
    assert_eq!(table.pick(1 << 62), 1);
    assert_eq!(table.pick(u64::MAX >> 1), 1);
    assert_eq!(table.pick(1 << 63), 1);
    assert_eq!(table.pick(u64::MAX), 1);
    let single = PackedAlias::new(vec![1 << 64]);
    assert_eq!((single.pick(0), single.pick(u64::MAX)), (0, 0));
}

#[test]
fn degenerate_samplers() {
    let mut rng = resample_rng(1, 0);
    let empty = CellSampler::new(&[]);
    empty.sample(&mut rng, &mut []);
    let zero = CellSampler::new(&[0, 0]);
    let mut out = [9, 9];
    zero.sample(&mut rng, &mut out);
    assert_eq!(out, [0, 0]);
    let single = CellSampler::new(&[0, 5]);
    single.sample(&mut rng, &mut out);
    assert_eq!(out, [0, 5]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any positive weights are held as their shares rounded down to multiples of 2^-64, with
    /// less than one unit per cell left over.
    #[test]
    fn packed_alias_holds_rounded_shares(parts in prop::collection::vec(0u64..1 << 40, 1..70)) {
        let weights: Vec<u64> = parts.iter().map(|&p| p + 1).collect();
        let table = PackedAlias::from_weights(&weights);
        let total = u128::from(weights.iter().sum::<u64>());
        let mass = table.masses();
        prop_assert_eq!(mass.values().sum::<u128>(), 1 << 64);
        for (c, &w) in weights.iter().enumerate() {
            let share = (u128::from(w) << 64) / total;
            prop_assert!(mass[&c] >= share && mass[&c] - share < weights.len() as u128);
        }
    }

    /// Every draw has exactly N items and never lands in an empty cell.
    #[test]
    fn draws_preserve_total_and_support(
        weights in prop::collection::vec(0u64..50, 1..40),
        seed in any::<u64>(),
    ) {
        let sampler = CellSampler::new(&weights);
        let mut out = vec![0u64; weights.len()];
        let mut rng = resample_rng(seed, 0);
        for _ in 0..20 {
            sampler.sample(&mut rng, &mut out);
            prop_assert_eq!(out.iter().sum::<u64>(), weights.iter().sum::<u64>());
            for (o, w) in out.iter().zip(&weights) {
                prop_assert!(*w > 0 || *o == 0);
            }
        }
    }
}

#[test]
fn lanes_draw_what_each_generator_draws_alone() {
    // Tables (small weights), Hörmann's PTRS (large weights past the table budget), lanes
    // that redraw (M > N happens in ~2% of draws) and uneven top-ups: lane l of
    // `sample_lanes` must equal `sample` from the same generator, and the generators must
    // end in the same state.
    let weightings: [&[u64]; 3] = [
        &[3, 3, 5, 8, 13, 13, 13, 40, 1],
        &[1, 2, 3_000_000, 5, 1_000_000, 7, 4_000_000, 2_000_000],
        &[1],
    ];
    for weights in weightings {
        let sampler = CellSampler::new(weights);
        if weights.len() == 8 {
            let ptrs = sampler
                .poisson
                .iter()
                .filter(|p| matches!(p, Poisson::Ptrs(_)));
            assert!(ptrs.count() > 0, "past the table budget");
        }
        let mut redraws = 0;
        for batch in 0..60 {
            let fresh = || -> [Xoshiro256; REFIT_LANES] {
                std::array::from_fn(|l| resample_rng(3, 4 * batch + l))
            };
            let mut lanes = fresh();
            let mut out = vec![[0; REFIT_LANES]; weights.len()];
            sampler.sample_lanes(&mut lanes, &mut out);
            // The lane-by-lane path other CPUs take gives the same draws.
            let mut scalar_lanes = fresh();
            let mut scalar_out = vec![[0; REFIT_LANES]; weights.len()];
            sampler.sample_lanes_by(&mut scalar_lanes, &mut scalar_out, false);
            assert_eq!(scalar_out, out, "weights {weights:?}, batch {batch}");
            let mut alone = fresh();
            for l in 0..REFIT_LANES {
                let mut single = vec![0; weights.len()];
                sampler.sample(&mut alone[l], &mut single);
                let lane: Vec<u64> = out.iter().map(|cell| cell[l]).collect();
                assert_eq!(lane, single, "weights {weights:?}, batch {batch}, lane {l}");
                let next = alone[l].next_u64();
                assert_eq!(lanes[l].next_u64(), next, "generator state");
                assert_eq!(scalar_lanes[l].next_u64(), next, "generator state");
                // A lane redrew when its generator moved past one Poisson pass + top-ups.
                let mut probe = fresh();
                let mut first_pass = vec![0; weights.len()];
                let drawn: u64 = sampler
                    .runs()
                    .map(|(poisson, cells)| poisson.fill(&mut probe[l], &mut first_pass[cells]))
                    .sum();
                redraws += usize::from(drawn > sampler.total);
            }
        }
        if weights.len() > 1 {
            assert!(redraws > 0, "some lane redrew for weights {weights:?}");
        }
    }
}
