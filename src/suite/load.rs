//! Reads a suite folder from disk into the path → text map that `parse_suite` validates.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;

use super::{Suite, parse_suite};
use crate::error::JudgeError;

/// Loads and validates `suites_dir/<name>`. Every problem is a usage error (exit 2).
pub fn load_suite(suites_dir: &Path, name: &str) -> anyhow::Result<Suite> {
    let dir = suites_dir.join(name);
    if !dir.is_dir() {
        let mut available: Vec<String> = std::fs::read_dir(suites_dir)
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .filter(|e| e.path().join("suite.toml").is_file())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        available.sort();
        let list = if available.is_empty() {
            "none".to_string()
        } else {
            available.join(", ")
        };
        return Err(JudgeError::usage(format!(
            "suite `{name}` not found in `{}` (available: {list}); set [run] suite in the config file",
            suites_dir.display()
        ))
        .into());
    }
    let (files, unreadable) = read_suite_files(&dir)?;
    // A task folder holding no file at all is absent from `files`: refused as one without
    // prompt.md, not skipped (or blamed on the answers written for it).
    if let Ok(entries) = std::fs::read_dir(dir.join("tasks")) {
        let mut empty: Vec<String> = entries
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|id| !id.starts_with('.') && id != "__pycache__")
            .filter(|id| {
                // `files` is sorted: the first path from `inside` on is inside, if any is.
                let inside = format!("tasks/{id}/");
                !files
                    .range(inside.clone()..)
                    .next()
                    .is_some_and(|(p, _)| p.starts_with(&inside))
            })
            .collect();
        empty.sort();
        if let Some(task) = empty.into_iter().next() {
            let e = super::parse::SuiteError::MissingPrompt {
                suite: name.to_string(),
                task,
            };
            return Err(JudgeError::usage(e.to_string()).into());
        }
    }
    let mut suite = parse_suite(name, &files).map_err(|e| JudgeError::usage(e.to_string()))?;
    for (set, why) in unreadable {
        suite.answer_problems.entry(set).or_insert(why);
    }
    Ok(suite)
}

/// Answer set → why a file of it could not be read as one (see
/// [`crate::suite::Suite::answer_problems`]).
pub type UnreadableAnswers = BTreeMap<String, String>;

/// The suite's files (relative `/`-separated path → UTF-8 text): `suite.toml`, and every file
/// under `tasks/` and `answers/`, skipping hidden entries and `__pycache__`. Other top-level
/// files and folders (a README, scripts, images) are not read. A folder where a file belongs
/// (`tasks/<id>/<name>/`) is refused rather than walked, so a symlink loop cannot recurse.
/// Under `answers/`, a folder inside a set or a file that is not UTF-8 is not refused but
/// returned apart, as a problem of its set: only replaying that set is refused.
pub fn read_suite_files(
    dir: &Path,
) -> anyhow::Result<(BTreeMap<String, String>, UnreadableAnswers)> {
    let mut out = (BTreeMap::new(), BTreeMap::new());
    walk(dir, "", 0, &mut out)?;
    Ok(out)
}

fn walk(
    dir: &Path,
    prefix: &str,
    depth: usize,
    out: &mut (BTreeMap<String, String>, UnreadableAnswers),
) -> anyhow::Result<()> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("failed to read `{}`", dir.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("failed to read `{}`", dir.display()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        if depth == 0 && !matches!(name.as_str(), "suite.toml" | "tasks" | "answers") {
            continue;
        }
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let path = entry.path();
        // The answer set a path under answers/ belongs to (none for answers/ itself, or a
        // file directly in it).
        let set = rel
            .strip_prefix("answers/")
            .and_then(|r| r.split_once('/'))
            .map(|(set, _)| set.to_string());
        let in_answers = rel.starts_with("answers/");
        if path.is_dir() {
            if depth >= 2 && in_answers {
                if let Some(set) = set {
                    out.1.entry(set).or_insert_with(|| {
                        format!(
                            "`{}` is a folder; an answer set holds only <task>.md files",
                            path.display()
                        )
                    });
                }
                continue;
            }
            if depth >= 2 {
                return Err(JudgeError::usage(format!(
                    "`{}` is a folder; a task folder holds only the files prompt.md and check.py, an answer set only <task>.md files",
                    path.display()
                ))
                .into());
            }
            walk(&path, &rel, depth + 1, out)?;
        } else {
            let bytes = std::fs::read(&path)
                .with_context(|| format!("failed to read `{}`", path.display()))?;
            let not_utf8 = || format!("`{}` is not valid UTF-8; save it as UTF-8", path.display());
            match String::from_utf8(bytes) {
                Ok(text) => {
                    out.0.insert(rel, text);
                }
                Err(_) if in_answers => {
                    if let Some(set) = set {
                        out.1.entry(set).or_insert_with(not_utf8);
                    }
                }
                Err(_) => return Err(JudgeError::usage(not_utf8()).into()),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A task folder with nothing in it is refused as a task without prompt.md, like one that
    /// holds only a check.py, instead of being skipped.
    #[test]
    fn an_empty_task_folder_is_refused() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("demo");
        std::fs::create_dir_all(dir.join("tasks/alpha")).expect("mkdir");
        std::fs::create_dir_all(dir.join("tasks/beta")).expect("mkdir");
        std::fs::create_dir_all(dir.join("tasks/.hidden")).expect("mkdir");
        std::fs::write(
            dir.join("suite.toml"),
            "name = \"demo\"\nversion = \"1\"\ncontext = \"c\"\ncriteria = \"k\"\n",
        )
        .expect("write");
        std::fs::write(dir.join("tasks/alpha/prompt.md"), "Do alpha.").expect("write");
        // A folder whose name extends the empty one's does not make it non-empty.
        std::fs::create_dir_all(dir.join("tasks/beta2")).expect("mkdir");
        std::fs::write(dir.join("tasks/beta2/prompt.md"), "Do beta2.").expect("write");
        let e = load_suite(root.path(), "demo")
            .expect_err("refused")
            .to_string();
        assert!(
            e.contains("tasks/beta/ has no prompt.md; add it or remove the folder"),
            "{e}"
        );
        std::fs::remove_dir(dir.join("tasks/beta")).expect("rmdir");
        load_suite(root.path(), "demo").expect("the suite loads once it is gone");
    }

    /// Only suite.toml, tasks/ and answers/ are read: an image or a symlink loop beside them
    /// is ignored. A folder where a task's file belongs (a symlink loop too) is refused.
    #[test]
    fn only_the_suites_own_files_are_read() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = root.path().join("demo");
        std::fs::create_dir_all(dir.join("tasks/alpha")).expect("mkdir");
        std::fs::create_dir_all(dir.join("scripts")).expect("mkdir");
        std::fs::write(
            dir.join("suite.toml"),
            "name = \"demo\"\nversion = \"1\"\ncontext = \"c\"\ncriteria = \"k\"\n",
        )
        .expect("write");
        std::fs::write(dir.join("tasks/alpha/prompt.md"), "Do alpha.").expect("write");
        std::fs::write(dir.join("scripts/logo.png"), [0xff, 0xd8, 0x00, 0x9c]).expect("write");
        std::os::unix::fs::symlink(".", dir.join("loop")).expect("symlink");
        let suite = load_suite(root.path(), "demo").expect("loads");
        assert_eq!(suite.tasks.len(), 1);
        std::os::unix::fs::symlink(".", dir.join("tasks/alpha/check.py")).expect("symlink");
        let e = load_suite(root.path(), "demo")
            .expect_err("refused")
            .to_string();
        assert!(e.contains("tasks/alpha/check.py` is a folder"), "{e}");
    }
}
