//! `runs/<run>/manifest.json`: what produced the run (tool version, argv, resolved config
//! without secrets, suite hash, seed, settings, models, times) and whether it finished.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{ModelConfig, ProviderConfig, RunSettings};
use crate::records::SCHEMA_VERSION;

/// The suite a run was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteInfo {
    pub name: String,
    pub version: String,
    /// SHA-256 over suite.toml and tasks/ (runs recorded before answer sets were left out
    /// of it hold the hash over answers/ too: see [`crate::suite::Suite::hash_with_answers`]).
    pub hash: String,
    /// Each file's short digest ([`crate::suite::Suite::file_digests`]), so that a changed
    /// suite names the files that changed; empty in runs made before it was recorded.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

impl SuiteInfo {
    /// The suite as a run records it.
    pub fn of(suite: &crate::suite::Suite) -> SuiteInfo {
        SuiteInfo {
            name: suite.name.clone(),
            version: suite.version.clone(),
            hash: suite.hash.clone(),
            files: suite.file_digests.clone(),
        }
    }
}

/// The manifest. Sections written by later commands (compare, check, rank) live in `extra`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub schema_version: u32,
    pub tool_version: String,
    pub run: String,
    /// `running`, `complete` or `incomplete` (interrupted or aborted; rerun to resume).
    pub status: String,
    pub created_at: String,
    pub updated_at: String,
    pub argv: Vec<String>,
    pub config_file: String,
    pub suite: SuiteInfo,
    pub seed: u64,
    pub settings: RunSettings,
    pub models: Vec<ModelConfig>,
    pub providers: Vec<ProviderConfig>,
    #[serde(default)]
    pub judges: Vec<ModelConfig>,
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

impl Manifest {
    /// The entry of judge `id` in the compare section (`compare.judges`), if recorded.
    pub fn judge_entry(&self, id: &str) -> Option<&Value> {
        self.extra
            .get("compare")?
            .get("judges")?
            .as_array()?
            .iter()
            .find(|e| e.get("id").and_then(|v| v.as_str()) == Some(id))
    }

    /// [`Manifest::judge_entry`], to change.
    pub fn judge_entry_mut(&mut self, id: &str) -> Option<&mut Value> {
        self.extra
            .get_mut("compare")?
            .get_mut("judges")?
            .as_array_mut()?
            .iter_mut()
            .find(|e| e.get("id").and_then(|v| v.as_str()) == Some(id))
    }

    /// A fresh manifest.
    pub fn new(run: &str, now: &str, suite: SuiteInfo, settings: RunSettings) -> Self {
        Manifest {
            schema_version: SCHEMA_VERSION,
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            run: run.to_string(),
            status: "running".into(),
            created_at: now.to_string(),
            updated_at: now.to_string(),
            argv: std::env::args().collect(),
            config_file: String::new(),
            suite,
            seed: settings.seed,
            settings,
            models: Vec::new(),
            providers: Vec::new(),
            judges: Vec::new(),
            extra: BTreeMap::new(),
        }
    }
}

/// What changed in `suite` since a run recorded `recorded`, for an error: the files, or, for a
/// run without file digests, why they cannot be named.
pub fn suite_changes(recorded: &SuiteInfo, suite: &crate::suite::Suite) -> String {
    let hashes = format!(
        "hash {} → {}",
        crate::short_hash(&recorded.hash),
        crate::short_hash(&suite.hash)
    );
    match suite.changes_since(&recorded.files) {
        Some(files) => format!("{files}; {hashes}"),
        None if recorded.files.is_empty() => format!(
            "{hashes}; the run predates per-file digests, so the file cannot be named, and if it predates answer sets leaving the hash an edited answer set counts too"
        ),
        None => hashes,
    }
}

/// Why a run cannot be resumed with the current config, as one line, or `None` if it can.
/// `has_records(model id)` says whether the run holds any output of that model: a model with
/// none (a mistyped model name stopped the run at its first request) may be pointed at another
/// model or address, as may a provider none of whose models has any.
pub fn resume_conflict(
    old: &Manifest,
    suite: &crate::suite::Suite,
    settings: &RunSettings,
    models: &[ModelConfig],
    providers: &[&ProviderConfig],
    has_records: &dyn Fn(&str) -> bool,
) -> Option<String> {
    if !suite.is_recorded_as(&old.suite.hash) {
        return Some(format!(
            "suite `{}` has changed since run `{}` started ({})",
            suite.name,
            old.run,
            suite_changes(&old.suite, suite)
        ));
    }
    // The judge's token cap does not touch generation (compare guards it on its own).
    let generation_only = |s: &RunSettings| RunSettings {
        judge_max_tokens: 0,
        judge_temperature: 0.0,
        ..s.clone()
    };
    let (old_settings, settings) = (generation_only(&old.settings), generation_only(settings));
    if old_settings != settings {
        let before = serde_json::to_value(&old_settings).unwrap_or_default();
        let after = serde_json::to_value(&settings).unwrap_or_default();
        let changed: Vec<String> = after
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(k, v)| before.get(k.as_str()) != Some(v))
            .map(|(k, v)| {
                format!(
                    "{k}: {} → {v}",
                    before.get(k.as_str()).unwrap_or(&Value::Null)
                )
            })
            .collect();
        // The seed reaches no model, but keys the judge's fences and the label sample: a
        // run keeps it. Another bootstrap seed is a flag of `rank`.
        let seed_hint = if changed.iter().any(|c| c.starts_with("seed:")) {
            format!(
                " (a run keeps its seed, which keys the judge's answer fences and the label sample; to rank with another bootstrap seed: `judge rank --run {} --seed N`)",
                old.run
            )
        } else {
            String::new()
        };
        return Some(format!(
            "the [run] settings differ from those run `{}` was generated with ({}); every model must get identical settings{seed_hint}",
            old.run,
            changed.join(", ")
        ));
    }
    for m in models {
        if let Some(o) = old.models.iter().find(|o| o.id == m.id)
            && (o.provider != m.provider || o.model != m.model)
            && has_records(&m.id)
        {
            return Some(format!(
                "model `{}` was `{}` on provider `{}` in run `{}`, now `{}` on `{}`",
                m.id, o.model, o.provider, old.run, m.model, m.provider
            ));
        }
        // The same model name on another server (or API) can be another model.
        let (Some(then), Some(now)) = (
            old.providers.iter().find(|p| p.name == m.provider),
            providers.iter().find(|p| p.name == m.provider),
        ) else {
            continue;
        };
        let answered = old
            .models
            .iter()
            .any(|o| o.provider == m.provider && has_records(&o.id));
        if answered && (then.kind != now.kind || then.base_url != now.base_url) {
            let place = |p: &ProviderConfig| {
                format!(
                    "{} at {}",
                    p.kind.as_str(),
                    p.base_url.as_deref().unwrap_or("its default address")
                )
            };
            return Some(format!(
                "provider `{}` of model `{}` was {} in run `{}`, now {}",
                m.provider,
                m.id,
                place(then),
                old.run,
                place(now)
            ));
        }
        // The token cap under another field name is another request (a reasoning model can
        // spend it otherwise): the run's answers would not all have had the same settings.
        if answered && then.token_limit_field != now.token_limit_field {
            return Some(format!(
                "provider `{}` of model `{}` sent the token cap as `{}` in run `{}`, now as `{}`; every model of a run gets the same request: restore `token_limit_field = \"{}\"`, or start a new run",
                m.provider,
                m.id,
                then.token_limit_field.as_str(),
                old.run,
                now.token_limit_field.as_str(),
                then.token_limit_field.as_str()
            ));
        }
    }
    None
}

/// Reads `runs/<run>/manifest.json`; an unreadable or invalid manifest is a usage error.
pub fn read_manifest(run_dir: &super::run_dir::RunDir) -> anyhow::Result<Manifest> {
    use anyhow::Context;
    let path = run_dir.file("manifest.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(crate::error::JudgeError::usage(format!(
                "`{}` is not valid UTF-8; restore it or start a new run",
                path.display()
            ))
            .into());
        }
        Err(e) => {
            return Err(e).with_context(|| format!("failed to read `{}`", path.display()));
        }
    };
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
        crate::error::JudgeError::usage(format!(
            "`{}` is not a valid manifest ({e}); start a new run",
            path.display()
        ))
    })?;
    if manifest.schema_version > SCHEMA_VERSION {
        return Err(crate::error::JudgeError::usage(format!(
            "`{}` has schema_version {}, newer than this judge reads ({SCHEMA_VERSION}); it names judge {} as its writer (this is {}): read it with a judge that knows that schema",
            path.display(),
            manifest.schema_version,
            manifest.tool_version,
            env!("CARGO_PKG_VERSION")
        ))
        .into());
    }
    Ok(manifest)
}
