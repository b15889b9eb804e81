//! Human- and machine-readable output: progress on stderr (`progress`) and the end-of-run
//! summary tables (`summary`). Formatting is pure; only `progress` touches the terminal.

pub mod checks;
pub mod label;
pub mod leaderboard;
pub mod plan;
pub mod progress;
pub mod summary;

/// Formats a dollar amount: `$0.0123`, `$12.35`, and a known cost below $0.0001 with two
/// significant digits (`$0.000027`), so that it never reads as `$0.0000`.
/// What an invocation spent, `known` dollars plus `unknown` items whose cost is unknown
/// (an unpriced model or judge, a reply without usage), each a `noun`: never "$0.00" when
/// nothing is known.
pub fn spent_phrase(known: f64, unknown: usize, noun: &str) -> String {
    match unknown {
        0 => format_usd(known),
        n if known == 0.0 => format!("an unknown amount ({n} {noun}(s) unpriced or without usage)"),
        n => format!(
            "{} (+ {n} {noun}(s) unpriced or without usage)",
            format_usd(known)
        ),
    }
}

/// A priced total of which `unknown` items' costs are unknown (failures or replies without
/// usage): `$X + N unknown`, or `n/a (N unknown)` when nothing is known (never `$0.00`).
pub fn cost_with_unknown(known: f64, unknown: usize) -> String {
    match unknown {
        0 => format_usd(known),
        n if known == 0.0 => format!("n/a ({n} unknown)"),
        n => format!("{} + {n} unknown", format_usd(known)),
    }
}

pub fn format_usd(x: f64) -> String {
    let x = x + 0.0; // turns -0.0 (the sum of nothing) into 0.0
    if x == 0.0 || x.abs() >= 1.0 {
        format!("${x:.2}")
    } else if x.abs() >= 0.000_1 {
        format!("${x:.4}")
    } else {
        // Decimals up to the second significant digit.
        let decimals = (-x.abs().log10()).floor() as usize + 2;
        if decimals <= 12 {
            format!("${x:.decimals$}")
        } else {
            format!("${x:.1e}")
        }
    }
}

/// Output format of a report on stdout or `--output`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for a terminal.
    Table,
    /// Comma-separated values with a header row.
    Csv,
    /// One JSON document with a `schema_version`.
    Json,
    /// A Markdown table.
    Md,
}

/// The format asked for, else the one `output`'s extension names (`.json`, `.csv`, `.md`;
/// `lb.json` is meant to hold JSON), else the aligned table.
pub fn output_format(chosen: Option<Format>, output: Option<&std::path::Path>) -> Format {
    chosen.unwrap_or_else(|| {
        let ext = output
            .and_then(|p| p.extension())
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("json") => Format::Json,
            Some("csv") => Format::Csv,
            Some("md" | "markdown") => Format::Md,
            _ => Format::Table,
        }
    })
}

/// Formats a float with a fixed number of decimals; the one place floats are formatted for
/// reports, so every output agrees.
pub fn fmt_float(x: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, x + 0.0);
    if s.starts_with('-') && s[1..].chars().all(|c| c == '0' || c == '.') {
        s[1..].to_string()
    } else {
        s
    }
}

/// A Markdown table; cells are escaped with [`md_cell`].
pub fn render_markdown(header: &[&str], rows: &[Vec<String>]) -> String {
    let esc = |s: &str| md_cell(s);
    let mut out = format!("| {} |\n", header.join(" | "));
    out.push_str(&format!(
        "|{}|\n",
        header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    ));
    for r in rows {
        out.push_str(&format!(
            "| {} |\n",
            r.iter().map(|c| esc(c)).collect::<Vec<_>>().join(" | ")
        ));
    }
    out
}

/// `s` as the text of a Markdown table cell: control characters as in [`printable`], and a
/// backslash before each character that would end the cell (`|`) or format its text (`\\`,
/// `` ` ``, `*`, `_`, `~`, `<`, `>`, `&`: no emphasis, code, HTML or entity), and before a `]`
/// that a `(` or `[` follows (no link or image; an interval `[1185, 1215]` stays as it is), so
/// that a model name reads as it is written.
pub fn md_cell(s: &str) -> String {
    let text = printable(s);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let link = c == ']' && matches!(chars.peek(), Some('(' | '['));
        if link || matches!(c, '\\' | '|' | '`' | '*' | '_' | '~' | '<' | '>' | '&') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Multi-line text (an answer shown to a person) with every control character but newline and
/// tab written as a Rust escape: an answer can neither drive the terminal (escape sequences that
/// set the title, write the clipboard, hide text or redraw the screen) nor hide a line behind a
/// carriage return.
pub fn printable_text(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| (c.is_control() || is_bidi_control(c)) && c != '\n' && c != '\t';
    if s.chars().any(unsafe_char) {
        s.chars()
            .map(|c| {
                if unsafe_char(c) {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect::<String>()
            .into()
    } else {
        s.into()
    }
}

/// First characters that make a spreadsheet read a cell as a formula.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// A spreadsheet cell that a spreadsheet will not run as a formula: text starting with `=`,
/// `+`, `-`, `@`, a tab or a carriage return gets a leading `'` (OWASP's advice for CSV
/// injection; the apostrophe is not shown).
pub fn sheet_cell(s: &str) -> std::borrow::Cow<'_, str> {
    if s.starts_with(FORMULA_STARTS) {
        format!("'{s}").into()
    } else {
        s.into()
    }
}

/// A cell read back from a sheet, without the `'` that [`sheet_cell`] put before it (a
/// spreadsheet may keep or drop it; either way this is the text that was exported).
pub fn unsheet_cell(s: &str) -> &str {
    match s.strip_prefix('\'') {
        Some(rest) if rest.starts_with(FORMULA_STARTS) => rest,
        _ => s,
    }
}

/// The Unicode bidirectional controls (embeddings, overrides, isolates, marks): shown raw, a
/// name such as `abc\u{202e}fed` reads as another name, and text after it is reordered.
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with control characters (newlines, terminal escapes) and bidirectional controls written
/// as Rust escapes, so a name from an input file can neither break a table row, drive the
/// terminal, nor pass for another name.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || is_bidi_control(c);
    if s.chars().any(unsafe_char) {
        s.chars()
            .flat_map(|c| {
                let escaped = unsafe_char(c).then(|| c.escape_default());
                escaped
                    .into_iter()
                    .flatten()
                    .chain((!unsafe_char(c)).then_some(c))
            })
            .collect::<String>()
            .into()
    } else {
        s.into()
    }
}

/// Where `path` leads after following symbolic links (up to 40, as the kernel does), even
/// when the last target does not exist yet.
fn link_target(path: &std::path::Path) -> std::path::PathBuf {
    let mut at = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::read_link(&at) {
            Ok(next) if next.is_absolute() => at = next,
            Ok(next) => {
                at = at
                    .parent()
                    .unwrap_or_else(|| std::path::Path::new("."))
                    .join(next);
            }
            Err(_) => break,
        }
    }
    at
}

/// The file a report named `path` lands in: symbolic links followed; a path that does not
/// exist yet as named, and a dangling link's target.
pub fn output_target(path: &std::path::Path) -> std::path::PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| link_target(path))
}

/// Refuses an `--output` that lands inside a run directory under `runs_dir` (the project's
/// `runs/`), whether the file is there yet or not: a run's folder holds only what judge writes
/// and reads back (a report saved as `labels/x.jsonl` would be read as labels). Commands call
/// it before they write anything.
pub fn refuse_output_into_run(
    path: Option<&std::path::Path>,
    runs_dir: &std::path::Path,
) -> anyhow::Result<()> {
    let Some(p) = path else { return Ok(()) };
    let (Ok(runs), target) = (std::fs::canonicalize(runs_dir), resolved(&output_target(p))) else {
        return Ok(());
    };
    let Ok(inside) = target.strip_prefix(&runs) else {
        return Ok(());
    };
    // `runs/<run>/…`: at least a run's folder and a name in it.
    if inside.components().count() < 2 {
        return Ok(());
    }
    let run = inside.components().next().map_or_else(String::new, |c| {
        c.as_os_str().to_string_lossy().into_owned()
    });
    Err(crate::error::JudgeError::usage(format!(
        "--output `{}` is inside run `{run}`'s folder, which holds only what judge writes and reads back; write the report elsewhere",
        p.display()
    ))
    .into())
}

/// `path` made absolute through its longest existing ancestor (symbolic links in it followed),
/// the rest appended as named; `.` and `..` are taken out first, lexically (a `..` under a
/// folder not made yet would otherwise stop the walk).
fn resolved(path: &std::path::Path) -> std::path::PathBuf {
    use std::path::Component;
    let absolute = std::env::current_dir().map_or_else(|_| path.to_path_buf(), |d| d.join(path));
    let mut lexical = std::path::PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                lexical.pop();
            }
            other => lexical.push(other.as_os_str()),
        }
    }
    let path = lexical.as_path();
    let mut rest = Vec::new();
    let mut at = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(at) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (at.parent(), at.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                at = if parent.as_os_str().is_empty() {
                    std::path::Path::new(".")
                } else {
                    parent
                };
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// See [`write_stdout_or_file`].
fn write_named_file(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    // A path that does not exist yet is created as named; a dangling link gets its target
    // created (the link stays).
    let target = output_target(path);
    match std::fs::metadata(&target) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            let mut out = std::fs::OpenOptions::new().write(true).open(&target)?;
            out.write_all(bytes)?;
            out.flush()
        }
        _ => {
            crate::cache::write_atomic(&target, bytes)?;
            remove_dead_writers_temp_files(&target);
            Ok(())
        }
    }
}

/// Removes the temp files `.NAME.tmp.PID.N` of `target` that a killed judge left (outside a
/// run, no lock says whose they are): those whose process is gone, by `/proc` (nothing is
/// removed where there is no `/proc`). Best effort.
fn remove_dead_writers_temp_files(target: &std::path::Path) {
    for (stale, pid) in crate::cache::temp_files_of(target) {
        if crate::process_gone(pid) {
            let _ = std::fs::remove_file(stale);
        }
    }
}

/// Writes a report to the file the user named, or to stdout. A closed stdout (e.g. `| head`)
/// is not an error. A regular file (new or old) is replaced atomically; a symlink is followed
/// and its target replaced, so the link stays; anything else — `/dev/null`, `/dev/stdout`, a
/// FIFO — is written into as it is, since a rename would put a regular file in its place (as
/// root, instead of the system's `/dev/null`).
pub fn write_stdout_or_file(bytes: &[u8], path: Option<&std::path::Path>) -> anyhow::Result<()> {
    use anyhow::Context;
    use std::io::Write;
    if let Some(p) = path {
        return write_named_file(p, bytes)
            .with_context(|| format!("failed to write `{}`", p.display()));
    }
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => other.context("failed to write to stdout"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_for_people_keeps_lines_and_loses_escapes() {
        assert_eq!(printable_text("a\n\tb"), "a\n\tb");
        assert_eq!(
            printable_text("\u{1b}]0;title\u{7}x\u{1b}[2Jy\rz"),
            "\\u{1b}]0;title\\u{7}x\\u{1b}[2Jy\\rz"
        );
        assert_eq!(printable("gpt\u{202e}4"), "gpt\\u{202e}4");
        assert_eq!(printable_text("a\u{2067}b\nc"), "a\\u{2067}b\nc");
        assert_eq!(sheet_cell("=HYPERLINK(1)"), "'=HYPERLINK(1)");
        assert_eq!(sheet_cell("- item"), "'- item");
        assert_eq!(sheet_cell("plain"), "plain");
        // Read back, a cell is what was exported, whether a spreadsheet kept the `'` or not.
        for text in [
            "=HYPERLINK(1)",
            "- item",
            "@x",
            "plain",
            "'quoted",
            "''- twice",
        ] {
            assert_eq!(unsheet_cell(&sheet_cell(text)), text);
        }
        assert_eq!(unsheet_cell("- item"), "- item");
    }

    #[test]
    fn markdown_cells_read_as_written() {
        assert_eq!(md_cell("a*b*_c_"), "a\\*b\\*\\_c\\_");
        assert_eq!(md_cell("back\\|slash"), "back\\\\\\|slash");
        assert_eq!(md_cell("<b>`x`~y~</b>"), "\\<b\\>\\`x\\`\\~y\\~\\</b\\>");
        assert_eq!(md_cell("line\nbreak"), "line\\\\nbreak");
        assert_eq!(md_cell("[1185, 1215]"), "[1185, 1215]");
        assert_eq!(md_cell("x[l](http://e)"), "x[l\\](http://e)");
        assert_eq!(md_cell("![i][r] R&D"), "![i\\][r] R\\&D");
        let table = render_markdown(&["model"], &[vec!["x|y".into()]]);
        assert_eq!(table, "| model |\n|---|\n| x\\|y |\n");
    }

    #[test]
    fn small_known_costs_never_read_as_zero() {
        assert_eq!(format_usd(0.0), "$0.00");
        assert_eq!(format_usd(-0.0), "$0.00");
        assert_eq!(format_usd(12.345), "$12.35");
        assert_eq!(format_usd(0.0123), "$0.0123");
        assert_eq!(format_usd(0.000_027), "$0.000027");
        assert_eq!(format_usd(0.000_051), "$0.000051");
        assert_eq!(format_usd(0.000_1), "$0.0001");
        assert_eq!(format_usd(0.000_001_34), "$0.0000013");
        assert_eq!(format_usd(3e-15), "$3.0e-15");
        for x in [1e-4, 4.9e-5, 1e-5, 1e-6, 7.7e-9, 1e-12] {
            let s = format_usd(x);
            assert!(
                s.trim_start_matches(['$', '0', '.'])
                    .starts_with(|c: char| c.is_ascii_digit()),
                "{x} → {s}"
            );
        }
    }
}
