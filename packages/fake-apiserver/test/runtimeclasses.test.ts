import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiServer, createApiServer, type UserInfo } from '../src/index.js';
import { ApiClient, KUBECTL, kubectl } from './helpers.js';

const USERS: Record<string, UserInfo> = {
  'admin-token': { name: 'admin', uid: 'u-admin', groups: ['system:masters'] },
  'node-token': { name: 'system:node:n1', uid: 'u-n1', groups: ['system:nodes'] },
};
const RUNTIMECLASSES = '/apis/node.k8s.io/v1/runtimeclasses';

const runtimeClass = (name: string, handler: unknown, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name },
  handler,
  ...extra,
});

describe('node.k8s.io/v1 RuntimeClass', () => {
  let s: ApiServer;
  const dir = mkdtempSync(join(tmpdir(), 'kh-apiserver-runtimeclass-'));
  const client = (token: string) => new ApiClient(s.url, { token, ca: s.caPem });
  const admin = () => client('admin-token');
  const kubeconfig = (token: string) => {
    const path = join(dir, `${token}.kubeconfig`);
    writeFileSync(path, s.kubeconfig({ token }));
    return path;
  };
  const run = (...args: string[]) => kubectl(KUBECTL.newest, kubeconfig('admin-token'), args);

  beforeAll(async () => {
    s = await createApiServer({
      tls: true,
      tokens: new Map(Object.entries(USERS)),
      authorizationMode: 'RBAC',
      scheduler: false,
      nodeLifecycle: false,
    });
  });
  afterAll(async () => {
    await s?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('is served cluster-scoped in discovery, with kubectl api-resources listing it', async () => {
    const list = (await admin().get('/apis/node.k8s.io/v1')).body;
    expect(list.resources).toContainEqual(
      expect.objectContaining({ name: 'runtimeclasses', kind: 'RuntimeClass', namespaced: false }),
    );
    const resources = await run('api-resources', '--api-group', 'node.k8s.io');
    expect(resources.stderr).toBe('');
    expect(resources.stdout).toMatch(/^runtimeclasses\s+node\.k8s\.io\/v1\s+false\s+RuntimeClass$/m);
  });

  it('applies with kubectl and prints NAME HANDLER AGE', async () => {
    const file = join(dir, 'rc.yaml');
    writeFileSync(
      file,
      `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: gvisor
handler: runsc
overhead:
  podFixed: {memory: 64Mi, cpu: 250m}
scheduling:
  nodeSelector: {kh.io/sandboxed: "true"}
  tolerations:
  - {key: sandboxed, operator: Exists, effect: NoSchedule}
`,
    );
    const applied = await run('apply', '-f', file);
    expect(applied.stderr).toBe('');
    expect(applied.stdout.trim()).toBe('runtimeclass.node.k8s.io/gvisor created');
    const got = await run('get', 'runtimeclass');
    expect(got.stderr).toBe('');
    expect(got.stdout).toMatch(/^NAME\s+HANDLER\s+AGE$/m);
    expect(got.stdout).toMatch(/^gvisor\s+runsc\s+\d+s$/m);
    const stored = (await admin().get(`${RUNTIMECLASSES}/gvisor`)).body;
    expect(stored.overhead).toEqual({ podFixed: { memory: '64Mi', cpu: '250m' } });
    expect(stored.metadata.namespace).toBeUndefined();
  });

  it('requires a handler that is a DNS-1123 label', async () => {
    const missing = await admin().post(RUNTIMECLASSES, runtimeClass('no-handler', undefined));
    expect(missing.status).toBe(422);
    expect(missing.body.details.causes).toEqual([
      expect.objectContaining({ reason: 'FieldValueRequired', field: 'handler' }),
    ]);
    const bad = await admin().post(RUNTIMECLASSES, runtimeClass('bad-handler', 'Run_SC'));
    expect(bad.status).toBe(422);
    expect(bad.body.details.causes).toEqual([
      expect.objectContaining({ reason: 'FieldValueInvalid', field: 'handler' }),
    ]);
    expect(bad.body.message).toContain('"bad-handler" is invalid: handler: Invalid value: "Run_SC"');
  });

  it('validates overhead quantities and the scheduling node selector and tolerations', async () => {
    const reply = await admin().post(
      RUNTIMECLASSES,
      runtimeClass('bad-extras', 'crun', {
        overhead: { podFixed: { cpu: '-1', memory: 'lots' } },
        scheduling: {
          nodeSelector: { 'bad key!': 'x' },
          tolerations: [{ key: 'k', operator: 'Sometimes' }],
        },
      }),
    );
    expect(reply.status).toBe(422);
    expect(reply.body.details.causes.map((c: { field: string }) => c.field)).toEqual([
      'overhead.podFixed[cpu]',
      'overhead.podFixed[memory]',
      'scheduling.nodeSelector',
      'scheduling.tolerations[0].operator',
    ]);
  });

  it('keeps the handler immutable while other fields may change', async () => {
    expect((await admin().post(RUNTIMECLASSES, runtimeClass('crun', 'crun'))).status).toBe(201);
    const changed = await admin().patch(`${RUNTIMECLASSES}/crun`, 'merge', { handler: 'runc' });
    expect(changed.status).toBe(422);
    expect(changed.body.details.causes).toEqual([
      expect.objectContaining({
        reason: 'FieldValueInvalid',
        field: 'handler',
        message: expect.stringContaining('field is immutable'),
      }),
    ]);
    const labelled = await admin().patch(`${RUNTIMECLASSES}/crun`, 'merge', {
      metadata: { labels: { a: 'b' } },
    });
    expect(labelled.status).toBe(200);
    expect(labelled.body.handler).toBe('crun');
  });

  it('lets a node get, list and watch RuntimeClasses through the system:node role, and nothing more', async () => {
    // Bound here as RBAC alone would: the bootstrap system:node binding leaves subjects to the Node authorizer.
    const binding = await admin().post('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      metadata: { name: 'nodes-read-runtimeclasses' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:node' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'system:nodes' }],
    });
    expect(binding.status).toBe(201);
    const node = client('node-token');
    expect((await node.get(`${RUNTIMECLASSES}/gvisor`)).body.handler).toBe('runsc');
    const list = await node.get(RUNTIMECLASSES);
    expect(list.status).toBe(200);
    const rv = list.body.metadata.resourceVersion;
    const watched = node.watch(`${RUNTIMECLASSES}?watch=1&resourceVersion=${rv}`, (evs) => evs.length > 0);
    expect((await admin().post(RUNTIMECLASSES, runtimeClass('kata', 'kata'))).status).toBe(201);
    expect((await watched).map((e) => [e.type, e.object.metadata.name])).toEqual([['ADDED', 'kata']]);
    const create = await node.post(RUNTIMECLASSES, runtimeClass('mine', 'mine'));
    expect(create.status).toBe(403);
    const canI = await kubectl(KUBECTL.newest, kubeconfig('node-token'), [
      'auth',
      'can-i',
      'delete',
      'runtimeclasses',
    ]);
    expect(canI.stdout.trim()).toBe('no');
  });

  it('lets a node read RuntimeClasses under --authorization-mode Node,RBAC, with no binding of its own', async () => {
    const nodeMode = await createApiServer({
      tls: true,
      tokens: new Map(Object.entries(USERS)),
      authorizationMode: ['Node', 'RBAC'],
      scheduler: false,
      nodeLifecycle: false,
    });
    try {
      const as = (token: string) => new ApiClient(nodeMode.url, { token, ca: nodeMode.caPem });
      expect((await as('admin-token').post(RUNTIMECLASSES, runtimeClass('crun', 'crun'))).status).toBe(201);
      expect((await as('node-token').get(`${RUNTIMECLASSES}/crun`)).body.handler).toBe('crun');
      expect((await as('node-token').get(RUNTIMECLASSES)).status).toBe(200);
      expect((await as('node-token').delete(`${RUNTIMECLASSES}/crun`)).status).toBe(403);
    } finally {
      await nodeMode.close();
    }
  });
});
