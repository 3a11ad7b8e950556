#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""virtwatt-host's seccomp profile: a container runtime's default profile (containers/common's,
as Podman and CRI-O use it: /usr/share/containers/seccomp.json) plus exactly two permissions,
bpf() with CAP_BPF and perf_event_open() with CAP_PERFMON. The default allows both only with
CAP_SYS_ADMIN; everything else it denies stays denied, and without the capabilities both still
fail with EPERM as before.

usage: generate.py [DEFAULT_PROFILE] > deploy/seccomp/virtwatt-host.json
"""
import json
import sys

ADDED = {"bpf": "CAP_BPF", "perf_event_open": "CAP_PERFMON"}


def derive(default):
    out = dict(default)
    rules = []
    for rule in default["syscalls"]:
        names = rule["names"]
        excl = rule.get("excludes", {}).get("caps", [])
        # the rule that answers EPERM to callers without CAP_SYS_ADMIN: bpf and
        # perf_event_open leave it for rules of their own below
        if rule["action"] == "SCMP_ACT_ERRNO" and excl == ["CAP_SYS_ADMIN"] and \
                any(n in names for n in ADDED):
            keep = [n for n in names if n not in ADDED]
            if keep:
                rules.append(dict(rule, names=keep))
            for name, cap in ADDED.items():
                if name not in names:
                    continue
                rules.append({"names": [name], "action": "SCMP_ACT_ALLOW", "args": [],
                              "comment": "virtwatt-host: %s with %s" % (name, cap),
                              "includes": {"caps": [cap]},
                              "excludes": {"caps": ["CAP_SYS_ADMIN"]}})
                rules.append(dict(rule, names=[name],
                                  excludes={"caps": ["CAP_SYS_ADMIN", cap]}))
            continue
        rules.append(rule)
    out["syscalls"] = rules
    return out


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
    with open(path) as f:
        default = json.load(f)
    json.dump(derive(default), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
