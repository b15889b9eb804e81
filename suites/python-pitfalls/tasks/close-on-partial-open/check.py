import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import merge_sources


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class ShardError(Exception):
    pass


class Reader:
    """Not a context manager on purpose; does nothing on garbage collection."""

    def __init__(self, name, lines, fail_after=None):
        self.name = name
        self.lines = lines
        self.fail_after = fail_after
        self.closed = False

    def __iter__(self):
        for i, line in enumerate(self.lines):
            if self.closed:
                raise ShardError("read from closed reader %s" % self.name)
            if self.fail_after is not None and i >= self.fail_after:
                raise ShardError("connection to %s lost" % self.name)
            yield line

    def close(self):
        self.closed = True


DATA = {
    "s1": ["a1", "c1", "e1"],
    "s2": ["b2", "c2", "f2"],
    "s3": ["a3", "d3"],
    "empty": [],
}


def make_opener(opened, fail_open=(), fail_read=()):
    def open_source(name):
        if name in fail_open:
            raise ShardError("cannot connect to %s" % name)
        r = Reader(name, list(DATA[name]), fail_after=1 if name in fail_read else None)
        opened.append(r)
        return r
    return open_source


# ordinary merge
opened = []
got = merge_sources(["s1", "s2", "s3", "empty"], make_opener(opened))
if list(got) != sorted(DATA["s1"] + DATA["s2"] + DATA["s3"]):
    fail("merge_sources returned %r" % (got,))
if len(opened) != 4 or not all(r.closed for r in opened):
    fail("after a successful merge, readers not closed: %r" % [r.name for r in opened if not r.closed])

got = merge_sources([], make_opener([]))
if list(got) != []:
    fail("merge_sources([]) returned %r" % (got,))

# a read error: propagate, close everything
opened = []
try:
    merge_sources(["s1", "s2", "s3"], make_opener(opened, fail_read={"s2"}))
except ShardError:
    pass
else:
    fail("a read error from shard s2 did not propagate")
leaked = [r.name for r in opened if not r.closed]
if leaked:
    fail("after a read error, readers %r were never closed" % leaked)

# the pitfall: opening the third shard fails after two are already open
opened = []
try:
    merge_sources(["s1", "s2", "broken", "s3"], make_opener(opened, fail_open={"broken"}))
except ShardError:
    pass
else:
    fail("an error opening shard 'broken' did not propagate")
leaked = [r.name for r in opened if not r.closed]
if leaked:
    fail("open_source('broken') raised after %s had been opened, and %s were never closed "
         "(readers opened before the failure leak)" % ([r.name for r in opened], leaked))

print("ok")
