//! Fisher's exact test, one-sided: is a share in a subgroup larger than chance allows?
//!
//! Given N items of which K are marked, and a subgroup of n of them, the number X of marked
//! items in the subgroup is hypergeometric when the marks fall without regard to the subgroup
//! (Fisher 1935; Agresti, *Categorical Data Analysis*, 3rd ed., §3.5). The p-value of seeing
//! k or more is P(X ≥ k), summed from the point probability at k by the ratio of consecutive
//! terms, with log-factorials from Stirling's series (exact sums below 20).

/// P(X ≥ `k`) for X ~ Hypergeometric(population `n_total`, marked `marked`, draws `drawn`):
/// the one-sided p-value of `k` marked items among `drawn`. 1 when `k` is at most the least X
/// can be, 0 when it is more than X can be.
pub fn hypergeometric_upper_tail(k: u64, drawn: u64, marked: u64, n_total: u64) -> f64 {
    assert!(
        drawn <= n_total && marked <= n_total,
        "draws and marked items are part of the population"
    );
    let lowest = (drawn + marked).saturating_sub(n_total);
    let highest = drawn.min(marked);
    if k <= lowest {
        return 1.0;
    }
    if k > highest {
        return 0.0;
    }
    let pmf = |x: u64| {
        (ln_choose(marked, x) + ln_choose(n_total - marked, drawn - x) - ln_choose(n_total, drawn))
            .exp()
    };
    let (m, d, rest) = (marked as f64, drawn as f64, (n_total - marked) as f64);
    // Below the mean, the upper tail is one less the lower, which is summed instead: far
    // below, the point probability at `k` underflows and would sum to 0, not to nearly 1.
    if k as f64 <= d * m / n_total as f64 {
        let mut term = pmf(k - 1);
        let mut lower = term;
        let mut x = k - 1;
        while x > lowest {
            // P(x − 1) / P(x).
            let xf = x as f64;
            term *= xf * (rest - d + xf) / ((m - xf + 1.0) * (d - xf + 1.0));
            lower += term;
            x -= 1;
            if term < lower * 1e-17 {
                break;
            }
        }
        return (1.0 - lower).clamp(0.0, 1.0);
    }
    let mut term = pmf(k);
    let mut sum = term;
    let mut x = k;
    while x < highest {
        // P(x + 1) / P(x).
        let xf = x as f64;
        term *= (m - xf) * (d - xf) / ((xf + 1.0) * (rest - d + xf + 1.0));
        sum += term;
        x += 1;
        if term < sum * 1e-17 {
            break;
        }
    }
    sum.min(1.0)
}

/// ln C(n, k).
fn ln_choose(n: u64, k: u64) -> f64 {
    ln_factorial(n) - ln_factorial(k) - ln_factorial(n - k)
}

/// ln n!: a plain sum below 20, Stirling's series beyond (error below 1e-14 there).
fn ln_factorial(n: u64) -> f64 {
    if n < 20 {
        return (2..=n).map(|i| (i as f64).ln()).sum();
    }
    let x = n as f64;
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    x * x.ln() - x
        + 0.5 * (2.0 * std::f64::consts::PI * x).ln()
        + inv * (1.0 / 12.0 - inv2 * (1.0 / 360.0 - inv2 * (1.0 / 1260.0 - inv2 / 1680.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Exact values from Python's `math.comb` (big integers):
    /// `sum(comb(K,x)*comb(N-K,n-x) for x in range(k, min(n,K)+1)) / comb(N,n)`.
    #[test]
    fn matches_exact_big_integer_sums() {
        let cases = [
            ((6, 50, 7, 75), 0.2504758279406167),
            ((6, 30, 6, 40), 0.15469416785206258),
            ((6, 20, 6, 40), 0.010098010098010098),
            ((10, 20, 10, 60), 2.4505389347752305e-06),
            ((20, 40, 20, 60), 3.288445662263699e-05),
            ((10, 40, 10, 60), 0.011243072632748758),
            ((3, 10, 5, 100), 0.0066379128971176095),
            ((50, 500, 120, 2000), 2.6518316430810664e-05),
            ((70, 1000, 500, 10000), 0.002123670339504004),
            ((260, 5000, 2000, 50000), 6.3470087740323366e-06),
            // Below the mean: through the lower tail.
            ((3, 40, 10, 120), 0.7110940882472211),
            ((35, 618, 1839, 2600), 1.0),
            // Drawn at random (either side of the mean).
            ((8, 184, 131, 338), 1.0),
            ((6, 27, 128, 258), 0.9995192842648324),
            ((40, 61, 48, 77), 0.19555900213812463),
            ((19, 27, 140, 214), 0.36455685124948406),
            ((4, 56, 4, 147), 0.019670693029219245),
            ((11, 100, 47, 163), 0.9999999999707616),
        ];
        for ((k, n, big_k, big_n), want) in cases {
            let got = hypergeometric_upper_tail(k, n, big_k, big_n);
            assert!(
                ((got - want) / want).abs() < 1e-9,
                "{k} {n} {big_k} {big_n}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn the_tail_is_a_probability_that_falls_with_k() {
        assert_eq!(hypergeometric_upper_tail(0, 10, 5, 100), 1.0);
        assert_eq!(hypergeometric_upper_tail(6, 10, 5, 100), 0.0);
        // All 90 unmarked would not fill 95 draws: at least 5 marked are certain.
        assert_eq!(hypergeometric_upper_tail(5, 95, 10, 100), 1.0);
        let mut last = 1.0;
        for k in 0..=10 {
            let p = hypergeometric_upper_tail(k, 40, 10, 120);
            assert!((0.0..=last).contains(&p), "{k}: {p}");
            last = p;
        }
        // Large populations stay finite and exact enough.
        let p = hypergeometric_upper_tail(600, 100_000, 5_000, 1_000_000);
        assert!(p > 0.0 && p < 1e-5, "{p}");
    }
}
