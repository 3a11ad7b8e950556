#!/usr/bin/env python3
"""The house's rules, checked on the tree and the binaries (TAP):
  - nothing under shared/ includes a header that lives in host/ or guest/ (the engine and the
    libraries below it compile with neither on the include path);
  - host/ and guest/ never include each other's headers;
  - virtwatt-guest carries no host meter (powercap, hwmon), libvirt, VM-source, publisher or
    training code (nm);
  - host/ keeps a handful of files at its root (the daemon's wiring); the rest is in rooms;
  - neither daemon links libcurl, libvirt, libfreeipmi, libyaml, libcrypt or libbpf (nor libelf
    with it), nor the guest libm: they are loaded on first use (shared/core/dynlib.h), so a node
    that needs none never maps them, and libbpf is loaded only by the BPF accountant's
    short-lived loader child;
  - no file of the tree points outside the repository: no workspace path, no project note, no
    relative path climbing above the root (a copied fixture names its public upstream instead).
usage: check_layering.py SOURCE_ROOT GUEST_BINARY HOST_BINARY"""
import pathlib
import re
import subprocess
import sys

root, guest_bin, host_bin = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
n = 0
failed = 0


def tap(ok, what, detail=""):
    global n, failed
    n += 1
    failed += not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if detail and not ok:
        for line in detail.splitlines():
            print("# " + line)


def headers(top):
    return {p.name for p in (root / top).rglob("*.h")}


def includes(top):
    pat = re.compile(r'^#include "([^"]+)"', re.M)
    for p in sorted((root / top).rglob("*.[ch]")):
        for h in pat.findall(p.read_text()):
            yield p.relative_to(root), h


shared_h, host_h, guest_h = headers("shared"), headers("host"), headers("guest")
for top, forbidden in (("shared", (host_h | guest_h) - shared_h),
                       ("host", guest_h - shared_h - host_h),
                       ("guest", host_h - shared_h - guest_h)):
    bad = ["%s includes %s" % (p, h) for p, h in includes(top) if h in forbidden]
    tap(not bad, "%s/ includes no header of %s" % (
        top, {"shared": "host/ or guest/", "host": "guest/", "guest": "host/"}[top]),
        "\n".join(bad))

syms = subprocess.run(["nm", guest_bin], capture_output=True, text=True, check=True).stdout
pat = re.compile(r"\b(vw_src_powercap|powercap_\w+|vw_src_acpi_power_meter|hwmon_\w+|"
                 r"vw_publisher_\w+|vw_vms_\w+|vw_vm_\w+|vw_host_training\w*|"
                 r"vw_qemu_\w+|vir[A-Z]\w+)\b")
found = sorted(set(pat.findall(syms)))
tap(syms.strip() != "" and not found,
    "virtwatt-guest carries no host meter (powercap, hwmon), libvirt, VM-source, publisher or "
    "training code", ", ".join(found[:40]))
at_root = sorted(p.name for p in (root / "host").iterdir() if p.is_file())
tap(len(at_root) <= 8, "host/ holds at most 8 files at its root (%d)" % len(at_root),
    ", ".join(at_root))
for binary in (guest_bin, host_bin):
    dyn = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True,
                         check=True).stdout
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dyn)
    lazy = [lib for lib in needed
            if re.match(r"lib(curl|virt|freeipmi|yaml|crypt|bpf|elf)\b", lib)
            or (binary == guest_bin and re.match(r"libm\.so", lib))]
    tap(needed and not lazy, "%s links no library it loads on first use (NEEDED: %s)"
        % (pathlib.Path(binary).name, ", ".join(needed)), ", ".join(lazy))

# References to anything outside the repository. The patterns are spelt in pieces so that this
# file does not match itself.
OUTSIDE = re.compile("|".join([
    r"/" + r"work/",                                     # the workspace
    r"shared/" + r"(?:notes|fixtures|seeds|hooks)\b",     # its notes and fixtures
    r"\b(?:style|shipping|security|anchors|meters)\." + r"md\b",  # the notes' pages
    r"DEVELOPERS" + r"\.md",
    r"(?i:shared " + r"fixtures|project " + r"notes|workplace" + r"'s)",  # the same, in words
]))
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def tree_files():
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], capture_output=True, check=True).stdout.decode()
        return [root / f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for p in root.iterdir():  # no git: the source tree less build outputs
            if p.name in SKIP_DIRS or p.name.startswith(("build", "dist", ".")):
                continue
            files += [p] if p.is_file() else [q for q in p.rglob("*") if q.is_file()
                                              and not SKIP_DIRS & set(q.parts)]
        return files


bad = []
for p in tree_files():
    try:
        if not p.is_file() or p.stat().st_size > 4 << 20:
            continue
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        continue  # binary data
    rel = p.relative_to(root)
    for i, line in enumerate(text.splitlines(), 1):
        m = OUTSIDE.search(line)
        if m:
            bad.append("%s:%d: %s" % (rel, i, m.group(0)))
    if p.suffix == ".md":
        for m in MD_LINK.finditer(text):
            target = m.group(1).split("#")[0]
            if not target or re.match(r"[a-z]+:", target) or target.startswith("/"):
                continue
            dest = (p.parent / target).resolve()
            if dest != root.resolve() and root.resolve() not in dest.parents:
                bad.append("%s: link %s leaves the repository" % (rel, m.group(1)))
tap(not bad, "no file refers to anything outside the repository (workspace paths, project "
    "notes, links above the root)", "\n".join(bad[:40]))
print("1..%d" % n)
sys.exit(1 if failed else 0)
