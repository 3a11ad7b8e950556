#!/usr/bin/env python3
"""A powercap fixture tree whose package counter advances in real time at a known wattage.

    feeder.py SYSFS_ROOT WATTS

Creates SYSFS_ROOT/class/powercap/intel-rapl:0/{name,max_energy_range_uj,energy_uj} and then,
every 100 ms, writes energy_uj = WATTS x (seconds fed so far) in microjoules, atomically (a
temporary file renamed over it: virtwatt-host opens the file for every read). While the file
SYSFS_ROOT/pause exists the counter holds still (0 W), so every stage downstream can settle on
one value. SIGTERM ends it.
"""
import os
import signal
import sys
import time

root, watts = sys.argv[1], float(sys.argv[2])
zone = os.path.join(root, "class", "powercap", "intel-rapl:0")
os.makedirs(zone, exist_ok=True)
MAX = 262143328850  # a real package's max_energy_range_uj
START = 1000000


def put(name, value):
    tmp = os.path.join(zone, "." + name)
    with open(tmp, "w") as f:
        f.write("%d\n" % value)
    os.replace(tmp, os.path.join(zone, name))


with open(os.path.join(zone, "name"), "w") as f:
    f.write("package-0\n")
put("max_energy_range_uj", MAX)
put("energy_uj", START)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
fed = 0.0  # seconds the meter has run
last = time.monotonic()
while True:
    time.sleep(0.1)
    now = time.monotonic()
    if not os.path.exists(os.path.join(root, "pause")):
        fed += now - last
    last = now
    put("energy_uj", int(START + watts * 1e6 * fed) % MAX)
