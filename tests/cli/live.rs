//! Live-provider smoke tests: one real request per provider kind. Ignored by default (CI has
//! no network and no keys); run with e.g.
//! `OPENAI_API_KEY=… JUDGE_LIVE_OPENAI_MODEL=gpt-4o-mini cargo test --test cli live -- --ignored`.

use crate::common::{Project, text};

/// Generates one short task with a real provider of `kind`, model from `model_env`.
fn live(kind: &str, key_env: &str, model_env: &str) {
    let (Ok(_), Ok(model)) = (std::env::var(key_env), std::env::var(model_env)) else {
        panic!("set {key_env} and {model_env} to run this live test");
    };
    let config = format!(
        "[run]\nsuite = \"demo\"\nmax_tokens = 64\n\n[providers.live]\nkind = \"{kind}\"\nmax_retries = 2\n\n[[models]]\nid = \"live\"\nprovider = \"live\"\nmodel = \"{model}\"\nfamily = \"live\"\n"
    );
    let p = Project::with_suite(1, &config);
    let out = p
        .judge()
        .env("JUDGE_RETRY_BASE_MS", "1000")
        .args(["generate", "--run", "r"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rec = &p.jsonl("runs/r/outputs.jsonl")[0];
    assert_eq!(rec["status"], "ok", "{rec}");
    assert!(
        rec["usage"]["output_tokens"].as_u64().unwrap_or(0) > 0,
        "{rec}"
    );
}

#[test]
#[ignore = "needs network, OPENAI_API_KEY and JUDGE_LIVE_OPENAI_MODEL"]
fn live_openai() {
    live("openai", "OPENAI_API_KEY", "JUDGE_LIVE_OPENAI_MODEL");
}

#[test]
#[ignore = "needs network, ANTHROPIC_API_KEY and JUDGE_LIVE_ANTHROPIC_MODEL"]
fn live_anthropic() {
    live(
        "anthropic",
        "ANTHROPIC_API_KEY",
        "JUDGE_LIVE_ANTHROPIC_MODEL",
    );
}

#[test]
#[ignore = "needs network, GEMINI_API_KEY and JUDGE_LIVE_GEMINI_MODEL"]
fn live_gemini() {
    live("gemini", "GEMINI_API_KEY", "JUDGE_LIVE_GEMINI_MODEL");
}
