#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""OTLP push against a receiver that decodes with the official OpenTelemetry protos (TAP).

tests/data/otlp-proto holds opentelemetry-proto v1.9.0's metrics protos; Debian's protoc
compiles them for python3-protobuf here, and the receiver parses every request body (gzip
undone) with google.protobuf.json_format into the real ExportMetricsServiceRequest: a field
name, type or enum the protos do not know fails the parse. The real virtwatt-host pushes to it
while the test scrapes /metrics every 100 ms: each export must equal, sample for sample, one
snapshot /metrics served (every family: counters as cumulative monotonic sums named without
_total, gauges as gauges, each non-empty label an attribute). Then: request headers and
mutual TLS reach the receiver; a receiver answering 503 is retried and nothing blocks sampling.

usage: test_otlp.py HOST_BINARY
"""
import gzip
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
from exposition import Exposition  # noqa: E402  (tests/exposition.py)

HERE = os.path.dirname(os.path.abspath(__file__))
PROTOS = os.path.join(HERE, '..', 'data', 'otlp-proto')

n = 0
failed = 0


def ok(cond, what, detail=''):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', n, what), flush=True)
    if not cond and detail:
        for line in str(detail).splitlines()[:40]:
            print('# ' + line)


def compile_protos(out):
    files = [os.path.relpath(os.path.join(d, f), PROTOS)
             for d, _, fs in os.walk(PROTOS) for f in fs if f.endswith('.proto')]
    os.makedirs(out, exist_ok=True)
    subprocess.run(['protoc', '-I', PROTOS, '--python_out', out] + files, check=True)
    sys.path.insert(0, out)
    try:
        import google.protobuf  # noqa: F401
    except ImportError:  # Debian's python3-protobuf, under another python3 on PATH
        sys.path.append('/usr/lib/python3/dist-packages')
    from google.protobuf import json_format  # noqa: E402
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2  # noqa: E402
    return json_format, metrics_service_pb2


class Receiver:
    """An OTLP/HTTP receiver on loopback: decodes with the official protos, keeps what came."""

    def __init__(self, json_format, pb2, tls=None):
        self.requests = []   # decoded ExportMetricsServiceRequest
        self.headers = []
        self.errors = []
        self.fail_next = 0   # answer 503 to this many requests first
        self.lock = threading.Lock()
        rx = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get('Content-Length', '0')))
                with rx.lock:
                    rx.headers.append(dict(self.headers))
                    if rx.fail_next > 0:
                        rx.fail_next -= 1
                        self.send_response(503)
                        self.end_headers()
                        return
                try:
                    if self.path != '/v1/metrics':
                        raise ValueError('path %s' % self.path)
                    if self.headers.get('Content-Encoding') == 'gzip':
                        body = gzip.decompress(body)
                    if not self.headers.get('Content-Type', '').startswith('application/json'):
                        raise ValueError('content type %s' % self.headers.get('Content-Type'))
                    msg = pb2.ExportMetricsServiceRequest()
                    json_format.Parse(body, msg)  # unknown fields are errors
                    with rx.lock:
                        rx.requests.append(msg)
                    self.send_response(200)
                    self.send_header('Content-Type', 'application/json')
                    self.end_headers()
                    self.wfile.write(b'{}')
                except Exception as e:  # noqa: BLE001
                    with rx.lock:
                        rx.errors.append(repr(e))
                    self.send_response(400)
                    self.end_headers()

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
        if tls:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(tls['cert'], tls['key'])
            ctx.load_verify_locations(tls['ca'])
            ctx.verify_mode = ssl.CERT_REQUIRED
            self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    p = s.getsockname()[1]
    s.close()
    return p


def parse_exposition(text):
    """{(name, frozenset(non-empty labels)): value}, and {family: type}."""
    x = Exposition(text)
    return x.keyed(drop_empty=True), x.types


def flatten(req):
    """{(prometheus name, labels): value} of an OTLP request, and the problems seen."""
    samples, problems = {}, []
    for rm in req.resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                kind = m.WhichOneof('data')
                if kind == 'sum':
                    if not (m.sum.is_monotonic and m.sum.aggregation_temporality == 2):
                        problems.append('%s: not a cumulative monotonic sum' % m.name)
                    name, points = m.name + '_total', m.sum.data_points
                elif kind == 'gauge':
                    name, points = m.name, m.gauge.data_points
                else:
                    problems.append('%s: %s' % (m.name, kind))
                    continue
                for p in points:
                    labels = frozenset((a.key, a.value.string_value) for a in p.attributes)
                    samples[(name, labels)] = p.as_double
                    if kind == 'sum' and not p.start_time_unix_nano:
                        problems.append('%s: no start time' % m.name)
    return samples, problems


def same(a, b):
    if a.keys() != b.keys():
        return False
    for k, v in a.items():
        w = b[k]
        if not (v == w or (v != v and w != w) or abs(v - w) <= 1e-12 * max(abs(v), abs(w))):
            return False
    return True


class Daemon:
    def __init__(self, binary, tmp, extra):
        self.port = free_port()
        self.log = os.path.join(tmp, 'host-%d.log' % self.port)
        args = [binary, '--web.listen-address=127.0.0.1:%d' % self.port,
                '--monitor.interval=1s', '--passthrough.enable=false', '--gpu.enable=false',
                '--kube.node-name=otlp-node', '--exporter.otlp.interval=1s'] + extra
        self.proc = subprocess.Popen(args, stdout=open(self.log, 'w'), stderr=subprocess.STDOUT)

    def scrape(self):
        try:
            with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % self.port, timeout=2) as r:
                return r.read().decode()
        except Exception:  # noqa: BLE001
            return None

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        return self.proc.returncode

    def logtext(self):
        with open(self.log) as f:
            return f.read()


def collect(d, rx, want, seconds):
    """Scrape every 100 ms until `want` exports each matched a scraped snapshot."""
    bodies, matched, deadline = [], 0, time.time() + seconds
    last_miss = None
    while time.time() < deadline and matched < want:
        body = d.scrape()
        if body:
            bodies.append(parse_exposition(body)[0])
            bodies = bodies[-80:]
        with rx.lock:
            reqs = list(rx.requests)
        matched = 0
        for req in reqs:
            got, _ = flatten(req)
            if any(same(got, b) for b in bodies):
                matched += 1
            else:
                last_miss = got
        time.sleep(0.1)
    return matched, bodies, last_miss


def diff(got, bodies):
    if not bodies or got is None:
        return 'nothing received'
    b = bodies[-1]
    lines = ['only in OTLP: %s' % sorted(str(k) for k in got.keys() - b.keys())[:5],
             'only in /metrics: %s' % sorted(str(k) for k in b.keys() - got.keys())[:5]]
    for k in sorted(got.keys() & b.keys(), key=str)[:400]:
        if got[k] != b[k]:
            lines.append('%s: %r vs %r' % (k, got[k], b[k]))
    return '\n'.join(lines[:20])


def make_certs(tmp):
    def run(*a):
        subprocess.run(a, check=True, capture_output=True, cwd=tmp)
    run('openssl', 'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
        '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=otlp test CA')
    for who, cn in (('server', '127.0.0.1'), ('client', 'virtwatt')):
        run('openssl', 'req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1',
            '-nodes', '-keyout', who + '.key', '-out', who + '.csr', '-subj', '/CN=' + cn)
        with open(os.path.join(tmp, who + '.ext'), 'w') as f:
            f.write('subjectAltName=IP:127.0.0.1\n' if who == 'server'
                    else 'extendedKeyUsage=clientAuth\n')
        run('openssl', 'x509', '-req', '-in', who + '.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key',
            '-CAcreateserial', '-out', who + '.crt', '-days', '2', '-extfile', who + '.ext')
    return {k: os.path.join(tmp, k) for k in ('ca.crt', 'server.crt', 'server.key',
                                               'client.crt', 'client.key')}


def main():
    binary = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix='vw-otlp-')
    daemons = []
    try:
        json_format, pb2 = compile_protos(os.path.join(tmp, 'py'))
        ok(True, 'protoc compiled the official OTLP protos for python3-protobuf')

        # 1. Every export equals a snapshot /metrics served; gzip and headers arrive.
        rx = Receiver(json_format, pb2)
        d = Daemon(binary, tmp, ['--exporter.otlp.endpoint=http://127.0.0.1:%d' % rx.port,
                                 '--exporter.otlp.headers=Authorization=Bearer t0ken,X-Tenant=a=b'])
        daemons.append(d)
        matched, bodies, miss = collect(d, rx, 3, 30)
        ok(not rx.errors, 'every request parses as an ExportMetricsServiceRequest', rx.errors[:3])
        ok(matched >= 3, 'each export equals one snapshot /metrics served, sample for sample '
           '(%d matched of %d)' % (matched, len(rx.requests)), diff(miss, bodies))
        with rx.lock:
            req = rx.requests[-1] if rx.requests else None
            hdr = rx.headers[-1] if rx.headers else {}
        if req is not None:
            got, problems = flatten(req)
            ok(not problems, 'counters are cumulative monotonic sums with a start time', problems)
            res = {a.key: a.value.string_value for a in req.resource_metrics[0].resource.attributes}
            ok(res.get('service.name') == 'virtwatt-host' and res.get('host.name') and
               res.get('service.version'), 'resource attributes: service.name, .version, host.name',
               res)
            names = {m.name: m for sm in req.resource_metrics[0].scope_metrics for m in sm.metrics}
            node = names.get('kepler_node_cpu_joules')
            ok(node is not None and node.unit == 'J' and node.WhichOneof('data') == 'sum',
               'kepler_node_cpu_joules_total is the sum kepler_node_cpu_joules, unit J',
               sorted(names)[:20])
            watts = names.get('kepler_node_cpu_watts')
            ok(watts is not None and watts.unit == 'W' and watts.WhichOneof('data') == 'gauge',
               'kepler_node_cpu_watts is a gauge, unit W')
            ok(len(got) > 20, 'every family is there (%d samples)' % len(got))
        else:
            for what in ('sums', 'resource', 'joules', 'watts', 'families'):
                ok(False, what + ': no request received', d.logtext()[-2000:])
        ok(hdr.get('Content-Encoding') == 'gzip', 'gzip by default', hdr)
        ok(hdr.get('Authorization') == 'Bearer t0ken' and hdr.get('X-Tenant') == 'a=b',
           'configured headers reach the receiver', hdr)

        # 2. The receiver away (503): retried with back-off, /metrics keeps being refreshed,
        # and the snapshots arrive once it answers.
        with rx.lock:
            rx.fail_next = 3
            before = len(rx.requests)
        t0 = time.time()
        body1 = d.scrape()
        time.sleep(2.5)
        body2 = d.scrape()
        ok(body1 and body2 and body1 != body2, 'sampling goes on while the receiver refuses')
        deadline = time.time() + 20
        while time.time() < deadline:
            with rx.lock:
                if len(rx.requests) > before and rx.fail_next == 0:
                    break
            time.sleep(0.2)
        with rx.lock:
            arrived = len(rx.requests) > before
        ok(arrived, 'exports resume after 3 refusals (%.1f s)' % (time.time() - t0))
        s = parse_exposition(d.scrape() or '')[0]
        retries = sum(v for (k, _), v in s.items() if k == 'virtwatt_otlp_retries_total')
        ok(retries >= 3, 'virtwatt_otlp_retries_total counts the retries (%g)' % retries)
        ok(d.stop() == 0, 'stops cleanly with a pusher running')
        rx.stop()

        # 3. Mutual TLS: the receiver's CA checked, our client certificate presented.
        certs = make_certs(tmp)
        rx = Receiver(json_format, pb2, tls={'cert': certs['server.crt'],
                                             'key': certs['server.key'], 'ca': certs['ca.crt']})
        d = Daemon(binary, tmp, ['--exporter.otlp.endpoint=https://127.0.0.1:%d' % rx.port,
                                 '--exporter.otlp.ca-file=' + certs['ca.crt'],
                                 '--exporter.otlp.cert-file=' + certs['client.crt'],
                                 '--exporter.otlp.key-file=' + certs['client.key'],
                                 '--exporter.otlp.compression=none'])
        daemons.append(d)
        matched, bodies, miss = collect(d, rx, 1, 20)
        ok(matched >= 1 and not rx.errors, 'over mutual TLS, an export equals a snapshot',
           diff(miss, bodies) + '\n' + d.logtext()[-1500:])
        with rx.lock:
            hdr = rx.headers[-1] if rx.headers else {}
        ok('Content-Encoding' not in hdr, 'compression none sends plain JSON', hdr)
        d.stop()
        rx.stop()

        # 4. Without the client certificate the TLS receiver takes nothing; the daemon says so.
        rx = Receiver(json_format, pb2, tls={'cert': certs['server.crt'],
                                             'key': certs['server.key'], 'ca': certs['ca.crt']})
        d = Daemon(binary, tmp, ['--exporter.otlp.endpoint=https://127.0.0.1:%d' % rx.port,
                                 '--exporter.otlp.ca-file=' + certs['ca.crt']])
        daemons.append(d)
        time.sleep(4)
        ok(not rx.requests, 'no client certificate: nothing accepted')
        ok('otlp: exporting to https://127.0.0.1' in d.logtext(), 'the failure is logged',
           d.logtext()[-1500:])
        d.stop()
        rx.stop()

        # 5. A bad endpoint is refused at start with the fix.
        p = subprocess.run([binary, '--exporter.otlp.endpoint=collector:4318',
                            '--web.listen-address=127.0.0.1:0'], capture_output=True,
                           text=True, timeout=20)
        ok(p.returncode != 0 and 'http://HOST:4318' in (p.stdout + p.stderr),
           'an endpoint without http(s):// is refused, naming the form', p.stdout + p.stderr)
    finally:
        for d in daemons:
            if d.proc.poll() is None:
                d.proc.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print('1..%d' % n)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
