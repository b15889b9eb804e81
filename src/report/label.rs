//! Agreement between people and the judge (`judge label score`): the statistics per labeller
//! and overall, human–human agreement, coverage per stratum, and their renderings. Pure.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Format, fmt_float, render_markdown, summary::render_table_aligned};
use crate::label::{AgreementStats, SampleItem, agreement_stats, category};
use crate::records::{SCHEMA_VERSION, Winner};
use crate::stats::{LabelCategory, StatsError, kappa_cluster_bootstrap};

/// How to read kappa next to raw agreement; printed with every human-readable score.
pub const KAPPA_NOTE: &str = "Agreement is the share of items where the person chose what the judge chose. Kappa corrects it for the agreement expected by chance from each side's label frequencies: 0 = no better than chance, 1 = perfect; compare the judge's kappa with the human-human kappa (the ceiling).";

/// One labeller against the judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabellerScore {
    pub labeller: String,
    /// Items labelled (skips excluded).
    pub labelled: usize,
    pub skipped: usize,
    pub vs_judge: AgreementStats,
}

/// Two people on the items both labelled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanPair {
    pub labeller_1: String,
    pub labeller_2: String,
    pub stats: AgreementStats,
}

/// One stratum's coverage.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stratum {
    pub stratum: String,
    pub sampled: usize,
    /// Sampled items labelled by at least one person.
    pub labelled: usize,
}

/// The whole score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scores {
    pub schema_version: u32,
    pub judge: String,
    pub sample_size: usize,
    pub seed: u64,
    pub resamples: usize,
    pub labellers: Vec<LabellerScore>,
    /// Every person's labels pooled against the judge.
    pub overall: AgreementStats,
    /// The order of every `confusion` matrix's rows and columns: which model of the sample's
    /// pair won (whatever order the answers were shown in), tie, both bad.
    pub confusion_categories: [&'static str; 4],
    pub human_human: Vec<HumanPair>,
    pub coverage_by_task: Vec<Stratum>,
    pub coverage_by_pair: Vec<Stratum>,
    pub note: &'static str,
    /// What the numbers above cannot say (zero-width intervals, undefined resamples).
    pub warnings: Vec<String>,
}

type Labels = BTreeMap<String, BTreeMap<String, Option<Winner>>>;

/// Scores every labeller against the judge's combined verdicts (`verdicts`: item → category,
/// `None` when the judge failed) and against each other.
pub fn score_labels(
    sample: &[SampleItem],
    verdicts: &BTreeMap<&str, Option<LabelCategory>>,
    labels: &Labels,
    resamples: usize,
    seed: u64,
) -> Result<Scores, StatsError> {
    let human = |w: &Option<Winner>| w.and_then(category);
    let mut pooled = Vec::new();
    // The pooled pairs by item: the clusters of the pooled row's bootstrap.
    let mut by_item: BTreeMap<&str, Vec<(LabelCategory, LabelCategory)>> = BTreeMap::new();
    let mut labellers = Vec::new();
    // Labels with no judge verdict to compare with (the judge's comparison failed).
    let mut unmatched = Vec::new();
    for (who, items) in labels {
        let without_verdict = items
            .iter()
            .filter(|(item, w)| {
                human(w).is_some() && verdicts.get(item.as_str()).copied().flatten().is_none()
            })
            .count();
        if without_verdict > 0 {
            unmatched.push(format!(
                "`{}`: {without_verdict} labelled item(s) are left out of the comparison with the judge: it has no verdict on them (its comparison failed, or it never made it)",
                crate::report::printable(who)
            ));
        }
        let pairs: Vec<(&str, (LabelCategory, LabelCategory))> = items
            .iter()
            .filter_map(|(item, w)| {
                let pair = (verdicts.get(item.as_str()).copied().flatten()?, human(w)?);
                Some((item.as_str(), pair))
            })
            .collect();
        for &(item, pair) in &pairs {
            by_item.entry(item).or_default().push(pair);
        }
        let pairs: Vec<(LabelCategory, LabelCategory)> = pairs.into_iter().map(|p| p.1).collect();
        pooled.extend(pairs.iter().copied());
        labellers.push(LabellerScore {
            labeller: who.clone(),
            labelled: items.values().filter(|w| w.is_some()).count(),
            skipped: items.values().filter(|w| w.is_none()).count(),
            vs_judge: agreement_stats(&pairs, resamples, seed)?,
        });
    }
    let names: Vec<&String> = labels.keys().collect();
    let mut human_human = Vec::new();
    for (i, a) in names.iter().enumerate() {
        for b in &names[i + 1..] {
            let pairs: Vec<(LabelCategory, LabelCategory)> = labels[*a]
                .iter()
                .filter_map(|(item, w)| Some((human(w)?, human(labels[*b].get(item)?)?)))
                .collect();
            if !pairs.is_empty() {
                human_human.push(HumanPair {
                    labeller_1: (*a).clone(),
                    labeller_2: (*b).clone(),
                    stats: agreement_stats(&pairs, resamples, seed)?,
                });
            }
        }
    }
    let labelled_by_anyone = |item: &str| {
        labels
            .values()
            .any(|m| m.get(item).is_some_and(Option::is_some))
    };
    let coverage = |key: &dyn Fn(&SampleItem) -> String| {
        let mut m: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for s in sample {
            let e = m.entry(key(s)).or_default();
            e.0 += 1;
            e.1 += usize::from(labelled_by_anyone(&s.item));
        }
        m.into_iter()
            .map(|(stratum, (sampled, labelled))| Stratum {
                stratum,
                sampled,
                labelled,
            })
            .collect()
    };
    Ok(Scores {
        schema_version: SCHEMA_VERSION,
        judge: sample.first().map(|s| s.judge.clone()).unwrap_or_default(),
        sample_size: sample.len(),
        seed,
        resamples,
        labellers,
        overall: pooled_stats(&pooled, &by_item, resamples, seed)?,
        confusion_categories: ["model_a", "model_b", "tie", "both_bad"],
        human_human,
        coverage_by_task: coverage(&|s| s.task.clone()),
        coverage_by_pair: coverage(&|s| format!("{} vs {}", s.model_a, s.model_b)),
        note: KAPPA_NOTE,
        warnings: unmatched,
    }
    .with_warnings(shared_items(labels)))
}

/// Everyone's pairs against the judge: the statistics of all pairs, with the kappa interval
/// resampling items (each with all its labels) when some item has labels from several people,
/// whose labels of one item are not independent evidence.
fn pooled_stats(
    pooled: &[(LabelCategory, LabelCategory)],
    by_item: &BTreeMap<&str, Vec<(LabelCategory, LabelCategory)>>,
    resamples: usize,
    seed: u64,
) -> Result<AgreementStats, StatsError> {
    let mut stats = agreement_stats(pooled, resamples, seed)?;
    if by_item.values().any(|pairs| pairs.len() > 1) {
        let clusters: Vec<Vec<(LabelCategory, LabelCategory)>> =
            by_item.values().cloned().collect();
        (stats.kappa_ci, stats.kappa_resamples) =
            kappa_cluster_bootstrap(&clusters, resamples, seed)?;
    }
    Ok(stats)
}

/// Items that more than one person labelled (skips not counted).
fn shared_items(labels: &Labels) -> usize {
    let mut per_item: BTreeMap<&str, usize> = BTreeMap::new();
    for items in labels.values() {
        for (item, w) in items {
            if w.is_some() {
                *per_item.entry(item.as_str()).or_default() += 1;
            }
        }
    }
    per_item.values().filter(|&&n| n > 1).count()
}

impl Scores {
    /// Fills `warnings`: a kappa interval of zero width, and resamples left out of an interval
    /// because kappa was undefined in them, for every row of the report; and the pooled row's
    /// independence assumption when `shared` items were labelled by several people.
    fn with_warnings(mut self, shared: usize) -> Scores {
        // (row, the confusion rows' side, its columns' side, statistics)
        let mut rows: Vec<(String, String, String, &AgreementStats)> = self
            .labellers
            .iter()
            .map(|l| {
                (
                    format!("`{}` vs the judge", l.labeller),
                    "the judge".to_string(),
                    format!("`{}`", l.labeller),
                    &l.vs_judge,
                )
            })
            .collect();
        rows.push((
            "everyone vs the judge".into(),
            "the judge".into(),
            "everyone".into(),
            &self.overall,
        ));
        rows.extend(self.human_human.iter().map(|h| {
            (
                format!("`{}` vs `{}`", h.labeller_1, h.labeller_2),
                format!("`{}`", h.labeller_1),
                format!("`{}`", h.labeller_2),
                &h.stats,
            )
        }));
        let mut warnings = Vec::new();
        for (who, reference, other, st) in rows {
            let Some(ci) = st.kappa_ci else { continue };
            let who = crate::report::printable(&who);
            // One side that used a single category leaves kappa at 0 however many items:
            // p_o = p_e then (Cohen 1960), and labelling more cannot move it.
            let rows_used = st
                .confusion
                .iter()
                .filter(|r| r.iter().any(|&n| n > 0))
                .count();
            let cols_used = (0..4)
                .filter(|&c| st.confusion.iter().any(|r| r[c] > 0))
                .count();
            if ci.width() == 0.0 && st.agreement != Some(1.0) && (rows_used == 1 || cols_used == 1)
            {
                let side =
                    crate::report::printable(if rows_used == 1 { &reference } else { &other });
                warnings.push(format!(
                    "{who}: kappa is 0 by construction, not by chance agreement alone: {side} gave every one of the {} item(s) the same category, so its choices carry no information kappa can compare; more items in that category would not change it (look at the agreement and the confusion matrix)",
                    st.items
                ));
            } else if ci.width() == 0.0 && st.agreement == Some(1.0) {
                // Every resample of items that all agree agrees on all of them.
                warnings.push(format!(
                    "{who}: the kappa interval has zero width because all {} paired label(s) agree: resampling them cannot show how far that would hold on other items; label more items",
                    st.items
                ));
            } else if ci.width() == 0.0 {
                warnings.push(format!(
                    "{who}: the kappa interval has zero width: every resample of the {} paired label(s) gave the same kappa, which says nothing about its uncertainty; label more items",
                    st.items
                ));
            }
            if st.kappa_resamples < self.resamples {
                warnings.push(format!(
                    "{who}: kappa was undefined in {} of {} resamples (every item in one category on both sides) and the interval is over the other {}",
                    self.resamples - st.kappa_resamples,
                    self.resamples,
                    st.kappa_resamples
                ));
            }
        }
        if shared > 0 {
            warnings.push(format!(
                "everyone vs the judge counts each of the {shared} item(s) labelled by more than one person once per person; its kappa interval resamples items, each with all its labels"
            ));
        }
        self.warnings.extend(warnings);
        self
    }
}

fn opt(x: Option<f64>) -> String {
    x.map_or("n/a".into(), |v| fmt_float(v, 3))
}

fn row(name: &str, labelled: usize, s: &AgreementStats) -> Vec<String> {
    vec![
        name.to_string(),
        labelled.to_string(),
        s.items.to_string(),
        opt(s.agreement),
        // On how many items: excluding ties can leave very few.
        s.agreement_excluding_ties.map_or("n/a".into(), |v| {
            format!("{} ({})", fmt_float(v, 3), s.items_excluding_ties)
        }),
        opt(s.kappa),
        s.kappa_ci.map_or("n/a".into(), |i| {
            format!("[{}, {}]", fmt_float(i.lo, 3), fmt_float(i.hi, 3))
        }),
    ]
}

const HEADER: [&str; 7] = [
    "labeller",
    "labelled",
    "vs judge",
    "agreement",
    "excl. ties (items)",
    "kappa",
    "kappa 95% CI",
];

fn rows(s: &Scores) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = s
        .labellers
        .iter()
        .map(|l| row(&l.labeller, l.labelled, &l.vs_judge))
        .collect();
    let total: usize = s.labellers.iter().map(|l| l.labelled).sum();
    out.push(row("all", total, &s.overall));
    out
}

fn text_report(s: &Scores, markdown: bool) -> String {
    let mut out = format!(
        "judge: {} · sample: {} items · kappa interval: 95% bootstrap over items ({} resamples, seed {})\n\n",
        s.judge, s.sample_size, s.resamples, s.seed
    );
    let table = |header: &[&str], body: Vec<Vec<String>>| {
        if markdown {
            render_markdown(header, &body)
        } else {
            let mut t = vec![header.iter().map(|h| (*h).to_string()).collect()];
            t.extend(body);
            render_table_aligned(&t, 1)
        }
    };
    out.push_str(&table(&HEADER, rows(s)));
    let cats = ["a", "b", "tie", "both_bad"];
    let confusion: Vec<Vec<String>> = cats
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut r = vec![format!("judge {c}")];
            r.extend(s.overall.confusion[i].iter().map(u64::to_string));
            r
        })
        .collect();
    out.push_str(
        "\nconfusion (rows: judge, columns: people; a, b: the item's model_a, model_b won, whichever answer was shown first)\n",
    );
    out.push_str(&table(&["", "a", "b", "tie", "both_bad"], confusion));
    if !s.human_human.is_empty() {
        out.push_str("\nhuman-human (the ceiling to compare the judge with)\n");
        let body = s
            .human_human
            .iter()
            .map(|h| {
                let mut r = row(
                    &format!("{} vs {}", h.labeller_1, h.labeller_2),
                    h.stats.items,
                    &h.stats,
                );
                // Items both labelled: the same count twice in `row`'s layout.
                r.remove(2);
                r
            })
            .collect();
        out.push_str(&table(
            &[
                "labellers",
                "shared",
                "agreement",
                "excl. ties (items)",
                "kappa",
                "kappa 95% CI",
            ],
            body,
        ));
    }
    let covered = |v: &[Stratum]| v.iter().filter(|x| x.labelled > 0).count();
    out.push_str(&format!(
        "\ncoverage: {} of {} tasks and {} of {} model pairs have at least one labelled item\n{}\n",
        covered(&s.coverage_by_task),
        s.coverage_by_task.len(),
        covered(&s.coverage_by_pair),
        s.coverage_by_pair.len(),
        KAPPA_NOTE
    ));
    for w in &s.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// Renders the score in `format` (CSV: one row per labeller plus `all`).
pub fn render_scores(s: &Scores, format: Format) -> Vec<u8> {
    match format {
        Format::Table => text_report(s, false).into_bytes(),
        Format::Md => text_report(s, true).into_bytes(),
        Format::Json => {
            let mut out = serde_json::to_vec_pretty(s).expect("scores always serialise");
            out.push(b'\n');
            out
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record([
                "labeller",
                "versus",
                "labelled",
                "items",
                "agreement",
                "agreement_excluding_ties",
                "kappa",
                "kappa_ci_low",
                "kappa_ci_high",
                "items_excluding_ties",
                "judge",
            ])
            .expect("writing to memory cannot fail");
            let mut emit =
                |name: &str, versus: &str, labelled: Option<usize>, st: &AgreementStats| {
                    let f = |x: Option<f64>| x.map_or(String::new(), |v| fmt_float(v, 4));
                    w.write_record([
                        name.to_string(),
                        versus.to_string(),
                        labelled.map_or(String::new(), |n| n.to_string()),
                        st.items.to_string(),
                        f(st.agreement),
                        f(st.agreement_excluding_ties),
                        f(st.kappa),
                        f(st.kappa_ci.map(|i| i.lo)),
                        f(st.kappa_ci.map(|i| i.hi)),
                        st.items_excluding_ties.to_string(),
                        s.judge.clone(),
                    ])
                    .expect("writing to memory cannot fail");
                };
            for l in &s.labellers {
                emit(&l.labeller, "judge", Some(l.labelled), &l.vs_judge);
            }
            emit(
                "all",
                "judge",
                Some(s.labellers.iter().map(|l| l.labelled).sum()),
                &s.overall,
            );
            // Two people over the items both labelled.
            for h in &s.human_human {
                emit(&h.labeller_1, &h.labeller_2, None, &h.stats);
            }
            w.into_inner().expect("writing to memory cannot fail")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::label::Side;

    /// `n` sample items `i0000`… of x vs y, one task each.
    fn items(n: usize) -> Vec<SampleItem> {
        (0..n)
            .map(|k| SampleItem {
                item: format!("i{k:04}"),
                task: format!("t{k}"),
                model_a: "x".into(),
                model_b: "y".into(),
                first: Side::ModelA,
                judge: "j".into(),
            })
            .collect()
    }

    #[test]
    fn the_pooled_interval_resamples_items_not_labels() {
        let cats = [LabelCategory::A, LabelCategory::B, LabelCategory::Tie];
        let sample = items(60);
        let verdicts: BTreeMap<&str, Option<LabelCategory>> = sample
            .iter()
            .enumerate()
            .map(|(k, s)| (s.item.as_str(), Some(cats[k % 3])))
            .collect();
        // Two people who label every item alike, agreeing with the judge two times in three.
        let same: BTreeMap<String, Option<Winner>> = sample
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let w = [Winner::ModelA, Winner::ModelB, Winner::Tie][(k % 3 + k / 40) % 3];
                (s.item.clone(), Some(w))
            })
            .collect();
        let labels: Labels = [("ann".to_string(), same.clone()), ("ben".to_string(), same)].into();
        let scores = score_labels(&sample, &verdicts, &labels, 2000, 5).expect("scores");
        let one = scores.labellers[0].vs_judge.kappa_ci.expect("defined");
        let all = scores.overall.kappa_ci.expect("defined");
        // Twice the labels, the same information: as wide as one person's (a row bootstrap of
        // the pooled labels would be about 0.71 times as wide).
        let ratio = all.width() / one.width();
        assert!((0.85..1.15).contains(&ratio), "{ratio}: {all:?} vs {one:?}");
    }

    /// A label whose comparison the judge failed cannot be compared with it: it is left out
    /// of the "vs the judge" numbers, and a warning says so.
    #[test]
    fn labels_without_a_judge_verdict_are_named() {
        let sample = items(4);
        let verdicts: BTreeMap<&str, Option<LabelCategory>> = sample
            .iter()
            .enumerate()
            .map(|(k, s)| (s.item.as_str(), (k > 0).then_some(LabelCategory::A)))
            .collect();
        let all: BTreeMap<String, Option<Winner>> = sample
            .iter()
            .map(|s| (s.item.clone(), Some(Winner::ModelA)))
            .collect();
        let labels: Labels = [("ann".to_string(), all)].into();
        let scores = score_labels(&sample, &verdicts, &labels, 1000, 5).expect("scores");
        assert_eq!(scores.labellers[0].labelled, 4);
        assert_eq!(scores.labellers[0].vs_judge.items, 3);
        assert!(
            scores.warnings.iter().any(|w| w
                == "`ann`: 1 labelled item(s) are left out of the comparison with the judge: it has no verdict on them (its comparison failed, or it never made it)"),
            "{:?}",
            scores.warnings
        );
    }

    #[test]
    fn scores_warn_of_zero_width_and_undefined_resamples() {
        let sample = items(6);
        let verdicts: BTreeMap<&str, Option<LabelCategory>> = sample
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let v = if k < 5 {
                    LabelCategory::A
                } else {
                    LabelCategory::B
                };
                (s.item.as_str(), Some(v))
            })
            .collect();
        // dave agrees on all six (5 × a, 1 × b); alice labels one item.
        let agree: BTreeMap<String, Option<Winner>> = sample
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let w = if k < 5 {
                    Winner::ModelA
                } else {
                    Winner::ModelB
                };
                (s.item.clone(), Some(w))
            })
            .collect();
        let one: BTreeMap<String, Option<Winner>> =
            [(sample[0].item.clone(), Some(Winner::ModelA))].into();
        let labels: Labels = [("dave".to_string(), agree), ("alice".to_string(), one)].into();
        let scores = score_labels(&sample, &verdicts, &labels, 1000, 5).expect("scores");
        let dave = &scores.labellers[1];
        assert_eq!(dave.labeller, "dave");
        assert!(
            (200..500).contains(&(1000 - dave.vs_judge.kappa_resamples)),
            "{}",
            dave.vs_judge.kappa_resamples
        );
        let all = scores.warnings.join("\n");
        assert!(
            all.contains("`dave` vs the judge: kappa was undefined in"),
            "{all}"
        );
        // dave agrees on every item: the zero width is said to come from that.
        assert!(
            all.contains(
                "`dave` vs the judge: the kappa interval has zero width because all 6 paired label(s) agree"
            ),
            "{all}"
        );
        // alice's one item is also dave's: the pooled row counts it twice.
        assert!(
            all.contains("each of the 1 item(s) labelled by more than one person"),
            "{all}"
        );
        let text = String::from_utf8(render_scores(&scores, Format::Table)).expect("utf-8");
        assert!(text.contains("warning: `dave` vs the judge"), "{text}");

        // eve says "a" on all six, the judge five a's and a b: kappa is 0 whatever the sample
        // size, and the warning says why rather than asking for more items.
        let all_a: BTreeMap<String, Option<Winner>> = sample
            .iter()
            .map(|s| (s.item.clone(), Some(Winner::ModelA)))
            .collect();
        let labels: Labels = [("eve".to_string(), all_a)].into();
        let scores = score_labels(&sample, &verdicts, &labels, 1000, 5).expect("scores");
        assert_eq!(scores.labellers[0].vs_judge.kappa, Some(0.0));
        let all = scores.warnings.join("\n");
        assert!(
            all.contains("`eve` vs the judge: kappa is 0 by construction")
                && all.contains("`eve` gave every one of the 6 item(s) the same category"),
            "{all}"
        );
        assert!(!all.contains("label more items"), "{all}");
    }
}
