//! `judge init`: a starter project to edit and run — judge.toml with real providers, a suite
//! with one task and its hidden test. Writes nothing over an existing file.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::cli::{Cli, InitArgs};
use crate::error::{JudgeError, Outcome};

const JUDGE_TOML: &str = include_str!("init/judge.toml");
const SUITE_TOML: &str = include_str!("init/suite.toml");
const PROMPT_MD: &str = include_str!("init/prompt.md");
const CHECK_PY: &str = include_str!("init/check.py");

/// The starter task's id.
const TASK: &str = "slugify";

/// Runs `judge init`.
pub fn run(cli: &Cli, args: &InitArgs) -> anyhow::Result<Outcome> {
    let suite = args.suite.as_str();
    let valid = !suite.is_empty()
        && suite
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !valid {
        return Err(JudgeError::usage(format!(
            "invalid suite name `{}`: use letters, digits, `-` and `_` (it names the folder suites/<suite>/)",
            crate::report::printable(suite)
        ))
        .into());
    }
    let seed = crate::time::UtcDateTime::from_system(std::time::SystemTime::now())
        .compact()
        .chars()
        .take(8)
        .collect::<String>();
    let fill = |text: &str| text.replace("{{suite}}", suite).replace("{{seed}}", &seed);
    // Without DIR, a config named with --config (or JUDGE_CONFIG) says where the project goes
    // and what its config file is called; later commands then find it the same way.
    let (dir, config) = match &args.dir {
        Some(dir) => (dir.clone(), dir.join("judge.toml")),
        None => {
            let root = crate::config::project_root(&cli.config);
            (root, cli.config.clone())
        }
    };
    let dir = dir.as_path();
    let suite_dir = dir.join("suites").join(suite);
    let files: Vec<(PathBuf, String)> = vec![
        (config, fill(JUDGE_TOML)),
        (suite_dir.join("suite.toml"), fill(SUITE_TOML)),
        (
            suite_dir.join("tasks").join(TASK).join("prompt.md"),
            PROMPT_MD.to_string(),
        ),
        (
            suite_dir.join("tasks").join(TASK).join("check.py"),
            CHECK_PY.to_string(),
        ),
    ];
    // All or nothing: a file already there (an existing project) is never replaced.
    if let Some((path, _)) = files.iter().find(|(p, _)| p.exists()) {
        return Err(JudgeError::usage(format!(
            "`{}` exists already; judge init writes a new project and replaces nothing: run it in an empty folder (judge init DIR)",
            path.display()
        ))
        .into());
    }
    let staged: Vec<(PathBuf, Vec<u8>)> = files
        .into_iter()
        .map(|(p, text)| (p, text.into_bytes()))
        .collect();
    crate::cache::write_atomic_all(&staged)
        .with_context(|| format!("failed to write the project into `{}`", dir.display()))?;
    for (path, _) in &staged {
        eprintln!("wrote {}", path.display());
    }
    // DIR: a project of its own, used from inside it. Else the config as named (`--config`),
    // which the commands that follow need too.
    let (place, config, run) = match &args.dir {
        Some(dir) => (
            format!("in {}, ", dir.display()),
            "judge.toml".to_string(),
            "judge run".to_string(),
        ),
        None => (
            String::new(),
            cli.config.display().to_string(),
            match crate::config_flag_needed() {
                Some(flag) => format!("judge {flag} run"),
                None => "judge run".to_string(),
            },
        ),
    };
    let here = args.dir.is_some() || dir.as_os_str().is_empty() || dir == Path::new(".");
    let tasks = if here {
        PathBuf::from("suites")
    } else {
        dir.join("suites")
    }
    .join(suite)
    .join("tasks");
    eprintln!(
        "next: {place}set the models and the judge in {config} (a judge of another family than every model), export the keys they use (OPENAI_API_KEY, ANTHROPIC_API_KEY), add tasks as {}/<id>/prompt.md (a check.py beside one is its hidden test), then `{run}`",
        tasks.display()
    );
    Ok(Outcome::Success)
}
