//! `judge check`: runs every output of a task that has a `check.py` against that hidden test
//! inside the sandbox, records `checks.jsonl`, and reports pass rates with Wilson intervals.
//! Also provides the check results the execution judge decides from.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::sha256_hex;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::cache::{Cache, cache_key};
use crate::cli::{CheckArgs, Cli};
use crate::config::load_config;
use crate::engine::run_dir::{
    JsonlAppender, RunDir, read_jsonl_repairing, write_json_atomic, write_jsonl_atomic,
};
use crate::error::{JudgeError, Outcome};
use crate::extract::{extract_code, solution_names};
use crate::judging::exec_outcome;
use crate::records::{OutputRecord, Status, Winner};
use crate::report::checks::{CheckRow, render_check_report, render_task_matrix};
use crate::report::progress::Progress;
use crate::sandbox::{CheckResult, SandboxPolicy, default_parallelism, run_check};
use crate::suite::Suite;

mod policy;
mod suite_checks;

use policy::policy_label;
pub use policy::{MAX_TIMEOUT_SECS, sandbox_policy};
pub(crate) use policy::{checks_basis, exec_policy_notes, record_policy};
pub(crate) use suite_checks::{checks_without_solution, uncompilable_checks, warn_invalid_checks};

/// Check records of a run.
pub const CHECKS_FILE: &str = "checks.jsonl";

/// The `result` of a check record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    Pass,
    Fail,
    Error,
    Timeout,
    /// No code could be extracted (or generation failed): counts as not passing.
    NoCode,
}

impl From<CheckResult> for CheckOutcome {
    fn from(r: CheckResult) -> Self {
        match r {
            CheckResult::Pass => CheckOutcome::Pass,
            CheckResult::Fail => CheckOutcome::Fail,
            CheckResult::Error => CheckOutcome::Error,
            CheckResult::Timeout => CheckOutcome::Timeout,
        }
    }
}

/// One line of `checks.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckRecord {
    pub task: String,
    pub model: String,
    pub result: CheckOutcome,
    pub duration_ms: u64,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    /// Last bytes of the check's stdout and stderr.
    pub stdout_tail: String,
    pub stderr_tail: String,
    /// `bwrap`, or `none` when run with `--no-sandbox`.
    pub sandbox: String,
    /// SHA-256 of check.py and of the extracted code (`null` when there was none).
    pub check_sha256: String,
    pub code_sha256: Option<String>,
    pub from_cache: bool,
    /// The version of the runner that decided the result ([`RUNNER_VERSION`]); 0 in records
    /// written before it was recorded. A record of an older runner is checked again.
    #[serde(default)]
    pub runner: u32,
    /// The wall-clock limit the check ran under (`--timeout-secs`); `null` in records written
    /// before it was recorded.
    #[serde(default)]
    pub wall_timeout_secs: Option<f64>,
}

/// The version of the sandbox runner's rules, in the cache key and in every record:
/// 2: a check passes only by running to its end (SystemExit(0) and os._exit fail).
/// 3: the finish marker carries a nonce from stdin, the interpreter must be as it was, a crash
/// after the start is a failure, /dev/shm is capped.
/// 4: the finish marker counts wherever it is in stderr (a daemon thread may write after it),
/// a check.py with a BOM or CRLF runs, one that does not compile is `error`, the check may set
/// sys.excepthook.
/// 5: the check may end itself with SystemExit(0) (unittest.main(), sys.exit(0)); a coding
/// cookie is honoured; a forked child cannot finish for the check.
/// 6: a status is an int's real value, subclasses included (`sys.exit(IntEnum.OK)` is 0).
/// 7: processes of multiprocessing's spawn and forkserver no longer look for check.py (a pool
/// of the solution's functions hung, a timeout for every model).
/// 8: a check ends itself only at one of its own exits (a `raise`, a call of exit/quit/main);
/// a SystemExit(0) raised through a slot of the solution's object (`__repr__ = sys.exit`
/// under `%r`) is a failure.
/// 9: the check's exits include names it imports them as, and never the solution's
/// (`solution.main()`); a call whose receiver spans lines counts; the garbage collector's
/// settings are guarded, and sys.argv and sys.warnoptions must stay lists.
/// 10: for a check that uses unittest, unittest's runner and assertion methods (and
/// `failureException`) are guarded too (a solution that made `assertEqual` a no-op passed);
/// a guarded function's code and defaults are compared, not only the object; `exit`'s class
/// is guarded; `from solution import *` makes exit-like names the solution's; whether the
/// collector is enabled is no longer compared (a solution may turn it off for speed).
pub const RUNNER_VERSION: u32 = 10;

/// The part of a check that is cached (keyed by check hash, code hash and sandbox policy).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CachedCheck {
    result: CheckOutcome,
    duration_ms: u64,
    exit_code: Option<i32>,
    signal: Option<i32>,
    stdout_tail: String,
    stderr_tail: String,
    sandbox: String,
}

/// Check results by (task, model), for the execution judge.
#[derive(Debug, Clone, Default)]
pub struct CheckTable {
    results: BTreeMap<(String, String), CheckOutcome>,
}

impl CheckTable {
    /// From check records.
    pub fn from_records(records: &[CheckRecord]) -> Self {
        let results = records
            .iter()
            .map(|r| ((r.task.clone(), r.model.clone()), r.result))
            .collect();
        CheckTable { results }
    }

    /// The execution judge's outcome for a pair on a task: a missing check counts as not
    /// passed; a check that ended in `error` (the harness got no verdict) makes the
    /// comparison failed, not a loss.
    pub fn outcome(&self, task: &str, a: &str, b: &str) -> Winner {
        let result = |m: &str| {
            self.results
                .get(&(task.to_string(), m.to_string()))
                .copied()
        };
        let (ra, rb) = (result(a), result(b));
        if ra == Some(CheckOutcome::Error) || rb == Some(CheckOutcome::Error) {
            return Winner::Failed;
        }
        exec_outcome(
            ra == Some(CheckOutcome::Pass),
            rb == Some(CheckOutcome::Pass),
        )
    }
}

/// Runs `judge check`.
pub fn run(cli: &Cli, args: &CheckArgs) -> anyhow::Result<Outcome> {
    crate::report::refuse_output_into_run(
        args.output.as_deref(),
        &crate::config::project_root(&cli.config).join("runs"),
    )?;
    let config = load_config(&cli.config)?;
    // A suite without hidden tests has nothing to check: its outputs (they may be gigabytes)
    // are not read.
    let (mut run_dir, manifest, suite, outputs) =
        crate::commands::load_run_if(&config, &args.run, &|suite| {
            Ok(suite.tasks.iter().any(|t| t.check.is_some()))
        })?;
    if suite.tasks.iter().all(|t| t.check.is_none()) {
        eprintln!(
            "warning: suite `{}` has no hidden tests (tasks/<id>/check.py): nothing to check; add a check.py to the tasks a test can decide (README: Writing a task and its check)",
            suite.name
        );
    } else if let Some(s) = crate::commands::compare::unchecked_tasks(&suite, "not checked") {
        // Pass rates are over the checked tasks only: say which are not among them.
        eprintln!("note: pass rates cover the tasks with a check.py: {s}");
    }
    let policy = sandbox_policy(args.no_sandbox, args.timeout_secs)?;
    run_dir.create_and_lock()?;
    crate::interrupt::install();
    crate::interrupt::on_quit_say(crate::interrupt::resume_note(run_dir.name(), false));
    let cache = Cache::new(config.cache_dir());
    // The limits are recorded once the run's checks are read and before any check runs, so
    // that a check killed before its end leaves them with the records it wrote.
    let mut manifest = manifest;
    let records = ensure_checks(
        &run_dir,
        &suite,
        &outputs,
        &policy,
        &cache,
        cli.quiet,
        || {
            record_policy(&mut manifest, &policy);
            write_json_atomic(&run_dir.file("manifest.json"), &manifest)
        },
    )?;
    let models: Vec<String> = manifest.models.iter().map(|m| m.id.clone()).collect();
    let format = crate::report::output_format(args.format, args.output.as_deref());
    let bytes = if args.by_task {
        render_task_matrix(&models, &task_rows(&suite, &models, &records), format)
    } else {
        render_check_report(&check_rows(&models, &records)?, format)
    };
    crate::report::write_stdout_or_file(&bytes, args.output.as_deref())?;
    let errors = records
        .iter()
        .filter(|r| r.result == CheckOutcome::Error)
        .count();
    if errors > 0 {
        warn_invalid_checks(&records);
        eprintln!(
            "warning: {errors} check(s) ended with `error` (the harness could not get a verdict; left out of the pass rates); see stderr_tail in {CHECKS_FILE}"
        );
        return Ok(Outcome::ItemsFailed);
    }
    Ok(Outcome::Success)
}

/// The code `check` (the test's source) runs for `output`: extracted from an ok output (the
/// block that defines what the check takes from `solution`), none from a failed one.
fn code_of(output: &OutputRecord, check: &str) -> Option<String> {
    let text = output
        .text
        .as_deref()
        .filter(|_| output.status == Status::Ok)?;
    extract_code(text, &solution_names(check))
}

/// Whether `record` is a finished check of `output` as it is now against `check` (the test's
/// source): same test, same code, decided by this runner (a record without code needs none).
/// A record of an output since regenerated (`--retry-failed`), of an edited check, or of an
/// older runner (whose rules gave other verdicts) does not describe it.
pub fn describes(record: &CheckRecord, output: &OutputRecord, check: &str) -> bool {
    record.result != CheckOutcome::Error && is_current(record, output, check)
}

/// Whether `record` is of `output`'s current code and `check` as they are now, decided by this
/// runner (or without code), whatever its result: an `error` too, which [`describes`] leaves
/// out so that it is tried again.
pub fn is_current(record: &CheckRecord, output: &OutputRecord, check: &str) -> bool {
    (record.runner == RUNNER_VERSION || record.result == CheckOutcome::NoCode)
        && record.check_sha256 == sha256_hex(check)
        && record.code_sha256 == code_of(output, check).as_deref().map(sha256_hex)
}

/// Makes sure every output of a task with a `check.py` has a check record: reads
/// `checks.jsonl`, calls `before_checks` (which records the limits), runs the missing (or
/// outdated) checks in parallel, appends each as it finishes, then rewrites the file sorted by
/// (task, model). Returns all current records.
pub fn ensure_checks(
    run_dir: &RunDir,
    suite: &Suite,
    outputs: &[OutputRecord],
    policy: &SandboxPolicy,
    cache: &Cache,
    quiet: bool,
    before_checks: impl FnOnce() -> anyhow::Result<()>,
) -> anyhow::Result<Vec<CheckRecord>> {
    let path = run_dir.file(CHECKS_FILE);
    let existing: Vec<CheckRecord> = read_jsonl_repairing(&path)?;
    before_checks()?;
    let mut current: BTreeMap<(String, String), CheckRecord> = BTreeMap::new();
    for r in existing {
        current.insert((r.task.clone(), r.model.clone()), r);
    }
    let mut jobs = Vec::new();
    for o in outputs {
        let Some(check) = suite.task(&o.task).and_then(|t| t.check.as_deref()) else {
            continue;
        };
        let code = code_of(o, check);
        let check_sha = sha256_hex(check);
        let code_sha = code.as_deref().map(sha256_hex);
        // Only a record without code stands as it is: pass and fail come back from the
        // cache, whose key holds every limit (so new limits run the check again), and
        // `timeout` and `error` are never cached, so they are tried again.
        let up_to_date = current
            .get(&(o.task.clone(), o.model.clone()))
            .is_some_and(|r| {
                r.result == CheckOutcome::NoCode
                    && r.check_sha256 == check_sha
                    && r.code_sha256 == code_sha
                    && r.sandbox == policy_label(policy)
            });
        if !up_to_date {
            jobs.push((o, check, code, check_sha, code_sha));
        }
    }
    let progress = Progress::new(jobs.len() as u64, quiet, "check").free();
    let appender = Mutex::new(JsonlAppender::open(&path)?);
    let queue = Mutex::new(jobs.into_iter());
    let results = Mutex::new(Vec::new());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..default_parallelism() {
            s.spawn(|| {
                loop {
                    if crate::interrupt::requested() {
                        break;
                    }
                    let next = queue.lock().expect("queue lock").next();
                    let Some((o, check, code, check_sha, code_sha)) = next else {
                        break;
                    };
                    let outcome = check_one(
                        policy,
                        cache,
                        o,
                        check,
                        code.as_deref(),
                        check_sha,
                        code_sha,
                    )
                    .and_then(|rec| {
                        let Some(rec) = rec else { return Ok(None) };
                        appender
                            .lock()
                            .expect("appender lock")
                            .append(&rec)
                            .map(|()| Some(rec))
                    });
                    match outcome {
                        // Killed by the stop: left for the rerun.
                        Ok(None) => {}
                        Ok(Some(rec)) => {
                            progress.item_done(
                                rec.from_cache,
                                rec.result != CheckOutcome::Pass,
                                Some(0.0),
                                true,
                            );
                            results.lock().expect("results lock").push(rec);
                        }
                        Err(e) => {
                            failure.lock().expect("failure lock").get_or_insert(e);
                            break;
                        }
                    }
                }
            });
        }
    });
    progress.finish();
    if let Some(e) = failure.into_inner().expect("failure lock") {
        return Err(e);
    }
    for r in results.into_inner().expect("results lock") {
        current.insert((r.task.clone(), r.model.clone()), r);
    }
    let all: Vec<CheckRecord> = current.into_values().collect();
    write_jsonl_atomic(&path, &all)?;
    if crate::interrupt::requested() {
        return Err(JudgeError::Interrupted(None).into());
    }
    Ok(all)
}

/// Runs (or recalls from the cache) one check. Timeouts and harness errors are not cached,
/// so they are tried again next time. `None` for a check killed by a signal after a stop was
/// asked for (SIGTERM sent to every process, as systemd or a CI runner does): that is the
/// stop's doing, not the code's, so it is neither recorded nor cached.
fn check_one(
    policy: &SandboxPolicy,
    cache: &Cache,
    output: &OutputRecord,
    check: &str,
    code: Option<&str>,
    check_sha256: String,
    code_sha256: Option<String>,
) -> anyhow::Result<Option<CheckRecord>> {
    let mut record = CheckRecord {
        task: output.task.clone(),
        model: output.model.clone(),
        result: CheckOutcome::NoCode,
        duration_ms: 0,
        exit_code: None,
        signal: None,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        sandbox: policy_label(policy).to_string(),
        check_sha256,
        code_sha256,
        from_cache: false,
        runner: RUNNER_VERSION,
        wall_timeout_secs: Some(policy.wall_timeout.as_secs_f64()),
    };
    let Some(code) = code else {
        if output.status == Status::Failed {
            record.stderr_tail = "generation failed: no output to check".into();
        }
        return Ok(Some(record));
    };
    let canonical = json!({
        "kind": "check",
        "runner": RUNNER_VERSION,
        "check_sha256": record.check_sha256,
        "code_sha256": record.code_sha256,
        "sandbox": record.sandbox,
        "cpu_secs": policy.cpu_secs,
        "memory_bytes": policy.memory_bytes,
        "file_size_bytes": policy.file_size_bytes,
        "max_processes": policy.max_processes,
        "tmpfs_bytes": policy.tmpfs_bytes,
        "python": policy.python,
        "wall_timeout_ms": policy.wall_timeout.as_millis() as u64,
    });
    let key = cache_key(&canonical);
    let cached: Option<CachedCheck> = cache.get(&key).and_then(|v| serde_json::from_value(v).ok());
    let c = match cached {
        Some(c) => {
            record.from_cache = true;
            c
        }
        None => {
            let run =
                run_check(policy, check, code).map_err(|e| JudgeError::usage(e.to_string()))?;
            if run.signal.is_some() && crate::interrupt::requested() {
                return Ok(None);
            }
            let c = CachedCheck {
                result: run.result.into(),
                duration_ms: run.duration_ms,
                exit_code: run.exit_code,
                signal: run.signal,
                stdout_tail: run.stdout_tail,
                stderr_tail: run.stderr_tail,
                sandbox: run.sandbox.to_string(),
            };
            if matches!(c.result, CheckOutcome::Pass | CheckOutcome::Fail) {
                cache.put(&key, &canonical, &serde_json::to_value(&c)?)?;
            }
            c
        }
    };
    record.result = c.result;
    record.duration_ms = c.duration_ms;
    record.exit_code = c.exit_code;
    record.signal = c.signal;
    record.stdout_tail = c.stdout_tail;
    record.stderr_tail = c.stderr_tail;
    record.sandbox = c.sandbox;
    Ok(Some(record))
}

/// Per task with a check (suite order), each model's result (`pass`, `fail`, …; empty when
/// not checked), in `models` order.
fn task_rows(
    suite: &Suite,
    models: &[String],
    records: &[CheckRecord],
) -> Vec<(String, Vec<String>)> {
    let result: BTreeMap<(&str, &str), CheckOutcome> = records
        .iter()
        .map(|r| ((r.task.as_str(), r.model.as_str()), r.result))
        .collect();
    suite
        .tasks
        .iter()
        .filter(|t| t.check.is_some())
        .map(|t| {
            let cells = models
                .iter()
                .map(|m| {
                    result
                        .get(&(t.id.as_str(), m.as_str()))
                        .and_then(|o| serde_json::to_value(o).ok())
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default()
                })
                .collect();
            (t.id.clone(), cells)
        })
        .collect()
}

/// Per-model pass counts with 95% Wilson intervals, in manifest model order.
pub fn check_rows(models: &[String], records: &[CheckRecord]) -> anyhow::Result<Vec<CheckRow>> {
    let mut rows = Vec::new();
    for m in models {
        let mine: Vec<&CheckRecord> = records.iter().filter(|r| &r.model == m).collect();
        if mine.is_empty() {
            continue;
        }
        let count = |o: CheckOutcome| mine.iter().filter(|r| r.result == o).count() as u64;
        let (passed, total) = (count(CheckOutcome::Pass), mine.len() as u64);
        let errors = count(CheckOutcome::Error);
        // An `error` is the harness's failure (Python did not start, the check.py does not
        // compile), not the model's: like a failed comparison it is counted, not rated.
        let decided = total - errors;
        let interval = crate::stats::wilson_interval(passed, decided)?;
        rows.push(CheckRow {
            model: m.clone(),
            passed,
            total,
            decided,
            failed: count(CheckOutcome::Fail),
            errors,
            timeouts: count(CheckOutcome::Timeout),
            no_code: count(CheckOutcome::NoCode),
            pass_rate: (decided > 0).then(|| passed as f64 / decided as f64),
            ci_low: interval.map(|i| i.lo),
            ci_high: interval.map(|i| i.hi),
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(model: &str, result: CheckOutcome) -> CheckRecord {
        CheckRecord {
            task: "t".into(),
            model: model.into(),
            result,
            duration_ms: 0,
            exit_code: None,
            signal: None,
            stdout_tail: String::new(),
            stderr_tail: String::new(),
            sandbox: "bwrap".into(),
            check_sha256: String::new(),
            code_sha256: None,
            from_cache: false,
            runner: RUNNER_VERSION,
            wall_timeout_secs: Some(20.0),
        }
    }

    #[test]
    fn a_harness_error_fails_the_comparison_instead_of_losing_it() {
        let table = CheckTable::from_records(&[
            record("ok", CheckOutcome::Pass),
            record("broken", CheckOutcome::Error),
            record("slow", CheckOutcome::Timeout),
        ]);
        assert_eq!(table.outcome("t", "ok", "broken"), Winner::Failed);
        assert_eq!(table.outcome("t", "broken", "slow"), Winner::Failed);
        assert_eq!(table.outcome("t", "ok", "slow"), Winner::ModelA);
        assert_eq!(table.outcome("t", "slow", "missing"), Winner::BothBad);
    }

    #[test]
    fn a_harness_error_is_counted_but_left_out_of_the_pass_rate() {
        use CheckOutcome::{Error, Fail, NoCode, Pass, Timeout};
        let mut records: Vec<CheckRecord> = [Pass, Pass, Pass, Fail, Error, Error]
            .into_iter()
            .map(|o| record("a", o))
            .collect();
        records.extend([Error, Error].map(|o| record("b", o)));
        records.extend([Pass, Timeout, NoCode].map(|o| record("c", o)));
        let models = ["a", "b", "c", "unchecked"].map(String::from);
        let rows = check_rows(&models, &records).expect("valid counts");
        assert_eq!(rows.len(), 3, "a model without records has no row");
        let a = &rows[0];
        assert_eq!((a.passed, a.decided, a.total, a.errors), (3, 4, 6, 2));
        assert_eq!(a.pass_rate, Some(0.75));
        let wilson = crate::stats::wilson_interval(3, 4).unwrap().unwrap();
        assert_eq!((a.ci_low, a.ci_high), (Some(wilson.lo), Some(wilson.hi)));
        // Nothing decided: no rate, no interval (not a rate of zero).
        let b = &rows[1];
        assert_eq!((b.decided, b.pass_rate, b.ci_low), (0, None, None));
        // Timeouts and missing code are the model's: they stay in the denominator.
        let c = &rows[2];
        assert_eq!((c.passed, c.decided, c.timeouts, c.no_code), (1, 3, 1, 1));
    }
}
