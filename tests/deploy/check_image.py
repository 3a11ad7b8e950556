#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The OCI image as users run it, in the real Podman (TAP). Root only.

1. `deploy/package.sh deb` and `image` into BUILD_ROOT/deploy-image/dist (or $VW_IMAGE: an
   archive made already); `podman load` takes it; its labels, its size (at most 80 MB), and what
   it must not hold (compilers, apt lists and caches, man pages, documentation but copyright).
2. The host DaemonSet as `helm template` renders the chart (default values, the same pod as
   deploy/k8s): its init container run first, writing the seccomp profile into a scratch
   kubelet seccomp directory; then virtwatt-host with exactly the container's command, args,
   env, capabilities, user, no-new-privileges, read-only root, Localhost seccomp profile, memory
   and CPU limits and volumes (host paths read-only as the manifest says; the writable host
   paths the node creates (DirectoryOrCreate: publish locks, kubelet seccomp directory, the guest's
   share and state) in a scratch directory), in a network namespace of its own as a pod
   has (no API server: pod metadata is absent, logged). Nothing of this is copied by hand: it is
   read from the rendered manifest.
   Asserted: /metrics answers, CPU is accounted with bpf (no fallback series), and a busy Podman
   container started beside it owns its energy: kepler_container_cpu_joules_total with its
   container ID and runtime podman grows, more than an idle container's and than any other's.
3. The same with Podman's default seccomp profile (containers/common's): procfs accounting,
   virtwatt_cpu_accounting_fallback{reason="seccomp"} 1, and the warning naming seccomp.
4. virtwatt-guest from the image with exactly the guest DaemonSet's settings (the chart with
   guest.enabled), its shared folder fed frames as a host publishes them: the energy comes from
   the passthrough, CPU is accounted with bpf.
usage: check_image.py SOURCE_ROOT BUILD_ROOT
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from exposition import Exposition  # noqa: E402  (tests/exposition.py)

src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
BUSYBOX = "localhost/vw-names-test:busybox"  # as tests/test_ctrmeta_podman.c makes it
MAX_BYTES = 80 * 1000 * 1000
n, failed = 0, False
started = []


def check(ok, what, why=""):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if ok else "not ok", n, what))
    if not ok:
        for line in str(why).splitlines()[-40:]:
            print("# " + line)
    sys.stdout.flush()
    failed |= not ok
    return ok


def note(msg):
    print("# " + msg)
    sys.stdout.flush()


def skip(why):
    if os.environ.get("CI") == "true":
        print("not ok 1 - image test runs # %s\n1..1" % why)
        sys.exit(1)
    print("1..0 # SKIP " + why)
    sys.exit(0)


def run(cmd, check_rc=False, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check_rc and p.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(map(shlex.quote, cmd)), (p.stdout + p.stderr)[-3000:]))
    return p


def finish():
    for c in started:
        p = run(PODMAN + ["rm", "-f", "-t", "0", c])
        if p.returncode != 0:
            note("podman rm %s: %s" % (c, p.stderr.strip()))
    run(PODMAN + ["rmi", "-f", "localhost/virtwatt:%s" % version])
    shutil.rmtree(tmp, ignore_errors=True)
    print("1..%d" % n)
    sys.exit(1 if failed else 0)


if os.geteuid() != 0:
    skip("needs root (Podman's root storage, BPF)")
for t in ("podman", "runc", "mmdebstrap", "umoci", "skopeo", "nsenter", "curl"):
    if not shutil.which(t):
        skip("%s not installed (deploy/install-deps.sh --test)" % t)
if not os.access("/bin/busybox", os.X_OK):
    skip("/bin/busybox missing (busybox-static)")

work = os.path.join(build, "deploy-image")
os.makedirs(work, exist_ok=True)
tmp = tempfile.mkdtemp(prefix="run.", dir=work)
conf = os.path.join(tmp, "containers.conf")
with open(conf, "w") as f:  # within this sandbox's hard limits (runc: "error setting rlimits")
    f.write('[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]\n')
os.environ["CONTAINERS_CONF"] = conf
with open(os.path.join(src, "meson.build")) as f:
    version = re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)

# ---- 1. build, load, inspect ----
archive = os.environ.get("VW_IMAGE")
if not archive:
    dist = os.path.join(work, "dist")
    env = dict(os.environ, VW_DIST=dist, VW_DEB_WORK=os.path.join(work, "deb"))
    t0 = time.time()
    for kind in ("deb", "image"):
        p = run([os.path.join(src, "deploy/package.sh"), kind], env=env)
        if not check(p.returncode == 0, "deploy/package.sh %s" % kind, p.stdout + p.stderr):
            finish()
    note("packages and image built in %.0f s" % (time.time() - t0))
    archive = os.path.join(dist, "virtwatt-%s.oci.tar" % version)
check(os.path.exists(archive), "the OCI archive exists: " + archive)
image = "localhost/virtwatt:%s" % version
run(PODMAN + ["rmi", "-f", image])
p = run(PODMAN + ["load", "-i", archive])
check(p.returncode == 0 and image in p.stdout + p.stderr, "podman load names it " + image,
      p.stdout + p.stderr)
p = run(PODMAN + ["image", "inspect", image])
if not check(p.returncode == 0, "podman image inspect", p.stderr):
    finish()
info = json.loads(p.stdout)[0]
labels = info.get("Labels") or info.get("Config", {}).get("Labels") or {}
for k in ("title", "version", "revision", "source", "licenses", "created"):
    v = labels.get("org.opencontainers.image." + k, "")
    check(bool(v) and v != "unknown", "label org.opencontainers.image.%s = %s" % (k, v))
check(labels.get("org.opencontainers.image.version") == version, "the version label is " + version)
size = info["Size"]
note("image size %.1f MB (%d bytes), archive %.1f MB" % (size / 1e6, size, os.path.getsize(archive) / 1e6))
check(size <= MAX_BYTES, "the image is at most 80 MB (%.1f MB)" % (size / 1e6))
probe = r'''
for f in /usr/bin/gcc /usr/bin/cc /usr/bin/clang /usr/bin/apt-get /usr/bin/apt; do
  [ -e "$f" ] && echo "present: $f"; done
for d in /var/lib/apt /var/cache/apt /var/cache/debconf /usr/share/man /usr/share/locale; do
  find $d -type f -size +0 2>/dev/null | grep -v -- '-dat$\|/config.dat$\|/templates.dat$' | head -2 | sed 's/^/cached: /'; done
find /usr/share/doc -type f ! -name copyright | head -3 | sed 's/^/doc: /'
for f in /usr/sbin/virtwatt-host /usr/sbin/virtwatt-guest /usr/bin/virtwatt-model \
  /usr/share/virtwatt/seccomp/virtwatt-host.json /etc/virtwatt/virtwatt-host.yaml; do
  [ -e "$f" ] || echo "missing: $f"; done
virtwatt-host --version >/dev/null || echo "virtwatt-host --version fails"
virtwatt-guest --version >/dev/null || echo "virtwatt-guest --version fails"
virtwatt-model --help >/dev/null || echo "virtwatt-model --help fails"
dpkg-query -W -f='${Package}\n' | grep -E '^(gcc(-[0-9]+)?|cpp(-[0-9]+)?|clang.*|apt|libvirt0|libfreeipmi17)$' | sed 's/^/package: /'
true
'''
p = run(PODMAN + ["run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", image, "-c", probe])
check(p.returncode == 0 and not p.stdout.strip(),
      "the image holds the three programs and the profile, and no compiler, apt, caches, man "
      "pages, documentation (but copyright), libvirt or freeipmi", p.stdout + p.stderr)

# ---- 2. the DaemonSet, rendered ----
p = run([os.path.join(src, "deploy/tools/fetch-helm.sh")])
if not check(p.returncode == 0, "helm fetched (deploy/tools/fetch-helm.sh)", p.stderr):
    finish()
helm = os.path.join(p.stdout.strip().splitlines()[-1], "helm")
p = run([helm, "template", "virtwatt", os.path.join(src, "deploy/helm/virtwatt"), "-n", "virtwatt"])
check(p.returncode == 0, "helm template", p.stderr)
ds = [d for d in yaml.safe_load_all(p.stdout) if d and d["kind"] == "DaemonSet"
      and d["metadata"]["labels"].get("app.kubernetes.io/component") == "host"][0]
pod = ds["spec"]["template"]["spec"]
kubelet = os.path.join(tmp, "kubelet")  # the node's kubelet root, for the writable host paths
node_name = "image-test"


def quantity_bytes(q):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)?", str(q))
    return int(m.group(1)) * {None: 1, "Ki": 1024, "Mi": 1 << 20, "Gi": 1 << 30}[m.group(2)]


def podman_args(c, seccomp_profile_dir, default_seccomp=False):
    """podman run arguments for container c of the pod, read from the manifest."""
    a = ["--network", "none", "--read-only-tmpfs=false", "--pull", "never"]
    sc = c.get("securityContext", {})
    caps = sc.get("capabilities", {})
    for cap in caps.get("drop", []):
        a += ["--cap-drop", cap]
    for cap in caps.get("add", []):
        a += ["--cap-add", cap]
    if sc.get("privileged"):
        raise RuntimeError("privileged")
    if sc.get("readOnlyRootFilesystem"):
        a.append("--read-only")
    if sc.get("allowPrivilegeEscalation") is False:
        a += ["--security-opt", "no-new-privileges"]
    if "runAsUser" in sc:
        a += ["--user", str(sc["runAsUser"])]
    sp = sc.get("seccompProfile") or pod.get("securityContext", {}).get("seccompProfile") or {}
    if sp.get("type") == "Localhost" and not default_seccomp:
        a += ["--security-opt", "seccomp=" + os.path.join(seccomp_profile_dir, sp["localhostProfile"])]
    elif sp.get("type") not in ("RuntimeDefault", "Localhost"):
        raise RuntimeError("seccomp %s" % sp)
    lim = c.get("resources", {}).get("limits", {})
    if "memory" in lim:
        a += ["--memory", str(quantity_bytes(lim["memory"]))]
    if "cpu" in lim:
        cpu = str(lim["cpu"])
        a += ["--cpus", str(int(cpu[:-1]) / 1000 if cpu.endswith("m") else float(cpu))]
    for e in c.get("env", []):
        if e.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName":
            a += ["--env", "%s=%s" % (e["name"], node_name)]
        elif "value" in e:
            a += ["--env", "%s=%s" % (e["name"], e["value"])]
        else:
            raise RuntimeError("env %s" % e)
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    for m in c.get("volumeMounts", []):
        v = vols[m["name"]]
        if "hostPath" in v:
            path = v["hostPath"]["path"]
            if v["hostPath"].get("type") != "Directory":  # the node's own state: a scratch node
                path = kubelet + path
                os.makedirs(path, exist_ok=True)
            opts = ["ro" if m.get("readOnly") else "rw"]
            prop = {"HostToContainer": "rslave", "Bidirectional": "rshared"}.get(m.get("mountPropagation"))
            if prop:
                opts.append(prop)
            a += ["--volume", "%s:%s:%s" % (path, m["mountPath"], ",".join(opts))]
        elif "emptyDir" in v:
            size = v["emptyDir"].get("sizeLimit")
            a += ["--mount", "type=tmpfs,destination=%s%s" % (
                m["mountPath"], ",tmpfs-size=%d" % quantity_bytes(size) if size else "")]
        else:
            raise RuntimeError("volume %s" % v)
    cmd = c.get("command", [])
    if cmd:
        a += ["--entrypoint", json.dumps(cmd[:1])]
    return a, cmd[1:] + c.get("args", [])


# The init containers first, as the kubelet runs them; their host paths in the scratch node.
for ic in pod.get("initContainers", []):
    args, cargs = podman_args(ic, None)
    p = run(PODMAN + ["run", "--rm", "--name", "vw-image-init-%d" % os.getpid()] + args + [image] + cargs)
    check(p.returncode == 0, "init container %s runs" % ic["name"], p.stdout + p.stderr)
# The kubelet's seccomp directory: the parent of the host path the installer writes.
vols = {v["name"]: v for v in pod["volumes"]}
ic_paths = [vols[m["name"]]["hostPath"]["path"] for ic in pod.get("initContainers", [])
            for m in ic.get("volumeMounts", []) if "hostPath" in vols[m["name"]]]
check(len(ic_paths) == 1, "one host path written by the init containers", ic_paths)
profile_root = kubelet + os.path.dirname(ic_paths[0]) if ic_paths else tmp
with open(os.path.join(src, "deploy/seccomp/virtwatt-host.json")) as f:
    want_profile = json.load(f)
installed = os.path.join(profile_root, "virtwatt/virtwatt-host.json")
check(os.path.exists(installed) and json.load(open(installed)) == want_profile,
      "the init container installed deploy/seccomp/virtwatt-host.json in the kubelet's seccomp directory")

ctr = [c for c in pod["containers"] if c["name"] == "virtwatt-host"][0]


def start_busybox(name, script):
    p = run(PODMAN + ["image", "exists", BUSYBOX])
    if p.returncode != 0:
        root = os.path.join(tmp, "busybox")
        os.makedirs(root + "/bin")
        shutil.copy("/bin/busybox", root + "/bin/busybox")
        os.symlink("busybox", root + "/bin/sh")
        tar = subprocess.Popen(["tar", "-C", root, "-c", "."], stdout=subprocess.PIPE)
        run(PODMAN + ["import", "-", BUSYBOX], check_rc=True, stdin=tar.stdout)
        tar.wait()
    p = run(PODMAN + ["run", "-d", "--rm", "--timeout", "300", "--name", name, "--network", "none",
                      BUSYBOX, "sh", "-c", script], check_rc=True)
    started.append(name)
    return p.stdout.strip().splitlines()[-1]


def scrape(pid):
    port = ctr["ports"][0]["containerPort"]
    p = run(["nsenter", "-t", str(pid), "-n", "curl", "-s", "-m", "5",
             "http://127.0.0.1:%d/metrics" % port])
    return p.stdout if p.returncode == 0 else None


def series(text, family):
    """{frozenset(labels): value} of family's samples (tests/exposition.py)."""
    return Exposition(text).series(family)


def container_joules(text):
    """container_id -> joules, summed over zones (active energy)."""
    out = {}
    for labels, v in series(text, "kepler_container_cpu_joules_total").items():
        d = dict(labels)
        if d.get("state") != "running":
            continue
        key = (d.get("container_id"), d.get("runtime"))
        out[key] = out.get(key, 0) + v
    return out


def start_daemon(name, default_seccomp):
    args, cargs = podman_args(ctr, profile_root, default_seccomp)
    p = run(PODMAN + ["run", "-d", "--name", name] + args + [image] + cargs)
    if not check(p.returncode == 0, "virtwatt-host starts with the DaemonSet's settings%s" %
                 (" under Podman's default seccomp" if default_seccomp else ""),
                 " ".join(map(shlex.quote, args + cargs)) + "\n" + p.stdout + p.stderr):
        return None
    started.append(name)
    note("podman run " + " ".join(map(shlex.quote, args + [image] + cargs)))
    pid = run(PODMAN + ["inspect", "-f", "{{.State.Pid}}", name]).stdout.strip()
    for _ in range(60):
        body = scrape(pid)
        if body and "virtwatt_cpu_accounting_info" in body:
            return pid
        time.sleep(0.5)
    check(False, "/metrics answers", run(PODMAN + ["logs", name]).stderr)
    return None


busy = start_busybox("vw-image-busy-%d" % os.getpid(), "while :; do :; done")
idle = start_busybox("vw-image-idle-%d" % os.getpid(), "while :; do sleep 1; done")
note("busy container %.12s, idle %.12s" % (busy, idle))

dname = "vw-image-host-%d" % os.getpid()
pid = start_daemon(dname, False)
if pid:
    check(True, "/metrics answers in the pod's network namespace")
    # Two snapshots (the interval is the default, 5 s) with the busy container seen in both.
    first = last = None
    deadline = time.time() + 60
    while time.time() < deadline:
        body = scrape(pid)
        j = container_joules(body)
        if (busy, "podman") in j:
            if first is None:
                first = (j, body)
            elif j[(busy, "podman")] > first[0][(busy, "podman")]:
                last = (j, body)
                if time.time() > deadline - 45:  # at least two intervals after the first
                    break
        time.sleep(1)
    body = (last or first or ({}, scrape(pid)))[1]
    check('virtwatt_cpu_accounting_info{method="bpf"' in body,
          "CPU accounted with bpf under the Localhost profile",
          "\n".join(l for l in body.splitlines() if "accounting" in l) + "\n" +
          run(PODMAN + ["logs", dname]).stderr[-3000:])
    check("virtwatt_cpu_accounting_fallback{" not in body, "no fallback series")
    if check(first is not None and last is not None,
             "kepler_container_cpu_joules_total{container_id=<busy>,runtime=\"podman\"} grows",
             "\n".join(l for l in body.splitlines() if l.startswith("kepler_container_cpu_joules"))):
        d = {k: last[0].get(k, 0) - first[0].get(k, 0) for k in last[0]}
        grow = d[(busy, "podman")]
        others = sorted(((v, k) for k, v in d.items() if k != (busy, "podman")), reverse=True)
        note("busy +%.3f J; others: %s" % (grow, ", ".join("%.12s/%s +%.3f" % (k[0], k[1], v)
                                                          for v, k in others[:4])))
        check(grow > 0 and all(v < grow for v, _ in others),
              "the busy container's energy grows more than any other container's")
        check(d.get((idle, "podman"), 0) < grow / 4, "the idle container owns far less")
    logs = run(PODMAN + ["logs", dname]).stderr
    check("reason=" not in logs, "no fallback warning under the Localhost profile", logs[-2000:])
    run(PODMAN + ["rm", "-f", "-t", "0", dname])

# ---- 3. Podman's default seccomp: the fallback, said and exported ----
dname = "vw-image-host-default-%d" % os.getpid()
pid = start_daemon(dname, True)
if pid:
    body = scrape(pid)
    check('virtwatt_cpu_accounting_info{method="procfs"' in body,
          "under Podman's default seccomp CPU time comes from procfs")
    check(re.search(r'virtwatt_cpu_accounting_fallback\{reason="seccomp",node_name="%s"\} 1' %
                    node_name, body) is not None,
          'virtwatt_cpu_accounting_fallback{reason="seccomp"} 1',
          "\n".join(l for l in body.splitlines() if "accounting" in l))
    logs = run(PODMAN + ["logs", dname]).stderr
    warn = [l for l in logs.splitlines() if "level=warn" in l and "reason=seccomp" in l]
    check(len(warn) == 1 and "Localhost" in warn[0], "one warning naming seccomp and the fix", logs[-3000:])
    if warn:
        note(warn[0])

# ---- 4. virtwatt-guest with the guest DaemonSet's settings, beside a shared-folder passthrough ----
p = run([helm, "template", "virtwatt", os.path.join(src, "deploy/helm/virtwatt"), "-n", "virtwatt",
         "--set", "host.enabled=false", "--set", "guest.enabled=true"])
gds = [d for d in yaml.safe_load_all(p.stdout) if d and d["kind"] == "DaemonSet"]
check(p.returncode == 0 and len(gds) == 1, "helm template with guest.enabled", p.stderr)
pod = gds[0]["spec"]["template"]["spec"]
ctr = [c for c in pod["containers"] if c["name"] == "virtwatt-guest"][0]
gvols = {v["name"]: v for v in pod["volumes"]}
share_mount = [m for m in ctr["volumeMounts"] if m["name"] == "passthrough"][0]
share = kubelet + gvols["passthrough"]["hostPath"]["path"]
os.makedirs(share, exist_ok=True)
epoch, seq, idle_uj, active_uj = 1700000000000001, 0, 0, 0


def publish():
    """One frame as the host writes it: frame.json replaced atomically."""
    global seq, idle_uj, active_uj
    seq += 1
    idle_uj += 10_000_000
    active_uj += 15_000_000
    frame = {"v": 1, "epoch": epoch, "seq": seq, "vm": "6f1c2a9e-3b4d-4e5f-8a7b-0c1d2e3f4a5b",
             "interval_ms": 1000, "src": "rapl", "model": "",
             "zones": {"package": {"idle_uj": idle_uj, "active_uj": active_uj, "idle_w": 10.0,
                                   "active_w": 15.0}}}
    with open(os.path.join(share, ".frame.tmp"), "w") as f:
        f.write(json.dumps(frame, separators=(",", ":")) + "\n")
    os.rename(os.path.join(share, ".frame.tmp"), os.path.join(share, "frame.json"))


publish()
gname = "vw-image-guest-%d" % os.getpid()
args, cargs = podman_args(ctr, profile_root)
p = run(PODMAN + ["run", "-d", "--name", gname] + args + [image] + cargs)
if check(p.returncode == 0, "virtwatt-guest starts with the guest DaemonSet's settings",
         " ".join(map(shlex.quote, args + cargs)) + "\n" + p.stdout + p.stderr):
    started.append(gname)
    gpid = run(PODMAN + ["inspect", "-f", "{{.State.Pid}}", gname]).stdout.strip()
    body = ""
    for _ in range(40):
        publish()
        time.sleep(1)
        body = scrape(gpid) or ""
        acc = series(body, "virtwatt_guest_passthrough_accepted_total")
        if 'virtwatt_guest_power_source_info{source="passthrough"' in body and \
                acc and max(acc.values()) >= 3:
            break
    check('virtwatt_guest_power_source_info{source="passthrough"' in body,
          "the guest's energy comes from the passthrough in " + share_mount["mountPath"],
          "\n".join(l for l in body.splitlines() if "virtwatt_guest_" in l) + "\n" +
          run(PODMAN + ["logs", gname]).stderr[-2000:])
    acc = series(body, "virtwatt_guest_passthrough_accepted_total")
    check(acc and max(acc.values()) >= 3, "frames accepted", acc)
    check('virtwatt_cpu_accounting_info{method="bpf"' in body
          and "virtwatt_cpu_accounting_fallback{" not in body,
          "the guest accounts CPU with bpf under the Localhost profile")
finish()
