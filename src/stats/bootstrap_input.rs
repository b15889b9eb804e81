//! Aggregation of comparison rows into the cells the bootstrap resamples; no fitting here.
//!
//! Resampling rows with replacement only changes how often each *distinct* row is drawn, and
//! the Bradley–Terry fit depends on rows only through per-pair counts. So rows collapse into
//! cells — (unordered pair, lower index wins / higher index wins / tie), plus one cell for all
//! both-bad rows — and a multinomial over the cells with probabilities count/N and N draws
//! has exactly the distribution of the resampled counts. For the task (cluster) bootstrap,
//! each task keeps its own list of cells. Memory grows with distinct cells, not with rows.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use rand_core::Rng;

use super::StatsError;
use super::binomial::Multinomial;
use super::counts::{ActivePairs, Outcome, PairCounts, PairData, locate};

/// Comparison rows aggregated for [`super::bootstrap`]: full-data counts, the comparison
/// cells and the per-task cells. Build it with [`BootstrapInputBuilder`] or
/// [`BootstrapInput::from_rows`].
#[derive(Debug, Clone)]
pub struct BootstrapInput {
    counts: PairCounts,
    pub(crate) active: ActivePairs,
    rows: u64,
    /// Slot of each comparison cell; the both-bad cell uses the spare slot `active.len()`.
    cell_slot: Vec<u32>,
    /// What one row of the cell adds to `w`: 1 (lower index wins), 0 or ½ (tie).
    cell_win: Vec<f64>,
    cells: Multinomial,
    /// Task `t` owns `task_entries[task_start[t]..task_start[t + 1]]`.
    task_start: Vec<usize>,
    task_entries: Vec<TaskEntry>,
    tasks: Multinomial,
}

/// One active pair's comparisons within one task.
#[derive(Debug, Clone, Copy)]
struct TaskEntry {
    slot: u32,
    /// 2·(wins of the lower index) + ties.
    twice_w: u32,
    /// Rated comparisons.
    n: u32,
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

    /// All rows, both-bad included (the size of a comparison-level resample).
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Distinct tasks (the size of a task-level resample).
    pub fn n_tasks(&self) -> usize {
        self.task_start.len() - 1
    }

    /// Distinct comparison cells (the cost of one comparison-level resample).
    pub fn n_cells(&self) -> usize {
        self.cells.len()
    }

    /// Sufficient statistics of a comparison-level resample: a multinomial over the cells.
    /// `data` must have `active.models.len() + 1` slots; the last one collects both-bad rows.
    pub(crate) fn resample_comparisons<R: Rng>(&self, rng: &mut R, data: &mut PairData) {
        data.w.fill(0.0);
        data.n.fill(0.0);
        self.cells.for_each_draw(rng, self.rows, |cell, x| {
            let slot = self.cell_slot[cell] as usize;
            data.w[slot] += x as f64 * self.cell_win[cell];
            data.n[slot] += x as f64;
        });
    }

    /// Sufficient statistics of a task-level resample: task multiplicities from an
    /// equal-probability multinomial, then Σ multiplicity × the task's cells.
    pub(crate) fn resample_tasks<R: Rng>(&self, rng: &mut R, data: &mut PairData) {
        data.w.fill(0.0);
        data.n.fill(0.0);
        self.tasks
            .for_each_draw(rng, self.n_tasks() as u64, |task, times| {
                let times = times as f64;
                for e in &self.task_entries[self.task_start[task]..self.task_start[task + 1]] {
                    data.w[e.slot as usize] += times * 0.5 * f64::from(e.twice_w);
                    data.n[e.slot as usize] += times * f64::from(e.n);
                }
            });
    }
}

/// Accumulates comparison rows into a [`BootstrapInput`].
#[derive(Debug, Clone)]
pub struct BootstrapInputBuilder {
    counts: PairCounts,
    /// (task, pair index) → [lower index wins, higher index wins, ties].
    task_cells: FastMap<(usize, usize), [u32; 3]>,
    tasks: HashSet<usize, BuildHasherDefault<FastHasher>>,
}

impl BootstrapInputBuilder {
    /// An empty builder for `n_models` models.
    pub fn new(n_models: usize) -> BootstrapInputBuilder {
        BootstrapInputBuilder {
            counts: PairCounts::new(n_models),
            task_cells: FastMap::default(),
            tasks: HashSet::default(),
        }
    }

    /// Adds one row: model `a` against model `b` on task `task`.
    pub fn add(
        &mut self,
        a: usize,
        b: usize,
        outcome: Outcome,
        task: usize,
    ) -> Result<(), StatsError> {
        let (pair, cell) = locate(self.counts.n_models(), a, b, outcome)?;
        self.tasks.insert(task);
        if let Some(cell) = cell {
            let tally = self.task_cells.entry((task, pair)).or_insert([0; 3]);
            let mut next = tally.map(u64::from);
            next[cell] += 1;
            // 2·wins + ties and the pair total must fit in u32; checked before anything
            // changes, so a failed add leaves the counts untouched.
            if 2 * next[0] + next[1] + next[2] > u64::from(u32::MAX) {
                return Err(StatsError::CountOverflow);
            }
            tally[cell] += 1;
        }
        self.counts.add(a, b, outcome)
    }

    /// Finishes the aggregation.
    pub fn build(self) -> BootstrapInput {
        let active = ActivePairs::from_counts(&self.counts);
        let (cell_slot, cell_win, weights) = comparison_cells(&self.counts, &active);
        let (task_start, task_entries) = task_cells(self.task_cells, self.tasks, &active);
        let n_tasks = task_start.len() - 1;
        BootstrapInput {
            rows: self.counts.rated_total() + self.counts.both_bad_total(),
            cells: Multinomial::new(&weights),
            tasks: Multinomial::new(&vec![1; n_tasks]),
            counts: self.counts,
            active,
            cell_slot,
            cell_win,
            task_start,
            task_entries,
        }
    }
}

/// The non-empty comparison cells as (slot, win contribution, count) columns.
fn comparison_cells(counts: &PairCounts, active: &ActivePairs) -> (Vec<u32>, Vec<f64>, Vec<u64>) {
    let (mut slots, mut wins, mut weights) = (Vec::new(), Vec::new(), Vec::new());
    for (pair, tally) in counts.tallies().iter().enumerate() {
        for (&count, win) in tally.iter().zip([1.0, 0.0, 0.5]) {
            if count > 0 {
                slots.push(active.slot[pair]);
                wins.push(win);
                weights.push(count);
            }
        }
    }
    let both_bad = counts.both_bad_total();
    if both_bad > 0 {
        slots.push(u32::try_from(active.models.len()).expect("fewer than 2^32 pairs"));
        wins.push(0.0);
        weights.push(both_bad);
    }
    (slots, wins, weights)
}

/// Per-task cells in CSR form, tasks in ascending label order, pairs in slot order.
fn task_cells(
    cells: FastMap<(usize, usize), [u32; 3]>,
    tasks: HashSet<usize, BuildHasherDefault<FastHasher>>,
    active: &ActivePairs,
) -> (Vec<usize>, Vec<TaskEntry>) {
    let mut labels: Vec<usize> = tasks.into_iter().collect();
    labels.sort_unstable();
    let mut sorted: Vec<(usize, TaskEntry)> = cells
        .into_iter()
        .map(|((task, pair), [lo, hi, ties])| {
            let dense = labels
                .binary_search(&task)
                .expect("every task label was recorded");
            let entry = TaskEntry {
                slot: active.slot[pair],
                twice_w: 2 * lo + ties,
                n: lo + hi + ties,
            };
            (dense, entry)
        })
        .collect();
    sorted.sort_unstable_by_key(|&(task, e)| (task, e.slot));
    let mut start = vec![0; labels.len() + 1];
    for &(task, _) in &sorted {
        start[task + 1] += 1;
    }
    for t in 0..labels.len() {
        start[t + 1] += start[t];
    }
    (start, sorted.into_iter().map(|(_, e)| e).collect())
}

type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A small multiplicative hash for integer keys (aggregation is on the hot path for millions
/// of rows; the keys come from our own indices, so no flooding resistance is needed).
#[derive(Debug, Default, Clone, Copy)]
struct FastHasher(u64);

impl FastHasher {
    const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15; // 2^64 / golden ratio
    fn mix(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(26) ^ x).wrapping_mul(Self::MULTIPLIER);
    }
}

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
    fn write(&mut self, bytes: &[u8]) {
        bytes.iter().for_each(|&b| self.mix(u64::from(b)));
    }
    fn write_u64(&mut self, x: u64) {
        self.mix(x);
    }
    fn write_usize(&mut self, x: usize) {
        self.mix(x as u64);
    }
}
