//! Which judges take part in a compare, and the settings each judge is held to: resolved
//! from judge.toml, refused when they would mix judgments made under other settings (model,
//! address, temperature, token cap, prompt) or break family exclusion, and recorded in the
//! manifest before the first call.

use super::*;

/// The ids of the judges with judgments in `records`.
pub(crate) fn judged_by(records: &[JudgmentRecord]) -> BTreeSet<String> {
    records.iter().map(|r| r.judge.clone()).collect()
}

/// The judge prompt, like the judge's settings, is not mixed within a run: an LLM judge whose
/// verdicts in the run (`existing`) came from another prompt than this version renders
/// (`prompt_sha256`, from the tool's template and the suite) is refused. Failed judgments hold
/// no verdict (and `--retry-failed` replaces them), so they do not count.
pub(crate) fn refuse_changed_prompt(
    existing: &[JudgmentRecord],
    judges: &[Judge],
    prompt_sha256: &str,
    run: &str,
) -> anyhow::Result<()> {
    for judge in judges {
        let Judge::Llm(m) = judge else { continue };
        if let Some(other) = existing.iter().find(|r| {
            r.judge == m.id
                && r.prompt_sha256 != prompt_sha256
                && matches!(r.verdict, JudgmentVerdict::Parsed(_))
        }) {
            return Err(JudgeError::usage(format!(
                "judge `{}` judged run `{run}` with prompt {} (runs/{run}/prompts/{}.md), and this version of judge renders prompt {}: judgments from two prompts cannot be mixed in one run; judge into a new run (the outputs come back from the cache)",
                m.id,
                crate::short_hash(&other.prompt_sha256),
                other.prompt_sha256,
                crate::short_hash(prompt_sha256)
            ))
            .into());
        }
    }
    Ok(())
}

/// Judgments made under different settings are not mixed in one run: a judge with judgments
/// in the run (`judged`) is refused when its id now names another model, provider, server or
/// API, or when its temperature or token cap changed. A judge with none yet (a new one, or one
/// whose earlier compare stopped before any call) may take any settings.
pub(crate) fn refuse_changed_judge_setup(
    config: &Config,
    manifest: &Manifest,
    run: &str,
    judges: &[Judge],
    judged: &BTreeSet<String>,
) -> anyhow::Result<()> {
    let Some(recorded) = manifest.extra.get("compare") else {
        return Ok(());
    };
    let entries = recorded.get("judges").and_then(|j| j.as_array());
    let run_wide = RunWideJudgeSettings::of(recorded);
    for judge in judges {
        let Judge::Llm(m) = judge else { continue };
        if !judged.contains(&m.id) {
            continue;
        }
        let Some(entry) = entries
            .into_iter()
            .flatten()
            .find(|e| e.get("id").and_then(|v| v.as_str()) == Some(m.id.as_str()))
        else {
            // Judgments without an entry: an older judge kept only the latest invocation's
            // judges, and recorded them only at the end. Its run-wide settings still bind them.
            let now = u64::from(config.run.judge_max_tokens);
            if let Some(before) = run_wide.max_tokens
                && before != now
            {
                return Err(JudgeError::usage(format!(
                    "[run] judge_max_tokens is {now} but run `{run}` was judged with {before}, and judge `{}` has judgments in it; they cannot be mixed with judgments at another cap: restore {before}, or judge into a new run",
                    m.id
                ))
                .into());
            }
            let now = config.run.judge_temperature;
            if run_wide.temperature != now {
                return Err(JudgeError::usage(format!(
                    "[run] judge_temperature is {now} but run `{run}` was judged at {}, and judge `{}` has judgments in it; they cannot be mixed with judgments at another temperature: restore {}, or judge into a new run",
                    run_wide.temperature, m.id, run_wide.temperature
                ))
                .into());
            }
            continue;
        };
        let id = &m.id;
        let text = |key: &str| entry.get(key).and_then(|v| v.as_str()).unwrap_or_default();
        let refuse = |what: String| -> anyhow::Result<()> { Err(JudgeError::usage(what).into()) };
        // An entry filled in for an older run's judge knows only its settings.
        let identified = entry.get("model").is_some();
        if identified && (text("model") != m.model || text("provider") != m.provider) {
            return refuse(format!(
                "judge `{id}` was `{}` on provider `{}` when run `{run}` was judged, now `{}` on `{}`; give the new judge its own id",
                text("model"),
                text("provider"),
                m.model,
                m.provider
            ));
        }
        // The same model name on another server (or API) can be another model. Entries
        // written before the address was recorded have no `kind`.
        let p = config.provider_of(m);
        let place = |kind: &str, url: Option<&str>| {
            format!("{kind} at {}", url.unwrap_or("its default address"))
        };
        let (then_url, now_url) = (
            entry.get("base_url").and_then(|v| v.as_str()),
            p.base_url.as_deref(),
        );
        // Another spelling of the same server is the same server.
        if !text("kind").is_empty()
            && (text("kind") != p.kind.as_str() || then_url.map(address) != now_url.map(address))
        {
            return refuse(format!(
                "judge `{id}` was called on {} when run `{run}` was judged, now on {} (provider `{}`); the same model name elsewhere can be another model: give the judge there its own id",
                place(text("kind"), then_url),
                place(p.kind.as_str(), now_url),
                m.provider
            ));
        }
        if let Some(then) = entry.get("token_limit_field").and_then(|v| v.as_str())
            && then != p.token_limit_field.as_str()
        {
            return refuse(format!(
                "provider `{}` of judge `{id}` sends its token cap as `{}`, but run `{run}` was judged with `{then}`; its judgments with differently counted caps cannot be mixed: restore token_limit_field = \"{then}\", or judge into a new run",
                m.provider,
                p.token_limit_field.as_str()
            ));
        }
        let now = u64::from(config.run.judge_max_tokens);
        if let Some(before) = entry
            .get("max_tokens")
            .and_then(serde_json::Value::as_u64)
            .or(run_wide.max_tokens)
            && before != now
        {
            return refuse(format!(
                "[run] judge_max_tokens is {now} but judge `{id}` judged run `{run}` with {before}; its judgments with different caps cannot be mixed: restore {before}, judge with other judges only (--judge ID), or judge into a new run"
            ));
        }
        let now = config.run.judge_temperature;
        let before = entry
            .get("temperature")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(run_wide.temperature);
        if before != now {
            return refuse(format!(
                "[run] judge_temperature is {now} but judge `{id}` judged run `{run}` at {before}; its judgments at different temperatures cannot be mixed: restore {before}, judge with other judges only (--judge ID), or judge into a new run"
            ));
        }
    }
    Ok(())
}

/// The judge settings a manifest's compare section held run-wide before they were recorded
/// per judge: what a judge entry without its own stands for.
pub(super) struct RunWideJudgeSettings {
    max_tokens: Option<u64>,
    /// 0 before the setting existed.
    temperature: f64,
}

impl RunWideJudgeSettings {
    fn of(section: &serde_json::Value) -> RunWideJudgeSettings {
        RunWideJudgeSettings {
            max_tokens: section
                .get("judge_max_tokens")
                .and_then(serde_json::Value::as_u64),
            temperature: section
                .get("judge_temperature")
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0),
        }
    }
}

/// A judge's entry in the manifest's compare section: its config, the API and address it was
/// called at, and the settings its judgments are made with.
pub(super) fn judge_entry(config: &Config, judge: &Judge) -> serde_json::Value {
    match judge {
        Judge::Llm(m) => {
            let p = config.provider_of(m);
            let mut v = serde_json::to_value(m).unwrap_or_default();
            v["kind"] = json!(p.kind.as_str());
            v["base_url"] = json!(p.base_url);
            v["token_limit_field"] = json!(p.token_limit_field.as_str());
            v["temperature"] = json!(config.run.judge_temperature);
            v["max_tokens"] = json!(config.run.judge_max_tokens);
            // The whole provider table as resolved (limits, key variable's name, never a
            // key), as the manifest's `providers` holds the models': a judge-only provider
            // is in no other place, and a run is rebuilt from its manifest.
            v["provider_config"] = serde_json::to_value(p).unwrap_or_default();
            v
        }
        Judge::Exec => json!({"id": EXEC_JUDGE, "family": EXEC_FAMILY}),
    }
}

/// Comparisons still missing per judge of `judges` (calls not made yet: an interrupted or
/// cut-short run), given the run's `comparisons`.
pub(super) fn missing_comparisons(
    suite: &Suite,
    judges: &[Judge],
    models: &[ModelConfig],
    comparisons: &[ComparisonRecord],
) -> BTreeMap<String, usize> {
    let pairs = models.len() * models.len().saturating_sub(1) / 2;
    judges
        .iter()
        .map(|j| {
            let tasks = match j {
                Judge::Exec => suite.tasks.iter().filter(|t| t.check.is_some()).count(),
                Judge::Llm(_) => suite.tasks.len(),
            };
            let have = comparisons.iter().filter(|c| c.judge == j.id()).count();
            (j.id().to_string(), (tasks * pairs).saturating_sub(have))
        })
        .collect()
}

/// Writes `judges` into the manifest's compare section, keeping every other judge that ever
/// judged the run (a later --judge subset keeps them) with its missing count. A judge with
/// judgments (`judged`) but no entry, as an older judge left runs, gets one with the run-wide
/// settings it was judged at, before this invocation's replace them. Agreements are replaced
/// when given, else kept.
pub(super) fn record_compare_section(
    manifest: &mut Manifest,
    config: &Config,
    judges: &[Judge],
    judged: &BTreeSet<String>,
    prompt_sha256: &str,
    missing: &BTreeMap<String, usize>,
    agreements: Option<serde_json::Value>,
) {
    let old = manifest.extra.get("compare").cloned().unwrap_or_default();
    let run_wide = RunWideJudgeSettings::of(&old);
    let mut entries: Vec<serde_json::Value> = old
        .get("judges")
        .and_then(|j| j.as_array().cloned())
        .unwrap_or_default();
    // An entry from before settings were kept per judge takes the run-wide ones it was
    // judged with, before this invocation's replace them.
    for e in &mut entries {
        if e.get("id").and_then(|v| v.as_str()) == Some(EXEC_JUDGE) {
            continue;
        }
        if e.get("temperature").is_none() {
            e["temperature"] = json!(run_wide.temperature);
        }
        if e.get("max_tokens").is_none()
            && let Some(cap) = run_wide.max_tokens
        {
            e["max_tokens"] = json!(cap);
        }
    }
    for id in judged {
        let known = entries
            .iter()
            .any(|e| e.get("id").and_then(|v| v.as_str()) == Some(id.as_str()));
        if !known && id != EXEC_JUDGE {
            let mut entry = json!({"id": id, "temperature": run_wide.temperature});
            if let Some(cap) = run_wide.max_tokens {
                entry["max_tokens"] = json!(cap);
            }
            entries.push(entry);
        }
    }
    for j in judges {
        entries.retain(|old| old.get("id").and_then(|v| v.as_str()) != Some(j.id()));
        let mut entry = judge_entry(config, j);
        // Each LLM judge's own prompt: judges that joined under another version keep theirs.
        if matches!(j, Judge::Llm(_)) {
            entry["prompt_sha256"] = json!(prompt_sha256);
        }
        entries.push(entry);
    }
    let mut all_missing: serde_json::Map<String, serde_json::Value> = old
        .get("missing_comparisons")
        .and_then(|m| m.as_object().cloned())
        .unwrap_or_default();
    for (judge, n) in missing {
        all_missing.insert(judge.clone(), json!(n));
    }
    let agreements = agreements
        .or_else(|| old.get("judge_agreement").cloned())
        .unwrap_or_else(|| json!([]));
    manifest.extra.insert(
        "compare".into(),
        json!({
            // The latest LLM judge's prompt (each judge's own is in its entry); none when only
            // the exec judge ever judged the run.
            "prompt_sha256": entries
                .iter()
                .any(|j| j.get("id").and_then(|v| v.as_str()) != Some(EXEC_JUDGE))
                .then_some(prompt_sha256),
            "judges": entries,
            // The latest invocation's; each judge's own are in its entry.
            "judge_max_tokens": config.run.judge_max_tokens,
            "judge_temperature": config.run.judge_temperature,
            "judge_agreement": agreements,
            "missing_comparisons": all_missing,
            "updated_at": crate::time::UtcDateTime::from_system(SystemTime::now()).rfc3339(),
        }),
    );
}

/// The price a run's judgments were costed at stays the run's, as a model's does (see
/// `generate`): a judge of `judges` with judgments in the run (`judged`) whose price judge.toml
/// has since changed takes the recorded price back, with a note, so that every judgment of the
/// run is costed at one price. A new run takes the new price (the cache answers it at no
/// cost).
/// Judge `m` at the price run `manifest` costed its judgments at; `None` for an entry
/// written before judges were recorded whole (which knows no price) or no entry.
pub(crate) fn as_recorded(m: &ModelConfig, manifest: &Manifest) -> Option<ModelConfig> {
    let entry = manifest
        .judge_entry(&m.id)
        .filter(|e| e.get("model").is_some())?;
    let field = |key: &str| entry.get(key).and_then(serde_json::Value::as_f64);
    Some(ModelConfig {
        price_input_per_mtok: field("price_input_per_mtok"),
        price_output_per_mtok: field("price_output_per_mtok"),
        ..m.clone()
    })
}

pub(crate) fn keep_recorded_judge_prices(
    judges: &mut [Judge],
    manifest: &Manifest,
    run: &str,
    judged: &BTreeSet<String>,
) {
    for judge in judges {
        let Judge::Llm(m) = judge else { continue };
        if !judged.contains(&m.id) {
            continue;
        }
        let Some(recorded) = as_recorded(m, manifest) else {
            continue;
        };
        let price = |c: &ModelConfig| (c.price_input_per_mtok, c.price_output_per_mtok);
        if price(&recorded) != price(m) {
            eprintln!(
                "note: {} gives judge `{}` {}, and run `{run}` costed its judgments {}: the run keeps its price so that its costs add up; judge into a new run for the new price (the cache answers it without new calls)",
                crate::config_name(),
                m.id,
                m.price_text(),
                recorded.price_text()
            );
            (m.price_input_per_mtok, m.price_output_per_mtok) = price(&recorded);
        }
    }
}

/// The judges that are models (every judge but `exec`).
pub(crate) fn llm_judges(judges: &[Judge]) -> Vec<&ModelConfig> {
    judges
        .iter()
        .filter_map(|j| match j {
            Judge::Llm(m) => Some(m),
            Judge::Exec => None,
        })
        .collect()
}

/// A base URL as the server it reaches: scheme and host in lower case, the default port
/// made explicit, and every loopback name one (`localhost`, `127.0.0.1`, `[::1]`), so that
/// two spellings of one server compare equal.
fn address(url: &str) -> String {
    let Ok(u) = reqwest::Url::parse(url) else {
        return url.to_string();
    };
    let host = u.host_str().unwrap_or_default().to_ascii_lowercase();
    let ip = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<std::net::IpAddr>()
        .map(|ip| ip.to_canonical());
    let host = if host == "localhost" || ip.is_ok_and(|ip| ip.is_loopback() || ip.is_unspecified())
    {
        "loopback".to_string()
    } else {
        host
    };
    format!(
        "{}://{host}:{}{}",
        u.scheme(),
        u.port_or_known_default().unwrap_or(0),
        u.path().trim_end_matches('/')
    )
}

/// Refuses a judge from the family of any of `models` (DESIGN rule 6), and a judge that is one
/// of them under another family name: the same model on the same API and address.
pub(crate) fn refuse_own_family(
    config: &Config,
    judges: &[Judge],
    models: &[ModelConfig],
) -> anyhow::Result<()> {
    let endpoint = |m: &ModelConfig| {
        config.providers.get(&m.provider).map(|p| {
            let name = m.model.trim().to_lowercase();
            (p.kind, p.base_url.as_deref().map(address), name)
        })
    };
    for judge in judges {
        if let Judge::Llm(j) = judge
            && let Some(m) = models
                .iter()
                .find(|m| endpoint(m).is_some() && endpoint(m) == endpoint(j))
        {
            return Err(JudgeError::usage(format!(
                "judge `{}` is `{}` on the same API and address as ranked model `{}` (families `{}` and `{}`); a model may not judge its own answers: pick a judge from another family",
                j.id, j.model, m.id, j.family, m.family
            ))
            .into());
        }
        // A router's model name says its maker (`openai/gpt-4o`): a judge of that maker under
        // a router's family is still that maker, and so is a ranked model.
        if let Judge::Llm(j) = judge {
            let named = models.iter().find_map(|m| {
                vendor_family(&j.model, &m.family)
                    .map(|fam| (j.model.as_str(), fam, m))
                    .or_else(|| {
                        vendor_family(&m.model, &j.family).map(|fam| (m.model.as_str(), fam, m))
                    })
            });
            if let Some((name, family, m)) = named {
                return Err(JudgeError::usage(format!(
                    "judge `{}` (family `{}`) and ranked model `{}` (family `{}`): the model name `{name}` says its maker is `{family}`, so the judge would rate its own family's models (it favours them): pick a judge from another family",
                    j.id, j.family, m.id, m.family
                ))
                .into());
            }
        }
        let fams = models.iter().map(|m| (m.id.as_str(), m.family.as_str()));
        if let Some(model) = family_conflict(judge.family(), fams) {
            return Err(JudgeError::usage(format!(
                "judge `{}` (family `{}`) is from the same family as ranked model `{model}`; a judge may not rate its own family's models (it favours them): pick a judge from another family (`family` in {})",
                judge.id(),
                judge.family(),
                crate::config_name()
            ))
            .into());
        }
    }
    Ok(())
}

/// Judges whose router-style model name starts with the same maker as a ranked model's
/// (`meta-llama/…` on two routers whose families name the routers): the config's families
/// differ, so DESIGN rule 6 lets them through, but if the prefix is the maker the judge rates
/// its own family. A warning, not a refusal: the prefix may be a re-hoster's (`TheBloke/…`).
pub(crate) fn shared_maker_warnings(judges: &[Judge], models: &[ModelConfig]) -> Vec<String> {
    let mut warnings = Vec::new();
    for judge in judges {
        let Judge::Llm(j) = judge else { continue };
        let Some(prefix) = models
            .iter()
            .find_map(|m| shared_vendor(&j.model, &m.model))
        else {
            continue;
        };
        let named: Vec<String> = models
            .iter()
            .filter(|m| shared_vendor(&j.model, &m.model).is_some())
            .map(|m| format!("`{}` (`{}`, family `{}`)", m.id, m.model, m.family))
            .collect();
        warnings.push(format!(
            "judge `{}` (`{}`, family `{}`) and ranked model {} have names starting with the same maker `{prefix}/`: if that is their maker, the judge rates its own family's models (it favours them); set each one's `family` to its maker (judge then refuses the pair) or pick a judge from another maker",
            j.id,
            j.model,
            j.family,
            named.join(", ")
        ));
    }
    warnings
}

/// Prints [`shared_maker_warnings`] to stderr, each once per process: `judge run` warns before
/// it generates anything (the advice is to change the config, which a begun run cannot), and
/// its compare does not repeat it.
pub(crate) fn warn_shared_makers(judges: &[Judge], models: &[ModelConfig]) {
    static PRINTED: std::sync::Mutex<BTreeSet<String>> = std::sync::Mutex::new(BTreeSet::new());
    let mut printed = PRINTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for w in shared_maker_warnings(judges, models) {
        if printed.insert(w.clone()) {
            eprintln!("warning: {w}");
        }
    }
}

/// The judges named by `wanted` (or the configured ones, else `exec`).
pub(crate) fn resolve_judges(config: &Config, wanted: &[String]) -> anyhow::Result<Vec<Judge>> {
    let ids: Vec<String> = if !wanted.is_empty() {
        wanted.to_vec()
    } else if !config.judges.is_empty() {
        config.judges.iter().map(|j| j.id.clone()).collect()
    } else {
        vec![EXEC_JUDGE.to_string()]
    };
    let mut judges = Vec::new();
    for id in ids {
        if judges.iter().any(|j: &Judge| j.id() == id) {
            continue;
        }
        if id == EXEC_JUDGE {
            judges.push(Judge::Exec);
            continue;
        }
        let Some(m) = config.judges.iter().find(|j| j.id == id) else {
            let mut known: Vec<&str> = config.judges.iter().map(|j| j.id.as_str()).collect();
            known.push(EXEC_JUDGE);
            return Err(JudgeError::usage(format!(
                "unknown judge `{id}` (defined: {}); add it under [[judges]] in {}",
                known.join(", "),
                config.path.display()
            ))
            .into());
        };
        if config.provider_of(m).kind == ProviderKind::Files {
            return Err(JudgeError::usage(format!(
                "judge `{id}` uses a `files` provider, which cannot judge; give it an HTTP provider"
            ))
            .into());
        }
        judges.push(Judge::Llm(m.clone()));
    }
    Ok(judges)
}
