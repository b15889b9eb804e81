//! The judge calls of a compare: which are still needed, grouped by provider, and one call
//! (both attempts of one ordering) rendered, sent through the cache and parsed strictly.

use super::*;

/// Every call still needed: both orderings of every pair whose outputs are both ok, for each
/// LLM judge, minus those already recorded (failed ones too unless `retry_failed`).
pub(super) fn pending_calls(
    ctx: &Ctx,
    models: &[ModelConfig],
    existing: &[JudgmentRecord],
    retry_failed: bool,
) -> Vec<Call> {
    let ok = |task: &str, model: &str| output_ok(ctx, task, model);
    calls_to_make(&ctx.suite, &ctx.judges, models, existing, retry_failed, ok)
}

/// [`pending_calls`] before the compare's context is built (for `--max-cost`'s price check,
/// which comes before anything is written): the same calls, from the run's output records.
pub(super) fn pending_calls_of(
    suite: &Suite,
    judges: &[Judge],
    models: &[ModelConfig],
    outputs: &[OutputRecord],
    existing: &[JudgmentRecord],
    retry_failed: bool,
) -> Vec<Call> {
    let ok: BTreeSet<(&str, &str)> = outputs
        .iter()
        .filter(|o| o.status == Status::Ok)
        .map(|o| (o.task.as_str(), o.model.as_str()))
        .collect();
    let ok = |task: &str, model: &str| ok.contains(&(task, model));
    calls_to_make(suite, judges, models, existing, retry_failed, ok)
}

/// The calls of [`pending_calls`], with `ok(task, model)` telling whether an output is ok.
fn calls_to_make(
    suite: &Suite,
    judges: &[Judge],
    models: &[ModelConfig],
    existing: &[JudgmentRecord],
    retry_failed: bool,
    ok: impl Fn(&str, &str) -> bool,
) -> Vec<Call> {
    let mut done: BTreeMap<(&str, &str, &str, &str), &JudgmentRecord> = BTreeMap::new();
    for r in existing {
        done.insert(
            (
                r.task.as_str(),
                r.judge.as_str(),
                r.first.as_str(),
                r.second.as_str(),
            ),
            r,
        );
    }
    let mut calls = Vec::new();
    for (ji, judge) in judges.iter().enumerate() {
        if matches!(judge, Judge::Exec) {
            continue;
        }
        for (ti, task) in suite.tasks.iter().enumerate() {
            for (i, a) in models.iter().enumerate() {
                for b in &models[i + 1..] {
                    if !(ok(&task.id, &a.id) && ok(&task.id, &b.id)) {
                        continue;
                    }
                    for order in [Order::Ab, Order::Ba] {
                        let (first, second) = order.arrange((a.id.as_str(), b.id.as_str()));
                        let recorded = done.get(&(task.id.as_str(), judge.id(), first, second));
                        let retry_of_unparsable = recorded.is_some_and(|r| {
                            r.error
                                .as_ref()
                                .is_some_and(|e| e.class == ErrorClass::UnparsableVerdict)
                        });
                        let replaces = match recorded {
                            None => None,
                            Some(r) if !matches!(r.verdict, JudgmentVerdict::Failed(_)) => {
                                continue;
                            }
                            Some(_) if !retry_failed => continue,
                            Some(r) => Some(Replaced::passed_on(r.usage, r.cost_usd, r.replaced)),
                        };
                        calls.push(Call {
                            judge: ji,
                            task: ti,
                            model_a: a.id.clone(),
                            model_b: b.id.clone(),
                            order,
                            retry: replaces.is_some(),
                            retry_of_unparsable,
                            replaces: replaces.flatten(),
                        });
                    }
                }
            }
        }
    }
    calls
}

pub(super) fn output_ok(ctx: &Ctx, task: &str, model: &str) -> bool {
    ctx.outputs
        .get(&(task.to_string(), model.to_string()))
        .is_some_and(|o| o.status == Status::Ok)
}

pub(super) fn group_by_provider(ctx: &Ctx, calls: Vec<Call>) -> Vec<Group<Call>> {
    let mut by_provider: BTreeMap<String, Vec<Call>> = BTreeMap::new();
    for call in calls {
        let Judge::Llm(m) = &ctx.judges[call.judge] else {
            continue;
        };
        by_provider
            .entry(m.provider.clone())
            .or_default()
            .push(call);
    }
    by_provider
        .into_iter()
        .map(|(name, items)| Group {
            concurrency: ctx.config.providers[&name].max_concurrency,
            items,
        })
        .collect()
}

/// The request of a judge call: the prompt rendered over the two answers in the call's order,
/// sent with the run's judge settings; the render's error when an input holds the nonce.
pub(super) fn call_request(
    ctx: &Ctx,
    call: &Call,
) -> Result<crate::provider::WireRequest, crate::prompt::PromptError> {
    let Judge::Llm(judge) = &ctx.judges[call.judge] else {
        unreachable!("only LLM judges make calls")
    };
    let task = &ctx.suite.tasks[call.task];
    let (first, second) = call.shown();
    let text_of = |model: &str| {
        ctx.outputs[&(task.id.clone(), model.to_string())]
            .text
            .as_deref()
            .expect("ok outputs have text")
    };
    let (answer_1, answer_2) = (text_of(first), text_of(second));
    let nonce = fence_nonce(ctx.seed, &task.prompt, (answer_1, answer_2), call.order);
    let input = PairwiseInput {
        task: &task.prompt,
        answer_1,
        answer_2,
        suite_context: &ctx.brief,
        suite_criteria: &ctx.suite.criteria,
        nonce: &nonce,
    };
    let prompt = render_pairwise(&ctx.template, &input)?;
    let request = ChatRequest {
        model: judge.model.clone(),
        messages: vec![Message::system(prompt.system), Message::user(prompt.user)],
        max_tokens: ctx.config.run.judge_max_tokens,
        temperature: ctx.config.run.judge_temperature,
    };
    // The provider's settings as configured (a dry run builds no HTTP client, needs no key).
    Ok(to_wire(&ctx.config.providers[&judge.provider], &request))
}

/// The cache keys (both attempts) of the calls that `--retry-failed` asks again: an identical
/// request of another call of the same invocation is then asked afresh too (once, and shared),
/// rather than answered from the entry the retry replaces.
pub(super) fn retry_keys(ctx: &Ctx, calls: &[Call]) -> Vec<String> {
    let mut keys = Vec::new();
    for call in calls.iter().filter(|c| c.retry) {
        let Judge::Llm(judge) = &ctx.judges[call.judge] else {
            continue;
        };
        let Ok(wire) = call_request(ctx, call) else {
            continue;
        };
        let http = ctx.http[&judge.provider].config();
        for attempt in 1..=2 {
            keys.push(crate::engine::calls::cache_key_of(http, &wire, attempt));
        }
    }
    keys
}

/// One judge call with one retry for an unparsable reply. `None` = stopped before finishing.
/// [`one_judge_call`], unless the judge is found broken ([`JudgeHealth`]): its calls not
/// started yet are skipped (not recorded: a rerun asks them), so as not to pay for more.
pub(super) async fn judge_call(ctx: Arc<Ctx>, call: Call) -> Option<JudgmentRecord> {
    let health = &ctx.health[call.judge];
    if health.is_broken() {
        return None;
    }
    // A retry of a reply that broke the format is the call most likely to break it again:
    // it tells nothing of whether the judge follows the format at all (a retry of a 5xx or
    // a timeout does).
    let counted = !call.retry_of_unparsable;
    let started = health.start(counted);
    let record = one_judge_call(ctx.clone(), call).await;
    health.finish(started, record.as_ref().filter(|_| counted));
    record
}

/// Whether a judge follows the reply format at all. A judge is taken as broken (another model
/// behind the id, replies cut off by its token cap) once [`BROKEN_JUDGE_CALLS`] of its calls
/// in this compare asked it and ended unparsable, each asked twice, none gave a verdict, and
/// no call that started before the last of those failures is still out (a slow verdict may be
/// on its way): its calls not started yet are then not made, unless one still out gives a
/// verdict after all. Replies from the cache (free, and maybe older than a fix behind the
/// same id) and retries of recorded unparsable replies do not count either way, nor do other
/// failures (a 5xx, a timeout).
#[derive(Debug, Default)]
pub(super) struct JudgeHealth {
    state: std::sync::Mutex<Health>,
    broken: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct Health {
    next: u32,
    /// Start numbers of the counted calls still out.
    out: std::collections::BTreeSet<u32>,
    unparsable: u32,
    /// The start number of the call whose failure made the count.
    decided_by: Option<u32>,
    parsed: bool,
}

/// Unparsable calls without a single verdict after which a judge is taken as broken.
pub(super) const BROKEN_JUDGE_CALLS: u32 = 10;

impl JudgeHealth {
    pub(super) fn is_broken(&self) -> bool {
        self.broken.load(std::sync::atomic::Ordering::SeqCst)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Health> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Numbers a call as it starts (`counted`: its reply is to count).
    fn start(&self, counted: bool) -> u32 {
        let mut s = self.state();
        let n = s.next;
        s.next += 1;
        if counted {
            s.out.insert(n);
        }
        n
    }

    /// The call numbered `started` is over, with `record` when it counts (none when it was
    /// cut short or does not count).
    fn finish(&self, started: u32, record: Option<&JudgmentRecord>) {
        let mut s = self.state();
        s.out.remove(&started);
        if let Some(record) = record.filter(|r| !r.from_cache) {
            if matches!(record.verdict, JudgmentVerdict::Parsed(_)) {
                // A verdict from a call that was out when the stop was decided undoes it: the
                // judge works (the calls skipped meanwhile are asked by a rerun).
                s.parsed = true;
                self.broken
                    .store(false, std::sync::atomic::Ordering::SeqCst);
            } else if record
                .error
                .as_ref()
                .is_some_and(|e| e.class == ErrorClass::UnparsableVerdict)
            {
                s.unparsable += 1;
                if s.unparsable == BROKEN_JUDGE_CALLS {
                    s.decided_by = Some(started);
                }
            }
        }
        let earlier_out = |by: u32| s.out.range(..by).next().is_some();
        if !s.parsed && s.decided_by.is_some_and(|by| !earlier_out(by)) {
            self.broken.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

async fn one_judge_call(ctx: Arc<Ctx>, call: Call) -> Option<JudgmentRecord> {
    let Judge::Llm(judge) = &ctx.judges[call.judge] else {
        unreachable!("only LLM judges make calls")
    };
    let task = &ctx.suite.tasks[call.task];
    let (first, second) = call.shown();
    let mut record = JudgmentRecord {
        task: task.id.clone(),
        judge: judge.id.clone(),
        first: first.to_string(),
        second: second.to_string(),
        order: call.order,
        verdict: JudgmentVerdict::Failed(FailedMarker::Failed),
        raw: None,
        attempts: 0,
        prompt_sha256: ctx.prompt_sha256.clone(),
        cache_key: None,
        from_cache: false,
        usage: None,
        cost_usd: None,
        error: None,
        replaced: call.replaces,
        spent_usd: 0.0,
    };
    let wire = match call_request(&ctx, &call) {
        Ok(wire) => wire,
        Err(e) => {
            record.error = Some(RecordedError {
                class: ErrorClass::ClientError,
                message: e.to_string(),
                http_status: None,
            });
            return Some(record);
        }
    };
    let http = &ctx.http[&judge.provider];
    // An attempt whose tokens are unknown makes the call's usage and cost unknown: a sum of
    // the others would report a billed attempt as free.
    let mut usage_known = true;
    // Attempts asked now whose reply gave no usage: their cost is unknown.
    let mut unknown_attempts = 0usize;
    for attempt in 1..=2 {
        let refresh = ctx.refresh || call.retry;
        let use_ = CacheUse {
            attempt,
            refresh,
            verdict: true,
        };
        let Some(result) = cached_call(&ctx.cache, http, &wire, use_, &ctx.stop).await else {
            // Stopped before the retry (Ctrl-C, --deadline, --max-cost): the call is not
            // recorded, and what its first attempt cost is said apart.
            let mut lost = ctx
                .unrecorded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            lost.0 += record.spent_usd;
            lost.1 += unknown_attempts;
            return None;
        };
        record.attempts = attempt;
        record.cache_key = Some(result.cache_key);
        // Answered from the cache only when every attempt was.
        record.from_cache = result.from_cache && (attempt == 1 || record.from_cache);
        // Every attempt's tokens, a failed one's too when the provider said (it was billed).
        let billed = match &result.reply {
            Ok(reply) => reply.usage,
            Err(e) => e.usage,
        };
        if let Some(u) = billed.filter(|_| !result.from_cache) {
            record.spent_usd += judge
                .cost_usd(u.input_tokens, u.output_tokens)
                .unwrap_or(0.0);
        }
        // Counted here, as the reply comes, not when the record reaches the writer: this
        // worker's next call must see it (--max-cost).
        if !result.from_cache {
            let cost = billed.and_then(|u| judge.cost_usd(u.input_tokens, u.output_tokens));
            // No usage, or no price: either way its cost is not known.
            unknown_attempts += usize::from(cost.is_none());
            crate::engine::budget::spend(cost);
        }
        match billed {
            Some(u) if usage_known => {
                let prev = record.usage.unwrap_or_default();
                let usage = crate::provider::Usage {
                    input_tokens: prev.input_tokens.saturating_add(u.input_tokens),
                    output_tokens: prev.output_tokens.saturating_add(u.output_tokens),
                };
                record.usage = Some(usage);
                record.cost_usd = judge.cost_usd(usage.input_tokens, usage.output_tokens);
            }
            Some(_) => {}
            None => {
                usage_known = false;
                record.usage = None;
                record.cost_usd = None;
            }
        }
        match result.reply {
            Ok(reply) => {
                let cut = reply.finish_reason.as_deref() == Some("length");
                match parse_verdict(&reply.text) {
                    Ok(v) if !cut => {
                        record.verdict = JudgmentVerdict::Parsed(v);
                        record.error = None;
                        record.raw = Some(reply.text);
                        return Some(record);
                    }
                    parsed => {
                        // A verdict line in a reply cut off by the token cap is not trusted:
                        // the judge had not finished.
                        let mut message = match parsed {
                            Ok(_) => "the reply ends in a verdict line but was cut off".to_string(),
                            Err(e) => e.to_string(),
                        };
                        if cut {
                            message.push_str(" (the reply was cut off by judge_max_tokens; raise [run] judge_max_tokens and judge into a new run)");
                        }
                        record.raw = Some(reply.text);
                        record.error = Some(RecordedError {
                            class: ErrorClass::UnparsableVerdict,
                            message,
                            http_status: None,
                        });
                    }
                }
            }
            // An empty reply is a reply without a verdict (DESIGN §2.7): asked once more,
            // then recorded unparsable with its (empty) text.
            Err(e) if e.class == ErrorClass::EmptyOutput => {
                record.raw = Some(e.text.unwrap_or_default());
                record.error = Some(RecordedError {
                    class: ErrorClass::UnparsableVerdict,
                    message: e.message,
                    http_status: None,
                });
            }
            Err(e) => {
                record.error = Some(RecordedError {
                    class: e.class,
                    message: e.message,
                    http_status: e.status,
                });
                return Some(record);
            }
        }
    }
    Some(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of one judge call: `Some(true)` a verdict, `Some(false)` unparsable, `None`
    /// another failure (a 5xx).
    fn record(verdict: Option<bool>, from_cache: bool) -> JudgmentRecord {
        let error = |class| {
            Some(RecordedError {
                class,
                message: String::new(),
                http_status: None,
            })
        };
        JudgmentRecord {
            task: "t".into(),
            judge: "j".into(),
            first: "a".into(),
            second: "b".into(),
            order: crate::prompt::Order::Ab,
            verdict: match verdict {
                Some(true) => JudgmentVerdict::Parsed(crate::verdict::Verdict::Tie),
                _ => JudgmentVerdict::Failed(FailedMarker::Failed),
            },
            raw: None,
            attempts: 1,
            prompt_sha256: String::new(),
            cache_key: None,
            from_cache,
            usage: None,
            cost_usd: None,
            error: match verdict {
                Some(true) => None,
                Some(false) => error(ErrorClass::UnparsableVerdict),
                None => error(ErrorClass::ServerError),
            },
            replaced: None,
            spent_usd: 0.0,
        }
    }

    fn unparsable_calls(health: &JudgeHealth, n: usize) {
        for _ in 0..n {
            let started = health.start(true);
            health.finish(started, Some(&record(Some(false), false)));
        }
    }

    #[test]
    fn ten_unparsable_calls_and_no_verdict_make_a_judge_broken() {
        let health = JudgeHealth::default();
        // Another failure first does not keep it from being found out.
        let first = health.start(true);
        health.finish(first, Some(&record(None, false)));
        unparsable_calls(&health, 9);
        assert!(!health.is_broken());
        unparsable_calls(&health, 1);
        assert!(health.is_broken());
    }

    #[test]
    fn a_slow_verdict_started_earlier_is_waited_for() {
        let health = JudgeHealth::default();
        let slow = health.start(true);
        unparsable_calls(&health, 12);
        assert!(!health.is_broken(), "the first call is still out");
        health.finish(slow, Some(&record(Some(true), false)));
        unparsable_calls(&health, 5);
        assert!(!health.is_broken(), "it gave a verdict");
        // Out and then cut short (no record): the failures decide.
        let health = JudgeHealth::default();
        let cut = health.start(true);
        unparsable_calls(&health, 10);
        assert!(!health.is_broken());
        health.finish(cut, None);
        assert!(health.is_broken());
        // A verdict from a call that started later but was out when the stop was decided
        // undoes it.
        let health = JudgeHealth::default();
        unparsable_calls(&health, 9);
        let tenth = health.start(true);
        let out = health.start(true);
        health.finish(tenth, Some(&record(Some(false), false)));
        assert!(health.is_broken(), "no call that started earlier is out");
        health.finish(out, Some(&record(Some(true), false)));
        assert!(!health.is_broken());
        unparsable_calls(&health, 10);
        assert!(!health.is_broken(), "it works");
    }

    #[test]
    fn cached_replies_and_retries_count_neither_way() {
        let health = JudgeHealth::default();
        for _ in 0..20 {
            let cached = health.start(true);
            health.finish(cached, Some(&record(Some(false), true)));
            let retry = health.start(false);
            health.finish(retry, None);
        }
        assert!(!health.is_broken());
        // A cached verdict does not vouch for the judge either.
        let cached = health.start(true);
        health.finish(cached, Some(&record(Some(true), true)));
        unparsable_calls(&health, 10);
        assert!(health.is_broken());
    }
}
