#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The truth check (bench/truth, issue 31) on fakes with known truth, as one test: bench/truth/run.sh
--fake runs the real virtwatt-host over the fake NVML (tests/fake_nvml.c) and a fixture RAPL and
procfs that bench/truth/truth.py advances in real time, with two simulated GPU workloads (+180 W
at 60 % SM, +75 W at 25 % SM over a 60 W idle GPU) and two CPU ones (1 and 0.4 cores at 20 W
per core over a 40 W idle package), alone and together. Its table must say what the fakes were
scripted to draw:

- the meters as the check reads them: each phase's power the scripted one;
- the node: virtwatt's GPU and CPU package energy over the whole run within 1 % of the meter's
  counter, NVML's power integrated within 1 % of its counter;
- per workload, GPU: what virtwatt gives each while both run within 2 % of its alone-increment
  (the fake's power is proportional to SM utilization, so virtwatt's SM split is exact), and
  alone within 2 % (the idle floor found); nothing unattributed while they run;
- per workload, CPU: the two errors equal within 3 points (CPU time splits exactly; the common
  part is the idle fit's, which timing on a loaded machine moves) and each within 25 %.

  check_truth.py SOURCE_ROOT HOST_BIN FAKE_NVML
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

root, host_bin, fake_nvml = sys.argv[1:4]
out = tempfile.mkdtemp(prefix="vw-check-truth-")
n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    print("%s %d - %s" % ("ok" if cond else "not ok", n, what), flush=True)
    if not cond:
        failed += 1


def near(got, want, tol):
    return got is not None and want is not None and abs(got - want) <= tol


try:
    p = subprocess.run(["bash", os.path.join(root, "bench/truth/run.sh"), out, "--fake",
                        "--host-bin", host_bin, "--nvml-library", fake_nvml],
                       capture_output=True, text=True, timeout=150)
    for line in (p.stdout + p.stderr).splitlines():
        print("# " + line)
    ok(p.returncode == 0, "run.sh --fake exits 0")
    r = json.load(open(os.path.join(out, "results.json")))
    table = open(os.path.join(out, "table.md")).read()
    ok("SELF-TEST" in table and "not a measurement" in table, "the table says it is a self-test")
    for f in ("meter_series.csv", "tool_series.csv", "host.log", "run.log"):
        ok(os.path.getsize(os.path.join(out, f)) > 0, "raw series and logs: " + f)
    ok(r["duration_s"] < 60, "the whole run under 60 s (%.1f s)" % r["duration_s"])
    ok(not r.get("absent"), "both fake meters found: %s" % r.get("absent"))

    g, c = r.get("gpu", {}), r.get("cpu", {})
    for kind, res, tol in (("gpu", g, 0.005), ("cpu", c, 0.03)):
        sc = res.get("scripted") or {}
        for name, ph in res.get("phases", {}).items():
            ok(near(ph.get("meter_w"), ph.get("scripted_w"), tol * (ph.get("scripted_w") or 0)),
               "%s %s: the meter read %s W, scripted %s W" % (kind, name, ph.get("meter_w"), ph.get("scripted_w")))
        node = res.get("node", {})
        ok(near(node.get("error_pct"), 0, 1.0),
           "%s node energy against the meter's counter: %s %%" % (kind, node.get("error_pct")))
        ok(sc.get("A") and sc.get("B"), "%s: the scripted truth is in the results" % kind)
    ok(near(g.get("node", {}).get("power_int_error_pct"), 0, 1.0),
       "NVML power integrated against its counter: %s %%" % g.get("node", {}).get("power_int_error_pct"))
    for role in ("A", "B"):
        w = g.get("workloads", {}).get(role, {})
        for key in ("error_together_pct", "error_together_scripted_pct", "error_alone_pct",
                    "error_alone_scripted_pct"):
            ok(near(w.get(key), 0, 2.0), "gpu %s %s: %s" % (role, key, w.get(key)))
        ok(near(w.get("attributed_together_w"), w.get("scripted_increment_w"), 0.02 * (w.get("scripted_increment_w") or 0)),
           "gpu %s together: virtwatt %s W, scripted increment %s W" % (role, w.get("attributed_together_w"),
                                                                      w.get("scripted_increment_w")))
    ab = g.get("phases", {}).get("A+B", {})
    ok(near(ab.get("unattributed_share"), 0, 0.005), "gpu A+B: unattributed share %s" % ab.get("unattributed_share"))
    ca, cb = (c.get("workloads", {}).get(k, {}).get("error_together_scripted_pct") for k in ("A", "B"))
    ok(ca is not None and cb is not None and abs(ca - cb) <= 3.0,
       "cpu: A and B errors together equal within 3 points (%s, %s)" % (ca, cb))
    for role, e in (("A", ca), ("B", cb)):
        ok(near(e, 0, 25.0), "cpu %s together against the scripted increment: %s %%" % (role, e))
except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
    ok(False, "the check ran and wrote its results: %s" % e)
finally:
    shutil.rmtree(out, ignore_errors=True)
print("1..%d" % n)
sys.exit(1 if failed else 0)
