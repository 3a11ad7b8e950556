#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""deploy/seccomp/virtwatt-host.json against the container runtime default it extends (TAP).

1. It is what deploy/seccomp/generate.py makes of the installed default (containers/common's
   /usr/share/containers/seccomp.json, Podman's and CRI-O's): regenerate it when that changes.
2. Evaluated as the runtimes do (a rule applies when the container holds every capability of
   its includes and none of its excludes; two rules with different actions for one syscall would
   be rejected), for every syscall either profile names and each capability set that matters,
   the two decide alike except for bpf with CAP_BPF and perf_event_open with CAP_PERFMON, which
   the profile allows and the default denies.
usage: check_seccomp.py SOURCE_ROOT [DEFAULT_PROFILE]
"""
import importlib.util
import itertools
import json
import os
import sys

src = sys.argv[1]
default_path = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/containers/seccomp.json"
n = 0
failed = False


def check(ok, what, why=""):
    global n, failed
    n += 1
    print("%s %d - %s%s" % ("ok" if ok else "not ok", n, what, "" if ok else ": " + why))
    failed |= not ok


if not os.path.exists(default_path):
    if os.environ.get("CI") == "true":
        print("not ok 1 - %s missing (podman: deploy/install-deps.sh --test)\n1..1" % default_path)
        sys.exit(1)
    print("1..0 # SKIP %s missing (podman: deploy/install-deps.sh --test)" % default_path)
    sys.exit(0)

with open(default_path) as f:
    default = json.load(f)
with open(os.path.join(src, "deploy/seccomp/virtwatt-host.json")) as f:
    profile = json.load(f)
spec = importlib.util.spec_from_file_location("gen", os.path.join(src, "deploy/seccomp/generate.py"))
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)
check(gen.derive(default) == profile, "virtwatt-host.json is generate.py's output for " + default_path,
      "regenerate: deploy/seccomp/generate.py > deploy/seccomp/virtwatt-host.json")


def decide(prof, name, caps):
    acts = set()
    for r in prof["syscalls"]:
        if name not in r["names"]:
            continue
        inc = r.get("includes", {}) or {}
        exc = r.get("excludes", {}) or {}
        if not all(c in caps for c in inc.get("caps", []) or []):
            continue
        if any(c in caps for c in exc.get("caps", []) or []):
            continue
        if inc.get("arches") or exc.get("arches") or inc.get("minKernel"):
            continue  # per-architecture and per-kernel rules: identical in both, compared as is
        acts.add((r["action"], r.get("errnoRet"), json.dumps(r.get("args") or [])))
    return acts or {(prof["defaultAction"], prof.get("defaultErrnoRet"), "[]")}


base_caps = ["CAP_BPF", "CAP_PERFMON", "CAP_SYS_ADMIN", "CAP_SYS_PTRACE", "CAP_DAC_READ_SEARCH"]
capsets = [set(c) for k in range(len(base_caps) + 1) for c in itertools.combinations(base_caps, k)]
names = sorted({nm for p in (default, profile) for r in p["syscalls"] for nm in r["names"]})
differ, conflicts = [], []
for nm in names:
    for caps in capsets:
        a, b = decide(default, nm, caps), decide(profile, nm, caps)
        if len({x[:2] for x in b if x[2] == "[]"}) > len({x[:2] for x in a if x[2] == "[]"}):
            conflicts.append((nm, sorted(caps)))
        if a != b:
            differ.append((nm, frozenset(caps), b))
check(not conflicts, "no syscall has more actions for one capability set than in the default", str(conflicts[:3]))
allowed = {"bpf": "CAP_BPF", "perf_event_open": "CAP_PERFMON"}
bad = [(nm, sorted(c)) for nm, c, b in differ
       if nm not in allowed or allowed[nm] not in c or "CAP_SYS_ADMIN" in c
       or b != {("SCMP_ACT_ALLOW", None, "[]")}]
check(not bad, "the profile differs from the default only by allowing bpf with CAP_BPF and "
      "perf_event_open with CAP_PERFMON", str(bad[:5]))
for nm, cap in allowed.items():
    check(decide(profile, nm, {cap, "CAP_DAC_READ_SEARCH"}) == {("SCMP_ACT_ALLOW", None, "[]")},
          "%s allowed with %s, without CAP_SYS_ADMIN" % (nm, cap))
    check(decide(profile, nm, {"CAP_DAC_READ_SEARCH"}) == decide(default, nm, {"CAP_DAC_READ_SEARCH"})
          and decide(profile, nm, set()) != {("SCMP_ACT_ALLOW", None, "[]")},
          "%s still denied (EPERM) without %s" % (nm, cap))
print("1..%d" % n)
sys.exit(1 if failed else 0)
