//! What can be wrong with a suite's hidden tests, found before or after they run: a check.py
//! that never names `solution`, one the sandbox's Python cannot compile.

use crate::sandbox::SandboxPolicy;

use super::CheckRecord;

/// The tasks whose check.py never names `solution`, the module the answer's code is: such a
/// check cannot test the answer, and every answer passes it.
pub(crate) fn checks_without_solution(suite: &crate::suite::Suite) -> Vec<String> {
    suite
        .tasks
        .iter()
        .filter(|t| t.check.as_deref().is_some_and(|c| !c.contains("solution")))
        .map(|t| {
            format!(
                "suites/{}/tasks/{}/check.py never imports `solution` (the answer's code): every answer passes it",
                suite.name, t.id
            )
        })
        .collect()
}

/// The tasks whose check.py the sandbox's Python cannot compile, each as one line naming the
/// file, the line and Python's reason: found before anything is generated, while fixing the
/// suite costs nothing (a run refuses an edited suite). Empty when that Python is missing.
pub(crate) fn uncompilable_checks(suite: &crate::suite::Suite) -> Vec<String> {
    use std::io::Write as _;
    const SCRIPT: &str = r#"
import json, sys
for task, src in json.loads(sys.stdin.buffer.read().decode("utf-8")):
    try:
        compile(src.encode("utf-8"), "check.py", "exec")
    except SyntaxError as e:
        print(json.dumps([task, e.lineno, e.msg]), flush=True)
    except BaseException as e:
        print(json.dumps([task, None, "%s: %s" % (type(e).__name__, e)]), flush=True)
"#;
    let checks: Vec<(&str, &str)> = suite
        .tasks
        .iter()
        .filter_map(|t| Some((t.id.as_str(), t.check.as_deref()?)))
        .collect();
    if checks.is_empty() {
        return Vec::new();
    }
    let python = SandboxPolicy::default().python;
    let Ok(mut child) = std::process::Command::new(&python)
        .args(["-I", "-c", SCRIPT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        return Vec::new();
    };
    let input = serde_json::to_vec(&checks).expect("strings serialise");
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&input);
    }
    // Read as it comes (a long report must not fill the pipe and stall Python), and a Python
    // that hangs must not hold up the run: after 30 s the check is given up.
    let reader = child.stdout.take().map(|mut stdout| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stdout, &mut text);
            text
        })
    });
    let waited = std::time::Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if waited.elapsed() < std::time::Duration::from_secs(30) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Vec::new();
            }
        }
    }
    let Some(report) = reader.and_then(|r| r.join().ok()) else {
        return Vec::new();
    };
    report
        .lines()
        .filter_map(|l| serde_json::from_str::<(String, Option<u64>, String)>(l).ok())
        .map(|(task, line, why)| {
            let at = line.map_or(String::new(), |n| format!(" (line {n})"));
            format!(
                "suites/{}/tasks/{task}/check.py does not compile{at}: {}",
                suite.name,
                crate::report::printable(&why)
            )
        })
        .collect()
}

/// One warning per task whose check.py does not compile, with Python's reason.
pub(crate) fn warn_invalid_checks(records: &[CheckRecord]) {
    let mut warned = std::collections::BTreeSet::new();
    for r in records {
        let Some(before) = r
            .stderr_tail
            .strip_suffix(crate::sandbox::INVALID_CHECK_NOTE)
        else {
            continue;
        };
        if warned.insert(r.task.as_str()) {
            let reason = before
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("")
                .trim();
            // Python's traceback names the line: `File "check.py", line 4`.
            let line = before
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("File \"check.py\", line "))
                .map(|rest| {
                    rest.split(|c: char| !c.is_ascii_digit())
                        .next()
                        .unwrap_or("")
                })
                .filter(|n| !n.is_empty())
                .map_or(String::new(), |n| format!(" at line {n}"));
            eprintln!(
                "warning: task {:?}: its check.py does not compile{line} ({reason}); every answer to it is `error`: fix it in the suite and start a new run (`judge generate --run NEW`)",
                r.task,
            );
        }
    }
}
