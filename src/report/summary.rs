//! End-of-run summary tables (pure: records in, text out).

use std::collections::BTreeMap;

use crate::config::ModelConfig;
use crate::judging::flip_rate;
use crate::records::{
    ComparisonRecord, JudgmentRecord, JudgmentVerdict, OutputRecord, Status, total_cost,
};

#[derive(Debug, Default)]
struct Row {
    ok: u64,
    failed: u64,
    truncated: u64,
    cached: u64,
    input_tokens: u64,
    output_tokens: u64,
    cost_usd: f64,
    /// Records without a cost (no price, or no usage came back).
    uncosted: u64,
    /// Records with token usage, and records without (unknown tokens).
    with_usage: u64,
    without_usage: u64,
}

/// Per-model totals of a generation, accumulated one record at a time.
#[derive(Debug, Default)]
pub struct GenerationTally {
    rows: BTreeMap<String, Row>,
    /// Failed records per model and `error.class`.
    failures: BTreeMap<String, BTreeMap<String, u64>>,
}

impl GenerationTally {
    /// Adds one record.
    pub fn add(&mut self, r: &OutputRecord) {
        let row = self.rows.entry(r.model.clone()).or_default();
        match r.status {
            Status::Ok => row.ok += 1,
            Status::Failed => {
                row.failed += 1;
                let class = r
                    .error
                    .as_ref()
                    .and_then(|e| serde_json::to_value(e.class).ok())
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "unknown".into());
                *self
                    .failures
                    .entry(r.model.clone())
                    .or_default()
                    .entry(class)
                    .or_default() += 1;
            }
        }
        row.truncated += u64::from(r.finish_reason.as_deref() == Some("length"));
        row.cached += u64::from(r.from_cache);
        if let Some(u) = r.usage {
            // Saturating: a server's absurd count must not wrap a total.
            row.input_tokens = row.input_tokens.saturating_add(u.input_tokens);
            row.output_tokens = row.output_tokens.saturating_add(u.output_tokens);
            row.with_usage += 1;
        } else {
            // A failure too: its tokens may have been billed and are not known.
            row.without_usage += 1;
        }
        // Failed records this one replaced were billed too (`--retry-failed`).
        if let Some(earlier) = r.replaced {
            row.input_tokens = row.input_tokens.saturating_add(earlier.usage.input_tokens);
            row.output_tokens = row
                .output_tokens
                .saturating_add(earlier.usage.output_tokens);
        }
        let cost = r.total_cost();
        row.cost_usd += cost.unwrap_or(0.0);
        row.uncosted += u64::from(cost.is_none());
    }

    /// Why items of `models` failed, per model and error class, as one line (`None` when
    /// none did): `failed: b 2 server_error, 1 timeout; c 1 missing_answer`. Other models of
    /// the run (not selected this time) are left out, as they are from the table.
    pub fn failure_line(&self, models: &[ModelConfig]) -> Option<String> {
        let per_model: Vec<String> = self
            .failures
            .iter()
            .filter(|(model, _)| models.iter().any(|m| &m.id == *model))
            .map(|(model, classes)| {
                let classes: Vec<String> =
                    classes.iter().map(|(c, n)| format!("{n} {c}")).collect();
                format!("{model} {}", classes.join(", "))
            })
            .collect();
        (!per_model.is_empty()).then(|| format!("failed: {}", per_model.join("; ")))
    }

    /// Records of `model` (ok + failed).
    pub fn records(&self, model: &str) -> u64 {
        self.rows.get(model).map_or(0, |r| r.ok + r.failed)
    }

    /// Failed records of `model`.
    pub fn failed(&self, model: &str) -> u64 {
        self.rows.get(model).map_or(0, |r| r.failed)
    }

    /// The table: ok, failed, truncated (finish_reason `length`), cache hits, tokens and cost
    /// (`unpriced` when the model has no price) for each of `models`.
    pub fn render(&self, models: &[ModelConfig]) -> String {
        render_generation(&self.rows, models)
    }
}

fn render_generation(rows: &BTreeMap<String, Row>, models: &[ModelConfig]) -> String {
    let empty = Row::default();
    let header = [
        "model",
        "ok",
        "failed",
        "truncated",
        "cached",
        "tokens in",
        "tokens out",
        "cost",
    ];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_string()).collect()];
    for m in models {
        let r = rows.get(&m.id).unwrap_or(&empty);
        let priced = m.price_input_per_mtok.is_some();
        table.push(vec![
            m.id.clone(),
            r.ok.to_string(),
            r.failed.to_string(),
            r.truncated.to_string(),
            r.cached.to_string(),
            tokens(r.input_tokens, r),
            tokens(r.output_tokens, r),
            match (priced, r.uncosted) {
                (false, _) => "unpriced".into(),
                // Never shown as free: the replies without usage are counted apart.
                (true, n) => crate::report::cost_with_unknown(r.cost_usd, n as usize),
            },
        ]);
    }
    render_table(&table)
}

/// A token total: never 0 for "unknown" (hand-written answers, replies without usage).
fn tokens(total: u64, r: &Row) -> String {
    match (r.with_usage, r.without_usage) {
        (_, 0) => total.to_string(),
        (0, _) => "n/a".into(),
        (_, n) => format!("{total} + {n} unknown"),
    }
}

/// What this invocation's judgments were, per judge: how many, and how many came from the
/// cache (all the summary needs of them, so that the records themselves can move on).
#[derive(Debug, Default)]
pub struct NewCalls(BTreeMap<String, (usize, usize)>);

impl NewCalls {
    pub fn of(records: &[JudgmentRecord]) -> NewCalls {
        let mut by_judge: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        for r in records {
            let e = by_judge.entry(r.judge.clone()).or_default();
            e.0 += 1;
            e.1 += usize::from(r.from_cache);
        }
        NewCalls(by_judge)
    }
}

/// Per-judge totals of a comparison: calls recorded, of which this invocation made or served
/// from cache, retried for an unparsable reply, unparsable after the retry, failed (any cause); comparisons, flipped ones and the
/// order-flip rate; cost of judging.
pub fn compare_summary(
    judges: &[&str],
    priced: &[&str],
    judgments: &[&JudgmentRecord],
    new_calls: &NewCalls,
    comparisons: &[ComparisonRecord],
) -> String {
    let header = [
        "judge",
        "calls",
        "now",
        "cached",
        "retried",
        "unparsable",
        "failed",
        "comparisons",
        "flipped",
        "flip rate",
        "cost",
    ];
    let mut table: Vec<Vec<String>> = vec![header.iter().map(|h| (*h).to_string()).collect()];
    for judge in judges {
        let mine: Vec<&&JudgmentRecord> = judgments.iter().filter(|j| j.judge == *judge).collect();
        let (new, cached) = new_calls.0.get(*judge).copied().unwrap_or_default();
        let comps: Vec<&ComparisonRecord> =
            comparisons.iter().filter(|c| c.judge == *judge).collect();
        let flipped = comps.iter().filter(|c| c.flipped).count();
        let costs = mine.iter().map(|j| total_cost(j.cost_usd, j.replaced));
        let known: f64 = costs.clone().flatten().sum();
        let unknown = costs.filter(Option::is_none).count();
        let calls_made = !mine.is_empty();
        table.push(vec![
            (*judge).to_string(),
            mine.len().to_string(),
            new.to_string(),
            cached.to_string(),
            mine.iter().filter(|j| j.attempts > 1).count().to_string(),
            mine.iter()
                .filter(|j| {
                    j.error
                        .as_ref()
                        .is_some_and(|e| e.class == crate::provider::ErrorClass::UnparsableVerdict)
                })
                .count()
                .to_string(),
            if *judge == crate::judging::EXEC_JUDGE {
                // No calls: a failed comparison is a check that gave no verdict.
                comps
                    .iter()
                    .filter(|c| c.winner == crate::records::Winner::Failed)
                    .count()
            } else {
                mine.iter()
                    .filter(|j| matches!(j.verdict, JudgmentVerdict::Failed(_)))
                    .count()
            }
            .to_string(),
            comps.len().to_string(),
            flipped.to_string(),
            if *judge == crate::judging::EXEC_JUDGE {
                "n/a".into()
            } else {
                flip_rate(comps.iter().copied()).map_or("n/a".into(), |r| format!("{r:.3}"))
            },
            match (calls_made, priced.contains(judge), unknown) {
                (false, _, _) => "-".into(),
                (true, false, _) => "unpriced".into(),
                // Never shown as free: calls without usage (failed ones, say) are counted apart.
                (true, true, n) => crate::report::cost_with_unknown(known, n),
            },
        ]);
    }
    render_table(&table)
}

/// Left-aligns the first column, right-aligns the rest, two spaces between columns.
pub fn render_table(rows: &[Vec<String>]) -> String {
    render_table_aligned(rows, 1)
}

/// Left-aligns the first `left` columns, right-aligns the rest, two spaces between columns.
/// Widths are terminal columns: a CJK character takes two, a combining mark none.
pub fn render_table_aligned(rows: &[Vec<String>], left: usize) -> String {
    use unicode_width::UnicodeWidthStr;
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| crate::report::printable(s).width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| {
                let s = crate::report::printable(s);
                let pad = " ".repeat(widths[c] - s.width());
                if c < left {
                    format!("{s}{pad}")
                } else {
                    format!("{pad}{s}")
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::GenerationSettings;
    use crate::provider::Usage;

    fn model(id: &str, priced: bool) -> ModelConfig {
        ModelConfig {
            id: id.into(),
            provider: "p".into(),
            model: id.into(),
            family: "f".into(),
            price_input_per_mtok: priced.then_some(1.0),
            price_output_per_mtok: priced.then_some(2.0),
        }
    }

    fn record(model: &str, status: Status, cost: Option<f64>) -> OutputRecord {
        OutputRecord {
            task: "t".into(),
            model: model.into(),
            status,
            text: None,
            error: None,
            finish_reason: Some("length".into()),
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 5,
            }),
            cost_usd: cost,
            cache_key: None,
            from_cache: true,
            attempts: 0,
            settings: GenerationSettings {
                max_tokens: 1,
                temperature: 0.0,
                style: "none".into(),
                instruction: String::new(),
            },
            replaced: None,
        }
    }

    fn failed_judgment() -> JudgmentRecord {
        use crate::prompt::Order;
        use crate::records::{FailedMarker, RecordedError};
        JudgmentRecord {
            task: "t".into(),
            judge: "j".into(),
            first: "a".into(),
            second: "b".into(),
            order: Order::Ab,
            verdict: JudgmentVerdict::Failed(FailedMarker::Failed),
            raw: Some("no verdict".into()),
            attempts: 2,
            prompt_sha256: "x".into(),
            cache_key: None,
            from_cache: false,
            usage: None,
            cost_usd: None,
            error: Some(RecordedError {
                class: crate::provider::ErrorClass::UnparsableVerdict,
                message: "m".into(),
                http_status: None,
            }),
            replaced: None,
            spent_usd: 0.0,
        }
    }

    #[test]
    fn costs_include_what_replaced_failures_were_billed() {
        use crate::records::Replaced;
        let earlier = Some(Replaced {
            usage: Usage {
                input_tokens: 7,
                output_tokens: 3,
            },
            cost_usd: Some(0.125),
        });
        let mut r = record("a", Status::Ok, Some(0.5));
        r.replaced = earlier;
        let mut tally = GenerationTally::default();
        tally.add(&r);
        let s = tally.render(&[model("a", true)]);
        assert!(s.contains("$0.6250"), "{s}");
        assert!(
            s.contains("17") && s.contains(" 8 "),
            "tokens 10+7 in, 5+3 out: {s}"
        );
        let paid = JudgmentRecord {
            cost_usd: Some(0.25),
            replaced: earlier,
            ..failed_judgment()
        };
        let s = compare_summary(&["j"], &["j"], &[&paid], &NewCalls::default(), &[]);
        assert!(s.lines().nth(1).unwrap().ends_with("$0.3750"), "{s}");
    }

    #[test]
    fn absurd_token_counts_saturate_rather_than_wrap() {
        let mut tally = GenerationTally::default();
        for _ in 0..2 {
            let mut r = record("a", Status::Ok, None);
            r.usage = Some(Usage {
                input_tokens: u64::MAX,
                output_tokens: 1 << 63,
            });
            tally.add(&r);
        }
        let s = tally.render(&[model("a", false)]);
        assert_eq!(s.matches(&u64::MAX.to_string()).count(), 2, "{s}");
    }

    #[test]
    fn compare_summary_columns_line_up() {
        let judgment = failed_judgment();
        let s = compare_summary(
            &["j"],
            &[],
            &[&judgment],
            &NewCalls::of(std::slice::from_ref(&judgment)),
            &[],
        );
        let rows: Vec<Vec<&str>> = s.lines().map(|l| l.split_whitespace().collect()).collect();
        // "flip rate" is two words in the header.
        assert_eq!(rows[0].len() - 1, rows[1].len(), "{s}");
        let col = |name: &str| rows[0].iter().position(|h| *h == name).expect("column");
        assert_eq!(rows[1][col("retried")], "1", "{s}");
        assert_eq!(rows[1][col("unparsable")], "1", "{s}");
        assert_eq!(rows[1][col("failed")], "1", "{s}");
    }

    #[test]
    fn a_priced_judge_with_calls_of_unknown_cost_is_not_unpriced() {
        let failed = failed_judgment();
        let paid = JudgmentRecord {
            cost_usd: Some(0.25),
            ..failed_judgment()
        };
        let cost = |priced: &[&str]| {
            let s = compare_summary(&["j"], priced, &[&failed, &paid], &NewCalls::default(), &[]);
            s.lines().nth(1).expect("a row").to_string()
        };
        assert!(
            cost(&["j"]).ends_with("$0.2500 + 1 unknown"),
            "{}",
            cost(&["j"])
        );
        assert!(cost(&[]).ends_with("unpriced"), "{}", cost(&[]));
    }

    #[test]
    fn unpriced_is_never_zero_dollars() {
        let records = [
            record("a", Status::Ok, Some(0.5)),
            record("b", Status::Failed, None),
        ];
        let mut tally = GenerationTally::default();
        records.iter().for_each(|r| tally.add(r));
        let s = tally.render(&[model("a", true), model("b", false)]);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(
            lines[0],
            "model  ok  failed  truncated  cached  tokens in  tokens out      cost"
        );
        assert!(
            lines[1].starts_with("a ") && lines[1].ends_with("$0.5000"),
            "{s}"
        );
        assert!(
            lines[2].starts_with("b ") && lines[2].ends_with("unpriced"),
            "{s}"
        );
        assert!(lines[2].contains("  1  "), "{s}");
    }

    #[test]
    fn columns_line_up_in_terminal_columns() {
        let rows: Vec<Vec<String>> = [
            ["model", "wins"],
            ["文心一言", "3"],
            ["cafe\u{301}", "12"],
            ["gpt-4o", "7"],
        ]
        .iter()
        .map(|r| r.iter().map(|s| (*s).to_string()).collect())
        .collect();
        let table = render_table(&rows);
        // Every line ends at the same terminal column (the numbers are right-aligned).
        let ends: Vec<usize> = table
            .lines()
            .map(unicode_width::UnicodeWidthStr::width)
            .collect();
        assert_eq!(ends, [14, 14, 14, 14], "{table}");
        assert!(table.contains("文心一言     3"), "{table}");
    }

    #[test]
    fn failures_are_summed_by_model_and_class() {
        use crate::provider::ErrorClass;
        use crate::records::RecordedError;
        let failed = |model: &str, class: ErrorClass| OutputRecord {
            error: Some(RecordedError {
                class,
                message: "m".into(),
                http_status: None,
            }),
            ..record(model, Status::Failed, None)
        };
        let mut tally = GenerationTally::default();
        let models: Vec<ModelConfig> = ["a", "b", "c"].iter().map(|m| model(m, true)).collect();
        assert_eq!(tally.failure_line(&models), None);
        for r in [
            failed("b", ErrorClass::ServerError),
            record("a", Status::Ok, None),
            failed("b", ErrorClass::Timeout),
            failed("c", ErrorClass::MissingAnswer),
            failed("b", ErrorClass::ServerError),
        ] {
            tally.add(&r);
        }
        assert_eq!(
            tally.failure_line(&models).as_deref(),
            Some("failed: b 2 server_error, 1 timeout; c 1 missing_answer")
        );
        // A model not selected this time is left out, as it is from the table.
        assert_eq!(
            tally.failure_line(&models[..2]).as_deref(),
            Some("failed: b 2 server_error, 1 timeout")
        );
        assert_eq!(tally.failure_line(&models[..1]), None);
    }

    #[test]
    fn unknown_tokens_are_never_zero() {
        let without = |model: &str| OutputRecord {
            usage: None,
            ..record(model, Status::Ok, None)
        };
        let records = [
            without("files"),
            without("files"),
            record("mixed", Status::Ok, None),
            without("mixed"),
            record("known", Status::Ok, None),
            OutputRecord {
                usage: None,
                ..record("known", Status::Failed, None)
            },
        ];
        let mut tally = GenerationTally::default();
        records.iter().for_each(|r| tally.add(r));
        let s = tally.render(&[
            model("files", false),
            model("mixed", false),
            model("known", false),
        ]);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[1].matches("n/a").count(), 2, "{s}");
        assert!(lines[2].contains("10 + 1 unknown"), "{s}");
        // A failure without usage: its tokens (a timeout may have been billed) are unknown
        // too, as its cost is.
        assert!(lines[3].contains("10 + 1 unknown"), "{s}");
    }

    #[test]
    fn control_characters_in_cells_are_escaped() {
        let rows = vec![
            vec!["model".to_string(), "n".to_string()],
            vec!["evil\u{1b}[2Jname\nnext".to_string(), "1".to_string()],
        ];
        let s = render_table(&rows);
        assert_eq!(s.lines().count(), 2, "{s}");
        assert!(
            !s.contains('\u{1b}') && s.contains("evil\\u{1b}[2Jname\\nnext"),
            "{s}"
        );
    }

    #[test]
    fn a_priced_reply_without_usage_is_unknown_not_free() {
        let records = [
            record("a", Status::Ok, Some(0.5)),
            record("a", Status::Ok, None),
        ];
        let mut tally = GenerationTally::default();
        records.iter().for_each(|r| tally.add(r));
        let s = tally.render(&[model("a", true)]);
        assert!(
            s.lines().nth(1).unwrap().ends_with("$0.5000 + 1 unknown"),
            "{s}"
        );
    }

    /// A failure without usage may have been billed (a timeout): its cost is unknown, as in the
    /// leaderboard, not $0; a failure whose usage came back is counted.
    #[test]
    fn a_priced_failure_without_usage_is_unknown_not_free() {
        let records = [
            record("a", Status::Failed, None),
            record("a", Status::Failed, None),
            record("b", Status::Failed, Some(0.25)),
        ];
        let mut tally = GenerationTally::default();
        records.iter().for_each(|r| tally.add(r));
        let s = tally.render(&[model("a", true), model("b", true)]);
        assert!(
            s.lines().nth(1).unwrap().ends_with("n/a (2 unknown)"),
            "{s}"
        );
        assert!(s.lines().nth(2).unwrap().ends_with("$0.2500"), "{s}");
    }
}
