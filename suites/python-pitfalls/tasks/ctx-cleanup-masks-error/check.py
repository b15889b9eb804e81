import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import logging

logging.disable(logging.CRITICAL)

from solution import transaction


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class InsufficientFunds(Exception):
    pass


class FakeConn:
    def __init__(self, rollback_fails=False, commit_fails=False):
        self.calls = []
        self.rollback_fails = rollback_fails
        self.commit_fails = commit_fails

    def begin(self):
        self.calls.append("begin")

    def execute(self, sql):
        self.calls.append("execute")

    def commit(self):
        self.calls.append("commit")
        if self.commit_fails:
            raise ConnectionError("commit failed: connection reset")

    def rollback(self):
        self.calls.append("rollback")
        if self.rollback_fails:
            raise ConnectionError("rollback failed: connection reset")


# 1. normal completion commits
conn = FakeConn()
with transaction(conn) as c:
    if c is not conn:
        fail("the with target is %r, expected conn itself" % (c,))
    c.execute("UPDATE")
if conn.calls != ["begin", "execute", "commit"]:
    fail("successful block: calls were %r, expected begin, execute, commit" % conn.calls)

# 2. an error in the block rolls back and propagates unchanged
conn = FakeConn()
err = InsufficientFunds("acct 42")
try:
    with transaction(conn):
        conn.execute("UPDATE")
        raise err
except InsufficientFunds as e:
    if e is not err:
        fail("a different InsufficientFunds instance came out of the with block")
else:
    fail("InsufficientFunds raised in the block did not propagate")
if "commit" in conn.calls or conn.calls.count("rollback") != 1:
    fail("failed block: calls were %r, expected one rollback and no commit" % conn.calls)

# 3. commit failure propagates
conn = FakeConn(commit_fails=True)
try:
    with transaction(conn):
        conn.execute("UPDATE")
except ConnectionError:
    pass
else:
    fail("a ConnectionError from commit() did not propagate")

# 4. the pitfall: rollback itself fails while handling the block's error
conn = FakeConn(rollback_fails=True)
err = InsufficientFunds("acct 7")
try:
    with transaction(conn):
        conn.execute("UPDATE")
        raise err
except InsufficientFunds as e:
    if e is not err:
        fail("a different InsufficientFunds instance came out when rollback failed")
except ConnectionError as e:
    fail("block raised InsufficientFunds and rollback() failed; caller got %r instead: "
         "the cleanup error masked the original exception" % (e,))
else:
    fail("nothing propagated when the block raised and rollback() failed")
if "commit" in conn.calls or "rollback" not in conn.calls:
    fail("when rollback fails: calls were %r, expected a rollback attempt and no commit" % conn.calls)

print("ok")
