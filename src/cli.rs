//! The command line (clap derive): global options and one `*Args` struct per subcommand.
// The doc comments are the `--help` texts, where `[[judges]]` and `[run]` name judge.toml tables
// and `<run>` a placeholder, not Rust items or HTML.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// An LLM-as-judge evaluation harness whose numbers can be trusted.
///
/// Pipeline: `generate` collects one output per task and model (cached on disk); later commands
/// judge, rank and check them. Everything a command writes goes to runs/<run>/.
///
/// Exit codes: 0 success · 1 finished but some items failed or comparisons are missing (also an
/// unexpected I/O error, such as a full disk) · 2 usage, config or suite error, or the run is in
/// use by another judge process · 3 a provider refused the run (auth, quota, unknown model) ·
/// 130 interrupted (partial results kept; rerun to resume). README: Exit codes.
#[derive(Debug, Parser)]
#[command(
    name = "judge",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// The config file; suites/, cache/ and runs/ are found next to it.
    #[arg(
        long,
        global = true,
        env = "JUDGE_CONFIG",
        default_value = "judge.toml",
        value_name = "PATH"
    )]
    pub config: PathBuf,

    /// No progress bar, and no status lines (printed every minute instead of the bar when stderr
    /// is not a terminal). The end-of-run summary and warnings still go to stderr.
    #[arg(long, short, global = true, visible_alias = "no-progress")]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Collect one output per (task, model) with identical settings for every model.
    ///
    /// Every response is cached under cache/ (a rerun makes no request); records are appended
    /// to runs/<run>/outputs.jsonl as they finish, so a killed run keeps its work and
    /// `--run NAME` resumes it.
    Generate(GenerateArgs),

    /// Judge every task × model pair blind, in both orderings, as two separate calls.
    ///
    /// The judge sees "Answer 1" and "Answer 2" inside nonce-fenced blocks, never a model name.
    /// Each call must end with exactly one line `VERDICT: 1|2|TIE|BOTH_BAD`; an unparsable reply
    /// is retried once, then recorded as failed with the raw text kept. If the two orderings
    /// disagree the comparison is a tie with `flipped: true`. A judge from the same family as
    /// any ranked model is refused before any call (exit 2).
    Compare(CompareArgs),

    /// Run every output against its task's hidden test (check.py), sandboxed.
    ///
    /// The code is a ```python fenced block of the output (also py, python3, py3, in any case,
    /// and ~~~ or longer fences), else an untagged fenced block: the last one that defines
    /// (def, class or an assignment; not a method, an import or a rewrap such as f =
    /// cache(f)) every name check.py takes from
    /// `solution` (so an "example usage" block after the solution is passed over), else the
    /// last one; with no fence, the whole text if it looks
    /// like Python (an unterminated final fence, from a reply cut off by the token cap, counts
    /// up to the end). Each check
    /// runs in bubblewrap: read-only system, a fresh 64 MiB /tmp holding the working directory and
    /// a capped /dev/shm as the only writable places, no network, new PID/IPC namespaces, a scrubbed environment, limits on
    /// CPU, memory, file size and processes, and a wall-clock timeout. Results go to
    /// runs/<run>/checks.jsonl (cached: a rerun is instant); per-model pass rates with 95%
    /// Wilson intervals go to stdout.
    Check(CheckArgs),

    /// Fit Bradley–Terry to the comparisons and print a leaderboard with 95% bootstrap
    /// intervals; models whose win-rate intervals overlap share a rank.
    ///
    /// Ties count half a win; both-bad and failed comparisons are excluded from the fit but
    /// counted. With --run, the run also gets leaderboard.{json,csv,md} and
    /// leaderboards/<judge>.{json,csv,md}. The same seed gives the same output, byte for byte.
    Rank(RankArgs),

    /// generate → compare → rank in one go, printing the leaderboard.
    ///
    /// On the shipped judge.toml (hand-written answer sets and the execution judge) it runs
    /// with no network and no key. Judges: --judge, else every [[judges]] entry, else `exec`.
    Run(RunArgs),

    /// Write a starter project to edit: judge.toml (OpenAI and Anthropic providers, two
    /// models, a judge of another family) and a suite with one task and its hidden test.
    ///
    /// Replaces nothing: a folder that already holds any of its files is refused.
    Init(InitArgs),

    /// Human labelling: a blind stratified sample, labelled in the terminal or a spreadsheet,
    /// scored against the judge with agreement and Cohen's kappa.
    ///
    /// Without a subcommand, starts (or resumes) an interactive session for --labeller: each
    /// item shows the task and two answers (never model names or the judge's verdict); keys
    /// 1, 2, t (tie), b (both bad), s (skip), u (undo), v (view in pager), q (quit). Each label
    /// is saved at once. Without a terminal it reads one key per line from stdin.
    Label(LabelArgs),
}

/// The longest `--deadline`: a year, far beyond any run, and safe to add to the clock.
const MAX_DEADLINE_SECS: u64 = 366 * 24 * 3600;

/// Parses `90`, `90s`, `30m`, `2h` or a sum of them such as `1h30m` (at most a year).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let too_long = || format!("`{s}` is longer than a year; give a shorter duration (e.g. 48h)");
    let not_one = || {
        format!("`{s}` is not a duration: whole numbers with s, m or h (e.g. 90s, 30m, 2h, 1h30m)")
    };
    let mut rest = s;
    let mut secs: u64 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let n: u64 = match rest[..digits].parse() {
            Ok(n) => n,
            Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => return Err(too_long()),
            Err(_) => return Err(not_one()),
        };
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        // A bare number (all of it) is seconds.
        let unit = if unit_len == 0 && digits == s.len() {
            "s"
        } else {
            &rest[..unit_len]
        };
        let part = match unit {
            "s" => n,
            "m" => n.saturating_mul(60),
            "h" => n.saturating_mul(3600),
            _ if unit.starts_with('.') => {
                return Err(format!(
                    "`{s}` is not a whole number of units: use a smaller unit (e.g. 90m for 1.5h)"
                ));
            }
            "" => return Err(not_one()),
            _ => return Err(format!("unknown unit in `{s}` (use s, m or h)")),
        };
        secs = secs.saturating_add(part);
        rest = &rest[unit_len..];
    }
    if rest.is_empty() && s.is_empty() {
        return Err(not_one());
    }
    if secs > MAX_DEADLINE_SECS {
        return Err(too_long());
    }
    if secs == 0 {
        return Err(format!(
            "`{s}` is no time at all: nothing would start; give a positive duration (e.g. 30m)"
        ));
    }
    Ok(std::time::Duration::from_secs(secs))
}

/// `judge generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Run name (a folder under runs/). An existing run is resumed: only missing items are
    /// requested (`latest`: the most recently started run). Default: `<suite>-<UTC
    /// yyyymmdd-hhmmss>`.
    #[arg(long, value_name = "NAME")]
    pub run: Option<String>,

    /// Only these models (ids from judge.toml; repeat the flag). Default: every model.
    #[arg(long = "model", value_name = "ID")]
    pub models: Vec<String>,

    /// Ignore cached responses and ask the provider again (the new responses are cached), for
    /// the items still to generate: a finished item keeps its record (start a new run to
    /// generate everything afresh).
    #[arg(long)]
    pub refresh: bool,

    /// When resuming, also retry items whose earlier attempt failed.
    #[arg(long)]
    pub retry_failed: bool,

    /// Stop starting items and retries after this long (e.g. 90s, 30m, 2h, 1h30m, or seconds): items
    /// in flight finish and are recorded; one still retrying is cut short and not recorded (a
    /// rerun asks again); the rest wait for a rerun (exit 1).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub deadline: Option<std::time::Duration>,

    /// Only the first N tasks of the suite (in id order): a trial before the whole suite. The
    /// run stays incomplete; rerun without --limit (with --run NAME when the run got its
    /// default name, as the note says) to generate the rest into it, keeping the trial's
    /// outputs; compare judges what has outputs.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,

    /// Make no request and write nothing: print, per model, the items still to generate, how
    /// many the cache answers, and for the others an estimate of input tokens, the most
    /// output tokens (max_tokens each) and what they could cost at the model's price.
    #[arg(long)]
    pub dry_run: bool,

    /// Stop starting requests once this invocation's requests have cost this many dollars
    /// (e.g. 5, 12.50, $20) at the models' prices: answers from the cache still come, requests
    /// in flight finish (so the total can pass it by theirs), a wait to retry ends, the rest
    /// wait for a rerun (exit 1). Every model it asks (not an answer set) needs a price.
    #[arg(long, value_name = "USD", value_parser = crate::engine::budget::parse_usd)]
    pub max_cost: Option<f64>,
}

/// `judge compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The run to judge (a folder under runs/, made by `judge generate`; `latest`: the most
    /// recently started).
    #[arg(long, value_name = "NAME")]
    pub run: String,

    /// Judge id from [[judges]] in judge.toml, or `exec` (the execution judge: decides from
    /// `judge check` results, no calls). Repeat for several judges, each recorded separately.
    /// Default: every [[judges]] entry, or `exec` when none is configured.
    #[arg(long = "judge", value_name = "ID")]
    pub judges: Vec<String>,

    /// Ignore cached judge replies and ask again (new replies are cached), for the judgments
    /// still to make: a recorded judgment stays (judge into a new run to ask everything afresh).
    #[arg(long)]
    pub refresh: bool,

    /// When resuming, also retry calls whose verdict was recorded as failed.
    #[arg(long)]
    pub retry_failed: bool,

    /// Stop starting calls after this long (e.g. 90s, 30m, 2h, 1h30m); see `judge generate --help`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub deadline: Option<std::time::Duration>,

    /// Make no call and write nothing: print, per judge, the calls still to make, how many the
    /// cache answers, and for the others an estimate of input tokens, the most output tokens
    /// and what they could cost at the judge's price.
    #[arg(long)]
    pub dry_run: bool,

    /// Stop starting judge calls once this invocation's have cost this many dollars (e.g. 5,
    /// 12.50, $20) at the judges' prices: answers from the cache still come, calls in flight
    /// finish (so the total can pass it by theirs), a wait to retry ends, the rest wait for a
    /// rerun (exit 1). Every LLM judge with a call to make needs a price.
    #[arg(long, value_name = "USD", value_parser = crate::engine::budget::parse_usd)]
    pub max_cost: Option<f64>,
}

/// `judge check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The run whose outputs to check (`latest`: the most recently started).
    #[arg(long, value_name = "NAME")]
    pub run: String,

    /// Run model-written code WITHOUT the bubblewrap sandbox (only rlimits, a scrubbed
    /// environment and the timeout). Unsafe; every record says `sandbox: none`.
    #[arg(long)]
    pub no_sandbox: bool,

    /// Wall-clock limit per check in seconds, 1 to 3600 (default 20; CPU limit 10 s or this, if
    /// lower).
    #[arg(long, value_name = "SECS")]
    pub timeout_secs: Option<u64>,

    /// Report format [default: from --output's extension (.json, .csv, .md), else table]
    #[arg(long, value_enum)]
    pub format: Option<crate::report::Format>,

    /// Report every task's result per model (pass, fail, error, timeout, no_code) instead of
    /// per-model totals: for writing and checking a suite's hidden tests.
    #[arg(long)]
    pub by_task: bool,

    /// Write the report to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// What the bootstrap resamples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum UnitArg {
    /// Comparison rows, with replacement.
    Comparison,
    /// Tasks (cluster bootstrap): each drawn task brings all its comparisons.
    Task,
}

impl From<UnitArg> for crate::stats::BootstrapUnit {
    fn from(u: UnitArg) -> Self {
        match u {
            UnitArg::Comparison => crate::stats::BootstrapUnit::Comparison,
            UnitArg::Task => crate::stats::BootstrapUnit::Task,
        }
    }
}

/// `judge rank`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("input").required(true).args(["run", "comparisons"])))]
pub struct RankArgs {
    /// Rank the comparisons of this run (runs/<run>/comparisons.jsonl; `latest`: the most
    /// recently started run).
    #[arg(long, value_name = "NAME")]
    pub run: Option<String>,

    /// Rank battles from a JSON Lines file in the Chatbot Arena convention: {"model_a",
    /// "model_b", "winner": "model_a"|"model_b"|"tie"|"tie (bothbad)", "question_id"?} (or
    /// one JSON array of them); `-` reads standard input.
    #[arg(long, value_name = "FILE")]
    pub comparisons: Option<PathBuf>,

    /// With --run: the judge whose comparisons to rank (needed when the run has several).
    #[arg(long, value_name = "ID")]
    pub judge: Option<String>,

    /// L2 prior λ on the strengths: keeps ratings finite when a model wins every match.
    #[arg(
        long,
        default_value_t = 0.1,
        value_name = "LAMBDA",
        allow_negative_numbers = true
    )]
    pub prior: f64,

    /// Bootstrap resamples (at least 1000 unless --allow-few-resamples).
    #[arg(
        long,
        default_value_t = 1000,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub resamples: usize,

    /// Allow fewer than 1000 resamples (intervals become unreliable).
    #[arg(long)]
    pub allow_few_resamples: bool,

    /// Bootstrap seed. Default: the seed recorded in the run (its [run] seed when it was
    /// created), or 0 for --comparisons.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub seed: Option<u64>,

    /// What the bootstrap resamples.
    #[arg(long, value_enum, default_value = "comparison")]
    pub bootstrap_unit: UnitArg,

    /// Print the judge prompt read back out of the run, then the leaderboard.
    #[arg(long)]
    pub show_prompt: bool,

    /// With --run: fit the same model to the human labels (labels/*.jsonl) instead of the
    /// judge's comparisons, so people and judge can be compared side by side.
    #[arg(long, requires = "run", conflicts_with = "judge")]
    pub from_labels: bool,

    /// Output format [default: from --output's extension (.json, .csv, .md), else table]
    #[arg(long, value_enum)]
    pub format: Option<crate::report::Format>,

    /// Write the leaderboard to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,

    /// Also print, on stderr, how long reading and parsing the input, ranking (fit and
    /// bootstrap) and writing took.
    #[arg(long)]
    pub timings: bool,
}

/// `judge init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// The folder to write the project into (created if missing). Default: the folder of
    /// --config (the current one for ./judge.toml), with the config written under that name.
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The suite's name (its folder under suites/).
    #[arg(long, value_name = "NAME", default_value = "my-suite")]
    pub suite: String,
}

/// `judge run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Run name (a folder under runs/); an existing run is resumed (`latest`: the most
    /// recently started). Default: `<suite>-<UTC yyyymmdd-hhmmss>`.
    #[arg(long, value_name = "NAME")]
    pub run: Option<String>,

    /// Only these models (repeatable). Default: every model.
    #[arg(long = "model", value_name = "ID")]
    pub models: Vec<String>,

    /// Judges (repeatable; a leaderboard is printed for each). Default: every [[judges]]
    /// entry, or `exec` when none is configured.
    #[arg(long = "judge", value_name = "ID")]
    pub judges: Vec<String>,

    /// When resuming, also retry failed outputs and failed judge calls.
    #[arg(long)]
    pub retry_failed: bool,

    /// L2 prior λ of the Bradley–Terry fit.
    #[arg(
        long,
        default_value_t = 0.1,
        value_name = "LAMBDA",
        allow_negative_numbers = true
    )]
    pub prior: f64,

    /// Bootstrap resamples (at least 1000 unless --allow-few-resamples).
    #[arg(
        long,
        default_value_t = 1000,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub resamples: usize,

    /// Allow fewer than 1000 resamples.
    #[arg(long)]
    pub allow_few_resamples: bool,

    /// What the bootstrap resamples.
    #[arg(long, value_enum, default_value = "comparison")]
    pub bootstrap_unit: UnitArg,

    /// Leaderboard format on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::report::Format,

    /// Only the first N tasks of the suite (in id order): a trial before the whole suite; see
    /// `judge generate --help`. What is not generated is not judged, and the leaderboard says
    /// so (exit 1); rerun without --limit (with --run NAME when the run got its default name)
    /// to go on.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,

    /// Stop starting requests once the run's generation and judging in this invocation have
    /// cost this many dollars (e.g. 5, 12.50, $20) at the models' and judges' prices; see
    /// `judge generate --help`. Reached during generation, nothing is judged or ranked (exit 1); a rerun goes
    /// on. Every model and judge it pays for needs a price.
    #[arg(long, value_name = "USD", value_parser = crate::engine::budget::parse_usd)]
    pub max_cost: Option<f64>,
}

/// `judge label`.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabelArgs {
    #[command(subcommand)]
    pub action: Option<LabelAction>,

    /// The run to label (interactive session; `latest`: the most recently started run).
    #[arg(long, value_name = "NAME")]
    pub run: Option<String>,

    /// Who is labelling (letters, digits, . _ -, not starting with ., and not sample, agreement, judge or all); labels go to
    /// runs/<run>/labels/<ID>.jsonl.
    #[arg(long, value_name = "ID")]
    pub labeller: Option<String>,

    /// Show which model wrote each answer, after your label has been saved.
    #[arg(long)]
    pub reveal: bool,
}

/// `judge label` subcommands.
#[derive(Debug, Subcommand)]
pub enum LabelAction {
    /// Draw the sample: comparisons spread evenly over tasks and model pairs (random within
    /// them, seeded), each with a random (seeded) choice of which answer is shown first.
    Sample(LabelSampleArgs),
    /// Write the blind sheet (item, task, standard, prompt, answer_1, answer_2, empty choice,
    /// sample) as CSV; keep the `sample` column: import needs it.
    Export(LabelExportArgs),
    /// Import a filled sheet for a labeller; every row is validated first, nothing is
    /// imported if one is wrong.
    Import(LabelImportArgs),
    /// Agreement and Cohen's kappa of every labeller (and all pooled) with the judge, the
    /// confusion matrix, human–human agreement, and coverage per stratum.
    Score(LabelScoreArgs),
}

/// `judge label sample`.
#[derive(Debug, Args)]
pub struct LabelSampleArgs {
    /// The run whose comparisons to sample (`latest`: the most recently started).
    #[arg(long, value_name = "NAME")]
    pub run: String,
    /// How many items to draw (at least 1).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub n: usize,
    /// Sampling seed (default: the run's seed).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// The judge whose verdicts the labels will be compared with (needed when the run has
    /// several).
    #[arg(long, value_name = "ID")]
    pub judge: Option<String>,
    /// Replace an existing sample.
    #[arg(long)]
    pub force: bool,
}

/// `judge label export`.
#[derive(Debug, Args)]
pub struct LabelExportArgs {
    /// The run whose sample to export (`latest`: the most recently started).
    #[arg(long, value_name = "NAME")]
    pub run: String,
    /// Sheet format (CSV only).
    #[arg(long, value_enum, default_value = "csv")]
    pub format: SheetFormat,
    /// Write the sheet here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Sheet formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SheetFormat {
    Csv,
}

/// `judge label import`.
#[derive(Debug, Args)]
pub struct LabelImportArgs {
    /// The filled sheet (CSV from `label export`; it needs its `item`, `choice` and `sample`
    /// columns, or, for a sheet from before `sample` existed, both answer columns).
    pub file: PathBuf,
    /// The run the sheet was exported from (`latest`: the most recently started).
    #[arg(long, value_name = "NAME")]
    pub run: String,
    /// Whose labels these are (letters, digits, . _ -, not starting with ., and not sample, agreement, judge or all).
    #[arg(long, value_name = "ID")]
    pub labeller: String,
}

/// `judge label score`.
#[derive(Debug, Args)]
pub struct LabelScoreArgs {
    /// The run whose labels to score (`latest`: the most recently started).
    #[arg(long, value_name = "NAME")]
    pub run: String,
    /// Bootstrap resamples for the kappa interval (at least 1000 unless
    /// --allow-few-resamples).
    #[arg(
        long,
        default_value_t = 1000,
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub resamples: usize,
    /// Allow fewer than 1000 resamples (for a quick look).
    #[arg(long)]
    pub allow_few_resamples: bool,
    /// Bootstrap seed (default: the run's seed).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub seed: Option<u64>,
    /// Score the labels against this judge of the run instead of the one the sample was drawn
    /// for (the items are the same comparisons for every judge); the report is not written to
    /// labels/agreement.json then, which stays the sample judge's.
    #[arg(long, value_name = "ID")]
    pub judge: Option<String>,
    /// Report format [default: from --output's extension (.json, .csv, .md), else table]
    #[arg(long, value_enum)]
    pub format: Option<crate::report::Format>,
    /// Write the report to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// A count of at least 1.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}

impl Command {
    /// The `--run` value given to the command, if any (to resolve [`LATEST_RUN`]).
    pub fn run_name_mut(&mut self) -> Option<&mut String> {
        match self {
            Command::Generate(a) => a.run.as_mut(),
            Command::Compare(a) => Some(&mut a.run),
            Command::Check(a) => Some(&mut a.run),
            Command::Rank(a) => a.run.as_mut(),
            Command::Run(a) => a.run.as_mut(),
            Command::Init(_) => None,
            Command::Label(a) => match &mut a.action {
                Some(LabelAction::Sample(a)) => Some(&mut a.run),
                Some(LabelAction::Export(a)) => Some(&mut a.run),
                Some(LabelAction::Import(a)) => Some(&mut a.run),
                Some(LabelAction::Score(a)) => Some(&mut a.run),
                None => a.run.as_mut(),
            },
        }
    }
}

/// `--run latest`: the most recently started run under `runs/` (unless a run is named so).
pub const LATEST_RUN: &str = "latest";

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations_parse_and_errors_say_what_to_write() {
        for (text, secs) in [
            ("90", 90),
            ("90s", 90),
            ("30m", 1800),
            ("2h", 7200),
            (" 5s ", 5),
            ("1h30m", 5400),
            ("2h15m30s", 8130),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_secs(secs)),
                "{text}"
            );
        }
        let err = parse_duration("1.5h").unwrap_err();
        assert!(err.contains("use a smaller unit (e.g. 90m"), "{err}");
        let err = parse_duration("5d").unwrap_err();
        assert!(
            err.contains("unknown unit in `5d` (use s, m or h)"),
            "{err}"
        );
        for zero in ["0", "0s", "0h0m"] {
            let err = parse_duration(zero).unwrap_err();
            assert!(err.contains("is no time at all"), "{zero}: {err}");
        }
        for bad in ["h", "", "1h30", "30m2", "1h 30m"] {
            let err = parse_duration(bad).unwrap_err();
            assert!(
                err.contains("is not a duration") || err.contains("unknown unit"),
                "{bad}: {err}"
            );
        }
        // Huge values are refused, not overflowed (a panic, or a wrap to 0 s).
        assert_eq!(
            parse_duration("8784h"),
            Ok(Duration::from_secs(366 * 86400))
        );
        for huge in [
            "8785h",
            "18446744073709551615",
            "18446744073709551616s",
            "1152921504606846976h",
            "18446744073709551615m",
        ] {
            let err = parse_duration(huge).unwrap_err();
            assert!(err.contains("longer than a year"), "{huge}: {err}");
        }
    }
}
