#!/usr/bin/env python3
"""Every metric family is found by `selfcheck` and `metrics_doc` (TAP). Both walk
tests/family_tables.c's vw_all_family_tables[]; a table missing from it, or a family array no
table carries, would escape the checks and docs/metrics.md. From the sources under shared/,
host/ and guest/:
  - every `const struct vw_family_table NAME = {...}` is listed in vw_all_family_tables[], once;
  - every list entry is defined by a source;
  - every `struct vw_metric_family NAME[...] = {...}` (or a single family) is carried by a
    family table's initializer.
usage: check_family_tables.py SOURCE_ROOT"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1])
n = 0
failed = 0

TABLE = re.compile(r"^\s*(?:static\s+)?const\s+struct\s+vw_family_table\s+(\w+)\s*=\s*\{(.*?)\};",
                   re.M | re.S)
FAMILIES = re.compile(r"^\s*(?:static\s+)?(?:const\s+)?struct\s+vw_metric_family\s+(\w+)\s*"
                      r"(\[[^\]]*\])?\s*=", re.M)
LIST = re.compile(r"vw_all_family_tables\[\]\s*=\s*\{(.*?)\};", re.S)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def tap(ok, what, detail=""):
    global n, failed
    n += 1
    failed += not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if detail and not ok:
        for line in detail.splitlines():
            print("# " + line)


def sources():
    for top in ("shared", "host", "guest"):
        for p in sorted((root / top).rglob("*.c")):
            yield p, COMMENT.sub(" ", p.read_text())


tables = {}    # name -> defining file
carried = set()  # identifiers named in some table's initializer
families = {}  # (file, name) of each family definition
for path, text in sources():
    rel = str(path.relative_to(root))
    for name, body in TABLE.findall(text):
        tables.setdefault(name, []).append(rel)
        carried.update((rel, w) for w in re.findall(r"\w+", body))
    for name, _ in FAMILIES.findall(text):
        families[(rel, name)] = True

listed_text = (root / "tests" / "family_tables.c").read_text()
m = LIST.search(COMMENT.sub(" ", listed_text))
tap(m is not None, "tests/family_tables.c defines vw_all_family_tables[]")
listed = re.findall(r"&\s*(\w+)", m.group(1)) if m else []

tap(len(tables) > 0, "family tables found in the sources (%d)" % len(tables))
missing = sorted(t for t in tables if t not in listed)
tap(not missing, "every family table is in vw_all_family_tables[] (tests/family_tables.c)",
    "\n".join("%s (%s): add &%s to vw_all_family_tables[] so that selfcheck and "
              "metrics_doc see it" % (t, ", ".join(tables[t]), t) for t in missing))
dups = sorted({t for t in listed if listed.count(t) > 1})
tap(not dups, "no table is listed twice", "\n".join(dups))
stale = sorted(t for t in listed if t not in tables)
tap(not stale, "every listed table is defined in shared/, host/ or guest/", "\n".join(stale))
loose = sorted("%s: %s" % (f, name) for (f, name) in families if (f, name) not in carried)
tap(not loose, "every metric family array is carried by a family table in its file",
    "\n".join(loose))

print("1..%d" % n)
sys.exit(1 if failed else 0)
