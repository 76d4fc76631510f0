import { KubeConfig, SchedulingV1Api, type V1PriorityClass, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SYSTEM_PRIORITY_CLASSES } from '../src/registry/priorityclasses.js';
import { eventually, type Harness, KUBECTL, kubectl, priorityClass, startHarness } from './helpers.js';

const PCS = '/apis/scheduling.k8s.io/v1/priorityclasses';

describe('scheduling.k8s.io/v1 PriorityClass', () => {
  let h: Harness;
  let scheduling: SchedulingV1Api;
  const run = (...args: string[]) => kubectl(KUBECTL.newest, h.kubeconfigPath, args);

  beforeAll(async () => {
    h = await startHarness({ scheduler: false, nodeLifecycle: false });
    const kc = new KubeConfig();
    kc.loadFromString(h.server.kubeconfig());
    scheduling = kc.makeApiClient(SchedulingV1Api);
  });
  afterAll(() => h?.stop());

  it('starts with the two built-in classes, as kube-apiserver bootstraps them', async () => {
    const list = (await h.api.get(PCS)).body;
    expect(list.kind).toBe('PriorityClassList');
    const byName = Object.fromEntries(list.items.map((pc: V1PriorityClass) => [pc.metadata?.name, pc]));
    expect(byName['system-node-critical']).toMatchObject({
      value: 2000001000,
      preemptionPolicy: 'PreemptLowerPriority',
      description: 'Used for system critical pods that must not be moved from their current node.',
      metadata: { generation: 1 },
    });
    expect(byName['system-cluster-critical']).toMatchObject({
      value: 2000000000,
      preemptionPolicy: 'PreemptLowerPriority',
    });
    expect(byName['system-node-critical'].globalDefault).toBeUndefined();
  });

  it('is served cluster-scoped with short name pc, in discovery and OpenAPI', async () => {
    const group = (await h.api.get('/apis/scheduling.k8s.io/v1')).body;
    expect(group.resources).toContainEqual(
      expect.objectContaining({
        name: 'priorityclasses',
        kind: 'PriorityClass',
        namespaced: false,
        shortNames: ['pc'],
      }),
    );
    const resources = await run('api-resources', '--api-group', 'scheduling.k8s.io');
    expect(resources.stderr).toBe('');
    expect(resources.stdout).toMatch(
      /^priorityclasses\s+pc\s+scheduling\.k8s\.io\/v1\s+false\s+PriorityClass$/m,
    );
    const v3 = (await h.api.get('/openapi/v3/apis/scheduling.k8s.io/v1')).body;
    expect(v3.components.schemas['io.k8s.api.scheduling.v1.PriorityClass'].properties.value).toMatchObject({
      type: 'integer',
      format: 'int32',
    });
  });

  it.each([
    ['1.27', KUBECTL.oldest],
    ['1.33', KUBECTL.newest],
  ])('kubectl %s: create priorityclass, get pc with its columns, describe', async (version, bin) => {
    const name = `batch-low-${version.replace('.', '-')}`;
    const cli = (...args: string[]) => kubectl(bin, h.kubeconfigPath, args);
    const created = await cli(
      'create',
      'priorityclass',
      name,
      '--value=-10',
      '--description=batch work',
      '--preemption-policy=Never',
    );
    expect(created.stderr).toBe('');
    expect(created.stdout.trim()).toBe(`priorityclass.scheduling.k8s.io/${name} created`);
    const got = await cli('get', 'pc');
    expect(got.stderr).toBe('');
    expect(got.stdout).toMatch(/^NAME\s+VALUE\s+GLOBAL-DEFAULT\s+AGE\s+PREEMPTIONPOLICY$/m);
    expect(got.stdout).toMatch(new RegExp(`^${name}\\s+-10\\s+false\\s+\\S+\\s+Never$`, 'm'));
    expect(got.stdout).toMatch(/^system-node-critical\s+2000001000\s+false\s+\S+\s+PreemptLowerPriority$/m);
    const described = await cli('describe', 'priorityclass', name);
    expect(described.stderr).toBe('');
    expect(described.stdout).toMatch(new RegExp(`^Name:\\s+${name}$`, 'm'));
    expect(described.stdout).toMatch(/^Value:\s+-10$/m);
    expect(described.stdout).toMatch(/^GlobalDefault:\s+false$/m);
    expect(described.stdout).toMatch(/^PreemptionPolicy:\s+Never$/m);
    expect(described.stdout).toMatch(/^Description:\s+batch work$/m);
  });

  it('@kubernetes/client-node SchedulingV1Api: create, read, list, patch, watch, delete', async () => {
    const events: string[] = [];
    const kc = new KubeConfig();
    kc.loadFromString(h.server.kubeconfig());
    const req = await new Watch(kc).watch(
      PCS,
      {},
      (type, obj: V1PriorityClass) => {
        if (obj.metadata?.name === 'web') events.push(type);
      },
      () => {},
    );
    try {
      const made = await scheduling.createPriorityClass({
        body: { metadata: { name: 'web' }, value: 1000, description: 'frontends' },
      });
      expect(made.preemptionPolicy).toBe('PreemptLowerPriority');
      expect((await scheduling.readPriorityClass({ name: 'web' })).value).toBe(1000);
      const names = (await scheduling.listPriorityClass()).items.map((pc) => pc.metadata?.name);
      expect(names).toEqual(
        expect.arrayContaining(['web', 'system-node-critical', 'system-cluster-critical']),
      );
      const patched = await scheduling.patchPriorityClass({
        name: 'web',
        body: [{ op: 'add', path: '/description', value: 'edge' }],
      });
      expect(patched.description).toBe('edge');
      await scheduling.deletePriorityClass({ name: 'web' });
      await eventually(() => expect(events).toEqual(['ADDED', 'MODIFIED', 'DELETED']));
    } finally {
      req.abort();
    }
  });

  it('refuses what kube-apiserver validation refuses, as 422 Invalid', async () => {
    const cases: [unknown, string][] = [
      [
        priorityClass('too-high', 1_000_000_001),
        'PriorityClass.scheduling.k8s.io "too-high" is invalid: value: Forbidden: maximum allowed value of a user defined priority is 1000000000',
      ],
      [
        priorityClass('system-mine', 5),
        'PriorityClass.scheduling.k8s.io "system-mine" is invalid: metadata.name: Forbidden: priority class names with \'system-\' prefix are reserved for system use only. error: system-mine is not a known system priority class',
      ],
      [
        priorityClass('Bad_Name', 5),
        'PriorityClass.scheduling.k8s.io "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain',
      ],
      [
        priorityClass('odd-policy', 5, { preemptionPolicy: 'Sometimes' }),
        'PriorityClass.scheduling.k8s.io "odd-policy" is invalid: preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never"',
      ],
    ];
    for (const [body, message] of cases) {
      const r = await h.api.post(PCS, body);
      expect(r.status).toBe(422);
      expect(r.body).toMatchObject({ kind: 'Status', reason: 'Invalid' });
      expect(r.body.message.startsWith(message)).toBe(true);
    }
    // The built-ins' own name and value pass validation: only existing makes it a conflict.
    const again = await h.api.post(PCS, SYSTEM_PRIORITY_CLASSES[0]);
    expect(again.status).toBe(409);
    const wrongValue = await h.api.post(PCS, priorityClass('system-cluster-critical', 7));
    expect(wrongValue.status).toBe(422);
    expect(wrongValue.body.message).toContain(
      'error: value of system-cluster-critical PriorityClass must be 2000000000',
    );
  });

  it('keeps value and preemptionPolicy immutable; description and globalDefault may change', async () => {
    expect((await h.api.post(PCS, priorityClass('fixed', 50))).status).toBe(201);
    const value = await h.api.patch(`${PCS}/fixed`, 'merge', { value: 51 });
    expect(value.status).toBe(422);
    expect(value.body.message).toBe(
      'PriorityClass.scheduling.k8s.io "fixed" is invalid: value: Forbidden: may not be changed in an update.',
    );
    const policy = await h.api.patch(`${PCS}/fixed`, 'merge', { preemptionPolicy: 'Never' });
    expect(policy.status).toBe(422);
    expect(policy.body.message).toBe(
      'PriorityClass.scheduling.k8s.io "fixed" is invalid: preemptionPolicy: Invalid value: "Never": field is immutable',
    );
    const described = await h.api.patch(`${PCS}/fixed`, 'merge', { description: 'now described' });
    expect(described.status).toBe(200);
    expect(described.body).toMatchObject({ value: 50, metadata: { generation: 1 } });
    expect((await h.api.delete(`${PCS}/fixed`)).status).toBe(200);
  });

  it('lets only one class be the global default (Priority admission, 403)', async () => {
    expect((await h.api.post(PCS, priorityClass('default-a', 100, { globalDefault: true }))).status).toBe(
      201,
    );
    const second = await h.api.post(PCS, priorityClass('default-b', 200, { globalDefault: true }));
    expect(second.status).toBe(403);
    expect(second.body.message).toBe(
      'priorityclasses.scheduling.k8s.io "default-b" is forbidden: PriorityClass default-a is already marked as default. Only one default can exist',
    );
    expect((await h.api.post(PCS, priorityClass('default-b', 200))).status).toBe(201);
    const promote = await h.api.patch(`${PCS}/default-b`, 'merge', { globalDefault: true });
    expect(promote.status).toBe(403);
    // The default itself may be updated while it stays the default.
    const same = await h.api.patch(`${PCS}/default-a`, 'merge', { description: 'still default' });
    expect(same.status).toBe(200);
    for (const name of ['default-a', 'default-b'])
      expect((await h.api.delete(`${PCS}/${name}`)).status).toBe(200);
  });

  it('never deletes a built-in class (403)', async () => {
    for (const pc of SYSTEM_PRIORITY_CLASSES) {
      const r = await h.api.delete(`${PCS}/${pc.metadata.name}`);
      expect(r.status).toBe(403);
      expect(r.body.message).toBe(
        `priorityclasses.scheduling.k8s.io "${pc.metadata.name}" is forbidden: this is a system priority class and cannot be deleted`,
      );
    }
    // Updates are checked for what may not change only, built-ins included.
    const described = await h.api.patch(`${PCS}/system-node-critical`, 'merge', { description: 'ours' });
    expect(described.status).toBe(200);
    expect(described.body).toMatchObject({ description: 'ours', value: 2000001000 });
    const kept = await run('delete', 'pc', 'system-node-critical');
    expect(kept.stderr).toContain('this is a system priority class and cannot be deleted');
    expect((await h.api.get(`${PCS}/system-node-critical`)).status).toBe(200);
  });
});
