//! OpenAI Chat Completions translation: `ChatRequest` → request body, response body →
//! `ChatReply` or a classified error. Pure; `http.rs` sends it. Works for every
//! OpenAI-compatible server (vLLM, llama.cpp, Ollama, OpenRouter, Together, Groq, …).

use serde_json::{Value, json};

use super::{
    ChatReply, ChatRequest, ErrorClass, ProviderError, Usage, decode_json, excerpt, malformed,
};
use crate::config::TokenLimitField;

/// The path appended to `base_url`.
pub const PATH: &str = "/chat/completions";

/// The JSON body for a request, the token cap in `token_field`.
pub fn build_request(req: &ChatRequest, token_field: TokenLimitField) -> Value {
    let mut body = json!({
        "model": req.model,
        "messages": req.messages,
        "temperature": req.temperature,
    });
    body[token_field.as_str()] = json!(req.max_tokens);
    body
}

/// Parses a 2xx response body.
pub fn parse_reply(body: &[u8]) -> Result<ChatReply, ProviderError> {
    parse_reply_value(&decode_json(body)?)
}

/// The token usage of a 2xx reply; unknown (not 0) unless both counts are there, so a cost is
/// never made up.
pub fn usage_of(value: &Value) -> Option<Usage> {
    let u = value.get("usage")?;
    Some(Usage {
        input_tokens: u.get("prompt_tokens")?.as_u64()?,
        output_tokens: u.get("completion_tokens")?.as_u64()?,
    })
}

/// The text of a content given as a list of parts (some compatible servers, e.g. Mistral's
/// reasoning models): the `text` of its `text` parts joined, other parts (`thinking`, images)
/// skipped. `None` when a part is not an object.
fn text_parts(parts: &[Value]) -> Option<String> {
    let mut text = String::new();
    for part in parts {
        let part = part.as_object()?;
        let typed_text = part.get("type").is_none_or(|t| t == "text");
        if let Some(t) = part
            .get("text")
            .and_then(Value::as_str)
            .filter(|_| typed_text)
        {
            text.push_str(t);
        }
    }
    Some(text)
}

/// Parses a 2xx response already decoded as JSON (e.g. from the cache).
pub fn parse_reply_value(value: &Value) -> Result<ChatReply, ProviderError> {
    let shape = |what: &str| malformed(value, what);
    // An error object in a 2xx without a reply (OpenRouter when generation fails after the
    // status was sent) whose `code` names a status a retry can get past (408, 429, 5xx) is
    // classified by it; any other is malformed (a key or quota error does not come this way).
    if value.get("choices").is_none()
        && let Some(code) = value
            .get("error")
            .and_then(|e| e.get("code"))
            .and_then(Value::as_u64)
            .and_then(|c| u16::try_from(c).ok())
            .filter(|c| *c == 408 || *c == 429 || (500..600).contains(c))
    {
        let mut e = classify_status(code, &value.to_string());
        e.message = format!(
            "error object with code {code} in a 2xx response: {}",
            crate::provider::excerpt(&value.to_string(), 300)
        );
        e.status = None;
        return Err(e);
    }
    let choice = value
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or_else(|| shape("no choices[0]"))?;
    let message = choice
        .get("message")
        .ok_or_else(|| shape("no choices[0].message"))?;
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_ascii_lowercase);
    let usage = usage_of(value);
    if let Some(refusal) = message
        .get("refusal")
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
    {
        return Err(ProviderError::new(
            ErrorClass::Refusal,
            format!("model refused: {}", excerpt(refusal, 300)),
        ));
    }
    if finish_reason.as_deref() == Some("content_filter") {
        return Err(ProviderError::new(
            ErrorClass::Refusal,
            "reply blocked by the provider's content filter",
        ));
    }
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(Value::Array(parts)) => text_parts(parts)
            .ok_or_else(|| shape("choices[0].message.content has a part that is not an object"))?,
        Some(_) => return Err(shape("choices[0].message.content is not a string")),
    };
    if text.trim().is_empty() {
        // A reasoning model can spend the whole cap on reasoning it does not show.
        let why = if finish_reason.as_deref() == Some("length") {
            "; the token cap ran out before any text (a reasoning model spends it on hidden reasoning first): raise max_tokens (judge_max_tokens for a judge) in a new run"
        } else {
            ""
        };
        return Err(ProviderError::empty(
            format!(
                "empty reply (finish_reason: {}){why}",
                finish_reason.as_deref().unwrap_or("none")
            ),
            &text,
        ));
    }
    Ok(ChatReply {
        text,
        finish_reason,
        usage,
    })
}

/// Classifies a non-2xx response.
pub fn classify_status(status: u16, body: &str) -> ProviderError {
    let lower = body.to_ascii_lowercase();
    let unsupported = unsupported_param(body);
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let gemini_error = parsed.as_ref().and_then(super::gemini::error_object);
    let gemini_verdict = super::gemini::quota_verdict(&lower, gemini_error);
    let class = match status {
        // OpenRouter: a prompt its moderation flagged; that item's failure, not the key's.
        403 if lower.contains("flagged") || lower.contains("moderation") => ErrorClass::ClientError,
        401 | 403 => ErrorClass::Auth,
        // Payment Required: OpenRouter and others when the credit has run out.
        402 => ErrorClass::QuotaExhausted,
        404 => ErrorClass::UnknownModel,
        429 if error_code(body).as_deref() == Some("rate_limit_exceeded") => {
            ErrorClass::RateLimited
        }
        // Gemini's OpenAI-compatible endpoint: its quota details decide (the same "exceeded
        // your current quota" for a per-minute limit as for a spent day).
        429 if gemini_verdict == Some(false) => ErrorClass::RateLimited,
        429 if gemini_verdict == Some(true) || is_quota_exhausted(&lower) => {
            ErrorClass::QuotaExhausted
        }
        429 => ErrorClass::RateLimited,
        408 => ErrorClass::Timeout,
        400 if unsupported.is_some() => ErrorClass::UnsupportedSetting,
        500..=599 => ErrorClass::ServerError,
        _ => ErrorClass::ClientError,
    };
    let mut message = format!("HTTP {status}: {}", excerpt(body, 300));
    if class == ErrorClass::UnsupportedSetting {
        message.push_str(match unsupported.as_deref() {
            Some("max_tokens") => {
                "; this model takes its token cap as `max_completion_tokens`: set `token_limit_field = \"max_completion_tokens\"` in its [providers] table (a table of its own, with the same base_url, when other models of that provider have answered in the run: a run's provider keeps its field)"
            }
            Some("temperature") => {
                "; this model takes only its default temperature, 1: as a judge set `judge_temperature = 1.0` under [run]; as a model set `temperature = 1.0` under [run], which every model then gets alike, in a new run (a run keeps its [run] settings)"
            }
            _ => {
                "; judge sends every model the same request fields, so this model cannot be used as it is (see the README on OpenAI reasoning models)"
            }
        });
    }
    let mut e = ProviderError::new(class, message);
    e.status = Some(status);
    if class == ErrorClass::RateLimited {
        e.retry_after = gemini_error.and_then(super::gemini::retry_delay_of);
    }
    e
}

/// The `error.code` of an OpenAI-style error body, when it is a string. A per-minute limit
/// says `rate_limit_exceeded` even when its message mentions billing (Groq's points to its
/// billing page for a higher tier).
fn error_code(body: &str) -> Option<String> {
    let value = serde_json::from_str::<Value>(body).ok()?;
    Some(value.get("error")?.get("code")?.as_str()?.to_owned())
}

/// The parameter OpenAI names in an `unsupported_parameter` or `unsupported_value` error:
/// a setting the model does not take (`max_tokens` for reasoning models, a temperature other
/// than their default), which no retry or other item can get past.
fn unsupported_param(body: &str) -> Option<String> {
    let error = serde_json::from_str::<Value>(body)
        .ok()?
        .get("error")?
        .clone();
    let code = error.get("code")?.as_str()?;
    matches!(code, "unsupported_parameter" | "unsupported_value")
        .then(|| error.get("param")?.as_str().map(str::to_string))
        .flatten()
}

/// A 429 that no amount of waiting fixes: the account is out of quota or credit, or a daily
/// cap is reached (OpenRouter's `free-models-per-day`).
fn is_quota_exhausted(lower_body: &str) -> bool {
    [
        "insufficient_quota",
        "exceeded your current quota",
        "quota_exceeded",
        "credit balance",
        "per-day",
        "per day",
    ]
    .iter()
    .any(|m| lower_body.contains(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Message;

    fn fixture(name: &str) -> Vec<u8> {
        crate::provider::fixture("openai", name)
    }

    #[test]
    fn request_body_has_every_generation_parameter() {
        let req = ChatRequest {
            model: "gpt-4o-mini".into(),
            messages: vec![Message::system("be brief"), Message::user("hi")],
            max_tokens: 64,
            temperature: 0.0,
        };
        let body = build_request(&req, TokenLimitField::MaxTokens);
        assert_eq!(
            body,
            json!({"model": "gpt-4o-mini", "max_tokens": 64, "temperature": 0.0,
                   "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]})
        );
        // OpenAI's reasoning models take the same cap under another name.
        let body = build_request(&req, TokenLimitField::MaxCompletionTokens);
        assert_eq!(body["max_completion_tokens"], 64);
        assert!(body.get("max_tokens").is_none(), "{body}");
    }

    /// OpenAI's 400 for a setting the model does not take ends the run (every request would
    /// fail alike), saying which setting to change; another 400 fails only its item.
    #[test]
    fn an_unsupported_setting_is_fatal_and_says_what_to_set() {
        let error = |code: &str, param: &str| {
            json!({"error": {"message": format!("Unsupported parameter: '{param}'"),
                             "type": "invalid_request_error", "param": param, "code": code}})
            .to_string()
        };
        let e = classify_status(400, &error("unsupported_parameter", "max_tokens"));
        assert_eq!(e.class, ErrorClass::UnsupportedSetting);
        assert!(e.class.is_fatal());
        assert!(
            e.message
                .contains("set `token_limit_field = \"max_completion_tokens\"`"),
            "{}",
            e.message
        );
        let e = classify_status(400, &error("unsupported_value", "temperature"));
        assert_eq!(e.class, ErrorClass::UnsupportedSetting);
        assert!(
            e.message.contains("set `temperature = 1.0` under [run]"),
            "{}",
            e.message
        );
        let e = classify_status(400, &error("unsupported_parameter", "logprobs"));
        assert_eq!(e.class, ErrorClass::UnsupportedSetting);
        for other in [
            error("context_length_exceeded", "messages"),
            json!({"error": {"message": "bad", "param": "max_tokens"}}).to_string(),
            "max_tokens unsupported_parameter".to_string(),
        ] {
            assert_eq!(
                classify_status(400, &other).class,
                ErrorClass::ClientError,
                "{other}"
            );
        }
    }

    #[test]
    fn parses_recorded_success() {
        let r = parse_reply(&fixture("success.json")).expect("valid reply");
        assert!(r.text.starts_with("```python"));
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: 52,
                output_tokens: 31
            })
        );
    }

    /// A reply without both token counts has unknown usage (so an unknown cost), never 0.
    #[test]
    fn missing_or_null_usage_is_unknown_not_zero() {
        for usage in [
            "null",
            "{}",
            r#"{"prompt_tokens": 12}"#,
            r#"{"prompt_tokens": 12, "completion_tokens": null}"#,
        ] {
            let body = format!(
                r#"{{"choices":[{{"message":{{"role":"assistant","content":"hi"}},"finish_reason":"stop"}}],"usage":{usage}}}"#
            );
            let r = parse_reply(body.as_bytes()).expect("valid reply");
            assert_eq!(r.usage, None, "{usage}");
        }
    }

    /// Content as a list of parts: the text parts joined, thinking parts left out.
    #[test]
    fn content_parts_are_joined_without_thinking() {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": [
            {"type": "thinking", "thinking": [{"type": "text", "text": "hmm"}]},
            {"type": "text", "text": "Use "},
            {"text": "a set."}
        ]}, "finish_reason": "stop"}]});
        let r = parse_reply_value(&body).expect("valid reply");
        assert_eq!(r.text, "Use a set.");
        let bad = json!({"choices": [{"message": {"content": ["loose"]}}]});
        assert!(parse_reply_value(&bad).is_err());
    }

    #[test]
    fn length_finish_is_kept() {
        let r = parse_reply(&fixture("length.json")).expect("valid reply");
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
    }

    /// A reasoning model that spent its whole cap on hidden reasoning returns no text with
    /// finish_reason `length`: the error says to raise the cap.
    #[test]
    fn an_empty_reply_cut_by_the_cap_says_to_raise_it() {
        let body = json!({"choices": [{"message": {"role": "assistant", "content": ""},
                                       "finish_reason": "length"}],
                          "usage": {"prompt_tokens": 50, "completion_tokens": 64,
                                    "completion_tokens_details": {"reasoning_tokens": 64}}});
        let e = parse_reply_value(&body).expect_err("no text");
        assert_eq!(e.class, ErrorClass::EmptyOutput);
        assert!(e.message.contains("raise max_tokens"), "{}", e.message);
        let stopped = json!({"choices": [{"message": {"content": ""}, "finish_reason": "stop"}]});
        let e = parse_reply_value(&stopped).expect_err("no text");
        assert!(!e.message.contains("raise"), "{}", e.message);
    }

    #[test]
    fn recorded_failures_are_classified() {
        let cases = [
            ("refusal.json", ErrorClass::Refusal),
            ("empty_content.json", ErrorClass::EmptyOutput),
            ("wrong_shape.json", ErrorClass::MalformedResponse),
            ("not_json.txt", ErrorClass::MalformedResponse),
        ];
        for (file, class) in cases {
            let e = parse_reply(&fixture(file)).expect_err(file);
            assert_eq!(e.class, class, "{file}: {}", e.message);
        }
    }

    #[test]
    fn statuses_are_classified() {
        let quota = String::from_utf8(fixture("error_429_quota.json")).expect("utf8");
        let rate = String::from_utf8(fixture("error_429_rate.json")).expect("utf8");
        // Groq's per-minute limit points to its billing page; OpenRouter's moderation refuses
        // one prompt with 403 and its exhausted credit is 402.
        let groq = r#"{"error":{"message":"Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Used 5000, Requested 1500. Please try again in 4.77s. Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing","type":"tokens","code":"rate_limit_exceeded"}}"#;
        let flagged = r#"{"error":{"code":403,"message":"meta-llama/llama-guard requires moderation on OpenInference. Your input was flagged for \"harassment\".","metadata":{"reasons":["harassment"]}}}"#;
        let no_credit = r#"{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits"}}"#;
        let cases = [
            (401, "", ErrorClass::Auth),
            (403, "", ErrorClass::Auth),
            (429, groq, ErrorClass::RateLimited),
            (403, flagged, ErrorClass::ClientError),
            (402, no_credit, ErrorClass::QuotaExhausted),
            (404, "model not found", ErrorClass::UnknownModel),
            (429, quota.as_str(), ErrorClass::QuotaExhausted),
            (429, rate.as_str(), ErrorClass::RateLimited),
            (500, "", ErrorClass::ServerError),
            (503, "", ErrorClass::ServerError),
            (400, "context length exceeded", ErrorClass::ClientError),
            (422, "", ErrorClass::ClientError),
        ];
        for (status, body, class) in cases {
            let e = classify_status(status, body);
            assert_eq!(e.class, class, "{status} {body}");
            assert_eq!(e.status, Some(status));
        }
        assert!(
            ErrorClass::RateLimited.is_retryable() && !ErrorClass::QuotaExhausted.is_retryable()
        );
        assert!(ErrorClass::QuotaExhausted.is_fatal() && !ErrorClass::ClientError.is_fatal());
    }

    /// Regressions: OpenRouter's daily cap was retried for minutes as a passing rate limit and
    /// each item recorded lost; a per-minute limit on Gemini's OpenAI-compatible endpoint
    /// ("exceeded your current quota", a list-wrapped body) stopped the run as out of quota.
    #[test]
    fn daily_caps_are_exhausted_and_gemini_per_minute_quotas_are_rate_limits() {
        let daily = r#"{"error":{"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","code":429,"metadata":{"headers":{}}}}"#;
        assert_eq!(
            classify_status(429, daily).class,
            ErrorClass::QuotaExhausted
        );
        let gemini = |quota: &str| {
            format!(
                r#"[{{"error":{{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{{"quotaId":"{quota}"}}]}},{{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"1s"}}]}}}}]"#
            )
        };
        let per_minute = classify_status(
            429,
            &gemini("GenerateRequestsPerMinutePerProjectPerModel-FreeTier"),
        );
        assert_eq!(per_minute.class, ErrorClass::RateLimited);
        assert_eq!(
            per_minute.retry_after,
            Some(std::time::Duration::from_secs(1))
        );
        assert_eq!(
            classify_status(
                429,
                &gemini("GenerateRequestsPerDayPerProjectPerModel-FreeTier")
            )
            .class,
            ErrorClass::QuotaExhausted
        );
    }
}
