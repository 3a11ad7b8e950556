#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Instructions per interval from a callgrind dump (bench/*.sh with CALLGRIND=DIR).

  callgrind_ir.py FILE [--per FUNCTION] [--top N]

Prints "ir N", "intervals K" (calls of FUNCTION, default vw_host_publish / vw_guest_publish,
whichever the dump has), "ir_per_interval N" and, with --top, the N functions with the most
inclusive instructions per interval. Callgrind counts instructions the daemon executed,
whatever else runs on the machine: the figure repeats under load, where CPU time does not.
"""
import argparse
import collections
import re
import sys


def parse(path):
    names = {}
    total = 0
    calls = collections.Counter()
    incl = collections.Counter()
    self_ir = collections.Counter()
    fn = None
    cfn = None
    pending_call = False
    ref = re.compile(r"^\((\d+)\)(?: (.*))?$")

    def name_of(v):
        m = ref.match(v)
        if not m:
            return v
        if m.group(2) is not None:
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), v)

    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                fn = name_of(line[3:])
                pending_call = False
            elif line.startswith("cfn="):
                cfn = name_of(line[4:])
            elif line.startswith("calls="):
                calls[cfn] += int(line[6:].split()[0])
                pending_call = True
            elif line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
            elif line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
                if pending_call:
                    incl[cfn] += ir
                    pending_call = False
                elif fn is not None:
                    self_ir[fn] += ir
    return total, calls, incl, self_ir


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--per")
    ap.add_argument("--top", type=int, default=0)
    a = ap.parse_args()
    total, calls, incl, self_ir = parse(a.file)
    # Callgrind names a function entered again while it runs (a cycle) FUNCTION'2, '3...: the
    # calls of each name count.
    base = collections.Counter()
    for f, c in calls.items():
        base[re.sub(r"'[0-9]+$", "", f)] += c
    per = a.per
    if not per:
        per = next((f for f in ("vw_host_publish", "vw_guest_publish") if base[f]), None)
    n = base[per] if per else 0
    print("ir", total)
    print("intervals", n)
    print("ir_per_interval", total // n if n else "-")
    if a.top and n:
        print("# inclusive Ir per interval (self)")
        for f, v in incl.most_common(a.top):
            print("%12d %12d  %s" % (v // n, self_ir[f] // n, f))


if __name__ == "__main__":
    sys.exit(main())
