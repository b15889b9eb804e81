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
use crate::commands::load_run;
use crate::config::load_config;
use crate::engine::run_dir::{
    JsonlAppender, RunDir, read_jsonl_repairing, read_jsonl_skipping_torn, write_json_atomic,
    write_jsonl_atomic,
};
use crate::error::{JudgeError, Outcome};
use crate::label::{
    Choice, LabelRecord, SampleItem, category, check_labels, choice_winner, effective_labels,
    item_key, stratified_sample, tied_to_sample,
};
use crate::records::{ComparisonRecord, OutputRecord, Winner};
use crate::report::label::{Scores, render_scores, score_labels};
use crate::report::write_stdout_or_file;
use crate::report::{printable_text, sheet_cell};
use crate::suite::Suite;
use crate::time::UtcDateTime;

/// The sample of a run.
pub const SAMPLE_FILE: &str = "labels/sample.jsonl";

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
    outputs: BTreeMap<(String, String), OutputRecord>,
    sample: Vec<SampleItem>,
}

impl Labelling {
    /// What "better" means, as the judge prompt puts it: the suite's context and criteria.
    fn standard(&self) -> String {
        crate::prompt::suite_guidance(&self.suite.context, &self.suite.criteria)
    }
}

/// Opens a run for labelling under a shared lock: many people label (and score, export) at
/// once; what changes the run (a new sample, compare) waits for all of them.
fn open(cli: &Cli, run: &str) -> anyhow::Result<Labelling> {
    let config = load_config(&cli.config)?;
    let (run_dir, manifest, suite, outputs) = crate::commands::load_run_shared(&config, run)?;
    let sample: Vec<SampleItem> = run_dir.read_jsonl(&run_dir.file(SAMPLE_FILE))?;
    if sample.is_empty() {
        return Err(JudgeError::usage(format!(
            "run `{run}` has no labelling sample; draw one with `judge label sample --run {run} --n 50`"
        ))
        .into());
    }
    let outputs = outputs
        .into_iter()
        .map(|o| ((o.task.clone(), o.model.clone()), o))
        .collect();
    Ok(Labelling {
        run_dir,
        seed: manifest.seed,
        suite,
        outputs,
        sample,
    })
}

fn valid_labeller(id: &str) -> Result<(), JudgeError> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    // `judge` and `all` name rows of the score's CSV.
    let reserved = ["sample", "agreement", "judge", "all"].contains(&id);
    if ok && !reserved {
        Ok(())
    } else {
        Err(JudgeError::usage(format!(
            "invalid labeller id `{id}`: use letters, digits, `.`, `_`, `-` (not `sample`, `agreement`, `judge` or `all`)"
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
    let (mut run_dir, manifest, _suite, _outputs) = load_run(&config, &args.run)?;
    let comparisons: Vec<ComparisonRecord> = read_jsonl_repairing(&run_dir.file(COMPARISONS_FILE))?;
    let judge = crate::commands::pick_judge(&comparisons, args.judge.as_deref(), &args.run)?;
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
    let path = run_dir.file(SAMPLE_FILE);
    if path.exists() && !args.force {
        let labelled = tied_files(&run_dir)?.len() > 1;
        return Err(JudgeError::usage(if labelled {
            format!(
                "`{}` already exists and has labels; pass --force to draw a new sample (--force archives the existing labels to {}/replaced-<UTC time>/, and the new sample starts unlabelled)",
                path.display(),
                run_dir.file("labels").display()
            )
        } else {
            format!(
                "`{}` already exists (no labels yet); pass --force to replace it",
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
    let seed = args.seed.unwrap_or(manifest.seed);
    let items = stratified_sample(&candidates, args.n, seed);
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

/// What a labeller sees for one item: the standard the judge was given (`standard`, the
/// suite's context and criteria), the task and the two answers, control characters but
/// newline and tab escaped (see [`printable_text`]). Never a model id, never the judge's
/// verdict.
pub fn render_item(
    position: usize,
    total: usize,
    item: &SampleItem,
    standard: &str,
    task: &str,
    answer_1: &str,
    answer_2: &str,
) -> String {
    let rule = "─".repeat(72);
    format!(
        "{rule}\nItem {position} of {total}  ({})\n{rule}\n\nWHAT \"BETTER\" MEANS (as the judge was told)\n\n{}\n\nTASK\n\n{}\n\n{rule}\nANSWER 1\n{rule}\n{}\n\n{rule}\nANSWER 2\n{rule}\n{}\n\n{rule}\n",
        item.item,
        printable_text(standard.trim_end()),
        printable_text(task.trim_end()),
        printable_text(answer_1.trim_end()),
        printable_text(answer_2.trim_end())
    )
}

const KEYS_HELP: &str = "Which answer is better?  1 · 2 · t tie · b both bad · s skip · u undo · v view in pager · q quit";

fn answers<'a>(l: &'a Labelling, item: &SampleItem) -> (&'a str, &'a str, &'a str) {
    let (m1, m2) = item.shown();
    let text = |m: &str| {
        l.outputs
            .get(&(item.task.clone(), m.to_string()))
            .and_then(|o| o.text.as_deref())
            .unwrap_or("(no output)")
    };
    let task = l
        .suite
        .task(&item.task)
        .map_or("(task missing from suite)", |t| t.prompt.as_str());
    (task, text(m1), text(m2))
}

/// Reads one key per press on a terminal (cbreak mode through `stty`), or one per line
/// otherwise; `None` at the end of input.
struct Keys {
    tty: Option<TtyMode>,
    stdin: std::io::StdinLock<'static>,
}

/// Restores the terminal mode on drop.
struct TtyMode {
    saved: String,
}

impl Drop for TtyMode {
    fn drop(&mut self) {
        let _ = std::process::Command::new("stty")
            .arg(&self.saved)
            .stdin(std::fs::File::open("/dev/tty").map_or(std::process::Stdio::null(), Into::into))
            .status();
    }
}

impl Keys {
    fn new() -> Self {
        let stdin = std::io::stdin().lock();
        let tty = std::io::stdin().is_terminal().then(enter_cbreak).flatten();
        Keys { tty, stdin }
    }

    fn next(&mut self) -> Option<char> {
        if self.tty.is_some() {
            let mut b = [0u8; 1];
            loop {
                match std::io::Read::read(&mut self.stdin, &mut b) {
                    Ok(0) | Err(_) => return None,
                    Ok(_) if b[0].is_ascii_whitespace() => continue,
                    // Ctrl-C, Ctrl-D, Ctrl-backslash and Ctrl-Z quit, every label so far saved
                    // (with signals off, the session cannot be suspended).
                    Ok(_) if matches!(b[0], 0x03 | 0x04 | 0x1a | 0x1c) => return Some('q'),
                    Ok(_) => return Some(b[0] as char),
                }
            }
        }
        let mut line = String::new();
        loop {
            line.clear();
            match self.stdin.read_line(&mut line) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {
                    let mut keys = line.trim().chars();
                    match (keys.next(), keys.next()) {
                        (Some(c), None) => return Some(c),
                        (Some(_), Some(_)) => {
                            // "12" is not a choice: nothing is recorded, the item is asked again.
                            eprintln!("one key per line: `{}` has several", line.trim());
                        }
                        (None, _) => {}
                    }
                }
            }
        }
    }
}

fn enter_cbreak() -> Option<TtyMode> {
    let tty = || std::fs::File::open("/dev/tty").ok();
    let saved = std::process::Command::new("stty")
        .arg("-g")
        .stdin(tty()?)
        .output()
        .ok()?;
    let saved = String::from_utf8(saved.stdout).ok()?.trim().to_string();
    let ok = std::process::Command::new("stty")
        // -isig: Ctrl-C arrives as a key (and quits like `q`), so the mode is always restored.
        .args(["-icanon", "-echo", "-isig", "min", "1"])
        .stdin(tty()?)
        .status()
        .ok()?
        .success();
    if !ok {
        // stty may have applied part of the change before it failed.
        drop(TtyMode { saved });
        return None;
    }
    // A SIGTERM or SIGINT from outside (the terminal's own keys no longer send them) must not
    // leave the terminal without echo: the mode is put back before the session ends with 130.
    // Every label given so far is already on disk.
    crate::interrupt::install();
    let restore = saved.clone();
    let _ = std::thread::Builder::new()
        .name("tty-restore".into())
        .spawn(move || {
            while !crate::interrupt::requested() {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            drop(TtyMode { saved: restore });
            std::process::exit(i32::from(crate::error::EXIT_INTERRUPTED));
        });
    Some(TtyMode { saved })
}

/// Shows `text` in `$PAGER` (default `less -R`).
fn page(text: &str) {
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -R".into());
    let mut parts = pager.split_whitespace();
    let Some(cmd) = parts.next() else { return };
    if let Ok(mut child) = std::process::Command::new(cmd)
        .args(parts)
        .stdin(std::process::Stdio::piped())
        .spawn()
    {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(text.as_bytes());
        }
        let _ = child.wait();
    }
}

/// The interactive session.
fn session(cli: &Cli, run: &str, labeller: &str, reveal: bool) -> anyhow::Result<Outcome> {
    valid_labeller(labeller)?;
    let l = open(cli, run)?;
    let path = labels_path(&l.run_dir, labeller);
    // One writer per labeller's file; other people label alongside.
    let _mine = lock_labeller(&l.run_dir, labeller)?;
    let records = read_labels(&path, &l.sample, true)?;
    let mut state = effective_labels(&records);
    let mut history: Vec<String> = records
        .iter()
        .filter(|r| r.choice != Choice::Undo)
        .map(|r| r.item.clone())
        .collect();
    let mut revealed = revealed_items(&records);
    // Opened at the first label: a session quit before it leaves no file, so no labeller.
    let mut appender: Option<JsonlAppender> = None;
    let mut append = |record: &LabelRecord| -> anyhow::Result<()> {
        if appender.is_none() {
            appender = Some(JsonlAppender::open(&path)?);
        }
        appender.as_mut().expect("opened").append(record)
    };
    // A signal from outside ends a terminal session (see `enter_cbreak`): say what that means.
    crate::interrupt::say_on_stop(format!(
        "every label so far is saved; the session ends (resume with: judge label --run {run} --labeller {labeller})"
    ));
    let mut keys = Keys::new();
    let clear_screen = std::io::stdout().is_terminal();
    let mut notice = String::new();
    let out = &mut std::io::stdout().lock();
    let total = l.sample.len();
    let mut current = l.sample.iter().position(|i| !state.contains_key(&i.item));
    while let Some(pos) = current {
        let item = l.sample[pos].clone();
        let (task, a1, a2) = answers(&l, &item);
        let screen = render_item(pos + 1, total, &item, &l.standard(), task, a1, a2);
        let done = state.values().filter(|v| v.is_some()).count();
        if clear_screen {
            // A fresh screen per item on a terminal; scripts and pipes get plain text.
            write!(out, "\x1b[2J\x1b[H{notice}")?;
        }
        write!(out, "{screen}[{done} of {total} labelled] {KEYS_HELP}\n> ")?;
        out.flush()?;
        let Some(key) = keys.next() else { break };
        writeln!(out)?;
        let choice = match key {
            'q' => break,
            'v' => {
                page(&screen);
                continue;
            }
            'u' => {
                let Some(last) = history
                    .iter()
                    .rev()
                    .find(|it| state.contains_key(*it))
                    .cloned()
                else {
                    writeln!(out, "nothing to undo")?;
                    continue;
                };
                // A saved label whose models were shown (--reveal, in this session or an
                // earlier one): relabelling it would not be blind.
                if revealed.contains(&last) {
                    notice = format!(
                        "cannot undo `{last}`: its models were shown when it was saved (--reveal), so relabelling it would not be blind\n"
                    );
                    if !clear_screen {
                        write!(out, "{notice}")?;
                    }
                    continue;
                }
                notice.clear();
                let undone = l.sample.iter().find(|i| i.item == last).map(item_key);
                append(&LabelRecord {
                    item: last.clone(),
                    labeller: labeller.into(),
                    choice: Choice::Undo,
                    winner: None,
                    at: now(),
                    item_key: undone,
                    revealed: false,
                })?;
                state.remove(&last);
                history.retain(|h| h != &last);
                current = l.sample.iter().position(|i| i.item == last);
                continue;
            }
            k => match Choice::parse(&k.to_string()) {
                Some(c) => c,
                None => {
                    writeln!(out, "unknown key `{k}`")?;
                    continue;
                }
            },
        };
        let winner = choice_winner(&item, choice);
        let shown = reveal && winner.is_some();
        append(&LabelRecord {
            item: item.item.clone(),
            labeller: labeller.into(),
            choice,
            winner,
            at: now(),
            item_key: Some(item_key(&item)),
            revealed: shown,
        })?;
        if shown {
            revealed.insert(item.item.clone());
        } else {
            revealed.remove(&item.item);
        }
        state.insert(item.item.clone(), winner);
        history.push(item.item.clone());
        notice.clear();
        if reveal && winner.is_some() {
            let (m1, m2) = item.shown();
            notice = format!(
                "(saved {}) Answer 1 was `{m1}`, Answer 2 was `{m2}`\n",
                item.item
            );
            if !clear_screen {
                write!(out, "{notice}")?;
            }
        }
        current = l.sample.iter().position(|i| !state.contains_key(&i.item));
    }
    if clear_screen {
        write!(out, "{notice}")?;
    }
    let labelled = state.values().filter(|v| v.is_some()).count();
    let remaining = l
        .sample
        .iter()
        .filter(|i| !state.contains_key(&i.item))
        .count();
    let skipped = state.len() - labelled;
    let skipped = match skipped {
        0 => String::new(),
        n => format!(", {n} skipped"),
    };
    writeln!(
        out,
        "{labelled} of {total} labelled by `{labeller}`{skipped}, {remaining} left; saved in {}",
        path.display()
    )?;
    if remaining > 0 {
        writeln!(
            out,
            "resume with: judge label --run {run} --labeller {labeller}"
        )?;
    }
    Ok(Outcome::Success)
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

/// `judge label export`: the blind sheet.
fn export(cli: &Cli, args: &LabelExportArgs) -> anyhow::Result<Outcome> {
    let l = open(cli, &args.run)?;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "item", "task", "standard", "prompt", "answer_1", "answer_2", "choice",
    ])?;
    let standard = l.standard();
    let standard = sheet_cell(&standard);
    for item in &l.sample {
        let (task, a1, a2) = answers(&l, item);
        let [task, a1, a2] = [task, a1, a2].map(sheet_cell);
        w.write_record([
            item.item.as_str(),
            item.task.as_str(),
            &standard,
            &task,
            &a1,
            &a2,
            "",
        ])?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| anyhow::anyhow!("failed to build the sheet: {e}"))?;
    write_stdout_or_file(&bytes, args.output.as_deref())?;
    if let Some(p) = &args.output {
        eprintln!(
            "wrote {} items to {}; fill the `choice` column with 1, 2, tie, both_bad or skip",
            l.sample.len(),
            p.display()
        );
    }
    Ok(Outcome::Success)
}

/// `judge label import`: validates every row first; imports nothing if any row is wrong.
fn import(cli: &Cli, args: &LabelImportArgs) -> anyhow::Result<Outcome> {
    valid_labeller(&args.labeller)?;
    let l = open(cli, &args.run)?;
    let _mine = lock_labeller(&l.run_dir, &args.labeller)?;
    let (records, mut errors) = read_sheet(&args.file, &l, &args.labeller)?;
    // A label whose models this labeller has seen (--reveal) is not given again, by a sheet
    // either.
    let path = labels_path(&l.run_dir, &args.labeller);
    let earlier = read_labels(&path, &l.sample, true)?;
    let revealed = revealed_items(&earlier);
    for r in records.iter().filter(|r| revealed.contains(&r.item)) {
        errors.push(format!(
            "{}: item `{}`: `{}` saw its models when labelling it (--reveal), so it cannot be labelled again; leave its choice empty",
            args.file.display(),
            r.item,
            args.labeller
        ));
    }
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("error: {e}");
        }
        return Err(JudgeError::usage(format!(
            "{}: {} invalid row(s); nothing was imported (fix them and import again)",
            args.file.display(),
            errors.len()
        ))
        .into());
    }
    std::fs::create_dir_all(path.parent().expect("labels dir"))
        .context("failed to create labels/")?;
    // Items this labeller had answered before: the sheet's later answer replaces theirs.
    let before: BTreeSet<&str> = earlier.iter().map(|r| r.item.as_str()).collect();
    let replaced = records
        .iter()
        .filter(|r| before.contains(r.item.as_str()))
        .count();
    let mut appender = JsonlAppender::open(&path)?;
    for r in &records {
        appender.append(r)?;
    }
    let replaced = match replaced {
        0 => String::new(),
        n => format!(" ({n} of them replace this labeller's earlier answers to those items)"),
    };
    eprintln!(
        "imported {} label(s) for `{}` into {}{replaced}",
        records.len(),
        args.labeller,
        path.display()
    );
    Ok(Outcome::Success)
}

/// How much of each answer an imported sheet must match: enough to tell two comparisons
/// apart, short of the cell limits of spreadsheet programs (Excel cuts at 32,767).
const SHEET_CHECK_CHARS: usize = 2000;

/// Why a sheet row's item is not the current sample's item of that id (a sheet exported
/// before the sample was replaced): its task or its answers differ. Columns the sheet lacks
/// are not compared; answers are compared on their first [`SHEET_CHECK_CHARS`] characters,
/// ignoring line endings and surrounding whitespace.
fn sheet_row_mismatch(
    l: &Labelling,
    item: &SampleItem,
    cell: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let (_, a1, a2) = answers(l, item);
    let norm = |t: &str| {
        let t = t.replace("\r\n", "\n");
        t.trim().chars().take(SHEET_CHECK_CHARS).collect::<String>()
    };
    // The export guarded cells against formulas with a leading `'`: compare what it exported.
    let same = |col: &str, want: &str| {
        cell(col).is_none_or(|got| norm(crate::report::unsheet_cell(&got)) == norm(want))
    };
    let id = &item.item;
    if !same("task", &item.task) {
        return Some(format!(
            "the sheet has task `{}` for `{id}`, the current sample task `{}`",
            cell("task").unwrap_or_default().trim(),
            item.task
        ));
    }
    (!same("answer_1", a1) || !same("answer_2", a2))
        .then(|| format!("the sheet shows other answers for `{id}` than the current sample"))
}

/// The sheet's delimiter: a comma, unless its header line holds more semicolons or tabs
/// (spreadsheets in many locales save "CSV" with semicolons).
fn sheet_delimiter(bytes: &[u8]) -> u8 {
    let header = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let count = |d: u8| header.iter().filter(|&&b| b == d).count();
    [b',', b';', b'\t']
        .into_iter()
        .max_by_key(|&d| (count(d), d == b','))
        .unwrap_or(b',')
}

fn read_sheet(
    file: &Path,
    l: &Labelling,
    labeller: &str,
) -> anyhow::Result<(Vec<LabelRecord>, Vec<String>)> {
    let unreadable = |e: &dyn std::fmt::Display| {
        JudgeError::usage(format!("cannot read sheet `{}`: {e}", file.display()))
    };
    let bytes = std::fs::read(file).map_err(|e| unreadable(&e))?;
    let delimiter = sheet_delimiter(&bytes);
    // The file line a record starts on, counted in the file's bytes: after a CRLF record csv's
    // position (its line, and its byte) is still on the LF that ends the record before.
    let line_at = |p: &csv::Position| {
        let mut at = usize::try_from(p.byte())
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        while matches!(bytes.get(at), Some(b'\r' | b'\n')) {
            at += 1;
        }
        1 + bytes[..at].iter().filter(|&&b| b == b'\n').count()
    };
    // Parsed from the bytes already read (the sniffing and the line numbers need them too).
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(&bytes[..]);
    let headers = reader
        .headers()
        .map_err(|e| JudgeError::usage(format!("{}: bad header row: {e}", file.display())))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(item_col), Some(choice_col)) = (col("item"), col("choice")) else {
        return Err(JudgeError::usage(format!(
            "{}: the header needs `item` and `choice` columns (as written by `judge label export`)",
            file.display()
        ))
        .into());
    };
    let by_id: BTreeMap<&str, &SampleItem> =
        l.sample.iter().map(|s| (s.item.as_str(), s)).collect();
    let (mut records, mut errors, mut seen) = (Vec::new(), Vec::new(), BTreeSet::new());
    for row in reader.records() {
        // The line a row starts on (cells hold whole answers, so rows span many lines).
        let line = match &row {
            Ok(r) => r.position().map(line_at),
            Err(e) => e.position().map(line_at),
        }
        .unwrap_or(0);
        let at = |msg: String| format!("{}:{line}: {msg}", file.display());
        let row = match row {
            Ok(r) => r,
            Err(e) => {
                errors.push(at(format!("unreadable row ({e})")));
                continue;
            }
        };
        // A spreadsheet saves touched cells past the data as rows of bare delimiters.
        if row.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        if row.len() != headers.len() {
            errors.push(at(format!(
                "the row has {} cells and the header {}",
                row.len(),
                headers.len()
            )));
            continue;
        }
        let id = row.get(item_col).unwrap_or("").trim();
        let raw = row.get(choice_col).unwrap_or("").trim();
        let Some(item) = by_id.get(id) else {
            errors.push(at(format!(
                "unknown item `{id}` (not in this run's sample)"
            )));
            continue;
        };
        if !seen.insert(id.to_string()) {
            errors.push(at(format!("item `{id}` appears twice")));
            continue;
        }
        if raw.is_empty() {
            continue;
        }
        let cell = |name: &str| Some(row.get(col(name)?)?.to_string());
        if let Some(why) = sheet_row_mismatch(l, item, cell) {
            errors.push(at(format!(
                "{why} (the sample was replaced after this sheet was exported; export a new sheet)"
            )));
            continue;
        }
        let Some(choice) = Choice::parse(raw) else {
            errors.push(at(format!(
                "choice `{raw}` is not one of 1, 2, tie, both_bad, skip"
            )));
            continue;
        };
        records.push(LabelRecord {
            item: id.into(),
            labeller: labeller.into(),
            choice,
            winner: choice_winner(item, choice),
            at: now(),
            item_key: Some(item_key(item)),
            revealed: false,
        });
    }
    Ok((records, errors))
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
    let l = open(cli, &args.run)?;
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
    let verdicts: BTreeMap<&str, Option<crate::stats::LabelCategory>> = l
        .sample
        .iter()
        .map(|s| {
            let v = comparisons
                .iter()
                .find(|c| {
                    c.judge == s.judge
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
    let scores: Scores = score_labels(&l.sample, &verdicts, &effective, args.resamples, seed)?;
    write_json_atomic(&l.run_dir.file("labels/agreement.json"), &scores)?;
    write_stdout_or_file(&render_scores(&scores, args.format), args.output.as_deref())?;
    // The table and Markdown carry their warnings; data formats keep them out of the data.
    if matches!(
        args.format,
        crate::report::Format::Csv | crate::report::Format::Json
    ) {
        for w in &scores.warnings {
            eprintln!("warning: {w}");
        }
    }
    Ok(Outcome::Success)
}
