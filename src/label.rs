//! Human labelling (core, pure): the stratified blind sample, the labels and their
//! last-one-wins reading, the check that a label belongs to the item it names, and the
//! agreement statistics between people and the judge.

use std::collections::BTreeMap;

use rand_chacha::ChaCha8Rng;
use rand_core::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::records::{ComparisonRecord, Winner};
use crate::stats::{Interval, LabelCategory, StatsError, agreement, cohen_kappa, kappa_bootstrap};

/// One item of the sample: a comparison, and which of its answers is shown first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SampleItem {
    /// `i0001`, … in sample order.
    pub item: String,
    pub task: String,
    pub model_a: String,
    pub model_b: String,
    /// Which model's answer is shown as Answer 1 (randomised per item, seeded).
    pub first: Side,
    /// The judge whose verdicts the labels are compared with.
    pub judge: String,
}

/// One side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    ModelA,
    ModelB,
}

impl SampleItem {
    /// The model shown as Answer 1 and as Answer 2.
    pub fn shown(&self) -> (&str, &str) {
        match self.first {
            Side::ModelA => (&self.model_a, &self.model_b),
            Side::ModelB => (&self.model_b, &self.model_a),
        }
    }
}

/// What a labeller chose, as pressed (position-relative) or a control action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// Answer 1 is better.
    #[serde(rename = "1")]
    First,
    /// Answer 2 is better.
    #[serde(rename = "2")]
    Second,
    Tie,
    BothBad,
    /// Seen, not labelled.
    Skip,
    /// Takes back the labeller's earlier label of this item.
    Undo,
}

impl Choice {
    /// Parses a key or a sheet cell: `1`, `2`, `t`/`tie`, `b`/`both_bad`/`both bad`, `s`/`skip`.
    pub fn parse(s: &str) -> Option<Choice> {
        match s.trim().to_ascii_lowercase().as_str() {
            "1" => Some(Choice::First),
            "2" => Some(Choice::Second),
            "t" | "tie" => Some(Choice::Tie),
            "b" | "both_bad" | "both bad" | "bothbad" => Some(Choice::BothBad),
            "s" | "skip" => Some(Choice::Skip),
            _ => None,
        }
    }
}

/// One line of `labels/<labeller>.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelRecord {
    pub item: String,
    pub labeller: String,
    pub choice: Choice,
    /// The choice in model terms (`model_a`, `model_b`, `tie`, `both_bad`); `null` for skip/undo.
    pub winner: Option<Winner>,
    pub at: String,
    /// [`item_key`] of the item as labelled. Absent in files written before it existed; such
    /// records are taken to belong to the current sample's item of the same id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item_key: Option<String>,
    /// The session showed the item's models once this label was saved (`--reveal`): it cannot
    /// be undone and given again, in any session. Absent = false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub revealed: bool,
}

/// The identity of an item as the labeller saw it: the first 16 hex digits of the SHA-256 of
/// the task and the models shown as Answer 1 and Answer 2, each length-prefixed. Item ids
/// (`i0001`, …) are reused by every sample; this key is not.
pub fn item_key(item: &SampleItem) -> String {
    let (m1, m2) = item.shown();
    let mut hasher = Sha256::new();
    hasher.update(b"judge/label-item/v1\0");
    for field in [item.task.as_str(), m1, m2] {
        hasher.update((field.len() as u64).to_le_bytes());
        hasher.update(field.as_bytes());
    }
    hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The identity of a whole sample, written into every row of its sheet (`sample`): `s` and the
/// first 12 hex digits of a SHA-256 over each item's id, task id and the two answers as shown
/// (`shown`: `[item, task, answer_1, answer_2]` in sample order). A sheet exported from an
/// earlier sample (its item ids reused) is told from the current one by it. Being over what
/// the sheet shows, it tells a labeller nothing the sheet does not (a hash over the models
/// shown could be brute-forced back into who wrote which answer); the `s` keeps spreadsheets
/// from reading it as a number.
pub fn sample_digest<'a>(shown: impl Iterator<Item = [&'a str; 4]>) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"judge/label-sample/v2\0");
    for fields in shown {
        for field in fields {
            hasher.update((field.len() as u64).to_le_bytes());
            hasher.update(field.as_bytes());
        }
    }
    format!("s{}", crate::hex(&hasher.finalize()[..6]))
}

/// A label that does not belong to the current sample. `index` counts the labeller's records
/// from 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error(
        "the label of `{item}` was given to another comparison than the current sample's `{item}` (the sample was replaced after labelling)"
    )]
    OtherComparison { index: usize, item: String },
    #[error(
        "the label of `{item}` was given to another comparison: the current sample has no `{item}` (the sample was replaced after labelling)"
    )]
    NotInSample { index: usize, item: String },
}

impl LabelError {
    /// The offending record's position among the labeller's records (from 0).
    pub fn index(&self) -> usize {
        match self {
            LabelError::OtherComparison { index, .. } | LabelError::NotInSample { index, .. } => {
                *index
            }
        }
    }
}

/// Checks that every record carrying an [`item_key`] was given to the sample item it names;
/// the first that was not is the error. Records without a key are accepted as before.
pub fn check_labels(records: &[LabelRecord], sample: &[SampleItem]) -> Result<(), LabelError> {
    let keys: BTreeMap<&str, String> = sample
        .iter()
        .map(|s| (s.item.as_str(), item_key(s)))
        .collect();
    for (index, r) in records.iter().enumerate() {
        let Some(key) = &r.item_key else { continue };
        match keys.get(r.item.as_str()) {
            Some(k) if k == key => {}
            Some(_) => {
                return Err(LabelError::OtherComparison {
                    index,
                    item: r.item.clone(),
                });
            }
            None => {
                return Err(LabelError::NotInSample {
                    index,
                    item: r.item.clone(),
                });
            }
        }
    }
    Ok(())
}

/// Whether a file in `labels/` is tied to the current sample, so that it moves aside with the
/// sample when a new one replaces it: the sample itself, every labeller's labels (`*.jsonl`),
/// and the score and human leaderboard computed from them. Temp files (`.…`) are not.
pub fn tied_to_sample(file_name: &str) -> bool {
    !file_name.starts_with('.')
        && (file_name.ends_with(".jsonl")
            || matches!(
                file_name,
                "agreement.json" | "leaderboard.json" | "leaderboard.csv" | "leaderboard.md"
            ))
}

/// The model-level outcome of a position-relative choice.
pub fn choice_winner(item: &SampleItem, choice: Choice) -> Option<Winner> {
    let first_is_a = item.first == Side::ModelA;
    match choice {
        Choice::First => Some(if first_is_a {
            Winner::ModelA
        } else {
            Winner::ModelB
        }),
        Choice::Second => Some(if first_is_a {
            Winner::ModelB
        } else {
            Winner::ModelA
        }),
        Choice::Tie => Some(Winner::Tie),
        Choice::BothBad => Some(Winner::BothBad),
        Choice::Skip | Choice::Undo => None,
    }
}

/// The effective state per item after reading a labeller's records in order: the last
/// label wins; an undo removes it. `Some(None)` = skipped.
pub fn effective_labels(records: &[LabelRecord]) -> BTreeMap<String, Option<Winner>> {
    let mut out = BTreeMap::new();
    for r in records {
        match r.choice {
            Choice::Undo => {
                out.remove(&r.item);
            }
            _ => {
                out.insert(r.item.clone(), r.winner);
            }
        }
    }
    out
}

/// How many of a labeller's standing labels (a choice, not a skip) were not given blind: the
/// item showed an answer whose author `--reveal` had already shown this labeller on another
/// item (the same task's answer by the same model is the same text). A revealed label itself
/// was given blind: the models are shown once it is saved.
pub fn labels_after_reveal(sample: &[SampleItem], records: &[LabelRecord]) -> usize {
    let by_id: BTreeMap<&str, &SampleItem> = sample.iter().map(|s| (s.item.as_str(), s)).collect();
    let mut shown: std::collections::BTreeSet<(&str, &str)> = Default::default();
    let mut standing: BTreeMap<&str, bool> = BTreeMap::new();
    for r in records {
        let Some(item) = by_id.get(r.item.as_str()) else {
            continue;
        };
        let (m1, m2) = item.shown();
        let task = item.task.as_str();
        match r.choice {
            Choice::Undo => {
                standing.remove(r.item.as_str());
            }
            _ => {
                let seen = shown.contains(&(task, m1)) || shown.contains(&(task, m2));
                standing.insert(r.item.as_str(), seen && r.winner.is_some());
            }
        }
        if r.revealed {
            shown.insert((task, m1));
            shown.insert((task, m2));
        }
    }
    standing.values().filter(|&&unblind| unblind).count()
}

/// Draws `n` comparisons spread evenly over tasks and model pairs: every task is covered
/// before any task repeats; among items of equally covered tasks, the least covered pair comes
/// first; the rest is random (seeded). Which answer is shown first is drawn per item, seeded
/// and independent of the judge's ordering.
pub fn stratified_sample(candidates: &[&ComparisonRecord], n: usize, seed: u64) -> Vec<SampleItem> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut pool: Vec<(u64, &ComparisonRecord)> =
        candidates.iter().map(|c| (rng.next_u64(), *c)).collect();
    pool.sort_by_key(|(r, _)| *r);
    // Candidates are taken by least (task count, pair count, place in the shuffled pool).
    // Counts only grow, so a heap whose entries carry the counts they were pushed with finds
    // that minimum lazily: an entry popped with outdated counts goes back with the current
    // ones; one popped with current counts is no larger than any other's current key. The
    // sample is the one a full rescan per pick gives, in O((n + re-pushes) log N), not O(n N).
    let task_ids: Vec<usize> = intern(pool.iter().map(|(_, c)| c.task.as_str()));
    let pair_ids: Vec<usize> = intern(
        pool.iter()
            .map(|(_, c)| (c.model_a.as_str(), c.model_b.as_str())),
    );
    let mut task_count = vec![0usize; task_ids.iter().max().map_or(0, |m| m + 1)];
    let mut pair_count = vec![0usize; pair_ids.iter().max().map_or(0, |m| m + 1)];
    let mut heap: std::collections::BinaryHeap<std::cmp::Reverse<(usize, usize, usize)>> = (0
        ..pool.len())
        .map(|i| std::cmp::Reverse((0, 0, i)))
        .collect();
    let mut out = Vec::with_capacity(n.min(pool.len()));
    while out.len() < n {
        let Some(std::cmp::Reverse((t, p, i))) = heap.pop() else {
            break;
        };
        let now = (task_count[task_ids[i]], pair_count[pair_ids[i]]);
        if (t, p) != now {
            heap.push(std::cmp::Reverse((now.0, now.1, i)));
            continue;
        }
        let c = pool[i].1;
        task_count[task_ids[i]] += 1;
        pair_count[pair_ids[i]] += 1;
        out.push(sample_item(out.len() + 1, c, &mut rng));
    }
    out
}

/// Item number `number` of a sample: comparison `c`, with the answer shown first drawn from
/// `rng`.
fn sample_item(number: usize, c: &ComparisonRecord, rng: &mut ChaCha8Rng) -> SampleItem {
    let first = if rng.next_u32() & 1 == 0 {
        Side::ModelA
    } else {
        Side::ModelB
    };
    SampleItem {
        item: format!("i{number:04}"),
        task: c.task.clone(),
        model_a: c.model_a.clone(),
        model_b: c.model_b.clone(),
        first,
        judge: c.judge.clone(),
    }
}

/// Each value's index among the distinct values, in order of first appearance.
fn intern<K: Ord>(values: impl Iterator<Item = K>) -> Vec<usize> {
    let mut ids: BTreeMap<K, usize> = BTreeMap::new();
    values
        .map(|v| {
            let next = ids.len();
            *ids.entry(v).or_insert(next)
        })
        .collect()
}

/// A winner as a label category (`None` for failed).
pub fn category(w: Winner) -> Option<LabelCategory> {
    crate::judging::winner_category(w)
}

/// Agreement of one rater (or all pooled) with a reference, over paired categories.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgreementStats {
    pub items: usize,
    pub agreement: Option<f64>,
    /// Agreement over the items where neither side said tie.
    pub agreement_excluding_ties: Option<f64>,
    pub items_excluding_ties: usize,
    pub kappa: Option<f64>,
    /// 95% bootstrap interval of kappa over items.
    pub kappa_ci: Option<Interval>,
    /// Resamples in which kappa was defined: the interval's sample (the others put every item
    /// in one category on both sides, where kappa is 0/0).
    pub kappa_resamples: usize,
    /// Rows: the reference (judge, or first person) `a, b, tie, both_bad`; columns: the other.
    pub confusion: [[u64; 4]; 4],
}

/// Agreement statistics of paired labels `(reference, other)`.
pub fn agreement_stats(
    pairs: &[(LabelCategory, LabelCategory)],
    resamples: usize,
    seed: u64,
) -> Result<AgreementStats, StatsError> {
    let (x, y): (Vec<LabelCategory>, Vec<LabelCategory>) = pairs.iter().copied().unzip();
    let no_ties: Vec<(LabelCategory, LabelCategory)> = pairs
        .iter()
        .copied()
        .filter(|(a, b)| *a != LabelCategory::Tie && *b != LabelCategory::Tie)
        .collect();
    let (nx, ny): (Vec<LabelCategory>, Vec<LabelCategory>) = no_ties.iter().copied().unzip();
    let mut confusion = [[0u64; 4]; 4];
    for (a, b) in pairs {
        confusion[index(*a)][index(*b)] += 1;
    }
    let (kappa_ci, kappa_resamples) = if pairs.is_empty() {
        (None, 0)
    } else {
        kappa_bootstrap(&x, &y, resamples, seed)?
    };
    Ok(AgreementStats {
        items: pairs.len(),
        agreement: agreement(&x, &y)?,
        agreement_excluding_ties: agreement(&nx, &ny)?,
        items_excluding_ties: no_ties.len(),
        kappa: cohen_kappa(&x, &y)?,
        kappa_ci,
        kappa_resamples,
        confusion,
    })
}

fn index(c: LabelCategory) -> usize {
    match c {
        LabelCategory::A => 0,
        LabelCategory::B => 1,
        LabelCategory::Tie => 2,
        LabelCategory::BothBad => 3,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn comparison(task: &str, a: &str, b: &str) -> ComparisonRecord {
        ComparisonRecord {
            task: task.into(),
            judge: "j".into(),
            model_a: a.into(),
            model_b: b.into(),
            winner: Winner::ModelA,
            flipped: false,
            by_failure: false,
        }
    }

    fn grid(tasks: usize, models: &[&str]) -> Vec<ComparisonRecord> {
        let mut out = Vec::new();
        for t in 0..tasks {
            for (i, a) in models.iter().enumerate() {
                for b in &models[i + 1..] {
                    out.push(comparison(&format!("t{t:02}"), a, b));
                }
            }
        }
        out
    }

    #[test]
    fn every_task_is_covered_before_one_repeats() {
        let all = grid(7, &["a", "b", "c", "d"]);
        let refs: Vec<&ComparisonRecord> = all.iter().collect();
        for seed in 0..20 {
            let s = stratified_sample(&refs, 20, seed);
            assert_eq!(s.len(), 20);
            let mut seen = std::collections::BTreeMap::new();
            for (k, item) in s.iter().enumerate() {
                let c = seen.entry(item.task.clone()).or_insert(0);
                *c += 1;
                let round = k / 7;
                assert!(
                    *c <= round + 1,
                    "seed {seed}: task {} repeated early at {k}",
                    item.task
                );
            }
            let mut pairs = std::collections::BTreeMap::new();
            for item in &s[..6] {
                *pairs
                    .entry((item.model_a.clone(), item.model_b.clone()))
                    .or_insert(0) += 1;
            }
            assert_eq!(
                pairs.len(),
                6,
                "seed {seed}: the first six items cover the six pairs"
            );
        }
    }

    /// The sampler as first written: a full rescan of the pool per pick (O(n N)).
    fn rescan_sample(candidates: &[&ComparisonRecord], n: usize, seed: u64) -> Vec<SampleItem> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut pool: Vec<(u64, &ComparisonRecord)> =
            candidates.iter().map(|c| (rng.next_u64(), *c)).collect();
        pool.sort_by_key(|(r, _)| *r);
        let mut task_count: BTreeMap<&str, usize> = BTreeMap::new();
        let mut pair_count: BTreeMap<(&str, &str), usize> = BTreeMap::new();
        let mut out = Vec::new();
        while out.len() < n && !pool.is_empty() {
            let best = (0..pool.len())
                .min_by_key(|&i| {
                    let c = pool[i].1;
                    let t = task_count.get(c.task.as_str()).copied().unwrap_or(0);
                    let p = pair_count
                        .get(&(c.model_a.as_str(), c.model_b.as_str()))
                        .copied()
                        .unwrap_or(0);
                    (t, p, i)
                })
                .unwrap();
            let (_, c) = pool.remove(best);
            *task_count.entry(c.task.as_str()).or_default() += 1;
            *pair_count
                .entry((c.model_a.as_str(), c.model_b.as_str()))
                .or_default() += 1;
            out.push(sample_item(out.len() + 1, c, &mut rng));
        }
        out
    }

    /// The heap-based sampler draws exactly what a full rescan per pick draws, on uneven
    /// candidate sets (tasks with different pairs, pairs missing), for every n.
    #[test]
    fn the_fast_sampler_draws_what_a_full_rescan_draws() {
        let models = ["a", "b", "c", "d", "e"];
        for seed in 0..30u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + seed);
            let all: Vec<ComparisonRecord> = grid(9, &models)
                .into_iter()
                .filter(|_| rng.next_u32() % 3 != 0)
                .collect();
            let refs: Vec<&ComparisonRecord> = all.iter().collect();
            for n in [0, 1, 7, 20, refs.len(), refs.len() + 5] {
                assert_eq!(
                    stratified_sample(&refs, n, seed),
                    rescan_sample(&refs, n, seed),
                    "seed {seed}, n {n}"
                );
            }
        }
    }

    #[test]
    fn sample_is_seeded_and_order_is_randomised() {
        let all = grid(10, &["a", "b", "c"]);
        let refs: Vec<&ComparisonRecord> = all.iter().collect();
        assert_eq!(
            stratified_sample(&refs, 15, 3),
            stratified_sample(&refs, 15, 3)
        );
        assert_ne!(
            stratified_sample(&refs, 15, 3),
            stratified_sample(&refs, 15, 4)
        );
        let s = stratified_sample(&refs, 30, 3);
        let firsts = s.iter().filter(|i| i.first == Side::ModelA).count();
        assert!(
            firsts > 5 && firsts < 25,
            "{firsts} of 30 shown model_a first"
        );
        assert_eq!(
            stratified_sample(&refs, 100, 3).len(),
            30,
            "no more than the candidates"
        );
    }

    #[test]
    fn position_choice_maps_to_models() {
        let mut item = SampleItem {
            item: "i0001".into(),
            task: "t".into(),
            model_a: "a".into(),
            model_b: "b".into(),
            first: Side::ModelB,
            judge: "j".into(),
        };
        assert_eq!(item.shown(), ("b", "a"));
        assert_eq!(choice_winner(&item, Choice::First), Some(Winner::ModelB));
        assert_eq!(choice_winner(&item, Choice::Second), Some(Winner::ModelA));
        item.first = Side::ModelA;
        assert_eq!(choice_winner(&item, Choice::First), Some(Winner::ModelA));
        assert_eq!(choice_winner(&item, Choice::Skip), None);
    }

    #[test]
    fn last_label_wins_and_undo_removes() {
        let rec = |item: &str, choice, winner| LabelRecord {
            item: item.into(),
            labeller: "p".into(),
            choice,
            winner,
            at: String::new(),
            item_key: None,
            revealed: false,
        };
        let labels = effective_labels(&[
            rec("i1", Choice::First, Some(Winner::ModelA)),
            rec("i2", Choice::Tie, Some(Winner::Tie)),
            rec("i1", Choice::Second, Some(Winner::ModelB)),
            rec("i2", Choice::Undo, None),
            rec("i3", Choice::Skip, None),
        ]);
        assert_eq!(labels.get("i1"), Some(&Some(Winner::ModelB)));
        assert_eq!(labels.get("i2"), None);
        assert_eq!(labels.get("i3"), Some(&None));
    }

    fn item(id: &str, task: &str, a: &str, b: &str, first: Side) -> SampleItem {
        SampleItem {
            item: id.into(),
            task: task.into(),
            model_a: a.into(),
            model_b: b.into(),
            first,
            judge: "j".into(),
        }
    }

    fn label_of(item: &SampleItem) -> LabelRecord {
        LabelRecord {
            item: item.item.clone(),
            labeller: "p".into(),
            choice: Choice::First,
            winner: choice_winner(item, Choice::First),
            at: String::new(),
            item_key: Some(item_key(item)),
            revealed: false,
        }
    }

    #[test]
    fn labels_on_answers_revealed_before_are_not_blind() {
        let sample = [
            item("i1", "t1", "a", "b", Side::ModelA),
            // Shows t1's answer by `a` again: its author was revealed at i1.
            item("i2", "t1", "c", "a", Side::ModelB),
            // Another task: blind.
            item("i3", "t2", "a", "b", Side::ModelA),
            item("i4", "t1", "c", "d", Side::ModelA),
        ];
        let revealed = |i: usize| LabelRecord {
            revealed: true,
            ..label_of(&sample[i])
        };
        let skip = LabelRecord {
            choice: Choice::Skip,
            winner: None,
            ..label_of(&sample[1])
        };
        // A revealed label itself was blind; what came after on the same answers is not.
        let records = [
            revealed(0),
            label_of(&sample[1]),
            label_of(&sample[2]),
            label_of(&sample[3]),
        ];
        assert_eq!(labels_after_reveal(&sample, &records), 1);
        // Nothing revealed: all blind. A skip is no label; an undo takes one back.
        assert_eq!(labels_after_reveal(&sample, &records[1..]), 0);
        assert_eq!(labels_after_reveal(&sample, &[revealed(0), skip]), 0);
        let undo = LabelRecord {
            choice: Choice::Undo,
            winner: None,
            ..label_of(&sample[1])
        };
        assert_eq!(
            labels_after_reveal(&sample, &[revealed(0), label_of(&sample[1]), undo]),
            0
        );
        // Labelled before the reveal: blind.
        assert_eq!(
            labels_after_reveal(&sample, &[label_of(&sample[1]), revealed(0)]),
            0
        );
    }

    #[test]
    fn item_key_is_what_was_shown_not_the_item_id() {
        let shown = item("i0001", "t1", "a", "b", Side::ModelA);
        let key = item_key(&shown);
        assert_eq!(key.len(), 16);
        assert!(key.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(key, item_key(&item("i0007", "t1", "a", "b", Side::ModelA)));
        assert_eq!(key, item_key(&item("i0001", "t1", "b", "a", Side::ModelB)));
        for other in [
            item("i0001", "t2", "a", "b", Side::ModelA),
            item("i0001", "t1", "a", "c", Side::ModelA),
            item("i0001", "t1", "a", "b", Side::ModelB),
            item("i0001", "t1a", "", "b", Side::ModelA),
        ] {
            assert_ne!(key, item_key(&other), "{other:?}");
        }
    }

    #[test]
    fn labels_of_a_replaced_sample_are_refused_and_unkeyed_ones_accepted() {
        let old = [
            item("i0001", "t1", "a", "b", Side::ModelA),
            item("i0002", "t2", "a", "c", Side::ModelB),
            item("i0003", "t3", "b", "c", Side::ModelA),
        ];
        let new = [
            item("i0001", "t1", "a", "b", Side::ModelA),
            item("i0002", "t2", "b", "c", Side::ModelB),
        ];
        let labels: Vec<LabelRecord> = old.iter().map(label_of).collect();
        assert_eq!(check_labels(&labels, &old), Ok(()));
        let err = check_labels(&labels, &new).unwrap_err();
        assert_eq!(
            err,
            LabelError::OtherComparison {
                index: 1,
                item: "i0002".into()
            }
        );
        assert_eq!(err.index(), 1);
        let err = check_labels(&[labels[0].clone(), labels[2].clone()], &new).unwrap_err();
        assert_eq!(
            err,
            LabelError::NotInSample {
                index: 1,
                item: "i0003".into()
            }
        );
        let legacy: Vec<LabelRecord> = labels
            .into_iter()
            .map(|r| LabelRecord {
                item_key: None,
                ..r
            })
            .collect();
        assert_eq!(check_labels(&legacy, &new), Ok(()), "treated as before");
    }

    #[test]
    fn label_records_without_a_key_still_read() {
        let r: LabelRecord = serde_json::from_str(
            r#"{"item":"i0001","labeller":"p","choice":"1","winner":"model_a","at":"x"}"#,
        )
        .expect("an old record");
        assert_eq!(r.item_key, None);
        let line = serde_json::to_string(&r).expect("serialize");
        assert!(!line.contains("item_key"), "{line}");
    }

    #[test]
    fn files_tied_to_the_sample() {
        for name in [
            "sample.jsonl",
            "bob.jsonl",
            "agreement.json",
            "leaderboard.md",
        ] {
            assert!(tied_to_sample(name), "{name}");
        }
        for name in [
            ".bob.jsonl.tmp.1.0",
            "sheet.csv",
            "replaced-20261130-085515",
            "notes.json",
        ] {
            assert!(!tied_to_sample(name), "{name}");
        }
    }

    #[test]
    fn agreement_stats_on_a_small_case() {
        use LabelCategory::{A, B, Tie};
        let pairs = [(A, A), (B, B), (Tie, A), (A, B)];
        let s = agreement_stats(&pairs, 1000, 1).expect("stats");
        assert_eq!(s.items, 4);
        assert_eq!(s.agreement, Some(0.5));
        assert_eq!(s.items_excluding_ties, 3);
        assert!((s.agreement_excluding_ties.unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(s.confusion[0], [1, 1, 0, 0]);
        assert_eq!(s.confusion[2], [1, 0, 0, 0]);
        let k = s.kappa.unwrap();
        let ci = s.kappa_ci.unwrap();
        assert!(ci.lo <= k && k <= ci.hi && (-1.0..=1.0).contains(&k));
    }
}
