//! Dense symmetric positive-definite solves (Cholesky) for Newton steps; nothing else.

/// Solves `A x = b` in place for a symmetric positive-definite `A` (row-major `p × p`, only
/// the upper triangle `j ≥ i` is read).
///
/// `a` is overwritten by the Cholesky factor `U` (upper triangle, `A = UᵀU`) and `b` by the
/// solution. The factorisation is the outer-product ("right-looking") form, so every inner
/// loop is an axpy over a contiguous row with no reduction, which vectorises. Returns `false`,
/// leaving the buffers in an unspecified state, when `A` is not numerically positive definite.
pub(crate) fn cholesky_solve(a: &mut [f64], b: &mut [f64], p: usize) -> bool {
    debug_assert_eq!(a.len(), p * p);
    debug_assert_eq!(b.len(), p);
    if !factor(a, p) {
        return false;
    }
    solve_factored(a, b, p);
    true
}

/// Solves `UᵀU x = b` in place, where `u` holds the factor written by [`cholesky_solve`] or
/// [`cholesky_factor`].
pub(crate) fn solve_factored(u: &[f64], b: &mut [f64], p: usize) {
    // Uᵀ y = b, column by column: once y_k is known, remove it from the later equations.
    for k in 0..p {
        let row = &u[k * p..(k + 1) * p];
        let yk = b[k] / row[k];
        b[k] = yk;
        for (bj, ukj) in b[k + 1..].iter_mut().zip(&row[k + 1..]) {
            *bj -= yk * ukj;
        }
    }
    // U x = y, by rows from the bottom.
    for i in (0..p).rev() {
        let row = &u[i * p..(i + 1) * p];
        let s: f64 = row[i + 1..]
            .iter()
            .zip(&b[i + 1..])
            .map(|(u, x)| u * x)
            .sum();
        b[i] = (b[i] - s) / row[i];
    }
}

/// Factors `a` in place as in [`cholesky_solve`], for several later solves.
pub(crate) fn cholesky_factor(a: &mut [f64], p: usize) -> bool {
    factor(a, p)
}

/// In-place upper Cholesky factorisation; `false` if a pivot is not positive.
fn factor(a: &mut [f64], p: usize) -> bool {
    for k in 0..p {
        let (done, rest) = a.split_at_mut((k + 1) * p);
        let row_k = &mut done[k * p..];
        let pivot = row_k[k];
        if pivot.is_nan() || pivot <= 0.0 {
            return false;
        }
        let d = pivot.sqrt();
        row_k[k] = d;
        row_k[k + 1..].iter_mut().for_each(|u| *u /= d);
        let row_k = &done[k * p..];
        // Trailing update: A[i][j] −= U[k][i]·U[k][j] for k < i ≤ j.
        for (offset, row_i) in rest.chunks_exact_mut(p).enumerate() {
            let i = k + 1 + offset;
            let f = row_k[i];
            if f != 0.0 {
                for (aij, ukj) in row_i[i..].iter_mut().zip(&row_k[i..]) {
                    *aij -= f * ukj;
                }
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solves_a_known_system() {
        // A = M Mᵀ + I for a fixed M, so A is SPD; check A x = b by multiplying back.
        let p = 7;
        let m: Vec<f64> = (0..p * p)
            .map(|k| ((k * 37 % 11) as f64 - 5.0) / 3.0)
            .collect();
        let mut a = vec![0.0; p * p];
        for i in 0..p {
            for j in 0..p {
                let s: f64 = (0..p).map(|k| m[i * p + k] * m[j * p + k]).sum();
                a[i * p + j] = s + if i == j { 1.0 } else { 0.0 };
            }
        }
        let b: Vec<f64> = (0..p).map(|i| i as f64 - 2.5).collect();
        // Poison the lower triangle: it must not be read.
        let mut factor_buf = a.clone();
        for i in 0..p {
            for j in 0..i {
                factor_buf[i * p + j] = f64::NAN;
            }
        }
        let mut x = b.clone();
        assert!(cholesky_solve(&mut factor_buf, &mut x, p));
        for i in 0..p {
            let ax: f64 = (0..p).map(|j| a[i * p + j] * x[j]).sum();
            assert!((ax - b[i]).abs() < 1e-10, "row {i}: {ax} vs {}", b[i]);
        }
    }

    #[test]
    fn rejects_an_indefinite_matrix() {
        let mut a = vec![1.0, 2.0, 2.0, 1.0];
        let mut b = vec![1.0, 1.0];
        assert!(!cholesky_solve(&mut a, &mut b, 2));
    }
}
