import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from collections import Counter

from solution import Tag


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


# ordinary equality
if str(Tag("PyCon")) != "PyCon":
    fail("str(Tag('PyCon')) returned %r" % str(Tag("PyCon")))
if not Tag("Python") == Tag(" python "):
    fail("Tag('Python') == Tag(' python ') is False")
if Tag("Python") != Tag("PYTHON"):
    fail("Tag('Python') != Tag('PYTHON') is True")
if Tag("python") == Tag("pythons") or not Tag("a") != Tag("b"):
    fail("different tags compare equal")
try:
    if Tag("x") == "x" or Tag("x") == None:  # noqa: E711
        fail("a Tag compared equal to a non-Tag")
except Exception as e:  # noqa: BLE001
    fail("comparing a Tag with a str raised %r" % (e,))

# the pitfall: equal tags must hash equal
pairs = [("Python", " python "), ("Rust", "RUST"), ("web dev", "Web Dev"), ("x", "x\t")]
for a, b in pairs:
    if Tag(a) == Tag(b) and hash(Tag(a)) != hash(Tag(b)):
        fail("Tag(%r) == Tag(%r) but their hashes differ, so sets and dicts treat them as "
             "different tags (__hash__ must agree with __eq__)" % (a, b))

s = {Tag("Python"), Tag(" python "), Tag("PYTHON"), Tag("rust")}
if len(s) != 2:
    fail("a set of Tag('Python'), Tag(' python '), Tag('PYTHON'), Tag('rust') has %d elements, "
         "expected 2" % len(s))
if Tag("python") not in s:
    fail("Tag('python') not found in a set containing Tag('Python')")

counts = Counter([Tag("Python"), Tag("python "), Tag("Go"), Tag(" go"), Tag("PYTHON")])
if counts[Tag("python")] != 3 or counts[Tag("GO")] != 2 or len(counts) != 2:
    fail("Counter of tags gave %r" % ({str(k): v for k, v in counts.items()},))

posts = {Tag("News"): ["p1"]}
posts.setdefault(Tag(" news"), []).append("p2")
if len(posts) != 1:
    fail("dict keyed by Tag('News') got a separate entry for Tag(' news')")

print("ok")
