//! The lines of a dry run's plan (`generate --dry-run`, `compare --dry-run`): per model or
//! judge, what is left, what the cache answers, and what the rest could cost at most; then
//! the bound over all of them. Pure.

use crate::config::ModelConfig;

/// What one model or judge still has to ask.
pub struct PayerPlan<'a> {
    /// Its line's opening, e.g. "model `a`: 3 item(s) to generate".
    pub head: String,
    pub payer: &'a ModelConfig,
    pub cached: usize,
    pub requests: u64,
    /// Estimated input tokens of the requests (message characters / 4).
    pub input_tokens: u64,
    /// The token cap of each request, and the setting it comes from.
    pub cap: (u32, &'static str),
}

/// The bound over every payer so far, and the payers without a price.
#[derive(Default)]
pub struct PlanTotal {
    bound_usd: f64,
    unpriced: Vec<String>,
}

impl PlanTotal {
    /// One payer's line (ending in a newline), counted into the total.
    pub fn line(&mut self, p: &PayerPlan) -> String {
        let (cap, setting) = p.cap;
        let output_max = p.requests * u64::from(cap);
        let cost = p.payer.cost_usd(p.input_tokens, output_max);
        match cost {
            Some(c) => self.bound_usd += c,
            None if p.requests > 0 => self.unpriced.push(format!("`{}`", p.payer.id)),
            None => {}
        }
        format!(
            "{}, {} answered by the cache; {} request(s) of about {} input tokens (4 characters a token) and at most {output_max} output tokens ({cap} each, {setting}): {}\n",
            p.head,
            p.cached,
            p.requests,
            p.input_tokens,
            match cost {
                Some(c) => format!(
                    "at most about {} at {}",
                    super::format_usd(c),
                    p.payer.price_text()
                ),
                None => "unpriced".to_string(),
            }
        )
    }

    /// `at most about $X`, and which payers (`what`: "models", "judges") are not in it.
    pub fn bound(&self, what: &str) -> String {
        let bound = format!("at most about {}", super::format_usd(self.bound_usd));
        if self.unpriced.is_empty() {
            bound
        } else {
            format!(
                "{bound} for the priced {what}; {} unpriced",
                self.unpriced.join(", ")
            )
        }
    }
}
