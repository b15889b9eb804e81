import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import read_rows


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def write(name, data):
    with open(name, "wb") as f:
        f.write(data)
    return name


# ordinary file, no embedded line breaks
simple = write("simple.csv", b'id,name,city\r\n1,Zo\xc3\xab,Berlin\r\n2,"Smith, Jr.","say ""hi"""\r\n3,,\r\n')
expected = [["id", "name", "city"], ["1", "Zo\u00eb", "Berlin"], ["2", "Smith, Jr.", 'say "hi"'], ["3", "", ""]]
got = read_rows(simple)
if got != expected:
    fail("read_rows on a simple file returned %r, expected %r" % (got, expected))

# notes with embedded line breaks (CRLF, bare LF and bare CR inside quotes)
notes = write(
    "notes.csv",
    b'id,note,owner\r\n'
    b'1,"first line\r\nsecond line",ann\r\n'
    b'2,"call back, re: ""quote""\r\n\r\nthanks",bob\r\n'
    b'3,"unix\nstyle",cy\r\n'
    b'4,"old mac\rstyle",dee\r\n'
    b'5,plain,eve\r\n',
)
expected = [
    ["id", "note", "owner"],
    ["1", "first line\r\nsecond line", "ann"],
    ["2", 'call back, re: "quote"\r\n\r\nthanks', "bob"],
    ["3", "unix\nstyle", "cy"],
    ["4", "old mac\rstyle", "dee"],
    ["5", "plain", "eve"],
]
got = read_rows(notes)
if not isinstance(got, list) or len(got) != len(expected):
    fail("read_rows on a file with multi-line notes returned %d rows, expected %d: %r"
         % (len(got) if isinstance(got, list) else -1, len(expected), got))
for g, e in zip(got, expected):
    if list(g) != e:
        fail("row %s: got %r, expected %r (line breaks inside quoted fields must be kept "
             "byte-for-byte)" % (e[0], list(g), e))

print("ok")
