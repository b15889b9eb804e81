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
