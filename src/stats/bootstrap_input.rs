//! Aggregation of comparison rows into the cells the bootstrap resamples; no fitting here.
//!
//! Resampling rows with replacement only changes how often each *distinct* row is drawn, and
//! the Bradley–Terry fit depends on rows only through per-pair counts. So rows collapse into
//! cells — (unordered pair, lower index wins / higher index wins / tie), plus one cell for all
//! both-bad rows — and a multinomial over the cells with probabilities count/N and N draws
//! has exactly the distribution of the resampled counts (see [`super::multinomial`]). For the
//! task (cluster) bootstrap, each task keeps its own list of cells and a resample draws task
//! multiplicities (T uniform picks among T tasks). Memory grows with distinct cells, not rows.

use rand_core::Rng;

use super::StatsError;
use super::counts::{ActivePairs, Outcome, PairCounts, PairData, locate};
use super::multinomial::CellSampler;
use super::poisson::uniform_below;

/// Comparison rows aggregated for [`super::bootstrap`]: full-data counts, the comparison
/// cells and the per-task cells. Build it with [`BootstrapInputBuilder`] or
/// [`BootstrapInput::from_rows`].
#[derive(Debug, Clone)]
pub struct BootstrapInput {
    counts: PairCounts,
    pub(crate) active: ActivePairs,
    /// Slot of each comparison cell; the both-bad cell uses the spare slot `active.len()`.
    cell_slot: Vec<u32>,
    /// What one row of the cell adds to `w`: 1 (lower index wins), 0 or ½ (tie).
    cell_win: Vec<f64>,
    cells: CellSampler,
    /// Task `t` owns `task_entries[task_start[t]..task_start[t + 1]]`.
    task_start: Vec<usize>,
    task_entries: Vec<TaskEntry>,
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
        self.cells.total()
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
    pub(crate) fn resample_comparisons<R: Rng>(
        &self,
        rng: &mut R,
        data: &mut PairData,
        scratch: &mut Scratch,
    ) {
        let draws = &mut scratch.counts;
        draws.resize(self.cells.len(), 0);
        self.cells.sample(rng, draws);
        data.w.fill(0.0);
        data.n.fill(0.0);
        for ((&x, &slot), &win) in draws.iter().zip(&self.cell_slot).zip(&self.cell_win) {
            data.w[slot as usize] += x as f64 * win;
            data.n[slot as usize] += x as f64;
        }
    }

    /// Sufficient statistics of a task-level resample: each of T picks chooses one of the T
    /// tasks uniformly, then every task adds its cells times its multiplicity.
    pub(crate) fn resample_tasks<R: Rng>(
        &self,
        rng: &mut R,
        data: &mut PairData,
        scratch: &mut Scratch,
    ) {
        let n_tasks = self.n_tasks();
        let times = &mut scratch.counts;
        times.clear();
        times.resize(n_tasks, 0);
        for _ in 0..n_tasks {
            times[uniform_below(rng, n_tasks as u64) as usize] += 1;
        }
        // One interleaved accumulator, so each entry touches one cache line.
        let acc = &mut scratch.pairs;
        acc.clear();
        acc.resize(data.n.len(), [0.0; 2]);
        for (task, &k) in times.iter().enumerate().filter(|(_, k)| **k > 0) {
            let k = k as f64;
            for e in &self.task_entries[self.task_start[task]..self.task_start[task + 1]] {
                let slot = &mut acc[e.slot as usize];
                slot[0] += k * f64::from(e.twice_w);
                slot[1] += k * f64::from(e.n);
            }
        }
        for ((w, n), [twice_w, total]) in data.w.iter_mut().zip(&mut data.n).zip(acc.iter()) {
            *w = 0.5 * twice_w;
            *n = *total;
        }
    }
}

/// Per-thread scratch space for drawing resamples.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    counts: Vec<u64>,
    pairs: Vec<[f64; 2]>,
}

/// Accumulates comparison rows into a [`BootstrapInput`]. Keeps 16 bytes per row until
/// [`BootstrapInputBuilder::build`], which sorts them into per-task cells.
#[derive(Debug, Clone)]
pub struct BootstrapInputBuilder {
    counts: PairCounts,
    /// One key per row: (task, 4·pair index + cell), cell 3 meaning both bad.
    keys: Vec<(usize, u64)>,
}

impl BootstrapInputBuilder {
    /// An empty builder for `n_models` models.
    pub fn new(n_models: usize) -> BootstrapInputBuilder {
        BootstrapInputBuilder {
            counts: PairCounts::new(n_models),
            keys: Vec::new(),
        }
    }

    /// Adds one row: model `a` against model `b` on task `task` (any label; every distinct
    /// label is one cluster of the task bootstrap).
    pub fn add(
        &mut self,
        a: usize,
        b: usize,
        outcome: Outcome,
        task: usize,
    ) -> Result<(), StatsError> {
        let (pair, cell) = locate(self.counts.n_models(), a, b, outcome)?;
        self.counts.add(a, b, outcome)?;
        self.keys
            .push((task, 4 * pair as u64 + cell.unwrap_or(3) as u64));
        Ok(())
    }

    /// Finishes the aggregation.
    pub fn build(mut self) -> BootstrapInput {
        let active = ActivePairs::from_counts(&self.counts);
        let (cell_slot, cell_win, weights) = comparison_cells(&self.counts, &active);
        self.keys.sort_unstable();
        let (task_start, task_entries) = task_cells(&self.keys, &active);
        BootstrapInput {
            cells: CellSampler::new(&weights),
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

/// Per-task cells in CSR form from the sorted row keys: tasks in ascending label order
/// (a task whose rows are all both-bad still counts, with no cells), pairs in slot order.
fn task_cells(keys: &[(usize, u64)], active: &ActivePairs) -> (Vec<usize>, Vec<TaskEntry>) {
    let mut start = vec![0];
    let mut entries = Vec::new();
    let mut current_task = None;
    for run in keys.chunk_by(|x, y| x.0 == y.0 && x.1 >> 2 == y.1 >> 2) {
        let (task, code) = run[0];
        if current_task.is_some_and(|t| t != task) {
            start.push(entries.len());
        }
        current_task = Some(task);
        let mut tally = [0u64; 4];
        run.iter()
            .for_each(|&(_, code)| tally[(code & 3) as usize] += 1);
        push_entries(&mut entries, active.slot[(code >> 2) as usize], tally);
    }
    if current_task.is_some() {
        start.push(entries.len());
    }
    (start, entries)
}

/// Appends one pair's tallies `[lower wins, higher wins, ties, both bad]` as entries whose
/// u32 fields cannot overflow: a (practically impossible) tally above 2^32/3 is split over
/// several entries of the same slot, which the resampling sums exactly.
fn push_entries(entries: &mut Vec<TaskEntry>, slot: u32, tally: [u64; 4]) {
    const PART: u64 = (u32::MAX / 3) as u64;
    let [mut lo, mut hi, mut ties, _] = tally;
    while lo + hi + ties > 0 {
        let (l, h, t) = (lo.min(PART), hi.min(PART), ties.min(PART));
        let fits = |x: u64| u32::try_from(x).expect("at most 3·PART fits in u32");
        entries.push(TaskEntry {
            slot,
            twice_w: fits(2 * l + t),
            n: fits(l + h + t),
        });
        (lo, hi, ties) = (lo - l, hi - h, ties - t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_tallies_split_into_entries_with_exact_sums() {
        let part = u64::from(u32::MAX / 3);
        let tally = [2 * part + 5, 1, part + 3, 7];
        let mut entries = Vec::new();
        push_entries(&mut entries, 4, tally);
        assert_eq!(entries.len(), 3);
        assert!(entries.iter().all(|e| e.slot == 4));
        let twice_w: u64 = entries.iter().map(|e| u64::from(e.twice_w)).sum();
        let n: u64 = entries.iter().map(|e| u64::from(e.n)).sum();
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
        assert_eq!((input.n_tasks(), input.rows(), input.n_cells()), (3, 4, 4));
        assert_eq!(input.task_start, vec![0, 1, 1, 2]);
        let last = input.task_entries[1];
        assert_eq!((last.twice_w, last.n), (2, 2), "task 30: one win each way");
    }
}
