//! `--max-cost`: a process-wide spending limit. Once the known cost of what this invocation
//! asked reaches it, no new request starts (answers from the cache still come, at no cost);
//! requests in flight finish, so the total can pass the limit by their cost. One limit for
//! the whole process, so that `judge run`'s generate and compare share it.

use std::sync::Mutex;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Budget {
    limit_usd: f64,
    spent_usd: f64,
    /// Requests whose cost is not known (no usage in the reply): not in `spent_usd`.
    unknown: u64,
}

static BUDGET: Mutex<Option<Budget>> = Mutex::new(None);

fn budget() -> std::sync::MutexGuard<'static, Option<Budget>> {
    BUDGET
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Sets the limit, unless one is set already (`judge run` sets it once for its steps).
pub fn limit(limit_usd: f64) {
    let mut b = budget();
    if b.is_none() {
        *b = Some(Budget {
            limit_usd,
            spent_usd: 0.0,
            unknown: 0,
        });
    }
}

/// Counts what one request cost (`None`: unknown, no usage came back). The first request of
/// unknown cost is warned of: the limit cannot count it (a server that never says its usage
/// would never reach the limit).
pub fn spend(cost_usd: Option<f64>) {
    let mut guard = budget();
    let Some(b) = guard.as_mut() else { return };
    match cost_usd {
        Some(c) => b.spent_usd += c,
        None => {
            b.unknown += 1;
            if b.unknown == 1 {
                // Not `eprintln!`: a stderr that cannot be written must not end the run.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "warning: a request came back without usage (a failure, or a server that does not report tokens): --max-cost cannot count its cost, so requests like it can pass the limit unseen"
                );
            }
        }
    }
}

/// Whether a limit is set and reached: no new request may start.
pub fn reached() -> bool {
    budget().is_some_and(|b| b.spent_usd >= b.limit_usd)
}

/// What a stop by the limit says: the limit, what was spent, and the requests whose cost is
/// not counted.
pub fn reached_note() -> Option<String> {
    let b = (*budget()).filter(|b| b.spent_usd >= b.limit_usd)?;
    let unknown = match b.unknown {
        0 => String::new(),
        n => format!(
            "; {n} request(s) came back without usage (failures, or replies that do not say), so their cost is not counted"
        ),
    };
    Some(format!(
        "--max-cost {} reached: {} spent by this invocation's requests (those in flight at the limit finished){unknown}",
        crate::report::format_usd(b.limit_usd),
        crate::report::format_usd(b.spent_usd),
    ))
}

/// The payers whose price an existing run keeps: those it has costed (`by`, by id) keep the
/// price they first had in run `run`, which judge.toml cannot change. `what`: `model` or
/// `judge`.
pub struct Kept<'a> {
    pub run: &'a str,
    pub by: &'a dyn Fn(&str) -> bool,
    pub what: &'static str,
}

/// Refuses `--max-cost` when one of `payers` (the models or judges whose requests it would
/// count, at the prices they are costed at) has no price: their spending could not be
/// counted. The advice for a payer `kept` by a run is a new run, for the others a price.
pub fn refuse_unpriced<'a>(
    payers: impl IntoIterator<Item = &'a crate::config::ModelConfig>,
    kept: Option<Kept>,
) -> Result<(), crate::error::JudgeError> {
    let (mut new, mut old) = (Vec::new(), Vec::new());
    for m in payers {
        if m.price_input_per_mtok.is_some() && m.price_output_per_mtok.is_some() {
            continue;
        }
        let name = format!("`{}`", m.id);
        match &kept {
            Some(k) if (k.by)(&m.id) => old.push(name),
            _ => new.push(name),
        }
    }
    let refuse = |unpriced: &[String], fix: String| {
        Err(crate::error::JudgeError::usage(format!(
            "--max-cost counts dollars at the prices, and {} ha{} none: {fix}",
            unpriced.join(", "),
            if unpriced.len() == 1 { "s" } else { "ve" },
        )))
    };
    if !new.is_empty() {
        return refuse(
            &new,
            format!(
                "set price_input_per_mtok and price_output_per_mtok in {}, or drop --max-cost",
                crate::config_name()
            ),
        );
    }
    match kept {
        Some(k) if !old.is_empty() => refuse(
            &old,
            format!(
                "run `{}` keeps the price it first costed a {} at, so drop --max-cost, or {} into a new run",
                k.run,
                k.what,
                if k.what == "judge" {
                    "judge"
                } else {
                    "generate"
                }
            ),
        ),
        _ => Ok(()),
    }
}

/// Parses a dollar amount for `--max-cost`: `5`, `5.50`, `$5`; more than 0.
pub fn parse_usd(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let t = t.strip_prefix('$').unwrap_or(t);
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!(
            "`{s}` is not an amount of dollars more than 0 (e.g. 5, 12.50 or $20)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_parse_with_or_without_a_dollar_sign() {
        assert_eq!(parse_usd("5"), Ok(5.0));
        assert_eq!(parse_usd(" $12.50 "), Ok(12.5));
        for bad in ["0", "-1", "five", "$", "inf", "NaN"] {
            assert!(parse_usd(bad).is_err(), "{bad}");
        }
    }
}
