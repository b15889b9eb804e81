import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import flatten


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


CASES = [
    ([], []),
    ([1, 2, 3], [1, 2, 3]),
    ([1, [2, [3, []], 4], "ab"], [1, 2, 3, 4, "ab"]),
    ([[[[]]], [], [[5]]], [5]),
    ([None, (1, [2]), {"k": [3]}, "s", [[0, False]]], [None, (1, [2]), {"k": [3]}, "s", 0, False]),
]
for data, expected in CASES:
    got = flatten(data)
    if got != expected:
        fail("flatten(%r) returned %r, expected %r" % (data, got, expected))

# deep nesting: level i is [i, <level i+1>, -i - 1]
DEPTH = 100_000
root = []
cur = root
for i in range(DEPTH):
    nxt = []
    cur.extend([i, nxt, -i - 1])
    cur = nxt
expected = list(range(DEPTH)) + [-i - 1 for i in reversed(range(DEPTH))]

try:
    got = flatten(root)
except RecursionError:
    fail("flatten() raised RecursionError on a list nested %d levels deep" % DEPTH)
if not isinstance(got, list) or len(got) != len(expected) or got != expected:
    n = len(got) if isinstance(got, list) else None
    fail("flatten() of a list nested %d levels deep returned the wrong leaves (len %r, expected %d)"
         % (DEPTH, n, len(expected)))

# deep nesting of single-element lists
chain = "leaf"
for _ in range(DEPTH):
    chain = [chain]
try:
    got = flatten([chain, "end"])
except RecursionError:
    fail("flatten() raised RecursionError on %d nested single-element lists" % DEPTH)
if got != ["leaf", "end"]:
    fail("flatten() of nested single-element lists returned %r" % (got[:5],))

print("ok")
