import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import write_atomic


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class RenderError(Exception):
    pass


def render(parts, fail_after=None):
    for i, p in enumerate(parts):
        if fail_after is not None and i >= fail_after:
            raise RenderError("template error in section %d" % i)
        yield p


def read(path):
    with open(path, "rb") as f:
        return f.read()


def listing(d):
    return sorted(n for n in os.listdir(d) if n != "__pycache__")


os.makedirs("out", exist_ok=True)
target = os.path.join("out", "report.txt")
with open(target, "wb") as f:
    f.write(b"OLD REPORT\n")
before = listing("out")

# ordinary: replace an existing file
write_atomic(target, render(["Total: ", "42 \u20ac", "\n"]))
if read(target) != "Total: 42 \u20ac\n".encode("utf-8"):
    fail("after write_atomic the file contains %r" % read(target))
if listing("out") != before:
    fail("write_atomic left %d extra file(s) behind after a successful write"
         % len(set(listing("out")) - set(before)))

# ordinary: new file, bare file name in the current directory
cwd_before = listing(".")
write_atomic("plain.txt", render(["a", "b"]))
if read("plain.txt") != b"ab":
    fail("write_atomic('plain.txt', ...) wrote %r" % read("plain.txt"))
if listing(".") != sorted(cwd_before + ["plain.txt"]):
    fail("write_atomic('plain.txt') left %d unexpected file(s) in the directory"
         % len(set(listing(".")) - set(cwd_before) - {"plain.txt"}))

# rendering fails: old content intact, exception propagates
old = read(target)
try:
    write_atomic(target, render(["NEW ", "PARTIAL ", "never"], fail_after=2))
except RenderError:
    pass
else:
    fail("a RenderError raised by the chunks generator did not propagate")
if read(target) != old:
    fail("after a failed render the file contains %r instead of the old %r" % (read(target), old))

# the pitfall: no leftovers after a failure
leftovers = sorted(set(listing("out")) - set(before))
if leftovers:
    fail("after a failed render, write_atomic left %d extra file(s) in the directory "
         "(temporary file not removed on error)" % len(leftovers))

# failure when the target does not exist yet
try:
    write_atomic(os.path.join("out", "new.txt"), render(["x"], fail_after=0))
except RenderError:
    pass
else:
    fail("a RenderError did not propagate for a new file")
if listing("out") != before:
    fail("a failed write of a new file left %d extra file(s) in the directory"
         % len(set(listing("out")) - set(before)))

print("ok")
