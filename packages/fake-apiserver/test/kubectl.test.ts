import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  eventually,
  type Harness,
  KUBECTL,
  kubectl,
  readyNode,
  sleep,
  spawnKubectl,
  startHarness,
} from './helpers.js';

const manifest = (labels: string, image: string) => `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {${labels}}
spec:
  containers:
  - name: app
    image: ${image}
    command: ["sleep", "3600"]
    resources:
      requests: {cpu: 100m, memory: 64Mi}
  - name: sidecar
    image: busybox:1.36
    command: ["sleep", "3600"]
`;

describe.each([
  ['oldest (1.27)', KUBECTL.oldest],
  ['newest (1.33)', KUBECTL.newest],
])('kubectl %s against the fake apiserver', (_label, bin) => {
  let h: Harness;
  const run = (...args: string[]) => kubectl(bin, h.kubeconfigPath, args);

  beforeAll(async () => {
    h = await startHarness();
    expect((await h.api.post('/api/v1/nodes', readyNode('node-a'))).status).toBe(201);
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('gets namespaces and nodes as server-side tables', async () => {
    const ns = await run('get', 'namespaces');
    expect(ns.stderr).toBe('');
    expect(ns.stdout).toMatch(/^NAME\s+STATUS\s+AGE/m);
    expect(ns.stdout).toMatch(/^kube-node-lease\s+Active/m);
    const nodes = await run('get', 'nodes', '-o', 'wide');
    expect(nodes.stdout).toMatch(/^node-a\s+Ready\s+<none>\s+\S+\s+v1\.33\.0\s+10\.0\.0\.1/m);
  });

  it('tells who the token belongs to (auth whoami)', async () => {
    const who = await run('auth', 'whoami');
    expect(who.stderr).toBe('');
    expect(who.stdout).toMatch(/^Username\s+admin$/m);
    expect(who.stdout).toMatch(/^Groups\s+\[system:authenticated\]$/m);
  });

  it('applies a pod manifest, then applies a change as a computed patch', async () => {
    const file = join(h.dir, 'pod.yaml');
    writeFileSync(file, manifest('app: web', 'busybox:1.36'));
    const first = await run('apply', '-f', file);
    expect(first.stderr).toBe('');
    expect(first.stdout.trim()).toBe('pod/web created');

    writeFileSync(file, manifest('app: web, tier: front', 'busybox:1.37'));
    const second = await run('apply', '-f', file);
    expect(second.stderr).toBe('');
    expect(second.stdout.trim()).toBe('pod/web configured');
    const pod = (await h.api.get('/api/v1/namespaces/default/pods/web')).body;
    expect(pod.metadata.labels).toEqual({ app: 'web', tier: 'front' });
    // The strategic patch merged the container by name: both containers kept, in order.
    expect(pod.spec.containers.map((c: { name: string; image: string }) => `${c.name}=${c.image}`)).toEqual([
      'app=busybox:1.37',
      'sidecar=busybox:1.36',
    ]);
    expect(pod.metadata.generation).toBe(2);

    const again = await run('apply', '-f', file);
    expect(again.stdout.trim()).toBe('pod/web unchanged');
  });

  it('validates server-side: unknown fields fail apply (Strict) and warn with --validate=warn', async () => {
    const file = join(h.dir, 'bad.yaml');
    writeFileSync(
      file,
      'apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - {name: c, image: busybox, bogus: 1}\n',
    );
    const strict = await run('apply', '-f', file);
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toMatch(/strict decoding error: unknown field "spec.containers\[0\].bogus"/);
    const warn = await run('apply', '--validate=warn', '-f', file);
    expect(warn.stderr).toMatch(/Warning: unknown field "spec.containers\[0\].bogus"/);
    expect(warn.stdout.trim()).toBe('pod/bad created');
    // It may already be bound to node-a, where only a kubelet would finish a graceful delete.
    expect((await h.api.delete('/api/v1/namespaces/default/pods/bad?gracePeriodSeconds=0')).status).toBe(200);
  });

  it('shows the scheduled pod in get -o wide and describe', async () => {
    await eventually(async () => {
      const got = await run('get', 'pods', '-o', 'wide');
      expect(got.stdout).toMatch(/^web\s+0\/2\s+Pending\s+0\s+\S+\s+<none>\s+node-a/m);
    });
    const pod = await run('describe', 'pod', 'web');
    expect(pod.stderr).toBe('');
    expect(pod.stdout).toMatch(/^Node:\s+node-a/m);
    expect(pod.stdout).toMatch(/QoS Class:\s+Burstable/);
    expect(pod.stdout).toMatch(
      /Normal\s+Scheduled\s+\S+\s+default-scheduler\s+Successfully assigned default\/web to node-a/,
    );
    const node = await run('describe', 'node', 'node-a');
    expect(node.stderr).toBe('');
    expect(node.stdout).toMatch(/^Name:\s+node-a/m);
    expect(node.stdout).toMatch(/default\s+web\s+100m \(2%\)/);
  });

  it('patches with the strategic, merge and json patch types', async () => {
    expect((await run('patch', 'pod', 'web', '-p', '{"metadata":{"labels":{"s":"1"}}}')).stdout).toMatch(
      /pod\/web patched/,
    );
    expect(
      (await run('patch', 'pod', 'web', '--type=merge', '-p', '{"metadata":{"labels":{"m":"2"}}}')).stdout,
    ).toMatch(/pod\/web patched/);
    const json = await run(
      'patch',
      'pod',
      'web',
      '--type=json',
      '-p',
      '[{"op":"add","path":"/metadata/labels/j","value":"3"}]',
    );
    expect(json.stdout).toMatch(/pod\/web patched/);
    const labels = (await h.api.get('/api/v1/namespaces/default/pods/web')).body.metadata.labels;
    expect(labels).toMatchObject({ s: '1', m: '2', j: '3', app: 'web' });
    const bad = await run(
      'patch',
      'pod',
      'web',
      '--type=json',
      '-p',
      '[{"op":"remove","path":"/metadata/labels/nope"}]',
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/Unable to remove nonexistent key/);
  });

  it('replaces a pod with kubectl replace (the full object, keys in kubectl order)', async () => {
    const got = await run('get', 'pod', 'web', '-o', 'json');
    const live = JSON.parse(got.stdout);
    live.metadata.labels.replaced = 'yes';
    const file = join(h.dir, 'replace.json');
    writeFileSync(file, JSON.stringify(live));
    const replaced = await run('replace', '-f', file);
    expect(replaced.stderr).toBe('');
    expect(replaced.stdout.trim()).toBe('pod/web replaced');
    expect((await h.api.get('/api/v1/namespaces/default/pods/web')).body.metadata.labels.replaced).toBe(
      'yes',
    );
  });

  it('waits for condition=Ready that the test sets through the status subresource', async () => {
    const waiting = run('wait', '--for=condition=Ready', 'pod/web', '--timeout=20s');
    await sleep(500);
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const res = await h.api.patch('/api/v1/namespaces/default/pods/web/status', 'strategic', {
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }],
      },
    });
    expect(res.status).toBe(200);
    const done = await waiting;
    expect(done.stderr).toBe('');
    expect(done.stdout.trim()).toBe('pod/web condition met');
  });

  it('streams changes with get -w', async () => {
    const w = spawnKubectl(bin, h.kubeconfigPath, ['get', 'pods', '-w']);
    try {
      await w.waitFor((lines) => lines.some((l) => /^web\s/.test(l)));
      const before = w.lines.length;
      await h.api.post('/api/v1/namespaces/default/pods', {
        metadata: { name: 'watched' },
        spec: { containers: [{ name: 'c', image: 'busybox:1.36' }] },
      });
      await w.waitFor((lines) => lines.slice(before).some((l) => /^watched\s+0\/1\s+Pending/.test(l)));
    } finally {
      w.kill();
    }
  });

  it('creates namespaces, configmaps, service accounts and image pull secrets (kubectl 1.33 sends protobuf)', async () => {
    expect((await run('create', 'namespace', 'typed')).stdout.trim()).toBe('namespace/typed created');
    expect((await run('-n', 'typed', 'create', 'configmap', 'cfg', '--from-literal=k=v')).stdout.trim()).toBe(
      'configmap/cfg created',
    );
    expect((await run('-n', 'typed', 'create', 'serviceaccount', 'builder')).stdout.trim()).toBe(
      'serviceaccount/builder created',
    );
    const secret = await run(
      '-n',
      'typed',
      'create',
      'secret',
      'docker-registry',
      'regcred',
      '--docker-server=registry:5000',
      '--docker-username=u',
      '--docker-password=p',
    );
    expect(secret.stderr).toBe('');
    expect(secret.stdout.trim()).toBe('secret/regcred created');
    const stored = (await h.api.get('/api/v1/namespaces/typed/secrets/regcred')).body;
    expect(stored.type).toBe('kubernetes.io/dockerconfigjson');
    const auths = JSON.parse(Buffer.from(stored.data['.dockerconfigjson'], 'base64').toString('utf8')).auths;
    expect(auths['registry:5000']).toMatchObject({ username: 'u', password: 'p' });
    expect((await h.api.get('/api/v1/namespaces/typed/configmaps/cfg')).body.data).toEqual({ k: 'v' });
  });

  it('explains that pod logs and exec need a kubelet endpoint', async () => {
    const logs = await run('logs', 'web');
    expect(logs.code).not.toBe(0);
    expect(logs.stderr).toMatch(/node "node-a" advertises no kubelet endpoint/);
    const exec = await run('exec', 'web', '--', 'true');
    expect(exec.code).not.toBe(0);
    expect(exec.stderr).toMatch(/node "node-a" advertises no kubelet endpoint/);
  });

  it('drains a node through the eviction API, and uncordons it', async () => {
    await h.api.post('/api/v1/nodes', readyNode('node-drain', { labels: { pool: 'drain' } }));
    await h.api.post('/api/v1/namespaces/default/pods', {
      metadata: { name: 'evictee' },
      spec: { nodeSelector: { pool: 'drain' }, containers: [{ name: 'c', image: 'busybox:1.36' }] },
    });
    await eventually(async () =>
      expect((await h.api.get('/api/v1/namespaces/default/pods/evictee')).body.spec.nodeName).toBe(
        'node-drain',
      ),
    );
    const draining = run('drain', 'node-drain', '--force', '--timeout=20s');
    await eventually(async () =>
      expect(
        (await h.api.get('/api/v1/namespaces/default/pods/evictee')).body.metadata.deletionTimestamp,
      ).toBeDefined(),
    );
    await h.api.delete('/api/v1/namespaces/default/pods/evictee?gracePeriodSeconds=0');
    const drained = await draining;
    expect(drained.stdout).toMatch(/pod\/evictee evicted/);
    expect(drained.stdout).toMatch(/node\/node-drain drained/);
    expect((await h.api.get('/api/v1/nodes/node-drain')).body.spec.unschedulable).toBe(true);
    expect((await run('uncordon', 'node-drain')).stdout.trim()).toBe('node/node-drain uncordoned');
    expect((await h.api.get('/api/v1/nodes/node-drain')).body.spec.unschedulable).toBeUndefined();
  });

  it('deletes: a bound pod terminates gracefully until the kubelet deletes it with grace 0', async () => {
    const deleting = run('delete', 'pod', 'web', '--timeout=20s');
    const marked = await eventually(async () => {
      const pod = (await h.api.get('/api/v1/namespaces/default/pods/web')).body;
      expect(pod.metadata.deletionTimestamp).toBeDefined();
      return pod;
    });
    expect(marked.metadata.deletionGracePeriodSeconds).toBe(30);
    const got = await run('get', 'pod', 'web');
    expect(got.stdout).toMatch(/^web\s+\S+\s+Terminating/m);
    // What the kubelet does once the containers are gone.
    const final = await h.api.delete('/api/v1/namespaces/default/pods/web', { gracePeriodSeconds: 0 });
    expect(final.status, final.text).toBe(200);
    const done = await deleting;
    expect(done.stdout.trim()).toBe('pod "web" deleted');
    expect((await h.api.get('/api/v1/namespaces/default/pods/web')).status).toBe(404);
    const missing = await run('get', 'pod', 'web');
    expect(missing.stderr.trim()).toBe('Error from server (NotFound): pods "web" not found');
  });
});
