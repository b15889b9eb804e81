//! Labelling in a spreadsheet: `label export` writes the blind sheet, `label import` checks
//! every row of a filled one before it imports any.

use super::*;

/// `judge label export`: the blind sheet.
pub(super) fn export(cli: &Cli, args: &LabelExportArgs) -> anyhow::Result<Outcome> {
    crate::report::refuse_output_into_run(
        args.output.as_deref(),
        &crate::config::project_root(&cli.config).join("runs"),
    )?;
    let l = open(cli, &args.run)?;
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record([
        "item", "task", "standard", "prompt", "answer_1", "answer_2", "choice", "sample",
    ])?;
    let digest = digest_of(&l);
    let standard = l.standard();
    let standard = sheet_cell(&standard);
    for item in &l.sample {
        let (task, a1, a2) = answers(&l, item);
        let [task, a1, a2] = [task, a1, a2].map(sheet_cell);
        w.write_record([
            item.item.as_str(),
            item.task.as_str(),
            &standard,
            &task,
            &a1,
            &a2,
            "",
            &digest,
        ])?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| anyhow::anyhow!("failed to build the sheet: {e}"))?;
    write_stdout_or_file(&bytes, args.output.as_deref())?;
    if let Some(p) = &args.output {
        eprintln!(
            "wrote {} items to {}; fill the `choice` column with 1, 2, tie, both_bad or skip",
            l.sample.len(),
            p.display()
        );
    }
    Ok(Outcome::Success)
}

/// `judge label import`: validates every row first; imports nothing if any row is wrong.
pub(super) fn import(cli: &Cli, args: &LabelImportArgs) -> anyhow::Result<Outcome> {
    valid_labeller(&args.labeller)?;
    let l = open(cli, &args.run)?;
    let _mine = lock_labeller(&l.run_dir, &args.labeller)?;
    // A label whose models this labeller has seen (--reveal) is not given again, by a sheet
    // either.
    let path = labels_path(&l.run_dir, &args.labeller);
    let earlier = read_labels(&path, &l.sample, true)?;
    let revealed = revealed_items(&earlier);
    let effective = effective_labels(&earlier);
    let Sheet {
        records,
        errors,
        unfilled,
    } = read_sheet(&args.file, &l, &args.labeller, &revealed)?;
    if !errors.is_empty() {
        for e in &errors {
            eprintln!("error: {}", crate::report::printable(e));
        }
        return Err(JudgeError::usage(format!(
            "{}: {} invalid row(s); nothing was imported (fix them and import again)",
            args.file.display(),
            errors.len()
        ))
        .into());
    }
    std::fs::create_dir_all(path.parent().expect("labels dir"))
        .context("failed to create labels/")?;
    // Items this labeller had answered before: the sheet's later answer replaces theirs.
    let before: BTreeSet<&str> = earlier.iter().map(|r| r.item.as_str()).collect();
    let replaced = records
        .iter()
        .filter(|r| before.contains(r.item.as_str()))
        .count();
    // All or nothing, also under `kill -9`: the file with the sheet's labels added replaces
    // the old one in one rename (the read above cut off any torn last line).
    let mut bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("failed to read `{}`", path.display())),
    };
    for r in &records {
        serde_json::to_writer(&mut bytes, r)?;
        bytes.push(b'\n');
    }
    // A killed import's temp file of this labeller's file is no one else's (the labeller's
    // lock is held): removed, where the run's sweep would wait for an exclusive command.
    for (stale, _) in crate::cache::temp_files_of(&path) {
        let _ = std::fs::remove_file(stale);
    }
    crate::cache::write_atomic(&path, &bytes)
        .with_context(|| format!("failed to write `{}`", path.display()))?;
    let mut replaced = match replaced {
        0 => String::new(),
        n => format!(" ({n} of them replace this labeller's earlier answers to those items)"),
    };
    // An empty choice is "not labelled here", not "take my label back" (that is `u` in a
    // session): said, so that a cleared cell is not taken for a removed label.
    let kept = unfilled
        .iter()
        .filter(|i| effective.get(i.as_str()).is_some_and(Option::is_some))
        .count();
    if kept > 0 {
        replaced.push_str(&format!(
            "; {kept} row(s) with an empty choice left this labeller's earlier labels of those items as they were (undo a label in a session: `u`)"
        ));
    }
    eprintln!(
        "imported {} label(s) for `{}` into {}{replaced}",
        records.len(),
        args.labeller,
        path.display()
    );
    Ok(Outcome::Success)
}

/// How much of each answer an imported sheet must match: enough to tell two comparisons
/// apart, short of the cell limits of spreadsheet programs (Excel cuts at 32,767).
pub(super) const SHEET_CHECK_CHARS: usize = 2000;

/// Why a sheet row's item is not the current sample's item of that id (a sheet exported
/// before the sample was replaced): its task or its answers differ. Columns the sheet lacks
/// are not compared; answers are compared on their first [`SHEET_CHECK_CHARS`] characters,
/// ignoring line endings and surrounding whitespace.
pub(super) fn sheet_row_mismatch(
    l: &Labelling,
    item: &SampleItem,
    cell: impl Fn(&str) -> Option<String>,
) -> Option<String> {
    let (_, a1, a2) = answers(l, item);
    let norm = |t: &str| {
        let t = t.replace("\r\n", "\n");
        t.trim().chars().take(SHEET_CHECK_CHARS).collect::<String>()
    };
    // The export guarded cells against formulas with a leading `'`, which a spreadsheet may
    // keep or drop: either reading matches (an answer may begin with `'-` itself).
    let same = |col: &str, want: &str| {
        cell(col).is_none_or(|got| {
            let want = norm(want);
            norm(&got) == want || norm(crate::report::unsheet_cell(&got)) == want
        })
    };
    let id = &item.item;
    if !same("task", &item.task) {
        return Some(format!(
            "the sheet has task `{}` for `{id}`, the current sample task `{}`",
            cell("task").unwrap_or_default().trim(),
            item.task
        ));
    }
    (!same("answer_1", a1) || !same("answer_2", a2))
        .then(|| format!("the sheet shows other answers for `{id}` than the current sample"))
}

/// Whether a sheet's `standard` cell is `want`: line endings and surrounding whitespace
/// aside, either with or without the export's formula guard, compared up to a length short of
/// Excel's cell limit (32,767 characters).
fn same_standard(got: &str, want: &str) -> bool {
    let norm = |t: &str| {
        let t = t.replace("\r\n", "\n");
        t.trim().chars().take(30_000).collect::<String>()
    };
    let want = norm(want);
    norm(got) == want || norm(crate::report::unsheet_cell(got)) == want
}

/// The sheet's delimiter: a comma, unless its header line holds more semicolons or tabs
/// (spreadsheets in many locales save "CSV" with semicolons).
pub(super) fn sheet_delimiter(bytes: &[u8]) -> u8 {
    let header = bytes.split(|&b| b == b'\n').next().unwrap_or_default();
    let count = |d: u8| header.iter().filter(|&&b| b == d).count();
    [b',', b';', b'\t']
        .into_iter()
        .max_by_key(|&d| (count(d), d == b','))
        .unwrap_or(b',')
}

/// A sheet as read: its labels, the rows' errors, and the items whose choice is empty.
pub(super) struct Sheet {
    pub(super) records: Vec<LabelRecord>,
    pub(super) errors: Vec<String>,
    pub(super) unfilled: Vec<String>,
}

pub(super) fn read_sheet(
    file: &Path,
    l: &Labelling,
    labeller: &str,
    revealed: &BTreeSet<String>,
) -> anyhow::Result<Sheet> {
    let unreadable = |e: &dyn std::fmt::Display| {
        JudgeError::usage(format!("cannot read sheet `{}`: {e}", file.display()))
    };
    let bytes = std::fs::read(file).map_err(|e| unreadable(&e))?;
    let delimiter = sheet_delimiter(&bytes);
    // The file line a record starts on, counted in the file's bytes: after a CRLF record csv's
    // position (its line, and its byte) is still on the LF that ends the record before.
    // Records come in file order, so the count goes on from the last one's (linear in the
    // file, not in rows × file: a sheet of 1,000 long answers took 30 s).
    let (mut counted_to, mut newlines) = (0usize, 0usize);
    let mut line_at = |p: &csv::Position| {
        let mut at = usize::try_from(p.byte())
            .unwrap_or(usize::MAX)
            .min(bytes.len());
        while matches!(bytes.get(at), Some(b'\r' | b'\n')) {
            at += 1;
        }
        if at < counted_to {
            (counted_to, newlines) = (0, 0);
        }
        newlines += bytes[counted_to..at]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        counted_to = at;
        1 + newlines
    };
    // Parsed from the bytes already read (the sniffing and the line numbers need them too).
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(&bytes[..]);
    let headers = reader
        .headers()
        .map_err(|e| JudgeError::usage(format!("{}: bad header row: {e}", file.display())))?
        .clone();
    // A column judge reads, named twice, would be read from its first copy without a word
    // (a user's own columns may repeat).
    const READ: [&str; 8] = [
        "item", "task", "standard", "prompt", "answer_1", "answer_2", "choice", "sample",
    ];
    let mut named = BTreeSet::new();
    if let Some(twice) = headers
        .iter()
        .map(str::trim)
        .filter(|h| READ.contains(h))
        .find(|h| !named.insert(*h))
    {
        return Err(JudgeError::usage(format!(
            "{}: the header names column `{}` twice; keep one",
            file.display(),
            crate::report::printable(twice)
        ))
        .into());
    }
    let col = |name: &str| headers.iter().position(|h| h.trim() == name);
    let (Some(item_col), Some(choice_col)) = (col("item"), col("choice")) else {
        return Err(JudgeError::usage(format!(
            "{}: the header needs `item` and `choice` columns (as written by `judge label export`)",
            file.display()
        ))
        .into());
    };
    // Item ids are reused by every sample: a sheet must say which it was exported from, by
    // its `sample` column or (sheets from before it) by the answers it shows.
    let sample_col = col("sample");
    if sample_col.is_none() && (col("answer_1").is_none() || col("answer_2").is_none()) {
        return Err(JudgeError::usage(format!(
            "{}: without the `sample` column (or both answer columns) of `judge label export`, the sheet's items cannot be told from those of another sample of this run (item ids are reused); keep that column",
            file.display()
        ))
        .into());
    }
    let digest = digest_of(l);
    let standard = l.standard();
    let by_id: BTreeMap<&str, &SampleItem> =
        l.sample.iter().map(|s| (s.item.as_str(), s)).collect();
    let (mut records, mut errors, mut seen) = (Vec::new(), Vec::new(), BTreeSet::new());
    let mut unfilled = Vec::new();
    for row in reader.records() {
        // The line a row starts on (cells hold whole answers, so rows span many lines).
        let line = match &row {
            Ok(r) => r.position().map(&mut line_at),
            Err(e) => e.position().map(&mut line_at),
        }
        .unwrap_or(0);
        let at = |msg: String| format!("{}:{line}: {msg}", file.display());
        let row = match row {
            Ok(r) => r,
            Err(e) => {
                errors.push(at(format!("unreadable row ({e})")));
                continue;
            }
        };
        // A spreadsheet saves touched cells past the data as rows of bare delimiters.
        if row.iter().all(|cell| cell.trim().is_empty()) {
            continue;
        }
        if row.len() != headers.len() {
            // A quote left open swallows the rest of the file into one cell.
            let open_quote = row.len() < headers.len()
                && row.iter().next_back().is_some_and(|c| c.contains('\n'))
                && bytes.iter().filter(|&&b| b == b'"').count() % 2 == 1;
            errors.push(at(format!(
                "the row has {} cells and the header {}{}",
                row.len(),
                headers.len(),
                if open_quote {
                    " (a `\"` opened in it is never closed, so the rest of the file reads as one cell)"
                } else {
                    ""
                }
            )));
            continue;
        }
        let id = row.get(item_col).unwrap_or("").trim();
        let raw = row.get(choice_col).unwrap_or("").trim();
        let Some(item) = by_id.get(id) else {
            errors.push(at(format!(
                "unknown item `{id}` (not in this run's sample)"
            )));
            continue;
        };
        if !seen.insert(id.to_string()) {
            errors.push(at(format!("item `{id}` appears twice")));
            continue;
        }
        if raw.is_empty() {
            unfilled.push(id.to_string());
            continue;
        }
        if let Some(got) = sample_col.and_then(|c| row.get(c)).map(str::trim)
            && got != digest
        {
            errors.push(at(format!(
                "the row is of sample `{got}`, and the run's sample is `{digest}` (drawn again after this sheet was exported?); export a new sheet"
            )));
            continue;
        }
        if let Some(got) = col("standard").and_then(|c| row.get(c))
            && !same_standard(got, &standard)
        {
            errors.push(at(format!(
                "the row's `standard` for `{id}` is not the one this run's judge was given (a sheet exported from another run, or the cell was edited): agreement compares a label with the judge only under one standard; export a sheet from this run"
            )));
            continue;
        }
        let cell = |name: &str| Some(row.get(col(name)?)?.to_string());
        if let Some(why) = sheet_row_mismatch(l, item, cell) {
            errors.push(at(format!(
                "{why} (the sample was replaced after this sheet was exported, or the cell was edited; export a new sheet)"
            )));
            continue;
        }
        let Some(choice) = Choice::parse(raw) else {
            errors.push(at(format!(
                "choice `{raw}` is not one of 1, 2, tie, both_bad, skip (or the session's keys t, b, s)"
            )));
            continue;
        };
        if revealed.contains(id) {
            errors.push(at(format!(
                "item `{id}`: `{labeller}` saw its models when labelling it (--reveal), so it cannot be labelled again; leave its choice empty"
            )));
            continue;
        }
        records.push(LabelRecord {
            item: id.into(),
            labeller: labeller.into(),
            choice,
            winner: choice_winner(item, choice),
            at: now(),
            item_key: Some(item_key(item)),
            revealed: false,
        });
    }
    Ok(Sheet {
        records,
        errors,
        unfilled,
    })
}
