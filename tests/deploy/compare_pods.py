#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Helm chart and the kustomize manifests run the same pods (TAP).

For each DaemonSet `kubectl kustomize` renders, the chart's DaemonSet of the same component
(app.kubernetes.io/component) must have the identical pod spec (containers, args, capabilities,
seccomp, probes, resources, volumes, node selector, ...), the kustomize pod labels among its own,
and the same update strategy; the Services' ports and the ClusterRole's rules must agree too.
usage: compare_pods.py KUSTOMIZE_OUTPUT HELM_OUTPUT [NAME]
"""
import json
import sys

import yaml


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def by_component(docs, kind):
    out = {}
    for d in docs:
        if d["kind"] == kind:
            labels = d["metadata"].get("labels", {})
            out[labels.get("app.kubernetes.io/component", d["metadata"]["name"])] = d
    return out


def diff(a, b, path=""):
    """Where two parsed objects differ, as 'path: a != b' lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += diff(a.get(k, "<absent>"), b.get(k, "<absent>"), "%s.%s" % (path, k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += diff(x, y, "%s[%d]" % (path, i))
        return out
    return [] if a == b else ["%s: %s != %s" % (path, json.dumps(a), json.dumps(b))]


def compare(kust, helm, check):
    """Calls check(ok, what, why) for each comparison."""
    kds, hds = by_component(kust, "DaemonSet"), by_component(helm, "DaemonSet")
    check(len(kds) > 0, "kustomize renders DaemonSets")
    for comp, k in sorted(kds.items()):
        h = hds.get(comp)
        check(h is not None, "the chart renders the %s DaemonSet" % comp)
        if h is None:
            continue
        kt, ht = k["spec"]["template"], h["spec"]["template"]
        d = diff(kt["spec"], ht["spec"], "spec.template.spec")
        check(not d, "%s: identical pod spec" % comp, d)
        kl, hl = kt["metadata"].get("labels", {}), ht["metadata"].get("labels", {})
        check(all(hl.get(x) == v for x, v in kl.items()), "%s: the pod carries kustomize's labels" % comp,
              ["kustomize %s, chart %s" % (kl, hl)])
        d = diff(k["spec"]["updateStrategy"], h["spec"]["updateStrategy"], "updateStrategy")
        check(not d, "%s: same update strategy" % comp, d)
        check(k["metadata"].get("namespace") == h["metadata"].get("namespace"),
              "%s: same namespace" % comp)
    ks, hs = by_component(kust, "Service"), by_component(helm, "Service")
    for comp, k in sorted(ks.items()):
        d = diff(k["spec"]["ports"], hs.get(comp, {}).get("spec", {}).get("ports"), "ports") + \
            diff(k["spec"].get("clusterIP"), hs.get(comp, {}).get("spec", {}).get("clusterIP"), "clusterIP")
        check(not d, "%s Service: same ports, headless" % comp, d)
    kr = [d for d in kust if d["kind"] == "ClusterRole"]
    hr = [d for d in helm if d["kind"] == "ClusterRole"]
    if kr:
        d = diff(kr[0]["rules"], hr[0]["rules"] if hr else None, "rules")
        check(not d, "ClusterRole: same rules", d)


if __name__ == "__main__":
    kust, helm = load(sys.argv[1]), load(sys.argv[2])
    name = sys.argv[3] if len(sys.argv) > 3 else "default values"
    n, failed = 0, False

    def check(ok, what, why=()):
        global n, failed
        n += 1
        print("%s %d - %s (%s)" % ("ok" if ok else "not ok", n, what, name))
        for line in (list(why)[:20] if not ok else []):
            print("# " + line)
        failed |= not ok

    compare(kust, helm, check)
    print("1..%d" % n)
    sys.exit(1 if failed else 0)
