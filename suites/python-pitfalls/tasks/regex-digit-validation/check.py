import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import is_valid_order_id


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


CASES = [
    ("12345678", True, ""),
    ("00000000", True, ""),
    ("98765432", True, ""),
    ("1234567", False, "too short"),
    ("123456789", False, "too long"),
    ("", False, "empty"),
    ("abcdefgh", False, "letters"),
    ("1234567a", False, "letter"),
    (" 12345678", False, "leading space"),
    ("1234 5678", False, "space"),
    ("-1234567", False, "sign"),
    ("1234567.", False, "dot"),
    ("../12345", False, "path"),
    ("12345678\n", False, "a trailing newline is not allowed ('$' matches before a final \\n)"),
    ("12345678\r", False, "trailing carriage return"),
    ("\u0661\u0662\u0663\u0664\u0665\u0666\u0667\u0668", False,
     "Arabic-Indic digits are not ASCII digits (\\d and str.isdigit() accept them)"),
    ("1234567\u0669", False, "a non-ASCII digit is not an ASCII digit"),
    ("\uff11\uff12\uff13\uff14\uff15\uff16\uff17\uff18", False, "fullwidth digits are not ASCII digits"),
    ("123456\u00b2\u00b3", False, "superscript digits are not ASCII digits"),
    ("1234_567", False, "underscore (int() accepts it)"),
]

for s, expected, why in CASES:
    try:
        got = is_valid_order_id(s)
    except Exception as e:  # noqa: BLE001
        fail("is_valid_order_id(%r) raised %r" % (s, e))
    if got is not expected and got != expected:
        fail("is_valid_order_id(%r) returned %r, expected %r%s"
             % (s, got, expected, " (" + why + ")" if why else ""))
    if not isinstance(got, bool):
        fail("is_valid_order_id(%r) returned %r, not a bool" % (s, got))

print("ok")
