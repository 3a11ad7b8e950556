#!/usr/bin/env python3
"""TAP: a generated file and its checked-in copy are the same; otherwise the diff and the fix.
usage: check_same.py GENERATED CHECKED_IN WHAT"""
import difflib
import sys

gen, kept, what = sys.argv[1], sys.argv[2], sys.argv[3]
a = open(kept).read().splitlines(keepends=True)
b = open(gen).read().splitlines(keepends=True)
print("1..1")
if a == b:
    print("ok 1 - %s matches what the code generates" % kept)
    sys.exit(0)
print("not ok 1 - %s differs from what the code generates (%s)" % (kept, what))
for line in difflib.unified_diff(a, b, kept, gen):
    print("# " + line.rstrip("\n"))
print("# fix: cp %s %s" % (gen, kept))
sys.exit(1)
