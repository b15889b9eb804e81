import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from solution import TreeNode


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


# The pitfall: nodes created without children must not share one list.
a = TreeNode("a")
b = TreeNode("b")
c = TreeNode("c")
r = a.add_child(c)
if r is not c:
    fail("add_child should return the node it added")
if list(b.children) != []:
    fail("after a.add_child(c), an unrelated TreeNode('b') has children %r: nodes built with "
         "TreeNode(value) share one children list (mutable default argument)"
         % [getattr(x, "value", x) for x in b.children])
if list(c.children) != []:
    fail("after a.add_child(c), c has children of its own: the default children list is shared")
if a.walk() != ["a", "c"]:
    fail("a.walk() returned %r, expected ['a', 'c']" % (a.walk(),))

# Second round: still independent.
x = TreeNode(1)
y = TreeNode(2)
x.add_child(TreeNode(10))
x.add_child(TreeNode(11))
if y.walk() != [2] or y.depth() != 1:
    fail("fresh TreeNode(2) reports walk=%r depth=%r, expected [2] and 1" % (y.walk(), y.depth()))

# Ordinary behaviour with explicit children.
leaf1, leaf2, leaf3 = TreeNode("d"), TreeNode("e"), TreeNode("f")
mid = TreeNode("m", [leaf1, leaf2])
root = TreeNode("root", [mid, TreeNode("n")])
root.children[1].add_child(leaf3)
if root.walk() != ["root", "m", "d", "e", "n", "f"]:
    fail("walk() returned %r, expected pre-order ['root', 'm', 'd', 'e', 'n', 'f']" % (root.walk(),))
if root.depth() != 3:
    fail("depth() of a 3-level tree returned %r" % (root.depth(),))
if TreeNode("z").depth() != 1:
    fail("depth() of a single node should be 1")
if TreeNode("z").walk() != ["z"]:
    fail("walk() of a single node should be ['z']")

print("ok")
