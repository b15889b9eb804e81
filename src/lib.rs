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

/// The first 12 characters of a hash, as shown to people: cut at a character boundary, so a
/// hash edited by hand (in a run's files) cannot make the cut panic.
pub fn short_hash(hash: &str) -> &str {
    hash.char_indices()
        .nth(12)
        .map_or(hash, |(end, _)| &hash[..end])
}

/// Lowercase hex of the SHA-256 of `text`: how judge names prompts, checks and code.
pub fn sha256_hex(text: &str) -> String {
    use sha2::{Digest, Sha256};
    hex(&Sha256::digest(text.as_bytes()))
}

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

/// Whether process `pid` is known to have ended: no `/proc/PID` where `/proc` is mounted
/// (where it is not, nothing is known to have ended). For leftovers named by their writer's
/// pid: temp files, lock-holder lines, check folders.
pub fn process_gone(pid: u32) -> bool {
    let proc = std::path::Path::new("/proc");
    pid != std::process::id() && proc.join("self").exists() && !proc.join(pid.to_string()).exists()
}

/// Parses the command line, runs the command, and maps the result to an exit code.
/// The config file as the user named it (`judge.toml` unless `--config` or `JUDGE_CONFIG`
/// said otherwise), for messages that tell what to edit.
pub fn config_name() -> &'static str {
    CONFIG_NAME.get().map_or("judge.toml", String::as_str)
}

/// `--config PATH` when the commands a message suggests need it (the config was named on the
/// command line, not through `JUDGE_CONFIG`, which a suggested command picks up).
pub fn config_flag_needed() -> Option<String> {
    let name = CONFIG_NAME.get()?;
    let from_env = std::env::var_os("JUDGE_CONFIG").is_some_and(|v| v == name.as_str());
    (name != "judge.toml" && !from_env).then(|| format!("--config {name}"))
}

static CONFIG_NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub fn main_entry() -> ExitCode {
    exit_quietly_when_stderr_fails();
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
    let _ = CONFIG_NAME.set(cli.config.display().to_string());
    let result = commands::dispatch(cli);
    engine::run_dir::release_kept_locks();
    match result {
        Ok(outcome) => {
            // Failed items come with a `judge … --retry-failed` hint, written for ./judge.toml.
            if outcome != error::Outcome::Success
                && let Some(flag) = config_flag_needed()
            {
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "note: add `{flag}` to the judge commands above"
                );
            }
            outcome.exit_code()
        }
        Err(err) => {
            use std::io::Write;
            // Written without `eprintln!`, which panics when stderr cannot be written: the
            // exit code still tells what happened.
            let mut stderr = std::io::stderr().lock();
            // One line each, with control characters escaped: a message may quote a name
            // from a file or the command line (`x\u{1b}[2J\nEVIL`), which must neither drive
            // the terminal nor forge a line.
            let _ = writeln!(stderr, "error: {}", report::printable(&err.to_string()));
            for cause in err.chain().skip(1) {
                let _ = writeln!(
                    stderr,
                    "caused by: {}",
                    report::printable(&cause.to_string())
                );
            }
            // The commands a message suggests are written for ./judge.toml.
            let interrupted = matches!(
                err.downcast_ref::<error::JudgeError>(),
                Some(error::JudgeError::Interrupted(_))
            );
            if let Some(flag) = config_flag_needed()
                && (interrupted || err.chain().any(|c| c.to_string().contains("`judge ")))
            {
                let _ = writeln!(stderr, "note: add `{flag}` to the judge commands above");
            }
            error::exit_code_for(&err)
        }
    }
}

/// A progress line or warning that cannot be written (stderr on a full disk, a closed pipe)
/// makes `eprintln!` panic, which would end judge with Rust's 101 and no message. Every
/// record is on disk by then (records are written before they are reported): exit with
/// the documented code for an I/O error instead.
fn exit_quietly_when_stderr_fails() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if message.starts_with("failed printing to stderr") {
            std::process::exit(i32::from(error::EXIT_ITEMS_FAILED));
        }
        default(info);
    }));
}
