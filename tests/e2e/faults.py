#!/usr/bin/env python3
"""The fault campaign of issue #11, against the live set-up of tests/e2e/run.sh (mode "faults"):
a real libvirtd and QEMU, virtwatt-host on a powercap feeder that wraps every 2^32 uJ, the guest
daemon inside a real VM on the passthrough, a real Prometheus scraping both.

Every fault is injected for real (a file tree that vanishes, SIGSTOP, SIGKILL, a full tmpfs, the
wall clock stepped, a kubelet that flaps, abusive HTTP clients, VMs created and destroyed) and
each case asserts what must hold whatever happens:
  - no crash: the host keeps its PID, the guest daemon its process_start_time_seconds (its init
    restarts it if it dies, so a crash would show as a new start time);
  - no counter back: both /metrics are scraped every 0.5 s for the whole run (vwe2e.Watch);
  - no energy invented, none lost beyond what was unobservable: the host's node energy between
    two quiescent points (meter held, both counters still) against the feeder's true energy;
  - bounded: heap, RSS and open descriptors of both daemons, from their own gauges (the lowest
    over 20 s of scrapes), flat through each phase: the faults and HTTP abuse, then the VM
    cycles (what is kept by design for each gone VM allowed).
Prints TAP lines without a plan (run.sh adds cleanup and the plan), the count to $E2E_WORK/ntests.
"""
import http.server
import os
import random
import resource
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

import vwe2e
from vwe2e import log, tap, try_scrape, wait_for

W = os.environ
WORK, HOST, GUEST, PROM = W["E2E_WORK"], W["E2E_HOST"], W["E2E_GUEST"], W["E2E_PROM"]
UUID, SYSFS, WATTS = W["E2E_UUID"], W["E2E_SYSFS"], float(W["E2E_WATTS"])
URI, KUBELET_PORT = W["E2E_URI"], int(W["E2E_KUBELET_PORT"])
METER_RANGE_J = int(W["E2E_METER_RANGE"]) / 1e6
CYCLES = int(W.get("E2E_VM_CYCLES", "200"))
HEAP = "virtwatt_process_heap_inuse_bytes"
SHARE = os.path.join(WORK, "share")


# ---- The parts ----

def host_pid():
    with open(os.path.join(WORK, "host.pid")) as f:
        return int(f.read())


def alive(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            return not any(l.startswith("State:") and l.split()[1] in "ZX" for l in f)
    except OSError:
        return False


def truth():
    """The feeder's true energy so far, in joules (unwrapped)."""
    with open(os.path.join(SYSFS, "truth")) as f:
        return float(f.read())


def node_j(m):
    return m.sum("kepler_node_cpu_joules_total", zone="package")


def gaps(m):
    return m.sum("virtwatt_node_energy_gaps_total", zone="package")


def host_log():
    with open(os.path.join(WORK, "host.log"), errors="replace") as f:
        return f.read()


def virsh(*args, timeout=60):
    p = subprocess.run(["virsh", "-c", URI] + list(args), capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).strip()


def control(name, value=None):
    """Create (value: its text) or remove (None) a feeder control file."""
    path = os.path.join(SYSFS, name)
    if value is None:
        if os.path.exists(path):
            os.unlink(path)
    else:
        with open(path, "w") as f:
            f.write(value)


def quiesce(tag):
    """Hold the meter until the host's node counter reads the same twice: (node J, truth J,
    the scrape). The meter stays held: resume() lets it run again."""
    control("pause", "")
    time.sleep(1.5)
    prev, end = None, time.monotonic() + 20
    while time.monotonic() < end:
        m = try_scrape(HOST)
        if m:
            cur = round(node_j(m), 6)
            if cur == prev:
                t = truth()
                log("%s: node %.3f J, meter %.3f J" % (tag, cur, t))
                return cur, t, m
            prev = cur
        time.sleep(1.2)
    log("%s: the host's node counter never settled" % tag)
    return None


def resume():
    control("pause")


class Kubelet(threading.Thread):
    """A kubelet's /pods that flaps for the whole campaign: each request gets the next of good,
    HTTP 500, slow (30 s before the answer), garbage bytes, truncated JSON, 20 MiB of JSON, a
    reset. Modes go by request, not by the clock: the host backs off after failures (up to 60 s),
    so a clock-driven cycle could miss modes on a short run. A good answer comes before each
    failure, so the host's back-off starts again from 1 s each time (six failures in a row made
    it 1+2+4+8+16 s, and the warm-up waited 66 s for all seven kinds), and the 30 s stall comes
    last: every kind is met within ~20 s of the first request."""
    FAILURES = ("500", "garbage", "truncated", "huge", "reset", "slow")
    MODES = tuple(m for f in FAILURES for m in ("ok", f))
    KINDS = len(set(MODES))  # 7

    def __init__(self):
        super().__init__(daemon=True)
        self.requests, self.by_mode = 0, {}
        self.lock = threading.Lock()
        kube = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                with kube.lock:
                    mode = kube.MODES[kube.requests % len(kube.MODES)]
                    kube.requests += 1
                    kube.by_mode[mode] = kube.by_mode.get(mode, 0) + 1
                body = b'{"kind":"PodList","apiVersion":"v1","items":[]}'
                if mode == "reset":
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                               b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.connection.close()
                    return
                if mode == "slow":
                    time.sleep(30)
                if mode == "garbage":
                    body = bytes(random.getrandbits(8) for _ in range(4096))
                elif mode == "truncated":
                    body = body[:20]
                elif mode == "huge":
                    body = b'{"kind":"PodList","items":[' + b'{"x":1},' * (20 << 17)
                self.send_response(500 if mode == "500" else 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", KUBELET_PORT), H)
        self.server.daemon_threads = True
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(os.path.join(WORK, "kubelet.crt"), os.path.join(WORK, "kubelet.key"))
        self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)

    def run(self):
        self.server.serve_forever()


def spinner_disk(name):
    """A 1 MiB disk whose boot sector is "jmp $": SeaBIOS boots it and the vCPU spins; nothing
    in the VM ever opens the virtio-serial port. One per VM name (QEMU locks its disks)."""
    path = os.path.join(WORK, name + ".img")
    if not os.path.exists(path):
        sector = bytearray(512)
        sector[0:2] = b"\xeb\xfe"
        sector[510:512] = b"\x55\xaa"
        with open(path, "wb") as f:
            f.write(bytes(sector) + bytes((1 << 20) - 512))
    return path


def spinner_xml(name):
    return """<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>16</memory>
  <vcpu>1</vcpu>
  <os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
  <devices>
    <disk type='file' device='disk'><source file='%s'/><target dev='hda' bus='ide'/></disk>
    <channel type='unix'>
      <source mode='bind' path='%s/%s.sock'/>
      <target type='virtio' name='org.virtwatt.power.0'/>
    </channel>
    <memballoon model='none'/>
  </devices>
</domain>
""" % (name, spinner_disk(name), WORK, name)


def create_vm(name):
    path = os.path.join(WORK, name + ".xml")
    with open(path, "w") as f:
        f.write(spinner_xml(name))
    return virsh("create", path)


def vm_ids(m):
    return {l.get("vm_id") for n, l, _ in m.samples if n == "kepler_vm_cpu_joules_total"}


def left_said(m, left):
    """What is known of VMs the host still shows after their destroy: their series' labels,
    whether libvirt or a process still has them, what the host said of them."""
    out = []
    ps = subprocess.run(["ps", "-eo", "pid,stat,lstart,args"], capture_output=True,
                        text=True).stdout.splitlines()
    _, listed = virsh("list", "--all", "--uuid")
    said = host_log().splitlines()
    for uuid in sorted(left):
        labels = [l for n, l, _ in (m.samples if m else []) if n == "kepler_vm_cpu_joules_total"
                  and l.get("vm_id") == uuid][:1]
        procs = [l[:200] for l in ps if uuid in l]
        lines = [l[:240] for l in said if uuid in l or "vm: listing VMs" in l][-6:]
        out.append("%s: labels %s; libvirt lists it: %s; processes: %s; host said: %s" % (
            uuid, labels, uuid in listed, procs or "none", lines or "nothing"))
    return " | ".join(out)


# ---- HTTP abuse ----

def connect(addr, source="127.0.0.1"):
    host, port = addr.rsplit(":", 1)
    s = socket.socket()
    s.settimeout(5)
    s.bind((source, 0))
    s.connect((host, int(port)))
    return s


def scrape_from(addr, source, timeout=5):
    """GET /metrics from another loopback address (the per-IP limit is per source)."""
    t0 = time.monotonic()
    try:
        s = connect(addr, source)
        s.settimeout(timeout)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
        s.close()
        return data.startswith(b"HTTP/1.1 200") and b"kepler_node_cpu" in data, \
            time.monotonic() - t0
    except OSError:
        return False, time.monotonic() - t0


def slowloris(addr, n, seconds):
    """n connections from 127.0.0.1 each sending one byte of a request line per second."""
    conns = []
    for _ in range(n):
        try:
            s = connect(addr)
            s.setblocking(False)
            conns.append(s)
        except OSError:
            break
    end = time.monotonic() + seconds
    req = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"
    i = 0
    while time.monotonic() < end:
        for s in conns:
            try:
                s.send(req[i % len(req):i % len(req) + 1])
            except OSError:
                pass
        i += 1
        time.sleep(1)
    for s in conns:
        s.close()
    return len(conns)


def flood(addr, n):
    """n TCP connections at once, from 127.0.0.x sources spread so no single one holds them all,
    that send nothing; closed after 3 s. Returns how many the kernel let connect."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, n + 512), max(hard, n + 512)))
    conns = []
    for i in range(n):
        try:
            s = socket.socket()
            s.setblocking(False)
            s.bind(("127.0.%d.%d" % (10 + i // 250, 1 + i % 250), 0))
            s.connect_ex(tuple_of(addr))
            conns.append(s)
        except OSError:
            break
    time.sleep(3)
    for s in conns:
        s.close()
    return len(conns)


def tuple_of(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def oversized(addr):
    """A 1 MiB header: the server must refuse it (4xx) or close, and go on serving."""
    try:
        s = connect(addr)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
        data = s.recv(4096)
        s.close()
        return data[:12].decode(errors="replace") or "closed"
    except OSError as e:
        return "closed (%s)" % e.strerror


def pipelined(addr):
    """Three requests in one write: three answers, in order (or the server closes after one,
    which HTTP/1.1 allows); never a mixed-up or broken answer."""
    s = connect(addr)
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"
              b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    s.settimeout(5)
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        pass
    s.close()
    codes = [l.split()[1] for l in data.split(b"\r\n") if l.startswith(b"HTTP/1.1 ")]
    return [c.decode() for c in codes]


def http_abuse(name, addr, n_slow, n_flood):
    base = vwe2e.Metrics("")
    b = try_scrape(addr) or base
    fds0 = b.sum("process_open_fds")
    t = threading.Thread(target=slowloris, args=(addr, n_slow, 12), daemon=True)
    t.start()
    time.sleep(2)
    oks = [scrape_from(addr, "127.0.0.2") for _ in range(5)]
    t.join()
    tap(all(ok for ok, _ in oks), "%s: serves another client while %d slow clients hold "
        "connections" % (name, n_slow),
        "scrapes from 127.0.0.2: %s" % ", ".join("%s %.2f s" % ("ok" if ok else "FAILED", dt)
                                                 for ok, dt in oks))
    got = []
    ft = threading.Thread(target=lambda: got.append(flood(addr, n_flood)), daemon=True)
    ft.start()
    time.sleep(1)
    during = scrape_from(addr, "127.0.0.3", timeout=10)
    ft.join()
    after = wait_for(lambda: scrape_from(addr, "127.0.0.3")[0], 20, 1)
    tap(after is True, "%s: %d connections at once: still serves, during (%s) and after" %
        (name, got[0] if got else 0, "ok" if during[0] else "refused"), "")
    big = oversized(addr)
    tap(big.startswith("HTTP/1.1 4") or big.startswith("closed"),
        "%s: a 1 MiB header is refused" % name, "answer: %s" % big)
    codes = pipelined(addr)
    tap(codes in (["200", "404", "200"], ["200"], ["200", "404"]),
        "%s: pipelined requests answered in order" % name, "status codes: %s" % codes)
    m = wait_for(lambda: (lambda m: m if m and m.sum("process_open_fds") <= fds0 + 4 else None)(
        try_scrape(addr)), 30, 1)
    tap(m is not None, "%s: open descriptors back to their level after the abuse" % name,
        "before %d, now %s" % (fds0, (try_scrape(addr) or base).sum("process_open_fds")))


# ---- The campaign ----

def memory(tag, hw, gw):
    """Both daemons' RSS now, for the record (the final check compares end and warm-up)."""
    h, g = hw.latest, gw.latest
    log("memory after %s: host RSS %.1f MiB, heap %.2f MiB; guest RSS %.1f MiB, heap %.2f MiB" % (
        tag, h.sum("process_resident_memory_bytes") / 2**20 if h else -1,
        h.sum(HEAP) / 2**20 if h else -1,
        g.sum("process_resident_memory_bytes") / 2**20 if g else -1,
        g.sum(HEAP) / 2**20 if g else -1))


RSS, FDS = "process_resident_memory_bytes", "process_open_fds"
FLOOR_S = 20


def floors(tag):
    """What each daemon keeps: the lowest RSS, open descriptors and heap it showed over FLOOR_S
    of scrapes every 0.5 s, not one moment's figure (a 20 MiB pod list being parsed, a heap
    gauge that is refreshed every few seconds)."""
    low = {"host": {}, "guest": {}}
    end = time.monotonic() + FLOOR_S
    while time.monotonic() < end:
        for name, addr in (("host", HOST), ("guest", GUEST)):
            m = try_scrape(addr)
            for k in (RSS, FDS, HEAP) if m else ():
                if m.has(k):
                    low[name][k] = min(low[name].get(k, float("inf")), m.sum(k))
        time.sleep(0.5)
    out = {n: (l.get(RSS, 0), l.get(FDS, 0), l.get(HEAP, 0)) for n, l in low.items()}
    log("floors over %d s %s: host RSS %.1f MiB, heap %.2f MiB, %d fds; "
        "guest RSS %.1f MiB, heap %.2f MiB, %d fds" % (
            FLOOR_S, tag, out["host"][0] / 2**20, out["host"][2] / 2**20, out["host"][1],
            out["guest"][0] / 2**20, out["guest"][2] / 2**20, out["guest"][1]))
    return out


def flat(name, tag, was, now, heap_allowed):
    """One phase's memory check: heap (the allocator's live bytes, where a leak shows) within
    heap_allowed of the phase's start, RSS under a gross bound (runaway growth, e.g. the 3 GiB
    peaks a 20 MiB pod list once caused: RSS mostly holds ASan's shadow and its allocator's
    slack), open descriptors within 4."""
    (rss0, fds0, heap0), (rss, fds, heap) = was, now
    tap(0 < heap <= heap0 + heap_allowed and 0 < rss <= 1.5 * rss0 and fds <= fds0 + 4,
        "%s: memory and descriptors flat through %s" % (name, tag),
        "heap %.2f -> %.2f MiB (+%.0f KiB, %.0f KiB allowed), RSS %.1f -> %.1f MiB (+%.1f %%), "
        "fds %d -> %d" % (heap0 / 2**20, heap / 2**20, (heap - heap0) / 1024,
                          heap_allowed / 1024, rss0 / 2**20, rss / 2**20,
                          100 * (rss - rss0) / rss0 if rss0 else 0, fds0, fds))


def main():
    kubelet = Kubelet()
    kubelet.start()
    hw, gw = vwe2e.Watch(HOST), vwe2e.Watch(GUEST)
    hw.start()
    gw.start()
    hpid = host_pid()

    def guest_source():
        m = try_scrape(GUEST)
        for n, l, v in (m.samples if m else []):
            if n == "virtwatt_guest_power_source_info" and v == 1:
                return l.get("source")
        return None

    ok = wait_for(lambda: guest_source() == "passthrough", 90)
    tap(ok, "set-up: the guest is on the passthrough", "source: %s" % guest_source())
    gstart = (try_scrape(GUEST) or vwe2e.Metrics("")).sum("process_start_time_seconds")

    # A VM whose guest never opens its port: the host publishes into it for the whole run.
    rc, out = create_vm("vw-spin-0")
    tap(rc == 0, "set-up: a second VM whose guest never reads its channel", out)
    # Warm-up: every table and buffer at its working size, so every kubelet answer given at
    # least once (the 20 MiB list's buffers too): 30 s, then until all modes were met (the
    # host backs off after failures: a few minutes at most, bounded).
    t0 = time.monotonic()
    time.sleep(30)
    wait_for(lambda: len(kubelet.by_mode) == Kubelet.KINDS, 240, 1)
    log("warm-up: %.0f s, kubelet answers %r" % (time.monotonic() - t0, kubelet.by_mode))
    base = floors("after warm-up")

    # 1. The meter vanishes (the intel_rapl module unloaded) and comes back.
    a = quiesce("meter vanishes: before")
    resume()
    mark = len(host_log())
    control("vanish", "")
    time.sleep(5)
    fails = hw.failures
    control("vanish")
    time.sleep(5)
    b = quiesce("meter vanishes: after")
    if a and b:
        dn, dt = b[0] - a[0], b[1] - a[1]
        tap(dn <= dt + 0.01 and dn >= dt - 6.5 * WATTS,
            "meter vanishes for 5 s and returns: no energy invented, none lost beyond the "
            "5 s it was gone", "node +%.3f J, meter +%.3f J" % (dn, dt))
    else:
        tap(False, "meter vanishes for 5 s and returns", "no quiescent point")
    resume()
    said = host_log()[mark:]
    tap(alive(hpid) and hw.failures == fails and ("intel-rapl" in said or "powercap" in said),
        "meter vanishes: the host keeps serving and says so",
        "log: " + (said.strip().splitlines() or ["(nothing)"])[0][:200])
    time.sleep(3)
    m1 = try_scrape(HOST)
    time.sleep(5)
    m2 = try_scrape(HOST)
    rate = (node_j(m2) - node_j(m1)) / 5 if m1 and m2 else 0
    tap(abs(rate - WATTS) <= 0.25 * WATTS, "meter back: the node's power is measured again",
        "%.1f W over 5 s (feeder %.0f W)" % (rate, WATTS))

    memory("meter vanishing", hw, gw)

    # 2. The host stopped (SIGSTOP) for longer than a whole counter wrap.
    a = quiesce("stopped past a wrap: before")
    resume()
    g_before = gaps(a[2]) if a else 0
    os.kill(hpid, signal.SIGSTOP)
    t_stop = truth()
    boost = 1000.0
    control("watts", "%g" % boost)
    t0 = time.monotonic()
    while truth() - t_stop < 1.5 * METER_RANGE_J and time.monotonic() - t0 < 30:
        time.sleep(0.2)
    control("watts")
    wrapped = truth() - t_stop
    os.kill(hpid, signal.SIGCONT)
    time.sleep(3)
    b = quiesce("stopped past a wrap: after")
    if a and b:
        dn, dt = b[0] - a[0], b[1] - a[1]
        tap(dt - wrapped - 4 * WATTS <= dn <= dt - wrapped + 2 * WATTS + 0.01 and
            gaps(b[2]) > g_before,
            "host stopped while the meter wrapped %.1f times: a gap, counted; nothing invented"
            % (wrapped / METER_RANGE_J),
            "node +%.3f J, meter +%.3f J of which %.3f J while stopped; gaps %d -> %d"
            % (dn, dt, wrapped, g_before, gaps(b[2])))
    else:
        tap(False, "host stopped past a wrap", "no quiescent point")
    resume()

    memory("SIGSTOP past a wrap", hw, gw)

    # 3. libvirtd killed with SIGKILL, restarted 3 s later.
    mark = len(host_log())
    with open(os.path.join(WORK, "libvirtd.pid")) as f:
        os.kill(int(f.read()), signal.SIGKILL)
    time.sleep(3)
    rc = subprocess.run(W["E2E_START_LIBVIRTD"], shell=True).returncode
    live = wait_for(lambda: (lambda m: m if m and UUID in vm_ids(m) else None)(try_scrape(HOST)),
                    30, 1)
    e1 = (live or vwe2e.Metrics("")).sum("kepler_vm_cpu_joules_total", vm_id=UUID)
    time.sleep(6)
    e2 = (try_scrape(HOST) or vwe2e.Metrics("")).sum("kepler_vm_cpu_joules_total", vm_id=UUID)
    tap(rc == 0 and alive(hpid) and live is not None and e2 > e1,
        "libvirtd killed -9 and restarted: the host keeps the VM and its energy grows",
        "VM energy %.3f -> %.3f J; log: %s" % (e1, e2, " | ".join(
            l[:120] for l in host_log()[mark:].splitlines() if "libvirt" in l)[:400]))
    tap(wait_for(lambda: guest_source() == "passthrough", 20),
        "libvirtd restarted: the guest is on the passthrough")

    memory("libvirtd restart", hw, gw)

    # 4. The shared folders' filesystem full.
    mark = len(host_log())
    filler = os.path.join(SHARE, "filler")
    subprocess.run(["dd", "if=/dev/zero", "of=" + filler, "bs=64k"], capture_output=True)
    frame = os.path.join(SHARE, UUID, "frame.json")
    st0 = os.stat(frame).st_mtime_ns if os.path.exists(frame) else 0
    time.sleep(5)
    said = host_log()[mark:]
    full_ok = alive(hpid) and guest_source() == "passthrough"
    os.unlink(filler)
    fresh = wait_for(lambda: os.path.exists(frame) and os.stat(frame).st_mtime_ns > st0, 10, 0.5)
    errs = [l for l in said.splitlines() if "No space" in l]
    per_vm = max([sum(1 for l in errs if v in l) for v in vm_ids(try_scrape(HOST))] + [0])
    tap(full_ok and fresh and errs and per_vm <= 4,
        "shared folders' filesystem full for 5 s: the channel goes on, the error is logged "
        "(rate-limited per VM), the folder is written again once there is room",
        "channel %s, folder rewritten %s, %d log lines (at most %d for one VM): %s" % (
            "ok" if full_ok else "FAILED", "yes" if fresh else "NO", len(errs), per_vm,
            errs[0][:200] if errs else "none"))

    memory("full share", hw, gw)

    # 5. The wall clock stepped back 10 min, then forward again.
    m_a, r_a = time.monotonic(), time.clock_gettime(time.CLOCK_REALTIME)
    a = quiesce("clock step: before")
    resume()
    time.clock_settime(time.CLOCK_REALTIME, r_a + (time.monotonic() - m_a) - 600)
    time.sleep(4)
    time.clock_settime(time.CLOCK_REALTIME, r_a + (time.monotonic() - m_a) + 600)
    time.sleep(4)
    time.clock_settime(time.CLOCK_REALTIME, r_a + (time.monotonic() - m_a))
    b = quiesce("clock step: after")
    if a and b:
        dn, dt = b[0] - a[0], b[1] - a[1]
        tap(abs(dn - dt) <= 0.01 and gaps(b[2]) == gaps(a[2]),
            "wall clock stepped -10 min and +10 min: the node's energy is exactly the meter's",
            "node +%.3f J, meter +%.3f J" % (dn, dt))
    else:
        tap(False, "wall clock stepped", "no quiescent point")
    resume()

    memory("clock steps", hw, gw)

    # 6. HTTP abuse, on both daemons (the guest through QEMU's user network).
    http_abuse("host", HOST, 40, 10000)  # 40 > the per-IP limit of 16
    # Through QEMU's user network every client is 10.0.2.2 to the guest: one IP, so fewer
    # slow clients than its per-IP limit, and the flood mostly refused at that limit.
    http_abuse("guest", GUEST, 10, 1000)

    memory("HTTP abuse", hw, gw)
    mid = floors("after the faults and HTTP abuse")
    for name in ("host", "guest"):
        # What is kept by design across these faults: nothing that grows; 384 KiB for the
        # allocator's own (+133 KiB measured; a leak of 50 bytes an HTTP request, over 11,000,
        # fails it).
        flat(name, "the faults and HTTP abuse", base[name], mid[name], 384 << 10)

    # 7. VMs: the silent one destroyed mid-publication, then 200 start/destroy cycles.
    rc, out = virsh("destroy", "vw-spin-0")
    time.sleep(3)
    tap(rc == 0 and alive(hpid), "a VM destroyed while it is being published to", out)
    t0, bad = time.monotonic(), []

    seen = {"cycles": 0, "shown": 0}
    shown_cache = [None, set()]

    def shown(uuid):
        m = hw.latest
        if m is not shown_cache[0]:
            shown_cache[:] = [m, vm_ids(m) if m else set()]
        return uuid in shown_cache[1]

    spent = {"create": 0.0, "shown": 0.0, "destroy": 0.0}
    spent_lock = threading.Lock()

    def timed(what, t):
        with spent_lock:
            spent[what] += time.monotonic() - t

    def cycler(k, n):  # four at a time: QEMU's start-up is mostly waiting
        for _ in range(n):
            name = "vw-cycle-%d" % k
            t = time.monotonic()
            rc, out = create_vm(name)
            timed("create", t)
            if rc == 0:  # destroyed once the host shows it: each cycle a VM it measured
                t = time.monotonic()
                rc_u, uuid = virsh("domuuid", name)
                ok = rc_u == 0 and wait_for(lambda: shown(uuid.strip()), 15, 0.25)
                timed("shown", t)
                seen["cycles"] += 1
                seen["shown"] += bool(ok)
                t = time.monotonic()
                rc, out = virsh("destroy", name)
                timed("destroy", t)
            if rc != 0:
                bad.append(out[:160])
                if len(bad) > 5:
                    return
    done = 0
    while done < CYCLES and len(bad) <= 5:  # in batches of 100, memory logged after each
        batch = min(100, CYCLES - done)
        threads = [threading.Thread(target=cycler, args=(k, batch // 4 + (k < batch % 4)))
                   for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        done += batch
        time.sleep(2)
        memory("%d VM cycles" % done, hw, gw)
    log("%d VM cycles in %.0f s; a cycle's mean: create %.2f s, until shown %.2f s, destroy "
        "%.2f s" % (CYCLES, time.monotonic() - t0, *(spent[w] / max(1, seen["cycles"])
                                                    for w in ("create", "shown", "destroy"))))
    # The last VMs must leave the series within 5 s of their destroy (was a fixed 5 s sleep).
    wait_for(lambda: (lambda m: m and not vm_ids(m) - {UUID})(try_scrape(HOST)), 5, 0.5)
    m = try_scrape(HOST)
    left = vm_ids(m) - {UUID} if m else {"no scrape"}
    tap(not bad and alive(hpid) and not left and seen["shown"] >= 0.9 * CYCLES,
        "%d VM start/destroy cycles: the host shows each VM while it runs, none left behind"
        % CYCLES,
        "; ".join(bad) if bad else "VMs still shown: %s" % left_said(m, left) if left else
        "%d of %d VMs shown by the host within 15 s of their start" % (seen["shown"],
                                                                   seen["cycles"]))

    memory("VM cycles", hw, gw)

    # 8. The kubelet flapped all along. A fast run can reach here before the host, backing off
    #    after failures, has met every mode: wait for them (bounded) rather than pass on fewer.
    deadline = time.monotonic() + 240
    while (kubelet.requests < 10 or len(kubelet.by_mode) < Kubelet.KINDS) and \
            time.monotonic() < deadline:
        time.sleep(1)
    said = host_log()
    kube_lines = [l for l in said.splitlines() if "podmeta" in l]
    tap(kubelet.requests >= 10 and len(kubelet.by_mode) == Kubelet.KINDS and kube_lines and
        alive(hpid),
        "a kubelet flapping for the whole run (500, 30 s stalls, garbage, truncated, 20 MiB, "
        "resets): the host keeps serving and says why",
        "%d requests %r; %d log lines, e.g. %s" % (kubelet.requests, kubelet.by_mode,
                                                 len(kube_lines), kube_lines[-1][:160]
                                                 if kube_lines else "none"))

    # 9. What must hold for the whole run.
    time.sleep(5)
    hw.finish()
    gw.finish()
    tap(hw.scrapes > 100 and not hw.back, "host: no counter ever went back",
        "%d scrapes, %d series; %s" % (hw.scrapes, len(hw.last), "; ".join(hw.back[:5])))
    tap(gw.scrapes > 100 and not gw.back, "guest: no counter ever went back",
        "%d scrapes, %d series; %s" % (gw.scrapes, len(gw.last), "; ".join(gw.back[:5])))
    gm = try_scrape(GUEST) or vwe2e.Metrics("")
    tap(alive(hpid) and host_pid() == hpid and gm.sum("process_start_time_seconds") == gstart,
        "neither daemon crashed or restarted",
        "host PID %d alive %s; guest start time %.0f -> %.0f" % (
            hpid, alive(hpid), gstart, gm.sum("process_start_time_seconds")))
    end = floors("at the end")
    for name in ("host", "guest"):
        # What is kept by design for each gone VM: its counters (publisher 1 h, at most 4096;
        # registry 720 intervals, at most --monitor.max-terminated): +592 KiB of heap over 200
        # cycles with the kubelet flapping (2026-11-30; +985 KiB in CI before the passthrough's
        # buffers stopped growing with every VM ever destroyed, 1.5 KiB a VM, and a gone VM's
        # folder work, 600 bytes, was freed: heaptrack showed both). Allowed:
        # 256 KiB + 3.5 KiB a cycle; a leak of 4 KiB a VM fails it (checked: tests/e2e/README.md).
        # Not fewer cycles: over 100 the same leak failed by 74 KiB only (+680 KiB of 606
        # allowed; +369 KiB without it), within the spread of the fixed part (0-250 KiB).
        # The guest sees no VM: 256 KiB.
        cycles = CYCLES if name == "host" else 0
        flat(name, "%d VM cycles and a flapping kubelet" % cycles, mid[name], end[name],
             (256 << 10) + cycles * 3584)
    vwe2e.write_ntests(WORK)
    return 1 if vwe2e.failed else 0


if __name__ == "__main__":
    sys.exit(main())
