import { mkdtempSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Image, Pleg, PodLifecycleEvent, RuntimeStatus } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { resolveKubeletConfiguration } from '../src/config/resolve.js';
import { defaultKubeletConfiguration, type KubeletConfiguration } from '../src/config/types.js';
import { Kubelet } from '../src/kubelet.js';
import { NODE_LEASE_NAMESPACE } from '../src/nodelease/controller.js';
import { findCondition } from '../src/nodestatus/conditions.js';
import type { PodSource, PodUpdate, SyncHandler } from '../src/pods/types.js';
import type { NodeRuntime } from '../src/runtime/node_runtime.js';
import { StaticTokenAuthenticator } from '../src/server/auth.js';
import { FakeClock } from '../src/util/clock.js';
import { MemoryNodeApi } from './helpers/memory_api.js';
import { testSnapshot } from './helpers/snapshot.js';

class InMemoryRuntime implements NodeRuntime {
  down = false;
  images: Image[] = [
    { id: 'sha256:p', repoTags: ['kubelet-harness/pause:1'], repoDigests: [], size: 700_000, pinned: true },
  ];
  type() {
    return 'containerd';
  }
  async version() {
    if (this.down) throw new Error('Version: connection refused');
    return '1.6.20';
  }
  async status(): Promise<RuntimeStatus> {
    if (this.down) throw new Error('Status: connection refused');
    return {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: true, reason: '', message: '' },
      ],
    };
  }
  async listImages() {
    if (this.down) throw new Error('ListImages: connection refused');
    return this.images;
  }
}

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise((r) => s.close(r));
  return port;
}

function httpGet(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (c) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    })
      .on('error', reject)
      .end();
  });
}

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
  const config = {
    ...defaultKubeletConfiguration(),
    address: '127.0.0.1',
    port: 0,
    healthzPort: await freePort(),
    ...over,
  };
  const api = new MemoryNodeApi();
  const clock = new FakeClock();
  const runtime = new InMemoryRuntime();
  const kubelet = new Kubelet({
    config,
    resolved: resolveKubeletConfiguration(config),
    identity: {
      nodeName: 'node-a',
      hostname: 'node-a',
      os: 'linux',
      arch: 'amd64',
      nodeLabels: {},
      taints: [],
    },
    nodeIP: '127.0.0.1',
    machineInfo: testSnapshot().machine,
    certDir: join(mkdtempSync(join(tmpdir(), 'kh-kubelet-')), 'pki'),
    runtime,
    api,
    clock,
    authenticator: new StaticTokenAuthenticator({ t: { username: 'admin', groups: [] } }),
    ...extra,
  });
  const abort = new AbortController();
  const running = kubelet.run(abort.signal);
  stops.push(async () => {
    abort.abort();
    await running;
  });
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

describe('Kubelet.snapshot', () => {
  it('reports the runtime version and images, and omits them when the runtime is down', async () => {
    const { kubelet, runtime } = await start();
    const up = await kubelet.snapshot();
    expect(up.runtime).toEqual({ type: 'containerd', version: '1.6.20' });
    runtime.down = true;
    const down = await kubelet.snapshot();
    expect(down.runtime).toBeUndefined();
    expect(down.images).toBeUndefined();
  });
});
