//! Pulling the Python code out of a model's reply (pure: no I/O).
//!
//! The rule, in order of preference (see [`extract_code`]):
//!
//! 1. the last non-blank fenced block tagged as Python (`python`, `py`,
//!    `python3`, `py3`, any case);
//! 2. else the last non-blank fenced block with no language tag;
//! 3. else, when the reply has no fence at all, the whole reply, provided at
//!    least one of its lines looks like Python (see [`looks_like_python`]);
//! 4. else nothing (`None`, recorded by the caller as `no_code`).
//!
//! Fences follow CommonMark closely: a fence is a run of at least three
//! backticks or three tildes; it is closed only by a line holding nothing but
//! a run of the same character at least as long as the opener. Unlike
//! CommonMark, fences may be indented by any amount (models nest code in list
//! items); the opener's indentation is removed from the block's lines. A fence
//! still open at the end of the reply (a reply cut off by a token cap) runs to
//! the end. CRLF and CR-less line endings are both accepted; the code returned
//! always uses `\n` and ends with exactly one newline.

/// How a fenced block was tagged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tag {
    /// `python`, `py`, `python3`, `py3` (any case).
    Python,
    /// No info string at all.
    Untagged,
    /// Any other language (`bash`, `text`, `json`, ...).
    Other,
}

/// One fenced block found in a reply.
#[derive(Debug)]
struct Block {
    tag: Tag,
    lines: Vec<String>,
}

/// An opening fence: its character, run length, indentation and tag.
struct Opener {
    ch: char,
    len: usize,
    indent: usize,
    tag: Tag,
}

/// The Python code in a model's `reply`, or `None` when there is none.
///
/// Preference: the last non-blank ```` ```python ````/```` ```py ```` block
/// (also `~~~`-fenced, longer fences, any case, `python3`/`py3`); else the last
/// non-blank untagged block; else, only when the reply contains no fence at
/// all, the whole reply trimmed, provided some line looks like Python (it
/// starts with `def `, `async def `, `class `, `import `, `from `, `return`
/// or `print(`, or contains `=`), so that a plain refusal ("I can't help with
/// that.") yields `None` instead of a guaranteed syntax error. A reply whose
/// only fences are tagged with other languages yields `None`. A blank result
/// is always `None`.
///
/// The returned code uses `\n` line endings, has leading and trailing blank
/// lines removed and ends with a single `\n`.
pub fn extract_code(reply: &str) -> Option<String> {
    let lines = split_lines(reply);
    let (blocks, saw_fence) = find_blocks(&lines);

    let pick = |tag: Tag| {
        blocks
            .iter()
            .rev()
            .find(|b| b.tag == tag && b.lines.iter().any(|l| !l.trim().is_empty()))
    };
    if let Some(block) = pick(Tag::Python).or_else(|| pick(Tag::Untagged)) {
        return finish(block.lines.iter().map(String::as_str));
    }
    if saw_fence {
        return None;
    }
    if lines.iter().any(|l| looks_like_python(l)) {
        return finish(lines.iter().copied());
    }
    None
}

/// Whether one line of unfenced text looks like Python: after leading
/// whitespace it starts with `def `, `async def `, `class `, `import `,
/// `from `, `return` or `print(`, or it contains `=`.
///
/// Deliberately crude: it only has to tell code from a prose refusal.
pub fn looks_like_python(line: &str) -> bool {
    let t = line.trim_start();
    const STARTS: [&str; 7] = [
        "def ",
        "async def ",
        "class ",
        "import ",
        "from ",
        "return",
        "print(",
    ];
    STARTS.iter().any(|s| t.starts_with(s)) || t.contains('=')
}

/// Split on `\n`, dropping one trailing `\r` per line (CRLF input).
fn split_lines(text: &str) -> Vec<&str> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect()
}

/// All fenced blocks of `lines`, and whether any fence opened at all.
fn find_blocks(lines: &[&str]) -> (Vec<Block>, bool) {
    let mut blocks = Vec::new();
    let mut saw_fence = false;
    let mut i = 0;
    while i < lines.len() {
        let Some(open) = parse_opener(lines[i]) else {
            i += 1;
            continue;
        };
        saw_fence = true;
        let mut body = Vec::new();
        i += 1;
        while i < lines.len() {
            let line = lines[i];
            i += 1;
            if closes(line, open.ch, open.len) {
                break;
            }
            body.push(strip_indent(line, open.indent).to_string());
        }
        blocks.push(Block {
            tag: open.tag,
            lines: body,
        });
    }
    (blocks, saw_fence)
}

/// Parse `line` as an opening fence, if it is one.
fn parse_opener(line: &str) -> Option<Opener> {
    let trimmed = line.trim_start_matches([' ', '\t']);
    let indent = line.len() - trimmed.len();
    let ch = trimmed.chars().next()?;
    if ch != '`' && ch != '~' {
        return None;
    }
    let len = trimmed.chars().take_while(|&c| c == ch).count();
    if len < 3 {
        return None;
    }
    // Both fence characters are one byte, so `len` is also a byte offset.
    let info = trimmed[len..].trim();
    // CommonMark: a backtick fence's info string may not contain backticks
    // (that is inline code such as ```` ```x``` ````).
    if ch == '`' && info.contains('`') {
        return None;
    }
    Some(Opener {
        ch,
        len,
        indent,
        tag: classify(info),
    })
}

/// The tag of a fence's info string (first word, braces/dots tolerated).
fn classify(info: &str) -> Tag {
    let word = info
        .split(|c: char| c.is_whitespace() || c == ',' || c == '}')
        .next()
        .unwrap_or("")
        .trim_start_matches(['{', '.']);
    if word.is_empty() {
        return Tag::Untagged;
    }
    match word.to_ascii_lowercase().as_str() {
        "python" | "py" | "python3" | "py3" => Tag::Python,
        _ => Tag::Other,
    }
}

/// Whether `line` closes a fence of `ch` repeated `len` times.
fn closes(line: &str, ch: char, len: usize) -> bool {
    let t = line.trim();
    !t.is_empty() && t.chars().all(|c| c == ch) && t.len() >= len
}

/// Remove up to `n` columns of leading spaces/tabs.
fn strip_indent(line: &str, n: usize) -> &str {
    let strip = line
        .bytes()
        .take(n)
        .take_while(|&b| b == b' ' || b == b'\t')
        .count();
    &line[strip..]
}

/// Join lines, dropping leading/trailing blank lines and trailing
/// whitespace; `None` when nothing is left.
fn finish<'a>(lines: impl Iterator<Item = &'a str>) -> Option<String> {
    let lines: Vec<&str> = lines.map(|l| l.trim_end()).collect();
    let first = lines.iter().position(|l| !l.is_empty())?;
    let last = lines.iter().rposition(|l| !l.is_empty())?;
    let mut code = lines[first..=last].join("\n");
    code.push('\n');
    Some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Option<String> {
        extract_code(s)
    }

    #[test]
    fn single_python_block() {
        let r = "Here you go:\n```python\ndef f(x):\n    return x + 1\n```\nDone.";
        assert_eq!(ex(r).unwrap(), "def f(x):\n    return x + 1\n");
    }

    #[test]
    fn py_tag_and_case_and_python3() {
        assert_eq!(ex("```py\nx = 1\n```").unwrap(), "x = 1\n");
        assert_eq!(ex("```Python\nx = 2\n```").unwrap(), "x = 2\n");
        assert_eq!(ex("```python3\nx = 3\n```").unwrap(), "x = 3\n");
        assert_eq!(ex("``` python \nx = 4\n```").unwrap(), "x = 4\n");
        assert_eq!(ex("```{.python}\nx = 5\n```").unwrap(), "x = 5\n");
        assert_eq!(
            ex("```python title=\"a.py\"\nx = 6\n```").unwrap(),
            "x = 6\n"
        );
    }

    #[test]
    fn last_python_block_wins() {
        let r = "First try:\n```python\nx = 1\n```\nBetter:\n```python\nx = 2\n```\n";
        assert_eq!(ex(r).unwrap(), "x = 2\n");
    }

    #[test]
    fn python_block_preferred_over_later_untagged_and_other() {
        let r =
            "```python\nprint(f(2))\n```\nOutput:\n```\n3\n```\nRun:\n```bash\npython a.py\n```";
        assert_eq!(ex(r).unwrap(), "print(f(2))\n");
    }

    #[test]
    fn other_languages_first_then_python() {
        let r = "```bash\npip install x\n```\n```json\n{}\n```\n```python\nimport x\n```";
        assert_eq!(ex(r).unwrap(), "import x\n");
    }

    #[test]
    fn untagged_block_used_when_no_python_block() {
        let r = "Code:\n```\ndef g():\n    pass\n```\nand\n```\ny = 1\n```";
        assert_eq!(ex(r).unwrap(), "y = 1\n");
    }

    #[test]
    fn only_other_language_blocks_is_none() {
        assert_eq!(ex("```js\nconst x = 1;\n```"), None);
        assert_eq!(ex("Try:\n```bash\nx=1\n```\n"), None);
    }

    #[test]
    fn tilde_fences() {
        let r = "~~~python\na = 1\n~~~\n";
        assert_eq!(ex(r).unwrap(), "a = 1\n");
        // A backtick run does not close a tilde fence.
        let r = "~~~python\ns = '''\n```\n'''\n~~~";
        assert_eq!(ex(r).unwrap(), "s = '''\n```\n'''\n");
    }

    #[test]
    fn longer_fence_contains_shorter_ones() {
        let r = "````python\ndoc = \"\"\"\n```python\ninner = 1\n```\n\"\"\"\n````\n";
        assert_eq!(
            ex(r).unwrap(),
            "doc = \"\"\"\n```python\ninner = 1\n```\n\"\"\"\n"
        );
        // Closing fence may be longer than the opener, never shorter.
        let r = "```python\nq = 1\n``````\nafter";
        assert_eq!(ex(r).unwrap(), "q = 1\n");
    }

    #[test]
    fn python_inside_markdown_block_is_not_a_block() {
        let r = "````markdown\n```python\nz = 1\n```\n````";
        assert_eq!(ex(r), None);
    }

    #[test]
    fn unterminated_final_fence_runs_to_end() {
        let r = "Sure:\n```python\ndef f():\n    return 1\n\n# cut off by the token c";
        assert_eq!(
            ex(r).unwrap(),
            "def f():\n    return 1\n\n# cut off by the token c\n"
        );
    }

    #[test]
    fn crlf_is_normalised() {
        let r = "Hi\r\n```python\r\nx = 1\r\nif x:\r\n    y = 2\r\n```\r\n";
        assert_eq!(ex(r).unwrap(), "x = 1\nif x:\n    y = 2\n");
    }

    #[test]
    fn indented_fence_in_list_item_is_dedented() {
        let r = "1. Do this:\n   ```python\n   def f():\n       return 2\n   ```\n";
        assert_eq!(ex(r).unwrap(), "def f():\n    return 2\n");
    }

    #[test]
    fn blank_lines_trimmed_inner_kept() {
        let r = "```python\n\n\nx = 1\n\n\ny = 2   \n\n```";
        assert_eq!(ex(r).unwrap(), "x = 1\n\n\ny = 2\n");
    }

    #[test]
    fn empty_blocks_are_none_or_skipped() {
        assert_eq!(ex("```python\n```"), None);
        assert_eq!(ex("```python\n   \n\t\n```"), None);
        assert_eq!(ex("```python"), None);
        // An empty last python block falls back to the earlier non-empty one.
        assert_eq!(
            ex("```python\nx = 1\n```\n```python\n```").unwrap(),
            "x = 1\n"
        );
        // An empty python block does not make an untagged one lose.
        assert_eq!(ex("```\nx = 9\n```\n```python\n\n```").unwrap(), "x = 9\n");
    }

    #[test]
    fn empty_and_whitespace_replies_are_none() {
        assert_eq!(ex(""), None);
        assert_eq!(ex("   \n\t\r\n  "), None);
    }

    #[test]
    fn unfenced_code_is_whole_text() {
        let r = "\n\nimport math\ndef f(x):\n    return math.sqrt(x)\n\n";
        assert_eq!(
            ex(r).unwrap(),
            "import math\ndef f(x):\n    return math.sqrt(x)\n"
        );
        assert_eq!(ex("x=1").unwrap(), "x=1\n");
    }

    #[test]
    fn unfenced_prose_is_none() {
        assert_eq!(ex("I can't help with that."), None);
        assert_eq!(
            ex("Sorry, I cannot write this function.\nPlease ask again."),
            None
        );
    }

    #[test]
    fn inline_triple_backticks_are_not_fences() {
        // ```x``` on one line is inline code, so the reply is unfenced prose.
        assert_eq!(ex("Use ```len(x)``` here."), None);
        // ...and unfenced text with an `=` line counts as code.
        assert_eq!(ex("```a = 1```").unwrap(), "```a = 1```\n");
    }

    #[test]
    fn two_backticks_are_not_a_fence() {
        assert_eq!(ex("``python\nx = 1\n``").unwrap(), "``python\nx = 1\n``\n");
    }

    #[test]
    fn looks_like_python_cases() {
        for yes in [
            "def f():",
            "  class A:",
            "import os",
            "from a import b",
            "return 1",
            "x = 3",
            "print(1)",
            "async def g():",
        ] {
            assert!(looks_like_python(yes), "{yes}");
        }
        for no in ["Hello there.", "I cannot do that", "", "definitely not"] {
            assert!(!looks_like_python(no), "{no}");
        }
    }
}
