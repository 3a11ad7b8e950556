#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP check of deploy/libvirt/*.xml: each snippet parses, names the channel and folder the host
publisher uses, keeps the share read-only, and (where virt-xml-validate is installed) a domain
holding it validates against libvirt's schema. Then every document, snippet, unit and default
that mounts the host's folder in a guest mounts it where virtwatt-guest looks by default
(--passthrough.folder in guest/options.c), so a tenant following any of them gets measured
power."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

UUID = "5a0c9e0e-7f3b-4c61-9d1e-2b7a4f6c8d90"
DOMAIN = """<domain type='kvm'><name>vw</name><uuid>{uuid}</uuid><memory unit='MiB'>256</memory>
<memoryBacking><source type='memfd'/><access mode='shared'/></memoryBacking>
<os><type arch='x86_64' machine='q35'>hvm</type></os><devices>{dev}</devices></domain>"""


def check(path):
    text = open(path, encoding="utf-8").read().replace("UUID", UUID)
    root = ET.fromstring(text)
    if root.tag == "channel":
        assert root.get("type") == "unix"
        src, tgt = root.find("source"), root.find("target")
        assert src.get("mode") == "bind" and src.get("path").endswith(UUID + ".sock")
        assert tgt.get("type") == "virtio" and tgt.get("name") == "org.virtwatt.power.0"
    elif root.tag == "filesystem":
        assert root.get("type") == "mount"
        assert root.find("source").get("dir").endswith("/" + UUID), "one folder per VM"
        assert root.find("target").get("dir") == "virtwatt"
        assert root.find("readonly") is not None, "read-only to the guest"
        drv = root.find("driver")
        if drv is not None and drv.get("type") == "virtiofs":
            assert root.get("accessmode") == "passthrough"
    else:
        raise AssertionError("unexpected element " + root.tag)
    validator = shutil.which("virt-xml-validate")
    if validator:
        with tempfile.NamedTemporaryFile("w", suffix=".xml", delete=False) as f:
            f.write(DOMAIN.format(uuid=UUID, dev=text))
        try:
            r = subprocess.run([validator, f.name, "domain"], capture_output=True, text=True)
            assert r.returncode == 0, r.stdout + r.stderr
        finally:
            os.unlink(f.name)
    return "schema-validated" if validator else "parsed (no virt-xml-validate)"


def guest_default_folder(root):
    """The default of virtwatt-guest's --passthrough.folder, from its option table."""
    text = open(os.path.join(root, "guest", "options.c"), encoding="utf-8").read()
    m = re.search(r'\{\s*"passthrough\.folder",\s*"passthrough\.folder",\s*VW_OPT_STRING,'
                  r'\s*OFF\(passthrough_folder\),\s*"([^"]+)"', text)
    assert m, "guest/options.c: no passthrough.folder default"
    return m.group(1)


# A guest-side mount of the share: `mount ... virtwatt PATH`, an fstab line `virtwatt PATH 9p`,
# a `mkdir -p PATH` before one, a bind mount from it, a mountPath/path in the guest's manifests.
MOUNT_RES = [
    re.compile(r"mount\s+-t\s+(?:9p|virtiofs)\b[^\n]*?\svirtwatt\s+(/\S+)"),
    re.compile(r"^\s*#?\s*virtwatt\s+(/\S+)\s+(?:9p|virtiofs)\b", re.M),
    re.compile(r"[\"']virtwatt\s+(/\S+)\s+(?:9p|virtiofs)\b"),
    re.compile(r"mount\s+--bind\s+(/\S+)\s"),
    re.compile(r"--passthrough\.(?:path|folder)=(/\S+)"),
]
MOUNT_DOCS = ["README.md", "docs", "deploy/libvirt", "deploy/systemd", "deploy/k8s/guest",
              "deploy/config/virtwatt-guest.yaml", "virtio-channel/PROTOCOL.md", "tests/e2e"]


def doc_files(root):
    for rel in MOUNT_DOCS:
        path = os.path.join(root, rel)
        if os.path.isfile(path):
            yield rel
        elif os.path.isdir(path):
            for dirpath, _, names in os.walk(path):
                for n in sorted(names):
                    if n.endswith((".md", ".xml", ".service", ".yaml", ".yml", ".sh")):
                        yield os.path.relpath(os.path.join(dirpath, n), root)


def check_mount_paths(root, rel, want):
    text = open(os.path.join(root, rel), encoding="utf-8").read()
    seen = 0
    for rx in MOUNT_RES:
        for m in rx.finditer(text):
            path = m.group(1).rstrip("`'\",;)")
            if path.startswith("/run/virtwatt") and "lock" not in path and "share" not in path:
                seen += 1
                line = text.count("\n", 0, m.start()) + 1
                assert path == want, "%s:%d mounts the share at %s, the guest looks in %s" % (
                    rel, line, path, want)
    # The old path only where a line says the guest still looks there for older setups.
    old = "/run/virtwatt-host"
    for n, line in enumerate(text.splitlines(), 1):
        if old in line and "older" not in line:
            raise AssertionError("%s:%d names %s; the guest's folder is %s" % (rel, n, old, want))
    return seen


def unit_runtime_dirs(root):
    """The host unit's RuntimeDirectory paths, and the user, group and mode systemd gives them."""
    text = open(os.path.join(root, "deploy", "systemd", "virtwatt-host.service"),
                encoding="utf-8").read()
    keys = dict(re.findall(r"^(User|Group|RuntimeDirectoryMode)=(\S+)", text, re.M))
    dirs = [d for m in re.findall(r"^RuntimeDirectory=(.*)$", text, re.M) for d in m.split()]
    return (["/run/" + d for d in dirs], keys.get("User"), keys.get("Group"),
            int(keys.get("RuntimeDirectoryMode", "0755"), 8))


def check_tmpfiles(root):
    """The README's tmpfiles lines survive the host unit's start: systemd gives each
    RuntimeDirectory the unit's user and mode at every start, and everything below it too when
    its owner differs, so a folder of another owner below one (QEMU's channels/) would be taken."""
    text = open(os.path.join(root, "deploy", "libvirt", "README.md"), encoding="utf-8").read()
    lines = re.findall(r"^d\s+(/run/\S+)\s+([0-7]+)\s+(\S+)\s+(\S+)", text, re.M)
    assert lines, "deploy/libvirt/README.md: no tmpfiles lines found"
    dirs, user, group, mode = unit_runtime_dirs(root)
    for path, m, u, g in lines:
        if path in dirs:
            assert (u, g, int(m, 8)) == (user, group, mode), (
                "tmpfiles %s %s %s:%s, but the unit's RuntimeDirectory makes it %04o %s:%s at "
                "every start" % (path, m, u, g, mode, user, group))
        for d in dirs:
            assert not path.startswith(d + "/"), (
                "tmpfiles %s (%s:%s) lies below the unit's RuntimeDirectory %s, which systemd "
                "chowns to %s:%s, the whole tree, at start" % (path, u, g, d, user, group))
    return len(lines)


def main():
    d = sys.argv[1]
    root = os.path.dirname(os.path.dirname(os.path.abspath(d)))
    files = sorted(f for f in os.listdir(d) if f.endswith(".xml"))
    docs = sorted(set(doc_files(root)))
    print("1..%d" % (len(files) + len(docs) + 2))
    failed = 0
    for i, name in enumerate(files, 1):
        try:
            how = check(os.path.join(d, name))
            print("ok %d - %s %s" % (i, name, how))
        except Exception as e:  # noqa: BLE001 - report any failure as TAP
            failed += 1
            print("not ok %d - %s: %s" % (i, name, e))
    want = guest_default_folder(root)
    total = 0
    for i, rel in enumerate(docs, len(files) + 1):
        try:
            n = check_mount_paths(root, rel, want)
            total += n
            print("ok %d - %s: %d guest mount(s), all at %s" % (i, rel, n, want))
        except Exception as e:  # noqa: BLE001
            failed += 1
            print("not ok %d - %s" % (i, e))
    # Not vacuous: the libvirt README and both share snippets mount it.
    i = len(files) + len(docs) + 1
    if total >= 3:
        print("ok %d - %d guest mounts checked" % (i, total))
    else:
        failed += 1
        print("not ok %d - only %d guest mounts found: the patterns no longer match" % (i, total))
    i += 1
    try:
        n = check_tmpfiles(root)
        print("ok %d - deploy/libvirt/README.md: %d tmpfiles lines agree with the host unit" % (i, n))
    except Exception as e:  # noqa: BLE001
        failed += 1
        print("not ok %d - %s" % (i, e))
    return 1 if failed or not files else 0


if __name__ == "__main__":
    sys.exit(main())
