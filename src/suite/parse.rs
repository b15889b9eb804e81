//! Files of a suite folder (relative path → text) → a validated [`Suite`]. Pure: no I/O.

use std::collections::BTreeMap;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::{Suite, Task};

/// Why a suite was refused. Every variant names the file and what to do.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SuiteError {
    #[error(
        "suite `{suite}`: suite.toml is missing; create it with name, version, context and criteria"
    )]
    MissingSuiteToml { suite: String },
    #[error("suite `{suite}`: suite.toml: {message}")]
    BadSuiteToml { suite: String, message: String },
    #[error(
        "suite `{suite}`: suite.toml names the suite `{name}` but its folder is `{suite}`; make them equal"
    )]
    NameMismatch { suite: String, name: String },
    #[error("suite `{suite}`: no tasks; add tasks/<id>/prompt.md")]
    NoTasks { suite: String },
    #[error("suite `{suite}`: tasks/{task}/ has no prompt.md; add it or remove the folder")]
    MissingPrompt { suite: String, task: String },
    #[error("suite `{suite}`: tasks/{task}/prompt.md is empty; write the task")]
    EmptyPrompt { suite: String, task: String },
    #[error(
        "suite `{suite}`: `{path}`: task ids use letters, digits, `-` and `_` only; rename the folder"
    )]
    BadTaskId { suite: String, path: String },
    #[error(
        "suite `{suite}`: tasks `{first}` and `{second}` differ only in case; ids must be unique"
    )]
    DuplicateTask {
        suite: String,
        first: String,
        second: String,
    },
    #[error(
        "suite `{suite}`: unexpected file `{path}` (a task holds only prompt.md and check.py; answers are answers/<set>/<task>.md)"
    )]
    UnknownFile { suite: String, path: String },
    #[error(
        "suite `{suite}`: unexpected file `{path}` (an answer set holds only <task>.md files, one per task)"
    )]
    UnknownAnswerFile { suite: String, path: String },
    #[error(
        "suite `{suite}`: `{path}` answers task `{task}`, which the suite does not have; rename or remove it"
    )]
    AnswerForUnknownTask {
        suite: String,
        path: String,
        task: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteToml {
    name: String,
    version: String,
    #[serde(default)]
    context: String,
    criteria: String,
}

/// Validates the files of suite folder `folder` (paths relative to it, `/`-separated).
pub fn parse_suite(folder: &str, files: &BTreeMap<String, String>) -> Result<Suite, SuiteError> {
    let suite = folder.to_string();
    let toml_text = files
        .get("suite.toml")
        .ok_or(SuiteError::MissingSuiteToml {
            suite: suite.clone(),
        })?;
    let meta: SuiteToml = toml::from_str(toml_text).map_err(|e| SuiteError::BadSuiteToml {
        suite: suite.clone(),
        message: toml_message(toml_text, &e),
    })?;
    if meta.name != folder {
        return Err(SuiteError::NameMismatch {
            suite,
            name: meta.name,
        });
    }
    if meta.criteria.trim().is_empty() {
        return Err(SuiteError::BadSuiteToml {
            suite,
            message: "`criteria` is empty; say what makes one answer better than another".into(),
        });
    }
    let (tasks, answers, mut answer_problems) = collect_entries(&suite, files)?;
    let tasks = validate_tasks(&suite, tasks)?;
    for (set, by_task) in &answers {
        if let Some(task) = by_task.keys().find(|&k| !tasks.iter().any(|t| &t.id == k)) {
            let e = SuiteError::AnswerForUnknownTask {
                suite: suite.clone(),
                path: format!("answers/{set}/{task}.md"),
                task: task.clone(),
            };
            answer_problems
                .entry(set.clone())
                .or_insert_with(|| e.to_string());
        }
    }
    Ok(Suite {
        name: meta.name,
        version: meta.version,
        context: meta.context.trim().to_string(),
        criteria: meta.criteria.trim().to_string(),
        tasks,
        answers,
        answer_problems,
        hash: suite_hash(files, false),
        hash_with_answers: suite_hash(files, true),
        file_digests: file_digests(files),
    })
}

fn toml_message(text: &str, e: &toml::de::Error) -> String {
    // A missing key has no line of its own: toml's span is then the whole document.
    let missing = e.message().starts_with("missing field");
    let line = e
        .span()
        .filter(|_| !missing)
        .map(|s| crate::config::line_of(text, s.start));
    let mut message = match line {
        Some(l) => format!("line {l}: {}", e.message().trim()),
        None => e.message().trim().to_string(),
    };
    if missing {
        message.push_str(
            "; add it (suite.toml takes name, version, criteria and an optional context)",
        );
    }
    message
}

/// Task id → (prompt, check) as found, answer set → task → text, and answer set → why it
/// cannot be replayed.
type Entries = (
    BTreeMap<String, (Option<String>, Option<String>)>,
    BTreeMap<String, BTreeMap<String, String>>,
    BTreeMap<String, String>,
);

fn collect_entries(suite: &str, files: &BTreeMap<String, String>) -> Result<Entries, SuiteError> {
    let mut tasks: BTreeMap<String, (Option<String>, Option<String>)> = BTreeMap::new();
    let mut answers: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let mut problems: BTreeMap<String, String> = BTreeMap::new();
    let unknown = |path: &str| SuiteError::UnknownFile {
        suite: suite.to_string(),
        path: path.to_string(),
    };
    let unknown_answer = |path: &str| SuiteError::UnknownAnswerFile {
        suite: suite.to_string(),
        path: path.to_string(),
    };
    for (path, text) in files {
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            ["tasks", id, file] => {
                let entry = tasks.entry((*id).to_string()).or_default();
                match *file {
                    "prompt.md" => entry.0 = Some(text.clone()),
                    "check.py" => entry.1 = Some(text.clone()),
                    _ => return Err(unknown(path)),
                }
            }
            ["answers", set, file] => match file.strip_suffix(".md") {
                Some(task) => {
                    // Editors on Windows save UTF-8 with a byte order mark, which would
                    // hide a leading code fence and make an empty answer look written.
                    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
                    answers
                        .entry((*set).to_string())
                        .or_default()
                        .insert(task.to_string(), text.to_string());
                }
                None => {
                    problems
                        .entry((*set).to_string())
                        .or_insert_with(|| unknown_answer(path).to_string());
                }
            },
            ["answers", set, _, ..] => {
                problems
                    .entry((*set).to_string())
                    .or_insert_with(|| unknown_answer(path).to_string());
            }
            ["tasks", ..] => return Err(unknown(path)),
            // Top-level docs and scripts, and files directly in answers/ (a README), are not
            // part of the suite's content.
            _ => {}
        }
    }
    Ok((tasks, answers, problems))
}

fn validate_tasks(
    suite: &str,
    found: BTreeMap<String, (Option<String>, Option<String>)>,
) -> Result<Vec<Task>, SuiteError> {
    let suite_s = || suite.to_string();
    if found.is_empty() {
        return Err(SuiteError::NoTasks { suite: suite_s() });
    }
    let mut folded: BTreeMap<String, String> = BTreeMap::new();
    let mut tasks = Vec::with_capacity(found.len());
    for (id, (prompt, check)) in found {
        let valid = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if let Some(first) = folded.insert(id.to_ascii_lowercase(), id.clone()) {
            return Err(SuiteError::DuplicateTask {
                suite: suite_s(),
                first,
                second: id,
            });
        }
        if !valid {
            return Err(SuiteError::BadTaskId {
                suite: suite_s(),
                path: format!("tasks/{id}"),
            });
        }
        let prompt = prompt.ok_or_else(|| SuiteError::MissingPrompt {
            suite: suite_s(),
            task: id.clone(),
        })?;
        if prompt.trim().is_empty() {
            return Err(SuiteError::EmptyPrompt {
                suite: suite_s(),
                task: id,
            });
        }
        tasks.push(Task { id, prompt, check });
    }
    Ok(tasks)
}

/// The first 16 hex digits of the SHA-256 of each file [`suite_hash`] covers (without
/// answers/), by path.
fn file_digests(files: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    files
        .iter()
        .filter(|(p, _)| *p == "suite.toml" || p.starts_with("tasks/"))
        .map(|(p, text)| {
            let digest = crate::sha256_hex(text);
            (p.clone(), digest[..16].to_string())
        })
        .collect()
}

/// SHA-256 over (path, length, bytes) of suite.toml and every file under tasks/ (and, with
/// `answers`, under answers/: the hash of runs recorded before answer sets were left out), in
/// path order.
fn suite_hash(files: &BTreeMap<String, String>, answers: bool) -> String {
    let mut h = Sha256::new();
    let relevant = files.iter().filter(|(p, _)| {
        *p == "suite.toml" || p.starts_with("tasks/") || (answers && p.starts_with("answers/"))
    });
    for (path, text) in relevant {
        h.update((path.len() as u64).to_le_bytes());
        h.update(path.as_bytes());
        h.update((text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    }
    crate::hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut f = BTreeMap::from([
            (
                "suite.toml".to_string(),
                "name = \"demo\"\nversion = \"1\"\ncontext = \"ctx\"\ncriteria = \"correct\"\n"
                    .to_string(),
            ),
            (
                "tasks/alpha/prompt.md".to_string(),
                "Write alpha.".to_string(),
            ),
            (
                "tasks/alpha/check.py".to_string(),
                "import solution".to_string(),
            ),
            (
                "tasks/beta/prompt.md".to_string(),
                "Write beta.".to_string(),
            ),
            (
                "answers/reference/alpha.md".to_string(),
                "```python\nx=1\n```".to_string(),
            ),
        ]);
        for (p, t) in extra {
            f.insert((*p).to_string(), (*t).to_string());
        }
        f
    }

    fn refused(f: &BTreeMap<String, String>) -> SuiteError {
        parse_suite("demo", f).expect_err("suite should be refused")
    }

    #[test]
    fn valid_suite_parses() {
        let s = parse_suite("demo", &files(&[("README.md", "docs")])).expect("valid");
        assert_eq!(
            s.tasks.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
            ["alpha", "beta"]
        );
        assert!(s.task("alpha").and_then(|t| t.check.as_ref()).is_some());
        assert!(s.task("beta").is_some_and(|t| t.check.is_none()));
        assert_eq!(s.answers["reference"]["alpha"], "```python\nx=1\n```");
        assert_eq!(s.context, "ctx");
        assert_eq!(s.hash.len(), 64);
    }

    #[test]
    fn a_toml_error_names_its_own_line() {
        for (text, line) in [
            (
                "name = \"demo\"\nversion = \"1\"\ndescription = \"x\"\ncriteria = \"c\"\n",
                3,
            ),
            ("name = \"demo\"\nversion = 1\ncriteria = \"c\"\n", 2),
            (
                "description = \"x\"\nname = \"demo\"\nversion = \"1\"\ncriteria = \"c\"\n",
                1,
            ),
        ] {
            let e = refused(&files(&[("suite.toml", text)])).to_string();
            assert!(e.contains(&format!("line {line}: ")), "{text:?}: {e}");
        }
    }

    #[test]
    fn changes_name_the_files_that_differ_from_a_runs_record() {
        let before = parse_suite("demo", &files(&[])).expect("valid");
        assert_eq!(before.changes_since(&before.file_digests), None);
        // Runs made before digests were recorded have none: nothing to name.
        assert_eq!(before.changes_since(&BTreeMap::new()), None);
        // Answer sets are outputs, not the suite: neither hashed nor named.
        assert!(
            before
                .file_digests
                .keys()
                .all(|p| !p.starts_with("answers/"))
        );
        let after = parse_suite(
            "demo",
            &files(&[
                ("tasks/alpha/prompt.md", "Write alpha, now in Rust."),
                ("tasks/gamma/prompt.md", "Write gamma."),
                ("answers/reference/beta.md", "```python\ny=2\n```"),
            ]),
        )
        .expect("valid");
        assert_eq!(
            after.changes_since(&before.file_digests).as_deref(),
            Some("tasks/alpha/prompt.md changed, tasks/gamma/prompt.md added")
        );
        let mut fewer = files(&[]);
        fewer.remove("tasks/alpha/check.py");
        fewer.insert(
            "suite.toml".into(),
            fewer["suite.toml"].replace("ctx", "context"),
        );
        for t in ["d", "e", "f"] {
            fewer.insert(format!("tasks/{t}/prompt.md"), "More.".into());
        }
        let fewer = parse_suite("demo", &fewer).expect("valid");
        assert_eq!(
            fewer.changes_since(&before.file_digests).as_deref(),
            Some(
                "suite.toml changed, tasks/d/prompt.md added, tasks/e/prompt.md added, and 2 more"
            )
        );
    }

    #[test]
    fn hash_changes_with_content_but_not_docs() {
        let base = parse_suite("demo", &files(&[])).expect("valid").hash;
        let docs = parse_suite("demo", &files(&[("README.md", "x")]))
            .expect("valid")
            .hash;
        assert_eq!(base, docs);
        let changed = parse_suite("demo", &files(&[("tasks/beta/prompt.md", "Write beta!")]))
            .expect("valid")
            .hash;
        assert_ne!(base, changed);
        // A new or edited answer set changes neither the hash nor what a run matches.
        let answered =
            parse_suite("demo", &files(&[("answers/set/alpha.md", "x = 1")])).expect("valid");
        assert_eq!(answered.hash, base);
        assert_ne!(answered.hash_with_answers, base);
        assert!(
            answered.is_recorded_as(&base) && answered.is_recorded_as(&answered.hash_with_answers)
        );
        assert!(!answered.is_recorded_as(&changed));
    }

    #[test]
    fn missing_suite_toml() {
        let mut f = files(&[]);
        f.remove("suite.toml");
        assert!(matches!(refused(&f), SuiteError::MissingSuiteToml { .. }));
    }

    #[test]
    fn missing_key_in_suite_toml_says_what_to_add() {
        let f = files(&[("suite.toml", "name=\"demo\"\ncriteria=\"c\"\n")]);
        let e = refused(&f).to_string();
        assert!(
            e.contains("missing field `version`; add it (suite.toml takes name, version"),
            "{e}"
        );
        // No line is named: a missing key has none.
        assert!(!e.contains("line "), "{e}");
    }

    #[test]
    fn unknown_key_in_suite_toml() {
        let f = files(&[(
            "suite.toml",
            "name=\"demo\"\nversion=\"1\"\ncriteria=\"c\"\nauthor=\"me\"\n",
        )]);
        let e = refused(&f).to_string();
        assert!(e.contains("suite.toml") && e.contains("author"), "{e}");
    }

    #[test]
    fn name_must_match_folder() {
        let f = files(&[(
            "suite.toml",
            "name=\"other\"\nversion=\"1\"\ncriteria=\"c\"\n",
        )]);
        assert!(matches!(refused(&f), SuiteError::NameMismatch { .. }));
    }

    #[test]
    fn empty_criteria_refused() {
        let f = files(&[(
            "suite.toml",
            "name=\"demo\"\nversion=\"1\"\ncriteria=\" \"\n",
        )]);
        assert!(refused(&f).to_string().contains("criteria"));
    }

    #[test]
    fn missing_prompt() {
        let f = files(&[("tasks/gamma/check.py", "pass")]);
        assert_eq!(
            refused(&f),
            SuiteError::MissingPrompt {
                suite: "demo".into(),
                task: "gamma".into()
            }
        );
    }

    #[test]
    fn empty_prompt() {
        let f = files(&[("tasks/beta/prompt.md", "  \n")]);
        assert!(matches!(refused(&f), SuiteError::EmptyPrompt { .. }));
    }

    #[test]
    fn duplicate_ids_differing_in_case() {
        let f = files(&[("tasks/Alpha/prompt.md", "x")]);
        let e = refused(&f);
        assert!(matches!(e, SuiteError::DuplicateTask { .. }), "{e:?}");
    }

    #[test]
    fn bad_task_id() {
        let f = files(&[("tasks/has space/prompt.md", "x")]);
        assert!(matches!(refused(&f), SuiteError::BadTaskId { .. }));
    }

    #[test]
    fn unknown_file_in_task() {
        let f = files(&[("tasks/alpha/notes.txt", "x")]);
        assert!(matches!(refused(&f), SuiteError::UnknownFile { .. }));
    }

    /// A stray file in an answer set marks that set as one that cannot be replayed; the
    /// suite and its other sets load (a run that never replays the set is not stopped).
    #[test]
    fn stray_answer_files_mark_their_set() {
        let f = files(&[
            ("answers/reference/zeta.md", "x"),
            ("answers/notes/alpha.txt", "x"),
            ("answers/deep/sub/alpha.md", "x"),
            ("answers/README.md", "about these sets"),
            ("answers/good/alpha.md", "x = 1"),
        ]);
        let s = parse_suite("demo", &f).expect("loads");
        assert_eq!(
            s.answer_problems.keys().collect::<Vec<_>>(),
            ["deep", "notes", "reference"]
        );
        assert!(
            s.answer_problems["reference"].contains(
                "`answers/reference/zeta.md` answers task `zeta`, which the suite does not have"
            ),
            "{:?}",
            s.answer_problems
        );
        assert!(s.answer_problems["notes"].contains("unexpected file `answers/notes/alpha.txt`"));
        assert_eq!(s.answers["good"]["alpha"], "x = 1");
    }

    /// A byte order mark (Windows editors save UTF-8 with one) is not part of an answer.
    #[test]
    fn an_answers_byte_order_mark_is_dropped() {
        let f = files(&[
            ("answers/set/alpha.md", "\u{feff}```python\nx = 1\n```"),
            ("answers/set/beta.md", "\u{feff} \n"),
        ]);
        let s = parse_suite("demo", &f).expect("loads");
        assert_eq!(s.answers["set"]["alpha"], "```python\nx = 1\n```");
        assert!(s.answers["set"]["beta"].trim().is_empty());
    }

    #[test]
    fn no_tasks() {
        let f = BTreeMap::from([(
            "suite.toml".to_string(),
            "name=\"demo\"\nversion=\"1\"\ncriteria=\"c\"\n".to_string(),
        )]);
        assert!(matches!(refused(&f), SuiteError::NoTasks { .. }));
    }
}
