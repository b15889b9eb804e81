import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import copy

from solution import rank


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def P(name, score, date, tag=None):
    d = {"name": name, "score": score, "last_played": date}
    if tag is not None:
        d["id"] = tag
    return d


def show(players):
    return [(p["name"], p["score"], p["last_played"]) + ((p["id"],) if "id" in p else ()) for p in players]


def check(players, expected, why):
    original = copy.deepcopy(players)
    got = rank(players)
    if players != original:
        fail("rank() modified its input list")
    if got is players:
        fail("rank() returned the input list itself; expected a new list")
    if show(got) != show(expected):
        fail("%s: rank(%r) returned %r, expected %r"
             % (why or "wrong order", show(players), show(got), show(expected)))


# ordinary: score descending
check([P("ann", 10, "2024-01-01"), P("bob", 30, "2024-01-01"), P("cy", 20, "2024-01-01")],
      [P("bob", 30, "2024-01-01"), P("cy", 20, "2024-01-01"), P("ann", 10, "2024-01-01")], "")

# equal score: most recent first
check([P("ann", 10, "2023-12-31"), P("bob", 10, "2024-02-01"), P("cy", 10, "2024-01-15")],
      [P("bob", 10, "2024-02-01"), P("cy", 10, "2024-01-15"), P("ann", 10, "2023-12-31")], "")

check([], [], "")

# equal score and date: name ascending
check([P("zoe", 50, "2024-03-01"), P("amy", 50, "2024-03-01"), P("max", 50, "2024-03-01")],
      [P("amy", 50, "2024-03-01"), P("max", 50, "2024-03-01"), P("zoe", 50, "2024-03-01")],
      "ties on score and date go by name A to Z, while score and date are descending")

# full mix, including exact duplicates that must keep input order
players = [
    P("dan", 5, "2024-01-01", 1),
    P("bea", 7, "2024-01-02", 2),
    P("al", 7, "2024-01-02", 3),
    P("cat", 7, "2024-05-20", 4),
    P("al", 7, "2024-01-02", 5),
    P("eve", 5, "2024-01-01", 6),
    P("al", 9, "2023-01-01", 7),
]
expected = [
    P("al", 9, "2023-01-01", 7),
    P("cat", 7, "2024-05-20", 4),
    P("al", 7, "2024-01-02", 3),
    P("al", 7, "2024-01-02", 5),
    P("bea", 7, "2024-01-02", 2),
    P("dan", 5, "2024-01-01", 1),
    P("eve", 5, "2024-01-01", 6),
]
check(players, expected, "score and date descending, name ascending, full ties in input order")

print("ok")
