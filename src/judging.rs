//! The rules that turn verdicts into comparisons (DESIGN §2 rules 5, 6, 9 and §4): combining
//! both orderings, deciding by failure, the execution judge, family exclusion, flip rate and
//! agreement between judges. Pure.

use crate::prompt::Order;
use crate::records::{ComparisonRecord, Winner};
use crate::stats::{LabelCategory, agreement, cohen_kappa};
use crate::verdict::Verdict;

/// The family of the built-in execution judge.
pub const EXEC_FAMILY: &str = "execution";
/// The id of the built-in execution judge.
pub const EXEC_JUDGE: &str = "exec";

/// A position-relative verdict seen from the pair: who won.
pub fn model_outcome(order: Order, verdict: Verdict) -> Winner {
    match (order, verdict) {
        (_, Verdict::Tie) => Winner::Tie,
        (_, Verdict::BothBad) => Winner::BothBad,
        (Order::Ab, Verdict::First) | (Order::Ba, Verdict::Second) => Winner::ModelA,
        (Order::Ab, Verdict::Second) | (Order::Ba, Verdict::First) => Winner::ModelB,
    }
}

/// Combines the two orderings: agreement → that outcome; a failed call → `failed`; any
/// disagreement → `tie` with `flipped = true`.
pub fn combine(ab: Option<Verdict>, ba: Option<Verdict>) -> (Winner, bool) {
    let (Some(ab), Some(ba)) = (ab, ba) else {
        return (Winner::Failed, false);
    };
    let (x, y) = (model_outcome(Order::Ab, ab), model_outcome(Order::Ba, ba));
    if x == y {
        (x, false)
    } else {
        (Winner::Tie, true)
    }
}

/// The outcome when a generation failed: the failed side loses; both failed → both bad.
/// `None` when both outputs are fine (the judge decides).
pub fn decide_by_failure(a_ok: bool, b_ok: bool) -> Option<Winner> {
    match (a_ok, b_ok) {
        (true, true) => None,
        (true, false) => Some(Winner::ModelA),
        (false, true) => Some(Winner::ModelB),
        (false, false) => Some(Winner::BothBad),
    }
}

/// The execution judge (DESIGN §4): pass beats fail, both pass = tie, both fail = both bad.
pub fn exec_outcome(a_passed: bool, b_passed: bool) -> Winner {
    match (a_passed, b_passed) {
        (true, true) => Winner::Tie,
        (true, false) => Winner::ModelA,
        (false, true) => Winner::ModelB,
        (false, false) => Winner::BothBad,
    }
}

/// The first ranked model whose family equals the judge's (DESIGN rule 6), if any. Families
/// are compared by their letters and digits alone, case ignored: `OpenAI`, `open-ai` and
/// `Open AI` are one family.
pub fn family_conflict<'a>(
    judge_family: &str,
    models: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Option<&'a str> {
    let judge_family = family_key(judge_family);
    models
        .into_iter()
        .find(|(_, fam)| family_key(fam) == judge_family)
        .map(|(id, _)| id)
}

/// A family as compared: its letters and digits, lower case (a family of punctuation alone
/// as written).
fn family_key(family: &str) -> String {
    let letters: String = family
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    if letters.is_empty() {
        family.trim().to_string()
    } else {
        letters
    }
}

/// The maker a router's model name starts with (`openai/gpt-4o`, `meta-llama/Llama-3-8b` on
/// OpenRouter, Together, …) when it is also the family of the other side: one of `theirs`,
/// matched by letters and digits, either name containing the other (`meta-llama` is `meta`,
/// `mistralai` is `mistral`), at least three of them. `None` without a prefix or a match.
pub fn vendor_family<'a>(model_name: &str, theirs: &'a str) -> Option<&'a str> {
    let (vendor, _) = model_name.trim().split_once('/')?;
    let (vendor, family) = (family_key(vendor), family_key(theirs));
    let (short, long) = if vendor.len() <= family.len() {
        (&vendor, &family)
    } else {
        (&family, &vendor)
    };
    (short.chars().count() >= 3 && long.contains(short.as_str())).then_some(theirs)
}

/// The maker prefix two router-style names share (`meta-llama/Llama-3-8b` and
/// `meta-llama/llama-3-70b-instruct`): both `vendor/model` with exactly one slash, their
/// prefixes matched as [`vendor_family`] matches a prefix with a family. `None` otherwise
/// (deeper paths such as `accounts/fireworks/models/…` or `hf.co/user/repo` name a host or
/// an account, not a maker).
pub fn shared_vendor<'a>(judge_model: &'a str, model: &str) -> Option<&'a str> {
    let one_slash = |name: &str| name.trim().matches('/').count() == 1;
    if !one_slash(judge_model) || !one_slash(model) {
        return None;
    }
    let (prefix, _) = judge_model.trim().split_once('/')?;
    vendor_family(model, prefix)
}

/// Share of judged comparisons (both orderings parsed, not decided by failure) that flipped;
/// `None` when there are none.
pub fn flip_rate<'a>(comparisons: impl IntoIterator<Item = &'a ComparisonRecord>) -> Option<f64> {
    let (mut judged, mut flipped) = (0u64, 0u64);
    for c in comparisons {
        if c.by_failure || c.winner == Winner::Failed {
            continue;
        }
        judged += 1;
        flipped += u64::from(c.flipped);
    }
    (judged > 0).then(|| flipped as f64 / judged as f64)
}

/// A comparison's outcome as a label category; `None` when failed.
pub fn winner_category(w: Winner) -> Option<LabelCategory> {
    match w {
        Winner::ModelA => Some(LabelCategory::A),
        Winner::ModelB => Some(LabelCategory::B),
        Winner::Tie => Some(LabelCategory::Tie),
        Winner::BothBad => Some(LabelCategory::BothBad),
        Winner::Failed => None,
    }
}

/// Agreement between two judges over the comparisons both decided themselves (not by a
/// failed generation, not failed): the number of such items, the agreement rate and Cohen's
/// kappa over {A better, B better, tie, both bad}.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct JudgeAgreement {
    pub judge_1: String,
    pub judge_2: String,
    pub items: usize,
    pub agreement: Option<f64>,
    pub kappa: Option<f64>,
}

/// [`JudgeAgreement`] of judges `j1` and `j2`.
pub fn judge_agreement(comparisons: &[ComparisonRecord], j1: &str, j2: &str) -> JudgeAgreement {
    use std::collections::BTreeMap;
    let decided = |judge: &str| -> BTreeMap<(&str, &str, &str), LabelCategory> {
        comparisons
            .iter()
            .filter(|c| c.judge == judge && !c.by_failure)
            .filter_map(|c| {
                Some((
                    (c.task.as_str(), c.model_a.as_str(), c.model_b.as_str()),
                    winner_category(c.winner)?,
                ))
            })
            .collect()
    };
    let (a, b) = (decided(j1), decided(j2));
    let (mut x, mut y) = (Vec::new(), Vec::new());
    for (key, ca) in &a {
        if let Some(cb) = b.get(key) {
            x.push(*ca);
            y.push(*cb);
        }
    }
    JudgeAgreement {
        judge_1: j1.to_string(),
        judge_2: j2.to_string(),
        items: x.len(),
        agreement: agreement(&x, &y).expect("equal lengths by construction"),
        kappa: cohen_kappa(&x, &y).expect("equal lengths by construction"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{BothBad, First, Second, Tie};

    #[test]
    fn agreement_gives_the_winner() {
        // A shown first and preferred; then B shown first and A (second) preferred.
        assert_eq!(combine(Some(First), Some(Second)), (Winner::ModelA, false));
        assert_eq!(combine(Some(Second), Some(First)), (Winner::ModelB, false));
        assert_eq!(combine(Some(Tie), Some(Tie)), (Winner::Tie, false));
        assert_eq!(
            combine(Some(BothBad), Some(BothBad)),
            (Winner::BothBad, false)
        );
    }

    #[test]
    fn position_bias_is_a_flipped_tie() {
        assert_eq!(combine(Some(First), Some(First)), (Winner::Tie, true));
        assert_eq!(combine(Some(Second), Some(Second)), (Winner::Tie, true));
        assert_eq!(combine(Some(First), Some(Tie)), (Winner::Tie, true));
        assert_eq!(combine(Some(BothBad), Some(Tie)), (Winner::Tie, true));
    }

    #[test]
    fn a_failed_call_fails_the_comparison() {
        assert_eq!(combine(None, Some(First)), (Winner::Failed, false));
        assert_eq!(combine(Some(First), None), (Winner::Failed, false));
    }

    #[test]
    fn failures_and_exec() {
        assert_eq!(decide_by_failure(true, true), None);
        assert_eq!(decide_by_failure(true, false), Some(Winner::ModelA));
        assert_eq!(decide_by_failure(false, true), Some(Winner::ModelB));
        assert_eq!(decide_by_failure(false, false), Some(Winner::BothBad));
        assert_eq!(exec_outcome(true, true), Winner::Tie);
        assert_eq!(exec_outcome(false, true), Winner::ModelB);
        assert_eq!(exec_outcome(false, false), Winner::BothBad);
    }

    #[test]
    fn family_match_ignores_case_and_separators() {
        let models = [
            ("gpt", "OpenAI"),
            ("claude", "anthropic"),
            ("llama", "Meta_AI"),
        ];
        assert_eq!(family_conflict("openai", models), Some("gpt"));
        assert_eq!(family_conflict(" open-ai ", models), Some("gpt"));
        assert_eq!(family_conflict("meta ai", models), Some("llama"));
        assert_eq!(family_conflict("google", models), None);
        assert_eq!(family_conflict("meta", models), None);
        assert_eq!(family_conflict("?", [("q", "-")]), None);
        assert_eq!(family_conflict(" - ", [("q", "-")]), Some("q"));
    }

    #[test]
    fn a_router_model_name_says_its_maker() {
        assert_eq!(vendor_family("openai/gpt-4o", "OpenAI"), Some("OpenAI"));
        assert_eq!(
            vendor_family(" meta-llama/Llama-3-8b", "meta"),
            Some("meta")
        );
        assert_eq!(
            vendor_family("mistralai/Mistral-7B", "mistral"),
            Some("mistral")
        );
        assert_eq!(vendor_family("x-ai/grok-2", "xai"), Some("xai"));
        assert_eq!(vendor_family("openai/gpt-4o", "anthropic"), None);
        assert_eq!(vendor_family("gpt-4o", "openai"), None);
        // Too short to say anything.
        assert_eq!(vendor_family("ai/model", "openai"), None);
    }

    #[test]
    fn two_router_names_can_share_a_maker() {
        assert_eq!(
            shared_vendor(
                "meta-llama/llama-3-70b-instruct",
                " meta-llama/Llama-3-8b-instruct"
            ),
            Some("meta-llama")
        );
        assert_eq!(
            shared_vendor("mistralai/mistral-large", "Mistralai/Mistral-7B"),
            Some("mistralai")
        );
        assert_eq!(
            shared_vendor("openai/gpt-4o", "meta-llama/Llama-3-8b"),
            None
        );
        // Hosts and accounts are not makers; names without a prefix say nothing.
        assert_eq!(
            shared_vendor(
                "accounts/fireworks/models/qwen2-72b",
                "accounts/fireworks/models/llama-v3-8b"
            ),
            None
        );
        assert_eq!(shared_vendor("hf.co/a/b", "hf.co/a/c"), None);
        assert_eq!(shared_vendor("gpt-4o", "gpt-4o-mini"), None);
        assert_eq!(shared_vendor("ai/x", "ai/y"), None);
    }

    #[test]
    fn flip_rate_ignores_failures() {
        let c = |winner, flipped, by_failure| ComparisonRecord {
            task: "t".into(),
            judge: "j".into(),
            model_a: "a".into(),
            model_b: "b".into(),
            winner,
            flipped,
            by_failure,
        };
        let rows = [
            c(Winner::Tie, true, false),
            c(Winner::ModelA, false, false),
            c(Winner::ModelB, false, true),
            c(Winner::Failed, false, false),
        ];
        assert_eq!(flip_rate(&rows), Some(0.5));
        assert_eq!(flip_rate(&rows[2..]), None);
    }

    #[test]
    fn judges_agree_on_shared_decided_items() {
        let c = |judge: &str, task: &str, winner, by_failure| ComparisonRecord {
            task: task.into(),
            judge: judge.into(),
            model_a: "a".into(),
            model_b: "b".into(),
            winner,
            flipped: false,
            by_failure,
        };
        let rows = [
            c("x", "t1", Winner::ModelA, false),
            c("y", "t1", Winner::ModelA, false),
            c("x", "t2", Winner::ModelB, false),
            c("y", "t2", Winner::Tie, false),
            c("x", "t3", Winner::ModelA, true),
            c("y", "t3", Winner::ModelA, true),
            c("x", "t4", Winner::Failed, false),
            c("y", "t4", Winner::ModelA, false),
        ];
        let a = judge_agreement(&rows, "x", "y");
        assert_eq!(a.items, 2);
        assert_eq!(a.agreement, Some(0.5));
        // p_o = 0.5; x = (A, B), y = (A, Tie): p_e = 0.5·0.5 (A) = 0.25 → κ = 0.25/0.75 = 1/3.
        assert!((a.kappa.expect("defined") - 1.0 / 3.0).abs() < 1e-12);
    }
}
