//! The raw TOML tables of `judge.toml` and their resolution into the validated types: defaults
//! filled in, every value checked, each error naming its key.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;

use super::*;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    pub(super) run: RawRun,
    #[serde(default)]
    pub(super) providers: BTreeMap<String, RawProvider>,
    #[serde(default)]
    pub(super) models: Vec<RawModel>,
    #[serde(default)]
    pub(super) judges: Vec<RawModel>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRun {
    suite: String,
    #[serde(default = "default_max_tokens")]
    max_tokens: u32,
    #[serde(default)]
    temperature: f64,
    #[serde(default = "default_style")]
    style: String,
    #[serde(default)]
    instruction: String,
    #[serde(default)]
    seed: u64,
    #[serde(default = "default_judge_max_tokens")]
    judge_max_tokens: u32,
    #[serde(default)]
    judge_temperature: f64,
}

pub(super) fn default_judge_max_tokens() -> u32 {
    1024
}

fn default_max_tokens() -> u32 {
    2048
}
fn default_style() -> String {
    "none".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProvider {
    kind: String,
    pub(super) base_url: Option<String>,
    pub(super) api_key_env: Option<String>,
    max_concurrency: Option<usize>,
    requests_per_minute: Option<u32>,
    tokens_per_minute: Option<u64>,
    timeout_secs: Option<u64>,
    max_retries: Option<u32>,
    token_limit_field: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawModel {
    id: String,
    provider: String,
    model: String,
    family: Option<String>,
    price_input_per_mtok: Option<f64>,
    price_output_per_mtok: Option<f64>,
}

pub(super) type ErrFn<'a> = dyn Fn(&str, String) -> ConfigError + 'a;

pub(super) fn resolve_run(raw: RawRun, err: &ErrFn) -> Result<RunSettings, ConfigError> {
    if raw.suite.trim().is_empty() {
        return Err(err(
            "run.suite",
            "is empty; name a folder under suites/".into(),
        ));
    }
    // One folder directly under suites/: `..` or `a/b` would read another tree as a suite.
    let folder_name = !raw.suite.starts_with('.')
        && raw
            .suite
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !folder_name {
        return Err(err(
            "run.suite",
            format!(
                "`{}` is not a folder name under suites/ (letters, digits, `-`, `_`, `.`, not starting with `.`)",
                crate::report::printable(&raw.suite)
            ),
        ));
    }
    let style = StylePreset::parse(&raw.style).ok_or_else(|| {
        err(
            "run.style",
            format!(
                "unknown style preset `{}` (expected one of: {})",
                raw.style,
                StylePreset::NAMES.join(", ")
            ),
        )
    })?;
    if raw.max_tokens == 0 {
        return Err(err("run.max_tokens", "must be at least 1".into()));
    }
    if raw.judge_max_tokens == 0 {
        return Err(err("run.judge_max_tokens", "must be at least 1".into()));
    }
    if !(0.0..=2.0).contains(&raw.temperature) {
        return Err(err(
            "run.temperature",
            format!(
                "{} is outside 0.0..=2.0; set a temperature in that range (0.0 for judging and most evaluations)",
                raw.temperature
            ),
        ));
    }
    if !(0.0..=2.0).contains(&raw.judge_temperature) {
        return Err(err(
            "run.judge_temperature",
            format!(
                "{} is outside 0.0..=2.0; judges normally run at 0.0 (1.0 for a reasoning model that takes nothing else)",
                raw.judge_temperature
            ),
        ));
    }
    Ok(RunSettings {
        suite: raw.suite,
        max_tokens: raw.max_tokens,
        temperature: raw.temperature,
        style,
        instruction: raw.instruction.trim().to_string(),
        seed: raw.seed,
        judge_max_tokens: raw.judge_max_tokens,
        judge_temperature: raw.judge_temperature,
    })
}

pub(super) fn resolve_provider(
    name: &str,
    p: RawProvider,
    err: &ErrFn,
) -> Result<ProviderConfig, ConfigError> {
    let at = |k: &str| format!("providers.{name}.{k}");
    let kind = ProviderKind::parse(&p.kind).ok_or_else(|| {
        err(
            &at("kind"),
            format!(
                "unknown provider kind `{}` (expected one of: openai, anthropic, gemini, files)",
                p.kind
            ),
        )
    })?;
    let max_concurrency = p.max_concurrency.unwrap_or(8);
    if max_concurrency == 0 {
        return Err(err(&at("max_concurrency"), "must be at least 1".into()));
    }
    let timeout_secs = p.timeout_secs.unwrap_or(120);
    if timeout_secs == 0 {
        return Err(err(&at("timeout_secs"), "must be at least 1".into()));
    }
    // One request's limit: a day is already far beyond any reply.
    if timeout_secs > 86_400 {
        return Err(err(
            &at("timeout_secs"),
            "is above 86400 (a day, for one request); use a smaller number".into(),
        ));
    }
    // Each retry waits longer (backoff up to a minute): a hundred already take well over an
    // hour for one item; more only hide a server that is down.
    let max_retries = p.max_retries.unwrap_or(6);
    if max_retries > 100 {
        return Err(err(
            &at("max_retries"),
            "is above 100; use a smaller number (`--deadline` bounds a whole run's time)".into(),
        ));
    }
    let (base_url, api_key_env) = match kind {
        ProviderKind::Files => {
            if p.base_url.is_some() || p.api_key_env.is_some() {
                return Err(err(
                    &at("base_url"),
                    "a `files` provider reads answer sets from the suite and takes no base_url \
                     or api_key_env; remove them"
                        .into(),
                ));
            }
            (None, None)
        }
        http_kind => {
            let (default_url, default_env) =
                http_kind.defaults().expect("HTTP kinds have defaults");
            let url = p.base_url.unwrap_or_else(|| default_url.into());
            if let Some(why) = base_url_problem(&url) {
                return Err(err(&at("base_url"), why));
            }
            let env = p.api_key_env.unwrap_or_else(|| default_env.into());
            let env = (!env.is_empty()).then_some(env);
            (Some(url.trim_end_matches('/').to_string()), env)
        }
    };
    let token_limit_field = match (p.token_limit_field.as_deref(), kind) {
        (None, _) => TokenLimitField::MaxTokens,
        (Some("max_tokens"), ProviderKind::Openai) => TokenLimitField::MaxTokens,
        (Some("max_completion_tokens"), ProviderKind::Openai) => {
            TokenLimitField::MaxCompletionTokens
        }
        (Some(other), ProviderKind::Openai) => {
            return Err(err(
                &at("token_limit_field"),
                format!("`{other}` is not one of max_tokens, max_completion_tokens"),
            ));
        }
        (Some(_), other) => {
            return Err(err(
                &at("token_limit_field"),
                format!(
                    "only `openai` providers take it (this one is `{}`); remove it",
                    other.as_str()
                ),
            ));
        }
    };
    Ok(ProviderConfig {
        name: name.to_string(),
        kind,
        base_url,
        api_key_env,
        max_concurrency,
        requests_per_minute: p.requests_per_minute.unwrap_or(0),
        tokens_per_minute: p.tokens_per_minute.unwrap_or(0),
        timeout_secs,
        max_retries,
        token_limit_field,
    })
}

/// The highest price per million tokens taken (the dearest models cost hundreds).
const MAX_PRICE_PER_MTOK: f64 = 1_000_000.0;

pub(super) fn resolve_models(
    section: &str,
    raw: Vec<RawModel>,
    providers: &BTreeMap<String, ProviderConfig>,
    err: &ErrFn,
) -> Result<Vec<ModelConfig>, ConfigError> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::with_capacity(raw.len());
    for (i, m) in raw.into_iter().enumerate() {
        let at = |k: &str| format!("{section}[{i}].{k}");
        if !valid_id(&m.id) {
            return Err(err(
                &at("id"),
                format!(
                    "`{}` is not a valid id (use letters, digits and . _ - : / only)",
                    m.id
                ),
            ));
        }
        if !seen.insert(m.id.clone()) {
            return Err(err(
                &at("id"),
                format!("`{}` is defined twice; ids must be unique", m.id),
            ));
        }
        if !providers.contains_key(&m.provider) {
            let known: Vec<&str> = providers.keys().map(String::as_str).collect();
            return Err(err(
                &at("provider"),
                format!(
                    "unknown provider `{}` (defined: {}); add a [providers.{}] table",
                    m.provider,
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    },
                    toml_key(&m.provider)
                ),
            ));
        }
        let family = match m.family.as_deref().map(str::trim) {
            Some(f) if f.chars().any(char::is_alphanumeric) => f.to_string(),
            // Families are compared by their letters and digits: `-` or `?` names none.
            Some(f) if !f.is_empty() => {
                return Err(err(
                    &at("family"),
                    format!(
                        "`{f}` names no family (it has no letter or digit); set the provider family (e.g. \"openai\", \"meta\")"
                    ),
                ));
            }
            _ => {
                return Err(err(
                    &at("family"),
                    format!(
                        "`{}` has no family; set the provider family (e.g. \"openai\", \
                         \"anthropic\", \"meta\") so that a judge of the same family can be refused",
                        m.id
                    ),
                ));
            }
        };
        for (key, price) in [
            ("price_input_per_mtok", m.price_input_per_mtok),
            ("price_output_per_mtok", m.price_output_per_mtok),
        ] {
            if price.is_some_and(|p| !(p >= 0.0 && p.is_finite())) {
                return Err(err(&at(key), "must be a non-negative number".into()));
            }
            // Dollars per million tokens: far above any price, a typo (or a cost that
            // overflows to "unknown").
            if price.is_some_and(|p| p > MAX_PRICE_PER_MTOK) {
                return Err(err(
                    &at(key),
                    format!(
                        "is above {MAX_PRICE_PER_MTOK} (dollars per million tokens); check the number"
                    ),
                ));
            }
        }
        if m.price_input_per_mtok.is_some() != m.price_output_per_mtok.is_some() {
            // Named by the key that is missing.
            let missing = if m.price_input_per_mtok.is_none() {
                "price_input_per_mtok"
            } else {
                "price_output_per_mtok"
            };
            return Err(err(
                &at(missing),
                "is missing: set both input and output prices, or neither (unpriced)".into(),
            ));
        }
        out.push(ModelConfig {
            id: m.id,
            provider: m.provider,
            model: m.model,
            family,
            price_input_per_mtok: m.price_input_per_mtok,
            price_output_per_mtok: m.price_output_per_mtok,
        });
    }
    Ok(out)
}

/// Ids appear in records, file names of labels and leaderboards: keep them plain.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-:/".contains(c))
}

/// Why `url` cannot be a provider's `base_url`, if it cannot: not an http(s) URL with a host,
/// or one that carries a secret. `base_url` is recorded in every run's manifest and cache key,
/// so credentials (`user:pass@`) or a query (`?key=…`) would reach the disk; the query would
/// also end up in the middle of every request path. The URL itself is not echoed then.
fn base_url_problem(url: &str) -> Option<String> {
    let parsed = match reqwest::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => u,
        // Quoted up to its host only when it has no `@`: what comes before one may be a
        // password.
        _ if url.contains('@') => {
            return Some("is not an http(s) URL with a host (it is not echoed: it holds an `@`, and what stands before one may be a password)".into());
        }
        _ => {
            return Some(format!(
                "`{}` is not an http(s) URL",
                crate::report::printable(url)
            ));
        }
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Some(
            "has a user name or password in it (`user:pass@`), which would be recorded in the run's manifest; remove it and give the key through api_key_env".into(),
        );
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Some(
            "has a query or fragment (`?…`, `#…`), which would be recorded in the run's manifest and break the request paths judge appends; remove it (a key goes through api_key_env)".into(),
        );
    }
    None
}
