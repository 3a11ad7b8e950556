#!/usr/bin/env bash
# Issue #33's side-by-side run: virtwatt-host, prometheus-node-exporter and Debian's
# prometheus-process-exporter in the same windows, at the same scrape rate (one a second each):
#   1. bench/daemon_cpu.sh at 1,000 and 10,000 processes (1 % churn a second, BPF accounting,
#      1 s interval): CPU ms per second = per interval, VmRSS and VmHWM, ratios, the load;
#   2. bench/vms.sh's base and libvirt windows: 10,000 processes with no VM, then with 100 VMs
#      (channels and shared folders, passthrough every 1 s interval);
#   3. bench/memory.sh at 1,000 processes: both daemons' VmRSS/VmHWM (the guest's target).
#   sudo bench/compare.sh                      about 7 minutes on a quiet machine
#   CALLGRIND=DIR sudo bench/compare.sh        step 2 under callgrind (instructions per interval)
#   SCRAPE=prom3 sudo bench/compare.sh         virtwatt scraped as Prometheus 3 does (bench/lib.sh)
# Environment: INTERVALS (20), VMS (100), PROCS (10000), and what the two scripts take.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "run as root (BPF accounting, pid_max)" >&2; exit 1; }
echo "## daemon_cpu.sh: 1,000 and 10,000 processes"
COUNTS=${COUNTS:-"1000 10000"} ACCOUNTING=auto INTERVALS=${INTERVALS:-20} bench/daemon_cpu.sh
echo "## vms.sh: 10,000 processes, then 100 VMs with channels and shares"
WINDOWS="base libvirt" INTERVALS=${INTERVALS:-20} bench/vms.sh
echo "## memory.sh: both daemons at 1,000 processes"
COUNTS=1000 WINDOW=${WINDOW:-20} bench/memory.sh
