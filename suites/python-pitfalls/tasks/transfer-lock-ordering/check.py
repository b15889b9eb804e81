import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import random
import threading
import time

from solution import transfer


def fail(msg):
    print("FAIL: " + msg, flush=True)
    os._exit(1)


_held = threading.local()
GATE = {"on": False, "barrier": None}


class GateLock:
    """A Lock that can make two threads meet right after taking their first lock.

    With the gate on, a thread that has just acquired its first account lock
    waits (up to 0.2 s) for a second thread to do the same. That forces the
    interleaving where two opposite transfers each hold one lock.
    """

    def __init__(self):
        self._lock = threading.Lock()
        self.acquired = 0

    def acquire(self, blocking=True, timeout=-1):
        ok = self._lock.acquire(blocking, timeout)
        if ok:
            self.acquired += 1
            n = getattr(_held, "n", 0) + 1
            _held.n = n
            if n == 1 and GATE["on"]:
                try:
                    GATE["barrier"].wait(0.2)
                except threading.BrokenBarrierError:
                    pass
        return ok

    def release(self):
        _held.n = getattr(_held, "n", 1) - 1
        self._lock.release()

    def locked(self):
        return self._lock.locked()

    __enter__ = acquire

    def __exit__(self, *exc):
        self.release()


class Account:
    def __init__(self, id, balance):
        self.id = id
        self.balance = balance
        self.lock = GateLock()

    def __repr__(self):
        return "Account(%d, %d)" % (self.id, self.balance)


def run_threads(targets, limit):
    errors = []

    def wrap(fn):
        def run():
            try:
                fn()
            except BaseException as e:  # noqa: B036 - record everything
                errors.append(e)
        return run

    threads = [threading.Thread(target=wrap(t), daemon=True) for t in targets]
    for t in threads:
        t.start()
    deadline = time.monotonic() + limit
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return [t for t in threads if t.is_alive()], errors


# ordinary transfers
a, b = Account(1, 1000), Account(2, 0)
transfer(a, b, 300)
if (a.balance, b.balance) != (700, 300):
    fail("transfer(a, b, 300) left balances %d/%d, expected 700/300" % (a.balance, b.balance))
if a.lock.acquired < 1 or b.lock.acquired < 1:
    fail("transfer did not take both accounts' locks")
if a.lock.locked() or b.lock.locked():
    fail("a lock is still held after transfer returned")

for args, why in [((b, a, 301), "insufficient funds"), ((a, b, 0), "amount 0"), ((a, b, -5), "negative amount")]:
    try:
        transfer(*args)
    except ValueError:
        pass
    else:
        fail("transfer with %s did not raise ValueError" % why)
    if (a.balance, b.balance) != (700, 300):
        fail("a rejected transfer (%s) changed balances to %d/%d" % (why, a.balance, b.balance))
    if a.lock.locked() or b.lock.locked():
        fail("a lock is still held after transfer raised ValueError (%s)" % why)

# the pitfall: opposite transfers at the same time
x, y = Account(10, 10_000), Account(20, 10_000)
GATE["on"] = True
GATE["barrier"] = threading.Barrier(2)
stuck, errors = run_threads([lambda: transfer(x, y, 100), lambda: transfer(y, x, 50)], 1.0)
GATE["on"] = False
if stuck:
    fail("deadlock: transfer(x, y) and transfer(y, x) running at the same time never finished "
         "(each thread holds one lock and waits for the other; locks must be taken in a "
         "consistent order)")
if errors:
    fail("concurrent opposite transfers raised %r" % (errors[0],))
if (x.balance, y.balance) != (9_950, 10_050):
    fail("after concurrent opposite transfers balances are %d/%d, expected 9950/10050"
         % (x.balance, y.balance))

# stress: many threads, random directions, total preserved
accounts = [Account(i, 5_000) for i in range(100, 104)]


def worker(seed):
    def run():
        rnd = random.Random(seed)
        for _ in range(300):
            s, d = rnd.sample(accounts, 2)
            try:
                transfer(s, d, rnd.randint(1, 400))
            except ValueError:
                pass
    return run


stuck, errors = run_threads([worker(i) for i in range(6)], 3)
if stuck:
    fail("deadlock under concurrent random transfers")
if errors:
    fail("concurrent random transfers raised %r" % (errors[0],))
if sum(acc.balance for acc in accounts) != 20_000 or min(acc.balance for acc in accounts) < 0:
    fail("balances after concurrent transfers: %r" % (accounts,))

print("ok", flush=True)
