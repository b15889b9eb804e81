//! The leaderboard document and its four renderings (table, CSV, JSON, Markdown). Pure.
//!
//! JSON fields (`schema_version` 1): `source`, `judge`, `prompt_sha256`, `order_flip_rate`,
//! `judging_cost` (an LLM judge of a run), `seed`, `resamples`, `bootstrap_unit`, `prior`, `interval`, `comparisons {rated, both_bad,
//! failed}`, `note`, `warnings`, and `models[]` with the columns of [`CSV_COLUMNS`] plus
//! `priced` (rank, rating and win-rate fields null for a model without rated games).

use serde::Serialize;

use super::{Format, fmt_float, render_markdown, summary::render_table_aligned};
use crate::ranking::{Fitted, Standing};
use crate::records::SCHEMA_VERSION;
use crate::stats::BootstrapUnit;

/// The sentence every human-readable leaderboard carries.
pub const OVERLAP_NOTE: &str = "Models whose 95% win-rate intervals overlap share a rank. Overlap describes how well the data separate the models; it is not a significance test.";

/// CSV columns, in order.
pub const CSV_COLUMNS: [&str; 16] = [
    "rank",
    "model",
    "rating",
    "rating_ci_low",
    "rating_ci_high",
    "win_rate",
    "win_rate_ci_low",
    "win_rate_ci_high",
    "games",
    "wins",
    "losses",
    "ties",
    "both_bad",
    "failed",
    "elo",
    "cost_usd",
];

/// Comparison totals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Totals {
    pub rated: u64,
    pub both_bad: u64,
    pub failed: u64,
}

/// Everything a leaderboard shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leaderboard {
    pub schema_version: u32,
    #[serde(flatten)]
    pub header: Header,
    pub interval: &'static str,
    pub comparisons: Totals,
    pub note: &'static str,
    pub warnings: Vec<String>,
    /// With `rank --run` over 30 tasks or more and the comparison unit: how much wider the
    /// win-rate intervals are when whole tasks are resampled (median over models).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_unit_width_ratio: Option<f64>,
    /// The ratio's chance scatter around 1 when tasks do not cluster (not in the JSON).
    #[serde(skip)]
    pub task_unit_width_noise: Option<f64>,
    pub models: Vec<Standing>,
}

/// Header facts: where the comparisons came from and how they were fitted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Header {
    /// `run <name>` or the comparisons file.
    pub source: String,
    pub judge: Option<String>,
    pub prompt_sha256: Option<String>,
    /// What the LLM judge's judgments of the run cost (`None` for the exec judge, human
    /// labels and a battles file, which say nothing of it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judging_cost: Option<JudgingCost>,
    pub order_flip_rate: Option<f64>,
    pub seed: u64,
    pub resamples: usize,
    pub bootstrap_unit: BootstrapUnit,
    pub prior: f64,
}

/// The cost of a leaderboard's judgments: at the judge's price, with the count of calls whose
/// cost is unknown (no usage came back), or unpriced. In JSON `{"priced": true, "usd": …,
/// "unknown": …}` or `{"priced": false}`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum JudgingCost {
    Priced { usd: f64, unknown: usize },
    Unpriced,
}

impl Serialize for JudgingCost {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        match *self {
            JudgingCost::Priced { usd, unknown } => {
                m.serialize_entry("priced", &true)?;
                m.serialize_entry("usd", &usd)?;
                m.serialize_entry("unknown", &unknown)?;
            }
            JudgingCost::Unpriced => m.serialize_entry("priced", &false)?,
        }
        m.end()
    }
}

impl JudgingCost {
    /// As the header line shows it: never `$0.00` for an unknown cost.
    fn text(self) -> String {
        match self {
            JudgingCost::Priced { usd, unknown } => super::cost_with_unknown(usd, unknown),
            JudgingCost::Unpriced => "unpriced".into(),
        }
    }
}

impl Leaderboard {
    /// Assembles the document.
    pub fn new(header: Header, fitted: Fitted) -> Self {
        Leaderboard {
            schema_version: SCHEMA_VERSION,
            header,
            interval: "95% percentile bootstrap",
            comparisons: Totals {
                rated: fitted.rated,
                both_bad: fitted.both_bad,
                failed: fitted.failed,
            },
            note: OVERLAP_NOTE,
            warnings: fitted.warnings,
            task_unit_width_ratio: fitted.task_width_ratio,
            task_unit_width_noise: fitted.task_width_noise,
            models: fitted.standings,
        }
    }

    /// The header line; the judge's name (a battles file's own text) escaped for the terminal,
    /// or as Markdown text when `markdown`.
    /// The line that says how much the intervals would widen resampled by task, when looked at.
    pub fn clustering_line(&self) -> Option<String> {
        let r = self.task_unit_width_ratio?;
        let noise = self.task_unit_width_noise.unwrap_or(0.0);
        // Said to be clustering only beyond twice the chance scatter of a model's ratio.
        let advice = if r > 1.0 + 2.0 * noise {
            "; comparisons of one task go together here: for decisions prefer --bootstrap-unit task"
        } else {
            ""
        };
        Some(format!(
            "by task: resampling whole tasks gives win-rate intervals {r:.2}× as wide (median over models; about 1 ± {noise:.2} when tasks do not cluster){advice}"
        ))
    }

    fn header_line(&self, markdown: bool) -> String {
        let h = &self.header;
        let judge = h.judge.as_deref().map_or("n/a".to_string(), |j| {
            if markdown {
                crate::report::md_cell(j)
            } else {
                crate::report::printable(j).to_string()
            }
        });
        let unit = match h.bootstrap_unit {
            BootstrapUnit::Comparison => "comparison",
            BootstrapUnit::Task => "task",
        };
        format!(
            "judge: {judge} · prompt: {} · order-flip rate: {}{} · seed: {} · resamples: {} ({unit} bootstrap) · prior: {}",
            h.prompt_sha256.as_deref().map_or("n/a", crate::short_hash),
            h.order_flip_rate.map_or("n/a".into(), |r| fmt_float(r, 3)),
            h.judging_cost
                .map_or(String::new(), |c| format!(" · judging cost: {}", c.text())),
            h.seed,
            h.resamples,
            h.prior,
        )
    }
}

fn cost(s: &Standing) -> String {
    match (s.priced, s.cost_usd) {
        (true, Some(c)) => super::format_usd(c),
        (true, None) => "n/a".into(),
        (false, _) => "unpriced".into(),
    }
}

/// `value` to `digits` decimals; `none` for a model without it (unranked).
fn fmt_opt(value: Option<f64>, digits: usize, none: &str) -> String {
    value.map_or_else(|| none.to_string(), |v| fmt_float(v, digits))
}

/// `[low, high]`, or nothing for a model without an interval (unranked).
fn fmt_interval(low: Option<f64>, high: Option<f64>, digits: usize) -> String {
    match (low, high) {
        (Some(low), Some(high)) => {
            format!("[{}, {}]", fmt_float(low, digits), fmt_float(high, digits))
        }
        _ => String::new(),
    }
}

fn csv_cells(s: &Standing) -> Vec<String> {
    vec![
        s.rank.map_or(String::new(), |r| r.to_string()),
        // Opened in a spreadsheet, a name like `=HYPERLINK(…)` must not run as a formula.
        crate::report::sheet_cell(&s.model).into_owned(),
        fmt_opt(s.rating, 2, ""),
        fmt_opt(s.rating_ci_low, 2, ""),
        fmt_opt(s.rating_ci_high, 2, ""),
        fmt_opt(s.win_rate, 4, ""),
        fmt_opt(s.win_rate_ci_low, 4, ""),
        fmt_opt(s.win_rate_ci_high, 4, ""),
        s.games.to_string(),
        s.wins.to_string(),
        s.losses.to_string(),
        s.ties.to_string(),
        s.both_bad.to_string(),
        s.failed.to_string(),
        s.elo.map_or(String::new(), |e| fmt_float(e, 1)),
        match (s.priced, s.cost_usd) {
            (true, Some(c)) => fmt_float(c, 6),
            (true, None) => String::new(),
            (false, _) => "unpriced".into(),
        },
    ]
}

fn display_rows(lb: &Leaderboard) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "rank", "model", "rating", "95% CI", "win rate", "95% CI", "games", "wins", "losses",
        "ties", "both bad", "failed", "Elo", "cost",
    ];
    let rows = lb
        .models
        .iter()
        .map(|s| {
            vec![
                // An unranked model (no rated games) has no rank, rating or interval.
                s.rank.map_or("-".into(), |r| r.to_string()),
                s.model.clone(),
                fmt_opt(s.rating, 0, "n/a"),
                fmt_interval(s.rating_ci_low, s.rating_ci_high, 0),
                fmt_opt(s.win_rate, 3, "n/a"),
                fmt_interval(s.win_rate_ci_low, s.win_rate_ci_high, 3),
                s.games.to_string(),
                s.wins.to_string(),
                s.losses.to_string(),
                s.ties.to_string(),
                s.both_bad.to_string(),
                s.failed.to_string(),
                s.elo.map_or("unavailable".into(), |e| fmt_float(e, 0)),
                cost(s),
            ]
        })
        .collect();
    (header.iter().map(|h| (*h).to_string()).collect(), rows)
}

/// Renders the leaderboard in `format`.
pub fn render_leaderboard(lb: &Leaderboard, format: Format) -> Vec<u8> {
    match format {
        Format::Table => {
            let (header, rows) = display_rows(lb);
            let mut table = vec![header];
            table.extend(rows);
            let c = &lb.comparisons;
            // A table saved or piped travels without its stderr: the warnings go with it.
            let warnings: String = lb
                .warnings
                .iter()
                .map(|w| format!("warning: {}\n", crate::report::printable(w)))
                .collect();
            format!(
                "{}\n{}{}\ncomparisons: {} rated, {} both bad, {} failed (both bad and failed are excluded from ratings)\n{}{warnings}",
                lb.header_line(false),
                render_table_aligned(&table, 2),
                OVERLAP_NOTE,
                c.rated,
                c.both_bad,
                c.failed,
                lb.clustering_line().map_or(String::new(), |l| format!("{l}\n")),
            )
            .into_bytes()
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(CSV_COLUMNS)
                .expect("writing to memory cannot fail");
            for s in &lb.models {
                w.write_record(csv_cells(s))
                    .expect("writing to memory cannot fail");
            }
            w.into_inner().expect("writing to memory cannot fail")
        }
        Format::Json => {
            let mut out = serde_json::to_vec_pretty(lb).expect("the leaderboard always serialises");
            out.push(b'\n');
            out
        }
        Format::Md => {
            let (header, rows) = display_rows(lb);
            let header: Vec<&str> = header.iter().map(String::as_str).collect();
            // A Markdown leaderboard travels without its stderr: the warnings go with it.
            let warnings: String = lb
                .warnings
                .iter()
                .map(|w| format!("\n> **Warning:** {}\n", crate::report::printable(w)))
                .collect();
            format!(
                "{}\n\n{}\n{}\n{}{warnings}",
                lb.header_line(true),
                render_markdown(&header, &rows),
                OVERLAP_NOTE,
                lb.clustering_line()
                    .map_or(String::new(), |l| format!("\n{l}\n")),
            )
            .into_bytes()
        }
    }
}
