#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""TAP check of deploy/libvirt/qemu.d/virtwatt, the libvirt QEMU hook that creates a VM's shared
folder before QEMU opens it (QEMU refuses to start a VM whose 9p or virtiofs source is missing).
Run as libvirt runs it (DOMAIN OPERATION SUB-OPERATION EXTRA, the domain XML on stdin, as
`virsh dumpxml` formats it) on a scratch share root: it creates <root>/<uuid> on "prepare" only,
0755 and owned like the root; never anything else, never through a link; always exits 0. The
real libvirtd runs it in tests/e2e (the e2e VM's folder is made by it, not by the test)."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile

HOOK = sys.argv[1]
UUID = "7d3e8a51-2c4b-4f6e-9a1d-3b5c7e9f0a2b"
OWNER = 65534  # nobody: the hook must copy the share root's owner, not keep root's

XML = """<domain type='kvm' id='3'>
  <name>vw-hook</name>
  <uuid>{uuid}</uuid>
  <memory unit='KiB'>524288</memory>
  <os>
    <type arch='x86_64' machine='pc-q35-7.2'>hvm</type>
  </os>
  <devices>
    <emulator>/usr/bin/qemu-system-x86_64</emulator>
{fs}
    <channel type='unix'>
      <source mode='bind' path='/run/virtwatt/channels/{uuid}.sock'/>
      <target type='virtio' name='org.virtwatt.power.0'/>
    </channel>
  </devices>
  <sysinfo type='smbios'>
    <system>
      <entry name='uuid'>{uuid}</entry>
    </system>
  </sysinfo>
</domain>
"""
FS = """    <filesystem type='mount' accessmode='mapped'>
      <driver type='path' wrpolicy='immediate'/>
      <source dir='{dir}'/>
      <target dir='{target}'/>
      <readonly/>
      <address type='pci' domain='0x0000' bus='0x01' slot='0x00' function='0x0'/>
    </filesystem>"""

n = 0
failed = 0


def tap(ok, what, detail=""):
    global n, failed
    n += 1
    failed += not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if not ok and detail:
        for line in str(detail).splitlines():
            print("# " + line)


def run(xml, op="prepare", name="vw-hook"):
    p = subprocess.run([HOOK, name, op, "begin", "-"], input=xml, capture_output=True,
                       text=True, timeout=20, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    return p.returncode, p.stderr.strip()


def domain(root, uuid=UUID, target="virtwatt", folder=None, quote="'", extra=""):
    d = folder if folder is not None else os.path.join(root, uuid.lower())
    fs = extra + FS.format(dir=d, target=target)
    return XML.format(uuid=uuid, fs=fs).replace("'", quote)


def main():
    tmp = tempfile.mkdtemp(prefix="vw-hook-")
    try:
        root = os.path.join(tmp, "share")
        os.mkdir(root, 0o755)
        os.chown(root, OWNER, OWNER)
        folder = os.path.join(root, UUID)

        rc, err = run(domain(root), op="start")
        tap(rc == 0 and not os.path.lexists(folder), "not on 'start' (QEMU has opened it by then)")

        rc, err = run(domain(root))
        st = os.lstat(folder) if os.path.lexists(folder) else None
        tap(rc == 0 and st is not None and stat.S_ISDIR(st.st_mode) and
            stat.S_IMODE(st.st_mode) == 0o755 and (st.st_uid, st.st_gid) == (OWNER, OWNER)
            and err == "",
            "prepare: <root>/<uuid> created, 0755, owned like the root, silently",
            "rc %d, %r, stderr %r" % (rc, st, err))

        open(os.path.join(folder, "frame.json"), "w").write("{}\n")
        os.utime(folder, (1000000000, 1000000000))
        rc, err = run(domain(root))
        mtime = os.lstat(folder).st_mtime
        tap(rc == 0 and os.path.exists(os.path.join(folder, "frame.json")) and err == "" and
            mtime > 1000000000,
            "prepare again: the folder and what virtwatt-host wrote in it kept, its time moved "
            "on (virtwatt-host keeps a folder touched since it left it)",
            "rc %d, stderr %r, mtime %s" % (rc, err, mtime))
        shutil.rmtree(folder)

        other = os.path.join(tmp, "outside")
        os.mkdir(other, 0o700)
        os.symlink(other, folder)
        rc, err = run(domain(root))
        st = os.stat(other)
        tap(rc == 0 and not os.path.islink(folder) and os.path.isdir(folder) and
            (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o700) and "link" in err,
            "a link in the folder's place (QEMU would export its target): removed, never "
            "followed, a directory made, said",
            "rc %d, stderr %r, target uid %d mode %o" % (rc, err, st.st_uid, st.st_mode))
        os.rmdir(folder)
        open(folder, "w").write("x")
        rc, err = run(domain(root))
        tap(rc == 0 and os.path.isdir(folder) and not os.path.islink(folder),
            "a file in the folder's place: replaced by the directory", "stderr %r" % err)
        os.rmdir(folder)

        bad = os.path.join(root, "not-the-uuid")
        rc, err = run(domain(root, folder=bad))
        tap(rc == 0 and not os.path.lexists(bad) and "not <share root>/" + UUID in err,
            "a folder not named by the VM's UUID: not created, said", "stderr %r" % err)

        gone = os.path.join(tmp, "no-root", UUID)
        rc, err = run(domain(root, folder=gone))
        tap(rc == 0 and not os.path.lexists(gone) and "share root" in err,
            "the share root missing: nothing created, the start not stopped, said",
            "rc %d, stderr %r" % (rc, err))

        rc, err = run(domain(root, target="data"))
        tap(rc == 0 and not os.path.lexists(folder) and err == "",
            "a VM without the virtwatt folder: nothing done, nothing said",
            "rc %d, stderr %r" % (rc, err))

        other_fs = FS.format(dir=os.path.join(tmp, "data"), target="data") + "\n"
        rc, err = run(domain(root, quote='"', extra=other_fs))
        tap(rc == 0 and os.path.isdir(folder) and not os.path.lexists(os.path.join(tmp, "data")),
            "double-quoted XML, another filesystem first: only the virtwatt folder made",
            "rc %d, stderr %r" % (rc, err))
        os.rmdir(folder)

        rc, err = run(domain(root, uuid=UUID.upper()))
        tap(rc == 0 and os.path.isdir(folder), "an upper-case UUID: its canonical folder made",
            "rc %d, stderr %r" % (rc, err))
        os.rmdir(folder)

        rc, err = run(XML.format(uuid="../../etc", fs=FS.format(dir=os.path.join(root, "..", "..", "etc"), target="virtwatt")))
        tap(rc == 0 and "no canonical UUID" in err, "a UUID that is not one: nothing made, said",
            "rc %d, stderr %r" % (rc, err))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
