#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Publication latency per VM, for bench/vms.sh, from the fake QEMUs' records (bench/fake_qemu.c)
and, when given, the daemon's sendto() calls recorded by `perf record -k mono` (same clock).

  vms_latency.py --t0 NS --t1 NS [--pid PID --perf PERF_SCRIPT_OUTPUT] [--no-channels] [--no-share]
                  FAKE_LOG...

A publication round is every VM's frame for one seq. The rounds measured are those whose first
delivery (channel or folder, any VM) falls in [t0, t1 - 0.3 s]. Each round's reference time is
the daemon's first sendto(), renameat() or unlinkat() of that round (in its main thread: the
channel's send, the share's first rename; rounds are > 0.3 s apart, so a gap over 0.3 s starts a new one); without perf it is the round's first delivery, and latencies are
then only the spread within a round. Prints "key value" lines.
"""
import argparse
import sys

GAP_NS = 300_000_000


def pct(sorted_v, p):
    """Nearest-rank percentile, as bench_util.c."""
    if not sorted_v:
        return None
    k = max(0, min(len(sorted_v) - 1, -(-p * len(sorted_v) // 100) - 1))
    return sorted_v[k]


def ms(v):
    return "-" if v is None else f"{v / 1e6:.2f}"


def read_fake(path):
    info, recs = {}, []
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                for kv in line[1:].split():
                    k, _, v = kv.partition("=")
                    info[k] = v
                continue
            kind, v, t = line.split()
            recs.append((kind, int(v), int(t)))
    return info.get("reading") == "1", info.get("share_reading") == "1", recs


def round_starts(perf_path, pid):
    sends = []
    with open(perf_path) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2 or not parts[0].isdigit() or int(parts[0]) != pid:
                continue
            s, _, frac = parts[1].rstrip(":").partition(".")
            sends.append(int(s) * 1_000_000_000 + int(frac.ljust(9, "0")[:9]))
    sends.sort()
    starts = []
    for t in sends:
        if not starts or t - last > GAP_NS:
            starts.append(t)
        last = t
    return starts, len(sends)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--t0", type=int, required=True)
    ap.add_argument("--t1", type=int, required=True)
    ap.add_argument("--pid", type=int)
    ap.add_argument("--perf")
    ap.add_argument("--no-channels", action="store_true",
                    help="the VMs have no channel (process scan only): share only")
    ap.add_argument("--no-share", action="store_true", help="no share root: channels only")
    ap.add_argument("logs", nargs="+")
    a = ap.parse_args()

    fakes = [read_fake(p) for p in a.logs]
    first = {}
    for _, _, recs in fakes:
        for kind, seq, t in recs:
            if kind in "CS":
                first[seq] = min(first.get(seq, t), t)
    rounds = sorted(s for s, t in first.items() if a.t0 <= t <= a.t1 - GAP_NS)
    ref, ref_kind, n_sends = dict(first), "first-delivery", 0
    if a.perf and a.pid:
        starts, n_sends = round_starts(a.perf, a.pid)
        if starts:
            ref_kind = "perf"
            for s in rounds:
                before = [x for x in starts if x <= first[s]]
                if before and first[s] - before[-1] < 1_000_000_000:
                    ref[s] = before[-1]
                else:
                    ref_kind = "perf(partial)"
    want = set(rounds)
    lat = {"C": [], "S": []}
    per_round = {}
    missed = {"C": 0, "S": 0}
    silent = {"C": 0, "S": 0}  # fakes that got nothing of that kind in the window
    accepted = models = 0
    q_noread = [[], []]
    n_read = n_noread = n_share_read = renames = 0
    for reading, share_reading, recs in fakes:
        n_share_read += share_reading
        renames += sum(1 for k, _, t in recs if k == "R" and a.t0 <= t <= a.t1)
        n_read += reading
        n_noread += not reading
        accepted += any(k == "A" for k, _, _ in recs)
        models += sum(1 for k, _, t in recs if k == "M" and a.t0 <= t <= a.t1)
        for kind in "CS":
            if kind == "C" and (not reading or a.no_channels):
                continue
            if kind == "S" and (a.no_share or not share_reading):
                continue  # a share nobody reads: its frame.json renames are counted (R)
            seen = {seq: t for k, seq, t in recs if k == kind and seq in want}
            missed[kind] += len(want - seen.keys())
            silent[kind] += not seen
            for seq, t in seen.items():
                lat[kind].append(t - ref[seq])
                if kind == "C":
                    per_round.setdefault(seq, []).append(t)
        if not reading:
            qs = [v for k, v, _ in recs if k == "Q"]
            for i in range(min(2, len(qs))):
                q_noread[i].append(qs[i])
    spread = sorted(max(v) - min(v) for v in per_round.values())
    firsts = sorted(min(v) - ref[s] for s, v in per_round.items())
    out = {
        "reference": ref_kind,
        "sends": n_sends,
        "rounds": len(rounds),
        "fakes_reading": n_read,
        "fakes_not_reading": n_noread,
        "fakes_connected": accepted,
        "fakes_share_reading": n_share_read,
        # frame.json replaced per round in a share nobody reads (virtwatt-host skips those)
        "share_unread_renames_per_vm_round": (
            f"{renames / (len(fakes) - n_share_read) / max(1, len(rounds)):.3f}"
            if len(fakes) > n_share_read and not a.no_share else "-"),
        "model_lines": models,
    }
    for kind, name in (("C", "chan"), ("S", "share")):
        v = sorted(lat[kind])
        out[f"{name}_frames"] = len(v)
        out[f"{name}_p50_ms"] = ms(pct(v, 50))
        out[f"{name}_p95_ms"] = ms(pct(v, 95))
        out[f"{name}_max_ms"] = ms(v[-1] if v else None)
        out[f"{name}_missed"] = missed[kind]
        out[f"{name}_silent_fakes"] = silent[kind]
    out["chan_first_p50_ms"] = ms(pct(firsts, 50))
    out["chan_spread_p50_ms"] = ms(pct(spread, 50))
    out["chan_spread_max_ms"] = ms(spread[-1] if spread else None)
    for i, when in enumerate(("start", "end")):
        q = sorted(q_noread[i])
        out[f"noread_queued_{when}_b"] = pct(q, 50) if q else "-"
        out[f"noread_queued_{when}_max_b"] = q[-1] if q else "-"
    for k, v in out.items():
        print(k, v)
    return 0


if __name__ == "__main__":
    sys.exit(main())
