//! Dense symmetric positive-definite solves (Cholesky) for Newton steps; nothing else.

/// Solves `A x = b` in place for a symmetric positive-definite `A` (row-major, `p × p`).
///
/// `a` is overwritten by its Cholesky factor `L` (lower triangle, `A = L Lᵀ`, the
/// Cholesky–Banachiewicz row order so every inner product runs over contiguous memory) and `b`
/// by the solution. Returns `false`, leaving the buffers in an unspecified state, when `A` is
/// not numerically positive definite.
pub(crate) fn cholesky_solve(a: &mut [f64], b: &mut [f64], p: usize) -> bool {
    debug_assert_eq!(a.len(), p * p);
    debug_assert_eq!(b.len(), p);
    if !factor(a, p) {
        return false;
    }
    // Forward substitution: L y = b.
    for i in 0..p {
        let row = &a[i * p..i * p + i];
        b[i] = (b[i] - dot(row, &b[..i])) / a[i * p + i];
    }
    // Back substitution: Lᵀ x = y, consuming row i of L once x_i is known.
    for i in (0..p).rev() {
        let xi = b[i] / a[i * p + i];
        b[i] = xi;
        let row = &a[i * p..i * p + i];
        for (bk, lik) in b[..i].iter_mut().zip(row) {
            *bk -= lik * xi;
        }
    }
    true
}

/// In-place Cholesky factorisation of the lower triangle; `false` if a pivot is not positive.
fn factor(a: &mut [f64], p: usize) -> bool {
    for i in 0..p {
        let (before, rest) = a.split_at_mut(i * p);
        let row_i = &mut rest[..p];
        for j in 0..i {
            let row_j = &before[j * p..j * p + j];
            let s = row_i[j] - dot(&row_i[..j], row_j);
            row_i[j] = s / before[j * p + j];
        }
        let s = row_i[i] - dot(&row_i[..i], &row_i[..i]);
        if s.is_nan() || s <= 0.0 {
            return false;
        }
        row_i[i] = s.sqrt();
    }
    true
}

/// Inner product with four independent accumulators so the compiler can vectorise it.
fn dot(x: &[f64], y: &[f64]) -> f64 {
    let mut acc = [0.0; 4];
    let mut xs = x.chunks_exact(4);
    let mut ys = y.chunks_exact(4);
    for (cx, cy) in (&mut xs).zip(&mut ys) {
        for k in 0..4 {
            acc[k] += cx[k] * cy[k];
        }
    }
    let tail: f64 = xs
        .remainder()
        .iter()
        .zip(ys.remainder())
        .map(|(a, b)| a * b)
        .sum();
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
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
        let (mut factor_buf, mut x) = (a.clone(), b.clone());
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
