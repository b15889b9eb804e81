import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import json
import math

from solution import to_json


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def strict_loads(s):
    def reject(token):
        raise ValueError("non-standard JSON token %s" % token)
    return json.loads(s, parse_constant=reject)


nan = float("nan")
inf = float("inf")

CASES = [
    ({"a": 1, "b": [1.5, "x", None, True, False]}, {"a": 1, "b": [1.5, "x", None, True, False]}),
    ([1, (2, 3), {"k": (4,)}], [1, [2, 3], {"k": [4]}]),
    ({"big": 12345678901234567890, "neg": -0.25, "s": "h\u00e9llo \"q\""},
     {"big": 12345678901234567890, "neg": -0.25, "s": "h\u00e9llo \"q\""}),
    ({"cpu": 0.5, "temp": nan}, {"cpu": 0.5, "temp": None}),
    ([inf, -inf, 1.0], [None, None, 1.0]),
    ({"series": [1.0, (2.0, nan), {"deep": [inf]}], "ok": True},
     {"series": [1.0, [2.0, None], {"deep": [None]}], "ok": True}),
    (nan, None),
]

for data, expected in CASES:
    out = to_json(data)
    if not isinstance(out, str):
        fail("to_json returned %r, not a str" % (out,))
    try:
        parsed = strict_loads(out)
    except ValueError as e:
        fail("to_json(%r) produced %r, which is not standard JSON (%s)" % (data, out, e))
    if parsed != expected:
        fail("to_json(%r) produced %r, which parses to %r, expected %r" % (data, out, parsed, expected))

print("ok")
