//! Test support: a scripted fake HTTP server on 127.0.0.1 (OpenAI-shaped replies, counts every
//! request) and a temp project builder that runs the built `judge` binary.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The API key every test uses; it must never appear on disk or in output.
pub const TEST_KEY: &str = "sk-test-DO-NOT-LEAK-8f2c1a9b7e";

/// A request the fake server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: serde_json::Value,
}

impl Received {
    /// The user message of an OpenAI-shaped request.
    pub fn user_text(&self) -> String {
        let msgs = self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        msgs.iter()
            .rev()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or_default()
            .to_string()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What the server does with one request.
pub enum Reply {
    /// Status, extra headers, body.
    Http(u16, Vec<(String, String)>, String),
    /// Wait this long, then reply.
    Delayed(Duration, Box<Reply>),
    /// Never reply (until the client gives up).
    Hang,
    /// Send headers and half the body, then close the connection.
    CutMidBody,
    /// Send headers and half the body, then stall (until the client gives up).
    StallMidBody,
}

impl Reply {
    /// 200 with an OpenAI chat completion carrying `text`.
    pub fn ok(text: &str) -> Reply {
        Reply::Http(200, vec![], completion(text, "stop"))
    }
    pub fn status(code: u16, body: &str) -> Reply {
        Reply::Http(code, vec![], body.to_string())
    }
}

/// An OpenAI chat completion body.
pub fn completion(text: &str, finish: &str) -> String {
    serde_json::json!({
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": "fake",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
    })
    .to_string()
}

type Script = dyn Fn(&Received, usize) -> Reply + Send + Sync;

/// A fake provider server. The script gets each request and its 0-based arrival number.
pub struct FakeServer {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
    stop: Arc<AtomicBool>,
}

impl FakeServer {
    pub fn start(script: impl Fn(&Received, usize) -> Reply + Send + Sync + 'static) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let received = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let script: Arc<Script> = Arc::new(script);
        let (r, s) = (received.clone(), stop.clone());
        listener.set_nonblocking(true).expect("nonblocking");
        std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (r, script) = (r.clone(), script.clone());
                        std::thread::spawn(move || serve(stream, &r, &*script));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        FakeServer {
            url,
            received,
            stop,
        }
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().expect("lock").clone()
    }
    pub fn count(&self) -> usize {
        self.received.lock().expect("lock").len()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn serve(stream: TcpStream, received: &Mutex<Vec<Received>>, script: &Script) {
    stream.set_nonblocking(false).ok();
    stream.set_nodelay(true).ok();
    let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
    let mut stream = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .to_string();
        let mut headers = Vec::new();
        let mut len = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().unwrap_or(0);
                }
                headers.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        let mut body = vec![0; len];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let req = Received {
            path,
            headers,
            body: serde_json::from_slice(&body).unwrap_or_default(),
        };
        let n = {
            let mut all = received.lock().expect("lock");
            all.push(req.clone());
            all.len() - 1
        };
        if !respond(&mut stream, script(&req, n)) {
            return;
        }
    }
}

/// Writes a reply; false = the connection is closed.
fn respond(stream: &mut TcpStream, reply: Reply) -> bool {
    match reply {
        Reply::Http(status, headers, body) => {
            let mut head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            stream
                .write_all(head.as_bytes())
                .and_then(|()| stream.write_all(body.as_bytes()))
                .is_ok()
        }
        Reply::Delayed(d, inner) => {
            std::thread::sleep(d);
            respond(stream, *inner)
        }
        Reply::Hang => {
            std::thread::sleep(Duration::from_secs(30));
            false
        }
        Reply::StallMidBody => {
            let body = completion("this reply stalls", "stop");
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body.as_bytes()[..body.len() / 2]);
            let _ = stream.flush();
            std::thread::sleep(Duration::from_secs(30));
            false
        }
        Reply::CutMidBody => {
            let body = completion("this reply is cut off", "stop");
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body.as_bytes()[..body.len() / 2]);
            let _ = stream.shutdown(std::net::Shutdown::Both);
            false
        }
    }
}

/// A temp project: judge.toml, a suite, and helpers to run `judge` in it.
pub struct Project {
    pub dir: tempfile::TempDir,
}

impl Project {
    /// An empty project folder.
    pub fn empty() -> Project {
        Project {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    /// A copy of the shipped offline default: judge.toml and suites/.
    pub fn offline() -> Project {
        let p = Project::empty();
        std::fs::copy(repo_root().join("judge.toml"), p.path().join("judge.toml"))
            .expect("copy judge.toml");
        copy_tree(&repo_root().join("suites"), &p.path().join("suites"));
        p
    }

    /// A project with suite `demo` of `n` tasks (`t01`…), and the given judge.toml.
    pub fn with_suite(n: usize, config: &str) -> Project {
        let p = Project::empty();
        p.write("suites/demo/suite.toml", "name = \"demo\"\nversion = \"1\"\ncontext = \"Answer in Python.\"\ncriteria = \"Correct code wins.\"\n");
        for i in 1..=n {
            p.write(
                &format!("suites/demo/tasks/t{i:02}/prompt.md"),
                &format!("Task number {i}: write f{i}()."),
            );
        }
        p.write("judge.toml", config);
        p
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: &str) {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// The `judge` command, in this project, with the test key and fast retries.
    pub fn judge(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_judge"));
        c.current_dir(self.path())
            .env_remove("JUDGE_CONFIG")
            .env("OPENAI_API_KEY", TEST_KEY)
            .env("ANTHROPIC_API_KEY", TEST_KEY)
            .env("GEMINI_API_KEY", TEST_KEY)
            .env("JUDGE_RETRY_BASE_MS", "10")
            .env("NO_COLOR", "1");
        c
    }

    /// Runs `judge` with args and returns the output.
    pub fn run(&self, args: &[&str]) -> Output {
        self.judge().args(args).output().expect("run judge")
    }

    /// The JSON leaderboard of `judge <args> --format json` with a quick bootstrap (50
    /// resamples: for tests that look at counts and warnings, not intervals); the command
    /// must succeed.
    pub fn quick_board(&self, args: &[&str]) -> serde_json::Value {
        let mut all = args.to_vec();
        all.extend([
            "--format",
            "json",
            "--resamples",
            "50",
            "--allow-few-resamples",
        ]);
        let out = self.run(&all);
        assert_eq!(out.status.code(), Some(0), "{all:?}: {}", text(&out));
        serde_json::from_slice(&out.stdout).expect("a JSON leaderboard")
    }

    /// Parsed records of a JSON Lines file in the project.
    pub fn jsonl(&self, rel: &str) -> Vec<serde_json::Value> {
        self.read(rel)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{rel}: bad line {l}: {e}")))
            .collect()
    }

    /// Every file under the project (recursively).
    pub fn all_files(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out)
                } else {
                    out.push(p)
                }
            }
        }
        let mut out = Vec::new();
        walk(self.path(), &mut out);
        out
    }
}

/// stdout and stderr as text, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The root of the repository (for the shipped judge.toml and suites).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Copies a directory tree.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir").flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            copy_tree(&src, &dst)
        } else {
            std::fs::copy(&src, &dst).expect("copy");
        }
    }
}

/// A `judge.toml` for suite `demo` whose models replay answer sets through a `files` provider
/// `answers`: one `(id, answer set, family)` per model.
pub fn files_config(models: &[(&str, &str, &str)]) -> String {
    let mut config =
        "[run]\nsuite = \"demo\"\n\n[providers.answers]\nkind = \"files\"\n".to_string();
    for (id, set, family) in models {
        config.push_str(&format!(
            "\n[[models]]\nid = \"{id}\"\nprovider = \"answers\"\nmodel = \"{set}\"\nfamily = \"{family}\"\n"
        ));
    }
    config
}

/// The number a dry run's plan gives right after `head` (its estimated input tokens), the plan
/// checked to open with `head`.
pub fn tokens_after(plan: &str, head: &str) -> u64 {
    assert!(plan.starts_with(head), "{plan}");
    plan[head.len()..]
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after the head: {plan}"))
}
