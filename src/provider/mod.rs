//! Providers behind one interface: the common request and reply types, the error taxonomy
//! recorded in outputs, and the dispatch to each provider's pure translation (`openai`,
//! `anthropic`, `gemini`, `files`) and the HTTP layer (`http`).

pub mod anthropic;
pub mod encoded_key;
pub mod files;
pub mod gemini;
pub mod http;
pub mod openai;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::ProviderKind;

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message {
            role: "system".into(),
            content: content.into(),
        }
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message {
            role: "user".into(),
            content: content.into(),
        }
    }
}

/// The system messages of a conversation joined with a blank line (`None` when there are
/// none), and the other messages in order: for APIs that take the system prompt apart.
pub fn split_system(messages: &[Message]) -> (Option<String>, Vec<&Message>) {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == "system")
        .map(|m| m.content.as_str())
        .collect();
    let rest = messages.iter().filter(|m| m.role != "system").collect();
    ((!system.is_empty()).then(|| system.join("\n\n")), rest)
}

/// A provider-neutral chat request. Everything that can change the reply is in here.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChatRequest {
    /// The provider's model name.
    pub model: String,
    pub messages: Vec<Message>,
    pub max_tokens: u32,
    pub temperature: f64,
}

/// Token usage of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// A successful reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatReply {
    pub text: String,
    /// `stop`, `length`, … as the provider reports it (normalised to lowercase).
    pub finish_reason: Option<String>,
    pub usage: Option<Usage>,
}

/// What kind of failure an item had; recorded in `error.class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// The request timed out (connect or whole-request timeout).
    Timeout,
    /// Connection refused, reset, or the body was cut off.
    Network,
    /// 429 that is not an exhausted quota.
    RateLimited,
    /// 5xx (or 529 overloaded).
    ServerError,
    /// A 4xx other than auth, quota, rate limit or unknown model.
    ClientError,
    /// The body is not JSON, or not of the expected shape.
    MalformedResponse,
    /// The reply has no text.
    EmptyOutput,
    /// The model refused or the provider blocked the reply.
    Refusal,
    /// `files` provider: the answer set has no answer for this task.
    MissingAnswer,
    /// 401/403: the key is missing, wrong or lacks permission (aborts the run).
    Auth,
    /// 429 meaning the account's quota or credit is exhausted (aborts the run).
    QuotaExhausted,
    /// 404: the model does not exist at this provider (aborts the run).
    UnknownModel,
    /// 400: the model does not take a setting judge sends, e.g. `max_tokens` or a
    /// temperature other than its default (aborts the run: every request would fail alike).
    UnsupportedSetting,
    /// A judge reply without a valid final verdict line, also on the retry.
    UnparsableVerdict,
    /// No connection could be made to the provider (refused, no route, DNS) on any attempt:
    /// retried, then stops the run (the server is down or `base_url` is wrong: every item
    /// would fail alike, and a model must not lose its comparisons to an outage).
    Unreachable,
}

impl ErrorClass {
    /// Worth another try after a pause.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorClass::Timeout
                | ErrorClass::Network
                | ErrorClass::RateLimited
                | ErrorClass::ServerError
                | ErrorClass::Unreachable
        )
    }

    /// Affects every item of the run: stop the run instead of recording item failures.
    pub fn is_fatal(self) -> bool {
        matches!(
            self,
            ErrorClass::Auth
                | ErrorClass::QuotaExhausted
                | ErrorClass::UnknownModel
                | ErrorClass::UnsupportedSetting
                | ErrorClass::Unreachable
        )
    }
}

/// A failed call, after retries.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct ProviderError {
    pub class: ErrorClass,
    /// One line; never contains the API key.
    pub message: String,
    /// HTTP status, when there was a response.
    pub status: Option<u16>,
    /// Server-requested wait (from `Retry-After`).
    pub retry_after: Option<std::time::Duration>,
    /// Tokens the failed call was billed for, when a 2xx reply said (an empty reply cut by
    /// the token cap, a refusal): a failure can cost money too.
    pub usage: Option<Usage>,
    /// The reply's text when it came back but holds nothing (whitespace only: an empty
    /// reply), kept for a judge's record of it.
    pub text: Option<String>,
}

impl ProviderError {
    /// A new error without HTTP details.
    pub fn new(class: ErrorClass, message: impl Into<String>) -> Self {
        ProviderError {
            class,
            message: message.into(),
            status: None,
            retry_after: None,
            usage: None,
            text: None,
        }
    }

    /// An empty reply: `text` is what came back (nothing, or only whitespace).
    pub fn empty(message: impl Into<String>, text: &str) -> Self {
        ProviderError {
            text: Some(text.to_string()),
            ..ProviderError::new(ErrorClass::EmptyOutput, message)
        }
    }
}

/// Decodes a 2xx body as JSON; a body that is not JSON is a malformed response.
pub fn decode_json(body: &[u8]) -> Result<Value, ProviderError> {
    serde_json::from_slice(body).map_err(|e| {
        ProviderError::new(
            ErrorClass::MalformedResponse,
            format!(
                "response is not JSON ({e}): {}",
                excerpt(&String::from_utf8_lossy(body), 200)
            ),
        )
    })
}

/// The error for a 2xx body that is JSON but not of the expected shape.
pub fn malformed(value: &Value, what: &str) -> ProviderError {
    ProviderError::new(
        ErrorClass::MalformedResponse,
        format!(
            "unexpected response shape: {what}: {}",
            excerpt(&value.to_string(), 200)
        ),
    )
}

/// A recorded response body from `tests/fixtures/providers/<provider>/<name>`.
#[cfg(test)]
pub(crate) fn fixture(provider: &str, name: &str) -> Vec<u8> {
    let path = format!(
        "{}/tests/fixtures/providers/{provider}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read(&path).unwrap_or_else(|e| panic!("fixture {path}: {e}"))
}

/// Shortens a response body for an error message: first `max` chars, one line.
pub fn excerpt(body: &str, max: usize) -> String {
    let flat: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        flat
    } else {
        let cut: String = flat.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// A request in a provider's wire format: the path under `base_url` and the JSON body.
#[derive(Debug, Clone, PartialEq)]
pub struct WireRequest {
    pub path: String,
    pub body: Value,
    /// Rough size for `tokens_per_minute`: message characters / 4 + the token cap.
    pub estimated_tokens: u64,
}

/// Translates a request for an HTTP provider.
pub fn to_wire(provider: &crate::config::ProviderConfig, req: &ChatRequest) -> WireRequest {
    let (path, body) = match provider.kind {
        ProviderKind::Openai => (
            openai::PATH.into(),
            openai::build_request(req, provider.token_limit_field),
        ),
        ProviderKind::Anthropic => (anthropic::PATH.into(), anthropic::build_request(req)),
        ProviderKind::Gemini => (gemini::path(&req.model), gemini::build_request(req)),
        ProviderKind::Files => unreachable!("files providers make no HTTP calls"),
    };
    let chars: usize = req.messages.iter().map(|m| m.content.chars().count()).sum();
    WireRequest {
        path,
        body,
        estimated_tokens: chars.div_ceil(4) as u64 + u64::from(req.max_tokens),
    }
}

/// Parses a 2xx body already decoded as JSON.
pub fn parse_reply_value(kind: ProviderKind, value: &Value) -> Result<ChatReply, ProviderError> {
    let (parsed, usage) = match kind {
        ProviderKind::Openai => (openai::parse_reply_value(value), openai::usage_of(value)),
        ProviderKind::Anthropic => (
            anthropic::parse_reply_value(value),
            anthropic::usage_of(value),
        ),
        ProviderKind::Gemini => (gemini::parse_reply_value(value), gemini::usage_of(value)),
        ProviderKind::Files => unreachable!("files providers make no HTTP calls"),
    };
    parsed.map_err(|e| ProviderError { usage, ..e })
}

/// Parses a raw 2xx body.
pub fn parse_reply(kind: ProviderKind, body: &[u8]) -> Result<ChatReply, ProviderError> {
    match kind {
        ProviderKind::Openai => openai::parse_reply(body),
        ProviderKind::Anthropic => anthropic::parse_reply(body),
        ProviderKind::Gemini => gemini::parse_reply(body),
        ProviderKind::Files => unreachable!("files providers make no HTTP calls"),
    }
}

/// Classifies a non-2xx response.
pub fn classify_status(kind: ProviderKind, status: u16, body: &str) -> ProviderError {
    match kind {
        ProviderKind::Openai => openai::classify_status(status, body),
        ProviderKind::Anthropic => anthropic::classify_status(status, body),
        ProviderKind::Gemini => gemini::classify_status(status, body),
        ProviderKind::Files => unreachable!("files providers make no HTTP calls"),
    }
}
