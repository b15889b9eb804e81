import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import first_true


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(lo, hi, t):
    """pred(x) is x >= t; the answer is min(max(t, lo), hi)."""
    calls = []

    def pred(x):
        if not isinstance(x, int):
            fail("first_true(%d, %d, pred) called pred(%r), not an int" % (lo, hi, x))
        if not lo <= x < hi:
            fail("first_true(%d, %d, pred) called pred(%d), outside [lo, hi)" % (lo, hi, x))
        calls.append(x)
        if len(calls) > 200:
            fail("first_true(%d, %d, pred) made more than 200 pred calls" % (lo, hi))
        return x >= t

    got = first_true(lo, hi, pred)
    return got, len(calls)


# ordinary cases first
for lo, hi, t, expected in [(0, 10, 3, 3), (0, 10, 0, 0), (0, 10, 9, 9), (0, 100, 57, 57),
                            (-50, 50, -7, -7), (0, 1, 0, 0)]:
    got, _ = run(lo, hi, t)
    if got != expected:
        fail("first_true(%d, %d, x >= %d) returned %r, expected %d" % (lo, hi, t, got, expected))

# exhaustive small ranges, including "no true value" and empty ranges
for lo in range(-4, 4):
    for hi in range(lo, lo + 10):
        for t in range(lo, hi + 2):
            expected = min(max(t, lo), hi)
            got, n = run(lo, hi, t)
            if got != expected:
                if expected == hi:
                    why = " (pred is false everywhere in the range, so the answer is hi)"
                else:
                    why = ""
                fail("first_true(%d, %d, x >= %d) returned %r, expected %d%s"
                     % (lo, hi, t, got, expected, why))
            size = hi - lo
            if n > size.bit_length() + 1:
                fail("first_true(%d, %d, pred) made %d calls for a range of %d" % (lo, hi, n, size))

# huge ranges
for lo, hi, t in [(0, 10**18, 123_456_789_012_345_678), (-10**18, 10**18, -5),
                  (0, 10**18, 10**18), (-(2**70), 2**70, 2**69 + 1), (0, 10**18, 0)]:
    got, n = run(lo, hi, t)
    expected = min(max(t, lo), hi)
    if got != expected:
        fail("first_true(%d, %d, x >= %d) returned %r, expected %d" % (lo, hi, t, got, expected))
    if n > (hi - lo).bit_length() + 1:
        fail("first_true over a range of %d made %d pred calls" % (hi - lo, n))

print("ok")
