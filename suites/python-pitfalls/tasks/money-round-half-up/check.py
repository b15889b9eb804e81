import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import price_with_tax


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


CASES = [
    # ordinary
    ("10.00", "0.20", "12.00", ""),
    ("19.99", "0.19", "23.79", ""),
    ("100", "0.075", "107.50", ""),
    ("0.01", "0", "0.01", ""),
    ("1234567.89", "0.07", "1320987.64", ""),
    ("-19.99", "0.19", "-23.79", ""),
    # exact halves: away from zero
    ("2.50", "0.05", "2.63", "2.625 is a half and must round away from zero"),
    ("0.10", "0.25", "0.13", "0.125 is a half and must round away from zero"),
    ("0.35", "0.5", "0.53", "0.525 is a half and must round away from zero"),
    ("-2.50", "0.05", "-2.63", "-2.625 is a half and must round away from zero"),
    ("1.00", "0.005", "1.01", "1.005 is a half and must round away from zero"),
    ("2.675", "0", "2.68", "2.675 is a half and must round away from zero"),
    ("8.25", "0.1", "9.08", "9.075 is a half and must round away from zero"),
    ("4501.35", "0.15", "5176.55", "5176.5525 rounds to 5176.55"),
]

for net, rate, expected, why in CASES:
    got = price_with_tax(net, rate)
    if got != expected:
        fail("price_with_tax(%r, %r) returned %r, expected %r%s"
             % (net, rate, got, expected, " (" + why + ")" if why else ""))

print("ok")
