import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import iter_lines


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expected_lines(data):
    lines = data.decode("utf-8", "replace").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def run(chunks):
    return list(iter_lines(iter(chunks)))


# ordinary
for chunks, expected in [
    ([b"a\nb\n"], ["a", "b"]),
    ([b"a\nb"], ["a", "b"]),
    ([b"ab", b"c\nde", b"f\n"], ["abc", "def"]),
    ([b"\n\nx\n"], ["", "", "x"]),
    ([], []),
    ([b"", b"only"], ["only"]),
    ([b"ok \xff\n"], ["ok \ufffd"]),
]:
    got = run(chunks)
    if got != expected:
        fail("iter_lines(%r) gave %r, expected %r" % (chunks, got, expected))

# laziness: the first line must come out before later chunks are read
pulled = []


def source():
    for c in [b"first\n", b"second\n", b"third\n"]:
        pulled.append(c)
        yield c


gen = iter_lines(source())
line = next(gen)
if line != "first" or len(pulled) != 1:
    fail("iter_lines is not lazy: first line %r after reading %d chunks" % (line, len(pulled)))

# the pitfall: multi-byte characters split across chunk boundaries
text = "h\u00e9llo w\u00f6rld\n\u65e5\u672c\u8a9e\n\U0001F44D ok\n\u00e9\u00e9\n"
data = text.encode("utf-8")
got = run([data[i:i + 1] for i in range(len(data))])
if got != expected_lines(data):
    fail("with 1-byte chunks iter_lines gave %r, expected %r (a multi-byte UTF-8 character "
         "split across recv() chunks must still decode)" % (got, expected_lines(data)))
for i in range(1, len(data)):
    chunks = [data[:i], data[i:]]
    got = run(chunks)
    if got != expected_lines(data):
        fail("splitting the stream at byte %d (%r | %r) gave %r, expected %r (a character split "
             "across chunks must still decode)" % (i, data[:i][-3:], data[i:][:3], got, expected_lines(data)))

# invalid bytes mixed with split characters; truncated sequence at the very end
data = b"a\xc3\xa9\xff\n\xe6\x97\xa5\xe6\x9c\xacz\n\xf0\x9f\x91\x8d\nend\xe6\x97"
for size in (1, 2, 3, 5):
    chunks = [data[i:i + size] for i in range(0, len(data), size)]
    got = run(chunks)
    if got != expected_lines(data):
        fail("%d-byte chunks of %r gave %r, expected %r" % (size, data, got, expected_lines(data)))

print("ok")
