//! Aggregation of comparison rows into the cells the bootstrap resamples; no fitting here.
//!
//! Resampling rows with replacement only changes how often each *distinct* row is drawn, and
//! the Bradley–Terry fit depends on rows only through per-pair counts. So rows collapse into
//! cells — (unordered pair, lower index wins / higher index wins / tie) — and a multinomial
//! over the cells with probabilities count/N and N draws has exactly the distribution of the
//! resampled counts (see [`super::multinomial`]). For the task (cluster) bootstrap, every pair
//! keeps its per-task tallies and a resample draws task multiplicities (T uniform picks among
//! T tasks), then sums multiplicity × tally per pair. Both-bad rows are counted but never
//! drawn (DESIGN §2.9: they move no number, intervals included): they make no cell, and a
//! task whose rows are all both bad is no task of the task bootstrap.
//! Memory grows with distinct cells (at most tasks × pairs), not with rows.

use std::sync::OnceLock;

use super::StatsError;
use super::bootstrap::BootstrapUnit;
use super::counts::{ActivePairs, Outcome, PairCounts, locate, pair_index};
use super::multinomial::CellSampler;
use super::poisson::resample_rng;
use super::refit::{LaneData, REFIT_LANES};
use super::task_sums::{LANES, Multiplicities, entry_bound};

/// Comparison rows aggregated for [`super::bootstrap`]: full-data counts, the comparison
/// cells and the per-task cells. Build it with [`BootstrapInputBuilder`] or
/// [`BootstrapInput::from_rows`].
#[derive(Debug, Clone)]
pub struct BootstrapInput {
    counts: PairCounts,
    pub(crate) active: ActivePairs,
    /// Per active pair (slot): its cells (lower index wins, higher index wins, tie), as
    /// indices into a draw; an empty outcome points one past the last cell, to a zero.
    pair_cells: Vec<[u32; 3]>,
    /// Rows per comparison cell, in the order of a draw.
    weights: Vec<u64>,
    /// The multinomial over the cells, built on first use (the task unit has none).
    cells: OnceLock<CellSampler>,
    /// Distinct tasks.
    n_tasks: usize,
    /// Whether per-task cells were kept (see [`BootstrapInputBuilder::comparisons_only`]).
    has_tasks: bool,
    /// Active pair (slot) `k` owns `task_entries[slot_start[k]..slot_start[k + 1]]`.
    slot_start: Vec<usize>,
    task_entries: Vec<TaskEntry>,
    /// Per active pair: the [`entry_bound`] of its task entries.
    slot_bound: Vec<u64>,
}

/// One active pair's comparisons within one task.
#[derive(Debug, Clone, Copy)]
pub(super) struct TaskEntry {
    /// Dense task index (tasks in ascending label order).
    pub(super) task: u32,
    /// 2·(wins of the lower index) + ties: an integer below 2^16, held as the f32 the inner
    /// loop of the task bootstrap multiplies (see [`super::task_sums`]).
    pub(super) twice_w: f32,
    /// Rated comparisons (likewise).
    pub(super) n: f32,
}

impl BootstrapInput {
    /// Aggregates rows `(model a, model b, outcome, task index)` for `n_models` models.
    /// Task indices are arbitrary labels; every distinct one is a cluster.
    pub fn from_rows(
        n_models: usize,
        rows: impl IntoIterator<Item = (usize, usize, Outcome, usize)>,
    ) -> Result<BootstrapInput, StatsError> {
        let mut builder = BootstrapInputBuilder::new(n_models);
        for (a, b, outcome, task) in rows {
            builder.add(a, b, outcome, task)?;
        }
        Ok(builder.build())
    }

    /// The full-data counts (fit these for the point estimate).
    pub fn counts(&self) -> &PairCounts {
        &self.counts
    }

    /// The number of models.
    pub fn n_models(&self) -> usize {
        self.counts.n_models()
    }

    /// Rated rows (the size of a comparison-level resample; both-bad rows are not drawn).
    pub fn rows(&self) -> u64 {
        self.weights.iter().sum()
    }

    /// Distinct tasks with a rated row (the size of a task-level resample).
    pub fn n_tasks(&self) -> usize {
        self.n_tasks
    }

    /// Whether this input can be resampled by task.
    pub fn has_tasks(&self) -> bool {
        self.has_tasks
    }

    /// Distinct comparison cells (the cost of one comparison-level resample).
    pub fn n_cells(&self) -> usize {
        self.weights.len()
    }

    /// Builds the comparison-level sampler (its Poisson tables) unless it is built already;
    /// the task unit never needs it.
    pub(crate) fn prepare_comparisons(&self) {
        self.sampler();
    }

    fn sampler(&self) -> &CellSampler {
        self.cells.get_or_init(|| CellSampler::new(&self.weights))
    }

    /// Draws resamples `first..first + count` (`count` at most [`LANES`]) by `unit`: resample
    /// `first + r` goes to lane `r % REFIT_LANES` of `data[r / REFIT_LANES]` (per active pair
    /// `w` and `n`). Resample `r` always uses its own stream `resample_rng(seed, r)`, so
    /// batching changes nothing.
    pub(crate) fn resample_batch(
        &self,
        unit: BootstrapUnit,
        seed: u64,
        first: usize,
        count: usize,
        data: &mut [LaneData],
        scratch: &mut Scratch,
    ) {
        debug_assert!(count <= LANES && count <= data.len() * REFIT_LANES);
        match unit {
            BootstrapUnit::Comparison => {
                for (group, lanes) in data.iter_mut().enumerate() {
                    let start = group * REFIT_LANES;
                    let n = count.saturating_sub(start).min(REFIT_LANES);
                    if n > 0 {
                        self.resample_comparisons(
                            seed,
                            first + start,
                            n,
                            lanes,
                            &mut scratch.counts,
                        );
                    }
                }
            }
            BootstrapUnit::Task => self.resample_tasks(seed, first, count, data, scratch),
        }
    }

    /// Comparison-level resamples `first..first + count` (`count` ≤ [`REFIT_LANES`]) into the
    /// lanes of `data`, each a multinomial over the cells; lanes past `count` get zeros.
    fn resample_comparisons(
        &self,
        seed: u64,
        first: usize,
        count: usize,
        data: &mut LaneData,
        draws: &mut Vec<[u64; REFIT_LANES]>,
    ) {
        let sampler = self.sampler();
        let cells = sampler.len();
        // One extra zero at the end stands for an outcome a pair never had.
        draws.resize(cells + 1, [0; REFIT_LANES]);
        // Lanes past `count` draw from the streams of resamples that are never reported and
        // are then zeroed: the common case (full groups) stays branch-free.
        let mut rngs = std::array::from_fn(|lane| resample_rng(seed, first + lane));
        sampler.sample_lanes(&mut rngs, &mut draws[..cells]);
        draws[cells] = [0; REFIT_LANES];
        if count < REFIT_LANES {
            draws.iter_mut().for_each(|d| d[count..].fill(0));
        }
        // Gathered per pair (reads in any order, writes whole rows in order). Counts are far
        // below 2^53, so the conversions and sums are exact.
        for ((w, n), &cells) in data.w.iter_mut().zip(&mut data.n).zip(&self.pair_cells) {
            let [lower, higher, tie] = cells.map(|c| draws[c as usize]);
            for lane in 0..REFIT_LANES {
                let [lower, higher, tie] = [lower, higher, tie].map(|d| d[lane] as i64 as f64);
                w[lane] = lower + 0.5 * tie;
                n[lane] = lower + higher + tie;
            }
        }
    }

    /// Task-level resamples `first..first + count`, one per lane: each of T picks chooses one
    /// of the T tasks uniformly; then each pair sums multiplicity × tally over its tasks.
    /// Pairs are visited in turn with every lane at once, so the tallies stream through once
    /// per batch, the sums stay in registers and the multiplicities in cache. All sums are of
    /// integers, hence exact, and equal to drawing the resamples one at a time (see
    /// [`super::task_sums`]).
    fn resample_tasks(
        &self,
        seed: u64,
        first: usize,
        count: usize,
        data: &mut [LaneData],
        scratch: &mut Scratch,
    ) {
        let times = &mut scratch.times;
        times.draw(self.n_tasks, seed, first, count);
        let (starts, entries) = (&self.slot_start, &self.task_entries);
        times.each_pair(
            starts,
            entries,
            &self.slot_bound,
            |slot, [twice_w, total]| {
                for lane in 0..count {
                    let d = &mut data[lane / REFIT_LANES];
                    d.w[slot][lane % REFIT_LANES] = 0.5 * twice_w[lane];
                    d.n[slot][lane % REFIT_LANES] = total[lane];
                }
            },
        );
    }
}

/// Per-thread scratch space for drawing resamples.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Cell draws of the comparison-level resamples of one lane group (per cell, per lane).
    counts: Vec<[u64; REFIT_LANES]>,
    /// Task multiplicities per lane.
    times: Multiplicities,
}

/// Accumulates comparison rows into a [`BootstrapInput`]. Keeps 8 bytes per row until
/// [`BootstrapInputBuilder::build`], which buckets them into per-task cells (unless built with
/// [`BootstrapInputBuilder::comparisons_only`]).
#[derive(Debug, Clone)]
pub struct BootstrapInputBuilder {
    counts: PairCounts,
    /// One key per rated row: its task label in the high 32 bits, 4·pair index + cell in the
    /// low 32 (8 bytes a row: these keys are most of the memory and page faults of a task
    /// bootstrap's aggregation).
    keys: Vec<u64>,
    keep_tasks: bool,
}

impl BootstrapInputBuilder {
    /// An empty builder for `n_models` models.
    pub fn new(n_models: usize) -> BootstrapInputBuilder {
        BootstrapInputBuilder {
            counts: PairCounts::new(n_models),
            keys: Vec::new(),
            keep_tasks: true,
        }
    }

    /// A builder that keeps only the per-pair counts: constant memory per row and no sort,
    /// for the comparison bootstrap. The result cannot be resampled by task.
    pub fn comparisons_only(n_models: usize) -> BootstrapInputBuilder {
        BootstrapInputBuilder {
            keep_tasks: false,
            ..BootstrapInputBuilder::new(n_models)
        }
    }

    /// Makes room for `rows` more rows (a builder that keeps tasks holds a key per row);
    /// room never filled costs no memory (its pages are never touched).
    pub fn reserve(&mut self, rows: usize) {
        if self.keep_tasks {
            self.keys.reserve(rows);
        }
    }

    /// Adds one row: model `a` against model `b` on task `task` (any label below 2^32; every
    /// distinct label is one cluster of the task bootstrap).
    #[inline]
    pub fn add(
        &mut self,
        a: usize,
        b: usize,
        outcome: Outcome,
        task: usize,
    ) -> Result<(), StatsError> {
        let (pair, cell) = locate(self.counts.n_models(), a, b, outcome)?;
        // A both-bad row is counted, never drawn: it brings no key, so a task of only
        // both-bad rows is no task of the task bootstrap.
        if let (true, Some(cell)) = (self.keep_tasks, cell) {
            let label = u32::try_from(task).map_err(|_| StatsError::TaskLabelOutOfRange(task))?;
            // Fits: 2^30 pairs would be 46,341 models, whose counts alone take 25 GB.
            let code = u32::try_from(4 * pair + cell).expect("fewer than 2^30 pairs");
            self.keys.push(u64::from(label) << 32 | u64::from(code));
        }
        self.counts.add_located(a, b, pair, cell, 1);
        Ok(())
    }

    /// Adds the rows of `other`, a builder of the same kind for the same models (so that
    /// parts of the rows can be aggregated on different threads). The result does not depend
    /// on how the rows were split.
    pub fn merge(&mut self, other: BootstrapInputBuilder) {
        debug_assert_eq!(self.keep_tasks, other.keep_tasks);
        self.counts.merge(&other.counts);
        self.keys.extend(other.keys);
    }

    /// Finishes the aggregation.
    pub fn build(self) -> BootstrapInput {
        self.build_on(1)
    }

    /// [`BootstrapInputBuilder::build`] with the per-task cells sorted out on up to `threads`
    /// threads (the same result for any number).
    pub fn build_on(self, threads: usize) -> BootstrapInput {
        let active = ActivePairs::from_counts(&self.counts);
        let (pair_cells, weights) = comparison_cells(&self.counts, &active);
        let (n_tasks, slot_start, task_entries) = if self.keep_tasks {
            task_cells(&self.keys, &self.counts, &active, threads)
        } else {
            (0, vec![0; active.models.len() + 1], Vec::new())
        };
        let slot_bound = slot_start
            .windows(2)
            .map(|r| entry_bound(&task_entries[r[0]..r[1]]))
            .collect();
        BootstrapInput {
            weights,
            cells: OnceLock::new(),
            counts: self.counts,
            active,
            pair_cells,
            n_tasks,
            has_tasks: self.keep_tasks,
            slot_start,
            task_entries,
            slot_bound,
        }
    }
}

/// The non-empty comparison cells, ordered by count so that cells sharing a Poisson sampler
/// are adjacent (see [`CellSampler`]): their counts, and per active pair the index of each
/// of its three outcomes' cells (`counts.len()` for an outcome with no rows). Both-bad rows
/// make no cell: they are not drawn.
fn comparison_cells(counts: &PairCounts, active: &ActivePairs) -> (Vec<[u32; 3]>, Vec<u64>) {
    // (count, slot, outcome).
    let mut cells: Vec<(u64, u32, u8)> = Vec::new();
    for (pair, tally) in counts.tallies().iter().enumerate() {
        for (outcome, &count) in (0u8..3).zip(tally.iter()) {
            if count > 0 {
                cells.push((count, active.slot[pair], outcome));
            }
        }
    }
    // Stable: equal counts keep pair order, so the layout is deterministic.
    cells.sort_by_key(|&(count, _, _)| count);
    let none = u32::try_from(cells.len()).expect("fewer than 2^32 cells");
    let mut pair_cells = vec![[none; 3]; active.models.len()];
    for (index, &(_, slot, outcome)) in cells.iter().enumerate() {
        pair_cells[slot as usize][usize::from(outcome)] = index as u32;
    }
    (pair_cells, cells.iter().map(|c| c.0).collect())
}

/// Per-pair task tallies in CSR form from the row keys: pairs in slot order, tasks numbered
/// densely in ascending label order, each pair's entries in task order. The rated keys are bucketed by pair
/// (the counts give each bucket's size) and each pair's few keys sorted on their own; the
/// pairs are split into `threads` runs of about equal rows, one thread each.
/// Returns (tasks, offsets, entries).
fn task_cells(
    keys: &[u64],
    counts: &PairCounts,
    active: &ActivePairs,
    threads: usize,
) -> (usize, Vec<usize>, Vec<TaskEntry>) {
    let tasks = TaskNumbers::new(keys.iter().map(|&k| label_of(k)));
    let p = counts.n_models();
    let mut bucket_start = Vec::with_capacity(active.models.len() + 1);
    bucket_start.push(0);
    for &(i, j) in &active.models {
        let rated: u64 = counts.tallies()[pair_index(p, i, j)].iter().sum();
        bucket_start.push(bucket_start[bucket_start.len() - 1] + rated as usize);
    }
    let rated = bucket_start[active.models.len()];
    // Every run scans all keys: a run per thread, but only while each has enough of its own.
    let parts = threads.min(rated / PARALLEL_MIN_KEYS).max(1);
    // Slot ranges of about rated/parts keys each, and their buckets.
    let mut ends: Vec<usize> = (1..parts)
        .map(|k| bucket_start.partition_point(|&b| b < rated * k / parts))
        .collect();
    ends.push(active.models.len());
    let mut runs = Vec::with_capacity(parts);
    let mut first = 0;
    for end in ends {
        runs.push(first..end);
        first = end;
    }
    let tasks = &tasks;
    let bucket_start = bucket_start.as_slice();
    let parts: Vec<(Vec<TaskEntry>, Vec<usize>)> = std::thread::scope(|scope| {
        let mut runs = runs.into_iter();
        let own = runs.next().expect("at least one run");
        let others: Vec<_> = runs
            .map(|slots| scope.spawn(move || run_cells(keys, tasks, active, slots, bucket_start)))
            .collect();
        let mut done = vec![run_cells(keys, tasks, active, own, bucket_start)];
        done.extend(
            others
                .into_iter()
                .map(|h| h.join().expect("a task-cell thread panicked")),
        );
        done
    });
    let mut start = Vec::with_capacity(active.models.len() + 1);
    start.push(0);
    let mut parts = parts.into_iter();
    // The first run's entries were given room for every run's (see `slot_run_cells`): the
    // others are appended without moving it.
    let (mut entries, ends) = parts.next().expect("at least one run");
    start.extend(ends);
    for (part, ends) in parts {
        let offset = entries.len();
        start.extend(ends.iter().map(|e| offset + e));
        entries.extend(part);
    }
    // Give back the room no entry took (a large block is remapped, not copied).
    entries.shrink_to_fit();
    (tasks.len(), start, entries)
}

/// Rated keys each run of [`task_cells`] takes at least (fewer: fewer threads).
const PARALLEL_MIN_KEYS: usize = 1 << 15;

/// The task label of a row key.
fn label_of(key: u64) -> usize {
    (key >> 32) as usize
}

/// [`slot_run_cells`] with buckets of `u32` while every task's dense number fits in 30 bits
/// (half the memory, and page faults, of `u64`), else `u64`.
fn run_cells(
    keys: &[u64],
    tasks: &TaskNumbers,
    active: &ActivePairs,
    slots: std::ops::Range<usize>,
    bucket_start: &[usize],
) -> (Vec<TaskEntry>, Vec<usize>) {
    if tasks.len() <= 1 << 30 {
        slot_run_cells::<u32>(keys, tasks, active, slots, bucket_start)
    } else {
        slot_run_cells::<u64>(keys, tasks, active, slots, bucket_start)
    }
}

/// A bucketed key of [`slot_run_cells`]: dense task number << 2 | cell.
trait CellKey: Copy + Ord + Default {
    fn new(task: u32, cell: u64) -> Self;
    fn task(self) -> u32;
    fn cell(self) -> usize;
}

impl CellKey for u32 {
    #[inline(always)]
    fn new(task: u32, cell: u64) -> u32 {
        task << 2 | cell as u32
    }
    #[inline(always)]
    fn task(self) -> u32 {
        self >> 2
    }
    #[inline(always)]
    fn cell(self) -> usize {
        (self & 3) as usize
    }
}

impl CellKey for u64 {
    #[inline(always)]
    fn new(task: u32, cell: u64) -> u64 {
        u64::from(task) << 2 | cell
    }
    #[inline(always)]
    fn task(self) -> u32 {
        u32::try_from(self >> 2).expect("dense task numbers fit u32")
    }
    #[inline(always)]
    fn cell(self) -> usize {
        (self & 3) as usize
    }
}

/// The task entries of the active pairs in `slots`: their rated keys are bucketed by pair
/// (`bucket_start` lays out every pair's bucket), each bucket sorted and counted out.
/// Returns the entries and the end of each pair's entries in them.
fn slot_run_cells<K: CellKey>(
    keys: &[u64],
    tasks: &TaskNumbers,
    active: &ActivePairs,
    slots: std::ops::Range<usize>,
    bucket_start: &[usize],
) -> (Vec<TaskEntry>, Vec<usize>) {
    let base = bucket_start[slots.start];
    let rows = bucket_start[slots.end] - base;
    // This run's buckets and, last, one place that takes every key of another run: no key
    // needs a branch.
    let mut bucket = vec![K::default(); rows + 1];
    let mut next: Vec<usize> = bucket_start[slots.clone()]
        .iter()
        .map(|b| b - base)
        .collect();
    let elsewhere = next.len();
    next.push(rows);
    for &key in keys {
        let code = key & u64::from(u32::MAX);
        // Every key's pair is active (its slot is in this run or another).
        let k = (active.slot[(code >> 2) as usize] as usize).wrapping_sub(slots.start);
        let k = k.min(elsewhere);
        bucket[next[k]] = K::new(tasks.dense(label_of(key)), code & 3);
        next[k] += usize::from(k != elsewhere);
    }
    // At most one entry per key: the run starting at slot 0 takes room for all runs' entries,
    // so that the others can be appended to it in place. Room never written is never touched
    // (the pages stay unmapped), so this costs no memory.
    let room = if slots.start == 0 {
        bucket_start[bucket_start.len() - 1]
    } else {
        rows
    };
    let mut entries = Vec::with_capacity(room);
    let mut ends = Vec::with_capacity(slots.len());
    for slot in slots {
        let keys = &mut bucket[bucket_start[slot] - base..bucket_start[slot + 1] - base];
        keys.sort_unstable();
        for run in keys.chunk_by(|x, y| x.task() == y.task()) {
            let mut tally = [0u64; 4];
            run.iter().for_each(|&key| tally[key.cell()] += 1);
            push_entries(&mut entries, run[0].task(), tally);
        }
        ends.push(entries.len());
    }
    (entries, ends)
}

/// Task labels numbered densely in ascending order: by a table over the labels when they are
/// small (as the parser's are), else by binary search in the sorted distinct labels.
enum TaskNumbers {
    /// Label → dense number (`u32::MAX` for a label never seen), and the number of tasks.
    Table(Vec<u32>, usize),
    /// The distinct labels, ascending.
    Sorted(Vec<usize>),
}

impl TaskNumbers {
    fn new(labels: impl Iterator<Item = usize> + Clone) -> TaskNumbers {
        let (count, top) = labels
            .clone()
            .fold((0usize, 0usize), |(n, m), l| (n + 1, m.max(l)));
        // A table costs 4 bytes per possible label: used while that is at most 4 per row.
        if count > 0 && top < 4 * count + 1024 {
            let mut table = vec![u32::MAX; top + 1];
            labels.for_each(|l| table[l] = 0);
            let mut next = 0u32;
            for slot in table.iter_mut().filter(|s| **s == 0) {
                *slot = next;
                next += 1;
            }
            return TaskNumbers::Table(table, next as usize);
        }
        let mut sorted: Vec<usize> = labels.collect();
        sorted.sort_unstable();
        sorted.dedup();
        TaskNumbers::Sorted(sorted)
    }

    fn len(&self) -> usize {
        match self {
            TaskNumbers::Table(_, len) => *len,
            TaskNumbers::Sorted(sorted) => sorted.len(),
        }
    }

    /// The dense number of a label that was given to [`TaskNumbers::new`].
    fn dense(&self, label: usize) -> u32 {
        let t = match self {
            TaskNumbers::Table(table, _) => table[label] as usize,
            TaskNumbers::Sorted(sorted) => sorted
                .binary_search(&label)
                .expect("every label was collected"),
        };
        u32::try_from(t).expect("fewer than 2^32 tasks")
    }
}

/// Appends one (pair, task) tally `[lower wins, higher wins, ties, both bad]` as entries whose
/// fields stay below 2^16 (exact in f32, and small enough that most pairs' sums stay exact in
/// f32 too): a tally above 2^16/3 (rare: one pair compared that often on one task) is split
/// over several entries of the same task, which the resampling sums exactly.
fn push_entries(entries: &mut Vec<TaskEntry>, task: u32, tally: [u64; 4]) {
    const PART: u64 = (u16::MAX / 3) as u64;
    let [mut lo, mut hi, mut ties, _] = tally;
    while lo + hi + ties > 0 {
        let (l, h, t) = (lo.min(PART), hi.min(PART), ties.min(PART));
        let fits = |x: u64| f32::from(u16::try_from(x).expect("at most 3·PART fits in u16"));
        entries.push(TaskEntry {
            task,
            twice_w: fits(2 * l + t),
            n: fits(l + h + t),
        });
        (lo, hi, ties) = (lo - l, hi - h, ties - t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::test_support::small_numbers;

    #[test]
    fn huge_tallies_split_into_entries_with_exact_sums() {
        let part = u64::from(u16::MAX / 3);
        let tally = [2 * part + 5, 1, part + 3, 7];
        let mut entries = Vec::new();
        push_entries(&mut entries, 4, tally);
        assert_eq!(entries.len(), 3);
        assert!(entries.iter().all(|e| e.task == 4));
        let twice_w: u64 = entries.iter().map(|e| e.twice_w as u64).sum();
        let n: u64 = entries.iter().map(|e| e.n as u64).sum();
        assert_eq!(twice_w, 2 * tally[0] + tally[2]);
        assert_eq!(n, tally[0] + tally[1] + tally[2]);
        let mut none = Vec::new();
        push_entries(&mut none, 0, [0, 0, 0, 9]);
        assert!(none.is_empty(), "both-bad rows bring no cells");
    }

    #[test]
    fn tasks_are_clusters_in_label_order() {
        let rows = [
            (0, 1, Outcome::AWins, 30),
            (1, 0, Outcome::Tie, 10),
            (0, 1, Outcome::BothBad, 20),
            (1, 0, Outcome::AWins, 30),
        ];
        let input = BootstrapInput::from_rows(2, rows).expect("valid rows");
        // Task 20 holds only a both-bad row, which is never drawn: no task, no cell.
        assert_eq!((input.n_tasks(), input.rows(), input.n_cells()), (2, 3, 3));
        assert_eq!(input.slot_start, vec![0, 2]);
        let [first, last] = [input.task_entries[0], input.task_entries[1]];
        assert_eq!(
            (first.task, first.twice_w, first.n),
            (0, 1.0, 1.0),
            "task 10: a tie"
        );
        assert_eq!(
            (last.task, last.twice_w, last.n),
            (1, 2.0, 2.0),
            "task 30: one win each way"
        );
    }

    /// The layout of `input`'s task cells: (tasks, offsets, (task, 2w, n) per entry, bounds).
    type Layout = (usize, Vec<usize>, Vec<(u32, f32, f32)>, Vec<u64>);

    fn task_layout(input: &BootstrapInput) -> Layout {
        let entries = input.task_entries.iter().map(|e| (e.task, e.twice_w, e.n));
        (
            input.n_tasks(),
            input.slot_start.clone(),
            entries.collect(),
            input.slot_bound.clone(),
        )
    }

    #[test]
    fn task_cells_are_the_same_on_any_number_of_threads() {
        let mut numbers = small_numbers(0x2545_F491_4F6C_DD1D);
        let mut next = move |below: u64| numbers(below) as usize;
        let outcomes = [
            Outcome::AWins,
            Outcome::BWins,
            Outcome::Tie,
            Outcome::BothBad,
        ];
        let mut builder = BootstrapInputBuilder::new(7);
        // Enough rated rows (three quarters) for three runs.
        for _ in 0..5 * PARALLEL_MIN_KEYS {
            let a = next(7);
            let b = (a + 1 + next(6)) % 7;
            let outcome = outcomes[next(4)];
            builder.add(a, b, outcome, 3 * next(90)).expect("valid row");
        }
        let one = task_layout(&builder.clone().build());
        for threads in [2, 3, 8] {
            assert_eq!(
                task_layout(&builder.clone().build_on(threads)),
                one,
                "{threads} threads"
            );
        }
        assert_eq!(one.0, 90);
        // Buckets of u64 (taken beyond 2^30 tasks) give the cells of u32 buckets.
        let keys = &builder.keys;
        let active = ActivePairs::from_counts(&builder.counts);
        let tasks = TaskNumbers::new(keys.iter().map(|&k| label_of(k)));
        let mut bucket_start = vec![0];
        for &(i, j) in &active.models {
            let tally = builder.counts.tallies()[pair_index(7, i, j)];
            bucket_start
                .push(bucket_start[bucket_start.len() - 1] + tally.iter().sum::<u64>() as usize);
        }
        let cells = |wide: bool| {
            let slots = 0..active.models.len();
            let (entries, ends) = if wide {
                slot_run_cells::<u64>(keys, &tasks, &active, slots, &bucket_start)
            } else {
                slot_run_cells::<u32>(keys, &tasks, &active, slots, &bucket_start)
            };
            let entries: Vec<_> = entries.iter().map(|e| (e.task, e.twice_w, e.n)).collect();
            (entries, ends)
        };
        assert_eq!(cells(true), cells(false));
        assert_eq!(cells(false).0, one.2);
    }

    #[test]
    fn task_labels_beyond_32_bits_are_refused() {
        let mut builder = BootstrapInputBuilder::new(2);
        builder
            .add(0, 1, Outcome::AWins, u32::MAX as usize)
            .expect("fits");
        assert_eq!(
            builder.add(0, 1, Outcome::AWins, 1 << 32),
            Err(StatsError::TaskLabelOutOfRange(1 << 32))
        );
        // Nothing of the refused row was counted; a both-bad row brings no label to check.
        assert_eq!(builder.counts.rated_total(), 1);
        builder
            .add(1, 0, Outcome::BothBad, 1 << 40)
            .expect("never drawn");
    }

    #[test]
    fn sparse_labels_number_tasks_as_dense_ones_do() {
        // Three models, shuffled rows; labels 0..9 (numbered by a table) and the same labels
        // spread far apart (too sparse for a table: numbered through the sorted labels).
        let mut rows = Vec::new();
        for k in 0..60usize {
            let (a, b) = [(0, 1), (2, 1), (0, 2), (1, 0)][k % 4];
            let outcome = [
                Outcome::AWins,
                Outcome::BWins,
                Outcome::Tie,
                Outcome::BothBad,
            ][k % 7 % 4];
            rows.push((a, b, outcome, (k * 7) % 10));
        }
        let dense = BootstrapInput::from_rows(3, rows.clone()).expect("valid rows");
        let sparse = rows
            .iter()
            .map(|&(a, b, o, t)| (a, b, o, (t << 28) + 12_345));
        let sparse = BootstrapInput::from_rows(3, sparse).expect("valid rows");
        assert!(matches!(
            TaskNumbers::new([5usize << 40].into_iter()),
            TaskNumbers::Sorted(_)
        ));
        assert!(matches!(
            TaskNumbers::new(0..10usize),
            TaskNumbers::Table(..)
        ));
        assert_eq!(task_layout(&dense), task_layout(&sparse));
        let (tasks, offsets, entries, bounds) = task_layout(&dense);
        assert_eq!((tasks, offsets.len()), (10, 4));
        for (slot, range) in offsets.windows(2).enumerate() {
            let pair = &entries[range[0]..range[1]];
            assert!(
                pair.windows(2).all(|w| w[0].0 < w[1].0),
                "one entry per task, in order"
            );
            let bound: u64 = pair.iter().map(|e| e.1.max(e.2) as u64).sum();
            assert_eq!(bounds[slot], bound);
        }
        let rated: u64 = entries.iter().map(|e| e.2 as u64).sum();
        assert_eq!(rated, dense.counts().rated_total());
    }
}
