//! Benchmark of `judge rank --comparisons` at 1000 resamples on synthetic battles (ties and
//! both-bad rows included): 10k × 20, 100k × 50 and 1M × 100 (rows × models). Reports the
//! parse-only time of judge's parser and of a plain one-thread serde_json read (both in this
//! process, warm), the time `judge rank` itself spent reading and parsing the file
//! (`--timings`, "in-run"), the whole command's wall time (process start to exit) and its
//! peak memory (via `/usr/bin/time`): best of [`rounds`] rounds, for each bootstrap unit (the task
//! unit's parser also numbers the tasks). Ratios are medians over rounds:
//! the command's own total (reading to writing, `--timings`) over its own read+parse
//! ("total÷rp", the same process, so process start and exit are in neither), and the whole
//! command's time over each of the three parse times (see [`rounds`]). Last, the peak memory
//! of one run at 1000 and one at 10,000 resamples on the largest file, and of the task unit on
//! 1M battles whose `question_id`s are all distinct.
//! Run with `cargo bench --bench rank`.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use judge::battles::parse_battles;
use judge::stats::BootstrapUnit;

/// Writes `rows` battles among `models` models with spread strengths, ~10% ties and ~3% both
/// bad, on `tasks` questions in turn, deterministic.
fn write_battles(path: &Path, rows: usize, models: usize, tasks: usize) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let strength: Vec<f64> = (0..models)
        .map(|i| 3.0 * i as f64 / models as f64)
        .collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create battles"));
    for r in 0..rows {
        let a = (next() * models as f64) as usize % models;
        let mut b = (next() * models as f64) as usize % models;
        if b == a {
            b = (a + 1) % models;
        }
        let u = next();
        let p_a = 1.0 / (1.0 + (strength[b] - strength[a]).exp());
        let winner = if u < 0.03 {
            "tie (bothbad)"
        } else if u < 0.13 {
            "tie"
        } else if next() < p_a {
            "model_a"
        } else {
            "model_b"
        };
        writeln!(out, r#"{{"model_a":"model-{a:03}","model_b":"model-{b:03}","winner":"{winner}","question_id":"q{}","judge":"synthetic"}}"#, r % tasks)
            .expect("write battle");
    }
}

/// The plain way to read and parse the file: line by line with serde_json, one thread.
fn serde_parse(path: &Path) -> usize {
    #[derive(serde::Deserialize)]
    struct Battle {
        #[expect(dead_code, reason = "parsed to measure parsing; not used")]
        model_a: String,
        #[expect(dead_code, reason = "parsed to measure parsing; not used")]
        model_b: String,
        #[expect(dead_code, reason = "parsed to measure parsing; not used")]
        winner: String,
        #[expect(dead_code, reason = "parsed to measure parsing; not used")]
        question_id: Option<String>,
    }
    use std::io::BufRead;
    let f = std::io::BufReader::new(std::fs::File::open(path).expect("open"));
    let mut n = 0;
    for line in f.lines() {
        let _row: Battle = serde_json::from_str(&line.expect("line")).expect("row");
        n += 1;
    }
    n
}

/// Measurement rounds for a file of `rows` rows. Each round times the parser, the serde read
/// and the whole command back to back, so that the VM's drifting speed affects all three
/// alike; the table shows the best time of each and the median over rounds of the per-round
/// ratios. Small files take more rounds: a 10 ms command's ratio scatters by ±20% from round
/// to round on a shared VM, and a round costs little.
fn rounds(rows: usize) -> usize {
    match rows {
        ..=10_000 => 31,
        10_001..=100_000 => 15,
        _ => 7,
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let v = f();
    (t.elapsed().as_secs_f64(), v)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// One `judge rank --timings` process under /usr/bin/time.
struct RankRun {
    /// Process start to exit, seconds.
    wall: f64,
    /// Reading and parsing the file inside that process (from `--timings`), seconds.
    read_parse: f64,
    /// Everything that process did from reading to writing (from `--timings`), seconds.
    total: f64,
    peak_kb: u64,
}

fn run_rank(exe: &str, path: &Path, unit: &str, out: &Path) -> RankRun {
    let started = Instant::now();
    let result = Command::new("/usr/bin/time")
        .args(["-f", "%M", exe, "rank", "--timings", "--comparisons"])
        .arg(path)
        .args(["--bootstrap-unit", unit, "--format", "json", "--output"])
        .arg(out)
        .output()
        .expect("run judge rank under /usr/bin/time");
    // Wall time from here (1 µs resolution; /usr/bin/time's %e has 10 ms).
    let wall = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let last = stderr.lines().last().expect("time output");
    let timings = stderr
        .lines()
        .find(|l| l.starts_with("timings: "))
        .expect("a timings line");
    // "timings: read+parse X s · rank Y s · write Z s · total T s"
    let seconds = |label: &str| -> f64 {
        let words: Vec<&str> = timings.split_whitespace().collect();
        let at = words
            .iter()
            .position(|w| *w == label)
            .unwrap_or_else(|| panic!("{label} in {timings}"));
        words[at + 1].parse().expect("seconds")
    };
    RankRun {
        wall,
        read_parse: seconds("read+parse"),
        total: seconds("total"),
        peak_kb: last.trim().parse().expect("max rss kb"),
    }
}

fn main() {
    let exe = env!("CARGO_BIN_EXE_judge");
    let dir = std::env::temp_dir().join(format!("judge-rank-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("bench dir");
    println!(
        "{:>9} {:>6} {:>10} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "rows",
        "models",
        "unit",
        "parse (s)",
        "serde (s)",
        "in-run (s)",
        "rank (s)",
        "total÷rp",
        "÷in-run",
        "÷parse",
        "÷serde",
        "peak MB"
    );
    let sizes = [(10_000, 20), (100_000, 50), (1_000_000, 100)];
    let units = [
        ("comparison", BootstrapUnit::Comparison),
        ("task", BootstrapUnit::Task),
    ];
    for (rows, models) in sizes {
        let path = dir.join(format!("battles-{rows}-{models}.jsonl"));
        write_battles(&path, rows, models, 500);
        for (unit_name, unit) in units {
            bench_size(exe, &dir, &path, (rows, models), (unit_name, unit));
        }
    }
    // Memory against the number of resamples, on the largest file.
    let (rows, models) = sizes[sizes.len() - 1];
    let path = dir.join(format!("battles-{rows}-{models}.jsonl"));
    let peaks: Vec<String> = [1_000, 10_000]
        .iter()
        .map(|&n| {
            let kb = peak_kb(exe, &path, "comparison", n, &dir.join("out.json"));
            format!("{n} resamples {:.1} MB", kb as f64 / 1024.0)
        })
        .collect();
    println!("peak memory at {rows} × {models}: {}", peaks.join(", "));
    // The task unit on Chatbot Arena's shape: every battle its own question.
    let path = dir.join(format!("battles-{rows}-{models}-distinct.jsonl"));
    write_battles(&path, rows, models, rows);
    let kb = peak_kb(exe, &path, "task", 1_000, &dir.join("out.json"));
    println!(
        "peak memory at {rows} × {models}, task unit, every question_id distinct: {:.1} MB",
        kb as f64 / 1024.0
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Peak memory of one `judge rank` run with `resamples` resamples, in KiB.
fn peak_kb(exe: &str, path: &Path, unit: &str, resamples: usize, out: &Path) -> u64 {
    let result = Command::new("/usr/bin/time")
        .args(["-f", "%M", exe, "rank", "--comparisons"])
        .arg(path)
        .args(["--bootstrap-unit", unit])
        .args(["--resamples", &resamples.to_string(), "--output"])
        .arg(out)
        .output()
        .expect("run judge rank under /usr/bin/time");
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(result.status.success(), "{stderr}");
    let last = stderr.lines().last().expect("time output");
    last.trim().parse().expect("max rss kb")
}

/// Measures one file with one bootstrap unit and prints its line of the table.
fn bench_size(
    exe: &str,
    dir: &Path,
    path: &Path,
    (rows, models): (usize, usize),
    (unit_name, unit): (&str, BootstrapUnit),
) {
    let (mut parse, mut serde) = (Vec::new(), Vec::new());
    let (mut whole, mut in_run, mut own) = (Vec::new(), Vec::new(), Vec::new());
    let mut peak_kb = 0u64;
    for _ in 0..rounds(rows) {
        let (t, parsed) = timed(|| {
            let f = std::fs::File::open(path).expect("open");
            parse_battles(f, unit).expect("parse")
        });
        assert_eq!(parsed.1.len(), rows);
        drop(parsed);
        parse.push(t);
        let (t, n) = timed(|| serde_parse(path));
        assert_eq!(n, rows);
        serde.push(t);
        let run = run_rank(exe, path, unit_name, &dir.join("out.json"));
        whole.push(run.wall);
        in_run.push(run.read_parse);
        own.push(run.total / run.read_parse);
        peak_kb = peak_kb.max(run.peak_kb);
    }
    let best = |xs: &[f64]| xs.iter().copied().fold(f64::INFINITY, f64::min);
    let ratio = |base: &[f64]| median(whole.iter().zip(base).map(|(w, b)| w / b).collect());
    println!(
        "{rows:>9} {models:>6} {unit_name:>10} {:>10.4} {:>10.4} {:>10.4} {:>10.4} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>8.1}",
        best(&parse),
        best(&serde),
        best(&in_run),
        best(&whole),
        median(own.clone()),
        ratio(&in_run),
        ratio(&parse),
        ratio(&serde),
        peak_kb as f64 / 1024.0
    );
}
