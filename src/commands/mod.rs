//! Thin glue per subcommand: reads config and inputs, calls the core and the engine, writes
//! outputs. `dispatch` picks the command.

pub mod check;
pub mod compare;
pub mod generate;
pub mod init;
pub mod label;
pub mod rank;
pub mod run;

use crate::cli::{Cli, Command};
use crate::error::Outcome;

/// Runs the parsed command line.
pub fn dispatch(mut cli: Cli) -> anyhow::Result<Outcome> {
    resolve_latest_run(&mut cli)?;
    match &cli.command {
        Command::Generate(args) => generate::run(&cli, args),
        Command::Compare(args) => compare::run(&cli, args),
        Command::Check(args) => check::run(&cli, args),
        Command::Rank(args) => rank::run(&cli, args),
        Command::Run(args) => run::run(&cli, args),
        Command::Label(args) => label::run(&cli, args),
        Command::Init(args) => init::run(&cli, args),
    }
}

/// Replaces `--run latest` by the name of the most recently started run (by its manifest's
/// `created_at`), and says which on stderr, so that every message and hint after names the
/// run itself. A run named `latest` is that run.
fn resolve_latest_run(cli: &mut Cli) -> anyhow::Result<()> {
    let runs_dir = crate::config::project_root(&cli.config).join("runs");
    let Some(name) = cli.command.run_name_mut() else {
        return Ok(());
    };
    if name != crate::cli::LATEST_RUN || runs_dir.join(&name).is_dir() {
        return Ok(());
    }
    let Some(latest) = crate::engine::run_dir::latest_run(&runs_dir)? else {
        return Err(crate::error::JudgeError::usage(format!(
            "--run latest names the most recently started run, and `{}` has none yet; start one with `judge run` or `judge generate`",
            runs_dir.display()
        ))
        .into());
    };
    eprintln!("note: --run latest is run `{latest}` (the most recently started)");
    *name = latest;
    Ok(())
}

/// An existing run as [`load_run`] gives it (outputs read as `R`).
pub type LoadedRun<R = crate::records::OutputRecord> = (
    crate::engine::run_dir::RunDir,
    crate::engine::manifest::Manifest,
    crate::suite::Suite,
    Vec<R>,
);

/// Loads an existing run, locked for this process: its directory, manifest, the unchanged
/// suite it was made from and its outputs. A missing run, a run in use by another process or
/// a changed suite is a usage error.
pub fn load_run<R: crate::records::OutputRow>(
    config: &crate::config::Config,
    run: &str,
) -> anyhow::Result<LoadedRun<R>> {
    load_run_locked(config, run, Hold::Exclusive, false, &|_| Ok(true))
}

/// [`load_run`] (or [`load_run_shared`] when `shared`) for a command that only reads what the
/// run recorded (`rank`, `label score`): a suite edited since the run, with the same tasks,
/// is a warning rather than a refusal (a typo fixed in a prompt must not hide a run's
/// leaderboard), and the run keeps the suite it recorded.
pub fn load_run_recorded<R: crate::records::OutputRow>(
    config: &crate::config::Config,
    run: &str,
    shared: bool,
) -> anyhow::Result<LoadedRun<R>> {
    let hold = if shared {
        Hold::Shared
    } else {
        Hold::Exclusive
    };
    load_run_locked(config, run, hold, true, &|_| Ok(true))
}

/// [`load_run`] that asks `wants_outputs` of the suite before the outputs are read (they may
/// be gigabytes): an error refuses the run, `false` leaves the outputs unread (empty).
pub fn load_run_if<R: crate::records::OutputRow>(
    config: &crate::config::Config,
    run: &str,
    wants_outputs: &dyn Fn(&crate::suite::Suite) -> anyhow::Result<bool>,
) -> anyhow::Result<LoadedRun<R>> {
    load_run_locked(config, run, Hold::Exclusive, false, wants_outputs)
}

/// [`load_run`] under a shared lock (see [`crate::engine::run_dir::RunDir::lock_shared`]):
/// for labelling, which many people may do at once.
pub fn load_run_shared<R: crate::records::OutputRow>(
    config: &crate::config::Config,
    run: &str,
) -> anyhow::Result<LoadedRun<R>> {
    load_run_locked(config, run, Hold::Shared, false, &|_| Ok(true))
}

/// Whether a model the run's manifest records is part of the run: it has outputs in the run,
/// or judge.toml still lists it (one with neither, whose first request was refused before it
/// left the config, is no part of it: nothing can ask it again).
pub fn part_of_run(config: &crate::config::Config, id: &str, has_outputs: bool) -> bool {
    has_outputs || config.models.iter().any(|m| m.id == id)
}

/// The `--model` flags that keep a suggested `judge run` or `judge generate` to the run's
/// models: without them it would add every configured model to the run. Empty when the run
/// has every configured model; a model of the run no longer configured is left out (the
/// command would refuse it, and cannot ask it again anyway), unless none is configured.
pub fn run_model_flags(
    config: &crate::config::Config,
    manifest: &crate::engine::manifest::Manifest,
) -> String {
    let in_run = |id: &str| manifest.models.iter().any(|m| m.id == id);
    if config.models.iter().all(|m| in_run(&m.id)) {
        return String::new();
    }
    let configured: String = config
        .models
        .iter()
        .filter(|m| in_run(&m.id))
        .map(|m| format!(" --model {}", m.id))
        .collect();
    if !configured.is_empty() {
        return configured;
    }
    // None of the run's models is configured any more: naming them makes the command refuse,
    // saying so, where no flag would add every configured model to the run.
    manifest
        .models
        .iter()
        .map(|m| format!(" --model {}", m.id))
        .collect()
}

/// The warning a command that read a run with [`load_run_recorded`] gives when the suite was
/// edited since, with the same tasks (`None` when it is as recorded).
pub fn edited_suite_warning(
    manifest: &crate::engine::manifest::Manifest,
    suite: &crate::suite::Suite,
    run: &str,
) -> Option<String> {
    if suite.is_recorded_as(&manifest.suite.hash) {
        return None;
    }
    let what = crate::engine::manifest::suite_changes(&manifest.suite, suite);
    Some(format!(
        "suite `{}` has changed since run `{run}` was generated ({what}), with the same tasks: read as the run recorded it (outputs, verdicts and checks are the run's; anything new needs the unchanged suite or a new run)",
        suite.name
    ))
}

/// Whether `run` names a run that exists (its manifest is written); `None`, a new run.
pub fn run_exists(config: &crate::config::Config, run: Option<&str>) -> bool {
    run.is_some_and(|r| config.runs_dir().join(r).join("manifest.json").is_file())
}

/// How a loaded run is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// For a command that changes it.
    Exclusive,
    /// For one of many readers (labelling, scoring).
    Shared,
    /// Not at all: a look that writes nothing (`compare --dry-run`), the lock file included;
    /// a line another process is appending is skipped.
    Unlocked,
}

/// [`load_run_if`] without taking the run's lock or writing anything: for a look at what a
/// command would do (`compare --dry-run`), also while another process holds the run.
pub fn load_run_unlocked_if<R: crate::records::OutputRow>(
    config: &crate::config::Config,
    run: &str,
    wants_outputs: &dyn Fn(&crate::suite::Suite) -> anyhow::Result<bool>,
) -> anyhow::Result<LoadedRun<R>> {
    load_run_locked(config, run, Hold::Unlocked, false, wants_outputs)
}

fn load_run_locked<R: crate::records::OutputRow>(
    config: &crate::config::Config,
    run: &str,
    hold: Hold,
    read_only: bool,
    wants_outputs: &dyn Fn(&crate::suite::Suite) -> anyhow::Result<bool>,
) -> anyhow::Result<LoadedRun<R>> {
    use crate::error::JudgeError;
    let mut run_dir = crate::engine::run_dir::RunDir::at(&config.runs_dir(), run)?;
    // Locked before anything is read: a file another process is writing is neither read half
    // way nor "repaired" under it. A folder without a manifest is not locked: it is a run
    // `generate` has just claimed (taking its lock here would make that generate give up as
    // "in use"), or one refused below.
    if run_dir.path().is_dir() && run_dir.exists() {
        match hold {
            Hold::Shared => run_dir.lock_shared()?,
            Hold::Exclusive => run_dir.create_and_lock()?,
            Hold::Unlocked => {}
        }
    }
    run_dir.refuse_without_manifest()?;
    if !run_dir.exists() {
        return Err(JudgeError::usage(format!(
            "run `{run}` not found in `{}`; create it with `judge generate --run {run}`",
            config.runs_dir().display()
        ))
        .into());
    }
    let mut manifest = crate::engine::manifest::read_manifest(&run_dir)?;
    let suite = crate::suite::load_suite(&config.suites_dir(), &manifest.suite.name)?;
    let changed = !suite.is_recorded_as(&manifest.suite.hash);
    if changed {
        let what = crate::engine::manifest::suite_changes(&manifest.suite, &suite);
        if !(read_only && same_tasks(&manifest.suite, &suite)) {
            return Err(JudgeError::usage(format!(
                "suite `{}` has changed since run `{run}` was generated ({what}); use the unchanged suite or generate a new run",
                suite.name
            ))
            .into());
        }
        // Said by the caller ([`edited_suite_warning`]): rank carries it in its leaderboards.
    }
    // A run recorded with the hash over answers/ too, or without file digests, is brought up
    // to date while its suite is unchanged: later answer sets can join it, and a later change
    // is named. Only under the exclusive lock (a shared holder writes no manifest).
    let current = crate::engine::manifest::SuiteInfo::of(&suite);
    if hold == Hold::Exclusive && !changed && manifest.suite != current {
        manifest.suite = current;
        crate::engine::run_dir::write_json_atomic(&run_dir.file("manifest.json"), &manifest)?;
    }
    if !wants_outputs(&suite)? {
        return Ok((run_dir, manifest, suite, Vec::new()));
    }
    let outputs_path = run_dir.file(generate::OUTPUTS_FILE);
    let records: Vec<R> = run_dir.read_jsonl(&outputs_path)?;
    refuse_foreign_outputs(
        &outputs_path,
        records.iter().map(R::item),
        &suite,
        &manifest,
    )?;
    let outputs = latest_outputs(records);
    if let Some(o) = outputs.iter().find(|o| o.ok_without_text()) {
        let (task, model) = o.item();
        return Err(JudgeError::usage(format!(
            "`{}`: the output of task `{task}` by model `{model}` is `ok` but has no `text` (edited by hand?); delete its line and `judge generate --run {run}` asks for it again",
            outputs_path.display()
        ))
        .into());
    }
    Ok((run_dir, manifest, suite, outputs))
}

/// Refuses an output record (`items`: its task and model, in file order) of a task the suite
/// does not have or of a model the run never had (`manifest`): only a hand edit writes one,
/// and it would be counted, costed and judged as the run's.
pub(crate) fn refuse_foreign_outputs<'a>(
    path: &std::path::Path,
    items: impl Iterator<Item = (&'a str, &'a str)>,
    suite: &crate::suite::Suite,
    manifest: &crate::engine::manifest::Manifest,
) -> anyhow::Result<()> {
    let tasks: std::collections::HashSet<&str> =
        suite.tasks.iter().map(|t| t.id.as_str()).collect();
    let models: std::collections::HashSet<&str> =
        manifest.models.iter().map(|m| m.id.as_str()).collect();
    for (n, (task, model)) in items.enumerate() {
        let why = if !tasks.contains(task) {
            format!("task `{task}`, which suite `{}` does not have", suite.name)
        } else if !models.contains(model) {
            format!("model `{model}`, which the run's manifest does not list")
        } else {
            continue;
        };
        return Err(crate::error::JudgeError::usage(format!(
            "`{}`: record {} (of task `{task}` by model `{model}`) names {why} (edited by hand?); delete its line",
            path.display(),
            n + 1,
        ))
        .into());
    }
    Ok(())
}

/// Whether `suite` has the tasks the run recorded (by the task folders of its file digests;
/// `false` for a run that recorded none).
fn same_tasks(recorded: &crate::engine::manifest::SuiteInfo, suite: &crate::suite::Suite) -> bool {
    let then: std::collections::BTreeSet<&str> = recorded
        .files
        .keys()
        .filter_map(|path| path.strip_prefix("tasks/")?.split('/').next())
        .collect();
    let now: std::collections::BTreeSet<&str> = suite.tasks.iter().map(|t| t.id.as_str()).collect();
    !then.is_empty() && then == now
}

/// One record per (task, model): the last in the file, as generate's final rewrite keeps. A
/// generate killed after `--retry-failed` answered an item leaves its old failed record in
/// the file too, until the next generate ends.
fn latest_outputs<R: crate::records::OutputRow>(records: Vec<R>) -> Vec<R> {
    let mut at: std::collections::HashMap<(String, String), usize> =
        std::collections::HashMap::with_capacity(records.len());
    let mut out: Vec<R> = Vec::with_capacity(records.len());
    for r in records {
        let (task, model) = r.item();
        match at.entry((task.to_string(), model.to_string())) {
            std::collections::hash_map::Entry::Occupied(e) => out[*e.get()] = r,
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(out.len());
                out.push(r);
            }
        }
    }
    out
}

/// The judge whose comparisons to use: `wanted`, or the run's only judge. A judge the run does
/// not have, several judges without a choice, or no comparisons at all are usage errors.
pub fn pick_judge(
    comparisons: &[crate::records::ComparisonRecord],
    wanted: Option<&str>,
    run: &str,
) -> anyhow::Result<String> {
    use crate::error::JudgeError;
    let judges: std::collections::BTreeSet<&str> =
        comparisons.iter().map(|c| c.judge.as_str()).collect();
    let list = || judges.iter().copied().collect::<Vec<_>>().join(", ");
    match wanted {
        Some(j) if judges.contains(j) => Ok(j.to_string()),
        Some(j) => Err(JudgeError::usage(format!(
            "run `{run}` has no comparisons by judge `{j}` (judges: {}); judge it with `judge compare --run {run} --judge {j}` (`exec`, or a judge of {}'s [[judges]])",
            list(),
            crate::config_name()
        ))
        .into()),
        None if judges.len() == 1 => Ok(judges.iter().next().expect("one judge").to_string()),
        None if judges.is_empty() => Err(JudgeError::usage(format!(
            "run `{run}` has no comparisons; run `judge compare --run {run}` first"
        ))
        .into()),
        None => Err(JudgeError::usage(format!(
            "run `{run}` has comparisons from several judges ({}); pick one with --judge",
            list()
        ))
        .into()),
    }
}
