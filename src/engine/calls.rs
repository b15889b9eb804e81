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
}

/// Calls `http` with `request` (attempt number `attempt` is part of the cache key). `None` when
/// the item did not finish because the run is stopping (it is retried on resume); a failure
/// that affects every item (auth, quota, unknown model, unwritable cache) stops the run.
/// A reply that cannot be cached is not used either: a rerun asks again.
pub async fn cached_call(
    cache: &Cache,
    http: &HttpProvider,
    request: &WireRequest,
    attempt: u32,
    refresh: bool,
    stop: &Arc<Stop>,
) -> Option<CallResult> {
    let base_url = http.config().base_url.as_deref().unwrap_or_default();
    let kind = http.config().kind;
    let canonical = canonical_request(
        kind.as_str(),
        base_url,
        &request.path,
        &request.body,
        attempt,
    );
    let key = cache_key(&canonical);
    let mut result = CallResult {
        reply: Err(ProviderError::new(
            crate::provider::ErrorClass::Network,
            "not sent",
        )),
        cache_key: key.as_str().to_string(),
        from_cache: false,
        attempts: 0,
    };
    if !refresh
        && let Some(reply) = cache
            .get(&key)
            .map(|mut v| {
                // An entry cached before replies were redacted may still hold the key.
                http.redact_value(&mut v);
                v
            })
            .and_then(|v| parse_reply_value(kind, &v).ok())
    {
        result.reply = Ok(reply);
        result.from_cache = true;
        return Some(result);
    }
    if stop.is_stopping() || stop.past_deadline() {
        return None;
    }
    let s = stop.clone();
    let (sent, attempts) = http
        .post_json(request, &move || s.is_stopping(), stop.deadline())
        .await;
    result.attempts = attempts;
    let parse = |bytes: &[u8]| -> Result<(ChatReply, Value), ProviderError> {
        let value: Value = serde_json::from_slice(bytes).map_err(|_| {
            parse_reply(kind, bytes).expect_err("bytes that are not JSON never parse")
        })?;
        parse_reply_value(kind, &value).map(|reply| (reply, value))
    };
    // A body that is no reply is told from with a short key taken out too (replies keep it,
    // see `redact_error_body`), since the error quotes it.
    let parsed =
        sent.and_then(|bytes| parse(&bytes).or_else(|_| parse(&http.redact_error_body(&bytes))));
    match parsed {
        Ok((reply, value)) => {
            if let Err(e) = cache.put(&key, &canonical, &value) {
                stop.request(StopReason::Io(format!("{e:#}")));
                return None;
            }
            result.reply = Ok(reply);
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
                    || (stop.past_deadline() && attempts <= http.config().max_retries)) =>
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
    for m in users {
        let p = config.provider_of(m);
        if p.kind == ProviderKind::Files || out.contains_key(&p.name) {
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
                    return Err(JudgeError::usage(format!(
                        "provider `{}` needs an API key in the environment variable `{env}` (used by `{}`); export it, or set another variable's name as api_key_env under [providers.{}] in {} (\"\" for a server that needs no key)",
                        p.name,
                        m.id,
                        crate::config::toml_key(&p.name),
                        config.path.display()
                    ))
                    .into());
                }
            },
        };
        out.insert(p.name.clone(), HttpProvider::new(p.clone(), key)?);
    }
    Ok(out)
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
