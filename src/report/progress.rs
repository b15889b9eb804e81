//! The progress bar on stderr (indicatif): done/total, cache hits, failures, cost so far, ETA.
//! Hidden when stderr is not a terminal or with `--quiet`.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::format_usd;

#[derive(Debug, Default)]
struct Counts {
    cached: u64,
    failed: u64,
    cost_usd: f64,
    unpriced: bool,
    /// Priced items whose spending is unknown (no usage came back).
    unknown: u64,
}

/// Progress of a batch of items.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    counts: Mutex<Counts>,
    /// Items that cost nothing (local checks): no money on the bar.
    free: bool,
    /// Without a terminal (a CI log, stderr to a file): the thread that prints a status line
    /// now and then, and what stops it.
    ticker: Mutex<Option<(std::sync::mpsc::Sender<()>, std::thread::JoinHandle<()>)>>,
}

/// How often a status line is printed when stderr is not a terminal (no bar): often enough
/// that a log shows a run is alive through a long rate limit, rarely enough not to flood it.
const STATUS_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// Environment variable that sets how often a status line is printed without a terminal,
/// in milliseconds (tests; default a minute).
pub const STATUS_EVERY_ENV: &str = "JUDGE_STATUS_EVERY_MS";

impl Progress {
    /// A bar for `total` items; hidden unless stderr is a terminal and `quiet` is false.
    pub fn new(total: u64, quiet: bool, label: &str) -> Self {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = if visible {
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::hidden())
        };
        // Retries are counted from here (`judge run`'s compare bar does not show generate's).
        let (retries_before, _) = crate::provider::http::retry_activity();
        let ticker = (!quiet && !visible && total > 0).then(|| {
            let every = std::env::var(STATUS_EVERY_ENV)
                .ok()
                .and_then(|v| v.parse().ok())
                // At least a millisecond: 0 would print without pause.
                .map_or(STATUS_EVERY, |ms: u64| {
                    std::time::Duration::from_millis(ms.max(1))
                });
            // A log says at once how much there is to do, not first after a minute.
            let every_text = match every.as_millis() {
                ms if ms < 1000 => format!("{ms}ms"),
                _ => format!("{}s", every.as_secs()),
            };
            let _ = writeln!(
                std::io::stderr(),
                "{label}: {total} to do (a status line every {every_text})"
            );
            let (stop, stopped) = std::sync::mpsc::channel::<()>();
            let (bar, label) = (bar.clone(), label.to_string());
            let thread = std::thread::spawn(move || {
                while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                    stopped.recv_timeout(every)
                {
                    let (retries, waiting) = crate::provider::http::retry_activity();
                    let line = status_line(
                        &label,
                        (bar.position(), total),
                        &bar.message(),
                        &retry_text(retries.saturating_sub(retries_before), waiting),
                        bar.elapsed(),
                    );
                    // Not `eprintln!`: a stderr that cannot be written must not end the run.
                    let _ = writeln!(std::io::stderr(), "{line}");
                }
            });
            (stop, thread)
        });
        let style = ProgressStyle::with_template(&format!(
            "{label} {{bar:30.cyan/blue}} {{pos}}/{{len}}{{msg}}{{retries}} [{{elapsed_precise}}, ETA {{eta_known}}]"
        ))
        .expect("the progress template is valid")
        // Nothing done yet says nothing of the time left (indicatif shows 0s).
        .with_key(
            "eta_known",
            |state: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = if state.pos() == 0 {
                    w.write_str("?")
                } else {
                    write!(w, "{:#}", indicatif::HumanDuration(state.eta()))
                };
            },
        )
        .with_key(
            "retries",
            move |_: &indicatif::ProgressState, w: &mut dyn std::fmt::Write| {
                let (retries, waiting) = crate::provider::http::retry_activity();
                let _ = w.write_str(&retry_text(retries.saturating_sub(retries_before), waiting));
            },
        );
        bar.set_style(style.progress_chars("=> "));
        // The clock moves while nothing finishes (a provider retrying, a slow model).
        if visible {
            bar.enable_steady_tick(std::time::Duration::from_millis(500));
        }
        Progress {
            bar,
            counts: Mutex::new(Counts::default()),
            free: false,
            ticker: Mutex::new(ticker),
        }
    }

    /// The bar of items that cost nothing (local checks): it shows no money.
    pub fn free(mut self) -> Self {
        self.free = true;
        self
    }

    /// One item finished, having spent `spent_usd` now (`Some(0.0)` for an answer from the
    /// cache or from disk; `None` when unknown: unpriced, or no usage came back).
    pub fn item_done(&self, cached: bool, failed: bool, spent_usd: Option<f64>, priced: bool) {
        let mut c = self.counts.lock().expect("progress lock is never poisoned");
        c.cached += u64::from(cached);
        c.failed += u64::from(failed);
        c.cost_usd += spent_usd.unwrap_or(0.0);
        c.unpriced |= !priced;
        c.unknown += u64::from(priced && spent_usd.is_none());
        let cost = if self.free {
            String::new()
        } else {
            format!(" · {}", spending(c.cost_usd, c.unpriced, c.unknown))
        };
        // Counted first, so that a redraw between the two never shows counts ahead of it.
        self.bar.inc(1);
        self.bar.set_message(format!(
            " · cache hits {} · failed {}{cost}",
            c.cached, c.failed
        ));
    }

    /// The bar's message so far (for tests).
    #[cfg(test)]
    fn message(&self) -> String {
        self.bar.message()
    }

    /// Prints a line above the bar (or plainly when hidden).
    pub fn println(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Removes the bar (and stops the status lines).
    pub fn finish(&self) {
        self.stop_ticker();
        self.bar.finish_and_clear();
    }

    fn stop_ticker(&self) {
        let ticker = self
            .ticker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some((stop, thread)) = ticker {
            drop(stop);
            let _ = thread.join();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop_ticker();
    }
}

/// The status line printed now and then without a terminal: `generate: 120/400 · cache hits
/// 3 · failed 0 · $0.12 · retries 2 (1 waiting) · 2m05s elapsed`.
fn status_line(
    label: &str,
    (done, total): (u64, u64),
    message: &str,
    retries: &str,
    elapsed: std::time::Duration,
) -> String {
    let secs = elapsed.as_secs();
    let clock = match (secs / 3600, secs / 60 % 60, secs % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, s) => format!("{m}m{s:02}s"),
        (h, m, s) => format!("{h}h{m:02}m{s:02}s"),
    };
    format!("{label}: {done}/{total}{message}{retries} · {clock} elapsed")
}

/// The bar's note of retries: how many were made, and how many requests wait for theirs now
/// (a bar that stands still while a provider rate-limits says why); nothing when none were.
fn retry_text(retries: u64, waiting: u64) -> String {
    match (retries, waiting) {
        (0, 0) => String::new(),
        (n, 0) => format!(" · retries {n}"),
        (n, w) => format!(" · retries {n} ({w} waiting)"),
    }
}

/// What the bar says was spent: an unknown part is never shown as $0.
fn spending(known_usd: f64, unpriced: bool, unknown: u64) -> String {
    let mut s = format_usd(known_usd);
    if unpriced {
        s.push_str(" + unpriced");
    }
    if unknown > 0 {
        s.push_str(&format!(" + {unknown} unknown"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_batch_shows_no_money() {
        let p = Progress::new(2, true, "check").free();
        p.item_done(false, true, None, true);
        assert_eq!(p.message(), " · cache hits 0 · failed 1");
    }

    #[test]
    fn a_status_line_says_where_the_batch_is() {
        let line = status_line(
            "generate",
            (120, 400),
            " · cache hits 3 · failed 0 · $0.12",
            " · retries 2 (1 waiting)",
            std::time::Duration::from_secs(125),
        );
        assert_eq!(
            line,
            "generate: 120/400 · cache hits 3 · failed 0 · $0.12 · retries 2 (1 waiting) · 2m05s elapsed"
        );
        let hours = status_line("c", (0, 1), "", "", std::time::Duration::from_secs(3725));
        assert_eq!(hours, "c: 0/1 · 1h02m05s elapsed");
    }

    #[test]
    fn retries_are_shown_once_there_are_any() {
        assert_eq!(retry_text(0, 0), "");
        assert_eq!(retry_text(3, 0), " · retries 3");
        assert_eq!(retry_text(3, 2), " · retries 3 (2 waiting)");
    }

    #[test]
    fn unknown_spending_is_never_shown_as_zero_dollars() {
        let p = Progress::new(3, true, "t");
        p.item_done(true, false, Some(0.0), true);
        assert!(p.message().ends_with("$0.00"), "{}", p.message());
        p.item_done(false, false, None, true);
        assert!(
            p.message().ends_with("$0.00 + 1 unknown"),
            "{}",
            p.message()
        );
        p.item_done(false, false, None, false);
        assert!(
            p.message().ends_with("$0.00 + unpriced + 1 unknown"),
            "{}",
            p.message()
        );
    }
}
