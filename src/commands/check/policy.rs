//! The sandbox policy a check runs under, as `--no-sandbox` and `--timeout-secs` set it, and
//! what is recorded of it: the manifest's `check` section and the basis of the exec judge's
//! verdicts.

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde_json::json;

use crate::error::JudgeError;
use crate::sandbox::{SandboxMode, SandboxPolicy, probe};

use super::CheckRecord;

/// The longest wall-clock limit a check may be given (`--timeout-secs`): one hour.
pub const MAX_TIMEOUT_SECS: u64 = 3600;

/// The sandbox policy; refuses when bubblewrap cannot run unless `no_sandbox`, and a
/// `timeout_secs` outside 1..=[`MAX_TIMEOUT_SECS`].
pub fn sandbox_policy(
    no_sandbox: bool,
    timeout_secs: Option<u64>,
) -> anyhow::Result<SandboxPolicy> {
    let mut policy = SandboxPolicy::default();
    if let Some(t) = timeout_secs {
        if !(1..=MAX_TIMEOUT_SECS).contains(&t) {
            return Err(JudgeError::usage(format!(
                "--timeout-secs {t} is out of range: give 1 to {MAX_TIMEOUT_SECS} seconds (a check that sleeps is stopped only by this wall clock)"
            ))
            .into());
        }
        policy.wall_timeout = std::time::Duration::from_secs(t);
        policy.cpu_secs = policy.cpu_secs.min(t);
    }
    if no_sandbox {
        policy.mode = SandboxMode::None;
        eprintln!(
            "warning: --no-sandbox: model-written code runs UNCONFINED on this machine (only rlimits, a scrubbed environment and a timeout); every check record says `sandbox: none`"
        );
    }
    probe(&policy).map_err(|e| JudgeError::usage(e.to_string()))?;
    Ok(policy)
}

pub(super) fn policy_label(policy: &SandboxPolicy) -> &'static str {
    match policy.mode {
        SandboxMode::None => "none",
        _ => "bwrap",
    }
}

/// The manifest's `check` section: the sandbox and limits the latest checks ran under.
pub(crate) fn record_policy(
    manifest: &mut crate::engine::manifest::Manifest,
    policy: &SandboxPolicy,
) {
    manifest.extra.insert(
        "check".into(),
        json!({
            "sandbox": policy_label(policy),
            "cpu_secs": policy.cpu_secs,
            "memory_bytes": policy.memory_bytes,
            "wall_timeout_secs": policy.wall_timeout.as_secs_f64(),
            "updated_at": crate::time::UtcDateTime::from_system(SystemTime::now()).rfc3339(),
        }),
    );
}

/// What the exec judge's verdicts rest on, recorded with them in the manifest (its compare
/// entry's `checks`): the wall-clock limit of the latest checks (the manifest's check section)
/// and how many of the checks used (`records`, the latest per output) ran unconfined.
pub(crate) fn checks_basis(
    manifest: &crate::engine::manifest::Manifest,
    records: &[CheckRecord],
) -> serde_json::Value {
    let latest: BTreeMap<(&str, &str), &CheckRecord> = records
        .iter()
        .map(|r| ((r.task.as_str(), r.model.as_str()), r))
        .collect();
    json!({
        "wall_timeout_secs": manifest
            .extra
            .get("check")
            .and_then(|c| c.get("wall_timeout_secs"))
            .cloned()
            .unwrap_or(serde_json::Value::Null),
        "checks": latest.len(),
        "unconfined": latest.values().filter(|r| r.sandbox == "none").count(),
    })
}

/// What an exec leaderboard must say of the checks its verdicts rest on, when they did not run
/// as `judge check` runs them by default: a wall-clock limit other than the default (answers
/// slower than it lost), or checks run without the sandbox. From what compare recorded with
/// the verdicts; for a run judged before that, from the manifest's check section and
/// `records`.
pub(crate) fn exec_policy_notes(
    manifest: &crate::engine::manifest::Manifest,
    records: &[CheckRecord],
) -> Vec<String> {
    let basis = manifest
        .judge_entry(crate::judging::EXEC_JUDGE)
        .and_then(|e| e.get("checks"))
        .cloned()
        .unwrap_or_else(|| checks_basis(manifest, records));
    let mut notes = Vec::new();
    let default = SandboxPolicy::default().wall_timeout.as_secs_f64();
    if let Some(limit) = basis
        .get("wall_timeout_secs")
        .and_then(serde_json::Value::as_f64)
        .filter(|&t| t != default)
    {
        notes.push(format!(
            "the checks behind these verdicts last ran with a {limit} s time limit (--timeout-secs; the default is {default} s): an answer slower than that failed"
        ));
    }
    let count = |key: &str| {
        basis
            .get(key)
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(0)
    };
    let unconfined = count("unconfined");
    if unconfined > 0 {
        notes.push(format!(
            "{unconfined} of the {} checks behind these verdicts ran without the sandbox (--no-sandbox)",
            count("checks")
        ));
    }
    notes
}
