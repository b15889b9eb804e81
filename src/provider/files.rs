//! The `files` provider: replays hand-written answers from the suite's `answers/<set>/`
//! ("bring your own outputs"). Pure lookup in the loaded suite; no network, no cache.

use super::{ChatReply, ErrorClass, ProviderError};
use crate::suite::Suite;

/// The answer of set `set` for `task`; a missing or empty answer is a failed output.
pub fn answer(suite: &Suite, set: &str, task: &str) -> Result<ChatReply, ProviderError> {
    let text = suite
        .answers
        .get(set)
        .and_then(|by_task| by_task.get(task))
        .ok_or_else(|| {
            ProviderError::new(
                ErrorClass::MissingAnswer,
                format!("answer set `{set}` has no answers/{set}/{task}.md"),
            )
        })?;
    if text.trim().is_empty() {
        return Err(ProviderError::new(
            ErrorClass::EmptyOutput,
            format!("answers/{set}/{task}.md is empty"),
        ));
    }
    Ok(ChatReply {
        text: text.clone(),
        finish_reason: Some("stop".into()),
        usage: None,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::suite::parse_suite;

    #[test]
    fn replays_and_reports_missing() {
        let files = BTreeMap::from([
            (
                "suite.toml".to_string(),
                "name=\"s\"\nversion=\"1\"\ncriteria=\"c\"\n".to_string(),
            ),
            ("tasks/a/prompt.md".to_string(), "do a".to_string()),
            ("tasks/b/prompt.md".to_string(), "do b".to_string()),
            ("answers/ref/a.md".to_string(), "answer a".to_string()),
            ("answers/ref/b.md".to_string(), "\n".to_string()),
        ]);
        let suite = parse_suite("s", &files).expect("valid");
        assert_eq!(
            answer(&suite, "ref", "a").expect("present").text,
            "answer a"
        );
        assert_eq!(
            answer(&suite, "ref", "b").expect_err("empty").class,
            ErrorClass::EmptyOutput
        );
        assert_eq!(
            answer(&suite, "nope", "a").expect_err("missing").class,
            ErrorClass::MissingAnswer
        );
    }
}
