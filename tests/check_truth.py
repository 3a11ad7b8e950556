#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The truth check (bench/truth, issue 31) on fakes with known truth, as one test: bench/truth/run.sh
--fake runs the real virtwatt-host over the fake NVML (tests/fake_nvml.c) and a fixture RAPL and
procfs that bench/truth/truth.py advances in real time, with two simulated GPU workloads (+180 W
at 60 % SM, +75 W at 25 % SM over a 60 W idle GPU) and two CPU ones (1 and 0.4 cores at 20 W
per core over a 40 W idle package), alone and together. First, the analysis alone on made-up
series with known answers (a GPU that does not add up, virtwatt's node 0.5 % high). Then the
run's table must say what the fakes were scripted to draw:

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


sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(root, "bench/truth"))
import truth  # noqa: E402  (the check's analysis, on its own)


class Synthetic:
    """A sampler's series made up: a GPU that draws idle 100 W, A alone 500 W, B alone 250 W and
    both 600 W (a power cap: not additive); virtwatt publishing once a second, giving A 60 % and
    B 20 % of the node's energy together and nearly all of the active energy alone, its node
    counter 0.5 % high; scrapes every 0.1 s, meters every 0.05 s."""

    PHASES = (("idle", {}, 100.0), ("A", {"A": 0.78}, 500.0), ("B", {"B": 0.58}, 250.0),
              ("A+B", {"A": 0.6, "B": 0.2}, 600.0), ("idle-after", {}, 100.0))

    def __init__(self):
        self.meter, self.tool, self.phases = [], [], []
        e = 0.0
        pub = {"node_gpu": 0.0, "gpu": {}, "node_cpu": None, "gpu_unattributed": 0.0,
               "ctr_gpu": {}, "gpu_idle_baseline": {}, "cpu_idle_baseline": {}}
        t = 100.0
        for k, (name, share, w) in enumerate(self.PHASES):
            pids = {r: str(1000 + 10 * k + i) for i, r in enumerate(share)}
            self.phases.append({"name": name, "t0": t, "t1": t + 10.0, "pids": pids})
            for step in range(200):  # 10 s at 50 ms
                tt = t + step * 0.05
                self.meter.append((tt, e, w, e, None, tt))
                if step % 20 == 0:  # a publication each second: the last second's energy
                    pub = dict(pub, gpu=dict(pub["gpu"]))
                    pub["node_gpu"] += w * 1.005
                    for r, f in share.items():
                        pub["gpu"][pids[r]] = pub["gpu"].get(pids[r], 0.0) + f * w * 1.005
                if step % 2 == 0:
                    self.tool.append((tt + 0.01, pub))
                e += w * 0.05
            t += 10.0

    def meter_at(self, t, col):
        return truth.Sampler.meter_at(self, t, col)


def check_analysis():
    s = Synthetic()
    r = truth.analyse("gpu", s, s.phases, 1.0)
    P, W = r["phases"], r["workloads"]
    for name, _, w in Synthetic.PHASES:
        ok(near(P[name]["meter_w"], w, 1e-6), "analysis: %s meter %s W, made %s W" % (name, P[name]["meter_w"], w))
    ok(near(P["A+B"]["share"]["A"], 0.6, 1e-9) and near(P["A+B"]["share"]["B"], 0.2, 1e-9),
       "analysis: together shares %s" % P["A+B"]["share"])
    ok(near(W["A"]["increment_w"], 400, 1e-6) and near(W["B"]["increment_w"], 150, 1e-6),
       "analysis: alone increments %s, %s" % (W["A"]["increment_w"], W["B"]["increment_w"]))
    ok(near(W["A"]["attributed_together_w"], 360, 1e-6) and near(W["B"]["attributed_together_w"], 120, 1e-6),
       "analysis: together 360 W and 120 W (%s, %s)" % (W["A"]["attributed_together_w"], W["B"]["attributed_together_w"]))
    ok(near(W["A"]["error_together_pct"], -10, 1e-6) and near(W["B"]["error_together_pct"], -20, 1e-6),
       "analysis: errors together -10 %% and -20 %% (%s, %s)" % (W["A"]["error_together_pct"], W["B"]["error_together_pct"]))
    ok(near(W["A"]["error_alone_pct"], -2.5, 1e-6) and near(W["B"]["error_alone_pct"], 100 * (0.58 * 250 - 150) / 150, 1e-6),
       "analysis: errors alone (%s, %s)" % (W["A"]["error_alone_pct"], W["B"]["error_alone_pct"]))
    ok(near(r["additivity_pct"], 100 * (500 - 550) / 550, 1e-6), "analysis: additivity %s %%" % r["additivity_pct"])
    ok(near(W["A"]["error_split_pct"], 100 * (360 - 500 * 400 / 550) / (500 * 400 / 550), 1e-6) and
       near(W["B"]["error_split_pct"], 100 * (120 - 500 * 150 / 550) / (500 * 150 / 550), 1e-6),
       "analysis: errors of the split (%s, %s)" % (W["A"]["error_split_pct"], W["B"]["error_split_pct"]))
    ok(near(r["node"]["error_pct"], 0.5, 0.05), "analysis: node error %s %% (made +0.5 %%)" % r["node"]["error_pct"])


try:
    check_analysis()
except (KeyError, TypeError, ValueError, ZeroDivisionError) as e:
    ok(False, "the analysis ran on synthetic series: %r" % e)

try:
    p = subprocess.run(["bash", os.path.join(root, "bench/truth/run.sh"), out, "--fake",
                        "--host-bin", host_bin, "--nvml-library", fake_nvml,
                        "--fake-sample-period-ms", "2000"],
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
    base = c.get("node", {}).get("idle_baseline")  # in the title: CI's log shows only titles
    for role, e in (("A", ca), ("B", cb)):
        ok(near(e, 0, 25.0), "cpu %s together against the scripted increment: %s %% (idle baseline "
           "%s, scripted %s W)" % (role, e, base, (c.get("scripted") or {}).get("idle")))
except (OSError, ValueError, KeyError, subprocess.TimeoutExpired) as e:
    ok(False, "the check ran and wrote its results: %s" % e)
finally:
    shutil.rmtree(out, ignore_errors=True)
print("1..%d" % n)
sys.exit(1 if failed else 0)
