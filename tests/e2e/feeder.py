#!/usr/bin/env python3
"""A powercap fixture tree whose package counter advances in real time at a known wattage, and
an ACPI power meter (the platform zone) that reads a known power.

    feeder.py SYSFS_ROOT WATTS [MAX_ENERGY_RANGE_UJ [PLATFORM_WATTS [BMC_CONTROL_DIR]]]

Creates SYSFS_ROOT/class/powercap/intel-rapl:0/{name,max_energy_range_uj,energy_uj,
constraint_0_max_power_uw} and then,
every 20 ms, writes energy_uj = WATTS x (seconds fed so far) in microjoules, modulo the range
(default a real package's), atomically (a temporary file renamed over it: virtwatt-host opens
the file for every read). It writes the true, unwrapped energy in joules to SYSFS_ROOT/truth
the same way, for checks. With PLATFORM_WATTS (> 0), class/hwmon/hwmon0 links to an ACPI
power meter (name power_meter, its files on the ACPI device as the driver has them) whose
power1_average is PLATFORM_WATTS in microwatts, or 0 while paused; SYSFS_ROOT/platform_truth
holds the joules it has read so far. With BMC_CONTROL_DIR (the test BMC's, tests/redfish/bmc.py)
the platform power is the BMC's instead: its `watts` file is kept at PLATFORM_WATTS (0 while
paused) and there is no ACPI meter. Controls, files under SYSFS_ROOT (tests/e2e/faults.py uses
them):
  pause   while it exists the counter holds still (0 W) and the platform meter reads 0 W, so every
          stage downstream can settle
  watts   a number: the power from now on instead of WATTS (removed: WATTS again)
  vanish  while it exists the zone directory is gone (removed, as when the intel_rapl module is
          unloaded: a daemon's open directory handle goes stale too); the energy keeps running
          and the zone comes back, a new directory, with the counter where it would be
SIGTERM ends it.
"""
import os
import shutil
import signal
import sys
import time

root, watts = sys.argv[1], float(sys.argv[2])
MAX = int(sys.argv[3]) if len(sys.argv) > 3 else 262143328850  # a real package's range
PLATFORM_W = float(sys.argv[4]) if len(sys.argv) > 4 else 0
BMC = sys.argv[5] if len(sys.argv) > 5 else None
powercap = os.path.join(root, "class", "powercap")
zone = os.path.join(powercap, "intel-rapl:0")
START = 1000000


def put(d, name, value):
    tmp = os.path.join(d, "." + name)
    with open(tmp, "w") as f:
        f.write("%s\n" % value)
    os.replace(tmp, os.path.join(d, name))


def power():
    try:
        with open(os.path.join(root, "watts")) as f:
            return float(f.read())
    except (OSError, ValueError):
        return watts


def create_zone(energy_j):
    os.makedirs(zone, exist_ok=True)
    put(zone, "name", "package-0")
    put(zone, "max_energy_range_uj", MAX)
    # PL1 of 250 W, as a server package has: virtwatt-host's plausibility ceiling is 4x that, so
    # a reading after longer than a whole wrap at 1000 W (4.3 s with a 2^32 uJ range) is a gap.
    put(zone, "constraint_0_max_power_uw", 250000000)
    put(zone, "energy_uj", int(START + energy_j * 1e6) % MAX)


def create_meter():
    dev = os.path.join(root, "devices", "LNXSYSTM:00", "LNXSYBUS:00", "ACPI000D:00")
    hw = os.path.join(dev, "hwmon", "hwmon0")
    os.makedirs(hw, exist_ok=True)
    os.makedirs(os.path.join(root, "class", "hwmon"), exist_ok=True)
    link = os.path.join(root, "class", "hwmon", "hwmon0")
    if not os.path.islink(link):
        os.symlink("../../devices/LNXSYSTM:00/LNXSYBUS:00/ACPI000D:00/hwmon/hwmon0", link)
    if not os.path.islink(os.path.join(hw, "device")):
        os.symlink("../../../ACPI000D:00", os.path.join(hw, "device"))
    put(dev, "name", "power_meter")
    put(dev, "power1_average_interval", 1000)
    put(dev, "power1_average", int(PLATFORM_W * 1e6))
    return dev


meter = create_meter() if PLATFORM_W > 0 and not BMC else None
platform_j = 0.0
create_zone(0)
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
energy = 0.0  # joules fed so far
last = time.monotonic()
while True:
    # A real package counter moves every ~1 ms; at 100 ms steps a 1 s interval read between
    # two steps was ±10 % off on package (the platform meter, a power, has no steps), which
    # made the host's per-interval VM energy on package noisy enough to tilt its VM models.
    time.sleep(0.02)
    now = time.monotonic()
    paused = os.path.exists(os.path.join(root, "pause"))
    if not paused:
        energy += power() * (now - last)
        platform_j += PLATFORM_W * (now - last)
    last = now
    if meter:
        put(meter, "power1_average", 0 if paused else int(PLATFORM_W * 1e6))
    if BMC and PLATFORM_W > 0:
        put(BMC, "watts", 0 if paused else PLATFORM_W)
    if PLATFORM_W > 0:
        put(root, "platform_truth", "%.6f" % platform_j)
    if os.path.exists(os.path.join(root, "vanish")):
        shutil.rmtree(zone, ignore_errors=True)
    elif not os.path.isdir(zone):
        create_zone(energy)
    else:
        put(zone, "energy_uj", int(START + energy * 1e6) % MAX)
    put(root, "truth", "%.6f" % energy)
