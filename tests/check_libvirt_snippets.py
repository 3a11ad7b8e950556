#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP check of deploy/libvirt/*.xml: each snippet parses, names the channel and folder the host
publisher uses, keeps the share read-only, and (where virt-xml-validate is installed) a domain
holding it validates against libvirt's schema."""
import os
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


def main():
    d = sys.argv[1]
    files = sorted(f for f in os.listdir(d) if f.endswith(".xml"))
    print("1..%d" % len(files))
    failed = 0
    for i, name in enumerate(files, 1):
        try:
            how = check(os.path.join(d, name))
            print("ok %d - %s %s" % (i, name, how))
        except Exception as e:  # noqa: BLE001 - report any failure as TAP
            failed += 1
            print("not ok %d - %s: %s" % (i, name, e))
    return 1 if failed or not files else 0


if __name__ == "__main__":
    sys.exit(main())
