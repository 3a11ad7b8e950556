#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A Redfish BMC simulator for the test suite (Python 3 stdlib + the openssl CLI).

Serves a subset of DMTF's public-rackmount1 mockup (tests/data/redfish-mockup, see its README):
GET /redfish/v1/<path> answers <root>/redfish/v1/<path>/index.json. Over HTTPS only, with a
certificate from a CA this script makes (openssl CLI; --ca-out receives the CA's PEM) or the one
given (--cert/--key).

Auth, as a BMC does it: the service root (/redfish/v1/) and the session login are open; every
other request needs HTTP basic (--user/--password) or a session's X-Auth-Token.
  POST /redfish/v1/SessionService/Sessions {"UserName","Password"}
      -> 201, X-Auth-Token and Location headers (--max-sessions live at once, else 503)
  DELETE <Location> -> 204, the token is refused from then on.

Readings (with --control DIR, read on every request):
  DIR/watts   the node's power in W (default: the mockup's 344). It is reported as
              Power PowerControl[0].PowerConsumedWatts, EnvironmentMetrics PowerWatts.Reading,
              Sensors/TotalPower Reading and PowerSupplies/Bay1/Metrics InputPowerWatts (Bay2
              has no metrics in the mockup, so Bay1 carries the node). PowerSubsystem itself has
              no power property in its schema.
  energy      integrated from watts on this process's monotonic clock (polled every 20 ms and
              at each request), in kW.h from --energy-start-kwh: EnvironmentMetrics
              EnergykWh.Reading (an EnvironmentMetrics property in DMTF's schema; the mockup's
              resource lacks it, it is added), Sensors/TotalEnergy Reading, Bay1/Metrics
              EnergykWh.Reading.
  DIR/mode    a fault for the requests that follow (the service root and login included):
              ok | slow [N] (sleep N s, default 2, then answer) | 401 | 503 | garbage (200 with
              random bytes) | truncated (half the JSON, then the connection closes) | reset
              (the socket closed with RST, no answer).
  DIR/hide    chassis links to take away (whitespace-separated: EnvironmentMetrics Power
              PowerSubsystem Sensors): gone from Chassis/1U, and their resources answer 404, so
              a client's fallback to an older representation can be tested.
  DIR/chassis N: the Chassis collection lists N chassis that do not exist (404) before the
              mockup's own (a BMC that floods a client's discovery).
  DIR/expire  one-shot: the next request with a token finds every session gone (the BMC
              timed them out); the file is removed.
Written by the server into DIR: `sessions` (live sessions), `requests` (requests answered).

Prints "port N" on stdout once listening (--port 0: an ephemeral port). SIGTERM/SIGINT end it.
"""
import argparse
import base64
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ROOT = os.path.join(HERE, '..', 'data', 'redfish-mockup')
SESSIONS = '/redfish/v1/SessionService/Sessions'
CHASSIS = '/redfish/v1/Chassis/1U'
OPEN_PATHS = ('/redfish', '/redfish/v1')
DEFAULT_WATTS = 344.0


def make_certs(tmp):
    """A CA and a server certificate for 127.0.0.1/localhost; returns (cert, key, ca)."""
    ca_key, ca_crt = os.path.join(tmp, 'ca.key'), os.path.join(tmp, 'ca.crt')
    key, csr, crt = (os.path.join(tmp, n) for n in ('bmc.key', 'bmc.csr', 'bmc.crt'))
    ext = os.path.join(tmp, 'ext.cnf')
    with open(ext, 'w') as f:
        f.write('subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n'
                'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n'
                'extendedKeyUsage=serverAuth\n')
    run = lambda *a: subprocess.run(['openssl', *a], check=True, capture_output=True)
    run('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', ca_key, '-out', ca_crt, '-days', '2', '-subj', '/CN=virtwatt test BMC CA')
    run('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', key, '-out', csr, '-subj', '/CN=localhost')
    run('x509', '-req', '-in', csr, '-CA', ca_crt, '-CAkey', ca_key, '-CAcreateserial',
        '-out', crt, '-days', '2', '-extfile', ext)
    return crt, key, ca_crt


class State:
    """Readings, energy and sessions, shared by the handler threads."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.watts = DEFAULT_WATTS
        self.energy_j = 0.0
        self.last_t = time.monotonic()
        self.sessions = {}  # id -> token
        self.requests = 0
        self.update()

    def _read_control(self, name):
        if not self.args.control:
            return None
        try:
            with open(os.path.join(self.args.control, name)) as f:
                return f.read().strip()
        except OSError:
            return None

    def update(self):
        """Integrate the power up to now, then take the control file's power."""
        with self.lock:
            now = time.monotonic()
            self.energy_j += self.watts * (now - self.last_t)
            self.last_t = now
            w = self._read_control('watts')
            if w:
                try:
                    self.watts = float(w)
                except ValueError:
                    pass
            # Whole watts print as integers, as BMCs do.
            watts = int(self.watts) if self.watts.is_integer() else self.watts
            return watts, self.args.energy_start_kwh + self.energy_j / 3.6e6

    def hidden(self):
        return (self._read_control('hide') or '').split()

    def bogus_chassis(self):
        try:
            return int(self._read_control('chassis') or 0)
        except ValueError:
            return 0

    def mode(self):
        return (self._read_control('mode') or 'ok').split()

    def _write_control(self, name, value):
        if self.args.control:
            tmp = os.path.join(self.args.control, '.' + name + '.tmp')
            with open(tmp, 'w') as f:
                f.write('%d\n' % value)
            os.replace(tmp, os.path.join(self.args.control, name))

    def counted(self):
        with self.lock:
            self.requests += 1
            self._write_control('requests', self.requests)

    def session_add(self):
        with self.lock:
            if len(self.sessions) >= self.args.max_sessions:
                return None, None
            sid, token = secrets.token_hex(8), secrets.token_hex(16)
            self.sessions[sid] = token
            self._write_control('sessions', len(self.sessions))
            return sid, token

    def session_del(self, sid):
        with self.lock:
            ok = self.sessions.pop(sid, None) is not None
            self._write_control('sessions', len(self.sessions))
            return ok

    def token_ok(self, token):
        with self.lock:
            if self.args.control and os.path.exists(os.path.join(self.args.control, 'expire')):
                os.unlink(os.path.join(self.args.control, 'expire'))
                self.sessions.clear()
                self._write_control('sessions', 0)
            return token in self.sessions.values()

    def session_ids(self):
        with self.lock:
            return list(self.sessions)


def live(doc, path, watts, kwh, hidden=()):
    """The mockup's resource with this moment's readings."""
    if path == CHASSIS:
        for h in hidden:
            doc.pop(h, None)
    elif path == CHASSIS + '/Power':
        for pc in doc.get('PowerControl', [])[:1]:
            pc['PowerConsumedWatts'] = watts
    elif path == CHASSIS + '/EnvironmentMetrics':
        doc.setdefault('PowerWatts', {})['Reading'] = watts
        doc['EnergykWh'] = {'Reading': kwh,
                            'DataSourceUri': CHASSIS + '/Sensors/TotalEnergy'}
    elif path == CHASSIS + '/Sensors/TotalPower':
        doc['Reading'] = watts
    elif path == CHASSIS + '/Sensors/TotalEnergy':
        doc['Reading'] = kwh
    elif path == CHASSIS + '/PowerSubsystem/PowerSupplies/Bay1/Metrics':
        doc.setdefault('InputPowerWatts', {})['Reading'] = watts
        doc.setdefault('EnergykWh', {})['Reading'] = kwh
    return doc


class Handler(BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    server_version = 'virtwatt-test-bmc/1'

    def log_message(self, fmt, *a):
        if self.server.state.args.verbose:
            sys.stderr.write('bmc: ' + (fmt % a) + '\n')

    # ---- answers -------------------------------------------------------------------------
    def send_body(self, code, body, headers=(), ctype='application/json'):
        self.send_response(code)
        self.send_header('Content-Type', ctype)
        self.send_header('Content-Length', str(len(body)))
        self.send_header('OData-Version', '4.0')
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if self.command != 'HEAD':
            self.wfile.write(body)

    def send_json(self, code, doc, headers=()):
        self.send_body(code, json.dumps(doc, indent=1).encode(), headers)

    def send_error_json(self, code, msg, headers=()):
        self.send_json(code, {'error': {'code': 'Base.1.0.GeneralError', 'message': msg}},
                       headers)

    def unauthorized(self):
        self.send_error_json(401, 'authentication required',
                             [('WWW-Authenticate', 'Basic realm="virtwatt-test-bmc"')])

    # ---- faults --------------------------------------------------------------------------
    def fault(self):
        """Apply DIR/mode; True when the request has been answered (or dropped)."""
        m = self.server.state.mode()
        kind = m[0] if m else 'ok'
        if kind == 'slow':
            time.sleep(float(m[1]) if len(m) > 1 else 2.0)
            return False
        if kind == '401':
            self.unauthorized()
        elif kind == '503':
            self.send_error_json(503, 'service temporarily unavailable', [('Retry-After', '1')])
        elif kind == 'garbage':
            self.send_body(200, os.urandom(512))
        elif kind == 'truncated':
            self.truncated = True
            return False
        elif kind == 'reset':
            # Close the TCP socket under the TLS with a zero linger: the client gets a RST, no
            # close_notify and no answer.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack('ii', 1, 0))
            self.close_connection = True
            self.connection.close()
            return True
        else:
            return False
        return True

    # ---- auth ----------------------------------------------------------------------------
    def authorized(self):
        st = self.server.state
        token = self.headers.get('X-Auth-Token')
        if token is not None:
            return st.token_ok(token)
        auth = self.headers.get('Authorization', '')
        if auth.startswith('Basic '):
            try:
                user, _, pw = base64.b64decode(auth[6:]).decode().partition(':')
            except (ValueError, UnicodeDecodeError):
                return False
            return user == st.args.user and pw == st.args.password
        return False

    def path_only(self):
        p = self.path.split('?', 1)[0].split('#', 1)[0]
        return p.rstrip('/') or '/'

    # ---- methods -------------------------------------------------------------------------
    def start(self):
        self.truncated = False
        self.server.state.counted()
        return self.fault()

    def do_GET(self):
        if self.start():
            return
        path = self.path_only()
        if path not in OPEN_PATHS and not self.authorized():
            return self.unauthorized()
        st = self.server.state
        if path == '/redfish':
            return self.send_json(200, {'v1': '/redfish/v1/'})
        if path == SESSIONS:
            ids = st.session_ids()
            return self.send_json(200, {
                '@odata.id': SESSIONS, 'Name': 'Session Collection',
                'Members@odata.count': len(ids),
                'Members': [{'@odata.id': SESSIONS + '/' + i} for i in ids]})
        if path.startswith(SESSIONS + '/'):
            sid = path[len(SESSIONS) + 1:]
            if sid in st.session_ids():
                return self.send_json(200, {'@odata.id': path, 'Id': sid,
                                            'UserName': st.args.user})
            return self.send_error_json(404, 'no such session')
        parts = path.split('/')[1:]
        if parts[:2] != ['redfish', 'v1'] or any(p in ('', '.', '..') for p in parts):
            return self.send_error_json(404, 'not found')
        hidden = st.hidden()
        if any(path == CHASSIS + '/' + h or path.startswith(CHASSIS + '/' + h + '/')
               for h in hidden):
            return self.send_error_json(404, 'not found')
        f = os.path.join(st.args.root, *parts, 'index.json')
        try:
            with open(f) as fh:
                doc = json.load(fh)
        except OSError:
            return self.send_error_json(404, 'not found')
        watts, kwh = st.update()
        doc = live(doc, path, watts, kwh, hidden)
        bogus = st.bogus_chassis()
        if path == '/redfish/v1/Chassis' and bogus:
            doc['Members'] = [{'@odata.id': '/redfish/v1/Chassis/Bogus%d' % i}
                              for i in range(bogus)] + doc['Members']
            doc['Members@odata.count'] = len(doc['Members'])
        body = json.dumps(doc, indent=1).encode()
        if self.truncated:
            self.send_response(200)
            self.send_header('Content-Type', 'application/json')
            self.send_header('Content-Length', str(len(body)))
            self.end_headers()
            self.wfile.write(body[:len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_body(200, body)

    do_HEAD = do_GET

    def do_POST(self):
        n = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(n) if n > 0 else b''
        if self.start():
            return
        path = self.path_only()
        if path != SESSIONS:
            return self.send_error_json(405, 'method not allowed')
        st = self.server.state
        try:
            req = json.loads(raw)
            user, pw = req['UserName'], req['Password']
        except (ValueError, KeyError, TypeError):
            return self.send_error_json(400, 'UserName and Password required')
        if user != st.args.user or pw != st.args.password:
            return self.unauthorized()
        sid, token = st.session_add()
        if sid is None:
            return self.send_error_json(503, 'too many sessions')
        loc = SESSIONS + '/' + sid
        self.send_json(201, {'@odata.id': loc, 'Id': sid, 'UserName': user},
                       [('X-Auth-Token', token), ('Location', loc)])

    def do_DELETE(self):
        if self.start():
            return
        path = self.path_only()
        if not self.authorized():
            return self.unauthorized()
        if not path.startswith(SESSIONS + '/'):
            return self.send_error_json(405, 'method not allowed')
        if not self.server.state.session_del(path[len(SESSIONS) + 1:]):
            return self.send_error_json(404, 'no such session')
        self.send_response(204)
        self.send_header('Content-Length', '0')
        self.end_headers()


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, ctx, state):
        self.ctx, self.state = ctx, state
        self.address_family = socket.AF_INET6 if ':' in addr[0] else socket.AF_INET
        super().__init__(addr, Handler)

    def finish_request(self, request, client_address):
        # The TLS handshake runs in the request's own thread: a client that connects and says
        # nothing holds up only itself.
        request.settimeout(30)
        try:
            tls = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            tls.close()

    def handle_error(self, request, client_address):
        if self.state.args.verbose:
            super().handle_error(request, client_address)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--root', default=DEFAULT_ROOT, help='mockup directory (has redfish/v1)')
    ap.add_argument('--bind', default='127.0.0.1')
    ap.add_argument('--port', type=int, default=0)
    ap.add_argument('--user', default='admin')
    ap.add_argument('--password', default='secret')
    ap.add_argument('--cert', help='server certificate (PEM); with --key')
    ap.add_argument('--key', help='its private key (PEM)')
    ap.add_argument('--ca-out',
                    help='write the generated CA certificate here (not with --cert/--key)')
    ap.add_argument('--control', help='control directory: watts, mode (see the header)')
    ap.add_argument('--energy-start-kwh', type=float, default=325675.0,
                    help="the energy counter's start (the mockup's TotalEnergy)")
    ap.add_argument('--max-sessions', type=int, default=4)
    ap.add_argument('--verbose', action='store_true')
    args = ap.parse_args()
    args.root = os.path.abspath(args.root)

    tmp = tempfile.mkdtemp(prefix='vw-bmc-')
    try:
        if bool(args.cert) != bool(args.key):
            ap.error('--cert and --key go together')
        if args.cert and args.ca_out:
            ap.error('--ca-out is for the CA this script makes, not with --cert/--key')
        if args.cert:
            cert, key = args.cert, args.key
        else:
            cert, key, ca = make_certs(tmp)
            if args.ca_out:
                shutil.copyfile(ca, args.ca_out + '.tmp')
                os.replace(args.ca_out + '.tmp', args.ca_out)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert, key)
        state = State(args)
        srv = Server((args.bind, args.port), ctx, state)

        def ticker():
            while True:
                time.sleep(0.02)
                state.update()
        threading.Thread(target=ticker, daemon=True).start()
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
        print('port %d' % srv.server_address[1], flush=True)
        try:
            srv.serve_forever(poll_interval=0.1)
        except KeyboardInterrupt:
            pass
        srv.server_close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
