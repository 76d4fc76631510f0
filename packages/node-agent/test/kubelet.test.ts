import { FakeClock } from '@kh/apimachinery';
import type { Pleg, PodLifecycleEvent } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { KubeletConfiguration } from '../src/config/types.js';
import { NODE_LEASE_NAMESPACE } from '../src/nodelease/controller.js';
import { findCondition } from '../src/nodestatus/conditions.js';
import type { SyncHandler } from '../src/pods/types.js';
import { StaticTokenAuthenticator } from '../src/server/auth.js';
import type { PodSource, PodUpdate } from '../src/types/pod_update.js';
import { newTestKubelet, runKubelet, StubNodeRuntime } from './helpers/kubelet.js';
import { MemoryNodeApi } from './helpers/memory_api.js';
import { freePort, httpGet } from './helpers/net.js';

const stops: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});

async function start(
  over: Partial<KubeletConfiguration> = {},
  extra: {
    podSources?: PodSource[];
    syncHandler?: SyncHandler;
    pleg?: Pick<Pleg, 'healthy' | 'start' | 'stop' | 'watch'>;
  } = {},
) {
  const api = new MemoryNodeApi();
  const clock = new FakeClock();
  const runtime = new StubNodeRuntime([
    { id: 'sha256:p', repoTags: ['kubelet-harness/pause:1'], repoDigests: [], size: 700_000, pinned: true },
  ]);
  const { kubelet, config } = newTestKubelet(
    'node-a',
    { healthzPort: await freePort(), ...over },
    {
      runtime,
      api,
      clock,
      authenticator: new StaticTokenAuthenticator({ t: { username: 'admin', groups: [] } }),
      ...extra,
    },
  );
  stops.push(runKubelet(kubelet).stop);
  // Let start-up (cert generation, server listen) finish on real I/O before driving the fake clock.
  for (let i = 0; i < 200 && !kubelet.listening.kubelet; i++) await new Promise((r) => setTimeout(r, 5));
  await clock.advance(0);
  return { api, clock, runtime, kubelet, config };
}

describe('Kubelet.run', () => {
  it('registers a Ready node, posts Starting, holds the lease and serves healthz', async () => {
    const { api, kubelet, config } = await start();
    const node = api.nodes.get('node-a');
    expect(findCondition(node!, 'Ready')).toMatchObject({ status: 'True', reason: 'KubeletReady' });
    expect(node?.status?.nodeInfo?.containerRuntimeVersion).toBe('containerd://1.6.20');
    expect(node?.status?.images).toEqual([{ names: ['kubelet-harness/pause:1'], sizeBytes: 700_000 }]);
    expect(node?.status?.daemonEndpoints?.kubeletEndpoint?.Port).toBe(kubelet.listening.kubelet?.port);
    expect(api.leases.get(`${NODE_LEASE_NAMESPACE}/node-a`)?.spec?.holderIdentity).toBe('node-a');
    await kubelet.recorder?.flush();
    expect(api.events.map((e) => e.reason)).toContain('Starting');
    expect(api.events.find((e) => e.reason === 'Starting')?.message).toBe('Starting kubelet.');
    expect(await httpGet(config.healthzPort, '/healthz')).toEqual({ status: 200, body: 'ok' });
  });

  it('goes NotReady with "container runtime is down" and recovers by itself', async () => {
    const { api, clock, runtime } = await start();
    runtime.down = true;
    await clock.advance(35_000);
    let ready = findCondition(api.nodes.get('node-a')!, 'Ready');
    expect(ready).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'container runtime is down',
    });
    // Posted when the runtime check noticed, not at the next 10 s status tick.
    expect(ready?.lastTransitionTime?.getTime()).toBe(clock.now() - 5_000);
    runtime.down = false;
    await clock.advance(5_000);
    ready = findCondition(api.nodes.get('node-a')!, 'Ready');
    expect(ready).toMatchObject({ status: 'True', reason: 'KubeletReady' });
    expect(ready?.lastTransitionTime?.getTime()).toBe(clock.now());
  });

  it('goes NotReady while PLEG is unhealthy', async () => {
    let pleg = { ok: true, message: '' };
    const { api, clock } = await start(
      {},
      { pleg: { healthy: () => pleg, start() {}, stop: async () => {}, watch: () => () => {} } },
    );
    pleg = { ok: false, message: 'pleg was last seen active 3m0s ago; threshold is 3m0s' };
    await clock.advance(5_000);
    expect(findCondition(api.nodes.get('node-a')!, 'Ready')).toMatchObject({
      status: 'False',
      message: 'PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s',
    });
    pleg = { ok: true, message: '' };
    await clock.advance(5_000);
    expect(findCondition(api.nodes.get('node-a')!, 'Ready')?.status).toBe('True');
  });

  it('fails healthz when the sync loop is stuck', async () => {
    const { clock, runtime, config } = await start();
    runtime.down = true; // the loop stops iterating while the runtime is unhealthy
    await clock.advance(6 * 60_000);
    const r = await httpGet(config.healthzPort, '/healthz');
    expect(r.status).toBe(500);
    expect(r.body).toContain('[-]syncloop failed');
  });

  it('dispatches pod updates from sources to the SyncHandler and runs housekeeping', async () => {
    const calls: string[] = [];
    const record =
      (name: string) =>
      async (pods: V1Pod[]): Promise<void> => {
        calls.push(`${name} ${pods.map((p) => p.metadata?.name).join(',')}`);
      };
    const handler: SyncHandler = {
      handlePodAdditions: record('ADD'),
      handlePodUpdates: record('UPDATE'),
      handlePodRemoves: record('REMOVE'),
      handlePodReconcile: record('RECONCILE'),
      handlePodSyncs: record('SYNC'),
      handlePodCleanups: async () => {
        calls.push('HOUSEKEEPING');
      },
      handlePlegEvent: async (_e: PodLifecycleEvent) => {},
      podsToSync: () => [],
    };
    let deliver: ((u: PodUpdate) => void) | undefined;
    const source: PodSource = {
      run: async (signal, d) => {
        deliver = d;
        await new Promise((r) => signal.addEventListener('abort', r, { once: true }));
      },
      ready: () => deliver !== undefined,
    };
    const { clock } = await start({}, { podSources: [source], syncHandler: handler });
    const pod = (name: string): V1Pod => ({ metadata: { name, namespace: 'default', uid: name } });
    deliver?.({ op: 'ADD', pods: [pod('a'), pod('b')], source: 'api' });
    deliver?.({ op: 'UPDATE', pods: [pod('a')], source: 'api' });
    deliver?.({ op: 'REMOVE', pods: [pod('b')], source: 'api' });
    await clock.advance(0);
    expect(calls).toEqual(['ADD a,b', 'UPDATE a', 'REMOVE b']);
    await clock.advance(2_000);
    expect(calls).toContain('HOUSEKEEPING');
  });

  it('stops cleanly on abort and leaves the Node in place', async () => {
    const { api } = await start();
    const stop = stops.pop();
    await stop?.();
    expect(api.nodes.has('node-a')).toBe(true);
  });
});

describe('the node status snapshot', () => {
  it('reports the runtime version and images, and omits them when the runtime is down', async () => {
    const { kubelet, runtime } = await start();
    const up = await kubelet.nodeStatus.snapshot();
    expect(up.runtime).toEqual({ type: 'containerd', version: '1.6.20' });
    runtime.down = true;
    const down = await kubelet.nodeStatus.snapshot();
    expect(down.runtime).toBeUndefined();
    expect(down.images).toBeUndefined();
  });
});
