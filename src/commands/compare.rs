//! `judge compare`: every task × unordered model pair judged blind, in both orderings as two
//! separate cached calls, verdicts parsed strictly; writes `judgments.jsonl` (appended as calls
//! finish) and `comparisons.jsonl` (derived, rewritten at the end for the judges of this
//! invocation; other judges' comparisons are kept).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::Context;
use serde::Deserialize;
use serde_json::json;

use crate::cache::Cache;
use crate::cli::{Cli, CompareArgs};
use crate::commands::check::{CHECKS_FILE, CheckRecord, CheckTable, ensure_checks, sandbox_policy};
use crate::config::{Config, ModelConfig, ProviderKind, load_config};
use crate::engine::calls::{build_http_providers, cached_call, run_recorded};
use crate::engine::manifest::Manifest;
use crate::engine::run_dir::{RunDir, read_jsonl_repairing, write_json_atomic, write_jsonl_atomic};
use crate::engine::scheduler::{Group, Stop, StopReason};
use crate::error::{JudgeError, Outcome};
use crate::judging::{
    EXEC_FAMILY, EXEC_JUDGE, combine, decide_by_failure, family_conflict, judge_agreement,
};
use crate::prompt::{
    Order, PairwiseInput, PairwiseTemplate, fence_nonce, render_pairwise, template_sha256,
};
use crate::provider::http::HttpProvider;
use crate::provider::{ChatRequest, ErrorClass, Message, to_wire};
use crate::records::{
    ComparisonRecord, FailedMarker, JudgmentRecord, JudgmentVerdict, OutputRecord, RecordedError,
    Status, Winner,
};
use crate::report::progress::Progress;
use crate::report::summary::compare_summary;
use crate::suite::Suite;
use crate::verdict::parse_verdict;

/// The tool-owned judge template (DESIGN rule 8), compiled in so every install judges alike.
pub const PAIRWISE_TEMPLATE: &str = include_str!("../../prompts/pairwise.md");
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
}

struct Ctx {
    config: Config,
    suite: Suite,
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

/// Runs `judge compare`.
pub fn run(cli: &Cli, args: &CompareArgs) -> anyhow::Result<Outcome> {
    let mut inputs = load_inputs(cli, &args.run, &args.judges)?;
    refuse_changed_judge_setup(&inputs)?;
    let http = build_http_providers(&inputs.config, &llm_judges(&inputs.judges))?;
    let template =
        PairwiseTemplate::parse(PAIRWISE_TEMPLATE).expect("the shipped template is valid (tested)");
    let (prompt_sha256, prompt_text) =
        template_sha256(&template, &inputs.suite.context, &inputs.suite.criteria);

    inputs.run_dir.create_and_lock()?;
    crate::interrupt::install();
    let prompt_path = inputs.run_dir.file(&format!("prompts/{prompt_sha256}.md"));
    // The exec judge reads no prompt: an exec-only run records none.
    if !llm_judges(&inputs.judges).is_empty() && !prompt_path.exists() {
        crate::cache::write_atomic(&prompt_path, prompt_text.as_bytes())
            .with_context(|| format!("failed to write `{}`", prompt_path.display()))?;
    }
    let cache = Cache::new(inputs.config.cache_dir());
    let checks = if inputs.judges.iter().any(|j| matches!(j, Judge::Exec)) {
        let (table, ran_under) = exec_checks(&inputs, &cache, cli.quiet)?;
        if let Some(policy) = ran_under {
            crate::commands::check::record_policy(&mut inputs.manifest, &policy);
        }
        Some(table)
    } else {
        None
    };
    let judgments_path = inputs.run_dir.file(JUDGMENTS_FILE);
    let existing: Vec<JudgmentRecord> = read_jsonl_repairing(&judgments_path)?;
    let stop = Arc::new(Stop::with_deadline(
        args.deadline.map(|d| std::time::Instant::now() + d),
    ));
    let ctx = Arc::new(Ctx {
        cache,
        checks,
        seed: inputs.manifest.seed,
        outputs: inputs
            .outputs
            .iter()
            .map(|o| ((o.task.clone(), o.model.clone()), o.clone()))
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
            let spent = (!rec.from_cache).then_some(rec.cost_usd).flatten();
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

fn load_inputs(cli: &Cli, run: &str, wanted_judges: &[String]) -> anyhow::Result<Inputs> {
    let config = load_config(&cli.config)?;
    let (run_dir, manifest, suite, outputs) = crate::commands::load_run(&config, run)?;
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
    let judges = resolve_judges(&config, wanted_judges)?;
    refuse_own_family(&judges, &models)?;
    if judges.iter().any(|j| matches!(j, Judge::Exec)) {
        refuse_exec_without_checks(&suite)?;
        if let Some(note) = exec_coverage_note(&suite) {
            eprintln!("warning: {note}");
        }
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

/// Judgments made under different settings must not be mixed in one run: once a run has
/// judgments, refuse a changed `[run] judge_max_tokens`, or a judge id that now names another
/// model or provider than the one recorded in the manifest.
fn refuse_changed_judge_setup(inputs: &Inputs) -> anyhow::Result<()> {
    let judged = std::fs::metadata(inputs.run_dir.file(JUDGMENTS_FILE)).is_ok_and(|m| m.len() > 0);
    let recorded = inputs.manifest.extra.get("compare");
    let (Some(recorded), true) = (recorded, judged) else {
        return Ok(());
    };
    let run = inputs.run_dir.name();
    let now = u64::from(inputs.config.run.judge_max_tokens);
    if let Some(before) = recorded.get("judge_max_tokens").and_then(|v| v.as_u64())
        && before != now
    {
        return Err(JudgeError::usage(format!(
            "[run] judge_max_tokens is {now} but run `{run}` was judged with {before}; judgments made with different caps cannot be mixed: restore {before}, or judge into a new run"
        ))
        .into());
    }
    // Each judge's own temperature (judges recorded before it was kept per judge ran at the
    // run's, and before that setting existed at 0).
    let now = inputs.config.run.judge_temperature;
    let run_wide = recorded
        .get("judge_temperature")
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.0);
    let recorded_judges = recorded.get("judges").and_then(|j| j.as_array());
    for judge in &inputs.judges {
        let Judge::Llm(m) = judge else { continue };
        let Some(entry) = recorded_judges
            .into_iter()
            .flatten()
            .find(|e| e.get("id").and_then(|v| v.as_str()) == Some(m.id.as_str()))
        else {
            continue;
        };
        let before = entry
            .get("temperature")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(run_wide);
        if before != now {
            return Err(JudgeError::usage(format!(
                "[run] judge_temperature is {now} but judge `{}` judged run `{run}` at {before}; its judgments at different temperatures cannot be mixed: restore {before}, judge with other judges only (--judge ID), or judge into a new run",
                m.id
            ))
            .into());
        }
    }
    // The exec judge's entry has no provider or model, so it does not parse as a ModelConfig.
    let earlier: Vec<ModelConfig> = recorded
        .get("judges")
        .and_then(|j| j.as_array())
        .into_iter()
        .flatten()
        .filter_map(|v| ModelConfig::deserialize(v).ok())
        .collect();
    for judge in &inputs.judges {
        let Judge::Llm(m) = judge else { continue };
        if let Some(old) = earlier.iter().find(|o| o.id == m.id)
            && (old.model != m.model || old.provider != m.provider)
        {
            return Err(JudgeError::usage(format!(
                "judge `{}` was `{}` on provider `{}` when run `{run}` was judged, now `{}` on `{}`; give the new judge its own id",
                m.id, old.model, old.provider, m.model, m.provider
            ))
            .into());
        }
    }
    Ok(())
}

/// The execution judge decides only tasks that have a hidden test: a suite without any is
/// refused (before anything is generated, under `judge run`).
pub(crate) fn refuse_exec_without_checks(suite: &Suite) -> Result<(), JudgeError> {
    if suite.tasks.iter().any(|t| t.check.is_some()) {
        return Ok(());
    }
    Err(JudgeError::usage(format!(
        "the exec judge decides from hidden tests, and suite `{}` has none (tasks/<id>/check.py); add checks, or judge with an LLM judge ([[judges]] in judge.toml, --judge ID)",
        suite.name
    )))
}

/// Which tasks the execution judge leaves out (those without a check.py), as a warning for
/// compare and the leaderboard; `None` when every task has one.
pub(crate) fn exec_coverage_note(suite: &Suite) -> Option<String> {
    let unchecked: Vec<&str> = suite
        .tasks
        .iter()
        .filter(|t| t.check.is_none())
        .map(|t| t.id.as_str())
        .collect();
    if unchecked.is_empty() {
        return None;
    }
    let shown = unchecked
        .iter()
        .take(5)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    let more = if unchecked.len() > 5 { ", …" } else { "" };
    Some(format!(
        "the exec judge ranks only tasks with a check.py: {} of {} tasks {} none and {} not compared ({shown}{more})",
        unchecked.len(),
        suite.tasks.len(),
        if unchecked.len() == 1 { "has" } else { "have" },
        if unchecked.len() == 1 { "is" } else { "are" },
    ))
}

/// The judges that are models (every judge but `exec`).
pub(crate) fn llm_judges(judges: &[Judge]) -> Vec<&ModelConfig> {
    judges
        .iter()
        .filter_map(|j| match j {
            Judge::Llm(m) => Some(m),
            Judge::Exec => None,
        })
        .collect()
}

/// Refuses a judge from the family of any of `models` (DESIGN rule 6).
pub(crate) fn refuse_own_family(judges: &[Judge], models: &[ModelConfig]) -> anyhow::Result<()> {
    for judge in judges {
        let fams = models.iter().map(|m| (m.id.as_str(), m.family.as_str()));
        if let Some(model) = family_conflict(judge.family(), fams) {
            return Err(JudgeError::usage(format!(
                "judge `{}` (family `{}`) is from the same family as ranked model `{model}`; a judge may not rate its own family's models (it favours them): pick a judge from another family (`family` in judge.toml)",
                judge.id(),
                judge.family()
            ))
            .into());
        }
    }
    Ok(())
}

/// The judges named by `wanted` (or the configured ones, else `exec`).
pub(crate) fn resolve_judges(config: &Config, wanted: &[String]) -> anyhow::Result<Vec<Judge>> {
    let ids: Vec<String> = if !wanted.is_empty() {
        wanted.to_vec()
    } else if !config.judges.is_empty() {
        config.judges.iter().map(|j| j.id.clone()).collect()
    } else {
        vec![EXEC_JUDGE.to_string()]
    };
    let mut judges = Vec::new();
    for id in ids {
        if judges.iter().any(|j: &Judge| j.id() == id) {
            continue;
        }
        if id == EXEC_JUDGE {
            judges.push(Judge::Exec);
            continue;
        }
        let Some(m) = config.judges.iter().find(|j| j.id == id) else {
            let mut known: Vec<&str> = config.judges.iter().map(|j| j.id.as_str()).collect();
            known.push(EXEC_JUDGE);
            return Err(JudgeError::usage(format!(
                "unknown judge `{id}` (defined: {}); add it under [[judges]] in {}",
                known.join(", "),
                config.path.display()
            ))
            .into());
        };
        if config.provider_of(m).kind == ProviderKind::Files {
            return Err(JudgeError::usage(format!(
                "judge `{id}` uses a `files` provider, which cannot judge; give it an HTTP provider"
            ))
            .into());
        }
        judges.push(Judge::Llm(m.clone()));
    }
    Ok(judges)
}

/// Every call still needed: both orderings of every pair whose outputs are both ok, for each
/// LLM judge, minus those already recorded (failed ones too unless `retry_failed`).
fn pending_calls(
    ctx: &Ctx,
    models: &[ModelConfig],
    existing: &[JudgmentRecord],
    retry_failed: bool,
) -> Vec<Call> {
    let mut done: BTreeMap<(&str, &str, &str, &str), bool> = BTreeMap::new();
    for r in existing {
        let failed = matches!(r.verdict, JudgmentVerdict::Failed(_));
        done.insert(
            (
                r.task.as_str(),
                r.judge.as_str(),
                r.first.as_str(),
                r.second.as_str(),
            ),
            failed,
        );
    }
    let mut calls = Vec::new();
    for (ji, judge) in ctx.judges.iter().enumerate() {
        if matches!(judge, Judge::Exec) {
            continue;
        }
        for (ti, task) in ctx.suite.tasks.iter().enumerate() {
            for (i, a) in models.iter().enumerate() {
                for b in &models[i + 1..] {
                    if !both_ok(ctx, &task.id, &a.id, &b.id) {
                        continue;
                    }
                    for order in [Order::Ab, Order::Ba] {
                        let (first, second) = order.arrange((a.id.as_str(), b.id.as_str()));
                        let retry = match done.get(&(task.id.as_str(), judge.id(), first, second)) {
                            Some(false) => continue,
                            Some(true) if !retry_failed => continue,
                            Some(true) => true,
                            None => false,
                        };
                        calls.push(Call {
                            judge: ji,
                            task: ti,
                            model_a: a.id.clone(),
                            model_b: b.id.clone(),
                            order,
                            retry,
                        });
                    }
                }
            }
        }
    }
    calls
}

fn output_ok(ctx: &Ctx, task: &str, model: &str) -> bool {
    ctx.outputs
        .get(&(task.to_string(), model.to_string()))
        .is_some_and(|o| o.status == Status::Ok)
}

fn both_ok(ctx: &Ctx, task: &str, a: &str, b: &str) -> bool {
    output_ok(ctx, task, a) && output_ok(ctx, task, b)
}

fn group_by_provider(ctx: &Ctx, calls: Vec<Call>) -> Vec<Group<Call>> {
    let mut by_provider: BTreeMap<String, Vec<Call>> = BTreeMap::new();
    for call in calls {
        let Judge::Llm(m) = &ctx.judges[call.judge] else {
            continue;
        };
        by_provider
            .entry(m.provider.clone())
            .or_default()
            .push(call);
    }
    by_provider
        .into_iter()
        .map(|(name, items)| Group {
            concurrency: ctx.config.providers[&name].max_concurrency,
            items,
        })
        .collect()
}

/// One judge call with one retry for an unparsable reply. `None` = stopped before finishing.
async fn judge_call(ctx: Arc<Ctx>, call: Call) -> Option<JudgmentRecord> {
    let Judge::Llm(judge) = &ctx.judges[call.judge] else {
        unreachable!("only LLM judges make calls")
    };
    let task = &ctx.suite.tasks[call.task];
    let (first, second) = call
        .order
        .arrange((call.model_a.as_str(), call.model_b.as_str()));
    let text_of = |model: &str| {
        ctx.outputs[&(task.id.clone(), model.to_string())]
            .text
            .clone()
            .expect("ok outputs have text")
    };
    let (answer_1, answer_2) = (text_of(first), text_of(second));
    let nonce = fence_nonce(
        ctx.seed,
        &task.id,
        (&call.model_a, &call.model_b),
        call.order,
    );
    let input = PairwiseInput {
        task: &task.prompt,
        answer_1: &answer_1,
        answer_2: &answer_2,
        suite_context: &ctx.suite.context,
        suite_criteria: &ctx.suite.criteria,
        nonce: &nonce,
    };
    let mut record = JudgmentRecord {
        task: task.id.clone(),
        judge: judge.id.clone(),
        first: first.to_string(),
        second: second.to_string(),
        order: call.order,
        verdict: JudgmentVerdict::Failed(FailedMarker::Failed),
        raw: None,
        attempts: 0,
        prompt_sha256: ctx.prompt_sha256.clone(),
        cache_key: None,
        from_cache: false,
        usage: None,
        cost_usd: None,
        error: None,
    };
    let prompt = match render_pairwise(&ctx.template, &input) {
        Ok(p) => p,
        Err(e) => {
            record.error = Some(RecordedError {
                class: ErrorClass::ClientError,
                message: e.to_string(),
                http_status: None,
            });
            return Some(record);
        }
    };
    let request = ChatRequest {
        model: judge.model.clone(),
        messages: vec![Message::system(prompt.system), Message::user(prompt.user)],
        max_tokens: ctx.config.run.judge_max_tokens,
        temperature: ctx.config.run.judge_temperature,
    };
    let http = &ctx.http[&judge.provider];
    let wire = to_wire(http.config(), &request);
    for attempt in 1..=2 {
        let refresh = ctx.refresh || call.retry;
        let result = cached_call(&ctx.cache, http, &wire, attempt, refresh, &ctx.stop).await?;
        record.attempts = attempt;
        record.cache_key = Some(result.cache_key);
        record.from_cache = result.from_cache;
        match result.reply {
            Ok(reply) => {
                if let Some(u) = reply.usage {
                    let prev = record.usage.unwrap_or_default();
                    let usage = crate::provider::Usage {
                        input_tokens: prev.input_tokens + u.input_tokens,
                        output_tokens: prev.output_tokens + u.output_tokens,
                    };
                    record.usage = Some(usage);
                    record.cost_usd = judge.cost_usd(usage.input_tokens, usage.output_tokens);
                }
                let cut = reply.finish_reason.as_deref() == Some("length");
                match parse_verdict(&reply.text) {
                    Ok(v) if !cut => {
                        record.verdict = JudgmentVerdict::Parsed(v);
                        record.error = None;
                        record.raw = Some(reply.text);
                        return Some(record);
                    }
                    parsed => {
                        // A verdict line in a reply cut off by the token cap is not trusted:
                        // the judge had not finished.
                        let mut message = match parsed {
                            Ok(_) => "the reply ends in a verdict line but was cut off".to_string(),
                            Err(e) => e.to_string(),
                        };
                        if cut {
                            message.push_str(" (the reply was cut off by judge_max_tokens; raise [run] judge_max_tokens and judge into a new run)");
                        }
                        record.raw = Some(reply.text);
                        record.error = Some(RecordedError {
                            class: ErrorClass::UnparsableVerdict,
                            message,
                            http_status: None,
                        });
                    }
                }
            }
            Err(e) => {
                record.error = Some(RecordedError {
                    class: e.class,
                    message: e.message,
                    http_status: e.status,
                });
                return Some(record);
            }
        }
    }
    Some(record)
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
    let mut latest: BTreeMap<(String, String, String, String), JudgmentRecord> = BTreeMap::new();
    for r in existing.into_iter().chain(new_records.iter().cloned()) {
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
    let judgments: Vec<JudgmentRecord> = latest.values().cloned().collect();
    write_jsonl_atomic(&run_dir.file(JUDGMENTS_FILE), &judgments)?;
    // Judges not named this time keep their comparisons as they were.
    let judge_ids: Vec<&str> = ctx.judges.iter().map(Judge::id).collect();
    let mut comparisons: Vec<ComparisonRecord> =
        read_jsonl_repairing(&run_dir.file(COMPARISONS_FILE))?;
    comparisons.retain(|c: &ComparisonRecord| !judge_ids.contains(&c.judge.as_str()));
    comparisons.extend(derive_comparisons(ctx, models, &latest));
    write_jsonl_atomic(&run_dir.file(COMPARISONS_FILE), &comparisons)?;
    // Comparisons still missing per judge (calls not made yet: an interrupted or cut-short run).
    let pairs = models.len() * models.len().saturating_sub(1) / 2;
    let missing: BTreeMap<&str, usize> = ctx
        .judges
        .iter()
        .map(|j| {
            let tasks = match j {
                Judge::Exec => ctx.suite.tasks.iter().filter(|t| t.check.is_some()).count(),
                Judge::Llm(_) => ctx.suite.tasks.len(),
            };
            let have = comparisons.iter().filter(|c| c.judge == j.id()).count();
            (j.id(), (tasks * pairs).saturating_sub(have))
        })
        .collect();

    let mut agreements = Vec::new();
    for (i, j1) in judge_ids.iter().enumerate() {
        for j2 in &judge_ids[i + 1..] {
            agreements.push(judge_agreement(&comparisons, j1, j2));
        }
    }
    // Every judge that ever judged this run stays recorded (a later --judge subset keeps them).
    let mut judges: Vec<serde_json::Value> = manifest
        .extra
        .get("compare")
        .and_then(|c| c.get("judges"))
        .and_then(|j| j.as_array().cloned())
        .unwrap_or_default();
    for j in &ctx.judges {
        let value = match j {
            // Each judge's temperature: a reasoning-model judge (temperature 1) can join a run
            // others judged at 0, but no judge's own judgments are mixed across temperatures.
            Judge::Llm(m) => {
                let mut v = serde_json::to_value(m).unwrap_or_default();
                v["temperature"] = json!(ctx.config.run.judge_temperature);
                v
            }
            Judge::Exec => json!({"id": EXEC_JUDGE, "family": EXEC_FAMILY}),
        };
        judges.retain(|old| old.get("id").and_then(|v| v.as_str()) != Some(j.id()));
        judges.push(value);
    }
    manifest.extra.insert(
        "compare".into(),
        json!({
            "judges": judges,
            // The LLM judges' prompt; none when only the exec judge ever judged the run.
            "prompt_sha256": judges
                .iter()
                .any(|j| j.get("id").and_then(|v| v.as_str()) != Some(EXEC_JUDGE))
                .then_some(&ctx.prompt_sha256),
            "judge_max_tokens": ctx.config.run.judge_max_tokens,
            "judge_temperature": ctx.config.run.judge_temperature,
            "judge_agreement": agreements,
            "missing_comparisons": missing,
            "updated_at": crate::time::UtcDateTime::from_system(SystemTime::now()).rfc3339(),
        }),
    );
    write_json_atomic(&run_dir.file("manifest.json"), manifest)?;

    let ours: Vec<&JudgmentRecord> = judgments
        .iter()
        .filter(|j| judge_ids.contains(&j.judge.as_str()))
        .collect();
    let priced: Vec<&str> = llm_judges(&ctx.judges)
        .into_iter()
        .filter(|m| m.price_input_per_mtok.is_some())
        .map(|m| m.id.as_str())
        .collect();
    eprint!(
        "{}",
        compare_summary(&judge_ids, &priced, &ours, &new_records, &comparisons)
    );
    let ungenerated = ctx
        .suite
        .tasks
        .iter()
        .flat_map(|t| models.iter().map(move |m| (t, m)))
        .filter(|(t, m)| !ctx.outputs.contains_key(&(t.id.clone(), m.id.clone())))
        .count();
    if ungenerated > 0 {
        eprintln!(
            "warning: run `{run}` lacks {ungenerated} output(s) (generation did not finish): their pairs are left out, not counted as failures; finish with `judge generate --run {run}`, then rerun `judge compare --run {run}`",
            run = run_dir.name()
        );
    }
    for (judge, n) in missing.iter().filter(|(_, n)| **n > 0) {
        let finish = if ungenerated > 0 {
            "finish generating first (above), then rerun compare"
        } else {
            "rerun `judge compare` to finish"
        };
        eprintln!(
            "warning: judge `{judge}` has {n} comparison(s) still missing (run `{}`); {finish}",
            run_dir.name()
        );
    }
    for a in &agreements {
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
        "run `{}`: {} comparisons of every judge so far in {}",
        run_dir.name(),
        comparisons.len(),
        run_dir.file(COMPARISONS_FILE).display()
    );
    // A check that ended in `error` makes the exec judge's comparison failed.
    let failed = ours
        .iter()
        .any(|j| matches!(j.verdict, JudgmentVerdict::Failed(_)))
        || comparisons.iter().any(|c| {
            c.judge == EXEC_JUDGE && judge_ids.contains(&EXEC_JUDGE) && c.winner == Winner::Failed
        });
    match ctx.stop.reason() {
        Some(StopReason::Interrupted) => Err(JudgeError::Interrupted.into()),
        Some(StopReason::Fatal(msg)) => Err(JudgeError::ProviderRefused(msg).into()),
        None if ctx.stop.past_deadline() => {
            eprintln!(
                "deadline reached: calls not started or cut short while retrying wait for a rerun with --run {}",
                run_dir.name()
            );
            Ok(Outcome::ItemsFailed)
        }
        None if failed => Ok(Outcome::ItemsFailed),
        None => Ok(Outcome::Success),
    }
}

/// Check results for the execution judge: `checks.jsonl`, with any missing check run now in
/// the sandbox (a missing sandbox is an error that says to run `judge check`), and the policy
/// they ran under when any did.
fn exec_checks(
    inputs: &Inputs,
    cache: &Cache,
    quiet: bool,
) -> anyhow::Result<(CheckTable, Option<crate::sandbox::SandboxPolicy>)> {
    let existing: Vec<CheckRecord> = read_jsonl_repairing(&inputs.run_dir.file(CHECKS_FILE))?;
    let latest: BTreeMap<(&str, &str), &CheckRecord> = existing
        .iter()
        .map(|c| ((c.task.as_str(), c.model.as_str()), c))
        .collect();
    // Every output with a check has a finished check of its current code (an output
    // regenerated by --retry-failed, or an edited check, is checked again).
    let complete = inputs.outputs.iter().all(|o| {
        match inputs.suite.task(&o.task).and_then(|t| t.check.as_deref()) {
            None => true,
            Some(check) => latest
                .get(&(o.task.as_str(), o.model.as_str()))
                .is_some_and(|c| crate::commands::check::describes(c, o, check)),
        }
    });
    let (records, ran_under) = if complete {
        (existing, None)
    } else {
        let policy = sandbox_policy(false, None).map_err(|e| {
            JudgeError::usage(format!(
                "the exec judge needs check results and could not run them: {e:#}; run `judge check --run {}` first (with --no-sandbox if you accept the risk)",
                inputs.run_dir.name()
            ))
        })?;
        let records = ensure_checks(
            &inputs.run_dir,
            &inputs.suite,
            &inputs.outputs,
            &policy,
            cache,
            quiet,
        )?;
        (records, Some(policy))
    };
    crate::commands::check::warn_invalid_checks(&records);
    Ok((CheckTable::from_records(&records), ran_under))
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
                        Judge::Exec if task.check.is_none() => {}
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
