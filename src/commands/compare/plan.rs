//! `judge compare --dry-run`: what a compare would ask, and what it could cost, before any
//! call is made or anything is written.

use super::*;
use crate::provider::{ChatReply, ProviderError};
use crate::report::plan::{PayerPlan, PlanTotal};

/// One judge's share of the calls still to make.
#[derive(Debug, Default, PartialEq)]
pub(super) struct JudgePlan {
    /// Calls still to make (both orderings of every comparison not yet recorded, and with
    /// `--retry-failed` the failed ones).
    pub(super) calls: usize,
    /// Of them, answered by the cache (no request, no cost).
    pub(super) cached: usize,
    /// Requests the others take: one each, two for a retry of a reply recorded as unparsable.
    pub(super) requests: u64,
    /// Estimated input tokens of the others (message characters / 4).
    pub(super) input_tokens: u64,
}

/// The plan of every LLM judge of `ctx` over `calls`, in the judges' order.
pub(super) fn judge_plans(ctx: &Ctx, calls: &[Call]) -> Vec<(usize, JudgePlan)> {
    let cap = u64::from(ctx.config.run.judge_max_tokens);
    let mut plans: Vec<(usize, JudgePlan)> = ctx
        .judges
        .iter()
        .enumerate()
        .filter(|(_, j)| matches!(j, Judge::Llm(_)))
        .map(|(i, _)| (i, JudgePlan::default()))
        .collect();
    for call in calls {
        let Judge::Llm(judge) = &ctx.judges[call.judge] else {
            continue;
        };
        let Some((_, plan)) = plans.iter_mut().find(|(i, _)| *i == call.judge) else {
            continue;
        };
        plan.calls += 1;
        // A call whose answers hold the fence cannot be rendered: it fails without a request.
        let Ok(wire) = calls::call_request(ctx, call) else {
            continue;
        };
        let provider = &ctx.config.providers[&judge.provider];
        // A refresh or a retry of a failure asks afresh whatever the cache holds.
        let fresh = ctx.refresh || call.retry;
        let cached = |attempt| {
            (!fresh)
                .then(|| crate::engine::calls::cached_reply(&ctx.cache, provider, &wire, attempt))
                .flatten()
        };
        let verdict = |reply: &Result<ChatReply, ProviderError>| {
            reply.as_ref().is_ok_and(|r| {
                r.finish_reason.as_deref() != Some("length")
                    && crate::verdict::parse_verdict(&r.text).is_ok()
            })
        };
        let requests = match cached(1) {
            // A reply with a verdict: nothing to ask.
            Some(first) if verdict(&first) => 0,
            // An unparsable one is asked once more, unless that is cached too.
            Some(_) if cached(2).is_some() => 0,
            Some(_) => 1,
            // A retry of a reply recorded as unparsable most likely breaks the format again,
            // and is then asked twice: counted so.
            None if call.retry_of_unparsable => 2,
            None => 1,
        };
        if requests == 0 {
            plan.cached += 1;
            continue;
        }
        plan.requests += requests;
        plan.input_tokens += requests * wire.estimated_tokens.saturating_sub(cap);
    }
    plans
}

/// What `--dry-run` prints: per judge, the calls to make, how many the cache answers, and
/// for the rest an estimate of input tokens, the most output tokens and what they could cost.
pub(super) fn render_plan(ctx: &Ctx, calls: &[Call], run: &str) -> String {
    let mut out = String::new();
    let mut total = PlanTotal::default();
    for (i, plan) in judge_plans(ctx, calls) {
        let Judge::Llm(judge) = &ctx.judges[i] else {
            continue;
        };
        out.push_str(&total.line(&PayerPlan {
            head: format!("judge `{}`: {} call(s) to make", judge.id, plan.calls),
            payer: judge,
            cached: plan.cached,
            requests: plan.requests,
            input_tokens: plan.input_tokens,
            cap: (ctx.config.run.judge_max_tokens, "judge_max_tokens"),
        }));
    }
    if ctx.judges.iter().any(|j| matches!(j, Judge::Exec)) {
        out.push_str(
            "judge `exec`: no calls: it decides from the checks (`judge compare` runs those still missing, in the sandbox)\n",
        );
    }
    let priced_total = total.bound("judges");
    out.push_str(&format!(
        "run `{run}`: {} call(s) to make in all, {priced_total}. A new reply that breaks the verdict format is asked once more, which is not counted here (a retry of one recorded as unparsable is counted twice). Nothing was called or written; drop --dry-run to judge.\n",
        calls.len()
    ));
    out
}
