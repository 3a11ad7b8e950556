// Validates every YAML document under deploy/k8s/ offline (TAP output):
// - against the Kubernetes OpenAPI schemas of kubernetes-models@5 (DaemonSet, Service, ...),
//   the ServiceMonitor against @kubernetes-models/prometheus-operator's CRD schema;
// - our own rules: every flag a container passes exists in that binary's --help, nothing
//   privileged, capabilities exactly ALL dropped and BPF, PERFMON, DAC_READ_SEARCH, SYS_PTRACE
//   added, read-only root filesystem, no privilege escalation, seccomp RuntimeDefault or
//   virtwatt's Localhost profile installed by an init container that holds no capability and
//   writes only the kubelet's seccomp/virtwatt directory, no hostPID/hostNetwork, host mounts
//   read-only except the guest's state directory and the publish locks.
// usage: node validate_k8s.mjs NODE_MODULES K8S_DIR HOST_BIN GUEST_BIN [--rendered]
//   --rendered: K8S_DIR holds rendered output (helm template), not kustomizations
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { execFileSync } from 'node:child_process';

const [nm, k8sDir, hostBin, guestBin, mode] = process.argv.slice(2);
const rendered = mode === '--rendered';
const load = (p) => import(pathToFileURL(join(nm, p)).href);

const YAML = await load('yaml/dist/index.js');
const models = {
  'apps/v1/DaemonSet': (await load('kubernetes-models/apps/v1/DaemonSet.js')).DaemonSet,
  'v1/Service': (await load('kubernetes-models/v1/Service.js')).Service,
  'v1/ServiceAccount': (await load('kubernetes-models/v1/ServiceAccount.js')).ServiceAccount,
  'v1/Namespace': (await load('kubernetes-models/v1/Namespace.js')).Namespace,
  'rbac.authorization.k8s.io/v1/ClusterRole':
    (await load('kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole.js')).ClusterRole,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding':
    (await load('kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding.js'))
      .ClusterRoleBinding,
  'monitoring.coreos.com/v1/ServiceMonitor':
    (await load('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/ServiceMonitor.js'))
      .ServiceMonitor,
  'monitoring.coreos.com/v1/PodMonitor':
    (await load('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor.js'))
      .PodMonitor,
  'monitoring.coreos.com/v1/PrometheusRule':
    (await load('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PrometheusRule.js'))
      .PrometheusRule,
  'networking.k8s.io/v1/NetworkPolicy':
    (await load('kubernetes-models/networking.k8s.io/v1/NetworkPolicy.js')).NetworkPolicy,
};

const PROFILE = 'virtwatt/virtwatt-host.json';
const CAPS = ['BPF', 'DAC_READ_SEARCH', 'PERFMON', 'SYS_PTRACE'];
const WRITABLE_HOST_PATHS = new Set(['/var/lib/virtwatt-guest', '/run/virtwatt/lock']);

let n = 0;
let failed = 0;
const ok = (cond, name, why) => {
  n++;
  if (cond) console.log(`ok ${n} - ${name}`);
  else {
    failed++;
    console.log(`not ok ${n} - ${name}`);
    for (const l of String(why ?? '').split('\n')) if (l) console.log(`# ${l}`);
  }
};

// Flag names each binary accepts, from its --help ("  --flag=VALUE" or "  --flag").
const flagsOf = (bin) => {
  const out = execFileSync(bin, ['--help'], { encoding: 'utf8' });
  const set = new Set();
  for (const m of out.matchAll(/^\s+--([a-z0-9][a-z0-9.-]*)/gm)) set.add(m[1]);
  if (set.size < 10) throw new Error(`${bin} --help listed only ${set.size} flags`);
  return set;
};
const binFlags = {
  'virtwatt-host': flagsOf(hostBin),
  'virtwatt-guest': flagsOf(guestBin),
};

const files = [];
const walk = (d) => {
  for (const e of readdirSync(d).sort()) {
    const p = join(d, e);
    if (statSync(p).isDirectory()) walk(p);
    else if (/\.ya?ml$/.test(e)) files.push(p);
  }
};
walk(k8sDir);

const seen = new Set();
const kustomized = new Set();
for (const f of files) {
  const rel = relative(k8sDir, f);
  const docs = YAML.parseAllDocuments(readFileSync(f, 'utf8'));
  docs.forEach((doc, i) => {
    const where = `${rel}#${i}`;
    if (doc.errors.length) {
      ok(false, `${where} parses`, doc.errors.map(String).join('\n'));
      return;
    }
    const obj = doc.toJS();
    if (obj == null) return;
    if (obj.kind === 'Kustomization') {
      for (const r of obj.resources ?? []) kustomized.add(join(rel, '..', r));
      ok(Array.isArray(obj.resources) && obj.resources.length > 0, `${where} Kustomization lists resources`);
      return;
    }
    const key = `${obj.apiVersion}/${obj.kind}`;
    seen.add(key);
    const Model = models[key];
    if (!Model) {
      ok(false, `${where} ${key} has a validator`, `no model for ${key}`);
      return;
    }
    let err = null;
    try {
      new Model(obj).validate();
    } catch (e) {
      err = e;
    }
    ok(!err, `${where} ${key} ${obj.metadata?.name} validates`,
      err && (err.errors ? JSON.stringify(err.errors, null, 1) : err.message));
    if (obj.kind === 'DaemonSet') checkDaemonSet(where, obj);
  });
}

// Every manifest file is in a kustomization, so `kubectl apply -k` applies all of them.
for (const f of rendered ? [] : files) {
  const rel = relative(k8sDir, f);
  if (/kustomization\.ya?ml$/.test(rel)) continue;
  ok(kustomized.has(join(rel)), `${rel} is listed in a kustomization.yaml`);
}
for (const k of ['apps/v1/DaemonSet', 'v1/Service', 'v1/ServiceAccount', 'v1/Namespace',
  'rbac.authorization.k8s.io/v1/ClusterRole', 'rbac.authorization.k8s.io/v1/ClusterRoleBinding',
  'monitoring.coreos.com/v1/ServiceMonitor'])
  if (!rendered) ok(seen.has(k), `deploy/k8s has a ${k}`);
  else if (k.endsWith('/DaemonSet')) ok(seen.has(k), `the rendered chart has a ${k}`);

function checkDaemonSet(where, ds) {
  const spec = ds.spec.template.spec;
  ok(!spec.hostPID && !spec.hostNetwork && !spec.hostIPC, `${where} no hostPID/hostNetwork/hostIPC`);
  ok(spec.securityContext?.seccompProfile?.type === 'RuntimeDefault', `${where} pod seccomp RuntimeDefault`);
  const hostPaths = new Map();
  for (const v of spec.volumes ?? []) if (v.hostPath) hostPaths.set(v.name, v.hostPath.path);
  // The profile installer: cp from the image into the kubelet's seccomp/virtwatt, no capability.
  const installers = new Set();
  for (const c of spec.initContainers ?? []) {
    const w = `${where} ${c.name}`;
    const sc = c.securityContext ?? {};
    const mounts = (c.volumeMounts ?? []).filter((m) => hostPaths.has(m.name));
    ok(c.command?.[0] === 'cp' && c.command.length === 3 && (c.args ?? []).length === 0,
      `${w} only copies a file`, `command ${c.command} args ${c.args}`);
    ok(sc.privileged !== true && sc.allowPrivilegeEscalation === false
      && sc.readOnlyRootFilesystem === true, `${w} unprivileged, read-only root`);
    ok(JSON.stringify(sc.capabilities?.drop) === '["ALL"]' && !(sc.capabilities?.add ?? []).length,
      `${w} drops ALL capabilities and adds none`);
    ok((sc.seccompProfile?.type ?? 'RuntimeDefault') === 'RuntimeDefault', `${w} seccomp RuntimeDefault`);
    ok(mounts.length === 1 && /\/seccomp\/virtwatt$/.test(hostPaths.get(mounts[0].name)),
      `${w} writes only the kubelet's seccomp/virtwatt directory`,
      mounts.map((m) => hostPaths.get(m.name)).join(' '));
    const dest = c.command?.[2] ?? '';
    if (mounts.length === 1 && dest.startsWith(mounts[0].mountPath + '/'))
      installers.add('virtwatt/' + dest.slice(mounts[0].mountPath.length + 1));
  }
  for (const c of spec.containers) {
    const w = `${where} ${c.name}`;
    const bin = (c.command ?? [])[0]?.split('/').pop();
    ok(bin in binFlags, `${w} runs virtwatt-host or virtwatt-guest`, `command ${c.command}`);
    const known = binFlags[bin] ?? new Set();
    const bad = [];
    for (const a of [...(c.command ?? []).slice(1), ...(c.args ?? [])]) {
      const m = /^--([^=]+)/.exec(a);
      if (!m || !known.has(m[1])) bad.push(a);
    }
    ok(bad.length === 0, `${w} passes only flags ${bin} accepts`, `unknown: ${bad.join(' ')}`);
    const sc = c.securityContext ?? {};
    const sp = sc.seccompProfile ?? spec.securityContext?.seccompProfile ?? {};
    ok(sp.type === 'RuntimeDefault' || (sp.type === 'Localhost' && sp.localhostProfile === PROFILE
      && installers.has(PROFILE)), `${w} seccomp RuntimeDefault, or ${PROFILE} installed by an init container`,
      JSON.stringify(sp));
    ok(sc.privileged !== true, `${w} not privileged`);
    ok(sc.allowPrivilegeEscalation === false, `${w} allowPrivilegeEscalation false`);
    ok(sc.readOnlyRootFilesystem === true, `${w} readOnlyRootFilesystem`);
    const drop = sc.capabilities?.drop ?? [];
    const add = [...(sc.capabilities?.add ?? [])].sort();
    ok(drop.length === 1 && drop[0] === 'ALL', `${w} drops ALL capabilities`, `drop: ${drop}`);
    ok(JSON.stringify(add) === JSON.stringify(CAPS), `${w} adds exactly ${CAPS.join(', ')}`, `add: ${add}`);
    const env = Object.fromEntries((c.env ?? []).map((e) => [e.name, e]));
    ok(env.NODE_NAME?.valueFrom?.fieldRef?.fieldPath === 'spec.nodeName', `${w} NODE_NAME from spec.nodeName`);
    ok(c.livenessProbe?.httpGet?.path === '/healthz' && c.readinessProbe?.httpGet?.path === '/readyz',
      `${w} probes /healthz and /readyz`);
    ok(c.resources?.requests?.cpu && c.resources?.requests?.memory && c.resources?.limits?.memory,
      `${w} has resource requests and a memory limit`);
    const rw = (c.volumeMounts ?? []).filter((m) => hostPaths.has(m.name) && !m.readOnly
      && !WRITABLE_HOST_PATHS.has(hostPaths.get(m.name)));
    ok(rw.length === 0, `${w} host mounts are read-only`, rw.map((m) => m.mountPath).join(' '));
  }
}

console.log(`1..${n}`);
console.log(`# ${n - failed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
