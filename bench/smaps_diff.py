#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A process's resident memory by mapping class, two /proc/PID/smaps side by side (bench/vms.sh
SMAPS=DIR writes DIR/<window>.smaps at each window's end).

  bench/smaps_diff.py DIR/base.smaps DIR/libvirt.smaps

Classes: [heap] (the main arena: brk), malloc arenas of other threads (a 64 MiB-aligned
reservation, its used part rw), thread stacks (an anonymous rw mapping right after a no-access
guard page), other anonymous mappings (malloc's mmapped chunks above its threshold, BPF maps, ...),
[stack], and each file's mappings. Rss and Anonymous, KiB: A, B, B - A; then each file's
anonymous mappings over 64 KiB.
"""
import collections
import re
import sys

HDR = re.compile(r'^([0-9a-f]+)-([0-9a-f]+) (\S{4}) \S+ \S+ \d+\s*(.*)$')


def parse(path):
    maps = []
    for line in open(path):
        m = HDR.match(line)
        if m:
            maps.append({'lo': int(m.group(1), 16), 'hi': int(m.group(2), 16),
                         'perm': m.group(3), 'path': m.group(4).strip(), 'Rss': 0,
                         'Anonymous': 0})
        elif maps and ':' in line:
            k, v = line.split(':', 1)
            if k in ('Rss', 'Anonymous'):
                maps[-1][k] = int(v.split()[0])
    return maps


def classify(maps):
    cls = collections.defaultdict(lambda: [0, 0, 0])
    big = []
    for i, m in enumerate(maps):
        prev = maps[i - 1] if i else None
        p = m['path']
        if p == '[heap]':
            c = '[heap]'
        elif p.startswith('['):
            c = p
        elif p.startswith('/'):
            c = p.rsplit('/', 1)[-1]
            c = re.sub(r'\.so[.0-9]*$', '.so', c)
        elif p:
            c = p
        elif (m['perm'].startswith('rw') and prev and prev['perm'].startswith('---')
              and prev['hi'] == m['lo'] and prev['hi'] - prev['lo'] <= 65536 and not prev['path']):
            c = 'thread stacks'
        elif (m['perm'].startswith('rw') and m['lo'] % (64 << 20) == 0 and i + 1 < len(maps)
              and maps[i + 1]['perm'].startswith('---') and maps[i + 1]['lo'] == m['hi']):
            c = 'malloc arenas (threads)'
        elif m['perm'].startswith('---'):
            c = 'guard / reserved'
        else:
            c = 'anonymous mmaps'
            big.append(m)
        cls[c][0] += m['Rss']
        cls[c][1] += m['Anonymous']
        cls[c][2] += 1
    return cls, big


def main():
    a, ab = classify(parse(sys.argv[1]))
    b, bb = classify(parse(sys.argv[2]))
    print(f"{'class':<28} {'Rss A':>7} {'Rss B':>7} {'B-A':>6} {'anon A':>7} {'anon B':>7} {'B-A':>6} maps A/B")
    tot = [0, 0, 0, 0]
    for k in sorted(set(a) | set(b), key=lambda k: -(b[k][0] - a[k][0])):
        print(f"{k[:28]:<28} {a[k][0]:>7} {b[k][0]:>7} {b[k][0] - a[k][0]:>6} "
              f"{a[k][1]:>7} {b[k][1]:>7} {b[k][1] - a[k][1]:>6} {a[k][2]}/{b[k][2]}")
        tot = [tot[0] + a[k][0], tot[1] + b[k][0], tot[2] + a[k][1], tot[3] + b[k][1]]
    print(f"{'total':<28} {tot[0]:>7} {tot[1]:>7} {tot[1] - tot[0]:>6} {tot[2]:>7} {tot[3]:>7} {tot[3] - tot[2]:>6}")
    for name, big in (('A', ab), ('B', bb)):
        print(f"{name}: anonymous mmaps over 64 KiB (size KiB, Rss KiB):",
              ' '.join(f"{(m['hi'] - m['lo']) >> 10}/{m['Rss']}" for m in big
                       if m['hi'] - m['lo'] > 65536))


if __name__ == '__main__':
    main()
