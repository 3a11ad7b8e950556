#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""
A CPU workload for the truth check (truth.py), one thread, until SIGTERM.

  cpu_load.py full READY    spins (one core at 100 %)
  cpu_load.py duty READY    spins 30 ms of every 100 ms (~30 % of one core)
"""
import signal
import sys
import time

mode, ready = sys.argv[1], sys.argv[2]
stop = False


def on_term(_sig, _frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)
open(ready, "w").close()
busy = 0.1 if mode == "full" else 0.03
while not stop:
    t0 = time.monotonic()
    x = 0
    while time.monotonic() - t0 < busy:
        for i in range(1000):
            x += i * i
    rest = 0.1 - (time.monotonic() - t0)
    if rest > 0:
        time.sleep(rest)
