#!/usr/bin/env bash
# Hypervisor scale (issue #16): virtwatt-host with 100 VMs, 10,000 processes and passthrough to
# every VM each interval, next to prometheus-node-exporter in the same windows.
#   bench/vms.sh                                   as root; about 7 minutes with the defaults
#   VMS=100 PROCS=10000 INTERVALS=30 NOREAD=50 SLOW_INTERVALS=8 bench/vms.sh
#   VW_ARGS=--cpu.ran-walk=false bench/vms.sh  extra virtwatt-host flags (word-split)
#   WINDOWS="base libvirt noread" bench/vms.sh     only some windows
#   SHAREREAD=20 bench/vms.sh                      20 of the VMS guests read their share each second
#   SCRAPE=prom3 bench/vms.sh                      virtwatt scraped as Prometheus 3 does (bench/lib.sh)
# It forks PROCS sleeping processes (bench/spawn_idle; kernel.pid_max raised if too small and
# restored), then for each window starts VMS fake QEMU processes (bench/fake_qemu: argv[0]
# qemu-system-x86_64, -uuid, -name, -smp 1, a socket chardev in server mode for the
# org.virtwatt.power.0 port, a 9p fsdev for the share), the release virtwatt-host (build-bench/)
# and a default node_exporter on free 127.0.0.1 ports, waits until /metrics lists all VMS of
# them and WARMUP more seconds, scrapes both once a second for the window and reads each one's
# CPU time (threads' schedstat) before and after and VmRSS/VmHWM at the end; a fake records
# when each frame reached it, and perf (when it works) when the daemon began each round (its
# first sendto(), or the share's first renameat() or unlinkat()). Windows:
#   base      no VM (an empty libvirt test-driver node): the same daemon without VMs
#   libvirt   1 s interval; the VMs listed by libvirt's test driver (a node file naming each
#             VM's channel socket and shared folder, as libvirt's live XML does), their QEMU
#             PIDs found by -uuid in /proc: channel and shared folder; every guest reads
#   noread    the same with NOREAD of the VMS guests never reading their port, measured after
#             FILL seconds (their sockets full by then)
#   chanonly  libvirt without --passthrough.share-root: what the channels alone cost
#   procscan  1 s interval; no libvirtd (an unreachable qemu:///system socket): the VMs found by
#             the process scan alone, which learns no channel: shared folder only
#   slow      libvirt with a 5 s interval, SLOW_INTERVALS intervals
# In every window SHAREREAD of the VMS guests (default 0) read their shared folder's frame.json
# once a second, as a guest over 9p does (the fake opens, reads and closes the host's file); the
# others' shares are never opened (virtwatt-host then writes their frame.json every 30 s only;
# the fakes count the renames: share_unread_renames_per_vm_round).
# It fails if /metrics lists fewer than VMS of its VMs, or a guest that reads got no frame.
# Everything it starts is stopped on exit (trap). Not part of the timed tests.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

VMS=${VMS:-100}
PROCS=${PROCS:-10000}
INTERVALS=${INTERVALS:-30}
WARMUP=${WARMUP:-5}
NOREAD=${NOREAD:-50}
SHAREREAD=${SHAREREAD:-0}
FILL=${FILL:-45}
SLOW_INTERVALS=${SLOW_INTERVALS:-8}
WINDOWS=${WINDOWS:-"base libvirt noread chanonly procscan slow"}
BUILD=${BUILD:-build-bench}
NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}
PERF=${PERF:-perf}
# CALLGRIND=DIR: the host runs under valgrind --tool=callgrind, instrumented only during each
# window; its dump goes to DIR/<window>.PID.out.1 and the row's vw_ms is replaced by the instructions
# it executed per interval (millions, "15.7M"; bench/callgrind_ir.py). Instruction counts repeat
# on a loaded machine, where CPU time does not; latencies are then the slowed daemon's.
CALLGRIND=${CALLGRIND:-}
[ -z "$CALLGRIND" ] || { PERF=; mkdir -p "$CALLGRIND"; CALLGRIND=$(cd "$CALLGRIND" && pwd); }
# MASSIF=DIR: the host runs under valgrind --tool=massif (--pages-as-heap=no) instead, and the
# heap by allocation site at each window's end goes to DIR/<window>.snap (vgdb detailed_snapshot;
# compare two windows' with bench/massif_diff.py). Not with CALLGRIND.
MASSIF=${MASSIF:-}
[ -z "$MASSIF" ] || { PERF=; mkdir -p "$MASSIF"; MASSIF=$(cd "$MASSIF" && pwd); }
[ -z "$MASSIF" ] || [ -z "$CALLGRIND" ] || { echo "MASSIF and CALLGRIND: one at a time" >&2; exit 1; }
# KPROF=DIR: the kernel's side of each window: `perf record -g -e cpu-clock -c 100000` (a sample per 100 µs on CPU) of the host
# (DIR/<window>.perf.data; `perf report -i ... --sort sym`), its threads' schedstat at the
# window's start and end (DIR/<window>.schedstat: tid comm run_ns wait_ns slices), and with
# KPROF_STRACE=1 `strace -c -f` of it instead of perf (DIR/<window>.strace: calls per window;
# strace slows the daemon, so not with perf), KPROF_STRACE=trace every call (`strace -f -tt`,
# DIR/<window>.trace). Not with CALLGRIND or MASSIF.
KPROF=${KPROF:-}
KPROF_STRACE=${KPROF_STRACE:-}
[ -z "$KPROF" ] || { mkdir -p "$KPROF"; KPROF=$(cd "$KPROF" && pwd); }

# SMAPS=DIR: the host's /proc/PID/smaps at each window's end into DIR/<window>.smaps, and its
# threads into DIR/<window>.tasks (bench/smaps_diff.py A B: resident memory by mapping class).
SMAPS=${SMAPS:-}
[ -z "$SMAPS" ] || { mkdir -p "$SMAPS"; SMAPS=$(cd "$SMAPS" && pwd); }

[ "$(id -u)" = 0 ] || { echo "run as root (BPF accounting, pid_max, perf)" >&2; exit 1; }
command -v "$NODE_EXPORTER" >/dev/null || { echo "$NODE_EXPORTER not found (deploy/install-deps.sh --bench)" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl not found" >&2; exit 1; }
command -v python3 >/dev/null || { echo "python3 not found" >&2; exit 1; }
case " $WINDOWS " in *" noread "*) [ "$NOREAD" -le "$VMS" ] || { echo "NOREAD ($NOREAD) > VMS ($VMS)" >&2; exit 1; } ;; esac

release_build "$BUILD" host/virtwatt-host bench/spawn_idle bench/fake_qemu
host="$BUILD/host/virtwatt-host"
spawn="$BUILD/bench/spawn_idle"
fake="$BUILD/bench/fake_qemu"

# A tmpfs, as /run/virtwatt is in production: the share is written with fsync each round.
tmp=$(mktemp -d "${VMS_TMPDIR:-/dev/shm}/vw-vms.XXXXXX")
# The fake under a QEMU binary's name, as a real one is: its executable and comm say
# qemu-system-x86_64 (the process scan reads the command line only where one of them does).
# (Beside the build, not on /dev/shm, which may be mounted noexec.)
cp "$fake" "$BUILD/bench/qemu-system-x86_64"
fake="$BUILD/bench/qemu-system-x86_64"
pids=()
fakes=()
spawner=
perf_pid=
old_pid_max=
cleanup() {
	stop_pids "${pids[@]}" ${perf_pid:+"$perf_pid"} "${fakes[@]}" ${spawner:+"$spawner"}
	[ -z "$old_pid_max" ] || sysctl -qw kernel.pid_max="$old_pid_max" || true
	if [ -n "${KEEP_TMP:-}" ]; then echo "# kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# threads_schedstat PID TAG: "TAG tid comm run_ns wait_ns slices" per thread.
threads_schedstat() {
	local t
	for t in /proc/"$1"/task/*; do
		echo "$2 ${t##*/} $(tr ' ' _ <"$t/comm") $(cat "$t/schedstat" 2>/dev/null)"
	done
}
mono_ns() { python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_MONOTONIC))'; }
div() { awk -v a="$1" -v b="$2" -v f="${3:-%.1f}" 'BEGIN { if (b + 0 == 0) print "-"; else printf f "\n", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# perf on the tracepoints of the syscalls that begin a VM's publication (the channel's send, the
# share's first rename of a file, or an unlinkat of a leftover temp), on the CLOCK_MONOTONIC
# clock; or nothing. (The share's temp is created first, a few microseconds before its rename.)
PERF_EVENTS=(-e syscalls:sys_enter_sendto -e syscalls:sys_enter_unlinkat -e syscalls:sys_enter_renameat
	-e syscalls:sys_enter_renameat2)
if [ -n "$PERF" ] && ! "$PERF" record -q -k mono "${PERF_EVENTS[@]}" -o "$tmp/probe.data" -- true \
	>/dev/null 2>&1; then
	echo "# perf cannot record syscall tracepoints here: latencies are from each round's first delivery" >&2
	PERF=
fi
rm -f "$tmp/probe.data"

vm_prefix() { printf '%08x-%04x' $$ "$1"; }
vm_uuid() { printf '%s-4000-8000-%012x' "$(vm_prefix "$1")" "$2"; }
# NOREAD of the VMS guests, spread evenly over them (with 50 of 100: every other one).
not_reading() { [ $(($1 * NOREAD / VMS)) -ne $((($1 + 1) * NOREAD / VMS)) ]; }
# SHAREREAD of them read their share, spread the same way.
share_reading() { [ $(($1 * SHAREREAD / VMS)) -ne $((($1 + 1) * SHAREREAD / VMS)) ]; }

# start_fakes DIR W NVMS NOREAD: the window's fake QEMUs and libvirt's node file naming the
# same channel sockets and shared folders.
start_fakes() {
	local dir=$1 w=$2 nvms=$3 noread=$4 i uuid rd srd
	mkdir -p "$dir/ch" "$dir/share" "$dir/fake"
	fakes=()
	echo "<node>" >"$dir/node.xml"
	for ((i = 0; i < nvms; i++)); do
		uuid=$(vm_uuid "$w" "$i")
		rd=1
		[ "$noread" = 0 ] || ! not_reading "$i" || rd=0
		srd=0
		! share_reading "$i" || srd=1
		cat >>"$dir/node.xml" <<-EOF
			<domain type='test'><name>vwbench-$i</name><uuid>$uuid</uuid><memory>65536</memory><vcpu>1</vcpu>
			<os><type>hvm</type></os><devices>
			<channel type='unix'><source mode='bind' path='$dir/ch/$uuid.sock'/><target type='virtio' name='org.virtwatt.power.0'/></channel>
			<filesystem type='mount' accessmode='mapped'><source dir='$dir/share/$uuid'/><target dir='virtwatt'/><readonly/></filesystem>
			</devices></domain>
		EOF
		(FAKE_QEMU_LOG="$dir/fake/$i.log" FAKE_QEMU_READ=$rd FAKE_QEMU_SHARE_READ=$srd exec -a qemu-system-x86_64 "$fake" \
			-name "guest=vwbench-$i,debug-threads=on" -uuid "$uuid" -smp 1 -m 64 -accel tcg \
			-chardev "socket,id=charchannel0,path=$dir/ch/$uuid.sock,server=on,wait=off" \
			-device "virtserialport,bus=virtio-serial0.0,nr=1,chardev=charchannel0,id=channel0,name=org.virtwatt.power.0" \
			-fsdev "local,security_model=mapped,id=fsdev-fs0,path=$dir/share/$uuid,readonly=on" \
			-device "virtio-9p-pci,id=fs0,fsdev=fsdev-fs0,mount_tag=virtwatt") &
		fakes+=($!)
	done
	echo "</node>" >>"$dir/node.xml"
	for _ in $(seq 100); do
		[ "$(find "$dir/ch" -type s | wc -l)" -ge "$nvms" ] && return 0
		sleep 0.1
	done
	echo "the fake QEMUs did not all listen" >&2
	exit 1
}

stop_fakes() {
	stop_pids "${fakes[@]}"
	fakes=()
}

# Distinct VMs of window W running in a scrape of PORT.
vms_listed() {
	curl -sf "http://127.0.0.1:$1/metrics" | grep '^kepler_vm_cpu_joules_total{' | grep 'state="running"' |
		grep -o "vm_id=\"$(vm_prefix "$2")[^\"]*\"" | sort -u | wc -l || true
}

# wait_vms PORT W NVMS SECONDS
wait_vms() {
	local n=0
	for _ in $(seq "$4"); do
		n=$(vms_listed "$1" "$2")
		[ "$n" -ge "$3" ] && return 0
		sleep 1
	done
	echo "only $n of $3 VMs in /metrics after $4 s" >&2
	return 1
}

table_entries() {
	curl -sf "http://127.0.0.1:$1/metrics" |
		sed -n "s/^virtwatt_table_entries{table=\"$2\".*} \([0-9]*\).*/\1/p" || true
}

# window NAME SOURCE INTERVAL_S N_INTERVALS NVMS NOREAD SHARE WARMUP_S: one measurement, a row
# in $tmp/rows. SOURCE libvirt (the test driver) or procscan; SHARE 1: with a share root.
w=0
window() {
	local name=$1 src=$2 ival=$3 n=$4 nvms=$5 noread=$6 share=$7 warm=$8 dir uri vw_port ne_port
	local vw_pid ne_pid t0 t1 secs vw_n0 vw_n1 ne_n0 ne_n1 vw_rss0 vw_rss vw_hwm ne_rss ne_hwm
	local vw_pss vw_anon vw_c0 vw_c1 ch_ms helper=(- -)
	local listed pub_vms k v share_opt=() pe_port='' pe_pid='' pe_n0=0 pe_n1=0 pe_ms=- pe_rss=- pe_hwm=- load0
	local -A r
	w=$((w + 1))
	dir="$tmp/w$w"
	start_fakes "$dir" "$w" "$nvms" "$noread"
	[ "$share" = 0 ] || share_opt=(--passthrough.share-root="$dir/share")
	case $src in
	libvirt) uri="test://$dir/node.xml" ;;
	procscan) uri="qemu:///system?socket=$dir/no-libvirtd.sock" ;;
	esac
	vw_port=$(free_port)
	${CALLGRIND:+valgrind --tool=callgrind --instr-atstart=no -q \
		--callgrind-out-file="$CALLGRIND/$name.%p.out"} \
		${MASSIF:+valgrind --tool=massif --pages-as-heap=no --depth=40 --threshold=0.2 --vgdb=yes -q \
		--massif-out-file="$MASSIF/$name.%p.ms"} \
		"$host" --monitor.interval="${ival}s" --web.listen-address="127.0.0.1:$vw_port" \
		--libvirt.uri="$uri" "${share_opt[@]}" --passthrough.lock-dir="$dir/lock" ${VW_ARGS:-} \
		>"$dir/host.log" 2>&1 &
	vw_pid=$!
	pids+=("$vw_pid")
	ne_port=$(free_port)
	"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$ne_port" >"$dir/ne.log" 2>&1 &
	ne_pid=$!
	pids+=("$ne_pid")
	if [ -n "$PROCESS_EXPORTER" ]; then
		pe_port=$(free_port)
		start_pe "$pe_port" "$dir"
		pids+=("$pe_pid")
	fi
	wait_ready "http://127.0.0.1:$vw_port/readyz" 60 || { tail -n 20 "$dir/host.log" >&2; exit 1; }
	wait_ready "http://127.0.0.1:$ne_port/metrics" 30
	[ -z "$pe_port" ] || wait_ready "http://127.0.0.1:$pe_port/metrics" 60
	if [ "$nvms" -gt 0 ]; then
		wait_vms "$vw_port" "$w" "$nvms" $((ival * 5 + 30)) || { tail -n 20 "$dir/host.log" >&2; exit 1; }
	else
		sleep "$ival"
	fi
	sleep "$warm"

	if [ -n "$PERF" ]; then
		"$PERF" record -q -k mono "${PERF_EVENTS[@]}" -p "$vw_pid" -o "$dir/perf.data" \
			>/dev/null 2>&1 &
		perf_pid=$!
		sleep 1
	fi
	[ "$nvms" = 0 ] || kill -USR1 "${fakes[@]}"
	[ -z "$CALLGRIND" ] || callgrind_control -i on "$vw_pid" >/dev/null 2>&1
	local kprof_pid=
	if [ -n "$KPROF" ]; then
		threads_schedstat "$vw_pid" start >"$KPROF/$name.schedstat"
		if [ "$KPROF_STRACE" = trace ]; then
			strace -f -tt -p "$vw_pid" -o "$KPROF/$name.trace" >/dev/null 2>&1 &
		elif [ -n "$KPROF_STRACE" ]; then
			strace -c -f -p "$vw_pid" -o "$KPROF/$name.strace" >/dev/null 2>&1 &
		else
			"${PERF:-perf}" record -q -g -e cpu-clock -c 100000 -p "$vw_pid" -o "$KPROF/$name.perf.data" >/dev/null 2>&1 &
		fi
		kprof_pid=$!
		sleep 0.5
	fi
	load0=$(load1)
	t0=$(mono_ns)
	read -r vw_rss0 _ < <(memory_of "$vw_pid")
	read -r _ vw_n0 < <(cpu_of "$vw_pid")
	vw_c0=$(children_cpu_of "$vw_pid")
	read -r _ ne_n0 < <(cpu_of "$ne_pid")
	[ -z "$pe_pid" ] || read -r _ pe_n0 < <(cpu_of "$pe_pid")
	scrape_both "$vw_port" "$ne_port" $((n * ival)) "$dir" "$pe_port"
	t1=$(mono_ns)
	read -r _ vw_n1 < <(cpu_of "$vw_pid")
	if [ -n "$kprof_pid" ]; then
		kill -INT "$kprof_pid"
		wait "$kprof_pid" || true
		threads_schedstat "$vw_pid" end >>"$KPROF/$name.schedstat"
	fi
	vw_c1=$(children_cpu_of "$vw_pid")
	read -r _ ne_n1 < <(cpu_of "$ne_pid")
	[ -z "$pe_pid" ] || read -r _ pe_n1 < <(cpu_of "$pe_pid")
	read -r vw_rss vw_hwm < <(memory_of "$vw_pid")
	read -r vw_pss vw_anon < <(memory_split_of "$vw_pid")
	if [ -n "$SMAPS" ]; then
		cat "/proc/$vw_pid/smaps" >"$SMAPS/$name.smaps"
		grep -H . /proc/"$vw_pid"/task/*/comm >"$SMAPS/$name.tasks" 2>/dev/null || true
	fi
	[ -z "$MASSIF" ] || vgdb --pid="$vw_pid" detailed_snapshot "$MASSIF/$name.snap" >/dev/null 2>&1 ||
		echo "# $name: vgdb detailed_snapshot failed" >&2
	read -r ne_rss ne_hwm < <(memory_of "$ne_pid")
	[ -z "$pe_pid" ] || read -r pe_rss pe_hwm < <(memory_of "$pe_pid")
	if [ -n "$CALLGRIND" ]; then
		callgrind_control -i off "$vw_pid" >/dev/null 2>&1
		callgrind_control -d "$vw_pid" >/dev/null 2>&1
	fi
	[ "$nvms" = 0 ] || kill -USR1 "${fakes[@]}"
	if [ -n "$perf_pid" ]; then
		kill -INT "$perf_pid"
		wait "$perf_pid" || true
		perf_pid=
		"$PERF" script -i "$dir/perf.data" -F tid,time,event,trace --ns >"$dir/perf.txt" 2>/dev/null || : >"$dir/perf.txt"
	fi
	listed=$(vms_listed "$vw_port" "$w")
	[ "$src" != libvirt ] || read -r -a helper < <(helper_cost "$host" "$uri")
	pub_vms=$(table_entries "$vw_port" publisher_vm)
	stop_pids "${pids[@]}"
	pids=()
	stop_fakes
	k=$(grep -cE 'level=(warn|error)' "$dir/host.log" || true)
	[ "$k" = 0 ] || echo "# $name: $k warnings or errors in the host's log, the first: $(grep -m1 -E \
		'level=(warn|error)' "$dir/host.log" | sed 's/^time=[^ ]* //' | cut -c1-160)" >&2
	[ "$(grep -c '^200$' "$dir/vw.codes")" -eq $((n * ival)) ] || echo "# $name: some virtwatt scrapes failed" >&2
	[ -z "$pe_pid" ] || [ "$(grep -c '^200$' "$dir/pe.codes")" -eq $((n * ival)) ] ||
		echo "# $name: process-exporter answered $(grep -c '^200$' "$dir/pe.codes") of $((n * ival)) scrapes in the window" >&2

	if [ "$nvms" -gt 0 ]; then
		python3 bench/vms_latency.py --t0 "$t0" --t1 "$t1" --pid "$vw_pid" \
			${PERF:+--perf "$dir/perf.txt"} $([ "$src" = libvirt ] || echo --no-channels) \
			$([ "$share" = 1 ] || echo --no-share) "$dir"/fake/*.log >"$dir/latency"
	else
		: >"$dir/latency"
	fi
	while read -r k v; do r[$k]=$v; done <"$dir/latency"
	for k in rounds chan_p50_ms chan_p95_ms chan_max_ms share_p50_ms share_p95_ms share_max_ms \
		chan_spread_p50_ms chan_missed share_missed noread_queued_start_b noread_queued_end_b; do
		[ -n "${r[$k]:-}" ] || r[$k]=-
	done

	[ "$listed" -ge "$nvms" ] || { echo "FAIL $name: /metrics listed $listed of $nvms VMs" >&2; exit 1; }
	if [ "$nvms" -gt 0 ] && [ "$share" = 1 ] && [ "${r[share_silent_fakes]}" != 0 ]; then
		echo "FAIL $name: ${r[share_silent_fakes]} guests reading their share got no new frame in it" >&2
		exit 1
	fi
	if [ "$nvms" -gt 0 ] && [ "$src" = libvirt ] && [ "${r[chan_silent_fakes]}" != 0 ]; then
		echo "FAIL $name: ${r[chan_silent_fakes]} reading guests got no frame on their channel" >&2
		exit 1
	fi

	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a) / 1e9 }')
	local vw_ms ne_ms
	vw_ms=$(div "$(( (vw_n1 - vw_n0) / 1000 ))" "$(awk -v s="$secs" -v i="$ival" 'BEGIN { print s / i * 1000 }')")
	if [ -n "$CALLGRIND" ]; then
		local cg=("$CALLGRIND/$name.$vw_pid.out".*)
		vw_ms=$(python3 bench/callgrind_ir.py "${cg[0]}" | awk '$1 == "ir_per_interval" { printf "%.2fM", $2 / 1e6 }')
		python3 bench/callgrind_ir.py --top 40 "${cg[0]}" >"$CALLGRIND/$name.top"
	fi
	ne_ms=$(div "$(( (ne_n1 - ne_n0) / 1000 ))" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')")
	ch_ms=$(awk -v t="$((vw_c1 - vw_c0))" -v hz="$(getconf CLK_TCK)" -v s="$secs" -v i="$ival" \
		'BEGIN { printf "%.2f", t * 1000 / hz / (s / i) }')
	if [ -n "$pe_pid" ]; then
		pe_ms=$(div "$(( (pe_n1 - pe_n0) / 1000 ))" "$(awk -v s="$secs" 'BEGIN { print s * 1000 }')")
		pe_hwm=$(mib "$pe_hwm")
		pe_rss=$(mib "$pe_rss")
	fi
	printf "%-8s %3ss %4s %4s %3s %7s %6s %16s %9s %6s %11s %6s %11s %11s %6s %17s %17s %6s %7s %s\n" \
		"$name" "$ival" "$listed" "${pub_vms:--}" "$noread" "$vw_ms" "$ch_ms" \
		"$(mib "$vw_rss0")>$(mib "$vw_rss")/$(mib "$vw_hwm")" "$(mib "$vw_pss")/$(mib "$vw_anon")" \
		"$ne_ms" "$(mib "$ne_rss")/$(mib "$ne_hwm")" "$pe_ms" "$pe_rss/$pe_hwm" \
		"$load0>$(load1)" "${r[rounds]}" \
		"${r[chan_p50_ms]}/${r[chan_p95_ms]}/${r[chan_max_ms]}" \
		"${r[share_p50_ms]}/${r[share_p95_ms]}/${r[share_max_ms]}" \
		"${r[chan_spread_p50_ms]}" "${r[chan_missed]}/${r[share_missed]}" \
		"${r[noread_queued_start_b]}->${r[noread_queued_end_b]}" | tee -a "$tmp/rows"
	echo "# $name: load $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(grep -c '^200$' "$dir/vw.codes") scrapes" >&2
	[ "$src" != libvirt ] || echo "# $name: one libvirt helper run (full: every XML): ${helper[0]} ms CPU, peak RSS" \
		"$(if [ "${helper[1]}" = - ]; then echo -; else mib "${helper[1]}"; fi) MiB (- : no helper, libvirt in the daemon)" >&2
	[ "$nvms" = 0 ] || {
		echo "# $name: reference ${r[reference]} (${r[sends]} syscalls), ${r[fakes_connected]} channels connected,"
		echo "#   first delivery of a round p50 ${r[chan_first_p50_ms]} ms, spread max ${r[chan_spread_max_ms]} ms," \
			"${r[model_lines]} model lines, non-readers' queue max ${r[noread_queued_end_max_b]} B,"
		echo "#   ${r[fakes_share_reading]:-0} guests reading their share, frame.json replaced" \
			"${r[share_unread_renames_per_vm_round]:--} times per round in each share nobody reads"
	} >&2
}

echo "# $(nproc) CPUs, $(uname -r), $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg); $VMS VMs, $PROCS idle processes, windows of" \
	"$INTERVALS intervals (slow: $SLOW_INTERVALS of 5 s) after $WARMUP s; one scrape/s of each server (virtwatt: SCRAPE=$SCRAPE)"
echo "# vw_ms: virtwatt-host CPU ms per interval (threads' schedstat); ne_ms: node_exporter CPU ms/s;"
echo "#   ch_ms: CPU ms per interval of the children it reaped in the window (its libvirt helper runs;"
echo "#   cutime+cstime, clock ticks: 0 when none ran), on top of vw_ms"
echo "#   pe_ms, pe_rss/hwm: prometheus-process-exporter (every process, by comm) the same way;"
echo "#   load: 1-minute load average at the window's start > end (CPU under load: upper bounds);"
echo "#   rss>rss/hwm: VmRSS at the window's start > at its end / VmHWM, MiB; vms: ours in /metrics;"
echo "#   pss/anon: PSS and anonymous memory at the end, MiB (VmRSS also counts the shared library pages,"
echo "#   libvirt's ~14 MiB among them, which PSS divides between their users and anon leaves out)"
echo "#   pub: the publisher's table; nrd: guests never reading their port; SHAREREAD=$SHAREREAD guests read their share"
echo "# chan, share: publication latency p50/p95/max ms over VMs x rounds, from the round's first syscall"
echo "#   (perf: sendto, renameat or unlinkat) to the fake's read() / its 1 s poll of the share (share-reading"
echo "#   guests only: up to 1 s late); spread: p50 of (last - first channel delivery)"
echo "#   of a round; missed: (VM, round) pairs never delivered, channel/share; queued: a non-reader's"
echo "#   unread bytes at the window's start -> end (p50)"
printf "%-8s %4s %4s %4s %3s %7s %6s %16s %9s %6s %11s %6s %11s %11s %6s %17s %17s %6s %7s %s\n" \
	window ival vms pub nrd vw_ms ch_ms "rss>rss/hwm" pss/anon ne_ms ne_rss/hwm pe_ms pe_rss/hwm load rounds chan_ms share_ms spread missed queued
make_room "$((PROCS + VMS))"
"$spawn" "$PROCS" >"$tmp/spawn.out" &
spawner=$!
for _ in $(seq 600); do
	grep -q '^ready' "$tmp/spawn.out" && break
	kill -0 "$spawner" 2>/dev/null || { echo "spawn_idle $PROCS failed" >&2; exit 1; }
	sleep 0.1
done
grep -q '^ready' "$tmp/spawn.out" || { echo "spawn_idle $PROCS did not get ready" >&2; exit 1; }
for win in $WINDOWS; do
	case $win in
	base) window base libvirt 1 "$INTERVALS" 0 0 1 "$WARMUP" ;;
	libvirt) window libvirt libvirt 1 "$INTERVALS" "$VMS" 0 1 "$WARMUP" ;;
	noread) window noread libvirt 1 "$INTERVALS" "$VMS" "$NOREAD" 1 "$FILL" ;;
	chanonly) window chanonly libvirt 1 "$INTERVALS" "$VMS" 0 0 "$WARMUP" ;;
	procscan) window procscan procscan 1 "$INTERVALS" "$VMS" 0 1 "$WARMUP" ;;
	slow) window slow libvirt 5 "$SLOW_INTERVALS" "$VMS" 0 1 "$WARMUP" ;;
	*) echo "unknown window $win" >&2; exit 1 ;;
	esac
done
echo "# done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
