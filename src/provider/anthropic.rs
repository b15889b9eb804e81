//! Anthropic Messages API translation: `ChatRequest` → request body, response body →
//! `ChatReply` or a classified error. Pure; `http.rs` sends it (key in [`API_KEY_HEADER`],
//! [`API_VERSION`] in [`VERSION_HEADER`]) and must not need to know the body's shape.

use serde_json::{Value, json};

use super::{
    ChatReply, ChatRequest, ErrorClass, ProviderError, Usage, decode_json, excerpt, malformed,
    split_system,
};

/// The path appended to `base_url`.
pub const PATH: &str = "/messages";

/// The `base_url` used when the config gives none.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";

/// The header that carries the API key (no `Bearer` prefix).
pub const API_KEY_HEADER: &str = "x-api-key";

/// The header that carries [`API_VERSION`]; every request needs it.
pub const VERSION_HEADER: &str = "anthropic-version";

/// The API version sent in [`VERSION_HEADER`].
pub const API_VERSION: &str = "2023-06-01";

/// The JSON body for a request. System messages go to the top-level `system` string (joined
/// with a blank line; the field is omitted when there are none); the others stay in `messages`
/// in order. `max_tokens` is required by the API.
pub fn build_request(req: &ChatRequest) -> Value {
    let (system, rest) = split_system(&req.messages);
    let messages: Vec<Value> = rest
        .iter()
        .map(|m| json!({"role": m.role, "content": m.content}))
        .collect();
    let mut body = json!({
        "model": req.model,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "messages": messages,
    });
    if let Some(system) = system {
        body["system"] = Value::String(system);
    }
    body
}

/// Parses a 2xx response body.
pub fn parse_reply(body: &[u8]) -> Result<ChatReply, ProviderError> {
    parse_reply_value(&decode_json(body)?)
}

/// Parses a 2xx response already decoded as JSON (e.g. from the cache). The text is every
/// `text` block joined (thinking and tool blocks are skipped); `stop_reason` is normalised
/// (`end_turn`/`stop_sequence` → `stop`, `max_tokens` → `length`, the text kept); a refusal,
/// an error object or an empty text is an error.
pub fn parse_reply_value(value: &Value) -> Result<ChatReply, ProviderError> {
    if value.get("type").and_then(Value::as_str) == Some("error") {
        return Err(error_in_body(value));
    }
    let content = value
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(value, "no content array"))?;
    let text = collect_text(content).map_err(|what| malformed(value, what))?;
    let usage = usage_of(value);
    let stop_reason = value.get("stop_reason").and_then(Value::as_str);
    if stop_reason == Some("refusal") {
        return Err(refusal(value, &text));
    }
    let finish_reason = stop_reason.map(normalise_stop_reason);
    if text.trim().is_empty() {
        return Err(ProviderError::empty(
            format!(
                "empty reply (stop_reason: {})",
                stop_reason.unwrap_or("none")
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

/// The token usage of a 2xx reply; unknown (not 0) unless both counts are there, so a cost is
/// never made up.
pub fn usage_of(value: &Value) -> Option<Usage> {
    let u = value.get("usage")?;
    Some(Usage {
        input_tokens: u.get("input_tokens")?.as_u64()?,
        output_tokens: u.get("output_tokens")?.as_u64()?,
    })
}

/// Classifies a non-2xx response: 401/403 auth, 404 unknown model, 402 and out-of-credit or
/// spend-limit bodies (on 400 or 429) quota, other 429 rate limit, 408 timeout, 5xx and 529
/// (overloaded) server error, other 4xx client error.
pub fn classify_status(status: u16, body: &str) -> ProviderError {
    let class = class_for(status, &body.to_ascii_lowercase());
    let mut e = ProviderError::new(class, format!("HTTP {status}: {}", excerpt(body, 300)));
    e.status = Some(status);
    e
}

fn class_for(status: u16, lower_body: &str) -> ErrorClass {
    match status {
        401 | 403 => ErrorClass::Auth,
        404 => ErrorClass::UnknownModel,
        // billing_error: the account's payment details; waiting does not fix it.
        402 => ErrorClass::QuotaExhausted,
        400 | 429 if is_quota_exhausted(lower_body) => ErrorClass::QuotaExhausted,
        429 => ErrorClass::RateLimited,
        408 => ErrorClass::Timeout,
        500..=599 => ErrorClass::ServerError,
        _ => ErrorClass::ClientError,
    }
}

/// A 400 or 429 that no amount of waiting fixes: no credit left, or a spend limit reached
/// (Anthropic sends "credit balance is too low" and "reached your specified API usage limits"
/// as 400 `invalid_request_error`, the monthly tier cap as 429 `enforced_spend_limit_reached`).
fn is_quota_exhausted(lower_body: &str) -> bool {
    [
        "credit balance",
        "billing",
        "api usage limits",
        "enforced_spend_limit_reached",
        "spend limit",
    ]
    .iter()
    .any(|m| lower_body.contains(m))
}

/// The status Anthropic documents for an `error.type`, to classify an error object that came
/// in a 2xx body the same way as the HTTP error it stands for.
fn status_for_error_type(error_type: &str) -> Option<u16> {
    Some(match error_type {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "api_error" => 500,
        "timeout_error" => 504,
        "overloaded_error" => 529,
        _ => return None,
    })
}

/// A `{"type": "error", ...}` object in a 2xx body: classified like the status its
/// `error.type` stands for, or malformed when the type is unknown.
fn error_in_body(value: &Value) -> ProviderError {
    let error = value.get("error");
    let field = |k: &str| error.and_then(|e| e.get(k)).and_then(Value::as_str);
    let error_type = field("type").unwrap_or("unknown");
    let class = status_for_error_type(error_type).map_or(ErrorClass::MalformedResponse, |s| {
        class_for(s, &value.to_string().to_ascii_lowercase())
    });
    ProviderError::new(
        class,
        format!(
            "error object in a 2xx response: {error_type}: {}",
            excerpt(field("message").unwrap_or(""), 300)
        ),
    )
}

/// Joins the `text` of every `text` block.
fn collect_text(content: &[Value]) -> Result<String, &'static str> {
    let mut text = String::new();
    for block in content {
        if block.get("type").and_then(Value::as_str) != Some("text") {
            continue;
        }
        match block.get("text") {
            Some(Value::String(s)) => text.push_str(s),
            _ => return Err("a text block without a string text"),
        }
    }
    Ok(text)
}

/// `stop_reason` in the shared vocabulary: `stop`, `length`, or the value lowercased.
fn normalise_stop_reason(reason: &str) -> String {
    match reason {
        "end_turn" | "stop_sequence" => "stop".into(),
        // Both cut the reply off at a token limit; the text is kept.
        "max_tokens" | "model_context_window_exceeded" => "length".into(),
        other => other.to_ascii_lowercase(),
    }
}

/// `stop_reason: refusal`, with the category and explanation of `stop_details` when given,
/// else the start of any text produced before the refusal.
fn refusal(value: &Value, text: &str) -> ProviderError {
    let details = value.get("stop_details");
    let field = |k: &str| details.and_then(|d| d.get(k)).and_then(Value::as_str);
    let category = field("category").map_or(String::new(), |c| format!(", category {c}"));
    let why = field("explanation")
        .map(str::to_owned)
        .or_else(|| (!text.trim().is_empty()).then(|| excerpt(text, 200)))
        .unwrap_or_else(|| "no explanation given".into());
    ProviderError::new(
        ErrorClass::Refusal,
        format!(
            "model refused (stop_reason refusal{category}): {}",
            excerpt(&why, 300)
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Message;
    use ErrorClass::*;

    const CODE: &str = "```python\ndef add(a, b):\n    return a + b\n```";
    const CUT: &str = "```python\ndef add(a, b):\n    ret";
    const VERDICT: &str = "Answer A handles the empty list; answer B does not.\nVERDICT: A";

    fn fixture(name: &str) -> Vec<u8> {
        crate::provider::fixture("anthropic", name)
    }

    fn request(messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            model: "claude-haiku-4-5".into(),
            messages,
            max_tokens: 64,
            temperature: 0.0,
        }
    }

    #[test]
    fn request_body_moves_system_messages_to_the_top_level() {
        let assistant = Message {
            role: "assistant".into(),
            content: "hello".into(),
        };
        let req = request(vec![
            Message::system("be brief"),
            Message::user("hi"),
            Message::system("answer in English"),
            assistant,
            Message::user("add 2 and 2"),
        ]);
        assert_eq!(
            build_request(&req),
            json!({"model": "claude-haiku-4-5", "max_tokens": 64, "temperature": 0.0,
                   "system": "be brief\n\nanswer in English",
                   "messages": [{"role": "user", "content": "hi"},
                                {"role": "assistant", "content": "hello"},
                                {"role": "user", "content": "add 2 and 2"}]})
        );
    }

    #[test]
    fn request_body_omits_system_when_there_is_none() {
        let mut req = request(vec![Message::user("hi")]);
        req.temperature = 0.7;
        req.max_tokens = 1024;
        assert_eq!(
            build_request(&req),
            json!({"model": "claude-haiku-4-5", "max_tokens": 1024, "temperature": 0.7,
                   "messages": [{"role": "user", "content": "hi"}]})
        );
    }

    #[test]
    fn recorded_replies_are_parsed() {
        let cases = [
            ("success.json", CODE, "stop", (58, 27)),
            ("multi_block.json", VERDICT, "stop", (412, 96)),
            ("length.json", CUT, "length", (58, 8)),
        ];
        for (file, text, finish, (input_tokens, output_tokens)) in cases {
            let r = parse_reply(&fixture(file)).expect(file);
            assert_eq!(r.text, text, "{file}");
            assert_eq!(r.finish_reason.as_deref(), Some(finish), "{file}");
            let usage = Usage {
                input_tokens,
                output_tokens,
            };
            assert_eq!(r.usage, Some(usage), "{file}");
        }
    }

    #[test]
    fn recorded_failures_are_classified() {
        let cases = [
            (
                "refusal.json",
                Refusal,
                "model refused (stop_reason refusal, category cyber): This",
            ),
            (
                "empty_content.json",
                EmptyOutput,
                "empty reply (stop_reason: end_turn)",
            ),
            (
                "wrong_shape.json",
                MalformedResponse,
                "unexpected response shape: no content",
            ),
            ("not_json.txt", MalformedResponse, "response is not JSON"),
            (
                "error_in_200.json",
                ServerError,
                "error object in a 2xx response: overloaded",
            ),
        ];
        for (file, class, start) in cases {
            let e = parse_reply(&fixture(file)).expect_err(file);
            assert_eq!(e.class, class, "{file}: {}", e.message);
            assert!(e.message.starts_with(start), "{file}: {}", e.message);
            assert!(!e.message.contains('\n'), "{file}: one line");
        }
    }

    #[test]
    fn stop_reasons_are_normalised() {
        let cases = [
            ("end_turn", "stop"),
            ("stop_sequence", "stop"),
            ("max_tokens", "length"),
            ("model_context_window_exceeded", "length"),
            ("tool_use", "tool_use"),
            ("pause_turn", "pause_turn"),
            ("SOMETHING_NEW", "something_new"),
        ];
        for (stop_reason, finish) in cases {
            let body = json!({"content": [{"type": "text", "text": "ok"}],
                              "stop_reason": stop_reason});
            let r = parse_reply_value(&body).expect(stop_reason);
            assert_eq!(r.finish_reason.as_deref(), Some(finish));
            assert_eq!(r.usage, None);
        }
    }

    #[test]
    fn odd_bodies_are_classified() {
        let error = |t: &str, m: &str| json!({"type": "error", "error": {"type": t, "message": m}});
        let cases = [
            (
                json!({"content": [{"type": "text", "text": "I can't."}], "stop_reason": "refusal"}),
                Refusal,
                "I can't.",
            ),
            (
                json!({"content": [{"type": "text", "text": 3}]}),
                MalformedResponse,
                "text block",
            ),
            (
                json!({"content": "hi"}),
                MalformedResponse,
                "no content array",
            ),
            (json!([1, 2]), MalformedResponse, "no content array"),
            (
                json!({"content": [{"type": "text", "text": " \n"}], "stop_reason": "max_tokens"}),
                EmptyOutput,
                "max_tokens",
            ),
            (
                error("authentication_error", "invalid x-api-key"),
                Auth,
                "x-api-key",
            ),
            (
                error("rate_limit_error", "slow down"),
                RateLimited,
                "slow down",
            ),
            (
                error("invalid_request_error", "credit balance is too low"),
                QuotaExhausted,
                "credit",
            ),
            (
                error("brand_new_error", "?"),
                MalformedResponse,
                "brand_new_error",
            ),
            (json!({"type": "error"}), MalformedResponse, "unknown"),
        ];
        for (body, class, needle) in cases {
            let e = parse_reply_value(&body).expect_err("an error");
            assert_eq!(e.class, class, "{body}: {}", e.message);
            assert!(e.message.contains(needle), "{body}: {}", e.message);
            assert_eq!(e.status, None);
        }
    }

    #[test]
    fn statuses_are_classified() {
        let cases = [
            (400, "error_400_invalid.json", ClientError),
            (400, "error_400_credit.json", QuotaExhausted),
            (400, "error_400_spend_limit.json", QuotaExhausted),
            (401, "error_401.json", Auth),
            (402, "error_402_billing.json", QuotaExhausted),
            (403, "error_403.json", Auth),
            (404, "error_404.json", UnknownModel),
            (413, "error_413.json", ClientError),
            (429, "error_429_rate.json", RateLimited),
            (429, "error_429_spend_limit.json", QuotaExhausted),
            (500, "error_500.json", ServerError),
            (502, "not_json.txt", ServerError),
            (529, "error_529.json", ServerError),
            (408, "", Timeout),
            (422, "", ClientError),
            (503, "", ServerError),
        ];
        for (status, file, class) in cases {
            let body = if file.is_empty() {
                String::new()
            } else {
                String::from_utf8(fixture(file)).expect("fixtures are utf-8")
            };
            let e = classify_status(status, &body);
            assert_eq!(e.class, class, "{status} {file}");
            assert_eq!(e.status, Some(status));
            let prefix = format!("HTTP {status}: ");
            assert!(e.message.starts_with(&prefix), "{}", e.message);
            assert!(!e.message.contains('\n'), "one line: {}", e.message);
        }
        assert!(ServerError.is_retryable(), "529 overloaded is retried");
    }
}
