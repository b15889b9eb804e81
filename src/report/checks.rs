//! The `judge check` report: per-model pass counts with 95% Wilson intervals, as a table, CSV,
//! JSON or Markdown. Pure: rows in, bytes out.

use serde::Serialize;

use super::{Format, fmt_float, render_markdown, summary::render_table};
use crate::records::SCHEMA_VERSION;

/// One model's check results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckRow {
    pub model: String,
    pub passed: u64,
    /// Every check of the model, `error`s included.
    pub total: u64,
    /// Checks with a verdict: `total` less `errors` (the harness's failures, not the
    /// model's), the pass rate's denominator.
    pub decided: u64,
    /// `passed / decided`; `None` when no check has a verdict.
    pub pass_rate: Option<f64>,
    /// 95% Wilson interval of the pass rate.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub failed: u64,
    pub errors: u64,
    pub timeouts: u64,
    pub no_code: u64,
}

const COLUMNS: [&str; 11] = [
    "model",
    "passed",
    "total",
    "pass_rate",
    "ci_low",
    "ci_high",
    "failed",
    "errors",
    "timeouts",
    "no_code",
    "decided",
];

fn cells(r: &CheckRow) -> Vec<String> {
    let opt = |x: Option<f64>| x.map_or(String::new(), |v| fmt_float(v, 4));
    vec![
        r.model.clone(),
        r.passed.to_string(),
        r.total.to_string(),
        opt(r.pass_rate),
        opt(r.ci_low),
        opt(r.ci_high),
        r.failed.to_string(),
        r.errors.to_string(),
        r.timeouts.to_string(),
        r.no_code.to_string(),
        r.decided.to_string(),
    ]
}

/// Renders the report in `format`.
pub fn render_check_report(rows: &[CheckRow], format: Format) -> Vec<u8> {
    match format {
        Format::Table => {
            let mut t = vec![
                [
                    "model",
                    "passed",
                    "pass rate",
                    "95% CI (Wilson)",
                    "fail",
                    "error",
                    "timeout",
                    "no code",
                ]
                .iter()
                .map(|s| (*s).to_string())
                .collect::<Vec<_>>(),
            ];
            for r in rows {
                let ci = match (r.ci_low, r.ci_high) {
                    (Some(lo), Some(hi)) => format!("[{}, {}]", fmt_float(lo, 3), fmt_float(hi, 3)),
                    _ => "n/a".into(),
                };
                t.push(vec![
                    r.model.clone(),
                    format!("{}/{}", r.passed, r.decided),
                    r.pass_rate.map_or("n/a".into(), |p| fmt_float(p, 3)),
                    ci,
                    r.failed.to_string(),
                    r.errors.to_string(),
                    r.timeouts.to_string(),
                    r.no_code.to_string(),
                ]);
            }
            let mut out = render_table(&t);
            if rows.iter().any(|r| r.errors > 0) {
                out.push_str(
                    "pass rates are over checks with a verdict: an `error` (no verdict) counts for no model\n",
                );
            }
            out.into_bytes()
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(COLUMNS)
                .expect("writing to memory cannot fail");
            for r in rows {
                w.write_record(cells(r))
                    .expect("writing to memory cannot fail");
            }
            w.into_inner().expect("writing to memory cannot fail")
        }
        Format::Json => {
            let doc = serde_json::json!({
                "schema_version": SCHEMA_VERSION,
                "interval": "wilson_95",
                "models": rows,
            });
            let mut out = serde_json::to_vec_pretty(&doc).expect("rows always serialise");
            out.push(b'\n');
            out
        }
        Format::Md => {
            let body: Vec<Vec<String>> = rows.iter().map(cells).collect();
            render_markdown(&COLUMNS, &body).into_bytes()
        }
    }
}

/// Renders every task's result per model: `rows` are (task, one result per model of
/// `models`, empty when the task has no record for it), in task order.
pub fn render_task_matrix(
    models: &[String],
    rows: &[(String, Vec<String>)],
    format: Format,
) -> Vec<u8> {
    let header: Vec<&str> = std::iter::once("task")
        .chain(models.iter().map(String::as_str))
        .collect();
    let body: Vec<Vec<String>> = rows
        .iter()
        .map(|(task, results)| {
            std::iter::once(task.clone())
                .chain(results.iter().cloned())
                .collect()
        })
        .collect();
    match format {
        Format::Table => {
            let shown: Vec<Vec<String>> = body
                .iter()
                .map(|r| {
                    r.iter()
                        .map(|c| if c.is_empty() { "-".into() } else { c.clone() })
                        .collect()
                })
                .collect();
            let mut t = vec![header.iter().map(|h| (*h).to_string()).collect::<Vec<_>>()];
            t.extend(shown);
            render_table(&t).into_bytes()
        }
        Format::Csv => {
            let mut w = csv::Writer::from_writer(Vec::new());
            w.write_record(&header)
                .expect("writing to memory cannot fail");
            for r in &body {
                w.write_record(r).expect("writing to memory cannot fail");
            }
            w.into_inner().expect("writing to memory cannot fail")
        }
        Format::Json => {
            let tasks: Vec<serde_json::Value> = rows
                .iter()
                .map(|(task, results)| {
                    let by_model: serde_json::Map<String, serde_json::Value> = models
                        .iter()
                        .zip(results)
                        .filter(|(_, r)| !r.is_empty())
                        .map(|(m, r)| (m.clone(), serde_json::Value::from(r.as_str())))
                        .collect();
                    serde_json::json!({"task": task, "results": by_model})
                })
                .collect();
            let doc = serde_json::json!({"schema_version": SCHEMA_VERSION, "tasks": tasks});
            let mut out = serde_json::to_vec_pretty(&doc).expect("rows always serialise");
            out.push(b'\n');
            out
        }
        Format::Md => render_markdown(&header, &body).into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_task_matrix_renders_in_every_format() {
        let models = vec!["a".to_string(), "b".to_string()];
        let rows = vec![
            (
                "t1".to_string(),
                vec!["pass".to_string(), "fail".to_string()],
            ),
            ("t2".to_string(), vec!["no_code".to_string(), String::new()]),
        ];
        let table = String::from_utf8(render_task_matrix(&models, &rows, Format::Table)).unwrap();
        let lines: Vec<Vec<&str>> = table
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            lines,
            [
                vec!["task", "a", "b"],
                vec!["t1", "pass", "fail"],
                vec!["t2", "no_code", "-"]
            ]
        );
        let csv = String::from_utf8(render_task_matrix(&models, &rows, Format::Csv)).unwrap();
        assert_eq!(csv, "task,a,b\nt1,pass,fail\nt2,no_code,\n");
        let json: serde_json::Value =
            serde_json::from_slice(&render_task_matrix(&models, &rows, Format::Json)).unwrap();
        assert_eq!(
            json["tasks"][1],
            serde_json::json!({"task": "t2", "results": {"a": "no_code"}})
        );
        let md = String::from_utf8(render_task_matrix(&models, &rows, Format::Md)).unwrap();
        assert!(md.starts_with("| task | a | b |"), "{md}");
    }

    fn row() -> CheckRow {
        CheckRow {
            model: "reference".into(),
            passed: 25,
            total: 25,
            decided: 25,
            pass_rate: Some(1.0),
            ci_low: Some(0.8668),
            ci_high: Some(1.0),
            failed: 0,
            errors: 0,
            timeouts: 0,
            no_code: 0,
        }
    }

    #[test]
    fn every_format_renders() {
        let table = String::from_utf8(render_check_report(&[row()], Format::Table)).unwrap();
        assert!(
            table.contains("25/25") && table.contains("[0.867, 1.000]"),
            "{table}"
        );
        let csv = String::from_utf8(render_check_report(&[row()], Format::Csv)).unwrap();
        assert_eq!(
            csv.lines().next(),
            Some(
                "model,passed,total,pass_rate,ci_low,ci_high,failed,errors,timeouts,no_code,decided"
            )
        );
        assert_eq!(
            csv.lines().nth(1),
            Some("reference,25,25,1.0000,0.8668,1.0000,0,0,0,0,25")
        );
        let json: serde_json::Value =
            serde_json::from_slice(&render_check_report(&[row()], Format::Json)).unwrap();
        assert_eq!(json["models"][0]["passed"], 25);
        let md = String::from_utf8(render_check_report(&[row()], Format::Md)).unwrap();
        assert!(md.starts_with("| model | passed |"), "{md}");
    }
}
