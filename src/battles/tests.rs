use super::*;

fn parse(text: &str, unit: BootstrapUnit) -> Result<(Vec<String>, Vec<Row>), BattlesError> {
    parse_battles(text.as_bytes(), unit)
}

/// The number each of `labels` gets: tasks are numbered in the order of their label keys.
fn task_numbers(labels: &[&str]) -> Vec<u32> {
    let mut keys: Vec<u128> = labels.iter().map(|l| label_key(l.as_bytes())).collect();
    keys.sort_unstable();
    keys.dedup();
    labels
        .iter()
        .map(|l| keys.binary_search(&label_key(l.as_bytes())).expect("a key") as u32)
        .collect()
}

#[test]
fn rows_in_file_order_with_interned_names() {
    let text = "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\",\"question_id\":\"q1\",\"judge\":\"j\"}\n\
                    \n\
                    {\"winner\":\"tie (bothbad)\",\"model_b\":\"x\",\"model_a\":\"z\\u0041\",\"question_id\":\"q2\"}\n\
                    {\"model_a\":\"y\",\"model_b\":\"zA\",\"winner\":\"tie\",\"question_id\":\"q1\"}";
    let (models, rows) = parse(text, BootstrapUnit::Task).expect("valid");
    assert_eq!(
        models,
        ["x", "y", "zA"],
        "an escaped name equals its plain form"
    );
    // Models numbered by name, tasks by label key (not by first appearance).
    let [q1, q2] = task_numbers(&["q1", "q2"])[..] else {
        unreachable!()
    };
    let r: Vec<(u32, u32, u32)> = rows.iter().map(|r| (r.a, r.b, r.task)).collect();
    assert_eq!(r, [(0, 1, q1), (2, 0, q2), (1, 2, q1)]);
    assert_eq!(rows[1].outcome, RowOutcome::Rated(Outcome::BothBad));
    // The comparison bootstrap needs no tasks: none are numbered.
    let (same_models, untasked) = parse(text, BootstrapUnit::Comparison).expect("valid");
    assert_eq!(same_models, models);
    assert!(untasked.iter().all(|r| r.task == u32::MAX));
}

#[test]
fn scanner_takes_plain_lines_and_defers_the_rest() {
    let plain = br#"{"judge":"j","model_a":"x","meta":{"a":[1,2,{"b":"}"}],"c":"q\"}"},"model_b":"y","n":-1.5e3,"ok":true,"winner":"tie","question_id":"q9"}"#;
    let plain_fields: Fields = (b"x", b"y", b"tie", Some(b"q9"));
    assert_eq!(scan_line(plain), Some(plain_fields));
    let no_question: Fields = (b"x", b"y", b"tie", None);
    assert_eq!(
        scan_line(br#"{"model_a":"x","model_b":"y","winner":"tie"}"#),
        Some(no_question)
    );
    for deferred in [
        &br#"{"model_a":"x\u0041","model_b":"y","winner":"tie"}"#[..],
        br#"{"model_a":"x","model_b":"y","winner":"tie","question_id":null}"#,
        br#"{"model_a":"x","model_b":"y","winner":"tie","n":tru}"#,
        br#"{"model_a":"x","model_a":"y","winner":"tie","model_b":"z"}"#,
        br#"{"model_a":"x","model_b":"y","winner":"tie"} trailing"#,
        br#"{"model_a":"x","model_b":"y"}"#,
        b"[1,2]",
    ] {
        assert_eq!(
            scan_line(deferred),
            None,
            "{}",
            String::from_utf8_lossy(deferred)
        );
    }
    // serde_json then decides: an escape is fine, a duplicate field is an error.
    let (models, _) = parse(
        r#"{"model_a":"x\u0041","model_b":"y","winner":"tie","question_id":null}"#,
        BootstrapUnit::Comparison,
    )
    .expect("valid");
    assert_eq!(models, ["xA", "y"]);
    assert!(
        parse(
            r#"{"model_a":"x","model_a":"y","winner":"tie","model_b":"z"}"#,
            BootstrapUnit::Comparison
        )
        .is_err()
    );
    assert!(
        parse(
            r#"{"model_a":"x","model_b":"y","winner":"tie","n":tru}"#,
            BootstrapUnit::Comparison
        )
        .is_err()
    );
}

/// A field judge does not read is still checked as JSON (found by differential fuzzing
/// against Python's json): a mismatched bracket or a number JSON does not allow is an error
/// with its line, as serde_json makes it, not a row taken as valid.
#[test]
fn fields_judge_ignores_are_still_checked_as_json() {
    let row =
        |extra: &str| format!(r#"{{"model_a":"x","model_b":"y","winner":"tie","extra":{extra}}}"#);
    for valid in [
        "{}",
        "[]",
        r#"{"a":[1,-0.5,2e-3,1E+2,true,false,null,"s\u00e9\n"],"b":{"c":[]}}"#,
        r#"[ 1 , [ ] , { "k" : "}" } ]"#,
        "-0",
        r#""\/""#,
    ] {
        let line = row(valid);
        assert!(scan_line(line.as_bytes()).is_some(), "{line}");
        assert!(parse(&line, BootstrapUnit::Comparison).is_ok(), "{line}");
    }
    for invalid in [
        r#"{"x":1]"#,
        "[1,2}",
        "[1 2]",
        "[1,]",
        r#"{"x"}"#,
        "{1:2}",
        "01",
        "1.",
        ".5",
        "-",
        "1e",
        "+1",
        "[tru]",
        r#""\x""#,
        r#""\u12g4""#,
    ] {
        let line = row(invalid);
        assert_eq!(scan_line(line.as_bytes()), None, "{line}");
        let text = format!("{}\n{line}\n", row("1"));
        let e = parse(&text, BootstrapUnit::Comparison).expect_err(&line);
        assert!(e.to_string().starts_with("line 2:"), "{line}: {e}");
    }
}

/// What the scanner reads without keeping a copy must be as serde_json wants it too (found
/// by a review's differential fuzzing): UTF-8 in a skipped key, the judge and a question id
/// the comparison bootstrap does not number, and a numbered question id within i64/u64.
#[test]
fn the_scanner_takes_nothing_serde_json_refuses() {
    let good = br#"{"model_a":"x","model_b":"y","winner":"tie","question_id":"q"}"#.to_vec();
    let bad_lines: [Vec<u8>; 4] = [
        b"{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"k\xff\":1}".to_vec(),
        b"{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"judge\":\"j\xff\",\"task\":\"t\"}".to_vec(),
        b"{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"question_id\":\"q\xff\"}".to_vec(),
        br#"{"model_a":"x","model_b":"y","winner":"tie","question_id":123456789012345678901234}"#
            .to_vec(),
    ];
    for bad in bad_lines {
        assert_eq!(scan_line(&bad), None, "{}", String::from_utf8_lossy(&bad));
        let mut text = good.clone();
        text.push(b'\n');
        text.extend_from_slice(&bad);
        let e = parse_battles(&text[..], BootstrapUnit::Comparison)
            .expect_err(&String::from_utf8_lossy(&bad));
        assert!(e.to_string().starts_with("line 2:"), "{e}");
    }
    // The largest whole numbers serde_json reads exactly are still question ids.
    for n in ["18446744073709551615", "-9223372036854775808"] {
        let line = format!(r#"{{"model_a":"x","model_b":"y","winner":"tie","question_id":{n}}}"#);
        assert!(scan_line(line.as_bytes()).is_some(), "{line}");
    }
}

/// Other sources put other things under `judge` (a list, a number): in a battle file it is
/// not read, so it does not refuse the row, on either path.
#[test]
fn a_judge_that_is_not_a_name_is_not_read() {
    for judge in [r#"["gpt-4","pair-v2"]"#, "7", r#"{"id":1}"#, "null"] {
        for model_a in ["x", r"\u0078"] {
            let line = format!(
                r#"{{"model_a":"{model_a}","model_b":"y","winner":"tie","judge":{judge},"question_id":"q"}}"#
            );
            let (models, rows) = parse(&line, BootstrapUnit::Task).expect(&line);
            assert_eq!(models, ["x", "y"], "{line}");
            assert_eq!(rows.len(), 1, "{line}");
        }
    }
    // What serde_json refuses there is refused on both paths alike.
    for judge in ["1e400", r#"[1,]"#] {
        for model_a in ["x", r"\u0078"] {
            let line = format!(
                r#"{{"model_a":"{model_a}","model_b":"y","winner":"tie","judge":{judge}}}"#
            );
            assert!(parse(&line, BootstrapUnit::Comparison).is_err(), "{line}");
        }
    }
    let twice = r#"{"model_a":"x","model_b":"y","winner":"tie","judge":1,"judge":"j"}"#;
    assert_eq!(scan_line(twice.as_bytes()), None);
    assert!(parse(twice, BootstrapUnit::Comparison).is_err());
}

#[test]
fn invalid_utf8_in_a_name_is_an_error() {
    let mut line = br#"{"model_a":"x"#.to_vec();
    line.push(0xff);
    line.extend_from_slice(br#"","model_b":"y","winner":"tie"}"#);
    let e = parse_battles(&line[..], BootstrapUnit::Comparison)
        .expect_err("bad utf-8")
        .to_string();
    assert!(e.starts_with("line 1:"), "{e}");
}

#[test]
fn errors_name_the_line() {
    let bad = "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\"}\n{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"a\"}\n";
    let e = parse(bad, BootstrapUnit::Comparison)
        .expect_err("bad winner")
        .to_string();
    assert!(e.starts_with("line 2: unknown winner `a`"), "{e}");
    let e = parse(
        "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\"}\n",
        BootstrapUnit::Task,
    )
    .expect_err("no qid");
    assert!(e.to_string().starts_with("line 1: no question_id"), "{e}");
    let e = parse("not json\n", BootstrapUnit::Comparison)
        .expect_err("json")
        .to_string();
    assert!(e.starts_with("line 1: not a JSON object"), "{e}");
    let e = parse(
        "{\"model_a\":\"x\",\"model_b\":\"x\",\"winner\":\"tie\"}",
        BootstrapUnit::Comparison,
    )
    .expect_err("self");
    assert!(e.to_string().contains("compared with itself"));
}

#[test]
fn many_blocks_match_one_pass() {
    // Large enough to span several blocks and threads.
    let mut text = String::new();
    for i in 0..200_000u32 {
        let (a, b) = (i % 37, (i * 7 + 1) % 37);
        let b = if a == b { (b + 1) % 37 } else { b };
        let w = ["model_a", "model_b", "tie", "tie (bothbad)"][(i % 4) as usize];
        text.push_str(&format!("{{\"model_a\":\"m{a}\",\"model_b\":\"m{b}\",\"winner\":\"{w}\",\"question_id\":\"q{}\"}}\n", i % 101));
    }
    assert!(text.len() > 3 * BLOCK_BYTES);
    let (models, rows) = parse(&text, BootstrapUnit::Task).expect("valid");
    assert_eq!(rows.len(), 200_000);
    let labels: Vec<String> = (0..101).map(|q| format!("q{q}")).collect();
    let numbers = task_numbers(&labels.iter().map(String::as_str).collect::<Vec<_>>());
    let mut sorted = models.clone();
    sorted.sort();
    assert_eq!(models, sorted, "models numbered by name");
    for (i, r) in rows.iter().enumerate().step_by(997) {
        let i = i as u32;
        let a = i % 37;
        let b = (i * 7 + 1) % 37;
        let b = if a == b { (b + 1) % 37 } else { b };
        assert_eq!(models[r.a as usize], format!("m{a}"));
        assert_eq!(models[r.b as usize], format!("m{b}"));
        // Tasks are numbered by label key.
        assert_eq!(r.task, numbers[(i % 101) as usize]);
    }
    let mut bad = text.clone();
    bad.push_str("{\"model_a\":\"m1\",\"model_b\":\"m2\",\"winner\":\"nobody\"}\n");
    let e = parse(&bad, BootstrapUnit::Comparison)
        .expect_err("bad last line")
        .to_string();
    assert!(e.starts_with("line 200001:"), "{e}");
}

#[test]
fn a_line_longer_than_a_block_is_read_whole() {
    // Rows may carry long extra fields (whole conversations); a block must still end at a
    // newline, not cut such a row in two.
    let row = |a: &str, b: &str| {
        format!("{{\"model_a\":\"{a}\",\"model_b\":\"{b}\",\"winner\":\"model_a\"}}\n")
    };
    let long = format!(
        "{{\"model_a\":\"x\",\"conversation\":\"{}\",\"model_b\":\"z\",\"winner\":\"tie\"}}\n",
        "a".repeat(BLOCK_BYTES + BLOCK_BYTES / 2)
    );
    let mut text = String::new();
    for _ in 0..3 {
        text.push_str(&row("x", "y"));
    }
    text.push_str(&long);
    text.push_str(&long);
    text.push_str(&row("y", "z"));
    let (models, rows) = parse(&text, BootstrapUnit::Comparison).expect("valid");
    assert_eq!(models, ["x", "y", "z"]);
    assert_eq!(rows.len(), 6);
    assert_eq!((rows[3].a, rows[3].b), (0, 2));
    assert_eq!((rows[5].a, rows[5].b), (1, 2));
    text.push_str("{\"model_a\":\"x\"}\n");
    let e = parse(&text, BootstrapUnit::Comparison).expect_err("bad last line");
    assert!(e.to_string().starts_with("line 7:"), "{e}");
}

#[test]
fn whole_number_question_ids_name_tasks_on_both_paths() {
    // The second row has an escape, so serde_json reads it instead of the scanner.
    let text = "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\",\"question_id\":81}\n\
                {\"model_a\":\"\\u0079\",\"model_b\":\"x\",\"winner\":\"tie\",\"question_id\":81}\n\
                {\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_b\",\"question_id\":\"82\"}\n";
    let (_, rows) = parse(text, BootstrapUnit::Task).expect("valid");
    let tasks: Vec<u32> = rows.iter().map(|r| r.task).collect();
    let t = task_numbers(&["81", "82"]);
    assert_eq!(tasks, [t[0], t[0], t[1]], "81 on both paths is one task");
    // pandas writes 81.0 once a column has a gap: the same question.
    for same in ["81.0", "8.1e1", "81"] {
        let line = format!(
            "{{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"question_id\":{same}}}\n\
             {{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"question_id\":\"81\"}}\n"
        );
        let (_, rows) = parse(&line, BootstrapUnit::Task).expect(same);
        assert_eq!(rows[0].task, rows[1].task, "{same}");
    }
    for (bad, says) in [
        ("1.5", "not a whole number"),
        ("true", "a string or a whole number"),
    ] {
        let line = format!(
            "{{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"question_id\":{bad}}}\n"
        );
        let e = parse(&line, BootstrapUnit::Task)
            .expect_err(bad)
            .to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn judges_own_comparisons_read_as_battles() {
    // `task` names the question, `failed` is a failed comparison, `both_bad` both bad; the
    // second line has an escape, so serde_json reads it instead of the scanner.
    let text = "{\"task\":\"t1\",\"judge\":\"j\",\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"failed\"}\n\
                {\"task\":\"t\\u0031\",\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"both_bad\"}\n\
                {\"task\":\"t2\",\"model_a\":\"y\",\"model_b\":\"x\",\"winner\":\"model_a\"}\n";
    let (_, rows) = parse(text, BootstrapUnit::Task).expect("valid");
    let got: Vec<(RowOutcome, u32)> = rows.iter().map(|r| (r.outcome, r.task)).collect();
    assert_eq!(
        got,
        [
            (RowOutcome::Failed, 0),
            (RowOutcome::Rated(Outcome::BothBad), 0),
            (RowOutcome::Rated(Outcome::AWins), 1)
        ]
    );
    let both = "{\"task\":\"t1\",\"question_id\":\"q\",\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\"}\n";
    let e = parse(both, BootstrapUnit::Task).expect_err("two names for the question");
    assert!(
        e.to_string().contains("both `question_id` and `task`"),
        "{e}"
    );
}

#[test]
fn a_byte_order_mark_at_the_start_is_skipped() {
    let text = "\u{feff}{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\"}\n";
    let (models, rows) = parse(text, BootstrapUnit::Comparison).expect("valid");
    assert_eq!((models.len(), rows.len()), (2, 1));
}

/// Reads one byte per call, to cross every state of [`ArrayLines`] at a read boundary.
struct ByteByByte<'a>(&'a [u8]);

impl Read for ByteByByte<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match (self.0.split_first(), buf.is_empty()) {
            (Some((&b, rest)), false) => {
                buf[0] = b;
                self.0 = rest;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

#[test]
fn a_json_array_reads_as_its_lines() {
    let lines = "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\",\"question_id\":\"q[1],\"}\n\
                 {\"model_a\":\"y\",\"model_b\":\"z\\\"]\",\"winner\":\"tie\",\"question_id\":\"q2\\\\\",\"conv\":[{\"a\":[1,2]},\"}\"]}\n\
                 {\"model_a\":\"z\\\"]\",\"model_b\":\"x\",\"winner\":\"tie (bothbad)\",\"question_id\":3}\n";
    let expected = parse(lines, BootstrapUnit::Task).expect("valid lines");
    let compact = format!("[{}]", lines.trim_end().replace('\n', ","));
    let indented = format!(
        "\u{feff}\n  [\r\n  {}\n  ]  \n",
        lines
            .trim_end()
            .replace('\n', ",\n  ")
            .replace("\",\"", "\",\n    \"")
    );
    for array in [&compact, &indented] {
        assert_eq!(battles_shape(array.as_bytes()), BattlesShape::Array);
        let whole = parse_battles(ArrayLines::new(array.as_bytes()), BootstrapUnit::Task);
        let bytes = parse_battles(
            ArrayLines::new(ByteByByte(array.as_bytes())),
            BootstrapUnit::Task,
        );
        for got in [whole, bytes] {
            let got = got.unwrap_or_else(|e| panic!("{e}: {array}"));
            assert_eq!((&got.0, &got.1), (&expected.0, &expected.1), "{array}");
        }
    }
    // An error names the element (its line).
    let bad = "[\n {\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\"},\n {\"model_a\":\"x\",\n  \"model_b\":\"y\",\"winner\":\"nobody\"}\n]";
    let e = parse_battles(ArrayLines::new(bad.as_bytes()), BootstrapUnit::Comparison)
        .expect_err("bad winner");
    assert!(e.to_string().starts_with("line 2: unknown winner"), "{e}");
}

#[test]
fn shapes_are_told_apart_by_the_first_bytes() {
    assert_eq!(battles_shape(b"{\"model_a\":1}\n"), BattlesShape::Lines);
    assert_eq!(battles_shape(b"\xEF\xBB\xBF {}"), BattlesShape::Lines);
    assert_eq!(battles_shape(b" \n\t[{}]"), BattlesShape::Array);
    assert_eq!(battles_shape(b"\xEF\xBB\xBF[{}]"), BattlesShape::Array);
    assert_eq!(battles_shape(b"\x1f\x8b\x08\x00"), BattlesShape::Gzip);
    assert_eq!(battles_shape(b""), BattlesShape::Lines);
}

#[test]
fn an_empty_model_name_is_refused() {
    for line in [
        "{\"model_a\":\"\",\"model_b\":\"y\",\"winner\":\"tie\"}\n",
        "{\"model_a\":\"x\",\"model_b\":\"\\u0000\\u0000\",\"winner\":\"tie\"}\n{\"model_a\":\"x\",\"model_b\":\"\",\"winner\":\"tie\"}\n",
    ] {
        let e = parse(line, BootstrapUnit::Comparison)
            .expect_err(line)
            .to_string();
        assert!(e.contains("a model name is empty"), "{e}");
    }
}

#[test]
fn an_escaped_label_is_the_same_task_as_its_plain_text() {
    // Many distinct escaped labels in one block: each is hashed once (this was a linear
    // search per new label, quadratic in a block), and equals its plain spelling.
    let mut text = String::new();
    for k in 0..3000 {
        text.push_str(&format!(
            "{{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"question_id\":\"q\\u00e9{k}\"}}\n"
        ));
    }
    text.push_str(
        "{\"model_a\":\"y\",\"model_b\":\"x\",\"winner\":\"tie\",\"question_id\":\"qé2999\"}\n",
    );
    let (_, rows) = parse(&text, BootstrapUnit::Task).expect("valid");
    assert_eq!(rows.len(), 3001);
    assert_eq!(rows[3000].task, rows[2999].task);
    let distinct: std::collections::BTreeSet<u32> = rows.iter().map(|r| r.task).collect();
    assert_eq!(distinct.len(), 3000);
    let bad =
        b"{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"question_id\":\"q\xff\"}\n";
    let e = parse_battles(&bad[..], BootstrapUnit::Task).expect_err("not UTF-8");
    assert!(
        e.to_string()
            .starts_with("line 1: not a battle row (invalid unicode code point"),
        "{e}"
    );
}

#[test]
fn a_cut_short_or_padded_array_and_positional_rows_are_refused() {
    let row = "{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"model_a\"}";
    for (text, says) in [
        (format!("[{row},\n{row}"), "ends before its closing `]`"),
        (format!("[{row},\n"), "ends before its closing `]`"),
        (format!("[{row}]garbage"), "text after the closing `]`"),
        (format!("[{row}]\n[{row}]"), "text after the closing `]`"),
        // Not JSON, and an empty element may be a deleted one (found by fuzzing).
        (
            format!("[{row},\n ,{row}]"),
            "element 2 of the JSON array is empty (two commas in a row)",
        ),
        (
            format!("[{row}, {row},\n]"),
            "the JSON array ends with a comma after element 2",
        ),
        (format!("[ ,{row}]"), "first element is empty"),
        (format!("\u{feff}[,{row}]"), "first element is empty"),
    ] {
        let e = parse_battles(ArrayLines::new(text.as_bytes()), BootstrapUnit::Comparison)
            .expect_err(&text)
            .to_string();
        assert!(e.contains(says), "{text}: {e}");
    }
    for text in [
        "[\"x\",\"y\",\"model_a\"]\n",
        "  [\"x\",\"y\",\"tie\",\"q7\"]\n",
    ] {
        let e = parse(text, BootstrapUnit::Comparison)
            .expect_err(text)
            .to_string();
        assert!(e.contains("not a JSON object"), "{text}: {e}");
    }
    for text in [
        "[]".to_string(),
        " [ \n ] \n".to_string(),
        format!("[ {row} ,\n {row} ]"),
    ] {
        let (_, rows) = parse_battles(ArrayLines::new(text.as_bytes()), BootstrapUnit::Comparison)
            .expect(&text);
        assert_eq!(rows.len(), text.matches("model_a\":").count(), "{text}");
    }
    let e = parse_battles(
        ArrayLines::new(format!("[[{row}]]").as_bytes()),
        BootstrapUnit::Comparison,
    )
    .expect_err("nested array")
    .to_string();
    assert!(e.contains("not a JSON object"), "{e}");
}

#[test]
fn question_ids_name_tasks_by_value() {
    let line = |q: &str| {
        format!("{{\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\",\"question_id\":{q}}}\n")
    };
    // -0 and 0 are one number, so one task, on either path.
    let text = [line("0"), line("-0"), line("-0.0"), line("\"0\"")].concat();
    let (_, rows) = parse(&text, BootstrapUnit::Task).expect("valid");
    assert!(rows.iter().all(|r| r.task == rows[0].task), "{rows:?}");
    // Leading zeros are not JSON.
    assert!(parse(&line("01"), BootstrapUnit::Task).is_err());
    let e = parse(&line("1e16"), BootstrapUnit::Task)
        .expect_err("beyond 2^53")
        .to_string();
    assert!(e.contains("above 2^53"), "{e}");
}

#[test]
fn several_judges_in_judges_own_format_are_refused() {
    let row = |judge: &str, escaped: bool| {
        let task = if escaped { "t\\u0031" } else { "t1" };
        format!(
            "{{\"task\":\"{task}\",\"judge\":\"{judge}\",\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\"}}\n"
        )
    };
    for escaped in [false, true] {
        let text = [row("j1", false), row("j2", escaped)].concat();
        let e = parse(&text, BootstrapUnit::Comparison).expect_err(&text);
        assert!(
            matches!(&e, BattlesError::SeveralJudges(j) if j == &["j1", "j2"]),
            "{e}"
        );
        let one = [row("j1", false), row("j1", escaped)].concat();
        parse(&one, BootstrapUnit::Task).expect("one judge");
    }
    // Arena files carry the voter in `judge`: many of them, and no `task`.
    let arena: String = (0..5)
        .map(|k| format!("{{\"question_id\":\"q{k}\",\"judge\":\"arena_user_{k}\",\"model_a\":\"x\",\"model_b\":\"y\",\"winner\":\"tie\"}}\n"))
        .collect();
    parse(&arena, BootstrapUnit::Task).expect("voters are not judges");
    // Many judges: the message shows a few and says there are more, and says what makes a
    // row judge's own.
    let many: String = (0..30).map(|k| row(&format!("user{k}"), false)).collect();
    let e = parse(&many, BootstrapUnit::Comparison)
        .expect_err("several")
        .to_string();
    assert!(
        e.contains("user7, and more); ") && !e.contains("user8,"),
        "{e}"
    );
    assert!(e.contains("should name its question `question_id`"), "{e}");
}

/// A row Python's json.dumps wrote with a NaN in some float field says why it is not JSON.
#[test]
fn a_nan_in_a_row_is_named() {
    let text = r#"{"model_a":"x","model_b":"y","winner":"tie","tstamp":NaN}"#;
    let e = parse(text, BootstrapUnit::Comparison)
        .expect_err("not JSON")
        .to_string();
    assert!(
        e.contains("NaN and Infinity, as Python's json.dumps writes them, are not JSON"),
        "{e}"
    );
    // Not for a name that holds the word (a string), whatever else is wrong with the row.
    for text in [
        r#"{"model_a":"x","model_b":"y","winner":"tie","tstamp":}"#,
        r#"{"model_a":"Infinity-Instruct-7B","model_b":"y","winner":"tie"},"#,
        r#"{"model_a":"NaNoLM \" NaN","model_b":"y","winer":"tie"}"#,
    ] {
        let e = parse(text, BootstrapUnit::Comparison)
            .expect_err("not a battle")
            .to_string();
        assert!(!e.contains("NaN and Infinity"), "{text}: {e}");
    }
}

/// An empty `question_id` is no question: the task unit refuses it (blank ids of unrelated
/// questions would be one task); the comparison unit does not read it.
#[test]
fn an_empty_question_id_is_refused_by_the_task_unit() {
    for (fast, line) in [
        (
            true,
            r#"{"question_id":"","model_a":"x","model_b":"y","winner":"tie"}"#,
        ),
        (
            false,
            r#"{"question_id":" ","model_a":"x","model_b":"y","winner":"tie"}"#,
        ),
    ] {
        let text = format!(
            "{}\n{line}\n",
            r#"{"question_id":"q","model_a":"x","model_b":"y","winner":"tie"}"#
        );
        let e = parse(&text, BootstrapUnit::Task)
            .expect_err(line)
            .to_string();
        assert!(
            e.starts_with("line 2: the question_id is empty"),
            "fast path {fast}: {e}"
        );
        parse(&text, BootstrapUnit::Comparison).expect("no task needed");
    }
}

#[test]
fn key_numbers_count_keys_in_order_of_first_appearance() {
    let mut numbers = KeyNumbers::default();
    let mut reference: HashMap<u128, u32> = HashMap::new();
    // Keys sharing their low bits probe past each other; enough keys to grow several times.
    let key = |i: u128| (i % 5_000) << 64 | (i % 7);
    for i in 0..40_000u128 {
        let next = reference.len() as u32;
        let expected = *reference.entry(key(i * 7_919 % 12_000)).or_insert(next);
        assert_eq!(numbers.number(key(i * 7_919 % 12_000)), expected, "key {i}");
    }
    assert_eq!(numbers.keys.len(), reference.len());
    assert!(2 * numbers.keys.len() <= numbers.slots.len());
}

#[test]
fn blocks_are_joined_in_file_order_whatever_order_they_arrive_in() {
    let line = |i: usize, winner: &str| {
        format!(
            "{{\"model_a\":\"m{}\",\"model_b\":\"m{}\",\"winner\":\"{winner}\",\"question_id\":\"q{}\"}}\n",
            i % 5,
            i % 5 + 1,
            (i * 3) % 11
        )
    };
    let blocks: Vec<String> = (0..6)
        .map(|b| (0..4).map(|l| line(b * 4 + l, "model_a")).collect())
        .collect();
    let joined = |order: &[usize], blocks: &[String]| {
        let mut merger = Merger::default();
        for &i in order {
            merger.add(i, parse_block(blocks[i].as_bytes(), BootstrapUnit::Task));
        }
        merger.finish()
    };
    let (models, rows, _, _) = joined(&[0, 1, 2, 3, 4, 5], &blocks).expect("valid");
    for order in [[5, 4, 3, 2, 1, 0], [2, 0, 5, 1, 4, 3]] {
        let (m, r, _, _) = joined(&order, &blocks).expect("valid");
        assert_eq!(m, models);
        assert_eq!(r, rows, "order {order:?}");
    }
    let text: String = blocks.concat();
    assert_eq!(
        parse(&text, BootstrapUnit::Task).expect("valid"),
        (models, rows)
    );
    // Errors in blocks 1 and 3: the one earlier in the file is reported, with its line
    // counted from the file's start, even when block 3 is parsed first.
    let mut bad = blocks.clone();
    bad[1] = format!("{}{}", line(4, "model_a"), line(5, "nobody"));
    bad[3] = line(12, "nobody either");
    let e = joined(&[3, 5, 1, 0, 4, 2], &bad).expect_err("bad winners");
    assert!(
        e.to_string().starts_with("line 6: unknown winner `nobody`"),
        "{e}"
    );
}

/// judge's own comparisons carry `flipped`: the file's order-flip rate counts the judged ones
/// (neither failed nor decided by failure), with or without escapes in the row; an Arena
/// file's `flipped` of another type, or one serde_json cannot hold, is not read, on either
/// path; a row without a readable `flipped` counts neither way (a file whose rows never say
/// has no rate, not 0).
#[test]
fn flips_of_judges_own_comparisons_are_counted() {
    let text = concat!(
        r#"{"task":"t1","judge":"j","model_a":"a","model_b":"b","winner":"tie","flipped":true,"by_failure":false}"#,
        "\n",
        r#"{"task":"t2","judge":"j","model_a":"a","model_b":"b","winner":"model_a","flipped":false,"by_failure":false}"#,
        "\n",
        r#"{"task":"t3","judge":"j","model_a":"a\u0062","model_b":"c","winner":"tie","flipped":true,"by_failure":false}"#,
        "\n",
        r#"{"task":"t4","judge":"j","model_a":"a","model_b":"c","winner":"model_b","flipped":false,"by_failure":true}"#,
        "\n",
        r#"{"task":"t5","judge":"j","model_a":"b","model_b":"c","winner":"failed","flipped":false,"by_failure":false}"#,
        "\n",
    );
    let (_, rows, judge, flips) =
        parse_battles_judged(text.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!(rows.len(), 5);
    assert_eq!(judge.as_deref(), Some("j"));
    assert_eq!(
        flips,
        Flips {
            judged: 3,
            flipped: 2,
            repeated: 0
        }
    );
    assert_eq!(flips.rate(), Some(2.0 / 3.0));
    let arena = concat!(
        r#"{"model_a":"a","model_b":"b","winner":"tie","flipped":"maybe"}"#,
        "\n",
        r#"{"model_a":"a","model_b":"b","winner":"tie","flipped":true}"#,
        "\n",
    );
    let (_, rows, judge, flips) =
        parse_battles_judged(arena.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!((rows.len(), judge, flips.rate()), (2, None, None));
    let odd = concat!(
        r#"{"model_a":"\u0061","model_b":"b","winner":"model_a","flipped":1e400}"#,
        "\n",
        r#"{"model_a":"a","model_b":"b","winner":"model_a","by_failure":1,"by_failure":2}"#,
        "\n",
        r#"{"task":"t","judge":"j","model_a":"a","model_b":"b","winner":"tie","flipped":1e400}"#,
        "\n",
    );
    let (_, rows, _, flips) =
        parse_battles_judged(odd.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!((rows.len(), flips), (3, Flips::default()));
    // Regression: rows that never say whether they flipped gave a rate of 0.000.
    let silent = concat!(
        r#"{"task":"t1","judge":"j","model_a":"a","model_b":"b","winner":"model_a"}"#,
        "\n",
        r#"{"task":"t2","judge":"j","model_a":"a","model_b":"b","winner":"tie","flipped":true}"#,
        "\n",
        r#"{"task":"t3","judge":"j","model_a":"a","model_b":"b","winner":"model_b"}"#,
        "\n",
    );
    let (_, _, _, flips) =
        parse_battles_judged(silent.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!(flips.rate(), Some(1.0), "only the row that says counts");
    let silent: String = silent
        .lines()
        .filter(|l| !l.contains("flipped"))
        .map(|l| format!("{l}\n"))
        .collect();
    let (_, _, _, flips) =
        parse_battles_judged(silent.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!(flips.rate(), None);
    // One odd flag does not lose the other: a by-failure row stays out of the rate.
    let one_odd = r#"{"task":"t","judge":"j","model_a":"a","model_b":"b","winner":"model_a","flipped":"no","by_failure":true}"#;
    let (_, _, _, flips) =
        parse_battles_judged(one_odd.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!(flips, Flips::default());
    let bad =
        r#"{"task":"t1","judge":"j","model_a":"a","model_b":"b","winner":"tie","flipped":truex}"#;
    assert!(parse_battles_judged(bad.as_bytes(), BootstrapUnit::Comparison).is_err());
}

/// Rows of judge's own format that repeat a task's pair (either way round, escaped or not,
/// in another block of a file read in parallel) are counted; Arena rows are not looked at.
#[test]
fn repeated_comparisons_of_judges_own_format_are_counted() {
    let row = |task: &str, a: &str, b: &str| {
        format!(
            r#"{{"task":"{task}","judge":"j","model_a":"{a}","model_b":"{b}","winner":"tie","flipped":false,"by_failure":false}}"#
        ) + "\n"
    };
    // About 3 MB: the rows are spread over several blocks and threads.
    let mut text = String::new();
    for t in 0..20_000 {
        text += &row(&format!("t{t}"), "a", "b");
    }
    let once = text.clone();
    text += &row("t7", "b", "a");
    text += &row("t8", "\\u0061", "b");
    text += &row("t8", "a", "c");
    for t in 0..20_000 {
        text += &row(&format!("u{t}"), "a", "b");
    }
    text += &row("t19999", "a", "b");
    let (_, rows, _, flips) =
        parse_battles_judged(text.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!((rows.len(), flips.repeated), (40_004, 3));
    let (_, _, _, flips) =
        parse_battles_judged(once.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!(flips.repeated, 0);
    let arena = concat!(
        r#"{"question_id":"q","model_a":"a","model_b":"b","winner":"tie"}"#,
        "\n",
        r#"{"question_id":"q","model_a":"a","model_b":"b","winner":"tie"}"#,
        "\n",
    );
    let (_, _, _, flips) =
        parse_battles_judged(arena.as_bytes(), BootstrapUnit::Comparison).expect("parses");
    assert_eq!(flips.repeated, 0);
}

#[test]
fn the_name_tables_hash_spreads_similar_labels_over_buckets() {
    // A table picks buckets by the hash's low bits: a million `q<number>` labels must not
    // share a few of them (they did: parsing took 10× longer).
    use std::hash::{BuildHasher, BuildHasherDefault};
    let build = BuildHasherDefault::<FastHash>::default();
    let buckets: std::collections::HashSet<u64> = (0..100_000)
        .map(|i| build.hash_one(format!("q{i}").as_bytes()) & 0xffff)
        .collect();
    assert!(
        buckets.len() > 40_000,
        "{} of 65,536 buckets",
        buckets.len()
    );
}
