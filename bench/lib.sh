# shellcheck shell=bash
# Helpers the benchmark scripts share (sourced from bench/*.sh, run from the repository root).

# release_build DIR TARGET...: configure DIR as a release build without sanitizers if it is not
# configured yet, refuse one configured otherwise (its figures would mean nothing), build TARGETs.
release_build() {
	local dir=$1 buildtype sanitize
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" --buildtype=release -Db_sanitize=none -Dwerror=false >/dev/null
	fi
	read -r buildtype sanitize < <(meson introspect "$dir" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["buildtype"], o["b_sanitize"])')
	if [ "$buildtype" != release ] || [ "$sanitize" != none ]; then
		echo "$dir is buildtype=$buildtype b_sanitize=$sanitize; want release and none (BUILD=...)" >&2
		return 1
	fi
	ninja -C "$dir" "$@" >/dev/null
}

# stop_pids PID...: SIGTERM each and reap it.
stop_pids() {
	local p
	for p in "$@"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}

# A free loopback port (the kernel picks one; small race until the server binds it).
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_ready URL [SECONDS]: wait until URL answers 200 (10 s by default).
wait_ready() {
	local tries=$((${2:-10} * 10))
	for _ in $(seq "$tries"); do
		curl -sf -o /dev/null "$1" && return 0
		sleep 0.1
	done
	echo "no answer from $1" >&2
	return 1
}

# VmRSS and VmHWM (KiB) of a PID.
memory_of() {
	awk '/^VmRSS:/ { r = $2 } /^VmHWM:/ { h = $2 } END { print r, h }' "/proc/$1/status"
}

# "PSS anon" (KiB) of a PID from smaps_rollup: VmRSS counts every shared-library page the process
# has mapped in full (libvirt and its ~50 libraries: ~14 MiB, nearly all clean pages shared with
# every other process using them); PSS divides those by their sharers, and anon is its own
# memory (heap, stacks, the libraries' relocated data). Reading it needs the PID's owner or root.
memory_split_of() {
	awk '/^Pss:/ { p = $2 } /^Anonymous:/ { a = $2 } END { print p + 0, a + 0 }' \
		"/proc/$1/smaps_rollup" 2>/dev/null || echo "0 0"
}

# How many paths a glob matched (processes come and go: no ls over /proc).
count() { echo $#; }

# "utime+stime (ticks) schedstat (ns, sum over live threads)" of a PID.
cpu_of() {
	local ticks ns=0 t
	ticks=$(sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }')
	for t in /proc/"$1"/task/*/schedstat; do
		read -r run _ 2>/dev/null <"$t" && ns=$((ns + run))
	done
	echo "$ticks $ns"
}

# "cutime+cstime" (ticks) of a PID: the CPU of the children it has reaped (virtwatt-host's libvirt
# helper runs, which no thread's schedstat of the daemon counts).
children_cpu_of() {
	sed 's/.*) //' "/proc/$1/stat" | awk '{ print $14 + $15 }'
}

# helper_cost HOST URI [RUNS]: "CPU_MS PEAK_RSS_KIB" of one run of HOST's libvirt helper (the
# median of RUNS, 5 by default, each asked for every domain's XML, as a full reconcile is), or
# "- -" for a binary without one (libvirt loaded in the daemon itself).
helper_cost() {
	python3 - "$1" "$2" "${3:-5}" <<'PY'
import resource, statistics, subprocess, sys
host, uri, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
cpu, rss = [], 0
for _ in range(runs):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([host, "--internal-libvirt-list=" + uri], input=b"full\n",
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0 or not p.stdout.startswith(b"VWLV"):
        print("- -")
        sys.exit(0)
    cpu.append((r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000)
    rss = max(rss, r1.ru_maxrss)
print("%.1f %d" % (statistics.median(cpu), rss))
PY
}

# SCRAPE: how virtwatt's /metrics is scraped in the measured windows. text (the default): curl's
# plain GET, answered in the text format, uncompressed. prom3: as Prometheus 3 scrapes by default
# (scrape_protocols OpenMetricsText1.0.0 first): its Accept header, answered in OpenMetrics, and
# its Accept-Encoding: gzip (the body is fetched compressed, not decoded).
SCRAPE=${SCRAPE:-text}
PROM3_ACCEPT='application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2'
case $SCRAPE in
text) vw_scrape_headers=() ;;
prom3) vw_scrape_headers=(-H "Accept: $PROM3_ACCEPT" -H 'Accept-Encoding: gzip') ;;
*) echo "SCRAPE=$SCRAPE: text or prom3" >&2; exit 1 ;;
esac

# scrape_both VW_PORT NE_PORT SECONDS DIR [PE_PORT]: one scraper process per server, one scrape
# of /metrics a second (curl --rate) for SECONDS, virtwatt's as SCRAPE says; each one's HTTP
# codes in DIR/vw.codes, DIR/ne.codes (and DIR/pe.codes for process-exporter's PE_PORT, none of
# its scrapes past SECONDS).
scrape_both() {
	local vw_args=() ne_args=() c1 c2 c3=
	for _ in $(seq "$3"); do
		vw_args+=(-o /dev/null "http://127.0.0.1:$1/metrics")
		ne_args+=(-o /dev/null "http://127.0.0.1:$2/metrics")
	done
	curl -s --rate 1/s -w '%{http_code}\n' "${vw_scrape_headers[@]}" "${vw_args[@]}" >"$4/vw.codes" &
	c1=$!
	curl -s --rate 1/s -w '%{http_code}\n' "${ne_args[@]}" >"$4/ne.codes" &
	c2=$!
	if [ -n "${5:-}" ]; then
		# process-exporter may answer more slowly than once a second (10,000 processes): one
		# scrape a second at most, each its own curl (its code written when it ends), none
		# past the window, which is the same for all three; pe.codes counts those answered.
		(
			end=$((SECONDS + $3))
			while [ "$SECONDS" -lt "$end" ]; do
				next=$((SECONDS + 1))
				curl -s -o /dev/null -w '%{http_code}\n' --max-time $((end - SECONDS + 1)) \
					"http://127.0.0.1:$5/metrics" || true
				while [ "$SECONDS" -lt "$next" ]; do sleep 0.1; done
			done
		) >"$4/pe.codes" 2>/dev/null &
		c3=$!
	fi
	sleep "$3"
	wait "$c1" "$c2" ${c3:+"$c3"} || true
}

# Debian's prometheus-process-exporter, the per-process exporter people run beside
# node_exporter, with the package's example configuration (examples/all.yaml: every process,
# grouped by comm) and its defaults otherwise (threads and smaps gathered). PROCESS_EXPORTER
# names the binary; empty or missing: none is measured.
PROCESS_EXPORTER=${PROCESS_EXPORTER-prometheus-process-exporter}
if [ -n "$PROCESS_EXPORTER" ] && ! command -v "$PROCESS_EXPORTER" >/dev/null; then
	echo "# $PROCESS_EXPORTER not found (deploy/install-deps.sh --bench): not measured" >&2
	PROCESS_EXPORTER=
fi

# start_pe PORT DIR: start process-exporter on 127.0.0.1:PORT (its config and log in DIR); its
# PID in $pe_pid.
start_pe() {
	printf 'process_names:\n  - name: "{{.Comm}}"\n    cmdline:\n    - ".+"\n' >"$2/pe.yaml"
	"$PROCESS_EXPORTER" -config.path "$2/pe.yaml" -web.listen-address "127.0.0.1:$1" \
		>"$2/pe.log" 2>&1 &
	# shellcheck disable=SC2034 # the caller's
	pe_pid=$!
}

# The 1-minute load average, for the figures it stands beside.
load1() { cut -d' ' -f1 /proc/loadavg; }

# make_room N: room for N more tasks: kernel.pid_max (raised if needed: the caller restores
# $old_pid_max, which is set the first time, on exit), RLIMIT_NPROC, pids.max.
make_room() {
	local n=$1 tasks need pid_max cg limit
	tasks=$(count /proc/[0-9]*/task/[0-9]*)
	need=$((tasks + n + 2000))
	pid_max=$(cat /proc/sys/kernel/pid_max)
	if [ "$pid_max" -lt "$need" ]; then
		[ "$(id -u)" -eq 0 ] || { echo "kernel.pid_max $pid_max < $need; run as root or raise it" >&2; exit 1; }
		[ -n "$old_pid_max" ] || old_pid_max=$pid_max
		sysctl -qw kernel.pid_max="$need"
		echo "# kernel.pid_max raised from $pid_max to $need for this run"
	fi
	if [ "$(id -u)" -ne 0 ] && [ "$(ulimit -u)" != unlimited ] && [ "$(ulimit -u)" -lt "$need" ]; then
		ulimit -Su "$(ulimit -Hu)" 2>/dev/null || true
		[ "$(ulimit -u)" = unlimited ] || [ "$(ulimit -u)" -ge "$need" ] ||
			{ echo "ulimit -u $(ulimit -u) is below $need" >&2; exit 1; }
	fi
	cg=$(awk -F: '$2 == "pids" || ($1 == "0" && $2 == "") { print $3; exit }' /proc/self/cgroup)
	for f in /sys/fs/cgroup/pids"$cg"/pids.max /sys/fs/cgroup"$cg"/pids.max; do
		[ -r "$f" ] || continue
		limit=$(cat "$f")
		if [ "$limit" != max ] && [ "$limit" -lt "$need" ]; then
			echo "$f is $limit, below $need" >&2
			exit 1
		fi
	done
}

# bpf_ids_of PID prog_id|map_id: the BPF programs or maps process PID holds, from its file
# descriptors (a daemon or test elsewhere on the machine may hold programs of the same names).
bpf_ids_of() {
	grep -h "^$2:" /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -un
}

# bpf_prog_stats PID "NAMES": run_time_ns and run_cnt summed over PID's programs whose names are
# in NAMES (space-separated), as "NS CNT" (kernel.bpf_stats_enabled on for them to count).
bpf_prog_stats() {
	local id ns=0 cnt=0 line name n c
	for id in $(bpf_ids_of "$1" prog_id); do
		line=$("${BPFTOOL:-bpftool}" prog show id "$id" 2>/dev/null | sed -n 1p) # all of it: head would SIGPIPE bpftool, and pipefail end the run
		name=$(sed -n 's/.* name \([^ ]*\) .*/\1/p' <<<"$line")
		[[ " $2 " == *" $name "* ]] || continue
		n=$(sed -n 's/.*run_time_ns \([0-9]*\).*/\1/p' <<<"$line")
		c=$(sed -n 's/.*run_cnt \([0-9]*\).*/\1/p' <<<"$line")
		ns=$((ns + ${n:-0}))
		cnt=$((cnt + ${c:-0}))
	done
	echo "$ns $cnt"
}

# bpf_loader_setup BUILD: bench/vw-bpf-load built in BUILD (configured as a development build
# where it is not yet) as $LOADER, a temporary folder in $tmp, and kernel.bpf_stats_enabled on
# until the script exits, when the EXIT trap stops the loader still running, puts the setting
# back and removes $tmp. Root.
bpf_loader_setup() {
	[ -f "$1/build.ninja" ] || meson setup "$1" --native-file build-dev.ini >&2
	ninja -C "$1" bench/vw-bpf-load >&2
	LOADER=$1/bench/vw-bpf-load
	tmp=$(mktemp -d)
	bpf_stats_old=$(sysctl -n kernel.bpf_stats_enabled)
	loader=
	trap bpf_loader_cleanup EXIT
	sysctl -qw kernel.bpf_stats_enabled=1
}

bpf_loader_cleanup() {
	[ -n "$loader" ] && kill "$loader" 2>/dev/null && wait "$loader" 2>/dev/null
	sysctl -qw kernel.bpf_stats_enabled="$bpf_stats_old"
	rm -rf "$tmp"
}

# loader_start [OPTION...]: the loader started with OPTIONs, its PID in $loader, once it says its
# programs are attached (10 s at most); its errors and exit 1 where it ends first.
loader_start() {
	"$LOADER" "$@" >"$tmp/out" 2>"$tmp/err" &
	loader=$!
	for _ in $(seq 100); do
		grep -q attached "$tmp/out" && break
		kill -0 "$loader" 2>/dev/null || { cat "$tmp/err" >&2; exit 1; }
		sleep 0.1
	done
}

# loader_stop: the loader stopped and reaped.
loader_stop() {
	kill "$loader"
	wait "$loader" || true
	loader=
}
