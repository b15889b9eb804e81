//! `judge rank`: comparisons (from a run, or a Chatbot-Arena-style JSONL file streamed row by
//! row) → Bradley–Terry leaderboard with bootstrap intervals and tied ranks.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;

use crate::battles::{ArrayLines, BattlesError, BattlesShape, battles_shape, parse_battles_judged};
use crate::cli::{Cli, RankArgs};
use crate::commands::compare::{COMPARISONS_FILE, JUDGMENTS_FILE};
use crate::config::load_config;
use crate::engine::run_dir::{RunDir, read_jsonl_repairing};
use crate::error::{JudgeError, Outcome};
use crate::judging::{EXEC_JUDGE, flip_rate};
use crate::ranking::{RankParams, Row, RowOutcome, rank};
use crate::records::{ComparisonRecord, JudgmentVerdict, OutputBrief, Winner};
use crate::report::leaderboard::{Header, JudgingCost, Leaderboard, render_leaderboard};
use crate::report::{Format, write_stdout_or_file};
use crate::stats::Outcome as StatOutcome;

/// Seed used for `--comparisons` input when `--seed` is not given.
pub const DEFAULT_SEED: u64 = 0;
/// Fewest resamples allowed without `--allow-few-resamples`.
pub const MIN_RESAMPLES: usize = 1000;

/// Most resamples allowed: a bound on time (each resample is a refit); memory stays small,
/// since the bootstrap keeps only the tails the intervals need.
pub const MAX_RESAMPLES: usize = 1_000_000;

/// Refuses bootstrap and prior settings `judge rank` cannot honour (also checked by
/// `judge run` before it generates anything).
pub fn check_fit_args(resamples: usize, allow_few: bool, prior: f64) -> Result<(), JudgeError> {
    check_resamples(resamples, allow_few)?;
    if !(prior.is_finite() && prior > 0.0) {
        return Err(JudgeError::usage(format!(
            "--prior {prior} must be a finite number greater than 0 (default 0.1)"
        )));
    }
    Ok(())
}

/// Refuses a number of bootstrap resamples outside [`MIN_RESAMPLES`] (unless `allow_few`) ..=
/// [`MAX_RESAMPLES`] (also for `judge label score`); 0 always.
pub fn check_resamples(resamples: usize, allow_few: bool) -> Result<(), JudgeError> {
    if resamples == 0 {
        return Err(JudgeError::usage(
            "--resamples 0: the bootstrap needs at least one resample (the default is 1000)",
        ));
    }
    if resamples < MIN_RESAMPLES && !allow_few {
        return Err(JudgeError::usage(format!(
            "--resamples {resamples} is below {MIN_RESAMPLES}; percentile intervals need at least {MIN_RESAMPLES} (pass --allow-few-resamples for a quick look)"
        )));
    }
    if resamples > MAX_RESAMPLES {
        return Err(JudgeError::usage(format!(
            "--resamples {resamples} is above {MAX_RESAMPLES}; the bootstrap's time grows with every resample, and beyond a few thousand the intervals no longer change"
        )));
    }
    Ok(())
}

/// Rows ready to rank, with what the header needs.
pub struct RankInput {
    pub models: Vec<String>,
    pub rows: Vec<Row>,
    pub costs: Vec<(Option<f64>, bool)>,
    pub header: Header,
    /// Warnings about the input, shown before the fit's own.
    pub warnings: Vec<String>,
    /// What to do when no comparison is rated (appended to that error): ask the judge
    /// again, or the models whose failed generations decided the comparisons.
    pub unrated_hint: String,
}

/// Runs `judge rank`.
pub fn run(cli: &Cli, args: &RankArgs) -> anyhow::Result<Outcome> {
    check_fit_args(args.resamples, args.allow_few_resamples, args.prior)?;
    crate::report::refuse_output_into_run(
        args.output.as_deref(),
        &crate::config::project_root(&cli.config).join("runs"),
    )?;
    if let (Some(out), Some(input)) = (&args.output, &args.comparisons)
        && input.as_os_str() != "-"
        && std::fs::canonicalize(input).is_ok_and(|i| i == crate::report::output_target(out))
    {
        return Err(JudgeError::usage(format!(
            "--output `{}` is the battles file being ranked; write the leaderboard elsewhere",
            out.display()
        ))
        .into());
    }
    let started = Instant::now();
    let (input, run_dir, prompt) = match (&args.run, &args.comparisons) {
        (Some(run), None) => {
            let (input, run_dir, prompt) = from_run(cli, run, args)?;
            (input, Some(run_dir), prompt)
        }
        (None, Some(file)) => {
            if args.judge.is_some() || args.from_labels {
                return Err(JudgeError::usage(
                    "--judge and --from-labels need --run (a comparisons file has one set of battles)",
                )
                .into());
            }
            (from_file(file, args)?, None, None)
        }
        _ => {
            return Err(
                JudgeError::usage("give exactly one of --run NAME or --comparisons FILE").into(),
            );
        }
    };
    if args.show_prompt {
        let text = match (&run_dir, prompt) {
            (Some(_), Some(text)) => text,
            (Some(_), None) => {
                "(this judge uses no prompt: the execution judge decides from check results)\n"
                    .into()
            }
            (None, _) => {
                return Err(JudgeError::usage(
                    "--show-prompt needs --run (a comparisons file carries no prompt)",
                )
                .into());
            }
        };
        write_stdout_or_file(format!("{text}\n").as_bytes(), None)?;
    }
    let read = started.elapsed();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let params = RankParams {
        prior: args.prior,
        resamples: args.resamples,
        seed: input.header.seed,
        unit: args.bootstrap_unit.into(),
        threads,
        // A run's comparisons come in per-task clusters; battles files and labels do not
        // (labels have their own warning for items labelled twice).
        cluster_check: args.run.is_some() && !args.from_labels,
    };
    let mut fitted = rank(&input.models, &input.rows, params, &input.costs).map_err(|e| {
        let hint = match &e {
            crate::ranking::RankError::NoRatedComparisons => input.unrated_hint.as_str(),
            _ => "",
        };
        // What was found before the fit failed still explains the run (comparisons missing,
        // judgments not brought in).
        for w in &input.warnings {
            eprintln!("warning: {}", crate::report::printable(w));
        }
        JudgeError::usage(format!("cannot rank {}: {e}{hint}", input.header.source))
    })?;
    fitted.warnings.splice(0..0, input.warnings);
    let ranked = started.elapsed();
    // A table or Markdown leaderboard on stdout carries its warnings itself; otherwise (a data
    // format, or a report written to a file) they are said on stderr.
    let format = crate::report::output_format(args.format, args.output.as_deref());
    let carried = args.output.is_none() && matches!(format, Format::Table | Format::Md);
    if !carried {
        for w in &fitted.warnings {
            eprintln!("warning: {}", crate::report::printable(w));
        }
    }
    let board = Leaderboard::new(input.header, fitted);
    // Likewise the by-task line (a CSV has no place for it).
    if !carried && let Some(line) = board.clustering_line() {
        eprintln!("{line}");
    }
    if let Some(dir) = &run_dir {
        // The latest rank of the run, and one copy per judge that survives ranking another.
        let judge_file = board
            .header
            .judge
            .as_deref()
            .map(crate::config::leaderboard_stem);
        let names: Vec<String> = match (args.from_labels, judge_file) {
            (true, _) => vec!["labels/leaderboard".into()],
            (false, Some(j)) => vec!["leaderboard".into(), format!("leaderboards/{j}")],
            (false, None) => vec!["leaderboard".into()],
        };
        // All six files in one step: a failure leaves the old ones, not a mix.
        let mut files = Vec::new();
        for name in &names {
            for (ext, format) in [
                ("json", Format::Json),
                ("csv", Format::Csv),
                ("md", Format::Md),
            ] {
                files.push((
                    dir.file(&format!("{name}.{ext}")),
                    render_leaderboard(&board, format),
                ));
            }
        }
        // Human leaderboards are written under the run's shared lock, which other
        // `rank --from-labels` hold too: one at a time, or their renames interleave and
        // leave the three files of two ranks.
        // Its name holds a `+`, which no labeller id does: no labeller's lock is this one.
        let _one_writer = if args.from_labels {
            Some(crate::engine::run_dir::wait_for_lock(
                &dir.file("labels/.leaderboard+writer.lock"),
                "another `rank --from-labels` is writing the human leaderboard; waiting for it",
            )?)
        } else {
            None
        };
        // Not cut between two renames by a second Ctrl-C (a `kill -9` still can).
        let _hold = crate::interrupt::hold_exit();
        crate::cache::write_atomic_all(&files).with_context(|| {
            format!(
                "failed to write the leaderboards into `{}`",
                dir.path().display()
            )
        })?;
        // Each rank replaces the run's files: say which, so a quick look is not a surprise.
        let written: Vec<String> = names
            .iter()
            .map(|n| format!("{}.{{json,csv,md}}", dir.file(n).display()))
            .collect();
        eprintln!("wrote {}", crate::report::printable(&written.join(", ")));
    }
    let format = crate::report::output_format(args.format, args.output.as_deref());
    write_stdout_or_file(&render_leaderboard(&board, format), args.output.as_deref())?;
    if args.timings {
        let total = started.elapsed();
        eprintln!(
            "timings: read+parse {:.4} s · rank {:.4} s · write {:.4} s · total {:.4} s",
            read.as_secs_f64(),
            (ranked - read).as_secs_f64(),
            (total - ranked).as_secs_f64(),
            total.as_secs_f64()
        );
    }
    // A Ctrl-C that came while the leaderboards were written (the listener was on, so it did
    // not end the process) is still an interruption: 130, with everything written.
    if crate::interrupt::requested() {
        return Err(JudgeError::Interrupted(None).into());
    }
    Ok(Outcome::Success)
}

/// Reads a run's comparisons for one judge.
fn from_run(
    cli: &Cli,
    run: &str,
    args: &RankArgs,
) -> anyhow::Result<(RankInput, RunDir, Option<String>)> {
    let config = load_config(&cli.config)?;
    // The human leaderboard is labelling's: it shares the lock with labelling sessions.
    let (mut run_dir, manifest, suite, outputs) = if args.from_labels {
        crate::commands::load_run_recorded(&config, run, true)?
    } else {
        crate::commands::load_run_recorded(&config, run, false)?
    };
    // Said on stderr and in every leaderboard (JSON `warnings`, under the Markdown).
    let mut warnings: Vec<String> = crate::commands::edited_suite_warning(&manifest, &suite, run)
        .into_iter()
        .collect();
    let comparisons: Vec<ComparisonRecord> = if args.from_labels {
        let (labelled, shared) = comparisons_from_labels(&run_dir, &mut warnings)?;
        if shared > 0 && args.bootstrap_unit == crate::cli::UnitArg::Comparison {
            warnings.push(format!(
                "{shared} item(s) carry labels from more than one person; each label is a row, and rows of one item are not independent, which the comparison bootstrap's intervals do not account for: use --bootstrap-unit task (it resamples whole tasks)"
            ));
        }
        labelled
    } else {
        read_jsonl_repairing(&run_dir.file(COMPARISONS_FILE))?
    };
    if comparisons.is_empty() && args.from_labels {
        return Err(JudgeError::usage(format!(
            "run `{run}` has no human labels yet; label with `judge label --run {run} --labeller YOU`"
        ))
        .into());
    }
    if comparisons.is_empty() {
        return Err(JudgeError::usage(format!(
            "run `{run}` has no comparisons yet; run `judge compare --run {run}` first"
        ))
        .into());
    }
    let judge = crate::commands::pick_judge(&comparisons, args.judge.as_deref(), run)?;
    let mine: Vec<&ComparisonRecord> = comparisons.iter().filter(|c| c.judge == judge).collect();
    if !args.from_labels {
        refuse_stale_failures(&mine, &outputs, run)?;
    }
    let present: std::collections::BTreeSet<&str> =
        outputs.iter().map(|o| o.model.as_str()).collect();
    // Numbered as a battles file numbers them (models by name, tasks by label key), so that
    // the bootstrap's draws, laid out by number, are the same from the run and from its
    // comparisons.jsonl, and do not hang on the order of judge.toml or of the suite.
    let mut model_cfgs: Vec<_> = manifest
        .models
        .iter()
        .filter(|m| present.contains(m.id.as_str()))
        .collect();
    model_cfgs.sort_by(|x, y| x.id.cmp(&y.id));
    let models: Vec<String> = model_cfgs.iter().map(|m| m.id.clone()).collect();
    let model_flags = crate::commands::run_model_flags(&config, &manifest);
    if !args.from_labels {
        // Generated after the judge's last compare (the manifest's count of missing
        // comparisons predates it): listed unranked, with what to do.
        let compared: std::collections::BTreeSet<&str> = mine
            .iter()
            .flat_map(|c| [c.model_a.as_str(), c.model_b.as_str()])
            .collect();
        let idle: Vec<String> = models
            .iter()
            .filter(|m| !compared.contains(m.as_str()))
            .map(|m| format!("`{m}`"))
            .collect();
        if !idle.is_empty() {
            warnings.push(format!(
                "{} {} outputs but no comparison by judge `{judge}` (generated after its last compare?): `judge compare --run {run} --judge {judge}` compares them (a model of the judge's own family it refuses: rank that one with another judge)",
                idle.join(", "),
                if idle.len() == 1 { "has" } else { "have" }
            ));
        }
        let ungenerated: Vec<String> = manifest
            .models
            .iter()
            .filter(|m| !present.contains(m.id.as_str()))
            .filter(|m| crate::commands::part_of_run(&config, &m.id, false))
            .map(|m| format!("`{}`", m.id))
            .collect();
        if !ungenerated.is_empty() {
            let one = ungenerated.len() == 1;
            warnings.push(format!(
                "{} of run `{run}` {} no output (its generation stopped before the first?), so {} not ranked: `judge generate --run {run}{model_flags}` generates {}, then `judge compare --run {run} --judge {judge}` judges {}",
                ungenerated.join(", "),
                if one { "has" } else { "have" },
                if one { "it is" } else { "they are" },
                if one { "it" } else { "them" },
                if one { "it" } else { "them" },
            ));
        }
    }
    let index: HashMap<&str, u32> = models
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i as u32))
        .collect();
    let mut by_key: Vec<&str> = suite.tasks.iter().map(|t| t.id.as_str()).collect();
    by_key.sort_by_cached_key(|t| crate::battles::label_key(t.as_bytes()));
    let tasks: HashMap<&str, u32> = by_key
        .into_iter()
        .enumerate()
        .map(|(i, t)| (t, i as u32))
        .collect();
    let mut rows = Vec::with_capacity(mine.len());
    // comparisons.jsonl is derived whole by compare, one record per task and pair: anything
    // else was edited in by hand and would move the numbers unseen.
    let source = run_dir.file(COMPARISONS_FILE);
    let damaged = |what: String| -> anyhow::Error {
        JudgeError::usage(format!(
            "`{}`: {what}; the file is written whole by `judge compare` (from the judgments, or the checks for `exec`), so it was edited by hand: delete it and run `judge compare --run {run}` to rebuild it",
            source.display()
        ))
        .into()
    };
    let mut seen: std::collections::BTreeSet<(&str, &str, &str)> =
        std::collections::BTreeSet::new();
    for c in &mine {
        let (Some(&a), Some(&b)) = (index.get(c.model_a.as_str()), index.get(c.model_b.as_str()))
        else {
            if args.from_labels {
                continue;
            }
            let unknown = [&c.model_a, &c.model_b]
                .into_iter()
                .find(|m| !index.contains_key(m.as_str()))
                .expect("one of the two is unknown");
            // A model of the manifest without outputs: outputs.jsonl lost them, not this file.
            if manifest.models.iter().any(|m| &m.id == unknown) {
                return Err(JudgeError::usage(format!(
                    "`{}` holds no outputs of model `{unknown}`, which run `{run}` records and whose comparisons are in {COMPARISONS_FILE}: outputs.jsonl was emptied or cut; restore it (the comparisons stand)",
                    run_dir.file(crate::commands::generate::OUTPUTS_FILE).display()
                ))
                .into());
            }
            return Err(damaged(format!(
                "a comparison on task `{}` names model `{unknown}`, which has no outputs in run `{run}`",
                c.task
            )));
        };
        if !args.from_labels {
            if a == b {
                return Err(damaged(format!(
                    "a comparison on task `{}` compares model `{}` with itself",
                    c.task, c.model_a
                )));
            }
            if !tasks.contains_key(c.task.as_str()) {
                return Err(damaged(format!(
                    "a comparison names task `{}`, which the run's suite does not have",
                    c.task
                )));
            }
            let pair = if c.model_a < c.model_b {
                (c.model_a.as_str(), c.model_b.as_str())
            } else {
                (c.model_b.as_str(), c.model_a.as_str())
            };
            if !seen.insert((c.task.as_str(), pair.0, pair.1)) {
                return Err(damaged(format!(
                    "judge `{}` compares `{}` and `{}` on task `{}` more than once",
                    c.judge, pair.0, pair.1, c.task
                )));
            }
        }
        let outcome = match c.winner {
            Winner::ModelA => RowOutcome::Rated(StatOutcome::AWins),
            Winner::ModelB => RowOutcome::Rated(StatOutcome::BWins),
            Winner::Tie => RowOutcome::Rated(StatOutcome::Tie),
            Winner::BothBad => RowOutcome::Rated(StatOutcome::BothBad),
            Winner::Failed => RowOutcome::Failed,
        };
        rows.push(Row {
            a,
            b,
            outcome,
            task: tasks.get(c.task.as_str()).copied().unwrap_or(u32::MAX),
        });
    }
    let costs = model_cfgs
        .iter()
        .map(|m| {
            (
                output_cost(&outputs, &m.id),
                m.price_input_per_mtok.is_some(),
            )
        })
        .collect();
    let missing = manifest
        .extra
        .get("compare")
        .and_then(|c| c.get("missing_comparisons"))
        .and_then(|m| m.get(judge.as_str()))
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    // Compare stopped the judge as broken: asking it again pays for the same failures.
    let broken = manifest
        .judge_entry(&judge)
        .and_then(|e| e.get("stopped_as_broken"))
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    if missing > 0 && !args.from_labels {
        warnings.push(if broken {
            format!(
                "{missing} comparison(s) of judge `{judge}` are missing: compare stopped it as broken (its calls gave no verdict in the required format), and asking it again pays for the same failures; pick another judge, or fix its settings and judge into a new run"
            )
        } else {
            format!(
                "{missing} comparison(s) of judge `{judge}` are missing (compare or generate did not finish, or generate was a trial with --limit); finish them (`judge generate --run {run}{model_flags}`, then `judge compare --run {run} --judge {judge}`) before trusting this leaderboard"
            )
        });
    }
    if !args.from_labels {
        warnings.extend(by_failure_note(&mine, run, &model_flags));
    }
    // Prompt hash → judgments that used it; the header shows the most used one.
    let mut prompt_hashes: std::collections::BTreeMap<String, usize> =
        std::collections::BTreeMap::new();
    let mut judging_cost = None;
    if judge != EXEC_JUDGE && !args.from_labels {
        let judgments: Vec<JudgmentBrief> = read_jsonl_repairing(&run_dir.file(JUDGMENTS_FILE))?;
        let priced = manifest
            .judge_entry(&judge)
            .and_then(|e| e.get("price_input_per_mtok"))
            .is_some_and(|p| !p.is_null());
        judging_cost = Some(JudgingCost::of(&judgments, &judge, priced));
        let stale = unreflected_judgments(&mine, &judgments, &judge);
        if stale > 0 {
            warnings.push(format!(
                "judgments.jsonl has verdicts for {stale} comparison(s) that comparisons.jsonl does not show yet (a compare was stopped before it finished): run `judge compare --run {run} --judge {judge}` (with `{judge}` in {}) to bring them in (recorded verdicts make no new calls)", crate::config_name()
            ));
        }
        // Verdicts only: a failed judgment decided nothing under its prompt.
        for j in judgments
            .into_iter()
            .filter(|j| j.judge == judge && matches!(j.verdict, JudgmentVerdict::Parsed(_)))
        {
            *prompt_hashes.entry(j.prompt_sha256).or_default() += 1;
        }
    }
    if prompt_hashes.len() > 1 {
        warnings.push(format!(
            "judge `{judge}` judged this run with {} different prompts ({}); they are ranked together",
            prompt_hashes.len(),
            prompt_hashes
                .keys()
                .map(|h| crate::short_hash(h))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let prompt_sha256 = prompt_hashes
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(h, _)| h);
    let prompt = match &prompt_sha256 {
        Some(sha) => {
            let path = run_dir.file(&format!("prompts/{sha}.md"));
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("failed to read `{}`", path.display()))?;
            // The verdicts name the prompt by this hash: a file that no longer has it is not
            // the prompt they were given.
            if crate::sha256_hex(&text) != *sha {
                warnings.push(format!(
                    "`{}` no longer matches its hash (edited since the judge used it): the prompt the verdicts were given is not in the run any more",
                    path.display()
                ));
            }
            Some(text)
        }
        None => None,
    };
    let header = Header {
        source: format!("run {run}"),
        order_flip_rate: if judge == EXEC_JUDGE || args.from_labels {
            None
        } else {
            flip_rate(mine.iter().copied())
        },
        judge: Some(judge),
        prompt_sha256,
        judging_cost,
        seed: args.seed.unwrap_or(manifest.seed),
        resamples: args.resamples,
        bootstrap_unit: args.bootstrap_unit.into(),
        prior: args.prior,
    };
    run_dir.create_and_lock()?;
    let exec_judged = header.judge.as_deref() == Some(EXEC_JUDGE) && !args.from_labels;
    if exec_judged {
        // Of the suite the run recorded: an edited one read here may have other checks.
        warnings.extend(crate::commands::compare::recorded_coverage_note(
            &manifest.suite,
            &suite,
        ));
        warnings.extend(crate::commands::check::exec_policy_notes(
            &manifest,
            &crate::engine::run_dir::read_jsonl_skipping_torn(
                &run_dir.file(crate::commands::check::CHECKS_FILE),
            )?,
        ));
    }
    warnings.extend(flip_warning(header.order_flip_rate));
    let unrated_hint = if args.from_labels {
        String::new()
    } else if broken {
        "; compare stopped this judge as broken (its calls gave no verdict in the required format): pick another judge, or fix its settings and judge into a new run".to_string()
    } else {
        unrated_hint(
            &mine,
            run,
            header.judge.as_deref().unwrap_or_default(),
            &model_flags,
        )
    };
    Ok((
        RankInput {
            models,
            rows,
            costs,
            header,
            warnings,
            unrated_hint,
        },
        run_dir,
        prompt,
    ))
}

/// What rank reads of a judgment (not the judge's reply, which can be long).
#[derive(serde::Deserialize)]
struct JudgmentBrief {
    task: String,
    judge: String,
    first: String,
    second: String,
    verdict: JudgmentVerdict,
    prompt_sha256: String,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    replaced: Option<crate::records::Replaced>,
}

impl JudgingCost {
    /// What `judge`'s judgments of the run cost: the latest record of each call (a compare
    /// stopped hard leaves earlier ones too), with what the failed records it replaced were
    /// billed.
    fn of(judgments: &[JudgmentBrief], judge: &str, priced: bool) -> JudgingCost {
        if !priced {
            return JudgingCost::Unpriced;
        }
        let mut latest: HashMap<(&str, &str, &str), &JudgmentBrief> = HashMap::new();
        for j in judgments.iter().filter(|j| j.judge == judge) {
            latest.insert((&j.task, &j.first, &j.second), j);
        }
        let costs = latest
            .values()
            .map(|j| crate::records::total_cost(j.cost_usd, j.replaced));
        JudgingCost::Priced {
            // `+ 0.0`: the sum of nothing is -0.0, which JSON would show.
            usd: costs.clone().flatten().sum::<f64>() + 0.0,
            unknown: costs.filter(Option::is_none).count(),
        }
    }
}

/// How many of `judge`'s pairs the latest judgments decide otherwise than `comparisons` (its
/// rows of comparisons.jsonl) say, or decide where comparisons.jsonl has no row: what a compare
/// stopped hard (`kill -9`) leaves, since it appends judgments as they come and rewrites
/// comparisons.jsonl only at its end. A pair counts when both orderings have a judgment and
/// neither side's row is decided by failure.
fn unreflected_judgments(
    comparisons: &[&ComparisonRecord],
    judgments: &[JudgmentBrief],
    judge: &str,
) -> usize {
    // The latest judgment of each (task, first, second): later lines replace earlier ones.
    let mut latest: HashMap<(&str, &str, &str), &JudgmentBrief> = HashMap::new();
    for j in judgments.iter().filter(|j| j.judge == judge) {
        latest.insert((j.task.as_str(), j.first.as_str(), j.second.as_str()), j);
    }
    let verdict = |task: &str, first: &str, second: &str| {
        latest.get(&(task, first, second)).map(|j| match j.verdict {
            JudgmentVerdict::Parsed(v) => Some(v),
            JudgmentVerdict::Failed(_) => None,
        })
    };
    let mut rows: HashMap<(&str, &str, &str), &ComparisonRecord> = HashMap::new();
    for c in comparisons {
        rows.insert((c.task.as_str(), c.model_a.as_str(), c.model_b.as_str()), c);
        rows.insert((c.task.as_str(), c.model_b.as_str(), c.model_a.as_str()), c);
    }
    let mut stale = 0;
    for &(task, x, y) in latest.keys() {
        // Each pair once, and only with both orderings judged.
        if x >= y || !latest.contains_key(&(task, y, x)) {
            continue;
        }
        let Some(row) = rows.get(&(task, x, y)) else {
            stale += 1;
            continue;
        };
        if row.by_failure {
            continue;
        }
        let (a, b) = (row.model_a.as_str(), row.model_b.as_str());
        let flat = |v: Option<Option<crate::verdict::Verdict>>| v.flatten();
        let (winner, flipped) =
            crate::judging::combine(flat(verdict(task, a, b)), flat(verdict(task, b, a)));
        if (winner, flipped) != (row.winner, row.flipped) {
            stale += 1;
        }
    }
    stale
}

/// What the leaderboard must say of comparisons decided by a failed generation (the failed
/// side loses without a judge; both failed is both bad): in the columns they are losses and
/// both-bad like any other, so the note names each model's count, most first.
/// `models`: the `--model` flags that keep `judge run` to the run's models
/// ([`run_model_flags`]).
fn by_failure_note(comparisons: &[&ComparisonRecord], run: &str, models: &str) -> Option<String> {
    let mut lost: BTreeMap<&str, usize> = BTreeMap::new();
    let mut both = 0;
    for c in comparisons.iter().filter(|c| c.by_failure) {
        match c.winner {
            Winner::ModelA => *lost.entry(c.model_b.as_str()).or_default() += 1,
            Winner::ModelB => *lost.entry(c.model_a.as_str()).or_default() += 1,
            _ => both += 1,
        }
    }
    if lost.is_empty() && both == 0 {
        return None;
    }
    let mut counts: Vec<(&str, usize)> = lost.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let total: usize = counts.iter().map(|(_, n)| n).sum::<usize>() + both;
    let mut parts: Vec<String> = counts
        .iter()
        .map(|(m, n)| format!("`{m}` lost {n}"))
        .collect();
    if both > 0 {
        parts.push(format!("{both} had both outputs failed (both bad)"));
    }
    let counted = match (counts.is_empty(), both > 0) {
        (false, false) => "their losses count like any other",
        (false, true) => {
            "their losses count like any other, and the both-bad ones are counted but not rated"
        }
        (true, _) => "they are counted but not rated",
    };
    Some(format!(
        "{total} comparison(s) were decided by failed generations, not by the judge: {}; {counted} (outputs.jsonl says why each failed; to ask again and judge the new outputs: `judge run --run {run}{models} --retry-failed`)",
        parts.join(", ")
    ))
}

/// An order-flip rate above which the leaderboard warns that position, not content, decides.
const MUCH_FLIPPING: f64 = 0.5;

/// The judge name human labels are ranked under.
pub const HUMAN_JUDGE: &str = "human-labels";

/// Every labeller's effective labels as comparisons, and how many items more than one
/// labeller labelled; a labeller's labels given after `--reveal` add a warning.
fn comparisons_from_labels(
    run_dir: &RunDir,
    warnings: &mut Vec<String>,
) -> anyhow::Result<(Vec<ComparisonRecord>, usize)> {
    let sample: Vec<crate::label::SampleItem> =
        run_dir.read_jsonl(&run_dir.file(crate::commands::label::SAMPLE_FILE))?;
    let by_id: HashMap<&str, &crate::label::SampleItem> =
        sample.iter().map(|s| (s.item.as_str(), s)).collect();
    let mut out = Vec::new();
    let mut labels_per_item: HashMap<String, usize> = HashMap::new();
    for (who, records) in &crate::commands::label::read_all_labels(run_dir)? {
        let after_reveal = crate::label::labels_after_reveal(&sample, records);
        warnings.extend(crate::commands::label::after_reveal_warning(
            who,
            after_reveal,
        ));
        for (item, winner) in crate::label::effective_labels(records) {
            let (Some(winner), Some(s)) = (winner, by_id.get(item.as_str())) else {
                continue;
            };
            *labels_per_item.entry(item.clone()).or_default() += 1;
            out.push(ComparisonRecord {
                task: s.task.clone(),
                judge: HUMAN_JUDGE.into(),
                model_a: s.model_a.clone(),
                model_b: s.model_b.clone(),
                winner,
                flipped: false,
                by_failure: false,
            });
        }
    }
    let shared = labels_per_item.values().filter(|&&n| n > 1).count();
    Ok((out, shared))
}

fn output_cost(outputs: &[OutputBrief], model: &str) -> Option<f64> {
    outputs
        .iter()
        .filter(|o| o.model == model)
        .map(|o| crate::records::total_cost(o.cost_usd, o.replaced))
        .sum()
}

/// Streams a battles file (JSON Lines) into compact rows; memory grows with models and tasks,
/// and 16 bytes per row.
pub fn from_file(path: &Path, args: &RankArgs) -> anyhow::Result<RankInput> {
    // `-` is standard input (`zcat battles.jsonl.gz | judge rank --comparisons -`).
    let stdin = path == Path::new("-");
    let shown = if stdin { Path::new("<stdin>") } else { path };
    if stdin && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Err(JudgeError::usage(
            "--comparisons - reads battles from standard input, which is a terminal here; pipe a file into it (`gzip -dc battles.json.gz | judge rank --comparisons -`)",
        )
        .into());
    }
    if !stdin && path.is_dir() {
        return Err(JudgeError::usage(format!(
            "comparisons file `{}` is a folder; give a battles file (a run's is `runs/<run>/comparisons.jsonl`, or rank the run with --run)",
            path.display()
        ))
        .into());
    }
    let mut file: Box<dyn Read + Send> = if stdin {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(path).map_err(|e| {
            JudgeError::usage(format!(
                "cannot read comparisons file `{}`: {e}",
                path.display()
            ))
        })?)
    };
    let path = shown;
    // Enough of the start to tell JSON Lines from an array, then the rest.
    let mut head = Vec::with_capacity(4096);
    (&mut file)
        .take(4096)
        .read_to_end(&mut head)
        .with_context(|| format!("failed to read `{}`", path.display()))?;
    let shape = battles_shape(&head);
    let reader = std::io::Cursor::new(head).chain(file);
    let unit = args.bootstrap_unit.into();
    let parsed = match shape {
        BattlesShape::Lines => parse_battles_judged(reader, unit),
        BattlesShape::Array => parse_battles_judged(ArrayLines::new(reader), unit),
        BattlesShape::Gzip if stdin => {
            return Err(JudgeError::usage(
                "standard input is gzip-compressed; decompress it on the way (`gzip -dc FILE | judge rank --comparisons -`)",
            )
            .into());
        }
        BattlesShape::Gzip => {
            return Err(JudgeError::usage(format!(
                "`{}` is gzip-compressed; decompress it first (`gzip -dc {} > battles.jsonl`, or `gzip -dc {} | judge rank --comparisons -`)",
                path.display(),
                path.display(),
                path.display()
            ))
            .into());
        }
    };
    let (models, rows, judge, flips) = parsed.map_err(|e| match e {
        BattlesError::Line { line, message } if shape == BattlesShape::Array => JudgeError::usage(
            format!("{}: element {line} of the array: {message}", path.display()),
        )
        .into(),
        BattlesError::Line { line, message } => {
            JudgeError::usage(format!("{}:{line}: {message}", path.display())).into()
        }
        e @ BattlesError::SeveralJudges(_) => {
            JudgeError::usage(format!("{}: {e}", path.display())).into()
        }
        // The array reader's verdicts on the file's shape.
        BattlesError::Io(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            JudgeError::usage(format!("{}: {e}", path.display())).into()
        }
        BattlesError::Io(e) => {
            anyhow::Error::new(e).context(format!("failed to read `{}`", path.display()))
        }
    })?;
    let header = Header {
        source: path.display().to_string(),
        // judge's own comparisons name their judge; an Arena file does not.
        // From the file's own `flipped` (the exec judge cannot flip).
        order_flip_rate: if judge.as_deref() == Some(EXEC_JUDGE) {
            None
        } else {
            flips.rate()
        },
        judge,
        prompt_sha256: None,
        judging_cost: None,
        seed: args.seed.unwrap_or(DEFAULT_SEED),
        resamples: args.resamples,
        bootstrap_unit: args.bootstrap_unit.into(),
        prior: args.prior,
    };
    let warnings = flip_warning(header.order_flip_rate)
        .into_iter()
        .chain(repeat_warning(flips.repeated))
        .chain(spaced_names_warning(&models))
        .collect();
    Ok(RankInput {
        costs: vec![(None, false); models.len()],
        models,
        rows,
        warnings,
        header,
        unrated_hint: String::new(),
    })
}

/// What to do about a run whose judge rated no comparison: the judge's failed calls can be
/// asked again, and so can the failed generations that decided comparisons without it (a
/// judge's retry would make no call for those); both bad by the judge's verdicts is its
/// answer, with nothing to ask again.
fn unrated_hint(mine: &[&ComparisonRecord], run: &str, judge: &str, models: &str) -> String {
    let by_failure = mine.iter().filter(|c| c.by_failure).count();
    let failed = mine
        .iter()
        .filter(|c| !c.by_failure && c.winner == Winner::Failed)
        .count();
    let mut hint = String::new();
    if failed > 0 {
        hint.push_str(&format!(
            "; {failed} comparison(s) failed for the judge: `judge compare --run {run} --judge {judge} --retry-failed` asks again"
        ));
    }
    if by_failure > 0 {
        hint.push_str(&format!(
            "; {by_failure} comparison(s) were decided by failed generations, with no judge call: `judge run --run {run}{models} --judge {judge} --retry-failed` asks for the outputs again and judges them"
        ));
    }
    if hint.is_empty() {
        hint.push_str("; every comparison is both bad by the judge's verdicts");
    }
    hint
}

/// Model names of a battles file that differ only by surrounding whitespace (`gpt-4o ` and
/// `gpt-4o`): ranked as two models, which is seldom what was meant.
fn spaced_names_warning(models: &[String]) -> Option<String> {
    let mut by_trimmed: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for m in models {
        by_trimmed.entry(m.trim()).or_default().push(m);
    }
    let groups: Vec<String> = by_trimmed
        .values()
        .filter(|names| names.len() > 1)
        .map(|names| {
            names
                .iter()
                .map(|n| format!("`{}`", crate::report::printable(n)))
                .collect::<Vec<_>>()
                .join(" and ")
        })
        .collect();
    (!groups.is_empty()).then(|| format!(
        "model names that differ only by surrounding spaces are ranked as different models: {}; if each is one model, fix the names in the file",
        groups.join("; ")
    ))
}

/// A file of judge's own comparisons in which a task's pair of models comes more than once:
/// a run holds one comparison of each, so the file pools several runs (perhaps under other
/// prompts or criteria), and each repeated question counts as more evidence than it is.
fn repeat_warning(repeated: u64) -> Option<String> {
    (repeated > 0).then(|| format!(
        "{repeated} row(s) repeat a task and pair of models that an earlier row already has: a run holds one comparison of each, so this file pools several runs (under other prompts or criteria?) and counts those questions twice, which narrows every interval; rank one run with `judge rank --run RUN`, or keep one row per task and pair"
    ))
}

/// The warning for an order-flip rate above [`MUCH_FLIPPING`].
fn flip_warning(rate: Option<f64>) -> Option<String> {
    let rate = rate.filter(|&r| r > MUCH_FLIPPING)?;
    Some(format!(
        "the judge gave opposite verdicts for the two orderings in {:.1}% of the comparisons it judged in both (each recorded as a tie): its verdicts follow the answers' order more than the answers, which pulls every rating together; try another judge or prompt",
        rate * 100.0
    ))
}

/// Refuses comparisons decided by a failed generation that the outputs as they are now would
/// decide otherwise (`generate --retry-failed` after `compare`): ranked as they are, they
/// would count losses (or both-bad) that no longer hold.
fn refuse_stale_failures(
    comparisons: &[&ComparisonRecord],
    outputs: &[OutputBrief],
    run: &str,
) -> Result<(), JudgeError> {
    let failed: std::collections::HashSet<(&str, &str)> = outputs
        .iter()
        .filter(|o| o.status == crate::records::Status::Failed)
        .map(|o| (o.task.as_str(), o.model.as_str()))
        .collect();
    let ok = |task: &str, model: &str| !failed.contains(&(task, model));
    let stale = comparisons
        .iter()
        .filter(|c| {
            c.by_failure
                && crate::judging::decide_by_failure(
                    ok(&c.task, &c.model_a),
                    ok(&c.task, &c.model_b),
                ) != Some(c.winner)
        })
        .count();
    if stale > 0 {
        return Err(JudgeError::usage(format!(
            "run `{run}` has {stale} comparison(s) decided by a failed generation that the outputs no longer bear out (generated since: generate --retry-failed?); run `judge compare --run {run}` to bring them up to date, then rank"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    fn output(model: &str, ok: bool) -> OutputBrief {
        serde_json::from_value(serde_json::json!({
            "task": "t", "model": model, "status": if ok { "ok" } else { "failed" },
            "text": if ok { Some("x") } else { None },
            "settings": {"max_tokens": 1, "temperature": 0.0, "style": "none", "instruction": ""},
            "from_cache": false, "attempts": 1,
        }))
        .expect("an output record")
    }

    fn by_failure(winner: Winner) -> ComparisonRecord {
        ComparisonRecord {
            task: "t".into(),
            judge: "j".into(),
            model_a: "a".into(),
            model_b: "b".into(),
            winner,
            flipped: false,
            by_failure: true,
        }
    }

    #[test]
    fn the_by_failure_note_names_each_loser_most_first() {
        let judged = ComparisonRecord {
            by_failure: false,
            ..by_failure(Winner::ModelA)
        };
        assert_eq!(by_failure_note(&[&judged], "r", ""), None);
        let b_lost = by_failure(Winner::ModelA);
        let a_lost = by_failure(Winner::ModelB);
        let both = by_failure(Winner::BothBad);
        let note = by_failure_note(&[&a_lost, &b_lost, &b_lost, &both, &judged], "r", "").unwrap();
        assert!(
            note.starts_with(
                "4 comparison(s) were decided by failed generations, not by the judge: `b` lost 2, `a` lost 1, 1 had both outputs failed (both bad);"
            ),
            "{note}"
        );
        assert!(
            note.contains("judge run --run r --retry-failed")
                && note.contains("their losses count like any other, and the both-bad ones are counted but not rated"),
            "{note}"
        );
        // Both bad alone: no losses to speak of.
        let note = by_failure_note(&[&both], "r", " --model a").unwrap();
        assert!(
            note.contains("1 had both outputs failed (both bad); they are counted but not rated (")
                && note.contains("`judge run --run r --model a --retry-failed`"),
            "{note}"
        );
    }

    /// A comparison decided by failure stands only while the outputs still decide it so:
    /// both failed and one retried successfully is as stale as one failed and retried.
    #[test]
    fn failures_that_no_longer_hold_are_refused() {
        let cases = [
            (Winner::BothBad, (false, false), true),
            (Winner::BothBad, (true, false), false),
            (Winner::ModelA, (true, false), true),
            (Winner::ModelA, (true, true), false),
            (Winner::ModelB, (true, false), false),
        ];
        for (winner, (a_ok, b_ok), stands) in cases {
            let outputs = [output("a", a_ok), output("b", b_ok)];
            let c = by_failure(winner);
            let result = refuse_stale_failures(&[&c], &outputs, "r");
            assert_eq!(result.is_ok(), stands, "{winner:?} with {a_ok}/{b_ok}");
        }
    }
}
