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
    /// The limits and sandbox of those checks ([`crate::commands::check::checks_basis`]).
    exec_basis: Option<serde_json::Value>,
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
    let judgments_path = inputs.run_dir.file(JUDGMENTS_FILE);
    let existing: Vec<JudgmentRecord> = read_jsonl_repairing(&judgments_path)?;
    refuse_changed_judge_setup(
        &inputs.config,
        &inputs.manifest,
        inputs.run_dir.name(),
        &inputs.judges,
        &judged_by(&existing),
    )?;
    let http = build_http_providers(&inputs.config, &llm_judges(&inputs.judges))?;
    let template =
        PairwiseTemplate::parse(PAIRWISE_TEMPLATE).expect("the shipped template is valid (tested)");
    let (prompt_sha256, prompt_text) =
        template_sha256(&template, &inputs.suite.context, &inputs.suite.criteria);
    refuse_changed_prompt(
        &existing,
        &inputs.judges,
        &prompt_sha256,
        inputs.run_dir.name(),
    )?;

    inputs.run_dir.create_and_lock()?;
    crate::interrupt::install();
    let prompt_path = inputs.run_dir.file(&format!("prompts/{prompt_sha256}.md"));
    // The exec judge reads no prompt: an exec-only run records none.
    if !llm_judges(&inputs.judges).is_empty() && !prompt_path.exists() {
        crate::cache::write_atomic(&prompt_path, prompt_text.as_bytes())
            .with_context(|| format!("failed to write `{}`", prompt_path.display()))?;
    }
    let cache = Cache::new(inputs.config.cache_dir());
    let (checks, exec_basis) = if inputs.judges.iter().any(|j| matches!(j, Judge::Exec)) {
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
    let comparisons: Vec<ComparisonRecord> =
        read_jsonl_repairing(&inputs.run_dir.file(COMPARISONS_FILE))?;
    let missing = missing_comparisons(&inputs.suite, &inputs.judges, &inputs.models, &comparisons);
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
    let stop = Arc::new(Stop::with_deadline(
        args.deadline.map(|d| std::time::Instant::now() + d),
    ));
    let ctx = Arc::new(Ctx {
        cache,
        checks,
        exec_basis,
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
            let spent = Some(rec.spent_usd);
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
    refuse_own_family(&config, &judges, &models)?;
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

/// The ids of the judges with judgments in `records`.
pub(crate) fn judged_by(records: &[JudgmentRecord]) -> BTreeSet<String> {
    records.iter().map(|r| r.judge.clone()).collect()
}

/// The judge prompt, like the judge's settings, is not mixed within a run: an LLM judge whose
/// judgments in the run (`existing`) used another prompt than this version renders
/// (`prompt_sha256`, from the tool's template and the suite) is refused.
pub(crate) fn refuse_changed_prompt(
    existing: &[JudgmentRecord],
    judges: &[Judge],
    prompt_sha256: &str,
    run: &str,
) -> anyhow::Result<()> {
    for judge in judges {
        let Judge::Llm(m) = judge else { continue };
        if let Some(other) = existing
            .iter()
            .find(|r| r.judge == m.id && r.prompt_sha256 != prompt_sha256)
        {
            return Err(JudgeError::usage(format!(
                "judge `{}` judged run `{run}` with prompt {} (runs/{run}/prompts/{}.md), and this version of judge renders prompt {}: judgments from two prompts cannot be mixed in one run; judge into a new run (the outputs come back from the cache)",
                m.id,
                crate::short_hash(&other.prompt_sha256),
                other.prompt_sha256,
                crate::short_hash(prompt_sha256)
            ))
            .into());
        }
    }
    Ok(())
}

/// Judgments made under different settings are not mixed in one run: a judge with judgments
/// in the run (`judged`) is refused when its id now names another model, provider, server or
/// API, or when its temperature or token cap changed. A judge with none yet (a new one, or one
/// whose earlier compare stopped before any call) may take any settings.
pub(crate) fn refuse_changed_judge_setup(
    config: &Config,
    manifest: &Manifest,
    run: &str,
    judges: &[Judge],
    judged: &BTreeSet<String>,
) -> anyhow::Result<()> {
    let Some(recorded) = manifest.extra.get("compare") else {
        return Ok(());
    };
    let entries = recorded.get("judges").and_then(|j| j.as_array());
    let run_wide = RunWideJudgeSettings::of(recorded);
    for judge in judges {
        let Judge::Llm(m) = judge else { continue };
        if !judged.contains(&m.id) {
            continue;
        }
        let Some(entry) = entries
            .into_iter()
            .flatten()
            .find(|e| e.get("id").and_then(|v| v.as_str()) == Some(m.id.as_str()))
        else {
            // Judgments without an entry: an older judge kept only the latest invocation's
            // judges, and recorded them only at the end. Its run-wide settings still bind them.
            let now = u64::from(config.run.judge_max_tokens);
            if let Some(before) = run_wide.max_tokens
                && before != now
            {
                return Err(JudgeError::usage(format!(
                    "[run] judge_max_tokens is {now} but run `{run}` was judged with {before}, and judge `{}` has judgments in it; they cannot be mixed with judgments at another cap: restore {before}, or judge into a new run",
                    m.id
                ))
                .into());
            }
            let now = config.run.judge_temperature;
            if run_wide.temperature != now {
                return Err(JudgeError::usage(format!(
                    "[run] judge_temperature is {now} but run `{run}` was judged at {}, and judge `{}` has judgments in it; they cannot be mixed with judgments at another temperature: restore {}, or judge into a new run",
                    run_wide.temperature, m.id, run_wide.temperature
                ))
                .into());
            }
            continue;
        };
        let id = &m.id;
        let text = |key: &str| entry.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        let refuse = |what: String| -> anyhow::Result<()> { Err(JudgeError::usage(what).into()) };
        // An entry filled in for an older run's judge knows only its settings.
        let identified = entry.get("model").is_some();
        if identified && (text("model") != m.model || text("provider") != m.provider) {
            return refuse(format!(
                "judge `{id}` was `{}` on provider `{}` when run `{run}` was judged, now `{}` on `{}`; give the new judge its own id",
                text("model"),
                text("provider"),
                m.model,
                m.provider
            ));
        }
        // The same model name on another server (or API) can be another model. Entries
        // written before the address was recorded have no `kind`.
        let p = config.provider_of(m);
        let place = |kind: &str, url: Option<&str>| {
            format!("{kind} at {}", url.unwrap_or("its default address"))
        };
        let (then_url, now_url) = (
            entry.get("base_url").and_then(|v| v.as_str()),
            p.base_url.as_deref(),
        );
        if !text("kind").is_empty() && (text("kind") != p.kind.as_str() || then_url != now_url) {
            return refuse(format!(
                "judge `{id}` was called on {} when run `{run}` was judged, now on {} (provider `{}`); the same model name elsewhere can be another model: give the judge there its own id",
                place(text("kind"), then_url),
                place(p.kind.as_str(), now_url),
                m.provider
            ));
        }
        if let Some(then) = entry.get("token_limit_field").and_then(|v| v.as_str())
            && then != p.token_limit_field.as_str()
        {
            return refuse(format!(
                "provider `{}` of judge `{id}` sends its token cap as `{}`, but run `{run}` was judged with `{then}`; its judgments with differently counted caps cannot be mixed: restore token_limit_field = \"{then}\", or judge into a new run",
                m.provider,
                p.token_limit_field.as_str()
            ));
        }
        let now = u64::from(config.run.judge_max_tokens);
        if let Some(before) = entry
            .get("max_tokens")
            .and_then(serde_json::Value::as_u64)
            .or(run_wide.max_tokens)
            && before != now
        {
            return refuse(format!(
                "[run] judge_max_tokens is {now} but judge `{id}` judged run `{run}` with {before}; its judgments with different caps cannot be mixed: restore {before}, judge with other judges only (--judge ID), or judge into a new run"
            ));
        }
        let now = config.run.judge_temperature;
        let before = entry
            .get("temperature")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(run_wide.temperature);
        if before != now {
            return refuse(format!(
                "[run] judge_temperature is {now} but judge `{id}` judged run `{run}` at {before}; its judgments at different temperatures cannot be mixed: restore {before}, judge with other judges only (--judge ID), or judge into a new run"
            ));
        }
    }
    Ok(())
}

/// The judge settings a manifest's compare section held run-wide before they were recorded
/// per judge: what a judge entry without its own stands for.
struct RunWideJudgeSettings {
    max_tokens: Option<u64>,
    /// 0 before the setting existed.
    temperature: f64,
}

impl RunWideJudgeSettings {
    fn of(section: &serde_json::Value) -> RunWideJudgeSettings {
        RunWideJudgeSettings {
            max_tokens: section
                .get("judge_max_tokens")
                .and_then(serde_json::Value::as_u64),
            temperature: section
                .get("judge_temperature")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0),
        }
    }
}

/// A judge's entry in the manifest's compare section: its config, the API and address it was
/// called at, and the settings its judgments are made with.
fn judge_entry(config: &Config, judge: &Judge) -> serde_json::Value {
    match judge {
        Judge::Llm(m) => {
            let p = config.provider_of(m);
            let mut v = serde_json::to_value(m).unwrap_or_default();
            v["kind"] = json!(p.kind.as_str());
            v["base_url"] = json!(p.base_url);
            v["token_limit_field"] = json!(p.token_limit_field.as_str());
            v["temperature"] = json!(config.run.judge_temperature);
            v["max_tokens"] = json!(config.run.judge_max_tokens);
            v
        }
        Judge::Exec => json!({"id": EXEC_JUDGE, "family": EXEC_FAMILY}),
    }
}

/// Comparisons still missing per judge of `judges` (calls not made yet: an interrupted or
/// cut-short run), given the run's `comparisons`.
fn missing_comparisons(
    suite: &Suite,
    judges: &[Judge],
    models: &[ModelConfig],
    comparisons: &[ComparisonRecord],
) -> BTreeMap<String, usize> {
    let pairs = models.len() * models.len().saturating_sub(1) / 2;
    judges
        .iter()
        .map(|j| {
            let tasks = match j {
                Judge::Exec => suite.tasks.iter().filter(|t| t.check.is_some()).count(),
                Judge::Llm(_) => suite.tasks.len(),
            };
            let have = comparisons.iter().filter(|c| c.judge == j.id()).count();
            (j.id().to_string(), (tasks * pairs).saturating_sub(have))
        })
        .collect()
}

/// Writes `judges` into the manifest's compare section, keeping every other judge that ever
/// judged the run (a later --judge subset keeps them) with its missing count. A judge with
/// judgments (`judged`) but no entry, as an older judge left runs, gets one with the run-wide
/// settings it was judged at, before this invocation's replace them. Agreements are replaced
/// when given, else kept.
fn record_compare_section(
    manifest: &mut Manifest,
    config: &Config,
    judges: &[Judge],
    judged: &BTreeSet<String>,
    prompt_sha256: &str,
    missing: &BTreeMap<String, usize>,
    agreements: Option<serde_json::Value>,
) {
    let old = manifest.extra.get("compare").cloned().unwrap_or_default();
    let run_wide = RunWideJudgeSettings::of(&old);
    let mut entries: Vec<serde_json::Value> = old
        .get("judges")
        .and_then(|j| j.as_array().cloned())
        .unwrap_or_default();
    // An entry from before settings were kept per judge takes the run-wide ones it was
    // judged with, before this invocation's replace them.
    for e in &mut entries {
        if e.get("id").and_then(|v| v.as_str()) == Some(EXEC_JUDGE) {
            continue;
        }
        if e.get("temperature").is_none() {
            e["temperature"] = json!(run_wide.temperature);
        }
        if e.get("max_tokens").is_none()
            && let Some(cap) = run_wide.max_tokens
        {
            e["max_tokens"] = json!(cap);
        }
    }
    for id in judged {
        let known = entries
            .iter()
            .any(|e| e.get("id").and_then(|v| v.as_str()) == Some(id.as_str()));
        if !known && id != EXEC_JUDGE {
            let mut entry = json!({"id": id, "temperature": run_wide.temperature});
            if let Some(cap) = run_wide.max_tokens {
                entry["max_tokens"] = json!(cap);
            }
            entries.push(entry);
        }
    }
    for j in judges {
        entries.retain(|old| old.get("id").and_then(|v| v.as_str()) != Some(j.id()));
        entries.push(judge_entry(config, j));
    }
    let mut all_missing: serde_json::Map<String, serde_json::Value> = old
        .get("missing_comparisons")
        .and_then(|m| m.as_object().cloned())
        .unwrap_or_default();
    for (judge, n) in missing {
        all_missing.insert(judge.clone(), json!(n));
    }
    let agreements = agreements
        .or_else(|| old.get("judge_agreement").cloned())
        .unwrap_or_else(|| json!([]));
    manifest.extra.insert(
        "compare".into(),
        json!({
            // The LLM judges' prompt; none when only the exec judge ever judged the run.
            "prompt_sha256": entries
                .iter()
                .any(|j| j.get("id").and_then(|v| v.as_str()) != Some(EXEC_JUDGE))
                .then_some(prompt_sha256),
            "judges": entries,
            // The latest invocation's; each judge's own are in its entry.
            "judge_max_tokens": config.run.judge_max_tokens,
            "judge_temperature": config.run.judge_temperature,
            "judge_agreement": agreements,
            "missing_comparisons": all_missing,
            "updated_at": crate::time::UtcDateTime::from_system(SystemTime::now()).rfc3339(),
        }),
    );
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

/// Refuses a judge from the family of any of `models` (DESIGN rule 6), and a judge that is one
/// of them under another family name: the same model on the same API and address.
pub(crate) fn refuse_own_family(
    config: &Config,
    judges: &[Judge],
    models: &[ModelConfig],
) -> anyhow::Result<()> {
    let endpoint = |m: &ModelConfig| {
        config
            .providers
            .get(&m.provider)
            .map(|p| (p.kind, p.base_url.clone(), m.model.clone()))
    };
    for judge in judges {
        if let Judge::Llm(j) = judge
            && let Some(m) = models
                .iter()
                .find(|m| endpoint(m).is_some() && endpoint(m) == endpoint(j))
        {
            return Err(JudgeError::usage(format!(
                "judge `{}` is `{}` on the same API and address as ranked model `{}` (families `{}` and `{}`); a model may not judge its own answers: pick a judge from another family",
                j.id, j.model, m.id, j.family, m.family
            ))
            .into());
        }
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
        spent_usd: 0.0,
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
        // Every attempt's tokens, a failed one's too when the provider said (it was billed).
        let billed = match &result.reply {
            Ok(reply) => reply.usage,
            Err(e) => e.usage,
        };
        if let Some(u) = billed {
            if !result.from_cache {
                record.spent_usd += judge
                    .cost_usd(u.input_tokens, u.output_tokens)
                    .unwrap_or(0.0);
            }
            let prev = record.usage.unwrap_or_default();
            let usage = crate::provider::Usage {
                input_tokens: prev.input_tokens + u.input_tokens,
                output_tokens: prev.output_tokens + u.output_tokens,
            };
            record.usage = Some(usage);
            record.cost_usd = judge.cost_usd(usage.input_tokens, usage.output_tokens);
        }
        match result.reply {
            Ok(reply) => {
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
    let missing = missing_comparisons(&ctx.suite, &ctx.judges, models, &comparisons);

    let mut agreements = Vec::new();
    for (i, j1) in judge_ids.iter().enumerate() {
        for j2 in &judge_ids[i + 1..] {
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
    if let Some(basis) = &ctx.exec_basis
        && let Some(entries) = manifest
            .extra
            .get_mut("compare")
            .and_then(|c| c.get_mut("judges"))
            .and_then(|j| j.as_array_mut())
        && let Some(exec) = entries
            .iter_mut()
            .find(|e| e.get("id").and_then(|v| v.as_str()) == Some(EXEC_JUDGE))
    {
        exec["checks"] = basis.clone();
    }
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
    let failed_calls = ours
        .iter()
        .filter(|j| matches!(j.verdict, JudgmentVerdict::Failed(_)))
        .count();
    if failed_calls > 0 {
        eprintln!(
            "{failed_calls} judgment(s) failed (each record's `error` in {JUDGMENTS_FILE} says why; the raw reply is kept); to ask again: `judge compare --run {} --retry-failed`",
            run_dir.name()
        );
    }
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
        Some(StopReason::Interrupted) => Err(JudgeError::Interrupted(None).into()),
        Some(StopReason::Fatal(msg)) => Err(JudgeError::ProviderRefused(msg).into()),
        Some(StopReason::Io(msg)) => Err(anyhow::anyhow!(msg)),
        None if ctx.stop.past_deadline() => {
            eprintln!(
                "deadline reached: calls not started or cut short while retrying wait for a rerun with --run {}",
                run_dir.name()
            );
            Ok(Outcome::ItemsFailed)
        }
        // Comparisons still missing (outputs not generated yet) leave the run unfinished: not
        // a success a script could take for a complete one.
        None if failed || missing.values().any(|&n| n > 0) => Ok(Outcome::ItemsFailed),
        None => Ok(Outcome::Success),
    }
}

/// Check results for the execution judge: `checks.jsonl`, with any missing check run now in
/// the sandbox under the time limit the run's checks last ran under (a missing sandbox, or
/// earlier checks run with `--no-sandbox`, is an error that says to run `judge check`), and
/// the policy they ran under when any did.
fn exec_checks(
    inputs: &Inputs,
    cache: &Cache,
    quiet: bool,
) -> anyhow::Result<(
    CheckTable,
    Option<crate::sandbox::SandboxPolicy>,
    Vec<CheckRecord>,
)> {
    let existing: Vec<CheckRecord> = read_jsonl_repairing(&inputs.run_dir.file(CHECKS_FILE))?;
    let latest: BTreeMap<(&str, &str), &CheckRecord> = existing
        .iter()
        .map(|c| ((c.task.as_str(), c.model.as_str()), c))
        .collect();
    // Every output with a check has a finished check of its current code (an output
    // regenerated by --retry-failed, or an edited check, is checked again; so is an `error`).
    let all_have = |current: fn(&CheckRecord, &OutputRecord, &str) -> bool| {
        inputs.outputs.iter().all(|o| {
            match inputs.suite.task(&o.task).and_then(|t| t.check.as_deref()) {
                None => true,
                Some(check) => latest
                    .get(&(o.task.as_str(), o.model.as_str()))
                    .is_some_and(|c| current(c, o, check)),
            }
        })
    };
    let complete = all_have(crate::commands::check::describes);
    let last = inputs.manifest.extra.get("check");
    let unconfined = last.and_then(|c| c.get("sandbox")).and_then(|v| v.as_str()) == Some("none");
    // After checks run with --no-sandbox, an `error` is not tried again here (that would need
    // the sandbox choice again): only a missing or outdated check stops the exec judge.
    let (records, ran_under) = if complete
        || (unconfined && all_have(crate::commands::check::is_current))
    {
        (existing, None)
    } else {
        // The missing checks run under the limits the run's checks last ran under (the cache
        // serves those again as they were); model code never runs unconfined unless asked.
        if unconfined {
            return Err(JudgeError::usage(format!(
                "the exec judge needs checks that have not run, and this run's checks last ran with --no-sandbox, which compare never does on its own: run `judge check --run {}` first (with --no-sandbox again if you accept the risk, and the same --timeout-secs)",
                inputs.run_dir.name()
            ))
            .into());
        }
        let timeout_secs = last
            .and_then(|c| c.get("wall_timeout_secs"))
            .and_then(serde_json::Value::as_f64)
            .filter(|&t| t >= 1.0)
            .map(|t| t.round() as u64);
        let policy = sandbox_policy(false, timeout_secs).map_err(|e| {
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
    Ok((CheckTable::from_records(&records), ran_under, records))
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
    }
}
