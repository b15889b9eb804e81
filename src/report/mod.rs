//! Human- and machine-readable output: progress on stderr (`progress`) and the end-of-run
//! summary tables (`summary`). Formatting is pure; only `progress` touches the terminal.

pub mod progress;
pub mod summary;

/// Formats a dollar amount: `$0.0123`, `$12.35`.
pub fn format_usd(x: f64) -> String {
    let x = x + 0.0; // turns -0.0 (the sum of nothing) into 0.0
    if x != 0.0 && x.abs() < 1.0 {
        format!("${x:.4}")
    } else {
        format!("${x:.2}")
    }
}
