//! Comparison rows → a leaderboard: Bradley–Terry fit, seeded percentile bootstrap, tied
//! ranks, Elo and per-model counts (DESIGN §5). Pure: the rows, the seed and the thread count
//! are passed in; the shell reads files and prints.

use serde::Serialize;

use crate::stats::{
    BootstrapInput, BootstrapInputBuilder, BootstrapResult, BootstrapUnit, BtFit, EloEntry,
    Interval, Outcome, StatsError, bootstrap, elo, fit_bradley_terry, tied_ranks,
};

/// Fewer tasks than this make the task bootstrap's intervals too narrow to trust.
const FEW_TASKS: usize = 30;

/// What a row says about its pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOutcome {
    Rated(Outcome),
    /// The judge could not decide: excluded from every rating, counted per model.
    Failed,
}

/// One comparison: model indices, outcome, task index (cluster for the task bootstrap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub a: u32,
    pub b: u32,
    pub outcome: RowOutcome,
    pub task: u32,
}

/// Fit settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RankParams {
    pub prior: f64,
    pub resamples: usize,
    pub seed: u64,
    pub unit: BootstrapUnit,
    pub threads: usize,
    /// With the comparison unit: also bootstrap by task (same seed), and warn when whole
    /// tasks give much wider intervals (comparisons of one task are correlated, which the
    /// comparison bootstrap takes for independent). For a run's comparisons, whose rows
    /// come in per-task clusters; a battles file is left as it is.
    pub cluster_check: bool,
}

/// The least ratio of a model's win-rate interval width by the task bootstrap to the
/// comparison bootstrap's at which the leaderboard says the comparison intervals understate
/// the uncertainty; see [`clustered_above`] for the bar that the number of tasks and models
/// sets.
const CLUSTERED: f64 = 1.25;

/// The ratio (task over comparison bootstrap width) above which a model's interval is said to
/// be understated, with `tasks` tasks and `models` models looked at. On independent data the
/// ratio scatters around 1: the task bootstrap estimates a variance from `tasks` cluster
/// totals, whose width has a relative error of about 1/√(2(tasks − 1)), and the largest of
/// `models` such ratios lies further out. The bar is √(2 ln(models/0.01)) of those errors
/// above 1 (a bound on the normal quantile at 1 − 0.01/models: a false alarm in at most about
/// 1% of runs), and never below [`CLUSTERED`].
fn clustered_above(tasks: usize, models: usize) -> f64 {
    let error = 1.0 / (2.0 * (tasks.max(2) - 1) as f64).sqrt();
    let z = (2.0 * (models.max(1) as f64 / 0.01).ln()).sqrt();
    (1.0 + z * error).max(CLUSTERED)
}

/// One leaderboard line. A model without rated games has no rank, rating or win rate
/// (`None`): it is listed, unranked, after the others.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standing {
    pub rank: Option<usize>,
    pub model: String,
    pub rating: Option<f64>,
    pub rating_ci_low: Option<f64>,
    pub rating_ci_high: Option<f64>,
    pub win_rate: Option<f64>,
    pub win_rate_ci_low: Option<f64>,
    pub win_rate_ci_high: Option<f64>,
    /// Rated comparisons: wins + losses + ties.
    pub games: u64,
    pub wins: u64,
    pub losses: u64,
    pub ties: u64,
    pub both_bad: u64,
    pub failed: u64,
    /// `null` ("unavailable") before the model's first rated match.
    pub elo: Option<f64>,
    /// Cost of the model's outputs; `null` when unpriced or unknown.
    pub cost_usd: Option<f64>,
    /// Whether the model has a price (false → shown as `unpriced`).
    pub priced: bool,
}

/// The fitted leaderboard, before presentation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fitted {
    /// Sorted by rank, then win rate (descending), then model id; the unranked last, by id.
    pub standings: Vec<Standing>,
    pub rated: u64,
    pub both_bad: u64,
    pub failed: u64,
    /// Human-readable warnings (disconnected graph, models without games).
    pub warnings: Vec<String>,
    /// How much wider the win-rate intervals are when whole tasks are resampled: the median
    /// over models of the task bootstrap's width over the comparison bootstrap's (see
    /// [`RankParams::cluster_check`]; `None` when not looked at).
    pub task_width_ratio: Option<f64>,
    /// How far that ratio strays from 1 by chance alone when tasks do not cluster: a model's
    /// ratio has a relative error of about 1/√(2(T − 1)) over T tasks.
    pub task_width_noise: Option<f64>,
}

/// Why rows cannot be ranked.
#[derive(Debug, thiserror::Error)]
pub enum RankError {
    #[error("no comparisons to rank")]
    NoComparisons,
    #[error("need at least two models to rank (found {0})")]
    TooFewModels(usize),
    #[error(
        "{0} models: judge ranks at most {MAX_MODELS} at once (the fit's time and memory grow with the square of the number of models, and faster); keep the battles of the models to compare"
    )]
    TooManyModels(usize),
    #[error(
        "no rated comparisons: every comparison is both-bad or failed, so there is nothing to fit"
    )]
    NoRatedComparisons,
    #[error(transparent)]
    Stats(#[from] StatsError),
}

/// The most models one leaderboard takes: the fit keeps a tally per pair of models and a
/// dense Hessian, so time grows faster than the square of the count (2000 models and 1000
/// resamples take minutes; 200,000 would need 480 GB for the pairs alone).
pub const MAX_MODELS: usize = 2000;

/// Fits and ranks. `costs[i]` is model i's cost (None = unpriced/unknown) and whether it is
/// priced.
///
/// A model without rated games (none at all, or only both-bad and failed ones) is listed
/// unranked: the prior alone would give it a rating of 1000 and an interval as narrow as the
/// others' spread (its θ is 0 in every resample), which would rank it on no evidence. The
/// others are fitted without it, so their win rates are against the models that played.
pub fn rank(
    models: &[String],
    rows: &[Row],
    params: RankParams,
    costs: &[(Option<f64>, bool)],
) -> Result<Fitted, RankError> {
    let mut fitted = rank_models(models, rows, params, costs)?;
    let uneven = uneven_failures(&fitted, models, rows);
    fitted.warnings.extend(uneven);
    Ok(fitted)
}

/// Failed comparisons leave the fit. When they fall on a model, or a pair, far more than on
/// the rest, they may fail for a reason tied to the outcome (an answer whose verdict line a
/// judge quotes, one a judge refuses to judge), and then they hide wins or losses. Said of a
/// model, or else of a pair, with at least [`UNEVEN_FAILURES_MIN`] failed comparisons, more
/// than twice the share among the comparisons without it, and a share that chance alone
/// would not give (Fisher's exact test, one-sided, p below [`UNEVEN_FAILURES_ALPHA`] divided
/// by the number of models and pairs looked at: failures spread evenly over a handful of
/// comparisons always fall on some more than others).
fn uneven_failures(fitted: &Fitted, models: &[String], rows: &[Row]) -> Vec<String> {
    let total = fitted.rated + fitted.both_bad + fitted.failed;
    let failed = fitted.failed;
    if failed < UNEVEN_FAILURES_MIN {
        return Vec::new();
    }
    // Per pair of model indices: comparisons, failed ones.
    let mut pairs: std::collections::BTreeMap<(u32, u32), (u64, u64)> = Default::default();
    for r in rows {
        let e = pairs.entry((r.a.min(r.b), r.a.max(r.b))).or_default();
        e.0 += 1;
        e.1 += u64::from(r.outcome == RowOutcome::Failed);
    }
    let looked_at = (fitted.standings.len() + pairs.len()).max(1) as f64;
    // Whether `k` failed of `n` stands out from the rest, and the two shares.
    let stands_out = |k: u64, n: u64| -> Option<(f64, f64)> {
        let (rest, rest_failed) = (total - n, failed - k);
        let mine = k as f64 / n.max(1) as f64;
        let theirs = rest_failed as f64 / rest.max(1) as f64;
        let p = crate::stats::hypergeometric_upper_tail(k, n, failed, total);
        (k >= UNEVEN_FAILURES_MIN && mine > 2.0 * theirs && p < UNEVEN_FAILURES_ALPHA / looked_at)
            .then_some((mine, theirs))
    };
    let mut out = Vec::new();
    let mut named: Vec<&str> = Vec::new();
    for s in &fitted.standings {
        let own = s.wins + s.losses + s.ties + s.both_bad + s.failed;
        if let Some((mine, theirs)) = stands_out(s.failed, own) {
            named.push(&s.model);
            out.push(format!(
                "judge failures fall unevenly on `{}`: {} of its {own} comparisons failed ({:.0}%), against {} of the {} without it ({:.0}%), more than chance gives; failed comparisons leave the ratings, so if they fail for a reason tied to the outcome its rating is biased: their `raw` replies in judgments.jsonl say why",
                s.model,
                s.failed,
                100.0 * mine,
                failed - s.failed,
                total - own,
                100.0 * theirs
            ));
        }
    }
    for (&(a, b), &(n, k)) in &pairs {
        let name = |i: u32| models.get(i as usize).map_or("?", String::as_str);
        let (x, y) = (name(a), name(b));
        if named.contains(&x) || named.contains(&y) {
            continue;
        }
        if let Some((mine, theirs)) = stands_out(k, n) {
            out.push(format!(
                "judge failures fall unevenly on `{x}` against `{y}`: {k} of their {n} comparisons failed ({:.0}%), against {} of the {} others ({:.0}%), more than chance gives; failed comparisons leave the ratings, so if they fail for a reason tied to the outcome (say, when one of them loses) both ratings are biased: their `raw` replies in judgments.jsonl say why",
                100.0 * mine,
                failed - k,
                total - n,
                100.0 * theirs
            ));
        }
    }
    out
}

/// The fewest failed comparisons of a model or pair that [`uneven_failures`] speaks of.
const UNEVEN_FAILURES_MIN: u64 = 5;

/// The family-wise false-alarm rate of [`uneven_failures`] when failures fall by chance.
const UNEVEN_FAILURES_ALPHA: f64 = 0.01;

/// [`rank`] without the warnings on the final standings.
fn rank_models(
    models: &[String],
    rows: &[Row],
    params: RankParams,
    costs: &[(Option<f64>, bool)],
) -> Result<Fitted, RankError> {
    let n = models.len();
    if rows.is_empty() {
        return Err(RankError::NoComparisons);
    }
    if n < 2 {
        return Err(RankError::TooFewModels(n));
    }
    if n > MAX_MODELS {
        return Err(RankError::TooManyModels(n));
    }
    let unplayed = match fit_all(models, rows, params, costs, true)? {
        Ok(fitted) => return Ok(fitted),
        Err(unplayed) => unplayed,
    };
    // Fitted again on the models that played (at least two: a rated game has two sides).
    // Every row left out names a model without rated games, so it is both bad or failed: it
    // moves no rating, and the per-model counts come from the whole data.
    let played = |i: usize| unplayed.tally[i][..3].iter().sum::<u64>() > 0;
    let mut index = vec![u32::MAX; n];
    let mut kept_models = Vec::new();
    let mut kept_costs = Vec::new();
    let mut original: std::collections::HashMap<String, usize> = Default::default();
    for (i, m) in models.iter().enumerate().filter(|(i, _)| played(*i)) {
        index[i] = kept_models.len() as u32;
        original.insert(m.clone(), i);
        kept_models.push(m.clone());
        kept_costs.push(costs.get(i).copied().unwrap_or((None, false)));
    }
    let kept_rows: Vec<Row> = rows
        .iter()
        .filter(|r| played(r.a as usize) && played(r.b as usize))
        .map(|r| Row {
            a: index[r.a as usize],
            b: index[r.b as usize],
            ..*r
        })
        .collect();
    let Ok(mut fitted) = fit_all(&kept_models, &kept_rows, params, &kept_costs, false)? else {
        unreachable!("fit_all reports unplayed models only when asked to")
    };
    for s in &mut fitted.standings {
        let i = original[&s.model];
        (s.both_bad, s.failed) = (unplayed.tally[i][3], unplayed.tally[i][4]);
    }
    (fitted.rated, fitted.both_bad, fitted.failed) =
        (unplayed.rated, unplayed.both_bad, unplayed.failed);
    let mut unranked: Vec<Standing> = (0..n)
        .filter(|&i| !played(i))
        .map(|i| {
            let cost = costs.get(i);
            Standing {
                rank: None,
                model: models[i].clone(),
                rating: None,
                rating_ci_low: None,
                rating_ci_high: None,
                win_rate: None,
                win_rate_ci_low: None,
                win_rate_ci_high: None,
                games: 0,
                wins: 0,
                losses: 0,
                ties: 0,
                both_bad: unplayed.tally[i][3],
                failed: unplayed.tally[i][4],
                elo: None,
                cost_usd: cost.and_then(|c| c.0),
                priced: cost.is_some_and(|c| c.1),
            }
        })
        .collect();
    unranked.sort_by(|x, y| x.model.cmp(&y.model));
    for s in &unranked {
        fitted.warnings.push(format!(
            "model `{}` has no rated games ({} both bad, {} failed): it is listed without a rank, rating or win rate, and the others' win rates are against the models that played",
            s.model, s.both_bad, s.failed
        ));
    }
    fitted.standings.extend(unranked);
    Ok(fitted)
}

/// What [`fit_all`] found instead of fitting: models without rated games, by their counts.
struct Unplayed {
    /// Per model: wins, losses, ties, both_bad, failed.
    tally: Vec<[u64; 5]>,
    rated: u64,
    both_bad: u64,
    failed: u64,
}

/// [`rank`] with every model in the fit; with `check_played`, the counts instead when a
/// model has no rated games (found from the aggregation, before any fitting).
fn fit_all(
    models: &[String],
    rows: &[Row],
    params: RankParams,
    costs: &[(Option<f64>, bool)],
    check_played: bool,
) -> Result<Result<Fitted, Unplayed>, RankError> {
    let n = models.len();
    let Part {
        builder,
        failed,
        failed_rows,
    } = aggregate_all(n, rows, params)?;
    let input = builder.build_on(params.threads);
    let counts = input.counts();
    if check_played && counts.rated_total() > 0 {
        let per_model = counts.per_model();
        if per_model.iter().any(|t| t[..3].iter().sum::<u64>() == 0) {
            return Ok(Err(Unplayed {
                tally: per_model
                    .iter()
                    .zip(&failed)
                    .map(|(&[w, l, t, b], &f)| [w, l, t, b, f])
                    .collect(),
                rated: counts.rated_total(),
                both_bad: counts.both_bad_total(),
                failed: failed_rows,
            }));
        }
    }
    // Elo needs every row in order and nothing from the fit: it runs on a side thread while
    // the counts are fitted and bootstrapped (not during the aggregation or the build, whose
    // threads already take every core: there it would only preempt them).
    let (fitted, elos) = std::thread::scope(|scope| {
        let side = scope.spawn(|| {
            let rated = rows.iter().filter_map(|r| match r.outcome {
                RowOutcome::Rated(o) => Some((r.a as usize, r.b as usize, o)),
                RowOutcome::Failed => None,
            });
            elo(n, rated)
        });
        let fitted = fit_and_bootstrap(n, &input, &failed, failed_rows, params);
        (fitted, side.join().expect("the Elo thread panicked"))
    });
    let Aggregated {
        clustering,
        fit,
        boot,
        groups,
        tally,
        rated,
        both_bad,
        failed,
    } = fitted?;
    let elos = elos?;
    // Ranks from the intervals as printed (a bound set on its estimate, see [`holding`]):
    // intervals a reader sees touching are linked.
    let shown: Vec<Interval> = boot
        .win_rate
        .iter()
        .zip(&fit.win_rate)
        .map(|(ci, &w)| {
            let (lo, hi) = holding(ci, w);
            Interval { lo, hi }
        })
        .collect();
    let ranks = tied_ranks(&fit.win_rate, &shown)?;
    let mut warnings = Vec::new();
    if groups > 1 {
        warnings.push(format!(
            "the comparison graph falls into {groups} disconnected groups: ratings across groups are pinned only by the prior, not by evidence"
        ));
    }
    // Per model: one whose record is the same on every task has a narrower task interval,
    // which must not hide the models whose intervals are understated.
    let looked_at = clustering.iter().flatten().flatten().count();
    let task_width_ratio = {
        let mut ratios: Vec<f64> = clustering.iter().flatten().flatten().copied().collect();
        ratios.sort_by(f64::total_cmp);
        match ratios.len() {
            0 => None,
            n if n % 2 == 1 => Some(ratios[n / 2]),
            n => Some((ratios[n / 2 - 1] + ratios[n / 2]) / 2.0),
        }
    };
    let bar = clustered_above(input.n_tasks(), looked_at);
    let mut wider: Vec<(f64, &str)> = clustering
        .iter()
        .flatten()
        .zip(models)
        .filter_map(|(r, m)| r.filter(|&r| r > bar).map(|r| (r, m.as_str())))
        .collect();
    if !wider.is_empty() {
        wider.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        const SHOWN: usize = 4;
        let mut named: Vec<String> = wider
            .iter()
            .take(SHOWN)
            .map(|(r, m)| format!("`{m}` {r:.1}×"))
            .collect();
        if wider.len() > SHOWN {
            named.push(format!("{} more", wider.len() - SHOWN));
        }
        warnings.push(format!(
            "comparisons of one task are correlated (an easy task is easy for every model): resampling whole tasks (--bootstrap-unit task) gives win-rate intervals up to {:.1}× as wide as these ({}), which resample comparisons as if independent and so understate the uncertainty",
            wider[0].0,
            named.join(", ")
        ));
    }
    if params.unit == BootstrapUnit::Task && crate::stats::tasks_are_single_rows(&input) {
        warnings.push(
            "every task holds a single comparison, so the task bootstrap resamples single comparisons: it is the comparison bootstrap here (drawn as one), and clusters nothing".into(),
        );
    } else if params.unit == BootstrapUnit::Task && input.n_tasks() < FEW_TASKS {
        // Percentile intervals of a cluster bootstrap over few clusters are too narrow
        // (Cameron, Gelbach & Miller 2008): the resamples cannot vary enough.
        warnings.push(format!(
            "the task bootstrap resamples only {} tasks: with fewer than {FEW_TASKS}, its intervals understate the uncertainty (too few clusters to vary); read them as a lower bound on it",
            input.n_tasks()
        ));
    }
    let mut standings: Vec<Standing> = (0..n)
        .map(|i| {
            standing(
                i,
                &models[i],
                ranks[i],
                &fit,
                &boot.rating[i],
                &boot.win_rate[i],
                &tally[i],
                elos[i],
                costs.get(i),
            )
        })
        .collect();
    // Models whose rating a warning below already calls the prior's: they won or lost every
    // rated game (or had none).
    let mut alone: Vec<bool> = standings.iter().map(|s| s.games == 0).collect();
    // Zero width is judged on the bootstrap's own bounds: a bound set on the estimate (see
    // [`holding`]) must not hide it. Standings are still in model order here.
    for (i, s) in standings.iter().enumerate().filter(|(_, s)| s.games > 0) {
        let (Some(rating), Some(low), Some(high)) = (s.rating, s.rating_ci_low, s.rating_ci_high)
        else {
            continue;
        };
        if boot.rating[i].lo == boot.rating[i].hi {
            warnings.push(format!(
                "model `{}`: every resample gave the same rating, so its interval has zero width: too few resamples, too few distinct comparisons, or only ties, to measure the uncertainty",
                s.model
            ));
        } else if !(low..=high).contains(&rating) {
            warnings.push(format!(
                "model `{}`: the rating lies outside its bootstrap interval; with so few resamples or comparisons the interval is not to be trusted",
                s.model
            ));
        }
        // Won or lost every rated game: the likelihood alone would send its strength to
        // infinity, so the prior sets how far it goes, and every resample (all wins again)
        // agrees: the interval shows none of that.
        let undefeated = s.losses == 0 && s.ties == 0 && s.wins > 0;
        let winless = s.wins == 0 && s.ties == 0 && s.losses > 0;
        if undefeated || winless {
            alone[i] = true;
            warnings.push(format!(
                "model `{}` {} every one of its {} rated games: its rating and interval are set by the prior (--prior), not by the data, which say only that it is {} than the others it met",
                s.model,
                if undefeated { "won" } else { "lost" },
                s.games,
                if undefeated { "better" } else { "worse" }
            ));
        }
    }
    // Groups of models that never lost to (nor tied) another group: the gaps between them
    // are the prior's too, which the per-model warnings above do not say of groups.
    for part in crate::stats::unlinked_groups(input.counts(), &input.active, &alone) {
        let named: Vec<String> = part
            .groups
            .iter()
            .map(|g| {
                let ids: Vec<String> = g.iter().map(|&i| format!("`{}`", models[i])).collect();
                format!("{{{}}}", ids.join(", "))
            })
            .collect();
        // Only the groups that played: the data do not order groups that never met.
        const SHOWN: usize = 8;
        let mut order: Vec<String> = part
            .above
            .iter()
            .take(SHOWN)
            .map(|&(i, j)| format!("{} › {}", named[i], named[j]))
            .collect();
        if part.above.len() > SHOWN {
            order.push(format!("and {} more", part.above.len() - SHOWN));
        }
        warnings.push(format!(
            "the games do not link these models both ways: {} (a › b: every game between the two groups went a's way, with no tie); the gaps between such groups are set by the prior (--prior), not by the data, which say only which of the two is better",
            order.join("; ")
        ));
    }
    // Within a rank by win rate, to 1e-9: models with the same record have win rates equal
    // up to rounding noise, and their order follows their names, not that noise.
    let grid = |w: Option<f64>| w.map(|w| (w * 1e9).round() as i64);
    standings.sort_by(|x, y| {
        x.rank
            .cmp(&y.rank)
            .then(grid(y.win_rate).cmp(&grid(x.win_rate)))
            .then(x.model.cmp(&y.model))
    });
    Ok(Ok(Fitted {
        standings,
        rated,
        both_bad,
        failed,
        warnings,
        task_width_ratio,
        task_width_noise: task_width_ratio
            .map(|_| 1.0 / (2.0 * (input.n_tasks() as f64 - 1.0).max(1.0)).sqrt()),
    }))
}

/// The fewest rows [`aggregate_all`] gives a thread of their own: one thread aggregates 10k
/// rows in about 50 µs, where two took 200–300 µs, most of it starting the second.
const PARALLEL_MIN_ROWS: usize = 50_000;

/// [`PARALLEL_MIN_ROWS`], or in tests what this thread set in [`PARALLEL_MIN_ROWS_SET`].
fn parallel_min_rows() -> usize {
    #[cfg(test)]
    if let Some(rows) = PARALLEL_MIN_ROWS_SET.with(std::cell::Cell::get) {
        return rows;
    }
    PARALLEL_MIN_ROWS
}

#[cfg(test)]
thread_local! {
    /// Replaces [`PARALLEL_MIN_ROWS`] for the rankings this thread runs, so that tests split
    /// small inputs over threads.
    static PARALLEL_MIN_ROWS_SET: std::cell::Cell<Option<usize>> =
        const { std::cell::Cell::new(None) };
}

/// What [`fit_and_bootstrap`] works out.
struct Aggregated {
    /// Per model, its win-rate interval width by the task bootstrap over the comparison
    /// bootstrap's (`None` where the latter is 0; see [`RankParams::cluster_check`]).
    clustering: Option<Vec<Option<f64>>>,
    fit: BtFit,
    boot: BootstrapResult,
    /// Connected groups of the graph of rated games.
    groups: usize,
    /// Per model: wins, losses, ties, both_bad, failed.
    tally: Vec<[u64; 5]>,
    rated: u64,
    both_bad: u64,
    failed: u64,
}

/// Aggregates the rows in contiguous parts on all threads (one part per [`PARALLEL_MIN_ROWS`]
/// rows at most: below that a thread costs more to start than it saves); a bad row is
/// reported from the first part that has one, so the error is the file's first either way.
fn aggregate_all(n: usize, rows: &[Row], params: RankParams) -> Result<Part, RankError> {
    let threads = params.threads.min(rows.len() / parallel_min_rows()).max(1);
    if threads == 1 {
        return aggregate(n, rows, params, rows.len());
    }
    let part = rows.len().div_ceil(threads);
    let parts: Vec<Result<Part, RankError>> = std::thread::scope(|s| {
        // The first part makes room for every part's keys, so that the others are appended to
        // it in place.
        let handles: Vec<_> = rows
            .chunks(part)
            .enumerate()
            .map(|(k, chunk)| {
                let room = if k == 0 { rows.len() } else { chunk.len() };
                s.spawn(move || aggregate(n, chunk, params, room))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("an aggregation thread panicked"))
            .collect()
    });
    let mut parts = parts.into_iter();
    let mut total = parts.next().expect("rows are not empty")?;
    for next in parts {
        let more = next?;
        total.builder.merge(more.builder);
        for (x, y) in total.failed.iter_mut().zip(more.failed) {
            *x += y;
        }
        total.failed_rows += more.failed_rows;
    }
    Ok(total)
}

/// Fits Bradley–Terry to the aggregated rows and bootstraps it; the per-model counts come
/// from the same aggregation (`failed`: failed comparisons per model, `failed_rows` in all).
fn fit_and_bootstrap(
    n: usize,
    input: &BootstrapInput,
    failed: &[u64],
    failed_rows: u64,
    params: RankParams,
) -> Result<Aggregated, RankError> {
    let counts = input.counts();
    let rated = counts.rated_total();
    if rated == 0 {
        return Err(RankError::NoRatedComparisons);
    }
    let fit = fit_bradley_terry(counts, params.prior, None)?;
    let boot = bootstrap(
        input,
        params.unit,
        params.prior,
        params.resamples,
        params.seed,
        params.threads,
        &fit,
    )?;
    // Percentile intervals over fewer tasks understate (see FEW_TASKS): no yardstick then.
    let clustering = if params.cluster_check
        && params.unit == BootstrapUnit::Comparison
        && input.has_tasks()
        && input.n_tasks() >= FEW_TASKS
        && !crate::stats::tasks_are_single_rows(input)
    {
        let by_task = bootstrap(
            input,
            BootstrapUnit::Task,
            params.prior,
            params.resamples,
            params.seed,
            params.threads,
            &fit,
        )?;
        Some(
            by_task
                .win_rate
                .iter()
                .zip(&boot.win_rate)
                .map(|(task, comparison)| {
                    (comparison.width() > 0.0).then(|| task.width() / comparison.width())
                })
                .collect(),
        )
    } else {
        None
    };
    let tally = counts
        .per_model()
        .iter()
        .zip(failed)
        .map(|(&[w, l, t, b], &f)| [w, l, t, b, f])
        .collect();
    Ok(Aggregated {
        clustering,
        fit,
        boot,
        groups: connected_groups(n, &input.active.models),
        tally,
        rated,
        both_bad: counts.both_bad_total(),
        failed: failed_rows,
    })
}

/// One thread's share of the aggregation.
struct Part {
    builder: BootstrapInputBuilder,
    /// Failed comparisons per model (they never reach the builder).
    failed: Vec<u64>,
    failed_rows: u64,
}

/// Aggregates `rows`, with room for the keys of `room` rows (see [`aggregate_all`]).
fn aggregate(n: usize, rows: &[Row], params: RankParams, room: usize) -> Result<Part, RankError> {
    let mut part = Part {
        builder: match (params.unit, params.cluster_check) {
            (BootstrapUnit::Comparison, false) => BootstrapInputBuilder::comparisons_only(n),
            _ => BootstrapInputBuilder::new(n),
        },
        failed: vec![0; n],
        failed_rows: 0,
    };
    part.builder.reserve(room);
    for r in rows {
        let (a, b) = (r.a as usize, r.b as usize);
        match r.outcome {
            RowOutcome::Rated(o) => part.builder.add(a, b, o, r.task as usize)?,
            RowOutcome::Failed => {
                if a >= n || b >= n {
                    return Err(StatsError::ModelOutOfRange {
                        index: a.max(b),
                        n_models: n,
                    }
                    .into());
                }
                part.failed[a] += 1;
                part.failed[b] += 1;
                part.failed_rows += 1;
            }
        }
    }
    Ok(part)
}

#[expect(
    clippy::too_many_arguments,
    reason = "one row of the leaderboard gathers every column"
)]
fn standing(
    i: usize,
    model: &str,
    rank: usize,
    fit: &crate::stats::BtFit,
    rating_ci: &Interval,
    win_ci: &Interval,
    t: &[u64; 5],
    elo: EloEntry,
    cost: Option<&(Option<f64>, bool)>,
) -> Standing {
    let (rating_ci_low, rating_ci_high) = holding(rating_ci, fit.rating[i]);
    let (win_rate_ci_low, win_rate_ci_high) = holding(win_ci, fit.win_rate[i]);
    Standing {
        rank: Some(rank),
        model: model.to_string(),
        rating: Some(fit.rating[i]),
        rating_ci_low: Some(rating_ci_low),
        rating_ci_high: Some(rating_ci_high),
        win_rate: Some(fit.win_rate[i]),
        win_rate_ci_low: Some(win_rate_ci_low),
        win_rate_ci_high: Some(win_rate_ci_high),
        games: t[0] + t[1] + t[2],
        wins: t[0],
        losses: t[1],
        ties: t[2],
        both_bad: t[3],
        failed: t[4],
        elo: elo.rating,
        cost_usd: cost.and_then(|c| c.0),
        priced: cost.is_some_and(|c| c.1),
    }
}

/// The interval's bounds, a bound that misses `estimate` by rounding alone (1e-9 of it) moved
/// onto it: a resample of the very data the estimate was fitted to refits to it up to the last
/// bits, and a reader checking `low <= estimate <= high` must not see it fail for that.
fn holding(ci: &Interval, estimate: f64) -> (f64, f64) {
    let tolerance = 1e-9 * estimate.abs().max(1.0);
    let lo = if estimate < ci.lo && ci.lo - estimate <= tolerance {
        estimate
    } else {
        ci.lo
    };
    let hi = if estimate > ci.hi && estimate - ci.hi <= tolerance {
        estimate
    } else {
        ci.hi
    };
    (lo, hi)
}

/// Connected components of the graph of rated games (`pairs`: the pairs with at least one),
/// counting only models that played.
fn connected_groups(n: usize, pairs: &[(usize, usize)]) -> usize {
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let mut played = vec![false; n];
    for &(a, b) in pairs {
        let (x, y) = (find(&mut parent, a), find(&mut parent, b));
        parent[x] = y;
        played[a] = true;
        played[b] = true;
    }
    let mut roots: Vec<usize> = (0..n)
        .filter(|&i| played[i])
        .map(|i| find(&mut parent, i))
        .collect();
    roots.sort_unstable();
    roots.dedup();
    roots.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bound that misses its estimate by rounding moves onto it; a real miss stays (and is
    /// warned about).
    #[test]
    fn a_bound_off_by_rounding_holds_its_estimate() {
        let est = 0.5161840511803177;
        let below = Interval {
            lo: est,
            hi: 0.5161840511803176,
        };
        assert_eq!(holding(&below, est), (est, est));
        let rating = 1491.508212068322;
        let above = Interval {
            lo: 1491.5082120683223,
            hi: 1491.5082120683223,
        };
        assert_eq!(holding(&above, rating), (rating, 1491.5082120683223));
        let apart = Interval { lo: 0.6, hi: 0.7 };
        assert_eq!(holding(&apart, 0.5), (0.6, 0.7));
    }

    fn params() -> RankParams {
        RankParams {
            prior: 0.1,
            resamples: 200,
            seed: 7,
            unit: BootstrapUnit::Comparison,
            threads: 2,
            cluster_check: false,
        }
    }

    fn row(a: u32, b: u32, o: Outcome, task: u32) -> Row {
        Row {
            a,
            b,
            outcome: RowOutcome::Rated(o),
            task,
        }
    }

    #[test]
    fn counts_and_order() {
        let models: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let mut rows = Vec::new();
        for t in 0..30 {
            rows.push(row(0, 1, Outcome::AWins, t));
            rows.push(row(
                1,
                2,
                if t % 3 == 0 {
                    Outcome::Tie
                } else {
                    Outcome::AWins
                },
                t,
            ));
            rows.push(row(0, 2, Outcome::BothBad, t));
        }
        rows.push(Row {
            a: 0,
            b: 2,
            outcome: RowOutcome::Failed,
            task: 0,
        });
        let f = rank(&models, &rows, params(), &[]).expect("ranks");
        assert_eq!(f.standings[0].model, "a");
        assert_eq!(f.standings[0].wins, 30);
        assert_eq!(f.standings[0].both_bad, 30);
        assert_eq!(f.standings[0].failed, 1);
        let b = f.standings.iter().find(|s| s.model == "b").unwrap();
        assert_eq!((b.wins, b.losses, b.ties, b.games), (20, 30, 10, 60));
        assert_eq!((f.rated, f.both_bad, f.failed), (60, 30, 1));
        for s in &f.standings {
            assert!(s.win_rate_ci_low <= s.win_rate && s.win_rate <= s.win_rate_ci_high);
        }
        // `a` won all its 30 rated games: said, and nothing else.
        assert_eq!(f.warnings.len(), 1, "{:?}", f.warnings);
        assert!(
            f.warnings[0].starts_with("model `a` won every one of its 30 rated games"),
            "{:?}",
            f.warnings
        );
    }

    /// The whole leaderboard (aggregation split over threads, bootstrap, side thread) is the
    /// same for any thread count, with both bootstrap units and failed rows mixed in.
    #[test]
    fn leaderboard_is_identical_for_any_thread_count() {
        let models: Vec<String> = (0..6).map(|i| format!("m{i}")).collect();
        let outcomes = [
            Outcome::AWins,
            Outcome::BWins,
            Outcome::Tie,
            Outcome::BothBad,
        ];
        let rows: Vec<Row> = (0..997u32)
            .map(|k| {
                let (a, b) = (k % 6, (k * 7 + 1) % 6);
                let b = if a == b { (a + 1) % 6 } else { b };
                if k % 50 == 0 {
                    Row {
                        a,
                        b,
                        outcome: RowOutcome::Failed,
                        task: k % 40,
                    }
                } else {
                    row(a, b, outcomes[((k * k) % 7 % 4) as usize], k % 40)
                }
            })
            .collect();
        for unit in [BootstrapUnit::Comparison, BootstrapUnit::Task] {
            let at = |threads| {
                let p = RankParams {
                    unit,
                    threads,
                    ..params()
                };
                rank(&models, &rows, p, &[]).expect("ranks")
            };
            let one = at(1);
            assert_eq!(one, at(2), "{unit:?}");
            assert_eq!(one, at(5), "{unit:?}");
            // Aggregated in two and in five parts (inputs this small take one otherwise).
            PARALLEL_MIN_ROWS_SET.with(|c| c.set(Some(100)));
            let (two, five) = (at(2), at(5));
            PARALLEL_MIN_ROWS_SET.with(|c| c.set(None));
            assert_eq!(one, two, "{unit:?}, aggregated in two parts");
            assert_eq!(one, five, "{unit:?}, aggregated in five parts");
        }
    }

    /// A bad row is reported as the first of the file, whichever part of the rows aggregated
    /// on their own thread holds it.
    #[test]
    fn split_aggregation_reports_the_first_bad_row() {
        let models: Vec<String> = (0..3).map(|i| format!("m{i}")).collect();
        let mut rows: Vec<Row> = (0..1000u32)
            .map(|k| row(k % 3, (k + 1) % 3, Outcome::AWins, k % 10))
            .collect();
        rows[700].b = 9;
        rows[300].a = 7;
        PARALLEL_MIN_ROWS_SET.with(|c| c.set(Some(100)));
        let split = rank(
            &models,
            &rows,
            RankParams {
                threads: 4,
                ..params()
            },
            &[],
        );
        PARALLEL_MIN_ROWS_SET.with(|c| c.set(None));
        let whole = rank(
            &models,
            &rows,
            RankParams {
                threads: 1,
                ..params()
            },
            &[],
        );
        let message = |r: Result<Fitted, RankError>| r.expect_err("a bad row").to_string();
        assert_eq!(message(split), message(whole));
    }

    #[test]
    fn edge_cases_are_clear() {
        let one = vec!["a".to_string()];
        assert!(matches!(
            rank(&one, &[], params(), &[]),
            Err(RankError::NoComparisons)
        ));
        let failed_only = [Row {
            a: 0,
            b: 0,
            outcome: RowOutcome::Failed,
            task: 0,
        }];
        assert!(matches!(
            rank(&one, &failed_only, params(), &[]),
            Err(RankError::TooFewModels(1))
        ));
        let two: Vec<String> = vec!["a".into(), "b".into()];
        let only_bad = [row(0, 1, Outcome::BothBad, 0)];
        assert!(matches!(
            rank(&two, &only_bad, params(), &[]),
            Err(RankError::NoRatedComparisons)
        ));
    }

    #[test]
    fn a_single_comparison_warns_that_its_intervals_measure_nothing() {
        let models: Vec<String> = vec!["a".into(), "b".into()];
        let f = rank(&models, &[row(0, 1, Outcome::AWins, 0)], params(), &[]).expect("ranks");
        assert_eq!(
            f.warnings
                .iter()
                .filter(|w| w.contains("zero width"))
                .count(),
            2,
            "{:?}",
            f.warnings
        );
        // Enough varied data: no such warning.
        let rows: Vec<Row> = (0..40)
            .map(|i| match i % 3 {
                0 => row(0, 1, Outcome::AWins, i),
                1 => row(0, 1, Outcome::BWins, i),
                _ => row(1, 0, Outcome::Tie, i),
            })
            .collect();
        let f = rank(&models, &rows, params(), &[]).expect("ranks");
        assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    }

    #[test]
    fn disconnected_graph_and_idle_model_warn() {
        let models: Vec<String> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows = [
            row(0, 1, Outcome::AWins, 0),
            row(1, 0, Outcome::Tie, 1),
            row(2, 3, Outcome::AWins, 2),
        ];
        let f = rank(&models, &rows, params(), &[]).expect("ranks");
        assert!(
            f.warnings
                .iter()
                .any(|w| w.contains("`e` has no rated games")),
            "{:?}",
            f.warnings
        );
        assert!(
            f.warnings
                .iter()
                .any(|w| w.contains("2 disconnected groups")),
            "{:?}",
            f.warnings
        );
    }

    /// Failures on one pair (a judge that cannot parse its replies when one answer is shown)
    /// are said of that pair; failures spread over every pair, or too few to tell from
    /// chance, are not.
    #[test]
    fn failures_falling_on_some_models_are_warned_of() {
        let models: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let failed = |a, b, task| Row {
            a,
            b,
            outcome: RowOutcome::Failed,
            task,
        };
        let split = |t: u32| [Outcome::AWins, Outcome::BWins][t as usize % 2];
        let mut rows = Vec::new();
        for t in 0..20 {
            rows.push(row(0, 1, split(t), t));
        }
        for t in 0..10 {
            rows.push(if t < 6 {
                failed(0, 2, t)
            } else {
                row(0, 2, Outcome::Tie, t)
            });
            rows.push(row(1, 2, split(t), t));
        }
        let f = rank(&models, &rows, params(), &[]).expect("ranks");
        let uneven: Vec<&String> = f
            .warnings
            .iter()
            .filter(|w| w.starts_with("judge failures fall unevenly"))
            .collect();
        assert_eq!(uneven.len(), 1, "{:?}", f.warnings);
        assert!(
            uneven[0].starts_with("judge failures fall unevenly on `a` against `c`: 6 of their 10 comparisons failed (60%), against 0 of the 30 others (0%), more than chance gives"),
            "{uneven:?}"
        );
        // A model whose answers break the judge: said of the model, not of its pairs.
        let mut broken = Vec::new();
        for t in 0..20 {
            broken.push(row(0, 1, split(t), t));
            broken.push(if t < 10 {
                failed(1, 2, t)
            } else {
                row(1, 2, split(t), t)
            });
            broken.push(if t < 10 {
                failed(0, 2, t)
            } else {
                row(0, 2, split(t), t)
            });
        }
        let f = rank(&models, &broken, params(), &[]).expect("ranks");
        let uneven: Vec<&String> = f
            .warnings
            .iter()
            .filter(|w| w.starts_with("judge failures fall unevenly"))
            .collect();
        assert_eq!(uneven.len(), 1, "{:?}", f.warnings);
        assert!(uneven[0].starts_with("judge failures fall unevenly on `c`: 20 of its 40 comparisons failed (50%), against 0 of the 20 without it (0%)"));
        // The same failures spread over every pair, or failing every thirteenth row: chance.
        for spread in [|i: u32| i % 10 < 2, |i: u32| i.is_multiple_of(13)] {
            let mut even = Vec::new();
            let mut i = 0;
            for (a, b) in [(0, 1), (0, 2), (1, 2)] {
                for t in 0..25 {
                    even.push(if spread(i) {
                        failed(a, b, t)
                    } else {
                        row(a, b, split(t), t)
                    });
                    i += 1;
                }
            }
            let f = rank(&models, &even, params(), &[]).expect("ranks");
            assert!(
                !f.warnings.iter().any(|w| w.contains("fall unevenly")),
                "{:?}",
                f.warnings
            );
        }
    }

    /// Two models that tie each other and beat the rest, who beat each other round: neither
    /// won every game, yet the gap to the rest is the prior's; said of the groups.
    #[test]
    fn groups_the_games_do_not_link_both_ways_are_warned_of() {
        let models: Vec<String> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let mut rows = Vec::new();
        for t in 0..6 {
            rows.push(row(0, 1, Outcome::Tie, t));
            rows.push(row(0, 2, Outcome::AWins, t));
            rows.push(row(1, 3, Outcome::AWins, t));
            rows.push(row(2, 3, Outcome::AWins, t));
            rows.push(row(3, 4, Outcome::AWins, t));
            rows.push(row(4, 2, Outcome::AWins, t));
        }
        let f = rank(&models, &rows, params(), &[]).expect("ranks");
        assert!(
            f.warnings.iter().any(|w| w.starts_with(
                "the games do not link these models both ways: {`a`, `b`} › {`c`, `d`, `e`} (a › b: every game between the two groups went a's way, with no tie)"
            )),
            "{:?}",
            f.warnings
        );
        assert!(!f.warnings.iter().any(|w| w.contains("every one of its")));
        // One win of `e` over `a` links them: nothing to say.
        rows.push(row(4, 0, Outcome::AWins, 0));
        let f = rank(&models, &rows, params(), &[]).expect("ranks");
        assert!(
            !f.warnings.iter().any(|w| w.contains("do not link")),
            "{:?}",
            f.warnings
        );
    }

    /// Comparisons that come in blocks by task (every row of a task says the same) make the
    /// comparison bootstrap's intervals too narrow; the run's leaderboard says by how much.
    /// Rows whose tasks say nothing in common give no such warning.
    #[test]
    fn clustered_comparisons_are_said_to_understate_the_uncertainty() {
        let models: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let checked = RankParams {
            cluster_check: true,
            resamples: 1000,
            ..params()
        };
        let clustered_warning = |rows: &[Row], p: RankParams| {
            rank(&models, rows, p, &[])
                .expect("ranks")
                .warnings
                .into_iter()
                .find(|w| w.starts_with("comparisons of one task are correlated"))
        };
        let mut blocks = Vec::new();
        for t in 0..40u32 {
            let o = if t % 2 == 0 {
                Outcome::AWins
            } else {
                Outcome::BWins
            };
            for _ in 0..10 {
                blocks.push(row(0, 1, o, t));
                blocks.push(row(1, 2, o, t));
                blocks.push(row(0, 2, o, t));
            }
        }
        let said = clustered_warning(&blocks, checked).expect("warned");
        let ratio: f64 = said
            .split("up to ")
            .nth(1)
            .and_then(|r| r.split('×').next())
            .and_then(|r| r.parse().ok())
            .expect("a ratio");
        assert!(ratio > 2.0, "{said}");
        // The top and the bottom model; `b`, 1–1 on every task, has a narrower task interval
        // (it once pulled an average under the threshold).
        assert!(
            said.contains("`a` ") && said.contains("`c` ") && !said.contains("`b`"),
            "{said}"
        );
        // One comparison per pair and task, a coin per task deciding them all: the mean of
        // the three widths' ratios is under 1 (`b`'s is 0), the top and bottom's about √2
        // (two games a task that always agree), clear of the bar at 100 tasks.
        let mut coins = Vec::new();
        let mut state: u32 = 7;
        for t in 0..100u32 {
            state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let o = if state >> 16 & 1 == 0 {
                Outcome::AWins
            } else {
                Outcome::BWins
            };
            coins.push(row(0, 1, o, t));
            coins.push(row(1, 2, o, t));
            coins.push(row(0, 2, o, t));
        }
        let said = clustered_warning(&coins, checked).expect("warned");
        assert!(said.contains("`a` ") && said.contains("`c` "), "{said}");
        // The bar: 1.25 at least, higher with fewer tasks and more models.
        assert_eq!(clustered_above(1000, 3), CLUSTERED);
        assert!((clustered_above(30, 50) - 1.54).abs() < 0.01);
        assert!(clustered_above(30, 50) > clustered_above(30, 5));
        assert!(clustered_above(30, 5) > clustered_above(60, 5));
        // Only when asked (a run's comparisons), and only by the comparison unit.
        assert_eq!(clustered_warning(&blocks, params()), None);
        let by_task = RankParams {
            unit: BootstrapUnit::Task,
            ..checked
        };
        assert_eq!(clustered_warning(&blocks, by_task), None);
        // One row per (task, pair), outcomes unrelated to the task.
        let mut plain = Vec::new();
        for t in 0..120u32 {
            let o = [Outcome::AWins, Outcome::BWins, Outcome::Tie][(t * 7 % 3) as usize];
            plain.push(row(t % 3, (t + 1) % 3, o, t / 3));
        }
        assert_eq!(clustered_warning(&plain, checked), None);
        // The median widening is given whether or not it warns: well above 1 for blocks,
        // under the bar for the plain rows (whose tasks each hold one win, loss and tie, so
        // resampling tasks varies less), and not at all unless asked by the comparison unit.
        let ratio =
            |rows: &[Row], p: RankParams| rank(&models, rows, p, &[]).unwrap().task_width_ratio;
        assert!(ratio(&blocks, checked).is_some_and(|r| r > 2.0));
        let plain_ratio = ratio(&plain, checked);
        assert!(plain_ratio.is_some_and(|r| r < 1.25), "{plain_ratio:?}");
        assert_eq!(ratio(&blocks, params()), None);
        assert_eq!(ratio(&blocks, by_task), None);
    }

    #[test]
    fn intervals_that_touch_as_printed_share_a_rank() {
        // Three separate battles on one task, resampled by task: every resample is the data,
        // and the bootstrap's bounds differ from the estimates in the last bits only. The
        // printed bounds are set on the estimates, all equal: one rank for each half.
        let models: Vec<String> = ["F", "E", "D", "C", "A", "B"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let rows = [
            row(0, 1, Outcome::BWins, 0),
            row(2, 3, Outcome::BWins, 0),
            row(4, 5, Outcome::AWins, 0),
        ];
        let params = RankParams {
            resamples: 1000,
            seed: 0,
            unit: BootstrapUnit::Task,
            ..params()
        };
        let f = rank(&models, &rows, params, &[]).expect("ranks");
        let ranks: Vec<(&str, Option<usize>)> = f
            .standings
            .iter()
            .map(|s| (s.model.as_str(), s.rank))
            .collect();
        assert_eq!(
            ranks,
            [
                ("A", Some(1)),
                ("C", Some(1)),
                ("E", Some(1)),
                ("B", Some(4)),
                ("D", Some(4)),
                ("F", Some(4))
            ]
        );
    }

    #[test]
    fn a_model_without_rated_games_is_listed_unranked_and_moves_no_other_number() {
        // `e` has only both-bad and failed comparisons: no rank, no rating, listed last; the
        // others are exactly what they are without `e` in the data at all, but for their
        // both-bad and failed counts.
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let mut rows: Vec<Row> = (0..60)
            .map(|i| {
                let (a, b) = [(0, 1), (1, 2), (2, 3), (3, 0)][i as usize % 4];
                row(
                    a,
                    b,
                    [Outcome::AWins, Outcome::BWins, Outcome::Tie][i as usize % 3],
                    i,
                )
            })
            .collect();
        let without = rank(&names(&["a", "b", "c", "d"]), &rows, params(), &[]).expect("ranks");
        rows.insert(5, row(4, 0, Outcome::BothBad, 5));
        rows.push(Row {
            a: 1,
            b: 4,
            outcome: RowOutcome::Failed,
            task: 9,
        });
        let with = rank(&names(&["a", "b", "c", "d", "e"]), &rows, params(), &[]).expect("ranks");
        let e = with.standings.last().expect("standings");
        assert_eq!(e.model, "e");
        assert_eq!(
            (
                e.rank,
                e.rating,
                e.rating_ci_low,
                e.win_rate,
                e.win_rate_ci_high
            ),
            (None, None, None, None, None)
        );
        assert_eq!((e.games, e.both_bad, e.failed, e.elo), (0, 1, 1, None));
        assert_eq!(with.standings.len(), 5);
        for (x, y) in without.standings.iter().zip(&with.standings) {
            let bad = (u64::from(y.model == "a"), u64::from(y.model == "b"));
            assert_eq!(
                Standing {
                    both_bad: x.both_bad + bad.0,
                    failed: x.failed + bad.1,
                    ..x.clone()
                },
                *y
            );
        }
        assert_eq!(
            (with.rated, with.both_bad, with.failed),
            (without.rated, 1, 1)
        );
        assert!(
            with.warnings
                .iter()
                .any(|w| w.starts_with("model `e` has no rated games (1 both bad, 1 failed)")),
            "{:?}",
            with.warnings
        );
    }
}
