//! Throughput and memory of `judge generate` against a fake OpenAI-compatible server on
//! 127.0.0.1 (run with `cargo bench --bench providers`):
//! 1. 200 ms latency, `max_concurrency = 64`: achieved requests per second vs 64 / 0.2 s;
//! 2. 200 ms latency, `requests_per_minute = 600`: rate vs 10/s, and 429s the server sent
//!    (it answers 429 when more than 11 requests start within one second);
//! 3. peak memory at 1k and 50k requests (10 ms latency).

#[path = "../tests/common/mod.rs"]
#[expect(dead_code, reason = "the bench uses only part of the test support")]
mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{FakeServer, Project, Reply};

fn project(url: &str, tasks: usize, models: usize, limits: &str) -> Project {
    let mut config = format!(
        "[run]\nsuite = \"demo\"\n\n[providers.p]\nkind = \"openai\"\nbase_url = \"{url}\"\napi_key_env = \"\"\nmax_retries = 0\ntimeout_secs = 30\n{limits}\n"
    );
    for m in 0..models {
        config.push_str(&format!(
            "\n[[models]]\nid = \"m{m}\"\nprovider = \"p\"\nmodel = \"m{m}\"\nfamily = \"f{m}\"\n"
        ));
    }
    Project::with_suite(tasks, &config)
}

/// Runs generate under /usr/bin/time: (wall seconds, peak RSS in MB, exit code).
fn timed_generate(p: &Project) -> (f64, f64, Option<i32>) {
    let exe = env!("CARGO_BIN_EXE_judge");
    let started = Instant::now();
    let out = std::process::Command::new("/usr/bin/time")
        .args(["-f", "%M", exe, "-q", "generate", "--run", "bench"])
        .current_dir(p.path())
        .output()
        .expect("run judge under /usr/bin/time");
    let wall = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let kb: f64 = stderr
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(f64::NAN);
    (wall, kb / 1024.0, out.status.code())
}

fn main() {
    // 1. Concurrency 64 at 200 ms latency.
    let server = FakeServer::start(|_, _| {
        Reply::Delayed(Duration::from_millis(200), Box::new(Reply::ok("x")))
    });
    let p = project(&server.url, 640, 3, "max_concurrency = 64");
    let (wall, mb, code) = timed_generate(&p);
    let n = server.count();
    let rate = n as f64 / wall;
    println!(
        "concurrency 64, 200 ms: {n} requests in {wall:.2} s = {rate:.1}/s ({:.1}% of 320/s), peak {mb:.1} MB, exit {code:?}",
        rate / 320.0 * 100.0
    );

    // 2. 600 requests per minute at 200 ms latency; the server refuses bursts.
    let starts: &'static Mutex<Vec<Instant>> = Box::leak(Box::new(Mutex::new(Vec::new())));
    let refused: &'static AtomicUsize = Box::leak(Box::new(AtomicUsize::new(0)));
    let server = FakeServer::start(move |_, _| {
        let now = Instant::now();
        let mut s = starts.lock().expect("lock");
        s.retain(|t| now.duration_since(*t) < Duration::from_secs(1));
        s.push(now);
        if s.len() > 11 {
            refused.fetch_add(1, Ordering::SeqCst);
            return Reply::status(429, "{\"error\":{\"code\":\"rate_limit_exceeded\"}}");
        }
        Reply::Delayed(Duration::from_millis(200), Box::new(Reply::ok("x")))
    });
    let p = project(
        &server.url,
        100,
        2,
        "max_concurrency = 64\nrequests_per_minute = 600",
    );
    let (wall, _, code) = timed_generate(&p);
    let n = server.count();
    // The first request starts at once and the last one is followed by its 200 ms reply.
    let rate = (n as f64 - 1.0) / (wall - 0.2);
    println!(
        "requests_per_minute 600: {n} requests in {wall:.2} s = {rate:.2}/s ({:+.1}% vs 10/s), 429s sent: {}, exit {code:?}",
        (rate / 10.0 - 1.0) * 100.0,
        refused.load(Ordering::SeqCst)
    );

    // 3. Peak memory at 1k and 50k requests.
    for (tasks, models) in [(100, 10), (1000, 50)] {
        let server = FakeServer::start(|_, _| {
            Reply::Delayed(
                Duration::from_millis(10),
                Box::new(Reply::ok("a short answer")),
            )
        });
        let p = project(&server.url, tasks, models, "max_concurrency = 64");
        let (wall, mb, code) = timed_generate(&p);
        println!(
            "{:>6} requests: {wall:.2} s, peak {mb:.1} MB, exit {code:?}",
            server.count()
        );
    }
}
