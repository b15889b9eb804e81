//! `judge label`: draw the blind stratified sample, label it in the terminal (or by a script
//! through stdin, or in a spreadsheet via export/import), and score people against the judge.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anyhow::Context;

use crate::cli::{
    Cli, LabelAction, LabelArgs, LabelExportArgs, LabelImportArgs, LabelSampleArgs, LabelScoreArgs,
};
use crate::commands::compare::COMPARISONS_FILE;
use crate::commands::generate::OUTPUTS_FILE;
use crate::commands::load_run;
use crate::config::load_config;
use crate::engine::run_dir::{
    JsonlAppender, RunDir, read_jsonl_repairing, read_jsonl_skipping_torn, write_json_atomic,
    write_jsonl_atomic,
};
use crate::error::{JudgeError, Outcome};
use crate::label::{
    Choice, LabelRecord, SampleItem, category, check_labels, choice_winner, effective_labels,
    item_key, labels_after_reveal, sample_digest, stratified_sample, tied_to_sample,
};
use crate::records::{ComparisonRecord, OutputBrief, OutputRecord, Winner};
use crate::report::label::{Scores, render_scores, score_labels};
use crate::report::write_stdout_or_file;
use crate::report::{printable_text, sheet_cell};
use crate::suite::Suite;
use crate::time::UtcDateTime;

mod session;
mod sheet;

use session::session;
use sheet::{export, import};

/// The sample of a run.
pub const SAMPLE_FILE: &str = "labels/sample.jsonl";

/// The warning for a labeller's labels given after `--reveal` showed an answer's author.
pub(crate) fn after_reveal_warning(labeller: &str, n: usize) -> Option<String> {
    (n > 0).then(|| {
        format!(
            "`{labeller}` gave {n} label(s) on items showing an answer whose model --reveal had shown them before (the same task's answer by the same model): those labels are not blind"
        )
    })
}

/// Runs `judge label …`.
pub fn run(cli: &Cli, args: &LabelArgs) -> anyhow::Result<Outcome> {
    match &args.action {
        Some(LabelAction::Sample(a)) => sample(cli, a),
        Some(LabelAction::Export(a)) => export(cli, a),
        Some(LabelAction::Import(a)) => import(cli, a),
        Some(LabelAction::Score(a)) => score(cli, a),
        None => {
            let run = args.run.as_deref().ok_or_else(|| {
                JudgeError::usage(
                    "judge label needs --run NAME (or a subcommand: sample, export, import, score)",
                )
            })?;
            let labeller = args.labeller.as_deref().ok_or_else(|| {
                JudgeError::usage("judge label needs --labeller ID (your name or initials)")
            })?;
            session(cli, run, labeller, args.reveal)
        }
    }
}

/// A run opened for labelling: its sample and everything needed to show items.
struct Labelling {
    run_dir: RunDir,
    /// The run's `[run] seed` (the default of `label score --seed`).
    seed: u64,
    suite: Suite,
    /// What the run's models were told ([`crate::commands::generate::model_brief`]).
    brief: String,
    /// The answer texts of the sampled items, by (task, model); only those are read, so a
    /// session's memory does not grow with the run.
    texts: BTreeMap<(String, String), Option<String>>,
    sample: Vec<SampleItem>,
}

impl Labelling {
    /// What "better" means, as the judge prompt puts it: the brief the models were given and
    /// the suite's criteria.
    fn standard(&self) -> String {
        crate::prompt::suite_guidance(&self.brief, &self.suite.criteria)
    }
}

/// Opens a run for labelling under a shared lock: many people label (and score, export) at
/// once; what changes the run (a new sample, compare) waits for all of them.
fn open(cli: &Cli, run: &str) -> anyhow::Result<Labelling> {
    open_as(cli, run, false)
}

/// [`open`]; `read_only` (scoring, which shows no task) takes a suite edited since the run,
/// with the same tasks, as the run recorded it (see [`crate::commands::load_run_recorded`]).
fn open_as(cli: &Cli, run: &str, read_only: bool) -> anyhow::Result<Labelling> {
    let config = load_config(&cli.config)?;
    let (run_dir, manifest, suite, _) = if read_only {
        let loaded = crate::commands::load_run_recorded::<OutputBrief>(&config, run, true)?;
        if let Some(w) = crate::commands::edited_suite_warning(&loaded.1, &loaded.2, run) {
            eprintln!("warning: {w}");
        }
        loaded
    } else {
        crate::commands::load_run_shared::<OutputBrief>(&config, run)?
    };
    let sample: Vec<SampleItem> = run_dir.read_jsonl(&run_dir.file(SAMPLE_FILE))?;
    if sample.is_empty() {
        return Err(JudgeError::usage(format!(
            "run `{run}` has no labelling sample; draw one with `judge label sample --run {run} --n 50`"
        ))
        .into());
    }
    let shown: BTreeSet<(&str, &str)> = sample
        .iter()
        .flat_map(|i| [(&*i.task, &*i.model_a), (&*i.task, &*i.model_b)])
        .collect();
    // The last record of an item wins, as everywhere a run's outputs are read.
    let mut texts = BTreeMap::new();
    run_dir.visit_jsonl(&run_dir.file(OUTPUTS_FILE), |o: OutputRecord| {
        if shown.contains(&(&*o.task, &*o.model)) {
            texts.insert((o.task, o.model), o.text);
        }
    })?;
    drop(shown);
    Ok(Labelling {
        run_dir,
        seed: manifest.seed,
        brief: crate::commands::generate::run_brief(&suite, &manifest),
        suite,
        texts,
        sample,
    })
}

fn valid_labeller(id: &str) -> Result<(), JudgeError> {
    // Not starting with `.`: hidden files in labels/ are judge's own (locks, temp files).
    let ok = !id.is_empty()
        && !id.starts_with('.')
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    // `judge` and `all` name rows of the score's CSV.
    // Case ignored: `ALL` names the same file on a case-insensitive file system.
    let reserved = ["sample", "agreement", "judge", "all"]
        .iter()
        .any(|r| r.eq_ignore_ascii_case(id));
    if ok && !reserved {
        Ok(())
    } else {
        Err(JudgeError::usage(format!(
            "invalid labeller id `{}`: use letters, digits, `.`, `_`, `-`, not starting with `.` (and not `sample`, `agreement`, `judge` or `all`)",
            crate::report::printable(id)
        )))
    }
}

fn labels_path(run_dir: &RunDir, labeller: &str) -> PathBuf {
    run_dir.file(&format!("labels/{labeller}.jsonl"))
}

fn now() -> String {
    UtcDateTime::from_system(SystemTime::now()).rfc3339()
}

/// The files in `labels/` tied to the current sample (see [`tied_to_sample`]), sorted, with
/// `sample.jsonl` last.
fn tied_files(run_dir: &RunDir) -> anyhow::Result<Vec<String>> {
    let dir = run_dir.file("labels");
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("failed to read `{}`", dir.display())),
    };
    let mut names = Vec::new();
    for e in entries {
        let e = e.with_context(|| format!("failed to read `{}`", dir.display()))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if e.file_type().is_ok_and(|t| t.is_file()) && tied_to_sample(&name) {
            names.push(name);
        }
    }
    names.sort_by_key(|n| (n == "sample.jsonl", n.clone()));
    Ok(names)
}

/// Moves `files` (names in `labels/`) into a new `labels/replaced-<UTC time>/`, one rename
/// each, the sample last: if interrupted, the labels left behind still sit next to their
/// sample. Returns the archive folder.
fn archive_labels(run_dir: &RunDir, files: &[String]) -> anyhow::Result<PathBuf> {
    let labels = run_dir.file("labels");
    let stamp = UtcDateTime::from_system(SystemTime::now()).compact();
    let mut archive = labels.join(format!("replaced-{stamp}"));
    for k in 2.. {
        match std::fs::create_dir(&archive) {
            Ok(()) => break,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                archive = labels.join(format!("replaced-{stamp}-{k}"));
            }
            Err(e) => {
                return Err(e).with_context(|| format!("failed to create `{}`", archive.display()));
            }
        }
    }
    for name in files {
        let (from, to) = (labels.join(name), archive.join(name));
        std::fs::rename(&from, &to).with_context(|| {
            format!(
                "failed to move `{}` to `{}` (the labels not yet moved still belong to the old sample)",
                from.display(),
                to.display()
            )
        })?;
    }
    Ok(archive)
}

/// The lock on `labeller`'s file (`labels/.<labeller>.lock`), held while it is written.
fn lock_labeller(run_dir: &RunDir, labeller: &str) -> anyhow::Result<std::fs::File> {
    crate::engine::run_dir::lock_file(
        &run_dir.file(&format!("labels/.{labeller}.lock")),
        &format!("labeller `{labeller}` of run `{}`", run_dir.name()),
    )
}

/// `judge label sample`.
fn sample(cli: &Cli, args: &LabelSampleArgs) -> anyhow::Result<Outcome> {
    let config = load_config(&cli.config)?;
    let (mut run_dir, manifest, _suite, _outputs) =
        load_run::<crate::records::OutputBrief>(&config, &args.run)?;
    let comparisons: Vec<ComparisonRecord> = read_jsonl_repairing(&run_dir.file(COMPARISONS_FILE))?;
    let path = run_dir.file(SAMPLE_FILE);
    let existing: Vec<crate::label::SampleItem> = if path.exists() {
        read_jsonl_repairing(&path)?
    } else {
        Vec::new()
    };
    // Without --judge, the existing sample's judge: the same command again must not need
    // one because a second judge has judged the run since.
    let sampled_judge = existing.first().map(|i| i.judge.as_str());
    let judge = crate::commands::pick_judge(
        &comparisons,
        args.judge.as_deref().or(sampled_judge),
        &args.run,
    )?;
    let candidates: Vec<&ComparisonRecord> = comparisons
        .iter()
        .filter(|c| c.judge == judge && !c.by_failure && c.winner != Winner::Failed)
        .collect();
    if candidates.is_empty() {
        return Err(JudgeError::usage(format!(
            "judge `{judge}` decided no comparison in run `{}`",
            args.run
        ))
        .into());
    }
    let seed = args.seed.unwrap_or(manifest.seed);
    let items = stratified_sample(&candidates, args.n, seed);
    if path.exists() && !args.force {
        // The same command again (after it was interrupted just after writing, say) finds the
        // sample it would draw: nothing to do.
        if existing == items {
            eprintln!(
                "`{}` already holds this sample ({} items by `{judge}`, seed {seed}): nothing to do",
                path.display(),
                items.len()
            );
            return Ok(Outcome::Success);
        }
        let labelled = tied_files(&run_dir)?.len() > 1;
        // Why the sample drawn now is another: what it was drawn from has changed.
        let why = if sampled_judge.is_some_and(|j| j != judge) {
            format!(
                " (it holds `{}`'s comparisons)",
                sampled_judge.unwrap_or_default()
            )
        } else if existing.len() != items.len() {
            format!(
                " ({} items; this command draws {})",
                existing.len(),
                items.len()
            )
        } else {
            " (the run's comparisons, or --n or --seed, differ from those it was drawn with)".into()
        };
        return Err(JudgeError::usage(if labelled {
            format!(
                "`{}` already exists with another sample{why} and has labels; pass --force to draw a new sample (--force archives the existing labels to {}/replaced-<UTC time>/, and the new sample starts unlabelled)",
                path.display(),
                run_dir.file("labels").display()
            )
        } else {
            format!(
                "`{}` already exists with another sample{why} (no labels yet); pass --force to replace it",
                path.display()
            )
        })
        .into());
    }
    run_dir.create_and_lock()?;
    let tied = tied_files(&run_dir)?;
    if tied.iter().any(|n| n != "sample.jsonl") {
        let archive = archive_labels(&run_dir, &tied)?;
        eprintln!(
            "moved the labels of the replaced sample ({}) to {}; the new sample starts unlabelled",
            tied.join(", "),
            archive.display()
        );
    }
    write_jsonl_atomic(&path, &items)?;
    let tasks: BTreeSet<&str> = items.iter().map(|i| i.task.as_str()).collect();
    let pairs: BTreeSet<(&str, &str)> = items
        .iter()
        .map(|i| (i.model_a.as_str(), i.model_b.as_str()))
        .collect();
    eprintln!(
        "sampled {} of {} comparisons by `{judge}` (seed {seed}) over {} tasks and {} model pairs into {}",
        items.len(),
        candidates.len(),
        tasks.len(),
        pairs.len(),
        path.display()
    );
    if items.len() < args.n {
        eprintln!(
            "note: --n {} asked for more items than the {} comparisons that can be labelled: the sample holds them all",
            args.n,
            candidates.len()
        );
    }
    Ok(Outcome::Success)
}

/// [`sample_digest`] of the open sample, over what its sheet shows.
fn digest_of(l: &Labelling) -> String {
    sample_digest(l.sample.iter().map(|item| {
        let (_, a1, a2) = answers(l, item);
        [item.item.as_str(), item.task.as_str(), a1, a2]
    }))
}

fn answers<'a>(l: &'a Labelling, item: &SampleItem) -> (&'a str, &'a str, &'a str) {
    let (m1, m2) = item.shown();
    let text = |m: &str| {
        l.texts
            .get(&(item.task.clone(), m.to_string()))
            .and_then(|t| t.as_deref())
            .unwrap_or("(no output)")
    };
    let task = l
        .suite
        .task(&item.task)
        .map_or("(task missing from suite)", |t| t.prompt.as_str());
    (task, text(m1), text(m2))
}

/// The items whose models their labeller was shown (`--reveal`): their last record says so;
/// an undo or a later blind label clears it.
fn revealed_items(records: &[LabelRecord]) -> BTreeSet<String> {
    let mut revealed = BTreeSet::new();
    for r in records {
        if r.revealed {
            revealed.insert(r.item.clone());
        } else {
            revealed.remove(&r.item);
        }
    }
    revealed
}

/// One labeller's records, refused (naming the file and line) if any was given to another
/// comparison than the item of that id in `sample`.
/// `mine`: the caller holds this labeller's lock (may repair a torn last line), else the
/// line is only skipped (its writer may be appending it).
fn read_labels(path: &Path, sample: &[SampleItem], mine: bool) -> anyhow::Result<Vec<LabelRecord>> {
    let records: Vec<LabelRecord> = if mine {
        read_jsonl_repairing(path)?
    } else {
        read_jsonl_skipping_torn(path)?
    };
    if let Err(e) = check_labels(&records, sample) {
        // After the repairing read every non-blank line is one record.
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("failed to read `{}`", path.display()))?;
        let line = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .nth(e.index())
            .map_or(0, |(i, _)| i + 1);
        return Err(JudgeError::usage(format!(
            "{}:{line}: {e}; move the file out of labels/ and label the new sample afresh",
            path.display()
        ))
        .into());
    }
    Ok(records)
}

/// Every labeller's labels in `labels/`, each checked against the current sample.
pub fn read_all_labels(run_dir: &RunDir) -> anyhow::Result<BTreeMap<String, Vec<LabelRecord>>> {
    let sample: Vec<SampleItem> = run_dir.read_jsonl(&run_dir.file(SAMPLE_FILE))?;
    let dir = run_dir.file("labels");
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(labeller) = name.strip_suffix(".jsonl") else {
            continue;
        };
        if labeller == "sample" {
            continue;
        }
        let records = read_labels(&e.path(), &sample, false)?;
        // A session quit before its first key leaves an empty file: no labeller yet.
        if !records.is_empty() {
            out.insert(labeller.to_string(), records);
        }
    }
    Ok(out)
}

/// `judge label score`.
fn score(cli: &Cli, args: &LabelScoreArgs) -> anyhow::Result<Outcome> {
    crate::commands::rank::check_resamples(args.resamples, args.allow_few_resamples)?;
    crate::report::refuse_output_into_run(
        args.output.as_deref(),
        &crate::config::project_root(&cli.config).join("runs"),
    )?;
    let l = open_as(cli, &args.run, true)?;
    let comparisons: Vec<ComparisonRecord> =
        l.run_dir.read_jsonl(&l.run_dir.file(COMPARISONS_FILE))?;
    let labels = read_all_labels(&l.run_dir)?;
    if labels.is_empty() {
        return Err(JudgeError::usage(format!(
            "no labels yet in run `{}`; label with `judge label --run {} --labeller YOU`",
            args.run, args.run
        ))
        .into());
    }
    let sample_judge = l.sample[0].judge.as_str();
    let judge = args.judge.as_deref().unwrap_or(sample_judge);
    if !comparisons.iter().any(|c| c.judge == judge) {
        let judges: BTreeSet<&str> = comparisons.iter().map(|c| c.judge.as_str()).collect();
        return Err(JudgeError::usage(format!(
            "run `{}` has no comparisons by judge `{judge}` (judges: {})",
            args.run,
            judges.into_iter().collect::<Vec<_>>().join(", ")
        ))
        .into());
    }
    let verdicts: BTreeMap<&str, Option<crate::stats::LabelCategory>> = l
        .sample
        .iter()
        .map(|s| {
            let v = comparisons
                .iter()
                .find(|c| {
                    c.judge == judge
                        && c.task == s.task
                        && c.model_a == s.model_a
                        && c.model_b == s.model_b
                })
                .and_then(|c| category(c.winner));
            (s.item.as_str(), v)
        })
        .collect();
    let effective: BTreeMap<String, BTreeMap<String, Option<Winner>>> = labels
        .iter()
        .map(|(who, recs)| (who.clone(), effective_labels(recs)))
        .collect();
    let seed = args.seed.unwrap_or(l.seed);
    let mut scores: Scores = score_labels(&l.sample, &verdicts, &effective, args.resamples, seed)?;
    scores
        .warnings
        .extend(labels.iter().filter_map(|(who, records)| {
            after_reveal_warning(who, labels_after_reveal(&l.sample, records))
        }));
    scores.judge = judge.to_string();
    // labels/agreement.json is the sample judge's; another judge's report goes only where asked.
    if judge == sample_judge {
        write_json_atomic(&l.run_dir.file("labels/agreement.json"), &scores)?;
    }
    let format = crate::report::output_format(args.format, args.output.as_deref());
    write_stdout_or_file(&render_scores(&scores, format), args.output.as_deref())?;
    // The table and Markdown carry their warnings; data formats keep them out of the data.
    if matches!(
        format,
        crate::report::Format::Csv | crate::report::Format::Json
    ) {
        for w in &scores.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok(Outcome::Success)
}
