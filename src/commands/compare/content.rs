//! What the answers themselves could tell an LLM judge that it must not use: who wrote them
//! (DESIGN §2.4: the judge is blind only if the texts are), and verdict lines that a judge
//! quoting an answer would repeat, so that its reply fails to parse (§2.7) and the comparison
//! leaves the fit. Both are warnings before any call: the texts are the models', and only the
//! user can decide what to do about them.

use std::collections::{BTreeMap, BTreeSet};

use crate::config::ProviderKind;
use crate::engine::manifest::Manifest;
use crate::records::{OutputRecord, Status};
use crate::suite::Suite;
use crate::verdict::Verdict;

/// The fewest letters and digits a name must have to be looked for (`o1`, `ai` would be
/// found everywhere).
const MIN_NAME_CHARS: usize = 3;

/// Warnings about the answers an LLM judge is about to read.
pub(super) fn content_warnings(
    suite: &Suite,
    manifest: &Manifest,
    outputs: &[OutputRecord],
) -> Vec<String> {
    let names = identity_names(manifest);
    // One task's answers lower-cased at a time: the texts are most of a compare's memory.
    let mut by_task: BTreeMap<&str, Vec<&OutputRecord>> = BTreeMap::new();
    for o in outputs.iter().filter(|o| o.status == Status::Ok) {
        by_task.entry(o.task.as_str()).or_default().push(o);
    }
    let prompts: BTreeMap<&str, String> = suite
        .tasks
        .iter()
        .map(|t| (t.id.as_str(), t.prompt.to_lowercase()))
        .collect();
    // Per model: tasks whose answer names someone the other answers to it do not, and which
    // names; tasks whose answer holds a verdict line.
    let mut naming: BTreeMap<&str, (usize, BTreeMap<&str, usize>)> = BTreeMap::new();
    let mut verdicts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut answered: BTreeMap<&str, usize> = BTreeMap::new();
    for (task, records) in &by_task {
        let answers: Vec<(&str, String)> = records
            .iter()
            .map(|o| {
                (
                    o.model.as_str(),
                    o.text.as_deref().unwrap_or_default().to_lowercase(),
                )
            })
            .collect();
        let prompt = prompts.get(task).map(String::as_str).unwrap_or_default();
        for (model, text) in &answers {
            *answered.entry(model).or_default() += 1;
            let own: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .filter(|n| says_it_is(text, n) && !mentions(prompt, n))
                .filter(|n| answers.iter().any(|(_, other)| !says_it_is(other, n)))
                .collect();
            if !own.is_empty() {
                let entry = naming.entry(model).or_default();
                entry.0 += 1;
                for n in own {
                    *entry.1.entry(n).or_default() += 1;
                }
            }
        }
    }
    for o in outputs {
        if let Some(text) = o.text.as_deref()
            && has_verdict_line(text)
        {
            *verdicts.entry(o.model.as_str()).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for (model, (tasks, which)) in &naming {
        let mut which: Vec<(&&str, &usize)> = which.iter().collect();
        which.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let listed: Vec<String> = which
            .iter()
            .take(4)
            .map(|(n, k)| format!("`{n}` ×{k}"))
            .collect();
        out.push(format!(
            "answers of `{model}` say which model or maker of this run wrote them (\"I am …\", \"as …,\", \"trained by …\") in {tasks} of {} task(s) where another answer to the task does not ({}): the judge can tell who wrote them, which DESIGN §2.4 rules out; an instruction under [run] (\"Do not say who you are or who made you\") keeps a new run blind",
            answered.get(model).copied().unwrap_or_default(),
            listed.join(", ")
        ));
    }
    for (model, n) in &verdicts {
        out.push(format!(
            "answers of `{model}` hold a verdict line (`VERDICT: …`) in {n} task(s): a judge that quotes it gives two verdict lines, a reply refused as unparsable (DESIGN §2.7), and such comparisons fail and leave the ratings; their `raw` replies in judgments.jsonl show whether it happened"
        ));
    }
    let brief = format!(
        "{}\n{}\n{}",
        suite.context, manifest.settings.instruction, suite.criteria
    )
    .to_lowercase();
    // The model names asked of providers: families and leading words are ordinary words
    // too (`meta`, `command`), which a brief may use for what they mean.
    let in_brief: Vec<String> = model_names(manifest)
        .iter()
        .filter(|n| mentions(&brief, n))
        .map(|n| format!("`{n}`"))
        .collect();
    if !in_brief.is_empty() {
        out.push(format!(
            "the suite's context or criteria, or `[run] instruction`, name {} (a model of this run), and the judge is shown them: say what better means without naming who answers",
            in_brief.join(", ")
        ));
    }
    out
}

/// What could name a model of the run, lower case: the model names the providers are asked
/// for (`gpt-4o-mini`), their leading word (`gpt`, `claude`, `llama`) and a router's maker
/// prefix (`openai` of `openai/gpt-4o`), and every model's family. Ids and answer-set names
/// are the user's labels, not names a model says of itself.
fn identity_names(manifest: &Manifest) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut add = |name: &str| {
        let name = name.trim().to_lowercase();
        if name.chars().filter(|c| c.is_alphanumeric()).count() >= MIN_NAME_CHARS {
            names.insert(name);
        }
    };
    for m in &manifest.models {
        add(&m.family);
        let asked = manifest
            .providers
            .iter()
            .any(|p| p.name == m.provider && p.kind != ProviderKind::Files);
        if !asked {
            continue;
        }
        let model = m.model.trim();
        let (vendor, name) = model.rsplit_once('/').unwrap_or(("", model));
        add(name);
        add(vendor.split('/').next().unwrap_or_default());
        let lead: String = name.chars().take_while(char::is_ascii_alphabetic).collect();
        add(&lead);
    }
    names
}

/// The model names the run's providers are asked for, lower case (no answer sets).
fn model_names(manifest: &Manifest) -> BTreeSet<String> {
    manifest
        .models
        .iter()
        .filter(|m| {
            manifest
                .providers
                .iter()
                .any(|p| p.name == m.provider && p.kind != ProviderKind::Files)
        })
        .map(|m| m.model.trim().to_lowercase())
        .filter(|n| n.chars().filter(|c| c.is_alphanumeric()).count() >= MIN_NAME_CHARS)
        .collect()
}

/// How an answer says who it is: a name right after one of these (`I am Claude`, `trained
/// by OpenAI`), or after `as ` when a comma follows it (`As GPT-4, I …`). A name alone is
/// not enough: `command`, `meta` and `google` are ordinary words in answers.
const SELF_NAMING: &[&str] = &[
    "i am ",
    "i'm ",
    "i\u{2019}m ",
    "my name is ",
    "developed by ",
    "trained by ",
    "created by ",
    "built by ",
    "made by ",
    "designed by ",
    "model by ",
    "assistant by ",
    "developed by the ",
    "trained by the ",
    "created by the ",
    "built by the ",
    "made by the ",
];

/// Whether `text` (lower case) says it is `name`, or was made by it (see [`SELF_NAMING`]).
fn says_it_is(text: &str, name: &str) -> bool {
    let after = |phrase: &str, comma: bool| {
        text.match_indices(phrase).any(|(at, _)| {
            let before = text[..at].chars().next_back();
            let next = text[at + phrase.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric)
                && if comma {
                    next == Some(',')
                } else {
                    !next.is_some_and(char::is_alphanumeric)
                }
        })
    };
    SELF_NAMING
        .iter()
        .any(|lead| after(&format!("{lead}{name}"), false))
        || after(&format!("as {name}"), true)
        || after(&format!("as an {name}"), true)
        || after(&format!("as a {name}"), true)
}

/// Whether `text` holds `name` as a whole word: neither side touches a letter or digit.
fn mentions(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Whether `text` holds a line the verdict parser takes as a verdict line.
fn has_verdict_line(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_matches([' ', '\t', '\r']);
        Verdict::ALL.iter().any(|v| v.reply_line() == line)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_as_whole_words_only() {
        assert!(mentions("as gpt-4o, i think", "gpt-4o"));
        assert!(mentions("made by openai.", "openai"));
        assert!(mentions("gpt", "gpt"));
        assert!(!mentions("chatgpt says", "gpt"));
        assert!(!mentions("gpt4 says", "gpt"));
        assert!(mentions("(gpt) then gpt4", "gpt"));
    }

    #[test]
    fn an_answer_says_who_it_is_only_in_so_many_words() {
        assert!(says_it_is("as gpt-4, i think so.", "gpt-4"));
        assert!(says_it_is("hello! i'm claude, an assistant.", "claude"));
        assert!(says_it_is("a model trained by openai.", "openai"));
        assert!(says_it_is(
            "i am a language model developed by the google team",
            "google"
        ));
        assert!(!says_it_is("run this command in a terminal", "command"));
        assert!(!says_it_is("as google recommends, indent by 2", "google"));
        assert!(!says_it_is("the <meta> tag, made by metadata", "meta"));
        assert!(!says_it_is("i am claudette", "claude"));
    }

    #[test]
    fn verdict_lines_are_the_parsers() {
        assert!(has_verdict_line("text\n  VERDICT: 1\r\nmore"));
        assert!(has_verdict_line("VERDICT: BOTH_BAD"));
        assert!(!has_verdict_line("the VERDICT: 1 here"));
        assert!(!has_verdict_line("verdict: 1"));
    }
}
