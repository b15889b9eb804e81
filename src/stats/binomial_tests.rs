//! Tests of the binomial and multinomial samplers: exact-pmf goodness of fit and moments.

use super::*;
use proptest::prelude::*;

/// ln k! for k = 0..=n by summing logarithms (independent of the sampler's Stirling terms).
fn ln_factorials(n: u64) -> Vec<f64> {
    let mut out = Vec::with_capacity(n as usize + 1);
    let mut acc = 0.0;
    out.push(0.0);
    for i in 1..=n {
        acc += (i as f64).ln();
        out.push(acc);
    }
    out
}

/// Pearson chi-square statistic of `draws` Binomial(n, p) variates against the exact pmf,
/// pooling neighbouring values until every bin expects at least 20; returns (stat, df).
fn chi_square(n: u64, p: f64, draws: usize, seed: u64) -> (f64, usize) {
    let mut rng = resample_rng(seed, 0);
    let mut observed = std::collections::BTreeMap::new();
    for _ in 0..draws {
        let k = binomial(&mut rng, n, p);
        assert!(k <= n, "draw {k} exceeds n = {n}");
        *observed.entry(k).or_insert(0usize) += 1;
    }
    let lf = ln_factorials(n);
    let pmf = |k: u64| {
        (lf[n as usize] - lf[k as usize] - lf[(n - k) as usize]
            + k as f64 * p.ln()
            + (n - k) as f64 * (-p).ln_1p())
        .exp()
    };
    let (mut stat, mut bins) = (0.0, 0);
    let (mut exp_acc, mut obs_acc) = (0.0, 0usize);
    for k in 0..=n {
        exp_acc += draws as f64 * pmf(k);
        obs_acc += observed.get(&k).copied().unwrap_or(0);
        if exp_acc >= 20.0 || k == n {
            stat += (obs_acc as f64 - exp_acc).powi(2) / exp_acc.max(1e-300);
            bins += 1;
            (exp_acc, obs_acc) = (0.0, 0);
        }
    }
    (stat, bins - 1)
}

#[test]
fn binomial_matches_exact_pmf_across_regimes() {
    // Inversion, the BTRD boundary, BTRD near the mode and in the Stirling tail, p > 1/2.
    let cases: [(u64, f64); 9] = [
        (5, 0.3),
        (30, 0.2),
        (50, 0.2),
        (1_000, 0.03),
        (200, 0.9),
        (100_000, 0.4),
        (1_000_000, 0.00007),
        (1_000_000, 0.5),
        (17, 0.999),
    ];
    for (case, &(n, p)) in cases.iter().enumerate() {
        let (stat, df) = chi_square(n, p, 200_000, 7 + case as u64);
        let limit = df as f64 + 6.0 * (2.0 * df as f64).sqrt() + 10.0;
        assert!(
            stat < limit,
            "n={n} p={p}: chi2 {stat:.1} with {df} df (limit {limit:.1})"
        );
    }
}

#[test]
fn binomial_degenerate_parameters() {
    let mut rng = resample_rng(1, 0);
    assert_eq!(binomial(&mut rng, 0, 0.5), 0);
    assert_eq!(binomial(&mut rng, 10, 0.0), 0);
    assert_eq!(binomial(&mut rng, 10, 1.0), 10);
    assert_eq!(binomial(&mut rng, u64::MAX / 4, 1.0), u64::MAX / 4);
}

#[test]
fn resample_streams_differ_and_repeat() {
    let draw = |r| resample_rng(42, r).next_u64();
    assert_eq!(draw(3), draw(3));
    assert_ne!(draw(3), draw(4));
    assert_ne!(resample_rng(43, 3).next_u64(), draw(3));
}

/// Multinomial over cells has the moments of row resampling: each cell count has mean N·p_c
/// and variance N·p_c·(1−p_c), and cells covary as −N·p_c·p_d. Row resampling (N uniform row
/// indices) is simulated alongside as the reference.
#[test]
fn multinomial_over_cells_matches_row_resampling() {
    let weights = [7u64, 0, 3, 12, 1, 5];
    let rows: Vec<usize> = (0..weights.len())
        .flat_map(|c| std::iter::repeat_n(c, weights[c] as usize))
        .collect();
    let n = rows.len() as u64;
    let sampler = Multinomial::new(&weights);
    let reps = 40_000;
    let (mut cells, mut by_rows) = (Moments::new(6), Moments::new(6));
    let mut out = [0u64; 6];
    for r in 0..reps {
        let mut rng = resample_rng(99, r);
        sampler.sample(&mut rng, n, &mut out);
        assert_eq!(out.iter().sum::<u64>(), n);
        cells.push(&out);
        let mut counts = [0u64; 6];
        for _ in 0..n {
            counts[rows[(rng.next_u64() % n) as usize]] += 1;
        }
        by_rows.push(&counts);
    }
    for c in 0..6 {
        let pc = weights[c] as f64 / n as f64;
        let (mean, var) = (n as f64 * pc, n as f64 * pc * (1.0 - pc));
        for (name, m) in [("cells", &cells), ("rows", &by_rows)] {
            let se = (var / reps as f64).sqrt().max(1e-9);
            assert!((m.mean(c) - mean).abs() < 5.0 * se, "{name} cell {c} mean");
            assert!(
                (m.var(c) - var).abs() < 0.05 * var + 1e-9,
                "{name} cell {c} var"
            );
        }
    }
    let cov_03 = cells.cov(0, 3);
    let expected = -(n as f64) * (7.0 / n as f64) * (12.0 / n as f64);
    assert!(
        (cov_03 - expected).abs() < 0.06 * expected.abs(),
        "{cov_03} vs {expected}"
    );
}

/// Running sums for sample means, variances and one covariance.
struct Moments {
    count: f64,
    sum: Vec<f64>,
    sum_sq: Vec<f64>,
    cross: Vec<f64>,
}

impl Moments {
    fn new(k: usize) -> Moments {
        Moments {
            count: 0.0,
            sum: vec![0.0; k],
            sum_sq: vec![0.0; k],
            cross: vec![0.0; k * k],
        }
    }
    fn push(&mut self, x: &[u64]) {
        let k = self.sum.len();
        self.count += 1.0;
        for i in 0..k {
            self.sum[i] += x[i] as f64;
            self.sum_sq[i] += (x[i] * x[i]) as f64;
            for j in 0..k {
                self.cross[i * k + j] += (x[i] * x[j]) as f64;
            }
        }
    }
    fn mean(&self, i: usize) -> f64 {
        self.sum[i] / self.count
    }
    fn var(&self, i: usize) -> f64 {
        self.sum_sq[i] / self.count - self.mean(i).powi(2)
    }
    fn cov(&self, i: usize, j: usize) -> f64 {
        self.cross[i * self.sum.len() + j] / self.count - self.mean(i) * self.mean(j)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Mean and variance over many draws match n·p and n·p·(1−p); no draw exceeds n.
    #[test]
    fn binomial_moments_match(n in 1u64..2_000_000, p in 0.0f64..1.0, seed in any::<u64>()) {
        let draws = 4_000;
        let mut rng = resample_rng(seed, 0);
        let (mut sum, mut sum_sq) = (0.0, 0.0);
        for _ in 0..draws {
            let k = binomial(&mut rng, n, p);
            prop_assert!(k <= n);
            sum += k as f64;
            sum_sq += (k as f64).powi(2);
        }
        let mean = sum / draws as f64;
        let var = sum_sq / draws as f64 - mean * mean;
        let (mu, sigma2) = (n as f64 * p, n as f64 * p * (1.0 - p));
        // 6 standard errors for the mean; the variance's standard error is about
        // σ²·sqrt(2/draws) plus a kurtosis term that matters only for tiny n·p.
        prop_assert!((mean - mu).abs() <= 6.0 * (sigma2 / draws as f64).sqrt() + 1e-9,
            "mean {} vs {}", mean, mu);
        let var_tol = 6.0 * (sigma2 * (2.0 * sigma2 + 1.0) / draws as f64).sqrt() + 1e-9;
        prop_assert!((var - sigma2).abs() <= var_tol, "var {} vs {}", var, sigma2);
    }
}
