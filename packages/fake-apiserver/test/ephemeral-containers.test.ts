import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiServer, type UserInfo } from '../src/index.js';
import type { KObject } from '../src/meta/object.js';
import { ApiClient, type Harness, KUBECTL, kubectl, pod, startHarness } from './helpers.js';

const NS = '/api/v1/namespaces/default/pods';
const debuggerC = (name = 'debugger', extra: KObject = {}) => ({
  name,
  image: 'busybox:1.36',
  command: ['sh', '-c', 'sleep 3600'],
  ...extra,
});

describe('pods/ephemeralcontainers', () => {
  let h: Harness;
  const create = async (name: string, spec: KObject = {}) => {
    const res = await h.api.post(NS, pod(name, { nodeName: 'node-a', ...spec }));
    expect(res.status).toBe(201);
    return res.body;
  };
  const sub = (name: string) => `${NS}/${name}/ephemeralcontainers`;
  const addSmp = (name: string, ...ecs: KObject[]) =>
    h.api.patch(sub(name), 'strategic', { spec: { ephemeralContainers: ecs } });

  beforeAll(async () => {
    h = await startHarness({ scheduler: false, nodeLifecycle: false });
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('is listed in discovery and OpenAPI with get, patch and update', async () => {
    const list = (await h.api.get('/api/v1')).body;
    const r = list.resources.find((x: KObject) => x.name === 'pods/ephemeralcontainers');
    expect(r).toMatchObject({ kind: 'Pod', namespaced: true, verbs: ['get', 'patch', 'update'] });
    const v3 = (await h.api.get('/openapi/v3/api/v1')).body;
    const path = v3.paths['/api/v1/namespaces/{namespace}/pods/{name}/ephemeralcontainers'];
    expect(Object.keys(path).sort()).toEqual(['get', 'patch', 'put']);
  });

  it('adds by strategic merge patch, defaulted, bumping the generation; GET of the subresource is the pod', async () => {
    const before = await create('smp');
    expect(before.metadata.generation).toBe(1);
    const res = await addSmp('smp', debuggerC('debugger', { stdin: true, tty: true }));
    expect(res.status).toBe(200);
    expect(res.body.kind).toBe('Pod');
    expect(res.body.metadata.generation).toBe(2);
    expect(res.body.spec.ephemeralContainers).toEqual([
      {
        ...debuggerC('debugger', { stdin: true, tty: true }),
        imagePullPolicy: 'IfNotPresent',
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
        resources: {},
      },
    ]);
    const got = await h.api.get(sub('smp'));
    expect(got.status).toBe(200);
    expect(got.body.spec.ephemeralContainers).toHaveLength(1);
    expect(got.body.metadata.resourceVersion).toBe(res.body.metadata.resourceVersion);
    // A second container is merged in by name (the list's patch key).
    const second = await addSmp('smp', debuggerC('debugger2'));
    expect(second.body.spec.ephemeralContainers.map((c: KObject) => c.name)).toEqual([
      'debugger',
      'debugger2',
    ]);
    expect(second.body.metadata.generation).toBe(3);
  });

  it('adds by PUT (the update verb), JSON patch and merge patch, and drops any other change', async () => {
    const p = await create('forms');
    p.spec.ephemeralContainers = [debuggerC('e1')];
    p.spec.containers[0].image = 'busybox:9.9';
    p.metadata.labels = { dropped: 'yes' };
    const put = await h.api.put(sub('forms'), p);
    expect(put.status).toBe(200);
    expect(put.body.spec.ephemeralContainers.map((c: KObject) => c.name)).toEqual(['e1']);
    expect(put.body.spec.containers[0].image).toBe('busybox:1.36');
    expect(put.body.metadata.labels).toBeUndefined();
    const json = await h.api.patch(sub('forms'), 'json', [
      { op: 'add', path: '/spec/ephemeralContainers/-', value: debuggerC('e2') },
    ]);
    expect(json.status).toBe(200);
    const merged = [...json.body.spec.ephemeralContainers, debuggerC('e3')];
    const merge = await h.api.patch(sub('forms'), 'merge', { spec: { ephemeralContainers: merged } });
    expect(merge.status).toBe(200);
    expect(merge.body.spec.ephemeralContainers.map((c: KObject) => c.name)).toEqual(['e1', 'e2', 'e3']);
    // A stale resourceVersion is a conflict, as on any update.
    const stale = await h.api.put(sub('forms'), { ...put.body, spec: { ...put.body.spec } });
    expect(stale.status).toBe(409);
  });

  it('never lets one be changed or removed (422 Forbidden on spec.ephemeralContainers)', async () => {
    await create('immutable');
    await addSmp('immutable', debuggerC('keep'));
    const changed = await h.api.patch(sub('immutable'), 'json', [
      { op: 'replace', path: '/spec/ephemeralContainers/0/image', value: 'busybox:9.9' },
    ]);
    expect(changed.status).toBe(422);
    expect(changed.body.reason).toBe('Invalid');
    expect(changed.body.message).toBe(
      'Pod "immutable" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers "keep" may not be changed\n',
    );
    expect(changed.body.details.causes[0]).toMatchObject({
      reason: 'FieldValueForbidden',
      field: 'spec.ephemeralContainers',
    });
    const removed = await h.api.patch(sub('immutable'), 'merge', { spec: { ephemeralContainers: [] } });
    expect(removed.status).toBe(422);
    expect(removed.body.message).toContain('existing ephemeral containers "keep" may not be removed');
  });

  it('refuses duplicate names, unknown targets, ports, probes, resources, lifecycle and subPath', async () => {
    await create('invalid', {
      volumes: [{ name: 'v', emptyDir: {} }],
      initContainers: [{ name: 'init', image: 'busybox:1.36' }],
    });
    const res = await addSmp(
      'invalid',
      debuggerC('c'),
      debuggerC('init'),
      debuggerC('ok', { targetContainerName: 'nope' }),
      debuggerC('ports', { ports: [{ containerPort: 80 }] }),
      debuggerC('probe', { readinessProbe: { exec: { command: ['true'] } } }),
      debuggerC('res', { resources: { limits: { cpu: '1' } } }),
      debuggerC('hook', { lifecycle: { postStart: { exec: { command: ['true'] } } } }),
      debuggerC('sub', { volumeMounts: [{ name: 'v', mountPath: '/v', subPath: 'x' }] }),
      debuggerC('Bad_Name'),
    );
    expect(res.status).toBe(422);
    const causes = res.body.details.causes.map((c: KObject) => `${c.field}: ${c.reason}`);
    expect(causes).toEqual(
      expect.arrayContaining([
        'spec.ephemeralContainers[0].name: FieldValueDuplicate',
        'spec.ephemeralContainers[1].name: FieldValueDuplicate',
        'spec.ephemeralContainers[2].targetContainerName: FieldValueNotFound',
        'spec.ephemeralContainers[3].ports: FieldValueForbidden',
        'spec.ephemeralContainers[4].readinessProbe: FieldValueForbidden',
        'spec.ephemeralContainers[5].resources: FieldValueForbidden',
        'spec.ephemeralContainers[6].lifecycle: FieldValueForbidden',
        'spec.ephemeralContainers[7].volumeMounts[0].subPath: FieldValueForbidden',
        'spec.ephemeralContainers[8].name: FieldValueInvalid',
      ]),
    );
    expect(res.body.message).toContain(
      'spec.ephemeralContainers[3].ports: Forbidden: cannot be set for an Ephemeral Container',
    );
    // An init container is a valid target.
    expect((await addSmp('invalid', debuggerC('t', { targetContainerName: 'init' }))).status).toBe(200);
  });

  it('is not set on create, nor changed by a pod update; static pods have none', async () => {
    const created = await h.api.post(NS, pod('on-create', { ephemeralContainers: [debuggerC()] }));
    expect(created.status).toBe(422);
    expect(created.body.message).toContain('spec.ephemeralContainers: Forbidden: cannot be set on create');
    const p = await create('update');
    const updated = await h.api.patch(`${NS}/update`, 'strategic', {
      spec: { ephemeralContainers: [debuggerC()] },
    });
    expect(updated.status).toBe(422);
    expect(updated.body.message).toContain('spec: Forbidden: pod updates may not change fields');
    expect((await h.api.get(`${NS}/update`)).body.metadata.resourceVersion).toBe(p.metadata.resourceVersion);
    await h.api.post(
      NS,
      pod('static', { nodeName: 'node-a' }, { annotations: { 'kubernetes.io/config.mirror': 'hash' } }),
    );
    const mirror = await addSmp('static', debuggerC());
    expect(mirror.status).toBe(422);
    // The path is the empty one, which Go's field errors print as such.
    expect(mirror.body.message).toBe(
      'Pod "static" is invalid: : Forbidden: static pods do not support ephemeral containers',
    );
  });

  it('is judged by PodSecurity as pods are: baseline refuses a privileged debugger', async () => {
    const ns = { metadata: { name: 'psa-ec', labels: { 'pod-security.kubernetes.io/enforce': 'baseline' } } };
    expect((await h.api.post('/api/v1/namespaces', ns)).status).toBe(201);
    const pods = '/api/v1/namespaces/psa-ec/pods';
    expect((await h.api.post(pods, pod('p', { nodeName: 'node-a' }))).status).toBe(201);
    const privileged = debuggerC('root', { securityContext: { privileged: true } });
    const res = await h.api.patch(`${pods}/p/ephemeralcontainers`, 'strategic', {
      spec: { ephemeralContainers: [privileged] },
    });
    expect(res.status).toBe(403);
    expect(res.body.message).toBe(
      'pods "p" is forbidden: violates PodSecurity "baseline:latest": privileged (container "root" must not set securityContext.privileged=true)',
    );
    const plain = await h.api.patch(`${pods}/p/ephemeralcontainers`, 'strategic', {
      spec: { ephemeralContainers: [debuggerC('plain')] },
    });
    expect(plain.status).toBe(200);
  });

  it.each([
    ['1.27', KUBECTL.oldest],
    ['1.33', KUBECTL.newest],
  ])('kubectl %s debug --target adds an ephemeral container', async (_v, bin) => {
    const name = `kdebug-${_v.replace('.', '')}`;
    await create(name);
    const out = await kubectl(bin, h.kubeconfigPath, [
      'debug',
      name,
      '--image=busybox:1.36',
      '--target=c',
      '-c',
      'dbg',
      '--',
      'sleep',
      '60',
    ]);
    expect(out.code).toBe(0);
    expect(out.stdout + out.stderr).toContain('Targeting container "c"');
    const ecs = (await h.api.get(`${NS}/${name}`)).body.spec.ephemeralContainers;
    expect(ecs).toHaveLength(1);
    expect(ecs[0]).toMatchObject({ name: 'dbg', image: 'busybox:1.36', targetContainerName: 'c' });
  });
});

describe('pods/ephemeralcontainers under Node,RBAC', () => {
  it('a node may not write them; an admin may', async () => {
    const users: Record<string, UserInfo> = {
      admin: { name: 'admin', uid: 'a', groups: ['system:masters'] },
      n1: { name: 'system:node:n1', uid: 'n', groups: ['system:nodes'] },
    };
    const s = await createApiServer({
      tls: true,
      tokens: new Map(Object.entries(users)),
      authorizationMode: ['Node', 'RBAC'],
      scheduler: false,
      nodeLifecycle: false,
    });
    try {
      const admin = new ApiClient(s.url, { token: 'admin', ca: s.caPem });
      const node = new ApiClient(s.url, { token: 'n1', ca: s.caPem });
      expect((await admin.post(NS, pod('p', { nodeName: 'n1' }))).status).toBe(201);
      const body = { spec: { ephemeralContainers: [debuggerC()] } };
      const denied = await node.patch(`${NS}/p/ephemeralcontainers`, 'strategic', body);
      expect(denied.status).toBe(403);
      expect(denied.body.message).toContain('cannot patch resource "pods/ephemeralcontainers"');
      expect((await admin.patch(`${NS}/p/ephemeralcontainers`, 'strategic', body)).status).toBe(200);
    } finally {
      await s.close();
    }
  });
});
