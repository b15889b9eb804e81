//! The command line (clap derive): global options and one `*Args` struct per subcommand.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// An LLM-as-judge evaluation harness whose numbers can be trusted.
///
/// Pipeline: `generate` collects one output per task and model (cached on disk); later commands
/// judge, rank and check them. Everything a command writes goes to runs/<run>/.
///
/// Exit codes: 0 success · 1 finished but some items failed · 2 usage, config or suite error ·
/// 3 a provider refused the run (auth, quota, unknown model) · 130 interrupted (partial results
/// kept; rerun to resume).
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

    /// No progress bar (also hidden automatically when stderr is not a terminal). The end-of-run
    /// summary and warnings still go to stderr.
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
    /// The code is the last fenced python block of the output, else the whole text. Each check
    /// runs in bubblewrap: read-only system, a fresh temporary working directory as the only
    /// writable place, no network, new PID/IPC namespaces, a scrubbed environment, limits on
    /// CPU, memory, file size and processes, and a wall-clock timeout. Results go to
    /// runs/<run>/checks.jsonl (cached: a rerun is instant); per-model pass rates with 95%
    /// Wilson intervals go to stdout.
    Check(CheckArgs),
}

/// `judge generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Run name (a folder under runs/). An existing run is resumed: only missing items are
    /// requested. Default: `<suite>-<UTC yyyymmdd-hhmmss>`.
    #[arg(long, value_name = "NAME")]
    pub run: Option<String>,

    /// Only these models (ids from judge.toml; repeat the flag). Default: every model.
    #[arg(long = "model", value_name = "ID")]
    pub models: Vec<String>,

    /// Ignore cached responses and ask the provider again (the new responses are cached).
    #[arg(long)]
    pub refresh: bool,

    /// When resuming, also retry items whose earlier attempt failed.
    #[arg(long)]
    pub retry_failed: bool,
}

/// `judge compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The run to judge (a folder under runs/, made by `judge generate`).
    #[arg(long, value_name = "NAME")]
    pub run: String,

    /// Judge id from [[judges]] in judge.toml, or `exec` (the execution judge: decides from
    /// `judge check` results, no calls). Repeat for several judges, each recorded separately.
    /// Default: every [[judges]] entry, or `exec` when none is configured.
    #[arg(long = "judge", value_name = "ID")]
    pub judges: Vec<String>,

    /// Ignore cached judge replies and ask again (new replies are cached).
    #[arg(long)]
    pub refresh: bool,

    /// When resuming, also retry calls whose verdict was recorded as failed.
    #[arg(long)]
    pub retry_failed: bool,
}

/// `judge check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The run whose outputs to check.
    #[arg(long, value_name = "NAME")]
    pub run: String,

    /// Run model-written code WITHOUT the bubblewrap sandbox (only rlimits, a scrubbed
    /// environment and the timeout). Unsafe; every record says `sandbox: none`.
    #[arg(long)]
    pub no_sandbox: bool,

    /// Wall-clock limit per check in seconds (default 20; CPU limit 10 s or this, if lower).
    #[arg(long, value_name = "SECS")]
    pub timeout_secs: Option<u64>,

    /// Report format on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: crate::report::Format,

    /// Write the report to this file instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}
