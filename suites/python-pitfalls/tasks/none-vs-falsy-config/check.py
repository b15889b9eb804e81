import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import copy

from solution import merge_settings


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(defaults, *overrides):
    before = copy.deepcopy((defaults, overrides))
    got = merge_settings(defaults, *overrides)
    if (defaults, overrides) != before:
        fail("merge_settings modified its input dicts")
    return got


# ordinary layering
got = run({"a": 1, "b": 2}, {"a": 10}, {"a": None, "c": 3}, {"b": 20})
if got != {"a": 10, "b": 20, "c": 3}:
    fail("basic layering returned %r, expected {'a': 10, 'b': 20, 'c': 3}" % (got,))

got = run({"db": {"host": "localhost", "port": 5432}, "x": 1}, {"db": {"host": "db1"}})
if got != {"db": {"host": "db1", "port": 5432}, "x": 1}:
    fail("nested merge returned %r" % (got,))

got = run({}, {"x": None})
if got != {}:
    fail("merge_settings({}, {'x': None}) returned %r, expected {} (None means not set)" % (got,))

got = run({"timeout": 30}, {"timeout": None})
if got != {"timeout": 30}:
    fail("a None override replaced the default: got %r" % (got,))

# explicit falsy settings must win
defaults = {
    "timeout": 30, "retries": 3, "debug": True, "name": "svc", "tags": ["web"],
    "ratio": 0.5, "db": {"host": "localhost", "port": 5432, "ssl": True, "pool": {"size": 10}},
}
file_layer = {"retries": 0, "debug": False, "db": {"ssl": False, "port": None, "pool": {"size": 0}}}
env_layer = {"name": "", "tags": [], "timeout": None, "ratio": 0.0}
expected = {
    "timeout": 30, "retries": 0, "debug": False, "name": "", "tags": [], "ratio": 0.0,
    "db": {"host": "localhost", "port": 5432, "ssl": False, "pool": {"size": 0}},
}
got = run(defaults, file_layer, env_layer)
if got != expected:
    diffs = []
    for k in expected:
        if got.get(k, "<missing>") != expected[k]:
            diffs.append("%s=%r (expected %r)" % (k, got.get(k, "<missing>"), expected[k]))
    fail("explicit falsy settings (0, False, '', [], 0.0) were ignored: " + ", ".join(diffs))

got = run({"verbose": True}, {"verbose": False}, {"verbose": None})
if got != {"verbose": False}:
    fail("verbose=False then None should leave False, got %r" % (got,))

print("ok")
