//! The HTTP layer shared by every HTTP provider: one reqwest client per provider, the API key
//! (held redacted), timeouts, a requests-per-minute limiter with a provider-wide pause on 429,
//! and retries with exponential backoff, jitter and `Retry-After`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use super::{ErrorClass, ProviderError, WireRequest, anthropic, classify_status, gemini};
use crate::config::{ProviderConfig, ProviderKind};

/// An API key. Its `Debug` output is redacted; it is never serialised.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(value: String) -> Self {
        Secret(value)
    }
    /// The key itself, for the request header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Exponential backoff delays with jitter in [d/2, d] ("equal jitter"), capped; an iterator so it can be
/// tested without sleeping. Jitter comes from a small xorshift seeded by the caller.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
    cap: Duration,
    state: u64,
}

impl Backoff {
    /// Starts at `base`, doubles each step up to `cap`.
    pub fn new(base: Duration, cap: Duration, seed: u64) -> Self {
        Backoff {
            next: base,
            cap,
            state: seed | 1,
        }
    }
}

impl Iterator for Backoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        let unit = (self.state >> 11) as f64 / (1u64 << 53) as f64;
        let full = self.next.min(self.cap);
        self.next = self.next.saturating_mul(2).min(self.cap);
        Some(full.mul_f64(0.5 + 0.5 * unit))
    }
}

/// Parses `Retry-After`: delay-seconds or an HTTP-date (relative to `now`).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    // Some gateways send fractions (`1.5`), which RFC 9110 does not allow but means plainly.
    if value.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return value
            .parse::<f64>()
            .ok()
            .and_then(|secs| Duration::try_from_secs_f64(secs).ok());
    }
    let at = crate::time::parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// How long to wait before a retry: the server's `Retry-After` (capped at
/// [`MAX_RETRY_AFTER`]), else the next backoff delay. A wait of zero (`Retry-After: 0`, a date
/// already past on a skewed clock, Gemini's `0s`) is no wait: the backoff's is taken, or every
/// retry would go out at once.
fn retry_wait(retry_after: Option<Duration>, backoff: &mut Backoff) -> Duration {
    retry_after
        .filter(|d| !d.is_zero())
        .map(|d| d.min(MAX_RETRY_AFTER))
        .unwrap_or_else(|| backoff.next().expect("backoff never ends"))
}

/// Waits `wait`, in slices, unless `stopping()` turns true or `deadline` passes first; true
/// when the wait ran out with neither (Ctrl-C or a deadline ends a long `Retry-After` or rate
/// limiter wait at once, and nothing is sent after it).
async fn wait_unless_stopped(
    wait: Duration,
    stopping: &(dyn Fn() -> bool + Sync),
    deadline: Option<Instant>,
) -> bool {
    const SLICE: Duration = Duration::from_millis(50);
    let until = Instant::now() + wait;
    let stopped = || stopping() || deadline.is_some_and(|d| Instant::now() >= d);
    loop {
        if stopped() {
            return false;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        tokio::time::sleep(left.min(SLICE)).await;
    }
}

/// Retries this process has started waiting for (attempts after a request's first), and the
/// requests waiting for their retry right now: the progress bar's `retries` (it moves while
/// nothing finishes).
static RETRIES: AtomicU64 = AtomicU64::new(0);
static WAITING_TO_RETRY: AtomicU64 = AtomicU64::new(0);

/// (retries so far in this process, requests waiting for their retry now).
pub fn retry_activity() -> (u64, u64) {
    (
        RETRIES.load(Ordering::Relaxed),
        WAITING_TO_RETRY.load(Ordering::Relaxed),
    )
}

/// Counts one request as waiting for its retry while it lives (also when its future is
/// dropped mid-wait).
struct WaitingToRetry;

impl WaitingToRetry {
    fn start() -> WaitingToRetry {
        RETRIES.fetch_add(1, Ordering::Relaxed);
        WAITING_TO_RETRY.fetch_add(1, Ordering::Relaxed);
        WaitingToRetry
    }
}

impl Drop for WaitingToRetry {
    fn drop(&mut self) {
        WAITING_TO_RETRY.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Largest response body read: a reply of the largest token caps is a few MiB at most, and a
/// runaway body must not take the machine's memory (it is held about four times over while
/// redacted and parsed).
const MAX_BODY_BYTES: usize = 64 << 20;

/// Longest wait we honour from a server, so that a bad header cannot stall a run for hours.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// Spaces requests to `requests_per_minute`, keeps estimated tokens within
/// `tokens_per_minute` (a token bucket that may go into debt: a request waits until the debt
/// is repaid), and pauses the whole provider after a 429.
#[derive(Debug)]
struct Limiter {
    interval: Option<Duration>,
    /// Tokens per second and bucket capacity, when `tokens_per_minute` is set.
    token_rate: Option<(f64, f64)>,
    state: Mutex<LimiterState>,
}

#[derive(Debug)]
struct LimiterState {
    next_slot: Instant,
    paused_until: Instant,
    tokens: f64,
    tokens_at: Instant,
}

impl Limiter {
    fn new(requests_per_minute: u32, tokens_per_minute: u64) -> Self {
        let interval =
            (requests_per_minute > 0).then(|| Duration::from_secs(60) / requests_per_minute);
        let token_rate = (tokens_per_minute > 0)
            .then(|| (tokens_per_minute as f64 / 60.0, tokens_per_minute as f64));
        let now = Instant::now();
        let tokens = token_rate.map_or(0.0, |(_, cap)| cap);
        Limiter {
            interval,
            token_rate,
            state: Mutex::new(LimiterState {
                next_slot: now,
                paused_until: now,
                tokens,
                tokens_at: now,
            }),
        }
    }

    /// How long the caller must wait before sending a request of about `tokens` tokens;
    /// reserves its slot and its tokens. With `tokens` 0 (a request whose tokens are counted
    /// already, taking a new slot after a pause) only the slot and the pause count.
    fn reserve(&self, tokens: u64) -> Duration {
        let mut s = self
            .state
            .lock()
            .expect("limiter lock is never poisoned: no panics inside");
        let now = Instant::now();
        let paused = s.paused_until > now;
        let mut start = s.next_slot.max(s.paused_until).max(now);
        if let Some(iv) = self.interval {
            s.next_slot = start + iv;
        } else if paused {
            // Without a rate, the requests a 429 held back would all go out the instant the
            // pause ends, and meet the limit again together: they leave spaced instead.
            s.next_slot = start + PAUSE_SPACING;
        }
        if let Some((rate, cap)) = self.token_rate.filter(|_| tokens > 0) {
            let refill = now.saturating_duration_since(s.tokens_at).as_secs_f64() * rate;
            s.tokens = (s.tokens + refill).min(cap);
            s.tokens_at = now;
            s.tokens -= (tokens as f64).min(cap);
            if s.tokens < 0.0 {
                start = start.max(now + Duration::from_secs_f64(-s.tokens / rate));
            }
        }
        start - now
    }

    /// What is left of a pause a 429 started (zero when none).
    fn pause_left(&self) -> Duration {
        let s = self
            .state
            .lock()
            .expect("limiter lock is never poisoned: no panics inside");
        s.paused_until.saturating_duration_since(Instant::now())
    }

    fn pause_for(&self, d: Duration) {
        let mut s = self
            .state
            .lock()
            .expect("limiter lock is never poisoned: no panics inside");
        s.paused_until = s.paused_until.max(Instant::now() + d);
    }
}

/// The spacing of requests released by the end of a provider-wide pause (a 429) when the
/// provider has no `requests_per_minute`.
const PAUSE_SPACING: Duration = Duration::from_millis(100);

/// A provider's HTTP client.
#[derive(Debug)]
pub struct HttpProvider {
    /// HTTP requests sent, every attempt counted (also those of items a stop then cut short).
    sent: std::sync::atomic::AtomicU64,
    config: ProviderConfig,
    key: Option<Secret>,
    client: reqwest::Client,
    limiter: Limiter,
    backoff_base: Duration,
}

/// Environment variable that sets the first backoff delay in milliseconds (default 1000);
/// tests and local servers use a small value.
pub const BACKOFF_ENV: &str = "JUDGE_RETRY_BASE_MS";

impl HttpProvider {
    /// Builds the client. `key` is read from the env by the caller.
    pub fn new(config: ProviderConfig, key: Option<Secret>) -> anyhow::Result<Self> {
        // Redirects are not followed: reqwest drops only `Authorization` when one crosses to
        // another host, so Anthropic's and Gemini's key headers would go along.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(Duration::from_secs(config.timeout_secs))
            // Within the total, or the total's timer ends a connection that was never made as
            // a slow reply (`timeout`), not as `unreachable`.
            .connect_timeout(
                Duration::from_secs(config.timeout_secs)
                    .mul_f64(0.5)
                    .min(Duration::from_secs(10)),
            )
            .user_agent(concat!("judge/", env!("CARGO_PKG_VERSION")))
            .build()?;
        let backoff_ms = std::env::var(BACKOFF_ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        Ok(HttpProvider {
            sent: std::sync::atomic::AtomicU64::new(0),
            limiter: Limiter::new(config.requests_per_minute, config.tokens_per_minute),
            config,
            key,
            client,
            backoff_base: Duration::from_millis(backoff_ms),
        })
    }

    /// HTTP requests this client has sent.
    pub fn requests_sent(&self) -> u64 {
        self.sent.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The provider's config.
    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    /// POSTs the request, retrying what can succeed on a second try. Returns the 2xx body and
    /// the number of attempts made. No attempt starts once `stopping()` is true or `deadline`
    /// has passed, and a wait (the rate limiter's, a backoff) ends there: the last error is
    /// returned instead, or a `network` error "not sent" when no attempt was made.
    pub async fn post_json(
        &self,
        request: &WireRequest,
        stopping: &(dyn Fn() -> bool + Sync),
        deadline: Option<Instant>,
    ) -> (Result<Vec<u8>, ProviderError>, u32) {
        let seed = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(7, |d| d.as_nanos() as u64);
        let mut backoff = Backoff::new(self.backoff_base, Duration::from_secs(60), seed);
        let past_deadline = || deadline.is_some_and(|d| Instant::now() >= d);
        let mut attempt = 0;
        loop {
            // A 429 that came while this request waited for its slot pauses it too: the
            // whole provider waits, not only the request that got it. It then takes a new
            // slot (its tokens are already counted), so that the requests the pause held
            // back go out spaced, not all at its end.
            let mut wait = self.limiter.reserve(request.estimated_tokens);
            loop {
                if !wait_unless_stopped(wait, stopping, deadline).await {
                    let not_sent = ProviderError::new(
                        ErrorClass::Network,
                        "not sent: the run stopped while the request waited for its turn",
                    );
                    return (Err(not_sent), attempt);
                }
                if self.limiter.pause_left().is_zero() {
                    break;
                }
                wait = self.limiter.reserve(0);
            }
            attempt += 1;
            let err = match self.send_once(request).await {
                Ok(bytes) => return (Ok(bytes), attempt),
                Err(e) => e,
            };
            if !err.class.is_retryable()
                || attempt > self.config.max_retries
                || stopping()
                || past_deadline()
            {
                return (Err(err), attempt);
            }
            let wait = retry_wait(err.retry_after, &mut backoff);
            if err.class == ErrorClass::RateLimited {
                self.limiter.pause_for(wait);
            }
            let waiting = WaitingToRetry::start();
            if !wait_unless_stopped(wait, stopping, deadline).await {
                return (Err(err), attempt);
            }
            drop(waiting);
        }
    }

    async fn send_once(&self, request: &WireRequest) -> Result<Vec<u8>, ProviderError> {
        let base = self
            .config
            .base_url
            .as_deref()
            .expect("http providers have a base_url");
        let mut req = self
            .client
            .post(format!("{base}{}", request.path))
            .json(&request.body);
        if self.config.kind == ProviderKind::Anthropic {
            req = req.header(anthropic::VERSION_HEADER, anthropic::API_VERSION);
        }
        if let Some(key) = &self.key {
            req = match self.config.kind {
                ProviderKind::Anthropic => req.header(anthropic::API_KEY_HEADER, key.expose()),
                ProviderKind::Gemini => req.header(gemini::API_KEY_HEADER, key.expose()),
                _ => req.bearer_auth(key.expose()),
            };
        }
        self.sent.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let resp = req.send().await.map_err(|e| self.transport_error(&e))?;
        let status = resp.status().as_u16();
        if resp.status().is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("an address it did not give");
            return Err(ProviderError {
                status: Some(status),
                ..ProviderError::new(
                    ErrorClass::UnknownModel,
                    self.redact(&format!(
                        "provider `{}` answered {status}, redirecting to {to}; judge does not follow redirects (they could carry the API key to another host): set base_url to the address the API is at",
                        self.config.name
                    )),
                )
            });
        }
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let bytes = self.read_body(resp).await?;
        let bytes = self.redact_reply(&bytes);
        if (200..300).contains(&status) {
            // An error object inside a 2xx (an overloaded Anthropic, OpenRouter failing after
            // the status was sent) that a retry can get past is retried like its status.
            if let Err(e) = super::parse_reply(self.config.kind, &bytes)
                && e.class.is_retryable()
            {
                // Told from the body with a short key taken out too (it is no reply).
                return Err(
                    super::parse_reply(self.config.kind, &self.redact_error_body(&bytes))
                        .err()
                        .unwrap_or(e),
                );
            }
            return Ok(bytes);
        }
        // An error body loses a short key too before anything quotes it.
        let bytes = self.redact_error_body(&bytes);
        let mut err = classify_status(self.config.kind, status, &String::from_utf8_lossy(&bytes));
        err.retry_after = retry_after.or(err.retry_after);
        err.message = self.explain(&err, request);
        Err(err)
    }

    /// The response body, refused past [`MAX_BODY_BYTES`] (read in chunks, so a runaway body
    /// is not held whole first).
    async fn read_body(&self, mut resp: reqwest::Response) -> Result<Vec<u8>, ProviderError> {
        let too_big = || {
            ProviderError::new(
                ErrorClass::MalformedResponse,
                format!(
                    "the response body is larger than {} MiB, far more than any reply (judge reads no more of it)",
                    MAX_BODY_BYTES >> 20
                ),
            )
        };
        if resp
            .content_length()
            .is_some_and(|n| n > MAX_BODY_BYTES as u64)
        {
            return Err(too_big());
        }
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(|e| self.transport_error(&e))? {
            if body.len() + chunk.len() > MAX_BODY_BYTES {
                return Err(too_big());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    fn transport_error(&self, e: &reqwest::Error) -> ProviderError {
        // A connection that could not be made in time (a firewalled or black-holed host, a VPN
        // down) is unreachable, not a slow reply: checked first, as it is a timeout too.
        let class = if e.is_connect() {
            ErrorClass::Unreachable
        } else if e.is_timeout() {
            ErrorClass::Timeout
        } else {
            ErrorClass::Network
        };
        let mut msg = format!("{e}");
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            msg.push_str(&format!(": {s}"));
            source = s.source();
        }
        if class == ErrorClass::Timeout {
            msg = format!(
                "no complete response within {}s ({msg})",
                self.config.timeout_secs
            );
        } else if class == ErrorClass::Unreachable {
            msg = format!(
                "provider `{}` could not be reached at {} ({msg}), also after {} retries: is the server running, and is base_url right? Nothing was recorded for the items it was to answer",
                self.config.name,
                self.config
                    .base_url
                    .as_deref()
                    .unwrap_or("its default address"),
                self.config.max_retries
            );
        }
        ProviderError::new(class, self.redact(&msg))
    }

    /// Adds what to do to fatal errors and removes the key from any echoed text.
    fn explain(&self, err: &ProviderError, request: &WireRequest) -> String {
        let env = self.config.api_key_env.as_deref().unwrap_or("(none)");
        let name = &self.config.name;
        let msg = match err.class {
            ErrorClass::Auth if self.config.api_key_env.is_none() => format!(
                "provider `{name}` refused the request ({}), and no API key was sent (`api_key_env = \"\"`); if it needs one, set `api_key_env` to the variable that holds it",
                err.message
            ),
            ErrorClass::Auth => format!(
                "provider `{name}` refused the API key from `{env}` ({}); check that `{env}` holds a valid key with access to this model",
                err.message
            ),
            ErrorClass::QuotaExhausted => format!(
                "provider `{name}` reports the account's quota is exhausted ({}); add credit or use another key",
                err.message
            ),
            ErrorClass::UnsupportedSetting => format!(
                "provider `{name}` rejects a setting judge sends ({})",
                err.message
            ),
            ErrorClass::UnknownModel => {
                // The body names the model (OpenAI, Anthropic), or the path does (Gemini).
                let model = request
                    .body
                    .get("model")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .or_else(|| {
                        let rest = request.path.strip_prefix("/models/")?;
                        Some(rest.split(':').next()?.to_owned())
                    });
                let what = model.map_or("the model".to_string(), |m| format!("the model `{m}`"));
                format!(
                    "provider `{name}` does not know {what} or the endpoint ({}); check `model` and `base_url` in {}",
                    err.message,
                    crate::config_name()
                )
            }
            _ => err.message.clone(),
        };
        self.redact(&msg)
    }

    fn redact(&self, text: &str) -> String {
        String::from_utf8(self.redact_bytes(text.as_bytes()))
            .expect("replacing a UTF-8 key with ASCII keeps UTF-8 valid")
    }

    /// A body that is no reply (an error status, an error object, something that does not
    /// parse), before anything quotes it: with a short key (under [`MIN_REDACTED_KEY_LEN`]
    /// bytes, which replies keep) also replaced where it stands as a token of its own
    /// ([`redact_short_key`]), as a server's "Incorrect API key provided: sk-1234" has it, in
    /// the bytes and in a JSON body's decoded strings. Long keys are out already
    /// ([`Self::redact_reply`]).
    pub(crate) fn redact_error_body(&self, body: &[u8]) -> Vec<u8> {
        let Some(k) = &self.key else {
            return body.to_vec();
        };
        let key = k.expose();
        // Quoted in disguise (another case, percent- or HTML-encoded, base64): not kept at
        // all, since no replacement inside an encoding can be trusted to catch every copy.
        if super::encoded_key::holds_encoded_key(body, key) {
            return ENCODED_KEY_BODY.as_bytes().to_vec();
        }
        let raw = redact_short_key(body, key);
        // In the decoded strings too (a JSON-escaped echo); the body is re-serialised only
        // when that took something out.
        if let Ok(mut value) = serde_json::from_slice::<Value>(&raw) {
            let before = value.clone();
            redact_strings(&mut value, &|s| redact_short_key(s.as_bytes(), key));
            if value != before {
                return serde_json::to_vec(&value).expect("a JSON value serialises");
            }
        }
        raw
    }

    /// Any text with the key replaced by `***`.
    fn redact_bytes(&self, body: &[u8]) -> Vec<u8> {
        match &self.key {
            Some(k) => redact_key(body, k.expose()),
            None => body.to_vec(),
        }
    }

    /// A reply body with the key replaced by `***`, before anything parses, caches or records
    /// it: in the bytes as they came, and in a JSON body also in every string once decoded (a
    /// server may echo the key with escapes such as `\u002d`); such a body comes back
    /// re-serialised.
    fn redact_reply(&self, body: &[u8]) -> Vec<u8> {
        let raw = self.redact_bytes(body);
        if self.key.is_none() {
            return raw;
        }
        match serde_json::from_slice::<Value>(&raw) {
            Ok(mut value) => {
                self.redact_value(&mut value);
                serde_json::to_vec(&value).expect("a JSON value serialises")
            }
            Err(_) => raw,
        }
    }

    /// Every string of `value`, object keys included, with the key replaced by `***` (for a
    /// cached reply, which may predate redaction).
    pub(crate) fn redact_value(&self, value: &mut Value) {
        if let Some(k) = &self.key {
            redact_json(value, k.expose());
        }
    }
}

/// [`redact_key`] on every string of `value`, object keys included.
fn redact_json(value: &mut Value, key: &str) {
    redact_strings(value, &|s| redact_key(s.as_bytes(), key));
}

/// Every string of `value`, object keys included, through `redact` (bytes in, bytes out).
fn redact_strings(value: &mut Value, redact: &dyn Fn(&str) -> Vec<u8>) {
    let apply = |s: &str| -> Option<String> {
        let out = redact(s);
        (out != s.as_bytes()).then(|| {
            String::from_utf8(out).expect("replacing a UTF-8 key with ASCII keeps UTF-8 valid")
        })
    };
    match value {
        Value::String(s) => {
            if let Some(r) = apply(s) {
                *s = r;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, redact)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (k, mut v) in entries {
                redact_strings(&mut v, redact);
                map.insert(apply(&k).unwrap_or(k), v);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// What is kept of an error body that quotes the API key encoded.
const ENCODED_KEY_BODY: &str =
    "(the provider's error body quoted the API key in an encoded form; it is not kept)";

/// Keys shorter than this are not redacted: such a value is a placeholder for a local server
/// ("EMPTY", "none", "x"), and replacing every occurrence would garble replies (a key `x`
/// would turn the JSON field `"text"` into `"te***t"`). Real provider keys are far longer.
const MIN_REDACTED_KEY_LEN: usize = 8;

/// Shortest key redacted in error bodies (as a token of its own); shorter ones ("x", "no")
/// are placeholders, not secrets.
const MIN_REDACTED_SHORT_KEY_LEN: usize = 4;

/// `text` with each occurrence of a short `key` (from [`MIN_REDACTED_SHORT_KEY_LEN`] to under
/// [`MIN_REDACTED_KEY_LEN`] bytes, and not letters only: `none`, `null`, `EMPTY`, `ollama`
/// are placeholders, and ordinary words in an error body) that stands as a token of its own
/// (no letter, digit, `_` or `-` right before or after it) replaced by `***`; other keys
/// leave `text` as it is.
fn redact_short_key(text: &[u8], key: &str) -> Vec<u8> {
    let key = key.as_bytes();
    if !(MIN_REDACTED_SHORT_KEY_LEN..MIN_REDACTED_KEY_LEN).contains(&key.len())
        || key.iter().all(u8::is_ascii_alphabetic)
    {
        return text.to_vec();
    }
    let joins =
        |b: Option<&u8>| b.is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let whole = text[i..].starts_with(key)
            && !joins(i.checked_sub(1).and_then(|j| text.get(j)))
            && !joins(text.get(i + key.len()));
        if whole {
            out.extend_from_slice(b"***");
            i += key.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
}

/// `text` with every occurrence of `key` (and so any `Bearer <key>`) replaced by `***`.
fn redact_key(text: &[u8], key: &str) -> Vec<u8> {
    let key = key.as_bytes();
    if key.len() < MIN_REDACTED_KEY_LEN {
        return text.to_vec();
    }
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if rest.starts_with(key) {
            out.extend_from_slice(b"***");
            rest = &rest[key.len()..];
        } else {
            out.push(rest[0]);
            rest = &rest[1..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_caps() {
        let delays: Vec<Duration> =
            Backoff::new(Duration::from_secs(1), Duration::from_secs(8), 42)
                .take(6)
                .collect();
        let full = [1u64, 2, 4, 8, 8, 8];
        for (d, f) in delays.iter().zip(full) {
            let f = Duration::from_secs(f);
            assert!(
                *d >= f / 2 && *d <= f,
                "{d:?} not within [{:?}, {f:?}]",
                f / 2
            );
        }
        let again: Vec<Duration> = Backoff::new(Duration::from_secs(1), Duration::from_secs(8), 42)
            .take(6)
            .collect();
        assert_eq!(delays, again, "same seed, same delays");
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_770);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:30 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:37 1994", now),
            Some(Duration::from_secs(7))
        );
        for bad in ["1e9999", ".", "1.2.3", "-1"] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
    }

    /// Regression: `Retry-After: 0` (or a past date) made every retry go out at once, and a
    /// second's rate limit became a string of failures.
    #[test]
    fn a_zero_retry_after_takes_the_backoff() {
        let base = Duration::from_millis(400);
        let mut backoff = Backoff::new(base, Duration::from_secs(60), 3);
        let wait = retry_wait(Some(Duration::ZERO), &mut backoff);
        assert!(wait >= base / 2, "{wait:?}");
        assert_eq!(
            retry_wait(Some(Duration::from_secs(3)), &mut backoff),
            Duration::from_secs(3)
        );
        assert_eq!(
            retry_wait(Some(Duration::from_secs(1 << 40)), &mut backoff),
            MAX_RETRY_AFTER
        );
    }

    #[test]
    fn secret_debug_is_redacted() {
        let s = Secret::new("sk-very-secret".into());
        assert_eq!(format!("{s:?}"), "Secret(***)");
    }

    #[test]
    fn redact_key_replaces_every_occurrence_of_the_key() {
        let key = "sk-test-OA123456";
        let body = br#"{"text":"your key: Bearer sk-test-OA123456, again sk-test-OA123456"}"#;
        assert_eq!(
            redact_key(body, key),
            br#"{"text":"your key: Bearer ***, again ***"}"#.to_vec()
        );
        assert_eq!(redact_key(b"no key here", key), b"no key here".to_vec());
        assert_eq!(redact_key(b"", key), b"".to_vec());
        let non_utf8 = b"\xff sk-test-OA123456 \xfe";
        assert_eq!(redact_key(non_utf8, key), b"\xff *** \xfe".to_vec());
    }

    #[test]
    fn redact_json_reaches_escaped_echoes_and_object_keys() {
        let key = "sk-test-OA123456";
        let body = r#"{"text":"key sk\u002dtest\u002dOA123456!","sk-test-OA123456":[1,"sk-test-OA123456"]}"#;
        let mut value: Value = serde_json::from_str(body).unwrap();
        redact_json(&mut value, key);
        assert_eq!(
            value,
            serde_json::json!({"text": "key ***!", "***": [1, "***"]})
        );
    }

    #[test]
    fn short_keys_are_redacted_in_messages_where_they_stand_alone() {
        let red = |text: &str, key: &str| {
            String::from_utf8(redact_short_key(text.as_bytes(), key)).unwrap()
        };
        assert_eq!(
            red(
                "Incorrect API key provided: sk-1234. Key sk-1234",
                "sk-1234"
            ),
            "Incorrect API key provided: ***. Key ***"
        );
        assert_eq!(red("\"tok1\" (tok1)", "tok1"), "\"***\" (***)");
        // Inside a longer word or token it is not the key.
        assert_eq!(
            red("retok1 tok1x tok1-2 a_tok1", "tok1"),
            "retok1 tok1x tok1-2 a_tok1"
        );
        // Under four bytes, or letters only: a placeholder; eight and more: redact_key's.
        assert_eq!(red("key abc", "abc"), "key abc");
        assert_eq!(
            red("\"param\": null, provider `ollama`", "null"),
            "\"param\": null, provider `ollama`"
        );
        assert_eq!(red("provider `ollama`", "ollama"), "provider `ollama`");
        assert_eq!(red("key 12345678", "12345678"), "key 12345678");
    }

    #[test]
    fn redact_key_leaves_text_alone_for_placeholder_keys() {
        let body = br#"{"text":"x marks the spot"}"#;
        for key in ["", "x", "EMPTY", "1234567"] {
            assert_eq!(redact_key(body, key), body.to_vec(), "key {key:?}");
        }
        assert_eq!(redact_key(b"a 12345678 b", "12345678"), b"a *** b".to_vec());
    }

    #[test]
    fn limiter_keeps_tokens_within_the_budget() {
        let l = Limiter::new(0, 6000); // 100 tokens per second, bucket of 6000
        assert_eq!(l.reserve(5000), Duration::ZERO);
        assert_eq!(l.reserve(1000), Duration::ZERO);
        let wait = l.reserve(500); // 500 tokens of debt = 5 s
        assert!(
            wait > Duration::from_millis(4900) && wait <= Duration::from_secs(5),
            "{wait:?}"
        );
        let bigger_than_bucket = Limiter::new(0, 60);
        assert_eq!(
            bigger_than_bucket.reserve(10_000),
            Duration::ZERO,
            "capped at the bucket"
        );
    }

    /// An OpenAI-kind provider at `url` without a key (`extra`: more provider lines), and an
    /// empty chat request for it.
    fn test_provider(url: &str, extra: &str) -> (HttpProvider, WireRequest) {
        let config = crate::config::parse_config(
            "judge.toml",
            &format!(
                "[run]\nsuite = \"s\"\n[providers.p]\nkind = \"openai\"\nbase_url = \"{url}\"\napi_key_env = \"\"\n{extra}[[models]]\nid = \"m\"\nprovider = \"p\"\nmodel = \"x\"\nfamily = \"f\"\n"
            ),
        )
        .unwrap();
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = HttpProvider::new(config.providers["p"].clone(), None).unwrap();
        let request = WireRequest {
            path: "/chat/completions".into(),
            body: serde_json::json!({}),
            estimated_tokens: 0,
        };
        (http, request)
    }

    /// A body past the limit is refused while it streams (no Content-Length: chunked), so a
    /// runaway server cannot fill the memory.
    #[test]
    fn a_runaway_chunked_body_is_refused_at_the_limit() {
        use std::io::{BufRead, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let mut stream = stream;
            let chunk = vec![b' '; 1 << 20];
            let mut sent = 0usize;
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
            // Stops when the client hangs up; never more than twice the limit.
            while sent < 2 * MAX_BODY_BYTES {
                let head = format!("{:x}\r\n", chunk.len());
                if stream.write_all(head.as_bytes()).is_err()
                    || stream.write_all(&chunk).is_err()
                    || stream.write_all(b"\r\n").is_err()
                {
                    break;
                }
                sent += chunk.len();
            }
            sent
        });
        let (http, request) = test_provider(&url, "");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = runtime
            .block_on(http.send_once(&request))
            .expect_err("refused");
        assert_eq!(err.class, ErrorClass::MalformedResponse);
        assert!(
            err.message.contains("larger than 64 MiB"),
            "{}",
            err.message
        );
        // The connection closes with the runtime that drives it.
        drop(http);
        drop(runtime);
        let sent = server.join().unwrap();
        assert!(
            sent < 2 * MAX_BODY_BYTES,
            "the client read on: {sent} bytes"
        );
    }

    /// Every retry is counted for the progress bar, and a request is "waiting" only while it
    /// waits: the count of waiting requests goes back down.
    #[test]
    fn retries_are_counted_while_they_wait() {
        use std::io::{BufRead, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            for n in 0..3 {
                let (stream, _) = listener.accept().unwrap();
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut line = String::new();
                let mut length = 0;
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap();
                    }
                    line.clear();
                }
                let mut body = vec![0; length];
                std::io::Read::read_exact(&mut reader, &mut body).unwrap();
                let (status, text) = if n < 2 {
                    ("503 Busy", "busy")
                } else {
                    ("200 OK", "{}")
                };
                let mut stream = stream;
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
                    text.len()
                );
            }
        });
        let (mut http, request) = test_provider(&url, "max_retries = 2\n");
        http.backoff_base = Duration::from_millis(1);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (before, _) = retry_activity();
        let (reply, attempts) = runtime.block_on(http.post_json(&request, &|| false, None));
        assert_eq!(reply.expect("the third attempt succeeds"), b"{}");
        assert_eq!(attempts, 3);
        server.join().unwrap();
        // Other tests of this process may retry meanwhile: at least these two.
        assert!(retry_activity().0 >= before + 2);
        // A request dropped while it waits for its retry stops counting as waiting.
        let guard = WaitingToRetry::start();
        let (_, waiting) = retry_activity();
        assert!(waiting >= 1);
        drop(guard);
    }

    /// Regression: a connection attempt that timed out (SYNs dropped: a firewalled host) was a
    /// `timeout`, recorded as a failure of every item, and the model lost every comparison; it
    /// is `unreachable`, which stops the run with nothing recorded.
    #[test]
    fn a_connection_that_times_out_is_unreachable() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let err = runtime.block_on(async {
            // A listener that never accepts, its queue filled: further SYNs are dropped.
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
            let addr = socket.local_addr().unwrap();
            let _listener = socket.listen(0).unwrap();
            let mut fill = Vec::new();
            for _ in 0..4 {
                fill.push(tokio::spawn(tokio::net::TcpStream::connect(addr)));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let (http, request) = test_provider(
                &format!("http://{addr}"),
                "timeout_secs = 1\nmax_retries = 0\n",
            );
            let (reply, _) = http.post_json(&request, &|| false, None).await;
            reply.expect_err("never connected")
        });
        assert_eq!(err.class, ErrorClass::Unreachable, "{}", err.message);
        assert!(
            err.message.contains("could not be reached"),
            "{}",
            err.message
        );
    }

    #[test]
    fn limiter_spaces_requests() {
        let l = Limiter::new(600, 0); // one per 100 ms
        assert_eq!(l.reserve(1), Duration::ZERO);
        let second = l.reserve(1);
        assert!(
            second > Duration::from_millis(90) && second <= Duration::from_millis(100),
            "{second:?}"
        );
        l.pause_for(Duration::from_secs(5));
        assert!(l.reserve(1) > Duration::from_secs(4));
    }

    /// Regression: without a rate, every request a 429 held back went out the instant the
    /// pause ended (in lockstep, into the next 429).
    #[test]
    fn requests_released_by_a_pause_leave_spaced() {
        let l = Limiter::new(0, 0);
        assert_eq!(l.reserve(1), Duration::ZERO);
        l.pause_for(Duration::from_secs(2));
        let waits: Vec<Duration> = (0..4).map(|_| l.reserve(0)).collect();
        for pair in waits.windows(2) {
            let gap = pair[1].saturating_sub(pair[0]);
            assert!(gap >= PAUSE_SPACING - Duration::from_millis(5), "{waits:?}");
        }
        assert!(waits[0] > Duration::from_millis(1900), "{waits:?}");
    }

    /// A request taking a new slot after a pause (its tokens counted already) does not wait
    /// for the token debt of the requests queued behind it.
    #[test]
    fn a_new_slot_after_a_pause_does_not_count_tokens_again() {
        let l = Limiter::new(0, 6000); // 100 tokens a second
        assert_eq!(l.reserve(6000), Duration::ZERO);
        assert!(l.reserve(3000) > Duration::from_secs(29), "30 s of debt");
        assert_eq!(l.reserve(0), Duration::ZERO);
    }
}
