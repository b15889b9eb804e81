import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import find_conflicts


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


CASES = [
    # ordinary overlaps
    ([("a", 540, 600), ("b", 570, 630)], [("a", "b")]),
    ([("a", 540, 600), ("b", 660, 720)], []),
    ([("a", 0, 100), ("b", 10, 20)], [("a", "b")]),
    ([("a", 60, 120), ("b", 60, 120)], [("a", "b")]),
    ([("a", 540, 600), ("b", 599, 660)], [("a", "b")]),
    ([], []),
    ([("solo", 1, 2)], []),
    # touching intervals do not overlap
    ([("a", 540, 600), ("b", 600, 660)], []),
    ([("b", 600, 660), ("a", 540, 600)], []),
    ([("x", 5, 6), ("y", 6, 7), ("z", 5, 6)], [("x", "z")]),
    ([("a", 0, 60), ("b", 60, 120), ("c", 30, 90)], [("a", "c"), ("b", "c")]),
    ([("m1", 480, 540), ("m2", 540, 600), ("m3", 600, 660), ("m4", 420, 480), ("all", 420, 660)],
     [("m1", "all"), ("m2", "all"), ("m3", "all"), ("m4", "all")]),
]

for bookings, expected in CASES:
    got = find_conflicts(list(bookings))
    try:
        got_norm = [tuple(p) for p in got]
    except TypeError:
        fail("find_conflicts(%r) returned %r, not a list of pairs" % (bookings, got))
    if got_norm != expected:
        touching = [(p, q) for p in bookings for q in bookings if p is not q and p[2] == q[1]]
        hint = " (bookings that only touch, end == start, do not overlap)" if touching else ""
        fail("find_conflicts(%r) returned %r, expected %r%s" % (bookings, got_norm, expected, hint))

print("ok")
