//! `judge check` end to end, in the real bubblewrap sandbox, and the exec judge on its results.

use crate::common::{Project, TEST_KEY, files_config, text};

/// A temp copy of the shipped offline default with a generated run `offline`.
fn offline_run() -> (Project, usize) {
    let p = Project::offline();
    let out = p.run(&["generate", "--run", "offline"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let tasks = std::fs::read_dir(p.path().join("suites/python-pitfalls/tasks"))
        .unwrap()
        .count();
    (p, tasks)
}

fn model_row<'a>(report: &'a serde_json::Value, model: &str) -> &'a serde_json::Value {
    report["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["model"] == model)
        .unwrap()
}

/// Self-test of the shipped suite: every reference answer passes its hidden test and every
/// plausible answer fails it, so each check separates the right answer from the trap.
#[test]
fn shipped_suite_checks_separate_reference_from_plausible() {
    let (p, tasks) = offline_run();
    let out = p.run(&["check", "--run", "offline", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let passed = |m: &str| model_row(&report, m)["passed"].as_u64().unwrap() as usize;
    let records = p.jsonl("runs/offline/checks.jsonl");
    let failing: Vec<String> = records
        .iter()
        .filter(|r| (r["model"] == "reference" || r["model"] == "verbose") && r["result"] != "pass")
        .map(|r| {
            format!(
                "{} {}: {} {}",
                r["model"], r["task"], r["result"], r["stdout_tail"]
            )
        })
        .collect();
    assert!(
        failing.is_empty(),
        "reference/verbose answers must pass: {failing:#?}"
    );
    let passing: Vec<&serde_json::Value> = records
        .iter()
        .filter(|r| r["model"] == "plausible" && r["result"] == "pass")
        .map(|r| &r["task"])
        .collect();
    assert!(
        passing.is_empty(),
        "plausible answers must fail: {passing:?}"
    );
    assert_eq!(
        (passed("reference"), passed("verbose"), passed("plausible")),
        (tasks, tasks, 0)
    );
    let partial = passed("partial");
    assert!(
        partial > 0 && partial < tasks,
        "partial is a mix: {partial}/{tasks}"
    );
    assert_eq!(records.len(), tasks * 4);
    assert!(records.iter().all(|r| r["sandbox"] == "bwrap"));
    let ci = model_row(&report, "plausible");
    assert_eq!(ci["ci_low"], 0.0);
    assert!(
        ci["ci_high"].as_f64().unwrap() > 0.0,
        "Wilson upper bound above 0 at 0 passes"
    );

    // A rerun is served from the check cache.
    let out = p.run(&["check", "--run", "offline", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let csv = String::from_utf8_lossy(&out.stdout);
    assert!(
        csv.starts_with("model,passed,total,pass_rate,ci_low,ci_high"),
        "{csv}"
    );
    let without_cache_flag = |rs: Vec<serde_json::Value>| -> Vec<serde_json::Value> {
        rs.into_iter()
            .map(|mut r| {
                r.as_object_mut().unwrap().remove("from_cache");
                r
            })
            .collect()
    };
    let rerun = p.jsonl("runs/offline/checks.jsonl");
    assert!(
        rerun
            .iter()
            .all(|r| r["from_cache"] == true || r["result"] == "no_code"),
        "every check with code comes back from the cache"
    );
    assert_eq!(
        without_cache_flag(rerun),
        without_cache_flag(records),
        "nothing changes on a rerun"
    );

    // The execution judge decides from these results: reference beats plausible everywhere.
    let out = p.run(&["compare", "--run", "offline", "--judge", "exec"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let comparisons = p.jsonl("runs/offline/comparisons.jsonl");
    let ref_vs_plausible: Vec<&serde_json::Value> = comparisons
        .iter()
        .filter(|c| c["model_a"] == "reference" && c["model_b"] == "plausible")
        .collect();
    assert_eq!(ref_vs_plausible.len(), tasks);
    assert!(
        ref_vs_plausible
            .iter()
            .all(|c| c["winner"] == "model_a" && c["flipped"] == false)
    );
    assert!(
        comparisons
            .iter()
            .filter(|c| c["model_a"] == "reference" && c["model_b"] == "verbose")
            .all(|c| c["winner"] == "tie")
    );
    assert!(
        !p.path().join("runs/offline/judgments.jsonl").exists()
            || p.jsonl("runs/offline/judgments.jsonl").is_empty(),
        "exec makes no calls"
    );

    // Records of an older runner (whose rules could give other verdicts) are checked again,
    // not reused: here reference's checks as an older runner might have failed them.
    let old: Vec<String> = p
        .jsonl("runs/offline/checks.jsonl")
        .into_iter()
        .map(|mut r| {
            if r["model"] == "reference" {
                r["runner"] = 4.into();
                r["result"] = "fail".into();
            }
            r.to_string()
        })
        .collect();
    p.write("runs/offline/checks.jsonl", &(old.join("\n") + "\n"));
    let out = p.run(&["compare", "--run", "offline", "--judge", "exec"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let reference: Vec<serde_json::Value> = p
        .jsonl("runs/offline/checks.jsonl")
        .into_iter()
        .filter(|r| r["model"] == "reference")
        .collect();
    assert!(
        reference
            .iter()
            .all(|r| r["result"] == "pass"
                && r["runner"] == judge::commands::check::RUNNER_VERSION),
        "{reference:?}"
    );
    assert!(
        p.jsonl("runs/offline/comparisons.jsonl")
            .iter()
            .filter(|c| c["model_a"] == "reference" && c["model_b"] == "plausible")
            .all(|c| c["winner"] == "model_a")
    );
}

fn one_task_project(answer: &str, check: &str) -> Project {
    let p = Project::with_suite(1, &files_config(&[("m", "set", "f")]));
    p.write("suites/demo/tasks/t01/check.py", check);
    p.write("suites/demo/answers/set/t01.md", answer);
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    p
}

#[test]
fn secrets_in_the_parent_environment_do_not_reach_the_check() {
    let answer = "```python\nimport os\nfor k, v in os.environ.items():\n    print(k, v)\n```";
    let p = one_task_project(answer, "import solution\n");
    let out = p.run(&["check", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let records = p.read("runs/r/checks.jsonl");
    assert!(
        records.contains("PATH"),
        "the check ran and printed its environment: {records}"
    );
    assert!(
        !records.contains(TEST_KEY),
        "the API key leaked into the sandbox"
    );
}

#[test]
fn no_sandbox_is_loud_and_recorded() {
    let p = one_task_project(
        "```python\nx = 1\n```",
        "import solution\nassert solution.x == 1\n",
    );
    let out = p.run(&["check", "--run", "r", "--no-sandbox"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("UNCONFINED"));
    let rec = &p.jsonl("runs/r/checks.jsonl")[0];
    assert_eq!(rec["sandbox"], "none");
    assert_eq!(rec["result"], "pass");
}

#[test]
fn infinite_loop_times_out_and_is_recorded() {
    let p = one_task_project("```python\nwhile True:\n    pass\n```", "import solution\n");
    let out = p.run(&["check", "--run", "r", "--timeout-secs", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rec = &p.jsonl("runs/r/checks.jsonl")[0];
    assert_eq!(rec["result"], "timeout");
}

#[test]
fn an_example_usage_block_after_the_solution_is_not_what_gets_checked() {
    let answer = "Here is the function:\n```python\ndef double(x):\n    return 2 * x\n```\nExample usage:\n```python\nprint(double(3))  # 6\n```\n";
    let p = one_task_project(
        answer,
        "from solution import double\nassert double(2) == 4\n",
    );
    let out = p.run(&["check", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let rec = &p.jsonl("runs/r/checks.jsonl")[0];
    assert_eq!(rec["result"], "pass", "{rec}");
}

#[test]
fn reply_without_code_is_no_code() {
    let p = one_task_project("I can't help with that request.", "import solution\n");
    let out = p.run(&["check", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/checks.jsonl")[0]["result"], "no_code");
}

#[test]
fn a_timeout_is_tried_again_with_the_new_limit() {
    let p = one_task_project(
        "```python\nimport time\ntime.sleep(2)\nx = 1\n```",
        "import solution\nassert solution.x == 1\n",
    );
    let out = p.run(&["check", "--run", "r", "--timeout-secs", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/checks.jsonl")[0]["result"], "timeout");
    let out = p.run(&["check", "--run", "r", "--timeout-secs", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/checks.jsonl")[0]["result"], "pass");
}

/// Ctrl-C in a terminal reaches the whole foreground process group: the checks running then
/// must not be recorded as `error` (which the exec judge would count), and `judge run` stops
/// with 130; the rerun finishes the same leaderboard as an uninterrupted run.
#[test]
fn ctrl_c_to_the_process_group_during_run_stops_it_without_false_errors() {
    use std::os::unix::process::CommandExt;
    let p = Project::with_suite(
        6,
        &files_config(&[("slow", "slow", "f"), ("wrong", "wrong", "g")]),
    );
    for i in 1..=6 {
        p.write(
            &format!("suites/demo/tasks/t{i:02}/check.py"),
            "import solution\nassert solution.x == 1\n",
        );
        p.write(
            &format!("suites/demo/answers/slow/t{i:02}.md"),
            "```python\nimport time\ntime.sleep(1)\nx = 1\n```",
        );
        p.write(
            &format!("suites/demo/answers/wrong/t{i:02}.md"),
            "```python\nimport time\ntime.sleep(1)\nx = 2\n```",
        );
    }
    let child = p
        .judge()
        .args(["run", "--run", "r"])
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Checks are under way once generation has written every output.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::time::Instant::now() < deadline
        && std::fs::read_to_string(p.path().join("runs/r/outputs.jsonl"))
            .map_or(0, |s| s.lines().count())
            < 12
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = std::process::Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let checks = std::fs::read_to_string(p.path().join("runs/r/checks.jsonl")).unwrap_or_default();
    assert!(!checks.contains("\"error\""), "{checks}");
    let out = p.run(&[
        "run",
        "--run",
        "r",
        "--allow-few-resamples",
        "--resamples",
        "50",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let comparisons = p.jsonl("runs/r/comparisons.jsonl");
    assert_eq!(comparisons.len(), 6);
    assert!(
        comparisons
            .iter()
            .all(|c| c["winner"] == "model_a" || c["winner"] == "model_b"),
        "{comparisons:?}"
    );
}

/// Generates run `run` of the offline project, then marks two of `reference`'s outputs failed,
/// as a provider error would have left them; returns the path of its outputs.jsonl.
fn generate_with_two_failures(p: &Project, run: &str) -> std::path::PathBuf {
    assert_eq!(p.run(&["generate", "--run", run]).status.code(), Some(0));
    let outputs = p.path().join(format!("runs/{run}/outputs.jsonl"));
    let failed: String = std::fs::read_to_string(&outputs)
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let task = v["task"].as_str().unwrap().to_string();
            if v["model"] == "reference"
                && ["asyncio-cancel-retry", "atomic-file-write"].contains(&task.as_str())
            {
                v["status"] = "failed".into();
                v["text"] = serde_json::Value::Null;
                v["error"] = serde_json::json!({"class": "server_error", "message": "HTTP 500"});
            }
            format!("{v}\n")
        })
        .collect();
    std::fs::write(&outputs, failed).unwrap();
    outputs
}

/// Comparisons decided by a failed generation go out of date once the output is generated
/// (`generate --retry-failed` after `compare`): rank refuses them until compare has run.
/// An outputs file left with an old and a new record of one item (a retry killed before
/// generate's final rewrite) counts the newer one.
#[test]
fn comparisons_made_stale_by_retry_failed_are_refused_until_compared_again() {
    let p = Project::offline();
    let fresh = p.run(&["run", "--run", "fresh"]);
    assert_eq!(fresh.status.code(), Some(0), "{}", text(&fresh));
    generate_with_two_failures(&p, "r");
    assert_eq!(p.run(&["run", "--run", "r"]).status.code(), Some(1));
    let retried = p.run(&["generate", "--run", "r", "--retry-failed"]);
    assert_eq!(retried.status.code(), Some(0), "{}", text(&retried));
    let stale = p.run(&["rank", "--run", "r"]);
    assert_eq!(stale.status.code(), Some(2), "{}", text(&stale));
    assert!(
        text(&stale).contains("decided by a failed generation that the outputs no longer bear out"),
        "{}",
        text(&stale)
    );
    assert_eq!(p.run(&["compare", "--run", "r"]).status.code(), Some(0));
    let ranked = p.run(&["rank", "--run", "r"]);
    assert_eq!(ranked.stdout, fresh.stdout, "{}", text(&ranked));

    // Compared with the failures; then a retry killed before generate's final rewrite: the
    // old failed records first, the retried ok records appended after them.
    let outputs = generate_with_two_failures(&p, "d");
    assert_eq!(p.run(&["compare", "--run", "d"]).status.code(), Some(0));
    let good: String = std::fs::read_to_string(p.path().join("runs/fresh/outputs.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| {
            l.contains("\"model\":\"reference\"")
                && (l.contains("asyncio-cancel-retry") || l.contains("atomic-file-write"))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(good.lines().count(), 2);
    let mut whole = std::fs::read_to_string(&outputs).unwrap();
    whole.push_str(&good);
    std::fs::write(&outputs, whole).unwrap();
    let stale = p.run(&["rank", "--run", "d"]);
    assert_eq!(stale.status.code(), Some(2), "{}", text(&stale));
    assert_eq!(p.run(&["compare", "--run", "d"]).status.code(), Some(0));
    let out = p.run(&["rank", "--run", "d"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(out.stdout, fresh.stdout, "the newer records count");
}

#[test]
fn exec_judge_rechecks_outputs_regenerated_by_retry_failed() {
    let p = Project::offline();
    let fresh = p.run(&["run", "--run", "fresh"]);
    assert_eq!(fresh.status.code(), Some(0), "{}", text(&fresh));
    generate_with_two_failures(&p, "r");
    let first = p.run(&["run", "--run", "r"]);
    assert_eq!(first.status.code(), Some(1), "{}", text(&first));
    assert_ne!(
        first.stdout, fresh.stdout,
        "two failed outputs move the leaderboard"
    );
    // The provider is back: the failed items are generated again, and must be checked again.
    let again = p.run(&["run", "--run", "r", "--retry-failed"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert_eq!(
        String::from_utf8_lossy(&again.stdout),
        String::from_utf8_lossy(&fresh.stdout),
        "the regenerated outputs were checked again, as in a fresh run"
    );
}

#[test]
fn timeout_out_of_range_is_refused() {
    let (p, _) = offline_run();
    for bad in ["0", "3601", "18446744073709551615"] {
        let out = p.run(&["check", "--run", "offline", "--timeout-secs", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", text(&out));
        assert!(
            text(&out).contains("is out of range: give 1 to 3600 seconds"),
            "{bad}: {}",
            text(&out)
        );
    }
}

/// A check.py that does not compile says so once per task, gives `error` (no verdict) rather
/// than failing every model, and is not remembered: once fixed (a new run, the suite having
/// changed), the answers are checked.
#[test]
fn a_check_that_does_not_compile_is_reported_not_counted() {
    let p = one_task_project(
        "```python\nx = 1\n```",
        "import solution\nassert solution.x == 1 +\n",
    );
    let out = p.run(&["check", "--run", "r"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        err.contains(
            "task \"t01\": its check.py does not compile at line 2 (SyntaxError: invalid syntax)"
        ),
        "{err}"
    );
    assert_eq!(p.jsonl("runs/r/checks.jsonl")[0]["result"], "error");
    p.write(
        "suites/demo/tasks/t01/check.py",
        "import solution\nassert solution.x == 1\n",
    );
    for args in [&["generate", "--run", "r2"][..], &["check", "--run", "r2"]] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    assert_eq!(p.jsonl("runs/r2/checks.jsonl")[0]["result"], "pass");
}

/// The exec judge decides only tasks with a check.py: the others are named as left out, in
/// compare and in the leaderboard; a suite with no check at all is refused before anything is
/// generated.
#[test]
fn the_exec_judge_says_which_tasks_it_leaves_out() {
    let p = Project::with_suite(2, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    p.write(
        "suites/demo/tasks/t01/check.py",
        "import solution\nassert solution.x == 1\n",
    );
    for (set, x) in [("a", 1), ("b", 2)] {
        for task in ["t01", "t02"] {
            p.write(
                &format!("suites/demo/answers/{set}/{task}.md"),
                &format!("```python\nx = {x}\n```"),
            );
        }
    }
    let out = p.run(&["run", "--run", "r", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let note = "the exec judge ranks only tasks with a check.py: 1 of 2 tasks has none and is not compared (t02)";
    assert!(text(&out).contains(note), "{}", text(&out));
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        board["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == note),
        "{board}"
    );

    // Per task, for whoever writes the checks.
    let out = p.run(&["check", "--run", "r", "--by-task"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(
            "note: pass rates cover the tasks with a check.py: 1 of 2 tasks has none and is not checked (t02)"
        ),
        "{}",
        text(&out)
    );
    let rows: Vec<Vec<String>> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect();
    assert_eq!(rows, [["task", "a", "b"], ["t01", "pass", "fail"]]);
    // The exec judge, which runs the checks it needs itself, names a check that does not
    // compile as `judge check` does.
    p.write(
        "suites/demo/tasks/t01/check.py",
        "import solution\nassert solution.x == 1 +\n",
    );
    // `judge run` refuses to begin a run on it (fixing it later needs another run); generate
    // warns.
    let out = p.run(&["run", "--run", "r2"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("suites/demo/tasks/t01/check.py does not compile (line 2): invalid syntax; the exec judge would fail every comparison of that task: fix it before the run begins"),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("runs/r2").exists());
    let out = p.run(&["generate", "--run", "r2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("warning: suites/demo/tasks/t01/check.py does not compile (line 2)"),
        "{}",
        text(&out)
    );
    let out = p.run(&["compare", "--run", "r2", "--judge", "exec"]);
    assert!(
        text(&out).contains("task \"t01\": its check.py does not compile at line 2"),
        "{}",
        text(&out)
    );
    // A check that never imports the answer passes every answer: a new run says so.
    p.write("suites/demo/tasks/t01/check.py", "assert 1 + 1 == 2\n");
    let out = p.run(&["generate", "--run", "r3"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("warning: suites/demo/tasks/t01/check.py never imports `solution` (the answer's code): every answer passes it"),
        "{}",
        text(&out)
    );

    let p = Project::with_suite(1, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    let out = p.run(&["run", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("the exec judge decides from hidden tests, and suite `demo` has none"),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("runs/r").exists());
    p.run(&["generate", "--run", "g"]);
    let out = p.run(&["compare", "--run", "g"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// A SIGTERM sent to every process (systemd stopping a service, a CI runner killing the tree)
/// also kills the checks running: those are the stop's doing, not the code's, and are neither
/// recorded nor cached; judge stops with 130 and the rerun checks them.
#[test]
fn a_sigterm_to_the_whole_tree_records_no_false_failure() {
    let p = one_task_project(
        "```python\nimport time\ntime.sleep(3)\nx = 1\n```",
        "import solution\nassert solution.x == 1\n",
    );
    let child = p
        .judge()
        .args(["check", "--run", "r"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Until the check's sandbox is running under judge.
    let children = format!("/proc/{0}/task/{0}/children", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::fs::read_to_string(&children)
        .unwrap_or_default()
        .trim()
        .is_empty()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let _ = std::process::Command::new("pkill")
        .args(["-TERM", "-P", &pid])
        .status();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let records = p.read("runs/r/checks.jsonl");
    assert!(
        !records.contains("\"fail\""),
        "a killed check was recorded: {records}"
    );
    let out = p.run(&["check", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/checks.jsonl")[0]["result"], "pass");
}

/// A task without a check.py gets no exec comparison, not even one decided by a failed
/// generation: the exec judge cannot judge it, so it must not hand out losses on it.
#[test]
fn the_exec_judge_decides_nothing_by_failure_on_a_task_without_a_check() {
    let p = Project::with_suite(2, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    p.write(
        "suites/demo/tasks/t01/check.py",
        "import solution\nassert solution.x == 1\n",
    );
    for set in ["a", "b"] {
        p.write(
            &format!("suites/demo/answers/{set}/t01.md"),
            "```python\nx = 1\n```",
        );
    }
    // b has no answer to t02: its generation fails there.
    p.write("suites/demo/answers/a/t02.md", "```python\nx = 1\n```");
    let out = p.run(&["run", "--run", "r", "--format", "json"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let comparisons = p.jsonl("runs/r/comparisons.jsonl");
    assert_eq!(comparisons.len(), 1, "{comparisons:?}");
    assert_eq!(comparisons[0]["task"], "t01");
    assert_eq!(comparisons[0]["winner"], "tie");
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
    assert_eq!(manifest["compare"]["missing_comparisons"]["exec"], 0);
}

/// A project of `tasks` tasks, each checked by `assert solution.x == 1`, and two models: `a`
/// answers `x = 1` (passes), `b` answers `x = 2` (fails).
fn x_project(tasks: usize) -> Project {
    let p = Project::with_suite(tasks, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    for i in 1..=tasks {
        let task = format!("t{i:02}");
        p.write(
            &format!("suites/demo/tasks/{task}/check.py"),
            "import solution\nassert solution.x == 1\n",
        );
        for (set, x) in [("a", 1), ("b", 2)] {
            p.write(
                &format!("suites/demo/answers/{set}/{task}.md"),
                &format!("```python\nx = {x}\n```"),
            );
        }
    }
    p
}

/// An exec leaderboard says when the checks it was decided from did not run as `judge check`
/// runs them by default: another time limit, or no sandbox.
#[test]
fn an_exec_leaderboard_names_a_changed_time_limit_or_a_missing_sandbox() {
    let p = x_project(1);
    let warnings = |p: &Project| -> Vec<String> {
        p.quick_board(&["rank", "--run", "r"])["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w.as_str().unwrap().to_string())
            .collect()
    };
    for args in [
        &["generate", "--run", "r"][..],
        &["check", "--run", "r", "--timeout-secs", "5"],
        &["compare", "--run", "r", "--judge", "exec"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    let said = warnings(&p);
    assert!(
        said.iter()
            .any(|w| w
                .contains("last ran with a 5 s time limit (--timeout-secs; the default is 20 s)")),
        "{said:?}"
    );
    for args in [
        &["check", "--run", "r", "--no-sandbox"][..],
        &["compare", "--run", "r", "--judge", "exec"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    let said = warnings(&p);
    assert!(
        said.iter().any(|w| w
            == "2 of the 2 checks behind these verdicts ran without the sandbox (--no-sandbox)"),
        "{said:?}"
    );
    assert!(!said.iter().any(|w| w.contains("time limit")), "{said:?}");
    // A later `judge check` does not change what the verdicts rest on until compare runs.
    let out = p.run(&["check", "--run", "r", "--timeout-secs", "7"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = warnings(&p);
    assert!(
        said.iter().any(|w| w.contains("2 of the 2 checks"))
            && !said.iter().any(|w| w.contains("7 s")),
        "{said:?}"
    );
    let out = p.run(&["compare", "--run", "r", "--judge", "exec"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = warnings(&p);
    assert!(
        said.iter()
            .any(|w| w.contains("last ran with a 7 s time limit"))
            && !said.iter().any(|w| w.contains("without the sandbox")),
        "{said:?}"
    );
}

/// Regression: a check missing when compare ran (a line lost from checks.jsonl, a model added)
/// made the exec judge re-run every check under the default limits, silently replacing
/// results the user had run with `--timeout-secs 30`; after `--no-sandbox` checks it ran model
/// code in the sandbox mixed with unconfined results. It now runs under the recorded limit,
/// and refuses to decide for the user after `--no-sandbox`.
#[test]
fn the_exec_judge_runs_missing_checks_under_the_limits_the_run_last_used() {
    let p = x_project(1);
    let drop_a_check = |p: &Project| {
        let checks = p.read("runs/r/checks.jsonl");
        let kept: Vec<&str> = checks.lines().skip(1).collect();
        p.write("runs/r/checks.jsonl", &(kept.join("\n") + "\n"));
    };
    for args in [
        &["generate", "--run", "r"][..],
        &["check", "--run", "r", "--timeout-secs", "30"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    drop_a_check(&p);
    let out = p.run(&["compare", "--run", "r", "--judge", "exec"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
    assert_eq!(manifest["check"]["wall_timeout_secs"], 30.0, "{manifest}");
    assert_eq!(p.jsonl("runs/r/checks.jsonl").len(), 2);

    let out = p.run(&["check", "--run", "r", "--no-sandbox"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    drop_a_check(&p);
    let out = p.run(&["compare", "--run", "r", "--judge", "exec"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("this run's checks last ran with --no-sandbox"),
        "{}",
        text(&out)
    );
    assert_eq!(p.jsonl("runs/r/checks.jsonl").len(), 1, "nothing ran");
}

/// Regression: a `judge check` interrupted before it reached a check left that check's
/// record from an earlier `--timeout-secs` while the manifest named the new limit; the exec
/// judge took the old `timeout` as current. Each record now says its limit, and one of
/// another limit than the recorded one is checked again.
#[test]
fn the_exec_judge_checks_again_what_ran_under_another_limit() {
    let p = x_project(1);
    p.write(
        "suites/demo/answers/a/t01.md",
        "```python\nimport time\ntime.sleep(1.5)\nx = 1\n```",
    );
    for args in [
        &["generate", "--run", "r"][..],
        &["check", "--run", "r", "--timeout-secs", "1"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    let checks = p.jsonl("runs/r/checks.jsonl");
    assert_eq!(checks[0]["result"], "timeout", "{checks:?}");
    assert_eq!(checks[0]["wall_timeout_secs"], 1.0, "{checks:?}");
    // What an interrupted `judge check` (default limit) leaves: the new limit, the old record.
    let manifest = p
        .read("runs/r/manifest.json")
        .replace("\"wall_timeout_secs\": 1.0", "\"wall_timeout_secs\": 20.0");
    p.write("runs/r/manifest.json", &manifest);
    let out = p.run(&["compare", "--run", "r", "--judge", "exec"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let checks = p.jsonl("runs/r/checks.jsonl");
    assert_eq!(checks[0]["result"], "pass", "{checks:?}");
    assert_eq!(checks[0]["wall_timeout_secs"], 20.0, "{checks:?}");
    assert!(
        p.jsonl("runs/r/comparisons.jsonl")
            .iter()
            .all(|c| c["winner"] == "model_a"),
        "a's slow but correct answer wins"
    );
}

/// A `judge check` that fails on reading the run's checks (a corrupt line) records no limits:
/// it ran nothing under them.
#[test]
fn a_check_refused_on_a_bad_record_leaves_the_manifest_alone() {
    let p = x_project(1);
    for args in [&["generate", "--run", "r"][..], &["check", "--run", "r"]] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    p.write("runs/r/checks.jsonl", "garbage\n");
    let before = p.read("runs/r/manifest.json");
    let out = p.run(&["check", "--run", "r", "--timeout-secs", "3"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(p.read("runs/r/manifest.json"), before);
}

/// Regression: with a sandbox that cannot start, `judge run` generated the whole run before
/// compare refused (exit 2 with everything written); it is now refused before anything.
#[test]
fn run_refuses_a_sandbox_that_cannot_start_before_generating() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::offline();
    let bin = p.path().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let bwrap = bin.join("bwrap");
    std::fs::write(
        &bwrap,
        "#!/bin/sh\necho 'bwrap: no user namespaces' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = p.judge().env("PATH", path).args(["run"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "the exec judge runs every answer's check in the sandbox, which cannot run here"
        ),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("runs").exists(), "nothing was generated");
}

/// Regression (review): after `judge check --no-sandbox`, a check that ended in `error` (a
/// check.py that does not compile) counted as missing, so the exec judge refused for good,
/// asking for the `judge check` that had just written the same `error` again.
#[test]
fn an_error_check_after_no_sandbox_checks_does_not_block_the_exec_judge() {
    let p = x_project(2);
    p.write(
        "suites/demo/tasks/t02/check.py",
        "import solution\nassert (\n",
    );
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["check", "--run", "r", "--no-sandbox"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let out = p.run(&["compare", "--run", "r", "--judge", "exec"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "failed comparisons, no refusal: {}",
        text(&out)
    );
    let winners: Vec<String> = p
        .jsonl("runs/r/comparisons.jsonl")
        .iter()
        .map(|c| format!("{}:{}", c["task"], c["winner"]).replace('"', ""))
        .collect();
    assert_eq!(winners, ["t01:model_a", "t02:failed"]);
}

/// Regression (crash fuzzing): a compare killed after the exec judge's last check but before
/// its end left no `check` section, and the next compare (which ran no check) never wrote
/// one, so the verdicts' recorded basis had no time limit. The limits are now in the manifest
/// while the checks run.
#[test]
fn the_check_limits_are_recorded_before_the_checks_run() {
    let p = Project::with_suite(1, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    p.write(
        "suites/demo/tasks/t01/check.py",
        "import time\nimport solution\ntime.sleep(6)\n",
    );
    for set in ["a", "b"] {
        p.write(
            &format!("suites/demo/answers/{set}/t01.md"),
            "```python\nx = 1\n```",
        );
    }
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    for command in ["compare", "check"] {
        let mut args = vec![command, "--run", "r"];
        if command == "compare" {
            args.extend(["--judge", "exec"]);
        }
        let mut child = p
            .judge()
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(4);
        let mut recorded = false;
        while !recorded && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
            recorded = serde_json::from_str::<serde_json::Value>(&p.read("runs/r/manifest.json"))
                .is_ok_and(|m| m["check"]["wall_timeout_secs"] == 20.0);
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "{command}: the checks (6 s each) are still running"
        );
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            recorded,
            "{command}: the limits are in the manifest while checks run"
        );
        // As a kill leaves it for the next command.
        let mut manifest: serde_json::Value =
            serde_json::from_str(&p.read("runs/r/manifest.json")).unwrap();
        manifest.as_object_mut().unwrap().remove("check");
        p.write("runs/r/manifest.json", &manifest.to_string());
    }
}

/// Without bwrap's --die-with-parent, a check that sleeps outlived a `kill -9` of judge
/// (found by a review: still there 28 s later, past its 20 s limit). It now dies with judge.
#[test]
fn a_no_sandbox_check_dies_with_a_killed_judge() {
    let pid_file = std::env::temp_dir().join(format!(
        "judge-test-orphan-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let answer = format!(
        "```python\nimport os, time\nwith open({:?}, 'w') as f:\n    f.write(str(os.getpid()))\ntime.sleep(60)\nx = 1\n```",
        pid_file.display().to_string()
    );
    let p = one_task_project(&answer, "import solution\nassert solution.x == 1\n");
    let mut child = p
        .judge()
        .args(["check", "--run", "r", "--no-sandbox"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let wait_for = |what: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !what() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        what()
    };
    let pid = || {
        std::fs::read_to_string(&pid_file)
            .ok()
            .filter(|s| !s.is_empty())
    };
    assert!(wait_for(&|| pid().is_some()), "the check started");
    let proc_dir = std::path::PathBuf::from(format!("/proc/{}", pid().unwrap()));
    assert!(proc_dir.exists());
    child.kill().unwrap();
    child.wait().unwrap();
    let gone = wait_for(&|| !proc_dir.exists());
    let _ = std::fs::remove_file(&pid_file);
    assert!(gone, "the check outlived judge");
}

/// A check killed between its appends and its final rewrite leaves records twice and out of
/// order; a compare that then has nothing to run tidies the file (found by crash fuzzing: it
/// stayed that way through run, compare and rank).
#[test]
fn the_exec_judge_tidies_a_checks_file_a_kill_left_untidy() {
    let p = x_project(2);
    for args in [&["generate", "--run", "r"][..], &["check", "--run", "r"]] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    let tidy = p.read("runs/r/checks.jsonl");
    let mut lines: Vec<&str> = tidy.lines().collect();
    lines.reverse();
    let untidy = format!("{}\n{}\n", lines.join("\n"), lines[0]);
    p.write("runs/r/checks.jsonl", &untidy);
    let out = p.run(&["compare", "--run", "r", "--judge", "exec"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.read("runs/r/checks.jsonl"), tidy);
}

/// A suite without hidden tests has nothing for `check` to do (it says so) and is refused by
/// the exec judge, both before the run's outputs are read (they may be gigabytes): here
/// outputs.jsonl is unreadable, and neither stumbles on it.
#[test]
fn a_suite_without_checks_is_handled_before_the_outputs_are_read() {
    let p = Project::with_suite(
        2,
        &files_config(&[("a", "set-a", "fam-a"), ("b", "set-b", "fam-b")]),
    );
    for set in ["set-a", "set-b"] {
        for t in ["t01", "t02"] {
            p.write(
                &format!("suites/demo/answers/{set}/{t}.md"),
                "```python\nprint(1)\n```\n",
            );
        }
    }
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    std::fs::write(
        p.path().join("runs/r/outputs.jsonl"),
        b"\xff\xfe not utf-8\n",
    )
    .unwrap();
    let out = p.run(&["check", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(
            "warning: suite `demo` has no hidden tests (tasks/<id>/check.py): nothing to check"
        ),
        "{}",
        text(&out)
    );
    let out = p.run(&["compare", "--run", "r", "--judge", "exec"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("the exec judge decides from hidden tests, and suite `demo` has none"),
        "{}",
        text(&out)
    );
}
