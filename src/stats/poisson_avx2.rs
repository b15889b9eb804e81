//! Four xoshiro256++ generators in one AVX2 register (x86-64 only; used when the CPU has
//! AVX2, checked at run time). Lane `l` steps generator `l` exactly as
//! `Xoshiro256::try_next_u64` does, so the numbers are the same bit for bit with or without
//! AVX2 (a test checks it): which path runs never changes a result. Only the generator is
//! vectorised: what the numbers are used for is the caller's scalar code.

use std::arch::x86_64::{
    __m256i, _mm256_add_epi64, _mm256_loadu_si256, _mm256_or_si256, _mm256_slli_epi64,
    _mm256_srli_epi64, _mm256_storeu_si256, _mm256_xor_si256,
};

use super::Xoshiro256;
use crate::stats::refit::REFIT_LANES;

const _: () = assert!(
    REFIT_LANES == 4,
    "one lane per 64-bit element of a register"
);

/// Whether this CPU can run [`fill_uniforms`] (std caches the answer).
pub(super) fn available() -> bool {
    std::arch::is_x86_feature_detected!("avx2")
}

/// Fills `out[i][l]` with generator `l`'s next output, `i` in order.
///
/// # Safety
/// The CPU must have AVX2 ([`available`]).
#[target_feature(enable = "avx2")]
pub(super) unsafe fn fill_uniforms(
    rngs: &mut [Xoshiro256; REFIT_LANES],
    out: &mut [[u64; REFIT_LANES]],
) {
    let word = |k: usize| load(std::array::from_fn(|l| rngs[l].s[k]));
    let [mut s0, mut s1, mut s2, mut s3] = [word(0), word(1), word(2), word(3)];
    for u in out {
        *u = store(_mm256_add_epi64(
            rotate_left::<23, 41>(_mm256_add_epi64(s0, s3)),
            s0,
        ));
        let t = _mm256_slli_epi64::<17>(s1);
        s2 = _mm256_xor_si256(s2, s0);
        s3 = _mm256_xor_si256(s3, s1);
        s1 = _mm256_xor_si256(s1, s2);
        s0 = _mm256_xor_si256(s0, s3);
        s2 = _mm256_xor_si256(s2, t);
        s3 = rotate_left::<45, 19>(s3);
    }
    for (k, word) in [s0, s1, s2, s3].into_iter().enumerate() {
        for (rng, x) in rngs.iter_mut().zip(store(word)) {
            rng.s[k] = x;
        }
    }
}

/// `x` rotated left by `L` bits in each 64-bit lane (`R` = 64 − `L`).
#[inline]
#[target_feature(enable = "avx2")]
fn rotate_left<const L: i32, const R: i32>(x: __m256i) -> __m256i {
    const { assert!(L + R == 64) };
    _mm256_or_si256(_mm256_slli_epi64::<L>(x), _mm256_srli_epi64::<R>(x))
}

#[inline]
#[target_feature(enable = "avx2")]
fn load(x: [u64; REFIT_LANES]) -> __m256i {
    // SAFETY: AVX2 is enabled; `x` is 32 readable bytes.
    unsafe { _mm256_loadu_si256(x.as_ptr().cast()) }
}

#[inline]
#[target_feature(enable = "avx2")]
fn store(x: __m256i) -> [u64; REFIT_LANES] {
    let mut out = [0; REFIT_LANES];
    // SAFETY: AVX2 is enabled; `out` is 32 writable bytes.
    unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), x) };
    out
}
