//! `judge generate`: one output per (task, model), identical settings for every model, through
//! the disk cache, appended to `runs/<run>/outputs.jsonl` as items finish.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use crate::cache::Cache;
use crate::cli::{Cli, GenerateArgs};
use crate::config::{Config, ModelConfig, ProviderKind, load_config};
use crate::engine::calls::{CacheUse, build_http_providers, cached_call, run_recorded};
use crate::engine::manifest::{Manifest, SuiteInfo, read_manifest, resume_conflict};
use crate::engine::run_dir::{
    RunDir, claim_fresh_run_name, compact_jsonl, for_each_jsonl, read_jsonl_repairing,
    write_json_atomic,
};
use crate::engine::scheduler::{Group, Stop, StopReason};
use crate::error::{JudgeError, Outcome};
use crate::provider::http::HttpProvider;
use crate::provider::{ChatRequest, Message, Usage, files, to_wire};
use crate::records::{OutputRecord, RecordedError, Replaced, Status};
use crate::report::progress::Progress;
use crate::report::summary::GenerationTally;
use crate::suite::{Suite, Task, load_suite};
use crate::time::UtcDateTime;

/// The outputs file of a run.
pub const OUTPUTS_FILE: &str = "outputs.jsonl";

/// Everything a worker needs, shared read-only.
struct Ctx {
    suite: Suite,
    config: Config,
    models: Vec<ModelConfig>,
    http: BTreeMap<String, HttpProvider>,
    cache: Cache,
    refresh: bool,
    stop: Arc<Stop>,
    /// The run got its default name from this invocation (no `--run`).
    named_here: bool,
    /// `--limit`: the first this many tasks only.
    limit: Option<usize>,
}

/// One (task, model) to produce.
#[derive(Debug, Clone, Copy)]
struct Item {
    task: usize,
    model: usize,
    /// What the failed record it replaces (`--retry-failed`) passes on.
    replaces: Option<Replaced>,
}

/// Runs `judge generate`.
pub fn run(cli: &Cli, args: &GenerateArgs) -> anyhow::Result<Outcome> {
    run_named(cli, args).map(|(outcome, _)| outcome)
}

/// [`run`], also returning the run's name (the default one when `args.run` is `None`).
pub fn run_named(cli: &Cli, args: &GenerateArgs) -> anyhow::Result<(Outcome, String)> {
    // Everything that can be refused is checked before anything is written.
    let config = load_config(&cli.config)?;
    let suite = load_suite(&config.suites_dir(), &config.run.suite)?;
    let mut models = select_models(&config, &args.models)?;
    // An answer set that cannot be read is refused only where something is left to replay
    // from it: a stray file must not stop resuming a run whose set answered every task.
    let replays = |m: &ModelConfig| -> anyhow::Result<bool> {
        let outputs = args
            .run
            .as_ref()
            .map(|r| config.runs_dir().join(r).join(OUTPUTS_FILE))
            .filter(|p| p.is_file());
        let Some(outputs) = outputs else {
            return Ok(true);
        };
        // Not locked yet: read as it is, repaired by nothing (a writer may be appending).
        let keys: Vec<OutputKey> = crate::engine::run_dir::read_jsonl_skipping_torn(&outputs)?;
        let one = std::slice::from_ref(m);
        Ok(!pending_items(
            &suite,
            one,
            &keys,
            args.retry_failed,
            args.limit.map(|n| n as usize),
        )
        .is_empty())
    };
    refuse_missing_answer_sets(&config, &suite, &models, replays)?;
    // A dry run sends nothing, so needs no API key (a budget is often planned before one).
    let http = if args.dry_run {
        BTreeMap::new()
    } else {
        build_http_providers(&config, &models.iter().collect::<Vec<_>>())?
    };
    if let Some(usd) = args.max_cost {
        // An existing run's prices are checked once read (it keeps a model's first price).
        if !crate::commands::run_exists(&config, args.run.as_deref()) {
            refuse_unpriced_payers(&config, &models, &|_| true, &|_| false, "")?;
        }
        crate::engine::budget::limit(usd);
    }
    if args.dry_run {
        let plan = dry_run(&config, &suite, &mut models, args)?;
        print!("{plan}");
        let name = args.run.clone().unwrap_or_default();
        return Ok((Outcome::Success, name));
    }
    let now = UtcDateTime::from_system(SystemTime::now());
    let run_name = match &args.run {
        Some(name) => name.clone(),
        None => claim_fresh_run_name(
            &config.runs_dir(),
            &format!("{}-{}", suite.name, now.compact()),
        )?,
    };
    let mut run_dir = RunDir::at(&config.runs_dir(), &run_name)?;
    run_dir.refuse_without_manifest()?;
    let resumed = run_dir.exists();
    if resumed {
        // Locked before its manifest is read: a command that finishes meanwhile (check,
        // compare) must not have its manifest sections overwritten by this copy.
        run_dir.create_and_lock()?;
    }
    let mut manifest = if resumed {
        let mut old = read_manifest(&run_dir)?;
        let providers: Vec<_> = models.iter().map(|m| config.provider_of(m)).collect();
        let outputs_path = run_dir.file(OUTPUTS_FILE);
        let keys = read_jsonl_repairing::<OutputKey>(&outputs_path)?;
        crate::commands::refuse_foreign_outputs(
            &outputs_path,
            keys.iter().map(|k| (k.task.as_str(), k.model.as_str())),
            &suite,
            &old,
        )?;
        // Models with nothing left to ask need no price for --max-cost.
        let limit = args.limit.map(|n| n as usize);
        let asks: std::collections::BTreeSet<String> =
            pending_items(&suite, &models, &keys, args.retry_failed, limit)
                .iter()
                .map(|i| models[i.model].id.clone())
                .collect();
        let recorded: std::collections::BTreeSet<String> =
            keys.into_iter().map(|k| k.model).collect();
        let has_records = |id: &str| recorded.contains(id);
        if let Some(conflict) =
            resume_conflict(&old, &suite, &config.run, &models, &providers, &has_records)
        {
            return Err(JudgeError::usage(format!(
                "cannot resume run `{run_name}`: {conflict}; start a new run (another --run name)"
            ))
            .into());
        }
        keep_recorded_prices(&mut models, &old, &has_records);
        // A model the run costed at no price stays unpriced, whatever judge.toml says now.
        if args.max_cost.is_some() {
            refuse_unpriced_payers(
                &config,
                &models,
                &|id| asks.contains(id),
                &has_records,
                &run_name,
            )?;
        }
        // The suite is the same: a run recorded with the hash over answers/ too, or without
        // file digests, is brought up to date (later answer sets can join it, and a later
        // change is named).
        old.suite = SuiteInfo::of(&suite);
        old
    } else {
        Manifest::new(
            &run_name,
            &now.rfc3339(),
            SuiteInfo::of(&suite),
            config.run.clone(),
        )
    };
    if !resumed {
        run_dir.create_and_lock()?;
        run_dir.refuse_without_manifest()?;
        if run_dir.exists() {
            return Err(JudgeError::usage(format!(
                "run `{run_name}` was created by another judge process just now; run the command again to resume it"
            ))
            .into());
        }
    }
    if !resumed {
        // Cheap to fix now; once the run has begun, an edited suite needs a new run.
        for why in crate::commands::check::uncompilable_checks(&suite) {
            eprintln!(
                "warning: {why}; every check of that task will be `error`, and a fixed check changes the suite, which this run will then refuse: stop now (Ctrl-C), fix it and generate a new run"
            );
        }
        for why in crate::commands::check::checks_without_solution(&suite) {
            eprintln!("warning: {why}");
        }
    }
    crate::interrupt::install();
    crate::interrupt::on_quit_say(crate::interrupt::resume_note(
        &run_name,
        models
            .iter()
            .any(|m| config.provider_of(m).kind != ProviderKind::Files),
    ));
    merge_into_manifest(&mut manifest, &config, &models);
    for why in answer_set_warnings(&suite, &manifest) {
        eprintln!("warning: {why}");
    }
    for why in same_model_warnings(&manifest.models, &manifest.providers) {
        eprintln!("warning: {why}");
    }
    manifest.status = "running".into();
    manifest.updated_at = now.rfc3339();
    write_json_atomic(&run_dir.file("manifest.json"), &manifest)?;

    let outputs_path = run_dir.file(OUTPUTS_FILE);
    let existing: Vec<OutputKey> = read_jsonl_repairing(&outputs_path)?;
    let items = pending_items(
        &suite,
        &models,
        &existing,
        args.retry_failed,
        args.limit.map(|n| n as usize),
    );
    if let Some(n) = args.limit.filter(|&n| (n as usize) < suite.tasks.len()) {
        // A run this invocation named goes on only when named: without --run a new one starts.
        let how = if args.run.is_none() {
            format!("with `--run {run_name}` and")
        } else {
            "in run `".to_string() + &run_name + "`,"
        };
        eprintln!(
            "note: --limit {n}: the first {n} of the suite's {} tasks; the others wait for the same command {how} without --limit",
            suite.tasks.len()
        );
    }
    if resumed {
        warn_edited_answers(&config, &suite, &models, &outputs_path)?;
    }
    if args.refresh && items.is_empty() {
        eprintln!(
            "note: --refresh asks again only for items still to generate, and run `{run_name}` has none; to generate everything afresh, start a new run (failed items: --retry-failed)"
        );
    }
    drop(existing);
    let stop = Arc::new(Stop::with_deadline(
        args.deadline.map(|d| std::time::Instant::now() + d),
    ));
    let ctx = Arc::new(Ctx {
        cache: Cache::new(config.cache_dir()),
        suite,
        config,
        models,
        http,
        refresh: args.refresh,
        stop: stop.clone(),
        named_here: args.run.is_none(),
        limit: args.limit.map(|n| n as usize),
    });

    let progress = Progress::new(items.len() as u64, cli.quiet, "generate");
    let mut invocation = Invocation::default();
    let work_ctx = ctx.clone();
    let result = run_recorded(
        group_by_provider(&ctx, items),
        &stop,
        &outputs_path,
        move |item| produce(work_ctx.clone(), item),
        |rec: OutputRecord| {
            let model = ctx
                .models
                .iter()
                .find(|m| m.id == rec.model)
                .expect("records name selected models");
            // Nothing is spent on a cache hit or a `files` answer (no request: no key).
            let asked = !rec.from_cache && rec.cache_key.is_some();
            let spent = if asked { rec.cost_usd } else { Some(0.0) };
            progress.item_done(
                rec.from_cache,
                rec.status == Status::Failed,
                spent,
                model.price_input_per_mtok.is_some(),
            );
            invocation.add(&rec);
        },
    );
    progress.finish();
    result?;
    let name = run_dir.name().to_string();
    let finished = finish(&ctx, &run_dir, &mut manifest, &invocation);
    let refused = finished.as_ref().is_err_and(|e| {
        matches!(
            e.downcast_ref::<JudgeError>(),
            Some(JudgeError::ProviderRefused(_))
        )
    });
    // A run this invocation named and started, refused (bad key, no quota) before a single
    // output: nothing to resume, so no empty run is left behind to pick through.
    let removed = refused
        && args.run.is_none()
        && invocation.items == 0
        && std::fs::remove_dir_all(run_dir.path()).is_ok();
    if removed {
        eprintln!("run `{name}` removed: nothing was generated");
    }
    let finished = finished.map_err(|e| match e.downcast::<JudgeError>() {
        Ok(JudgeError::ProviderRefused(msg)) if removed => {
            JudgeError::ProviderRefused(format!("{msg}; once fixed, rerun the same command")).into()
        }
        Ok(JudgeError::ProviderRefused(msg)) => {
            JudgeError::ProviderRefused(crate::error::after_refusal(&msg, &name)).into()
        }
        Ok(other) => other.into(),
        Err(e) => e,
    });
    finished.map(|outcome| (outcome, name))
}

/// A run keeps what it generated: an answer file edited since (a `files` model's answer) is not
/// read again. Says so, per model, rather than leaving the edit silently unused.
fn warn_edited_answers(
    config: &Config,
    suite: &crate::suite::Suite,
    models: &[ModelConfig],
    outputs_path: &std::path::Path,
) -> anyhow::Result<()> {
    let sets: BTreeMap<&str, &str> = models
        .iter()
        .filter(|m| config.provider_of(m).kind == ProviderKind::Files)
        .map(|m| (m.id.as_str(), m.model.as_str()))
        .collect();
    if sets.is_empty() {
        return Ok(());
    }
    let mut edited: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for_each_jsonl(outputs_path, |r: OutputRecord| {
        let Some((id, set)) = sets.get_key_value(r.model.as_str()) else {
            return;
        };
        let now = suite.answers.get(*set).and_then(|a| a.get(&r.task));
        // A run recorded before answers lost their byte order mark kept it: not an edit.
        let recorded = r
            .text
            .as_deref()
            .map(|t| t.strip_prefix('\u{feff}').unwrap_or(t));
        if r.status == Status::Ok && now.is_some_and(|text| Some(text.as_str()) != recorded) {
            edited.entry(id).or_default().push(r.task);
        }
    })?;
    for (model, tasks) in edited {
        let set = sets[model];
        let shown: Vec<String> = tasks
            .iter()
            .take(3)
            .map(|t| format!("answers/{set}/{t}.md"))
            .collect();
        let more = match tasks.len().saturating_sub(3) {
            0 => String::new(),
            n => format!(" and {n} more"),
        };
        eprintln!(
            "warning: {}{more} changed since model `{model}` answered in this run; the run keeps the answers it recorded (a new run reads the files afresh)",
            shown.join(", ")
        );
    }
    Ok(())
}

/// A `files` model names an answer set (`model`); one the suite does not have is a typo in
/// judge.toml, refused before anything is written rather than a run of `missing_answer`s.
fn refuse_missing_answer_sets(
    config: &Config,
    suite: &crate::suite::Suite,
    models: &[ModelConfig],
    replays: impl Fn(&ModelConfig) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    for m in models {
        if config.provider_of(m).kind != crate::config::ProviderKind::Files {
            continue;
        }
        if let Some(why) = suite.answer_problems.get(&m.model) {
            if !replays(m)? {
                continue;
            }
            return Err(JudgeError::usage(format!(
                "model `{}` replays answer set `{}`, which cannot be read as one: {why}",
                m.id, m.model
            ))
            .into());
        }
        if suite.answers.contains_key(&m.model) {
            continue;
        }
        let folder = config
            .suites_dir()
            .join(&suite.name)
            .join("answers")
            .join(&m.model);
        // Only a set name that is one folder name can be an empty set's folder (not `a/`,
        // `.` or an empty name, which point elsewhere).
        let one_name = !m.model.is_empty()
            && m.model != "."
            && m.model != ".."
            && !m.model.contains(['/', '\\']);
        if one_name && folder.is_dir() {
            return Err(JudgeError::usage(format!(
                "model `{}` replays answer set `{}`, whose folder {} holds no answers; add one <task>.md per task",
                m.id,
                m.model,
                folder.display()
            ))
            .into());
        }
        let sets: Vec<&str> = suite.answers.keys().map(String::as_str).collect();
        return Err(JudgeError::usage(format!(
            "model `{}` replays answer set `{}`, which suite `{}` does not have (suites/{}/answers/: {}); fix its `model` in {}",
            m.id,
            m.model,
            suite.name,
            suite.name,
            if sets.is_empty() {
                "none".to_string()
            } else {
                sets.join(", ")
            },
            config.path.display()
        ))
        .into());
    }
    Ok(())
}

/// The (task, model, status) of an output record and what it cost; the rest of a line is not
/// read.
#[derive(Debug, serde::Deserialize)]
struct OutputKey {
    task: String,
    model: String,
    status: Status,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    cost_usd: Option<f64>,
    #[serde(default)]
    replaced: Option<Replaced>,
}

/// Where a record goes in the sorted outputs file.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum SortKey {
    Known(u32, u32),
    Other(Box<(String, String)>),
}

/// What this invocation did, accumulated as records arrive (records are not kept).
#[derive(Debug, Default)]
struct Invocation {
    items: usize,
    hits: usize,
    spent_usd: f64,
    /// Items answered now whose cost is unknown (unpriced model, or no usage in the reply).
    uncosted: usize,
}

impl Invocation {
    fn add(&mut self, r: &OutputRecord) {
        self.items += 1;
        self.hits += usize::from(r.from_cache);
        // A cache hit spends nothing; a `files` answer's cost is unknown (never "$0.00").
        if !r.from_cache {
            self.spent_usd += r.cost_usd.unwrap_or(0.0);
            self.uncosted += usize::from(r.cost_unknown());
        }
    }
}

/// Rewrites the outputs sorted by (task, model) with one record each, writes the final
/// manifest, prints the summary and picks the outcome. Streams the file: memory does not grow
/// with the number of records.
fn finish(
    ctx: &Ctx,
    run_dir: &RunDir,
    manifest: &mut Manifest,
    invocation: &Invocation,
) -> anyhow::Result<Outcome> {
    let path = run_dir.file(OUTPUTS_FILE);
    // Known tasks and models sort by their index in id order: the index holds two u32 per
    // record instead of two strings. Anything else keeps its names and sorts after them.
    let mut model_ids: Vec<&str> = manifest.models.iter().map(|m| m.id.as_str()).collect();
    model_ids.sort_unstable();
    let index_of = |ids: &[&str], id: &str| ids.binary_search(&id).ok().map(|i| i as u32);
    let task_ids: Vec<&str> = ctx.suite.tasks.iter().map(|t| t.id.as_str()).collect();
    compact_jsonl(&path, |line| {
        let k: OutputKey = serde_json::from_str(line).ok()?;
        Some(
            match (index_of(&task_ids, &k.task), index_of(&model_ids, &k.model)) {
                (Some(t), Some(m)) => SortKey::Known(t, m),
                _ => SortKey::Other(Box::new((k.task, k.model))),
            },
        )
    })?;
    // What this invocation was to do: its models on the tasks in scope (the first --limit).
    let in_scope = ctx.limit.unwrap_or(usize::MAX).min(ctx.suite.tasks.len());
    let scope: std::collections::BTreeSet<&str> = ctx.suite.tasks[..in_scope]
        .iter()
        .map(|t| t.id.as_str())
        .collect();
    let selected: std::collections::BTreeSet<&str> =
        ctx.models.iter().map(|m| m.id.as_str()).collect();
    let mut tally = GenerationTally::default();
    let mut done: u64 = 0;
    for_each_jsonl(&path, |r: OutputRecord| {
        done += u64::from(scope.contains(r.task.as_str()) && selected.contains(r.model.as_str()));
        tally.add(&r);
    })?;
    let failed: u64 = ctx.models.iter().map(|m| tally.failed(&m.id)).sum();
    let expected = (in_scope * ctx.models.len()) as u64;
    let complete = done >= expected;
    let stop_reason = ctx.stop.reason();
    // The run's status covers every model in it, not only this invocation's (a resume with
    // --model for one of them does not make the run complete); a model not selected that has
    // no output at all and has left the config (its first request was refused) is no part.
    let tasks = ctx.suite.tasks.len() as u64;
    let run_complete = manifest
        .models
        .iter()
        .filter(|m| crate::commands::part_of_run(&ctx.config, &m.id, tally.records(&m.id) > 0))
        .all(|m| tally.records(&m.id) == tasks);
    manifest.status = if complete && run_complete && stop_reason.is_none() {
        "complete"
    } else {
        "incomplete"
    }
    .into();
    manifest.updated_at = UtcDateTime::from_system(SystemTime::now()).rfc3339();
    write_json_atomic(&run_dir.file("manifest.json"), manifest)?;

    eprint!("{}", tally.render(&ctx.models));
    // A trial's suggested commands keep to its tasks: without it they would run the suite.
    let limit_flag = ctx.limit.map_or(String::new(), |n| format!(" --limit {n}"));
    if let Some(line) = tally.failure_line(&ctx.models) {
        // The models this invocation was given, when not every configured one: without them
        // the suggested commands would add the others to the run.
        let mut filter: String = if ctx.models.len() < ctx.config.models.len() {
            ctx.models
                .iter()
                .map(|m| format!(" --model {}", m.id))
                .collect()
        } else {
            String::new()
        };
        filter.push_str(&limit_flag);
        eprintln!(
            "{} (each record's `error` in {OUTPUTS_FILE} says more; to ask again: `judge generate --run {name}{filter} --retry-failed`, then `judge compare --run {name}` to judge the new outputs; or both: `judge run --run {name}{filter} --retry-failed`)",
            crate::report::printable(&line),
            name = run_dir.name()
        );
    }
    // The whole run's records, also of models this invocation did not select.
    let (run_done, run_failed) = manifest.models.iter().fold((0, 0), |(d, f), m| {
        (d + tally.records(&m.id), f + tally.failed(&m.id))
    });
    eprintln!(
        "run `{}`: {run_done} outputs ({run_failed} failed) in {}; this invocation: {} items, {} from cache, {} requests, {} spent",
        run_dir.name(),
        path.display(),
        invocation.items,
        invocation.hits,
        // Every request sent, those of items a stop cut short too.
        ctx.http
            .values()
            .map(HttpProvider::requests_sent)
            .sum::<u64>(),
        // Hand-written answers and unpriced models are unknown, never "$0.00".
        crate::report::spent_phrase(invocation.spent_usd, invocation.uncosted, "item")
    );
    match stop_reason {
        // A run this invocation named itself is resumed by naming it.
        Some(StopReason::Interrupted) => {
            Err(JudgeError::Interrupted(ctx.named_here.then(|| run_dir.name().to_string())).into())
        }
        // How to resume is added by the caller, which knows whether the run stays.
        Some(StopReason::Fatal(msg)) => Err(JudgeError::ProviderRefused(msg).into()),
        Some(StopReason::Io(msg)) => Err(anyhow::anyhow!(msg)),
        None if !complete && let Some(note) = crate::engine::budget::reached_note() => {
            eprintln!(
                "{note}; {} item(s) not done; rerun with --run {}{limit_flag} (and a new --max-cost) to go on",
                expected.saturating_sub(done),
                run_dir.name()
            );
            Ok(Outcome::ItemsFailed)
        }
        None if !complete && ctx.stop.past_deadline() => {
            let missing = expected.saturating_sub(done);
            eprintln!(
                "deadline reached: {missing} item(s) not done (not started, or retries cut short); rerun with --run {}{limit_flag} to resume",
                run_dir.name()
            );
            Ok(Outcome::ItemsFailed)
        }
        None if failed > 0 => Ok(Outcome::ItemsFailed),
        None => Ok(Outcome::Success),
    }
}

/// Refuses `--max-cost` for a model to ask (not an answer set) that has no price: judge.toml's,
/// or for a model with records in run `run` (`answered`) the price the run keeps. Only
/// models with items to ask (`asks`) are looked at: the others make no request.
fn refuse_unpriced_payers(
    config: &Config,
    models: &[ModelConfig],
    asks: &dyn Fn(&str) -> bool,
    answered: &dyn Fn(&str) -> bool,
    run: &str,
) -> Result<(), JudgeError> {
    let asked = models
        .iter()
        .filter(|m| config.provider_of(m).kind != ProviderKind::Files && asks(&m.id));
    let kept = crate::engine::budget::Kept {
        run,
        by: answered,
        what: "model",
    };
    crate::engine::budget::refuse_unpriced(asked, Some(kept))
}

/// `generate --dry-run`: per model, the items still to generate, how many the cache answers,
/// and for the others the estimated input tokens, the most output tokens (the token cap
/// each) and at most about what they cost. Reads the run, if it exists, unlocked; refuses what
/// the real generate would (changed settings); writes nothing.
fn dry_run(
    config: &Config,
    suite: &Suite,
    models: &mut [ModelConfig],
    args: &GenerateArgs,
) -> anyhow::Result<String> {
    let mut keys: Vec<OutputKey> = Vec::new();
    let mut name = match &args.run {
        Some(run) => format!("new run `{run}`"),
        None => "a new run".to_string(),
    };
    if let Some(run) = &args.run {
        let run_dir = RunDir::at(&config.runs_dir(), run)?;
        run_dir.refuse_without_manifest()?;
        if run_dir.exists() {
            name = format!("run `{run}`");
            let old = read_manifest(&run_dir)?;
            let outputs_path = run_dir.file(OUTPUTS_FILE);
            keys = crate::engine::run_dir::read_jsonl_skipping_torn(&outputs_path)?;
            crate::commands::refuse_foreign_outputs(
                &outputs_path,
                keys.iter().map(|k| (k.task.as_str(), k.model.as_str())),
                suite,
                &old,
            )?;
            let recorded: std::collections::BTreeSet<&str> =
                keys.iter().map(|k| k.model.as_str()).collect();
            let has_records = |id: &str| recorded.contains(id);
            let providers: Vec<_> = models.iter().map(|m| config.provider_of(m)).collect();
            if let Some(conflict) =
                resume_conflict(&old, suite, &config.run, models, &providers, &has_records)
            {
                return Err(JudgeError::usage(format!(
                    "cannot resume run `{run}`: {conflict}; start a new run (another --run name)"
                ))
                .into());
            }
            keep_recorded_prices(models, &old, &has_records);
            if args.max_cost.is_some() {
                let limit = args.limit.map(|n| n as usize);
                let asks: std::collections::BTreeSet<&str> =
                    pending_items(suite, models, &keys, args.retry_failed, limit)
                        .iter()
                        .map(|i| models[i.model].id.as_str())
                        .collect();
                refuse_unpriced_payers(config, models, &|id| asks.contains(id), &has_records, run)?;
            }
        }
    }
    let items = pending_items(
        suite,
        models,
        &keys,
        args.retry_failed,
        args.limit.map(|n| n as usize),
    );
    let cache = Cache::new(config.cache_dir());
    let cap = u64::from(config.run.max_tokens);
    let mut out = String::new();
    let mut total = crate::report::plan::PlanTotal::default();
    for (mi, m) in models.iter().enumerate() {
        let mine: Vec<&Item> = items.iter().filter(|i| i.model == mi).collect();
        let provider = config.provider_of(m);
        if provider.kind == ProviderKind::Files {
            out.push_str(&format!(
                "model `{}`: {} answer(s) to replay from answer set `{}`: no requests\n",
                m.id,
                mine.len(),
                m.model
            ));
            continue;
        }
        let (mut cached, mut input_tokens) = (0usize, 0u64);
        for item in &mine {
            let task = &suite.tasks[item.task];
            let wire = to_wire(provider, &chat_request(config, suite, task, &m.model));
            if !args.refresh
                && crate::engine::calls::cached_reply(&cache, provider, &wire, 1)
                    .is_some_and(|r| r.is_ok())
            {
                cached += 1;
                continue;
            }
            input_tokens += wire.estimated_tokens.saturating_sub(cap);
        }
        out.push_str(&total.line(&crate::report::plan::PayerPlan {
            head: format!("model `{}`: {} item(s) to generate", m.id, mine.len()),
            payer: m,
            cached,
            requests: (mine.len() - cached) as u64,
            input_tokens,
            cap: (config.run.max_tokens, "max_tokens"),
        }));
    }
    out.push_str(&format!(
        "{name}: {} item(s) to generate in all, {}. Failed requests retried after a 429 or 5xx are not counted. Nothing was asked or written; drop --dry-run to generate (then `judge compare --run {} --dry-run` prices the judging).\n",
        items.len(),
        total.bound("models"),
        args.run.as_deref().unwrap_or("RUN"),
    ));
    Ok(out)
}

/// The prices a run's answered models were costed at stay theirs: a model of `models` with
/// outputs in run `old` whose price judge.toml has since changed takes the run's price back,
/// with a note, so that every cost of the run (records, summaries, leaderboard) is at one
/// price. A new run takes the new prices (the cache answers it at no cost).
fn keep_recorded_prices(
    models: &mut [ModelConfig],
    old: &Manifest,
    has_records: &dyn Fn(&str) -> bool,
) {
    for m in models.iter_mut().filter(|m| has_records(&m.id)) {
        let Some(o) = old.models.iter().find(|o| o.id == m.id) else {
            continue;
        };
        let recorded = (o.price_input_per_mtok, o.price_output_per_mtok);
        if recorded != (m.price_input_per_mtok, m.price_output_per_mtok) {
            eprintln!(
                "note: {} gives model `{}` {}, and run `{}` costed its outputs {}: the run keeps its price so that its costs add up; start a new run for the new price (the cache answers it without new calls)",
                crate::config_name(),
                m.id,
                m.price_text(),
                old.run,
                o.price_text()
            );
            (m.price_input_per_mtok, m.price_output_per_mtok) = recorded;
        }
    }
}

fn merge_into_manifest(manifest: &mut Manifest, config: &Config, models: &[ModelConfig]) {
    for m in models {
        // A model re-pointed (or repriced) before it had any output takes its new entry, in
        // its place (the order decides each pair's model_a and model_b); an answered model's
        // price is the run's already (`keep_recorded_prices`).
        match manifest.models.iter_mut().find(|o| o.id == m.id) {
            Some(entry)
                if entry.model != m.model
                    || entry.provider != m.provider
                    || entry.price_input_per_mtok != m.price_input_per_mtok
                    || entry.price_output_per_mtok != m.price_output_per_mtok =>
            {
                *entry = m.clone();
            }
            Some(_) => {}
            None => manifest.models.push(m.clone()),
        }
        let p = config.provider_of(m);
        manifest.providers.retain(|o| o.name != p.name);
        manifest.providers.push(p.clone());
    }
    manifest.providers.sort_by(|a, b| a.name.cmp(&b.name));
    manifest.config_file = config.path.display().to_string();
    manifest.judges = config.judges.clone();
}

/// One warning per group of the run's models that send identical requests (the same
/// provider kind, endpoint, model name and token-cap field: generation settings are the
/// run's). The cache key is the request, not the model id, so such models get one and the
/// same answer to every task, and a comparison between them is of two identical texts:
/// it measures the judge's position bias, never the models.
fn same_model_warnings(
    models: &[ModelConfig],
    providers: &[crate::config::ProviderConfig],
) -> Vec<String> {
    let mut groups: std::collections::BTreeMap<_, Vec<&str>> = Default::default();
    for m in models {
        let Some(p) = providers.iter().find(|p| p.name == m.provider) else {
            continue;
        };
        let request = (
            p.kind.as_str(),
            p.base_url.as_deref().unwrap_or_default(),
            m.model.as_str(),
            p.token_limit_field.as_str(),
        );
        groups.entry(request).or_default().push(&m.id);
    }
    groups
        .into_iter()
        .filter(|(_, ids)| ids.len() > 1)
        .map(|((kind, _, model, _), ids)| {
            let what = if kind == "files" {
                format!("replay answer set `{model}`")
            } else {
                format!("send identical requests (model `{model}` on the same endpoint)")
            };
            let ids: Vec<String> = ids.iter().map(|id| format!("`{id}`")).collect();
            format!(
                "models {} {what}: the cache gives them one and the same answer to every task, so judging them against each other compares identical texts; point each id at a different model or answer set",
                ids.join(" and ")
            )
        })
        .collect()
}

/// The models to generate for: `--model` ids in config order, or all of them.
pub(crate) fn select_models(
    config: &Config,
    wanted: &[String],
) -> anyhow::Result<Vec<ModelConfig>> {
    if config.models.is_empty() {
        return Err(JudgeError::usage(format!(
            "{}: no [[models]] defined; add at least one",
            config.path.display()
        ))
        .into());
    }
    for id in wanted {
        if !config.models.iter().any(|m| &m.id == id) {
            let known: Vec<&str> = config.models.iter().map(|m| m.id.as_str()).collect();
            return Err(JudgeError::usage(format!(
                "--model `{id}` is not in {} (models: {})",
                config.path.display(),
                known.join(", ")
            ))
            .into());
        }
    }
    Ok(config
        .models
        .iter()
        .filter(|m| wanted.is_empty() || wanted.contains(&m.id))
        .cloned()
        .collect())
}

/// Items without a usable record: missing, or failed when `retry_failed`.
fn pending_items(
    suite: &Suite,
    models: &[ModelConfig],
    existing: &[OutputKey],
    retry_failed: bool,
    limit: Option<usize>,
) -> Vec<Item> {
    let mut latest: BTreeMap<(&str, &str), &OutputKey> = BTreeMap::new();
    for r in existing {
        latest.insert((r.task.as_str(), r.model.as_str()), r);
    }
    let mut items = Vec::new();
    let tasks = limit.unwrap_or(usize::MAX).min(suite.tasks.len());
    for (ti, task) in suite.tasks[..tasks].iter().enumerate() {
        for (mi, model) in models.iter().enumerate() {
            let (pending, replaces) = match latest.get(&(task.id.as_str(), model.id.as_str())) {
                None => (true, None),
                Some(r) if r.status == Status::Failed => (
                    retry_failed,
                    Replaced::passed_on(r.usage, r.cost_usd, r.replaced),
                ),
                Some(_) => (false, None),
            };
            if pending {
                items.push(Item {
                    task: ti,
                    model: mi,
                    replaces,
                });
            }
        }
    }
    items
}

fn group_by_provider(ctx: &Ctx, items: Vec<Item>) -> Vec<Group<Item>> {
    let mut by_provider: BTreeMap<&str, Vec<Item>> = BTreeMap::new();
    for item in items {
        by_provider
            .entry(ctx.models[item.model].provider.as_str())
            .or_default()
            .push(item);
    }
    by_provider
        .into_iter()
        .map(|(name, items)| Group {
            concurrency: ctx.config.providers[name].max_concurrency,
            items,
        })
        .collect()
}

/// The brief every model of a run is given as its system message: the suite's context, the
/// style preset's instruction and `[run] instruction`, the empty ones left out. The judge and
/// the labellers are shown it as what the answers were written to.
pub fn model_brief(suite: &Suite, settings: &crate::config::RunSettings) -> String {
    let parts: Vec<&str> = [
        suite.context.as_str(),
        settings.style.instruction(),
        settings.instruction.as_str(),
    ]
    .into_iter()
    .filter(|s| !s.trim().is_empty())
    .collect();
    parts.join("\n\n")
}

/// The brief a run's answers were written to, as the judge and labellers are shown it: the
/// [`model_brief`] of the run's settings. It depends on the settings alone, never on which
/// models are in the run: a model added to a judged run must not change the judge's prompt.
/// Answer sets (`files` models) get no system message; generate warns of that.
pub fn run_brief(suite: &Suite, manifest: &Manifest) -> String {
    model_brief(suite, &manifest.settings)
}

/// Warnings for a run with answer sets (`files` models), which replay text written elsewhere:
/// none of the run's generation settings reached them (no system message, token cap or
/// temperature). Ranked beside generated models, they are compared on unequal terms unless
/// they were written under the same settings (DESIGN §2.1); alone, a style or instruction the
/// run sets reached no model, though the judge is shown it as the brief.
fn answer_set_warnings(suite: &Suite, manifest: &Manifest) -> Vec<String> {
    let kind = |m: &ModelConfig| {
        manifest
            .providers
            .iter()
            .find(|p| p.name == m.provider)
            .map(|p| p.kind)
    };
    let (sets, asked): (Vec<&ModelConfig>, Vec<&ModelConfig>) = manifest
        .models
        .iter()
        .partition(|m| kind(m) == Some(ProviderKind::Files));
    if sets.is_empty() {
        return Vec::new();
    }
    let settings = &manifest.settings;
    let mut told = Vec::new();
    if settings.style != crate::config::StylePreset::None {
        told.push(format!("style `{}`", settings.style));
    }
    if !settings.instruction.trim().is_empty() {
        told.push("`[run] instruction`".to_string());
    }
    let ids = |ms: &[&ModelConfig]| {
        ms.iter()
            .map(|m| format!("`{}`", m.id))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if asked.is_empty() {
        if told.is_empty() {
            return Vec::new();
        }
        return vec![format!(
            "the run's {} reached no model: answer sets ({}) get no system message, yet the judge and labellers are shown it as part of the brief the answers were written to",
            told.join(" and "),
            ids(&sets)
        )];
    }
    let mut why = format!(
        "answer sets {} are ranked beside generated models {}, but none of the run's generation settings reached them (no system message{}, no token cap of {}, no temperature): the comparison is fair only if they were written under the same ones",
        ids(&sets),
        ids(&asked),
        told.iter()
            .map(|t| format!(", so no {t}"))
            .collect::<String>(),
        settings.max_tokens,
    );
    // About four characters a token: an answer far longer than the cap allows is one no
    // generated model could have written.
    let allowed = 4 * u64::from(settings.max_tokens);
    let longest = sets
        .iter()
        .filter_map(|m| {
            let answers = suite.answers.get(&m.model)?;
            let chars = answers.values().map(|a| a.chars().count()).max()?;
            Some((chars as u64, m))
        })
        .max_by_key(|(chars, _)| *chars);
    if let Some((chars, m)) = longest
        && chars > 2 * allowed
    {
        why.push_str(&format!(
            "; answer set `{}` holds answers of up to {chars} characters, where max_tokens = {} lets a generated model write about {allowed}",
            m.model, settings.max_tokens
        ));
    }
    vec![why]
}

/// The request every model gets for a task: [`model_brief`] as the system message, the task
/// as the user message.
pub fn chat_request(config: &Config, suite: &Suite, task: &Task, model_name: &str) -> ChatRequest {
    let system = model_brief(suite, &config.run);
    let mut messages = Vec::with_capacity(2);
    if !system.is_empty() {
        messages.push(Message::system(system));
    }
    messages.push(Message::user(task.prompt.clone()));
    ChatRequest {
        model: model_name.to_string(),
        messages,
        max_tokens: config.run.max_tokens,
        temperature: config.run.temperature,
    }
}

/// Produces one record, or `None` when the run is stopping and the item did not finish (it is
/// requested again on resume).
async fn produce(ctx: Arc<Ctx>, item: Item) -> Option<OutputRecord> {
    let model = &ctx.models[item.model];
    let task = &ctx.suite.tasks[item.task];
    let provider = ctx.config.provider_of(model);
    let mut record = OutputRecord {
        task: task.id.clone(),
        model: model.id.clone(),
        status: Status::Ok,
        text: None,
        error: None,
        finish_reason: None,
        usage: None,
        cost_usd: None,
        cache_key: None,
        from_cache: false,
        attempts: 0,
        settings: ctx.config.run.generation(),
        replaced: item.replaces,
    };
    let result = match provider.kind {
        ProviderKind::Files => files::answer(&ctx.suite, &model.model, &task.id),
        _ => {
            let http = &ctx.http[&provider.name];
            let wire = to_wire(
                provider,
                &chat_request(&ctx.config, &ctx.suite, task, &model.model),
            );
            let use_ = CacheUse {
                attempt: 1,
                refresh: ctx.refresh,
                verdict: false,
            };
            let call = cached_call(&ctx.cache, http, &wire, use_, &ctx.stop).await?;
            record.cache_key = Some(call.cache_key);
            record.from_cache = call.from_cache;
            record.attempts = call.attempts;
            call.reply
        }
    };
    match result {
        Ok(reply) => {
            record.cost_usd = reply
                .usage
                .and_then(|u| model.cost_usd(u.input_tokens, u.output_tokens));
            record.usage = reply.usage;
            record.finish_reason = reply.finish_reason;
            record.text = Some(reply.text);
        }
        Err(e) => {
            record.status = Status::Failed;
            // A failure the provider billed (an empty reply cut by the cap) costs money too.
            record.cost_usd = e
                .usage
                .and_then(|u| model.cost_usd(u.input_tokens, u.output_tokens));
            record.usage = e.usage;
            record.error = Some(RecordedError {
                class: e.class,
                message: e.message,
                http_status: e.status,
            });
        }
    }
    // Counted as the reply comes, not when the record reaches the writer: this worker's next
    // request must see it (--max-cost).
    if !record.from_cache && record.cache_key.is_some() {
        crate::engine::budget::spend(record.cost_usd);
    }
    Some(record)
}
