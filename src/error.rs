//! Expected failures of a run and the exit-code table. Owns the mapping from an error to the
//! process exit code; it does not print anything.

use std::process::ExitCode;

/// Exit code: success.
pub const EXIT_OK: u8 = 0;
/// Exit code: the run finished but some items failed or had unparsable verdicts (also used for
/// unexpected I/O failures such as an unwritable run directory).
pub const EXIT_ITEMS_FAILED: u8 = 1;
/// Exit code: usage, config or suite error (clap's own usage errors also exit 2).
pub const EXIT_USAGE: u8 = 2;
/// Exit code: a provider refused the run (auth, exhausted quota, unknown model).
pub const EXIT_PROVIDER_REFUSED: u8 = 3;
/// Exit code: interrupted (Ctrl-C), partial results kept.
pub const EXIT_INTERRUPTED: u8 = 130;

/// An expected failure that ends a command with a documented exit code.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// Bad command-line usage, config or suite: nothing was written.
    #[error("{0}")]
    Usage(String),
    /// A provider refused every request of the run (bad key, exhausted quota, unknown model).
    #[error("{0}")]
    ProviderRefused(String),
    /// The user interrupted the run; everything finished so far was written. Holds the run's
    /// name when the command gave it a default one: the same command would start another.
    #[error("interrupted: finished records were kept; {}", resume_hint(.0.as_deref()))]
    Interrupted(Option<String>),
}

fn resume_hint(started: Option<&str>) -> String {
    match started {
        Some(run) => format!(
            "rerun the same command with `--run {run}` to resume (without it, it starts a new run)"
        ),
        None => "rerun the same command to resume".to_string(),
    }
}

/// What a provider's refusal that stopped a run leaves to do: the fix the message names, then
/// the same command on the same run.
pub fn after_refusal(msg: &str, run: &str) -> String {
    format!(
        "{msg}; once fixed, rerun the same command with `--run {run}` to resume (finished items are kept; a fix to the models' generation settings under [run], such as their temperature, needs a new run; the judge's may change while it has no judgments in the run)"
    )
}

impl JudgeError {
    /// Shorthand for a usage/config error.
    pub fn usage(msg: impl Into<String>) -> Self {
        JudgeError::Usage(msg.into())
    }

    /// The exit code this error ends the process with.
    pub fn exit_code(&self) -> u8 {
        match self {
            JudgeError::Usage(_) => EXIT_USAGE,
            JudgeError::ProviderRefused(_) => EXIT_PROVIDER_REFUSED,
            JudgeError::Interrupted(_) => EXIT_INTERRUPTED,
        }
    }
}

/// How a command that ran to its end finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Every item succeeded.
    Success,
    /// The command finished, but some items failed (recorded as data).
    ItemsFailed,
}

impl Outcome {
    /// The process exit code for this outcome.
    pub fn exit_code(self) -> ExitCode {
        match self {
            Outcome::Success => ExitCode::from(EXIT_OK),
            Outcome::ItemsFailed => ExitCode::from(EXIT_ITEMS_FAILED),
        }
    }
}

/// The exit code for an error that ended a command: the first [`JudgeError`] in the chain
/// decides; anything else (I/O failure, bug) is 1.
pub fn exit_code_for(err: &anyhow::Error) -> ExitCode {
    let code = err
        .chain()
        .find_map(|cause| cause.downcast_ref::<JudgeError>())
        .map_or(EXIT_ITEMS_FAILED, JudgeError::exit_code);
    ExitCode::from(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_code_found_through_context() {
        let err = anyhow::Error::new(JudgeError::usage("bad")).context("while loading");
        assert_eq!(exit_code_for(&err), ExitCode::from(EXIT_USAGE));
        let err = anyhow::anyhow!("disk full");
        assert_eq!(exit_code_for(&err), ExitCode::from(EXIT_ITEMS_FAILED));
        let err = anyhow::Error::new(JudgeError::ProviderRefused("401".into()));
        assert_eq!(exit_code_for(&err), ExitCode::from(EXIT_PROVIDER_REFUSED));
    }
}
