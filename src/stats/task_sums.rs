//! The inner loop of the task (cluster) bootstrap: per pair, Σ multiplicity × tally over the
//! pair's task entries, for [`LANES`] resamples at once.
//!
//! Every term is a product of small integers, so a float type sums them exactly as long as
//! the largest possible sum stays within its integers: below 2^24 for f32, which does twice
//! the lanes per vector instruction of f64. A pair's sums are at most (largest multiplicity of
//! the batch) × (its [`entry_bound`]); pairs under 2^24 are summed in f32, any other in f64.
//! Both give the same integers, as does the loop compiled for AVX2 and FMA (x86-64, checked
//! at run time): which path runs never changes a result (tests check them all).

use super::bootstrap_input::TaskEntry;
use super::poisson::{fill_lane_uniforms, resample_rng, uniform_below};
use super::refit::REFIT_LANES;

/// Resamples drawn together by the task unit.
pub(crate) const LANES: usize = 8;

/// Uniforms drawn per generator at a time by [`Multiplicities::draw`].
const DRAW_BLOCK: usize = 64;

const _: () = assert!(
    LANES.is_multiple_of(REFIT_LANES),
    "draw's groups of generators fill the lanes"
);

/// Integers up to this are exact in f32 (2^24), and so is every sum of them up to it.
const F32_EXACT: u64 = 1 << 24;

/// How many times each task was drawn, per lane, for one batch of resamples.
#[derive(Debug, Default)]
pub(crate) struct Multiplicities {
    counts: Vec<[u32; LANES]>,
    /// `counts` as f32 (exact whenever `largest` < 2^24; not filled otherwise).
    as_f32: Vec<[f32; LANES]>,
    /// The largest count of the batch.
    largest: u64,
}

impl Multiplicities {
    /// Draws resamples `first..first + count` (`count` ≤ [`LANES`]) of `n_tasks` tasks: resample
    /// `first + l` into lane `l`, as `n_tasks` uniform picks from `resample_rng(seed, first + l)`
    /// (exactly those of `uniform_below`, one pick after another); lanes past `count` stay
    /// zero. The generators of [`REFIT_LANES`] lanes step together (see
    /// [`fill_lane_uniforms`]), a block of uniforms at a time, each uniform a pick; a lane
    /// that met a uniform `uniform_below` might reject is drawn again the slow way.
    pub(crate) fn draw(&mut self, n_tasks: usize, seed: u64, first: usize, count: usize) {
        self.draw_checked(n_tasks, seed, first, count, false);
    }

    /// [`Multiplicities::draw`], drawing every lane again one pick at a time when
    /// `redraw_all` (as it does a lane that met a uniform `uniform_below` might reject), so
    /// that tests can check that path gives the same picks.
    fn draw_checked(
        &mut self,
        n_tasks: usize,
        seed: u64,
        first: usize,
        count: usize,
        redraw_all: bool,
    ) {
        debug_assert!(count <= LANES);
        self.counts.clear();
        self.counts.resize(n_tasks, [0; LANES]);
        let n = n_tasks as u64;
        let mut uniforms = [[0u64; REFIT_LANES]; DRAW_BLOCK];
        for base in (0..count).step_by(REFIT_LANES) {
            let live = (count - base).min(REFIT_LANES);
            // Every lane of the group is drawn, those past `count` from generators of
            // resamples never reported, and zeroed after.
            let mut rngs = std::array::from_fn(|l| resample_rng(seed, first + base + l));
            // Per lane, the lowest low half of a product u·n: below n, the lane met a uniform
            // `uniform_below` might reject (with n tasks, each uniform has a chance of n/2^64
            // to be one) and is drawn again one pick at a time.
            let mut lowest = [u64::MAX; REFIT_LANES];
            let mut left = n_tasks;
            let counts = self.counts.as_mut_slice();
            while left > 0 {
                let block = &mut uniforms[..left.min(DRAW_BLOCK)];
                fill_lane_uniforms(&mut rngs, block);
                count_block(block, n, counts, base, &mut lowest);
                left -= block.len();
            }
            for (lane, &lowest) in lowest.iter().enumerate() {
                let column = base + lane;
                if lane < live && !may_have_rejected(lowest, n) && !redraw_all {
                    continue;
                }
                self.counts.iter_mut().for_each(|c| c[column] = 0);
                if lane < live {
                    let mut rng = resample_rng(seed, first + column);
                    for _ in 0..n_tasks {
                        self.counts[uniform_below(&mut rng, n) as usize][column] += 1;
                    }
                }
            }
        }
        self.largest = self
            .counts
            .iter()
            .flatten()
            .copied()
            .max()
            .map_or(0, u64::from);
        self.as_f32.clear();
        if self.largest < F32_EXACT {
            let as_f32 = |c: &[u32; LANES]| std::array::from_fn(|lane| c[lane] as f32);
            self.as_f32.extend(self.counts.iter().map(as_f32));
        }
    }

    /// Σ multiplicity × (2·w, n) over each pair's task entries, per lane: pair `k` owns
    /// `entries[starts[k]..starts[k + 1]]` and has the [`entry_bound`] `bounds[k]`; its sums
    /// go to `write(k, sums)`.
    pub(crate) fn each_pair(
        &self,
        starts: &[usize],
        entries: &[TaskEntry],
        bounds: &[u64],
        write: impl FnMut(usize, [[f64; LANES]; 2]),
    ) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA.
            return unsafe { self.each_pair_avx2(starts, entries, bounds, write) };
        }
        self.each_pair_with(starts, entries, bounds, sums_f32, write);
    }

    /// [`Multiplicities::each_pair_with`] compiled for AVX2, with [`avx2::sums_f32`].
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn each_pair_avx2(
        &self,
        starts: &[usize],
        entries: &[TaskEntry],
        bounds: &[u64],
        write: impl FnMut(usize, [[f64; LANES]; 2]),
    ) {
        // SAFETY (of the kernel): the CPU has AVX2 and FMA.
        let kernel = |e: &[TaskEntry], t: &[[f32; LANES]]| unsafe { avx2::sums_f32(e, t) };
        self.each_pair_with(starts, entries, bounds, kernel, write);
    }

    /// [`Multiplicities::each_pair`]: by `kernel` (a [`sums_f32`]) for pairs whose sums stay
    /// below 2^24, else in f64.
    #[inline(always)]
    fn each_pair_with(
        &self,
        starts: &[usize],
        entries: &[TaskEntry],
        bounds: &[u64],
        kernel: impl Fn(&[TaskEntry], &[[f32; LANES]]) -> [[f32; LANES]; 2],
        mut write: impl FnMut(usize, [[f64; LANES]; 2]),
    ) {
        for (k, (range, &bound)) in starts.windows(2).zip(bounds).enumerate() {
            let pair = &entries[range[0]..range[1]];
            let sums = if self.largest.saturating_mul(bound) < F32_EXACT {
                let [tw, n] = kernel(pair, &self.as_f32);
                [
                    std::array::from_fn(|lane| f64::from(tw[lane])),
                    std::array::from_fn(|lane| f64::from(n[lane])),
                ]
            } else {
                sums_f64(pair, &self.counts)
            };
            write(k, sums);
        }
    }
}

/// Takes one block of uniforms of a group of [`REFIT_LANES`] lanes, each a pick among `n`
/// tasks (lane `lane` counted in column `base + lane`), and lowers `lowest[lane]` to the
/// lowest low half of a product u·n its lane met (see [`may_have_rejected`]).
#[inline(always)]
fn count_block(
    block: &[[u64; REFIT_LANES]],
    n: u64,
    counts: &mut [[u32; LANES]],
    base: usize,
    lowest: &mut [u64; REFIT_LANES],
) {
    for u in block {
        for lane in 0..REFIT_LANES {
            let product = u128::from(u[lane]) * u128::from(n);
            counts[(product >> 64) as usize][base + lane] += 1;
        }
    }
    // Apart from the counting: a store in the same loop kept these in memory, which made the
    // loop four times slower.
    for u in block {
        for lane in 0..REFIT_LANES {
            lowest[lane] = lowest[lane].min(u[lane].wrapping_mul(n));
        }
    }
}

/// Whether a lane whose lowest low half of u·n is `lowest` met a uniform that
/// `uniform_below` might reject: it looks again at exactly those whose low half is below n
/// (with n tasks each uniform has a chance of n/2^64 to be one). Such a lane is drawn again
/// one pick at a time.
#[inline(always)]
fn may_have_rejected(lowest: u64, n: u64) -> bool {
    lowest < n
}

/// An upper bound on the tallies of one pair's task entries: Σ max(2·w, n) (each sum of the
/// pair is at most the largest multiplicity times this).
pub(crate) fn entry_bound(entries: &[TaskEntry]) -> u64 {
    entries.iter().map(|e| e.twice_w.max(e.n) as u64).sum()
}

/// The f32 sums of one pair; exact when every sum stays below 2^24. Entries go round-robin
/// into [`WAYS`] sets of sums, so that several additions are in flight instead of each
/// waiting on the last: with exact integers the order changes no sum.
#[inline(always)]
fn sums_f32(entries: &[TaskEntry], times: &[[f32; LANES]]) -> [[f32; LANES]; 2] {
    let mut sums = [[[0.0; LANES]; 2]; WAYS];
    round_robin(entries, &mut sums, |sums, e| {
        let m = &times[e.task as usize];
        for lane in 0..LANES {
            sums[0][lane] += m[lane] * e.twice_w;
            sums[1][lane] += m[lane] * e.n;
        }
    });
    let mut total = sums[0];
    for way in &sums[1..] {
        for (t, s) in total.iter_mut().zip(way) {
            for lane in 0..LANES {
                t[lane] += s[lane];
            }
        }
    }
    total
}

/// Independent sets of sums in [`sums_f32`] and [`avx2::sums_f32`] (four: a multiply-add
/// takes about four cycles and two can start per cycle).
const WAYS: usize = 4;

/// Adds entry `k` into `sums[k % WAYS]` with `add`, in order.
#[inline(always)]
fn round_robin<S>(
    entries: &[TaskEntry],
    sums: &mut [S; WAYS],
    mut add: impl FnMut(&mut S, &TaskEntry),
) {
    let mut rounds = entries.chunks_exact(WAYS);
    for round in &mut rounds {
        for (way, e) in sums.iter_mut().zip(round) {
            add(way, e);
        }
    }
    for (way, e) in sums.iter_mut().zip(rounds.remainder()) {
        add(way, e);
    }
}

/// [`super::sums_f32`] in AVX2 registers, one per sum, with fused multiply-adds: they round
/// nothing here, as every product and sum is an exact integer, so the sums are the same.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{
        __m256, _mm256_add_ps, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_set1_ps, _mm256_setzero_ps,
        _mm256_storeu_ps,
    };

    use super::{LANES, TaskEntry, WAYS, round_robin};

    const _: () = assert!(LANES == 8, "one lane per f32 of a register");

    /// The f32 sums of one pair, eight lanes to a register.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn sums_f32(
        entries: &[TaskEntry],
        times: &[[f32; LANES]],
    ) -> [[f32; LANES]; 2] {
        let mut sums = [[_mm256_setzero_ps(); 2]; WAYS];
        round_robin(entries, &mut sums, |sums: &mut [__m256; 2], e| {
            // SAFETY: eight f32 from a `[f32; 8]`.
            let m = unsafe { _mm256_loadu_ps(times[e.task as usize].as_ptr()) };
            sums[0] = _mm256_fmadd_ps(m, _mm256_set1_ps(e.twice_w), sums[0]);
            sums[1] = _mm256_fmadd_ps(m, _mm256_set1_ps(e.n), sums[1]);
        });
        let mut out = [[0.0; LANES]; 2];
        for (k, o) in out.iter_mut().enumerate() {
            let total = sums[1..]
                .iter()
                .fold(sums[0][k], |t, s| _mm256_add_ps(t, s[k]));
            // SAFETY: eight f32 into a `[f32; 8]`.
            unsafe { _mm256_storeu_ps(o.as_mut_ptr(), total) };
        }
        out
    }
}

/// The f64 sums, for pairs too large for f32 (exact below 2^53).
fn sums_f64(entries: &[TaskEntry], counts: &[[u32; LANES]]) -> [[f64; LANES]; 2] {
    let mut sums = [[0.0; LANES]; 2];
    for e in entries {
        let m = &counts[e.task as usize];
        let (tw, n) = (f64::from(e.twice_w), f64::from(e.n));
        for lane in 0..LANES {
            sums[0][lane] += f64::from(m[lane]) * tw;
            sums[1][lane] += f64::from(m[lane]) * n;
        }
    }
    sums
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::small_numbers;

    fn entry(task: u32, twice_w: u16, n: u16) -> TaskEntry {
        TaskEntry {
            task,
            twice_w: f32::from(twice_w),
            n: f32::from(n),
        }
    }

    impl Multiplicities {
        /// [`Multiplicities::each_pair`] of one pair; checked against the portable loop,
        /// which it is not on CPUs with AVX2 and FMA.
        fn pair_sums(&self, entries: &[TaskEntry], bound: u64) -> [[f64; LANES]; 2] {
            let (mut sums, mut portable) = (None, None);
            let starts = [0, entries.len()];
            self.each_pair(&starts, entries, &[bound], |k, s| {
                assert_eq!(k, 0);
                sums = Some(s);
            });
            self.each_pair_with(&starts, entries, &[bound], sums_f32, |_, s| {
                portable = Some(s)
            });
            assert_eq!(sums, portable, "the portable loop agrees");
            sums.expect("one pair")
        }
    }

    /// The sums in exact integers.
    fn exact(entries: &[TaskEntry], counts: &[[u32; LANES]]) -> [[f64; LANES]; 2] {
        let mut sums = [[0u64; LANES]; 2];
        for e in entries {
            for lane in 0..LANES {
                let m = u64::from(counts[e.task as usize][lane]);
                sums[0][lane] += m * e.twice_w as u64;
                sums[1][lane] += m * e.n as u64;
            }
        }
        sums.map(|s| s.map(|x| x as f64))
    }

    #[test]
    fn every_path_gives_the_exact_integer_sums() {
        let mut next = small_numbers(0x9E37_79B9_7F4A_7C15);
        let mut m = Multiplicities::default();
        for round in 0..50 {
            let tasks = 1 + next(40) as usize;
            m.draw(
                tasks,
                round,
                8 * round as usize,
                1 + next(LANES as u64) as usize,
            );
            let entries: Vec<TaskEntry> = (0..next(60))
                .map(|_| {
                    let n = next(u64::from(u16::MAX / 3)) as u16;
                    entry(
                        next(tasks as u64) as u32,
                        n + next(u64::from(n) + 1) as u16,
                        n,
                    )
                })
                .collect();
            let want = exact(&entries, &m.counts);
            assert_eq!(m.pair_sums(&entries, entry_bound(&entries)), want);
            assert_eq!(sums_f64(&entries, &m.counts), want);
            if m.largest * entry_bound(&entries) < F32_EXACT {
                let scalar = sums_f32(&entries, &m.as_f32);
                assert_eq!(scalar.map(|s| s.map(f64::from)), want);
            }
        }
    }

    #[test]
    fn sums_beyond_f32_take_the_f64_path() {
        // 4097 × 4099 = 16 793 603 > 2^24 is not an f32: the f32 loop would round it.
        let mut counts = vec![[0u32; LANES]; 2];
        counts[1] = [4097, 1, 0, 2, 3, 4, 5, 6];
        let m = Multiplicities {
            as_f32: counts.iter().map(|c| c.map(|x| x as f32)).collect(),
            counts,
            largest: 4097,
        };
        let entries = [entry(1, 4099, 4099), entry(0, 5, 3)];
        let rounded = sums_f32(&entries, &m.as_f32);
        assert_ne!(
            f64::from(rounded[0][0]),
            4097.0 * 4099.0,
            "f32 cannot hold it"
        );
        let sums = m.pair_sums(&entries, entry_bound(&entries));
        assert_eq!(sums[0][0], 4097.0 * 4099.0);
        assert_eq!(sums, exact(&entries, &m.counts));
    }

    /// A lane whose uniform `uniform_below` would look at again (low half of u·n below n) is
    /// marked to be drawn again, and only such a lane: its multiplicities might differ from
    /// one-at-a-time picks (which [`draws_are_each_resamples_own_picks`] checks of the redraw).
    #[test]
    fn lanes_that_met_a_uniform_uniform_below_might_reject_are_drawn_again() {
        for n in [1u64, 3, 5, 7, 1001] {
            // The inverse of n modulo 2^64 (n odd), by Newton's iteration.
            let inverse = (0..6).fold(n, |x, _| {
                x.wrapping_mul(2u64.wrapping_sub(n.wrapping_mul(x)))
            });
            assert_eq!(n.wrapping_mul(inverse), 1);
            // Uniforms whose product with n has the low half 0, n − 1 (looked at again), n and
            // 2^64 − n (not).
            let with_low = |low: u64| low.wrapping_mul(inverse);
            let block = [[
                with_low(0),
                with_low(n - 1),
                with_low(n),
                with_low(n.wrapping_neg()),
            ]];
            let mut counts = vec![[0u32; LANES]; n as usize];
            let mut lowest = [u64::MAX; REFIT_LANES];
            count_block(&block, n, &mut counts, 4, &mut lowest);
            let again: Vec<bool> = lowest.iter().map(|&l| may_have_rejected(l, n)).collect();
            assert_eq!(again, [true, true, false, false], "{n} tasks");
            for (lane, &u) in block[0].iter().enumerate() {
                let pick = ((u128::from(u) * u128::from(n)) >> 64) as usize;
                assert_eq!(counts[pick][4 + lane], 1, "{n} tasks, lane {lane}");
            }
            let picks: u32 = counts.iter().flatten().sum();
            assert_eq!(picks, REFIT_LANES as u32);
        }
    }

    #[test]
    fn draws_are_each_resamples_own_picks() {
        // Fewer tasks than a block, and several blocks; one group of generators, part of a
        // second, and both whole.
        for ((tasks, count), redraw) in [(7, 3), (300, 5), (130, LANES)]
            .into_iter()
            .flat_map(|c| [(c, false), (c, true)])
        {
            let mut m = Multiplicities::default();
            m.draw_checked(tasks, 42, 16, count, redraw);
            for lane in 0..LANES {
                let mut want = vec![0u32; tasks];
                if lane < count {
                    let mut rng = resample_rng(42, 16 + lane);
                    for _ in 0..tasks {
                        want[uniform_below(&mut rng, tasks as u64) as usize] += 1;
                    }
                }
                let got: Vec<u32> = m.counts.iter().map(|c| c[lane]).collect();
                assert_eq!(got, want, "{tasks} tasks, lane {lane}, redrawn: {redraw}");
            }
            assert_eq!(
                m.largest,
                u64::from(*m.counts.iter().flatten().max().unwrap())
            );
        }
    }
}
