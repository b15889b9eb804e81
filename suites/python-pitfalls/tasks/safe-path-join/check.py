import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import posixpath

from solution import safe_join


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


BASE = "/srv/app/uploads"

ALLOWED = [
    ("a.txt", "/srv/app/uploads/a.txt"),
    ("sub/dir/../b.png", "/srv/app/uploads/sub/b.png"),
    ("./a//b", "/srv/app/uploads/a/b"),
    ("x/y/z.tar.gz", "/srv/app/uploads/x/y/z.tar.gz"),
    (".", "/srv/app/uploads"),
    ("", "/srv/app/uploads"),
    ("..uploads", "/srv/app/uploads/..uploads"),
    ("a/..", "/srv/app/uploads"),
]

ESCAPES = [
    ("../secret.txt", ""),
    ("..", ""),
    ("a/../../secret", ""),
    ("a/b/../../..", ""),
    ("../../../etc/passwd", ""),
    ("/etc/passwd", "an absolute user path must not escape base"),
    ("../uploads-old/report.pdf", "/srv/app/uploads-old is a sibling of base, not inside it (string-prefix check)"),
    ("../uploads2", "/srv/app/uploads2 is a sibling of base, not inside it (string-prefix check)"),
]


def inside(path):
    return path == BASE or path.startswith(BASE + "/")


for user_path, expected in ALLOWED:
    try:
        got = safe_join(BASE, user_path)
    except ValueError as e:
        fail("safe_join(%r, %r) raised ValueError(%s) for a path inside base" % (BASE, user_path, e))
    if got != expected:
        fail("safe_join(%r, %r) returned %r, expected %r" % (BASE, user_path, got, expected))

for user_path, why in ESCAPES:
    try:
        got = safe_join(BASE, user_path)
    except ValueError:
        continue
    normalized = posixpath.normpath(got) if isinstance(got, str) else got
    if isinstance(got, str) and inside(normalized) and normalized == got and user_path.startswith("/"):
        continue  # treating a leading '/' as relative to base is also safe
    fail("safe_join(%r, %r) returned %r instead of raising ValueError%s"
         % (BASE, user_path, got, ": " + why if why else ""))

print("ok")
