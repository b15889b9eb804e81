# The hidden test of this task: it runs with the answer's code as `solution` and passes by
# running to its end (README: "Writing a task and its check").
import sys

from solution import slugify


def expect(title, slug):
    got = slugify(title)
    if got != slug:
        print(f"FAIL: slugify({title!r}) gave {got!r}, expected {slug!r}")
        sys.exit(1)


expect("Hello World", "hello-world")
expect("Crème Brûlée!", "creme-brulee")
expect("  --Rust & Python 3.12--  ", "rust-python-3-12")
expect("Ångström", "angstrom")
expect("a__b", "a-b")
expect("", "")
