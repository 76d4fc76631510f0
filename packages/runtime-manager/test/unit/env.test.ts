import type { V1Container, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { SyncStepError } from '../../src/container/sync_result.js';
import { expandVars, makeEnvironmentVariables } from '../../src/kuberuntime/env.js';
import { FakeObjects } from '../fake_objects.js';

const pod = (containers: V1Container[], extra: Partial<V1Pod> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'ns', uid: 'u1', labels: { app: 'web', tier: 'x' } },
  spec: { nodeName: 'node-a', serviceAccountName: 'sa', containers },
  ...extra,
});

async function envs(c: V1Container, objects: FakeObjects | undefined, p = pod([c]), podIPs = ['10.0.0.7']) {
  const out = await makeEnvironmentVariables(p, c, podIPs, objects);
  return Object.fromEntries(out.map((e) => [e.name, e.value]));
}

async function configError(c: V1Container, objects: FakeObjects | undefined): Promise<string> {
  const err = await makeEnvironmentVariables(pod([c]), c, [], objects).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SyncStepError);
  expect((err as SyncStepError).reason).toBe('CreateContainerConfigError');
  return (err as Error).message;
}

const ref = (name: string, valueFrom: V1EnvVar['valueFrom']): V1EnvVar => ({ name, valueFrom });

describe('expandVars', () => {
  it('expands known names, keeps unknown ones and unescapes $$', () => {
    const vars = new Map([['A', 'x']]);
    expect(expandVars('$(A)-$(B)-$$(A)-$$', vars)).toBe('x-$(B)-$(A)-$');
  });
});

describe('makeEnvironmentVariables', () => {
  it('reads envFrom config maps and secrets with their prefix, skipping invalid names', async () => {
    const objects = new FakeObjects()
      .configMap('cm', { A: '1', 'bad=key': 'x', 'bad\tkey': 'x', B: '2' })
      .secret('s', { PASS: 'hunter2' });
    const c: V1Container = {
      name: 'app',
      envFrom: [{ configMapRef: { name: 'cm' } }, { prefix: 'S_', secretRef: { name: 's' } }],
      env: [{ name: 'B', value: 'override $(A)' }],
    };
    expect(await envs(c, objects)).toEqual({ A: '1', B: 'override 1', S_PASS: 'hunter2' });
  });

  it('takes any printable ASCII name but "=" from a prefix and key, as the relaxed validation does', async () => {
    const objects = new FakeObjects().secret('s', { 'data-1': 'value-1' });
    const c: V1Container = {
      name: 'app',
      envFrom: ['', '1-', '$_-', 'ABC_', '#@!'].map((prefix) => ({ prefix, secretRef: { name: 's' } })),
    };
    expect(await envs(c, objects)).toEqual({
      'data-1': 'value-1',
      '1-data-1': 'value-1',
      '$_-data-1': 'value-1',
      'ABC_data-1': 'value-1',
      '#@!data-1': 'value-1',
    });
  });

  it('skips optional sources that do not exist', async () => {
    const c: V1Container = {
      name: 'app',
      envFrom: [{ configMapRef: { name: 'gone', optional: true } }],
      env: [
        ref('K', { configMapKeyRef: { name: 'gone', key: 'k', optional: true } }),
        ref('S', { secretKeyRef: { name: 's', key: 'nope', optional: true } }),
      ],
    };
    expect(await envs(c, new FakeObjects().secret('s', {}))).toEqual({});
  });

  it('fails with the kubelet messages for missing objects and keys', async () => {
    const objects = new FakeObjects().configMap('cm', { a: '1' }).secret('s', { a: '1' });
    const c = (v: V1Container['env'], from?: V1Container['envFrom']): V1Container => ({
      name: 'app',
      env: v,
      ...(from ? { envFrom: from } : {}),
    });
    expect(await configError(c([], [{ configMapRef: { name: 'x' } }]), objects)).toBe(
      'configmap "x" not found',
    );
    expect(await configError(c([], [{ secretRef: { name: 'y' } }]), objects)).toBe('secret "y" not found');
    expect(await configError(c([ref('K', { configMapKeyRef: { name: 'x', key: 'a' } })]), objects)).toBe(
      'configmap "x" not found',
    );
    expect(await configError(c([ref('K', { configMapKeyRef: { name: 'cm', key: 'b' } })]), objects)).toBe(
      "couldn't find key b in ConfigMap ns/cm",
    );
    expect(await configError(c([ref('K', { secretKeyRef: { name: 's', key: 'b' } })]), objects)).toBe(
      "couldn't find key b in Secret ns/s",
    );
    expect(
      await configError(c([ref('K', { configMapKeyRef: { name: 'cm', key: 'a' } })]), undefined),
    ).toMatch(/no API source/);
  });

  it('reads key refs, pod fields and $(VAR) over what came before', async () => {
    const objects = new FakeObjects().configMap('cm', { level: 'debug' }).secret('s', { token: 't0k' });
    const c: V1Container = {
      name: 'app',
      env: [
        ref('LEVEL', { configMapKeyRef: { name: 'cm', key: 'level' } }),
        ref('TOKEN', { secretKeyRef: { name: 's', key: 'token' } }),
        ref('POD_IP', { fieldRef: { fieldPath: 'status.podIP' } }),
        ref('NODE', { fieldRef: { fieldPath: 'spec.nodeName' } }),
        ref('SA', { fieldRef: { fieldPath: 'spec.serviceAccountName' } }),
        ref('APP', { fieldRef: { fieldPath: "metadata.labels['app']" } }),
        ref('NAME', { fieldRef: { fieldPath: 'metadata.name' } }),
        { name: 'URL', value: 'http://$(POD_IP):80/$(LEVEL)/$(MISSING)' },
      ],
    };
    expect(await envs(c, objects)).toEqual({
      LEVEL: 'debug',
      TOKEN: 't0k',
      POD_IP: '10.0.0.7',
      NODE: 'node-a',
      SA: 'sa',
      APP: 'web',
      NAME: 'web',
      URL: 'http://10.0.0.7:80/debug/$(MISSING)',
    });
  });

  it('takes status.hostIP from the pod status, else from the node', async () => {
    const c: V1Container = { name: 'app', env: [ref('HOST', { fieldRef: { fieldPath: 'status.hostIP' } })] };
    const objects = new FakeObjects();
    objects.node = {
      status: {
        addresses: [
          { type: 'Hostname', address: 'node-a' },
          { type: 'InternalIP', address: '172.18.0.2' },
        ],
      },
    };
    expect(await envs(c, objects)).toEqual({ HOST: '172.18.0.2' });
    const posted = pod([c], { status: { hostIP: '172.18.0.9' } });
    expect(await envs(c, objects, posted)).toEqual({ HOST: '172.18.0.9' });
    expect(
      await configError({ name: 'app', env: [ref('X', { fieldRef: { fieldPath: 'spec.bogus' } })] }, objects),
    ).toBe('unsupported fieldRef "spec.bogus"');
  });

  it('reads resources with their divisor, rounding up, and defaults limits to node allocatable', async () => {
    const objects = new FakeObjects();
    objects.node = { status: { allocatable: { cpu: '2', memory: '4Gi' } } };
    const c: V1Container = {
      name: 'app',
      resources: { requests: { cpu: '250m', memory: '33Mi' }, limits: { cpu: '1500m' } },
      env: [
        ref('CPU_LIMIT', { resourceFieldRef: { resource: 'limits.cpu' } }),
        ref('CPU_REQ_M', { resourceFieldRef: { resource: 'requests.cpu', divisor: '1m' } }),
        ref('MEM_REQ_MI', { resourceFieldRef: { resource: 'requests.memory', divisor: '1Mi' } }),
        ref('MEM_REQ_32MI', { resourceFieldRef: { resource: 'requests.memory', divisor: '32Mi' } }),
        ref('MEM_LIMIT', { resourceFieldRef: { resource: 'limits.memory' } }),
        ref('SIDE_CPU', { resourceFieldRef: { containerName: 'side', resource: 'limits.cpu' } }),
        ref('SIDE_HP', { resourceFieldRef: { containerName: 'side', resource: 'requests.hugepages-2Mi' } }),
        // No hugepages limit and none in allocatable: 0, never the node's.
        ref('HP_LIMIT', { resourceFieldRef: { resource: 'limits.hugepages-2Mi' } }),
      ],
    };
    const side: V1Container = {
      name: 'side',
      resources: { limits: { cpu: '3', 'hugepages-2Mi': '4Mi' }, requests: { 'hugepages-2Mi': '4Mi' } },
    };
    expect(await envs(c, objects, pod([c, side]))).toEqual({
      CPU_LIMIT: '2',
      CPU_REQ_M: '250',
      MEM_REQ_MI: '33',
      MEM_REQ_32MI: '2',
      MEM_LIMIT: String(4 * 1024 ** 3),
      SIDE_CPU: '3',
      SIDE_HP: String(4 * 1024 ** 2),
      HP_LIMIT: '0',
    });
  });
});
