//! `judge generate` end to end.

use std::time::Duration;

use crate::common::{FakeServer, Project, Reply, TEST_KEY, files_config, text};

/// A config with one OpenAI-compatible provider at `url` and two priced models.
fn config(url: &str, extra_provider: &str) -> String {
    format!(
        r#"
[run]
suite = "demo"
max_tokens = 256
temperature = 0.0
seed = 1

[providers.fake]
kind = "openai"
base_url = "{url}"
max_concurrency = 2
timeout_secs = 5
max_retries = 2
{extra_provider}

[[models]]
id = "alpha"
provider = "fake"
model = "alpha-1"
family = "alpha-labs"
price_input_per_mtok = 1.0
price_output_per_mtok = 2.0

[[models]]
id = "beta"
provider = "fake"
model = "beta-1"
family = "beta-labs"
"#
    )
}

/// Replies "answer of <model> to <task prompt>".
fn echo(req: &crate::common::Received, _n: usize) -> Reply {
    Reply::ok(&format!(
        "answer of {} to {}",
        req.body["model"].as_str().unwrap_or("?"),
        req.user_text()
    ))
}

#[test]
fn happy_path_writes_sorted_complete_run() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(3, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let records = p.jsonl("runs/r1/outputs.jsonl");
    let keys: Vec<(String, String)> = records
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap().to_string(),
                r["model"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "outputs sorted by (task, model)");
    assert_eq!(records.len(), 6);
    let first = &records[0];
    assert_eq!(first["status"], "ok");
    assert_eq!(
        first["text"],
        "answer of alpha-1 to Task number 1: write f1()."
    );
    assert_eq!(first["usage"]["input_tokens"], 100);
    assert!(
        (first["cost_usd"].as_f64().unwrap() - 0.0002).abs() < 1e-12,
        "100 in × $1 + 50 out × $2 per M"
    );
    assert_eq!(
        records[1]["cost_usd"],
        serde_json::Value::Null,
        "beta is unpriced"
    );
    assert_eq!(first["settings"]["max_tokens"], 256);
    assert_eq!(server.count(), 6);
    let req = &server.requests()[0];
    assert_eq!(req.path, "/v1/chat/completions");
    assert_eq!(
        req.header("authorization"),
        Some(format!("Bearer {TEST_KEY}").as_str())
    );
    assert_eq!(req.body["messages"][0]["content"], "Answer in Python.");
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r1/manifest.json")).unwrap();
    assert_eq!(manifest["status"], "complete");
    assert_eq!(manifest["suite"]["hash"].as_str().map(str::len), Some(64));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unpriced"), "{stderr}");
}

#[test]
fn identical_settings_reach_every_model() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(
        1,
        &config(&server.url, "").replace(
            "temperature = 0.0",
            "temperature = 0.3\nstyle = \"eli5\"\ninstruction = \"Cite the docs.\"",
        ),
    );
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let strip = |r: &crate::common::Received| {
        let mut b = r.body.clone();
        b["model"] = serde_json::Value::Null;
        b
    };
    assert_eq!(
        strip(&reqs[0]),
        strip(&reqs[1]),
        "only the model name differs"
    );
    let system = reqs[0].body["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("Answer in Python.")
            && system.contains("Cite the docs.")
            && system.contains("plain words"),
        "{system}"
    );
    assert_eq!(reqs[0].body["temperature"], 0.3);
}

#[test]
fn second_run_is_served_from_cache_with_zero_requests() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(3, &config(&server.url, ""));
    assert_eq!(p.run(&["generate", "--run", "a"]).status.code(), Some(0));
    assert_eq!(server.count(), 6);
    let out = p.run(&["generate", "--run", "b"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        server.count(),
        6,
        "a new run with the same settings makes no request"
    );
    let records = p.jsonl("runs/b/outputs.jsonl");
    assert!(
        records
            .iter()
            .all(|r| r["from_cache"] == true && r["attempts"] == 0)
    );
    let texts = |run: &str| {
        p.jsonl(&format!("runs/{run}/outputs.jsonl"))
            .iter()
            .map(|r| r["text"].clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts("a"), texts("b"));
    // --refresh bypasses reads but still writes.
    let out = p.run(&["generate", "--run", "c", "--refresh"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(server.count(), 12);
}

/// A 429 asking to wait `retry_after` seconds.
fn rate_limited(retry_after: &str) -> Reply {
    Reply::Http(
        429,
        vec![("retry-after".into(), retry_after.into())],
        r#"{"error":{"code":"rate_limit_exceeded"}}"#.into(),
    )
}

#[test]
fn rate_limited_with_retry_after_then_ok() {
    let server = FakeServer::start(|req, n| {
        if n == 0 {
            rate_limited("1")
        } else {
            echo(req, n)
        }
    });
    let p = Project::with_suite(
        1,
        &config(&server.url, "max_concurrency = 1").replace("max_concurrency = 2\n", ""),
    );
    let started = std::time::Instant::now();
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "Retry-After: 1 was honoured"
    );
    let rec = &p.jsonl("runs/r/outputs.jsonl")[0];
    assert_eq!(rec["status"], "ok");
    assert_eq!(rec["attempts"], 2);
    assert_eq!(server.count(), 2);
}

/// A 429 pauses the whole provider: requests already waiting for their `requests_per_minute`
/// slot when it came wait out the pause too, rather than each hitting the limit again.
#[test]
fn a_429_pauses_requests_already_waiting_for_their_slot() {
    use std::sync::{Arc, Mutex};
    let arrivals: Arc<Mutex<Vec<std::time::Instant>>> = Arc::default();
    let seen = Arc::clone(&arrivals);
    let server = FakeServer::start(move |req, n| {
        seen.lock().unwrap().push(std::time::Instant::now());
        if n == 0 {
            rate_limited("2")
        } else {
            echo(req, n)
        }
    });
    let p = Project::with_suite(
        4,
        &config(&server.url, "requests_per_minute = 120")
            .replace("max_concurrency = 2", "max_concurrency = 4"),
    );
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let arrivals = arrivals.lock().unwrap();
    assert_eq!(arrivals.len(), 5, "four items, one retried");
    let limited = arrivals[0];
    for later in &arrivals[1..] {
        assert!(
            later.duration_since(limited) >= Duration::from_millis(1900),
            "a request went out {:?} into the 2 s pause",
            later.duration_since(limited)
        );
    }
    // And after it, spaced as requests_per_minute says, not all at its end.
    for pair in arrivals[1..].windows(2) {
        assert!(
            pair[1].duration_since(pair[0]) >= Duration::from_millis(400),
            "two requests {:?} apart under 120 per minute",
            pair[1].duration_since(pair[0])
        );
    }
}

#[test]
fn server_error_forever_is_a_failed_record_and_exit_1() {
    let server = FakeServer::start(|_, _| Reply::status(500, "{\"error\":\"boom\"}"));
    let p = Project::with_suite(1, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let rec = &p.jsonl("runs/r/outputs.jsonl")[0];
    assert_eq!(rec["status"], "failed");
    assert_eq!(rec["error"]["class"], "server_error");
    assert_eq!(rec["error"]["http_status"], 500);
    assert_eq!(rec["attempts"], 3, "first try + max_retries = 2");
    assert_eq!(server.count(), 3);
    assert!(
        text(&out).contains("failed: alpha 1 server_error")
            // The --model filter kept: without it the hint would add `beta` to the run.
            && text(&out).contains("to ask again: `judge generate --run r --model alpha --retry-failed`, then `judge compare --run r` to judge the new outputs; or both: `judge run --run r --model alpha --retry-failed`")
            && text(&out).contains("run `r`: 1 outputs (1 failed)"),
        "{}",
        text(&out)
    );
    // A resume does not retry failures unless asked to.
    assert_eq!(
        p.run(&["generate", "--run", "r", "--model", "alpha"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(server.count(), 3);
    assert_eq!(
        p.run(&[
            "generate",
            "--run",
            "r",
            "--model",
            "alpha",
            "--retry-failed"
        ])
        .status
        .code(),
        Some(1)
    );
    assert_eq!(server.count(), 6);
    assert_eq!(
        p.jsonl("runs/r/outputs.jsonl").len(),
        1,
        "a retried item keeps one record"
    );
}

/// Regression: a failed output the provider billed (an empty reply, with usage) dropped out
/// of the run's costs once `--retry-failed` replaced it.
#[test]
fn billed_failures_replaced_by_retry_failed_keep_their_cost() {
    // Two empty replies (billed: usage 100 in, 50 out), then answers.
    let server = FakeServer::start(|req, n| if n < 2 { Reply::ok("") } else { echo(req, n) });
    let p = Project::with_suite(1, &config(&server.url, ""));
    let generate = |extra: &[&str]| {
        let mut args = vec!["generate", "--run", "r", "--model", "alpha"];
        args.extend_from_slice(extra);
        p.run(&args)
    };
    assert_eq!(generate(&[]).status.code(), Some(1));
    assert_eq!(generate(&["--retry-failed"]).status.code(), Some(1));
    let out = generate(&["--retry-failed"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(server.count(), 3);
    let records = p.jsonl("runs/r/outputs.jsonl");
    assert_eq!(records.len(), 1);
    let rec = &records[0];
    assert_eq!(rec["status"], "ok");
    // Each call: 100 × $1 + 50 × $2 per million tokens = $0.0002.
    assert_eq!(rec["cost_usd"], 0.0002);
    assert_eq!(rec["replaced"]["usage"]["input_tokens"], 200, "{rec}");
    assert_eq!(rec["replaced"]["usage"]["output_tokens"], 100, "{rec}");
    assert!(
        (rec["replaced"]["cost_usd"].as_f64().unwrap() - 0.0004).abs() < 1e-12,
        "{rec}"
    );
    // The run's totals count all three billed calls; this invocation spent one.
    let s = text(&out);
    assert!(s.contains("$0.0006"), "{s}");
    assert!(s.contains("$0.0002 spent"), "{s}");
}

#[test]
fn unauthorized_aborts_with_exit_3_naming_the_env_var() {
    let server = FakeServer::start(|_, _| {
        Reply::status(
            401,
            &format!("{{\"error\":{{\"message\":\"Incorrect API key provided: {TEST_KEY}\"}}}}"),
        )
    });
    let p = Project::with_suite(
        4,
        &config(&server.url, "max_concurrency = 1").replace("max_concurrency = 2\n", ""),
    );
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OPENAI_API_KEY"), "{stderr}");
    assert!(
        !stderr.contains(TEST_KEY),
        "the key is redacted even when the server echoes it"
    );
    assert!(
        server.count() <= 2,
        "the run stops at the first 401 (saw {})",
        server.count()
    );
    assert!(
        p.read("runs/r/outputs.jsonl").is_empty(),
        "no item is recorded as failed for a bad key"
    );
    assert!(
        text(&out).contains("once fixed, rerun the same command with `--run r` to resume"),
        "{}",
        text(&out)
    );
    // Under a default name, the run it started and could not fill is not left behind; a
    // named run stays, to be resumed.
    let out = p.run(&["generate"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("removed: nothing was generated"),
        "{}",
        text(&out)
    );
    // Nothing to resume: the advice names no run.
    assert!(
        text(&out).contains("once fixed, rerun the same command")
            && !text(&out).contains("to resume"),
        "{}",
        text(&out)
    );
    let runs: Vec<_> = std::fs::read_dir(p.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(runs, ["r"], "only the named run is left");
}

#[test]
fn malformed_json_body_is_a_failed_record() {
    let server = FakeServer::start(|_, _| Reply::status(200, "<html>502 Bad Gateway</html>"));
    let p = Project::with_suite(1, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let rec = &p.jsonl("runs/r/outputs.jsonl")[0];
    assert_eq!(rec["error"]["class"], "malformed_response");
    assert!(
        rec["error"]["message"]
            .as_str()
            .unwrap()
            .contains("502 Bad Gateway")
    );
    assert_eq!(server.count(), 1, "a malformed body is not retried");
}

#[test]
fn hung_request_hits_the_timeout() {
    let server = FakeServer::start(|_, _| Reply::Hang);
    let cfg = config(&server.url, "")
        .replace("timeout_secs = 5", "timeout_secs = 1")
        .replace("max_retries = 2", "max_retries = 1");
    let p = Project::with_suite(1, &cfg);
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let rec = &p.jsonl("runs/r/outputs.jsonl")[0];
    assert_eq!(rec["error"]["class"], "timeout");
    assert_eq!(rec["attempts"], 2);
}

#[test]
fn body_cut_off_mid_way_is_retried() {
    let server = FakeServer::start(|req, n| {
        if n == 0 {
            Reply::CutMidBody
        } else {
            echo(req, n)
        }
    });
    let p = Project::with_suite(1, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/outputs.jsonl")[0]["attempts"], 2);
}

#[test]
fn resume_after_sigkill_requests_only_missing_items() {
    let server = FakeServer::start(|req, n| {
        Reply::Delayed(Duration::from_millis(150), Box::new(echo(req, n)))
    });
    let cfg = config(&server.url, "max_concurrency = 1").replace("max_concurrency = 2\n", "");
    let p = Project::with_suite(12, &cfg);
    let mut child = p
        .judge()
        .args(["generate", "--run", "r", "--model", "alpha"])
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while server.count() < 5 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    let before = server.count();
    assert!(before < 12, "killed mid-way");
    let kept: Vec<String> = p
        .read("runs/r/outputs.jsonl")
        .lines()
        .filter(|l| l.ends_with('}'))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("every finished line is whole")
                    ["task"]
                    .as_str()
                    .unwrap()
                    .to_string()
        })
        .collect();
    assert!(!kept.is_empty());

    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let second: Vec<String> = server.requests()[before..]
        .iter()
        .map(|r| r.user_text())
        .collect();
    for task in &kept {
        let n: usize = task.trim_start_matches('t').parse().unwrap();
        let prompt = format!("Task number {n}: write f{n}().");
        assert!(
            !second.contains(&prompt),
            "finished item {task} was requested again"
        );
    }
    assert_eq!(
        second.len() + kept.len(),
        12 - cached_but_unrecorded(&p, &kept)
    );
    let records = p.jsonl("runs/r/outputs.jsonl");
    assert_eq!(records.len(), 12);
    assert!(records.iter().all(|r| r["status"] == "ok"));
    for f in p
        .all_files()
        .iter()
        .filter(|f| f.starts_with(p.path().join("cache")))
    {
        let text = std::fs::read_to_string(f).unwrap();
        serde_json::from_str::<serde_json::Value>(&text)
            .unwrap_or_else(|e| panic!("corrupt cache entry {}: {e}", f.display()));
    }
}

/// Items whose response reached the cache before the kill but whose record did not reach the
/// outputs: served from the cache on resume (no request).
fn cached_but_unrecorded(p: &Project, kept: &[String]) -> usize {
    let records = p.jsonl("runs/r/outputs.jsonl");
    records
        .iter()
        .filter(|r| {
            r["from_cache"] == true && !kept.contains(&r["task"].as_str().unwrap().to_string())
        })
        .count()
}

#[test]
fn api_key_never_reaches_disk() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(2, &config(&server.url, ""));
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    let files = p.all_files();
    assert!(
        files.iter().any(|f| f.starts_with(p.path().join("cache"))),
        "cache entries were written"
    );
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(TEST_KEY), "API key found in {}", f.display());
    }
}

#[test]
fn config_error_exits_2_and_writes_nothing() {
    let server = FakeServer::start(echo);
    let bad = config(&server.url, "").replace(
        "family = \"beta-labs\"",
        "family = \"beta-labs\"\ntemperature = 1.0",
    );
    let p = Project::with_suite(1, &bad);
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("error: judge.toml: models[1].temperature:"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one-line error: {stderr}");
    assert!(!p.path().join("runs").exists() && !p.path().join("cache").exists());
    assert_eq!(server.count(), 0);
}

/// Generates a one-task run whose provider reads its key from `FAKE_PROVIDER_KEY`, set to
/// `key` (unset for `None`).
fn generate_with_key(server: &FakeServer, key: Option<&str>) -> (Project, std::process::Output) {
    let p = Project::with_suite(
        1,
        &config(&server.url, "api_key_env = \"FAKE_PROVIDER_KEY\""),
    );
    let mut cmd = p.judge();
    cmd.args(["generate", "--run", "r"]);
    match key {
        Some(k) => cmd.env("FAKE_PROVIDER_KEY", k),
        None => cmd.env_remove("FAKE_PROVIDER_KEY"),
    };
    let out = cmd.output().unwrap();
    (p, out)
}

#[test]
fn missing_key_env_exits_2_naming_it() {
    let server = FakeServer::start(echo);
    let (p, out) = generate_with_key(&server, None);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "provider `fake` needs an API key in the environment variable `FAKE_PROVIDER_KEY` (used by `alpha`, `beta`); export it, or set another variable's name as api_key_env under [providers.fake] in "
        ),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("runs").exists());
}

/// A key with a control character (a CR from a Windows .env file inside it) cannot go into a
/// header: refused before anything is sent or written, without echoing it, instead of every
/// item failing as a network error.
#[test]
fn a_key_with_a_control_character_is_refused_before_any_request() {
    let server = FakeServer::start(echo);
    let (p, out) = generate_with_key(&server, Some("sk-test-KEYPART\r\u{1}-rest"));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "the API key in `FAKE_PROVIDER_KEY` (provider `fake`) contains a control character"
        ),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("KEYPART"), "{}", text(&out));
    assert_eq!(server.count(), 0);
    assert!(!p.path().join("runs").exists());
}

/// The kind's default key sent to another host is noted; naming the variable drops the note.
#[test]
fn the_default_key_sent_to_another_host_is_noted() {
    let server = FakeServer::start(echo);
    for (extra, noted) in [("", true), ("api_key_env = \"OPENAI_API_KEY\"", false)] {
        let p = Project::with_suite(1, &config(&server.url, extra));
        let out = p.run(&["generate", "--run", "r"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(
            text(&out).contains(
                "note: provider `fake` sends `OPENAI_API_KEY` (the default key of kind `openai`)"
            ),
            noted,
            "{extra}: {}",
            text(&out)
        );
        // `judge run` builds the providers for each step: one note all the same.
        let judged = format!(
            "{}\n[[judges]]\nid = \"j\"\nprovider = \"fake\"\nmodel = \"judge-1\"\nfamily = \"judge-labs\"\n",
            config(&server.url, extra)
        );
        p.write("judge.toml", &judged);
        let out = p.run(&["run", "--run", "all"]);
        assert!(
            text(&out).contains("judge `j`"),
            "the run reached compare: {}",
            text(&out)
        );
        assert_eq!(
            text(&out).matches("note: provider `fake` sends").count(),
            usize::from(noted),
            "{extra}: {}",
            text(&out)
        );
    }
}

/// Hand-written answers cost nothing known: the totals line never says `$0.00`.
#[test]
fn unpriced_items_alone_spend_an_unknown_amount_not_zero() {
    let p = Project::offline();
    let out = p.run(&["generate", "--run", "g", "--model", "reference"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("an unknown amount (25 item(s) unpriced or without usage) spent"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("$0.00"), "{}", text(&out));
}

/// `--refresh` asks again only for items still to generate: on a finished run it says so
/// rather than doing nothing in silence.
#[test]
fn refresh_on_a_finished_run_says_what_it_does() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(1, &config(&server.url, ""));
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    let out = p.run(&["generate", "--run", "r", "--refresh"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(
            "note: --refresh asks again only for items still to generate, and run `r` has none"
        ),
        "{}",
        text(&out)
    );
}

#[test]
fn suite_error_exits_2() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(1, &config(&server.url, ""));
    p.write("suites/demo/tasks/t01/notes.txt", "a stray file in a task");
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unexpected file `tasks/t01/notes.txt`"));
}

#[test]
fn resume_with_changed_settings_is_refused() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(1, &config(&server.url, ""));
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    p.write(
        "judge.toml",
        &config(&server.url, "").replace("max_tokens = 256", "max_tokens = 512"),
    );
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("max_tokens"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("--seed N"), "{}", text(&out));
    // A changed seed (someone wanting another bootstrap) is pointed to rank's flag.
    p.write(
        "judge.toml",
        &config(&server.url, "").replace("seed = 1\n", "seed = 11\n"),
    );
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("seed: ") && text(&out).contains("`judge rank --run r --seed N`"),
        "{}",
        text(&out)
    );
}

#[test]
fn resume_against_another_server_is_refused() {
    let first = FakeServer::start(echo);
    let second = FakeServer::start(echo);
    let p = Project::with_suite(1, &config(&first.url, ""));
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    p.write("judge.toml", &config(&second.url, ""));
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains(&second.url), "{}", text(&out));
    assert_eq!(second.count(), 0);
}

/// A mistyped model name stops the run at its first request (404, nothing recorded); the run
/// then resumes under the corrected name, as the error advises. A model that has outputs
/// cannot be re-pointed.
#[test]
fn a_mistyped_model_can_be_corrected_before_it_has_outputs() {
    let server = FakeServer::start(|req, n| {
        if req.body["model"] == "alpha-typo" {
            Reply::status(
                404,
                r#"{"error":{"message":"The model `alpha-typo` does not exist"}}"#,
            )
        } else {
            echo(req, n)
        }
    });
    let good = config(&server.url, "");
    let p = Project::with_suite(2, &good.replace("\"alpha-1\"", "\"alpha-typo\""));
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("provider `fake` does not know the model `alpha-typo` or the endpoint"),
        "{}",
        text(&out)
    );
    assert!(
        text(&out).contains("once fixed, rerun the same command with `--run r` to resume"),
        "{}",
        text(&out)
    );
    p.write("judge.toml", &good);
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), 4);
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
    assert_eq!(manifest["models"][0]["model"], "alpha-1");
    // With outputs, it is another model: refused.
    p.write("judge.toml", &good.replace("\"alpha-1\"", "\"alpha-2\""));
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out)
            .contains("model `alpha` was `alpha-1` on provider `fake` in run `r`, now `alpha-2`"),
        "{}",
        text(&out)
    );
}

#[test]
fn shipped_offline_default_generates_and_reruns() {
    let p = crate::common::Project::offline();
    let out = p.run(&["generate", "--run", "offline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let records = p.jsonl("runs/offline/outputs.jsonl");
    let tasks = std::fs::read_dir(p.path().join("suites/python-pitfalls/tasks"))
        .unwrap()
        .count();
    assert_eq!(records.len(), tasks * 4);
    assert!(records.iter().all(|r| r["status"] == "ok"));
    let before = p.read("runs/offline/outputs.jsonl");
    let out = p.run(&["generate", "--run", "offline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        p.read("runs/offline/outputs.jsonl"),
        before,
        "a rerun of a complete run changes nothing"
    );
}

/// A run whose manifest was deleted is neither "not found" nor taken over by a new manifest
/// (which would adopt outputs of an older suite or other settings).
#[test]
fn a_run_without_its_manifest_is_refused_not_recreated() {
    let p = crate::common::Project::offline();
    let out = p.run(&["generate", "--run", "r", "--model", "reference"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    std::fs::remove_file(p.path().join("runs/r/manifest.json")).unwrap();
    let before = p.read("runs/r/outputs.jsonl");
    for args in [
        &["generate", "--run", "r"][..],
        &["run", "--run", "r"],
        &["rank", "--run", "r"],
        &["check", "--run", "r"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("run `r` has files but no manifest.json"),
            "{args:?}: {}",
            text(&out)
        );
        assert!(!p.path().join("runs/r/manifest.json").exists(), "{args:?}");
    }
    assert_eq!(p.read("runs/r/outputs.jsonl"), before);
}

#[test]
fn changing_only_the_judge_token_cap_does_not_block_a_generate_resume() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(1, &config(&server.url, ""));
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    p.write(
        "judge.toml",
        &config(&server.url, "").replace("seed = 1", "seed = 1\njudge_max_tokens = 4096"),
    );
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A two-task suite with answer sets `a` and `b` replayed as models `a` and `b`, generated
/// as run `r`.
fn two_set_run() -> Project {
    let p = Project::with_suite(2, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    for set in ["a", "b"] {
        for task in ["t01", "t02"] {
            p.write(&format!("suites/demo/answers/{set}/{task}.md"), "an answer");
        }
    }
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    p
}

/// Adds answer set `c` and its model `c` to [`two_set_run`]'s project.
fn add_answer_set_c(p: &Project) {
    for task in ["t01", "t02"] {
        p.write(
            &format!("suites/demo/answers/c/{task}.md"),
            "another answer",
        );
    }
    p.write(
        "judge.toml",
        &files_config(&[("a", "a", "f"), ("b", "b", "g"), ("c", "c", "h")]),
    );
}

/// A run recorded before answer sets left the suite's hash (its hash covers answers/ too, and
/// it has no file digests) is brought up to date by the next command while its suite is
/// unchanged; one whose answers changed meanwhile gets an error that says why no file is named.
#[test]
fn a_run_with_the_old_suite_hash_is_brought_up_to_date() {
    let p = two_set_run();
    let suite = judge::suite::load_suite(&p.path().join("suites"), "demo").expect("suite");
    let legacy = |p: &Project| {
        let mut manifest: serde_json::Value =
            serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
        manifest["suite"]["hash"] = suite.hash_with_answers.clone().into();
        manifest["suite"].as_object_mut().unwrap().remove("files");
        p.write("runs/r/manifest.json", &manifest.to_string());
    };
    legacy(&p);
    let out = p.run(&["check", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
    assert_eq!(manifest["suite"]["hash"], suite.hash.as_str());
    assert_eq!(
        manifest["suite"]["files"]["tasks/t01/prompt.md"]
            .as_str()
            .map(str::len),
        Some(16)
    );
    // Now a new answer set joins it, as it joins a run made today.
    add_answer_set_c(&p);
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // An old run whose answers changed before it was brought up to date: the error cannot
    // name a file, and says why.
    legacy(&p);
    p.write("suites/demo/answers/a/t01.md", "an edited answer");
    let out = p.run(&["compare", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("the run predates per-file digests, so the file cannot be named, and if it predates answer sets leaving the hash an edited answer set counts too"),
        "{}",
        text(&out)
    );
    // A hash edited by hand into something else is a changed suite, not a crash.
    let mut manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
    manifest["suite"]["hash"] = "aéééééééééé".into();
    p.write("runs/r/manifest.json", &manifest.to_string());
    let out = p.run(&["check", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("(hash aéééééééééé → "),
        "{}",
        text(&out)
    );
}

/// A stray file in an answer set the run does not replay (the next model's answers being
/// written, a note, a file saved in another encoding) stops nothing; replaying that set is
/// refused, naming the file.
#[test]
fn a_stray_file_stops_only_the_set_it_is_in() {
    let p = two_set_run();
    p.write("suites/demo/answers/next/notes.md", "what these are");
    std::fs::create_dir_all(p.path().join("suites/demo/answers/latin")).unwrap();
    std::fs::write(
        p.path().join("suites/demo/answers/latin/t01.md"),
        b"caf\xe9 = 1\n",
    )
    .unwrap();
    p.write("suites/demo/answers/README.md", "where the sets came from");
    for args in [&["generate", "--run", "r"][..], &["check", "--run", "r"]] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    for (set, why) in [
        (
            "next",
            "`answers/next/notes.md` answers task `notes`, which the suite does not have",
        ),
        ("latin", "answers/latin/t01.md` is not valid UTF-8"),
    ] {
        p.write(
            "judge.toml",
            &files_config(&[("a", "a", "f"), ("n", set, "h")]),
        );
        let out = p.run(&["generate", "--run", set]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "model `n` replays answer set `{set}`, which cannot be read as one: "
            )) && text(&out).contains(why),
            "{}",
            text(&out)
        );
        assert!(!p.path().join("runs").join(set).exists());
    }
    // In a set the run replays: a run that has all its answers resumes; a new run, which
    // would replay the set, is refused.
    p.write(
        "judge.toml",
        &files_config(&[("a", "a", "f"), ("b", "b", "g")]),
    );
    p.write("suites/demo/answers/a/notes.txt", "a note");
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["generate", "--run", "fresh"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "unexpected file `answers/a/notes.txt` (an answer set holds only <task>.md files"
        ),
        "{}",
        text(&out)
    );
}

/// An answer file saved with a byte order mark (as Windows editors save UTF-8) replays
/// without it: its code fence is found, and one holding nothing else is empty.
#[test]
fn an_answers_byte_order_mark_is_not_part_of_it() {
    let p = two_set_run();
    p.write(
        "suites/demo/answers/a/t01.md",
        "\u{feff}```python\nx = 1\n```\n",
    );
    p.write("suites/demo/answers/a/t02.md", "\u{feff}\n");
    let out = p.run(&["generate", "--run", "bom"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let outputs = p.jsonl("runs/bom/outputs.jsonl");
    let of = |task: &str| {
        outputs
            .iter()
            .find(|o| o["model"] == "a" && o["task"] == task)
            .unwrap()
            .clone()
    };
    assert_eq!(of("t01")["text"], "```python\nx = 1\n```\n");
    assert_eq!(of("t02")["status"], "failed");
    assert_eq!(of("t02")["error"]["class"], "empty_output");
    // A run an earlier version recorded with the mark: resuming it sees no edit.
    let outputs = p
        .read("runs/bom/outputs.jsonl")
        .replace("\"text\":\"```python", "\"text\":\"\\ufeff```python");
    assert!(outputs.contains("\\ufeff"), "{outputs}");
    p.write("runs/bom/outputs.jsonl", &outputs);
    let out = p.run(&["generate", "--run", "bom"]);
    assert!(!text(&out).contains("changed since"), "{}", text(&out));
}

/// Answer sets are model outputs, not part of the suite: adding one (and its model) to a run
/// that has begun is adding a model, which resumes; editing tasks is a new suite.
#[test]
fn a_new_answer_set_joins_an_existing_run() {
    let p = two_set_run();
    add_answer_set_c(&p);
    let out = p.run(&["generate", "--run", "r", "--model", "c"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), 6);
    // The run's total counts every model's records, not only this invocation's.
    assert!(
        text(&out).contains("run `r`: 6 outputs (0 failed)"),
        "{}",
        text(&out)
    );
    // A `files` model replaying an answer set the suite does not have: a typo, refused.
    p.write(
        "judge.toml",
        &files_config(&[("a", "a", "f"), ("d", "nosuch", "h")]),
    );
    let out = p.run(&["generate", "--run", "typo"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("model `d` replays answer set `nosuch`, which suite `demo` does not have (suites/demo/answers/: a, b, c)"),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("runs/typo").exists());
    // A set whose folder is there but empty is named as such.
    std::fs::create_dir_all(p.path().join("suites/demo/answers/nosuch")).unwrap();
    let out = p.run(&["generate", "--run", "typo"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("model `d` replays answer set `nosuch`, whose folder ")
            && text(&out).contains("answers/nosuch holds no answers; add one <task>.md per task"),
        "{}",
        text(&out)
    );
    std::fs::remove_dir(p.path().join("suites/demo/answers/nosuch")).unwrap();
    // A set name that is not one folder name is not mistaken for an empty set's folder.
    for set in ["a/", "."] {
        p.write(
            "judge.toml",
            &files_config(&[("a", "a", "f"), ("d", set, "h")]),
        );
        let out = p.run(&["generate", "--run", "typo"]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "model `d` replays answer set `{set}`, which suite `demo` does not have"
            )),
            "{}",
            text(&out)
        );
    }
    p.write(
        "judge.toml",
        &files_config(&[("a", "a", "f"), ("b", "b", "g"), ("c", "c", "h")]),
    );
    p.write("suites/demo/tasks/t01/prompt.md", "A changed task.");
    p.write("suites/demo/tasks/t01/check.py", "import solution\n");
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // The error names what changed (the run recorded each file's digest).
    assert!(
        text(&out).contains("has changed since run `r` started (tasks/t01/check.py added, tasks/t01/prompt.md changed; hash "),
        "{}",
        text(&out)
    );
    let out = p.run(&["compare", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("suite `demo` has changed since run `r` was generated (tasks/t01/check.py added, tasks/t01/prompt.md changed; hash "),
        "{}",
        text(&out)
    );
}

/// Replies as OpenAI's reasoning models (o-series, GPT-5) do: 400 for `max_tokens` and for
/// any temperature but 1.
fn reasoning_model(req: &crate::common::Received, _n: usize) -> Reply {
    let refuse = |code: &str, param: &str| {
        Reply::status(
            400,
            &serde_json::json!({"error": {
                "message": format!("Unsupported parameter: '{param}' is not supported with this model."),
                "type": "invalid_request_error", "param": param, "code": code}})
            .to_string(),
        )
    };
    if req.body.get("max_tokens").is_some() {
        return refuse("unsupported_parameter", "max_tokens");
    }
    if req.body["temperature"] != 1.0 {
        return refuse("unsupported_value", "temperature");
    }
    echo(req, 0)
}

/// A reasoning model's refusal of a setting stops the run at once with what to set (it is
/// not recorded as every item's failure), and the settings it names make the run work: the
/// cap as `max_completion_tokens` and temperature 1 for every model.
#[test]
fn a_reasoning_model_says_which_setting_to_change() {
    let server = FakeServer::start(reasoning_model);
    let p = Project::with_suite(2, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("provider `fake` rejects a setting judge sends")
            && text(&out).contains("set `token_limit_field = \"max_completion_tokens\"`"),
        "{}",
        text(&out)
    );
    let fixed = config(&server.url, "token_limit_field = \"max_completion_tokens\"");
    p.write("judge.toml", &fixed);
    let out = p.run(&["generate", "--run", "r2"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("set `temperature = 1.0` under [run]"),
        "{}",
        text(&out)
    );
    p.write(
        "judge.toml",
        &fixed.replace("temperature = 0.0", "temperature = 1.0"),
    );
    let out = p.run(&["generate", "--run", "r3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let last = server.requests().pop().unwrap();
    assert_eq!(last.body["max_completion_tokens"], 256);
    assert_eq!(p.jsonl("runs/r3/outputs.jsonl").len(), 4);
}

/// An empty reply cut by the token cap (a reasoning model that spent the cap on hidden
/// reasoning) fails, but it was billed: its usage and cost are recorded and counted as spent,
/// never shown as $0.
#[test]
fn a_billed_failure_records_its_usage_and_cost() {
    let server = FakeServer::start(|_, _| {
        Reply::Http(
            200,
            vec![],
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"length"}],"usage":{"prompt_tokens":1000,"completion_tokens":256}}"#.into(),
        )
    });
    let p = Project::with_suite(1, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let records = p.jsonl("runs/r/outputs.jsonl");
    assert_eq!(records[0]["status"], "failed");
    assert_eq!(records[0]["error"]["class"], "empty_output");
    assert_eq!(records[0]["usage"]["output_tokens"], 256);
    // 1000 × $1 + 256 × $2 per million tokens.
    let cost = records[0]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.001512).abs() < 1e-12, "{cost}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("$0.0015 spent"),
        "{}",
        text(&out)
    );
}

/// The manifest's status covers every model of the run: resuming one model does not mark a run
/// complete while another still lacks outputs.
#[test]
fn the_run_status_covers_models_not_selected_this_time() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(2, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // As a kill would leave it: beta's outputs never written.
    let kept: String = p
        .read("runs/r/outputs.jsonl")
        .lines()
        .filter(|l| !l.contains("\"model\":\"beta\""))
        .map(|l| format!("{l}\n"))
        .collect();
    p.write("runs/r/outputs.jsonl", &kept);
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
    assert_eq!(manifest["status"], "incomplete");
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
    assert_eq!(manifest["status"], "complete");
}

/// An answer file edited after its model answered is not read again by the run: generate
/// says so instead of leaving the edit silently unused.
#[test]
fn an_answer_edited_after_the_run_answered_is_named() {
    let p = Project::with_suite(2, &files_config(&[("a", "a", "f")]));
    for task in ["t01", "t02"] {
        p.write(&format!("suites/demo/answers/a/{task}.md"), "first answer");
    }
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    p.write("suites/demo/answers/a/t02.md", "second thoughts");
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("warning: answers/a/t02.md changed since model `a` answered in this run; the run keeps the answers it recorded (a new run reads the files afresh)"),
        "{}",
        text(&out)
    );
    assert!(p.read("runs/r/outputs.jsonl").contains("first answer"));
    assert!(!p.read("runs/r/outputs.jsonl").contains("second thoughts"));
}

/// Regression: a price changed in judge.toml after a model answered made the run cost its
/// outputs at two prices (new records at the new one), while the generate summary read the
/// new price and the leaderboard the run's. An answered model keeps the run's price, with a
/// note; a model with no outputs yet takes the new one.
#[test]
fn an_answered_model_keeps_the_price_the_run_costed_it_at() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let failing = Arc::new(AtomicBool::new(true));
    let fail = failing.clone();
    let server = FakeServer::start(move |req, n| {
        let beta_t02 = req.body["model"] == "beta-1" && req.user_text().contains("number 2");
        if beta_t02 && fail.load(Ordering::SeqCst) {
            Reply::Http(400, vec![], r#"{"error":{"message":"bad request"}}"#.into())
        } else {
            echo(req, n)
        }
    });
    let p = Project::with_suite(2, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--model", "beta"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Beta (unpriced when it answered) and alpha (no outputs yet) get new prices.
    let repriced = config(&server.url, "")
        .replace("price_input_per_mtok = 1.0", "price_input_per_mtok = 3.0")
        .replace(
            "family = \"beta-labs\"",
            "family = \"beta-labs\"\nprice_input_per_mtok = 5.0\nprice_output_per_mtok = 5.0",
        );
    p.write("judge.toml", &repriced);
    failing.store(false, Ordering::SeqCst);
    let out = p.run(&["generate", "--run", "r", "--retry-failed"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("note: judge.toml gives model `beta` $5/$5 per million input/output tokens, and run `r` costed its outputs unpriced"),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains("model `alpha`"), "{}", text(&out));
    for r in p.jsonl("runs/r/outputs.jsonl") {
        match r["model"].as_str().unwrap() {
            "beta" => assert!(r["cost_usd"].is_null(), "beta stays unpriced: {r}"),
            _ => assert!(
                (r["cost_usd"].as_f64().unwrap() - 0.0004).abs() < 1e-12,
                "alpha at its new $3 in, $2 out: {r}"
            ),
        }
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
    let entry = |id: &str| {
        manifest["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["id"] == id)
            .unwrap()
            .clone()
    };
    assert!(
        entry("beta")["price_input_per_mtok"].is_null(),
        "{manifest}"
    );
    assert_eq!(entry("alpha")["price_input_per_mtok"], 3.0, "{manifest}");
}

/// Regression (crash fuzzing): the temp file of an atomic write cut short by a kill
/// (`.outputs.jsonl.tmp.PID.N`, often half written) stayed in the run forever; the next
/// command that takes the run's lock removes them.
#[test]
fn temp_files_left_by_a_killed_writer_are_removed() {
    let p = Project::with_suite(1, &files_config(&[("m", "set", "f")]));
    p.write("suites/demo/answers/set/t01.md", "answer");
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    let stale = [
        "runs/r/.outputs.jsonl.tmp.999999.0",
        "runs/r/.manifest.json.tmp.999999.3",
        "runs/r/labels/.sample.jsonl.tmp.999999.1",
    ];
    for f in stale {
        p.write(f, "{\"half\":");
    }
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for f in stale {
        assert!(!p.path().join(f).exists(), "{f} removed");
    }
    assert!(p.path().join("runs/r/outputs.jsonl").is_file());
}

#[test]
fn run_latest_names_the_most_recently_started_run() {
    let p = Project::with_suite(1, &files_config(&[("a", "a", "f")]));
    p.write("suites/demo/answers/a/t01.md", "an answer");
    let none = p.run(&["generate", "--run", "latest"]);
    assert_eq!(none.status.code(), Some(2), "{}", text(&none));
    assert!(text(&none).contains("has none yet"), "{}", text(&none));
    assert!(
        !p.path().join("runs/latest").exists(),
        "no run is named `latest`"
    );
    for run in ["older", "newer"] {
        assert_eq!(p.run(&["generate", "--run", run]).status.code(), Some(0));
    }
    // Started in the same second (most likely): the one started last is still found (by when
    // its folder was made), not the greater name.
    let out = p.run(&["rank", "--run", "latest"]);
    assert!(
        text(&out).contains("--run latest is run `newer`"),
        "{}",
        text(&out)
    );
    // Started the same second: the manifests' times decide, not the names.
    let manifest = p.read("runs/older/manifest.json");
    let later = manifest.replacen("\"created_at\": \"", "\"created_at\": \"9", 1);
    assert_ne!(manifest, later);
    p.write("runs/older/manifest.json", &later);
    let out = p.run(&["generate", "--run", "latest"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let s = text(&out);
    assert!(s.contains("--run latest is run `older`"), "{s}");
    assert!(s.contains("run `older`: 1 outputs"), "{s}");
    // A run named `latest` is that run.
    assert_eq!(
        p.run(&["generate", "--run", "newer"]).status.code(),
        Some(0)
    );
    std::fs::rename(p.path().join("runs/newer"), p.path().join("runs/latest")).unwrap();
    let out = p.run(&["generate", "--run", "latest"]);
    assert!(!text(&out).contains("--run latest is"), "{}", text(&out));
}

/// Regression: two tasks with the same prompt sent at once each got an answer of their own
/// while the cache kept one, so a repeat run gave both the same answer (and a different
/// leaderboard). Identical requests now share the first's reply.
#[test]
fn identical_requests_in_flight_share_one_reply() {
    let server = FakeServer::start(|_, n| Reply::ok(&format!("answer number {n}")));
    let p = Project::with_suite(2, &config(&server.url, ""));
    p.write(
        "suites/demo/tasks/t02/prompt.md",
        "Task number 1: write f1().",
    );
    assert_eq!(p.run(&["generate", "--run", "a"]).status.code(), Some(0));
    assert_eq!(server.count(), 2, "one request per model");
    let texts = |run: &str| {
        p.jsonl(&format!("runs/{run}/outputs.jsonl"))
            .iter()
            .map(|r| (r["model"].clone(), r["text"].clone()))
            .collect::<Vec<_>>()
    };
    let a = texts("a");
    // Sorted by task, then model: t01 alpha, t01 beta, t02 alpha, t02 beta.
    assert_eq!((&a[0], &a[1]), (&a[2], &a[3]), "t01 and t02 alike");
    assert_eq!(p.run(&["generate", "--run", "b"]).status.code(), Some(0));
    assert_eq!(server.count(), 2);
    assert_eq!(texts("b"), a);
}

/// Regression: a resume after changing a provider's `token_limit_field` was accepted, so one
/// run's models got the cap under two field names.
#[test]
fn resuming_with_another_token_limit_field_is_refused() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(1, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    p.write(
        "judge.toml",
        &config(&server.url, "token_limit_field = \"max_completion_tokens\""),
    );
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("sent the token cap as `max_tokens`"),
        "{}",
        text(&out)
    );
    assert_eq!(server.count(), 1);
}

/// Regression: a server quoting the key back encoded (upper case, percent-encoded, base64 of a
/// Basic header) had it written into the failed records' error messages.
#[test]
fn a_key_echoed_in_disguise_reaches_no_file_and_no_output() {
    let upper = TEST_KEY.to_uppercase();
    let percent: String = TEST_KEY.bytes().map(|b| format!("%{b:02X}")).collect();
    // base64 of "Bearer <key>", written out by hand-rolled encoding in the server script.
    let bearer = format!("Bearer {TEST_KEY}");
    let encoded = {
        const DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for c in bearer.as_bytes().chunks(3) {
            let b = [c[0], *c.get(1).unwrap_or(&0), *c.get(2).unwrap_or(&0)];
            let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
            for k in 0..=c.len() {
                out.push(DIGITS[((n >> (18 - 6 * k)) & 63) as usize] as char);
            }
        }
        out
    };
    let disguises = [upper.clone(), percent.clone(), encoded.clone()];
    let bodies = disguises.clone();
    let server = FakeServer::start(move |_, n| {
        Reply::status(
            400,
            &format!("{{\"error\": \"bad request from {}\"}}", bodies[n % 3]),
        )
    });
    let p = Project::with_suite(3, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let shown = text(&out);
    for d in &disguises {
        assert!(!shown.contains(d.as_str()), "{d} in the output: {shown}");
    }
    for f in p.all_files() {
        let content = String::from_utf8_lossy(&std::fs::read(&f).unwrap()).to_string();
        for d in &disguises {
            assert!(!content.contains(d.as_str()), "{d} in {}", f.display());
        }
    }
    let records = p.jsonl("runs/r/outputs.jsonl");
    assert!(
        records.iter().all(|r| r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("quoted the API key in an encoded form")),
        "{records:?}"
    );
}

/// Regression: an outputs.jsonl record of a task the suite does not have (or a model the run
/// never had) was taken as the run's: counted in generate's totals, costed by rank.
#[test]
fn records_of_unknown_tasks_or_models_are_refused() {
    let p = Project::with_suite(1, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    p.write("suites/demo/answers/a/t01.md", "an answer");
    p.write("suites/demo/answers/b/t01.md", "another answer");
    // A hidden test, so that `check` reads the outputs.
    p.write("suites/demo/tasks/t01/check.py", "assert True\n");
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    let outputs = p.read("runs/r/outputs.jsonl");
    let first = outputs.lines().next().unwrap();
    for (edit, named) in [
        (
            first.replace("\"task\":\"t01\"", "\"task\":\"t99\""),
            "task `t99`",
        ),
        (
            first.replace("\"model\":\"a\"", "\"model\":\"zz\""),
            "model `zz`",
        ),
    ] {
        assert_ne!(edit, first);
        p.write("runs/r/outputs.jsonl", &format!("{outputs}{edit}\n"));
        for args in [&["generate", "--run", "r"][..], &["check", "--run", "r"]] {
            let out = p.run(args);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
            assert!(
                text(&out).contains("record 3 (of task")
                    && text(&out).contains(named)
                    && text(&out).contains("delete its line"),
                "{args:?}: {}",
                text(&out)
            );
        }
    }
}

/// Regression: under --refresh, a failure of the first of two identical requests let the
/// second take the stale cache entry the refresh was to bypass.
#[test]
fn a_refresh_that_failed_does_not_serve_the_stale_entry_to_its_twin() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let failing = std::sync::Arc::new(AtomicBool::new(false));
    let flag = failing.clone();
    let server = FakeServer::start(move |_, n| {
        if flag.swap(false, Ordering::SeqCst) {
            Reply::status(400, "{\"error\": \"bad request\"}")
        } else {
            Reply::ok(&format!("answer number {n}"))
        }
    });
    let p = Project::with_suite(2, &config(&server.url, ""));
    p.write(
        "suites/demo/tasks/t02/prompt.md",
        "Task number 1: write f1().",
    );
    let generate = |args: &[&str]| {
        let mut all = vec!["generate", "--model", "alpha"];
        all.extend_from_slice(args);
        p.run(&all)
    };
    assert_eq!(generate(&["--run", "a"]).status.code(), Some(0));
    let stale = p.jsonl("runs/a/outputs.jsonl")[0]["text"].clone();
    failing.store(true, Ordering::SeqCst);
    let out = generate(&["--run", "b", "--refresh"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let records = p.jsonl("runs/b/outputs.jsonl");
    let ok: Vec<_> = records.iter().filter(|r| r["status"] == "ok").collect();
    assert_eq!(ok.len(), 1, "{records:?}");
    assert_ne!(ok[0]["text"], stale, "{records:?}");
    assert_eq!(ok[0]["from_cache"], false);
}

/// `judge init` writes a project that loads (config and suite) and whose starter check passes
/// a correct answer and fails a naive one; it replaces nothing.
#[test]
fn init_writes_a_starter_project_that_loads_and_checks() {
    let p = Project::empty();
    let out = p.run(&["init", "proj", "--suite", "demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for file in [
        "proj/judge.toml",
        "proj/suites/demo/suite.toml",
        "proj/suites/demo/tasks/slugify/prompt.md",
        "proj/suites/demo/tasks/slugify/check.py",
    ] {
        assert!(p.path().join(file).is_file(), "{file}");
    }
    // It loads: the first thing it lacks is the key (no request is made without it).
    let out = p
        .judge()
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .args(["--config", "proj/judge.toml", "generate"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("`OPENAI_API_KEY`"), "{}", text(&out));
    // `judge run` names every key it will need at once, the judge's too.
    let out = p
        .judge()
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .args(["--config", "proj/judge.toml", "run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("2 API keys are missing")
            && text(&out).contains("`OPENAI_API_KEY`")
            && text(&out).contains("`ANTHROPIC_API_KEY`"),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("proj/runs").exists(), "nothing written");
    // Nothing is replaced.
    let before = p.read("proj/judge.toml");
    let out = p.run(&["init", "proj", "--suite", "demo"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("exists already"), "{}", text(&out));
    assert_eq!(p.read("proj/judge.toml"), before);
    // The starter check tells a correct slugify from a naive one.
    let good = "```python\nimport re, unicodedata\n\ndef slugify(title):\n    ascii = unicodedata.normalize('NFKD', title).encode('ascii', 'ignore').decode()\n    return '-'.join(re.findall(r'[a-z0-9]+', ascii.lower()))\n```\n";
    let naive = "```python\ndef slugify(title):\n    return title.lower().replace(' ', '-')\n```\n";
    p.write("proj/suites/demo/answers/good/slugify.md", good);
    p.write("proj/suites/demo/answers/naive/slugify.md", naive);
    p.write(
        "proj/judge.toml",
        &files_config(&[("good", "good", "f"), ("naive", "naive", "g")]),
    );
    let out = p.run(&["--config", "proj/judge.toml", "generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&[
        "--config",
        "proj/judge.toml",
        "check",
        "--run",
        "r",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let checks = p.jsonl("proj/runs/r/checks.jsonl");
    let result = |model: &str| {
        checks
            .iter()
            .find(|c| c["model"] == model)
            .map(|c| c["result"].clone())
            .unwrap()
    };
    assert_eq!(result("good"), "pass", "{checks:?}");
    assert_eq!(result("naive"), "fail", "{checks:?}");
    // Without DIR, --config says where the project goes and what its config is called.
    let out = p.run(&["--config", "other/eval.toml", "init"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(p.path().join("other/eval.toml").is_file());
    assert!(p.path().join("other/suites/my-suite/suite.toml").is_file());
    // Its next steps name that config, and the command to follow takes it too.
    assert!(
        text(&out).contains("set the models and the judge in other/eval.toml")
            && text(&out).contains("add tasks as other/suites/my-suite/tasks/<id>/prompt.md")
            && text(&out).contains("then `judge --config other/eval.toml run`"),
        "{}",
        text(&out)
    );
}

/// Regression: a provider that cannot be reached at all (server down, wrong port) gave every
/// item of its models a `network` failure, and those models then lost every comparison: an
/// outage ranked as the worst model. It stops the run (exit 3) with nothing recorded.
#[test]
fn an_unreachable_provider_stops_the_run_instead_of_failing_every_item() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let p = Project::with_suite(2, &config(&format!("http://127.0.0.1:{port}/v1"), ""));
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("could not be reached at http://127.0.0.1:")
            && text(&out).contains("is the server running, and is base_url right?"),
        "{}",
        text(&out)
    );
    let outputs = p.path().join("runs/r/outputs.jsonl");
    let recorded = std::fs::read_to_string(&outputs).unwrap_or_default();
    assert!(recorded.trim().is_empty(), "{recorded}");
}

/// Two model ids that send identical requests get the one cached answer to every task, so
/// their comparisons are of identical texts: generate says so, naming both (also for ids
/// added to a run later). Distinct models give no such warning.
#[test]
fn two_ids_for_one_model_are_named_as_the_same_answers() {
    let files = files_config(&[("a", "x", "f"), ("b", "y", "g")]);
    let p = Project::with_suite(1, &files);
    for set in ["x", "y"] {
        p.write(&format!("suites/demo/answers/{set}/t01.md"), "answer");
    }
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("same answer"), "{}", text(&out));
    p.write(
        "judge.toml",
        &(files
            + "\n[[models]]\nid = \"c\"\nprovider = \"answers\"\nmodel = \"x\"\nfamily = \"h\"\n"),
    );
    let out = p.run(&["generate", "--run", "r", "--model", "c"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(
            "warning: models `a` and `c` replay answer set `x`: the cache gives them one and the same answer to every task"
        ),
        "{}",
        text(&out)
    );

    let server = FakeServer::start(echo);
    let twice = config(&server.url, "").replace("model = \"beta-1\"", "model = \"alpha-1\"");
    let p = Project::with_suite(1, &twice);
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("models `alpha` and `beta` send identical requests (model `alpha-1` on the same endpoint)"),
        "{}",
        text(&out)
    );
}

/// Without a terminal (a CI log) there is no bar: a status line now and then shows the run is
/// alive, through a long rate limit too; `--quiet` has none.
#[test]
fn without_a_terminal_a_status_line_shows_the_run_is_alive() {
    let server = FakeServer::start(|req, n| {
        std::thread::sleep(Duration::from_millis(400));
        echo(req, n)
    });
    let p = Project::with_suite(2, &config(&server.url, ""));
    let out = p
        .judge()
        .args(["generate", "--run", "r", "--model", "alpha"])
        .env("JUDGE_STATUS_EVERY_MS", "250")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("generate: ") && l.contains("/2") && l.ends_with("s elapsed")),
        "{err}"
    );
    // How much there is to do is said at the start.
    assert!(
        err.lines()
            .any(|l| l == "generate: 2 to do (a status line every 250ms)"),
        "{err}"
    );
    let out = p
        .judge()
        .args(["-q", "generate", "--run", "q", "--model", "beta"])
        .env("JUDGE_STATUS_EVERY_MS", "250")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("elapsed"),
        "{}",
        text(&out)
    );
}

/// `--max-cost` stops starting requests once this invocation has spent that much: the rest
/// waits for a rerun (exit 1), the cache still answers, and an unpriced model is refused.
#[test]
fn max_cost_stops_starting_requests_at_the_limit() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(
        10,
        &config(&server.url, "").replace("max_concurrency = 2", "max_concurrency = 1"),
    );
    // beta has no price: its spending could not be counted.
    let out = p.run(&["generate", "--run", "r", "--max-cost", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "--max-cost counts dollars at the prices, and `beta` has none: set price_input_per_mtok"
        ),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("runs/r").exists());
    assert_eq!(server.count(), 0);
    // alpha: 100 input tokens at $1 and 50 output tokens at $2 per million, $0.0002 a call;
    // the third call passes $0.0005, one at a time.
    let out = p.run(&[
        "generate",
        "--run",
        "r",
        "--model",
        "alpha",
        "--max-cost",
        "$0.0005",
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(server.count(), 3);
    assert!(
        text(&out).contains(
            "--max-cost $0.0005 reached: $0.0006 spent by this invocation's requests (those in flight at the limit finished); 7 item(s) not done; rerun with --run r (and a new --max-cost) to go on"
        ),
        "{}",
        text(&out)
    );
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), 3);
    // The rerun goes on; a new run of the same requests comes from the cache, free, past
    // any limit.
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(server.count(), 10);
    let out = p.run(&[
        "generate",
        "--run",
        "again",
        "--model",
        "alpha",
        "--max-cost",
        "0.0001",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(server.count(), 10);
    assert_eq!(p.jsonl("runs/again/outputs.jsonl").len(), 10);
    // A run keeps the price a model first answered at: beta, unpriced there, stays so (a
    // trial of one task, so that there are items left to ask).
    assert_eq!(
        p.run(&["generate", "--run", "b", "--model", "beta", "--limit", "1"])
            .status
            .code(),
        Some(0)
    );
    p.write(
        "judge.toml",
        &p.read("judge.toml").replace(
            "family = \"beta-labs\"",
            "family = \"beta-labs\"\nprice_input_per_mtok = 1.0\nprice_output_per_mtok = 1.0",
        ),
    );
    for dry in [false, true] {
        let mut args = vec![
            "generate",
            "--run",
            "b",
            "--model",
            "beta",
            "--max-cost",
            "1",
        ];
        if dry {
            args.push("--dry-run");
        }
        let out = p.run(&args);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(
            text(&out)
                .contains("`beta` has none: run `b` keeps the price it first costed a model at"),
            "{}",
            text(&out)
        );
        // With nothing left to ask (the trial's one task done), there is nothing to count.
        args.extend(["--limit", "1"]);
        let asked = server.count();
        let out = p.run(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(server.count(), asked);
    }
    // And the other way round: alpha, priced in run `r`, keeps that price with none in
    // judge.toml, so the limit can count it.
    p.write(
        "judge.toml",
        &p.read("judge.toml").replace(
            "price_input_per_mtok = 1.0\nprice_output_per_mtok = 2.0\n",
            "",
        ),
    );
    assert!(!p.read("judge.toml").contains("price_output_per_mtok = 2.0"));
    let out = p.run(&[
        "generate",
        "--run",
        "r",
        "--model",
        "alpha",
        "--max-cost",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// `generate --dry-run` asks nothing and writes nothing, and says per model what is left,
/// what the cache answers and what the rest could cost.
#[test]
fn a_dry_run_prices_the_generation_without_asking() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(3, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--dry-run"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let plan = String::from_utf8_lossy(&out.stdout);
    let head =
        "model `alpha`: 3 item(s) to generate, 0 answered by the cache; 3 request(s) of about ";
    let input = crate::common::tokens_after(&plan, head);
    // $1 per million input tokens, $2 per million output tokens, 256 tokens at most each.
    let bound = format!("${:.4}", (input as f64 + 2.0 * 768.0) / 1e6);
    assert!(
        plan.contains(&format!(
            "at most 768 output tokens (256 each, max_tokens): at most about {bound} at $1/$2 per million input/output tokens"
        )) && plan.contains("model `beta`: 3 item(s) to generate, 0 answered by the cache; 3 request(s)")
            && plan.contains("): unpriced\n")
            && plan.contains(&format!(
                "new run `r`: 6 item(s) to generate in all, at most about {bound} for the priced models; `beta` unpriced."
            )),
        "{plan}"
    );
    assert_eq!(server.count(), 0);
    assert!(!p.path().join("runs").exists());
    // After generating, nothing is left; a new run is answered by the cache.
    assert_eq!(p.run(&["generate", "--run", "r"]).status.code(), Some(0));
    let out = p.run(&["generate", "--run", "r", "--dry-run"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("run `r`: 0 item(s) to generate in all"),
        "{}",
        text(&out)
    );
    let out = p.run(&["generate", "--run", "r2", "--dry-run"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with(
            "model `alpha`: 3 item(s) to generate, 3 answered by the cache; 0 request(s)"
        ),
        "{}",
        text(&out)
    );
    assert_eq!(server.count(), 6);
    assert!(!p.path().join("runs/r2").exists());
    // No request, so no key needed: a budget is often planned before the keys are at hand.
    let out = p
        .judge()
        .env_remove("OPENAI_API_KEY")
        .args(["generate", "--run", "r3", "--dry-run"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p
        .judge()
        .env_remove("OPENAI_API_KEY")
        .args(["generate", "--run", "r3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// Under `--max-cost`, replies without usage cannot be counted: the first is warned of (a
/// server that never reports tokens would never reach the limit).
#[test]
fn max_cost_warns_of_replies_it_cannot_count() {
    let server = FakeServer::start(|_, _| {
        let mut body: serde_json::Value =
            serde_json::from_str(&crate::common::completion("an answer", "stop")).unwrap();
        body.as_object_mut().unwrap().remove("usage");
        Reply::Http(200, vec![], body.to_string())
    });
    let p = Project::with_suite(3, &config(&server.url, ""));
    let out = p.run(&[
        "generate",
        "--run",
        "r",
        "--model",
        "alpha",
        "--max-cost",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let warning = "warning: a request came back without usage (a failure, or a server that does not report tokens): --max-cost cannot count its cost";
    assert_eq!(text(&out).matches(warning).count(), 1, "{}", text(&out));
}

/// `--limit N` generates the first N tasks only, a trial; the same command without it goes on
/// in the same run, asking only for the rest.
#[test]
fn limit_generates_the_first_tasks_and_the_run_goes_on_without_it() {
    let server = FakeServer::start(echo);
    let p = Project::with_suite(5, &config(&server.url, ""));
    let out = p.run(&["generate", "--run", "r", "--model", "alpha", "--limit", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("note: --limit 2: the first 2 of the suite's 5 tasks; the others wait for the same command in run `r`, without --limit"),
        "{}",
        text(&out)
    );
    let tasks: Vec<String> = p
        .jsonl("runs/r/outputs.jsonl")
        .iter()
        .map(|o| o["task"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(tasks, ["t01", "t02"]);
    let out = p.run(&["generate", "--run", "r", "--model", "alpha"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(server.count(), 5);
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), 5);
    let out = p.run(&["generate", "--run", "z", "--limit", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // A trial finished is done, also when it passed a --max-cost on its way ($0.0002 a call,
    // two at once).
    let out = p.run(&[
        "generate",
        "--run",
        "t",
        "--model",
        "alpha",
        "--limit",
        "2",
        "--max-cost",
        "0.0003",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("item(s) not done"), "{}", text(&out));
    // A trial's failures are asked again within the trial.
    let failing = FakeServer::start(|_, _| Reply::status(400, "bad request"));
    let p = Project::with_suite(5, &config(&failing.url, ""));
    let out = p.run(&["generate", "--run", "f", "--model", "alpha", "--limit", "2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("`judge generate --run f --model alpha --limit 2 --retry-failed`"),
        "{}",
        text(&out)
    );
}
