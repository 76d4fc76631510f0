// The status manager against the fake apiserver: status writes visible to kubectl, and the end
// of graceful deletion (kubectl delete waits until the agent deletes with grace 0).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realClock } from '@kh/apimachinery';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { PodStatusManager } from '../src/status/status_manager.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { kubectl } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-status-'));
let apiserver: TestApiServer;
let kubeconfig: string;
let api: KubeNodeApi;

beforeAll(async () => {
  apiserver = await startTestApiServer();
  ({ kubeconfig, api } = apiserver);
});
afterAll(() => apiserver?.stop());

it('writes pod status kubectl reads, and completes a graceful deletion', async () => {
  writeFileSync(
    join(dir, 'pod.json'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', namespace: 'default' },
      spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'busybox' }] },
    }),
  );
  await kubectl(kubeconfig, 'apply', '-f', join(dir, 'pod.json'));
  const pod = (await api.getPod('default', 'web'))!;
  const sm = new PodStatusManager({ api, clock: realClock });
  sm.setPodStatus(pod, {
    phase: 'Running',
    podIP: '10.0.0.7',
    podIPs: [{ ip: '10.0.0.7' }],
    hostIP: '172.18.0.2',
    qosClass: 'BestEffort',
    startTime: new Date(),
    conditions: [
      { type: 'Initialized', status: 'True' },
      { type: 'ContainersReady', status: 'True' },
      { type: 'Ready', status: 'True' },
    ],
    containerStatuses: [
      {
        name: 'c',
        ready: true,
        started: true,
        restartCount: 0,
        image: 'docker.io/library/busybox:latest',
        imageID: 'sha256:abc',
        containerID: 'containerd://0123',
        state: { running: { startedAt: new Date() } },
      },
    ],
  });
  await sm.syncBatch();
  const shown = await kubectl(
    kubeconfig,
    'get',
    'pod',
    'web',
    '-o',
    'jsonpath={.status.phase} {.status.podIP} {.status.containerStatuses[0].containerID} {.status.conditions[?(@.type=="Ready")].status}',
  );
  expect(shown).toBe('Running 10.0.0.7 containerd://0123 True');

  // Graceful deletion: the API server only marks the pod; the agent finishes it.
  await kubectl(kubeconfig, 'delete', 'pod', 'web', '--wait=false');
  const marked = await api.getPod('default', 'web');
  expect(marked?.metadata?.deletionTimestamp).toBeDefined();
  sm.terminatePod(marked!);
  await sm.syncBatch();
  expect(await api.getPod('default', 'web')).toBeUndefined();
});

it("drops a condition's reason and message when it turns True, as the kubelet's two-way patch does", async () => {
  writeFileSync(
    join(dir, 'flip.json'),
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'flip', namespace: 'default' },
      spec: { nodeName: 'node-a', containers: [{ name: 'c', image: 'busybox' }] },
    }),
  );
  await kubectl(kubeconfig, 'apply', '-f', join(dir, 'flip.json'));
  const pod = (await api.getPod('default', 'flip'))!;
  const sm = new PodStatusManager({ api, clock: realClock });
  const notReady = {
    status: 'False',
    reason: 'ContainersNotReady',
    message: 'containers with unready status: [c]',
  };
  sm.setPodStatus(pod, {
    phase: 'Running',
    podIP: '10.0.0.8',
    conditions: [
      { type: 'ContainersReady', ...notReady },
      { type: 'Ready', ...notReady },
    ],
  });
  await sm.syncBatch();
  sm.setPodStatus(pod, {
    phase: 'Running',
    conditions: [
      { type: 'ContainersReady', status: 'True' },
      { type: 'Ready', status: 'True' },
    ],
  });
  await sm.syncBatch();
  const stored = (await api.getPod('default', 'flip'))?.status;
  expect(stored?.conditions?.find((c) => c.type === 'Ready')).toEqual({
    type: 'Ready',
    status: 'True',
    lastTransitionTime: expect.anything(),
  });
  expect(stored?.podIP).toBeUndefined();
});
