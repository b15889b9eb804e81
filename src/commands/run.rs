//! `judge run`: generate → compare → rank in one command, printing the leaderboard. On the
//! shipped offline default (answer sets + the execution judge) it needs no network and no key.

use crate::cli::Cli;
use crate::cli::{CompareArgs, GenerateArgs, RankArgs, RunArgs};
use crate::commands::{compare, generate, rank};
use crate::config::load_config;
use crate::error::Outcome;
use crate::judging::EXEC_JUDGE;

/// Runs the pipeline. Failed items are data: each step still runs, and the exit code is 1 if
/// any step had failures.
pub fn run(cli: &Cli, args: &RunArgs) -> anyhow::Result<Outcome> {
    let config = load_config(&cli.config)?;
    // Everything that would stop the last step is refused before the first spends anything.
    rank::check_fit_args(args.resamples, args.allow_few_resamples, args.prior)?;
    // An unknown --model is named as such before the count below would miscount it.
    let models = generate::select_models(&config, &args.models)?;
    let judges = if !args.judges.is_empty() {
        let mut seen = std::collections::BTreeSet::new();
        args.judges
            .iter()
            .filter(|j| seen.insert(j.as_str()))
            .cloned()
            .collect()
    } else if !config.judges.is_empty() {
        config.judges.iter().map(|j| j.id.clone()).collect()
    } else {
        vec![EXEC_JUDGE.to_string()]
    };
    // The run stays locked from generate to rank: no other process can change it in between.
    crate::engine::run_dir::keep_locks_until_exit();
    // What compare would refuse is refused before anything is generated (and paid for): a
    // judge of a ranked model's family (an existing run's models are ranked too), a judge
    // whose settings changed since it judged the run, a judge whose API key is missing.
    let resolved = compare::resolve_judges(&config, &judges)?;
    let mut ranked = models.clone();
    if let Some(name) = &args.run {
        let mut run_dir = crate::engine::run_dir::RunDir::at(&config.runs_dir(), name)?;
        if run_dir.path().is_dir() && run_dir.file("manifest.json").is_file() {
            run_dir.create_and_lock()?;
            let manifest = crate::engine::manifest::read_manifest(&run_dir)?;
            // The run's models that have outputs are ranked with the selected ones, as
            // compare ranks them.
            #[derive(serde::Deserialize)]
            struct ModelOf {
                model: String,
            }
            let answered: std::collections::BTreeSet<String> =
                crate::engine::run_dir::read_jsonl_repairing::<ModelOf>(
                    &run_dir.file(generate::OUTPUTS_FILE),
                )?
                .into_iter()
                .map(|o| o.model)
                .collect();
            for m in &manifest.models {
                if answered.contains(&m.id) && !ranked.iter().any(|r| r.id == m.id) {
                    ranked.push(m.clone());
                }
            }
            let judgments: Vec<crate::records::JudgmentRecord> =
                crate::engine::run_dir::read_jsonl_repairing(
                    &run_dir.file(compare::JUDGMENTS_FILE),
                )?;
            let judged = compare::judged_by(&judgments);
            compare::refuse_changed_judge_setup(&config, &manifest, name, &resolved, &judged)?;
            // A judge that has judged in the run keeps the run's price for it: one the run
            // costed at none is refused now, before generation spends anything.
            // A judge new to the run takes judge.toml's price.
            if args.max_cost.is_some() {
                let costed: Vec<crate::config::ModelConfig> = compare::llm_judges(&resolved)
                    .into_iter()
                    .map(|j| {
                        judged
                            .contains(&j.id)
                            .then(|| compare::as_recorded(j, &manifest))
                            .flatten()
                            .unwrap_or_else(|| j.clone())
                    })
                    .collect();
                let kept = crate::engine::budget::Kept {
                    run: name,
                    by: &|id| judged.contains(id),
                    what: "judge",
                };
                crate::engine::budget::refuse_unpriced(&costed, Some(kept))?;
            }
            // The prompt this version would judge with, against the one the run was judged
            // with (a changed suite is refused by generate, before anything is spent, anyway).
            if let Ok(suite) = crate::suite::load_suite(&config.suites_dir(), &manifest.suite.name)
            {
                let template = crate::prompt::PairwiseTemplate::parse(compare::PAIRWISE_TEMPLATE)
                    .expect("the shipped template is valid (tested)");
                let brief = crate::commands::generate::run_brief(&suite, &manifest);
                let (prompt_sha256, _) =
                    crate::prompt::template_sha256(&template, &brief, &suite.criteria);
                compare::refuse_changed_prompt(&judgments, &resolved, &prompt_sha256, name)?;
            }
        }
    }
    // The count is of the models ranked: the selected ones and an existing run's answered ones.
    if ranked.len() < 2 {
        return Err(crate::error::JudgeError::usage(format!(
            "`judge run` ranks models against each other and needs at least two (found {}); use `judge generate` for one model",
            ranked.len()
        ))
        .into());
    }
    compare::refuse_own_family(&config, &resolved, &ranked)?;
    compare::warn_shared_makers(&resolved, &ranked);
    if let Some(usd) = args.max_cost {
        // A new run's payers all need judge.toml's prices, judges included, before anything
        // is generated; an existing run keeps the prices it costed its models and judges at,
        // which generate and compare check.
        if !crate::commands::run_exists(&config, args.run.as_deref()) {
            let paying = config.models.iter().filter(|m| {
                (args.models.is_empty() || args.models.contains(&m.id))
                    && config.provider_of(m).kind != crate::config::ProviderKind::Files
            });
            crate::engine::budget::refuse_unpriced(
                paying.chain(compare::llm_judges(&resolved)),
                None,
            )?;
        }
        crate::engine::budget::limit(usd);
    }
    // Every key the run will need, the models' and the judges', before anything is sent.
    let mut users = compare::llm_judges(&resolved);
    users.extend(
        config
            .models
            .iter()
            .filter(|m| args.models.is_empty() || args.models.contains(&m.id)),
    );
    crate::engine::calls::build_http_providers(&config, &users)?;
    let one_document = matches!(
        args.format,
        crate::report::Format::Json | crate::report::Format::Csv
    );
    if judges.len() > 1 && one_document {
        return Err(crate::error::JudgeError::usage(format!(
            "--format {} prints one leaderboard with no judge column, and {} judges give one each; pick one with --judge (the run keeps leaderboards/<judge>.{{json,csv,md}} for every judge)",
            clap::ValueEnum::to_possible_value(&args.format)
                .map_or_else(String::new, |v| v.get_name().to_string()),
            judges.len()
        ))
        .into());
    }
    if judges.iter().any(|j| j == EXEC_JUDGE) {
        let suite = crate::suite::load_suite(&config.suites_dir(), &config.run.suite)?;
        compare::refuse_exec_without_checks(&suite)?;
        // A new run judged by its checks: a check that does not compile would make every
        // comparison of its task fail, and fixing it later needs another run.
        let new_run = !crate::commands::run_exists(&config, args.run.as_deref());
        let uncompilable = if new_run {
            crate::commands::check::uncompilable_checks(&suite)
        } else {
            Vec::new()
        };
        if let Some(why) = uncompilable.into_iter().next() {
            return Err(crate::error::JudgeError::usage(format!(
                "{why}; the exec judge would fail every comparison of that task: fix it before the run begins"
            ))
            .into());
        }
        // A new run's checks all have to run: a sandbox that cannot start here is named
        // before anything is generated, not after.
        if new_run {
            crate::commands::check::sandbox_policy(false, None).map_err(|e| {
                crate::error::JudgeError::usage(format!(
                    "the exec judge runs every answer's check in the sandbox, which cannot run here: {e:#}; generate with `judge generate`, then run the checks with `judge check --no-sandbox` if you accept the risk, then `judge compare` and `judge rank`"
                ))
            })?;
        }
    }
    crate::interrupt::install();
    // Interrupted after the run got its default name, `judge run` resumes it by that name.
    let (generated, run_name) = generate::run_named(
        cli,
        &GenerateArgs {
            run: args.run.clone(),
            models: args.models.clone(),
            refresh: false,
            retry_failed: args.retry_failed,
            deadline: None,
            // The limit is set once for the whole run, above; generate checks the prices the
            // run keeps.
            max_cost: args.max_cost,
            dry_run: false,
            limit: args.limit,
        },
    )?;
    // Past --max-cost nothing more can be asked: judging what generation left would rank
    // a run that is not whole.
    if let Some(note) = crate::engine::budget::reached_note() {
        eprintln!(
            "not judged or ranked: {note}; rerun `judge run --run {run_name}{}` with a new --max-cost to go on",
            args.limit
                .map_or(String::new(), |n| format!(" --limit {n}"))
        );
        return Ok(Outcome::ItemsFailed);
    }
    // From here an interruption names the run when it got its default name just now.
    let started = args.run.is_none().then(|| run_name.clone());
    let resumable = |e: anyhow::Error| -> anyhow::Error {
        if is_interrupted(&e) {
            crate::error::JudgeError::Interrupted(started.clone()).into()
        } else {
            e
        }
    };
    stop_if_interrupted().map_err(resumable)?;
    let compared = compare::run(
        cli,
        &CompareArgs {
            run: run_name.clone(),
            judges: judges.clone(),
            refresh: false,
            retry_failed: args.retry_failed,
            deadline: None,
            dry_run: false,
            max_cost: args.max_cost,
        },
    )
    .map_err(resumable)?;
    stop_if_interrupted().map_err(resumable)?;
    let mut unranked = false;
    for judge in &judges {
        // Each judge's warnings go to stderr before its leaderboard: with several, say whose.
        if judges.len() > 1 {
            eprintln!("judge `{}`:", crate::report::printable(judge));
        }
        let ranked = rank::run(
            cli,
            &RankArgs {
                run: Some(run_name.clone()),
                comparisons: None,
                judge: Some(judge.clone()),
                prior: args.prior,
                resamples: args.resamples,
                allow_few_resamples: args.allow_few_resamples,
                seed: None,
                bootstrap_unit: args.bootstrap_unit,
                show_prompt: false,
                from_labels: false,
                format: Some(args.format),
                output: None,
                timings: false,
            },
        );
        stop_if_interrupted().map_err(resumable)?;
        // The run was written: a judge that cannot be ranked (every call failed, say) is a
        // failed item of the run (exit 1), not a usage error, and the other judges still rank.
        if let Err(e) = ranked {
            if is_interrupted(&e) {
                return Err(resumable(e));
            }
            eprintln!(
                "error: {}",
                crate::report::printable(&format!("judge `{judge}` not ranked: {e:#}"))
            );
            unranked = true;
        }
    }
    eprintln!(
        "run `{run_name}` is in {}",
        config.runs_dir().join(&run_name).display()
    );
    let failed = unranked || [generated, compared].contains(&Outcome::ItemsFailed);
    Ok(if failed {
        Outcome::ItemsFailed
    } else {
        Outcome::Success
    })
}

fn is_interrupted(e: &anyhow::Error) -> bool {
    e.downcast_ref::<crate::error::JudgeError>()
        .is_some_and(|j| matches!(j, crate::error::JudgeError::Interrupted(_)))
}

/// Ends the pipeline with exit 130 after a Ctrl-C (the step that saw it has written
/// everything it finished).
fn stop_if_interrupted() -> anyhow::Result<()> {
    if crate::interrupt::requested() {
        return Err(crate::error::JudgeError::Interrupted(None).into());
    }
    Ok(())
}
