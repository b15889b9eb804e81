//! Pulling the Python code out of a model's reply (pure: no I/O).
//!
//! The rule, in order of preference (see [`extract_code`]):
//!
//! 1. the non-blank fenced blocks tagged as Python (`python`, `py`,
//!    `python3`, `py3`, any case), else those with no language tag; of these,
//!    the last one that defines every name the check takes from `solution`
//!    (see [`solution_names`]), else the last one (models often follow the
//!    solution with an "example usage" block that only calls it);
//! 2. else, when the reply has no fence at all, the whole reply, provided at
//!    least one of its lines looks like Python (see [`looks_like_python`]);
//! 3. else nothing (`None`, recorded by the caller as `no_code`).
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
/// `wanted` are the names the check takes from `solution` ([`solution_names`]
/// of its source; empty when it names none).
///
/// Preference: the non-blank ```` ```python ````/```` ```py ```` blocks
/// (also `~~~`-fenced, longer fences, any case, `python3`/`py3`), else the
/// non-blank untagged blocks; of these the last that defines every name in
/// `wanted` (see [`defines`]), else the last; else, only when
/// the reply contains no fence at
/// all, the whole reply trimmed, provided some line looks like Python (it
/// starts with `def `, `async def `, `class `, `import `, `from `, `return`
/// or `print(`, or contains `=`), so that a plain refusal ("I can't help with
/// that.") yields `None` instead of a guaranteed syntax error. A reply whose
/// only fences are tagged with other languages yields `None`. A blank result
/// is always `None`.
///
/// The returned code uses `\n` line endings, has leading and trailing blank
/// lines removed and ends with a single `\n`.
pub fn extract_code(reply: &str, wanted: &[String]) -> Option<String> {
    let lines = split_lines(reply);
    let (blocks, saw_fence) = find_blocks(&lines);

    let candidates = |tag: Tag| -> Vec<&Block> {
        blocks
            .iter()
            .filter(|b| b.tag == tag && b.lines.iter().any(|l| !l.trim().is_empty()))
            .collect()
    };
    let mut tier = candidates(Tag::Python);
    if tier.is_empty() {
        tier = candidates(Tag::Untagged);
    }
    let complete = |b: &&&Block| wanted.iter().all(|name| defines(&b.lines, name));
    if let Some(block) = tier.iter().rev().find(complete).or(tier.last()) {
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

/// The names a check takes from the solution module, in order of first
/// appearance without repeats: those of every `from solution import a, b as c`
/// (parenthesised and continued lines too; `*` names none) and, when the check
/// has an `import solution` statement, every `solution.name` it mentions
/// (dunders such as `solution.__file__` and paths in strings left out).
///
/// Crude by design (no Python parser): a name found in a string or comment
/// only means no block defines them all, and the last block is taken as
/// before.
pub fn solution_names(check: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut push = |name: &str| {
        // A dunder (`solution.__file__`) is the module's own, not the answer's.
        let dunder = name.len() > 4 && name.starts_with("__") && name.ends_with("__");
        if is_identifier(name) && !dunder && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    };
    let lines = split_lines(check);
    let mut imports_module = false;
    let mut i = 0;
    while i < lines.len() {
        let line = strip_comment(lines[i]);
        i += 1;
        // Statements on one line are separated by `;`; only the last can go on.
        let statements: Vec<&str> = line.split(';').collect();
        for (k, stmt) in statements.iter().enumerate() {
            let stmt = stmt.trim();
            if let Some(rest) = stmt.strip_prefix("import ") {
                imports_module |= rest
                    .split(',')
                    .any(|m| m.split_whitespace().next() == Some("solution"));
                continue;
            }
            let Some(rest) = stmt
                .strip_prefix("from ")
                .and_then(|r| r.trim_start().strip_prefix("solution"))
                .and_then(|r| r.trim_start().strip_prefix("import"))
            else {
                continue;
            };
            // Gather the whole statement: a parenthesised list or `\` continuations.
            let mut list = rest.to_string();
            let open = list.contains('(');
            let last = k + 1 == statements.len();
            while last
                && ((open && !list.contains(')')) || (!open && list.trim_end().ends_with('\\')))
            {
                let Some(next) = lines.get(i) else { break };
                i += 1;
                list = list.trim_end().trim_end_matches('\\').to_string();
                list.push(' ');
                list.push_str(strip_comment(next).split(';').next().unwrap_or(""));
            }
            for item in list.split([',', '(', ')', '\\']) {
                // `a as b` takes `a` from the solution.
                if let Some(name) = item.split_whitespace().next() {
                    push(name);
                }
            }
        }
    }
    if imports_module {
        for line in &lines {
            let code = strip_comment(line);
            for (at, _) in code.match_indices("solution.") {
                // Not part of a longer name, an attribute, or a path in a string
                // (`"solution.py"`, `'./solution.py'`).
                let before = code[..at].chars().next_back();
                if before.is_some_and(|c| c.is_alphanumeric() || "_.\"'/\\".contains(c)) {
                    continue;
                }
                let rest = &code[at + "solution.".len()..];
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                push(&rest[..end]);
            }
        }
    }
    names
}

/// Whether the block defines `name`: a `def`, `async def` or `class` of that
/// name at any indentation outside a class body (a solution may define it
/// under `if` or `try`; a method of that name is not it), or an unindented
/// assignment or annotation to it that does not rewrap it (`name = …`,
/// `name: T = …`, `a, name = …`, `name = lambda …`, `Point = namedtuple(…)`;
/// not `name = cache(name)`, which passes a definition made elsewhere). An
/// import does not define it: a usage block's `from mymodule import name` only
/// refers to the solution.
pub fn defines(lines: &[String], name: &str) -> bool {
    // Open `def`/`class` bodies around the current line: (indentation, is a class).
    let mut open: Vec<(usize, bool)> = Vec::new();
    for line in lines {
        let code = strip_comment(line).trim_end();
        let stmt = code.trim_start();
        if stmt.is_empty() {
            continue;
        }
        let indent = code.len() - stmt.len();
        while open.last().is_some_and(|&(i, _)| i >= indent) {
            open.pop();
        }
        let head = stmt
            .strip_prefix("async ")
            .map(str::trim_start)
            .unwrap_or(stmt);
        let keyword = ["def ", "class "]
            .into_iter()
            .find_map(|k| head.strip_prefix(k).map(|rest| (k, rest)));
        if let Some((keyword, rest)) = keyword {
            let in_class = open.iter().any(|&(_, class)| class);
            if !in_class && leading_identifier(rest.trim_start()) == name {
                return true;
            }
            open.push((indent, keyword == "class "));
            continue;
        }
        if indent > 0 {
            continue;
        }
        // An assignment target: the text before the first `=` that is not
        // part of `==`, `<=`, `>=`, `!=`, split on commas, annotations cut.
        let Some(eq) = assignment_eq(code) else {
            if code
                .split_once(':')
                .is_some_and(|(target, _)| target.trim() == name)
            {
                return true;
            }
            continue;
        };
        let targets = code[..eq].split(',').any(|t| {
            let t = t.trim().trim_start_matches(['(', '[', '*']);
            let t = t.split(':').next().unwrap_or("");
            t.trim().trim_end_matches([')', ']']) == name
        });
        if targets && !rewraps(&code[eq + 1..], name) {
            return true;
        }
    }
    false
}

/// Whether an assignment's `value` passes `name` itself as an argument
/// (`cache(name)`, `wraps(g)(name)`, `partial(name, 1)`): the name was defined
/// elsewhere and is only wrapped here. String literals are not looked into
/// (`namedtuple("Point", …)`), nor is a lambda (`f = lambda x: f(x - 1)` is a
/// definition).
fn rewraps(value: &str, name: &str) -> bool {
    let value = without_strings(value.trim());
    if value.starts_with("lambda") {
        return false;
    }
    let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
    value.match_indices(name).any(|(at, _)| {
        let before = value[..at].trim_end().chars().next_back();
        let after = value[at + name.len()..].trim_start().chars().next();
        !ident(value[..at].chars().next_back())
            && !ident(value[at + name.len()..].chars().next())
            && matches!(before, Some('(' | ','))
            && matches!(after, Some(')' | ','))
    })
}

/// `code` with the contents of its string literals ('…', "…", with `\`
/// escapes) blanked out, quotes kept.
fn without_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in code.chars() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                    out.push(c);
                }
            }
            None => {
                if c == '"' || c == '\'' {
                    quote = Some(c);
                }
                out.push(c);
            }
        }
    }
    out
}

/// The byte offset of the `=` of an assignment statement, if `code` is one.
fn assignment_eq(code: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        if matches!(b, b'(' | b'[' | b'{' | b'"' | b'\'') && i > 0 {
            // A call or literal before any `=`: `f(x=1)` is not an assignment.
            if !code[..i].contains('=') {
                return None;
            }
        }
        if b != b'=' {
            continue;
        }
        let prev = i.checked_sub(1).map(|j| bytes[j]);
        let next = bytes.get(i + 1).copied();
        if next == Some(b'=') || matches!(prev, Some(b'=' | b'<' | b'>' | b'!')) {
            return None;
        }
        // Augmented assignment (`+=`) rebinds an existing name: not a definition.
        if prev.is_some_and(|p| b"+-*/%&|^@:".contains(&p)) {
            return None;
        }
        return Some(i);
    }
    None
}

/// The identifier `text` starts with (empty when none).
fn leading_identifier(text: &str) -> &str {
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}

/// Whether `s` is a Python identifier (ASCII letters, digits, `_`, and any
/// non-ASCII letter; not starting with a digit).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_alphabetic() || c == '_')
        && chars.all(|c| c.is_alphanumeric() || c == '_')
}

/// `line` up to a `#` comment (a `#` inside a string literal is not tracked:
/// crude, like the callers).
fn strip_comment(line: &str) -> &str {
    line.split('#').next().unwrap_or("")
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
        extract_code(s, &[])
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

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn lines(code: &str) -> Vec<String> {
        code.lines().map(str::to_string).collect()
    }

    #[test]
    fn example_usage_block_after_the_solution_is_not_taken() {
        let r = "```python\ndef first_true(xs):\n    return 0\n```\nExample usage:\n```python\nprint(first_true([1]))\n```\n";
        assert_eq!(
            extract_code(r, &names(&["first_true"])).unwrap(),
            "def first_true(xs):\n    return 0\n"
        );
        // Without names from the check the last block is taken, as before.
        assert_eq!(ex(r).unwrap(), "print(first_true([1]))\n");
    }

    #[test]
    fn last_block_defining_every_name_wins_else_last_block() {
        let r = "```python\ndef f():\n    return 1\n```\nBetter:\n```python\ndef f():\n    return 2\nG = 3\n```\n```python\nf()\n```";
        assert_eq!(
            extract_code(r, &names(&["f"])).unwrap(),
            "def f():\n    return 2\nG = 3\n"
        );
        assert_eq!(
            extract_code(r, &names(&["f", "G"])).unwrap(),
            "def f():\n    return 2\nG = 3\n"
        );
        // No block defines `h`: the last block, as without names.
        assert_eq!(extract_code(r, &names(&["f", "h"])).unwrap(), "f()\n");
    }

    #[test]
    fn untagged_blocks_are_chosen_among_by_the_same_rule() {
        let r = "```\nclass Stack:\n    pass\n```\n```\ns = Stack()\n```";
        assert_eq!(
            extract_code(r, &names(&["Stack"])).unwrap(),
            "class Stack:\n    pass\n"
        );
        // A python block still beats an untagged one that defines the name.
        let r = "```\ndef g(): pass\n```\n```python\ng()\n```";
        assert_eq!(extract_code(r, &names(&["g"])).unwrap(), "g()\n");
    }

    #[test]
    fn solution_names_reads_every_import_form() {
        let check = "import os, sys\nfrom solution import a, b as bee  # two\nfrom solution import (\n    c,\n    d as dee,  # comment\n)\nfrom solution import e, \\\n    f\nfrom solution import *\nfrom solutions import nope\nfrom other.solution import no\ntry:\n    from solution import g\nexcept ImportError:\n    pass\nfrom solution import a\n";
        assert_eq!(
            solution_names(check),
            names(&["a", "b", "c", "d", "e", "f", "g"])
        );
    }

    /// Regression (review): a usage block that imports the function from a module the
    /// model named, or from `solution`, counted as defining it and won over the solution.
    #[test]
    fn a_usage_block_importing_the_name_does_not_define_it() {
        for usage in [
            "from bisect_tool import first_true\nprint(first_true(0, 9, f))",
            "from solution import first_true\nassert first_true(0, 9, f) == 3",
            "first_true = functools.cache(first_true)",
        ] {
            let r = format!(
                "```python\ndef first_true(lo, hi, p):\n    return lo\n```\n```python\n{usage}\n```\n"
            );
            assert_eq!(
                extract_code(&r, &names(&["first_true"])).unwrap(),
                "def first_true(lo, hi, p):\n    return lo\n",
                "{usage}"
            );
        }
    }

    /// Regression (review): a fix that defines the function under `if`/`try` lost to an
    /// earlier block quoting the user's broken version at top level.
    #[test]
    fn a_later_block_defining_the_name_under_if_or_try_wins() {
        let r = "Your code:\n```python\ndef write_atomic(p, b):\n    open(p, 'wb').write(b)\n```\nFixed:\n```python\nimport os\nif os.name == 'nt':\n    def write_atomic(p, b):\n        ...\nelse:\n    def write_atomic(p, b):\n        ...\n```\n";
        let code = extract_code(r, &names(&["write_atomic"])).unwrap();
        assert!(code.starts_with("import os\n"), "{code}");
    }

    /// Regression (review): a later block offering the name as a method of a class won over
    /// the earlier top-level function.
    #[test]
    fn a_method_of_the_name_does_not_define_it() {
        let r = "```python\ndef dist(a, b):\n    return 0\n```\nOr as a class:\n```python\nclass Geometry:\n    def dist(self, a, b):\n        return 0\n```\n";
        assert_eq!(
            extract_code(r, &names(&["dist"])).unwrap(),
            "def dist(a, b):\n    return 0\n"
        );
        // After the class body ends, a top-level def counts again.
        let code = lines("class G:\n    def dist(self):\n        pass\ndef dist():\n    pass");
        assert!(defines(&code, "dist"));
    }

    #[test]
    fn solution_names_skips_dunders_paths_and_reads_past_semicolons() {
        let check = "import solution, os\nprint(solution.__file__, solution.__name__)\npath = \"solution.py\"; other = './solution.py'\nsolution.go()\n";
        assert_eq!(solution_names(check), names(&["go"]));
        assert_eq!(
            solution_names(
                "from solution import f; import os\nimport sys; from solution import g, h as i\n"
            ),
            names(&["f", "g", "h"])
        );
    }

    #[test]
    fn solution_names_reads_attribute_uses_only_after_import_solution() {
        let check = "import solution\nassert solution.merge(1) == solution.merge_all()\nx = mysolution.no\ny = a.solution.no\n# solution.commented\n";
        assert_eq!(solution_names(check), names(&["merge", "merge_all"]));
        assert!(solution_names("x = solution.f\n").is_empty());
        assert!(solution_names("import solutions\nsolution.f\n").is_empty());
        let aliased = "import sys, solution as s\nsolution.h()\n";
        assert_eq!(solution_names(aliased), names(&["h"]));
    }

    #[test]
    fn defines_finds_top_level_bindings_only() {
        let yes = [
            ("def f(x):", "f"),
            ("async def f():", "f"),
            ("class C(Base):", "C"),
            ("class C:", "C"),
            ("N = 3", "N"),
            ("N: int = 3", "N"),
            ("N: list[int] = []", "N"),
            ("a, N = 1, 2", "N"),
            ("(a, N) = (1, 2)", "N"),
            ("f = lambda x: x", "f"),
            ("    def f(self):", "f"),
            ("if True:\n    async def f():", "f"),
            ("try:\n    class C:", "C"),
            // Regression (review): a value that names it in a string or calls it in a
            // lambda defines it.
            ("Point = namedtuple(\"Point\", \"x y\")", "Point"),
            ("Tag = Enum('Tag', 'A B')", "Tag"),
            (
                "flatten = lambda xs: [y for x in xs for y in flatten(x)]",
                "flatten",
            ),
            ("f = g(f_cache)", "f"),
        ];
        for (code, name) in yes {
            assert!(defines(&lines(code), name), "{code} defines {name}");
        }
        let no = [
            ("def fx():", "f"),
            ("from functools import reduce as f", "f"),
            ("from x import (a, f)", "f"),
            ("from solution import f", "f"),
            ("import f", "f"),
            ("f = cache(f)", "f"),
            ("f: Callable = wraps(g)(f)", "f"),
            ("f = partial(f, 1)", "f"),
            ("class Geometry:\n    def f(self):", "f"),
            ("class A:\n    class f:", "f"),
            ("    f = 1", "f"),
            ("f(x=1)", "f"),
            ("f == 1", "f"),
            ("f += 1", "f"),
            ("print(f)", "f"),
            ("x = f", "f"),
            ("# def f():", "f"),
            ("if f: pass", "f"),
            ("f[0] = 1", "f"),
        ];
        for (code, name) in no {
            assert!(
                !defines(&lines(code), name),
                "{code} does not define {name}"
            );
        }
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
