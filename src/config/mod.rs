//! `judge.toml` → a validated [`Config`]: providers, models, judges and the run-wide generation
//! settings. Parsing is pure (`parse_config` takes the text); reading the file happens in
//! `load_config`, and API keys are read from the environment only when an HTTP provider is built
//! (`engine::calls`). Every error names the file, the key and what to do.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Generation settings that may only appear once, under `[run]` (DESIGN rule 1).
const GENERATION_KEYS: &[&str] = &[
    "max_tokens",
    "temperature",
    "style",
    "instruction",
    "seed",
    "top_p",
    "top_k",
    "stop",
    "system",
    "system_prompt",
    "presence_penalty",
    "frequency_penalty",
];

/// A config problem: where it is and what to do about it, as one line.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct ConfigError {
    /// The config file (as given).
    pub file: String,
    /// The offending key, e.g. `models[2].provider`, or `line 12` for syntax errors.
    pub key: String,
    /// What is wrong and what to do.
    pub message: String,
}

/// The kind of a provider: which API it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI Chat Completions and every server compatible with it (vLLM, llama.cpp, Ollama, …).
    Openai,
    /// Anthropic Messages API.
    Anthropic,
    /// Google Gemini generateContent.
    Gemini,
    /// Replays hand-written answers from the suite's `answers/<set>/` (no network).
    Files,
}

impl ProviderKind {
    /// The name used in config and records.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Files => "files",
        }
    }

    /// Default `base_url` and key variable of an HTTP kind.
    fn defaults(self) -> Option<(&'static str, &'static str)> {
        match self {
            ProviderKind::Openai => Some(("https://api.openai.com/v1", "OPENAI_API_KEY")),
            ProviderKind::Anthropic => Some((
                crate::provider::anthropic::DEFAULT_BASE_URL,
                "ANTHROPIC_API_KEY",
            )),
            ProviderKind::Gemini => {
                Some((crate::provider::gemini::DEFAULT_BASE_URL, "GEMINI_API_KEY"))
            }
            ProviderKind::Files => None,
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "openai" => Some(ProviderKind::Openai),
            "anthropic" => Some(ProviderKind::Anthropic),
            "gemini" => Some(ProviderKind::Gemini),
            "files" => Some(ProviderKind::Files),
            _ => None,
        }
    }
}

/// A resolved provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderConfig {
    /// The name of the `[providers.<name>]` table.
    pub name: String,
    pub kind: ProviderKind,
    /// Base URL of the API, without a trailing slash (HTTP providers only).
    pub base_url: Option<String>,
    /// Name of the environment variable holding the key; `None` = the server needs no key.
    /// Only the name is ever stored: the key itself is read at request time.
    pub api_key_env: Option<String>,
    pub max_concurrency: usize,
    /// 0 = no limit.
    pub requests_per_minute: u32,
    /// Estimated tokens (prompt characters / 4 + the token cap) per minute; 0 = no limit.
    #[serde(default)]
    pub tokens_per_minute: u64,
    pub timeout_secs: u64,
    /// Retries per request after the first attempt.
    pub max_retries: u32,
    /// `openai` only: the body field that carries the token cap.
    #[serde(default, skip_serializing_if = "TokenLimitField::is_default")]
    pub token_limit_field: TokenLimitField,
}

/// The OpenAI request field that carries the token cap: `max_tokens` (every OpenAI-compatible
/// server), or `max_completion_tokens`, which OpenAI's reasoning models (o-series, GPT-5)
/// require and which counts their reasoning tokens too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenLimitField {
    #[default]
    MaxTokens,
    MaxCompletionTokens,
}

impl TokenLimitField {
    /// The field's name in the request body.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenLimitField::MaxTokens => "max_tokens",
            TokenLimitField::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    fn is_default(&self) -> bool {
        *self == TokenLimitField::MaxTokens
    }
}

/// A model being evaluated, or a judge (same shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelConfig {
    /// The id used in records and leaderboards.
    pub id: String,
    /// Name of the provider table.
    pub provider: String,
    /// The provider's model name (for `files`: the answer set name).
    pub model: String,
    /// Provider family, e.g. `openai`, `anthropic`, `meta` (judge family exclusion).
    pub family: String,
    /// USD per million input tokens; `None` = unpriced.
    pub price_input_per_mtok: Option<f64>,
    /// USD per million output tokens; `None` = unpriced.
    pub price_output_per_mtok: Option<f64>,
}

impl ModelConfig {
    /// Cost of a call in USD, or `None` when the model is unpriced.
    pub fn cost_usd(&self, input_tokens: u64, output_tokens: u64) -> Option<f64> {
        let (pi, po) = (self.price_input_per_mtok?, self.price_output_per_mtok?);
        Some((input_tokens as f64 * pi + output_tokens as f64 * po) / 1e6)
    }

    /// The price as a note names it: `$1/$2 per million input/output tokens`, or `unpriced`.
    pub fn price_text(&self) -> String {
        match (self.price_input_per_mtok, self.price_output_per_mtok) {
            (Some(i), Some(o)) => format!("${i}/${o} per million input/output tokens"),
            _ => "unpriced".to_string(),
        }
    }
}

/// A named style preset, applied to every model alike.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StylePreset {
    None,
    Concise,
    Eli5,
}

impl StylePreset {
    /// Every preset name, for error messages and `--help`.
    pub const NAMES: &'static [&'static str] = &["none", "concise", "eli5"];

    fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(StylePreset::None),
            "concise" => Some(StylePreset::Concise),
            "eli5" => Some(StylePreset::Eli5),
            _ => None,
        }
    }

    /// The instruction this preset adds to the system message ("" for `none`).
    pub fn instruction(self) -> &'static str {
        match self {
            StylePreset::None => "",
            StylePreset::Concise => {
                "Be concise: give the answer and only as much explanation as is needed to use it."
            }
            StylePreset::Eli5 => {
                "Explain your answer in plain words for a newcomer with no background: short \
                 sentences, no jargon without a definition."
            }
        }
    }
}

impl fmt::Display for StylePreset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            StylePreset::None => "none",
            StylePreset::Concise => "concise",
            StylePreset::Eli5 => "eli5",
        };
        f.write_str(name)
    }
}

/// Run-wide settings: identical for every model (DESIGN rule 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    pub suite: String,
    pub max_tokens: u32,
    pub temperature: f64,
    pub style: StylePreset,
    /// Free-text instruction added after the style preset ("" = none).
    pub instruction: String,
    pub seed: u64,
    /// Token cap for judge replies.
    #[serde(default = "default_judge_max_tokens")]
    pub judge_max_tokens: u32,
    /// Temperature of judge calls (default 0; a reasoning model as judge takes only 1).
    #[serde(default)]
    pub judge_temperature: f64,
}

/// The generation settings stored with every output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerationSettings {
    pub max_tokens: u32,
    pub temperature: f64,
    pub style: String,
    pub instruction: String,
}

impl RunSettings {
    /// The subset stored with every output record.
    pub fn generation(&self) -> GenerationSettings {
        GenerationSettings {
            max_tokens: self.max_tokens,
            temperature: self.temperature,
            style: self.style.to_string(),
            instruction: self.instruction.clone(),
        }
    }
}

/// A validated `judge.toml`.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    /// The file it came from.
    pub path: PathBuf,
    /// The project root: the directory holding the config (suites/, cache/, runs/ live here).
    pub root: PathBuf,
    pub run: RunSettings,
    pub providers: BTreeMap<String, ProviderConfig>,
    pub models: Vec<ModelConfig>,
    pub judges: Vec<ModelConfig>,
    /// Providers that send their kind's default key variable (`OPENAI_API_KEY`, …) to a host
    /// other than that kind's API, because `api_key_env` was left out: said when the key is
    /// read, since that server may not be the key's owner.
    #[serde(skip)]
    pub default_key_elsewhere: BTreeSet<String>,
}

impl Config {
    /// `suites/` under the project root.
    pub fn suites_dir(&self) -> PathBuf {
        self.root.join("suites")
    }
    /// `cache/` under the project root.
    pub fn cache_dir(&self) -> PathBuf {
        self.root.join("cache")
    }
    /// `runs/` under the project root.
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }
    /// The provider a model uses (validated to exist).
    pub fn provider_of(&self, model: &ModelConfig) -> &ProviderConfig {
        self.providers
            .get(&model.provider)
            .expect("model providers are validated at load")
    }
}

/// Reads and validates the config file. Errors are [`crate::error::JudgeError::Usage`].
pub fn load_config(path: &Path) -> anyhow::Result<Config> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        let what = match e.kind() {
            std::io::ErrorKind::NotFound => "create it, or pass --config PATH",
            std::io::ErrorKind::InvalidData => "it is not valid UTF-8: save it as UTF-8",
            _ if path.is_dir() => "it is a directory: pass the TOML file with --config PATH",
            _ => "check that you can read it",
        };
        crate::error::JudgeError::usage(format!(
            "cannot read config `{}`: {e} ({what})",
            path.display()
        ))
    })?;
    let mut config = parse_config(&path.display().to_string(), &text)
        .map_err(|e| crate::error::JudgeError::usage(e.to_string()))?;
    config.path = path.to_path_buf();
    config.root = project_root(path);
    Ok(config)
}

/// The project root of the config file at `path`: its directory (`suites/`, `cache/` and
/// `runs/` live there).
pub fn project_root(path: &Path) -> PathBuf {
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    parent.map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

/// Parses and validates config text. `file` names the source in errors.
pub fn parse_config(file: &str, text: &str) -> Result<Config, ConfigError> {
    let err = |key: &str, message: String| ConfigError {
        file: file.to_string(),
        key: key.to_string(),
        message,
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| syntax_error(file, text, &e))?;
    refuse_per_model_settings(&table, file)?;
    let raw: RawConfig = toml::from_str(text).map_err(|e| syntax_error(file, text, &e))?;
    let run = resolve_run(raw.run, &err)?;
    let mut providers = BTreeMap::new();
    let mut default_key_elsewhere = BTreeSet::new();
    for (name, p) in raw.providers {
        let defaulted_key = p.api_key_env.is_none() && p.base_url.is_some();
        let resolved = resolve_provider(&name, p, &err)?;
        let host = |url: &str| {
            reqwest::Url::parse(url)
                .ok()?
                .host_str()
                .map(str::to_string)
        };
        let elsewhere = resolved
            .kind
            .defaults()
            .zip(resolved.base_url.as_deref())
            .is_some_and(|((default_url, _), url)| host(url) != host(default_url));
        if defaulted_key && elsewhere {
            default_key_elsewhere.insert(name.clone());
        }
        providers.insert(name, resolved);
    }
    let models = resolve_models("models", raw.models, &providers, &err)?;
    let judges = resolve_models("judges", raw.judges, &providers, &err)?;
    if let Some(i) = judges
        .iter()
        .position(|j| j.id == crate::judging::EXEC_JUDGE)
    {
        return Err(err(
            &format!("judges[{i}].id"),
            format!(
                "`{}` is the built-in execution judge's id; give this judge another id",
                crate::judging::EXEC_JUDGE
            ),
        ));
    }
    if let Some((i, j)) = judges
        .iter()
        .enumerate()
        .find(|(_, j)| models.iter().any(|m| m.id == j.id))
    {
        return Err(err(
            &format!("judges[{i}].id"),
            format!(
                "`{}` is also a model's id, and leaderboards name their judge by id; give the judge its own id",
                j.id
            ),
        ));
    }
    for (i, j) in judges.iter().enumerate() {
        if let Some(other) = judges[..i]
            .iter()
            // Case too: macOS and Windows file systems ignore it.
            .find(|o| leaderboard_stem(&o.id).eq_ignore_ascii_case(&leaderboard_stem(&j.id)))
        {
            return Err(err(
                &format!("judges[{i}].id"),
                format!(
                    "judges `{}` and `{}` would share the leaderboard file leaderboards/{}.* (`/` and `:` become `_` in file names, and many file systems ignore case); rename one",
                    other.id,
                    j.id,
                    leaderboard_stem(&j.id)
                ),
            ));
        }
    }
    // The Anthropic API takes temperatures up to 1.0: the models' (one for all) and the judges'.
    for (key, temperature, entries, what) in [
        ("run.temperature", run.temperature, &models, "model"),
        (
            "run.judge_temperature",
            run.judge_temperature,
            &judges,
            "judge",
        ),
    ] {
        if temperature > 1.0
            && let Some(m) = entries
                .iter()
                .find(|m| providers[&m.provider].kind == ProviderKind::Anthropic)
        {
            return Err(err(
                key,
                format!(
                    "{temperature} is above 1.0, the most the Anthropic API accepts ({what} `{}`); the same temperature goes to every {what}, so use 0.0..=1.0",
                    m.id
                ),
            ));
        }
    }
    Ok(Config {
        path: PathBuf::from(file),
        root: PathBuf::from("."),
        run,
        providers,
        models,
        judges,
        default_key_elsewhere,
    })
}

/// The line (from 1) of byte `offset` in `text`: 1 + the line breaks before it (`lines()`
/// would miss the line a span starts, when it starts one).
pub(crate) fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

fn syntax_error(file: &str, text: &str, e: &toml::de::Error) -> ConfigError {
    let key = match e.span() {
        Some(span) => format!("line {}", line_of(text, span.start)),
        None => "(file)".to_string(),
    };
    let message = format!(
        "{} (fix the TOML; see the README for every key)",
        e.message().trim()
    );
    ConfigError {
        file: file.to_string(),
        key,
        message,
    }
}

/// DESIGN rule 1: generation settings are run-wide; refuse them on a model or judge.
fn refuse_per_model_settings(table: &toml::Table, file: &str) -> Result<(), ConfigError> {
    for section in ["models", "judges"] {
        let Some(toml::Value::Array(entries)) = table.get(section) else {
            continue;
        };
        for (i, entry) in entries.iter().enumerate() {
            let Some(entry) = entry.as_table() else {
                continue;
            };
            if let Some(key) = GENERATION_KEYS.iter().find(|k| entry.contains_key(**k)) {
                let id = entry.get("id").and_then(|v| v.as_str()).unwrap_or("?");
                return Err(ConfigError {
                    file: file.to_string(),
                    key: format!("{section}[{i}].{key}"),
                    message: format!(
                        "`{key}` is set for `{id}`, but generation settings are run-wide so that \
                         every model is treated alike; set it once under [run] or remove it"
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The file name (without extension) of a judge's leaderboard under `leaderboards/`: its id
/// with `/` and `:` (allowed in ids) as `_`. Two judges whose names collide are refused.
pub fn leaderboard_stem(judge: &str) -> String {
    judge.replace(['/', ':', '\\'], "_")
}

/// `name` as a TOML key: bare when TOML allows it, else quoted.
pub(crate) fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        return name.to_string();
    }
    let mut quoted = String::from('"');
    for c in name.chars() {
        match c {
            '"' | '\\' => {
                quoted.push('\\');
                quoted.push(c);
            }
            c if c.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

mod resolve;

use resolve::{RawConfig, default_judge_max_tokens, resolve_models, resolve_provider, resolve_run};

#[cfg(test)]
mod tests;
