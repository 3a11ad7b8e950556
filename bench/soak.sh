#!/usr/bin/env bash
# Soak: both daemons under process and container churn with no scraper, VmRSS over time.
#   bench/soak.sh                  15 min (DURATION=900), a VmRSS sample every 30 s (EVERY=30)
#   DURATION=1200 WARMUP=420 bench/soak.sh   what bench/README.md reports
# Root (real /proc and /sys, BPF accounting). Builds a release tree in build-bench/ (no
# sanitizers), starts virtwatt-host and virtwatt-guest on the real machine on 127.0.0.1, and
# while nothing scrapes them churns:
#   - processes: PROC_RATE short-lived processes a second (/bin/true);
#   - containers: a cgroup named like a Docker container (cgroup v1 cpuacct docker/<id>, or v2
#     system.slice/docker-<id>.scope) every CONT_EVERY seconds, a process that burns a few ms in
#     it, the cgroup removed CONT_LIFE seconds later; every container is new;
#   - VMs: a process whose argv[0] is qemu-system-x86_64 with a new -uuid every VM_EVERY
#     seconds, living VM_LIFE seconds (the host finds it by its process scan).
# Prints "t_s host_rss_kib guest_rss_kib" every EVERY seconds, then each daemon's spread after
# WARMUP seconds (the caps fill first) and, from one scrape at the very end, its tables' entries
# and evictions. Not part of the timed tests. Everything it starts is stopped on exit (trap).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

DURATION=${DURATION:-900}
EVERY=${EVERY:-30}
WARMUP=${WARMUP:-300}
PROC_RATE=${PROC_RATE:-20}
CONT_EVERY=${CONT_EVERY:-0.25}
CONT_LIFE=${CONT_LIFE:-10}
VM_EVERY=${VM_EVERY:-0.5}
VM_LIFE=${VM_LIFE:-30}
MAX_SERIES=${MAX_SERIES:-5000} # the guest's --state.max-series: reached within the warm-up
BUILD=${BUILD:-build-bench}

[ "$(id -u)" = 0 ] || { echo "run as root (BPF accounting, cgroups)" >&2; exit 1; }
if [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then
	cgparent=/sys/fs/cgroup/cpuacct/docker
	cgname() { echo "$cgparent/$1"; }
elif [ -f /sys/fs/cgroup/cgroup.controllers ]; then
	cgparent=/sys/fs/cgroup/system.slice
	cgname() { echo "$cgparent/docker-$1.scope"; }
else
	echo "no cgroup v1 cpuacct or cgroup v2 hierarchy under /sys/fs/cgroup" >&2
	exit 1
fi

release_build "$BUILD" host/virtwatt-host guest/virtwatt-guest
made_parent=0
[ -d "$cgparent" ] || { mkdir "$cgparent" && made_parent=1; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	stop_pids "${pids[@]}"
	sleep 0.2
	rmdir "$cgparent"/*"$(printf '%056x' $$)"* 2>/dev/null || true
	[ "$made_parent" = 1 ] && rmdir "$cgparent" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

host_port=$(free_port)
"$BUILD/host/virtwatt-host" --web.listen-address="127.0.0.1:$host_port" --kube.node-name=soak \
	--metrics.process-top-n=50 >"$tmp/host.log" 2>&1 &
pids+=($!)
host_pid=$!
guest_port=$(free_port)
"$BUILD/guest/virtwatt-guest" --web.listen-address="127.0.0.1:$guest_port" \
	--kube.node-name=soak-guest --passthrough.enable=false --state.file="$tmp/state/state.json" \
	--state.max-series="$MAX_SERIES" >"$tmp/guest.log" 2>&1 &
pids+=($!)
guest_pid=$!
# Ready is not a scrape: /readyz serves no snapshot.
wait_ready "http://127.0.0.1:$host_port/readyz" 30
wait_ready "http://127.0.0.1:$guest_port/readyz" 30

churn_processes() {
	while :; do
		for _ in $(seq "$PROC_RATE"); do /bin/true; done
		sleep 1
	done
}

churn_containers() {
	local n=0 id dir old=()
	while :; do
		id=$(printf '%056x%08x' $$ "$n")
		dir=$(cgname "$id")
		mkdir "$dir"
		sh -c 'echo $$ >"$1/cgroup.procs"; i=0; while [ $i -lt 3000 ]; do i=$((i + 1)); done' _ "$dir"
		old+=("$dir")
		# A container lives CONT_LIFE seconds: long enough for an interval to see it.
		if [ "${#old[@]}" -gt "$(awk -v l="$CONT_LIFE" -v e="$CONT_EVERY" 'BEGIN { print int(l / e) }')" ]; then
			rmdir "${old[0]}" 2>/dev/null || true
			old=("${old[@]:1}")
		fi
		n=$((n + 1))
		sleep "$CONT_EVERY"
	done
}

churn_vms() {
	local n=0
	while :; do
		(exec -a qemu-system-x86_64 sh -c "sleep $VM_LIFE; :" -uuid \
			"$(printf '%08x-0000-4000-8000-%012x' $$ "$n")" -name "guest=soak$n" -smp 1) &
		n=$((n + 1))
		sleep "$VM_EVERY"
	done
}

churn_processes &
pids+=($!)
churn_vms &
pids+=($!)
churn_containers &
pids+=($!)

echo "# t_s host_rss_kib guest_rss_kib (churn: $PROC_RATE processes/s, a container every" \
	"${CONT_EVERY}s, a VM every ${VM_EVERY}s; no scraper)"
uptime_s() { awk '{ printf "%d", $1 }' /proc/uptime; } # monotonic: wall-clock steps do not count
start=$(uptime_s)
: >"$tmp/rss"
while :; do
	t=$(($(uptime_s) - start))
	read -r hr _ < <(memory_of "$host_pid")
	read -r gr _ < <(memory_of "$guest_pid")
	echo "$t $hr $gr" | tee -a "$tmp/rss"
	[ "$t" -ge "$DURATION" ] && break
	sleep "$EVERY"
done

# Spread after the warm-up: (max - min) / min, and the last sample against the first.
awk -v w="$WARMUP" '$1 >= w {
	for (i = 2; i <= 3; i++) {
		if (!n) { first[i] = $i; min[i] = $i; max[i] = $i }
		if ($i < min[i]) min[i] = $i
		if ($i > max[i]) max[i] = $i
		last[i] = $i
	}
	n++
} END {
	split("host guest", name, " ")
	for (i = 2; i <= 3; i++)
		printf "# %s after %d s: %d samples, min %d KiB, max %d KiB, spread %.1f %%, end/first %.3f\n",
			name[i - 1], w, n, min[i], max[i], 100 * (max[i] - min[i]) / min[i], last[i] / first[i]
}' "$tmp/rss"

# The only scrape: the tables at the end.
for p in "host $host_port" "guest $guest_port"; do
	set -- $p
	curl -sf "http://127.0.0.1:$2/metrics" |
		awk -v d="$1" '/^virtwatt_table_(entries|evictions_total)\{/ {
			match($0, /table="[a-z_]+"/); t = substr($0, RSTART + 7, RLENGTH - 8)
			printf "# %s %s %s %s\n", d, t, ($1 ~ /evictions/ ? "evictions" : "entries"), $2 }'
done
