#!/usr/bin/env python3
"""What tests/e2e/checks.py and tests/e2e/faults.py share: TAP output, scraping and parsing an
exposition, a watcher that proves no counter ever goes back, and waiting on a condition."""
import os
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from exposition import Exposition as Metrics  # noqa: E402  (tests/exposition.py)

n_tests = 0
failed = 0


def log(msg):
    print("# " + msg.replace("\n", "\n# "), flush=True)


def tap(ok, what, detail=""):
    """One TAP line. A failure carries its details in its title too (meson prints a TAP
    test's titles and stderr, not its comment lines) and on stderr."""
    global n_tests, failed
    n_tests += 1
    title = what
    if not ok:
        failed += 1
        if detail:
            title = "%s [%s]" % (what, " ".join(detail.split()).replace("#", "No.")[:600])
        print("FAILED: %s: %s" % (what, detail), file=sys.stderr, flush=True)
    print("%s %d - %s" % ("ok" if ok else "not ok", n_tests, title), flush=True)
    if detail:
        log(detail)


def fetch(addr, path="/metrics", timeout=5):
    with urllib.request.urlopen("http://%s%s" % (addr, path), timeout=timeout) as r:
        return r.read().decode()


def scrape(addr):
    return Metrics(fetch(addr))


def try_scrape(addr):
    try:
        return scrape(addr)
    except Exception:
        return None



class Watch(threading.Thread):
    """Scrape addr every `every` s for as long as it runs: every counter series must never go
    back (within one process's life: pause() around a deliberate restart), and the figures of a
    few gauges are kept (their highest value) for memory checks."""

    def __init__(self, addr, every=0.5, keep=("process_resident_memory_bytes",
                                              "process_open_fds")):
        super().__init__(daemon=True)
        self.addr, self.every, self.keep = addr, every, keep
        self.last, self.back, self.scrapes, self.failures, self.stop = {}, [], 0, 0, False
        self.paused, self.peak, self.latest = False, {}, None

    def run(self):
        while not self.stop:
            if self.paused:
                time.sleep(0.1)
                continue
            m = try_scrape(self.addr)
            if m is None:
                self.failures += 1
            else:
                self.scrapes += 1
                self.latest = m
                for key, v in m.counters():
                    if key in self.last and v < self.last[key]:
                        self.back.append("%s: %r -> %r" % (key, self.last[key], v))
                    self.last[key] = v
                for name in self.keep:
                    if m.has(name):
                        self.peak[name] = max(self.peak.get(name, 0), m.sum(name))
            time.sleep(self.every)

    def forget(self):
        """A deliberate restart: counters start again."""
        self.last = {}

    def finish(self):
        self.stop = True
        self.join(10)


def wait_for(pred, timeout, step=0.5):
    end = time.monotonic() + timeout
    while True:
        r = pred()
        if r or time.monotonic() > end:
            return r
        time.sleep(step)



def write_ntests(work):
    with open(os.path.join(work, "ntests"), "w") as f:
        f.write("%d\n" % n_tests)
