#!/usr/bin/env bash
# Can a workload make others pay for its CPU time (and so its energy)? Against the real kernel:
# a victim (a CPU burner pinned to the last CPU) in cgroup A, an attacker in cgroup B, both
# made under the hierarchy that accounts CPU time (cpuacct v1, else v2) and removed after.
# What virtwatt splits a container's energy by is its cgroup's CPU time (cpuacct.usage or
# cpu.stat usage_usec) and a process's by its threads' se.sum_exec_runtime: this prints those
# inputs as the kernel counts them, per scenario, beside
#   victim irq: the hardirq and softirq spans perf saw on the victim's CPU while the victim was
#               the interrupted task (irq_vectors:* where the arch has them, irq:*): time the
#               kernel (without CONFIG_IRQ_TIME_ACCOUNTING) adds to the victim's runtime;
#   rate:       the victim's loop iterations per CPU second, against the baseline's;
#   kthreads:   what kernel threads (kworkers, ksoftirqd, flushers: the root cgroup, the
#               node's share in virtwatt) ran in the scenario.
# Timing on a shared machine: figures, not assertions (tests/test_cpu_irq.c asserts the interrupt case); KEEP=PREFIX keeps
# each scenario's perf data as PREFIX.VICTIM_PID.
#   bench/evasion.sh [seconds]     (root, perf, stress-ng, 2+ CPUs)
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-4}
[ "$(id -u)" -eq 0 ] || { echo "evasion.sh: needs root" >&2; exit 1; }
for t in perf stress-ng cc taskset; do command -v $t >/dev/null || { echo "evasion.sh: needs $t" >&2; exit 1; }; done
NCPU=$(nproc); [ "$NCPU" -ge 2 ] || { echo "evasion.sh: needs 2 CPUs" >&2; exit 1; }
VC=$((NCPU - 1)) # the victim's CPU
OC=0             # the other one

tmp=$(mktemp -d)
if [ -d /sys/fs/cgroup/cpuacct ]; then CG=/sys/fs/cgroup/cpuacct; USAGE=cpuacct.usage
else CG=/sys/fs/cgroup; USAGE=cpu.stat; fi
A=$CG/vw-evasion-$$-victim B=$CG/vw-evasion-$$-attacker
cleanup() {
	for g in "$A" "$B"; do
		[ -d "$g" ] || continue
		while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$g/cgroup.procs"
		for _ in 1 2 3 4 5; do rmdir "$g" 2>/dev/null && break; sleep 0.2; done
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$A" "$B"

cat >"$tmp/burn.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int c,char**v){double s=atof(v[1]),t0=now();volatile unsigned long x=0;unsigned long it=0;(void)c;
while(now()-t0<s){for(int i=0;i<100000;i++)x+=i;it++;}
struct timespec ru;clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&ru);
printf("%lu %.6f\n",it,ru.tv_sec+ru.tv_nsec/1e9);return 0;}
C
cat >"$tmp/sleeper.c" <<'C'
#include <stdlib.h>
#include <time.h>
int main(int c,char**v){struct timespec ts={0,atol(v[1])};(void)c;for(;;)clock_nanosleep(CLOCK_MONOTONIC,0,&ts,NULL);}
C
# A thread asleep on the victim's CPU (its timer wakes it each ms) and one unmapping on another:
# the TLB shootdowns' IPIs reach the victim's CPU where the process's mm was last active.
cat >"$tmp/tlb.c" <<'C'
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);sched_setaffinity(0,sizeof(s),&s);}
static void *sleeper(void *a){struct timespec ts={0,1000000};pin(*(int*)a);for(;;)clock_nanosleep(CLOCK_MONOTONIC,0,&ts,NULL);}
int main(int c,char**v){pthread_t t;int vc=atoi(v[1]);(void)c;pthread_create(&t,0,sleeper,&vc);pin(0);
for(;;){char*p=mmap(0,4096*4,PROT_READ|PROT_WRITE,MAP_PRIVATE|MAP_ANONYMOUS,-1,0);p[0]=1;p[4096]=1;munmap(p,4096*4);}}
C
cc -O2 -o "$tmp/burn" "$tmp/burn.c"
cc -O2 -pthread -o "$tmp/tlb" "$tmp/tlb.c"
cc -O2 -o "$tmp/sleeper" "$tmp/sleeper.c"

usage_ns() { # a cgroup's cumulative CPU time in ns
	if [ "$USAGE" = cpuacct.usage ]; then cat "$1/cpuacct.usage"
	else awk '$1 == "usage_usec" { print $2 * 1000 }' "$1/cpu.stat"; fi
}
kthreads_ns() { # every kernel thread's runtime (children of kthreadd), summed
	local p
	cat /proc/[0-9]*/stat 2>/dev/null | sed 's/ (.*) / /' | awk '$3 == 2 { print $1 }' |
		while read -r p; do cat "/proc/$p/schedstat" 2>/dev/null || true; done | awk '{ s += $1 } END { printf "%.0f\n", s }'
}
EV=irq:softirq_entry,irq:softirq_exit,irq:irq_handler_entry,irq:irq_handler_exit
tps=$(perf list tracepoint 2>/dev/null || true)
for v in local_timer reschedule call_function call_function_single; do
	[[ "$tps" == *"irq_vectors:${v}_entry"* ]] && EV=$EV,irq_vectors:${v}_entry,irq_vectors:${v}_exit
done

base_rate=
# scenario NAME ATTACKER-CMD...: run the victim for SECS with the attacker beside it in B.
scenario() {
	if [ -n "${ONLY:-}" ] && [[ "$1" != *"$ONLY"* ]] && [[ "$1" != baseline ]]; then return; fi
	local name=$1; shift
	local a0 b0 k0 a1 b1 k1 it cpu ap irq rate
	a0=$(usage_ns "$A") b0=$(usage_ns "$B") k0=$(kthreads_ns)
	perf record -q -o "$tmp/p.data" -C "$VC" -e "$EV" -- sleep "$SECS" >/dev/null 2>&1 &
	local perfpid=$!
	sleep 0.3
	( echo $BASHPID >"$A/cgroup.procs"; exec taskset -c "$VC" "$tmp/burn" "$SECS" ) >"$tmp/v" &
	local vpid=$!
	if [ $# -gt 0 ]; then ( cd "$tmp"; echo $BASHPID >"$B/cgroup.procs"; exec "$@" ) >/dev/null 2>&1 & ap=$!; else ap=; fi
	wait "$vpid"
	if [ -n "$ap" ]; then kill "$ap" 2>/dev/null || true; wait "$ap" 2>/dev/null || true; fi
	while read -r p; do kill -9 "$p" 2>/dev/null || true; done <"$B/cgroup.procs"
	wait "$perfpid" 2>/dev/null || true
	a1=$(usage_ns "$A") b1=$(usage_ns "$B") k1=$(kthreads_ns)
	read -r it cpu <"$tmp/v"
	perf script -i "$tmp/p.data" -F pid,time,event >"$tmp/ps" 2>/dev/null || true
	[ -z "${KEEP:-}" ] || cp "$tmp/p.data" "$KEEP.$vpid"
	irq=$(awk -v vp="$vpid" '
		{ ev=$NF; sub(":$","",ev); t=$(NF-1); sub(":$","",t); t=t*1e9
		  if (ev ~ /_entry$/) { if (!d) { st=t; who=$1 } d++ } else if (d) { if (!--d && who == vp) s += t-st } }
		END { printf "%.3f", s/1e9 }' "$tmp/ps")
	rate=$(awk -v i="$it" -v c="$cpu" 'BEGIN { printf "%.0f", i/c }')
	[ -n "$base_rate" ] || base_rate=$rate
	printf '%-26s victim %6.3f s (irq %5.3f s, rate %5.1f %%)  attacker %6.3f s  kthreads %6.3f s\n' \
		"$name" "$(awk -v x=$((a1 - a0)) 'BEGIN{print x/1e9}')" "$irq" \
		"$(awk -v r="$rate" -v b="$base_rate" 'BEGIN{print 100*r/b}')" \
		"$(awk -v x=$((b1 - b0)) 'BEGIN{print x/1e9}')" "$(awk -v x=$((k1 - k0)) 'BEGIN{print x/1e9}')"
}

echo "# $(uname -r), $NCPU CPUs, victim on CPU $VC, ${SECS} s each; load: $(cut -d' ' -f1-3 /proc/loadavg)"
scenario "baseline"
scenario "udp flood, other CPU" taskset -c "$OC" stress-ng --udp 1 -q
scenario "udp flood, victim's CPU" taskset -c "$VC" stress-ng --udp 1 -q
scenario "tcp stream, both CPUs" stress-ng --sock 1 -q
scenario "timer wakes, other CPU" taskset -c "$OC" "$tmp/sleeper" 20000
scenario "timer wakes, victim's CPU" taskset -c "$VC" "$tmp/sleeper" 20000
scenario "munmap IPIs" "$tmp/tlb" "$VC"
scenario "io_uring, other CPU" taskset -c "$OC" stress-ng --io-uring 1 -q
scenario "writeback, other CPU" taskset -c "$OC" stress-ng --hdd 1 --hdd-bytes 64M -q
scenario "fork 1 ms children" taskset -c "$OC" stress-ng --fork 1 -q
scenario "baseline (again)"
