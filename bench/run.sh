#!/usr/bin/env bash
# Exposition benchmark: virtwatt's writer and HTTP server against prometheus-node-exporter.
#   bench/run.sh                 200 scrapes each (SCRAPES=N to change)
# Builds a release tree in build-bench/ (no sanitizers), runs bench_scrape (render and
# in-process libcurl timings), then serves its 10,000-series exposition and a default
# node_exporter on 127.0.0.1, scrapes each SCRAPES times with the curl CLI, reads each
# server's VmRSS/VmHWM from /proc/PID/status and prints a comparison table.
# Everything it starts is stopped on exit (trap).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh

SCRAPES=${SCRAPES:-200}
BUILD=${BUILD:-build-bench}
NODE_EXPORTER=${NODE_EXPORTER:-prometheus-node-exporter}

command -v "$NODE_EXPORTER" >/dev/null || { echo "$NODE_EXPORTER not found (deploy/install-deps.sh --bench)" >&2; exit 1; }
command -v curl >/dev/null || { echo "curl not found" >&2; exit 1; }

release_build "$BUILD" bench/bench_scrape
bench="$BUILD/bench/bench_scrape"

tmp=$(mktemp -d)
pids=()
cleanup() {
	stop_pids "${pids[@]}"
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Scrape URL SCRAPES times with a fresh curl each time; print "median_ms p95_ms bytes samples".
scrape_stats() {
	local url=$1 out=$tmp/times.$RANDOM
	for _ in $(seq "$SCRAPES"); do
		curl -sf -o /dev/null -w '%{time_total}\n' "$url" >>"$out"
	done
	local bytes samples
	bytes=$(curl -sf "$url" | wc -c)
	samples=$(curl -sf "$url" | grep -vc '^#')
	sort -n "$out" | awk -v b="$bytes" -v s="$samples" '
		{ t[NR] = $1 * 1000 }
		END { m = int((NR * 50 + 99) / 100); p = int((NR * 95 + 99) / 100);
		      printf "%.3f %.3f %d %d\n", t[m], t[p], b, s }'
}

value() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/bench.txt"; }

echo "== bench_scrape (in-process; release build in $BUILD)"
"$bench" --scrapes "$SCRAPES" | tee "$tmp/bench.txt"

echo "== serving both on 127.0.0.1, $SCRAPES curl scrapes each"
"$bench" --serve 127.0.0.1:0 >"$tmp/serve.out" &
pids+=($!)
vw_pid=$!
for _ in $(seq 100); do grep -q '^port ' "$tmp/serve.out" && break; sleep 0.1; done
vw_port=$(awk '$1 == "port" { print $2 }' "$tmp/serve.out")
[ -n "$vw_port" ] || { echo "bench_scrape --serve did not start" >&2; exit 1; }
vw_url="http://127.0.0.1:$vw_port/metrics"

ne_port=$(free_port)
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$ne_port" >"$tmp/node_exporter.log" 2>&1 &
pids+=($!)
ne_pid=$!
ne_url="http://127.0.0.1:$ne_port/metrics"
wait_ready "$vw_url"
wait_ready "$ne_url"

read -r vw_med vw_p95 vw_bytes vw_samples < <(scrape_stats "$vw_url")
read -r ne_med ne_p95 ne_bytes ne_samples < <(scrape_stats "$ne_url")
read -r vw_rss vw_hwm < <(memory_of "$vw_pid")
read -r ne_rss ne_hwm < <(memory_of "$ne_pid")

row() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN {
	r = (b + 0 != 0) ? sprintf("%.2f", a / b) : "-"
	printf "%-30s %14s %14s %8s\n", n, a, b, r }'; }
per_ksample() { awk -v t="$1" -v s="$2" 'BEGIN { printf "%.4f", s ? t * 1000 / s : 0 }'; }

echo
printf "%-30s %14s %14s %8s\n" metric virtwatt node_exporter ratio
row "samples per scrape" "$vw_samples" "$ne_samples"
row "body bytes" "$vw_bytes" "$ne_bytes"
row "scrape median (ms, curl)" "$vw_med" "$ne_med"
row "scrape p95 (ms, curl)" "$vw_p95" "$ne_p95"
row "scrape median per 1k samples" "$(per_ksample "$vw_med" "$vw_samples")" "$(per_ksample "$ne_med" "$ne_samples")"
row "VmRSS after scrapes (KiB)" "$vw_rss" "$ne_rss"
row "VmHWM (KiB)" "$vw_hwm" "$ne_hwm"
echo
printf "%-30s %14s\n" "render text median/p95 (ms)" "$(value render_text_median_ms) / $(value render_text_p95_ms)"
printf "%-30s %14s\n" "render OM median/p95 (ms)" "$(value render_om_median_ms) / $(value render_om_p95_ms)"
printf "%-30s %14s\n" "libcurl scrape median/p95 (ms)" "$(value scrape_median_ms) / $(value scrape_p95_ms)"
printf "%-30s %14s\n" "bench_scrape VmRSS/VmHWM (KiB)" "$(value vmrss_kib) / $(value vmhwm_kib)"
