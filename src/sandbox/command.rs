//! Building the sandboxed command: the Python launcher (rlimits) and runner (check.py, from stdin, to its
//! end), and the bwrap / setpriv / plain command lines.

use std::ffi::OsString;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use super::*;

/// `RLIMIT_NOFILE` for the sandboxed process.
pub(super) const MAX_OPEN_FILES: u64 = 256;

/// Written to stderr by the launcher right before it `exec`s the check.
pub(super) const LAUNCH_MARKER: &[u8] = b"\x1ejudge-sandbox:launched\x1e\n";

/// Written to stderr by the runner after `check.py` ran to its end (and only then), with the
/// run's nonce between `FINISH_PREFIX` and `FINISH_SUFFIX`.
pub(super) const FINISH_PREFIX: &[u8] = b"\x1ejudge-sandbox:finished:";
pub(super) const FINISH_SUFFIX: &[u8] = b"\x1e\n";

/// Written to stderr by the runner, with the run's nonce, when `check.py` itself does not
/// compile (before the solution could run): no verdict on the answer.
pub(super) const INVALID_PREFIX: &[u8] = b"\x1ejudge-sandbox:check-invalid:";

/// The finish marker of a run whose nonce is `nonce` (ASCII hex).
pub(super) fn finish_marker(nonce: &str) -> Vec<u8> {
    [FINISH_PREFIX, nonce.as_bytes(), FINISH_SUFFIX].concat()
}

/// The marker of a `check.py` that does not compile, for the nonce `nonce`.
pub(super) fn invalid_marker(nonce: &str) -> Vec<u8> {
    [INVALID_PREFIX, nonce.as_bytes(), FINISH_SUFFIX].concat()
}

/// The runner the launcher `exec`s: runs `check.py` as `__main__` and reports whether it ran
/// to its end. A check passes by running to its end or by ending itself with `SystemExit(0)`
/// (`sys.exit(0)`, `unittest.main()`, `exit()`, `sys.exit(doctest.testmod().failed)`: raised
/// in check code or by unittest's or site's exit sites called from it); a `SystemExit(0)` from
/// anywhere else (the solution's module-level `sys.exit(main())`, argparse's `--version`, a
/// worker process's exit re-raised by concurrent.futures) is a failure, and an exit that skips
/// the finish marker (`os._exit(0)` in the solution) is caught on the Rust side. Only the
/// runner's own process writes the marker (not one the check forked).
///
/// The marker carries a nonce that the harness writes to the runner's stdin, followed by the
/// source of `check.py`: read and replaced by /dev/null before anything else runs, neither is
/// in a file, argument or environment variable the solution can read (the hidden test is not
/// in the working directory). And a check passes only if it ran with the interpreter as
/// it was: a solution that replaced `sys.exit`, `os._exit`, `print`, the exception classes
/// or installed a trace function (to silence the check's failure) fails. Both raise the bar;
/// neither stops code written to defeat an in-process check (see the README).
pub(super) const RUNNER: &str = r#"import os, sys, traceback, builtins, linecache, types
_parts = []
while True:
    _chunk = os.read(0, 65536)
    if not _chunk:
        break
    _parts.append(_chunk)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
os.close(_null)
_nonce, _, _source = b''.join(_parts).partition(b'\n')
_marker = PREFIX + _nonce.strip() + SUFFIX
_invalid = INVALID + _nonce.strip() + SUFFIX
del _parts, _chunk, _nonce
_write, _getattr, _gettrace, _getprofile, _getpid = os.write, getattr, sys.gettrace, sys.getprofile, os.getpid
from itertools import islice as _islice
# The built-ins the runner uses after the solution ran, bound as its own globals (which come
# before `builtins` in a lookup): a solution that replaced `builtins.zip` would otherwise
# steer the runner's own checks.
for _n in ('zip', 'type', 'isinstance', 'issubclass', 'reversed', 'id', 'next', 'len',
           'int', 'any', 'all', 'iter', 'list', 'tuple', 'str', 'repr', 'callable'):
    globals()[_n] = _getattr(builtins, _n)
# Compiled from bytes, as `python3 check.py` reads it: a byte order mark or a coding cookie
# sets the encoding and every line ending is a newline. Tracebacks quote the lines from
# linecache, decoded the same way.
try:
    _check = compile(_source, 'check.py', 'exec')
    import io, tokenize
    _text = _source.decode(tokenize.detect_encoding(io.BytesIO(_source).readline)[0])
    _text = _text.replace('\r\n', '\n').replace('\r', '\n')
except BaseException:
    # Nothing of the solution has run yet: the check itself is broken, no verdict.
    traceback.print_exc()
    sys.stderr.flush()
    _write(2, _invalid)
    os._exit(1)
linecache.cache['check.py'] = (len(_text), None, _text.splitlines(True), 'check.py')
_EXIT_NAMES = ('exit', 'quit', 'main', 'TestProgram')
def _exit_spans(text):
    # Where the check may end itself, by source span (end -> start): its `raise` statements
    # and its calls of something named exit, quit, main or TestProgram (sys.exit, exit(),
    # unittest.main(), a main() of its own), or of a name it imports one of those as (`from
    # unittest import main as run_tests`). Not a call of the solution's (`solution.main()`,
    # `from solution import main`): a solution's `main = sys.exit` is not the check ending
    # itself. Any other instruction of the check that raises SystemExit(0) ran the solution's
    # code through a slot (`__repr__ = sys.exit` under `%r`, `__eq__` under `==`).
    import ast
    spans = {}
    try:
        tree = ast.parse(text)
        names, foreign, explicit, star = set(_EXIT_NAMES), set(), set(), False
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom):
                for a in n.names:
                    if (n.module or '').split('.')[0] == 'solution':
                        star = star or a.name == '*'
                        if a.name != '*':
                            foreign.add(a.asname or a.name)
                    elif a.name in _EXIT_NAMES:
                        names.add(a.asname or a.name)
                        explicit.add(a.asname or a.name)
            elif isinstance(n, ast.Import):
                for a in n.names:
                    if a.name.split('.')[0] == 'solution':
                        foreign.add((a.asname or a.name).split('.')[0])
        # `from solution import *` may bring any exit-like name the check does not import
        # explicitly from elsewhere (`from unittest import main` keeps `main` the check's).
        if star:
            foreign.update(n for n in _EXIT_NAMES if n not in explicit)
        def exit_named(v):
            # `sys.exit`, `unittest.main`, `exit`: not the solution's.
            base = v
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in foreign:
                return False
            return (isinstance(v, ast.Name) and v.id in names) or (
                isinstance(v, ast.Attribute) and v.attr in _EXIT_NAMES)
        # Names the check gives an exit (`die = sys.exit`) or a TestProgram subclass.
        for n in ast.walk(tree):
            if isinstance(n, ast.Assign) and exit_named(n.value):
                names.update(t.id for t in n.targets if isinstance(t, ast.Name))
            elif (isinstance(n, ast.AnnAssign) and n.value is not None
                  and exit_named(n.value) and isinstance(n.target, ast.Name)):
                names.add(n.target.id)
            elif isinstance(n, ast.ClassDef) and any(exit_named(b) for b in n.bases):
                names.add(n.name)
        names -= foreign
        for n in ast.walk(tree):
            f = n.func if isinstance(n, ast.Call) else None
            if isinstance(n, ast.Raise) or (f is not None and exit_named(f)):
                spans[(n.end_lineno, n.end_col_offset)] = (n.lineno, n.col_offset)
    except BaseException:
        pass
    return spans
_exit_spans = _exit_spans(_text)
_uses_unittest = b'unittest' in _source
del _source, _text
_pid = _getpid()
def _codes(code, ids):
    # The check's own code objects, by identity: its module body and everything compiled
    # with it (functions, classes, comprehensions). Code made later (exec) is not the check's.
    ids.add(id(code))
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _codes(c, ids)
    return ids
_check_codes = _codes(_check, set())
def _int_value(c):
    # The status Python's own exit takes from an int, or from a subclass of int (bool,
    # IntEnum) by its real value, whatever methods it overrides; None for anything else.
    return int.__int__(c) if issubclass(type(c), int) else None
def _zero(c):
    return c is None or _int_value(c) == 0
# (_sitebuiltins, where exit() and quit() live, is a frozen module from Python 3.11 on.)
_exit_sites = tuple(os.path.join(os.path.dirname(os.__file__), *p)
                    for p in (('unittest', 'main.py'), ('_sitebuiltins.py',))) + ('<frozen _sitebuiltins>',)
def _ended_by_the_check(e, c):
    # SystemExit(0) as the check itself decides it: raised in check code (`sys.exit(0)`,
    # `raise SystemExit`), or by `unittest.main()` / `exit()` called from it. The innermost
    # frame of the check's must have nothing inside it but those exit sites: no solution
    # code, no other library deciding to exit (argparse), no exception re-raised from
    # another process (concurrent.futures). Frames outside it do not matter.
    # And that innermost check frame must stand at one of the check's own exits (a `raise`,
    # a call of exit/quit/main): a SystemExit(0) that a slot of the solution's object raised
    # from C (`%r`, `==`, `list(x)`) has no Python frame of its own.
    if not _zero(c):
        return False
    frames, tb = [], e.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lasti))
        tb = tb.tb_next
    for f, lasti in reversed(frames):
        if id(f.f_code) in _check_codes:
            return _at_exit(f.f_code, lasti)
        if f.f_code.co_filename not in _exit_sites:
            return False
    return False
def _at_exit(code, lasti):
    positions = _getattr(code, 'co_positions', None)
    if positions is None:
        # Before Python 3.11 instructions have no source spans: the frame rule alone.
        return True
    at = next(_islice(positions(), lasti // 2, None), None)
    if not at or None in at:
        return False
    # The instruction's span ends where the exit's does and starts inside it (a call whose
    # receiver spans lines is placed from its attribute name on).
    start = _exit_spans.get((at[1], at[3]))
    return start is not None and (at[0], at[2]) >= start
_guard = [(sys, 'exit'), (os, '_exit'), (os, 'kill'), (os, 'abort'),
          (builtins, 'print'), (builtins, 'exit'), (builtins, 'quit'),
          (builtins, 'SystemExit'), (builtins, 'BaseException'),
          (builtins, 'Exception'), (builtins, 'AssertionError')]
if _getattr(builtins, 'exit', None) is not None:
    # The class of site's exit() and quit(), whose `__call__` raises their SystemExit.
    _guard.append((type(builtins.exit), '__call__'))
if _uses_unittest:
    # What a unittest check runs on: a solution that turned an assertion or the runner into
    # a no-op would pass every test (imported here only for checks that import it anyway).
    import unittest as _ut
    _guard += [(_ut, n) for n in ('main', 'TestProgram', 'TestCase', 'TextTestRunner',
                                  'TestResult', 'TextTestResult', 'TestSuite', 'TestLoader',
                                  'defaultTestLoader')]
    _guard += [(_ut.TestCase, 'failureException'), (_ut.runner, 'TextTestRunner')]
    # What only shapes the report a check may change (`shortDescription` to hide docstrings).
    _cosmetic = ('shortDescription', '__str__', '__repr__', 'id', 'countTestCases',
                 'getDescription', 'printErrors', 'printErrorList')
    for _cls in (_ut.TestCase, _ut.TestProgram, _ut.TextTestRunner, _ut.TestResult,
                 _ut.TextTestResult, _ut.TestSuite, _ut.TestLoader):
        # Methods only: a check may set data on them (`TestLoader.sortTestMethodsUsing =
        # None`, `TextTestRunner.resultclass`, `TestCase.maxDiff`).
        _guard += [(_cls, n) for n, v in list(vars(_cls).items())
                   if isinstance(v, types.FunctionType) and n not in _cosmetic]
def _snapshot(v):
    # A function's code and defaults too: swapping `__code__` keeps the object.
    return (v, _getattr(v, '__code__', None), _getattr(v, '__defaults__', None),
            _getattr(v, '__kwdefaults__', None))
_before = [_snapshot(_getattr(o, n, None)) for o, n in _guard]
def _replaced(now, before):
    # By identity: `==` would ask a replacement's own `__eq__`, which can say yes.
    for a, b in zip(now, before):
        if a is not b:
            return True
    return False
# A finalizer the collector runs (armed with a low threshold) could rewrite the SystemExit
# the check raised on failure into status 0.
import gc as _gc
_gc_threshold, _gc_callbacks = _gc.get_threshold, _gc.callbacks
def _gc_state():
    # Not whether it is enabled: a solution may turn it off for speed, and a finalizer then
    # runs only when code calls for a collection. Read through what was bound at the start
    # (a solution could rebind `gc.get_threshold` or `gc.callbacks`).
    return (_gc_threshold(), len(_gc_callbacks), _getattr(_gc, 'callbacks', None) is _gc_callbacks,
            _getattr(_gc, 'get_threshold', None) is _gc_threshold)
_gc_before = _gc_state()
sys.argv = ['check.py']
sys.path.insert(0, os.getcwd())
code = 1
try:
    # A real module in sys.modules['__main__'], as `python3 check.py` (and runpy) gives it:
    # pickle, dataclasses and unittest look up what the check defines there.
    _main = types.ModuleType('__main__')
    _main.__file__ = 'check.py'
    _main.__builtins__ = builtins
    # Named `__main__` by its spec, a process started by multiprocessing's spawn or
    # forkserver (Linux's default from Python 3.14) does not look for the file check.py,
    # which is not in the sandbox: it imports only what it unpickles (the solution's
    # functions), where a search for the file would fail and restart the workers forever.
    import importlib.machinery
    _main.__spec__ = importlib.machinery.ModuleSpec('__main__', None)
    sys.modules['__main__'] = _main
    exec(_check, _main.__dict__)
    code = 0
except SystemExit as e:
    # Read first, before anything the solution left behind can run.
    c = e.code
    if _ended_by_the_check(e, c):
        code = 0
    elif _zero(c):
        sys.stderr.write('judge: SystemExit(%s) was raised where check.py did not end itself (its own exits: a `raise` statement, or a call of exit, quit, main or TestProgram, such as sys.exit(0) or unittest.main()); only the check may end early with status 0\n' % (c if c is None else _int_value(c),))
    elif _int_value(c) is not None:
        code = _int_value(c)
        code = code if 0 < code < 256 else 1
    else:
        sys.stderr.write('%s\n' % (c,))
except BaseException:
    traceback.print_exc()
_changed = [(o.__name__ + '.' + n if isinstance(o, type) else n)
            for (o, n), b in zip(_guard, _before) if _replaced(_snapshot(_getattr(o, n, None)), b)]
if _gettrace() is not None or _getprofile() is not None:
    _changed.append('a trace or profile function')
if _gc_state() != _gc_before:
    _changed.append("the garbage collector's settings")
# unittest.main() reads them: an object whose methods are sys.exit would end it from
# unittest's own frame.
# (By identity: `in` would ask a metaclass's `__eq__`.)
def _plain(v):
    return type(v) is list or type(v) is tuple
if not _plain(sys.argv) or not _plain(sys.warnoptions):
    _changed.append('sys.argv or sys.warnoptions (by an object that is not a list)')
if code == 0 and _changed:
    code = 1
    try:
        sys.__stderr__.write('judge: check.py ended with %s replaced (by the solution, or by the check without restoring it); a check passes only with the interpreter as it found it\n' % ', '.join(_changed))
    except BaseException:
        pass
for _stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
    try:
        _stream.flush()
    except BaseException:
        pass
# A process the check forked runs this too: only the runner's own process may finish.
if code == 0 and _getpid() == _pid:
    _write(2, _marker)
os._exit(code)
"#;

/// Exit status of the launcher when it cannot set the limits or `exec`.
pub(super) const LAUNCHER_FAILED: i32 = 125;

/// The launcher: sets the rlimits given in argv, announces itself on fd 2,
/// then `exec`s the rest of argv. A limit of 0 for NPROC means "leave as is".
pub(super) const LAUNCHER: &str = r#"import os, resource, sys
def lim(name, soft, hard):
    r = getattr(resource, name)
    _, cur = resource.getrlimit(r)
    if cur != resource.RLIM_INFINITY:
        hard = min(hard, cur)
        soft = min(soft, hard)
    resource.setrlimit(r, (soft, hard))
try:
    cpu, mem, fsize, nproc, nofile = (int(a) for a in sys.argv[1:6])
    lim('RLIMIT_CORE', 0, 0)
    lim('RLIMIT_CPU', cpu, cpu + 1)
    lim('RLIMIT_AS', mem, mem)
    lim('RLIMIT_FSIZE', fsize, fsize)
    lim('RLIMIT_NOFILE', nofile, nofile)
    if nproc > 0:
        lim('RLIMIT_NPROC', nproc, nproc)
    # Killed with the harness (without bwrap's --die-with-parent, a check that sleeps would
    # outlive a `kill -9` of judge): PR_SET_PDEATHSIG, kept across the exec; a parent already
    # gone is checked after it is set.
    parent = os.getppid()
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)
    except BaseException:
        pass
    if os.getppid() != parent:
        os._exit(125)
    os.write(2, MARKER)
    os.execv(sys.argv[6], sys.argv[6:])
except BaseException as e:
    os.write(2, ('judge sandbox launcher failed: %r\n' % (e,)).encode())
    os._exit(125)
"#;

/// The launcher's arguments after `python -c LAUNCHER`.
pub(super) fn launcher_args(policy: &SandboxPolicy, nproc: u64) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "-c".into(),
        LAUNCHER_SOURCE.get_or_init(launcher_source).into(),
    ];
    for n in [
        policy.cpu_secs.max(1),
        policy.memory_bytes,
        policy.file_size_bytes,
        nproc,
        MAX_OPEN_FILES,
    ] {
        args.push(n.to_string().into());
    }
    args.push(policy.python.clone().into());
    args.push("-c".into());
    args.push(
        RUNNER_SOURCE
            .get_or_init(|| {
                RUNNER
                    .replace("PREFIX", &bytes_literal(FINISH_PREFIX))
                    .replace("SUFFIX", &bytes_literal(FINISH_SUFFIX))
                    .replace("INVALID", &bytes_literal(INVALID_PREFIX))
            })
            .into(),
    );
    args
}

/// [`RUNNER`] with the finish marker's prefix and suffix spelled in.
pub(super) static RUNNER_SOURCE: OnceLock<String> = OnceLock::new();

/// A Python bytes literal for `bytes`.
pub(super) fn bytes_literal(bytes: &[u8]) -> String {
    let escaped: String = bytes.iter().map(|b| format!("\\x{b:02x}")).collect();
    format!("b'{escaped}'")
}

/// [`LAUNCHER`] with the marker spelled in.
pub(super) static LAUNCHER_SOURCE: OnceLock<String> = OnceLock::new();

/// Build the launcher's source: `MARKER` becomes a bytes literal.
pub(super) fn launcher_source() -> String {
    let source = LAUNCHER.replace("MARKER", &bytes_literal(LAUNCH_MARKER));
    debug_assert!(source.contains(&format!("_exit({LAUNCHER_FAILED})")));
    source
}

/// `[setpriv …] python -c LAUNCHER …` in the host directory (plain mode);
/// `drop_to` is `setpriv` and the uid to become, when the harness is root.
pub(super) fn plain_command(
    policy: &SandboxPolicy,
    drop_to: Option<(&Path, u32)>,
    workdir: &Path,
) -> Command {
    // Not root: RLIMIT_NPROC would count all of the user's processes.
    let nproc = if drop_to.is_some() {
        policy.max_processes
    } else {
        0
    };
    let mut cmd = match drop_to {
        Some((setpriv, uid)) => {
            let mut c = Command::new(setpriv);
            c.args(setpriv_args(uid)).arg(&policy.python);
            c
        }
        None => Command::new(&policy.python),
    };
    cmd.args(launcher_args(policy, nproc))
        .current_dir(workdir)
        .env_clear()
        .envs(child_env(&workdir.to_string_lossy()));
    cmd
}

/// `setpriv` arguments (become `uid`:`uid`) up to and including `--`.
pub(super) fn setpriv_args(uid: u32) -> Vec<String> {
    vec![
        format!("--reuid={uid}"),
        format!("--regid={uid}"),
        "--clear-groups".into(),
        "--no-new-privs".into(),
        "--".into(),
    ]
}

/// Optional bwrap flags, detected from `bwrap --help`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct BwrapFeatures {
    /// `--size` for tmpfs (bubblewrap ≥ 0.5).
    pub(super) size: bool,
    /// `--disable-userns` (bubblewrap ≥ 0.8).
    pub(super) disable_userns: bool,
}

/// Features of the bwrap at `path`, probed once per process.
pub(super) fn bwrap_features(path: &Path) -> BwrapFeatures {
    static FEATURES: OnceLock<BwrapFeatures> = OnceLock::new();
    *FEATURES.get_or_init(|| {
        let Ok(out) = Command::new(path)
            .arg("--help")
            .env_clear()
            .stdin(Stdio::null())
            .output()
        else {
            return BwrapFeatures::default();
        };
        let help = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        BwrapFeatures {
            size: help.contains("--size"),
            disable_userns: help.contains("--disable-userns"),
        }
    })
}

/// The full `[setpriv …] bwrap … -- python -c LAUNCHER …` command.
pub(super) fn bwrap_command(
    policy: &SandboxPolicy,
    bwrap: &Path,
    drop_to: Option<(&Path, u32)>,
    host_dir: &Path,
) -> Command {
    let features = bwrap_features(bwrap);
    let mut cmd = match drop_to {
        Some((setpriv, uid)) => {
            let mut c = Command::new(setpriv);
            c.args(setpriv_args(uid)).arg(bwrap);
            c
        }
        None => Command::new(bwrap),
    };
    cmd.args(bwrap_args(policy, features, host_dir))
        .arg("--")
        .arg(&policy.python)
        .args(launcher_args(policy, policy.max_processes))
        .env_clear();
    cmd
}

/// bwrap's own arguments (namespaces, mounts, environment), without `--`.
pub(super) fn bwrap_args(
    policy: &SandboxPolicy,
    features: BwrapFeatures,
    host_dir: &Path,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = Vec::new();
    let mut push = |items: &[&str]| a.extend(items.iter().map(OsString::from));
    let uid = SANDBOX_UID.to_string();
    push(&["--unshare-all", "--unshare-user"]);
    if features.disable_userns {
        push(&["--disable-userns"]);
    }
    push(&["--uid", &uid, "--gid", &uid, "--hostname", "sandbox"]);
    push(&["--die-with-parent", "--new-session", "--cap-drop", "ALL"]);
    push(&["--ro-bind", "/usr", "/usr"]);
    for dir in ["/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"] {
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(dir) {
                    a.extend(["--symlink".into(), target.into(), dir.into()]);
                }
            }
            Ok(meta) if meta.is_dir() => a.extend(["--ro-bind".into(), dir.into(), dir.into()]),
            _ => {}
        }
    }
    let mut etc: Vec<String> = [
        "ld.so.cache",
        "ld.so.conf",
        "ld.so.conf.d",
        "localtime",
        "passwd",
        "group",
        "nsswitch.conf",
    ]
    .iter()
    .map(|s| format!("/etc/{s}"))
    .collect();
    if let Ok(entries) = std::fs::read_dir("/etc") {
        let mut py: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name.starts_with("python3"))
            .map(|name| format!("/etc/{name}"))
            .collect();
        py.sort();
        etc.extend(py);
    }
    for path in &etc {
        a.extend(["--ro-bind-try".into(), path.into(), path.into()]);
    }
    a.extend(["--proc", "/proc", "--dev", "/dev"].map(OsString::from));
    // /dev is a tmpfs of half the RAM: /dev/shm gets its own, capped like /tmp, and /dev is
    // made read-only below (without --size, /dev/shm stays read-only with it).
    if features.size {
        a.extend([
            "--size".into(),
            policy.tmpfs_bytes.max(1 << 20).to_string().into(),
            "--perms".into(),
            "1777".into(),
            "--tmpfs".into(),
            "/dev/shm".into(),
        ]);
    }
    a.extend(["--perms", "1777"].map(OsString::from));
    if features.size {
        a.extend([
            "--size".into(),
            policy.tmpfs_bytes.max(1 << 20).to_string().into(),
        ]);
    }
    a.extend(["--tmpfs", "/tmp", "--dir", SANDBOX_WORKDIR].map(OsString::from));
    // check.py is not bound: the runner gets it on stdin (see RUNNER).
    a.push("--ro-bind".into());
    a.push(host_dir.join("solution.py").into());
    a.push(format!("{SANDBOX_WORKDIR}/solution.py").into());
    a.extend(
        [
            "--remount-ro",
            "/",
            "--remount-ro",
            "/dev",
            "--chdir",
            SANDBOX_WORKDIR,
            "--clearenv",
        ]
        .map(OsString::from),
    );
    for (key, value) in child_env(SANDBOX_WORKDIR) {
        a.extend(["--setenv".into(), key.into(), value.into()]);
    }
    a
}

/// The absolute path of `name` on the harness's `PATH`, else in `/usr/bin`
/// or `/bin`.
pub(super) fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The harness's effective uid, from `/proc/self/status`.
pub(super) fn effective_uid() -> io::Result<u32> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|rest| rest.split_whitespace().nth(1))
        .and_then(|euid| euid.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no Uid line"))
}
