//! `judge`: an LLM-as-judge evaluation harness. The module list and `main_entry`, which runs
//! the CLI, prints errors as `error: …` / `caused by: …` and returns the documented exit code.

pub mod battles;
pub mod cache;
pub mod cli;
pub mod commands;
pub mod config;
pub mod engine;
pub mod error;
pub mod extract;
pub mod interrupt;
pub mod judging;
pub mod label;
pub mod prompt;
pub mod provider;
pub mod ranking;
pub mod records;
pub mod report;
pub mod sandbox;
pub mod stats;
pub mod suite;
pub mod time;
pub mod verdict;

use std::process::ExitCode;

use clap::Parser;

/// Lowercase hex of a byte string.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Parses the command line, runs the command, and maps the result to an exit code.
pub fn main_entry() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                error::EXIT_USAGE
            } else {
                error::EXIT_OK
            });
        }
    };
    let result = commands::dispatch(cli);
    engine::run_dir::release_kept_locks();
    match result {
        Ok(outcome) => outcome.exit_code(),
        Err(err) => {
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("caused by: {cause}");
            }
            error::exit_code_for(&err)
        }
    }
}
