//! Ctrl-C (and SIGTERM) for the commands that work through many items (`generate`, `compare`,
//! `check`, `run`): the first SIGINT or SIGTERM sets a process-wide flag that every loop of items polls (stop
//! starting items, let those in flight finish, write everything, exit 130); a second one
//! exits at once with 130 (every finished record is already on disk). One listener for the
//! whole process, so a later step of `judge run` is as interruptible as the first.

use std::io::Write;
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);
static INSTALL: Once = Once::new();
/// What the first signal's message says happens next (see [`say_on_stop`]).
static NEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
const FINISH_IN_FLIGHT: &str = "finishing the work in flight (press Ctrl-C again to quit at once)";

/// What a quit at once (the second signal) says is left to do: set by a command once its
/// run exists (see [`on_quit_say`]).
static ON_QUIT: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// Signals closer together than this are one: `timeout` (without `--foreground`) sends its
/// SIGTERM to the command and to the command's process group, so the command gets it twice
/// at once, which must not be taken for a second Ctrl-C that quits at once.
const SAME_SIGNAL: std::time::Duration = std::time::Duration::from_millis(500);

/// Makes a quit at once (a second Ctrl-C or SIGTERM) say `what`: that the run keeps what was
/// finished and how to resume it. The latest call holds.
pub fn on_quit_say(what: String) {
    *ON_QUIT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(what);
}

/// The hint for a run: every finished item is recorded; `--run NAME` resumes it. `paid`: the
/// command sends provider requests, which a quit at once leaves unrecorded though billed.
pub fn resume_note(run: &str, paid: bool) -> String {
    let in_flight = if paid {
        " (requests that were in flight are not recorded, and a provider may bill them all the same)"
    } else {
        ""
    };
    format!(
        "every finished item of run `{run}` is recorded: rerun the same command with `--run {run}` to resume{in_flight}"
    )
}

/// Makes the message the first signal prints (once [`install`]ed) say `next`, what happens
/// now, instead of "finishing the work in flight": for a command with no items in flight,
/// such as a labelling session. The first call's `next` holds.
pub fn say_on_stop(next: String) {
    let _ = NEXT.set(next);
}

/// Starts listening for SIGINT and SIGTERM (once per process; later calls do nothing). Returns after the
/// listener is registered, so a Ctrl-C from then on is never lost.
pub fn install() {
    INSTALL.call_once(|| {
        let (ready, registered) = std::sync::mpsc::channel();
        let listener = std::thread::Builder::new()
            .name("ctrl-c".into())
            .spawn(move || listen(ready));
        if listener.is_ok() {
            // Without a listener SIGINT keeps its default action, which also stops us.
            let _ = registered.recv();
        }
    });
}

/// Held by a write that must not be cut in half by the second signal's exit (see
/// [`hold_exit`]); the exit takes it exclusively.
static HOLD: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// While the returned guard lives, a second Ctrl-C or SIGTERM waits before it exits: for
/// writes of several files that belong together (a rank's leaderboards), which an exit
/// between two renames would leave mixed. Installs the listener, so a first signal then only
/// sets the flag (and the caller finishes its write). `kill -9` cannot be held off.
pub fn hold_exit() -> std::sync::RwLockReadGuard<'static, ()> {
    install();
    HOLD.read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Exits with 130 once no write that [`hold_exit`] guards is under way.
pub fn exit_interrupted() -> ! {
    let _wait = HOLD
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    std::process::exit(i32::from(crate::error::EXIT_INTERRUPTED));
}

/// Whether Ctrl-C was pressed.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

fn listen(ready: std::sync::mpsc::Sender<()>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async move {
        // Each signal on its own: one that cannot be registered leaves the other working.
        let mut interrupts = signal(SignalKind::interrupt()).ok();
        let mut terminates = signal(SignalKind::terminate()).ok();
        if interrupts.is_none() && terminates.is_none() {
            return;
        }
        let _ = ready.send(());
        // SIGTERM (`timeout`, `kill`, a CI job cancelled, `docker stop`) is treated as Ctrl-C:
        // what was paid for in flight is recorded rather than lost.
        let first = tokio::select! {
            got = next(&mut interrupts) => got.map(|()| "Ctrl-C"),
            got = next(&mut terminates) => got.map(|()| "SIGTERM"),
        };
        if let Some(what) = first {
            // Said before the stop takes effect (a session that ends at once still says it),
            // but a stderr that blocks (a full pipe nobody reads) holds neither the stop nor
            // this listener up for more than a moment.
            // The window counts from the signal itself, not from the note's write.
            let first_at = std::time::Instant::now();
            let written = say(format!(
                "\nstopping ({what}): {}",
                NEXT.get().map_or(FINISH_IN_FLIGHT, String::as_str)
            ));
            let _ = written.recv_timeout(std::time::Duration::from_millis(200));
            REQUESTED.store(true, Ordering::SeqCst);
            loop {
                let again = tokio::select! {
                    got = next(&mut interrupts) => got,
                    got = next(&mut terminates) => got,
                };
                if again.is_none() {
                    break;
                }
                // Counted from the first, not chained: Ctrl-C pressed again and again quits.
                if first_at.elapsed() < SAME_SIGNAL {
                    continue;
                }
                let _wait = HOLD
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                let note = ON_QUIT
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone();
                if let Some(what) = note {
                    let written = say(format!("quitting at once; {what}"));
                    // A blocked stderr does not hold the exit up for long.
                    let _ = written.recv_timeout(std::time::Duration::from_millis(200));
                }
                std::process::exit(i32::from(crate::error::EXIT_INTERRUPTED));
            }
        }
    });
}

/// Writes `line` to stderr on a thread of its own, so that a stderr that blocks holds up
/// nobody; the receiver hears when it is written. Not `eprintln!`: a stderr that cannot be
/// written must not end the process.
fn say(line: String) -> std::sync::mpsc::Receiver<()> {
    let (done, written) = std::sync::mpsc::channel();
    let _ = std::thread::Builder::new()
        .name("signal-note".into())
        .spawn(move || {
            let _ = writeln!(std::io::stderr(), "{line}");
            let _ = done.send(());
        });
    written
}

/// The next delivery of `signal`; never, for one that could not be registered.
async fn next(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match signal {
        Some(s) => s.recv().await,
        None => std::future::pending().await,
    }
}
