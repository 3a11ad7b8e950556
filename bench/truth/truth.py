#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
The truth check (issue 31): what virtwatt-host gives each workload against what the meter saw
that workload add when it ran alone (the incremental protocol), and virtwatt's node energy
against the meter's own counter.

  truth.py OUTDIR --host-bin BIN [--seconds N] [--fake --nvml-library FAKE]

Real mode finds the meters of this machine: NVIDIA GPUs through the driver's libnvidia-ml.so.1
(its total-energy counter, and its power integrated here), the CPU packages through powercap
RAPL or hwmon energy inputs where readable. It says which are absent. For each meter found it
runs the protocol with two workloads of different intensity:

  idle (N s) | A alone (N s) | B alone (N s) | A and B together (N s) | idle (N/2 s)

GPU: A is a bf16 matmul loop at full rate, B the same duty-cycled to ~30 % (gpu_load.py,
PyTorch). CPU: A one core spinning, B one core at ~30 % (cpu_load.py). virtwatt-host runs
beside them (its metrics scraped every 0.1 s), and for each workload the table compares the
energy virtwatt attributed to it while the two ran together with its alone-increment over idle
(the meter's power with it alone minus the meter's idle power).

Fake mode (--fake) runs the same protocol and the same analysis on fakes with known truth: the
fake NVML (tests/fake_nvml.c, --nvml-library) and a fixture sysfs/procfs this script writes
and advances in real time. The workloads are simulated processes of the fixture procfs: each
adds a scripted power to the fake GPU (listed by the fake NVML with a scripted SM utilization
proportional to it) or to the fixture RAPL package (with a scripted CPU time proportional to
it). The known increments are in the table beside the measured ones. A self-test of the chain,
not a measurement.

Everything it writes goes to OUTDIR: table.md (also printed), results.json, meter_series.csv,
tool_series.csv, host.log, run.log.
"""
import argparse
import ctypes
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # nothing written into the source tree
sys.path.insert(0, os.path.join(HERE, os.pardir, os.pardir, "tests"))
from exposition import Exposition  # noqa: E402  (tests/exposition.py)


def log(msg):
    print(msg, flush=True)
    if LOG_FILE:
        LOG_FILE.write(msg + "\n")
        LOG_FILE.flush()


LOG_FILE = None

# ---------------------------------------------------------------------------------------------
# Meters
# ---------------------------------------------------------------------------------------------


class Nvml:
    """NVML through ctypes: the entry points the check reads, looked up one by one."""

    NVML_SUCCESS = 0

    def __init__(self, lib):
        self.lib = ctypes.CDLL(lib)
        self.path = self._loaded_path(lib)
        L = self.lib
        L.nvmlInit_v2.restype = ctypes.c_int
        r = L.nvmlInit_v2()
        if r != 0:
            raise OSError("nvmlInit_v2: %s" % self.error(r))
        count = ctypes.c_uint(0)
        L.nvmlDeviceGetCount_v2.argtypes = [ctypes.POINTER(ctypes.c_uint)]
        r = L.nvmlDeviceGetCount_v2(ctypes.byref(count))
        if r != 0:
            raise OSError("nvmlDeviceGetCount_v2: %s" % self.error(r))
        L.nvmlDeviceGetHandleByIndex_v2.argtypes = [ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p)]
        for fn in ("nvmlDeviceGetName", "nvmlDeviceGetUUID"):
            getattr(L, fn).argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint]
        L.nvmlDeviceGetPowerUsage.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint)]
        self.energy_fn = getattr(L, "nvmlDeviceGetTotalEnergyConsumption", None)
        if self.energy_fn is not None:
            self.energy_fn.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_ulonglong)]
        self.devices = []
        for i in range(count.value):
            h = ctypes.c_void_p()
            if L.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(h)) != 0:
                continue
            name, uuid = ctypes.create_string_buffer(96), ctypes.create_string_buffer(96)
            L.nvmlDeviceGetName(h, name, 96)
            L.nvmlDeviceGetUUID(h, uuid, 96)
            has_counter = self._energy(h) is not None
            self.devices.append({"index": i, "handle": h, "name": name.value.decode(),
                                 "uuid": uuid.value.decode(), "counter": has_counter})
        self.driver = self._driver_version()

    @staticmethod
    def _loaded_path(lib):
        """The file the loader opened for lib (from /proc/self/maps), to give virtwatt the same."""
        base = os.path.basename(lib)
        try:
            with open("/proc/self/maps") as f:
                for line in f:
                    p = line.split()[-1] if len(line.split()) >= 6 else ""
                    if os.path.basename(p).startswith(base.split(".so")[0] + ".so"):
                        return p
        except OSError:
            pass
        return lib

    def error(self, r):
        try:
            self.lib.nvmlErrorString.restype = ctypes.c_char_p
            return "%s (%d)" % (self.lib.nvmlErrorString(r).decode(), r)
        except (AttributeError, UnicodeDecodeError):
            return str(r)

    def _driver_version(self):
        fn = getattr(self.lib, "nvmlSystemGetDriverVersion", None)
        if fn is None:
            return "unknown"
        buf = ctypes.create_string_buffer(96)
        fn.argtypes = [ctypes.c_char_p, ctypes.c_uint]
        return buf.value.decode() if fn(buf, 96) == 0 else "unknown"

    def _energy(self, h):
        if self.energy_fn is None:
            return None
        mj = ctypes.c_ulonglong(0)
        return mj.value if self.energy_fn(h, ctypes.byref(mj)) == 0 else None

    def read(self):
        """[(energy J or None, power W or None)] per device."""
        out = []
        for d in self.devices:
            e = self._energy(d["handle"])
            mw = ctypes.c_uint(0)
            p = mw.value / 1000.0 if self.lib.nvmlDeviceGetPowerUsage(d["handle"], ctypes.byref(mw)) == 0 else None
            out.append((e / 1000.0 if e is not None else None, p))
        return out

    def close(self):
        try:
            self.lib.nvmlShutdown()
        except AttributeError:
            pass


def find_nvml(explicit):
    """An Nvml on the driver's library, or (None, why)."""
    lib = explicit or "libnvidia-ml.so.1"
    try:
        n = Nvml(lib)
    except OSError as e:
        return None, "NVML: %s (%s)" % (e, lib)
    if not n.devices:
        n.close()
        return None, "NVML: no device (%s)" % lib
    return n, None


class EnergyFiles:
    """CPU package energy counters in µJ (powercap RAPL, else hwmon energy inputs), unwrapped."""

    def __init__(self, sysfs):
        self.zones = []  # (path, label, max_range_uj)
        self.source = None
        self.why = []
        pc = os.path.join(sysfs, "class/powercap")
        if os.path.isdir(pc):
            for z in sorted(os.listdir(pc)):
                d = os.path.join(pc, z)
                if z.count(":") != 1:  # intel-rapl:0 (a package), not intel-rapl:0:0 (its domains)
                    continue
                try:
                    name = open(os.path.join(d, "name")).read().strip()
                    if not name.startswith("package"):
                        continue
                    open(os.path.join(d, "energy_uj")).read()
                    try:
                        mx = int(open(os.path.join(d, "max_energy_range_uj")).read())
                    except (OSError, ValueError):
                        mx = 0
                    self.zones.append((os.path.join(d, "energy_uj"), "%s %s" % (z, name), mx))
                except OSError as e:
                    self.why.append("%s: %s" % (d, e.strerror))
            if self.zones:
                self.source = "powercap"
        if not self.zones:
            hw = os.path.join(sysfs, "class/hwmon")
            for h in sorted(os.listdir(hw)) if os.path.isdir(hw) else []:
                d = os.path.join(hw, h)
                for f in sorted(os.listdir(d)):
                    if not (f.startswith("energy") and f.endswith("_input")):
                        continue
                    lab = os.path.join(d, f.replace("_input", "_label"))
                    try:
                        label = open(lab).read().strip() if os.path.exists(lab) else f
                        if "socket" not in label.lower() and "package" not in label.lower():
                            continue
                        open(os.path.join(d, f)).read()
                        self.zones.append((os.path.join(d, f), "%s %s" % (h, label), 0))
                    except OSError as e:
                        self.why.append("%s: %s" % (d, e.strerror))
            if self.zones:
                self.source = "hwmon"
        self.last = [None] * len(self.zones)
        self.acc = [0] * len(self.zones)
        # The self-test's fake package (FakeMachine.stamp): "energy_uj monotonic_s" of its last
        # write, so that a reading is timed when the fake wrote it, not when it was read (a
        # stalled writer or reader otherwise moves joules between phases).
        self.stamp = None
        self.at = None  # the time the last read() stands for, where the meter says it

    def read(self):
        """Package energy since the first read, J (all packages); None when a read fails."""
        total = 0
        self.at = None
        for i, (path, _, mx) in enumerate(self.zones):
            try:
                if self.stamp:
                    uj, at = open(self.stamp).read().split()
                    v, self.at = int(uj), float(at)
                else:
                    v = int(open(path).read())
            except (OSError, ValueError):
                return None
            if self.last[i] is not None:
                d = v - self.last[i]
                if d < 0:
                    d = (mx - self.last[i]) + v if mx else 0
                self.acc[i] += d
            self.last[i] = v
            total += self.acc[i]
        return total / 1e6


# ---------------------------------------------------------------------------------------------
# Fakes with known truth
# ---------------------------------------------------------------------------------------------

FAKE_GPU = {"idle_w": 60.0, "w_per_sm": 3.0,
            "A": {"sm": 60, "what": "simulated: +180 W at 60 % SM"},
            "B": {"sm": 25, "what": "simulated: +75 W at 25 % SM"}}
FAKE_CPU = {"idle_w": 40.0, "w_per_core": 20.0, "ncpus": 4,
            "A": {"cores": 1.0, "what": "simulated: 1 core, +20 W"},
            "B": {"cores": 0.4, "what": "simulated: 0.4 core, +8 W"}}


def atomic_write(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class FakeMachine:
    """A fake GPU (the fake NVML's state file) and a fake RAPL package with its procfs, advanced
    in real time by a child process (real-time priority where allowed, so that a loaded machine
    does not stall the fake meters): every running simulated workload adds its scripted power.
    The GPU's counter runs by itself in the fake NVML (energy_run), exact whenever it is read.
    """

    def __init__(self, root, putil_period_ms=0):
        self.root = root
        self.putil_period_ms = putil_period_ms
        self.sys = os.path.join(root, "sys")
        self.proc = os.path.join(root, "proc")
        self.nvml_state = os.path.join(root, "nvml.state")
        self.ack = os.path.join(root, "ack")
        self.stamp = os.path.join(root, "rapl_stamp")  # the package's energy and when (EnergyFiles)
        self.rapl_dir = os.path.join(self.sys, "class/powercap/intel-rapl:0")
        os.makedirs(self.rapl_dir)
        os.makedirs(self.proc)
        with open(os.path.join(self.rapl_dir, "name"), "w") as f:
            f.write("package-0\n")
        self.rapl_max = 262143328850
        with open(os.path.join(self.rapl_dir, "max_energy_range_uj"), "w") as f:
            f.write("%d\n" % self.rapl_max)
        cpuinfo = "".join("processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\n"
                          "model name\t: Fake CPU (truth self-test)\nphysical id\t: 0\n"
                          "core id\t\t: %d\n\n" % (c, c) for c in range(FAKE_CPU["ncpus"]))
        with open(os.path.join(self.proc, "cpuinfo"), "w") as f:
            f.write(cpuinfo)
        self.next_pid = 41000
        self.seq = 0
        self.lock = threading.Lock()
        rfd, self.cmd = os.pipe()
        self.child = os.fork()
        if self.child == 0:
            os.close(self.cmd)
            try:
                self._child(rfd)
            finally:
                os._exit(0)
        os.close(rfd)
        self._send("hello")

    def _send(self, line):
        """Send one command and wait until the child has written the state that follows it."""
        with self.lock:
            self.seq += 1
            seq = self.seq
            os.write(self.cmd, ("%d %s\n" % (seq, line)).encode())
        end = time.monotonic() + 30
        while time.monotonic() < end:
            try:
                if int(open(self.ack).read() or 0) >= seq:
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.01)
        raise RuntimeError("the fake machine did not answer")

    def spawn(self, kind, role):
        """A simulated workload of kind 'gpu' or 'cpu' playing role A or B: its PID."""
        with self.lock:
            self.next_pid += 1
            pid = self.next_pid
        self._send("spawn %s %s %d" % (kind, role, pid))
        return pid

    def kill(self, pid):
        self._send("kill %d" % pid)

    def close(self):
        try:
            os.write(self.cmd, b"0 quit\n")
        except OSError:
            pass
        os.waitpid(self.child, 0)

    # ---- the child ----

    def _child(self, rfd):
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except (OSError, AttributeError):
            pass  # without the privilege it runs as it is
        os.set_blocking(rfd, False)
        self.procs = {}  # pid -> {"kind", "role", "cpu_ns", "comm", "start"}
        self.t = time.monotonic()
        self.gpu_mj, self.gpu_at = 5_000_000.0, time.monotonic_ns()  # since the driver loaded
        self.gpu_w, self.gpu_util = FAKE_GPU["idle_w"], 0
        self.rapl_uj = 250_000_000_000.0  # near the wrap: the check must unwrap it
        self.busy_ticks = self.idle_ticks = 0.0
        self._add_proc(1, "cpu", None, "init")  # the procfs needs a process at start
        buf, acked = b"", 0
        while True:
            try:
                chunk = os.read(rfd, 4096)
                if not chunk:
                    return
                buf += chunk
            except BlockingIOError:
                pass
            self._step()
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                w = line.decode().split()
                seq, cmd = int(w[0]), w[1]
                if cmd == "quit":
                    return
                if cmd == "spawn":
                    self._add_proc(int(w[4]), w[2], w[3], "sim-%s-%s" % (w[2], w[3]))
                elif cmd == "kill":
                    self.procs.pop(int(w[2]), None)
                    shutil.rmtree(os.path.join(self.proc, w[2]), ignore_errors=True)
                acked = max(acked, seq)
            self._gpu_power()
            self._write()
            atomic_write(self.ack, "%d" % acked)
            time.sleep(0.02)

    def _add_proc(self, pid, kind, role, comm):
        d = os.path.join(self.proc, str(pid))
        os.makedirs(os.path.join(d, "task", str(pid)), exist_ok=True)
        with open(os.path.join(d, "comm"), "w") as f:
            f.write(comm + "\n")
        with open(os.path.join(d, "cmdline"), "w") as f:
            f.write(comm + "\0")
        with open(os.path.join(d, "cgroup"), "w") as f:
            f.write("0::/\n")
        self.procs[pid] = {"kind": kind, "role": role, "cpu_ns": 0.0, "comm": comm,
                           "start": 1000 + pid}
        self._write_proc(pid)

    def _write_proc(self, pid):
        p = self.procs[pid]
        ticks = int(p["cpu_ns"] / 1e7)
        d = os.path.join(self.proc, str(pid))
        atomic_write(os.path.join(d, "stat"),
                     "%d (%s) S 1 %d %d 0 -1 4194560 0 0 0 0 %d 0 0 0 20 0 1 0 %d 0 0\n"
                     % (pid, p["comm"], pid, pid, ticks, p["start"]))
        atomic_write(os.path.join(d, "task", str(pid), "schedstat"), "%d 0 0\n" % int(p["cpu_ns"]))

    def _running(self, kind):
        return [(pid, p["role"]) for pid, p in self.procs.items() if p["kind"] == kind and p["role"]]

    def _gpu_power(self):
        """The GPU's power for the workloads now running; the counter restarts from where the
        old power brought it."""
        sm = sum(FAKE_GPU[r]["sm"] for _, r in self._running("gpu"))
        w = FAKE_GPU["idle_w"] + FAKE_GPU["w_per_sm"] * sm
        if w != self.gpu_w:
            now = time.monotonic_ns()
            self.gpu_mj += self.gpu_w * (now - self.gpu_at) / 1e9 * 1000.0
            self.gpu_at, self.gpu_w = now, w
        self.gpu_util = min(100, sm)

    def _step(self):
        now = time.monotonic()
        dt, self.t = now - self.t, now
        cpu = self._running("cpu")
        cores = sum(FAKE_CPU[r]["cores"] for _, r in cpu)
        self.rapl_uj += (FAKE_CPU["idle_w"] + FAKE_CPU["w_per_core"] * cores) * dt * 1e6
        for pid, r in cpu:
            self.procs[pid]["cpu_ns"] += FAKE_CPU[r]["cores"] * dt * 1e9
        self.busy_ticks += cores * dt * 100
        self.idle_ticks += (FAKE_CPU["ncpus"] - cores) * dt * 100

    def _write(self):
        gpu = self._running("gpu")
        procs = ",".join("%d:%d" % (pid, FAKE_GPU[r]["sm"]) for pid, r in sorted(gpu))
        atomic_write(self.nvml_state,
                     "count=1\n0.uuid=GPU-7e57f00d-0000-4000-8000-000000000031\n"
                     "0.name=Fake GPU (truth self-test)\n0.energy_run=%d:%d:%d\n0.power_mw=%d\n"
                     "0.util=%d\n0.mig=0\n%s%s" % (int(self.gpu_mj), int(self.gpu_w * 1000),
                                                   self.gpu_at, int(self.gpu_w * 1000), self.gpu_util,
                                                   "0.procs=%s\n" % procs if procs else "",
                                                   "0.putil_period_ms=%d\n" % self.putil_period_ms
                                                   if self.putil_period_ms else ""))
        atomic_write(os.path.join(self.rapl_dir, "energy_uj"),
                     "%d\n" % (int(self.rapl_uj) % self.rapl_max))
        atomic_write(self.stamp, "%d %.9f\n" % (int(self.rapl_uj) % self.rapl_max, self.t))
        atomic_write(os.path.join(self.proc, "stat"),
                     "cpu  %d 0 0 %d 0 0 0 0 0 0\n%sintr 0\nctxt 0\nbtime 1700000000\n"
                     % (int(self.busy_ticks), int(self.idle_ticks),
                        "".join("cpu%d 0 0 0 0 0 0 0 0 0 0\n" % c for c in range(FAKE_CPU["ncpus"]))))
        for pid, p in self.procs.items():
            if p["kind"] == "cpu" and p["role"]:
                self._write_proc(pid)


# ---------------------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------------------

WORKLOADS = {
    "gpu": {"A": "bf16 matmul loop, full rate", "B": "bf16 matmul loop, ~30 % duty cycle"},
    "cpu": {"A": "one core spinning", "B": "one core, ~30 % duty cycle"},
}


class RealWorkload:
    def __init__(self, kind, role, workdir, gpu_index):
        self.ready = os.path.join(workdir, "ready-%s-%s" % (kind, role))
        if os.path.exists(self.ready):
            os.unlink(self.ready)
        mode = "full" if role == "A" else "duty"
        script = os.path.join(HERE, "gpu_load.py" if kind == "gpu" else "cpu_load.py")
        env = dict(os.environ)
        if kind == "gpu":
            env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
            env["CUDA_VISIBLE_DEVICES"] = str(gpu_index)
        self.log = open(os.path.join(workdir, "load-%s-%s.log" % (kind, role)), "w")
        self.p = subprocess.Popen([sys.executable, script, mode, self.ready], env=env,
                                  stdout=self.log, stderr=subprocess.STDOUT)
        self.pid = self.p.pid
        self.name = "%s %s" % (kind, role)

    def wait_ready(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if os.path.exists(self.ready):
                return True
            if self.p.poll() is not None:
                return False
            time.sleep(0.1)
        return False

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
            try:
                self.p.wait(15)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        self.log.close()
        with open(self.log.name) as f:
            tail = f.read()[-2000:]
        if tail.strip():
            for line in tail.strip().splitlines()[-5:]:
                log("  [%s] %s" % (self.name, line))


class FakeWorkload:
    def __init__(self, fake, kind, role):
        self.fake = fake
        self.pid = fake.spawn(kind, role)

    def wait_ready(self, timeout):
        return True

    def stop(self):
        self.fake.kill(self.pid)


# ---------------------------------------------------------------------------------------------
# virtwatt-host and its metrics
# ---------------------------------------------------------------------------------------------

FAMILIES = ("kepler_node_gpu_joules_total", "kepler_process_gpu_joules_total",
            "kepler_container_gpu_joules_total", "kepler_node_cpu_joules_total",
            "kepler_process_cpu_joules_total", "virtwatt_node_gpu_unattributed_joules_total",
            "virtwatt_node_gpu_idle_baseline_watts", "virtwatt_node_cpu_idle_baseline_watts")


def parse_metrics(text):
    """{family: [(labels, value)]} for FAMILIES (tests/exposition.py reads the text)."""
    out = {f: [] for f in FAMILIES}
    for name, labels, value in Exposition(text).samples:
        if name in out:
            out[name].append((labels, value))
    return out


def summarize(m):
    """One scrape's figures: node GPU and CPU package J, per PID GPU and CPU J, per container."""
    s = {"node_gpu": None, "node_cpu": None, "gpu_unattributed": None, "gpu": {}, "cpu": {},
         "ctr_gpu": {}, "gpu_idle_baseline": {}, "cpu_idle_baseline": {}}
    if m["kepler_node_gpu_joules_total"]:
        s["node_gpu"] = sum(v for _, v in m["kepler_node_gpu_joules_total"])
    pkg = [v for l, v in m["kepler_node_cpu_joules_total"] if l.get("zone") == "package"]
    if pkg:
        s["node_cpu"] = sum(pkg)
    for l, v in m["kepler_process_gpu_joules_total"]:
        s["gpu"][l.get("pid")] = s["gpu"].get(l.get("pid"), 0.0) + v
        if l.get("container_id"):
            s.setdefault("pid_ctr", {})[l.get("pid")] = l["container_id"]
    for l, v in m["kepler_process_cpu_joules_total"]:
        if l.get("zone") == "package":
            s["cpu"][l.get("pid")] = s["cpu"].get(l.get("pid"), 0.0) + v
    for l, v in m["kepler_container_gpu_joules_total"]:
        s["ctr_gpu"][l.get("container_id")] = s["ctr_gpu"].get(l.get("container_id"), 0.0) + v
    if m["virtwatt_node_gpu_unattributed_joules_total"]:
        s["gpu_unattributed"] = sum(v for _, v in m["virtwatt_node_gpu_unattributed_joules_total"])
    for l, v in m["virtwatt_node_gpu_idle_baseline_watts"]:
        s["gpu_idle_baseline"][l.get("gpu")] = (l.get("method"), v)
    for l, v in m["virtwatt_node_cpu_idle_baseline_watts"]:
        if l.get("zone") == "package":
            s["cpu_idle_baseline"][l.get("path", "")] = (l.get("method"), v)
    return s


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_host(args, outdir, sysfs, procfs, nvml_path, interval, sample):
    port = free_port()
    argv = list(args.host_cmd) + [
        "--host.sysfs=" + sysfs, "--host.procfs=" + procfs, "--libvirt.uri=",
        "--passthrough.enable=false", "--web.listen-address=127.0.0.1:%d" % port,
        "--monitor.interval=" + interval, "--monitor.sample-interval=" + sample,
        "--metrics=node,process,container", "--metrics.process-top-n=50",
        "--kube.node-name=truth"]
    if nvml_path:
        argv.append("--gpu.nvml-library=" + nvml_path)
    else:
        argv.append("--gpu.enable=false")
    if args.fake:
        argv.append("--cpu.accounting=procfs")
    log("virtwatt-host: " + " ".join(argv))
    hlog = open(os.path.join(outdir, "host.log"), "w")
    def realtime():
        # The self-test's fakes move in real time, and the daemon's power per interval is energy
        # over its own clock: on a loaded machine (CI) it runs at real-time priority, as the
        # fakes do, so that scheduling delays do not pass for power. Real meters need not.
        os.setsid()
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
        except (OSError, AttributeError):
            pass

    p = subprocess.Popen(argv, stdout=hlog, stderr=subprocess.STDOUT,
                         preexec_fn=realtime if args.fake else os.setsid)
    url = "http://127.0.0.1:%d/metrics" % port
    end = time.monotonic() + 30
    while time.monotonic() < end:
        if p.poll() is not None:
            raise RuntimeError("virtwatt-host exited (%d): see host.log" % p.returncode)
        try:
            body = urllib.request.urlopen(url, timeout=2).read().decode()
            if "kepler_node_cpu_joules_total" in body or "kepler_node_gpu_joules_total" in body:
                return p, url
        except OSError:
            pass
        time.sleep(0.2)
    p.terminate()
    raise RuntimeError("virtwatt-host did not serve %s within 30 s: see host.log" % url)


# ---------------------------------------------------------------------------------------------
# Sampling: the meters every 50 ms, virtwatt's metrics every 100 ms, on one clock
# ---------------------------------------------------------------------------------------------


class Sampler:
    def __init__(self, nvml, rapl, url):
        self.nvml, self.rapl, self.url = nvml, rapl, url
        # (t, gpu counter J, gpu power W, gpu integrated J, package J, t of the package read)
        self.meter = []
        self.tool = []  # (t, summary)
        self.gpu_int = 0.0
        self.stop = False
        self.errors = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _read_meters(self, t):
        ge = gp = None
        if self.nvml:
            rows = self.nvml.read()
            es = [e for e, _ in rows]
            ps = [p for _, p in rows]
            ge = sum(es) if all(e is not None for e in es) else None
            gp = sum(ps) if all(p is not None for p in ps) else None
            if gp is not None and self.meter and self.meter[-1][2] is not None:
                self.gpu_int += (t - self.meter[-1][0]) * (gp + self.meter[-1][2]) / 2
        tr = time.monotonic()
        re_ = self.rapl.read() if self.rapl else None
        if re_ is not None and self.rapl.at is not None:
            tr = self.rapl.at  # the fake's own time for this value
        elif re_ is not None and time.monotonic() - tr > 0.02:
            re_ = None  # this thread stalled in the read: the value is not of time tr
        self.meter.append((t, ge, gp, self.gpu_int, re_, tr))

    def _run(self):
        k = 0
        while not self.stop:
            t = time.monotonic()
            self._read_meters(t)
            if k % 2 == 0:
                try:
                    body = urllib.request.urlopen(self.url, timeout=2).read().decode()
                    self.tool.append((t, summarize(parse_metrics(body))))
                except (OSError, ValueError):
                    self.errors += 1
            k += 1
            time.sleep(max(0.0, 0.05 - (time.monotonic() - t)))

    def close(self):
        self.stop = True
        self.thread.join()

    def meter_at(self, t, col):
        """The meter column col at time t, interpolated between samples."""
        m = self.meter
        lo, hi = 0, len(m) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if m[mid][0] < t:
                lo = mid + 1
            else:
                hi = mid
        b = m[lo]
        a = m[lo - 1] if lo > 0 else b
        tc = 5 if col == 4 else 0
        if a[col] is None or b[col] is None:
            return None
        if b[tc] <= a[tc] or t >= b[tc]:
            return b[col]
        return a[col] + (b[col] - a[col]) * max(0.0, t - a[tc]) / (b[tc] - a[tc])


def fresh(sampler, key, t0, t1):
    """Scrapes in [t0, t1] that saw a new publication (the node counter `key` moved)."""
    out, prev = [], None
    for t, s in sampler.tool:
        v = s.get(key)
        if v is not None and prev is not None and v != prev and t0 <= t <= t1:
            out.append((t, s))
        if v is not None:
            prev = v
    return out


# ---------------------------------------------------------------------------------------------
# The protocol
# ---------------------------------------------------------------------------------------------


class Interrupted(Exception):
    pass


def on_term(_sig, _frame):
    raise Interrupted("interrupted (SIGTERM)")


def run_protocol(kind, sampler, make, seconds, settle, ready_timeout, done):
    """Phases idle, A, B, A+B, idle-after, each appended to done ({name, t0, t1, pids}) as it
    ends, so that an interrupted run keeps the phases it finished."""
    for name, roles, secs in (("idle", (), seconds), ("A", ("A",), seconds),
                              ("B", ("B",), seconds), ("A+B", ("A", "B"), seconds),
                              ("idle-after", (), max(2 * settle, seconds / 2))):
        loads = {}
        try:
            for r in roles:
                loads[r] = make(kind, r)
            if not all(w.wait_ready(ready_timeout) for w in loads.values()):
                raise RuntimeError("%s workload %s did not start (see run.log)" % (kind, name))
            t0 = time.monotonic()
            log("%s phase %-10s %5.1f s  pids %s" % (kind, name, secs,
                                                     " ".join("%s=%d" % (r, w.pid) for r, w in loads.items())))
            time.sleep(secs)
            t1 = time.monotonic()
        finally:
            for w in loads.values():
                w.stop()
        done.append({"name": name, "t0": t0, "t1": t1,
                     "pids": {r: str(w.pid) for r, w in loads.items()}})
        time.sleep(settle)  # the stopped workloads' last interval is published
    return done


def meter_window(sampler, t0, t1, col):
    """The meter's mean power (W) over [t0, t1] from its own samples (no interpolation), and the
    span it covers."""
    tc = 5 if col == 4 else 0
    m = [r for r in sampler.meter if t0 <= r[tc] <= t1 and r[col] is not None]
    if len(m) < 2 or m[-1][tc] <= m[0][tc]:
        return None, None
    return (m[-1][col] - m[0][col]) / (m[-1][tc] - m[0][tc]), m[-1][tc] - m[0][tc]


def analyse(kind, sampler, phases, interval_s, scripted=None):
    """
    Per phase: the meter's mean power, and virtwatt's split of its node energy over the whole
    intervals it published inside the phase. virtwatt's power for a workload is its share of
    virtwatt's node energy there times the meter's mean power in the phase: what virtwatt says
    the workload drew, free of when the scrapes fell against the daemon's intervals (the node's
    own error against the meter is the separate "node" figure).
    """
    node_key = "node_gpu" if kind == "gpu" else "node_cpu"
    ecol = 1 if kind == "gpu" else 4
    settle = interval_s + 0.3
    res = {"phases": {}, "workloads": {}}
    for ph in phases:
        row = {}
        row["meter_w"], row["meter_span_s"] = meter_window(sampler, ph["t0"] + settle, ph["t1"], ecol)
        if kind == "gpu":
            row["meter_power_int_w"], _ = meter_window(sampler, ph["t0"] + settle, ph["t1"], 3)
        if scripted:
            row["scripted_w"] = scripted["idle"] + sum(scripted[r] for r in ph["pids"])
        fr = fresh(sampler, node_key, ph["t0"] + interval_s + 0.15, ph["t1"])
        if len(fr) >= 2:
            (ta, sa), (tb, sb) = fr[0], fr[-1]
            de = sb[node_key] - sa[node_key]
            row["window_s"] = tb - ta
            row["tool_node_w"] = de / (tb - ta)
            row["share"] = {r: (sb[kind].get(pid, 0.0) - sa[kind].get(pid, 0.0)) / de if de > 0 else None
                            for r, pid in ph["pids"].items()}
            if kind == "gpu" and sb["gpu_unattributed"] is not None and sa["gpu_unattributed"] is not None and de > 0:
                row["unattributed_share"] = (sb["gpu_unattributed"] - sa["gpu_unattributed"]) / de
            if row["meter_w"] is not None:
                row["tool_w"] = {r: v * row["meter_w"] for r, v in row["share"].items() if v is not None}
            if scripted:
                row["tool_scripted_w"] = {r: v * row["scripted_w"] for r, v in row["share"].items() if v is not None}
            if kind == "gpu" and ph["name"] == "A+B" and row["meter_w"] is not None and de > 0:
                ctr = {}
                for r, pid in ph["pids"].items():
                    c = sb.get("pid_ctr", {}).get(pid)
                    if c:
                        ctr[c] = (sb["ctr_gpu"].get(c, 0.0) - sa["ctr_gpu"].get(c, 0.0)) / de * row["meter_w"]
                if ctr:
                    row["tool_container_w"] = ctr
        res["phases"][ph["name"]] = row
    P = res["phases"]

    def err(got, want):
        return 100.0 * (got - want) / want if got is not None and want else None

    for role in ("A", "B"):
        w = {"what": WORKLOADS[kind][role]}
        alone, tog, idle = P.get(role, {}), P.get("A+B", {}), P.get("idle", {})
        if idle.get("meter_w") is not None and alone.get("meter_w") is not None:
            w["increment_w"] = alone["meter_w"] - idle["meter_w"]
        w["attributed_alone_w"] = alone.get("tool_w", {}).get(role)
        w["attributed_together_w"] = tog.get("tool_w", {}).get(role)
        w["error_together_pct"] = err(w["attributed_together_w"], w.get("increment_w"))
        w["error_alone_pct"] = err(w["attributed_alone_w"], w.get("increment_w"))
        if scripted:
            w["scripted_increment_w"] = scripted[role]
            w["scripted_attributed_together_w"] = tog.get("tool_scripted_w", {}).get(role)
            w["scripted_attributed_alone_w"] = alone.get("tool_scripted_w", {}).get(role)
            w["error_together_scripted_pct"] = err(w["scripted_attributed_together_w"], scripted[role])
            w["error_alone_scripted_pct"] = err(w["scripted_attributed_alone_w"], scripted[role])
        res["workloads"][role] = w
    if P.get("idle", {}).get("meter_w") is not None and P.get("A+B", {}).get("meter_w") is not None:
        # A real device need not add up (a power cap, shared clocks, contention): the together
        # increment against the two alone increments, and each workload's error once the alone
        # increments are scaled to the together increment, which is the split's own error.
        tog = res["together_increment_w"] = P["A+B"]["meter_w"] - P["idle"]["meter_w"]
        inc = [res["workloads"][r].get("increment_w") for r in ("A", "B")]
        if all(i is not None and i > 0.5 for i in inc):  # each a measurable rise (W)
            res["additivity_pct"] = err(tog, sum(inc))
            for r, i in zip(("A", "B"), inc):
                w = res["workloads"][r]
                w["split_truth_w"] = tog * i / sum(inc)
                w["error_split_pct"] = err(w.get("attributed_together_w"), w["split_truth_w"])
    # The node: every publication of the whole protocol, virtwatt's energy against the meter's
    # (read by this script at the scrape that first saw each publication).
    fr = fresh(sampler, node_key, phases[0]["t0"], phases[-1]["t1"] + 1.0)
    if len(fr) >= 2:
        (ta, sa), (tb, sb) = fr[0], fr[-1]
        me = sampler.meter_at(tb, ecol) - sampler.meter_at(ta, ecol)
        te = sb[node_key] - sa[node_key]
        res["node"] = {"window_s": tb - ta, "meter_j": me, "tool_j": te, "error_pct": err(te, me)}
        if kind == "gpu":
            ie = sampler.meter_at(tb, 3) - sampler.meter_at(ta, 3)
            res["node"]["power_int_j"] = ie
            res["node"]["power_int_error_pct"] = err(ie, me)
        if sb.get(kind + "_idle_baseline"):
            res["node"]["idle_baseline"] = sb[kind + "_idle_baseline"]
    return res


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------


def f(v, fmt="%.1f"):
    return fmt % v if isinstance(v, (int, float)) else "n/a"


def table(results):
    L = []
    head = results["head"]
    L.append("# virtwatt truth check: %s" % ("SELF-TEST on fakes with known truth, not a measurement"
                                              if head["fake"] else "measurement"))
    L.append("")
    L.append("%s, host %s, kernel %s, %s, %s s per phase" % (
        head["date"], head["hostname"], head["kernel"], head["virtwatt"], f(head["seconds"], "%g")))
    L.append("")
    for m in head["meters"]:
        L.append("- meter: " + m)
    for a in results.get("absent", []):
        L.append("- absent: " + a)
    for kind, label, truth in (("gpu", "GPU", "NVML's total-energy counter"),
                               ("cpu", "CPU package", "the package energy counter (RAPL or hwmon)")):
        r = results.get(kind)
        if not r:
            continue
        sc = r.get("scripted")
        L.append("")
        L.append("## %s: truth = %s%s" % (label, truth, ", and the fake's scripted powers" if sc else ""))
        L.append("")
        cols = ["phase", "meter W"]
        if kind == "gpu":
            cols.append("NVML power integrated W")
        if sc:
            cols.append("scripted W")
        cols += ["virtwatt node W (scrape clock)", "A share %", "B share %"]
        if kind == "gpu":
            cols.append("unattributed share %")
        L.append("| " + " | ".join(cols) + " |")
        L.append("|" + "---|" * len(cols))
        for name, p in r["phases"].items():
            sh = p.get("share", {})
            cells = [name, f(p.get("meter_w"), "%.2f")]
            if kind == "gpu":
                cells.append(f(p.get("meter_power_int_w"), "%.2f"))
            if sc:
                cells.append(f(p.get("scripted_w"), "%.2f"))
            cells.append(f(p.get("tool_node_w"), "%.2f"))
            for role in ("A", "B"):
                cells.append(f(100 * sh[role], "%.2f") if sh.get(role) is not None else "-")
            if kind == "gpu":
                u = p.get("unattributed_share")
                cells.append(f(100 * u, "%.2f") if u is not None else "n/a")
            L.append("| " + " | ".join(cells) + " |")
        L.append("")
        cols = ["workload", "alone increment W (meter)", "virtwatt alone W", "virtwatt together W",
                "error together %", "error alone %", "error of the split %"]
        if sc:
            cols += ["scripted increment W", "error together vs scripted %", "error alone vs scripted %"]
        L.append("| " + " | ".join(cols) + " |")
        L.append("|" + "---|" * len(cols))
        for role, w in r["workloads"].items():
            cells = ["%s: %s" % (role, w["what"]), f(w.get("increment_w"), "%.2f"),
                     f(w.get("attributed_alone_w"), "%.2f"), f(w.get("attributed_together_w"), "%.2f"),
                     f(w.get("error_together_pct"), "%+.2f"), f(w.get("error_alone_pct"), "%+.2f"),
                     f(w.get("error_split_pct"), "%+.2f")]
            if sc:
                cells += [f(w.get("scripted_increment_w"), "%.2f"),
                          f(w.get("error_together_scripted_pct"), "%+.2f"),
                          f(w.get("error_alone_scripted_pct"), "%+.2f")]
            L.append("| " + " | ".join(cells) + " |")
        ctr = r["phases"].get("A+B", {}).get("tool_container_w")
        if ctr:
            inc = sum(w.get("increment_w") or 0 for w in r["workloads"].values())
            for c, v in ctr.items():
                cells = ["container %s (A and B)" % c[:12], f(inc, "%.2f"), "-", f(v, "%.2f"),
                         f(100 * (v - inc) / inc if inc else None, "%+.2f"), "-", "-"]
                L.append("| " + " | ".join(cells + (["", "", ""] if sc else [])) + " |")
        if r.get("additivity_pct") is not None:
            L.append("")
            L.append("Together the meter rose %.2f W over idle, %s %% against the sum of the alone "
                     "increments (the error of the split scales the alone increments to it)."
                     % (r["together_increment_w"], f(r["additivity_pct"], "%+.2f")))
        n = r.get("node")
        if n:
            L.append("")
            line = ("Node %s energy over the whole protocol (%.1f s): meter %.1f J, virtwatt %.1f J, error %s %%."
                    % (label, n["window_s"], n["meter_j"], n["tool_j"], f(n["error_pct"], "%+.3f")))
            if "power_int_j" in n:
                line += (" NVML's power integrated: %.1f J, %s %% against its counter."
                         % (n["power_int_j"], f(n["power_int_error_pct"], "%+.3f")))
            if n.get("idle_baseline"):
                line += " virtwatt's idle baseline at the end: " + ", ".join(
                    "%s%s %.2f W (%s)" % ("GPU " if kind == "gpu" else "", g, v, m)
                    for g, (m, v) in sorted(n["idle_baseline"].items())) + "."
            L.append(line)
    L.append("")
    L.append("virtwatt's W for a workload = its share of virtwatt's node energy over the intervals "
             "published inside the phase x the meter's mean power in the phase; the alone increment = "
             "the meter's mean power with the workload alone minus idle; error = (virtwatt - increment) "
             "/ increment.")
    if results.get("host_cpu_s") is not None:
        L.append("")
        L.append("virtwatt-host's own CPU time over the run: %.2f s in %.0f s (%.2f %% of one core)."
                 % (results["host_cpu_s"], results["duration_s"], 100 * results["host_cpu_s"] / results["duration_s"]))
    if results.get("host_said"):
        L.append("")
        L.append("virtwatt-host said:")
        L.append("")
        for l in results["host_said"]:
            L.append("    " + l)
    if results.get("error"):
        L.append("")
        L.append("FAILED: " + results["error"])
    return "\n".join(L) + "\n"


def write_series(outdir, sampler, pids):
    with open(os.path.join(outdir, "meter_series.csv"), "w") as fh:
        fh.write("t_s,gpu_counter_j,gpu_power_w,gpu_power_integrated_j,cpu_package_j,t_package_s\n")
        for row in sampler.meter:
            fh.write(",".join("" if v is None else "%.6f" % v for v in row) + "\n")
    with open(os.path.join(outdir, "tool_series.csv"), "w") as fh:
        # process columns: PID=J pairs (every process with GPU energy; the workloads' CPU energy)
        fh.write("t_s,node_gpu_j,node_cpu_package_j,gpu_unattributed_j,process_gpu_j,process_cpu_package_j\n")
        for t, s in sampler.tool:
            fh.write("%.6f,%s,%s,%s,%s,%s\n" % (
                t, "" if s["node_gpu"] is None else "%.6f" % s["node_gpu"],
                "" if s["node_cpu"] is None else "%.6f" % s["node_cpu"],
                "" if s["gpu_unattributed"] is None else "%.6f" % s["gpu_unattributed"],
                " ".join("%s=%.6f" % kv for kv in sorted(s["gpu"].items())),
                " ".join("%s=%.6f" % kv for kv in sorted(s["cpu"].items()) if kv[0] in pids)))


def main():
    global LOG_FILE
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1])
    ap.add_argument("outdir")
    ap.add_argument("--host-bin", required=True, help="the virtwatt-host to run (run.sh gives the bundle's)")
    ap.add_argument("--seconds", type=float, default=None, help="each phase (default 30; fake: 4)")
    ap.add_argument("--fake", action="store_true", help="self-test on the fake NVML and a fixture RAPL")
    ap.add_argument("--nvml-library", default=None, help="NVML to read (default: the driver's libnvidia-ml.so.1)")
    ap.add_argument("--sysfs", default="/sys")
    ap.add_argument("--procfs", default="/proc")
    ap.add_argument("--gpu-index", type=int, default=0, help="the GPU the workloads run on")
    ap.add_argument("--no-gpu", action="store_true")
    ap.add_argument("--no-cpu", action="store_true")
    ap.add_argument("--fake-sample-period-ms", type=int, default=0,
                    help="fake: the driver's process utilization sampling period (default: every call)")
    ap.add_argument("--budget", type=float, default=0,
                    help="seconds the whole run may take: a meter's protocol that would not fit is skipped")
    args = ap.parse_args()
    args.host_cmd = [args.host_bin]
    seconds = args.seconds if args.seconds is not None else (6.0 if args.fake else 30.0)
    interval, sample, interval_s = ("1s", "100ms", 1.0) if args.fake else ("1s", "200ms", 1.0)
    settle = interval_s + 0.3
    os.makedirs(args.outdir, exist_ok=True)
    signal.signal(signal.SIGTERM, on_term)
    LOG_FILE = open(os.path.join(args.outdir, "run.log"), "w")
    started = time.monotonic()

    fake = None
    sysfs, procfs = args.sysfs, args.procfs
    workdir = tempfile.mkdtemp(prefix="vw-truth-loads-")  # ready files, the workloads' output
    if args.fake:
        for kind, model in (("gpu", FAKE_GPU), ("cpu", FAKE_CPU)):
            WORKLOADS[kind] = {r: model[r]["what"] for r in ("A", "B")}
        if not args.nvml_library:
            sys.exit("truth: --fake needs --nvml-library (the fake libnvidia-ml.so.1 of tests/fake_nvml.c)")
        # In memory where there is a tmpfs: a disk's writeback on a busy machine would stall the
        # fake meters' files for seconds.
        shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        tmp = tempfile.mkdtemp(prefix="vw-truth-", dir=shm)
        fake = FakeMachine(tmp, args.fake_sample_period_ms)
        os.environ["FAKE_NVML_STATE"] = fake.nvml_state
        sysfs, procfs = fake.sys, fake.proc

    meters, absent = [], []
    nvml, why = (None, "GPU: skipped (--no-gpu)") if args.no_gpu else find_nvml(args.nvml_library)
    if nvml:
        for d in nvml.devices:
            meters.append("GPU %d: %s (%s), driver %s, NVML %s, energy counter %s" % (
                d["index"], d["name"], d["uuid"], nvml.driver, nvml.path,
                "yes" if d["counter"] else "NO (power only)"))
        if not any(d["counter"] for d in nvml.devices):
            absent.append("GPU: no device has NVML's energy counter (pre-Volta): no truth to compare with")
    else:
        absent.append(why)
    rapl = None
    if not args.no_cpu:
        rapl = EnergyFiles(sysfs)
        if args.fake:
            rapl.stamp = fake.stamp
        if rapl.zones and rapl.read() is not None:
            meters.append("CPU: %s %s" % (rapl.source, ", ".join(z[1] for z in rapl.zones)))
        else:
            absent.append("CPU: no readable RAPL (powercap) or hwmon package energy under %s%s"
                          % (sysfs, (": " + "; ".join(rapl.why)) if rapl.why else ""))
            rapl = None
    else:
        absent.append("CPU: skipped (--no-cpu)")
    gpu_ok = nvml is not None and all(d["counter"] for d in nvml.devices)
    if gpu_ok and not args.fake:
        try:
            import importlib.util
            if importlib.util.find_spec("torch") is None:
                absent.append("GPU: python3 has no torch (PyTorch): no GPU workload")
                gpu_ok = False
        except ImportError:
            gpu_ok = False
    for m in meters:
        log("meter: " + m)
    for a in absent:
        log("absent: " + a)

    version = subprocess.run(args.host_cmd + ["--version"], capture_output=True, text=True)
    head = {"fake": bool(args.fake), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "hostname": platform.node(), "kernel": platform.release(),
            "virtwatt": (version.stdout or version.stderr).strip().splitlines()[0] if (version.stdout or version.stderr) else "?",
            "seconds": seconds, "meters": meters}
    results = {"head": head, "absent": absent}
    host = sampler = None
    phases = {}
    rc = 0
    if not gpu_ok and not rapl:
        results["error"] = "no meter to compare with on this machine (see absent)"
        rc = 3
    try:
        if rc:
            raise RuntimeError(results["error"])
        host, url = start_host(args, args.outdir, sysfs, procfs, nvml.path if nvml else None,
                               interval, sample)
        sampler = Sampler(nvml if gpu_ok else None, rapl, url)
        time.sleep(settle)

        def make(kind, role):
            if fake:
                return FakeWorkload(fake, kind, role)
            return RealWorkload(kind, role, workdir, args.gpu_index)

        ready_timeout = 5 if args.fake else 120
        kinds = (["gpu"] if gpu_ok else []) + (["cpu"] if rapl else [])
        errors = []

        def protocol(kind):
            if args.budget and not fake:
                need = 4.5 * seconds + 5 * settle + (4 * 20 if kind == "gpu" else 0)
                if time.monotonic() - started + need > args.budget:
                    absent.append("%s: skipped, not enough of --budget %g s left (about %.0f s needed)"
                                  % (kind.upper(), args.budget, need))
                    return
            phases[kind] = []
            try:
                run_protocol(kind, sampler, make, seconds, settle, ready_timeout, phases[kind])
            except RuntimeError as e:
                errors.append(str(e))

        if fake:
            # The fakes' meters are independent: both protocols at once. A real GPU workload
            # uses CPU time too, so on a real machine they run one after the other.
            threads = [threading.Thread(target=protocol, args=(k,)) for k in kinds]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            for k in kinds:
                protocol(k)
        if errors:
            raise RuntimeError("; ".join(errors))
    except (RuntimeError, Interrupted) as e:
        log("truth: " + str(e))
        results["error"] = str(e)
        rc = rc or 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the results are written whatever comes
        if sampler:
            sampler.close()
            results["scrape_errors"] = sampler.errors
        for kind in [k for k in ("gpu", "cpu") if phases.get(k)]:
            scripted = None
            if fake and kind == "gpu":
                scripted = {r: FAKE_GPU["w_per_sm"] * FAKE_GPU[r]["sm"] for r in ("A", "B")}
                scripted["idle"] = FAKE_GPU["idle_w"]
            elif fake:
                scripted = {r: FAKE_CPU["w_per_core"] * FAKE_CPU[r]["cores"] for r in ("A", "B")}
                scripted["idle"] = FAKE_CPU["idle_w"]
            try:
                results[kind] = analyse(kind, sampler, phases[kind], interval_s, scripted)
            except (ArithmeticError, KeyError, TypeError, ValueError, IndexError) as e:
                results[kind] = {"phases": {}, "workloads": {}, "analysis_error": repr(e)}
                results["error"] = (results.get("error", "") + "; %s analysis: %r" % (kind, e)).lstrip("; ")
                rc = rc or 1
            results[kind]["phase_times"] = phases[kind]
            results[kind]["scripted"] = scripted
        if sampler:
            write_series(args.outdir, sampler,
                         {pid for k in ("gpu", "cpu") for ph in phases.get(k, []) for pid in ph["pids"].values()})
        if host:
            try:  # the daemon's own CPU time over the run (its main process; threads included)
                st = open("/proc/%d/stat" % host.pid).read().rsplit(")", 1)[1].split()
                results["host_cpu_s"] = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError, ValueError):
                pass
            host.terminate()
            try:
                host.wait(10)
            except subprocess.TimeoutExpired:
                host.kill()
        if fake:
            fake.close()
            shutil.rmtree(fake.root, ignore_errors=True)
        if nvml:
            nvml.close()
        shutil.rmtree(workdir, ignore_errors=True)
    results["duration_s"] = time.monotonic() - started
    try:  # what the daemon said about the GPUs and its CPU accounting
        with open(os.path.join(args.outdir, "host.log")) as fh:
            results["host_said"] = [l.strip() for l in fh
                                    if any(k in l for k in ("gpu", "nvml", "cpu: accounting", "level=warn", "level=error"))][:20]
    except OSError:
        pass
    with open(os.path.join(args.outdir, "results.json"), "w") as fh:
        json.dump(results, fh, indent=1, sort_keys=True)
    text = table(results)
    with open(os.path.join(args.outdir, "table.md"), "w") as fh:
        fh.write(text)
    log("")
    log(text)
    log("truth: %.0f s; %s" % (results["duration_s"], args.outdir))
    return rc


if __name__ == "__main__":
    sys.exit(main())
