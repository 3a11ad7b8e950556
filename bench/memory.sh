#!/usr/bin/env bash
# Memory of both daemons next to prometheus-node-exporter, in the same run (issue #16):
#   bench/memory.sh                    COUNTS=1000 WINDOW=30 by default
#   COUNTS="1000 10000" bench/memory.sh
# For each count N it forks N sleeping processes (bench/spawn_idle), then starts, side by side,
# the release virtwatt-host and virtwatt-guest with their defaults (all metric levels, top-N 50,
# BPF accounting as root; --monitor.interval=1s so the window holds many intervals; the guest,
# with no host here, estimates with its model) and a default node_exporter, each on a free
# 127.0.0.1 port; scrapes each once a second for WINDOW seconds (so every exposition is built
# and served), and prints each one's VmRSS and VmHWM (its start-up peak), the ratios to
# node_exporter's, and the targets (host RSS <= 8 MiB, guest <= 6.5 MiB (issue #33), peak <= 1.5 x
# RSS); beside VmRSS, PSS and anonymous memory (bench/lib.sh's memory_split_of: VmRSS counts shared library pages whole).
# VmHWM keeps start-up's file pages, which both daemons let go of once they serve
# (shared/core/residency.c): a peak above 1.5 x RSS there is not a buffer left behind.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

COUNTS=${COUNTS:-1000}
WINDOW=${WINDOW:-30}
BUILD=${BUILD:-build-bench}
NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}

command -v "$NODE_EXPORTER" >/dev/null || { echo "$NODE_EXPORTER not found (deploy/install-deps.sh --bench)" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl not found" >&2; exit 1; }

release_build "$BUILD" host/virtwatt-host guest/virtwatt-guest bench/spawn_idle
tmp=$(mktemp -d)
mkdir -p "$tmp/share"
pids=()
spawner=
cleanup() {
	stop_pids "${pids[@]}" ${spawner:+"$spawner"}
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

kib_mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
verdict() { awk -v v="$1" -v lim="$2" 'BEGIN { print (v + 0 <= lim + 0) ? "yes" : "NO" }'; }

echo "# $(nproc) CPUs, kernel $(uname -r), $(date -u +%FT%TZ); window ${WINDOW} s"
printf '%-9s %-15s %9s %9s %8s %8s %10s %10s %s\n' processes daemon "VmRSS MiB" "VmHWM MiB" \
	"PSS MiB" "anon MiB" "RSS/n_e" "HWM/n_e" "targets met"
for n in $COUNTS; do
	"$BUILD/bench/spawn_idle" "$n" >"$tmp/spawn.out" &
	spawner=$!
	for _ in $(seq 600); do grep -q '^ready' "$tmp/spawn.out" && break; sleep 0.1; done
	hp=$(free_port) gp=$(free_port) np=$(free_port)
	"$BUILD/host/virtwatt-host" --web.listen-address="127.0.0.1:$hp" --monitor.interval=1s \
		--passthrough.share-root="$tmp/share" --passthrough.lock-dir="$tmp/lock" \
		>"$tmp/host.log" 2>&1 &
	pids+=($!)
	"$BUILD/guest/virtwatt-guest" --web.listen-address="127.0.0.1:$gp" --monitor.interval=1s \
		--state.file="$tmp/guest.state" >"$tmp/guest.log" 2>&1 &
	pids+=($!)
	"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$np" >"$tmp/ne.log" 2>&1 &
	pids+=($!)
	for p in $hp $gp $np; do
		wait_ready "http://127.0.0.1:$p/metrics" 30 || { tail -n 5 "$tmp"/*.log >&2; exit 1; }
	done
	for _ in $(seq "$WINDOW"); do
		for p in $hp $gp $np; do curl -sf -o /dev/null "http://127.0.0.1:$p/metrics" || true; done
		sleep 1
	done
	read -r ne_rss ne_hwm < <(memory_of "${pids[2]}")
	i=0
	for name in virtwatt-host virtwatt-guest node_exporter; do
		read -r rss hwm < <(memory_of "${pids[$i]}")
		read -r pss anon < <(memory_split_of "${pids[$i]}")
		case $name in
		virtwatt-host) met="RSS<=8MiB:$(verdict "$rss" 8192) HWM<=1.5xRSS:$(verdict "$hwm" "$((rss * 3 / 2))")" ;;
		virtwatt-guest) met="RSS<=6.5MiB:$(verdict "$rss" 6656) HWM<=1.5xRSS:$(verdict "$hwm" "$((rss * 3 / 2))")" ;;
		*) met="" ;;
		esac
		printf '%-9s %-15s %9s %9s %8s %8s %10s %10s %s\n' "$n" "$name" "$(kib_mib "$rss")" \
			"$(kib_mib "$hwm")" "$(kib_mib "$pss")" "$(kib_mib "$anon")" "$(ratio "$rss" "$ne_rss")" "$(ratio "$hwm" "$ne_hwm")" "$met"
		i=$((i + 1))
	done
	stop_pids "${pids[@]}" "$spawner"
	pids=()
	spawner=
done
