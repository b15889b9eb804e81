//! `judge rank` and `judge run` end to end: reference fixtures through the CLI, determinism,
//! input validation, and the offline pipeline.

use crate::common::{Project, files_config, repo_root, text};

fn fixture(name: &str) -> serde_json::Value {
    let path = repo_root().join("tests/fixtures/stats").join(name);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A project with a battles file `b.jsonl` of a single battle: x beats y.
fn one_battle() -> (Project, String) {
    let p = Project::empty();
    let file = battles_file(
        &p,
        "b.jsonl",
        &[serde_json::json!({"model_a": "x", "model_b": "y", "winner": "model_a"})],
    );
    (p, file)
}

fn battles_file(p: &Project, name: &str, rows: &[serde_json::Value]) -> String {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    p.write(name, &text);
    name.to_string()
}

#[test]
fn every_bradley_terry_fixture_matches_through_the_cli() {
    let fx = fixture("bradley_terry.json");
    let p = Project::empty();
    for case in fx["cases"].as_array().unwrap() {
        let rows = case["comparisons"].as_array().unwrap();
        let file = battles_file(&p, "battles.jsonl", rows);
        let prior = case["prior"].as_f64().unwrap().to_string();
        let out = p.run(&[
            "rank",
            "--comparisons",
            &file,
            "--prior",
            &prior,
            "--format",
            "json",
            "--resamples",
            "1000",
        ]);
        let name = case["name"].as_str().unwrap();
        if case["models"].as_array().unwrap().len() < 2 {
            assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out));
            continue;
        }
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out));
        let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let tol = &case["tolerance"];
        for (model, exp) in case["expected"].as_object().unwrap() {
            let Some(got) = board["models"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| &m["model"] == model)
            else {
                // A model that appears in no comparison row cannot come from a battles file.
                assert!(
                    !rows
                        .iter()
                        .any(|r| &r["model_a"] == model || &r["model_b"] == model),
                    "{name}: {model} missing"
                );
                continue;
            };
            for (field, t) in [("rating", "rating"), ("win_rate", "win_rate")] {
                let (g, e) = (got[field].as_f64().unwrap(), exp[field].as_f64().unwrap());
                assert!(
                    (g - e).abs() <= tol[t].as_f64().unwrap(),
                    "{name} {model} {field}: {g} vs {e}"
                );
            }
        }
    }
}

#[test]
fn bootstrap_fixture_bounds_within_0_02() {
    let fx = fixture("bootstrap.json");
    let p = Project::empty();
    let file = battles_file(&p, "b.jsonl", fx["comparisons"].as_array().unwrap());
    let out = p.run(&[
        "rank",
        "--comparisons",
        &file,
        "--format",
        "json",
        "--seed",
        "11",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected = fx["expected"]
        .as_object()
        .expect("expected intervals per model");
    for (model, exp) in expected {
        let got = board["models"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| &m["model"] == model)
            .unwrap();
        let lo = exp["win_rate_ci"][0].as_f64().unwrap();
        let hi = exp["win_rate_ci"][1].as_f64().unwrap();
        assert!(
            (got["win_rate_ci_low"].as_f64().unwrap() - lo).abs() <= 0.02,
            "{model} low"
        );
        assert!(
            (got["win_rate_ci_high"].as_f64().unwrap() - hi).abs() <= 0.02,
            "{model} high"
        );
    }
}

/// The same battles in another order, with both-bad rows added ahead of everything, give
/// the same numbers (Elo, which follows the order, aside), by either unit: models and tasks
/// are numbered by name and label, not by first appearance.
#[test]
fn row_order_and_both_bad_rows_move_no_interval() {
    let fx = fixture("bootstrap.json");
    let p = Project::empty();
    let rows = fx["comparisons"].as_array().unwrap().clone();
    let mut shuffled: Vec<serde_json::Value> = rows.iter().rev().cloned().collect();
    shuffled.swap(3, 250);
    for (a, b, q) in [("m05", "m03", "q99"), ("m04", "m00", "late-task")] {
        shuffled.insert(
            0,
            serde_json::json!({"model_a": a, "model_b": b, "winner": "tie (bothbad)", "question_id": q}),
        );
    }
    let plain = battles_file(&p, "plain.jsonl", &rows);
    let moved = battles_file(&p, "moved.jsonl", &shuffled);
    for unit in ["comparison", "task"] {
        let board = |file: &str| {
            let out = p.run(&[
                "rank",
                "--comparisons",
                file,
                "--format",
                "json",
                "--bootstrap-unit",
                unit,
            ]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out));
            let mut board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            for m in board["models"].as_array_mut().unwrap() {
                m["elo"] = serde_json::Value::Null;
                m["both_bad"] = serde_json::Value::Null;
            }
            board["models"].clone()
        };
        assert_eq!(board(&plain), board(&moved), "{unit}");
    }
}

#[test]
fn same_seed_same_bytes_and_seed_is_reported() {
    let fx = fixture("bootstrap.json");
    let p = Project::empty();
    let file = battles_file(&p, "b.jsonl", fx["comparisons"].as_array().unwrap());
    let run = |seed: &str, fmt: &str| {
        p.run(&[
            "rank",
            "--comparisons",
            &file,
            "--seed",
            seed,
            "--format",
            fmt,
        ])
        .stdout
    };
    for fmt in ["table", "csv", "json", "md"] {
        assert_eq!(run("5", fmt), run("5", fmt), "{fmt} output is reproducible");
    }
    assert_ne!(run("5", "csv"), run("6", "csv"), "the seed matters");
    let table = String::from_utf8(run("5", "table")).unwrap();
    assert!(
        table.contains("seed: 5")
            && table.contains("resamples: 1000")
            && table.contains("not a significance test"),
        "{table}"
    );
    let md = String::from_utf8(run("5", "md")).unwrap();
    assert!(
        md.contains("not a significance test") && md.contains("| rank | model |"),
        "{md}"
    );
    let csv = String::from_utf8(run("5", "csv")).unwrap();
    assert!(csv.starts_with("rank,model,rating,rating_ci_low,rating_ci_high,win_rate,win_rate_ci_low,win_rate_ci_high,games,wins,losses,ties,both_bad,failed,elo,cost_usd\n"));
    let json: serde_json::Value = serde_json::from_slice(&run("5", "json")).unwrap();
    assert_eq!(
        (
            json["schema_version"].as_u64(),
            json["seed"].as_u64(),
            json["bootstrap_unit"].as_str()
        ),
        (Some(1), Some(5), Some("comparison"))
    );
    // --timings reports on stderr and leaves the leaderboard alone.
    let timed = p.run(&["rank", "--comparisons", &file, "--seed", "5", "--timings"]);
    assert_eq!(timed.stdout, run("5", "table"));
    let stderr = String::from_utf8_lossy(&timed.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("timings: read+parse "))
        .unwrap_or_else(|| panic!("no timings line: {stderr}"));
    for part in ["· rank ", "· write ", "· total "] {
        assert!(line.contains(part), "{line}");
    }
}

#[test]
fn bad_inputs_are_clear_usage_errors() {
    let p = Project::empty();
    p.write("bad.jsonl", "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\"}\n{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"a\"}\n");
    let out = p.run(&["rank", "--comparisons", "bad.jsonl"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("bad.jsonl:2: unknown winner `a`"),
        "{}",
        text(&out)
    );
    p.write(
        "ok.jsonl",
        "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\"}\n",
    );
    let out = p.run(&["rank", "--comparisons", "ok.jsonl", "--resamples", "100"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-few-resamples"));
    let out = p.run(&[
        "rank",
        "--comparisons",
        "ok.jsonl",
        "--bootstrap-unit",
        "task",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "task bootstrap needs question_id: {}",
        text(&out)
    );
    p.write(
        "bothbad.jsonl",
        "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie (bothbad)\"}\n",
    );
    let out = p.run(&["rank", "--comparisons", "bothbad.jsonl"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no rated comparisons"));
    let out = p.run(&["rank"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap usage error: {}",
        text(&out)
    );
    // A folder given for the file is a usage error too, not a read error (exit 1).
    std::fs::create_dir(p.path().join("battles")).unwrap();
    let out = p.run(&["rank", "--comparisons", "battles"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("comparisons file `battles` is a folder; give a battles file"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_json_array_ranks_as_its_lines_and_gzip_is_named() {
    let p = Project::empty();
    let rows: Vec<serde_json::Value> = (0..60)
        .map(|i| {
            let winner = ["model_a", "model_b", "tie", "tie (bothbad)"][i % 4];
            let (a, b) = [("x", "y"), ("y", "z"), ("z", "x")][i % 3];
            serde_json::json!({"model_a": a, "model_b": b, "winner": winner, "question_id": i % 7,
                               "conversation_a": [{"role": "user", "content": "a, [b]\n{c}"}]})
        })
        .collect();
    let lines = battles_file(&p, "b.jsonl", &rows);
    p.write("b.json", &serde_json::to_string_pretty(&rows).unwrap());
    for unit in ["comparison", "task"] {
        let from_lines = p.run(&["rank", "--comparisons", &lines, "--bootstrap-unit", unit]);
        let from_array = p.run(&["rank", "--comparisons", "b.json", "--bootstrap-unit", unit]);
        assert_eq!(from_array.status.code(), Some(0), "{}", text(&from_array));
        assert_eq!(from_array.stdout, from_lines.stdout, "{unit}");
        // `-` reads standard input, in either shape.
        for file in [lines.as_str(), "b.json"] {
            let piped = p
                .judge()
                .args(["rank", "--comparisons", "-", "--bootstrap-unit", unit])
                .stdin(std::fs::File::open(p.path().join(file)).unwrap())
                .output()
                .unwrap();
            assert_eq!(piped.status.code(), Some(0), "{}", text(&piped));
            assert_eq!(piped.stdout, from_lines.stdout, "{unit} {file} from stdin");
        }
    }
    let mut bad = rows.clone();
    bad[41]["winner"] = "nobody".into();
    p.write("bad.json", &serde_json::to_string_pretty(&bad).unwrap());
    let out = p.run(&["rank", "--comparisons", "bad.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("bad.json: element 42 of the array: unknown winner `nobody`"),
        "{}",
        text(&out)
    );
    // A download cut short: refused, not ranked on what arrived.
    let pretty = serde_json::to_string_pretty(&rows).unwrap();
    p.write("cut.json", &pretty[..pretty.len() / 2]);
    let out = p.run(&["rank", "--comparisons", "cut.json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("cut.json: the JSON array ends before its closing `]`"),
        "{}",
        text(&out)
    );
    std::fs::write(p.path().join("b.jsonl.gz"), [0x1f, 0x8b, 8, 0]).unwrap();
    let out = p.run(&["rank", "--comparisons", "b.jsonl.gz"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is gzip-compressed; decompress it first"),
        "{}",
        text(&out)
    );
    let out = p
        .judge()
        .args(["rank", "--comparisons", "-"])
        .stdin(std::fs::File::open(p.path().join("b.jsonl.gz")).unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("standard input is gzip-compressed; decompress it on the way"),
        "{}",
        text(&out)
    );
    // A negative number reaches the tool's own check instead of clap's "unexpected argument".
    let out = p.run(&["rank", "--comparisons", &lines, "--prior", "-1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("--prior -1 must be a finite number greater than 0"),
        "{}",
        text(&out)
    );
}

#[test]
fn offline_run_prints_a_real_leaderboard() {
    let p = Project::offline();
    let out = p.run(&["run", "--run", "demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("judge: exec"), "{table}");
    let rank_of = |model: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().nth(1) == Some(model))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
    };
    assert_eq!(rank_of("reference").as_deref(), Some("1"), "{table}");
    assert_eq!(
        rank_of("verbose").as_deref(),
        Some("1"),
        "reference and verbose both pass every check: {table}"
    );
    assert_eq!(rank_of("plausible").as_deref(), Some("4"), "{table}");
    for ext in ["json", "csv", "md"] {
        assert!(
            p.path()
                .join(format!("runs/demo/leaderboard.{ext}"))
                .is_file()
        );
    }
    // rank on the run reproduces the printed leaderboard, and says which files it replaced.
    let again = p.run(&["rank", "--run", "demo"]);
    assert_eq!(again.stdout, out.stdout);
    assert!(
        text(&again).contains("leaderboard.{json,csv,md}, ")
            && text(&again).contains("leaderboards/exec.{json,csv,md}"),
        "{}",
        text(&again)
    );
    // So does the run's own comparisons.jsonl read as a battles file (its `task` names the
    // question, its `judge` the judge), but for the prompt the header cannot know, by either
    // unit.
    for unit in ["comparison", "task"] {
        let seed = "20261130";
        let by_run = p.run(&["rank", "--run", "demo", "--bootstrap-unit", unit]);
        let file = "runs/demo/comparisons.jsonl";
        let by_file = p.run(&[
            "rank",
            "--comparisons",
            file,
            "--seed",
            seed,
            "--bootstrap-unit",
            unit,
        ]);
        assert_eq!(by_file.status.code(), Some(0), "{unit}: {}", text(&by_file));
        assert!(
            String::from_utf8_lossy(&by_file.stdout).starts_with("judge: exec"),
            "the file names its judge: {}",
            text(&by_file)
        );
        let body = |o: &std::process::Output| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .skip(1)
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(body(&by_file), body(&by_run), "{unit}");
    }
    // Two runs' comparisons pooled in one file count each question twice: said so.
    let once = p.read("runs/demo/comparisons.jsonl");
    p.write("pooled.jsonl", &format!("{once}{once}"));
    let pooled = p.run(&["rank", "--comparisons", "pooled.jsonl"]);
    assert_eq!(pooled.status.code(), Some(0), "{}", text(&pooled));
    assert!(
        String::from_utf8_lossy(&pooled.stdout).contains(&format!(
            "warning: {} row(s) repeat a task and pair of models that an earlier row already has",
            once.lines().count()
        )),
        "{}",
        text(&pooled)
    );
    // The README shows this very leaderboard; keep it true.
    let readme = std::fs::read_to_string(repo_root().join("README.md")).unwrap();
    let sample = readme
        .split("prints a real leaderboard from real executions:\n\n```\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README's sample leaderboard");
    assert_eq!(
        table, sample,
        "README sample leaderboard differs from `judge run` output"
    );
    // Let go of at the end, the lock names no one.
    assert_eq!(p.read("runs/demo/.lock"), "");
    // The exec judge reads no prompt: none is recorded; the checks it ran are.
    let manifest: serde_json::Value =
        serde_json::from_str(&p.read("runs/demo/manifest.json")).unwrap();
    assert_eq!(
        manifest["compare"]["prompt_sha256"],
        serde_json::Value::Null
    );
    assert!(!p.path().join("runs/demo/prompts").exists());
    assert_eq!(manifest["check"]["sandbox"], "bwrap", "{manifest}");
    let prompt = p.run(&["rank", "--run", "demo", "--show-prompt"]);
    assert!(String::from_utf8_lossy(&prompt.stdout).starts_with("(this judge uses no prompt"));
}

#[test]
fn output_into_a_fifo_or_through_a_symlink_keeps_it() {
    // `--output /dev/null` used to rename a temp file over it: as root that replaced the
    // system's /dev/null with a regular file. A FIFO stands in for such special files here.
    let fx = fixture("bootstrap.json");
    let p = Project::empty();
    let file = battles_file(&p, "b.jsonl", fx["comparisons"].as_array().unwrap());
    let expected = p.run(&["rank", "--comparisons", &file]).stdout;

    let fifo = p.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(&fifo).expect("read the fifo"))
    };
    let out = p.run(&["rank", "--comparisons", &file, "--output", "pipe"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Checked before waiting for the reader, which a replaced FIFO would leave waiting.
    use std::os::unix::fs::FileTypeExt;
    let kind = std::fs::symlink_metadata(&fifo)
        .expect("still there")
        .file_type();
    assert!(
        kind.is_fifo(),
        "the FIFO is still a FIFO, not a file put in its place"
    );
    assert_eq!(reader.join().expect("reader"), expected);

    p.write("real.txt", "old");
    std::os::unix::fs::symlink("real.txt", p.path().join("link.txt")).expect("symlink");
    let out = p.run(&["rank", "--comparisons", &file, "--output", "link.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let link = std::fs::symlink_metadata(p.path().join("link.txt")).expect("link");
    assert!(link.file_type().is_symlink(), "the link stays a link");
    assert_eq!(p.read("real.txt").into_bytes(), expected);

    // A dangling link: its target is created, the link stays.
    std::os::unix::fs::symlink("later.txt", p.path().join("dangling.txt")).expect("symlink");
    let out = p.run(&["rank", "--comparisons", &file, "--output", "dangling.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let link = std::fs::symlink_metadata(p.path().join("dangling.txt")).expect("link");
    assert!(
        link.file_type().is_symlink(),
        "the dangling link stays a link"
    );
    assert_eq!(p.read("later.txt").into_bytes(), expected);

    // Run-only flags with a comparisons file are refused, not ignored.
    for flag in [&["--judge", "j"][..], &["--from-labels"]] {
        let out = p.run(&[&["rank", "--comparisons", &file][..], flag].concat());
        assert_eq!(out.status.code(), Some(2), "{flag:?}: {}", text(&out));
    }
}

#[test]
fn run_refuses_bad_rank_settings_before_generating_anything() {
    let p = Project::with_suite(1, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    for args in [
        &["run", "--run", "r", "--resamples", "10"][..],
        &["run", "--run", "r", "--prior=0"],
        &["run", "--run", "r", "--model", "a", "--model", "a"],
        &[
            "run", "--run", "r", "--judge", "x", "--judge", "y", "--format", "json",
        ],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(!p.path().join("runs/r").exists(), "{args:?} wrote a run");
    }
    // A judge of a ranked model's family: refused before anything is generated (or paid for).
    let config = files_config(&[("a", "a", "f"), ("b", "b", "g")])
        + "\n[providers.api]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"\"\n"
        + "\n[[judges]]\nid = \"j\"\nprovider = \"api\"\nmodel = \"m\"\nfamily = \"f\"\n";
    let p = Project::with_suite(1, &config);
    let out = p.run(&["run", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("is from the same family as ranked model `a`"),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("runs/r").exists(), "wrote a run");
    // A judge without its API key, two judges into one CSV or JSON document, an unknown
    // model: each refused, and named, before anything is generated.
    let judges = |key_env: &str| {
        files_config(&[("a", "a", "f"), ("b", "b", "g")])
            + "\n[providers.api]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n"
            + &format!("api_key_env = \"{key_env}\"\n")
            + "\n[[judges]]\nid = \"j\"\nprovider = \"api\"\nmodel = \"m\"\nfamily = \"h\"\n"
    };
    let cases: [(String, &[&str], &str); 4] = [
        (
            judges("JUDGE_TEST_NO_SUCH_KEY"),
            &["run", "--run", "r"],
            "JUDGE_TEST_NO_SUCH_KEY",
        ),
        (
            judges(""),
            &[
                "run", "--run", "r", "--judge", "j", "--judge", "exec", "--format", "csv",
            ],
            "--format csv prints one leaderboard",
        ),
        (
            judges(""),
            &[
                "run", "--run", "r", "--judge", "j", "--judge", "exec", "--format", "json",
            ],
            "--format json prints one leaderboard",
        ),
        (
            judges(""),
            &["run", "--run", "r", "--model", "a", "--model", "nosuch"],
            "--model `nosuch` is not in judge.toml",
        ),
    ];
    for (config, args, says) in cases {
        let p = Project::with_suite(1, &config);
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
        assert!(!p.path().join("runs/r").exists(), "{args:?} wrote a run");
    }
}

#[test]
fn absurd_resample_counts_are_a_clear_error() {
    let (p, file) = one_battle();
    for n in ["1000000000000", "18446744073709551615"] {
        let out = p.run(&["rank", "--comparisons", &file, "--resamples", n]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        assert!(text(&out).contains("is above 1000000"), "{}", text(&out));
    }
}

#[test]
fn more_models_than_one_fit_takes_are_refused_before_fitting() {
    // A chain of 2,001 models (the limit is 2,000): refused at once, not minutes of refits
    // (or, at 200,000 models, an allocation of hundreds of GB that aborts).
    let p = Project::empty();
    let rows: Vec<serde_json::Value> = (0..2000)
        .map(|k| {
            serde_json::json!({"model_a": format!("m{k}"), "model_b": format!("m{}", k + 1), "winner": "model_a"})
        })
        .collect();
    let file = battles_file(&p, "chain.jsonl", &rows);
    let out = p.run(&["rank", "--comparisons", &file]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("2001 models: judge ranks at most 2000 at once"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_model_generated_after_compare_is_listed_unranked_with_what_to_do() {
    let p = Project::offline();
    let out = p.run(&[
        "run",
        "--run",
        "r",
        "--model",
        "reference",
        "--model",
        "partial",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["generate", "--run", "r", "--model", "plausible"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["rank", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let table = String::from_utf8_lossy(&out.stdout);
    let last = table
        .lines()
        .find(|l| l.split_whitespace().nth(1) == Some("plausible"))
        .expect("plausible is listed");
    let cells: Vec<&str> = last.split_whitespace().collect();
    assert_eq!(cells[..4], ["-", "plausible", "n/a", "n/a"], "{table}");
    assert!(
        text(&out).contains("`plausible` has outputs but no comparison by judge `exec` (generated after its last compare?): `judge compare --run r --judge exec`"),
        "{}",
        text(&out)
    );
    let board: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/leaderboard.json")).unwrap();
    let models = board["models"].as_array().unwrap();
    let plausible = models.last().unwrap();
    assert_eq!(plausible["model"], "plausible");
    assert!(
        plausible["rank"].is_null()
            && plausible["rating"].is_null()
            && plausible["win_rate_ci_low"].is_null(),
        "{plausible}"
    );
    assert_eq!(plausible["games"], 0);
    assert!(models[..2].iter().all(|m| m["rank"].is_u64()), "{board}");
    assert!(
        p.read("runs/r/leaderboard.csv")
            .lines()
            .last()
            .unwrap()
            .starts_with(",plausible,,,,,,,0,"),
        "{}",
        p.read("runs/r/leaderboard.csv")
    );
    // Compared, it takes its rank.
    let out = p.run(&["compare", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["rank", "--run", "r"]);
    assert!(
        !text(&out).contains("no comparison by judge"),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("\n3     plausible"),
        "{}",
        text(&out)
    );
}

#[test]
fn output_takes_the_format_its_extension_names_unless_one_is_given() {
    let (p, file) = one_battle();
    let rank = |extra: &[&str]| {
        let mut args = vec![
            "rank",
            "--comparisons",
            &file,
            "--allow-few-resamples",
            "--resamples",
            "10",
        ];
        args.extend_from_slice(extra);
        let out = p.run(&args);
        assert_eq!(out.status.code(), Some(0), "{extra:?}: {}", text(&out));
    };
    rank(&["--output", "lb.json"]);
    let board: serde_json::Value = serde_json::from_str(&p.read("lb.json")).expect("JSON");
    assert_eq!(board["schema_version"], 1);
    rank(&["--output", "lb.CSV"]);
    assert!(p.read("lb.CSV").starts_with("rank,model,rating,"));
    rank(&["--output", "lb.md"]);
    assert!(p.read("lb.md").contains("| rank |"), "{}", p.read("lb.md"));
    rank(&["--output", "lb.txt"]);
    assert!(p.read("lb.txt").starts_with("judge: "));
    // A format given wins over the extension.
    rank(&["--output", "table.json", "--format", "table"]);
    assert!(p.read("table.json").starts_with("judge: "));
}

#[test]
fn a_fit_that_fails_at_a_tiny_prior_says_what_to_do() {
    let p = Project::empty();
    let row =
        |a: &str, b: &str, w: &str| serde_json::json!({"model_a": a, "model_b": b, "winner": w});
    let file = battles_file(
        &p,
        "b.jsonl",
        &[
            row("x", "y", "model_a"),
            row("y", "x", "model_a"),
            row("x", "z", "model_a"),
            row("z", "x", "model_a"),
            row("y", "z", "tie"),
        ],
    );
    let out = p.run(&["rank", "--comparisons", &file, "--prior=1e-16"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("use a larger one"), "{}", text(&out));
}

#[test]
fn a_markdown_leaderboard_carries_its_warnings() {
    let (p, file) = one_battle();
    let out = p.run(&["rank", "--comparisons", &file, "--format", "md"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("> **Warning:** model `x`") && md.contains("zero width"),
        "{md}"
    );
}

#[test]
fn hand_edited_comparisons_are_refused_and_rebuilt_by_compare() {
    let p = Project::offline();
    let out = p.run(&["run", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let path = p.path().join("runs/r/comparisons.jsonl");
    let good = std::fs::read_to_string(&path).unwrap();
    let first: serde_json::Value = serde_json::from_str(good.lines().next().unwrap()).unwrap();
    let edit = |f: &Edit| {
        let mut v = first.clone();
        f(&mut v);
        std::fs::write(&path, format!("{good}{v}\n")).unwrap();
    };
    type Edit = dyn Fn(&mut serde_json::Value);
    let cases: [(&Edit, &str); 4] = [
        (&|v| v["winner"] = "model_b".into(), "more than once"),
        (
            &|v| v["model_b"] = "ghost".into(),
            "names model `ghost`, which has no outputs",
        ),
        (&|v| v["model_b"] = v["model_a"].clone(), "with itself"),
        (
            &|v| v["task"] = "no-such-task".into(),
            "task `no-such-task`, which the run's suite",
        ),
    ];
    for (change, says) in cases {
        edit(change);
        let out = p.run(&["rank", "--run", "r"]);
        assert_eq!(out.status.code(), Some(2), "{says}: {}", text(&out));
        assert!(text(&out).contains(says), "{says}: {}", text(&out));
        assert!(
            text(&out).contains("judge compare --run r` to rebuild it"),
            "{}",
            text(&out)
        );
    }
    // An --output over a run's own file, or over the battles file ranked, is refused before
    // anything is written.
    std::fs::write(&path, &good).unwrap();
    for (args, says) in [
        (
            &["rank", "--run", "r", "--output", "runs/r/manifest.json"][..],
            "is inside run `r`'s folder",
        ),
        (
            &["check", "--run", "r", "--output", "runs/r/checks.jsonl"],
            "is inside run `r`'s folder",
        ),
        (
            &[
                "rank",
                "--comparisons",
                "runs/r/comparisons.jsonl",
                "--output",
                "runs/r/../r/comparisons.jsonl",
            ],
            "is inside run `r`'s folder",
        ),
    ] {
        let before: Vec<_> = p
            .all_files()
            .iter()
            .map(|f| (f.clone(), std::fs::read(f).unwrap()))
            .collect();
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(text(&out).contains(says), "{args:?}: {}", text(&out));
        let after: Vec<_> = p
            .all_files()
            .iter()
            .map(|f| (f.clone(), std::fs::read(f).unwrap()))
            .collect();
        assert!(before == after, "{args:?} changed files");
    }
    // A file a run does not hold yet is inside it too; a folder that merely has a
    // manifest.json (a web app's) is no run.
    let o = p.run(&["label", "sample", "--run", "r", "--n", "2"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    for into in [
        "runs/r/labels/eve.jsonl",
        "runs/r/nope/../labels/eve.jsonl",
        "./runs/x/../r/manifest.json",
    ] {
        let o = p.run(&["label", "export", "--run", "r", "--output", into]);
        assert_eq!(o.status.code(), Some(2), "{into}: {}", text(&o));
    }
    assert!(!p.path().join("runs/r/labels/eve.jsonl").exists());
    assert!(!p.path().join("runs/r/nope").exists());
    p.write("site/manifest.json", "{}");
    for _ in 0..2 {
        let o = p.run(&[
            "rank",
            "--run",
            "r",
            "--format",
            "md",
            "--output",
            "site/lb.md",
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    std::fs::copy(&path, p.path().join("battles.jsonl")).unwrap();
    let same = p.run(&[
        "rank",
        "--comparisons",
        "battles.jsonl",
        "--output",
        "./battles.jsonl",
    ]);
    assert_eq!(same.status.code(), Some(2), "{}", text(&same));
    assert!(
        text(&same).contains("is the battles file being ranked"),
        "{}",
        text(&same)
    );
    assert!(p.read("battles.jsonl") == good, "the battles file changed");
    // Outputs lost, comparisons intact: outputs.jsonl is named, not this file.
    std::fs::write(&path, &good).unwrap();
    let outputs = p.read("runs/r/outputs.jsonl");
    p.write("runs/r/outputs.jsonl", "");
    let lost = p.run(&["rank", "--run", "r"]);
    assert_eq!(lost.status.code(), Some(2), "{}", text(&lost));
    assert!(
        text(&lost).contains("outputs.jsonl` holds no outputs of model")
            && !text(&lost).contains("delete it"),
        "{}",
        text(&lost)
    );
    p.write("runs/r/outputs.jsonl", &outputs);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(p.run(&["compare", "--run", "r"]).status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), good);
    let again = p.run(&["rank", "--run", "r"]);
    assert_eq!(again.stdout, out.stdout);
    // A run written by a newer judge is not read as if it were this one's.
    let manifest = p.path().join("runs/r/manifest.json");
    let mut m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    m["schema_version"] = 99.into();
    std::fs::write(&manifest, m.to_string()).unwrap();
    let out = p.run(&["rank", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("has schema_version 99, newer than this judge reads"),
        "{}",
        text(&out)
    );
}

/// A warning that cannot be written (stderr on a full disk) ends judge with the documented
/// I/O exit code, not a Rust panic's 101; an error keeps its own code.
#[test]
fn an_unwritable_stderr_is_exit_1_not_a_panic() {
    let p = Project::empty();
    let row =
        |a: &str, b: &str| serde_json::json!({"model_a": a, "model_b": b, "winner": "model_a"});
    // Two groups never compared with each other: rank warns.
    let file = battles_file(&p, "b.jsonl", &[row("a", "b"), row("c", "d")]);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = p
        .judge()
        // JSON on stdout: the warning goes to stderr (a table would carry it).
        .args(["rank", "--comparisons", &file, "--format", "json"])
        .stderr(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let config_error = p
        .judge()
        .args(["--config", "nowhere.toml", "rank", "--run", "r"])
        .stderr(
            std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap(),
        )
        .output()
        .unwrap();
    assert_eq!(config_error.status.code(), Some(2), "the error's own code");
}

/// Names from a battles file reach no terminal, Markdown page or spreadsheet as live text: the
/// judge's name in the header is escaped like model names, and a CSV name that a spreadsheet
/// would run as a formula gets a leading `'`.
#[test]
fn names_from_a_file_are_escaped_in_every_format() {
    let p = Project::empty();
    let judge = "evil\u{1b}[31mRED\n| injected |";
    let rows: Vec<serde_json::Value> = (0..6)
        .map(|i| {
            serde_json::json!({
                "task": format!("t{i}"), "judge": judge,
                "model_a": "=HYPERLINK(\"http://x\",\"y\")", "model_b": "plain",
                "winner": if i % 2 == 0 { "model_a" } else { "tie" },
                "flipped": false, "by_failure": false,
            })
        })
        .collect();
    let file = battles_file(&p, "c.jsonl", &rows);
    let rank = |format: &str| {
        let out = p.run(&[
            "rank",
            "--comparisons",
            &file,
            "--format",
            format,
            "--resamples",
            "50",
            "--allow-few-resamples",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let table = rank("table");
    assert!(
        table.starts_with("judge: evil\\u{1b}[31mRED\\n| injected | · prompt"),
        "{table}"
    );
    let md = rank("md");
    assert!(
        md.starts_with("judge: evil\\\\u{1b}[31mRED\\\\n\\| injected \\| · prompt"),
        "{md}"
    );
    let csv = rank("csv");
    assert!(
        csv.contains("\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\""),
        "{csv}"
    );
    // Errors quote names from the file escaped, on one line, and cut short.
    let evil = "x\u{1b}[2J\nEVIL";
    let huge = "w".repeat(100_000);
    for (row, says) in [
        (
            serde_json::json!({"model_a": evil, "model_b": evil, "winner": "model_a"}),
            "model `x\\u{1b}[2J\\nEVIL` is compared with itself",
        ),
        (
            serde_json::json!({"model_a": "a", "model_b": "b", "winner": huge}),
            "unknown winner `wwwwwwwwww",
        ),
    ] {
        let file = battles_file(&p, "bad.jsonl", &[row]);
        let out = p.run(&["rank", "--comparisons", &file]);
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stderr.contains('\u{1b}') && stderr.len() < 500, "{stderr}");
    }
}

/// Every resample of two identical battles is the data itself: both models' intervals have
/// zero width and both are warned about (a bound set on its estimate by rounding must not
/// hide that).
#[test]
fn zero_width_intervals_are_warned_for_every_model() {
    let p = Project::empty();
    let row = serde_json::json!({"model_a": "a", "model_b": "b", "winner": "model_a"});
    let file = battles_file(&p, "two.jsonl", &[row.clone(), row]);
    let out = p.run(&["rank", "--comparisons", &file, "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for m in ["a", "b"] {
        let says = format!("model `{m}`: every resample gave the same rating");
        assert!(
            board["warnings"]
                .as_array()
                .unwrap()
                .iter()
                .any(|w| w.as_str().unwrap().starts_with(&says)),
            "{m}: {board}"
        );
    }
    for s in board["models"].as_array().unwrap() {
        let (lo, est, hi) = (
            s["rating_ci_low"].as_f64().unwrap(),
            s["rating"].as_f64().unwrap(),
            s["rating_ci_high"].as_f64().unwrap(),
        );
        assert!(lo <= est && est <= hi, "{s}");
    }
}

/// A Ctrl-C while a run's rank is writing ends it with 130 once its files are whole (writing
/// the leaderboards puts a listener on, so the signal no longer ends the process by itself;
/// it exited 0).
#[test]
fn a_ctrl_c_during_a_runs_rank_ends_it_with_130_after_the_writes() {
    let p = Project::offline();
    let out = p.run(&["run", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let fifo = p.path().join("pipe");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs")
            .success()
    );
    std::fs::remove_file(p.path().join("runs/r/leaderboard.json")).unwrap();
    let child = p
        .judge()
        .args(["rank", "--run", "r", "--output", "pipe"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The run's leaderboards are written before the report, which waits for a reader.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !p.path().join("runs/r/leaderboard.json").exists() {
        assert!(std::time::Instant::now() < deadline, "rank wrote nothing");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(100));
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    std::thread::sleep(std::time::Duration::from_millis(200));
    let report = std::fs::read(&fifo).expect("read the fifo");
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&report).contains("rank  model"),
        "the report is whole"
    );
}

/// A killed judge's temp file beside an `--output` target goes once its process is gone; a
/// live process's stays.
#[test]
fn an_outputs_temp_file_left_by_a_killed_writer_is_removed() {
    let fx = fixture("bootstrap.json");
    let p = Project::empty();
    let file = battles_file(&p, "b.jsonl", fx["comparisons"].as_array().unwrap());
    let dead = ".out.md.tmp.4194999.0";
    let live = format!(".out.md.tmp.{}.0", std::process::id());
    p.write(dead, "half");
    p.write(&live, "half");
    let out = p.run(&["rank", "--comparisons", &file, "--output", "out.md"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!p.path().join(dead).exists());
    assert!(p.path().join(&live).exists());
}

/// The commands an error suggests are written for ./judge.toml: with another config named on
/// the command line, the error says to add it; through JUDGE_CONFIG, they work as printed.
#[test]
fn hints_under_another_config_say_to_add_it() {
    let p = Project::with_suite(2, &files_config(&[("a", "a", "f"), ("b", "b", "g")]));
    for task in ["t01", "t02"] {
        p.write(&format!("suites/demo/answers/a/{task}.md"), "x");
        p.write(&format!("suites/demo/answers/b/{task}.md"), "y");
    }
    std::fs::rename(p.path().join("judge.toml"), p.path().join("other.toml")).unwrap();
    let out = p.run(&["--config", "other.toml", "generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["--config", "other.toml", "rank", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("note: add `--config other.toml` to the judge commands above"),
        "{}",
        text(&out)
    );
    let out = p
        .judge()
        .env("JUDGE_CONFIG", "other.toml")
        .args(["rank", "--run", "r"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!text(&out).contains("note: add"), "{}", text(&out));
    // Failed items end with a `--retry-failed` hint: the note follows it too.
    std::fs::remove_file(p.path().join("suites/demo/answers/b/t02.md")).unwrap();
    let out = p.run(&["--config", "other.toml", "generate", "--run", "r2"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("--retry-failed")
            && text(&out).contains("note: add `--config other.toml` to the judge commands above"),
        "{}",
        text(&out)
    );
}

/// The task bootstrap over few tasks gives intervals too narrow to trust (few clusters): said.
#[test]
fn the_task_bootstrap_over_few_tasks_warns() {
    let p = Project::empty();
    let rows: Vec<serde_json::Value> = (0..40)
        .map(|i| {
            let winner = ["model_a", "model_b", "tie"][i % 3];
            serde_json::json!({"model_a": "x", "model_b": "y", "winner": winner, "question_id": format!("q{}", i % 4)})
        })
        .collect();
    let file = battles_file(&p, "b.jsonl", &rows);
    let run = |unit: &str| {
        p.run(&[
            "rank",
            "--comparisons",
            &file,
            "--bootstrap-unit",
            unit,
            "--allow-few-resamples",
            "--resamples",
            "100",
        ])
    };
    let out = run("task");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("the task bootstrap resamples only 4 tasks: with fewer than 30"),
        "{}",
        text(&out)
    );
    assert!(!text(&run("comparison")).contains("resamples only"));
}

/// A typo fixed in a task's prompt after a run no longer hides the run's leaderboard: rank reads
/// the run as recorded, with a warning; what would add to the run is still refused, and so is
/// a suite whose tasks changed.
#[test]
fn rank_reads_a_run_whose_suite_was_edited_with_the_same_tasks() {
    let p = Project::offline();
    let out = p.run(&["run", "--run", "r", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let board = p.read("runs/r/leaderboard.json");
    let prompt = "suites/python-pitfalls/tasks/atomic-file-write/prompt.md";
    let text_before = p.read(prompt);
    p.write(prompt, &format!("{text_before}\n(A typo fixed.)\n"));
    let out = p.run(&["rank", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains(
            "has changed since run `r` was generated (tasks/atomic-file-write/prompt.md changed"
        ) && text(&out).contains("with the same tasks: read as the run recorded it"),
        "{}",
        text(&out)
    );
    // The same standings, and the saved leaderboard says what it was read from.
    let json = |t: &str| serde_json::from_str::<serde_json::Value>(t).unwrap();
    let after = json(&p.read("runs/r/leaderboard.json"));
    assert!(after["models"].as_array().is_some_and(|m| m.len() == 4));
    assert_eq!(after["models"], json(&board)["models"]);
    assert!(
        after["warnings"]
            .to_string()
            .contains("with the same tasks: read as the run recorded it"),
        "{after}"
    );
    // A check.py removed since: the exec judge's coverage is the run's, as recorded.
    let check = "suites/python-pitfalls/tasks/atomic-file-write/check.py";
    let check_text = p.read(check);
    std::fs::remove_file(p.path().join(check)).unwrap();
    let out = p.run(&["rank", "--run", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !text(&out).contains("ranks only tasks with a check.py"),
        "{}",
        text(&out)
    );
    p.write(check, &check_text);
    let manifest = p.read("runs/r/manifest.json");
    let out = p.run(&["generate", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert_eq!(
        p.read("runs/r/manifest.json"),
        manifest,
        "the run keeps its suite"
    );
    // Another task set: refused.
    p.write(prompt, &text_before);
    p.write(
        "suites/python-pitfalls/tasks/a-new-task/prompt.md",
        "Write f().",
    );
    let out = p.run(&["rank", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
}

/// Regression: a table leaderboard saved or piped lost its warnings (they went to stderr
/// only), so a saved board looked clean; the README says the table carries them.
#[test]
fn a_table_leaderboard_carries_its_warnings() {
    let p = Project::empty();
    let row =
        |a: &str, b: &str| serde_json::json!({"model_a": a, "model_b": b, "winner": "model_a"});
    let file = battles_file(&p, "b.jsonl", &[row("a", "b"), row("c", "d")]);
    let rank = |extra: &[&str]| {
        let mut args = vec![
            "rank",
            "--comparisons",
            &file,
            "--allow-few-resamples",
            "--resamples",
            "50",
        ];
        args.extend_from_slice(extra);
        p.run(&args)
    };
    let warning = "warning: the comparison graph falls into 2 disconnected groups";
    let out = rank(&[]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(warning),
        "{}",
        text(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains(warning),
        "said once: {}",
        text(&out)
    );
    let out = rank(&["--output", "lb.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(p.read("lb.txt").contains(warning));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(warning),
        "{}",
        text(&out)
    );
    let out = rank(&["--format", "csv"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains("warning"));
    assert!(String::from_utf8_lossy(&out.stderr).contains(warning));
}

/// Names that differ only by surrounding spaces are two models, which a warning says.
#[test]
fn names_differing_by_spaces_are_warned_of() {
    let p = Project::empty();
    let rows: String = ["y", "y ", "y", "x"]
        .iter()
        .map(|b| format!("{{\"model_a\":\"x\",\"model_b\":\"{b}\",\"winner\":\"model_a\"}}\n"))
        .collect::<String>()
        .replace(
            "\"model_a\":\"x\",\"model_b\":\"x\"",
            "\"model_a\":\"z\",\"model_b\":\"x\"",
        );
    p.write("spaced.jsonl", &rows);
    let out = p.run(&["rank", "--comparisons", "spaced.jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(
            "warning: model names that differ only by surrounding spaces are ranked as different models: `y` and `y `;"
        ),
        "{}",
        text(&out)
    );
    p.write("plain.jsonl", &rows.replace("y \"", "y\""));
    let out = p.run(&["rank", "--comparisons", "plain.jsonl"]);
    assert!(!text(&out).contains("surrounding spaces"), "{}", text(&out));
}
