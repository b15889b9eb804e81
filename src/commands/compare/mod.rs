//! `judge compare`: every task × unordered model pair judged blind, in both orderings as two
//! separate cached calls, verdicts parsed strictly; writes `judgments.jsonl` (appended as calls
//! finish) and `comparisons.jsonl` (derived, rewritten at the end for the judges of this
//! invocation; other judges' comparisons are kept).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use serde_json::json;

use crate::cache::Cache;
use crate::cli::{Cli, CompareArgs};
use crate::commands::check::{CHECKS_FILE, CheckRecord, CheckTable, ensure_checks, sandbox_policy};
use crate::config::{Config, ModelConfig, ProviderKind, load_config};
use crate::engine::calls::{CacheUse, build_http_providers, cached_call, run_recorded};
use crate::engine::manifest::Manifest;
use crate::engine::run_dir::{RunDir, read_jsonl_repairing, write_json_atomic, write_jsonl_atomic};
use crate::engine::scheduler::{Group, Stop, StopReason};
use crate::error::{JudgeError, Outcome};
use crate::judging::{
    EXEC_FAMILY, EXEC_JUDGE, combine, decide_by_failure, family_conflict, judge_agreement,
    shared_vendor, vendor_family,
};
use crate::prompt::{
    Order, PairwiseInput, PairwiseTemplate, fence_nonce, render_pairwise, template_sha256,
};
use crate::provider::http::HttpProvider;
use crate::provider::{ChatRequest, ErrorClass, Message, to_wire};
use crate::records::{
    ComparisonRecord, FailedMarker, JudgmentRecord, JudgmentVerdict, OutputRecord, RecordedError,
    Replaced, Status, Winner,
};
use crate::report::progress::Progress;
use crate::report::summary::compare_summary;
use crate::suite::Suite;
use crate::verdict::parse_verdict;

mod calls;
mod content;
mod exec;
mod plan;
mod settings;

use calls::{group_by_provider, judge_call, pending_calls};
use exec::exec_checks;
pub(crate) use exec::{
    exec_coverage_note, recorded_coverage_note, refuse_exec_without_checks, unchecked_tasks,
};
pub(crate) use settings::{
    as_recorded, judged_by, llm_judges, refuse_changed_judge_setup, refuse_changed_prompt,
    refuse_own_family, resolve_judges, warn_shared_makers,
};
use settings::{keep_recorded_judge_prices, missing_comparisons, record_compare_section};

/// The tool-owned judge template (DESIGN rule 8), compiled in so every install judges alike.
pub const PAIRWISE_TEMPLATE: &str = include_str!("../../../prompts/pairwise.md");
/// Judgment records of a run.
pub const JUDGMENTS_FILE: &str = "judgments.jsonl";
/// Comparison records of a run.
pub const COMPARISONS_FILE: &str = "comparisons.jsonl";

/// A judge taking part in the comparison.
#[derive(Debug, Clone)]
pub(crate) enum Judge {
    /// An LLM judge from `[[judges]]`.
    Llm(ModelConfig),
    /// The execution judge: decides from `judge check` results.
    Exec,
}

impl Judge {
    fn id(&self) -> &str {
        match self {
            Judge::Llm(m) => &m.id,
            Judge::Exec => EXEC_JUDGE,
        }
    }
    fn family(&self) -> &str {
        match self {
            Judge::Llm(m) => &m.family,
            Judge::Exec => EXEC_FAMILY,
        }
    }
}

/// One judge call: a judge, a task, a pair and an ordering.
#[derive(Debug, Clone)]
struct Call {
    judge: usize,
    task: usize,
    model_a: String,
    model_b: String,
    order: Order,
    /// A retry of a recorded failure (`--retry-failed`): asks the judge again even when its
    /// earlier reply is cached (an unparsable verdict comes from a cached, well-formed reply).
    retry: bool,
    /// A retry of a recorded reply that broke the format (see [`calls::JudgeHealth`]).
    retry_of_unparsable: bool,
    /// What the failed record it replaces passes on (its billed usage and cost).
    replaces: Option<Replaced>,
}

impl Call {
    /// The models shown as Answer 1 and Answer 2.
    fn shown(&self) -> (&str, &str) {
        self.order
            .arrange((self.model_a.as_str(), self.model_b.as_str()))
    }
}

struct Ctx {
    config: Config,
    suite: Suite,
    /// What the run's models were told ([`crate::commands::generate::model_brief`]), shown to
    /// the judge as the brief the answers were written to.
    brief: String,
    judges: Vec<Judge>,
    outputs: BTreeMap<(String, String), OutputRecord>,
    template: PairwiseTemplate,
    prompt_sha256: String,
    http: BTreeMap<String, HttpProvider>,
    cache: Cache,
    refresh: bool,
    seed: u64,
    stop: Arc<Stop>,
    /// Check results, when the execution judge takes part.
    checks: Option<CheckTable>,
    /// Per judge (by index): whether it gives verdicts at all.
    health: Vec<calls::JudgeHealth>,
    /// The limits and sandbox of those checks ([`crate::commands::check::checks_basis`]).
    exec_basis: Option<serde_json::Value>,
    /// What first attempts of calls stopped before their retry cost, and how many of them
    /// gave no usage: spent, but in no record.
    unrecorded: std::sync::Mutex<(f64, usize)>,
}

/// The run's inputs, loaded and checked before anything is written.
struct Inputs {
    config: Config,
    suite: Suite,
    manifest: Manifest,
    run_dir: RunDir,
    outputs: Vec<OutputRecord>,
    models: Vec<ModelConfig>,
    judges: Vec<Judge>,
}

/// Warns when the project's `prompts/pairwise.md` differs from the template compiled into
/// judge: an edit there changes nothing (the template is the tool's, DESIGN §2.8), which a
/// user who edited it would otherwise not learn.
fn warn_edited_template(root: &std::path::Path) {
    let path = root.join("prompts").join("pairwise.md");
    if let Ok(text) = std::fs::read_to_string(&path)
        && text.replace("\r\n", "\n") != PAIRWISE_TEMPLATE
    {
        eprintln!(
            "warning: `{}` differs from the judge template built into judge, which is the one used (it is the tool's, so that every install judges alike; `judge rank --show-prompt` prints what a run used): the edit has no effect",
            path.display()
        );
    }
}

/// Runs `judge compare`.
pub fn run(cli: &Cli, args: &CompareArgs) -> anyhow::Result<Outcome> {
    let mut inputs = load_inputs(cli, &args.run, &args.judges, args.dry_run)?;
    let judgments_path = inputs.run_dir.file(JUDGMENTS_FILE);
    // Read as the run holds it: repaired under this process's lock, only skipping a torn
    // line for a dry run, which takes no lock.
    let existing: Vec<JudgmentRecord> = inputs.run_dir.read_jsonl(&judgments_path)?;
    refuse_changed_judge_setup(
        &inputs.config,
        &inputs.manifest,
        inputs.run_dir.name(),
        &inputs.judges,
        &judged_by(&existing),
    )?;
    keep_recorded_judge_prices(
        &mut inputs.judges,
        &inputs.manifest,
        inputs.run_dir.name(),
        &judged_by(&existing),
    );
    // A dry run sends nothing, so needs no API key (a budget is often planned before one).
    let http = if args.dry_run {
        BTreeMap::new()
    } else {
        build_http_providers(&inputs.config, &llm_judges(&inputs.judges))?
    };
    if let Some(usd) = args.max_cost {
        // A judge that has judged in the run is costed at the price the run keeps for it.
        let judged = judged_by(&existing);
        let kept = crate::engine::budget::Kept {
            run: inputs.run_dir.name(),
            by: &|id| judged.contains(id),
            what: "judge",
        };
        // A judge with no call to make (the calls this compare would make, by the rule that
        // makes them) sends nothing to count, and needs no price.
        let calls = calls::pending_calls_of(
            &inputs.suite,
            &inputs.judges,
            &inputs.models,
            &inputs.outputs,
            &existing,
            args.retry_failed,
        );
        let asks: BTreeSet<&str> = calls.iter().map(|c| inputs.judges[c.judge].id()).collect();
        let payers = llm_judges(&inputs.judges)
            .into_iter()
            .filter(|m| asks.contains(m.id.as_str()));
        crate::engine::budget::refuse_unpriced(payers, Some(kept))?;
        crate::engine::budget::limit(usd);
    }
    if !llm_judges(&inputs.judges).is_empty() {
        warn_edited_template(&inputs.config.root);
        for w in content::content_warnings(&inputs.suite, &inputs.manifest, &inputs.outputs) {
            eprintln!("warning: {w}");
        }
    }
    let template =
        PairwiseTemplate::parse(PAIRWISE_TEMPLATE).expect("the shipped template is valid (tested)");
    // The models' brief as the run generated it (its settings), not as judge.toml says now.
    let brief = crate::commands::generate::run_brief(&inputs.suite, &inputs.manifest);
    let (prompt_sha256, prompt_text) = template_sha256(&template, &brief, &inputs.suite.criteria);
    refuse_changed_prompt(
        &existing,
        &inputs.judges,
        &prompt_sha256,
        inputs.run_dir.name(),
    )?;

    // A dry run reads what the run holds, unlocked, and writes nothing.
    let dry_run = args.dry_run;
    if !dry_run {
        inputs.run_dir.create_and_lock()?;
        crate::interrupt::install();
        crate::interrupt::on_quit_say(crate::interrupt::resume_note(
            inputs.run_dir.name(),
            !llm_judges(&inputs.judges).is_empty(),
        ));
        let prompt_path = inputs.run_dir.file(&format!("prompts/{prompt_sha256}.md"));
        // The exec judge reads no prompt: an exec-only run records none.
        if !llm_judges(&inputs.judges).is_empty() && !prompt_path.exists() {
            crate::cache::write_atomic(&prompt_path, prompt_text.as_bytes())
                .with_context(|| format!("failed to write `{}`", prompt_path.display()))?;
        }
    }
    let cache = Cache::new(inputs.config.cache_dir());
    let exec = inputs.judges.iter().any(|j| matches!(j, Judge::Exec));
    let (checks, exec_basis) = if exec && !dry_run {
        let (table, ran_under, records) = exec_checks(&inputs, &cache, cli.quiet)?;
        if let Some(policy) = ran_under {
            crate::commands::check::record_policy(&mut inputs.manifest, &policy);
        }
        // What the exec verdicts rest on, kept with them: a later `judge check` under other
        // limits changes checks.jsonl and the manifest's check section, not these verdicts.
        let basis = crate::commands::check::checks_basis(&inputs.manifest, &records);
        (Some(table), Some(basis))
    } else {
        (None, None)
    };
    // The judges and their settings are recorded before the first call: a compare killed on
    // its first pass leaves them for the next one to hold to.
    let comparisons: Vec<ComparisonRecord> = inputs
        .run_dir
        .read_jsonl(&inputs.run_dir.file(COMPARISONS_FILE))?;
    let missing = missing_comparisons(&inputs.suite, &inputs.judges, &inputs.models, &comparisons);
    if !dry_run {
        record_compare_section(
            &mut inputs.manifest,
            &inputs.config,
            &inputs.judges,
            &judged_by(&existing),
            &prompt_sha256,
            &missing,
            None,
        );
        write_json_atomic(&inputs.run_dir.file("manifest.json"), &inputs.manifest)?;
    }
    let stop = Arc::new(Stop::with_deadline(
        args.deadline.map(|d| std::time::Instant::now() + d),
    ));
    let ctx = Arc::new(Ctx {
        health: (0..inputs.judges.len())
            .map(|_| Default::default())
            .collect(),
        brief,
        cache,
        checks,
        exec_basis,
        unrecorded: std::sync::Mutex::new((0.0, 0)),
        seed: inputs.manifest.seed,
        // Moved, not copied: the outputs (their texts) are the bulk of a compare's memory.
        outputs: std::mem::take(&mut inputs.outputs)
            .into_iter()
            .map(|o| ((o.task.clone(), o.model.clone()), o))
            .collect(),
        config: inputs.config,
        suite: inputs.suite,
        judges: inputs.judges,
        template,
        prompt_sha256,
        http,
        refresh: args.refresh,
        stop: stop.clone(),
    });
    let calls = pending_calls(&ctx, &inputs.models, &existing, args.retry_failed);
    if dry_run {
        print!("{}", plan::render_plan(&ctx, &calls, inputs.run_dir.name()));
        // The plan leaves their pairs out: judging them later costs more than it says.
        if let Some(warning) = ungenerated_warning(&ctx, &inputs.manifest, inputs.run_dir.name()) {
            eprintln!("warning: {warning}; this plan leaves them out");
        }
        return Ok(Outcome::Success);
    }
    crate::engine::calls::refresh_keys(calls::retry_keys(&ctx, &calls));

    let progress = Progress::new(calls.len() as u64, cli.quiet, "compare");
    let mut new_records = Vec::new();
    let work_ctx = ctx.clone();
    let result = run_recorded(
        group_by_provider(&ctx, calls),
        &stop,
        &judgments_path,
        move |call| judge_call(work_ctx.clone(), call),
        |rec: JudgmentRecord| {
            let failed = matches!(rec.verdict, JudgmentVerdict::Failed(_));
            // Unknown when a call made now gave no usage (the record's usage is then null).
            let spent = (rec.from_cache || rec.usage.is_some()).then_some(rec.spent_usd);
            let priced = ctx
                .judges
                .iter()
                .any(|j| matches!(j, Judge::Llm(m) if m.id == rec.judge && m.price_input_per_mtok.is_some()));
            progress.item_done(rec.from_cache, failed, spent, priced);
            new_records.push(rec);
        },
    );
    progress.finish();
    result?;
    finish(
        &ctx,
        &inputs.run_dir,
        &mut inputs.manifest,
        &inputs.models,
        existing,
        new_records,
    )
}

fn load_inputs(
    cli: &Cli,
    run: &str,
    wanted_judges: &[String],
    dry_run: bool,
) -> anyhow::Result<Inputs> {
    let config = load_config(&cli.config)?;
    let judges = resolve_judges(&config, wanted_judges)?;
    let exec = judges.iter().any(|j| matches!(j, Judge::Exec));
    // A suite the exec judge cannot judge is refused before the outputs are read.
    let wants_outputs = |suite: &Suite| {
        if exec {
            refuse_exec_without_checks(suite)?;
        }
        Ok(true)
    };
    let (run_dir, manifest, suite, outputs) = if dry_run {
        crate::commands::load_run_unlocked_if::<OutputRecord>(&config, run, &wants_outputs)?
    } else {
        crate::commands::load_run_if::<OutputRecord>(&config, run, &wants_outputs)?
    };
    let present: BTreeSet<&str> = outputs.iter().map(|o| o.model.as_str()).collect();
    let models: Vec<ModelConfig> = manifest
        .models
        .iter()
        .filter(|m| present.contains(m.id.as_str()))
        .cloned()
        .collect();
    if models.len() < 2 {
        return Err(JudgeError::usage(format!(
            "run `{run}` has outputs from {} model(s); pairwise comparison needs at least two (generate more models into it)",
            models.len()
        ))
        .into());
    }
    refuse_own_family(&config, &judges, &models)?;
    warn_shared_makers(&judges, &models);
    if exec && let Some(note) = exec_coverage_note(&suite) {
        eprintln!("warning: {note}");
    }
    Ok(Inputs {
        config,
        suite,
        manifest,
        run_dir,
        outputs,
        models,
        judges,
    })
}

/// What a run lacking outputs of its models says (their pairs are left out of the
/// comparisons), up to the advice to generate them; `None` when nothing is missing. A model
/// the run holds no output of at all (its generation stopped before the first) is left out
/// of the comparisons, and counted here while judge.toml still lists it (one that left the
/// config too is no part of the run, as `generate` has it).
fn ungenerated_warning(ctx: &Ctx, manifest: &Manifest, run: &str) -> Option<String> {
    let present: BTreeSet<&str> = ctx.outputs.keys().map(|(_, m)| m.as_str()).collect();
    let models: Vec<&ModelConfig> = manifest
        .models
        .iter()
        .filter(|m| {
            let has_outputs = present.contains(m.id.as_str());
            crate::commands::part_of_run(&ctx.config, &m.id, has_outputs)
        })
        .collect();
    let ungenerated = ctx
        .suite
        .tasks
        .iter()
        .flat_map(|t| models.iter().map(move |m| (t, m)))
        .filter(|(t, m)| !ctx.outputs.contains_key(&(t.id.clone(), m.id.clone())))
        .count();
    (ungenerated > 0).then(|| {
        format!(
            "run `{run}` lacks {ungenerated} output(s) (generation did not finish, or was a trial with --limit): their pairs are left out, not counted as failures; finish with `judge generate --run {run}{models}`",
            models = crate::commands::run_model_flags(&ctx.config, manifest),
        )
    })
}

/// Rewrites judgments (sorted), derives comparisons, updates the manifest, prints the summary.
fn finish(
    ctx: &Ctx,
    run_dir: &RunDir,
    manifest: &mut Manifest,
    models: &[ModelConfig],
    existing: Vec<JudgmentRecord>,
    new_records: Vec<JudgmentRecord>,
) -> anyhow::Result<Outcome> {
    let new_calls = crate::report::summary::NewCalls::of(&new_records);
    // What this invocation spent: the summary table's costs are the whole run's.
    let priced: BTreeSet<&str> = llm_judges(&ctx.judges)
        .into_iter()
        .filter(|m| m.price_input_per_mtok.is_some())
        .map(|m| m.id.as_str())
        .collect();
    let (unrecorded, unrecorded_unknown) = *ctx
        .unrecorded
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let spent_now: f64 = new_records.iter().map(|r| r.spent_usd).sum::<f64>() + unrecorded;
    let uncosted_now = new_records
        .iter()
        .filter(|r| !r.from_cache && (r.usage.is_none() || !priced.contains(r.judge.as_str())))
        .count()
        + unrecorded_unknown;
    let (judged_now, cached_now) = (
        new_records.len(),
        new_records.iter().filter(|r| r.from_cache).count(),
    );
    // Moved, not copied: a large run's judgments are held once.
    let mut latest: BTreeMap<(String, String, String, String), JudgmentRecord> = BTreeMap::new();
    for r in existing.into_iter().chain(new_records) {
        latest.insert(
            (
                r.judge.clone(),
                r.task.clone(),
                r.first.clone(),
                r.second.clone(),
            ),
            r,
        );
    }
    write_jsonl_atomic(&run_dir.file(JUDGMENTS_FILE), latest.values())?;
    // Judges not named this time keep their comparisons as they were.
    let judge_ids: Vec<&str> = ctx.judges.iter().map(Judge::id).collect();
    let mut comparisons: Vec<ComparisonRecord> =
        read_jsonl_repairing(&run_dir.file(COMPARISONS_FILE))?;
    comparisons.retain(|c: &ComparisonRecord| !judge_ids.contains(&c.judge.as_str()));
    comparisons.extend(derive_comparisons(ctx, models, &latest));
    write_jsonl_atomic(&run_dir.file(COMPARISONS_FILE), &comparisons)?;
    let missing = missing_comparisons(&ctx.suite, &ctx.judges, models, &comparisons);

    // Every pair of the run's judges, those of earlier invocations too (judges are often
    // tried one at a time), by id: a pair keeps its order whichever judge is run again.
    let run_judges: Vec<&str> = comparisons
        .iter()
        .map(|c| c.judge.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut agreements = Vec::new();
    for (i, j1) in run_judges.iter().enumerate() {
        for j2 in &run_judges[i + 1..] {
            agreements.push(judge_agreement(&comparisons, j1, j2));
        }
    }
    let judged: BTreeSet<String> = latest.keys().map(|k| k.0.clone()).collect();
    record_compare_section(
        manifest,
        &ctx.config,
        &ctx.judges,
        &judged,
        &ctx.prompt_sha256,
        &missing,
        Some(json!(agreements)),
    );
    // A judge stopped as broken says so in its entry, for rank's hints (asking it again pays
    // for the same failures); the next compare that judges with it rewrites the entry.
    for (judge, health) in ctx.judges.iter().zip(&ctx.health) {
        if health.is_broken()
            && let Some(entry) = manifest.judge_entry_mut(judge.id())
        {
            entry["stopped_as_broken"] = json!(true);
        }
    }
    if let Some(basis) = &ctx.exec_basis
        && let Some(exec) = manifest.judge_entry_mut(EXEC_JUDGE)
    {
        exec["checks"] = basis.clone();
    }
    write_json_atomic(&run_dir.file("manifest.json"), manifest)?;

    let ours: Vec<&JudgmentRecord> = latest
        .values()
        .filter(|j| judge_ids.contains(&j.judge.as_str()))
        .collect();
    let priced: Vec<&str> = llm_judges(&ctx.judges)
        .into_iter()
        .filter(|m| m.price_input_per_mtok.is_some())
        .map(|m| m.id.as_str())
        .collect();
    eprint!(
        "{}",
        compare_summary(&judge_ids, &priced, &ours, &new_calls, &comparisons)
    );
    let failed: Vec<&&JudgmentRecord> = ours
        .iter()
        .filter(|j| matches!(j.verdict, JudgmentVerdict::Failed(_)))
        .collect();
    // Judges stopped as broken are told of below: asking them again pays for the same.
    let broken: BTreeSet<&str> = ctx
        .judges
        .iter()
        .zip(&ctx.health)
        .filter(|(_, h)| h.is_broken())
        .map(|(j, _)| j.id())
        .collect();
    let failed_calls = failed.len();
    if failed_calls > 0 {
        // Only the judges that failed: the bare command would ask every configured judge.
        let judges: BTreeSet<&str> = failed
            .iter()
            .map(|j| j.judge.as_str())
            .filter(|j| !broken.contains(j))
            .collect();
        let flags: String = judges.iter().map(|j| format!(" --judge {j}")).collect();
        let again = if judges.is_empty() {
            String::new()
        } else {
            format!(
                "; to ask again: `judge compare --run {}{flags} --retry-failed`",
                run_dir.name()
            )
        };
        eprintln!(
            "{failed_calls} judgment(s) failed (each record's `error` in {JUDGMENTS_FILE} says why; the raw reply is kept){again}"
        );
    }
    let ungenerated = ungenerated_warning(ctx, manifest, run_dir.name());
    if let Some(warning) = &ungenerated {
        eprintln!(
            "warning: {warning}, then rerun `judge compare --run {}{}`",
            run_dir.name(),
            judge_ids
                .iter()
                .map(|j| format!(" --judge {j}"))
                .collect::<String>()
        );
    }
    for (judge, health) in ctx.judges.iter().zip(&ctx.health) {
        if health.is_broken() {
            eprintln!(
                "error: judge `{}` gave no verdict in the required format in {} calls of this compare (each asked twice), and none gave one: its calls not started were not made, so as not to pay for more. Its replies are the `raw` of its failed records in judgments.jsonl: a reply must end with a line `VERDICT: 1`, `2`, `TIE` or `BOTH_BAD`, one cut off by the token cap (`judge_max_tokens` under [run]) ends without it, and one quoting an answer's own verdict line holds two (a warning above says which answers hold one). Pick another judge, or fix its settings and judge into a new run",
                judge.id(),
                calls::BROKEN_JUDGE_CALLS
            );
        }
    }
    for (judge, n) in missing.iter().filter(|(_, n)| **n > 0) {
        let finish = if broken.contains(judge.as_str()) {
            "it was stopped as broken (above): rerunning compare with it pays for the same failures again".to_string()
        } else if ungenerated.is_some() {
            "finish generating first (above), then rerun compare".to_string()
        } else {
            format!(
                "`judge compare --run {} --judge {judge}` finishes them",
                run_dir.name()
            )
        };
        eprintln!(
            "warning: judge `{judge}` has {n} comparison(s) still missing (run `{}`); {finish}",
            run_dir.name()
        );
    }
    // The pairs this invocation's judges are in (the manifest keeps them all).
    for a in agreements.iter().filter(|a| {
        judge_ids.contains(&a.judge_1.as_str()) || judge_ids.contains(&a.judge_2.as_str())
    }) {
        let f = |x: Option<f64>| x.map_or("n/a".to_string(), |v| crate::report::fmt_float(v, 3));
        eprintln!(
            "judges {} vs {}: {} shared comparisons, agreement {}, Cohen's kappa {}",
            a.judge_1,
            a.judge_2,
            a.items,
            f(a.agreement),
            f(a.kappa)
        );
    }
    eprintln!(
        "run `{}`: {} comparisons of every judge so far in {}; this invocation: {judged_now} judgments, {cached_now} from cache, {} spent",
        run_dir.name(),
        comparisons.len(),
        run_dir.file(COMPARISONS_FILE).display(),
        crate::report::spent_phrase(spent_now, uncosted_now, "judgment"),
    );
    if unrecorded > 0.0 || unrecorded_unknown > 0 {
        eprintln!(
            "of that, {} went on first attempts of calls stopped before their retry (an unparsable reply asked again): not recorded; a rerun takes those replies from the cache",
            crate::report::spent_phrase(unrecorded, unrecorded_unknown, "attempt")
        );
    }
    // A check that ended in `error` makes the exec judge's comparison failed.
    let failed = ours
        .iter()
        .any(|j| matches!(j.verdict, JudgmentVerdict::Failed(_)))
        || comparisons.iter().any(|c| {
            c.judge == EXEC_JUDGE && judge_ids.contains(&EXEC_JUDGE) && c.winner == Winner::Failed
        });
    match ctx.stop.reason() {
        Some(StopReason::Interrupted) => Err(JudgeError::Interrupted(None).into()),
        Some(StopReason::Fatal(msg)) => Err(JudgeError::ProviderRefused(
            crate::error::after_refusal(&msg, run_dir.name()),
        )
        .into()),
        Some(StopReason::Io(msg)) => Err(anyhow::anyhow!(msg)),
        None if missing.values().any(|&n| n > 0)
            && let Some(note) = crate::engine::budget::reached_note() =>
        {
            eprintln!(
                "{note}; the calls not started wait for a rerun with --run {} (and a new --max-cost)",
                run_dir.name()
            );
            Ok(Outcome::ItemsFailed)
        }
        None if ctx.stop.past_deadline() => {
            eprintln!(
                "deadline reached: calls not started or cut short while retrying wait for a rerun with --run {}",
                run_dir.name()
            );
            Ok(Outcome::ItemsFailed)
        }
        // Comparisons still missing (outputs not generated yet, a model's included) leave the
        // run unfinished: not a success a script could take for a complete one.
        None if failed || ungenerated.is_some() || missing.values().any(|&n| n > 0) => {
            Ok(Outcome::ItemsFailed)
        }
        None => Ok(Outcome::Success),
    }
}

/// One comparison per judge × task × pair, in that order. Pairs whose judgments are not all
/// recorded yet (an interrupted run) are left out.
fn derive_comparisons(
    ctx: &Ctx,
    models: &[ModelConfig],
    judgments: &BTreeMap<(String, String, String, String), JudgmentRecord>,
) -> Vec<ComparisonRecord> {
    let mut out = Vec::new();
    for judge in &ctx.judges {
        for task in &ctx.suite.tasks {
            // The exec judge decides nothing, not even by failure, on a task without a test.
            if matches!(judge, Judge::Exec) && task.check.is_none() {
                continue;
            }
            for (i, a) in models.iter().enumerate() {
                for b in &models[i + 1..] {
                    let record = |winner, flipped, by_failure| ComparisonRecord {
                        task: task.id.clone(),
                        judge: judge.id().to_string(),
                        model_a: a.id.clone(),
                        model_b: b.id.clone(),
                        winner,
                        flipped,
                        by_failure,
                    };
                    // An output not generated yet (an unfinished `generate`) is no failure:
                    // the pair waits for it.
                    let output = |m: &str| ctx.outputs.get(&(task.id.clone(), m.to_string()));
                    let (Some(out_a), Some(out_b)) = (output(&a.id), output(&b.id)) else {
                        continue;
                    };
                    let (a_ok, b_ok) = (out_a.status == Status::Ok, out_b.status == Status::Ok);
                    if let Some(w) = decide_by_failure(a_ok, b_ok) {
                        out.push(record(w, false, true));
                        continue;
                    }
                    let verdict_of = |first: &str, second: &str| {
                        judgments.get(&(
                            judge.id().to_string(),
                            task.id.clone(),
                            first.to_string(),
                            second.to_string(),
                        ))
                    };
                    match judge {
                        Judge::Exec => {
                            let checks = ctx
                                .checks
                                .as_ref()
                                .expect("loaded when the exec judge takes part");
                            let winner = checks.outcome(&task.id, &a.id, &b.id);
                            out.push(record(winner, false, false));
                        }
                        Judge::Llm(_) => {
                            let (Some(ab), Some(ba)) =
                                (verdict_of(&a.id, &b.id), verdict_of(&b.id, &a.id))
                            else {
                                continue;
                            };
                            let parsed = |j: &JudgmentRecord| match j.verdict {
                                JudgmentVerdict::Parsed(v) => Some(v),
                                JudgmentVerdict::Failed(_) => None,
                            };
                            let (winner, flipped) = combine(parsed(ab), parsed(ba));
                            out.push(record(winner, flipped, false));
                        }
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(judge_url: &str, judge_model: &str, judge_family: &str) -> Config {
        let text = format!(
            r#"
[run]
suite = "demo"

[providers.lab]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1"

[providers.lab-again]
kind = "openai"
base_url = "{judge_url}"

[[models]]
id = "ours"
provider = "lab"
model = "lab-7b"
family = "lab"

[[judges]]
id = "j"
provider = "lab-again"
model = "{judge_model}"
family = "{judge_family}"
"#
        );
        crate::config::parse_config("judge.toml", &text).expect("valid config")
    }

    fn refusal(config: &Config) -> Option<String> {
        let judges = resolve_judges(config, &[]).unwrap();
        refuse_own_family(config, &judges, &config.models)
            .err()
            .map(|e| e.to_string())
    }

    /// A model judging its own answers is refused even when the config gives the judge another
    /// family name: same API, address and model, under any provider table's name.
    #[test]
    fn a_judge_that_is_a_ranked_model_under_another_family_is_refused() {
        let same = config("http://127.0.0.1:8000/v1", "lab-7b", "lab-inc");
        let says = refusal(&same).expect("refused");
        assert!(
            says.contains("judge `j` is `lab-7b` on the same API and address as ranked model `ours` (families `lab-inc` and `lab`)"),
            "{says}"
        );
        // Other spellings of that server are the same server.
        for url in [
            "http://localhost:8000/v1",
            "HTTP://LocalHost:8000/v1/",
            "http://[::1]:8000/v1",
            "http://[::ffff:127.0.0.1]:8000/v1",
            "http://127.0.0.1:8000/v1/",
        ] {
            assert!(
                refusal(&config(url, "lab-7b", "lab-inc")).is_some(),
                "{url}"
            );
        }
        // Another model at that address, or the same name at another address: the families
        // decide.
        assert_eq!(
            refusal(&config("http://127.0.0.1:8000/v1", "lab-70b", "lab-inc")),
            None
        );
        assert_eq!(
            refusal(&config("http://127.0.0.1:9000/v1", "lab-7b", "lab-inc")),
            None
        );
        let spelled = refusal(&config("http://127.0.0.1:9000/v1", "judge", "LAB"));
        assert!(
            spelled.is_some_and(|s| s.contains("is from the same family as ranked model `ours`"))
        );
        // The model name compared as the server reads it: case and spaces aside.
        assert!(refusal(&config("http://127.0.0.1:8000/v1", " LAB-7B", "lab-inc")).is_some());
        // A router's `vendor/model` name says its maker, whatever family it is given.
        let routed = refusal(&config("http://127.0.0.1:9000/v1", "lab/lab-70b", "router"));
        assert!(
            routed.is_some_and(|s| s.contains(
                "judge `j` (family `router`) and ranked model `ours` (family `lab`): the model name `lab/lab-70b` says its maker is `lab`"
            )),
        );
    }

    /// Two routers' names with one maker prefix, under families that name the routers: the
    /// families differ, so the pair passes rule 6, with a warning naming the prefix.
    #[test]
    fn a_judge_sharing_a_makers_prefix_with_a_model_is_warned_of() {
        let text = r#"
[run]
suite = "demo"

[providers.together]
kind = "openai"
base_url = "http://127.0.0.1:8000/v1"

[providers.openrouter]
kind = "openai"
base_url = "http://127.0.0.1:9000/v1"

[[models]]
id = "small"
provider = "together"
model = "meta-llama/Llama-3-8b-instruct"
family = "together"

[[models]]
id = "other"
provider = "together"
model = "Qwen/Qwen2-7B"
family = "together"

[[judges]]
id = "big"
provider = "openrouter"
model = "meta-llama/llama-3-70b-instruct"
family = "openrouter"
"#;
        let config = crate::config::parse_config("judge.toml", text).expect("valid config");
        assert_eq!(refusal(&config), None);
        let judges = resolve_judges(&config, &[]).unwrap();
        let warnings = settings::shared_maker_warnings(&judges, &config.models);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with(
                "judge `big` (`meta-llama/llama-3-70b-instruct`, family `openrouter`) and ranked model `small` (`meta-llama/Llama-3-8b-instruct`, family `together`) have names starting with the same maker `meta-llama/`"
            ),
            "{}",
            warnings[0]
        );
        assert!(!warnings[0].contains("`other`"), "{}", warnings[0]);
        // Families naming the makers: refused, as rule 6 says.
        let makers = text
            .replace("family = \"openrouter\"", "family = \"meta\"")
            .replace("family = \"together\"", "family = \"meta\"");
        let config = crate::config::parse_config("judge.toml", &makers).expect("valid config");
        assert!(refusal(&config).is_some());
    }
}
