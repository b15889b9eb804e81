//! `runs/<run>/`: naming, locking, JSON Lines appends that survive a kill, atomic rewrites.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use anyhow::Context;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::cache::write_atomic;
use crate::error::JudgeError;

/// A run directory.
#[derive(Debug)]
pub struct RunDir {
    name: String,
    path: PathBuf,
    _lock: Option<Arc<RunLock>>,
    /// The lock held is shared (labelling sessions and scores), not exclusive.
    shared: bool,
}

/// Run locks this process holds, by lock-file path: a second [`RunDir::create_and_lock`] of a
/// run this process holds shares the lock instead of being refused by it.
static HELD: Mutex<Vec<(PathBuf, Weak<RunLock>)>> = Mutex::new(Vec::new());
/// Locks kept until the process ends (see [`keep_locks_until_exit`]).
static KEPT: Mutex<Vec<Arc<RunLock>>> = Mutex::new(Vec::new());

/// A held run lock (the open `.lock` file). An exclusive holder empties the file when it lets
/// go, so that it does not go on naming a process that is gone.
#[derive(Debug)]
struct RunLock {
    file: File,
    exclusive: bool,
}

impl Drop for RunLock {
    fn drop(&mut self) {
        if self.exclusive {
            // Still held here: the lock goes with the file, just after.
            let _ = self.file.set_len(0);
        }
    }
}

/// Lets go of the locks [`keep_locks_until_exit`] kept (call it as the process ends).
pub fn release_kept_locks() {
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).clear();
}
static KEEP: AtomicBool = AtomicBool::new(false);

/// From now on every run lock this process takes is held until it exits, not released with
/// its `RunDir`: `judge run` holds its run from generate to rank, with no gap between the steps
/// for another process to slip into.
pub fn keep_locks_until_exit() {
    KEEP.store(true, Ordering::SeqCst);
}

/// `runs_dir/<base>`, or `<base>-2`, `<base>-3`, … for the first that does not exist yet: a
/// default (time-stamped) run name must never resume another run started in the same second.
/// The folder is created here, so that two processes cannot claim the same name.
pub fn claim_fresh_run_name(runs_dir: &Path, base: &str) -> anyhow::Result<String> {
    std::fs::create_dir_all(runs_dir)
        .with_context(|| format!("failed to create `{}`", runs_dir.display()))?;
    for k in 1u32.. {
        let name = if k == 1 {
            base.to_string()
        } else {
            format!("{base}-{k}")
        };
        validate_run_name(&name)?;
        match std::fs::create_dir(runs_dir.join(&name)) {
            Ok(()) => return Ok(name),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("failed to create `{}`", runs_dir.join(&name).display())
                });
            }
        }
    }
    unreachable!("some suffix is free")
}

/// The run under `runs_dir` started last: the greatest manifest `created_at` (UTC, so the text
/// orders as the time; whole seconds), runs started in the same second by when their folder
/// was made (where the filesystem keeps it), then by name; `None` when no folder holds a
/// readable manifest.
pub fn latest_run(runs_dir: &Path) -> anyhow::Result<Option<String>> {
    #[derive(Deserialize)]
    struct Started {
        created_at: String,
    }
    let entries = match std::fs::read_dir(runs_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(e).with_context(|| format!("failed to read `{}`", runs_dir.display()));
        }
    };
    let mut best: Option<(String, std::time::SystemTime, String)> = None;
    for entry in entries {
        let entry = entry.with_context(|| format!("failed to read `{}`", runs_dir.display()))?;
        let Some(name) = entry.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if validate_run_name(&name).is_err() {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(entry.path().join("manifest.json")) else {
            continue;
        };
        let Ok(started) = serde_json::from_str::<Started>(&text) else {
            continue;
        };
        let made = entry
            .metadata()
            .and_then(|m| m.created())
            .unwrap_or(std::time::UNIX_EPOCH);
        let candidate = (started.created_at, made, name);
        if best.as_ref().is_none_or(|b| candidate > *b) {
            best = Some(candidate);
        }
    }
    Ok(best.map(|(_, _, name)| name))
}

/// Run names become folder names: letters, digits, `.`, `_`, `-`; not starting with `.`.
pub fn validate_run_name(name: &str) -> Result<(), JudgeError> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(JudgeError::usage(format!(
            "invalid run name `{name}`: use letters, digits, `.`, `_` and `-` (it names a folder under runs/)"
        )))
    }
}

impl RunDir {
    /// `runs_dir/<name>`, which may not exist yet.
    pub fn at(runs_dir: &Path, name: &str) -> Result<Self, JudgeError> {
        validate_run_name(name)?;
        Ok(RunDir {
            name: name.to_string(),
            path: runs_dir.join(name),
            _lock: None,
            shared: false,
        })
    }

    /// The run's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A file inside the run.
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Whether the run has been started (it has a manifest).
    pub fn exists(&self) -> bool {
        self.file("manifest.json").is_file()
    }

    /// The refusal for a run folder that holds records but no manifest (deleted, or replaced
    /// by a folder): without its recorded settings and suite it can be neither read nor
    /// resumed, and a new manifest would adopt outputs of another suite or settings. `None`
    /// for a run with a manifest, a missing folder, or one holding only the lock and temp
    /// files (a run just claimed).
    pub fn refuse_without_manifest(&self) -> Result<(), JudgeError> {
        if self.exists() {
            return Ok(());
        }
        let held = std::fs::read_dir(&self.path)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| !e.file_name().to_string_lossy().starts_with('.'));
        if !held {
            return Ok(());
        }
        Err(JudgeError::usage(format!(
            "run `{}` has files but no manifest.json (`{}` was deleted or replaced): without its recorded suite and settings it cannot be read or resumed; restore the file, or start a new run (another --run name)",
            self.name,
            self.file("manifest.json").display()
        )))
    }

    /// Takes a shared lock on an existing run: any number of shared holders (labelling
    /// sessions of different people, scores, exports) but no exclusive one (a command that
    /// changes the run). A shared holder must not repair files (see [`RunDir::read_jsonl`]);
    /// what it writes it locks on its own (a labeller's file: [`lock_file`]).
    pub fn lock_shared(&mut self) -> anyhow::Result<()> {
        if self._lock.is_some() {
            return Ok(());
        }
        let lock_path = self.file(".lock");
        refuse_symlink(&lock_path)?;
        let lock = self.open_lock_file(&lock_path)?;
        if lock.try_lock_shared().is_err() {
            return Err(self.in_use(&lock));
        }
        add_shared_holder(&lock_path);
        self._lock = Some(Arc::new(RunLock {
            file: lock,
            exclusive: false,
        }));
        self.shared = true;
        Ok(())
    }

    /// Reads a JSON Lines file of the run: a torn last line is cut off the file when this
    /// process holds the run exclusively, else only skipped (a shared holder may not write
    /// under another's lock, and the line may be a writer's append in progress).
    pub fn read_jsonl<T: DeserializeOwned>(&self, path: &Path) -> anyhow::Result<Vec<T>> {
        let mut records = Vec::new();
        self.visit_jsonl(path, |r| records.push(r))?;
        Ok(records)
    }

    /// [`RunDir::read_jsonl`], handing each record to `visit` instead of collecting them: a
    /// reader that keeps a few records of a large file holds only those.
    pub fn visit_jsonl<T: DeserializeOwned>(
        &self,
        path: &Path,
        visit: impl FnMut(T),
    ) -> anyhow::Result<()> {
        visit_jsonl(path, self._lock.is_some() && !self.shared, visit)
    }

    /// Opens (creating) the lock file, with a clear error for a run the user cannot write.
    fn open_lock_file(&self, lock_path: &Path) -> anyhow::Result<File> {
        match OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(lock_path)
        {
            Ok(lock) => Ok(lock),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                Err(JudgeError::usage(format!(
                    "run `{}` is not writable by you (`{}`: {e}); judge locks a run before reading it and writes into it: run as its owner, or copy it",
                    self.name,
                    lock_path.display()
                ))
                .into())
            }
            Err(e) => Err(e).with_context(|| format!("failed to open `{}`", lock_path.display())),
        }
    }

    /// The refusal when another process holds the lock, naming it when it said who it is.
    fn in_use(&self, mut lock: &File) -> anyhow::Error {
        let mut holders = String::new();
        let _ = lock.read_to_string(&mut holders);
        // Those still running: shared holders that have ended leave their lines behind.
        let live: Vec<&str> = holders
            .lines()
            .filter(|l| {
                let pid = l.strip_prefix("pid ").and_then(|r| r.split(':').next());
                pid.and_then(|p| p.parse().ok())
                    .is_some_and(|p| !crate::process_gone(p))
            })
            .collect();
        let by = if live.is_empty() {
            String::new()
        } else {
            format!(" ({})", crate::report::printable(&live.join("; ")))
        };
        JudgeError::usage(format!(
            "run `{}` is in use by another judge process{by}; wait for it to finish",
            self.name
        ))
        .into()
    }

    /// Creates the folder and takes an exclusive lock on it for this process (released when
    /// the process ends, even when killed, or when every `RunDir` holding it is dropped), so
    /// two commands never write one run at once. Taking it again in the same process shares
    /// it. The lock file names the holder (pid and command) for the error another process
    /// gets.
    pub fn create_and_lock(&mut self) -> anyhow::Result<()> {
        if self._lock.is_some() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.path)
            .with_context(|| format!("failed to create run directory `{}`", self.path.display()))?;
        let lock_path = self.file(".lock");
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        held.retain(|(_, file)| file.strong_count() > 0);
        if let Some(file) = held
            .iter()
            .find(|(path, _)| *path == lock_path)
            .and_then(|(_, file)| file.upgrade())
        {
            self._lock = Some(file);
            return Ok(());
        }
        refuse_symlink(&lock_path)?;
        let mut lock = self.open_lock_file(&lock_path)?;
        if lock.try_lock().is_err() {
            return Err(self.in_use(&lock));
        }
        say_who_holds(&mut lock);
        remove_stale_temp_files(&self.path);
        let lock = Arc::new(RunLock {
            file: lock,
            exclusive: true,
        });
        held.push((lock_path, Arc::downgrade(&lock)));
        if KEEP.load(Ordering::SeqCst) {
            KEPT.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Arc::clone(&lock));
        }
        self._lock = Some(lock);
        Ok(())
    }
}

/// Removes what atomic writes of a killed process left in a run directory (its top level and
/// its direct subfolders: `labels/`, `prompts/`, `leaderboards/`): files `.NAME.tmp.PID.N`.
/// Called under the run's exclusive lock, which no other judge process can hold while it
/// writes there; this process's own are left alone. Best effort: a file that cannot be
/// removed stays.
fn remove_stale_temp_files(dir: &Path) {
    let own = format!(".tmp.{}.", std::process::id());
    let mut dirs = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        dirs.extend(
            entries
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path()),
        );
    }
    for d in dirs {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let temp = name.starts_with('.') && name.contains(".tmp.") && !name.contains(&own);
            if temp && entry.file_type().is_ok_and(|t| t.is_file()) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Reads a JSON Lines file (missing file → empty). A torn last line (the process was killed
/// mid-write) is cut off the file so that appends continue cleanly; a bad line elsewhere is
/// an error naming the file and line.
pub fn read_jsonl_repairing<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    read_jsonl(path, true)
}

/// [`read_jsonl_repairing`] without the repair: a torn last line is skipped, the file left as
/// it is (its writer may be appending that line under its own lock).
pub fn read_jsonl_skipping_torn<T: DeserializeOwned>(path: &Path) -> anyhow::Result<Vec<T>> {
    read_jsonl(path, false)
}

/// [`read_jsonl_repairing`], or with `repair` false a torn last line only skipped.
fn read_jsonl<T: DeserializeOwned>(path: &Path, repair: bool) -> anyhow::Result<Vec<T>> {
    let mut records = Vec::new();
    visit_jsonl(path, repair, |r| records.push(r))?;
    Ok(records)
}

/// [`read_jsonl`], each record handed to `visit` in file order.
fn visit_jsonl<T: DeserializeOwned>(
    path: &Path,
    repair: bool,
    mut visit: impl FnMut(T),
) -> anyhow::Result<()> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("failed to read `{}`", path.display())),
    };
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(JudgeError::usage(format!(
            "`{}` is a directory, not a JSON Lines file; restore the file or start a new run",
            path.display()
        ))
        .into());
    }
    let mut good_len: u64 = 0;
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    let mut line_no = 0;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .with_context(|| format!("failed to read `{}`", path.display()))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        if line.ends_with(b"\n") {
            let text = std::str::from_utf8(&line).map_err(|_| {
                JudgeError::usage(format!(
                    "{}:{line_no}: not valid UTF-8; restore the file or start a new run",
                    path.display()
                ))
            })?;
            if !text.trim().is_empty() {
                let record = serde_json::from_str::<T>(text.trim_end()).map_err(|e| {
                    JudgeError::usage(format!(
                        "{}:{line_no}: not a valid record ({e}); restore the file or start a new run",
                        path.display()
                    ))
                })?;
                visit(record);
            }
            good_len += n as u64;
            continue;
        }
        // The last line has no newline. A whole record (an editor dropped the final newline)
        // is kept, with the newline put back under the lock so that appends start a new line;
        // anything else is a record cut off by a kill (maybe mid-character), cut off the file.
        let whole = std::str::from_utf8(&line)
            .ok()
            .filter(|t| !t.trim().is_empty())
            .and_then(|t| serde_json::from_str::<T>(t.trim_end()).ok());
        match whole {
            Some(record) => {
                visit(record);
                if repair {
                    append_newline(path)?;
                }
            }
            None if repair => {
                truncate_to(path, good_len)?;
                if line.iter().any(|b| !b.is_ascii_whitespace()) {
                    eprintln!(
                        "warning: {}:{line_no}: dropped a record cut off when an earlier run was killed",
                        path.display()
                    );
                }
            }
            None => {
                if line.iter().any(|b| !b.is_ascii_whitespace()) {
                    eprintln!(
                        "warning: {}:{line_no}: skipped a last line without its end (a record being written, or cut off when a process was killed)",
                        path.display()
                    );
                }
            }
        }
        break;
    }
    Ok(())
}

fn append_newline(path: &Path) -> anyhow::Result<()> {
    refuse_symlink(path)?;
    OpenOptions::new()
        .append(true)
        .open(path)
        .and_then(|mut f| f.write_all(b"\n"))
        .with_context(|| format!("failed to repair `{}`", path.display()))
}

fn truncate_to(path: &Path, len: u64) -> anyhow::Result<()> {
    refuse_symlink(path)?;
    let f = OpenOptions::new().write(true).open(path)?;
    f.set_len(len)
        .with_context(|| format!("failed to repair `{}`", path.display()))
}

/// Appends records to a JSON Lines file, one `write` + flush per record, so a killed process
/// keeps every record it finished.
#[derive(Debug)]
pub struct JsonlAppender {
    file: File,
    path: PathBuf,
}

/// Writes into a lock file just taken exclusively who holds it (its [`holder_line`]), for the
/// refusal another process gets.
fn say_who_holds(lock: &mut File) {
    let _ = lock
        .set_len(0)
        .and_then(|()| lock.write_all(holder_line().as_bytes()));
}

/// Adds this process to the holders a lock file taken shared names: one appended line, in a
/// single write, so that holders starting together do not garble each other's; the lines of
/// holders that have ended are skipped when read, and an exclusive holder empties the file.
/// A file grown past 64 KiB (many shared takers and no exclusive one since) gets no more.
fn add_shared_holder(path: &Path) {
    if std::fs::metadata(path).is_ok_and(|m| m.len() > 64 * 1024) {
        return;
    }
    if let Ok(mut file) = OpenOptions::new().read(true).append(true).open(path) {
        // A line cut short (a write that failed half way, on a full disk) is ended first, so
        // that this one stays whole and readable.
        let torn = file.metadata().is_ok_and(|m| m.len() > 0) && {
            use std::io::{Read, Seek, SeekFrom};
            let mut last = [0u8; 1];
            file.seek(SeekFrom::End(-1))
                .and_then(|_| file.read_exact(&mut last))
                .is_ok_and(|()| last[0] != b'\n')
        };
        let line = holder_line();
        let line = if torn { format!("\n{line}") } else { line };
        let _ = file.write_all(line.as_bytes());
    }
}

/// `pid N: judge ARGS` and a newline: who holds a lock. argv holds no secret (keys come from
/// the environment).
fn holder_line() -> String {
    let mut command = std::env::args().skip(1).collect::<Vec<_>>().join(" ");
    if command.len() > 300 {
        let cut = (0..=300)
            .rev()
            .find(|&i| command.is_char_boundary(i))
            .unwrap_or(0);
        command.truncate(cut);
        command.push('…');
    }
    // One line whatever the arguments hold.
    let command = command.replace(['\n', '\r'], " ");
    format!("pid {}: judge {command}\n", std::process::id())
}

/// An exclusive lock on `path` (created; a link is refused) for as long as the returned file
/// lives: one labeller's file has one writer, however many people label the run at once.
/// `what` names it in the refusal.
pub fn lock_file(path: &Path, what: &str) -> anyhow::Result<File> {
    let file = open_lock_path(path)?;
    if file.try_lock().is_err() {
        return Err(JudgeError::usage(format!(
            "{what} is in use by another judge process; wait for it to finish"
        ))
        .into());
    }
    Ok(file)
}

/// [`lock_file`], waiting for another holder to let go instead of refusing (saying
/// `waiting` on stderr first): for a short write that two processes may both make (a human
/// leaderboard's files).
pub fn wait_for_lock(path: &Path, waiting: &str) -> anyhow::Result<File> {
    let file = open_lock_path(path)?;
    if file.try_lock().is_err() {
        eprintln!("{waiting}");
        file.lock()
            .with_context(|| format!("failed to lock `{}`", path.display()))?;
    }
    Ok(file)
}

/// Opens (creating, with its folder) a lock file; a link is refused.
fn open_lock_path(path: &Path) -> anyhow::Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("failed to create `{}`", dir.display()))?;
    }
    refuse_symlink(path)?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("failed to open `{}`", path.display()))
}

/// Refuses a symbolic link where the run keeps a file it writes in place (the lock, an
/// appended log): run folders travel between people, and a link to `/etc/passwd` would have it
/// overwritten. Files written whole are replaced by a rename, which replaces a link, not its
/// target.
fn refuse_symlink(path: &Path) -> anyhow::Result<()> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(JudgeError::usage(format!(
            "`{}` is a symbolic link; judge writes to this file and will not follow a link there: remove the link",
            path.display()
        ))
        .into());
    }
    Ok(())
}

impl JsonlAppender {
    /// Opens (creating) `path` for appending; a symbolic link is refused.
    pub fn open(path: &Path) -> anyhow::Result<Self> {
        refuse_symlink(path)?;
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("failed to open `{}` for appending", path.display()))?;
        Ok(JsonlAppender {
            file,
            path: path.to_path_buf(),
        })
    }

    /// Appends one record as one line.
    pub fn append<T: Serialize>(&mut self, record: &T) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        self.file
            .write_all(&line)
            .and_then(|()| self.file.flush())
            .with_context(|| format!("failed to append to `{}`", self.path.display()))
    }
}

/// Rewrites a JSON Lines file sorted by `key`, keeping the last line of each key; lines
/// whose key cannot be read are dropped. Streams the file twice: memory holds the keys and
/// line offsets, not the records.
pub fn compact_jsonl<K: Ord>(path: &Path, key: impl Fn(&str) -> Option<K>) -> anyhow::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let read_err = || format!("failed to read `{}`", path.display());
    let mut index: std::collections::BTreeMap<K, (u64, usize)> = std::collections::BTreeMap::new();
    let mut reader = BufReader::new(File::open(path).with_context(read_err)?);
    let (mut line, mut offset) = (String::new(), 0u64);
    // Whether the file is already what the rewrite would make: every line keyed, keys rising
    // (so none twice), the last line ended. Then it is left alone: a resume with nothing to
    // do costs a read, not a copy of the whole file.
    let mut compact = true;
    loop {
        line.clear();
        let n = reader.read_line(&mut line).with_context(read_err)?;
        if n == 0 {
            break;
        }
        match key(line.trim_end()) {
            Some(k) => {
                compact &= index.last_key_value().is_none_or(|(last, _)| *last < k)
                    && line.ends_with('\n');
                index.insert(k, (offset, n));
            }
            None => compact = false,
        }
        offset += n as u64;
    }
    if compact {
        return Ok(());
    }
    let mut source = File::open(path).with_context(read_err)?;
    let mut buf = Vec::new();
    crate::cache::write_atomic_with(path, |out| {
        for (start, len) in index.into_values() {
            buf.resize(len, 0);
            source.seek(SeekFrom::Start(start))?;
            source.read_exact(&mut buf)?;
            out.write_all(&buf)?;
            if !buf.ends_with(b"\n") {
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    })
    .with_context(|| format!("failed to rewrite `{}`", path.display()))
}

/// [`read_jsonl_repairing`], calling `f` on each record in turn instead of collecting them.
pub fn for_each_jsonl<T: DeserializeOwned>(path: &Path, f: impl FnMut(T)) -> anyhow::Result<()> {
    visit_jsonl(path, true, f)
}

/// Rewrites a JSON Lines file atomically with the given records.
pub fn write_jsonl_atomic<T: Serialize>(
    path: &Path,
    records: impl IntoIterator<Item = T>,
) -> anyhow::Result<()> {
    // Streamed into the temp file: a large file is not built in memory first.
    crate::cache::write_atomic_with(path, |out| {
        for r in records {
            serde_json::to_writer(&mut *out, &r).map_err(std::io::Error::other)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    })
    .with_context(|| format!("failed to write `{}`", path.display()))
}

/// Writes pretty JSON atomically.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let mut bytes = serde_json::to_vec_pretty(value)?;
    bytes.push(b'\n');
    write_atomic(path, &bytes).with_context(|| format!("failed to write `{}`", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn run_names_are_checked() {
        assert!(validate_run_name("demo-20261130-085515").is_ok());
        for bad in ["", "../x", "a/b", ".hidden", "sp ace"] {
            assert!(validate_run_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_refusal_names_the_holders_still_running_and_shared_holders_append() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut run = RunDir::at(dir.path(), "r").expect("run");
        std::fs::create_dir_all(run.path()).expect("mkdir");
        std::fs::write(run.file("manifest.json"), "{}").expect("manifest");
        // A holder that has ended (a child that exited) and garbage before this process.
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let gone = child.id();
        child.wait().expect("wait");
        // The last line cut short, as a write that failed half way leaves it.
        std::fs::write(
            run.file(".lock"),
            format!("pid {gone}: judge label --run r --labeller old\nnot a line\npid 4x"),
        )
        .expect("lock text");
        run.lock_shared().expect("shared lock");
        let text = std::fs::read_to_string(run.file(".lock")).expect("read");
        let mine = format!("pid {}: judge ", std::process::id());
        assert!(
            text.starts_with(&format!("pid {gone}:"))
                && text.lines().last().unwrap().starts_with(&mine),
            "appended, not replaced: {text:?}"
        );
        let lock = File::open(run.file(".lock")).expect("open");
        let refusal = run.in_use(&lock).to_string();
        assert!(refusal.contains(&format!("({mine}")), "{refusal}");
        assert!(!refusal.contains("not a line"), "{refusal}");
        assert!(!refusal.contains(&format!("pid {gone}")), "{refusal}");
    }

    #[test]
    fn compaction_sorts_and_dedups_and_leaves_a_compact_file_alone() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        let key = |l: &str| serde_json::from_str::<Value>(l).ok()?["k"].as_u64();
        let inode = |p: &Path| std::fs::metadata(p).expect("metadata").ino();
        // Out of order, a key twice (the later line wins), an unreadable line, no final newline.
        std::fs::write(
            &path,
            "{\"k\":2}\n{\"k\":1,\"v\":0}\nnot json\n{\"k\":1,\"v\":1}",
        )
        .expect("write");
        compact_jsonl(&path, key).expect("compact");
        let compacted = "{\"k\":1,\"v\":1}\n{\"k\":2}\n";
        assert_eq!(std::fs::read_to_string(&path).expect("read"), compacted);
        // Already compact: not rewritten (the same file, not a renamed copy).
        let before = inode(&path);
        compact_jsonl(&path, key).expect("compact");
        assert_eq!(inode(&path), before);
        assert_eq!(std::fs::read_to_string(&path).expect("read"), compacted);
        // Each way of not being compact is rewritten.
        for text in [
            "{\"k\":1}\n{\"k\":1}\n",
            "{\"k\":1}\n{\"k\":2}",
            "{\"k\":1}\nx\n",
        ] {
            std::fs::write(&path, text).expect("write");
            let before = inode(&path);
            compact_jsonl(&path, key).expect("compact");
            assert_ne!(inode(&path), before, "{text:?}");
        }
    }

    #[test]
    fn waiting_for_a_lock_returns_once_its_holder_lets_go() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("labels/.w.lock");
        let held = wait_for_lock(&path, "waiting").expect("free: taken at once");
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let second = wait_for_lock(&path, "waiting").expect("taken after the first");
                tx.send(()).expect("send");
                drop(second);
            })
        };
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200))
                .is_err(),
            "the second waits while the first holds it"
        );
        drop(held);
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("the second takes it once the first lets go");
        waiter.join().expect("waiter");
    }

    #[test]
    fn torn_last_line_is_dropped_and_appends_continue() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"a\":2}\n{\"a\":").expect("write");
        let rows: Vec<Value> = read_jsonl_repairing(&path).expect("read");
        assert_eq!(rows, vec![json!({"a":1}), json!({"a":2})]);
        let mut app = JsonlAppender::open(&path).expect("open");
        app.append(&json!({"a": 3})).expect("append");
        let rows: Vec<Value> = read_jsonl_repairing(&path).expect("read");
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn a_whole_last_record_without_its_newline_is_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, "{\"a\":1}\n{\"a\":2}").expect("write");
        let rows: Vec<Value> = read_jsonl_skipping_torn(&path).expect("read");
        assert_eq!(rows, vec![json!({"a":1}), json!({"a":2})]);
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"a\":1}\n{\"a\":2}");
        let rows: Vec<Value> = read_jsonl_repairing(&path).expect("read");
        assert_eq!(rows.len(), 2);
        JsonlAppender::open(&path)
            .expect("open")
            .append(&json!({"a": 3}))
            .expect("append");
        let rows: Vec<Value> = read_jsonl_repairing(&path).expect("read");
        assert_eq!(rows, vec![json!({"a":1}), json!({"a":2}), json!({"a":3})]);
    }

    /// A kill can cut a record inside a multi-byte character: still a torn line, repaired.
    /// Invalid UTF-8 on a whole line is a bad record naming its line.
    #[test]
    fn invalid_utf8_is_a_torn_line_at_the_end_and_an_error_before() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        let mut bytes = b"{\"a\":1}\n{\"a\":\"caf".to_vec();
        bytes.push(0xC3);
        std::fs::write(&path, &bytes).expect("write");
        let rows: Vec<Value> = read_jsonl_repairing(&path).expect("read");
        assert_eq!(rows, vec![json!({"a":1})]);
        assert_eq!(std::fs::read(&path).expect("read"), b"{\"a\":1}\n");
        std::fs::write(&path, b"{\"a\":1}\n\xff\n{\"a\":2}\n").expect("write");
        let e = read_jsonl_repairing::<Value>(&path)
            .expect_err("bad line")
            .to_string();
        assert!(e.contains("x.jsonl:2: not valid UTF-8"), "{e}");
    }

    #[test]
    fn bad_line_in_the_middle_names_the_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("x.jsonl");
        std::fs::write(&path, "{\"a\":1}\nnot json\n{\"a\":2}\n").expect("write");
        let e = read_jsonl_repairing::<Value>(&path)
            .expect_err("bad line")
            .to_string();
        assert!(e.contains("x.jsonl:2"), "{e}");
    }

    #[test]
    fn a_lock_held_elsewhere_is_refused_and_shared_within_the_process() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut a = RunDir::at(dir.path(), "r").expect("name");
        a.create_and_lock().expect("first lock");
        // This process again: shared.
        let mut b = RunDir::at(dir.path(), "r").expect("name");
        b.create_and_lock().expect("shared");
        let lock_path = dir.path().join("r/.lock");
        let holder = std::fs::read_to_string(&lock_path).expect("read");
        assert!(
            holder.starts_with(&format!("pid {}: judge ", std::process::id())),
            "{holder}"
        );
        drop((a, b));
        // Let go of, the lock file names no one.
        assert_eq!(std::fs::read_to_string(&lock_path).expect("read"), "");
        // Another holder (its own open file description, as another process has).
        let mut other = File::options()
            .read(true)
            .write(true)
            .open(&lock_path)
            .expect("open");
        other.try_lock().expect("free once both are dropped");
        writeln!(other, "pid 1: judge compare --run r").expect("write");
        let mut c = RunDir::at(dir.path(), "r").expect("name");
        let e = c.create_and_lock().expect_err("held elsewhere").to_string();
        assert!(
            e.contains("in use by another judge process (pid 1: judge compare --run r)"),
            "{e}"
        );
        drop(other);
        c.create_and_lock().expect("lock after release");
    }

    #[test]
    fn links_where_the_run_writes_in_place_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("precious");
        std::fs::write(&target, "keep me").expect("write");
        let run = dir.path().join("r");
        std::fs::create_dir(&run).expect("mkdir");
        std::os::unix::fs::symlink(&target, run.join(".lock")).expect("link");
        std::os::unix::fs::symlink(&target, run.join("outputs.jsonl")).expect("link");
        let mut r = RunDir::at(dir.path(), "r").expect("name");
        let e = r.create_and_lock().expect_err("lock link").to_string();
        assert!(e.contains(".lock` is a symbolic link"), "{e}");
        let e = JsonlAppender::open(&run.join("outputs.jsonl"))
            .expect_err("log link")
            .to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        // A dangling link would create its target.
        std::fs::remove_file(run.join(".lock")).expect("rm");
        std::os::unix::fs::symlink(dir.path().join("new"), run.join(".lock")).expect("link");
        assert!(r.create_and_lock().is_err());
        assert!(!dir.path().join("new").exists());
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep me");
    }

    #[test]
    fn fresh_names_never_reuse_a_folder() {
        let dir = tempfile::tempdir().expect("tempdir");
        let names: Vec<String> = (0..3)
            .map(|_| claim_fresh_run_name(dir.path(), "s-20261130-120000").expect("claim"))
            .collect();
        assert_eq!(
            names,
            [
                "s-20261130-120000",
                "s-20261130-120000-2",
                "s-20261130-120000-3"
            ]
        );
    }
}
