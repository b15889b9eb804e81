import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import threading
import time

from solution import OnceCache


def fail(msg):
    print("FAIL: " + msg, flush=True)
    os._exit(1)


class LoadError(Exception):
    pass


lock = threading.Lock()
calls = {}
gates = {}
started = {}


def load(key):
    with lock:
        calls[key] = calls.get(key, 0) + 1
        ev = started.setdefault(key, threading.Event())
    ev.set()
    gate = gates.get(key)
    if gate is not None:
        gate.wait(3)
    if str(key).startswith("bad"):
        raise LoadError(key)
    if key == "none":
        return None
    return str(key).upper()


def spawn(cache, key, out):
    def run():
        try:
            out.append(("ok", cache.get(key)))
        except BaseException as e:  # noqa: B036 - record everything
            out.append(("err", e))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


cache = OnceCache(load)

# ordinary use
if cache.get("a") != "A" or cache.get("a") != "A" or calls.get("a") != 1:
    fail("get('a') twice: results or load count wrong (load called %r times)" % calls.get("a"))
if cache.get("none") is not None or cache.get("none") is not None or calls.get("none") != 1:
    fail("a cached None value was reloaded (load('none') called %r times)" % calls.get("none"))

# the pitfall: concurrent requests for the same key
gates["k"] = threading.Event()
results = []
first = spawn(cache, "k", results)
started.setdefault("k", threading.Event())
if not started["k"].wait(1):
    fail("load('k') was not called by get('k')")
others = [spawn(cache, "k", results) for _ in range(3)]
time.sleep(0.1)  # let the other threads reach get()

# different keys must not wait for the slow one
other_key = []
t_j = spawn(cache, "j", other_key)
t_j.join(0.5)
if t_j.is_alive():
    gates["k"].set()
    fail("get('j') blocked while an unrelated load('k') was in progress")
if other_key != [("ok", "J")]:
    gates["k"].set()
    fail("get('j') returned %r" % (other_key,))

gates["k"].set()
for t in [first] + others:
    t.join(1)
    if t.is_alive():
        fail("a get('k') call did not finish after load('k') completed")
if calls["k"] != 1:
    fail("4 threads called get('k') at the same time and load('k') ran %d times; expected once"
         % calls["k"])
if results != [("ok", "K")] * 4:
    fail("concurrent get('k') results: %r" % (results,))

# errors reach every waiter, and nothing is cached
gates["bad"] = threading.Event()
results = []
first = spawn(cache, "bad", results)
started.setdefault("bad", threading.Event())
if not started["bad"].wait(1):
    fail("load('bad') was not called")
second = spawn(cache, "bad", results)
time.sleep(0.05)
gates["bad"].set()
first.join(1)
second.join(1)
if first.is_alive() or second.is_alive():
    fail("get('bad') callers hang after load raised")
if calls["bad"] != 1:
    fail("load('bad') ran %d times for two concurrent callers; expected once" % calls["bad"])
if len(results) != 2 or any(kind != "err" or not isinstance(e, LoadError) for kind, e in results):
    fail("both concurrent get('bad') callers should get LoadError, got %r" % (results,))
try:
    cache.get("bad")
except LoadError:
    pass
else:
    fail("get('bad') after a failed load did not raise")
if calls["bad"] != 2:
    fail("a failed load was cached: later get('bad') did not call load again")

print("ok")
