import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import copy

from solution import ConfigCache


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


SOURCE = {
    "svc": {"name": "svc", "port": 8080, "hosts": ["a", "b"],
            "limits": {"rps": 100, "burst": [10, 20]}},
    "db": {"url": "postgres://x", "pool": {"min": 1, "max": 5}},
}
calls = []


def loader(name):
    calls.append(name)
    return copy.deepcopy(SOURCE[name])


cache = ConfigCache(loader)

# ordinary
first = cache.get("svc")
if first != SOURCE["svc"]:
    fail("get('svc') returned %r" % (first,))
if cache.get("svc") != SOURCE["svc"] or cache.get("db") != SOURCE["db"]:
    fail("get() returned the wrong config")
if calls.count("svc") != 1 or calls.count("db") != 1:
    fail("loader calls: %r; expected one per name" % (calls,))

# top-level changes by one caller
mine = cache.get("svc")
mine["port"] = 9999
mine.pop("name")
mine["extra"] = True
again = cache.get("svc")
if again != SOURCE["svc"]:
    fail("a caller's top-level changes leaked into the cache: get('svc') now returns %r" % (again,))

# nested changes by one caller
mine = cache.get("svc")
mine["hosts"].append("evil")
mine["limits"]["rps"] = 0
mine["limits"]["burst"].clear()
again = cache.get("svc")
if again != SOURCE["svc"]:
    fail("a caller's changes to nested values (hosts.append, limits['rps'] = 0) leaked into the "
         "cache: get('svc') now returns %r (returned configs share nested objects)" % (again,))

mine = cache.get("db")
mine["pool"]["max"] = 1
if cache.get("db")["pool"]["max"] != 5:
    fail("changing get('db')['pool']['max'] changed the cached config")

if calls.count("svc") != 1 or calls.count("db") != 1:
    fail("loader calls: %r; expected one per name" % (calls,))

print("ok")
