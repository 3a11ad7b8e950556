#!/usr/bin/env python3
"""The checks of tests/e2e/run.sh, against the live host, guest, VM and Prometheus it set up.

Prints TAP lines "ok N - ..." / "not ok N - ..." (no plan: run.sh adds its cleanup check and
the plan) and writes the number of checks to $E2E_WORK/ntests. Environment (set by run.sh):
E2E_WORK, E2E_HOST (host:port of virtwatt-host), E2E_GUEST (the guest's forwarded port),
E2E_PROM (Prometheus), E2E_UUID, E2E_SYSFS (the fixture; its "pause" file holds the meter),
E2E_WATTS, E2E_START_HOST / E2E_STOP_HOST (commands), E2E_SPAN (seconds, default 40).

How the guest and host figures are compared over "the same span": the guest sees the host's
counters through frames published every ~1 s (jittered) and folds them in at its own 1 s tick,
so at any instant it lags the host by 0-2 s; at 15-20 W that lag alone is several percent of a
40 s span. So each end of the span is a quiescent point: the feeder holds the meter (0 W), the
host's VM counters stop, the last frame carries their final value, the guest folds it in, and
we read all three only once two successive reads of host and guest each agree. The deltas
between two such points cover exactly the same energy; what remains is the passthrough's
rounding (0.1 J steps).
"""
import fcntl
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse

import vwe2e
from vwe2e import Metrics, fetch, log, tap, try_scrape, wait_for

W = os.environ
WORK, HOST, GUEST, PROM = W["E2E_WORK"], W["E2E_HOST"], W["E2E_GUEST"], W["E2E_PROM"]
UUID, SYSFS, WATTS = W["E2E_UUID"], W["E2E_SYSFS"], float(W["E2E_WATTS"])
PLATFORM_W = float(W.get("E2E_PLATFORM_WATTS", "0"))
SPAN = float(W.get("E2E_SPAN", "40"))
PAUSE = os.path.join(SYSFS, "pause")


# ---- Figures compared ----

def host_vm(m, mode=None, zone="package"):
    """The VM's energy in a zone on the host: active, idle, or both."""
    a = m.sum("kepler_vm_cpu_joules_total", vm_id=UUID, zone=zone)
    i = m.sum("virtwatt_vm_cpu_idle_joules_total", vm_id=UUID, zone=zone)
    return {"active": a, "idle": i}.get(mode, a + i)


def workloads(m, mode, zone="package"):
    """Containers (those exported, and those no longer: ended and dropped once served) +
    processes in no container + unattributed, one mode, one zone. Without the ended ones the
    sum misses what every container that ended on this machine held (a test's podman container
    beside the run: 745 J of platform)."""
    cont = "kepler_container_cpu_joules_total" if mode == "active" else \
        "virtwatt_container_cpu_idle_joules_total"
    return (m.sum(cont, zone=zone) +
            m.sum("virtwatt_node_cpu_ended_containers_joules_total", zone=zone, mode=mode) +
            m.sum("virtwatt_node_cpu_uncontained_joules_total", zone=zone, mode=mode) +
            m.sum("virtwatt_node_cpu_unattributed_joules_total", zone=zone, mode=mode))


def node(m, mode, zone="package"):
    return m.sum("kepler_node_cpu_%s_joules_total" % mode, zone=zone)


def guest_sum(m, zone="package"):
    return workloads(m, "active", zone) + workloads(m, "idle", zone)


def platform_truth():
    with open(os.path.join(SYSFS, "platform_truth")) as f:
        return float(f.read())


def owns(g1, g2, dg, zone="package"):
    """Whether the burner owns the largest share of the guest's energy dg between two scrapes
    (more than any other process, and a third of all), and the detail. Not "most of it": what
    the guest's own daemon, kernel threads and the scrapes cost in guest CPU time grows as the
    host gives the VM less (a TCG guest's clock runs on while its vCPU waits): 44 % seen at a
    load of 12 on 2 cores, the next process far below."""
    def per_proc(m):
        out = {}
        for fam in ("kepler_process_cpu_joules_total", "virtwatt_process_cpu_idle_joules_total"):
            for n, l, v in m.samples:
                if n == fam and l.get("zone") == zone:
                    k = (l.get("pid"), l.get("comm"))
                    out[k] = out.get(k, 0) + v
        return out
    a, b = per_proc(g1), per_proc(g2)
    d = {k: v - a.get(k, 0) for k, v in b.items()}
    db = sum(v for k, v in d.items() if k[1] == "burner")
    other = max([(v, k[1]) for k, v in d.items() if k[1] != "burner"] or [(0, "none")])
    ok = dg > 0 and db > other[0] and db > dg / 3
    return ok, "burner %.3f J of %.3f J (%.1f %%), the next process %s %.3f J" % (
        db, dg, 100 * db / dg if dg else 0, other[1], other[0])


def guest_source(m):
    for n, l, v in m.samples:
        if n == "virtwatt_guest_power_source_info" and v == 1:
            return l.get("source")
    return None


def console():
    """The guest's console (its /init's lines and its daemon's log), None if unreadable."""
    try:
        with open(os.path.join(WORK, "console.log"), errors="replace") as f:
            return f.read()
    except OSError:
        return None


def guest_as_user():
    """How the guest runs, from what its /init (tests/e2e/guest-init.sh) and its daemon wrote to
    the console in the last boot: as deploy/systemd/virtwatt-guest.service runs it, the virtwatt
    user (its uid, gid and group alone, no capabilities), the port as udev left it under
    deploy/udev/70-virtwatt.rules (0640 root:virtwatt), read without the hello (the daemon may
    not write it), and the shared folder's frame readable by that user. Returns what differs,
    [] when nothing does."""
    text = console()
    if text is None:
        return ["no console.log"]
    boot = text[text.rfind("e2e-guest: udev:"):] if "e2e-guest: udev:" in text else ""
    user = re.search(r"e2e-guest: user virtwatt (\d+):(\d+)", boot)
    port = re.search(r"e2e-guest: udev: (\S+) -> (\S*), mode (\d+) (\d+):(\d+)", boot)
    cred = re.search(r"e2e-guest: virtwatt-guest \d+: (.*)", boot)
    if not (user and port and cred):
        return ["the console has no udev, user or credentials line of the guest's /init"]
    uid, gid = user.group(1), user.group(2)
    st = {k: v.split() for k, v in re.findall(r"(\w+):((?:[ \t]+[0-9a-f]+)*)", cred.group(1))}
    bad = []
    if uid == "0" or st.get("Uid") != [uid] * 4 or st.get("Gid") != [gid] * 4 or \
            st.get("Groups") != [gid]:
        bad.append("virtwatt-guest runs as %s, not virtwatt %s:%s alone" % (cred.group(1), uid, gid))
    caps = [(c, st.get(c)) for c in ("CapEff", "CapPrm", "CapAmb") if st.get(c) != ["0" * 16]]
    if caps:
        bad.append("capabilities %r" % caps)
    if port.group(3, 4, 5) != ("640", "0", gid):
        bad.append("%s (%s) is mode %s %s:%s, not 640 0:%s (udev, deploy/udev/70-virtwatt.rules)"
                   % (port.group(1, 2, 3, 4, 5) + (gid,)))
    if "is readable only: reading it without the hello" not in text[text.find(cred.group(0)):]:
        bad.append("the daemon never said it reads its port without the hello")
    share = re.findall(r"e2e-guest: virtwatt reads (\S+): (\w+)", boot)
    if not share or share[-1][1] != "yes":
        bad.append("virtwatt reads the shared folder's frame: %s"
                   % (share[-1][1] if share else "not tried yet"))
    return bad


def meter_uj():
    with open(os.path.join(SYSFS, "class/powercap/intel-rapl:0/energy_uj")) as f:
        return int(f.read())


def settle(tag):
    """Hold the meters until host and guest agree twice in a row: the two scrapes, the RAPL
    counter and the joules the power meter read; or None."""
    open(PAUSE, "w").close()
    try:
        time.sleep(3)
        prev, end = None, time.monotonic() + 20
        while time.monotonic() < end:
            h, g = try_scrape(HOST), try_scrape(GUEST)
            if h and g:
                cur = (round(host_vm(h), 6), round(guest_sum(g), 6), meter_uj(),
                       round(host_vm(h, zone="platform"), 6),
                       round(guest_sum(g, "platform"), 6))
                if prev == cur:
                    log("%s: settled: host VM %.6f J, guest workloads %.6f J, meter %d uJ; "
                        "platform: host VM %.6f J, guest %.6f J"
                        % (tag, cur[0], cur[1], cur[2], cur[3], cur[4]))
                    return h, g, cur[2], platform_truth()
                prev = cur
            time.sleep(1.2)
        log("%s: host and guest never settled (last %r)" % (tag, prev))
        return None
    finally:
        os.unlink(PAUSE)


PLATFORM_CHECKS = (
    "host: the platform zone's energy over the span = the power meter's (within 3 %)",
    "host: the platform zone is owned: VM + the rest = node, per mode",
    "guest: its platform energy within 1% of the host's for the VM",
    "guest: the burner owns the largest share of its platform energy",
    "host: kepler_platform_watts names the BMC's reading with Kepler's labels")


def platform_span(h1, g1, p1, h2, g2, p2):
    """The BMC's platform zone over the settled span (the meter read p1, then p2 joules):
    measured, owned, passed through to the guest, and shown as Kepler shows it.

    Each end of the span is a step of power (100 W to 0 W and back): the host counts each BMC
    reading from the time it was taken to the next one's, so a step lands within a poll (250 ms)
    of where the feeder made it, however late the daemon's samples run. (When the newest
    reading was spread over a late sample's whole wait, a 2 s interval close on a loaded
    machine across the pause counted 0 W for those 2 s: 4.8 % short, no gap counted.) A span
    the host could not measure is a counted gap (virtwatt_node_energy_gaps_total): shown here,
    as the energy in it cannot be compared."""
    dn = sum(node(h2, mo, "platform") - node(h1, mo, "platform") for mo in ("active", "idle"))
    gaps = (h2.sum("virtwatt_node_energy_gaps_total", zone="platform") -
            h1.sum("virtwatt_node_energy_gaps_total", zone="platform"))
    tap(p2 > p1 and abs(dn - (p2 - p1)) <= 0.03 * (p2 - p1), PLATFORM_CHECKS[0],
        "node %.3f J, meter %.3f J (%.0f W), %.3f %%; gaps in the span %d" % (
            dn, p2 - p1, PLATFORM_W, 100 * (dn - (p2 - p1)) / (p2 - p1) if p2 > p1 else 0,
            gaps))
    bad = []
    for mode in ("active", "idle"):
        n, parts = node(h2, mode, "platform"), workloads(h2, mode, "platform")
        vm = host_vm(h2, mode, "platform")
        if abs(n - parts) > 1e-5 or not (0 < vm or n == 0) or vm > parts + 1e-6:
            bad.append("%s: node %.6f, workloads+remainders %.6f, VM %.6f" % (mode, n, parts, vm))
    tap(not bad, PLATFORM_CHECKS[1], "; ".join(bad))
    dh = host_vm(h2, zone="platform") - host_vm(h1, zone="platform")
    dg = guest_sum(g2, "platform") - guest_sum(g1, "platform")
    err = abs(dg - dh) / dh if dh > 0 else 1
    tap(dh > 0 and err <= 0.01, PLATFORM_CHECKS[2],
        "guest %.6f J, host %.6f J, difference %.4f %%" % (dg, dh, 100 * err))
    ok, detail = owns(g1, g2, dg, "platform")
    tap(ok, PLATFORM_CHECKS[3], detail)
    want = {"source": "redfish", "node_name": "e2e-host", "bmc_id": "e2e-bmc",
            "chassis_id": "1U", "source_id": "EnvironmentMetrics",
            "source_name": "Chassis Environment Metrics", "source_type": "EnvironmentMetrics"}
    rows = [l for n, l, v in h2.samples if n == "kepler_platform_watts"]
    tap(rows == [want], PLATFORM_CHECKS[4], "rows %r" % rows)


MODEL_SPAN = float(W.get("E2E_MODEL_SPAN", "30"))
MODEL_TRIES = int(W.get("E2E_MODEL_TRIES", "3"))
MODEL_WINDOW = float(W.get("E2E_MODEL_WINDOW", "15"))  # --model.train.max-samples x 1 s
VCPUS = int(W.get("E2E_VCPUS", "1"))  # the domain's (run.sh)
MODEL_COND = 0.03  # how near the model's conditions a span must be to be judged as it is
MODEL_ZONES = ("package", "platform")
MODEL_CHECKS = (
    "guest: holds the model its host trained and pushed for this VM",
    "guest: estimates with its host's model once the host stops publishing to it",
    "guest: its energy on its host's model within 10 %% of the host's figure for the VM, "
    "per zone, over a %.0f s burner span in which the host gave the VM the CPU its guest "
    "counted and the energy per VM CPU-second the model learnt (each within 3 %%); in none "
    "(the host short of CPU, or its load unlike the model's: what a TCG guest cannot see), "
    "between the host's figure and it scaled by the measured CPU the host did not give and "
    "the measured change of the VM's share, ±10 %%" % MODEL_SPAN,
    "guest: passthrough resumes when the host publishes again")


def guest_model(m):
    for n, l, v in m.samples:
        if n == "virtwatt_guest_power_source_info" and v == 1:
            return l.get("model")
    return None


def host_model_info(m):
    for n, l, v in m.samples:
        if n == "virtwatt_guest_host_model_info" and v == 1:
            return l.get("model")
    return None


def kepler_default_joules(cpu_ms_per_s, seconds, model="builtin"):
    """What Kepler's default model (the one compiled in), or the model file `model`, says for
    this CPU rate, per component, over `seconds`."""
    data = os.path.join(WORK, "kepler-default.csv")
    with open(data, "w") as f:
        f.write("bpf_cpu_time_ms\n%.6f\n" % cpu_ms_per_s)
    p = subprocess.run([W["E2E_MODEL_CLI"], model, data], capture_output=True, timeout=30)
    lines = [l for l in p.stdout.decode().splitlines() if l and not l.startswith("#")]
    if p.returncode != 0 or len(lines) < 2:
        return {}
    head, row = lines[0].split(","), lines[1].split(",")
    out = {}
    for k, v in zip(head, row):
        if k.endswith("_watts"):
            out[k[:-len("_watts")]] = float(v) * seconds
    return out


def after_tick(addr, key, timeout=3.0):
    """Scrape addr until key(scrape) changes, i.e. just after its daemon closed an interval:
    (monotonic time of the read that saw it, the scrape), or (None, None). Two such reads of one
    daemon cover exactly the intervals it closed between them, in the time between them (to
    one poll, ~0.1 s); a plain read at a wall instant is up to an interval stale, which over
    30 s is ±3 % on each side, ±7 % between host and guest."""
    first = try_scrape(addr)
    k0 = key(first) if first else None
    end = time.monotonic() + timeout
    while first is not None and time.monotonic() < end:
        t = time.monotonic()
        m = try_scrape(addr)
        if m and key(m) != k0:
            return t, m
        time.sleep(0.05)
    return None, None


def prom_at(query, t):
    """A PromQL instant query at Unix time t: its single value, or None."""
    try:
        r = json.loads(fetch(PROM, "/api/v1/query?query=%s&time=%.3f"
                             % (urllib.parse.quote(query), t)))["data"]["result"]
        return float(r[0]["value"][1]) if r else None
    except Exception:
        return None


def fit_time(m):
    """When the host fitted the VM's model it holds now (Unix time), the latest zone's; or None."""
    ts = [v for n, l, v in m.samples
          if n == "virtwatt_model_fit_timestamp_seconds" and l.get("vm_id") == UUID]
    return max(ts) if ts else None


def learnt_rates(ts, window):
    """The host's energy for the VM per VM CPU-second, per zone, over the window the model
    fitted at ts learnt from (its last `window` 1 s intervals), from Prometheus's record of the
    host (energy and CPU time of one scrape come from one interval: the ratio is exact)."""
    def at(t):
        cpu = prom_at('sum(kepler_process_cpu_seconds_total{vm_id="%s"})' % UUID, t)
        e = {z: prom_at('sum(kepler_vm_cpu_joules_total{vm_id="%s",zone="%s"}) + '
                        'sum(virtwatt_vm_cpu_idle_joules_total{vm_id="%s",zone="%s"})'
                        % (UUID, z, UUID, z), t) for z in MODEL_ZONES}
        return cpu, e
    (ca, ea), (cb, eb) = at(ts - window), at(ts)
    if None in (ca, cb) or cb <= ca or None in ea.values() or None in eb.values():
        return {}
    out = {z: (eb[z] - ea[z]) / (cb - ca) for z in MODEL_ZONES}
    out["cpu"] = (cb - ca) * 1000 / window  # the VM's CPU then, ms/s: where the model was fitted
    return out


def judge(spans, learnt, cpu, vm_cpu, now, dhs, dgs, pushed, held, busy):
    """The model span's verdict (model_span): the last span against the host's figure for the
    VM, within 10 % where it had the model's conditions; where it had not, between the host's
    figure and k times it, ±10 %, k measuring the two things the guest cannot see: the CPU its
    guest counted over the CPU the host gave the VM, and the host's energy per VM CPU-second in
    the model's window over now's. The host's model evaluated at the guest's CPU is logged."""
    corrected = not spans[-1].endswith(": judged")
    mine = kepler_default_joules(busy if busy is not None else cpu, MODEL_SPAN, held) \
        if held else {}
    if corrected:
        # None qualified: the host short of CPU while the TCG guest counts the time its vCPU
        # waited as its own (220 vs 1021 ms/s seen at a load of 12 on 2 cores), or other load
        # moving the VM's share. No model in the guest can follow either, and no reference
        # made from the host's J per CPU-second or its model file at the guest's CPU matched
        # what the guest's estimator saw (-44 %, +17 %, +74 % in three loaded runs: under TCG
        # its /proc/stat busy time per wall second, the model's input, follows neither). So
        # the claim is the band between the two, measured, and says so (-> +102 % in a band
        # up to +590 % when the host gave the VM 166 of the 955 ms/s its guest counted).
        log("model span: none of %d spans had the model's conditions (%s); judging the "
            "last between the host's figure and it x (the CPU the guest counted / the CPU "
            "the host gave the VM) x (the J per VM CPU-second while the model learnt / now), "
            "±10 %%"
            % (len(spans), " | ".join(spans)))
    # The held model's own J per VM CPU-second at the CPU of its window, beside what the host
    # attributed then (learnt): how well it fitted its window, apart from what changed since.
    wcpu = learnt.get("cpu")
    own = kepler_default_joules(wcpu, 1.0, held) if held and wcpu else {}
    rows, bad = [], []
    kep = kepler_default_joules(cpu, MODEL_SPAN)
    for z in MODEL_ZONES:
        dh, dg = dhs[z], dgs[z]
        if dh <= 0:
            bad.append("%s: no host figure" % z)
            continue
        # The band: the host's figure, and what it would have been had the host given the VM
        # the CPU its guest counted at the J per CPU-second the model learnt (k x it), ±10 %.
        lo, hi = 0.9, 1.1
        if corrected:
            was, nz = learnt.get(z, 0), now.get(z, 0)
            k = (cpu / vm_cpu if vm_cpu > 0 else float("inf")) * (was / nz if nz > 0 else 1)
            lo, hi = 0.9 * min(1, k), 1.1 * max(1, k)
        ape = abs(dg - dh) / dh
        kz = kep.get("total" if z == "platform" else z)
        mz = mine.get(z, mine.get("total" if z == "platform" else z))
        kape = abs(kz - dh) / dh if kz is not None else float("nan")
        oz = own.get(z, own.get("total" if z == "platform" else z))
        rows.append("%s: host %.3f J, guest on the host's model %.3f J (%.1f %%; guest/host "
                    "allowed %.3f-%.3f), Kepler's default %s J (%s %%), the host's model at "
                    "the guest's busy CPU %s J; J per VM CPU-second: now %.2f, in the model's "
                    "window %.2f, the model there (%s ms/s) %s"
                    % (z, dh, dg, 100 * ape, lo, hi,
                       "%.3f" % kz if kz is not None else "n/a",
                       "%.1f" % (100 * kape) if kz is not None else "n/a",
                       "%.3f" % mz if mz is not None else "n/a",
                       now.get(z, 0), learnt.get(z, 0),
                       "%.0f" % wcpu if wcpu else "n/a",
                       "%.2f" % (oz * 1000 / wcpu) if oz is not None and wcpu else "n/a"))
        if not lo <= dg / dh <= hi:
            bad.append("%s: guest/host %.3f, allowed %.3f-%.3f" % (z, dg / dh, lo, hi))
    with open(os.path.join(WORK, "model-mape.txt"), "w") as f:
        f.write("model %s; guest CPU %.1f ms/s (the host counts %.1f for the VM) over "
                "%.0f s (span %d)\n%s\n" % (pushed, cpu, vm_cpu, MODEL_SPAN, len(spans),
                                            "\n".join(rows)))
    log("model span %d (%s): guest CPU %.1f ms/s, the host counts %.1f for the VM; %s"
        % (len(spans), pushed, cpu, vm_cpu, "; ".join(rows)))
    tap(rows and not bad, MODEL_CHECKS[2], "; ".join(bad + rows))


def model_span():
    """Issue #15: the host stops publishing to the VM (another holder takes the VM's lock), the
    guest estimates with the model its host pushed; over MODEL_SPAN s its energy per zone against
    the host's own figure for the VM, and Kepler's default model for the same CPU time."""
    # The host refits every 12 s over its last 15 intervals; the settled spans above held the
    # meter at 0 W for seconds while the burner ran, which no real meter does: wait for the
    # third round after them, whose window is clear of it, and take the lock as soon as the
    # guest holds it (the host refits again only 12 s later): the model the guest estimates
    # with is the one fitted at the host's virtwatt_model_fit_timestamp_seconds then.
    def round_of(m):
        name = host_model_info(m) if m else None
        try:
            return int(name.rsplit("-r", 1)[1]) if name else None
        except (IndexError, ValueError):
            return None
    m = wait_for(lambda: (lambda m: m if round_of(m) is not None else None)(try_scrape(GUEST)),
                 60, 1)
    r0 = round_of(m)
    if r0 is not None:
        m = wait_for(lambda: (lambda m: m if (round_of(m) or 0) >= r0 + 3 else None)(
            try_scrape(GUEST)), 60, 0.2) or m
    hm = try_scrape(HOST)
    pushed = host_model_info(m) if m else None
    fitted = fit_time(hm) if hm else None
    held = os.path.join(WORK, "model-held.json")  # the round the guest holds, as the host wrote it
    try:
        with open(os.path.join(WORK, "models", "vm-%s.json" % UUID), "rb") as src, \
                open(held, "wb") as dst:
            dst.write(src.read())
    except OSError as e:
        log("the host's model file for the VM: %s" % e)
        held = None
    tap(pushed is not None and pushed.startswith("vm-linear-r"), MODEL_CHECKS[0],
        "model %r" % pushed)
    lock = os.path.join(WORK, "lock", UUID + ".lock")
    try:
        os.unlink(lock)
    except FileNotFoundError:
        pass
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        g = wait_for(lambda: (lambda m: m if m and guest_source(m) == "model" and
                              (guest_model(m) or "").startswith("host:") else None)(
            try_scrape(GUEST)), 30, 0.5)
        tap(g is not None, MODEL_CHECKS[1], "model %r" % (guest_model(g) if g else None))
        if g is None:
            tap(False, MODEL_CHECKS[2], "the guest never switched to its host's model")
            return
        time.sleep(2)  # a whole interval on the model
        # The host's energy for the VM per CPU-second it gave it over exactly the intervals the
        # model learnt from (before, a 15 s window read around the lock missed the model's by
        # up to 12 s, in which other load moved it: 31.6 vs 34.5 J/s seen).
        learnt = learnt_rates(fitted, MODEL_WINDOW) if fitted else {}
        # The guest's model takes the guest's own CPU time; the host's figure for the VM
        # follows the CPU the host gave the VM's QEMU, and the VM's share of the node's energy.
        # Two things a guest cannot see make a span say nothing of it (a run after a long
        # sequence of other tests: +35 %, another -23 %): a host short of CPU descheduling the
        # vCPU while the guest, under TCG (no steal clock), counts that time as its own; and
        # other processes' load changing the VM's share of the feeder's constant power from
        # what the model learnt. So up to MODEL_TRIES spans are taken and the first in which
        # the host gave the VM the CPU its guest counted, and its energy per VM CPU-second is
        # what it was over the model's window, each within 3 %, is judged (at 10 % each, a
        # span 6.5 % short of CPU with the share moved read +15 %); each other one is logged;
        # none: the last is judged under the model's conditions (below). Each side's span is
        # read just after its own daemon closed an interval (after_tick): host and guest
        # tick out of phase, and a read at a wall instant left each up to 1 s stale (±7 %
        # between the two over 30 s, enough alone to fail the check by chance).
        def hkey(m):
            return m.sum("kepler_process_cpu_seconds_total", vm_id=UUID)

        def gkey(m):
            return m.sum("kepler_process_cpu_seconds_total")
        spans, cpu, vm_cpu, now, dhs, dgs, busy = [], None, 0.0, {}, {}, {}, None
        for attempt in range(MODEL_TRIES):
            th1, h1 = after_tick(HOST, hkey)
            tg1, g1 = after_tick(GUEST, gkey)
            if h1 is None or g1 is None:
                spans.append("span %d: no interval closed on the %s" % (
                    attempt + 1, "host" if h1 is None else "guest"))
                continue
            # Meanwhile, the CPU the guest's estimator takes (its /proc/stat busy time, which
            # under TCG is tick-sampled and can read well below its processes' CPU time: the
            # model at 998 ms/s read 17.5 % above the guest on it), a gauge per interval.
            ratios = []
            while time.monotonic() < th1 + MODEL_SPAN - 0.5:
                gm = try_scrape(GUEST)
                if gm and gm.has("kepler_node_cpu_usage_ratio"):
                    ratios.append(gm.sum("kepler_node_cpu_usage_ratio"))
                time.sleep(max(0.0, min(1.0, th1 + MODEL_SPAN - 0.5 - time.monotonic())))
            busy = sum(ratios) / len(ratios) * 1000 * VCPUS if ratios else None
            th2, h2 = after_tick(HOST, hkey)
            tg2, g2 = after_tick(GUEST, gkey)
            if h2 is None or g2 is None:
                spans.append("span %d: no interval closed on the %s" % (
                    attempt + 1, "host" if h2 is None else "guest"))
                continue
            # Per second of each side's own span, over MODEL_SPAN.
            ks, kg = MODEL_SPAN / (th2 - th1), MODEL_SPAN / (tg2 - tg1)
            c = (gkey(g2) - gkey(g1)) * 1000 / (tg2 - tg1)
            vm_cpu = (hkey(h2) - hkey(h1)) * 1000 / (th2 - th1)
            now = {z: (host_vm(h2, zone=z) - host_vm(h1, zone=z)) / (hkey(h2) - hkey(h1))
                   if hkey(h2) > hkey(h1) else 0 for z in MODEL_ZONES}
            dhs = {z: (host_vm(h2, zone=z) - host_vm(h1, zone=z)) * ks for z in MODEL_ZONES}
            dgs = {z: (node(g2, "active", z) + node(g2, "idle", z) -
                       node(g1, "active", z) - node(g1, "idle", z)) * kg for z in MODEL_ZONES}
            why = []
            if not (c > 0 and abs(vm_cpu - c) <= MODEL_COND * c):
                why.append("the host gave the VM %.0f ms/s of CPU, its guest counted %.0f"
                           % (vm_cpu, c))
            for z in MODEL_ZONES:
                was = learnt.get(z, 0)
                if not (was > 0 and abs(now[z] - was) <= MODEL_COND * was):
                    why.append("%s: the host's J per VM CPU-second %.2f, %.2f while the model "
                               "learnt" % (z, now[z], was))
            spans.append("span %d (host %.2f s, guest %.2f s, the guest's busy CPU %s ms/s): %s"
                         % (attempt + 1, th2 - th1, tg2 - tg1,
                            "%.0f" % busy if busy is not None else "n/a",
                            "; ".join(why) or "judged"))
            cpu = c
            if not why:
                break
            log("model span %d not judged: %s" % (attempt + 1, "; ".join(why)))
        if cpu is None:
            tap(False, MODEL_CHECKS[2], "no span the model can be judged on (model fitted at "
                "%r, learnt %r): %s" % (fitted, learnt, " | ".join(spans)))
        else:
            judge(spans, learnt, cpu, vm_cpu, now, dhs, dgs, pushed, held, busy)
    finally:
        os.close(fd)  # the host takes the lock again within a second
    m = wait_for(lambda: (lambda m: m if m and guest_source(m) == "passthrough" else None)(
        try_scrape(GUEST)), 30, 0.5)
    tap(m is not None, MODEL_CHECKS[3], "source %r" % (guest_source(m) if m else None))


def main():
    watch = vwe2e.Watch(GUEST)
    watch.start()

    # 1. The host's VM series.
    def vm_live():
        m = try_scrape(HOST)
        # Idle energy is idle power x time, and the idle power is fitted from how the node's
        # power follows its load (docs/idle.md): on a machine other work keeps saturated it
        # can be 0 for minutes (load 34 on 2 cores: the node's idle 0 J). The series must be
        # there; that 0 < VM's idle where the node has some is checked below.
        return m if m and host_vm(m, "active") > 0 and \
            m.has("virtwatt_vm_cpu_idle_joules_total", vm_id=UUID) else None
    h = wait_for(vm_live, 60)
    tap(h is not None, "host: kepler_vm_cpu_joules_total and virtwatt_vm_cpu_idle_joules_total "
        "for the VM", "active %.3f J, idle %.3f J" % (host_vm(h, "active"), host_vm(h, "idle"))
        if h else "no VM series with vm_id=%s on %s" % (UUID, HOST))
    if h:
        fams = ("kepler_vm_cpu_joules_total", "kepler_vm_cpu_watts",
                "virtwatt_vm_cpu_idle_joules_total", "virtwatt_vm_cpu_idle_watts")
        miss = [f for f in fams if not h.has(f, vm_id=UUID, vm_name=W["E2E_NAME"],
                                             state="running", zone="package")]
        tap(not miss, "host: the VM's four kepler_vm_cpu_* / virtwatt_vm_cpu_idle_* families, "
            "named, running", "missing: " + ", ".join(miss) if miss else "")
        qemu = h.sum("kepler_process_cpu_joules_total", vm_id=UUID, zone="package")
        tap(abs(qemu - host_vm(h, "active")) < 1e-5,
            "host: the VM's active energy is its QEMU process's",
            "process series with vm_id: %.6f J, VM %.6f J" % (qemu, host_vm(h, "active")))
        bad = []
        for mode in ("active", "idle"):
            n, parts, vm = node(h, mode), workloads(h, mode), host_vm(h, mode)
            if abs(n - parts) > 1e-5 or not (0 < vm or n == 0) or vm > parts + 1e-6:
                bad.append("%s: node %.6f, workloads+remainders %.6f, VM %.6f"
                           % (mode, n, parts, vm))
        tap(not bad, "host: VM + the rest = node (per mode: node = containers + uncontained + "
            "unattributed, 0 < VM <= its holders, VM = 0 only where the node's is)", "; ".join(bad))
        # The domain exports its folder with <readonly/> (9p): not a guest-writable export.
        tap(h.has("virtwatt_passthrough_share_writable_vms")
            and h.sum("virtwatt_passthrough_share_writable_vms") == 0,
            "host: the VM's <readonly/> 9p export is not counted as guest-writable",
            "virtwatt_passthrough_share_writable_vms %r"
            % (h.sum("virtwatt_passthrough_share_writable_vms"),))
    else:
        tap(False, "host: VM + the rest = node", "no host metrics")

    # 2. Guest on passthrough, run as the docs and the package run it: the virtwatt user, which
    # may only read its port (udev's 0640 root:virtwatt).
    g = wait_for(lambda: (lambda m: m if m and guest_source(m) == "passthrough" else None)(
        try_scrape(GUEST)), 60)
    wait_for(lambda: not guest_as_user(), 15)  # its folder probe may follow the first frame
    bad = guest_as_user()
    if not g:
        bad.insert(0, "source %r" % (guest_source(try_scrape(GUEST) or Metrics("")),))
    tap(not bad, "guest: serves /metrics on passthrough as the virtwatt user, no capabilities, "
        "its port 0640 root:virtwatt by udev and deploy/udev/70-virtwatt.rules, read-only",
        "; ".join(bad))

    # 3. The same span seen from both sides.
    t0 = time.monotonic()
    a = settle("span start")
    time.sleep(SPAN)
    b = settle("span end") if a else None
    if a and b:
        (h1, g1, e1, p1), (h2, g2, e2, p2) = a, b
        dh, dg = host_vm(h2) - host_vm(h1), guest_sum(g2) - guest_sum(g1)
        dn = (node(h2, "active") + node(h2, "idle")) - (node(h1, "active") + node(h1, "idle"))
        dm = ((e2 - e1) % 262143328850) / 1e6
        tap(abs(dn - dm) <= 1e-3 and dm > WATTS * SPAN * 0.5,
            "host: node energy over the span = the meter's (%.0f W feeder)" % WATTS,
            "node %.6f J, meter %.6f J (%.1f s incl. settling)" % (dn, dm, time.monotonic() - t0))
        err = abs(dg - dh) / dh if dh > 0 else 1
        tap(dh > 0 and err <= 0.01, "guest: workload energy within 1% of the host's for the VM",
            "guest %.6f J, host %.6f J, difference %.4f %%" % (dg, dh, 100 * err))
        ok, detail = owns(g1, g2, dg)
        tap(ok, "guest: the burner owns the largest share of it", detail)
        platform_span(h1, g1, p1, h2, g2, p2)
    else:
        for what in ("host: node energy over the span = the meter's",
                     "guest: workload energy within 1% of the host's for the VM",
                     "guest: the burner owns the largest share of it") + PLATFORM_CHECKS:
            tap(False, what, "no settled span")

    # 3b. The host's model for the VM, pushed to its guest, when publication stops.
    model_span()

    # 4. Host stopped: the model takes over within the staleness window (3 x 1 s).
    subprocess.run(W["E2E_STOP_HOST"], shell=True, check=False)
    t0 = time.monotonic()
    m = wait_for(lambda: (lambda m: m if m and guest_source(m) == "model" else None)(
        try_scrape(GUEST)), 15, 0.25)
    dt = time.monotonic() - t0
    tap(m is not None and dt <= 3 + 3, "guest: falls back to its model when virtwatt-host stops",
        "after %.1f s (staleness window 3 s, +1 interval each side for the guest's tick "
        "and the last publication)" % dt)

    # 5. Host back: passthrough resumes.
    r0 = (try_scrape(GUEST) or Metrics("")).sum("virtwatt_guest_passthrough_host_restarts_total")
    subprocess.run(W["E2E_START_HOST"], shell=True, check=False)
    t0 = time.monotonic()
    m = wait_for(lambda: (lambda m: m if m and guest_source(m) == "passthrough" else None)(
        try_scrape(GUEST)), 60, 0.5)
    dt = time.monotonic() - t0
    r1 = m.sum("virtwatt_guest_passthrough_host_restarts_total") if m else r0
    tap(m is not None and r1 > r0, "guest: passthrough resumes when virtwatt-host restarts",
        "after %.1f s; host restarts seen %d -> %d" % (dt, r0, r1))

    # 6. Prometheus scraping both.
    def up():
        try:
            q = urllib.parse.quote("up")
            r = json.loads(fetch(PROM, "/api/v1/query?query=" + q))["data"]["result"]
            s = {x["metric"]["job"]: x["value"][1] for x in r}
            return s if s.get("host") == "1" and s.get("guest") == "1" else None
        except Exception:
            return None
    s = wait_for(up, 30, 1)
    tap(s is not None, "prometheus: host and guest targets up", "" if s else "up: %r" % (up(),))

    def series():
        try:
            q = urllib.parse.quote('kepler_vm_cpu_joules_total{vm_id="%s"}' % UUID)
            r = json.loads(fetch(PROM, "/api/v1/query?query=" + q))["data"]["result"]
            q = urllib.parse.quote('virtwatt_guest_power_source_info')
            r2 = json.loads(fetch(PROM, "/api/v1/query?query=" + q))["data"]["result"]
            return (r, r2) if r and r2 else None
        except Exception:
            return None
    tap(wait_for(series, 10, 1) is not None,
        "prometheus: holds the host's VM series and the guest's source")

    for name, addr in (("host", HOST), ("guest", GUEST)):
        try:
            text = fetch(addr)
            p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                               capture_output=True, timeout=30)
            out = (p.stdout + p.stderr).decode().strip()
            tap(p.returncode == 0, "promtool check metrics: %s clean" % name, out)
        except Exception as e:
            tap(False, "promtool check metrics: %s clean" % name, str(e))

    # 6b. What it keeps, written as the virtwatt user into the directory the unit's
    # StateDirectory= gives it (guest-init.sh makes it so), minutes in: the state file (written,
    # never failed) and its host's model beside it (held since check 3b; a failed write warns).
    m = try_scrape(GUEST) or Metrics("")
    st = [l.get("status") for n, l, v in m.samples if n == "virtwatt_guest_state_info" and v == 1]
    sw, se = (m.sum("virtwatt_guest_state_writes_total"),
              m.sum("virtwatt_guest_state_write_errors_total"))
    unkept = "cannot keep the host's model" in (console() or "cannot keep the host's model")
    tap(st in (["new"], ["loaded"]) and sw > 0 and se == 0 and not unkept,
        "guest: its state file and its host's model kept as the virtwatt user in "
        "/var/lib/virtwatt-guest", "state %r, %d writes, %d failed; the host's model %s"
        % (st, sw, se, "not kept (console)" if unkept else "kept"))

    # 7. Nothing went back.
    watch.finish()
    tap(watch.scrapes > 20 and not watch.back, "guest: no counter ever went back",
        "%d scrapes, %d series; %s" % (watch.scrapes, len(watch.last),
                                        "; ".join(watch.back[:10]) or "none went back"))

    vwe2e.write_ntests(WORK)
    return 1 if vwe2e.failed else 0


if __name__ == "__main__":
    sys.exit(main())
