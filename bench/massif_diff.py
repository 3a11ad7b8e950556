#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The heap two massif snapshots hold, by function (bench/vms.sh MASSIF=DIR).

  bench/massif_diff.py DIR/base.snap DIR/libvirt.snap [ROWS]

For each function on the allocating stacks of the last detailed snapshot in each file: the bytes
allocated below it (each stack counted once per function), B - A, A and B, largest growth first.
"""
import collections
import re
import sys


def parse(path):
    lines = open(path).read().split('\n')
    start = [k for k, l in enumerate(lines) if l.startswith('heap_tree=')][-1]
    tot = collections.Counter()
    stack = []
    for line in lines[start + 1:]:
        m = re.match(r'^( *)n(\d+): (\d+) (.*)$', line)
        if not m:
            continue
        depth, size = len(m.group(1)), int(m.group(3))
        name = re.sub(r'^0x[0-9A-F]+: ', '', m.group(4))
        name = re.sub(r' \(.*', '', name)
        stack = stack[:depth] + [name]
        if name not in stack[:-1]:
            tot[name] += size
    return tot


def main():
    a, b = parse(sys.argv[1]), parse(sys.argv[2])
    rows = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    print(f"{'B-A':>9} {'A':>9} {'B':>9} function")
    for k in sorted(set(a) | set(b), key=lambda k: -(b[k] - a[k]))[:rows]:
        print(f"{b[k] - a[k]:>9} {a[k]:>9} {b[k]:>9} {k[:110]}")


if __name__ == '__main__':
    main()
