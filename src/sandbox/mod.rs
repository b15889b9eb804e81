//! Running untrusted, model-written Python against a hidden `check.py`, contained.
//!
//! # What a check run does
//!
//! [`run_check`] makes a fresh host directory (under [`std::env::temp_dir`],
//! removed by a drop guard on every path out, panics included), writes
//! `solution.py` into it and runs the check with the solution importable from
//! the working directory; `check.py` itself reaches the runner on stdin (after
//! the finish marker's nonce) and is never a file the solution can read. The verdict comes from how
//! the process ended (see [`CheckResult`]); stdout and stderr are read
//! concurrently and only their last [`SandboxPolicy::output_cap_bytes`] are
//! kept.
//!
//! # Containment ([`SandboxMode::Bwrap`])
//!
//! The command line, when the harness runs as root (as in CI), is
//!
//! ```text
//! setpriv --reuid=<U> --regid=<U> --clear-groups --no-new-privs --
//!   bwrap --unshare-all --unshare-user --disable-userns
//!         --uid 65534 --gid 65534 --hostname sandbox
//!         --die-with-parent --new-session --cap-drop ALL
//!         --ro-bind /usr /usr
//!         --symlink usr/bin /bin  --symlink usr/sbin /sbin      (merged /usr;
//!         --symlink usr/lib /lib  --symlink usr/lib64 /lib64     real dirs are
//!                                                                ro-bound)
//!         --ro-bind-try /etc/X /etc/X   for X in ld.so.cache ld.so.conf
//!                   ld.so.conf.d localtime passwd group nsswitch.conf python3*
//!         --proc /proc --dev /dev
//!         --size <tmpfs_bytes> --perms 1777 --tmpfs /dev/shm
//!         --perms 1777 --size <tmpfs_bytes> --tmpfs /tmp
//!         --dir /tmp/check
//!         --ro-bind <hostdir>/solution.py /tmp/check/solution.py
//!         --remount-ro / --remount-ro /dev
//!         --chdir /tmp/check
//!         --clearenv --setenv PATH … HOME /tmp/check LANG C.UTF-8
//!         --setenv PYTHONDONTWRITEBYTECODE 1 PYTHONHASHSEED 0 TMPDIR /tmp/check
//!         -- /usr/bin/python3 -c <launcher> <limits…> /usr/bin/python3 -c <runner>
//! ```
//!
//! * **Nothing of the host is visible but `/usr` and a handful of `/etc`
//!   files**, all read-only; `/root`, `/home`, `/work`, the host `/tmp` and the
//!   rest of `/etc` do not exist inside. The sandbox's own root is remounted
//!   read-only.
//! * **The only writable places are size-capped tmpfs** at `/tmp` (the working
//!   directory `/tmp/check` lives on it) and `/dev/shm`; `/dev` is read-only.
//!   The host directory itself is never mounted: only `solution.py` is,
//!   read-only, so a solution cannot fill the host disk, and the check is not
//!   a file at all. A tmpfs is memory that `RLIMIT_AS` does not count, hence
//!   the caps.
//! * **No network**: a fresh network namespace holds only its own loopback,
//!   so even `127.0.0.1` is not the host's.
//! * **No environment leaks**: bwrap clears the environment and sets only the
//!   allowlist of [`child_env`].
//! * **A fresh pid namespace**: when the sandbox's init dies, the kernel kills
//!   every process in it. `--die-with-parent` ties that init to bwrap, and the
//!   wall-clock timeout kills bwrap, so a timeout reaps everything,
//!   double-forked daemons included.
//! * **Unprivileged**: when the harness runs as root, `setpriv` first turns
//!   the real and effective uid and gid into a fresh, unnamed host id `<U>`
//!   (one per run, see [`host_uid_for_run`]) with no supplementary groups and
//!   `no_new_privs`; inside the sandbox that id appears as `nobody` (65534).
//!   Without the drop the sandbox's uid would map to host root, which owns
//!   every root-only file bound in and, crucially, is exempt from
//!   `RLIMIT_NPROC`. A per-run id (rather than the host's shared `nobody`)
//!   means concurrent runs share no process budget, cannot signal or trace
//!   each other, and cannot touch each other's files.
//! * **rlimits** are set inside the sandbox by a tiny Python launcher that then
//!   `exec`s the check: `RLIMIT_CPU` (soft = `cpu_secs`, hard = one more
//!   second), `RLIMIT_AS`, `RLIMIT_FSIZE`, `RLIMIT_NPROC`, `RLIMIT_NOFILE` 256
//!   and `RLIMIT_CORE` 0.
//!
//! ## Fork bombs, as root
//!
//! `RLIMIT_NPROC` is ignored for processes whose real uid is host root, even
//! inside a user namespace. Since Linux 5.14 the count is kept per (user
//! namespace, uid) and checked at every level up to the initial namespace; a
//! process that is not host root and holds no capability there gets `EAGAIN`
//! from `fork` once its own level exceeds the limit. So: `setpriv` makes the
//! outer uid an unprivileged per-run id, bwrap makes a fresh user namespace
//! per check, and the
//! launcher sets `RLIMIT_NPROC` *inside* it. The limit then counts only that
//! sandbox's processes (concurrent checks do not share a budget); the outer
//! level's ceiling is the harness's own, much larger, limit. Whatever the bomb
//! leaves spinning dies with the pid namespace at the wall-clock timeout.
//!
//! # [`SandboxMode::None`]
//!
//! The same launcher, rlimits, scrubbed environment, temporary directory and
//! timeout, but no namespaces: the host directory is the writable working
//! directory, the network and the host file system are reachable (as root,
//! with the rights of an unprivileged uid: world-readable files, world-writable
//! directories such as the host `/tmp`), and only `RLIMIT_FSIZE` bounds each
//! file (not their number). When the harness is not root the code runs as the
//! harness's own user and can read its environment through
//! `/proc/<ppid>/environ`. As root the process
//! still drops to its per-run uid through `setpriv`, which makes
//! `RLIMIT_NPROC` effective and private to the run; when the
//! harness is not root, `RLIMIT_NPROC` is not set at all, because it would
//! count every process the user owns. The process runs in its own process
//! group, which is killed at the timeout and after the check exits; a
//! descendant that calls `setsid` escapes that kill and lives until its own
//! CPU limit, which a sleeping one never reaches: it outlives the check.
//! `--no-sandbox` is for trusted code only.
//!
//! # Verdicts
//!
//! See [`CheckResult`]. A launcher marker written to stderr just before the
//! `exec` tells "the check ran" from "the sandbox failed first"; it is removed
//! from the captured stderr.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

mod command;
mod process;

use command::*;
use process::*;

/// Uid and gid the sandboxed code has inside the bwrap sandbox (`nobody`).
pub const SANDBOX_UID: u32 = 65534;

/// First host uid/gid handed to runs when the harness is root; see
/// [`host_uid_for_run`].
pub const HOST_UID_BASE: u32 = 2_000_000_000;

/// The unprivileged host uid (and gid) a run drops to when the harness is
/// root: `HOST_UID_BASE + (pid % 100000) * 1000 + (seq % 1000)`, where `seq`
/// counts this process's runs. The id has no passwd entry (inside bwrap it
/// shows as `nobody`); it lies far above the usual user, system and
/// subordinate-id ranges, and is distinct for up to 1000 runs of one harness
/// process at a time and across concurrent harness processes (distinct pids
/// mod 100000).
pub fn host_uid_for_run(pid: u32, seq: u64) -> u32 {
    HOST_UID_BASE + (pid % 100_000) * 1000 + (seq % 1000) as u32
}

/// Where the working directory is inside the bwrap sandbox.
pub const SANDBOX_WORKDIR: &str = "/tmp/check";

/// `PATH` given to the sandboxed process.
const CHILD_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How long to wait for the output readers after the process has ended.
const READER_GRACE: Duration = Duration::from_secs(2);

/// How long bwrap/setpriv may take to answer `--help` or a probe.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

/// How strongly the check is contained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxMode {
    /// bubblewrap namespaces, read-only minimal file system, no network,
    /// unprivileged uid, rlimits (the default; see the module docs).
    Bwrap,
    /// No namespaces: only rlimits, a scrubbed environment, a temporary
    /// working directory, the timeout and (as root) the drop to a per-run
    /// unprivileged uid.
    None,
}

/// Limits and containment for one check run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Namespaces or not.
    pub mode: SandboxMode,
    /// `RLIMIT_CPU` soft limit in seconds (SIGXCPU); the hard limit (SIGKILL)
    /// is one second more.
    pub cpu_secs: u64,
    /// `RLIMIT_AS`: address space of each process, bytes.
    pub memory_bytes: u64,
    /// `RLIMIT_FSIZE`: largest file a process may write, bytes.
    pub file_size_bytes: u64,
    /// `RLIMIT_NPROC`: processes and threads in the sandbox (see the module
    /// docs for when it is enforced).
    pub max_processes: u64,
    /// Wall-clock limit, after which the whole sandbox is killed.
    pub wall_timeout: Duration,
    /// How many trailing bytes of stdout and of stderr are kept.
    pub output_cap_bytes: usize,
    /// Size of the sandbox's writable tmpfs (`/tmp`, holding the working
    /// directory); bwrap mode only.
    pub tmpfs_bytes: u64,
    /// The interpreter. In bwrap mode it must live under `/usr` (the host's
    /// `/usr/bin/python3` by default), since nothing else is mounted.
    pub python: PathBuf,
}

impl Default for SandboxPolicy {
    /// Bwrap, 10 s CPU, 512 MiB address space, 16 MiB files, 64 processes,
    /// 20 s wall clock, 64 KiB of output tail, 64 MiB tmpfs,
    /// `/usr/bin/python3`.
    fn default() -> Self {
        SandboxPolicy {
            mode: SandboxMode::Bwrap,
            cpu_secs: 10,
            memory_bytes: 512 << 20,
            file_size_bytes: 16 << 20,
            max_processes: 64,
            wall_timeout: Duration::from_secs(20),
            output_cap_bytes: 64 << 10,
            tmpfs_bytes: 64 << 20,
            python: PathBuf::from("/usr/bin/python3"),
        }
    }
}

/// The verdict of one check run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckResult {
    /// `check.py` exited with status 0.
    Pass,
    /// `check.py` exited with a non-zero status: a failed assertion, an
    /// uncaught exception (status 1), a syntax error in the solution, a
    /// `MemoryError` or an `EFBIG` from the file-size limit; or it did not run
    /// to its end; or the process died of a signal once Python had started
    /// (SIGSEGV, SIGABRT, SIGKILL from the OOM killer, ...). The candidate's
    /// code is wrong.
    Fail,
    /// No verdict: the sandbox or the interpreter failed before the check
    /// started, or `check.py` itself does not compile (the reason is in
    /// `stderr_tail`).
    Error,
    /// The wall-clock timeout fired, or the CPU limit killed the process
    /// (SIGXCPU; or SIGKILL once the run has lasted at least `cpu_secs`, which
    /// is the hard CPU limit when SIGXCPU was ignored).
    Timeout,
}

/// What one check run did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct CheckRun {
    /// The verdict.
    pub result: CheckResult,
    /// Exit status of `check.py`, when it exited (rather than died of a signal).
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did (9 after a wall-clock timeout).
    /// In bwrap mode bwrap reports a signal N as status 128+N; such statuses
    /// are decoded back into signals, as a shell does.
    pub signal: Option<i32>,
    /// Wall-clock time from spawn to exit, milliseconds.
    pub duration_ms: u64,
    /// The last bytes of stdout (lossy UTF-8).
    pub stdout_tail: String,
    /// The last bytes of stderr (lossy UTF-8), the launcher's and runner's markers removed.
    pub stderr_tail: String,
    /// How many bytes stdout carried in all.
    pub stdout_bytes: u64,
    /// How many bytes stderr carried in all (markers excluded).
    pub stderr_bytes: u64,
    /// `"bwrap"` or `"none"`.
    pub sandbox: &'static str,
}

/// Why a check could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `bwrap` is not on `PATH`.
    #[error(
        "bubblewrap (`bwrap`) was not found on PATH; install it (`apt-get install bubblewrap`) \
         or pass --no-sandbox to run model-written code unconfined (unsafe)"
    )]
    BwrapMissing,
    /// The sandbox starts but cannot run even a trivial check.
    #[error(
        "the {mode} sandbox cannot run a trivial check: {detail}\n\
         (bubblewrap needs unprivileged user namespaces: check `sysctl user.max_user_namespaces` \
         and, on Debian/Ubuntu, `kernel.unprivileged_userns_clone` / \
         `kernel.apparmor_restrict_unprivileged_userns`; inside a container it needs seccomp/AppArmor \
         to allow them; or pass --no-sandbox to run model-written code unconfined (unsafe))"
    )]
    Unusable {
        /// `"bwrap"` or `"none"`.
        mode: &'static str,
        /// What went wrong, e.g. bwrap's own message.
        detail: String,
    },
    /// Running as root, but `setpriv` (util-linux) is missing, so the
    /// sandboxed code could not drop root.
    #[error(
        "running as root, but `setpriv` (util-linux) was not found on PATH to run the checks as \
         an unprivileged uid; install util-linux (`apt-get install util-linux`)"
    )]
    SetprivMissing,
    /// A file-system or process operation of the harness itself failed.
    #[error("{context}: {source}")]
    Io {
        /// What the harness was doing.
        context: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// Shorthand for wrapping an [`io::Error`] with context.
fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> SandboxError {
    let context = context.into();
    move |source| SandboxError::Io { context, source }
}

/// How many checks to run at once by default: the available parallelism
/// (CPUs this process may use), at least 1.
pub fn default_parallelism() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Whether bubblewrap is installed and can build the sandbox here: runs a
/// trivial check in [`SandboxPolicy::default`] (bwrap mode).
///
/// The error says how to install bubblewrap or to pass `--no-sandbox`.
pub fn probe_bwrap() -> Result<(), SandboxError> {
    probe(&SandboxPolicy::default())
}

/// Whether `policy` can run a check here: finds the tools it needs and runs
/// a trivial check (`pass`) through the full pipeline, which must pass.
pub fn probe(policy: &SandboxPolicy) -> Result<(), SandboxError> {
    let mut trivial = policy.clone();
    trivial.wall_timeout = trivial.wall_timeout.max(PROBE_TIMEOUT);
    let run = run_check(&trivial, "import solution\n", "x = 1\n")?;
    if run.result == CheckResult::Pass {
        return Ok(());
    }
    let mut detail = format!("result {:?}", run.result);
    if let Some(code) = run.exit_code {
        detail.push_str(&format!(", exit status {code}"));
    }
    if let Some(sig) = run.signal {
        detail.push_str(&format!(", signal {sig}"));
    }
    let stderr = run.stderr_tail.trim();
    if !stderr.is_empty() {
        detail.push_str(": ");
        detail.push_str(stderr);
    }
    Err(SandboxError::Unusable {
        mode: run.sandbox,
        detail,
    })
}

/// Run `check_py` against `solution_code` under `policy`.
///
/// `Err` means the harness could not even try (temporary directory, missing
/// `bwrap`/`setpriv`, spawn failure); everything that happens once the
/// sandbox is spawned, including a sandbox that fails to start Python, is an
/// `Ok` [`CheckRun`] (then with [`CheckResult::Error`]).
pub fn run_check(
    policy: &SandboxPolicy,
    check_py: &str,
    solution_code: &str,
) -> Result<CheckRun, SandboxError> {
    run_check_in(policy, &std::env::temp_dir(), check_py, solution_code)
}

/// The environment of the sandboxed process, and nothing else: `PATH`,
/// `HOME` = `TMPDIR` = `workdir`, `LANG=C.UTF-8`,
/// `PYTHONDONTWRITEBYTECODE=1`, `PYTHONHASHSEED=0`.
///
/// Nothing is taken from the harness's own environment, so API keys and
/// tokens cannot reach the child. `TMPDIR` keeps `tempfile` inside the
/// directory that is removed afterwards.
pub fn child_env(workdir: &str) -> Vec<(&'static str, String)> {
    vec![
        ("PATH", CHILD_PATH.to_string()),
        ("HOME", workdir.to_string()),
        ("TMPDIR", workdir.to_string()),
        ("LANG", "C.UTF-8".to_string()),
        ("PYTHONDONTWRITEBYTECODE", "1".to_string()),
        ("PYTHONHASHSEED", "0".to_string()),
    ]
}

/// [`run_check`] with the temporary directory made under `base`.
fn run_check_in(
    policy: &SandboxPolicy,
    base: &Path,
    check_py: &str,
    solution_code: &str,
) -> Result<CheckRun, SandboxError> {
    let root = effective_uid().map_err(io_err("reading /proc/self/status"))? == 0;
    let setpriv = if root {
        Some(find_program("setpriv").ok_or(SandboxError::SetprivMissing)?)
    } else {
        None
    };
    let bwrap = match policy.mode {
        SandboxMode::Bwrap => Some(find_program("bwrap").ok_or(SandboxError::BwrapMissing)?),
        SandboxMode::None => None,
    };

    static RUNS: AtomicU64 = AtomicU64::new(0);
    let owner =
        root.then(|| host_uid_for_run(std::process::id(), RUNS.fetch_add(1, Ordering::Relaxed)));
    let work = WorkDir::create(base, owner)?;
    work.write_file("solution.py", solution_code, owner)?;

    let drop_to = setpriv.as_deref().zip(owner);
    let (mut cmd, sandbox) = match &bwrap {
        Some(bwrap) => (bwrap_command(policy, bwrap, drop_to, &work.path), "bwrap"),
        None => (plain_command(policy, drop_to, &work.path), "none"),
    };
    // The runner reads the nonce of its finish marker from stdin (see `command::RUNNER`).
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let nonce = fresh_nonce();
    let (finish, invalid) = (finish_marker(&nonce), invalid_marker(&nonce));
    // Its own process group: killable as one, and out of reach of the terminal's Ctrl-C,
    // which is the harness's to handle (a check killed by it would read as an error).
    cmd.process_group(0);

    let start = Instant::now();
    let child = match cmd.spawn() {
        Ok(child) => child,
        // Only a direct interpreter spawn (plain mode, not root) gets here for
        // a missing python: that is "python did not start", not a harness error.
        Err(e) if bwrap.is_none() && setpriv.is_none() => {
            return Ok(CheckRun {
                result: CheckResult::Error,
                exit_code: None,
                signal: None,
                duration_ms: 0,
                stdout_tail: String::new(),
                stderr_tail: format!("judge: cannot start {}: {e}\n", policy.python.display()),
                stdout_bytes: 0,
                stderr_bytes: 0,
                sandbox,
            });
        }
        Err(e) => {
            let program = cmd.get_program().to_string_lossy().into_owned();
            return Err(io_err(format!("starting {program}"))(e));
        }
    };
    let mut guard = ChildGuard {
        child,
        group: bwrap.is_none(),
        reaped: false,
    };
    let feeder = guard.child.stdin.take().map(|mut stdin| {
        // The nonce, then check.py, from a thread: a check larger than the pipe would block
        // until the runner reads it. A check that never starts never reads it; the write then
        // fails, which is no error here.
        let payload = format!("{nonce}\n{check_py}");
        std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut stdin, payload.as_bytes());
        })
    });

    let cap = policy.output_cap_bytes;
    let stdout = guard.child.stdout.take().expect("stdout is piped");
    let stderr = guard.child.stderr.take().expect("stderr is piped");
    let (out_buf, out_thread) = spawn_reader(stdout, cap, Vec::new(), "sandbox-stdout")?;
    // The runner's markers are cut out of stderr wherever they are: a daemon thread of the
    // solution may still write after the finish marker, before the process is gone.
    let (err_buf, err_thread) = spawn_reader(stderr, cap, vec![finish, invalid], "sandbox-stderr")?;

    let deadline = start + policy.wall_timeout;
    let mut nap = Duration::from_millis(1);
    let (status, timed_out, ended) = loop {
        if let Some(status) = guard
            .child
            .try_wait()
            .map_err(io_err("waiting for the check"))?
        {
            guard.reaped = true;
            break (status, false, Instant::now());
        }
        let now = Instant::now();
        if now >= deadline {
            guard.kill_all();
            let status = guard.child.wait().map_err(io_err("reaping the check"))?;
            guard.reaped = true;
            break (status, true, now);
        }
        std::thread::sleep(nap.min(deadline - now));
        nap = (nap * 2).min(Duration::from_millis(20));
    };
    let duration_ms = u64::try_from((ended - start).as_millis()).unwrap_or(u64::MAX);
    // The feeder is done once the runner read its stdin or the pipe closed with the check.
    if let Some(feeder) = feeder.filter(|f| f.is_finished()) {
        let _ = feeder.join();
    }
    if guard.group {
        // Stragglers left in the process group (background children).
        kill_group(guard.child.id());
    }

    let reader_deadline = Instant::now() + READER_GRACE;
    for handle in [out_thread, err_thread] {
        while !handle.is_finished() && Instant::now() < reader_deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if handle.is_finished() {
            // A panicking reader only loses output; the buffer is still there.
            let _ = handle.join();
        }
        // Otherwise an escaped descendant still holds the pipe (plain mode
        // only): the thread is left to finish on its own.
    }
    let out = snapshot(&out_buf, cap, 0);
    let (launched, marker) = {
        let c = lock(&err_buf);
        (c.head == LAUNCH_MARKER, c.found)
    };
    let (finished, check_invalid) = (marker == Some(0), marker == Some(1));
    let err = snapshot(
        &err_buf,
        cap,
        if launched { LAUNCH_MARKER.len() } else { 0 },
    );

    let (exit_code, signal) = decode_status(status, bwrap.is_some() && !timed_out);
    let mut stderr_tail = err.text;
    let mut result = classify(
        timed_out,
        launched,
        exit_code,
        signal,
        policy.cpu_secs,
        duration_ms,
    );
    if check_invalid && !timed_out {
        result = CheckResult::Error;
        stderr_tail.push_str(INVALID_CHECK_NOTE);
    } else if result == CheckResult::Pass && !finished {
        result = CheckResult::Fail;
        stderr_tail.push_str(
            "\njudge: the process exited with status 0 without check.py running to its end (os._exit in the solution?)\n",
        );
    }
    if !launched && !timed_out {
        stderr_tail.push_str(&format!(
            "\njudge: python did not start inside the {sandbox} sandbox (status {status})\n"
        ));
    }
    Ok(CheckRun {
        result,
        exit_code,
        signal,
        duration_ms,
        stdout_tail: out.text,
        stderr_tail,
        stdout_bytes: out.total,
        stderr_bytes: err.total,
        sandbox,
    })
}

/// Appended to the stderr tail of a check run whose `check.py` does not compile (the
/// traceback above it says why); the run's result is [`CheckResult::Error`].
pub const INVALID_CHECK_NOTE: &str = "\njudge: check.py itself does not compile (see above): no verdict on any answer until the suite's check is fixed\n";

/// Turn a raw status into (exit code, signal). With `bwrap_encoded`, a status
/// 129..=192 is bwrap's report of signal `status - 128`.
fn decode_status(status: ExitStatus, bwrap_encoded: bool) -> (Option<i32>, Option<i32>) {
    if let Some(sig) = status.signal() {
        return (None, Some(sig));
    }
    match status.code() {
        Some(code) if bwrap_encoded && (129..=192).contains(&code) => (None, Some(code - 128)),
        code => (code, None),
    }
}

/// 128 bits from the kernel's generator as hex (the nonce of a finish marker); if that cannot
/// be read, a hash of the time, process and a counter, which the sandboxed code cannot see
/// either.
fn fresh_nonce() -> String {
    use sha2::{Digest, Sha256};
    use std::io::Read;
    let mut bytes = [0u8; 16];
    let from_kernel = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !from_kernel {
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let seed = format!(
            "{:?} {} {}",
            std::time::SystemTime::now(),
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        bytes.copy_from_slice(&Sha256::digest(seed.as_bytes())[..16]);
    }
    crate::hex(&bytes)
}

/// SIGKILL.
const SIGKILL: i32 = 9;
/// SIGXCPU (Linux, x86 and arm).
const SIGXCPU: i32 = 24;

/// The verdict from how the run ended (documented on [`CheckResult`]).
fn classify(
    timed_out: bool,
    launched: bool,
    exit_code: Option<i32>,
    signal: Option<i32>,
    cpu_secs: u64,
    duration_ms: u64,
) -> CheckResult {
    if timed_out {
        return CheckResult::Timeout;
    }
    if !launched {
        return CheckResult::Error;
    }
    // A process's CPU time grows at most as fast as the cores it can use: a SIGXCPU sooner
    // than the limit allows is an exit status that looks like one (`sys.exit(152)` reaches
    // here as signal 24 through bwrap), the code's own failure.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
    match (signal, exit_code) {
        (Some(SIGXCPU), _) if duration_ms >= cpu_secs.saturating_mul(1000) / cores => {
            CheckResult::Timeout
        }
        (Some(SIGKILL), _) if duration_ms >= cpu_secs.saturating_mul(1000) => CheckResult::Timeout,
        // Python started: a crash (SIGSEGV, an abort, the OOM killer) is the code's failure.
        // `error` would take the comparison out of the rating, which code could buy by
        // killing itself.
        (Some(_), _) => CheckResult::Fail,
        (None, Some(0)) => CheckResult::Pass,
        (None, Some(_)) => CheckResult::Fail,
        (None, None) => CheckResult::Error,
    }
}

#[cfg(test)]
mod tests;
