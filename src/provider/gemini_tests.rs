use super::*;
use crate::provider::Message;
use ErrorClass::*;

const CODE: &str = "```python\ndef add(a, b):\n    return a + b\n```";
const CUT: &str = "```python\ndef add(a, b):\n    ret";
const VERDICT: &str = "Answer A handles the empty list; answer B does not.\nVERDICT: A";

fn fixture(name: &str) -> Vec<u8> {
    crate::provider::fixture("gemini", name)
}

fn fixture_text(name: &str) -> String {
    String::from_utf8(fixture(name)).expect("fixtures are utf-8")
}

fn request(messages: Vec<Message>) -> ChatRequest {
    ChatRequest {
        model: "gemini-2.0-flash".into(),
        messages,
        max_tokens: 64,
        temperature: 0.0,
    }
}

#[test]
fn path_names_the_model() {
    let expected = "/models/gemini-2.5-pro:generateContent";
    assert_eq!(path("gemini-2.5-pro"), expected);
    assert_eq!(path("models/gemini-2.5-pro"), expected);
}

#[test]
fn request_body_has_system_instruction_roles_and_generation_config() {
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
        json!({"systemInstruction": {"parts": [{"text": "be brief\n\nanswer in English"}]},
                   "contents": [{"role": "user", "parts": [{"text": "hi"}]},
                                {"role": "model", "parts": [{"text": "hello"}]},
                                {"role": "user", "parts": [{"text": "add 2 and 2"}]}],
                   "generationConfig": {"maxOutputTokens": 64, "temperature": 0.0}})
    );
}

#[test]
fn request_body_omits_system_instruction_when_there_is_none() {
    let mut req = request(vec![Message::user("hi")]);
    req.temperature = 0.7;
    req.max_tokens = 1024;
    let body = build_request(&req);
    assert_eq!(
        body,
        json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}],
                   "generationConfig": {"maxOutputTokens": 1024, "temperature": 0.7}})
    );
    assert!(body.get("model").is_none(), "the model is in the path");
}

#[test]
fn recorded_replies_are_parsed() {
    let cases = [
        ("success.json", CODE, "stop", (49, 22)),
        ("thinking.json", VERDICT, "stop", (402, 19 + 140)),
        ("length.json", CUT, "length", (49, 8)),
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
            "recitation.json",
            Refusal,
            "blocked by the provider: finishReason RECITATION",
        ),
        (
            "no_candidates.json",
            EmptyOutput,
            "empty reply (no candidates)",
        ),
        (
            "empty_content.json",
            EmptyOutput,
            "empty reply (finishReason: STOP)",
        ),
        (
            "wrong_shape.json",
            MalformedResponse,
            "unexpected response shape: no candidates",
        ),
        ("not_json.txt", MalformedResponse, "response is not JSON"),
    ];
    for (file, class, start) in cases {
        let e = parse_reply(&fixture(file)).expect_err(file);
        assert_eq!(e.class, class, "{file}: {}", e.message);
        assert!(e.message.starts_with(start), "{file}: {}", e.message);
        assert!(!e.message.contains('\n'), "{file}: one line");
    }
}

#[test]
fn blocks_name_the_reason_and_the_flagged_ratings() {
    let cases = [
        (
            "safety.json",
            "blocked by the provider: finishReason SAFETY \
                 (HARM_CATEGORY_HARASSMENT: LOW, HARM_CATEGORY_DANGEROUS_CONTENT: HIGH)",
        ),
        (
            "prompt_blocked.json",
            "prompt blocked by the provider: blockReason SAFETY \
                 (HARM_CATEGORY_HARASSMENT: MEDIUM)",
        ),
    ];
    for (file, message) in cases {
        let e = parse_reply(&fixture(file)).expect_err(file);
        assert_eq!((e.class, e.message.as_str()), (Refusal, message));
    }
}

#[test]
fn finish_reasons_are_normalised() {
    let cases = [
        ("STOP", "stop"),
        ("MAX_TOKENS", "length"),
        ("OTHER", "other"),
        ("LANGUAGE", "language"),
        ("FINISH_REASON_UNSPECIFIED", "finish_reason_unspecified"),
    ];
    for (reason, finish) in cases {
        let body = json!({"candidates": [{"content": {"parts": [{"text": "ok"}]},
                                              "finishReason": reason}]});
        let r = parse_reply_value(&body).expect(reason);
        assert_eq!(r.finish_reason.as_deref(), Some(finish));
        assert_eq!(r.usage, None);
    }
}

#[test]
fn odd_bodies_are_classified() {
    let one = |candidate: Value| json!({"candidates": [candidate]});
    let parts = |parts: Value| one(json!({"content": {"parts": parts}}));
    let cases = [
        (
            one(json!({"finishReason": "OTHER"})),
            Refusal,
            "finishReason OTHER",
        ),
        (
            one(json!({"finishReason": "SPII", "finishMessage": "personal data"})),
            Refusal,
            "finishReason SPII: personal data",
        ),
        (
            one(json!({"content": {"parts": [{"text": "partial"}]},
                           "finishReason": "PROHIBITED_CONTENT"})),
            Refusal,
            "PROHIBITED_CONTENT",
        ),
        (
            json!({"candidates": [], "promptFeedback": {"blockReason": "BLOCKLIST"}}),
            Refusal,
            "blockReason BLOCKLIST",
        ),
        (json!({"candidates": []}), EmptyOutput, "no candidates"),
        (
            parts(json!([{"text": "hmm", "thought": true}])),
            EmptyOutput,
            "empty reply",
        ),
        (
            json!({"candidates": {"text": "hi"}}),
            MalformedResponse,
            "not an array",
        ),
        (
            parts(json!("hi")),
            MalformedResponse,
            "parts is not an array",
        ),
        (
            parts(json!([{"text": 1}])),
            MalformedResponse,
            "not a string",
        ),
        (
            json!("hello"),
            MalformedResponse,
            "no candidates, promptFeedback",
        ),
        (
            json!({"error": {"code": 503, "message": "The model is overloaded."}}),
            ServerError,
            "overloaded",
        ),
        (
            json!({"error": {"code": 400, "message": "API key not valid."}}),
            Auth,
            "API key",
        ),
        (
            json!({"error": {"message": "?"}}),
            MalformedResponse,
            "error object",
        ),
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
        (400, "error_400_api_key.json", Auth),
        (401, "error_401.json", Auth),
        (403, "error_403.json", Auth),
        (404, "error_404.json", UnknownModel),
        (429, "error_429_rate.json", RateLimited),
        (429, "error_429_resource_exhausted.json", RateLimited),
        (429, "error_429_quota_daily.json", QuotaExhausted),
        (429, "error_429_quota_zero.json", QuotaExhausted),
        (429, "error_429_quota_text.json", QuotaExhausted),
        (500, "error_500.json", ServerError),
        (502, "not_json.txt", ServerError),
        (503, "error_503.json", ServerError),
        (408, "", Timeout),
        (413, "", ClientError),
        (429, "", RateLimited),
    ];
    for (status, file, class) in cases {
        let body = if file.is_empty() {
            String::new()
        } else {
            fixture_text(file)
        };
        let e = classify_status(status, &body);
        assert_eq!(e.class, class, "{status} {file}");
        assert_eq!(e.status, Some(status));
        let prefix = format!("HTTP {status}: ");
        assert!(e.message.starts_with(&prefix), "{}", e.message);
        assert!(!e.message.contains('\n'), "one line: {}", e.message);
    }
}

#[test]
fn rate_limit_carries_the_retry_delay() {
    let fractional = r#"{"error": {"code": 429, "details": [{
            "@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}}"#;
    let cases = [
        (
            fixture_text("error_429_rate.json"),
            Some(Duration::from_secs(41)),
        ),
        (fractional.to_owned(), Some(Duration::from_millis(1500))),
        (fixture_text("error_429_resource_exhausted.json"), None),
        (fixture_text("error_429_quota_daily.json"), None),
    ];
    for (body, delay) in cases {
        assert_eq!(classify_status(429, &body).retry_after, delay, "{body}");
    }
}

/// Metadata without the prompt's count does not say what was billed: unknown, not free. A
/// missing output count is a zero left out.
#[test]
fn usage_without_a_prompt_count_is_unknown() {
    let reply = |meta: Value| {
        json!({"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}],
               "usageMetadata": meta})
    };
    for meta in [
        json!({}),
        json!({"totalTokenCount": 150}),
        json!({"promptTokenCount": null}),
    ] {
        let r = parse_reply_value(&reply(meta.clone())).expect("valid reply");
        assert_eq!(r.usage, None, "{meta}");
    }
    let r = parse_reply_value(&reply(json!({"promptTokenCount": 9}))).expect("valid reply");
    assert_eq!(
        r.usage,
        Some(Usage {
            input_tokens: 9,
            output_tokens: 0
        })
    );
}
