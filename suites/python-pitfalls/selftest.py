#!/usr/bin/env python3
"""Self-test for the python-pitfalls suite.

For every task and every answer set, extract the code from the answer,
run the task's hidden check against it in a fresh temp dir, and report
pass/fail. Exits 0 only if every `reference` and `verbose` answer passes
and every `plausible` answer fails.

Usage: python3 selftest.py [suite_dir]
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

SETS = ["reference", "plausible", "verbose", "partial"]
TIMEOUT = 10

# A closed fenced block: ```python ... ``` (the opening fence may say py/python3).
_CLOSED = re.compile(r"^```[ \t]*(?:python3?|py)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
# An opening fence with no closing fence after it (reply cut off mid-block).
_OPEN = re.compile(r"^```[ \t]*(?:python3?|py)[ \t]*\n", re.M)


def extract_code(text):
    """Return the code to run, or None when the reply contains no code.

    Rule: the last closed ```python block; else, if a ```python fence was
    opened but never closed (a reply cut off mid-block), everything after the
    last opening fence; else the whole text if it is Python; else no code.
    """
    blocks = _CLOSED.findall(text)
    if blocks:
        return blocks[-1]
    opens = list(_OPEN.finditer(text))
    if opens:
        return text[opens[-1].end():]
    try:
        compile(text, "<reply>", "exec")
    except SyntaxError:
        return None
    return text


def run_check(check_path, code):
    """Run check.py against `code`. Returns (passed, one-line reason)."""
    if code is None:
        return False, "no code in reply"
    with tempfile.TemporaryDirectory(prefix="pp-selftest-") as tmp:
        with open(os.path.join(tmp, "solution.py"), "w", encoding="utf-8") as f:
            f.write(code)
        shutil.copyfile(check_path, os.path.join(tmp, "check.py"))
        env = dict(os.environ)
        env.pop("PYTHONPATH", None)
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        try:
            proc = subprocess.run(
                [sys.executable, "check.py"],
                cwd=tmp,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return False, "timeout after %ds" % TIMEOUT
    if proc.returncode == 0:
        return True, ""
    lines = [l.strip() for l in (proc.stdout + "\n" + proc.stderr).splitlines() if l.strip()]
    fails = [l for l in lines if l.startswith("FAIL")]
    if fails:
        reason = fails[0]
    elif lines:
        reason = lines[-1]  # usually the exception line of a traceback
    else:
        reason = "exit code %d" % proc.returncode
    return False, reason[:300]


def main(argv):
    suite = os.path.abspath(argv[1] if len(argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
    tasks_dir = os.path.join(suite, "tasks")
    tasks = sorted(t for t in os.listdir(tasks_dir) if os.path.isdir(os.path.join(tasks_dir, t)))
    totals = {s: 0 for s in SETS}
    counts = {s: 0 for s in SETS}
    problems = []
    width = max(len(t) for t in tasks)
    for s in SETS:
        for t in tasks:
            ans = os.path.join(suite, "answers", s, t + ".md")
            if not os.path.exists(ans):
                print("%-9s  %-*s  missing" % (s, width, t))
                problems.append((s, t, "missing"))
                counts[s] += 1
                continue
            with open(ans, encoding="utf-8") as f:
                code = extract_code(f.read())
            ok, reason = run_check(os.path.join(tasks_dir, t, "check.py"), code)
            counts[s] += 1
            totals[s] += ok
            print("%-9s  %-*s  %s%s" % (s, width, t, "pass" if ok else "fail",
                                         "" if ok else "  (" + reason + ")"))
            if s in ("reference", "verbose") and not ok:
                problems.append((s, t, "should pass"))
            if s == "plausible" and ok:
                problems.append((s, t, "should fail"))
    print()
    for s in SETS:
        print("%s %d/%d" % (s, totals[s], counts[s]))
    if problems:
        print()
        for s, t, why in problems:
            print("PROBLEM: %s/%s %s" % (s, t, why))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
