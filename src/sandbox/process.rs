//! Running the sandboxed process: the child guard and process-group kill, the temporary
//! working directory, and bounded capture of stdout and stderr.

use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use super::*;

/// The spawned sandbox; kills it (and its group in plain mode) if dropped
/// before it was reaped, e.g. on a panic or an early return.
pub(super) struct ChildGuard {
    pub(super) child: Child,
    /// Plain mode: the child leads its own process group.
    pub(super) group: bool,
    pub(super) reaped: bool,
}

impl ChildGuard {
    /// SIGKILL the child and, in plain mode, its whole process group. In bwrap
    /// mode killing bwrap kills the pid namespace's init (`--die-with-parent`)
    /// and with it every process of the sandbox.
    pub(super) fn kill_all(&mut self) {
        if self.group {
            kill_group(self.child.id());
        }
        // Fails only if it has already exited, which is fine.
        let _ = self.child.kill();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill_all();
            let _ = self.child.wait();
        }
    }
}

/// SIGKILL process group `pgid` with kill(1) (std has no killpg).
pub(super) fn kill_group(pgid: u32) {
    let kill = find_program("kill").unwrap_or_else(|| PathBuf::from("/bin/kill"));
    let _ = Command::new(kill)
        .args(["-KILL", "--", &format!("-{pgid}")])
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Removes the work directories under `base` that a killed judge left behind (its drop never
/// ran): `judge-check-<pid>-…` whose process no longer exists. Best effort: what cannot be
/// removed (another user's) stays.
pub(super) fn sweep_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("judge-check-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if crate::process_gone(pid) && entry.file_type().is_ok_and(|t| t.is_dir()) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The temporary host directory of one run; removed on drop.
pub(super) struct WorkDir {
    pub(super) path: PathBuf,
}

impl WorkDir {
    /// Make a fresh directory under `base`, mode 0700, owned by `owner` when
    /// given (the harness is root and the code runs as that uid).
    pub(super) fn create(base: &Path, owner: Option<u32>) -> Result<WorkDir, SandboxError> {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(|| sweep_stale(base));
        static SEQ: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for _ in 0..100 {
            let seq = SEQ.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!(
                "judge-check-{}-{seq}-{nanos:09}",
                std::process::id()
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => {
                    let work = WorkDir { path };
                    let path = &work.path;
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
                        .map_err(io_err(format!("chmod {}", path.display())))?;
                    if let Some(uid) = owner {
                        std::os::unix::fs::chown(path, Some(uid), Some(uid))
                            .map_err(io_err(format!("chown {}", path.display())))?;
                    }
                    return Ok(work);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(io_err(format!(
                        "creating a directory in {}",
                        base.display()
                    ))(e));
                }
            }
        }
        Err(SandboxError::Io {
            context: format!("creating a directory in {}", base.display()),
            source: io::Error::from(io::ErrorKind::AlreadyExists),
        })
    }

    /// Write `name` (mode 0600, owned by `owner` when given).
    pub(super) fn write_file(
        &self,
        name: &str,
        contents: &str,
        owner: Option<u32>,
    ) -> Result<(), SandboxError> {
        let path = self.path.join(name);
        let context = || format!("writing {}", path.display());
        std::fs::write(&path, contents).map_err(io_err(context()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(io_err(context()))?;
        if let Some(uid) = owner {
            std::os::unix::fs::chown(&path, Some(uid), Some(uid)).map_err(io_err(context()))?;
        }
        Ok(())
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if std::fs::remove_dir_all(&self.path).is_ok() {
            return;
        }
        // The code may have made directories read-only (plain mode, not root):
        // give them back their owner bits, then try again.
        make_removable(&self.path);
        match std::fs::remove_dir_all(&self.path) {
            Err(e) if self.path.exists() => {
                eprintln!("judge: could not remove {}: {e}", self.path.display());
            }
            _ => {}
        }
    }
}

/// chmod u+rwx every directory under `path` (symlinks are not followed).
pub(super) fn make_removable(path: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mode = meta.permissions().mode() | 0o700;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode));
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten() {
            make_removable(&entry.path());
        }
    }
}

/// What a reader thread has seen of one stream.
#[derive(Debug, Default)]
pub(super) struct Capture {
    /// The last bytes (at most twice the cap, trimmed to the cap on reading).
    pub(super) tail: Vec<u8>,
    /// Bytes seen in all, the markers cut out excluded.
    pub(super) total: u64,
    /// The first `LAUNCH_MARKER.len()` bytes.
    pub(super) head: Vec<u8>,
    /// Byte strings to find and cut out of the stream wherever they appear (the runner's
    /// markers on stderr); the first one in the stream wins and the search stops.
    pub(super) cuts: Vec<Vec<u8>>,
    /// Which of `cuts` was found, if one was.
    pub(super) found: Option<usize>,
    /// The unsearched end of the stream: bytes that may be the start of a marker, held back
    /// until the next chunk tells.
    pending: Vec<u8>,
}

impl Capture {
    /// A capture that cuts the first of `cuts` found out of the stream.
    pub(super) fn cutting(cuts: Vec<Vec<u8>>) -> Self {
        Capture {
            cuts,
            ..Capture::default()
        }
    }

    /// Take in one chunk, keeping at most `cap` (+ slack) trailing bytes.
    pub(super) fn push(&mut self, chunk: &[u8], cap: usize) {
        if self.head.len() < LAUNCH_MARKER.len() {
            let need = LAUNCH_MARKER.len() - self.head.len();
            self.head.extend_from_slice(&chunk[..need.min(chunk.len())]);
        }
        if self.found.is_some() || self.cuts.is_empty() {
            self.keep(chunk, cap);
            return;
        }
        self.pending.extend_from_slice(chunk);
        let hit = self
            .cuts
            .iter()
            .enumerate()
            .filter_map(|(i, cut)| find(&self.pending, cut).map(|at| (i, at, cut.len())))
            .min_by_key(|&(_, at, _)| at);
        let pending = std::mem::take(&mut self.pending);
        if let Some((i, at, len)) = hit {
            self.found = Some(i);
            self.keep(&pending[..at], cap);
            self.keep(&pending[at + len..], cap);
            return;
        }
        // A marker that has begun but not ended lies within its length minus one of the end.
        let hold = self.cuts.iter().map(|c| c.len() - 1).max().unwrap_or(0);
        let split = pending.len().saturating_sub(hold);
        self.keep(&pending[..split], cap);
        self.pending = pending[split..].to_vec();
    }

    /// Append bytes that are the stream's own (no marker) to the tail.
    fn keep(&mut self, bytes: &[u8], cap: usize) {
        self.total += bytes.len() as u64;
        let bytes = &bytes[bytes.len().saturating_sub(cap)..];
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > cap.saturating_mul(2).max(cap + 8192) {
            let excess = self.tail.len() - cap;
            self.tail.drain(..excess);
        }
    }
}

/// Where `needle` first occurs in `haystack` (SIMD substring search: a solution that floods
/// stderr must not be slowed to the search's pace).
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// A stream's final text.
pub(super) struct Snapshot {
    pub(super) text: String,
    /// Bytes in all, minus the stripped prefix.
    pub(super) total: u64,
}

/// Lock, ignoring poisoning (a panicked reader leaves a usable buffer).
pub(super) fn lock(m: &Mutex<Capture>) -> std::sync::MutexGuard<'_, Capture> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The last `cap` bytes as lossy UTF-8, without the stream's first `strip`
/// bytes and without a character cut in half at the front.
pub(super) fn snapshot(buf: &Mutex<Capture>, cap: usize, strip: usize) -> Snapshot {
    let c = lock(buf);
    // Bytes still held back as a possible marker start are the stream's (it ended, or
    // is being read from by an escaped descendant).
    let mut whole = c.tail.clone();
    whole.extend_from_slice(&c.pending);
    let total = c.total + c.pending.len() as u64;
    let mut bytes = &whole[whole.len().saturating_sub(cap)..];
    let offset = total - bytes.len() as u64;
    let strip = strip as u64;
    if offset < strip {
        bytes = &bytes[(strip - offset).min(bytes.len() as u64) as usize..];
    }
    if offset > strip {
        // The front was cut at an arbitrary byte: drop a partial character.
        let cut = bytes
            .iter()
            .take(3)
            .take_while(|&&b| (0x80..0xc0).contains(&b))
            .count();
        bytes = &bytes[cut..];
    }
    Snapshot {
        text: String::from_utf8_lossy(bytes).into_owned(),
        total: total.saturating_sub(strip),
    }
}

/// Read `src` to its end on a new thread into a shared [`Capture`] that cuts out the first of
/// `cuts` it finds.
pub(super) fn spawn_reader(
    mut src: impl Read + Send + 'static,
    cap: usize,
    cuts: Vec<Vec<u8>>,
    name: &str,
) -> Result<(Arc<Mutex<Capture>>, JoinHandle<()>), SandboxError> {
    let buf = Arc::new(Mutex::new(Capture::cutting(cuts)));
    let shared = Arc::clone(&buf);
    let handle = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let mut chunk = vec![0u8; 64 << 10];
            loop {
                match src.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => lock(&shared).push(&chunk[..n], cap),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })
        .map_err(io_err("starting an output reader thread"))?;
    Ok((buf, handle))
}
