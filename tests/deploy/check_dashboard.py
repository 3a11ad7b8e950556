#!/usr/bin/env python3
"""Every metric name in every PromQL expression of deploy/grafana/*.json (panel targets and
template variable queries) is a family virtwatt-host or virtwatt-guest exports: the names
docs/metrics.md lists (generated from the family tables; the test metrics_doc fails when it
drifts from them). A gauge is
never rate()d and a counter never shown raw. TAP.
usage: check_dashboard.py SOURCE_ROOT"""
import json
import pathlib
import re
import sys

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan", "atan2",
            # aggregation operators: "sum by (x) (...)" puts "by" between name and parenthesis
            "sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
            "bottomk", "topk", "quantile", "limitk", "limit_ratio"}
RANGE_FUNCS = {"rate", "irate", "increase", "delta", "idelta", "deriv", "resets", "changes"}


def exported_families(root):
    pat = re.compile(r"^\| `((?:kepler|virtwatt)_[a-z0-9_]+)` \| (counter|gauge) \|", re.M)
    return dict(pat.findall((root / "docs" / "metrics.md").read_text()))


def metric_names(expr):
    """Metric names in a PromQL expression (a lexer good enough for dashboards)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)                 # strings
    e = re.sub(r"\{[^}]*\}", "{}", e)                            # label matchers
    e = re.sub(r"\[[^\]]*\]", "[]", e)                           # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", e)
    names = []
    for m in re.finditer(r"(?<![\w$:.])([a-zA-Z_:][a-zA-Z0-9_:]*)", e):
        word, rest = m.group(1), e[m.end():]
        if word in KEYWORDS or re.match(r"\s*\(", rest):
            continue
        names.append(word)
    return names


def ranged_names(expr):
    """Metric names used inside a range function (rate(x[..]) and the like)."""
    e = re.sub(r"\{[^}]*\}", "", expr)
    return re.findall(r"\b(?:%s)\s*\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\[" % "|".join(RANGE_FUNCS), e)


def expressions(dash):
    out = []
    def panels(ps):
        for p in ps:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"]))
            panels(p.get("panels", []))
    panels(dash.get("panels", []))
    for v in dash.get("templating", {}).get("list", []):
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") != "query" or not q:
            continue
        m = re.match(r"\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$", q)
        out.append(("variable " + v["name"], m.group(1) if m else q))
    return out


# What each dashboard must show (a dashboard not listed here must be added).
WANT = {
    "virtwatt-dashboard.json": [
        ({"kepler_node_cpu_watts", "kepler_node_cpu_active_watts", "kepler_node_cpu_idle_watts",
          "kepler_vm_cpu_watts", "virtwatt_vm_cpu_idle_watts", "kepler_pod_cpu_watts",
          "kepler_process_cpu_watts", "virtwatt_node_power_source_info",
          "virtwatt_guest_power_source_info", "virtwatt_guest_passthrough_last_frame_age_seconds"},
         "node, VM, pod, process power, source and guest health"),
        ({"kepler_node_gpu_watts", "kepler_node_gpu_active_watts", "kepler_node_gpu_idle_watts",
          "kepler_pod_gpu_watts", "kepler_platform_watts", "virtwatt_node_energy_gaps_total",
          "virtwatt_vm_passthrough_last_success_timestamp_seconds",
          "virtwatt_vm_passthrough_failures_total", "virtwatt_vm_passthrough_channel_state",
          "virtwatt_cpu_accounting_info"},
         "GPUs, the platform meter, meter gaps, passthrough delivery and the accounting method"),
    ],
    "virtwatt-fleet.json": [
        ({"kepler_vm_cpu_joules_total", "virtwatt_vm_info", "virtwatt_vm_co2e_grams_total",
          "kepler_node_cpu_watts", "virtwatt_node_co2e_grams_total", "kepler_vm_cpu_watts",
          "kepler_platform_watts", "kepler_node_gpu_active_watts",
          "virtwatt_carbon_intensity_grams_per_kwh"},
         "energy and carbon per project and flavor, per node, top VMs, platform and GPU power"),
    ],
}


def main():
    root = pathlib.Path(sys.argv[1])
    fams = exported_families(root)
    n = failed = 0

    def ok(cond, name, why=""):
        nonlocal n, failed
        n += 1
        print(("ok %d - %s" if cond else "not ok %d - %s") % (n, name))
        if not cond:
            failed += 1
            for line in str(why).splitlines():
                print("# " + line)

    # the lexer itself
    got = metric_names('sum by (zone) (rate(foo_total{a="b", zone=~"$z"}[5m])) / on(x) bar')
    ok(got == ["foo_total", "bar"], "lexer finds metric names only", got)
    ok(len(fams) >= 30 and "kepler_node_cpu_watts" in fams and
       "virtwatt_guest_passthrough_accepted_total" in fams,
       "exported families found in docs/metrics.md (%d)" % len(fams), sorted(fams))

    dashboards = sorted((root / "deploy" / "grafana").glob("*.json"))
    ok(dashboards, "deploy/grafana has dashboards")
    for path in dashboards:
        dash = json.loads(path.read_text())
        used = set()
        exprs = expressions(dash)
        ok(exprs, "%s has PromQL expressions" % path.name)
        for title, expr in exprs:
            names = metric_names(expr)
            used.update(names)
            unknown = [x for x in names if x not in fams]
            ok(names and not unknown, "%s: %s uses only exported series" % (path.name, title),
               "unknown: %s\nexpr: %s" % (unknown, expr) if names else "no metric in: " + expr)
            ranged = ranged_names(expr)
            for x in ranged:
                ok(fams.get(x) == "counter", "%s: %s: range function over a counter (%s)" %
                   (path.name, title, x), "%s is a %s" % (x, fams.get(x)))
            raw = [x for x in names if fams.get(x) == "counter" and x not in ranged]
            ok(not raw, "%s: %s: no raw counter" % (path.name, title), "raw: %s" % raw)
        ok(path.name in WANT, "%s: what it must show is listed in WANT" % path.name)
        for want, what in WANT.get(path.name, []):
            ok(want <= used, "%s shows %s" % (path.name, what), "missing: %s" % sorted(want - used))
        # Every panel but a row shows something: a query whose metrics docs/metrics.md lists.
        def leaves(ps):
            for p in ps:
                if p.get("type") == "row":
                    yield from leaves(p.get("panels", []))
                else:
                    yield p
        for p in leaves(dash["panels"]):
            names = [x for t in p.get("targets", []) if t.get("expr") for x in metric_names(t["expr"])]
            ok(names and all(x in fams for x in names),
               "%s: panel %r shows an exported metric" % (path.name, p.get("title")),
               "metrics: %s" % names)
        ids = [p.get("id") for p in dash["panels"]]
        ok(len(ids) == len(set(ids)), "%s panel ids are unique" % path.name)

    print("1..%d" % n)
    print("# %d passed, %d failed" % (n - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
