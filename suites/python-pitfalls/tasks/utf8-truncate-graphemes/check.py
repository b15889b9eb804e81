import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import truncate_utf8


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


ZWJ = "\u200d"

# Each case is the text written out as its clusters, by hand.
CASES = [
    ["h", "e", "l", "l", "o"],
    ["a", "\u00e9", "\u65e5", "\u672c", "!"],                         # 2- and 3-byte chars
    ["e\u0301", "x"],                                                  # e + combining acute
    ["a", "c\u0327\u0301", "b"],                                       # c + cedilla + acute
    ["Z", "a\u0308\u0308\u0308"],                                      # stacked diaeresis
    ["\u2764\ufe0f", "a"],                                             # heart + VS16
    ["\U0001F44D\U0001F3FD", "o", "k"],                                # thumbs up, medium skin tone
    ["\U0001F469" + ZWJ + "\U0001F469" + ZWJ + "\U0001F467", "!"],     # family: woman woman girl
    ["\U0001F469\U0001F3FD" + ZWJ + "\U0001F4BB", " ", "x"],           # woman technologist, skin tone
    ["\U0001F3F3\ufe0f" + ZWJ + "\U0001F308"],                         # rainbow flag
    ["\U0001F1EF\U0001F1F5", "\U0001F1EB\U0001F1F7"],                  # JP FR
    ["\U0001F1EF\U0001F1F5", "\U0001F1EB\U0001F1F7", "\U0001F1E9"],    # JP FR + lone RI
    ["A", "\U0001F1FA\U0001F1F8", "e\u0301",
     "\U0001F468" + ZWJ + "\U0001F469" + ZWJ + "\U0001F467" + ZWJ + "\U0001F466", "."],
    ["\U0001F44B\U0001F3FF", "\U0001F44B", "b"],                     # wave dark skin, wave, b
]


def describe(s):
    out = []
    for c in s:
        if c.isascii() and c.isprintable():
            out.append(c)
        elif ord(c) < 0x10000:
            out.append("\\u%04x" % ord(c))
        else:
            out.append("\\U%08x" % ord(c))
    return "'" + "".join(out) + "'"


# Ordinary sanity checks first.
if truncate_utf8("hello", 10) != "hello":
    fail("truncate_utf8('hello', 10) returned %r, expected 'hello'" % truncate_utf8("hello", 10))
if truncate_utf8("hello", 3) != "hel":
    fail("truncate_utf8('hello', 3) returned %r, expected 'hel'" % truncate_utf8("hello", 3))
if truncate_utf8("", 5) != "":
    fail("truncate_utf8('', 5) should return ''")

for clusters in CASES:
    text = "".join(clusters)
    total = len(text.encode("utf-8"))
    for limit in range(0, total + 2):
        expected, used = "", 0
        for c in clusters:
            size = len(c.encode("utf-8"))
            if used + size > limit:
                break
            expected += c
            used += size
        got = truncate_utf8(text, limit)
        if not isinstance(got, str):
            fail("truncate_utf8 returned %r, not a str" % (got,))
        if got != expected:
            if len(got.encode("utf-8")) > limit:
                why = "result is %d bytes, over the limit" % len(got.encode("utf-8"))
            elif not text.startswith(got):
                why = "result is not a prefix of the input"
            elif len(got) > len(expected):
                why = "split a grapheme cluster"
            else:
                why = "result is shorter than necessary"
            fail("truncate_utf8(%s, %d) returned %s, expected %s: %s"
                 % (describe(text), limit, describe(got), describe(expected), why))

print("ok")
