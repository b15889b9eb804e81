use super::*;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Solution-side check: `import solution` runs the attack at import time.
const IMPORT_ONLY: &str = "import solution\n";

/// Whether the bwrap tests can run. bubblewrap missing is a failure unless
/// `JUDGE_TEST_NO_BWRAP=1` says to skip them.
fn bwrap_ok() -> bool {
    if find_program("bwrap").is_some() {
        return true;
    }
    if std::env::var("JUDGE_TEST_NO_BWRAP").is_ok_and(|v| v == "1") {
        eprintln!("skipping a bwrap test: bubblewrap is not installed (JUDGE_TEST_NO_BWRAP=1)");
        return false;
    }
    panic!(
        "bubblewrap is not installed: `apt-get install bubblewrap`, \
             or set JUDGE_TEST_NO_BWRAP=1 to skip the bwrap-mode tests"
    );
}

fn is_root() -> bool {
    effective_uid().unwrap() == 0
}

/// A short-fused policy for tests.
fn policy(mode: SandboxMode) -> SandboxPolicy {
    SandboxPolicy {
        mode,
        cpu_secs: 5,
        wall_timeout: Duration::from_secs(10),
        ..SandboxPolicy::default()
    }
}

/// A base directory the (possibly unprivileged) sandbox uid can traverse.
fn base() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("judge-sandbox-test-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

/// Run and assert the per-run directory is gone afterwards.
fn run(policy: &SandboxPolicy, check: &str, solution: &str) -> CheckRun {
    let base = base();
    let run = run_check_in(policy, base.path(), check, solution).unwrap();
    let left: Vec<_> = std::fs::read_dir(base.path()).unwrap().collect();
    assert!(left.is_empty(), "work dir not removed: {left:?}");
    run
}

/// A marker unique to this test run, to find stray processes by.
fn marker(tag: &str) -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("judge-test-{tag}-{}-{nanos}", std::process::id())
}

/// Pids of host processes whose command line contains `needle`.
fn processes_with(needle: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == std::process::id() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(needle) {
            found.push(pid);
        }
    }
    found
}

/// Wait (up to 3 s) for every process carrying `needle` to be gone.
fn assert_no_processes(needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let left = processes_with(needle);
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "leftover processes {left:?} for {needle}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn modes() -> Vec<SandboxMode> {
    let mut m = vec![SandboxMode::None];
    if bwrap_ok() {
        m.push(SandboxMode::Bwrap);
    }
    m
}

// ---- pure parts -------------------------------------------------------

#[test]
fn default_policy_is_sensible() {
    let p = SandboxPolicy::default();
    assert_eq!(p.mode, SandboxMode::Bwrap);
    assert_eq!(p.cpu_secs, 10);
    assert_eq!(p.memory_bytes, 512 * 1024 * 1024);
    assert_eq!(p.file_size_bytes, 16 * 1024 * 1024);
    assert_eq!(p.max_processes, 64);
    assert_eq!(p.wall_timeout, Duration::from_secs(20));
    assert_eq!(p.output_cap_bytes, 64 * 1024);
    assert!(default_parallelism() >= 1);
}

#[test]
fn child_env_is_only_the_allowlist() {
    let env = child_env("/w");
    let keys: Vec<&str> = env.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        keys,
        [
            "PATH",
            "HOME",
            "TMPDIR",
            "LANG",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONHASHSEED"
        ]
    );
    let get = |k: &str| env.iter().find(|(key, _)| *key == k).unwrap().1.clone();
    assert_eq!(get("HOME"), "/w");
    assert_eq!(get("TMPDIR"), "/w");
    assert_eq!(get("LANG"), "C.UTF-8");
    assert_eq!(get("PYTHONHASHSEED"), "0");
    assert_eq!(get("PYTHONDONTWRITEBYTECODE"), "1");
    // And the bwrap command line clears everything before setting them.
    let args: Vec<String> = bwrap_args(
        &SandboxPolicy::default(),
        BwrapFeatures {
            size: true,
            disable_userns: true,
        },
        Path::new("/host/dir"),
    )
    .iter()
    .map(|a| a.to_string_lossy().into_owned())
    .collect();
    let clear = args.iter().position(|a| a == "--clearenv").unwrap();
    let setenv: Vec<&String> = args
        .iter()
        .enumerate()
        .filter(|(_, a)| *a == "--setenv")
        .map(|(i, _)| {
            assert!(i > clear);
            &args[i + 1]
        })
        .collect();
    assert_eq!(setenv.len(), keys.len());
}

#[test]
fn bwrap_args_hide_the_host() {
    let args: Vec<String> = bwrap_args(
        &SandboxPolicy::default(),
        BwrapFeatures {
            size: true,
            disable_userns: true,
        },
        Path::new("/host/dir"),
    )
    .iter()
    .map(|a| a.to_string_lossy().into_owned())
    .collect();
    let joined = args.join(" ");
    for needed in [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--remount-ro /",
        "--ro-bind /usr /usr",
        "--tmpfs /tmp",
        "--size 67108864",
        "--ro-bind /host/dir/solution.py /tmp/check/solution.py",
        "--chdir /tmp/check",
    ] {
        assert!(joined.contains(needed), "missing {needed} in {joined}");
    }
    assert!(!args.iter().any(|a| a == "--share-net" || a == "--bind"));
    assert!(
        !joined.contains("check.py"),
        "the hidden test is not in the sandbox's files: {joined}"
    );
    for hidden in ["/root", "/home", "/work", "/var"] {
        assert!(!args.iter().any(|a| a == hidden), "{hidden} is mounted");
    }
}

#[test]
fn classify_table() {
    use CheckResult::*;
    let c = |t, l, code, sig, ms| classify(t, l, code, sig, 10, ms);
    assert_eq!(c(false, true, Some(0), None, 5), Pass);
    assert_eq!(c(false, true, Some(1), None, 5), Fail);
    assert_eq!(c(false, true, Some(2), None, 5), Fail);
    assert_eq!(c(true, true, None, Some(9), 5), Timeout);
    assert_eq!(c(true, false, None, Some(9), 5), Timeout);
    assert_eq!(c(false, false, Some(1), None, 5), Error);
    assert_eq!(c(false, false, Some(0), None, 5), Error);
    assert_eq!(c(false, true, None, Some(SIGXCPU), 10_200), Timeout);
    // Sooner than the CPU limit could be reached on every core: an exit status 152 that
    // bwrap's encoding turned into signal 24.
    assert_eq!(c(false, true, None, Some(SIGXCPU), 120), Fail);
    assert_eq!(c(false, true, None, Some(SIGKILL), 10_500), Timeout);
    // Once Python started, a crash is the code's failure, never `error` (which would take
    // the comparison out of the rating).
    assert_eq!(c(false, true, None, Some(SIGKILL), 500), Fail);
    assert_eq!(c(false, true, None, Some(11), 500), Fail);
    assert_eq!(c(false, true, None, Some(6), 500), Fail);
    assert_eq!(c(false, true, None, Some(25), 500), Fail);
    assert_eq!(c(false, false, None, Some(11), 500), Error);
}

#[test]
fn decode_status_cases() {
    let raw = |code: i32| ExitStatus::from_raw(code << 8);
    assert_eq!(decode_status(raw(0), true), (Some(0), None));
    assert_eq!(decode_status(raw(1), true), (Some(1), None));
    assert_eq!(decode_status(raw(152), true), (None, Some(24)));
    assert_eq!(decode_status(raw(152), false), (Some(152), None));
    assert_eq!(decode_status(raw(128), true), (Some(128), None));
    assert_eq!(
        decode_status(ExitStatus::from_raw(9), true),
        (None, Some(9))
    );
}

#[test]
fn capture_keeps_a_bounded_tail() {
    let m = Mutex::new(Capture::default());
    let cap = 10;
    for i in 0..10_000u32 {
        lock(&m).push(format!("{i:05}\n").as_bytes(), cap);
        assert!(lock(&m).tail.len() <= cap + 8192);
    }
    let s = snapshot(&m, cap, 0);
    assert_eq!(s.text, "998\n09999\n");
    assert_eq!(s.total, 60_000);
    // A huge single chunk is cut before it is stored.
    let m = Mutex::new(Capture::default());
    lock(&m).push(&vec![b'a'; 1 << 20], 4);
    assert_eq!(lock(&m).tail.len(), 4);
    // Cap 0 keeps nothing but counts.
    let m = Mutex::new(Capture::default());
    lock(&m).push(b"abc", 0);
    assert_eq!(snapshot(&m, 0, 0).text, "");
    assert_eq!(snapshot(&m, 0, 0).total, 3);
}

#[test]
fn capture_strips_marker_and_partial_chars() {
    let m = Mutex::new(Capture::default());
    lock(&m).push(&LAUNCH_MARKER[..3], 100);
    lock(&m).push(&LAUNCH_MARKER[3..], 100);
    lock(&m).push("héllo".as_bytes(), 100);
    assert_eq!(lock(&m).head, LAUNCH_MARKER);
    let s = snapshot(&m, 100, LAUNCH_MARKER.len());
    assert_eq!(s.text, "héllo");
    assert_eq!(s.total, 6);
    // The tail starts inside the marker: only the rest of it is dropped.
    let s = snapshot(&m, 8, LAUNCH_MARKER.len());
    assert_eq!(s.text, "héllo");
    // The tail starts inside "é": the stray continuation byte goes.
    let s = snapshot(&m, 5, LAUNCH_MARKER.len());
    assert_eq!(s.text, "éllo");
    let s = snapshot(&m, 4, LAUNCH_MARKER.len());
    assert_eq!(s.text, "llo");
}

#[test]
fn launcher_source_embeds_the_marker() {
    let src = launcher_source();
    assert!(!src.contains("MARKER"));
    assert!(src.contains("b'\\x1e\\x6a"));
    let args = launcher_args(&SandboxPolicy::default(), 64);
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(args[0], "-c");
    assert_eq!(
        &args[2..8],
        [
            "10",
            "536870912",
            "16777216",
            "64",
            "256",
            "/usr/bin/python3"
        ]
    );
    assert_eq!(args[8], "-c");
    assert!(args[9].contains("compile(_source, 'check.py'") && !args[9].contains("PREFIX"));
    assert_eq!(args.len(), 10);
}

#[test]
fn check_result_serialises_lowercase() {
    assert_eq!(
        serde_json::to_string(&CheckResult::Timeout).unwrap(),
        "\"timeout\""
    );
    let back: CheckResult = serde_json::from_str("\"pass\"").unwrap();
    assert_eq!(back, CheckResult::Pass);
}

// ---- end to end, both modes -------------------------------------------

#[test]
fn probe_works() {
    if bwrap_ok() {
        probe_bwrap().unwrap();
    }
    probe(&policy(SandboxMode::None)).unwrap();
}

#[test]
fn correct_passes_wrong_fails() {
    let check = "from solution import add\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n";
    for mode in modes() {
        let p = policy(mode);
        let good = run(&p, check, "def add(a, b):\n    return a + b\n");
        assert_eq!(good.result, CheckResult::Pass, "{mode:?}: {good:?}");
        assert_eq!(good.exit_code, Some(0));
        assert_eq!(good.stdout_tail, "ok\n");
        assert_eq!(good.stderr_tail, "", "{mode:?}: marker must be stripped");
        let want = if mode == SandboxMode::Bwrap {
            "bwrap"
        } else {
            "none"
        };
        assert_eq!(good.sandbox, want);

        let bad = run(&p, check, "def add(a, b):\n    return a - b\n");
        assert_eq!(bad.result, CheckResult::Fail, "{mode:?}: {bad:?}");
        assert_eq!(bad.exit_code, Some(1));
        assert!(
            bad.stderr_tail.contains("AssertionError: add is wrong"),
            "{bad:?}"
        );

        let syntax = run(&p, check, "def add(a, b)\n    return a + b\n");
        assert_eq!(syntax.result, CheckResult::Fail, "{mode:?}: {syntax:?}");
        assert!(syntax.stderr_tail.contains("SyntaxError"), "{syntax:?}");

        let exit3 = run(&p, "import sys\nsys.exit(3)\n", "");
        assert_eq!(
            (exit3.result, exit3.exit_code),
            (CheckResult::Fail, Some(3))
        );
    }
}

#[test]
fn missing_python_is_an_error_with_the_reason() {
    for mode in modes() {
        let p = SandboxPolicy {
            python: PathBuf::from("/usr/bin/python3-judge-missing"),
            ..policy(mode)
        };
        let r = run(&p, IMPORT_ONLY, "");
        assert_eq!(r.result, CheckResult::Error, "{mode:?}: {r:?}");
        assert!(
            r.stderr_tail.contains("python3-judge-missing"),
            "{mode:?}: {r:?}"
        );
        assert!(r.stderr_tail.contains("did not start") || r.stderr_tail.contains("cannot start"));
    }
}

#[test]
fn cpu_limit_is_a_timeout() {
    for mode in modes() {
        let p = SandboxPolicy {
            cpu_secs: 1,
            wall_timeout: Duration::from_secs(20),
            ..policy(mode)
        };
        let r = run(&p, IMPORT_ONLY, "while True:\n    pass\n");
        assert_eq!(r.result, CheckResult::Timeout, "{mode:?}: {r:?}");
        // SIGXCPU, not the wall clock (which would report SIGKILL).
        assert_eq!(r.signal, Some(SIGXCPU), "{mode:?}: {r:?}");
    }
}

#[test]
fn wall_clock_limit_is_a_timeout() {
    for mode in modes() {
        let p = SandboxPolicy {
            wall_timeout: Duration::from_millis(1500),
            ..policy(mode)
        };
        let start = Instant::now();
        let r = run(
            &p,
            IMPORT_ONLY,
            "import time\nprint('sleeping', flush=True)\ntime.sleep(60)\n",
        );
        assert_eq!(r.result, CheckResult::Timeout, "{mode:?}: {r:?}");
        assert_eq!(r.signal, Some(SIGKILL));
        assert_eq!(r.stdout_tail, "sleeping\n");
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }
}

#[test]
fn huge_output_keeps_only_the_tail() {
    let solution = "import sys\nchunk = b'x' * (1 << 20)\nfor _ in range(100):\n    \
                        sys.stdout.buffer.write(chunk)\nsys.stdout.buffer.write(b'\\nEND\\n')\n\
                        sys.stderr.write('e' * 200000 + 'DONE')\n";
    for mode in modes() {
        let p = policy(mode);
        let r = run(&p, IMPORT_ONLY, solution);
        assert_eq!(
            r.result,
            CheckResult::Pass,
            "{mode:?}: {:?}",
            r.stderr_tail.get(..200)
        );
        assert!(r.stdout_tail.len() <= p.output_cap_bytes);
        assert!(r.stdout_tail.ends_with("xxx\nEND\n"));
        assert_eq!(r.stdout_bytes, 100 * (1 << 20) + 5);
        assert!(r.stderr_tail.len() <= p.output_cap_bytes);
        assert!(r.stderr_tail.ends_with("eeeDONE"));
        assert_eq!(r.stderr_bytes, 200_004);
    }
}

#[test]
fn file_size_limit_stops_a_gigabyte_write() {
    let solution = "chunk = b'\\0' * (1 << 20)\nwith open('big.bin', 'wb') as f:\n    \
                        for _ in range(1024):\n        f.write(chunk)\n";
    for mode in modes() {
        let p = SandboxPolicy {
            file_size_bytes: 4 << 20,
            ..policy(mode)
        };
        let r = run(&p, IMPORT_ONLY, solution);
        assert_eq!(r.result, CheckResult::Fail, "{mode:?}: {r:?}");
        assert!(r.stderr_tail.contains("File too large"), "{mode:?}: {r:?}");
    }
}

#[test]
fn secret_in_parent_env_does_not_reach_child() {
    let helper = format!("{}::env_helper", module_path!().split_once("::").unwrap().1);
    for mode in modes() {
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                &helper,
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("JUDGE_TEST_SECRET_KEY", "sk-test-judge-7f3a9c")
            .env("JUDGE_TEST_HELPER_MODE", format!("{mode:?}"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode:?}:\n{stdout}\n{stderr}");
        assert!(
            stdout.contains("1 passed"),
            "{mode:?} helper did not run:\n{stdout}"
        );
    }
}

/// Run by `secret_in_parent_env_does_not_reach_child` in a child process
/// whose environment carries the secret (so no `set_var` is needed here).
#[test]
#[ignore = "helper: run by secret_in_parent_env_does_not_reach_child"]
fn env_helper() {
    let Ok(secret) = std::env::var("JUDGE_TEST_SECRET_KEY") else {
        eprintln!("env_helper does nothing unless started by its parent test");
        return;
    };
    let mode = match std::env::var("JUDGE_TEST_HELPER_MODE").unwrap().as_str() {
        "Bwrap" => SandboxMode::Bwrap,
        _ => SandboxMode::None,
    };
    // The code looks everywhere it could: its environ, and its parents'.
    let solution = r#"import os
print(sorted(os.environ.items()))
pid = os.getpid()
while pid > 1:
    try:
        print(pid, open('/proc/%d/environ' % pid, 'rb').read())
    except OSError as e:
        print(pid, 'unreadable', e)
    try:
        pid = int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])
    except OSError:
        break
"#;
    let r = run(&policy(mode), IMPORT_ONLY, solution);
    assert_eq!(r.result, CheckResult::Pass, "{r:?}");
    assert!(r.stdout_tail.contains("PYTHONHASHSEED"), "{r:?}");
    let can_read_parent = mode == SandboxMode::None && !is_root();
    if can_read_parent {
        eprintln!("plain mode, not root: the harness's /proc/<pid>/environ is readable");
    } else {
        assert!(
            !r.stdout_tail.contains(&secret),
            "secret leaked: {}",
            r.stdout_tail
        );
        assert!(!r.stderr_tail.contains(&secret));
    }
    let env_line = r.stdout_tail.lines().next().unwrap();
    assert!(!env_line.contains(&secret));
    assert!(!env_line.contains("JUDGE_TEST"), "{env_line}");
}

#[test]
fn nproc_limit_is_enforced() {
    let solution = "import os, time\nn = 0\nfor _ in range(200):\n    try:\n        \
                        pid = os.fork()\n    except OSError:\n        break\n    if pid == 0:\n        \
                        time.sleep(2)\n        os._exit(0)\n    n += 1\nprint('forked', n)\n";
    for mode in modes() {
        if mode == SandboxMode::None && !is_root() {
            continue; // not set in plain mode unless the code runs as its own uid
        }
        let p = SandboxPolicy {
            max_processes: 20,
            ..policy(mode)
        };
        let r = run(&p, IMPORT_ONLY, solution);
        assert_eq!(r.result, CheckResult::Pass, "{mode:?}: {r:?}");
        let n: u32 = r
            .stdout_tail
            .trim()
            .strip_prefix("forked ")
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..20).contains(&n), "{mode:?}: forked {n}");
    }
}

#[test]
fn fork_bomb_is_contained() {
    for mode in modes() {
        if mode == SandboxMode::None && !is_root() {
            continue; // no RLIMIT_NPROC: would be a real fork bomb
        }
        let tag = marker("forkbomb");
        let solution = format!(
            "import os, sys\nos.execv(sys.executable, [sys.executable, '-c', \
                 'import os\\nwhile True:\\n    try:\\n        os.fork()\\n    \
                 except OSError:\\n        pass\\n', '{tag}'])\n"
        );
        let p = SandboxPolicy {
            cpu_secs: 2,
            max_processes: 32,
            wall_timeout: Duration::from_secs(2),
            ..policy(mode)
        };
        let start = Instant::now();
        let r = run(&p, IMPORT_ONLY, &solution);
        assert!(
            start.elapsed() < Duration::from_secs(6),
            "{:?}",
            start.elapsed()
        );
        assert!(
            matches!(r.result, CheckResult::Timeout | CheckResult::Fail),
            "{mode:?}: {r:?}"
        );
        assert_no_processes(&tag);
    }
}

#[test]
fn background_children_die_with_the_check() {
    // bwrap: the pid namespace goes; plain: the process group is killed,
    // and a setsid'd child cannot hold the run open.
    for mode in modes() {
        let tag = marker("daemon");
        let solution = format!(
            "import subprocess, sys\n\
                 subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)', '{tag}'])\n\
                 subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3)', '{tag}-s'],\n\
                 \x20   start_new_session=True)\nprint('spawned')\n"
        );
        let start = Instant::now();
        let r = run(&policy(mode), IMPORT_ONLY, &solution);
        assert_eq!(r.result, CheckResult::Pass, "{mode:?}: {r:?}");
        assert!(
            start.elapsed() < Duration::from_secs(6),
            "{:?}",
            start.elapsed()
        );
        if mode == SandboxMode::Bwrap {
            assert_no_processes(&tag);
        } else {
            // The same-group child is killed; the setsid one outlives the
            // run (documented) and exits on its own after 3 s.
            let deadline = Instant::now() + Duration::from_secs(3);
            while !processes_with(&format!("{tag}\0")).is_empty() {
                assert!(Instant::now() < deadline, "group child survived");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

#[test]
fn read_only_leftovers_are_removed() {
    let solution = "import os\nos.makedirs('ro/sub')\nopen('ro/sub/f', 'w').write('x')\n\
                        os.chmod('ro/sub', 0o500)\nos.chmod('ro', 0o500)\nos.chmod('.', 0o500)\n";
    for mode in modes() {
        let r = run(&policy(mode), IMPORT_ONLY, solution);
        assert_eq!(r.result, CheckResult::Pass, "{mode:?}: {r:?}");
    }
}

// ---- bwrap-only containment -------------------------------------------

#[test]
fn bwrap_no_network_even_to_host_loopback() {
    if !bwrap_ok() {
        return;
    }
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let solution = format!(
        "import socket\ns = socket.create_connection(('127.0.0.1', {port}), timeout=3)\n\
             print('CONNECTED')\n"
    );
    let r = run(&policy(SandboxMode::Bwrap), IMPORT_ONLY, &solution);
    assert_eq!(r.result, CheckResult::Fail, "{r:?}");
    assert!(!r.stdout_tail.contains("CONNECTED"));
    assert!(
        r.stderr_tail.contains("Connection refused")
            || r.stderr_tail.contains("Network is unreachable"),
        "{r:?}"
    );
    match listener.accept() {
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
        other => panic!("the host listener got something: {other:?}"),
    }
}

#[test]
fn bwrap_writes_outside_never_reach_the_host() {
    if !bwrap_ok() {
        return;
    }
    let tag = marker("escape");
    let base = base();
    let here = std::env::current_dir().unwrap();
    let targets: Vec<PathBuf> = [
        PathBuf::from("/tmp"),
        PathBuf::from("/root"),
        PathBuf::from("/work"),
        PathBuf::from("/home"),
        PathBuf::from("/usr"),
        PathBuf::from("/etc"),
        std::env::temp_dir(),
        base.path().to_path_buf(),
        here,
    ]
    .into_iter()
    .map(|d| d.join(&tag))
    .collect();
    let list: Vec<String> = targets
        .iter()
        .map(|t| format!("{:?}", t.display().to_string()))
        .collect();
    let solution = format!(
        "import os\nfor p in [{}]:\n    try:\n        os.makedirs(os.path.dirname(p), exist_ok=True)\n        \
             open(p, 'w').write('pwned')\n        print('wrote', p)\n    except OSError as e:\n        \
             print('blocked', p, e)\n\
             for p in ['/root', '/home', '/work', '/var', '/etc/shadow', '/etc/hostname', '/sys']:\n    \
             print('visible', p, os.path.exists(p))\n\
             print('check.py visible', os.path.exists('check.py'))\n",
        list.join(", ")
    );
    let r = run_check_in(
        &policy(SandboxMode::Bwrap),
        base.path(),
        IMPORT_ONLY,
        &solution,
    )
    .unwrap();
    let mut leaked = Vec::new();
    for t in &targets {
        if t.exists() {
            leaked.push(t.clone());
            let _ = std::fs::remove_file(t);
        }
    }
    assert!(leaked.is_empty(), "escaped writes: {leaked:?}\n{r:?}");
    assert_eq!(r.result, CheckResult::Pass, "{r:?}");
    for p in [
        "/root",
        "/home",
        "/work",
        "/var",
        "/etc/shadow",
        "/etc/hostname",
        "/sys",
    ] {
        assert!(
            r.stdout_tail.contains(&format!("visible {p} False")),
            "{p}: {}",
            r.stdout_tail
        );
    }
    assert!(
        r.stdout_tail.contains("check.py visible False"),
        "the hidden test is not a file the solution can read: {}",
        r.stdout_tail
    );
    assert!(std::fs::read_dir(base.path()).unwrap().next().is_none());
}

#[test]
fn bwrap_tmpfs_is_size_capped() {
    if !bwrap_ok() {
        return;
    }
    let p = SandboxPolicy {
        tmpfs_bytes: 8 << 20,
        file_size_bytes: 2 << 20,
        ..policy(SandboxMode::Bwrap)
    };
    let solution = "chunk = b'\\0' * ((2 << 20) - 1)\nfor i in range(100):\n    \
                        open('/tmp/f%d' % i, 'wb').write(chunk)\n";
    let r = run(&p, IMPORT_ONLY, solution);
    assert_eq!(r.result, CheckResult::Fail, "{r:?}");
    assert!(r.stderr_tail.contains("No space left on device"), "{r:?}");
}

#[test]
fn bwrap_runs_unprivileged_without_nested_namespaces() {
    if !bwrap_ok() {
        return;
    }
    let solution = "import os, subprocess\nprint('uid', os.getuid(), os.geteuid())\n\
                        print('caps', [l for l in open('/proc/self/status') if l.startswith('CapEff')])\n\
                        r = subprocess.run(['unshare', '--user', 'true'], capture_output=True)\n\
                        print('unshare', r.returncode)\nprint('pids', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))\n";
    let r = run(&policy(SandboxMode::Bwrap), IMPORT_ONLY, solution);
    assert_eq!(r.result, CheckResult::Pass, "{r:?}");
    assert!(
        r.stdout_tail.contains("uid 65534 65534"),
        "{}",
        r.stdout_tail
    );
    assert!(
        r.stdout_tail.contains("CapEff:\\t0000000000000000"),
        "{}",
        r.stdout_tail
    );
    assert!(!r.stdout_tail.contains("unshare 0"), "{}", r.stdout_tail);
    // Only the sandbox's own processes are visible (bwrap init, python, child).
    let pids = r
        .stdout_tail
        .lines()
        .find(|l| l.starts_with("pids"))
        .unwrap();
    assert!(pids.len() < 40, "{pids}");
}

#[test]
fn exiting_with_status_zero_is_not_a_pass() {
    let check = "from solution import add\nassert add(2, 3) == 5\nprint('ok')\n";
    let cases = [
        (
            "module-level sys.exit",
            "import sys\ndef add(a, b):\n    return a + b\nsys.exit(0)\n",
        ),
        (
            "module-level exit(main())",
            "def main():\n    return 0\ndef add(a, b):\n    return 0\nraise SystemExit(main())\n",
        ),
        ("os._exit at import", "import os\nos._exit(0)\n"),
        (
            "sys.exit inside the function",
            "import sys\ndef add(a, b):\n    sys.exit(0)\n",
        ),
    ];
    for mode in modes() {
        let p = policy(mode);
        for (name, solution) in cases {
            let r = run(&p, check, solution);
            assert_eq!(r.result, CheckResult::Fail, "{mode:?} {name}: {r:?}");
            assert!(
                r.stderr_tail.contains("judge:"),
                "{mode:?} {name}: the reason is kept: {r:?}"
            );
        }
        let explicit = run(&p, "import sys\nimport solution\nsys.exit(3)\n", "x = 1\n");
        assert_eq!(
            (explicit.result, explicit.exit_code),
            (CheckResult::Fail, Some(3)),
            "{mode:?}"
        );
        let fine = run(&p, check, "def add(a, b):\n    return a + b\n");
        assert_eq!(fine.result, CheckResult::Pass, "{mode:?}: {fine:?}");
        assert_eq!(
            fine.stderr_tail, "",
            "{mode:?}: the finish marker is stripped"
        );
    }
}

#[test]
fn work_dirs_of_dead_processes_are_swept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let dead = child.id();
    child.wait().expect("wait");
    let stale = dir.path().join(format!("judge-check-{dead}-0-000000001"));
    std::fs::create_dir_all(stale.join("sub")).expect("mkdir");
    std::fs::write(stale.join("sub/solution.py"), "x").expect("write");
    let mine = dir
        .path()
        .join(format!("judge-check-{}-0-000000002", std::process::id()));
    let init = dir.path().join("judge-check-1-0-000000003");
    let other = dir.path().join("judge-checker-notes");
    for d in [&mine, &init, &other] {
        std::fs::create_dir(d).expect("mkdir");
    }
    process::sweep_stale(dir.path());
    assert!(!stale.exists(), "a dead process's directory is removed");
    for d in [&mine, &init, &other] {
        assert!(d.exists(), "{} stays", d.display());
    }
}

/// Solutions written to defeat an in-process check (found by a review): each must fail.
#[test]
fn forged_passes_fail() {
    let check = "import sys\nfrom solution import add\nif add(2, 3) != 5:\n    print('FAIL add')\n    sys.exit(1)\nprint('ok')\n";
    let wrong = "def add(a, b):\n    return a - b\n";
    let cases = [
        (
            "failure calls made harmless",
            "import sys as _s, os as _o, builtins as _b\n_s.exit = lambda *a, **k: None\n_real = _o._exit\n_o._exit = lambda c=0: _real(0) if c == 0 else None\n_p = _b.print\n_b.print = lambda *a, **k: None if (a and str(a[0]).startswith('FAIL')) else _p(*a, **k)\n",
        ),
        (
            "the marker read off the command line",
            "import os, re\nsrc = open('/proc/self/cmdline', 'rb').read().decode('latin-1')\nfor m in re.findall(r\"b'((?:\\\\x[0-9a-f]{2})+)'\", src):\n    os.write(2, bytes.fromhex(m.replace('\\\\x', '')) + b'\\n')\nos.write(2, b'\\x1ejudge-sandbox:finished\\x1e\\n')\nos._exit(0)\n",
        ),
        (
            "a self-kill instead of the failure",
            "import sys, os, signal\n_real = os._exit\ndef _die(c=0):\n    if c in (0, None):\n        _real(0)\n    os.kill(os.getpid(), signal.SIGKILL)\nsys.exit = _die\n",
        ),
        (
            "an exit status that reads as a signal",
            "raise SystemExit(134)\n",
        ),
        (
            "a trace function",
            "import sys\nsys.settrace(lambda *a: None)\n",
        ),
    ];
    for mode in modes() {
        let p = policy(mode);
        for (name, prefix) in cases {
            let r = run(&p, check, &format!("{prefix}{wrong}"));
            assert_eq!(r.result, CheckResult::Fail, "{mode:?} {name}: {r:?}");
        }
        // The honest version of each still passes.
        let fine = run(&p, check, "def add(a, b):\n    return a + b\n");
        assert_eq!(fine.result, CheckResult::Pass, "{mode:?}: {fine:?}");
    }
}

/// `/dev/shm` is capped like `/tmp`, and `/dev` is read-only: a check cannot fill the host's
/// memory through either.
#[test]
fn bwrap_dev_and_shm_are_capped() {
    if !bwrap_ok() {
        return;
    }
    let p = policy(SandboxMode::Bwrap);
    let check = "import solution\n";
    // Many files under the 16 MiB file-size limit, 200 MiB in all.
    let solution = "blk = b'\\0' * (1 << 20)\ntry:\n    for i in range(25):\n        with open('/dev/shm/f%d' % i, 'wb') as f:\n            for _ in range(8):\n                f.write(blk)\n    raise SystemExit('wrote 200 MiB to /dev/shm')\nexcept OSError:\n    pass\ntry:\n    open('/dev/evil', 'wb').write(b'x')\n    raise SystemExit('wrote /dev/evil')\nexcept OSError:\n    pass\n";
    let r = run(&p, check, solution);
    assert_eq!(r.result, CheckResult::Pass, "{r:?}");
}

/// The tamper check looks at the end state only: a check that captures output or patches and
/// restores what it patched still passes.
#[test]
fn checks_that_restore_what_they_patch_pass() {
    let check = "import builtins, contextlib, io, sys\nfrom solution import shout\nbuf = io.StringIO()\nwith contextlib.redirect_stdout(buf):\n    shout('hi')\nassert buf.getvalue() == 'HI\\n', buf.getvalue()\nseen = []\nreal = builtins.print\nbuiltins.print = lambda *a, **k: seen.append(a)\ntry:\n    shout('x')\nfinally:\n    builtins.print = real\nassert seen == [('X',)], seen\nprint('ok')\n";
    let solution = "def shout(s):\n    print(s.upper())\n";
    for mode in modes() {
        let r = run(&policy(mode), check, solution);
        assert_eq!(r.result, CheckResult::Pass, "{mode:?}: {r:?}");
    }
}

/// The check reaches the runner on stdin: one far larger than a pipe's buffer arrives whole,
/// and its traceback still shows its lines.
#[test]
fn a_large_check_arrives_whole() {
    let padding = format!("# {}\n", "x".repeat(100)).repeat(3000);
    let check = format!(
        "{padding}from solution import add\nassert add(2, 3) == 5, 'add is wrong'\nprint('ok')\n"
    );
    for mode in modes() {
        let p = policy(mode);
        let fine = run(&p, &check, "def add(a, b):\n    return a + b\n");
        assert_eq!(fine.result, CheckResult::Pass, "{mode:?}: {fine:?}");
        let wrong = run(&p, &check, "def add(a, b):\n    return a - b\n");
        assert_eq!(wrong.result, CheckResult::Fail, "{mode:?}: {wrong:?}");
        assert!(
            wrong
                .stderr_tail
                .contains("assert add(2, 3) == 5, 'add is wrong'"),
            "{mode:?}: the traceback quotes the check: {wrong:?}"
        );
    }
}

/// The check runs as a real `__main__` module: what it defines can be pickled, and
/// dataclasses with postponed annotations resolve.
#[test]
fn the_check_is_a_real_main_module() {
    let check = "from __future__ import annotations\nimport dataclasses, pickle, sys\nfrom solution import double\n@dataclasses.dataclass\nclass Case:\n    x: int\n    want: int\ncase = pickle.loads(pickle.dumps(Case(2, 4)))\nassert double(case.x) == case.want\nassert sys.modules['__main__'].Case is Case\nprint('ok')\n";
    for mode in modes() {
        let r = run(&policy(mode), check, "def double(x):\n    return 2 * x\n");
        assert_eq!(r.result, CheckResult::Pass, "{mode:?}: {r:?}");
    }
}

/// The runner's markers are cut out of the stream wherever they fall: split over chunks, in the
/// middle of other output, and only the first one found counts.
#[test]
fn capture_cuts_a_marker_anywhere() {
    let marker = b"\x1eEND:abc\x1e\n".to_vec();
    let other = b"\x1eBAD:abc\x1e\n".to_vec();
    let stream = [&b"before\n"[..], &marker, b"after\n"].concat();
    // Every way of cutting the stream into two or three chunks.
    for i in 0..=stream.len() {
        for j in i..=stream.len() {
            let m = Mutex::new(Capture::cutting(vec![marker.clone(), other.clone()]));
            for part in [&stream[..i], &stream[i..j], &stream[j..]] {
                lock(&m).push(part, 100);
            }
            assert_eq!(lock(&m).found, Some(0), "split at {i}, {j}");
            let s = snapshot(&m, 100, 0);
            assert_eq!(s.text, "before\nafter\n", "split at {i}, {j}");
            assert_eq!(s.total, 13);
        }
    }
    // No marker: every byte is kept, including a held-back partial marker at the end.
    let m = Mutex::new(Capture::cutting(vec![marker.clone()]));
    lock(&m).push(b"text \x1eEND:ab", 100);
    assert_eq!(lock(&m).found, None);
    assert_eq!(snapshot(&m, 100, 0).text, "text \x1eEND:ab");
    assert_eq!(snapshot(&m, 100, 0).total, 12);
    // The second marker; a later copy of the first is the stream's own text.
    let m = Mutex::new(Capture::cutting(vec![marker.clone(), other.clone()]));
    lock(&m).push(&[&b"x"[..], &other, &marker].concat(), 100);
    assert_eq!(lock(&m).found, Some(1));
    assert_eq!(
        snapshot(&m, 100, 0).text.as_bytes(),
        [&b"x"[..], &marker].concat()
    );
}

/// A check.py saved with a byte order mark or Windows line endings runs as `python3 check.py`
/// runs it, and its tracebacks quote clean lines.
#[test]
fn a_check_with_a_bom_or_crlf_runs() {
    let lines =
        "from solution import add\r\nassert add(2, 3) == 5, 'add is wrong'\r\nprint('ok')\r\n";
    for mode in modes() {
        let p = policy(mode);
        for check in [
            format!("\u{feff}{lines}"),
            lines.to_string(),
            lines.replace("\r\n", "\r"),
        ] {
            let fine = run(&p, &check, "def add(a, b):\n    return a + b\n");
            assert_eq!(
                fine.result,
                CheckResult::Pass,
                "{mode:?} {check:?}: {fine:?}"
            );
            let wrong = run(&p, &check, "def add(a, b):\n    return a - b\n");
            assert_eq!(wrong.result, CheckResult::Fail, "{mode:?}: {wrong:?}");
            assert!(
                wrong
                    .stderr_tail
                    .contains("    assert add(2, 3) == 5, 'add is wrong'\n"),
                "{mode:?}: {wrong:?}"
            );
            assert!(!wrong.stderr_tail.contains('\r'), "{mode:?}: {wrong:?}");
        }
    }
}

/// A correct solution whose daemon thread keeps writing to stderr after the check has run to
/// its end passes, every time, and the finish marker never shows in the tail.
#[test]
fn output_after_the_finish_marker_does_not_fail_a_pass() {
    let solution = "import sys, threading, time\ndef _chatter():\n    while True:\n        sys.stderr.write('tick\\n')\n        sys.stderr.flush()\n        time.sleep(0.0001)\nthreading.Thread(target=_chatter, daemon=True).start()\ntime.sleep(0.01)\ndef add(a, b):\n    return a + b\n";
    let check = "from solution import add\nassert add(2, 3) == 5\n";
    for mode in modes() {
        let p = policy(mode);
        for _ in 0..10 {
            let r = run(&p, check, solution);
            assert_eq!(r.result, CheckResult::Pass, "{mode:?}: {r:?}");
            assert!(!r.stderr_tail.contains("judge-sandbox"), "{mode:?}: {r:?}");
            assert!(!r.stderr_tail.contains("judge:"), "{mode:?}: {r:?}");
        }
    }
}

/// A check.py that does not compile gives no verdict on any answer: `error`, with its
/// SyntaxError, never `fail`.
#[test]
fn a_check_that_does_not_compile_is_an_error() {
    for mode in modes() {
        let p = policy(mode);
        for solution in ["def add(a, b):\n    return a + b\n", "syntax error here\n"] {
            let r = run(
                &p,
                "from solution import add\nassert add(2, 3) == 5 +\n",
                solution,
            );
            assert_eq!(r.result, CheckResult::Error, "{mode:?}: {r:?}");
            assert!(r.stderr_tail.contains("SyntaxError"), "{mode:?}: {r:?}");
            assert!(
                r.stderr_tail.contains(INVALID_CHECK_NOTE),
                "{mode:?}: {r:?}"
            );
            assert!(!r.stderr_tail.contains("judge-sandbox"), "{mode:?}: {r:?}");
        }
        // A syntax error in the solution is still the solution's failure.
        let r = run(&p, "from solution import add\n", "syntax error here\n");
        assert_eq!(r.result, CheckResult::Fail, "{mode:?}: {r:?}");
    }
}

/// A check may install its own `sys.excepthook` (it has no bearing on the verdict).
#[test]
fn a_check_may_set_its_own_excepthook() {
    let check = "import sys\nsys.excepthook = lambda *a: None\nfrom solution import add\nassert add(2, 3) == 5\n";
    for mode in modes() {
        let p = policy(mode);
        let fine = run(&p, check, "def add(a, b):\n    return a + b\n");
        assert_eq!(fine.result, CheckResult::Pass, "{mode:?}: {fine:?}");
        let wrong = run(&p, check, "def add(a, b):\n    return a - b\n");
        assert_eq!(wrong.result, CheckResult::Fail, "{mode:?}: {wrong:?}");
    }
}

/// The usual ways for a test file to end pass when the check itself ends with status 0, and
/// fail on a wrong answer; a `SystemExit(0)` that came through the solution's code still fails.
#[test]
fn a_check_may_end_itself_with_status_zero() {
    let checks = [
        (
            "unittest.main()",
            "import unittest\nfrom solution import add\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(add(2, 3), 5)\nif __name__ == '__main__':\n    unittest.main()\n",
        ),
        (
            "unittest.main() after setting data on unittest's classes",
            "import unittest\nfrom solution import add\nunittest.TestLoader.sortTestMethodsUsing = None\nunittest.TestCase.maxDiff = None\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(add(2, 3), 5)\nunittest.main()\n",
        ),
        (
            "doctest's failure count",
            "\"\"\"\n>>> from solution import add\n>>> add(2, 3)\n5\n\"\"\"\nimport doctest, sys\nif __name__ == '__main__':\n    sys.exit(doctest.testmod().failed)\n",
        ),
        (
            "sys.exit(main())",
            "import sys\nfrom solution import add\ndef main():\n    return 0 if add(2, 3) == 5 else 1\nsys.exit(main())\n",
        ),
        (
            "a plain sys.exit(0) at the end",
            "import sys\nfrom solution import add\nassert add(2, 3) == 5\nsys.exit(0)\n",
        ),
    ];
    let right = "def add(a, b):\n    return a + b\n";
    let wrong = "def add(a, b):\n    return a - b\n";
    let sneaky = [
        (
            "exit at import",
            "import sys\ndef add(a, b):\n    return a - b\nsys.exit(0)\n",
        ),
        (
            "exit in the function",
            "import sys\ndef add(a, b):\n    sys.exit(0)\n",
        ),
        (
            "unittest.main at import",
            "import unittest\nclass T(unittest.TestCase):\n    def test(self):\n        pass\ndef add(a, b):\n    return a - b\nunittest.main(module=__name__, argv=['x'])\n",
        ),
        (
            "an exit compiled into the check's namespace",
            "import __main__\ndef add(a, b):\n    exec('raise SystemExit(0)', __main__.__dict__)\n",
        ),
    ];
    for mode in modes() {
        let p = policy(mode);
        for (name, check) in checks {
            let r = run(&p, check, right);
            assert_eq!(r.result, CheckResult::Pass, "{mode:?} {name}: {r:?}");
            let r = run(&p, check, wrong);
            assert_eq!(r.result, CheckResult::Fail, "{mode:?} {name}: {r:?}");
            for (how, solution) in sneaky {
                let r = run(&p, check, solution);
                assert_eq!(r.result, CheckResult::Fail, "{mode:?} {name}, {how}: {r:?}");
            }
        }
    }
}

/// A coding cookie is honoured as `python3 check.py` honours it.
#[test]
fn a_check_is_decoded_as_python_decodes_a_file() {
    let check =
        "# -*- coding: latin-1 -*-\nS = \"\u{df}\"\nassert len(S) == 2, S\nimport solution\n";
    for mode in modes() {
        let r = run(&policy(mode), check, "x = 1\n");
        assert_eq!(r.result, CheckResult::Pass, "{mode:?}: {r:?}");
    }
}

/// Whose decision a `SystemExit(0)` was (found by a review): only the check's own code, or
/// unittest's and site's exit functions called from it, may end a check with status 0.
#[test]
fn only_the_check_decides_an_early_exit() {
    let cases: [(&str, &str, &str, CheckResult); 25] = [
        (
            "argparse exits for the solution's parser",
            "from solution import build_parser\na = build_parser().parse_args(['-v', 'in.txt'])\nassert a.verbose == 1\n",
            "import argparse\ndef build_parser():\n    p = argparse.ArgumentParser(prog='tool')\n    p.add_argument('-v', '--version', action='version', version='tool 1.0')\n    p.add_argument('path')\n    return p\n",
            CheckResult::Fail,
        ),
        (
            "a worker process's exit comes back through concurrent.futures",
            "from concurrent.futures import ProcessPoolExecutor\nimport solution\nwith ProcessPoolExecutor(1) as ex:\n    r = ex.submit(solution.parse_port, '8080').result(timeout=20)\nassert r == 8080\n",
            "import sys\ndef parse_port(s):\n    port = int(s)\n    if port > 1000:\n        sys.exit(0)\n    return port\n",
            CheckResult::Fail,
        ),
        (
            "the check's exit called through the solution's decorator",
            "import sys\nfrom solution import logged\n@logged\ndef main():\n    sys.exit(0)\nmain()\n",
            "import functools\ndef logged(f):\n    @functools.wraps(f)\n    def w(*a, **k):\n        return f(*a, **k)\n    return w\n",
            CheckResult::Pass,
        ),
        (
            "exit() in the check",
            "import solution\nassert solution.x == 1\nexit()\n",
            "x = 1\n",
            CheckResult::Pass,
        ),
        (
            "exit() in the solution",
            "import solution\nassert solution.x == 2\n",
            "x = 1\nexit()\n",
            CheckResult::Fail,
        ),
        (
            "an IntEnum status 0 is 0, as Python's own exit takes it",
            "import enum, sys, solution\nclass Status(enum.IntEnum):\n    OK = 0\nassert solution.x == 1\nsys.exit(Status.OK)\n",
            "x = 1\n",
            CheckResult::Pass,
        ),
        (
            "a status is its value, not what its methods claim",
            "import sys, solution\nsys.exit(solution.failures())\n",
            "class Z(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\ndef failures():\n    return Z(3)\n",
            CheckResult::Fail,
        ),
        (
            "a float status is not 0",
            "import sys, solution\nsys.exit(0.0)\n",
            "x = 1\n",
            CheckResult::Fail,
        ),
        // A slot of the solution's object set to an exit function raises SystemExit from C,
        // with the check's frame innermost but not at an exit of its own (found by a review:
        // the first beat every shipped check).
        (
            "__repr__ = sys.exit under the check's %r",
            "import solution\nv = solution.f()\nif v != 5:\n    raise AssertionError('got %r' % (v,))\n",
            "import sys\nclass R(int):\n    __repr__ = sys.exit\ndef f():\n    return R(0)\n",
            CheckResult::Fail,
        ),
        (
            "__iter__ = sys.exit under the check's list()",
            "import solution\nassert list(solution.items()) == [1]\n",
            "import sys\nclass I(int):\n    __iter__ = sys.exit\ndef items():\n    return I(0)\n",
            CheckResult::Fail,
        ),
        (
            "__eq__ = staticmethod(sys.exit) under the check's ==",
            "import solution\nassert solution.f() == 0\n",
            "import sys\nclass E:\n    __eq__ = staticmethod(sys.exit)\ndef f():\n    return E()\n",
            CheckResult::Fail,
        ),
        // The check's exits under names it gives them pass; the solution's never end it
        // (found by a second review).
        (
            "unittest.main imported under another name",
            "import unittest, solution\nfrom unittest import main as run_tests\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(solution.x, 1)\nrun_tests()\n",
            "x = 1\n",
            CheckResult::Pass,
        ),
        (
            "sys.exit kept under another name",
            "import sys, solution\ndie = sys.exit\nassert solution.x == 1\ndie(0)\n",
            "x = 1\n",
            CheckResult::Pass,
        ),
        (
            "the solution's main is sys.exit",
            "import solution\nsolution.main()\nassert solution.x == 1\n",
            "import sys\nmain = sys.exit\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "sys.warnoptions whose len() is sys.exit ends unittest.main from its own frame",
            "import unittest, solution\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(solution.x, 1)\nunittest.main()\n",
            "import sys\nclass W(list):\n    __len__ = staticmethod(sys.exit)\nsys.warnoptions = W()\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "a collector finalizer rewrites the check's SystemExit(1) to 0",
            "import solution\nif solution.x != 1:\n    raise SystemExit(1)\n",
            "import gc\nclass Arm:\n    def __init__(self):\n        self.me = self\n    def __del__(self):\n        for o in gc.get_objects():\n            if type(o) is SystemExit and o.code not in (0, None):\n                o.code = 0\n        Arm()\nArm()\ngc.set_threshold(1)\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "the solution makes unittest's assertEqual a no-op",
            "import unittest, solution\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(solution.x, 1)\nunittest.main()\n",
            "import unittest\nunittest.TestCase.assertEqual = lambda *a, **k: None\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "assertEqual's code swapped, the function object kept",
            "import unittest, solution\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(solution.x, 1)\nunittest.main()\n",
            "import unittest\nunittest.TestCase.assertEqual.__code__ = (lambda self, a, b, msg=None: None).__code__\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "assertEqual replaced by an object that claims to equal it and carries its code",
            "import unittest, solution\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(solution.x, 1)\nunittest.main()\n",
            "import unittest\no = unittest.TestCase.assertEqual\nclass Liar:\n    __code__, __defaults__, __kwdefaults__ = o.__code__, o.__defaults__, o.__kwdefaults__\n    def __eq__(s, other):\n        return True\n    def __call__(s, *a, **k):\n        return None\nunittest.TestCase.assertEqual = Liar()\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "the runner's own zip() replaced to hide what was replaced",
            "import unittest, solution\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(solution.x, 1)\nunittest.main()\n",
            "import unittest, builtins\nunittest.TestCase.assertEqual = lambda *a, **k: None\nbuiltins.zip = lambda *a: iter(())\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "gc.get_threshold rebound to hide a lowered threshold",
            "import solution\nif solution.x != 1:\n    raise SystemExit(1)\n",
            "import gc\nb = gc.get_threshold()\ngc.set_threshold(1)\ngc.get_threshold = lambda: b\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "unittest's main imported after `from solution import *` is the check's",
            "from solution import *\nimport unittest\nfrom unittest import main\nclass T(unittest.TestCase):\n    def test(self):\n        self.assertEqual(x, 1)\nmain()\n",
            "x = 1\n",
            CheckResult::Pass,
        ),
        (
            "after `from solution import *`, main() is the solution's",
            "import sys\nfrom solution import *\nmain()\nassert x == 1\n",
            "from sys import exit as main\nx = 2\n",
            CheckResult::Fail,
        ),
        (
            "a correct solution that turns the collector off for speed",
            "import solution\nassert solution.x == 1\n",
            "import gc\ngc.disable()\nx = 1\n",
            CheckResult::Pass,
        ),
        (
            "a child the check forked cannot finish for it",
            "import os, sys, solution\nif os.fork() == 0:\n    sys.exit(0)\nos.wait()\nassert solution.add(1, 2) == 3\n",
            "import os\ndef add(a, b):\n    os._exit(0)\n",
            CheckResult::Fail,
        ),
    ];
    for mode in modes() {
        let mut p = policy(mode);
        p.wall_timeout = Duration::from_secs(30);
        for (name, check, solution, want) in cases {
            let r = run(&p, check, solution);
            assert_eq!(r.result, want, "{mode:?} {name}: {r:?}");
        }
    }
}

/// What a check printed to the original stdout before it exits is kept, as under `python3`.
#[test]
fn the_original_streams_are_flushed() {
    let check = "import sys, io, solution\nout = sys.stdout\nsys.stdout = io.StringIO()\nout.write('FAIL: reason\\n')\nsys.exit(1)\n";
    for mode in modes() {
        let r = run(&policy(mode), check, "x = 1\n");
        assert_eq!(r.result, CheckResult::Fail, "{mode:?}: {r:?}");
        assert_eq!(r.stdout_tail, "FAIL: reason\n", "{mode:?}: {r:?}");
    }
}

/// A check may hand the solution's functions to a process pool under every start method
/// (`forkserver` is Linux's default from Python 3.14): the children import `solution`, and
/// find no check file to re-import, as there is none.
#[test]
fn a_pool_of_the_solutions_functions_works_under_every_start_method() {
    let solution = "def square(x):\n    return x * x\n";
    for method in ["fork", "spawn", "forkserver"] {
        let check = format!(
            "import multiprocessing as mp, solution\nwith mp.get_context('{method}').Pool(2) as pool:\n    assert pool.map(solution.square, [2, 3]) == [4, 9]\n"
        );
        for mode in modes() {
            let mut p = policy(mode);
            p.wall_timeout = Duration::from_secs(30);
            let r = run(&p, &check, solution);
            assert_eq!(r.result, CheckResult::Pass, "{method} {mode:?}: {r:?}");
        }
    }
}
