import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import bucket_start


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


SEC = 1_000_000_000
MIN = 60 * SEC

CASES = [
    # ordinary
    (0, 10, 0, ""),
    (15, 10, 10, ""),
    (20, 10, 20, ""),
    (29, 10, 20, ""),
    (1_700_000_000_123_456_789, 1000, 1_700_000_000_123_456_000, ""),
    (1_700_000_030_000_000_000, MIN, 1_699_999_980_000_000_000, ""),
    # pre-epoch: must floor, not truncate toward zero
    (-1, 10, -10, "buckets are aligned to the epoch; -1 is in [-10, 0)"),
    (-10, 10, -10, "-10 starts its own bucket"),
    (-11, 10, -20, "-11 is in [-20, -10)"),
    (-1_500_000_000, SEC, -2 * SEC, "-1.5 s is in [-2 s, -1 s)"),
    # nanosecond timestamps are beyond float precision
    (1_700_000_000_999_999_999, SEC, 1_700_000_000 * SEC,
     "the last nanosecond of a second belongs to that second; float division rounds it up"),
    (1_700_000_000_123_456_789, 7, 1_700_000_000_123_456_787,
     "integers above 2**53 are not exact as floats"),
    (1_700_000_000_123_456_789, 1, 1_700_000_000_123_456_789,
     "width 1 must return ts unchanged"),
    (-1_700_000_000_999_999_999, SEC, -1_700_000_001 * SEC, "pre-epoch nanoseconds"),
]

for ts, width, expected, why in CASES:
    got = bucket_start(ts, width)
    if got != expected or type(got) is not int:
        fail("bucket_start(%d, %d) returned %r, expected %d%s"
             % (ts, width, got, expected, " (" + why + ")" if why else ""))

print("ok")
