//! The interactive labelling session: one item per screen, one key per label (cbreak mode on
//! a terminal, one key per line otherwise), every label appended at once, the terminal's
//! mode put back however the session ends.

use super::*;

/// What a labeller sees for one item: the standard the judge was given (`standard`: the
/// models' brief and the suite's criteria), the task and the two answers, control characters but
/// newline and tab escaped (see [`printable_text`]). Never a model id, never the judge's
/// verdict.
pub fn render_item(
    position: usize,
    total: usize,
    item: &SampleItem,
    standard: &str,
    task: &str,
    answer_1: &str,
    answer_2: &str,
) -> String {
    let rule = "─".repeat(72);
    format!(
        "{rule}\nItem {position} of {total}  ({})\n{rule}\n\nWHAT \"BETTER\" MEANS (as the judge was told)\n\n{}\n\nTASK\n\n{}\n\n{rule}\nANSWER 1\n{rule}\n{}\n\n{rule}\nANSWER 2\n{rule}\n{}\n\n{rule}\n",
        item.item,
        printable_text(standard.trim_end()),
        printable_text(task.trim_end()),
        printable_text(answer_1.trim_end()),
        printable_text(answer_2.trim_end())
    )
}

pub(super) const KEYS_HELP: &str = "Which answer is better?  1 · 2 · t tie · b both bad · s skip · u undo · v view in pager · q quit";

/// Reads one key per press on a terminal (cbreak mode through `stty`), or one per line
/// otherwise; `None` at the end of input.
pub(super) struct Keys {
    tty: Option<TtyMode>,
    stdin: std::io::StdinLock<'static>,
}

/// What [`Keys::next`] returns for an arrow, function or other escape-sequence key: none of
/// them labels (the last byte of Down, `ESC [ B`, was read as `b`, "both bad").
pub(super) const ESCAPE_KEY: char = '\u{1b}';

/// Restores the terminal mode on drop.
pub(super) struct TtyMode {
    saved: String,
}

impl Drop for TtyMode {
    fn drop(&mut self) {
        let _ = std::process::Command::new("stty")
            .arg(&self.saved)
            .stdin(std::fs::File::open("/dev/tty").map_or(std::process::Stdio::null(), Into::into))
            .status();
    }
}

impl Keys {
    fn new() -> Self {
        let stdin = std::io::stdin().lock();
        let tty = std::io::stdin().is_terminal().then(enter_cbreak).flatten();
        if tty.is_none() {
            // Keys from a pipe block in a read no signal ends: a SIGINT or SIGTERM ends the
            // session with 130 and says so, as on a terminal (every label is on disk).
            exit_on_signal(None);
        }
        Keys { tty, stdin }
    }

    fn byte(&mut self) -> Option<u8> {
        let mut b = [0u8; 1];
        match std::io::Read::read(&mut self.stdin, &mut b) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(b[0]),
        }
    }

    /// Reads the rest of an escape sequence after its ESC: `ESC [` parameters and a final
    /// byte (0x40–0x7E; the Linux console's F1–F5 are `ESC [ [` and a letter), `ESC O` and one
    /// byte, or a key pressed with Alt/Option (`ESC b` is Option+← on a Mac): none of them is
    /// a label. A lone Esc takes the key after it too (there is no telling them apart without
    /// a timeout); the message says to press it again.
    fn skip_escape(&mut self) {
        // An ESC after a lone Esc begins the next key's own sequence (Esc, then Down).
        let mut next = self.byte();
        while next == Some(0x1b) {
            next = self.byte();
        }
        match next {
            Some(b'[') => match self.byte() {
                Some(b'[') => {
                    let _ = self.byte();
                }
                Some(b) if (0x40..=0x7e).contains(&b) => {}
                Some(_) => {
                    while let Some(b) = self.byte() {
                        if (0x40..=0x7e).contains(&b) {
                            break;
                        }
                    }
                }
                None => {}
            },
            Some(b'O') => {
                let _ = self.byte();
            }
            _ => {}
        }
    }

    fn next(&mut self) -> Option<char> {
        if self.tty.is_some() {
            loop {
                match self.byte()? {
                    b if b.is_ascii_whitespace() => continue,
                    // Ctrl-C, Ctrl-D, Ctrl-backslash and Ctrl-Z quit, every label so far saved
                    // (with signals off, the session cannot be suspended).
                    0x03 | 0x04 | 0x1a | 0x1c => return Some('q'),
                    0x1b => {
                        self.skip_escape();
                        return Some(ESCAPE_KEY);
                    }
                    b => return Some(b as char),
                }
            }
        }
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            match self.stdin.read_until(b'\n', &mut bytes) {
                Ok(0) | Err(_) => return None,
                Ok(_) => {
                    // A line that is not UTF-8 is not a key: said, and the item asked again
                    // (it ended the session in silence).
                    let Ok(line) = std::str::from_utf8(&bytes) else {
                        eprintln!("not a key: the line is not valid UTF-8");
                        continue;
                    };
                    let mut keys = line.trim().chars();
                    match (keys.next(), keys.next()) {
                        (Some(c), None) => return Some(c),
                        (Some(_), Some(_)) => {
                            // "12" is not a choice: nothing is recorded, the item is asked again.
                            eprintln!("one key per line: `{}` has several", line.trim());
                        }
                        (None, _) => {}
                    }
                }
            }
        }
    }
}

pub(super) fn enter_cbreak() -> Option<TtyMode> {
    let tty = || std::fs::File::open("/dev/tty").ok();
    let saved = std::process::Command::new("stty")
        .arg("-g")
        .stdin(tty()?)
        .output()
        .ok()?;
    let saved = String::from_utf8(saved.stdout).ok()?.trim().to_string();
    let ok = std::process::Command::new("stty")
        // -isig: Ctrl-C arrives as a key (and quits like `q`), so the mode is always restored.
        .args(["-icanon", "-echo", "-isig", "min", "1"])
        .stdin(tty()?)
        .status()
        .ok()?
        .success();
    if !ok {
        // stty may have applied part of the change before it failed.
        drop(TtyMode { saved });
        return None;
    }
    // A SIGTERM or SIGINT from outside (the terminal's own keys no longer send them) must not
    // leave the terminal without echo: the mode is put back before the session ends with 130.
    // Every label given so far is already on disk.
    exit_on_signal(Some(saved.clone()));
    Some(TtyMode { saved })
}

/// Ends the session with 130 once a SIGINT or SIGTERM arrives (the listener has said what it
/// means), first putting back the terminal mode `restore` when there is one.
fn exit_on_signal(restore: Option<String>) {
    crate::interrupt::install();
    let _ = std::thread::Builder::new()
        .name("session-stop".into())
        .spawn(move || {
            while !crate::interrupt::requested() {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            if let Some(saved) = restore {
                drop(TtyMode { saved });
            }
            crate::interrupt::exit_interrupted();
        });
}

/// Shows `text` in `$PAGER` (default `less -R`).
pub(super) fn page(text: &str) {
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less -R".into());
    let mut parts = pager.split_whitespace();
    let Some(cmd) = parts.next() else { return };
    if let Ok(mut child) = std::process::Command::new(cmd)
        .args(parts)
        .stdin(std::process::Stdio::piped())
        .spawn()
    {
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(text.as_bytes());
        }
        let _ = child.wait();
    }
}

/// The interactive session.
pub(super) fn session(
    cli: &Cli,
    run: &str,
    labeller: &str,
    reveal: bool,
) -> anyhow::Result<Outcome> {
    valid_labeller(labeller)?;
    let l = open(cli, run)?;
    // Hints are commands to run as they are: with the config file this session was given.
    let config = crate::config_flag_needed()
        .map(|flag| format!(" {flag}"))
        .unwrap_or_default();
    let path = labels_path(&l.run_dir, labeller);
    // One writer per labeller's file; other people label alongside.
    let _mine = lock_labeller(&l.run_dir, labeller)?;
    let records = read_labels(&path, &l.sample, true)?;
    let mut state = effective_labels(&records);
    let mut history: Vec<String> = records
        .iter()
        .filter(|r| r.choice != Choice::Undo)
        .map(|r| r.item.clone())
        .collect();
    let mut revealed = revealed_items(&records);
    // Opened at the first label: a session quit before it leaves no file, so no labeller.
    let mut appender: Option<JsonlAppender> = None;
    let mut append = |record: &LabelRecord| -> anyhow::Result<()> {
        if appender.is_none() {
            appender = Some(JsonlAppender::open(&path)?);
        }
        appender.as_mut().expect("opened").append(record)
    };
    // A signal from outside ends a terminal session (see `enter_cbreak`): say what that means.
    crate::interrupt::say_on_stop(format!(
        "every label so far is saved; the session ends (resume with: judge{config} label --run {run} --labeller {labeller})"
    ));
    let mut keys = Keys::new();
    let clear_screen = std::io::stdout().is_terminal();
    let mut notice = String::new();
    let out = &mut std::io::stdout().lock();
    let total = l.sample.len();
    // Items without a label first, then those skipped in an earlier session (a skip defers
    // an item; one skipped in this session is not offered again in it).
    let mut skipped_now: BTreeSet<String> = BTreeSet::new();
    let next_item = |state: &BTreeMap<String, Option<Winner>>, skipped_now: &BTreeSet<String>| {
        l.sample
            .iter()
            .position(|i| !state.contains_key(&i.item))
            .or_else(|| {
                l.sample.iter().position(|i| {
                    state.get(&i.item) == Some(&None) && !skipped_now.contains(&i.item)
                })
            })
    };
    let mut current = next_item(&state, &skipped_now);
    let mut ended_by_input = false;
    while let Some(pos) = current {
        let item = l.sample[pos].clone();
        let (task, a1, a2) = answers(&l, &item);
        let screen = render_item(pos + 1, total, &item, &l.standard(), task, a1, a2);
        let done = state.values().filter(|v| v.is_some()).count();
        if clear_screen {
            // A fresh screen per item on a terminal; scripts and pipes get plain text.
            write!(out, "\x1b[2J\x1b[H{notice}")?;
        }
        write!(out, "{screen}[{done} of {total} labelled] {KEYS_HELP}\n> ")?;
        out.flush()?;
        let Some(key) = keys.next() else {
            ended_by_input = true;
            break;
        };
        writeln!(out)?;
        let choice = match key {
            'q' => break,
            'v' => {
                page(&screen);
                continue;
            }
            'u' => {
                let Some(last) = history
                    .iter()
                    .rev()
                    .find(|it| state.contains_key(*it))
                    .cloned()
                else {
                    notice = "nothing to undo\n".to_string();
                    if !clear_screen {
                        write!(out, "{notice}")?;
                    }
                    continue;
                };
                // A saved label whose models were shown (--reveal, in this session or an
                // earlier one): relabelling it would not be blind.
                if revealed.contains(&last) {
                    notice = format!(
                        "cannot undo `{last}`: its models were shown when it was saved (--reveal), so relabelling it would not be blind\n"
                    );
                    if !clear_screen {
                        write!(out, "{notice}")?;
                    }
                    continue;
                }
                notice.clear();
                let undone = l.sample.iter().find(|i| i.item == last).map(item_key);
                append(&LabelRecord {
                    item: last.clone(),
                    labeller: labeller.into(),
                    choice: Choice::Undo,
                    winner: None,
                    at: now(),
                    item_key: undone,
                    revealed: false,
                })?;
                state.remove(&last);
                history.retain(|h| h != &last);
                current = l.sample.iter().position(|i| i.item == last);
                continue;
            }
            k => match Choice::parse(&k.to_string()) {
                Some(c) => c,
                None => {
                    // Kept above the next screen (a terminal's is cleared first).
                    notice = if k == ESCAPE_KEY {
                        "arrow, function and Alt keys do nothing here (`v` views the item in a pager; after Esc, press your key again)\n"
                            .to_string()
                    } else {
                        format!("unknown key `{}`\n", k.escape_debug())
                    };
                    if !clear_screen {
                        write!(out, "{notice}")?;
                    }
                    continue;
                }
            },
        };
        let winner = choice_winner(&item, choice);
        let shown = reveal && winner.is_some();
        append(&LabelRecord {
            item: item.item.clone(),
            labeller: labeller.into(),
            choice,
            winner,
            at: now(),
            item_key: Some(item_key(&item)),
            revealed: shown,
        })?;
        if shown {
            revealed.insert(item.item.clone());
        } else {
            revealed.remove(&item.item);
        }
        state.insert(item.item.clone(), winner);
        history.push(item.item.clone());
        notice.clear();
        if reveal && winner.is_some() {
            let (m1, m2) = item.shown();
            notice = format!(
                "(saved {}) Answer 1 was `{m1}`, Answer 2 was `{m2}`\n",
                item.item
            );
            if !clear_screen {
                write!(out, "{notice}")?;
            }
        }
        if winner.is_none() {
            skipped_now.insert(item.item.clone());
        }
        current = next_item(&state, &skipped_now);
    }
    // A signal that also closed the keys' pipe (Ctrl-C reaches the whole pipeline) ends the
    // loop by end of input before the watcher thread acts: still an interruption (130).
    if ended_by_input {
        // The listener sets the flag a moment after the signal that closed the pipe.
        for _ in 0..10 {
            if crate::interrupt::requested() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
    if crate::interrupt::requested() {
        drop(keys);
        crate::interrupt::exit_interrupted();
    }
    if clear_screen {
        write!(out, "{notice}")?;
    }
    let labelled = state.values().filter(|v| v.is_some()).count();
    let remaining = l
        .sample
        .iter()
        .filter(|i| !state.contains_key(&i.item))
        .count();
    let skipped = state.len() - labelled;
    let skipped = match skipped {
        0 => String::new(),
        n => format!(", {n} skipped"),
    };
    // A session quit before its first key writes no file: none to name.
    let saved = if path.exists() {
        format!("saved in {}", path.display())
    } else {
        "nothing saved".to_string()
    };
    writeln!(
        out,
        "{labelled} of {total} labelled by `{labeller}`{skipped}, {remaining} left; {saved}"
    )?;
    if remaining > 0 {
        writeln!(
            out,
            "resume with: judge{config} label --run {run} --labeller {labeller}"
        )?;
    }
    Ok(Outcome::Success)
}
