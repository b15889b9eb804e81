import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import username_key


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


SAME = [
    ("Alice", "ALICE", ""),
    ("bob", "bob", ""),
    ("Zo\u00eb", "Zoe\u0308", "precomposed vs decomposed"),
    ("ZO\u00cb", "zoe\u0308", "case and composition"),
    ("Jos\u00e9", "JOSE\u0301", "case and composition"),
    ("\u03a3\u03af\u03c3\u03c5\u03c6\u03bf\u03c2", "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3", "Greek, final sigma"),
    ("Stra\u00dfe", "STRASSE", "German sharp s: uppercase of \u00df is SS"),
    ("stra\u00dfe", "Strasse", "German sharp s folds to ss"),
    ("Gro\u00df", "GROSS", "German sharp s folds to ss"),
    ("\u1e9e", "ss", "capital sharp s folds to ss"),
]

DIFFERENT = [
    ("Zoe", "Zo\u00eb", "different letters"),
    ("anna", "anna ", "trailing space"),
    ("a.b", "ab", "punctuation"),
    ("stra\u00dfe", "strase", "different spelling"),
    ("jose", "Jos\u00e9", "different letters"),
    ("alice", "alicia", ""),
]

for a, b, why in SAME:
    ka, kb = username_key(a), username_key(b)
    if not isinstance(ka, str):
        fail("username_key(%r) returned %r, not a str" % (a, ka))
    if ka != kb:
        fail("username_key(%r) = %r but username_key(%r) = %r; these are the same account (%s)"
             % (a, ka, b, kb, why or "case only"))

for a, b, why in DIFFERENT:
    if username_key(a) == username_key(b):
        fail("username_key(%r) == username_key(%r), but these are different accounts (%s)"
             % (a, b, why or "different names"))

print("ok")
