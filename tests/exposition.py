#!/usr/bin/env python3
"""The one exposition parser of the Python tests (its C twin is tests/exposition_fixture.h).

Exposition(text) reads a Prometheus text exposition (0.0.4; OpenMetrics' sample lines too):
  .text      the text as given
  .samples   [(name, {label: value}, float)] in order, label values unescaped
  .types     {family: "counter" | "gauge" | ...} from the # TYPE lines
  .sum(name, **labels)   the sum of name's samples carrying those label values
  .has(name, **labels)   whether one does
  .series(name)          {frozenset(labels.items()): value} of name's samples
  .keyed(drop_empty=False)  {(name, frozenset(labels.items())): value} of every sample;
                         drop_empty leaves out labels whose value is "" (as OTLP drops them)
  .counters()            ("name{k=v,...}", value) of every counter sample
A line that is not a sample (a comment, a blank, junk) is skipped."""
import re

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\S+)?\s*$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?')


def unescape(v):
    """A label value as written (\\\\, \\" and \\n undone)."""
    return re.sub(r'\\(.)', lambda m: '\n' if m.group(1) == 'n' else m.group(1), v)


def parse_labels(s):
    """{name: value} of a sample's label set, without its braces."""
    return {k: unescape(v) for k, v in LABEL.findall(s or '')}


class Exposition:
    def __init__(self, text):
        self.text, self.samples, self.types = text or '', [], {}
        for line in self.text.splitlines():
            if line.startswith('# TYPE '):
                parts = line.split(None, 3)
                if len(parts) == 4:
                    self.types[parts[2]] = parts[3]
                continue
            if not line or line.startswith('#'):
                continue
            m = LINE.match(line)
            if not m:
                continue
            try:
                value = float(m.group(3))
            except ValueError:
                continue
            self.samples.append((m.group(1), parse_labels(m.group(2)), value))

    def _match(self, name, want):
        for n, l, v in self.samples:
            if n == name and all(l.get(k) == x for k, x in want.items()):
                yield l, v

    def sum(self, name, **want):
        return sum(v for _, v in self._match(name, want))

    def has(self, name, **want):
        return any(True for _ in self._match(name, want))

    def series(self, name):
        return {frozenset(l.items()): v for n, l, v in self.samples if n == name}

    def keyed(self, drop_empty=False):
        return {(n, frozenset((k, x) for k, x in l.items() if x or not drop_empty)): v
                for n, l, v in self.samples}

    def counters(self):
        for n, l, v in self.samples:
            fam = n[:-6] if n.endswith('_total') else n
            if self.types.get(n) == 'counter' or self.types.get(fam) == 'counter':
                yield n + '{' + ','.join('%s=%s' % kv for kv in sorted(l.items())) + '}', v


def _self_test():
    """TAP: the hard cases, as tests/test_exposition_fixture.c has them for the C reader."""
    text = ('# TYPE a_total counter\n'
            'a_total{zone="package",path="/x y"} 3\n'
            'a_total{zone="dram",path="/a} b\\"c",empty=""} 4.5 1700000000000\n'
            'a_total_more{zone="package"} 100\n'
            '# TYPE g gauge\n'
            'g 7\n'
            'g{zone="package"} NaN\n'
            '\njunk line without value\n{zone="x"} 9\n9bad 1\nh 8')
    x = Exposition(text)
    checks = [
        ([n for n, _, _ in x.samples] == ['a_total', 'a_total', 'a_total_more', 'g', 'g', 'h'],
         'every sample line is read, junk skipped'),
        (x.samples[1][1] == {'zone': 'dram', 'path': '/a} b"c', 'empty': ''},
         'label values with a brace, a space and an escaped quote, unescaped'),
        (x.samples[1][2] == 4.5, 'a timestamp after the value is not the value'),
        (x.sum('a_total') == 7.5 and x.sum('a_total', zone='dram') == 4.5,
         'sum: a family, not a longer name that starts with it; filtered by labels'),
        (x.has('g', zone='package') and not x.has('g', zone='dram'), 'has'),
        (x.types == {'a_total': 'counter', 'g': 'gauge'}, 'types from # TYPE'),
        ([k for k, _ in x.counters()] == ['a_total{path=/x y,zone=package}',
                                          'a_total{empty=,path=/a} b"c,zone=dram}'],
         'counters: the samples of families typed counter'),
        (('a_total', frozenset({('zone', 'dram'), ('path', '/a} b"c')})) in
         x.keyed(drop_empty=True), 'keyed without empty labels'),
    ]
    for i, (ok, what) in enumerate(checks, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
    print('1..%d' % len(checks))
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == '__main__':
    raise SystemExit(_self_test())
