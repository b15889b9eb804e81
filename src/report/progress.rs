//! The progress bar on stderr (indicatif): done/total, cache hits, failures, cost so far, ETA.
//! Hidden when stderr is not a terminal or with `--quiet`.

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::format_usd;

#[derive(Debug, Default)]
struct Counts {
    cached: u64,
    failed: u64,
    cost_usd: f64,
    unpriced: bool,
}

/// Progress of a batch of items.
#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    counts: Mutex<Counts>,
}

impl Progress {
    /// A bar for `total` items; hidden unless stderr is a terminal and `quiet` is false.
    pub fn new(total: u64, quiet: bool, label: &str) -> Self {
        let visible = !quiet && std::io::stderr().is_terminal();
        let bar = if visible {
            ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr())
        } else {
            ProgressBar::hidden()
        };
        let style = ProgressStyle::with_template(&format!(
            "{label} {{bar:30.cyan/blue}} {{pos}}/{{len}} {{msg}} [{{elapsed_precise}}, ETA {{eta}}]"
        ))
        .expect("the progress template is valid");
        bar.set_style(style.progress_chars("=> "));
        Progress {
            bar,
            counts: Mutex::new(Counts::default()),
        }
    }

    /// One item finished.
    pub fn item_done(&self, cached: bool, failed: bool, cost_usd: Option<f64>, priced: bool) {
        let mut c = self.counts.lock().expect("progress lock is never poisoned");
        c.cached += u64::from(cached);
        c.failed += u64::from(failed);
        c.cost_usd += cost_usd.unwrap_or(0.0);
        c.unpriced |= !priced;
        let cost = format_usd(c.cost_usd) + if c.unpriced { " + unpriced" } else { "" };
        self.bar.set_message(format!(
            "· cache hits {} · failed {} · {cost}",
            c.cached, c.failed
        ));
        self.bar.inc(1);
    }

    /// Prints a line above the bar (or plainly when hidden).
    pub fn println(&self, line: &str) {
        if self.bar.is_hidden() {
            eprintln!("{line}");
        } else {
            self.bar.println(line);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
