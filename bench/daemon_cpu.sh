#!/usr/bin/env bash
# The daemon's CPU time per interval with 1,000 and 10,000 processes, end to end, next to
# prometheus-node-exporter on the same machine in the same windows.
#   bench/daemon_cpu.sh                       COUNTS="1000 10000" INTERVALS=20 by default
#   COUNTS=5000 INTERVALS=30 CHURN=0 bench/daemon_cpu.sh
#   VW_ARGS=--cpu.ran-walk=false bench/daemon_cpu.sh   extra virtwatt-host flags (word-split)
#   SCRAPE=prom3 bench/daemon_cpu.sh         virtwatt scraped as Prometheus 3 does (bench/lib.sh)
# For each count N it forks N sleeping processes (bench/spawn_idle), CHURN per mille of them
# replaced every second (default 10: 1 % churn per 1 s interval, oldest first), then for each CPU
# accountant (auto: bpf as root, else procfs; then procfs) starts virtwatt-host (release build in
# build-bench/, --monitor.interval=1s, defaults otherwise: process top-N 50) and a default
# node_exporter on free 127.0.0.1 ports, waits for both to be ready and WARMUP more seconds,
# scrapes each once a second for INTERVALS seconds, and reads each one's CPU time before and
# after (utime+stime from /proc/PID/stat, and the threads' exact schedstat run time) and its
# VmRSS/VmHWM at the end. With bpf it also reports what the daemon's exit and free
# programs cost inside the kernel over the window (kernel.bpf_stats_enabled, restored
# afterwards): that time is charged to the tasks that exit, not to the daemon (its task
# iterator runs in its own read() calls and is in its CPU time already). Everything it starts is stopped, and
# anything it changes (kernel.pid_max when too small, bpf stats) is restored, on exit (trap).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

COUNTS=${COUNTS:-"1000 10000"}
INTERVALS=${INTERVALS:-20}
CHURN=${CHURN:-10}
WARMUP=${WARMUP:-3}
ACCOUNTING=${ACCOUNTING:-"auto procfs"} # procfs: a second window per count, procfs accounting
BUILD=${BUILD:-build-bench}
NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}

command -v "$NODE_EXPORTER" >/dev/null || { echo "$NODE_EXPORTER not found (deploy/install-deps.sh --bench)" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl not found" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found (free port lookup)" >&2; exit 1; }

release_build "$BUILD" host/virtwatt-host bench/spawn_idle
host="$BUILD/host/virtwatt-host"
spawn="$BUILD/bench/spawn_idle"

tmp=$(mktemp -d)
pids=()
spawner=
old_pid_max=
old_bpf_stats=
cleanup() {
	stop_pids "${pids[@]}" ${spawner:+"$spawner"}
	[ -z "$old_bpf_stats" ] || sysctl -qw kernel.bpf_stats_enabled="$old_bpf_stats" || true
	[ -z "$old_pid_max" ] || sysctl -qw kernel.pid_max="$old_pid_max" || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
CLK_TCK=$(getconf CLK_TCK)

# Run time (ns) of its event programs (sched_process_exit, sched_process_free; sched_switch only
# where counters opened). Its task iterators and the walk (vw_walk) run inside its own read()
# calls, so their time is already in its CPU time and is left out here.
bpf_run_ns() {
	local id sum=0 ns line
	for id in $(bpf_ids_of "$1" prog_id); do
		line=$(bpftool prog show id "$id" 2>/dev/null | sed -n 1p) # all of it: head would SIGPIPE bpftool, and pipefail end the run
		case $line in *" name vw_iter_"* | *" name vw_walk"*) continue ;; esac
		ns=$(sed -n 's/.*run_time_ns \([0-9]*\).*/\1/p' <<<"$line")
		sum=$((sum + ${ns:-0}))
	done
	echo "$sum"
}
# virtwatt_cpu_accounting_ran_walk_active now: 1 while the switch marker is attached.
ran_walk_active() {
	curl -sf "http://127.0.0.1:$1/metrics" |
		sed -n 's/^virtwatt_cpu_accounting_ran_walk_active{.*} \([0-9]*\)$/\1/p'
}
bpf_map_kib() {
	local id sum=0 b
	for id in $(bpf_ids_of "$1" map_id); do
		b=$(bpftool map show id "$id" 2>/dev/null | sed -n 's/.*memlock \([0-9]*\)B.*/\1/p')
		sum=$((sum + ${b:-0}))
	done
	echo $((sum / 1024))
}

start_spawner() {
	"$spawn" "$1" "$CHURN" >"$tmp/spawn.out" &
	spawner=$!
	for _ in $(seq 600); do
		grep -q '^ready' "$tmp/spawn.out" && return 0
		kill -0 "$spawner" 2>/dev/null || { echo "spawn_idle $1 failed" >&2; exit 1; }
		sleep 0.1
	done
	echo "spawn_idle $1 did not get ready" >&2
	exit 1
}

stop_spawner() {
	stop_pids "$spawner"
	spawner=
}

# Stop the servers this window started.
stop_servers() {
	stop_pids "${pids[@]}"
	pids=()
}

div() { awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN { if (b + 0 == 0) print "-"; else printf f "\n", a / b }'; }

# window N ACCOUNTING: one measurement; appends a row to $tmp/rows.
window() {
	local n=$1 acct=$2 vw_port ne_port vw_pid ne_pid method procs t0 t1 secs
	local vw_t0 vw_n0 vw_t1 vw_n1 ne_t0 ne_n0 ne_t1 ne_n1 k0=0 k1=0 kern=- maps=- series
	local vw_rss vw_hwm ne_rss ne_hwm pe_port='' pe_pid='' pe_n0=0 pe_n1=0
	local pe_exact=- pe_rss=- pe_hwm=- load0 lv w0=0 wc0=0 w1=0 wc1=0 m0=0 mc0=0 m1=0 mc1=0

	vw_port=$(free_port)
	"$host" --monitor.interval=1s --web.listen-address="127.0.0.1:$vw_port" \
		--cpu.accounting="$acct" ${VW_ARGS:-} >"$tmp/vw-$n-$acct.log" 2>&1 &
	vw_pid=$!
	pids+=("$vw_pid")
	ne_port=$(free_port)
	"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$ne_port" >"$tmp/ne.log" 2>&1 &
	ne_pid=$!
	pids+=("$ne_pid")
	if [ -n "$PROCESS_EXPORTER" ]; then
		pe_port=$(free_port)
		start_pe "$pe_port" "$tmp"
		pids+=("$pe_pid")
	fi
	# Up to 60 s: the first procfs scan of 10,000 processes is slow.
	wait_ready "http://127.0.0.1:$vw_port/readyz" 60 || { cat "$tmp/vw-$n-$acct.log" >&2; exit 1; }
	wait_ready "http://127.0.0.1:$ne_port/metrics" 60
	[ -z "$pe_port" ] || wait_ready "http://127.0.0.1:$pe_port/metrics" 60
	sleep "$WARMUP"
	method=$(curl -sf "http://127.0.0.1:$vw_port/metrics" |
		sed -n 's/^virtwatt_cpu_accounting_info{method="\([a-z]*\)".*/\1/p')
	procs=$(count /proc/[0-9]*)
	if [ "$method" = bpf ]; then
		[ -n "$old_bpf_stats" ] || old_bpf_stats=$(sysctl -n kernel.bpf_stats_enabled)
		sysctl -qw kernel.bpf_stats_enabled=1
		k0=$(bpf_run_ns "$vw_pid")
		read -r w0 wc0 < <(bpf_prog_stats "$vw_pid" "vw_walk vw_walk_ran")
		read -r m0 mc0 < <(bpf_prog_stats "$vw_pid" "vw_mark")
		rw0=$(ran_walk_active "$vw_port")
	fi
	load0=$(load1)
	t0=$(now)
	read -r vw_t0 vw_n0 < <(cpu_of "$vw_pid")
	read -r ne_t0 ne_n0 < <(cpu_of "$ne_pid")
	[ -z "$pe_pid" ] || read -r _ pe_n0 < <(cpu_of "$pe_pid")
	scrape_both "$vw_port" "$ne_port" "$INTERVALS" "$tmp" "$pe_port"
	t1=$(now)
	read -r vw_t1 vw_n1 < <(cpu_of "$vw_pid")
	read -r ne_t1 ne_n1 < <(cpu_of "$ne_pid")
	[ -z "$pe_pid" ] || read -r _ pe_n1 < <(cpu_of "$pe_pid")
	read -r vw_rss vw_hwm < <(memory_of "$vw_pid")
	read -r ne_rss ne_hwm < <(memory_of "$ne_pid")
	[ -z "$pe_pid" ] || read -r pe_rss pe_hwm < <(memory_of "$pe_pid")
	lv=n
	! grep -q 'libvirt\.so' "/proc/$vw_pid/maps" || lv=y
	if [ "$method" = bpf ]; then
		k1=$(bpf_run_ns "$vw_pid")
		read -r w1 wc1 < <(bpf_prog_stats "$vw_pid" "vw_walk vw_walk_ran")
		read -r m1 mc1 < <(bpf_prog_stats "$vw_pid" "vw_mark")
		rw1=$(ran_walk_active "$vw_port")
		[ "$(sysctl -n kernel.bpf_stats_enabled)" = 1 ] ||
			echo "# kernel.bpf_stats_enabled was turned off during the window: the in-kernel figure is partial" >&2
		sysctl -qw kernel.bpf_stats_enabled="$old_bpf_stats"
		maps=$(bpf_map_kib "$vw_pid")
	fi
	series=$(curl -sf "http://127.0.0.1:$vw_port/metrics" | grep -vc '^#')
	stop_servers
	[ "$(grep -c '^200$' "$tmp/vw.codes")" -eq "$INTERVALS" ] || echo "# virtwatt: some scrapes failed" >&2
	[ "$(grep -c '^200$' "$tmp/ne.codes")" -eq "$INTERVALS" ] || echo "# node_exporter: some scrapes failed" >&2
	[ -z "$pe_pid" ] || [ "$(grep -c '^200$' "$tmp/pe.codes")" -eq "$INTERVALS" ] ||
		echo "# process-exporter answered $(grep -c '^200$' "$tmp/pe.codes") of $INTERVALS scrapes in the window" >&2

	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }')
	# Monitor interval is 1 s: intervals in the window = its length in seconds.
	local vw_ms vw_exact ne_ms ne_exact
	vw_ms=$(div "$(( (vw_t1 - vw_t0) * 1000 / CLK_TCK ))" "$secs")
	vw_exact=$(div "$(( (vw_n1 - vw_n0) / 1000 ))" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')")
	ne_ms=$(div "$(( (ne_t1 - ne_t0) * 1000 / CLK_TCK ))" "$secs")
	ne_exact=$(div "$(( (ne_n1 - ne_n0) / 1000 ))" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')")
	if [ -n "$pe_pid" ]; then
		pe_exact=$(div "$(( (pe_n1 - pe_n0) / 1000 ))" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')")
	fi
	[ "$method" != bpf ] || kern=$(div "$(( (k1 - k0) / 1000 ))" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')")
	printf "%6s %-12s %6s %7s %8s %8s %8s %9s %9s %9s %8s %8s %8s %8s %7s %7s %8s %8s %8s %7s %7s %11s %2s\n" \
		"$n" "$method$([ "$acct" = auto ] && echo "(auto)")" "$procs" "$series" "$vw_ms" "$vw_exact" "$kern" "$vw_rss" "$vw_hwm" "$maps" \
		"$ne_ms" "$ne_exact" "$ne_rss" "$ne_hwm" "$(div "$vw_exact" "$ne_exact")" "$(div "$vw_hwm" "$ne_hwm")" \
		"$pe_exact" "$pe_rss" "$pe_hwm" "$(div "$vw_exact" "$pe_exact")" "$(div "$vw_hwm" "$pe_hwm")" \
		"$load0>$(load1)" "$lv" >>"$tmp/rows"
	tail -n1 "$tmp/rows"
	[ "$method" != bpf ] || awk -v w=$((w1 - w0)) -v wc=$((wc1 - wc0)) -v m=$((m1 - m0)) \
		-v mc=$((mc1 - mc0)) -v s="$secs" -v rw="$rw0>$rw1" 'BEGIN {
		printf "#   walks: %d runs, %.3f ms per run, %.3f ms/s (in vw_ms); switch marker: %d runs, %.1f ns per run, %.3f ms/s (charged to the tasks); ran walk active (start>end): %s\n",
		wc, wc ? w / wc / 1e6 : 0, w / s / 1e6, mc, mc ? m / mc : 0, m / s / 1e6, rw }'
}

header() {
	printf "%6s %-12s %6s %7s %8s %8s %8s %9s %9s %9s %8s %8s %8s %8s %7s %7s %8s %8s %8s %7s %7s %11s %2s\n" \
		procs accounting in_proc series vw_ms vw_ms_ex bpf_kern vw_rss vw_hwm bpf_maps \
		ne_ms ne_ms_ex ne_rss ne_hwm cpu_x hwm_x pe_ms_ex pe_rss pe_hwm cpu_px hwm_px load lv
}

echo "# $(nproc) CPUs, $(uname -r), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg); $INTERVALS s windows after ${WARMUP} s of warm-up, monitor.interval=1s, one scrape/s of each server (virtwatt: SCRAPE=$SCRAPE)"
echo "# churn: $CHURN per mille of the processes replaced every second (oldest first)"
echo "# vw_ms: virtwatt CPU ms per interval from utime+stime (10 ms ticks); vw_ms_ex: the same from its threads' schedstat (ns)"
echo "# bpf_kern: ms per second its exit/free BPF programs ran (charged to the exiting tasks, not to virtwatt)"
echo "# ne_ms, ne_ms_ex: node_exporter CPU ms per second the same two ways; rss/hwm in KiB; bpf_maps: the daemon's map memlock KiB"
echo "# cpu_x = vw_ms_ex / ne_ms_ex, hwm_x = vw_hwm / ne_hwm (virtwatt / node_exporter)"
echo "# pe_*: prometheus-process-exporter (every process, by comm) the same way; cpu_px, hwm_px: virtwatt / it"
echo "# load: the 1-minute load average at the window's start > at its end (the machine is shared:"
echo "#   CPU figures under load are upper bounds; bench/vms.sh CALLGRIND=DIR counts instructions)"
echo "# lv: y where libvirt was loaded (a QEMU ran on the machine, another's test's too): ~14 MiB of RSS"
header
for n in $COUNTS; do
	make_room "$n"
	start_spawner "$n"
	window "$n" auto
	if [ "$(tail -n1 "$tmp/rows" | awk '{ print $2 }')" = "procfs(auto)" ]; then
		echo "# auto chose procfs (not root, or BPF unavailable): no separate procfs window" >&2
	elif [[ " $ACCOUNTING " == *" procfs "* ]]; then
		window "$n" procfs
	fi
	stop_spawner
done
