#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Self-test of tests/redfish/bmc.py through curl over TLS (TAP): the chassis Power against the
CA it made, basic auth, sessions, live watts and energy, and every fault mode."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BMC = os.path.join(HERE, 'bmc.py')
POWER = '/redfish/v1/Chassis/1U/Power'
ENV = '/redfish/v1/Chassis/1U/EnvironmentMetrics'
PSU = '/redfish/v1/Chassis/1U/PowerSubsystem/PowerSupplies/Bay1/Metrics'
SESSIONS = '/redfish/v1/SessionService/Sessions'

n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    if not cond:
        failed += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', n, what), flush=True)


class Bmc:
    def __init__(self, tmp, cert=None):
        """cert: (certificate, key, CA) to serve."""
        self.tmp = tmp
        self.ctl = os.path.join(tmp, 'ctl')
        os.mkdir(self.ctl)
        if cert:
            self.ca = cert[2]
            tls = ['--cert', cert[0], '--key', cert[1]]
        else:
            self.ca = os.path.join(tmp, 'ca.pem')
            tls = ['--ca-out', self.ca]
        self.proc = subprocess.Popen([sys.executable, BMC, '--port', '0', '--control', self.ctl,
                                      '--user', 'admin', '--password', 'pw'] + tls,
                                     stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith('port '), line
        self.port = int(line.split()[1])
        self.base = 'https://127.0.0.1:%d' % self.port

    def set(self, name, value):
        with open(os.path.join(self.ctl, name + '.tmp'), 'w') as f:
            f.write(value + '\n')
        os.replace(os.path.join(self.ctl, name + '.tmp'), os.path.join(self.ctl, name))

    def curl(self, path, *extra, auth=True, timeout=10):
        """(curl exit status, HTTP code, headers, body)."""
        hdr = os.path.join(self.tmp, 'hdr')
        cmd = ['curl', '-sS', '--cacert', self.ca, '-m', str(timeout), '-D', hdr,
               '-w', '\n%{http_code}']
        if auth:
            cmd += ['-u', 'admin:pw']
        r = subprocess.run(cmd + list(extra) + [self.base + path], capture_output=True)
        out = r.stdout
        body, _, code = out.rpartition(b'\n')
        headers = {}
        if os.path.exists(hdr):
            with open(hdr, 'rb') as f:
                for l in f.read().decode('latin-1').splitlines():
                    k, sep, v = l.partition(':')
                    if sep:
                        headers[k.strip().lower()] = v.strip()
            os.unlink(hdr)
        return r.returncode, int(code or 0), headers, body

    def json(self, path, **kw):
        rc, code, _, body = self.curl(path, **kw)
        return json.loads(body) if rc == 0 and code == 200 else None

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def main():
    if not shutil.which('curl') or not shutil.which('openssl'):
        print('1..0 # SKIP curl or openssl missing')
        return 0
    tmp = tempfile.mkdtemp(prefix='vw-test-bmc-')
    try:
        bmc = Bmc(tmp)
        try:
            run(bmc)
        finally:
            bmc.stop()
        given_cert(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print('1..%d' % n)
    return 1 if failed else 0


def given_cert(tmp):
    """--cert/--key: the BMC serves the certificate it is given."""
    d = os.path.join(tmp, 'given')
    os.mkdir(d)
    certs = os.path.join(tmp, 'certs')
    os.mkdir(certs)
    sys.path.insert(0, HERE)
    sys.dont_write_bytecode = True  # no __pycache__ in the source tree
    import bmc as bmc_module  # its CA maker, run here: the server is handed the result
    bmc = Bmc(d, bmc_module.make_certs(certs))
    try:
        doc = bmc.json(POWER)
        ok(doc is not None and doc['PowerControl'][0]['PowerConsumedWatts'] == 344,
           '--cert/--key: the given certificate is served (verified against its CA)')
    finally:
        bmc.stop()


def run(bmc):
    # TLS against the generated CA, the mockup's reading.
    doc = bmc.json(POWER)
    ok(doc is not None and doc['PowerControl'][0]['PowerConsumedWatts'] == 344,
       'chassis Power over TLS verified against the CA: the mockup\'s 344 W')
    rc, _, _, _ = bmc.curl(POWER, '--cacert', '/dev/null', '--capath', '/nonexistent')
    ok(rc == 77 or rc == 60, 'without the CA, curl refuses the certificate (rc %d)' % rc)
    root = bmc.json('/redfish/v1/', auth=False)
    ok(root is not None and root['Chassis']['@odata.id'] == '/redfish/v1/Chassis',
       'service root open without credentials')

    # Basic auth.
    rc, code, hdr, _ = bmc.curl(POWER, auth=False)
    ok(code == 401 and 'basic' in hdr.get('www-authenticate', '').lower(),
       'no credentials: 401 with WWW-Authenticate')
    _, code, _, _ = bmc.curl(POWER, '-u', 'admin:wrong', auth=False)
    ok(code == 401, 'wrong password: 401')

    # Sessions.
    _, code, hdr, _ = bmc.curl(SESSIONS, '-H', 'Content-Type: application/json', '-d',
                               '{"UserName":"admin","Password":"pw"}', auth=False)
    token, loc = hdr.get('x-auth-token'), hdr.get('location')
    ok(code == 201 and token and loc and loc.startswith(SESSIONS + '/'),
       'session login: 201, X-Auth-Token and Location')
    with open(os.path.join(bmc.ctl, 'sessions')) as f:
        ok(f.read().strip() == '1', 'the BMC counts one live session')
    tok = ['-H', 'X-Auth-Token: %s' % token]
    _, code, _, _ = bmc.curl(POWER, *tok, auth=False)
    ok(code == 200, 'the token is accepted')
    _, code, _, _ = bmc.curl(POWER, '-H', 'X-Auth-Token: nope', auth=False)
    ok(code == 401, 'a wrong token is refused')
    _, code, _, _ = bmc.curl(SESSIONS, '-H', 'Content-Type: application/json', '-d',
                             '{"UserName":"admin","Password":"bad"}', auth=False)
    ok(code == 401, 'login with a wrong password: 401')
    _, code, _, _ = bmc.curl(loc, '-X', 'DELETE', *tok, auth=False)
    ok(code == 204, 'logout: DELETE Location answers 204')
    _, code, _, _ = bmc.curl(POWER, *tok, auth=False)
    ok(code == 401, 'the token is refused after logout')
    with open(os.path.join(bmc.ctl, 'sessions')) as f:
        ok(f.read().strip() == '0', 'no live session left')

    # A session the BMC forgets.
    _, code, hdr, _ = bmc.curl(SESSIONS, '-H', 'Content-Type: application/json', '-d',
                               '{"UserName":"admin","Password":"pw"}', auth=False)
    tok = ['-H', 'X-Auth-Token: %s' % hdr.get('x-auth-token')]
    bmc.set('expire', '')
    _, code, _, _ = bmc.curl(POWER, *tok, auth=False)
    ok(code == 401 and not os.path.exists(os.path.join(bmc.ctl, 'expire')),
       'expire: the token is refused once the BMC forgets every session')

    # Live readings.
    bmc.set('watts', '123.5')
    doc = bmc.json(POWER)
    ok(doc and doc['PowerControl'][0]['PowerConsumedWatts'] == 123.5,
       'watts=123.5: PowerConsumedWatts follows')
    env = bmc.json(ENV)
    ok(env and env['PowerWatts']['Reading'] == 123.5, 'EnvironmentMetrics PowerWatts follows')
    psu = bmc.json(PSU)
    ok(psu and psu['InputPowerWatts']['Reading'] == 123.5, 'PSU InputPowerWatts follows')
    bmc.set('watts', '3600000')  # 1 kW.h a second
    e0 = bmc.json(ENV)['EnergykWh']['Reading']
    t0 = time.monotonic()
    time.sleep(1.0)
    e1 = bmc.json(ENV)['EnergykWh']['Reading']
    dt = time.monotonic() - t0
    ok(0.8 * dt <= e1 - e0 <= 1.2 * dt + 0.1,
       'EnergykWh integrates watts: %.3f kW.h in %.3f s at 3.6 MW' % (e1 - e0, dt))
    bmc.set('watts', '200')

    # Hidden representations.
    bmc.set('hide', 'EnvironmentMetrics Power')
    ch = bmc.json('/redfish/v1/Chassis/1U')
    _, code, _, _ = bmc.curl(ENV)
    ok(ch and 'EnvironmentMetrics' not in ch and 'Power' not in ch and 'PowerSubsystem' in ch
       and code == 404, 'hide: links gone from the chassis, their resources 404')
    bmc.set('hide', '')

    # Faults.
    bmc.set('mode', 'slow 1')
    t0 = time.monotonic()
    _, code, _, _ = bmc.curl(POWER)
    ok(code == 200 and time.monotonic() - t0 >= 1.0, 'slow 1: answered after a second')
    rc, _, _, _ = bmc.curl(POWER, timeout=0.5)
    ok(rc == 28, 'slow 1: a 0.5 s client times out (curl rc %d)' % rc)
    bmc.set('mode', '401')
    _, code, _, _ = bmc.curl(POWER)
    ok(code == 401, '401 mode: refused with good credentials')
    bmc.set('mode', '503')
    _, code, hdr, _ = bmc.curl(POWER)
    ok(code == 503 and 'retry-after' in hdr, '503 mode: 503 with Retry-After')
    bmc.set('mode', 'garbage')
    rc, code, _, body = bmc.curl(POWER)
    try:
        json.loads(body)
        parsed = True
    except ValueError:
        parsed = False
    ok(rc == 0 and code == 200 and not parsed, 'garbage mode: 200 with a body that is no JSON')
    bmc.set('mode', 'truncated')
    rc, _, _, _ = bmc.curl(POWER)
    ok(rc == 18, 'truncated mode: curl sees a short body (rc %d)' % rc)
    bmc.set('mode', 'reset')
    rc, _, _, _ = bmc.curl(POWER)
    ok(rc in (35, 52, 56), 'reset mode: connection reset (curl rc %d)' % rc)
    bmc.set('mode', 'ok')
    doc = bmc.json(POWER)
    ok(doc and doc['PowerControl'][0]['PowerConsumedWatts'] == 200, 'ok again: 200 W')


if __name__ == '__main__':
    sys.exit(main())
