// The Lease is what keeps a Node alive between status reports: with the fake apiserver's node
// lifecycle controller watching (short grace period), the Node stays Ready while the agent
// renews its Lease even though status is not re-posted, and turns Unknown once the agent stops.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { findCondition } from '../src/nodestatus/conditions.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { waitForNodeReady } from './helpers/kubectl.js';
import { newTestKubelet, runKubelet } from './helpers/kubelet.js';

let apiserver: TestApiServer;

beforeAll(async () => {
  apiserver = await startTestApiServer({
    nodeLifecycle: true,
    leaseGraceSeconds: 3,
    nodeMonitorPeriodSeconds: 1,
  });
});
afterAll(() => apiserver?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('a renewed Lease keeps the Node Ready; a stopped agent lets it go Unknown', async () => {
  // Status every 10 s, reported every 5 m: only the Lease (renewed each 0.5 s) shows liveness.
  const { api, kubeconfig } = apiserver;
  const { kubelet } = newTestKubelet('lease-node', { nodeLeaseDurationSeconds: 2 }, { api });
  const agent = runKubelet(kubelet);
  try {
    expect(await waitForNodeReady(kubeconfig, 'lease-node')).toContain('condition met');
    await sleep(5_000); // longer than the 3 s grace period
    const alive = await api.getNode('lease-node');
    expect(findCondition(alive!, 'Ready')?.status).toBe('True');
    expect(alive?.spec?.taints ?? []).toEqual([]);
  } finally {
    await agent.stop();
  }
  let ready: string | undefined;
  for (let i = 0; i < 100 && ready !== 'Unknown'; i++) {
    await sleep(100);
    ready = findCondition((await api.getNode('lease-node'))!, 'Ready')?.status;
  }
  expect(ready).toBe('Unknown');
}, 40_000);
