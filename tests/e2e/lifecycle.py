#!/usr/bin/env python3
"""What a cloud operator does to a VM every day, against the live set-up of tests/e2e/run.sh
(mode "lifecycle"): virsh suspend/resume, save/restore (the QEMU process replaced, same UUID,
the guest's memory restored), a twin QEMU with the VM's UUID beside the running one (a live
migration's destination on this host), reset (the guest reboots, its daemon starts again with
no state).

Each operation is bracketed by quiescent points (checks.settle: the meter held until host and
guest read the same twice), so host and guest are compared over exactly the same energy, and
asserts:
  - the host: its VM counters never go back (a scrape every 0.5 s, vwe2e.Watch), at most one
    series per zone for the VM at any scrape (never two QEMUs counted for one UUID);
  - suspend: no active energy for the VM while it is paused beyond what its QEMU process used
    (a paused QEMU's main loop: under 2 % of the node's active energy), and its idle share
    follows the reservation rule (docs/attribution.md "Idle by reservation": a paused VM
    reserves its vCPUs: node idle x vCPUs / max(host CPUs, reserved));
  - the guest: back on the passthrough within a bound, its counters never go back (except
    across the reset, where its daemon is a new process: one Prometheus counter reset), and
    over each operation its workload energy is the host's for the VM (within 1 %), or, across
    the reset, at most the host's (nothing invented for the new boot).
Prints TAP lines without a plan (run.sh adds cleanup and the plan); the count to
$E2E_WORK/ntests. Also callable from another script: run(hw, gw) with running watchers.
"""
import os
import subprocess
import sys
import threading
import time

import vwe2e
from vwe2e import Metrics, log, tap, try_scrape, wait_for
import checks
from checks import guest_source, guest_sum, host_vm, settle

W = os.environ
WORK, HOST, GUEST, UUID, NAME = W["E2E_WORK"], W["E2E_HOST"], W["E2E_GUEST"], W["E2E_UUID"], \
    W["E2E_NAME"]
URI = W["E2E_URI"]
PT = "virtwatt_guest_passthrough_"
PAUSE_S = float(W.get("E2E_PAUSE_S", "10"))
PARTS = W.get("E2E_LIFECYCLE", "suspend,save,twin,reset").split(",")


def virsh(*args, timeout=120):
    p = subprocess.run(["virsh", "-c", URI] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).strip()


def qemu_pid():
    """The domain's QEMU now (libvirt's pid file, in its private namespace)."""
    try:
        with open(os.path.join(WORK, "libvirtd.pid")) as f:
            lv = f.read().strip()
        with open("/proc/%s/root/run/libvirt/qemu/%s.pid" % (lv, NAME)) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def adopt_qemu():
    """A new QEMU for the domain: recorded for run.sh's cleanup check, its threads at nice -10
    as run.sh does for the first (checks.py's model span needs the VM its CPU)."""
    p = qemu_pid()
    if p is None:
        return None
    with open(os.path.join(WORK, "qemu.pid"), "w") as f:
        f.write("%d\n" % p)
    with open(W["E2E_PIDS"], "a") as f:
        f.write("%d\n" % p)
    subprocess.run([os.path.join(WORK, "stamp.sh")], check=False)
    for t in os.listdir("/proc/%d/task" % p):
        subprocess.run(["renice", "-n", "-10", "-p", t], capture_output=True, check=False)
    return p


def cpu_ticks(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            s = f.read().rsplit(")", 1)[1].split()
        return int(s[11]) + int(s[12])  # utime + stime
    except (OSError, ValueError, IndexError, TypeError):
        return None


def busy_ticks():
    """The host's CPU time spent not idle (user, nice, system, irq, softirq, steal), in ticks."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
        return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
    except (OSError, ValueError, IndexError):
        return None


def pt(m, what):
    return m.sum(PT + what) if m else 0


def host_frames(m):
    return m.sum("virtwatt_vm_passthrough_frames_total", vm_id=UUID) if m else 0


def rejected(m):
    return {l.get("reason"): v for n, l, v in (m.samples if m else [])
            if n == PT + "rejected_total" and v}


def no_rejects(tag, a, b):
    """Between two quiescent points: every frame the guest got accepted, no host restart
    counted (the host did not restart: the same epoch throughout)."""
    if not (a and b):
        tap(False, "%s: every frame accepted, no host restart counted" % tag, "no settled point")
        return
    g1, g2 = a[1], b[1]
    tap(rejected(g2) == rejected(g1) and pt(g2, "accepted_total") > pt(g1, "accepted_total") and
        pt(g2, "host_restarts_total") == pt(g1, "host_restarts_total"),
        "%s: every frame the guest read was accepted, no host restart counted" % tag,
        "guest frames %d -> %d, accepted %d -> %d, rejected %r -> %r, host restarts %d -> %d; "
        "host frames to the VM %d -> %d" % (
            pt(g1, "frames_total"), pt(g2, "frames_total"), pt(g1, "accepted_total"),
            pt(g2, "accepted_total"), rejected(g1), rejected(g2), pt(g1, "host_restarts_total"),
            pt(g2, "host_restarts_total"), host_frames(a[0]), host_frames(b[0])))


def vm_series(m):
    """How many kepler_vm_cpu_joules_total series name the VM, per zone (never more than one)."""
    n = {}
    for name, l, _ in m.samples:
        if name == "kepler_vm_cpu_joules_total" and l.get("vm_id") == UUID:
            n[l.get("zone")] = n.get(l.get("zone"), 0) + 1
    return max(n.values()) if n else 0


class Doubles:
    """Wraps a host watcher: records the most series any scrape showed for the VM in a zone."""

    def __init__(self, hw):
        self.hw, self.most, self.seen = hw, 0, None

    def poll(self):
        m = self.hw.latest
        if m is not None and m is not self.seen:
            self.seen = m
            self.most = max(self.most, vm_series(m))


def back_on_passthrough(t0, base, timeout=90):
    """The guest on the passthrough with a frame accepted after `base` (its count before the
    operation: a restored guest still holds its last frame, fresh to its stopped clock)."""
    m = wait_for(lambda: (lambda m: m if m and guest_source(m) == "passthrough" and
                          pt(m, "accepted_total") > base else None)(try_scrape(GUEST)),
                 timeout, 0.25)
    return m, time.monotonic() - t0


def same_energy(tag, a, b, allow_less=False):
    """Guest workload energy against the host's for the VM between two quiescent points."""
    if not (a and b):
        tap(False, "%s: the guest's energy is the host's for the VM" % tag, "no settled point")
        return
    dh = host_vm(b[0]) - host_vm(a[0])
    dg = guest_sum(b[1]) - (0 if allow_less else guest_sum(a[1]))
    err = (dg - dh) / dh if dh > 0 else 1
    if allow_less:
        tap(dh > 0 and 0 < dg <= dh * 1.01 + 0.2,
            "%s: the guest's new daemon counts no more than the host gave the VM since the last "
            "point (nothing invented for the new boot)" % tag,
            "guest %.3f J since its start, host %.3f J for the VM over the span" % (dg, dh))
    else:
        tap(dh > 0 and abs(err) <= 0.01,
            "%s: the guest's workload energy is the host's for the VM (within 1 %%)" % tag,
            "guest %.3f J, host %.3f J, difference %+.3f %%" % (dg, dh, 100 * err))


def suspend_resume(d, gw):
    a = settle("suspend: before")
    qp = qemu_pid()
    c0, t0 = cpu_ticks(qp), time.monotonic()
    rc, out = virsh("suspend", NAME)
    time.sleep(1.5)  # the host's interval in which the vCPU stopped
    h1 = try_scrape(HOST)
    c1, b1 = cpu_ticks(qp), busy_ticks()
    time.sleep(PAUSE_S)
    d.poll()
    h2 = try_scrape(HOST)
    c2, b2 = cpu_ticks(qp), busy_ticks()
    state = virsh("domstate", NAME)[1]
    rc2, out2 = virsh("resume", NAME)
    t_res = time.monotonic()
    tap(rc == 0 and rc2 == 0 and state == "paused",
        "suspend: virsh suspend, %.0f s paused, virsh resume" % PAUSE_S,
        "%s; state while paused %r; %s" % (out, state, out2))
    if h1 and h2:
        dva, dvi = host_vm(h2, "active") - host_vm(h1, "active"), \
            host_vm(h2, "idle") - host_vm(h1, "idle")
        dna, dni = checks.node(h2, "active") - checks.node(h1, "active"), \
            checks.node(h2, "idle") - checks.node(h1, "idle")
        hz = os.sysconf("SC_CLK_TCK")
        qcpu = (c2 - c1) / hz if c1 is not None and c2 is not None else -1
        busy = (b2 - b1) / hz if b1 is not None and b2 is not None else -1
        # Its QEMU's own CPU while paused (timers, the monitor) is its share of the node's
        # active energy: on a quiet host 0.02 CPU-s of QEMU can be 2 % of all (0.43 J of 19 J
        # with 0.9 CPU-s busy in all). Bound: 1.5 x that share (the daemon's intervals are not
        # these reads'), at least 2 % of the node's.
        share = qcpu / busy if qcpu >= 0 and busy > 0 else 0
        tap(dva <= max(0.02, 1.5 * share) * dna + 0.01,
            "suspend: the paused VM gets no active energy beyond its idle QEMU's",
            "VM active +%.3f J over %.1f s paused (node active +%.3f J; QEMU used %.2f CPU-s "
            "of the host's %.2f busy CPU-s while paused)" % (dva, PAUSE_S, dna, qcpu, busy))
        # Idle by reservation: the VM reserves its vCPUs (1) of the host's CPUs.
        ncpu = os.cpu_count()
        want = dni * 1 / max(ncpu, 1)
        tap(abs(dvi - want) <= 0.01 * want + 0.01,
            "suspend: the paused VM keeps its idle share (its vCPUs of the host's CPUs)",
            "VM idle +%.3f J, node idle +%.3f J x 1/%d = %.3f J%s" % (
                dvi, dni, ncpu, want, " (the node's idle fitted at 0 W on this loaded machine: "
                "nothing to share)" if dni == 0 else ""))
    else:
        tap(False, "suspend: the paused VM gets no active energy", "no host scrape")
        tap(False, "suspend: the paused VM keeps its idle share", "no host scrape")
    g0 = a[1] if a else None
    m, dt = back_on_passthrough(t_res, pt(g0, "accepted_total"))
    tap(m is not None and dt <= 5,
        "suspend: the guest accepts a new frame within 5 s of the resume",
        "after %.1f s; frames %d -> %d, accepted %d -> %d, rejected %d -> %d, host restarts "
        "%d -> %d" % (dt, pt(g0, "frames_total"), pt(m, "frames_total"),
                      pt(g0, "accepted_total"), pt(m, "accepted_total"),
                      pt(g0, "rejected_total"), pt(m, "rejected_total"),
                      pt(g0, "host_restarts_total"), pt(m, "host_restarts_total")))
    b = settle("suspend: after")
    same_energy("suspend %.0f s and resume" % PAUSE_S, a, b)
    no_rejects("suspend and resume", a, b)
    d.poll()


class Timeline(threading.Thread):
    """Every 0.25 s: whether the host shows the VM, its energy, the guest's source, accepted
    frames and node energy; logged at the end (what happened around an operation)."""

    def __init__(self):
        super().__init__(daemon=True)
        self.rows, self.stop, self.t0 = [], False, time.monotonic()

    def run(self):
        while not self.stop:
            try:
                self.row()
            except Exception as e:  # noqa: BLE001  (a log, never a check)
                self.rows.append("%5.1f %r" % (time.monotonic() - self.t0, e))
            time.sleep(0.25)

    def row(self):
        def get(addr):
            try:
                return Metrics(vwe2e.fetch(addr, timeout=1))
            except Exception:  # noqa: BLE001
                return None
        h, g = get(HOST), get(GUEST)
        chan = [l.get("state") for n, l, v in (h.samples if h else [])
                if n == "virtwatt_vm_passthrough_channel_state" and l.get("vm_id") == UUID and v]
        self.rows.append("%5.1f host %s %.1f J frames %d chan %s | guest %s acc %d age %.1f node "
                         "%.1f J" % (
                             time.monotonic() - self.t0,
                             "VM" if h and h.has("kepler_vm_cpu_joules_total", vm_id=UUID)
                             else "--", host_vm(h) if h else -1, host_frames(h),
                             ",".join(chan) or "-", guest_source(g) if g else "--",
                             pt(g, "accepted_total"), pt(g, "last_frame_age_seconds"),
                             g.sum("kepler_node_cpu_joules_total", zone="package") if g else -1))

    def mark(self, what):
        self.rows.append("%5.1f --- %s" % (time.monotonic() - self.t0, what))

    def finish(self, tag, show):
        self.stop = True
        self.join(5)
        if show:
            log("%s timeline:\n%s" % (tag, "\n".join(self.rows)))


def save_restore(d, gw):
    save = os.path.join(WORK, "vm.save")
    a = settle("save: before")
    g0 = a[1] if a else try_scrape(GUEST)
    old = qemu_pid()
    tl = Timeline()
    tl.start()
    t0 = time.monotonic()
    rc, out = virsh("save", NAME, save)
    t_saved = time.monotonic() - t0
    gone = wait_for(lambda: (lambda m: m if m and not m.has("kepler_vm_cpu_joules_total",
                                                           vm_id=UUID) else None)(
        try_scrape(HOST)), 5, 0.25)
    d.poll()
    t1 = time.monotonic()
    tl.mark("virsh restore")
    rc2, out2 = virsh("restore", save)
    t_restored = time.monotonic() - t1
    tl.mark("restored")
    new = adopt_qemu()
    tap(rc == 0 and rc2 == 0 and new and new != old,
        "save/restore: virsh save (%.1f s), virsh restore (%.1f s): a new QEMU" % (
            t_saved, t_restored),
        "%s; %s; QEMU %s -> %s; the host dropped the VM's series while it was saved: %s "
        "(host frames to the VM then %d)" % (out, out2, old, new, "yes" if gone else "no",
                                             host_frames(gone)))
    m, dt = back_on_passthrough(t1, pt(g0, "accepted_total"))
    # The guest's staleness window is 3 s: past it, it counts its model until frames come.
    tap(m is not None and dt <= 5,
        "save/restore: the guest accepts a new frame within 5 s of the restore",
        "after %.1f s; accepted %d -> %d, rejected %d -> %d (%s), host restarts %d -> %d" % (
            dt, pt(g0, "accepted_total"), pt(m, "accepted_total"), pt(g0, "rejected_total"),
            pt(m, "rejected_total"), ", ".join(
                "%s %d" % (l.get("reason"), v) for n, l, v in (m.samples if m else [])
                if n == PT + "rejected_total" and v) or "none",
            pt(g0, "host_restarts_total"), pt(m, "host_restarts_total")))
    failed = vwe2e.failed
    b = settle("save/restore: after")
    same_energy("save and restore", a, b)
    no_rejects("save and restore", a, b)
    tl.finish("save/restore", vwe2e.failed > failed or dt > 3)  # (a slow frame: where it went)
    if os.path.exists(save):
        os.unlink(save)
    d.poll()


def reset(d, gw):
    a = settle("reset: before")
    g0 = try_scrape(GUEST)
    start0 = g0.sum("process_start_time_seconds") if g0 else 0
    gw.paused = True  # the guest's daemon starts again: its counters with it
    t0 = time.monotonic()
    rc, out = virsh("reset", NAME)
    down = wait_for(lambda: try_scrape(GUEST) is None or
                    try_scrape(GUEST).sum("process_start_time_seconds") != start0, 30, 0.25)
    gw.forget()
    gw.paused = False
    m, dt = back_on_passthrough(t0, 0, 120)
    start1 = m.sum("process_start_time_seconds") if m else 0
    tap(rc == 0 and down and m is not None and start1 != start0 and dt <= 60,
        "reset: the guest reboots, its daemon starts again and is on the passthrough within 60 s",
        "%s; after %.1f s; guest daemon start %.0f -> %.0f; QEMU %s" % (
            out, dt, start0, start1, qemu_pid()))
    b = settle("reset: after")
    same_energy("reset", a, b, allow_less=True)
    d.poll()


def twin(d, gw):
    """Two QEMUs for the VM's UUID at once, as on a host during a live migration into it: a
    destination QEMU (-incoming defer, vCPUs stopped) beside the running one, for 6 s. The VM
    stays one VM, its QEMU the running one (libvirt's: its PID), never the twin's energy: at
    every host scrape meanwhile at most one series per zone, and the process series that carry
    the VM's ID are its QEMU's alone and grow as the VM's active energy does."""
    qp = qemu_pid()
    tw = subprocess.Popen(["qemu-system-x86_64", "-uuid", UUID, "-name",
                           "guest=%s-incoming,debug-threads=on" % NAME, "-machine", "none",
                           "-nodefaults", "-display", "none", "-S", "-incoming", "defer"],
                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    with open(W["E2E_PIDS"], "a") as f:
        f.write("%d\n" % tw.pid)
    subprocess.run([os.path.join(WORK, "stamp.sh")], check=False)
    bad, scrapes, seen_twin, first = [], 0, False, None
    end = time.monotonic() + 6
    while time.monotonic() < end:
        m = try_scrape(HOST)
        if m:
            scrapes += 1
            pids = {l.get("pid") for n, l, _ in m.samples
                    if n == "kepler_process_cpu_joules_total" and l.get("vm_id") == UUID}
            seen_twin |= any(l.get("pid") == str(tw.pid) for n, l, _ in m.samples
                             if n == "kepler_process_cpu_joules_total")
            # Deltas: the VM's counter spans its QEMUs (a restore before), a process's not.
            proc = m.sum("kepler_process_cpu_joules_total", vm_id=UUID, zone="package")
            vm = host_vm(m, "active")
            first = first or (proc, vm)
            if vm_series(m) > 1 or pids - {str(qp)} or \
                    abs((proc - first[0]) - (vm - first[1])) > 1e-5:
                bad.append("series %d, VM's processes %s, theirs +%.6f J, VM active +%.6f J"
                           % (vm_series(m), sorted(pids), proc - first[0], vm - first[1]))
        time.sleep(0.5)
    alive = tw.poll() is None
    tw.terminate()
    try:
        tw.wait(10)
    except subprocess.TimeoutExpired:
        tw.kill()
        tw.wait(5)
    d.poll()
    tap(alive and scrapes >= 5 and not bad,
        "twin QEMU: a second QEMU with the VM's UUID (-incoming, as a migration's destination) "
        "for 6 s: one VM, its running QEMU's energy only",
        "twin PID %d (%s, seen by the host as a process: %s), the VM's QEMU %s; %d scrapes; %s"
        % (tw.pid, "ran" if alive else "EXITED EARLY", "yes" if seen_twin else "no", qp,
           scrapes, "; ".join(bad[:3]) or "every scrape right"))


def run(hw, gw):
    d = Doubles(hw)
    m = wait_for(lambda: (lambda m: m if m and guest_source(m) == "passthrough" else None)(
        try_scrape(GUEST)), 90)
    tap(m is not None, "lifecycle: the guest is on the passthrough",
        "source %r" % (guest_source(m) if m else None))
    for part, fn in (("suspend", suspend_resume), ("save", save_restore), ("twin", twin),
                     ("reset", reset)):
        if part in PARTS:
            t0 = time.monotonic()
            fn(d, gw)
            log("%s: %.0f s" % (part, time.monotonic() - t0))
    d.poll()
    tap(d.most <= 1, "lifecycle: never two series for the VM in a zone (one QEMU counted)",
        "at most %d series in a zone at one scrape" % d.most)


def main():
    hw, gw = vwe2e.Watch(HOST), vwe2e.Watch(GUEST)
    hw.start()
    gw.start()
    t0 = time.monotonic()
    run(hw, gw)
    log("lifecycle: %.0f s" % (time.monotonic() - t0))
    hw.finish()
    gw.finish()
    tap(hw.scrapes > 20 and not hw.back, "host: no counter ever went back",
        "%d scrapes, %d series; %s" % (hw.scrapes, len(hw.last), "; ".join(hw.back[:8])))
    tap(gw.scrapes > 20 and not gw.back,
        "guest: no counter ever went back (within one daemon's life)",
        "%d scrapes, %d series; %s" % (gw.scrapes, len(gw.last), "; ".join(gw.back[:8])))
    vwe2e.write_ntests(WORK)
    return 1 if vwe2e.failed else 0


if __name__ == "__main__":
    sys.exit(main())
