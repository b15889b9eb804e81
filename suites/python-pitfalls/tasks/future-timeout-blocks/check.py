import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import threading
import time

from solution import call_with_timeout


def fail(msg):
    print("FAIL: " + msg, flush=True)
    release.set()
    sys.exit(1)


release = threading.Event()


class BackendError(Exception):
    pass


def in_worker(func, limit):
    """Run func() in a daemon worker thread (like a request handler); wait at most `limit` s."""
    box = {}

    def run():
        try:
            box["result"] = func()
        except BaseException as e:  # noqa: B036 - record everything
            box["error"] = e

    t = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    t.start()
    t.join(limit)
    return box, t.is_alive(), time.monotonic() - start


# ordinary: fast result, kwargs, exceptions
box, alive, _ = in_worker(lambda: call_with_timeout(lambda a, b=0: a + b, 1.0, 2, b=3), 2)
if alive or box.get("result") != 5:
    fail("call_with_timeout(add, 1.0, 2, b=3) gave %r, expected result 5" % (box,))


def boom():
    raise BackendError("503")


box, alive, _ = in_worker(lambda: call_with_timeout(boom, 1.0), 2)
if alive or not isinstance(box.get("error"), BackendError):
    fail("an exception raised by fn was not re-raised: got %r" % (box,))


def slowish():
    time.sleep(0.02)
    return "done"


box, alive, _ = in_worker(lambda: call_with_timeout(slowish, 1.0), 2)
if alive or box.get("result") != "done":
    fail("fn taking 0.02 s with timeout 1.0 gave %r" % (box,))


# the pitfall: a call that hangs must not hold the caller past the timeout
def hang():
    release.wait(5)
    return "late"


box, alive, elapsed = in_worker(lambda: call_with_timeout(hang, 0.05), 0.6)
if alive:
    fail("call_with_timeout(hanging_fn, timeout=0.05) had not returned after 0.6 s: it waits for "
         "the still-running call (e.g. leaving a ThreadPoolExecutor 'with' block) instead of "
         "returning at the timeout")
err = box.get("error")
if not isinstance(err, TimeoutError):
    fail("call_with_timeout(hanging_fn, timeout=0.05) gave %r, expected TimeoutError" % (box,))

release.set()
print("ok")
