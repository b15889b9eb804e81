//! `judge label` end to end: sampling, a scripted session through stdin, resume after a kill,
//! blindness of the screen and the sheet, import validation, score and the human leaderboard.

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use crate::common::{FakeServer, Project, Received, Reply, text};

const MODELS: [&str; 3] = ["zeta7", "omega3", "kappa9"];

/// Prefers the answer containing BEST, else the one containing GOOD.
fn judge(req: &Received, _n: usize) -> Reply {
    let user = req.user_text();
    let a1 = user
        .split("<<<ANSWER_1 ")
        .nth(1)
        .unwrap_or("")
        .split("<<<END_ANSWER_1")
        .next()
        .unwrap_or("");
    let a2 = user
        .split("<<<ANSWER_2 ")
        .nth(1)
        .unwrap_or("")
        .split("<<<END_ANSWER_2")
        .next()
        .unwrap_or("");
    let score = |a: &str| {
        if a.contains("BEST") {
            2
        } else if a.contains("GOOD") {
            1
        } else {
            0
        }
    };
    let v = match score(a1).cmp(&score(a2)) {
        std::cmp::Ordering::Greater => "1",
        std::cmp::Ordering::Less => "2",
        std::cmp::Ordering::Equal => "TIE",
    };
    Reply::ok(&format!("Compared.\nVERDICT: {v}"))
}

/// Three models on eight tasks, generated and compared.
fn labelled_project(server: &FakeServer) -> Project {
    let mut config = format!(
        "[run]\nsuite = \"demo\"\nseed = 9\n\n[providers.answers]\nkind = \"files\"\n\n[providers.j]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"\"\n\n[[judges]]\nid = \"judge-x\"\nprovider = \"j\"\nmodel = \"jm\"\nfamily = \"judge-labs\"\n",
        server.url
    );
    for m in MODELS {
        config.push_str(&format!("\n[[models]]\nid = \"{m}\"\nprovider = \"answers\"\nmodel = \"{m}\"\nfamily = \"fam-{m}\"\n"));
    }
    let p = Project::with_suite(8, &config);
    for i in 1..=8 {
        p.write(
            &format!("suites/demo/answers/zeta7/t{i:02}.md"),
            &format!("BEST answer {i}"),
        );
        p.write(
            &format!("suites/demo/answers/omega3/t{i:02}.md"),
            &format!("GOOD answer {i}"),
        );
        let kappa = if i % 2 == 0 { "GOOD" } else { "weak" };
        p.write(
            &format!("suites/demo/answers/kappa9/t{i:02}.md"),
            &format!("{kappa} answer {i}"),
        );
    }
    for args in [
        &["generate", "--run", "r"][..],
        &["compare", "--run", "r"][..],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
    p
}

fn session(
    p: &Project,
    labeller: &str,
    keys: impl AsRef<[u8]>,
    extra: &[&str],
) -> std::process::Output {
    let mut child = p
        .judge()
        .args(["label", "--run", "r", "--labeller", labeller])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A session refused at once (a bad labeller id) closes its stdin before reading the keys.
    let _ = child.stdin.take().unwrap().write_all(keys.as_ref());
    child.wait_with_output().unwrap()
}

/// A session of `labeller` on run `r` reading keys from a pipe left open, given `keys`
/// first; stderr is piped, stdout too when `stdout` says so.
fn open_session(
    p: &Project,
    labeller: &str,
    keys: &[u8],
    stdout: bool,
) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = p
        .judge()
        .args(["label", "--run", "r", "--labeller", labeller])
        .stdin(Stdio::piped())
        .stdout(if stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(keys).unwrap();
    stdin.flush().unwrap();
    (child, stdin)
}

/// Draws a labelling sample of `n` items from run `r`.
fn sample(p: &Project, n: usize) {
    let out = p.run(&["label", "sample", "--run", "r", "--n", &n.to_string()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// The keys that label every item of `sample` the way the judge would (the better answer).
fn judge_keys(sample: &[serde_json::Value]) -> String {
    let mut keys = String::new();
    for s in sample {
        let first_is_a = s["first"] == "model_a";
        let (a, b) = (
            s["model_a"].as_str().unwrap(),
            s["model_b"].as_str().unwrap(),
        );
        let task: usize = s["task"].as_str().unwrap()[1..].parse().unwrap();
        let quality = |m: &str| match m {
            "zeta7" => 2,
            "omega3" => 1,
            _ => usize::from(task.is_multiple_of(2)),
        };
        keys.push_str(match quality(a).cmp(&quality(b)) {
            std::cmp::Ordering::Equal => "t\n",
            std::cmp::Ordering::Greater if first_is_a => "1\n",
            std::cmp::Ordering::Less if !first_is_a => "1\n",
            _ => "2\n",
        });
    }
    keys
}

#[test]
fn sample_label_score_and_rank_end_to_end() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    let out = p.run(&["label", "sample", "--run", "r", "--n", "20"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sample = p.jsonl("runs/r/labels/sample.jsonl");
    assert_eq!(sample.len(), 20);
    // Every task (8) before any repeats; every pair (3) in the first three.
    let tasks: std::collections::BTreeSet<&str> = sample[..8]
        .iter()
        .map(|s| s["task"].as_str().unwrap())
        .collect();
    assert_eq!(tasks.len(), 8);
    // The same command again (as after a kill right after the sample was written) finds its
    // sample drawn; another sample is not drawn over it silently.
    let again = p.run(&["label", "sample", "--run", "r", "--n", "20"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again));
    assert!(
        text(&again).contains("already holds this sample"),
        "{}",
        text(&again)
    );
    assert_eq!(p.jsonl("runs/r/labels/sample.jsonl"), sample);
    let again = p.run(&["label", "sample", "--run", "r", "--n", "21"]);
    assert_eq!(
        again.status.code(),
        Some(2),
        "an existing sample is not replaced silently"
    );

    // A scripted session: label every item the way the judge would (the better answer).
    let out = session(&p, "alice", judge_keys(&sample), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("Item 1 of 20") && screen.contains("Item 20 of 20"),
        "{screen}"
    );
    assert!(screen.contains("20 of 20 labelled by `alice`"), "{screen}");
    for secret in MODELS
        .iter()
        .copied()
        .chain(["model_a", "model_b", "winner", "VERDICT", "judge-x"])
    {
        assert!(!screen.contains(secret), "the screen shows `{secret}`");
    }
    assert_eq!(p.jsonl("runs/r/labels/alice.jsonl").len(), 20);

    let out = p.run(&["label", "score", "--run", "r", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let score: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let alice = &score["labellers"][0];
    assert_eq!(alice["labeller"], "alice");
    assert_eq!(alice["vs_judge"]["items"], 20);
    assert_eq!(
        alice["vs_judge"]["agreement"], 1.0,
        "alice chose exactly what the judge chose"
    );
    assert_eq!(alice["vs_judge"]["kappa"], 1.0);
    // The confusion matrices say what their rows and columns are; agreeing on every item,
    // all counts sit on the diagonal.
    assert_eq!(
        score["confusion_categories"],
        serde_json::json!(["model_a", "model_b", "tie", "both_bad"])
    );
    let confusion = &alice["vs_judge"]["confusion"];
    let off_diagonal: u64 = (0..4)
        .flat_map(|i| (0..4).filter(move |&j| j != i).map(move |j| (i, j)))
        .map(|(i, j)| confusion[i][j].as_u64().unwrap())
        .sum();
    assert_eq!(off_diagonal, 0, "{confusion}");
    assert!(p.path().join("runs/r/labels/agreement.json").is_file());
    let table = p.run(&["label", "score", "--run", "r"]);
    assert!(String::from_utf8_lossy(&table.stdout).contains("Kappa corrects it"));
    assert_eq!(score["seed"], 9, "the run's seed by default: {score}");
    let few = p.run(&["label", "score", "--run", "r", "--resamples", "5"]);
    assert_eq!(few.status.code(), Some(2), "{}", text(&few));
    // No resample at all is a usage error (exit 2) here as in `rank`, also when few are allowed.
    for command in ["label score", "rank"] {
        let mut args: Vec<&str> = command.split(' ').collect();
        args.extend(["--run", "r", "--resamples", "0", "--allow-few-resamples"]);
        let none = p.run(&args);
        assert_eq!(none.status.code(), Some(2), "{args:?}: {}", text(&none));
        assert!(text(&none).contains("--resamples 0"), "{}", text(&none));
    }
    let few = p.run(&[
        "label",
        "score",
        "--run",
        "r",
        "--resamples",
        "5",
        "--allow-few-resamples",
    ]);
    assert_eq!(few.status.code(), Some(0), "{}", text(&few));

    let out = p.run(&["rank", "--run", "r", "--from-labels"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let board = String::from_utf8_lossy(&out.stdout);
    assert!(board.starts_with("judge: human-labels"), "{board}");
    assert!(p.path().join("runs/r/labels/leaderboard.json").is_file());
    assert!(
        !text(&out).contains("more than one person"),
        "{}",
        text(&out)
    );
    // bob labels the same items: their rows are not independent of alice's.
    let alice_labels = p.read("runs/r/labels/alice.jsonl");
    p.write(
        "runs/r/labels/bob.jsonl",
        &alice_labels.replace("\"alice\"", "\"bob\""),
    );
    let out = p.run(&["rank", "--run", "r", "--from-labels"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("warning: 20 item(s) carry labels from more than one person"),
        "{}",
        text(&out)
    );
    let out = p.run(&[
        "rank",
        "--run",
        "r",
        "--from-labels",
        "--bootstrap-unit",
        "task",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !text(&out).contains("more than one person"),
        "{}",
        text(&out)
    );
    // The CSV holds each person against the judge, everyone, and the two people.
    let out = p.run(&["label", "score", "--run", "r", "--format", "csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let csv = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "labeller,versus,labelled,items,agreement,agreement_excluding_ties,kappa,kappa_ci_low,kappa_ci_high,items_excluding_ties,judge"
    );
    assert!(lines[1].starts_with("alice,judge,20,20,1.0"), "{csv}");
    // Which judge the rows were scored against, on every row (saved side by side, one
    // judge's file is told from another's).
    assert!(lines[1..].iter().all(|l| l.ends_with(",judge-x")), "{csv}");
    // How many items the agreement excluding ties rests on, in the CSV and the table.
    let excl: usize = lines[1].rsplit(',').nth(1).unwrap().parse().unwrap();
    assert!(excl > 0 && excl <= 20, "{csv}");
    let out = p.run(&["label", "score", "--run", "r"]);
    assert!(
        text(&out).contains("excl. ties (items)")
            && text(&out).contains(&format!("1.000 ({excl})")),
        "{}",
        text(&out)
    );
    assert!(lines[3].starts_with("all,judge,40,40,1.0"), "{csv}");
    assert!(lines[4].starts_with("alice,bob,,20,1.0"), "{csv}");
}

#[test]
fn undo_skip_reveal_and_resume_after_kill() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    sample(&p, 6);

    // 1, then skip, undo the skip, tie, quit.
    let out = session(&p, "bob", "1\ns\nu\nt\nq\n", &["--reveal"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("(saved i0001) Answer 1 was `"),
        "--reveal names the models after saving: {screen}"
    );
    assert!(screen.contains("2 of 6 labelled by `bob`"), "{screen}");
    // A skip is counted apart: neither labelled nor left.
    let out = session(&p, "carol", "1\ns\nq\n", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("1 of 6 labelled by `carol`, 1 skipped, 4 left"),
        "{screen}"
    );
    // The items left come first, then the one skipped earlier (it was never offered again);
    // skipping it again in this session does not offer it once more.
    let out = session(&p, "carol", "1\n1\n1\n1\ns\n", &[]);
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("Item 2 of 6"), "the skipped item: {screen}");
    assert!(
        screen.contains("5 of 6 labelled by `carol`, 1 skipped, 0 left"),
        "{screen}"
    );
    let out = session(&p, "carol", "2\n", &[]);
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(
        screen.contains("6 of 6 labelled by `carol`, 0 left"),
        "{screen}"
    );

    // Kill a session mid-way: labels written before the kill survive.
    let (mut child, _stdin) = open_session(&p, "bob", b"2\n", false);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let count = |p: &Project| p.read("runs/r/labels/bob.jsonl").lines().count();
    while count(&p) < 5 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(count(&p), 5, "1, skip, undo, tie, then 2: five records");

    // The restart resumes at the first unlabelled item (item 4).
    let out = session(&p, "bob", "q\n", &[]);
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("Item 4 of 6"), "{screen}");
    assert!(!screen.contains("Item 1 of 6"));
    // The labeller is given the standard the judge was given.
    assert!(
        screen.contains(
            "WHAT \"BETTER\" MEANS (as the judge was told)\n\nThe answers were written to this brief, which every model was given:\n\nAnswer in Python.\n\nWhat makes one answer better than another:\n\nCorrect code wins.\n\nTASK"
        ),
        "{screen}"
    );
}

#[test]
fn export_is_blind_and_import_validates_every_row() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    sample(&p, 5);
    let out = p.run(&[
        "label",
        "export",
        "--run",
        "r",
        "--format",
        "csv",
        "--output",
        "sheet.csv",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sheet = p.read("sheet.csv");
    assert!(
        sheet.starts_with("item,task,standard,prompt,answer_1,answer_2,choice,sample\n"),
        "{sheet}"
    );
    for secret in MODELS
        .iter()
        .copied()
        .chain(["model_a", "model_b", "winner", "judge-x"])
    {
        assert!(!sheet.contains(secret), "the sheet shows `{secret}`");
    }
    // The standard is shown as the judge was given it: the suite's context and criteria.
    let mut reader = csv::Reader::from_reader(sheet.as_bytes());
    let header = reader.headers().unwrap().clone();
    let rows: Vec<Vec<String>> = reader
        .records()
        .map(|r| r.unwrap().iter().map(String::from).collect())
        .collect();
    assert_eq!(
        rows[0][2],
        "The answers were written to this brief, which every model was given:\n\nAnswer in Python.\n\nWhat makes one answer better than another:\n\nCorrect code wins."
    );
    let sheet_of = |rows: &[Vec<String>]| {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&header).unwrap();
        for r in rows {
            w.write_record(r).unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    };
    // A bad choice and an unknown item: nothing is imported.
    let mut filled = rows.clone();
    for r in &mut filled {
        r[6] = "1".into();
    }
    let mut bad = filled.clone();
    bad[0][6] = "maybe".into();
    bad.push(
        ["i9999", "t01", "s", "x", "y", "z", "1", "s"]
            .map(String::from)
            .to_vec(),
    );
    p.write("bad.csv", &sheet_of(&bad));
    let out = p.run(&[
        "label",
        "import",
        "bad.csv",
        "--run",
        "r",
        "--labeller",
        "carol",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("bad.csv:2: choice `maybe`") && stderr.contains("unknown item `i9999`"),
        "{stderr}"
    );
    assert!(
        !p.path().join("runs/r/labels/carol.jsonl").exists(),
        "nothing half-imported"
    );
    p.write("good.csv", &sheet_of(&filled));
    let out = p.run(&[
        "label",
        "import",
        "good.csv",
        "--run",
        "r",
        "--labeller",
        "carol",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/labels/carol.jsonl").len(), 5);
    assert!(!text(&out).contains("replace"), "{}", text(&out));
    // Imported again: the later answers replace the earlier ones, and the message says so.
    let out = p.run(&[
        "label",
        "import",
        "good.csv",
        "--run",
        "r",
        "--labeller",
        "carol",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("imported 5 label(s) for `carol`")
            && text(&out)
                .contains("(5 of them replace this labeller's earlier answers to those items)"),
        "{}",
        text(&out)
    );
    // Cleared choices take no label back, and the message says they stay.
    let mut cleared = filled.clone();
    cleared[0][6] = String::new();
    cleared[1][6] = String::new();
    p.write("cleared.csv", &sheet_of(&cleared));
    let out = p.run(&[
        "label",
        "import",
        "cleared.csv",
        "--run",
        "r",
        "--labeller",
        "carol",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("2 row(s) with an empty choice left this labeller's earlier labels"),
        "{}",
        text(&out)
    );
}

/// The folders `labels/replaced-*` of run `r`.
fn archives(p: &Project) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(p.path().join("runs/r/labels"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("replaced-"))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Regression: `label sample --force` reused the item ids `i0001`… for other comparisons, so the
/// old labels silently attached to the new items (agreement 0.917 became 0.083, and
/// `rank --from-labels` put the wrong model first).
#[test]
fn force_resample_archives_labels_instead_of_attaching_them_to_new_items() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    let out = p.run(&["label", "sample", "--run", "r", "--n", "12"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let old_sample = p.jsonl("runs/r/labels/sample.jsonl");
    let out = session(&p, "bob", judge_keys(&old_sample), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let old_labels = p.read("runs/r/labels/bob.jsonl");
    assert_eq!(old_labels.lines().count(), 12);
    let out = p.run(&["label", "score", "--run", "r", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let out = p.run(&["label", "sample", "--run", "r", "--n", "12", "--seed", "5"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--force archives the existing labels to"),
        "the refusal says what --force does: {stderr}"
    );

    let out = p.run(&[
        "label", "sample", "--run", "r", "--n", "12", "--seed", "5", "--force",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let new_sample = p.jsonl("runs/r/labels/sample.jsonl");
    assert_ne!(new_sample, old_sample, "seed 5 draws another sample");
    let archived = archives(&p);
    assert_eq!(archived.len(), 1, "{archived:?}");
    let name = archived[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&name) && stderr.contains("bob.jsonl"),
        "stderr says what moved where: {stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(archived[0].join("bob.jsonl")).unwrap(),
        old_labels,
        "the archive holds the old labels"
    );
    let archived_sample: Vec<serde_json::Value> =
        std::fs::read_to_string(archived[0].join("sample.jsonl"))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
    assert_eq!(
        archived_sample, old_sample,
        "…next to the sample they label"
    );
    assert!(archived[0].join("agreement.json").is_file());
    assert!(!p.path().join("runs/r/labels/bob.jsonl").exists());
    assert!(!p.path().join("runs/r/labels/agreement.json").exists());

    // The old labels no longer count: nothing is labelled in the new sample.
    let out = p.run(&["label", "score", "--run", "r"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no labels yet"),
        "{}",
        text(&out)
    );
    let out = p.run(&["rank", "--run", "r", "--from-labels"]);
    assert_ne!(out.status.code(), Some(0), "{}", text(&out));
    let out = session(&p, "bob", "q\n", &[]);
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains("Item 1 of 12"), "{screen}");
    assert!(
        screen.contains("0 of 12 labelled by `bob`, 12 left; nothing saved"),
        "a session quit at once writes no file, and names none: {screen}"
    );
    assert!(!p.path().join("runs/r/labels/bob.jsonl").exists());
}

/// Labels carry the identity of the comparison they were given to; put back next to another
/// sample by hand, they are refused with their file and line, not attached to other items.
#[test]
fn labels_of_a_replaced_sample_are_refused_with_file_and_line() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    let out = p.run(&["label", "sample", "--run", "r", "--n", "12"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let old_sample = p.jsonl("runs/r/labels/sample.jsonl");
    let out = session(&p, "bob", judge_keys(&old_sample), &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let old_labels = p.read("runs/r/labels/bob.jsonl");

    // Files written before labels carried the identity still score as before.
    let legacy: String = p
        .jsonl("runs/r/labels/bob.jsonl")
        .into_iter()
        .map(|mut r| {
            assert!(r["item_key"].is_string(), "{r}");
            r.as_object_mut().unwrap().remove("item_key");
            format!("{r}\n")
        })
        .collect();
    p.write("runs/r/labels/bob.jsonl", &legacy);
    let out = p.run(&["label", "score", "--run", "r", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let score: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(score["labellers"][0]["vs_judge"]["items"], 12);
    assert_eq!(score["labellers"][0]["vs_judge"]["agreement"], 1.0);

    let out = p.run(&[
        "label", "sample", "--run", "r", "--n", "12", "--seed", "5", "--force",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let new_sample = p.jsonl("runs/r/labels/sample.jsonl");
    // Put back by hand, with a blank line on top; bob labelled in sample order, one record
    // per item.
    p.write("runs/r/labels/bob.jsonl", &format!("\n{old_labels}"));
    let shown = |s: &serde_json::Value| {
        let (a, b) = (s["model_a"].clone(), s["model_b"].clone());
        let order = if s["first"] == "model_a" {
            (a, b)
        } else {
            (b, a)
        };
        (s["task"].clone(), order)
    };
    let first_stale = (0..12)
        .find(|&i| shown(&old_sample[i]) != shown(&new_sample[i]))
        .expect("seed 5 changes some item");
    let at = format!("labels/bob.jsonl:{}: ", first_stale + 2);
    for args in [
        &["label", "score", "--run", "r"][..],
        &["rank", "--run", "r", "--from-labels"][..],
        &["label", "--run", "r", "--labeller", "bob"][..],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&at) && stderr.contains("another comparison"),
            "{args:?}: {stderr}"
        );
    }
}

/// A sheet whose `standard` is not the run's (exported from another run of the same tasks
/// and answers under other criteria) is refused row by row; one a spreadsheet saved with
/// CRLF imports.
#[test]
fn import_refuses_a_sheet_under_another_standard() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    let out = p.run(&["label", "sample", "--run", "r", "--n", "12"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["label", "export", "--run", "r", "--output", "sheet.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // The sheet filled in, its `standard` cells as exported (line endings as a spreadsheet
    // saves them) or as another run's criteria would show them.
    let filled = |standard: &dyn Fn(&str) -> String| {
        let sheet = p.read("sheet.csv");
        let mut reader = csv::Reader::from_reader(sheet.as_bytes());
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(reader.headers().unwrap()).unwrap();
        for row in reader.records() {
            let mut row: Vec<String> = row.unwrap().iter().map(String::from).collect();
            row[2] = standard(&row[2]);
            row[6] = "1".into();
            writer.write_record(&row).unwrap();
        }
        String::from_utf8(writer.into_inner().unwrap()).unwrap()
    };
    let import = |name: &str| p.run(&["label", "import", name, "--run", "r", "--labeller", "dan"]);
    p.write(
        "other.csv",
        &filled(&|s| s.replace("better", "more concise")),
    );
    let out = import("other.csv");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("other.csv:2: the row's `standard` for `i")
            && text(&out).contains("export a sheet from this run"),
        "{}",
        text(&out)
    );
    assert!(!p.path().join("runs/r/labels/dan.jsonl").exists());
    p.write("same.csv", &filled(&|s| s.replace('\n', "\r\n")));
    let out = import("same.csv");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

/// A sheet exported before the sample was replaced is refused row by row on import.
#[test]
fn import_refuses_a_sheet_of_a_replaced_sample() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    let out = p.run(&["label", "sample", "--run", "r", "--n", "12"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["label", "export", "--run", "r", "--output", "sheet.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let old_sheet = p.read("sheet.csv");
    let out = p.run(&[
        "label", "sample", "--run", "r", "--n", "12", "--seed", "5", "--force",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut reader = csv::Reader::from_reader(old_sheet.as_bytes());
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(reader.headers().unwrap()).unwrap();
    for row in reader.records() {
        let mut row: Vec<String> = row.unwrap().iter().map(String::from).collect();
        row[6] = "1".into();
        writer.write_record(&row).unwrap();
    }
    p.write(
        "old.csv",
        &String::from_utf8(writer.into_inner().unwrap()).unwrap(),
    );
    let out = p.run(&[
        "label",
        "import",
        "old.csv",
        "--run",
        "r",
        "--labeller",
        "dan",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("old.csv:2: the row is of sample `")
            && stderr.contains("export a new sheet"),
        "{stderr}"
    );
    assert!(!p.path().join("runs/r/labels/dan.jsonl").exists());
    // Without its `sample` column, the old sheet is still told apart by its answers.
    let without = |sheet: &str, keep: &[&str]| {
        let mut reader = csv::Reader::from_reader(sheet.as_bytes());
        let headers = reader.headers().unwrap().clone();
        let cols: Vec<usize> = keep
            .iter()
            .map(|k| headers.iter().position(|h| h == *k).unwrap())
            .collect();
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.write_record(keep).unwrap();
        for row in reader.records() {
            let row = row.unwrap();
            writer
                .write_record(cols.iter().map(|&c| {
                    if keep[cols.iter().position(|&x| x == c).unwrap()] == "choice" {
                        "1"
                    } else {
                        &row[c]
                    }
                }))
                .unwrap();
        }
        String::from_utf8(writer.into_inner().unwrap()).unwrap()
    };
    let import = |name: &str| p.run(&["label", "import", name, "--run", "r", "--labeller", "dan"]);
    p.write(
        "old-answers.csv",
        &without(
            &old_sheet,
            &["item", "task", "answer_1", "answer_2", "choice"],
        ),
    );
    let out = import("old-answers.csv");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("old-answers.csv:2: the sheet has task `"),
        "{}",
        text(&out)
    );
    // With only `item` and `choice`, nothing tells which sample it was: refused whole (it
    // was imported onto the new sample's other comparisons).
    p.write("old-min.csv", &without(&old_sheet, &["item", "choice"]));
    let out = import("old-min.csv");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(text(&out).contains("keep that column"), "{}", text(&out));
    assert!(!p.path().join("runs/r/labels/dan.jsonl").exists());

    // The current sheet imports.
    let out = p.run(&["label", "export", "--run", "r", "--output", "new.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&[
        "label",
        "import",
        "new.csv",
        "--run",
        "r",
        "--labeller",
        "dan",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
}

#[test]
fn a_line_of_several_keys_records_nothing_and_an_empty_sample_is_refused() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    let out = p.run(&["label", "sample", "--run", "r", "--n", "0"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    sample(&p, 4);
    let out = session(&p, "bob", "12\n1x\nq\n", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains("one key per line"), "{}", text(&out));
    let labels =
        std::fs::read_to_string(p.path().join("runs/r/labels/bob.jsonl")).unwrap_or_default();
    assert!(labels.trim().is_empty(), "{labels}");
    // A line that is not UTF-8 is no key: said, and the session goes on (it ended in silence).
    let out = session(&p, "bob", b"\xff\n1\nq\n", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("not a key: the line is not valid UTF-8"),
        "{}",
        text(&out)
    );
    assert_eq!(p.jsonl("runs/r/labels/bob.jsonl").len(), 1);
    // Reserved ids are reserved in any case.
    for reserved in ["ALL", ".x.tmp.1"] {
        let out = session(&p, reserved, "q\n", &[]);
        assert_eq!(out.status.code(), Some(2), "{reserved}: {}", text(&out));
    }
}

/// Several people label one run at once; scoring and exporting go on meanwhile; the same
/// person twice, or a new sample, waits.
#[test]
fn people_label_at_once_and_scores_run_alongside() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    sample(&p, 6);
    // alice labels one item and stays in her session (stdin left open).
    let (alice, mut alice_keys) = open_session(&p, "alice", b"1\n", true);
    let labelled = std::time::Instant::now();
    let alice_file = p.path().join("runs/r/labels/alice.jsonl");
    while std::fs::read_to_string(&alice_file)
        .unwrap_or_default()
        .lines()
        .count()
        < 1
    {
        assert!(
            labelled.elapsed().as_secs() < 20,
            "alice's label never arrived"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // bob labels alongside, scores and the blind sheet work meanwhile.
    let bob = session(&p, "bob", "2\nq\n", &[]);
    assert_eq!(bob.status.code(), Some(0), "{}", text(&bob));
    let score = p.run(&["label", "score", "--run", "r", "--format", "json"]);
    assert_eq!(score.status.code(), Some(0), "{}", text(&score));
    let export = p.run(&["label", "export", "--run", "r"]);
    assert_eq!(export.status.code(), Some(0), "{}", text(&export));
    let human = p.run(&["rank", "--run", "r", "--from-labels"]);
    assert_eq!(human.status.code(), Some(0), "{}", text(&human));
    // alice twice, a new sample, or compare: refused while she labels.
    let twice = session(&p, "alice", "q\n", &[]);
    assert_eq!(twice.status.code(), Some(2), "{}", text(&twice));
    assert!(
        text(&twice).contains("labeller `alice` of run `r` is in use"),
        "{}",
        text(&twice)
    );
    for args in [
        &["label", "sample", "--run", "r", "--n", "6", "--force"][..],
        &["compare", "--run", "r"],
        &["rank", "--run", "r"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        assert!(
            text(&out).contains("in use by another judge process"),
            "{args:?}: {}",
            text(&out)
        );
    }
    alice_keys.write_all(b"q\n").unwrap();
    drop(alice_keys);
    let alice = alice.wait_with_output().unwrap();
    assert_eq!(alice.status.code(), Some(0), "{}", text(&alice));
    assert_eq!(p.jsonl("runs/r/labels/alice.jsonl").len(), 1);
    assert_eq!(p.jsonl("runs/r/labels/bob.jsonl").len(), 1);
}

/// A sheet as spreadsheets in many locales save it (semicolons, CRLF, a byte order mark)
/// imports, and an error names the line its row starts on in the file, though cells hold
/// whole multi-line answers.
#[test]
fn a_semicolon_sheet_imports_and_errors_name_the_rows_line() {
    let p = Project::offline();
    // Answers that open with a Markdown list: exported as `'- …` (no spreadsheet formula),
    // they must still match the sample when the sheet comes back.
    // One set's answers open with `'-` themselves: exported as they are (no formula), and
    // the import once took their `'` for the export's guard and refused every sheet.
    for set in std::fs::read_dir(p.path().join("suites/python-pitfalls/answers")).unwrap() {
        let set = set.unwrap().path();
        let opening = if set.ends_with("verbose") {
            "'-0.5' rounds first"
        } else {
            "- note first"
        };
        for answer in std::fs::read_dir(&set).unwrap() {
            let path = answer.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            std::fs::write(&path, format!("{opening}\n\n{text}")).unwrap();
        }
    }
    for args in [
        &["run", "--run", "r"][..],
        &["label", "sample", "--run", "r", "--n", "6"],
        &["label", "export", "--run", "r", "--output", "sheet.csv"],
    ] {
        let out = p.run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out));
    }
    let mut rows: Vec<csv::StringRecord> = csv::Reader::from_path(p.path().join("sheet.csv"))
        .unwrap()
        .records()
        .map(Result::unwrap)
        .collect();
    let header = csv::StringRecord::from(vec![
        "item", "task", "standard", "prompt", "answer_1", "answer_2", "choice", "sample",
    ]);
    let write = |name: &str, delimiter: u8, rows: &[csv::StringRecord]| {
        let mut w = csv::WriterBuilder::new()
            .delimiter(delimiter)
            .terminator(csv::Terminator::CRLF)
            .from_writer(b"\xEF\xBB\xBF".to_vec());
        w.write_record(&header).unwrap();
        for r in rows {
            w.write_record(r).unwrap();
        }
        std::fs::write(p.path().join(name), w.into_inner().unwrap()).unwrap();
    };
    for r in &mut rows {
        let mut cells: Vec<String> = r.iter().map(String::from).collect();
        cells[6] = "1".into();
        *r = csv::StringRecord::from(cells);
    }
    let mut bad = rows.clone();
    let mut cells: Vec<String> = bad[3].iter().map(String::from).collect();
    cells[6] = "maybe".into();
    bad[3] = csv::StringRecord::from(cells);
    write("bad.csv", b',', &bad);
    // The line the 4th row starts on, counted in the file's bytes: the line after the one
    // holding the CRLF that ends the 3rd row, found by the 4th row's item id at a line start.
    let written = std::fs::read(p.path().join("bad.csv")).unwrap();
    let start = format!("\r\n{},", &bad[3][0]);
    let at = written
        .windows(start.len())
        .position(|w| w == start.as_bytes())
        .expect("the 4th row at a line start");
    let line = 2 + written[..at].iter().filter(|&&b| b == b'\n').count();
    assert!(
        line > 5,
        "cells span lines: the 4th row starts on line {line}"
    );
    let import = |file: &str| p.run(&["label", "import", file, "--run", "r", "--labeller", "eva"]);
    let out = import("bad.csv");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(&format!("bad.csv:{line}: choice `maybe`")),
        "expected line {line}: {}",
        text(&out)
    );
    // Rows of bare delimiters after the data (cells a spreadsheet saw touched) are no rows.
    let mut padded = rows.clone();
    padded.push(csv::StringRecord::from(vec![""; 8]));
    padded.push(csv::StringRecord::from(vec![" "; 8]));
    write("semicolons.csv", b';', &padded);
    // A killed import's temp file of this labeller goes; another labeller's stays.
    p.write("runs/r/labels/.eva.jsonl.tmp.999999.0", "{\"half\":");
    p.write("runs/r/labels/.ivo.jsonl.tmp.999999.0", "{\"half\":");
    p.write(
        "runs/r/labels/.eva.jsonl.tmp.x.jsonl.tmp.999999.0",
        "{\"half\":",
    );
    let out = import("semicolons.csv");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/labels/eva.jsonl").len(), 6);
    assert!(
        !p.path()
            .join("runs/r/labels/.eva.jsonl.tmp.999999.0")
            .exists()
    );
    assert!(
        p.path()
            .join("runs/r/labels/.ivo.jsonl.tmp.999999.0")
            .exists()
    );
    assert!(
        p.path()
            .join("runs/r/labels/.eva.jsonl.tmp.x.jsonl.tmp.999999.0")
            .exists()
    );
    // A column named twice is refused, not read from its first copy.
    let sheet = p.read("sheet.csv");
    let (head, body) = sheet.split_once('\n').unwrap();
    p.write("twice.csv", &format!("{head},choice\n{body}"));
    let out = import("twice.csv");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("names column `choice` twice"),
        "{}",
        text(&out)
    );
    // A row's error quotes its cells escaped: no escape sequence, no forged line.
    p.write(
        "evil.csv",
        &format!("{head}\n\"evil\u{1b}[31mRED\nerror: forged\",t,s,p,a,b,1,s\n"),
    );
    let out = import("evil.csv");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        !stderr.contains('\u{1b}') && !stderr.lines().any(|l| l.starts_with("error: forged")),
        "{stderr}"
    );
    // A quote left open is named as the cause of the short row.
    p.write(
        "open.csv",
        &format!("{head}\n\"i0001,t,s,p,a,b,1,s\ni0002,t,s,p,a,b,1,s\n"),
    );
    let out = import("open.csv");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains(
            "open.csv:2: the row has 1 cells and the header 8 (a `\"` opened in it is never closed"
        ),
        "{}",
        text(&out)
    );
}

/// In a terminal, Ctrl-C quits the session like `q` (every label kept) instead of killing it
/// with the terminal left without echo; an empty session leaves no labeller behind; with
/// `--reveal`, a saved label whose models were shown cannot be undone and relabelled.
#[test]
fn ctrl_c_in_a_terminal_quits_cleanly_and_reveal_forbids_undo() {
    let p = Project::offline();
    assert_eq!(p.run(&["run", "--run", "r"]).status.code(), Some(0));
    // More than there are: all of them, and a note says so.
    let out = p.run(&["label", "sample", "--run", "r", "--n", "500"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("note: --n 500 asked for more items than the 150 comparisons"),
        "{}",
        text(&out)
    );
    let out = p.run(&["label", "sample", "--run", "r", "--n", "4", "--force"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // `script` gives the session a pseudo-terminal; the keys reach it through the terminal,
    // where Ctrl-C (0x03) is a signal unless the session turned that off.
    let in_terminal = |labeller: &str, keys: &'static [&'static str]| {
        let command = format!(
            "{} label --run r --labeller {labeller}",
            env!("CARGO_BIN_EXE_judge")
        );
        let mut child = std::process::Command::new("script")
            .current_dir(p.path())
            .env_remove("JUDGE_CONFIG")
            .env("NO_COLOR", "1")
            .args(["-qec", &command, "/dev/null"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("script (util-linux)");
        let mut stdin = child.stdin.take().unwrap();
        std::thread::spawn(move || {
            for k in keys {
                std::thread::sleep(std::time::Duration::from_millis(700));
                let _ = stdin.write_all(k.as_bytes());
            }
            std::thread::sleep(std::time::Duration::from_millis(700));
        });
        child.wait_with_output().unwrap()
    };
    let out = in_terminal("zed", &["1", "\x03"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 of 4 labelled by `zed`, 3 left"),
        "{}",
        text(&out)
    );
    assert_eq!(p.jsonl("runs/r/labels/zed.jsonl").len(), 1);
    // A SIGTERM from outside: the terminal's mode is put back, and the session ends with 130
    // (it used to die by the signal, 143, the terminal left without echo).
    let mut child = std::process::Command::new("script")
        .current_dir(p.path())
        .env_remove("JUDGE_CONFIG")
        .args([
            "-qec",
            &format!(
                "{} label --run r --labeller tom",
                env!("CARGO_BIN_EXE_judge")
            ),
            "/dev/null",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script (util-linux)");
    let mut keys = child.stdin.take().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    keys.write_all(b"1").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    // The session itself, not `script` (whose command line holds the same words).
    let session_only = format!(
        "^{} label --run r --labeller tom",
        env!("CARGO_BIN_EXE_judge")
    );
    let killed = std::process::Command::new("pkill")
        .args(["-TERM", "-f", &session_only])
        .status()
        .unwrap();
    assert!(killed.success());
    std::thread::sleep(std::time::Duration::from_millis(500));
    drop(keys);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert_eq!(p.jsonl("runs/r/labels/tom.jsonl").len(), 1);
    // `script` puts the session's stderr on its stdout (the terminal).
    assert!(
        text(&out).contains("stopping (SIGTERM): every label so far is saved; the session ends (resume with: judge label --run r --labeller tom)")
            && !text(&out).contains("work in flight"),
        "{}",
        text(&out)
    );
    let out = in_terminal("amy", &["\x03"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Arrow and function keys label nothing (Down, `ESC [ B`, was read as `b`, both bad).
    let out = in_terminal(
        "ann",
        // Also Option+← on a Mac (`ESC b`) and the Linux console's F2 (`ESC [ [ B`).
        &[
            // And a lone Esc, then Down: the second sequence is skipped whole too.
            "\x1b[B", "\x1b[2~", "\x1bOS", "\x1b[15~", "\x1bb", "\x1b[[B", "\x1b", "\x1b[B", "q",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        !p.path().join("runs/r/labels/ann.jsonl").exists(),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("arrow, function and Alt keys do nothing here"),
        "{}",
        text(&out)
    );
    let out = p.run(&["label", "score", "--run", "r", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(!text(&out).contains("amy"), "{}", text(&out));
    assert!(
        !p.path().join("runs/r/labels/amy.jsonl").exists(),
        "no file, so no labeller"
    );

    let refused = "cannot undo `i0001`: its models were shown when it was saved (--reveal)";
    let out = session(&p, "bo", "1\nu\nq\n", &["--reveal"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains(refused), "{screen}");
    assert!(
        screen.contains("1 of 4 labelled by `bo`, 3 left"),
        "{screen}"
    );
    // Nor in a later session without --reveal: the label records that it was revealed.
    let out = session(&p, "bo", "u\nq\n", &[]);
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(screen.contains(refused), "{screen}");
    // A label saved without --reveal can be undone in a --reveal session.
    let out = session(&p, "cy", "1\nq\n", &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = session(&p, "cy", "u\nq\n", &["--reveal"]);
    let screen = String::from_utf8_lossy(&out.stdout);
    assert!(!screen.contains("cannot undo"), "{screen}");
    assert!(
        screen.contains("0 of 4 labelled by `cy`, 4 left"),
        "{screen}"
    );
    let out = session(&p, "judge", "q\n", &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    // Nor by importing a sheet over it.
    let out = p.run(&["label", "export", "--run", "r", "--output", "bo.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut sheet = csv::Reader::from_path(p.path().join("bo.csv")).unwrap();
    let header = sheet.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = sheet
        .records()
        .map(|r| {
            let mut cells: Vec<String> = r.unwrap().iter().map(String::from).collect();
            if cells[0] == "i0001" {
                cells[6] = "2".into();
            }
            csv::StringRecord::from(cells)
        })
        .collect();
    let mut w = csv::Writer::from_path(p.path().join("bo.csv")).unwrap();
    w.write_record(&header).unwrap();
    for r in &rows {
        w.write_record(r).unwrap();
    }
    w.flush().unwrap();
    let out = p.run(&[
        "label",
        "import",
        "bo.csv",
        "--run",
        "r",
        "--labeller",
        "bo",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("item `i0001`: `bo` saw its models when labelling it (--reveal)"),
        "{}",
        text(&out)
    );
}

#[test]
fn sessions_and_sheets_show_an_items_latest_output() {
    // A generate killed after `--retry-failed` answered an item leaves both of its records in
    // outputs.jsonl; the later one is the item's output, as for rank and compare.
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    sample(&p, 1);
    let item: serde_json::Value =
        serde_json::from_str(p.read("runs/r/labels/sample.jsonl").lines().next().unwrap()).unwrap();
    let outputs = p.read("runs/r/outputs.jsonl");
    let mut latest: serde_json::Value = outputs
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|o| o["task"] == item["task"] && o["model"] == item["model_a"])
        .unwrap();
    latest["text"] = "LATEST answer".into();
    p.write(
        "runs/r/outputs.jsonl",
        &format!("{outputs}{}\n", serde_json::to_string(&latest).unwrap()),
    );
    let out = p.run(&["label", "export", "--run", "r", "--output", "sheet.csv"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let sheet = p.read("sheet.csv");
    assert!(sheet.contains("LATEST answer"), "{sheet}");
    let screen = text(&session(&p, "ann", "q", &[]));
    assert!(screen.contains("LATEST answer"), "{screen}");
}

/// Regression: a session reading keys from a pipe died by a SIGINT or SIGTERM (no message, no
/// 130), where a terminal session said what it means and ended with 130.
#[test]
fn a_piped_session_ends_with_130_on_a_signal() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    sample(&p, 3);
    let (child, stdin) = open_session(&p, "pia", b"1\n", false);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let path = p.path().join("runs/r/labels/pia.jsonl");
    while !path.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("stopping (Ctrl-C): every label so far is saved"),
        "{}",
        text(&out)
    );
    assert_eq!(p.jsonl("runs/r/labels/pia.jsonl").len(), 1);
}

/// Labels drawn for one judge are scored against another of the run with `--judge` (the items
/// are the same comparisons); labels/agreement.json stays the sample judge's.
#[test]
fn labels_are_scored_against_any_judge_of_the_run() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    let config = p.read("judge.toml");
    p.write(
        "judge.toml",
        &format!("{config}\n[[judges]]\nid = \"judge-y\"\nprovider = \"j\"\nmodel = \"jm2\"\nfamily = \"judge-labs\"\n"),
    );
    let out = p.run(&["compare", "--run", "r", "--judge", "judge-y"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&[
        "label", "sample", "--run", "r", "--n", "4", "--judge", "judge-x",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert_eq!(
        session(&p, "kim", "1\n1\n2\nt\n", &[]).status.code(),
        Some(0)
    );
    let score = |extra: &[&str]| {
        let mut args = vec!["label", "score", "--run", "r", "--format", "json"];
        args.extend_from_slice(extra);
        p.run(&args)
    };
    let out = score(&["--judge", "judge-y"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["judge"], "judge-y");
    assert_eq!(report["labellers"][0]["vs_judge"]["items"], 4);
    assert!(!p.path().join("runs/r/labels/agreement.json").exists());
    let out = score(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stored: serde_json::Value =
        serde_json::from_str(&p.read("runs/r/labels/agreement.json")).unwrap();
    assert_eq!(stored["judge"], "judge-x");
    let out = score(&["--judge", "nobody"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("judges: judge-x, judge-y"),
        "{}",
        text(&out)
    );
}

/// Regression: the human leaderboard said that labels given after `--reveal` are not blind on
/// stderr alone: a saved or piped leaderboard (and its JSON `warnings`) lost it.
#[test]
fn the_human_leaderboard_carries_the_not_blind_warning() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    // Every comparison: each task's three items share its models.
    sample(&p, 24);
    let out = session(&p, "eve", "1\n".repeat(24), &["--reveal"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["rank", "--run", "r", "--from-labels", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let board: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let warnings = board["warnings"].to_string();
    assert!(
        warnings.contains("`eve` gave 16 label(s) on items showing an answer whose model --reveal had shown them before"),
        "{warnings}"
    );
    assert!(
        p.read("runs/r/labels/leaderboard.md")
            .contains("those labels are not blind")
    );
}

/// Regression: once a second judge had judged the run, the same `label sample` command asked
/// for --judge although the sample records its judge; and a sample drawn otherwise was
/// refused without saying why the new one differs.
#[test]
fn the_same_sample_command_holds_after_another_judge_and_a_differing_one_says_why() {
    let server = FakeServer::start(judge);
    let p = labelled_project(&server);
    sample(&p, 6);
    let config = p.read("judge.toml")
        + "\n[[judges]]\nid = \"judge-y\"\nprovider = \"j\"\nmodel = \"jm2\"\nfamily = \"judge-labs\"\n";
    p.write("judge.toml", &config);
    let out = p.run(&["compare", "--run", "r", "--judge", "judge-y"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = p.run(&["label", "sample", "--run", "r", "--n", "6"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        text(&out).contains("already holds this sample (6 items by `judge-x`"),
        "{}",
        text(&out)
    );
    let out = p.run(&["label", "sample", "--run", "r", "--n", "8"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("already exists with another sample (6 items; this command draws 8) (no labels yet); pass --force"),
        "{}",
        text(&out)
    );
    let out = p.run(&[
        "label", "sample", "--run", "r", "--n", "6", "--judge", "judge-y",
    ]);
    assert!(
        text(&out)
            .contains("already exists with another sample (it holds `judge-x`'s comparisons)"),
        "{}",
        text(&out)
    );
}
