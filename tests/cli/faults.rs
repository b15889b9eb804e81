//! The fault battery: one table of scenarios run against every HTTP provider kind through a
//! fake server on 127.0.0.1, each asserting exact outcomes (exit code, record status and error
//! class, attempts, requests the server saw). Plus the `files` provider's own failures,
//! concurrent processes on one cache, repeated SIGKILLs, and Ctrl-C.

use std::time::{Duration, Instant, SystemTime};

use crate::common::{FakeServer, Project, Received, Reply, TEST_KEY, repo_root, text};

const KINDS: [&str; 3] = ["openai", "anthropic", "gemini"];

fn fixture(kind: &str, name: &str) -> String {
    std::fs::read_to_string(repo_root().join(format!("tests/fixtures/providers/{kind}/{name}")))
        .unwrap()
}

fn body(kind: &str, what: &str) -> String {
    let name = match (kind, what) {
        (_, "success") => "success.json",
        (_, "length") => "length.json",
        (_, "empty") => "empty_content.json",
        (_, "wrong_shape") => "wrong_shape.json",
        (_, "not_json") => "not_json.txt",
        (_, "rate") => "error_429_rate.json",
        ("gemini", "refusal") => "safety.json",
        (_, "refusal") => "refusal.json",
        ("openai", "quota") => "error_429_quota.json",
        ("anthropic", "quota") => "error_429_spend_limit.json",
        ("gemini", "quota") => "error_429_quota_daily.json",
        other => panic!("no fixture for {other:?}"),
    };
    fixture(kind, name)
}

fn ok(kind: &str) -> Reply {
    Reply::Http(200, vec![], body(kind, "success"))
}

fn config(kind: &str, url: &str, max_retries: u32, timeout: u64) -> String {
    format!(
        "[run]\nsuite = \"demo\"\nmax_tokens = 100\n\n[providers.p]\nkind = \"{kind}\"\nbase_url = \"{url}\"\nmax_retries = {max_retries}\ntimeout_secs = {timeout}\n\n[[models]]\nid = \"m\"\nprovider = \"p\"\nmodel = \"model-x\"\nfamily = \"fam\"\n"
    )
}

/// The expected outcome of a scenario.
struct Expect {
    exit: i32,
    /// `Some("ok")`, `Some("failed")`, or `None` for no record at all.
    status: Option<&'static str>,
    class: Option<&'static str>,
    attempts: Option<u64>,
    requests: usize,
    finish: Option<&'static str>,
}

fn run_case(
    kind: &str,
    name: &str,
    max_retries: u32,
    timeout: u64,
    script: impl Fn(&Received, usize) -> Reply + Send + Sync + 'static,
    e: Expect,
) {
    let server = FakeServer::start(script);
    let p = Project::with_suite(1, &config(kind, &server.url, max_retries, timeout));
    let out = p.run(&["generate", "--run", "r"]);
    let ctx = format!("{kind} / {name}: {}", text(&out));
    assert_eq!(out.status.code(), Some(e.exit), "{ctx}");
    let records = p.jsonl("runs/r/outputs.jsonl");
    match e.status {
        None => assert!(records.is_empty(), "{ctx}"),
        Some(status) => {
            let r = &records[0];
            assert_eq!(r["status"], status, "{ctx}");
            if let Some(class) = e.class {
                assert_eq!(r["error"]["class"], class, "{ctx}");
            }
            if let Some(a) = e.attempts {
                assert_eq!(r["attempts"], a, "{ctx}");
            }
            if let Some(f) = e.finish {
                assert_eq!(r["finish_reason"], f, "{ctx}");
            }
        }
    }
    assert_eq!(server.count(), e.requests, "{ctx}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains(TEST_KEY),
        "{ctx}"
    );
}

fn status_then_ok(
    kind: &'static str,
    code: u16,
) -> impl Fn(&Received, usize) -> Reply + Send + Sync + 'static {
    move |_, n| {
        if n == 0 {
            Reply::status(
                code,
                "{\"error\":{\"message\":\"temporarily unavailable\"}}",
            )
        } else {
            ok(kind)
        }
    }
}

fn http_date(t: SystemTime) -> String {
    let c = judge::time::UtcDateTime::from_system(t);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "Mon, {:02} {} {} {:02}:{:02}:{:02} GMT",
        c.day,
        MONTHS[c.month as usize - 1],
        c.year,
        c.hour,
        c.minute,
        c.second
    )
}

fn battery(kind: &'static str) {
    let ok_after = |attempts| Expect {
        exit: 0,
        status: Some("ok"),
        class: None,
        attempts: Some(attempts),
        requests: attempts as usize,
        finish: None,
    };
    let failed = |class, attempts: u64, requests| Expect {
        exit: 1,
        status: Some("failed"),
        class: Some(class),
        attempts: Some(attempts),
        requests,
        finish: None,
    };
    let refused = |requests| Expect {
        exit: 3,
        status: None,
        class: None,
        attempts: None,
        requests,
        finish: None,
    };

    // An error a retry can get past, inside a 200 (an overloaded Anthropic; OpenRouter when
    // generation fails after the status was sent): retried like its status, then ok.
    let overloaded_in_200 = match kind {
        "anthropic" => {
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
        }
        "openai" => r#"{"error":{"code":502,"message":"upstream provider failed"}}"#,
        _ => {
            r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#
        }
    };
    run_case(
        kind,
        "retryable error in a 200",
        3,
        5,
        move |_, n| {
            if n == 0 {
                Reply::Http(200, vec![], overloaded_in_200.to_string())
            } else {
                ok(kind)
            }
        },
        ok_after(2),
    );

    // 429 with Retry-After in seconds, then success: honoured, then ok.
    let started = Instant::now();
    run_case(
        kind,
        "429 retry-after seconds",
        3,
        5,
        move |_, n| {
            if n == 0 {
                Reply::Http(
                    429,
                    vec![("retry-after".into(), "1".into())],
                    body(kind, "rate"),
                )
            } else {
                ok(kind)
            }
        },
        ok_after(2),
    );
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{kind}: Retry-After honoured"
    );
    // 429 with Retry-After as an HTTP date.
    run_case(
        kind,
        "429 retry-after date",
        3,
        5,
        move |_, n| {
            if n == 0 {
                let at = http_date(SystemTime::now() + Duration::from_secs(1));
                Reply::Http(429, vec![("retry-after".into(), at)], body(kind, "rate"))
            } else {
                ok(kind)
            }
        },
        ok_after(2),
    );
    // 429 meaning an exhausted quota: permanent, the run stops with exit 3.
    run_case(
        kind,
        "429 quota",
        3,
        5,
        move |_, _| Reply::Http(429, vec![], body(kind, "quota")),
        refused(1),
    );
    for code in [500, 502, 503, 529] {
        run_case(
            kind,
            &format!("{code} then ok"),
            3,
            5,
            status_then_ok(kind, code),
            ok_after(2),
        );
    }
    run_case(
        kind,
        "5xx forever",
        2,
        5,
        |_, _| Reply::status(503, "{}"),
        failed("server_error", 3, 3),
    );
    run_case(
        kind,
        "reset mid-body",
        2,
        5,
        move |_, n| if n == 0 { Reply::CutMidBody } else { ok(kind) },
        ok_after(2),
    );
    run_case(
        kind,
        "stalled body",
        0,
        1,
        |_, _| Reply::StallMidBody,
        failed("timeout", 1, 1),
    );
    run_case(
        kind,
        "malformed json",
        2,
        5,
        move |_, _| Reply::Http(200, vec![], body(kind, "not_json")),
        failed("malformed_response", 1, 1),
    );
    run_case(
        kind,
        "wrong shape",
        2,
        5,
        move |_, _| Reply::Http(200, vec![], body(kind, "wrong_shape")),
        failed("malformed_response", 1, 1),
    );
    run_case(
        kind,
        "empty content",
        2,
        5,
        move |_, _| Reply::Http(200, vec![], body(kind, "empty")),
        failed("empty_output", 1, 1),
    );
    run_case(
        kind,
        "refusal / safety block",
        2,
        5,
        move |_, _| Reply::Http(200, vec![], body(kind, "refusal")),
        failed("refusal", 1, 1),
    );
    run_case(
        kind,
        "token cap hit",
        2,
        5,
        move |_, _| Reply::Http(200, vec![], body(kind, "length")),
        Expect {
            exit: 0,
            status: Some("ok"),
            class: None,
            attempts: Some(1),
            requests: 1,
            finish: Some("length"),
        },
    );
    run_case(
        kind,
        "401",
        2,
        5,
        |_, _| Reply::status(401, "{\"error\":{\"message\":\"invalid key\"}}"),
        refused(1),
    );
    run_case(
        kind,
        "403",
        2,
        5,
        |_, _| Reply::status(403, "{\"error\":{\"message\":\"forbidden\"}}"),
        refused(1),
    );
}

#[test]
fn battery_openai() {
    battery("openai");
}

#[test]
fn battery_anthropic() {
    battery("anthropic");
}

#[test]
fn battery_gemini() {
    battery("gemini");
}

#[test]
fn each_kind_speaks_its_own_protocol() {
    for kind in KINDS {
        let server = FakeServer::start(move |_, _| ok(kind));
        let p = Project::with_suite(1, &config(kind, &server.url, 0, 5));
        let out = p.run(&["generate", "--run", "r"]);
        assert_eq!(out.status.code(), Some(0), "{kind}: {}", text(&out));
        let req = &server.requests()[0];
        match kind {
            "openai" => {
                assert_eq!(req.path, "/v1/chat/completions");
                assert_eq!(
                    req.header("authorization"),
                    Some(format!("Bearer {TEST_KEY}").as_str())
                );
                assert_eq!(req.body["messages"][0]["role"], "system");
            }
            "anthropic" => {
                assert_eq!(req.path, "/v1/messages");
                assert_eq!(req.header("x-api-key"), Some(TEST_KEY));
                assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
                assert_eq!(req.header("authorization"), None);
                assert_eq!(req.body["system"], "Answer in Python.");
                assert_eq!(req.body["max_tokens"], 100);
            }
            _ => {
                assert_eq!(req.path, "/v1/models/model-x:generateContent");
                assert_eq!(req.header("x-goog-api-key"), Some(TEST_KEY));
                assert_eq!(
                    req.body["systemInstruction"]["parts"][0]["text"],
                    "Answer in Python."
                );
                assert_eq!(req.body["generationConfig"]["maxOutputTokens"], 100);
            }
        }
        let rec = &p.jsonl("runs/r/outputs.jsonl")[0];
        assert_eq!(rec["status"], "ok", "{kind}");
        assert!(
            rec["usage"]["input_tokens"].as_u64().unwrap() > 0,
            "{kind}: usage mapped"
        );
    }
}

#[test]
fn files_provider_failures_are_records() {
    let p = Project::with_suite(
        3,
        "[run]\nsuite = \"demo\"\n\n[providers.a]\nkind = \"files\"\n\n[[models]]\nid = \"m\"\nprovider = \"a\"\nmodel = \"set\"\nfamily = \"f\"\n",
    );
    p.write("suites/demo/answers/set/t01.md", "fine");
    p.write("suites/demo/answers/set/t02.md", "  \n");
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let classes: Vec<serde_json::Value> = p
        .jsonl("runs/r/outputs.jsonl")
        .iter()
        .map(|r| r["error"]["class"].clone())
        .collect();
    assert_eq!(
        classes,
        vec![
            serde_json::Value::Null,
            "empty_output".into(),
            "missing_answer".into()
        ]
    );
}

#[test]
fn two_processes_share_one_cache_without_corruption() {
    let server = FakeServer::start(|req, _| {
        std::thread::sleep(Duration::from_millis(20));
        Reply::ok(&format!("answer to {}", req.user_text()))
    });
    let p = Project::with_suite(
        20,
        &config("openai", &server.url, 0, 5)
            .replace("max_retries = 0", "max_retries = 0\nmax_concurrency = 4"),
    );
    let quiet = |run: &str| {
        p.judge()
            .args(["generate", "--run", run])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (quiet("a"), quiet("b"));
    for (name, child) in [("a", a), ("b", b)] {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}");
    }
    let mut per_prompt = std::collections::BTreeMap::new();
    for r in server.requests() {
        *per_prompt.entry(r.user_text()).or_insert(0) += 1;
    }
    assert_eq!(per_prompt.len(), 20);
    assert!(
        per_prompt.values().all(|&n| n <= 2),
        "each item at most once per process: {per_prompt:?}"
    );
    for run in ["a", "b"] {
        let recs = p.jsonl(&format!("runs/{run}/outputs.jsonl"));
        assert_eq!(recs.len(), 20);
        assert!(recs.iter().all(|r| r["status"] == "ok"));
    }
    for f in p
        .all_files()
        .iter()
        .filter(|f| f.starts_with(p.path().join("cache")))
    {
        let t = std::fs::read_to_string(f).unwrap();
        assert!(
            serde_json::from_str::<serde_json::Value>(&t).is_ok(),
            "corrupt {}",
            f.display()
        );
    }
    // The same run twice at once: the second is refused, not interleaved.
    let a = quiet("c");
    std::thread::sleep(Duration::from_millis(50));
    let second = p.run(&["generate", "--run", "c"]);
    let first = a.wait_with_output().unwrap();
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    match second.status.code() {
        Some(2) => assert!(
            String::from_utf8_lossy(&second.stderr).contains("in use by another judge process")
        ),
        Some(0) => {} // the first had already finished: a plain resume
        other => panic!("unexpected exit {other:?}: {}", text(&second)),
    }
    assert_eq!(p.jsonl("runs/c/outputs.jsonl").len(), 20);
}

#[test]
fn repeated_sigkill_loses_nothing_and_never_repeats_a_finished_item() {
    let server = FakeServer::start(|req, _| {
        std::thread::sleep(Duration::from_millis(30));
        Reply::ok(&format!("answer to {}", req.user_text()))
    });
    let p = Project::with_suite(
        40,
        &config("openai", &server.url, 0, 5)
            .replace("max_retries = 0", "max_retries = 0\nmax_concurrency = 3"),
    );
    let mut seed: u64 = 0x5eed;
    for round in 0..20 {
        let finished: std::collections::BTreeSet<String> =
            std::fs::read_to_string(p.path().join("runs/r/outputs.jsonl"))
                .unwrap_or_default()
                .lines()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .map(|r| r["task"].as_str().unwrap().to_string())
                .collect();
        let before = server.count();
        let mut child = p
            .judge()
            .args(["generate", "--run", "r"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        std::thread::sleep(Duration::from_millis(20 + seed % 120));
        let _ = child.kill();
        child.wait().unwrap();
        for r in &server.requests()[before..] {
            let task = r
                .user_text()
                .split(':')
                .next()
                .unwrap()
                .trim_start_matches("Task number ")
                .parse::<usize>()
                .unwrap();
            assert!(
                !finished.contains(&format!("t{task:02}")),
                "round {round}: finished item t{task:02} requested again"
            );
        }
    }
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let records = p.jsonl("runs/r/outputs.jsonl");
    assert_eq!(records.len(), 40, "no lost record");
    assert!(records.iter().all(|r| r["status"] == "ok"));
    let tasks: std::collections::BTreeSet<&str> = records
        .iter()
        .map(|r| r["task"].as_str().unwrap())
        .collect();
    assert_eq!(tasks.len(), 40, "no duplicate record");
}

/// Ctrl-C, and SIGTERM (`timeout`, a cancelled CI job) alike: what is in flight finishes and
/// is written, nothing is paid for twice, exit 130.
#[test]
fn ctrl_c_finishes_in_flight_writes_and_exits_130() {
    for signal in ["-INT", "-TERM"] {
        let server = FakeServer::start(|req, _| {
            std::thread::sleep(Duration::from_millis(300));
            Reply::ok(&format!("answer to {}", req.user_text()))
        });
        let p = Project::with_suite(
            10,
            &config("openai", &server.url, 0, 5)
                .replace("max_retries = 0", "max_retries = 0\nmax_concurrency = 2"),
        );
        let child = p
            .judge()
            .args(["generate", "--run", "r"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.count() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let status = std::process::Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(130), "{signal}: {}", text(&out));
        let kept = p.jsonl("runs/r/outputs.jsonl");
        assert_eq!(
            kept.len(),
            server.count(),
            "{signal}: every request in flight finished and was written"
        );
        assert!(kept.len() < 10);
        let out = p.run(&["generate", "--run", "r"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), 10);
        assert_eq!(
            server.count(),
            10,
            "{signal}: the rerun asked only for the rest"
        );
    }
}

/// At the deadline no item or retry starts; items still retrying are cut short and not
/// recorded (the provider's failure, not the model's: a rerun asks again, as after Ctrl-C),
/// while an item that ran out of retries is recorded failed.
#[test]
fn deadline_cuts_retries_short_without_recording_them() {
    let server = FakeServer::start(|_, _| Reply::status(503, "{}"));
    let p = Project::with_suite(
        6,
        &config("openai", &server.url, 50, 5)
            .replace("max_retries = 50", "max_retries = 50\nmax_concurrency = 2"),
    );
    let started = Instant::now();
    let out = p
        .judge()
        .args(["generate", "--run", "r", "--deadline", "2s"])
        .env("JUDGE_RETRY_BASE_MS", "200")
        .output()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the deadline cut retries short"
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        p.read("runs/r/outputs.jsonl").is_empty(),
        "nothing cut short is recorded: {}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("deadline reached: 6 item(s) not done"),
        "{}",
        text(&out)
    );
    // The requests of the items cut short were made, and are counted.
    let sent = format!("0 items, 0 from cache, {} requests", server.count());
    assert!(server.count() > 6, "retried");
    assert!(text(&out).contains(&sent), "{sent}: {}", text(&out));
    // Out of retries before the deadline: that failure is recorded.
    let p = Project::with_suite(1, &config("openai", &server.url, 0, 5));
    let out = p
        .judge()
        .args(["generate", "--run", "r", "--deadline", "60s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let recs = p.jsonl("runs/r/outputs.jsonl");
    assert_eq!(recs.len(), 1, "{}", text(&out));
    assert_eq!(recs[0]["error"]["class"], "server_error");
}

/// A kind-shaped 200 reply (the `success` fixture) whose completion text is `text`.
fn ok_with_text(kind: &str, text: &str) -> Reply {
    let mut v: serde_json::Value = serde_json::from_str(&body(kind, "success")).unwrap();
    let slot = match kind {
        "openai" => &mut v["choices"][0]["message"]["content"],
        "anthropic" => &mut v["content"][0]["text"],
        _ => &mut v["candidates"][0]["content"]["parts"][0]["text"],
    };
    *slot = text.into();
    Reply::Http(200, vec![], v.to_string())
}

#[test]
fn key_echoed_in_a_successful_reply_is_redacted_everywhere() {
    for kind in KINDS {
        // Once as is, once JSON-escaped (`\u002d` for each `-`), as a server may echo it.
        let server = FakeServer::start(move |_, _| {
            let reply = ok_with_text(
                kind,
                &format!("your key: Bearer {TEST_KEY} or ESCAPED\n\nVERDICT: 1"),
            );
            let Reply::Http(status, headers, body) = reply else {
                unreachable!("ok_with_text gives an HTTP reply")
            };
            let escaped = TEST_KEY.replace('-', "\\u002d");
            Reply::Http(status, headers, body.replace("ESCAPED", &escaped))
        });
        let p = Project::with_suite(
            1,
            &format!(
                "{}\n[[models]]\nid = \"m2\"\nprovider = \"p\"\nmodel = \"model-y\"\nfamily = \"fam2\"\n\n[[judges]]\nid = \"j\"\nprovider = \"p\"\nmodel = \"judge-z\"\nfamily = \"fam3\"\n",
                config(kind, &server.url, 0, 5)
            ),
        );
        for cmd in ["generate", "compare"] {
            let out = p.run(&[cmd, "--run", "r"]);
            assert_eq!(out.status.code(), Some(0), "{kind} {cmd}: {}", text(&out));
            let all = format!("{:?}", out);
            assert!(
                !all.contains(TEST_KEY),
                "{kind} {cmd}: key on stdout/stderr"
            );
        }
        let files = p.all_files();
        assert!(
            files
                .iter()
                .any(|f| f.components().any(|c| c.as_os_str() == "cache")),
            "{kind}: the replies were cached"
        );
        for f in &files {
            let bytes = std::fs::read(f).unwrap();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(TEST_KEY),
                "{kind}: the key is in {}",
                f.display()
            );
        }
        let outputs = p.jsonl("runs/r/outputs.jsonl");
        assert_eq!(outputs.len(), 2, "{kind}");
        for r in &outputs {
            assert_eq!(
                r["text"], "your key: Bearer *** or ***\n\nVERDICT: 1",
                "{kind}"
            );
        }
        let judgments = p.jsonl("runs/r/judgments.jsonl");
        assert!(!judgments.is_empty(), "{kind}");
        for j in &judgments {
            assert!(
                j["raw"].as_str().unwrap().contains("Bearer ***"),
                "{kind}: {j}"
            );
        }
        // A cache entry written before replies were redacted still holds the key: a cache
        // hit must not bring it back into a run.
        for f in files
            .iter()
            .filter(|f| f.components().any(|c| c.as_os_str() == "cache"))
        {
            let text = std::fs::read_to_string(f).unwrap();
            std::fs::write(f, text.replace("Bearer ***", &format!("Bearer {TEST_KEY}"))).unwrap();
        }
        std::fs::remove_dir_all(p.path().join("runs")).unwrap();
        let out = p.run(&["generate", "--run", "r2"]);
        assert_eq!(out.status.code(), Some(0), "{kind}: {}", text(&out));
        assert!(
            !p.read("runs/r2/outputs.jsonl").contains(TEST_KEY),
            "{kind}: a cache hit replayed the key"
        );
    }
}

/// A run `generate` has just claimed (its folder and held lock, no manifest yet) is "not
/// found" to other commands, which leave its lock alone: taking it would make that generate
/// give up as "in use".
#[test]
fn a_run_being_created_is_not_found_and_its_lock_left_alone() {
    let p = Project::offline();
    std::fs::create_dir_all(p.path().join("runs/new")).unwrap();
    let lock = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(p.path().join("runs/new/.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    for args in [
        &["rank", "--run", "new"][..],
        &["compare", "--run", "new"],
        &["check", "--run", "new"],
        &["label", "score", "--run", "new"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("run `new` not found"),
            "{args:?}: {}",
            text(&out)
        );
    }
    drop(lock);
}

#[test]
fn a_run_held_by_another_process_is_neither_read_nor_repaired() {
    let p = Project::offline();
    assert_eq!(p.run(&["run", "--run", "r"]).status.code(), Some(0));
    // A writer (here: this test, as another process would) holds the run and is midway
    // through appending a record.
    let lock = std::fs::File::options()
        .read(true)
        .write(true)
        .open(p.path().join("runs/r/.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    // A holder that is running (this test), as the refusal names only those.
    let holder = format!("pid {}: judge generate --run r", std::process::id());
    std::fs::write(p.path().join("runs/r/.lock"), format!("{holder}\n")).unwrap();
    let outputs = p.path().join("runs/r/outputs.jsonl");
    let mut text_before = std::fs::read_to_string(&outputs).unwrap();
    text_before.push_str("{\"task\":\"zz\",\"model\":\"ref");
    std::fs::write(&outputs, &text_before).unwrap();
    for args in [
        &["rank", "--run", "r"][..],
        &["compare", "--run", "r"],
        &["check", "--run", "r"],
        &["label", "sample", "--run", "r", "--n", "5"],
        &["label", "score", "--run", "r"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains(&format!(
                "run `r` is in use by another judge process ({holder})"
            )),
            "{args:?}: {}",
            text(&out)
        );
        assert!(
            !text(&out).contains("dropped a record"),
            "{args:?}: {}",
            text(&out)
        );
        assert_eq!(
            std::fs::read_to_string(&outputs).unwrap(),
            text_before,
            "{args:?} changed a file it had no lock on"
        );
    }
    // Once the writer is gone, the next command repairs the cut-off line.
    drop(lock);
    let out = p.run(&["rank", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("dropped a record cut off"),
        "{}",
        text(&out)
    );
}

/// A redirect is not followed: reqwest would carry Anthropic's and Gemini's key headers to the
/// other host. It stops the run (exit 3) with what to do, and the other host hears nothing.
#[test]
fn a_redirect_is_not_followed_and_carries_no_key() {
    for kind in KINDS {
        let elsewhere = FakeServer::start(move |_, _| ok(kind));
        let target = format!("{}/collect", elsewhere.url);
        let server = FakeServer::start(move |_, _| {
            Reply::Http(
                307,
                vec![("Location".into(), target.clone())],
                String::new(),
            )
        });
        let p = Project::with_suite(2, &config(kind, &server.url, 2, 5));
        let out = p.run(&["generate", "--run", "r"]);
        assert_eq!(out.status.code(), Some(3), "{kind}: {}", text(&out));
        assert!(
            text(&out).contains("answered 307, redirecting to http://127.0.0.1:")
                && text(&out).contains("set base_url to the address the API is at"),
            "{kind}: {}",
            text(&out)
        );
        assert_eq!(elsewhere.count(), 0, "{kind}: the redirect was followed");
        assert!(!text(&out).contains(TEST_KEY));
    }
}

/// Ctrl-C and `--deadline` end a long wait at once, a server's `Retry-After` or the
/// requests-per-minute limiter's, and nothing is sent after them.
#[test]
fn ctrl_c_and_the_deadline_end_long_waits_at_once() {
    let patient = |extra: &str| format!("max_retries = 3\nmax_concurrency = 4\n{extra}");
    // A 429 asking for 30 s, then Ctrl-C.
    let server = FakeServer::start(|_, _| {
        Reply::Http(429, vec![("Retry-After".into(), "30".into())], "{}".into())
    });
    let p = Project::with_suite(
        1,
        &config("openai", &server.url, 3, 5).replace("max_retries = 3", &patient("")),
    );
    let rpm = |server: &FakeServer| {
        Project::with_suite(
            6,
            &config("openai", &server.url, 3, 5)
                .replace("max_retries = 3", &patient("requests_per_minute = 6")),
        )
    };
    let interrupt_after_first = |p: &Project, server: &FakeServer| {
        let child = p
            .judge()
            .args(["generate", "--run", "r"])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.count() < 1 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        let sent = Instant::now();
        std::process::Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .unwrap();
        let out = child.wait_with_output().unwrap();
        (out, sent.elapsed())
    };
    let (out, took) = interrupt_after_first(&p, &server);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        took < Duration::from_secs(5),
        "waited out Retry-After: {took:?}"
    );
    assert_eq!(server.count(), 1);

    // Six items at six requests a minute (one every 10 s), then Ctrl-C.
    let server = FakeServer::start(|_, _| ok("openai"));
    let p = rpm(&server);
    let (out, took) = interrupt_after_first(&p, &server);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        took < Duration::from_secs(5),
        "waited for the limiter: {took:?}"
    );
    assert_eq!(server.count(), 1, "a request was sent after Ctrl-C");
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), 1);

    // The same at a 2 s deadline: the waiting items are left for a rerun, not failed.
    let server = FakeServer::start(|_, _| ok("openai"));
    let p = rpm(&server);
    let started = Instant::now();
    let out = p.run(&["generate", "--run", "r", "--deadline", "2s"]);
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(server.count(), 1, "a request was sent after the deadline");
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), 1);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("deadline reached: 5 item(s) not done"),
        "{}",
        text(&out)
    );
}

/// A cache that cannot be written is a local I/O error (exit 1, saying why), not a provider's
/// refusal (exit 3), and the reply is not used uncached: a rerun asks again.
#[test]
fn an_unwritable_cache_is_an_io_error_not_a_refusal() {
    let server = FakeServer::start(|_, _| ok("openai"));
    let p = Project::with_suite(1, &config("openai", &server.url, 0, 5));
    p.write("cache", "not a directory");
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("cache"), "{}", text(&out));
    assert!(!text(&out).contains("refused"), "{}", text(&out));
    assert!(p.read("runs/r/outputs.jsonl").is_empty());
    std::fs::remove_file(p.path().join("cache")).unwrap();
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), 1);
}

/// Interrupted, a generate that named its run itself says which `--run` resumes it: the same
/// command without one would start another run.
#[test]
fn an_interrupted_default_named_run_says_how_to_resume_it() {
    let server = FakeServer::start(|_, _| {
        std::thread::sleep(Duration::from_millis(300));
        ok("openai")
    });
    let p = Project::with_suite(
        10,
        &config("openai", &server.url, 0, 5)
            .replace("max_retries = 0", "max_retries = 0\nmax_concurrency = 1"),
    );
    let child = p
        .judge()
        .args(["generate"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.count() < 1 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let runs: Vec<String> = std::fs::read_dir(p.path().join("runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(runs.len(), 1);
    let says = format!("rerun the same command with `--run {}` to resume", runs[0]);
    assert!(text(&out).contains(&says), "{}", text(&out));
    let out = p.run(&["generate", "--run", &runs[0]]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(std::fs::read_dir(p.path().join("runs")).unwrap().count(), 1);
}

/// Regression: a key under 8 characters (a gateway's `sk-1234`) was never redacted, so a
/// server echoing it in an error put it into outputs.jsonl and onto the terminal. In error
/// messages it is now replaced where it stands as a token of its own; a reply's text keeps it
/// (short placeholders such as `none` would garble answers).
#[test]
fn a_short_key_echoed_in_an_error_is_redacted() {
    const SHORT: &str = "sk-1234";
    let server = FakeServer::start(|req, _| {
        let status = if req.body["model"] == "model-x" {
            400
        } else {
            401
        };
        Reply::Http(
            status,
            vec![],
            format!(
                r#"{{"error":{{"message":"Incorrect API key provided: {SHORT}. Or context too long for key {}","type":"invalid_request_error"}}}}"#,
                SHORT.replace('-', "\\u002d")
            ),
        )
    });
    let generate_with_short_key = |p: &Project| {
        p.judge()
            .env("OPENAI_API_KEY", SHORT)
            .args(["generate", "--run", "r"])
            .output()
            .unwrap()
    };
    let p = Project::with_suite(1, &config("openai", &server.url, 0, 5));
    let out = generate_with_short_key(&p);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(!text(&out).contains(SHORT), "{}", text(&out));
    let outputs = p.read("runs/r/outputs.jsonl");
    assert!(
        outputs.contains("Incorrect API key provided: ***."),
        "{outputs}"
    );
    assert!(!outputs.contains(SHORT), "{outputs}");
    // A 401 stops the run with a message quoting the body: the key is out of it too.
    let p = Project::with_suite(
        1,
        &config("openai", &server.url, 0, 5).replace("model-x", "model-q"),
    );
    let out = generate_with_short_key(&p);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("Incorrect API key provided: ***."),
        "{}",
        text(&out)
    );
    assert!(!text(&out).contains(SHORT), "{}", text(&out));
    // With no key sent at all, the refusal says so instead of naming a variable `(none)`.
    let p = Project::with_suite(
        1,
        &config("openai", &server.url, 0, 5)
            .replace("model-x", "model-q")
            .replace("max_retries", "api_key_env = \"\"\nmax_retries"),
    );
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(
        text(&out).contains("and no API key was sent (`api_key_env = \"\"`)")
            && !text(&out).contains("(none)"),
        "{}",
        text(&out)
    );
}

/// Regression: `timeout` sends its SIGTERM to the command and to its process group, so judge
/// got two at once and quit at once, with no summary and no hint. Signals that close together
/// are one stop; a later second one quits at once and says how to resume.
#[test]
fn two_signals_at_once_are_one_stop_and_a_later_one_quits_saying_how_to_resume() {
    let server = FakeServer::start(|req, _| {
        std::thread::sleep(Duration::from_millis(1500));
        Reply::ok(&format!("answer to {}", req.user_text()))
    });
    let p = Project::with_suite(
        10,
        &config("openai", &server.url, 0, 5)
            .replace("max_retries = 0", "max_retries = 0\nmax_concurrency = 2"),
    );
    let start = |p: &Project| {
        p.judge()
            .args(["generate", "--run", "r"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait_for_requests = |server: &FakeServer, n: usize| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while server.count() < n && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let child = start(&p);
    wait_for_requests(&server, 2);
    let pid = child.id().to_string();
    // Two deliveries in one go, as `timeout` makes them.
    let status = std::process::Command::new("kill")
        .args(["-TERM", &pid, &pid])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(!text(&out).contains("quitting at once"), "{}", text(&out));
    assert!(
        text(&out).contains("this invocation:"),
        "the summary: {}",
        text(&out)
    );
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), server.count());

    // A second signal well after the first quits at once, saying what is kept.
    let asked = server.count();
    let child = start(&p);
    wait_for_requests(&server, asked + 1);
    let pid = child.id().to_string();
    for signal in ["-TERM", "-INT"] {
        std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        std::thread::sleep(Duration::from_millis(600));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        text(&out).contains("quitting at once; every finished item of run `r` is recorded: rerun the same command with `--run r` to resume"),
        "{}",
        text(&out)
    );

    // Ctrl-C pressed again and again, closer than half a second each: the window counts from
    // the first, so it still quits at once.
    let asked = server.count();
    let child = start(&p);
    wait_for_requests(&server, asked + 1);
    let pid = child.id().to_string();
    for _ in 0..4 {
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(text(&out).contains("quitting at once"), "{}", text(&out));
}

/// Regression: the signal listener wrote its note to stderr before it set the stop flag, so a
/// stderr that blocked (a full pipe nobody reads, here filled by status lines) kept `timeout`'s
/// SIGTERM from stopping the run, which went on sending paid requests to the end.
#[test]
fn a_blocked_stderr_does_not_keep_a_signal_from_stopping_the_run() {
    let server = FakeServer::start(|req, _| {
        std::thread::sleep(Duration::from_millis(100));
        Reply::ok(&format!("answer to {}", req.user_text()))
    });
    let p = Project::with_suite(
        200,
        &config("openai", &server.url, 0, 5)
            .replace("max_retries = 0", "max_retries = 0\nmax_concurrency = 2"),
    );
    // Status lines every millisecond fill the pipe, which is read only well after the stop.
    let script = format!(
        "JUDGE_STATUS_EVERY_MS=1 timeout 2 '{}' generate --run r 2>&1 >/dev/null | (sleep 8; cat >/dev/null)",
        env!("CARGO_BIN_EXE_judge")
    );
    let mut shell = std::process::Command::new("sh");
    shell.arg("-c").arg(&script);
    for (key, value) in p.judge().get_envs() {
        match value {
            Some(v) => shell.env(key, v),
            None => shell.env_remove(key),
        };
    }
    let status = shell.current_dir(p.path()).status().unwrap();
    assert!(status.success());
    // 200 items at two a time, 100 ms each: about 20 a second. A stop at 2 s leaves about
    // 40; one held up until the pipe is read at 8 s, about 160.
    let asked = server.count();
    assert!(asked < 100, "the stop did not take: {asked} requests");
    assert_eq!(p.jsonl("runs/r/outputs.jsonl").len(), asked);
}
