// The runtime class manager against the fake apiserver: the default class, a found handler and
// how long it is reused, a missing class in the kubelet's words (never cached, so it is found once
// it exists), and API failures.
import { FakeClock } from '@kh/apimachinery';
import { NodeV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadKubeConfig } from '../../src/api/node_api.js';
import { KubeRuntimeClassApi, type RuntimeClassApi } from '../../src/runtimeclass/client.js';
import {
  RUNTIME_CLASS_CACHE_TTL_MS,
  RuntimeClassManager,
  RuntimeClassNotFoundError,
} from '../../src/runtimeclass/manager.js';
import { startTestApiServer, type TestApiServer } from '../helpers/apiserver.js';

describe('RuntimeClassManager', () => {
  let apiserver: TestApiServer;
  let api: RuntimeClassApi;
  let admin: NodeV1Api;
  const reads: string[] = [];

  const create = (name: string, handler: string) =>
    admin.createRuntimeClass({ body: { metadata: { name }, handler } });

  beforeAll(async () => {
    apiserver = await startTestApiServer();
    const kubeConfig = loadKubeConfig(apiserver.kubeconfig);
    admin = kubeConfig.makeApiClient(NodeV1Api);
    const real = new KubeRuntimeClassApi(kubeConfig);
    api = {
      getRuntimeHandler: (name) => {
        reads.push(name);
        return real.getRuntimeHandler(name);
      },
    };
  });
  afterAll(async () => {
    await apiserver?.stop();
  });

  it('resolves no class and the empty class to the default handler without asking the API server', async () => {
    const m = new RuntimeClassManager({ api, clock: new FakeClock(0) });
    reads.length = 0;
    expect(await m.lookupRuntimeHandler(undefined)).toBe('');
    expect(await m.lookupRuntimeHandler('')).toBe('');
    expect(reads).toEqual([]);
  });

  it("resolves a class to its handler and reuses the answer until the cache's time is up", async () => {
    await create('gvisor', 'runsc');
    const clock = new FakeClock(0);
    const m = new RuntimeClassManager({ api, clock });
    reads.length = 0;
    expect(await m.lookupRuntimeHandler('gvisor')).toBe('runsc');
    clock.step(RUNTIME_CLASS_CACHE_TTL_MS - 1);
    expect(await m.lookupRuntimeHandler('gvisor')).toBe('runsc');
    expect(reads).toEqual(['gvisor']);
    await admin.deleteRuntimeClass({ name: 'gvisor' });
    clock.step(1);
    await expect(m.lookupRuntimeHandler('gvisor')).rejects.toThrow(
      'runtimeclass.node.k8s.io "gvisor" not found',
    );
    expect(reads).toEqual(['gvisor', 'gvisor']);
  });

  it('fails for a missing class in the kubelet words, and finds the class as soon as it exists', async () => {
    const m = new RuntimeClassManager({ api, clock: new FakeClock(0) });
    const missing = await m.lookupRuntimeHandler('crun').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(RuntimeClassNotFoundError);
    expect((missing as Error).message).toBe('runtimeclass.node.k8s.io "crun" not found');
    await create('crun', 'crun');
    expect(await m.lookupRuntimeHandler('crun')).toBe('crun');
  });

  it('says which class it could not look up when the API server fails', async () => {
    const m = new RuntimeClassManager({
      api: { getRuntimeHandler: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6443')) },
      clock: new FakeClock(0),
    });
    await expect(m.lookupRuntimeHandler('kata')).rejects.toThrow(
      'failed to lookup RuntimeClass kata: connect ECONNREFUSED 127.0.0.1:6443',
    );
  });
});
