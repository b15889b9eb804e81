//! Tests of the Poisson sampler and the uniform helpers: exact-pmf goodness of fit, moments.

use super::*;
use proptest::prelude::*;

/// Pearson chi-square of `draws` Poisson(μ) variates against the exact pmf (computed with
/// summed logarithms, independent of the sampler's Stirling series), pooling values until each
/// bin expects at least 20. Returns (statistic, degrees of freedom).
fn chi_square(poisson: &Poisson, mu: f64, draws: usize, seed: u64) -> (f64, usize) {
    let mut rng = resample_rng(seed, 0);
    let mut observed = std::collections::BTreeMap::new();
    for _ in 0..draws {
        *observed.entry(poisson.sample(&mut rng)).or_insert(0usize) += 1;
    }
    let top = (mu + 12.0 * mu.sqrt() + 30.0) as u64;
    let max_seen = *observed.keys().next_back().expect("draws > 0");
    assert!(
        max_seen < top,
        "mu={mu}: draw {max_seen} implausibly far in the tail"
    );
    let (mut stat, mut bins) = (0.0, 0);
    let (mut exp_acc, mut obs_acc, mut ln_fact) = (0.0, 0usize, 0.0);
    for k in 0..=top {
        if k > 0 {
            ln_fact += (k as f64).ln();
        }
        exp_acc += draws as f64 * (-mu + k as f64 * mu.ln() - ln_fact).exp();
        obs_acc += observed.get(&k).copied().unwrap_or(0);
        if exp_acc >= 20.0 || k == top {
            stat += (obs_acc as f64 - exp_acc).powi(2) / exp_acc.max(1e-300);
            bins += 1;
            (exp_acc, obs_acc) = (0.0, 0);
        }
    }
    (stat, bins - 1)
}

#[test]
fn poisson_matches_exact_pmf_across_regimes() {
    // Inversion, both sides of the PTRS threshold, and PTRS far into its range.
    let means = [0.3, 4.0, 9.99, 10.0, 17.5, 67.0, 1_000.0, 250_000.0];
    for (case, mu) in means.into_iter().enumerate() {
        for (kind, poisson) in [
            ("direct", Poisson::new(mu)),
            ("table", Poisson::tabulated(mu)),
        ] {
            let (stat, df) = chi_square(&poisson, mu, 100_000, 3 + case as u64);
            let limit = df as f64 + 6.0 * (2.0 * df as f64).sqrt() + 10.0;
            assert!(
                stat < limit,
                "{kind} mu={mu}: chi2 {stat:.1} with {df} df (limit {limit:.1})"
            );
        }
    }
    assert!(matches!(Poisson::tabulated(0.0), Poisson::Zero));
    assert!(matches!(Poisson::new(0.0), Poisson::Zero));
}

#[test]
fn alias_table_holds_exactly_the_pmf() {
    // Each value's mass over all buckets (kept below the threshold, aliased above it) must be
    // the Poisson pmf (up to rounding in both ln-pmf computations), summing to exactly 2^64.
    for mu in [0.001, 0.3, 4.0, 67.0, 1_000.0] {
        let table = PoissonTable::new(mu);
        let full = 1u128 << (64 - table.bits);
        let mut mass = std::collections::BTreeMap::<u32, u128>::new();
        for b in &table.buckets {
            let keep = u128::from(b.threshold).min(full);
            *mass.entry(b.keep).or_default() += keep;
            *mass.entry(b.alias).or_default() += full - keep;
        }
        assert_eq!(mass.values().sum::<u128>(), 1u128 << 64, "mu={mu}");
        for (&k, &q) in &mass {
            let exact = (-mu + f64::from(k) * mu.ln() - ln_factorial_by_sum(k)).exp();
            let got = q as f64 / 2f64.powi(64);
            assert!(
                (got - exact).abs() <= 1e-10 * exact + 1e-19,
                "mu={mu} k={k}: {got:e} vs {exact:e}"
            );
        }
    }
}

fn ln_factorial_by_sum(k: u32) -> f64 {
    (2..=k).map(|i| f64::from(i).ln()).sum()
}

#[test]
fn ln_factorial_is_accurate_on_both_sides_of_the_switch() {
    let mut exact = 0.0;
    for k in 1..=200u32 {
        exact += f64::from(k).ln();
        let got = ln_factorial(f64::from(k));
        assert!(
            (got - exact).abs() < 1e-12 * exact.max(1.0),
            "k={k}: {got} vs {exact}"
        );
    }
    assert_eq!(ln_factorial(0.0), 0.0);
}

#[test]
fn uniform_below_is_unbiased_for_a_small_range() {
    let mut rng = resample_rng(5, 0);
    let mut counts = [0usize; 3];
    for _ in 0..300_000 {
        counts[uniform_below(&mut rng, 3) as usize] += 1;
    }
    for c in counts {
        assert!((c as f64 - 100_000.0).abs() < 1_500.0, "{counts:?}");
    }
    assert_eq!(uniform_below(&mut rng, 1), 0);
}

#[test]
fn xoshiro_matches_the_reference_implementation() {
    // The published xoshiro256++ outputs from the state [1, 2, 3, 4].
    let mut rng = Xoshiro256 { s: [1, 2, 3, 4] };
    let expected: [u64; 10] = [
        41943041,
        58720359,
        3588806011781223,
        3591011842654386,
        9228616714210784205,
        9973669472204895162,
        14011001112246962877,
        12406186145184390807,
        15849039046786891736,
        10450023813501588000,
    ];
    for e in expected {
        assert_eq!(rng.next_u64(), e);
    }
}

#[test]
fn resample_streams_differ_and_repeat() {
    let draw = |r| resample_rng(42, r).next_u64();
    assert_eq!(draw(3), draw(3));
    assert_ne!(draw(3), draw(4));
    assert_ne!(resample_rng(43, 3).next_u64(), draw(3));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Mean and variance over many draws both match μ, for both sampling methods.
    #[test]
    fn poisson_moments_match(mu in 0.0f64..5_000.0, seed in any::<u64>(), table in any::<bool>()) {
        let draws = 4_000;
        let poisson = if table { Poisson::tabulated(mu) } else { Poisson::new(mu) };
        let mut rng = resample_rng(seed, 1);
        let (mut sum, mut sum_sq) = (0.0, 0.0);
        for _ in 0..draws {
            let k = poisson.sample(&mut rng) as f64;
            sum += k;
            sum_sq += k * k;
        }
        let n = draws as f64;
        let mean = sum / n;
        let var = sum_sq / n - mean * mean;
        // Standard errors: sqrt(μ/n) for the mean, sqrt((2μ² + μ)/n) for the variance.
        prop_assert!((mean - mu).abs() <= 6.0 * (mu / n).sqrt() + 1e-9, "mean {} vs {}", mean, mu);
        let var_tol = 6.0 * ((2.0 * mu * mu + mu) / n).sqrt() + 1e-9;
        prop_assert!((var - mu).abs() <= var_tol, "var {} vs {}", var, mu);
    }
}

#[test]
fn lane_uniforms_are_each_generators_own_sequence() {
    // The vector path (where this CPU has it) and the scalar one must both give each lane
    // exactly the numbers its generator gives alone, and leave every generator where it
    // would be; lengths cover the empty case and odd counts.
    for count in [0, 1, 7, 64, 1001] {
        let fresh = || -> [Xoshiro256; REFIT_LANES] { std::array::from_fn(|l| resample_rng(9, l)) };
        let mut alone = fresh();
        let expected: Vec<[u64; REFIT_LANES]> = (0..count)
            .map(|_| std::array::from_fn(|l| alone[l].next_u64()))
            .collect();
        let mut vector = fresh();
        let mut got = vec![[0; REFIT_LANES]; count];
        fill_lane_uniforms(&mut vector, &mut got);
        assert_eq!(got, expected, "fill_lane_uniforms, {count} draws");
        let mut scalar = fresh();
        fill_lane_uniforms_scalar(&mut scalar, &mut got);
        assert_eq!(got, expected, "the scalar path, {count} draws");
        for l in 0..REFIT_LANES {
            let next = alone[l].next_u64();
            assert_eq!(vector[l].next_u64(), next, "generator {l} left in step");
            assert_eq!(scalar[l].next_u64(), next, "generator {l} left in step");
        }
    }
    if !lanes_vectorised() {
        eprintln!("no AVX2 on this CPU: only the scalar path was compared");
    }
}
