// The Lease is what keeps a Node alive between status reports: with the fake apiserver's node
// lifecycle controller watching (short grace period), the Node stays Ready while the agent
// renews its Lease even though status is not re-posted, and turns Unknown once the agent stops.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ApiServer, createApiServer } from '@kh/fake-apiserver';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { KubeNodeApi, loadKubeConfig } from '../src/api/node_api.js';
import { resolveKubeletConfiguration } from '../src/config/resolve.js';
import { defaultKubeletConfiguration } from '../src/config/types.js';
import { Kubelet } from '../src/kubelet.js';
import { findCondition } from '../src/nodestatus/conditions.js';
import { waitForNodeReady } from './helpers/kubectl.js';
import { testSnapshot } from './helpers/snapshot.js';

let server: ApiServer;
let kubeconfig: string;
const dir = mkdtempSync(join(tmpdir(), 'kh-lease-'));

beforeAll(async () => {
  server = await createApiServer({
    port: 0,
    tls: true,
    tokens: { t: 'admin' },
    scheduler: false,
    leaseGraceSeconds: 3,
    nodeMonitorPeriodSeconds: 1,
  });
  kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, server.kubeconfig());
});
afterAll(() => server?.close());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('a renewed Lease keeps the Node Ready; a stopped agent lets it go Unknown', async () => {
  // Status every 10 s, reported every 5 m: only the Lease (renewed each 0.5 s) shows liveness.
  const config = {
    ...defaultKubeletConfiguration(),
    address: '127.0.0.1',
    port: 0,
    healthzPort: 0,
    nodeLeaseDurationSeconds: 2,
  };
  const api = new KubeNodeApi(loadKubeConfig(kubeconfig));
  const runtime = {
    type: () => 'containerd',
    version: async () => '1.6.20',
    status: async () => ({
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        { type: 'NetworkReady', status: true, reason: '', message: '' },
      ],
    }),
    listImages: async () => [],
  };
  const kubelet = new Kubelet({
    config,
    resolved: resolveKubeletConfiguration(config),
    identity: {
      nodeName: 'lease-node',
      hostname: 'lease-node',
      os: 'linux',
      arch: 'amd64',
      nodeLabels: {},
      taints: [],
    },
    nodeIP: '127.0.0.1',
    machineInfo: testSnapshot().machine,
    certDir: join(dir, 'pki'),
    runtime,
    api,
  });
  const abort = new AbortController();
  const running = kubelet.run(abort.signal);
  try {
    expect(await waitForNodeReady(kubeconfig, 'lease-node')).toContain('condition met');
    await sleep(5_000); // longer than the 3 s grace period
    const alive = await api.getNode('lease-node');
    expect(findCondition(alive!, 'Ready')?.status).toBe('True');
    expect(alive?.spec?.taints ?? []).toEqual([]);
  } finally {
    abort.abort();
    await running;
  }
  let ready: string | undefined;
  for (let i = 0; i < 100 && ready !== 'Unknown'; i++) {
    await sleep(100);
    ready = findCondition((await api.getNode('lease-node'))!, 'Ready')?.status;
  }
  expect(ready).toBe('Unknown');
}, 40_000);
