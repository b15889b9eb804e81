//! One provider call through the cache, shared by `generate` and `compare`: look up the
//! canonical request, else send it with retries, cache a good reply, and turn run-wide
//! failures into a stop. Also builds the HTTP clients with their keys from the environment.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::scheduler::{Stop, StopReason};
use crate::cache::{Cache, cache_key, canonical_request};
use crate::config::{Config, ModelConfig, ProviderKind};
use crate::error::JudgeError;
use crate::provider::http::{HttpProvider, Secret};
use crate::provider::{ChatReply, ProviderError, WireRequest, parse_reply, parse_reply_value};

/// The result of one cached call.
#[derive(Debug)]
pub struct CallResult {
    pub reply: Result<ChatReply, ProviderError>,
    pub cache_key: String,
    pub from_cache: bool,
    /// HTTP attempts (0 for a cache hit).
    pub attempts: u32,
    /// The reply was written to the cache by this call.
    pub stored: bool,
}

/// How a call uses the cache.
#[derive(Debug, Clone, Copy)]
pub struct CacheUse {
    /// The attempt number, part of the cache key (a judge's retry is a new call).
    pub attempt: u32,
    /// Ask again even when an entry exists (`--refresh`, `--retry-failed`); an entry this
    /// process wrote is still used (an identical request of the same invocation).
    pub refresh: bool,
    /// A judge's call: an empty reply is a reply without a verdict (DESIGN §2.7), cached like
    /// any unparsable one so that a rerun asks nothing. A generation's empty reply is a failed
    /// output, and failures are not cached.
    pub verdict: bool,
}

/// Requests in flight or answered by this process, by cache key: identical requests wait for
/// the first and take its reply, so that the cache holds the reply every one of them used
/// and a repeat run reproduces them (two tasks with the same prompt, two judge ids on one
/// model). Only keys asked with `refresh` are remembered once answered.
static IN_FLIGHT: std::sync::LazyLock<std::sync::Mutex<InFlight>> =
    std::sync::LazyLock::new(Default::default);

#[derive(Default)]
struct InFlight {
    locks: std::collections::HashMap<String, Arc<tokio::sync::Mutex<()>>>,
    /// Keys this process wrote on a refresh: a later identical refresh takes that reply.
    refreshed: std::collections::HashSet<String>,
    /// Keys every call of this invocation asks afresh ([`refresh_keys`]).
    to_refresh: std::collections::HashSet<String>,
}

/// Makes every call of this process whose cache key is one of `keys` a refresh (the first asks,
/// the others take its reply): a `--retry-failed` of one call must not leave an identical
/// request of another answered from the entry the retry replaces.
pub fn refresh_keys(keys: impl IntoIterator<Item = String>) {
    in_flight().to_refresh.extend(keys);
}

/// The cache key of `request` sent through `provider` as attempt `attempt`.
pub fn cache_key_of(
    provider: &crate::config::ProviderConfig,
    request: &WireRequest,
    attempt: u32,
) -> String {
    cache_key(&canonical_of(provider, request, attempt))
        .as_str()
        .to_string()
}

/// The reply `cache` holds to `request` sent through `provider` as attempt `attempt`, parsed
/// as a call would take it (what a dry run counts as answered by the cache); `None` when
/// there is none, or none a call would take.
pub fn cached_reply(
    cache: &Cache,
    provider: &crate::config::ProviderConfig,
    request: &WireRequest,
    attempt: u32,
) -> Option<Result<ChatReply, ProviderError>> {
    let value = cache.get(&cache_key(&canonical_of(provider, request, attempt)))?;
    match parse_reply_value(provider.kind, &value) {
        Ok(reply) => Some(Ok(reply)),
        // A judge's empty reply is cached (and unparsable); other errors never are.
        Err(e) if e.class == crate::provider::ErrorClass::EmptyOutput => Some(Err(e)),
        Err(_) => None,
    }
}

/// The canonical request the cache keys `request` sent through `provider` by.
fn canonical_of(
    provider: &crate::config::ProviderConfig,
    request: &WireRequest,
    attempt: u32,
) -> Value {
    canonical_request(
        provider.kind.as_str(),
        provider.base_url.as_deref().unwrap_or_default(),
        &request.path,
        &request.body,
        attempt,
    )
}

fn in_flight() -> std::sync::MutexGuard<'static, InFlight> {
    IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner())
}

/// The lock of one key.
fn key_lock(key: &str) -> Arc<tokio::sync::Mutex<()>> {
    in_flight()
        .locks
        .entry(key.to_string())
        .or_default()
        .clone()
}

/// Drops this caller's reference to the lock of `key`, and the map's once nobody else holds
/// or awaits it (under the map's lock, so that of two callers finishing together the last
/// removes it).
fn release_key(key: &str, held: Arc<tokio::sync::Mutex<()>>) {
    let mut map = in_flight();
    drop(held);
    if map
        .locks
        .get(key)
        .is_some_and(|l| Arc::strong_count(l) == 1)
    {
        map.locks.remove(key);
    }
}

/// Calls `http` with `request` through the cache (see [`CacheUse`]). `None` when the item did
/// not finish because the run is stopping (it is retried on resume); a failure that affects
/// every item (auth, quota, unknown model, unwritable cache) stops the run. A reply that
/// cannot be cached is not used either: a rerun asks again.
pub async fn cached_call(
    cache: &Cache,
    http: &HttpProvider,
    request: &WireRequest,
    use_: CacheUse,
    stop: &Arc<Stop>,
) -> Option<CallResult> {
    let canonical = canonical_of(http.config(), request, use_.attempt);
    let key = cache_key(&canonical);
    let use_ = CacheUse {
        refresh: use_.refresh || in_flight().to_refresh.contains(key.as_str()),
        ..use_
    };
    let lock = key_lock(key.as_str());
    let result = {
        let _held = lock.lock().await;
        // Checked once the lock is held: a refresh this one waited for has answered it.
        let refresh = use_.refresh && !in_flight().refreshed.contains(key.as_str());
        let result = call_locked(
            cache,
            http,
            request,
            (&key, &canonical),
            use_,
            refresh,
            stop,
        )
        .await;
        // Only a reply this call cached answers an identical refresh: after a failure (never
        // cached) the entry is still the one the refresh was to bypass.
        if refresh && result.as_ref().is_some_and(|r| r.stored) {
            in_flight().refreshed.insert(key.as_str().to_string());
        }
        result
    };
    release_key(key.as_str(), lock);
    result
}

/// [`cached_call`] once the key's lock is held.
async fn call_locked(
    cache: &Cache,
    http: &HttpProvider,
    request: &WireRequest,
    (key, canonical): (&crate::cache::CacheKey, &Value),
    use_: CacheUse,
    refresh: bool,
    stop: &Arc<Stop>,
) -> Option<CallResult> {
    let kind = http.config().kind;
    // What may be cached: a reply, or (for a judge) an empty one.
    let cacheable = |parsed: Result<ChatReply, ProviderError>| match parsed {
        Ok(reply) => Some(Ok(reply)),
        Err(e) if use_.verdict && e.class == crate::provider::ErrorClass::EmptyOutput => {
            Some(Err(e))
        }
        Err(_) => None,
    };
    let mut result = CallResult {
        reply: Err(ProviderError::new(
            crate::provider::ErrorClass::Network,
            "not sent",
        )),
        cache_key: key.as_str().to_string(),
        from_cache: false,
        attempts: 0,
        stored: false,
    };
    if !refresh
        && let Some(reply) = cache
            .get(key)
            .map(|mut v| {
                // An entry cached before replies were redacted may still hold the key.
                http.redact_value(&mut v);
                v
            })
            .and_then(|v| cacheable(parse_reply_value(kind, &v)))
    {
        result.reply = reply;
        result.from_cache = true;
        return Some(result);
    }
    // Past --max-cost no request starts; a reply from the cache (above) costs nothing.
    if stop.is_stopping() || stop.past_deadline() || super::budget::reached() {
        return None;
    }
    let s = stop.clone();
    // A wait to retry (a 429's Retry-After) ends at --max-cost too: the retry would be paid
    // past the limit, and a rerun asks again anyway.
    let (sent, attempts) = http
        .post_json(
            request,
            &move || s.is_stopping() || super::budget::reached(),
            stop.deadline(),
        )
        .await;
    result.attempts = attempts;
    let parse = |bytes: &[u8]| -> Result<(Result<ChatReply, ProviderError>, Value), ProviderError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|_| {
            parse_reply(kind, bytes).expect_err("bytes that are not JSON never parse")
        })?;
        match cacheable(parse_reply_value(kind, &value)) {
            Some(reply) => Ok((reply, value)),
            None => Err(parse_reply_value(kind, &value).expect_err("not cacheable: an error")),
        }
    };
    // A body that is no reply is told from with a short key taken out too (replies keep it,
    // see `redact_error_body`), since the error quotes it.
    let parsed =
        sent.and_then(|bytes| parse(&bytes).or_else(|_| parse(&http.redact_error_body(&bytes))));
    match parsed {
        Ok((reply, value)) => {
            if let Err(e) = cache.put(key, canonical, &value) {
                stop.request(StopReason::Io(format!("{e:#}")));
                return None;
            }
            result.reply = reply;
            result.stored = true;
            Some(result)
        }
        Err(e) if e.class.is_fatal() => {
            stop.request(StopReason::Fatal(e.message));
            None
        }
        // Retries cut short by Ctrl-C or by the deadline (not run out): not the model's or
        // judge's failure, so not recorded; a rerun asks again.
        Err(e)
            if e.class.is_retryable()
                && (stop.is_stopping()
                    || ((stop.past_deadline() || super::budget::reached())
                        && attempts <= http.config().max_retries)) =>
        {
            None
        }
        Err(e) => {
            result.reply = Err(e);
            Some(result)
        }
    }
}

/// HTTP clients for the providers `users` need (provider name → client), each with its key
/// from the environment. A missing key is a usage error naming the variable.
pub fn build_http_providers(
    config: &Config,
    users: &[&ModelConfig],
) -> anyhow::Result<BTreeMap<String, HttpProvider>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut out = BTreeMap::new();
    // Every missing key at once: one export per rerun is a slow way to learn them.
    let mut missing: Vec<String> = Vec::new();
    let mut lacking: BTreeSet<String> = BTreeSet::new();
    for m in users {
        let p = config.provider_of(m);
        if p.kind == ProviderKind::Files || out.contains_key(&p.name) || lacking.contains(&p.name) {
            continue;
        }
        let key = match &p.api_key_env {
            None => None,
            Some(env) => match std::env::var(env) {
                // A control character cannot go into a header: every request would fail on
                // this machine, recorded as the items' failures. The key is not echoed.
                Ok(v) if v.trim().chars().any(char::is_control) => {
                    return Err(JudgeError::usage(format!(
                        "the API key in `{env}` (provider `{}`) contains a control character (a stray newline, carriage return or escape from copying it?); export it again without",
                        p.name
                    ))
                    .into());
                }
                Ok(v) if !v.trim().is_empty() => {
                    // Once per provider and process (`judge run` builds them per step).
                    static NOTED: std::sync::Mutex<BTreeSet<String>> =
                        std::sync::Mutex::new(BTreeSet::new());
                    if config.default_key_elsewhere.contains(&p.name)
                        && NOTED
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .insert(p.name.clone())
                    {
                        eprintln!(
                            "note: provider `{}` sends `{env}` (the default key of kind `{}`) to {}, which is not that kind's API: if that server takes another key, set api_key_env to its variable (\"\" for none); set api_key_env = \"{env}\" to keep sending it and drop this note",
                            p.name,
                            p.kind.as_str(),
                            p.base_url.as_deref().unwrap_or("")
                        );
                    }
                    Some(Secret::new(v.trim().to_string()))
                }
                _ => {
                    let users: Vec<String> = users
                        .iter()
                        .filter(|u| u.provider == p.name)
                        .map(|u| format!("`{}`", u.id))
                        .collect();
                    missing.push(format!(
                        "provider `{}` needs an API key in the environment variable `{env}` (used by {}); export it, or set another variable's name as api_key_env under [providers.{}] in {} (\"\" for a server that needs no key)",
                        p.name,
                        users.join(", "),
                        crate::config::toml_key(&p.name),
                        config.path.display()
                    ));
                    lacking.insert(p.name.clone());
                    continue;
                }
            },
        };
        out.insert(p.name.clone(), HttpProvider::new(p.clone(), key)?);
    }
    match missing.len() {
        0 => Ok(out),
        1 => Err(JudgeError::usage(missing.remove(0)).into()),
        n => Err(
            JudgeError::usage(format!("{n} API keys are missing: {}", missing.join("; "))).into(),
        ),
    }
}

/// Passes a Ctrl-C (see [`crate::interrupt`]) on to `stop`.
fn watch_ctrl_c(stop: Arc<Stop>) {
    crate::interrupt::install();
    tokio::spawn(async move {
        while !crate::interrupt::requested() {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        stop.request(StopReason::Interrupted);
    });
}

/// Runs `work` over `groups` on a two-thread runtime with Ctrl-C handling, appending every
/// finished record (`Some`) to `path` at once and then passing it to `on_record`. A failed
/// append stops the run and is returned.
pub fn run_recorded<I, R, F, Fut>(
    groups: Vec<super::scheduler::Group<I>>,
    stop: &Arc<Stop>,
    path: &std::path::Path,
    work: F,
    mut on_record: impl FnMut(R),
) -> anyhow::Result<()>
where
    I: Send + 'static,
    R: serde::Serialize + Send + 'static,
    F: Fn(I) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Option<R>> + Send,
{
    let mut appender = super::run_dir::JsonlAppender::open(path)?;
    let mut write_error = None;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        watch_ctrl_c(stop.clone());
        super::scheduler::run_groups(groups, stop.clone(), work, |rec: Option<R>| {
            let Some(rec) = rec else { return };
            if let Err(e) = appender.append(&rec) {
                stop.request(StopReason::Io(format!("{e:#}")));
                write_error.get_or_insert(e);
            }
            on_record(rec);
        })
        .await;
    });
    write_error.map_or(Ok(()), Err)
}
