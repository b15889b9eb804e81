//! Gemini API `generateContent` translation: `ChatRequest` → request path and body, response
//! body → `ChatReply` or a classified error. Pure; `http.rs` sends it (key in
//! [`API_KEY_HEADER`]) and must not need to know the body's shape.
//!
//! The model is named in the path ([`path`]), not in the body, so a cache key built from the
//! body alone would mix up models: it must include the path (or the model) as well.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    ChatReply, ChatRequest, ErrorClass, ProviderError, Usage, decode_json, excerpt, malformed,
    split_system,
};

/// The `base_url` used when the config gives none.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The header that carries the API key.
pub const API_KEY_HEADER: &str = "x-goog-api-key";

/// The path appended to `base_url` for `model`: `/models/{model}:generateContent`. A leading
/// `models/` (the resource name `ListModels` returns) is accepted and not doubled. The model
/// is not in the body, so the cache key must include this path.
pub fn path(model: &str) -> String {
    let model = model.strip_prefix("models/").unwrap_or(model);
    format!("/models/{model}:generateContent")
}

/// The JSON body for a request: system messages joined (blank line between) into
/// `systemInstruction` (omitted when there are none), the others in `contents` in order with
/// `assistant` → `model`, and `generationConfig` with `maxOutputTokens` and `temperature`.
pub fn build_request(req: &ChatRequest) -> Value {
    let (system, rest) = split_system(&req.messages);
    let contents: Vec<Value> = rest
        .iter()
        .map(|m| {
            let role = if m.role == "assistant" {
                "model"
            } else {
                m.role.as_str()
            };
            json!({"role": role, "parts": [{"text": m.content}]})
        })
        .collect();
    let mut body = json!({
        "contents": contents,
        "generationConfig": {
            "maxOutputTokens": req.max_tokens,
            "temperature": req.temperature,
        },
    });
    if let Some(system) = system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    body
}

/// Parses a 2xx response body.
pub fn parse_reply(body: &[u8]) -> Result<ChatReply, ProviderError> {
    parse_reply_value(&decode_json(body)?)
}

/// Parses a 2xx response already decoded as JSON (e.g. from the cache). The text is the
/// `text` of every part of the first candidate, thought parts skipped; `finishReason` is
/// normalised (`STOP` → `stop`, `MAX_TOKENS` → `length`, the text kept, others lowercased).
/// A safety-type finish reason, a blocked prompt, no candidate or an empty text is an error.
pub fn parse_reply_value(value: &Value) -> Result<ChatReply, ProviderError> {
    if let Some(error) = value.get("error") {
        return Err(error_in_body(error));
    }
    let known = ["candidates", "promptFeedback", "usageMetadata"];
    if !known.iter().any(|k| value.get(k).is_some()) {
        return Err(malformed(
            value,
            "no candidates, promptFeedback or usageMetadata",
        ));
    }
    let usage = usage_of(value);
    let candidate = match value.get("candidates") {
        None | Some(Value::Null) => None,
        Some(Value::Array(all)) => all.first(),
        Some(_) => return Err(malformed(value, "candidates is not an array")),
    };
    let Some(candidate) = candidate else {
        return Err(no_candidate(value));
    };
    let text = candidate_text(candidate).map_err(|what| malformed(value, what))?;
    let reason = candidate.get("finishReason").and_then(Value::as_str);
    if let Some(r) = reason
        && is_block(r, &text)
    {
        return Err(blocked(candidate, r));
    }
    if text.trim().is_empty() {
        return Err(ProviderError::empty(
            format!("empty reply (finishReason: {})", reason.unwrap_or("none")),
            &text,
        ));
    }
    Ok(ChatReply {
        text,
        finish_reason: reason.map(normalise_finish_reason),
        usage,
    })
}

/// Classifies a non-2xx response: 400 with an invalid API key, 401 and 403 auth; 404 unknown
/// model; 429 quota exhausted when the body says a daily (or zero) quota is used up, else rate
/// limited with the body's `RetryInfo.retryDelay` as `retry_after`; 408 timeout; 5xx server
/// error; other 4xx client error.
pub fn classify_status(status: u16, body: &str) -> ProviderError {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let class = class_for(status, body, error);
    let mut e = ProviderError::new(class, format!("HTTP {status}: {}", excerpt(body, 300)));
    e.status = Some(status);
    if class == ErrorClass::RateLimited {
        e.retry_after = error.and_then(retry_delay);
    }
    e
}

/// `error` is the parsed `error` object of the body, when it has one.
fn class_for(status: u16, body: &str, error: Option<&Value>) -> ErrorClass {
    let lower = body.to_ascii_lowercase();
    match status {
        400 if lower.contains("api_key_invalid") || lower.contains("api key not valid") => {
            ErrorClass::Auth
        }
        401 | 403 => ErrorClass::Auth,
        404 => ErrorClass::UnknownModel,
        429 if is_quota_exhausted(&lower, error) => ErrorClass::QuotaExhausted,
        429 => ErrorClass::RateLimited,
        408 => ErrorClass::Timeout,
        500..=599 => ErrorClass::ServerError,
        _ => ErrorClass::ClientError,
    }
}

/// A 429 that waiting minutes does not fix. Gemini sends 429 `RESOURCE_EXHAUSTED` with the
/// same "exceeded your current quota … billing" text for per-minute and per-day limits, so the
/// `QuotaFailure` violations decide when present: any per-day quota, or a quota of 0 (the tier
/// has none for this model), is exhausted; only per-minute quotas is a rate limit. Without
/// violations the text decides.
fn is_quota_exhausted(lower_body: &str, error: Option<&Value>) -> bool {
    quota_verdict(lower_body, error).unwrap_or_else(|| {
        lower_body.contains("exceeded your current quota")
            && (lower_body.contains("billing") || lower_body.contains("check your plan"))
    })
}

/// What a Gemini error's `QuotaFailure` violations say of a 429: `Some(true)` exhausted (a
/// per-day quota, or a quota of 0), `Some(false)` only per-minute quotas (a rate limit),
/// `None` when they do not say. Also read for Gemini's OpenAI-compatible endpoint, whose
/// "exceeded your current quota" text is the same for both.
pub(crate) fn quota_verdict(lower_body: &str, error: Option<&Value>) -> Option<bool> {
    let violations = quota_violations(error);
    if violations.iter().any(|v| quota_id(v).contains("PerDay"))
        || violations
            .iter()
            .any(|v| v.get("quotaValue").and_then(Value::as_str) == Some("0"))
        || lower_body.contains("limit: 0,")
    {
        return Some(true);
    }
    (!violations.is_empty() && violations.iter().all(|v| quota_id(v).contains("PerMinute")))
        .then_some(false)
}

/// The `error` object of a Gemini-shaped body: `{"error": …}`, or a list of one such object
/// (the OpenAI-compatible endpoint's errors).
pub(crate) fn error_object(body: &Value) -> Option<&Value> {
    body.get("error")
        .or_else(|| body.as_array()?.first()?.get("error"))
}

/// `RetryInfo.retryDelay` of a Gemini-shaped error body, as sent by the OpenAI-compatible
/// endpoint too.
pub(crate) fn retry_delay_of(error: &Value) -> Option<Duration> {
    retry_delay(error)
}

fn quota_id(violation: &Value) -> &str {
    violation
        .get("quotaId")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The `details` entries of `error` whose `@type` ends with `kind`.
fn details_of<'a>(error: Option<&'a Value>, kind: &str) -> Vec<&'a Value> {
    let details = error
        .and_then(|e| e.get("details"))
        .and_then(Value::as_array);
    details
        .into_iter()
        .flatten()
        .filter(|d| {
            d.get("@type")
                .and_then(Value::as_str)
                .is_some_and(|t| t.ends_with(kind))
        })
        .collect()
}

fn quota_violations(error: Option<&Value>) -> Vec<&Value> {
    details_of(error, "google.rpc.QuotaFailure")
        .into_iter()
        .filter_map(|d| d.get("violations").and_then(Value::as_array))
        .flatten()
        .collect()
}

/// `RetryInfo.retryDelay` (a protobuf duration such as `"41s"` or `"20.5s"`).
fn retry_delay(error: &Value) -> Option<Duration> {
    let delay = details_of(Some(error), "google.rpc.RetryInfo")
        .into_iter()
        .find_map(|d| d.get("retryDelay").and_then(Value::as_str))?;
    let secs: f64 = delay.strip_suffix('s')?.parse().ok()?;
    Duration::try_from_secs_f64(secs).ok()
}

/// An `{"error": {...}}` object in a 2xx body: classified like the `code` it carries, or
/// malformed without one.
fn error_in_body(error: &Value) -> ProviderError {
    let text = error.to_string();
    let class = error
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .map_or(ErrorClass::MalformedResponse, |c| {
            class_for(c, &text, Some(error))
        });
    ProviderError::new(
        class,
        format!("error object in a 2xx response: {}", excerpt(&text, 300)),
    )
}

/// The token usage of a 2xx reply. A count Gemini leaves out is 0 (proto3 JSON omits zeros);
/// no usage block (or a null one) is unknown.
/// `None` (unknown, so never costed as free) without `promptTokenCount`: every request has a
/// prompt, so metadata without it (`{}`, only a total) does not say what was billed. Output
/// counts may be missing, as proto3 leaves zeros out.
pub fn usage_of(value: &Value) -> Option<Usage> {
    let meta = value.get("usageMetadata")?;
    let count = |k: &str| meta.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: meta.get("promptTokenCount")?.as_u64()?,
        // Thinking tokens are billed as output, as in the other providers' output counts.
        output_tokens: count("candidatesTokenCount").saturating_add(count("thoughtsTokenCount")),
    })
}

/// Joins the `text` of the candidate's parts, skipping parts without text and thought parts.
/// A candidate without `content` (e.g. stopped for safety) has no text.
fn candidate_text(candidate: &Value) -> Result<String, &'static str> {
    let parts = match candidate.get("content").map(|c| c.get("parts")) {
        None | Some(None | Some(Value::Null)) => return Ok(String::new()),
        Some(Some(Value::Array(parts))) => parts,
        Some(Some(_)) => return Err("candidates[0].content.parts is not an array"),
    };
    let mut text = String::new();
    for part in parts {
        if part.get("thought").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        match part.get("text") {
            None => {}
            Some(Value::String(s)) => text.push_str(s),
            Some(_) => return Err("a part whose text is not a string"),
        }
    }
    Ok(text)
}

/// Whether `finishReason` means the provider blocked the reply. `OTHER` counts only when no
/// text came back: with text it is passed through as `other`.
fn is_block(reason: &str, text: &str) -> bool {
    match reason {
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY" => {
            true
        }
        "OTHER" => text.trim().is_empty(),
        _ => false,
    }
}

/// `finishReason` in the shared vocabulary: `stop`, `length`, or the value lowercased.
fn normalise_finish_reason(reason: &str) -> String {
    match reason {
        "STOP" => "stop".into(),
        "MAX_TOKENS" => "length".into(),
        other => other.to_ascii_lowercase(),
    }
}

/// A candidate stopped by a safety-type `finishReason`.
fn blocked(candidate: &Value, reason: &str) -> ProviderError {
    let mut message = format!("blocked by the provider: finishReason {reason}");
    message.push_str(&flagged_ratings(candidate.get("safetyRatings")));
    if let Some(m) = candidate.get("finishMessage").and_then(Value::as_str) {
        message.push_str(&format!(": {m}"));
    }
    ProviderError::new(ErrorClass::Refusal, excerpt(&message, 400))
}

/// No candidate: a refusal when `promptFeedback.blockReason` says the prompt was blocked,
/// else an empty reply.
fn no_candidate(value: &Value) -> ProviderError {
    let feedback = value.get("promptFeedback");
    match feedback
        .and_then(|f| f.get("blockReason"))
        .and_then(Value::as_str)
    {
        Some(reason) => {
            let ratings = flagged_ratings(feedback.and_then(|f| f.get("safetyRatings")));
            ProviderError::new(
                ErrorClass::Refusal,
                excerpt(
                    &format!("prompt blocked by the provider: blockReason {reason}{ratings}"),
                    400,
                ),
            )
        }
        None => ProviderError::new(ErrorClass::EmptyOutput, "empty reply (no candidates)"),
    }
}

/// ` (CATEGORY: PROBABILITY, …)` for the ratings above `NEGLIGIBLE`, or `""`.
fn flagged_ratings(ratings: Option<&Value>) -> String {
    let flagged: Vec<String> = ratings
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| {
            let category = r.get("category").and_then(Value::as_str)?;
            let probability = r.get("probability").and_then(Value::as_str)?;
            let low = ["NEGLIGIBLE", "HARM_PROBABILITY_UNSPECIFIED"];
            (!low.contains(&probability)).then(|| format!("{category}: {probability}"))
        })
        .collect();
    if flagged.is_empty() {
        String::new()
    } else {
        format!(" ({})", flagged.join(", "))
    }
}

#[cfg(test)]
#[path = "gemini_tests.rs"]
mod tests;
