#!/usr/bin/env python3
"""Every relative link of the reader's pages resolves (TAP): README.md, docs/*.md,
tests/README.md, bench/README.md and bench/results/*.md. A link's file (or folder) must exist in
the repository, and a `#anchor` into a Markdown page must name one of its headings, spelt as
GitHub spells them (lower case, punctuation dropped, spaces as hyphens, repeats numbered). And
tests/README.md's module table has a row for every .c module of shared/, host/, guest/ and
virtio-channel/, naming no module that is gone.
usage: check_links.py SOURCE_ROOT"""
import fnmatch
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1]).resolve()
pages = [root / "README.md", root / "tests" / "README.md", root / "bench" / "README.md"]
pages += sorted((root / "docs").glob("*.md")) + sorted((root / "bench" / "results").glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose(text):
    """The lines outside fenced code blocks."""
    inside = False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield line


def anchors(path):
    seen, out = {}, set()
    for line in prose(path.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        k = seen.get(slug, 0)
        seen[slug] = k + 1
        out.add(slug if k == 0 else "%s-%d" % (slug, k))
    return out


n = failed = 0
for page in pages:
    if not page.is_file():
        continue
    bad = []
    count = 0
    for line in prose(page.read_text(encoding="utf-8")):
        for m in LINK.finditer(line):
            link = m.group(1)
            if re.match(r"[a-z]+:", link):
                continue  # http:, https:, mailto:
            count += 1
            target, _, anchor = link.partition("#")
            dest = (page.parent / target).resolve() if target else page
            if dest != root and root not in dest.parents:
                bad.append("%s leaves the repository" % link)
            elif not dest.exists():
                bad.append("%s: no such file" % link)
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append("%s: %s has no heading #%s" % (link, dest.relative_to(root), anchor))
    n += 1
    failed += bool(bad)
    print("%s %d - %s: %d relative links resolve" % ("not ok" if bad else "ok", n,
                                                     page.relative_to(root), count))
    for b in bad:
        print("# " + b)


def module_rows():
    """tests/README.md's module table: per source folder, the file names (or globs) its rows
    name in their first cell."""
    text = (root / "tests" / "README.md").read_text(encoding="utf-8")
    table = text.split("## Which tests cover which module", 1)[-1].split("\n## ", 1)[0]
    folder, names = None, {}
    for line in table.splitlines():
        if not line.startswith("| ") or line.startswith("|---"):
            continue
        cell = line.split("|")[1]
        m = re.search(r"\*\*([\w\-./]+)/\*\*", cell)
        if m:
            folder = m.group(1)
        for name in re.findall(r"`([^`]+)`", cell):
            if "/" not in name:
                names.setdefault(folder, []).append(name)
    return names


# Every module of the daemons has a row in tests/README.md, and every row's file exists.
MODULE_ROOTS = ("shared", "host", "guest", "virtio-channel")
names = module_rows()
bad = []
for top in MODULE_ROOTS:
    for path in sorted((root / top).rglob("*.c")):
        folder = str(path.parent.relative_to(root))
        if not any(fnmatch.fnmatch(path.name, g) for g in names.get(folder, [])):
            bad.append("%s has no row in tests/README.md" % path.relative_to(root))
for folder, globs in sorted(names.items()):
    if folder and folder.split("/")[0] in MODULE_ROOTS:
        for g in globs:
            if not any(fnmatch.fnmatch(p.name, g) for p in (root / folder).glob("*.c")):
                bad.append("tests/README.md names %s/%s: no such module" % (folder, g))
n += 1
failed += bool(bad)
print("%s %d - tests/README.md maps every module of %s to its tests" %
      ("not ok" if bad else "ok", n, ", ".join(MODULE_ROOTS)))
for b in bad:
    print("# " + b)

print("1..%d" % n)
sys.exit(1 if failed or n == 0 else 0)
