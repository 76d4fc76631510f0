// The eviction manager wired into the agent: the node-agent command against the fake apiserver
// and the in-memory CRI runtime, with an evictionHard memory threshold no busy node meets (99 % of
// its memory available; a fixed 1Pi would exceed capacity, which the kubelet refuses to start
// with, as Node Allocatable cannot be negative), so the node is under memory pressure from the
// first pass. Node status, admission and eviction must all
// follow from that one decision.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime } from '@kh/cri-api';
import { CoreV1Api, SchedulingV1Api, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeNodeApi } from '../../src/api/node_api.js';
import { loadKubeConfig } from '../../src/api/node_api.js';
import { loopbackFlags, type RunningAgent, startAgent } from '../helpers/agent.js';
import { startTestApiServer, type TestApiServer } from '../helpers/apiserver.js';

const NODE = 'pressure-node';
const dir = mkdtempSync(join(tmpdir(), 'kh-eviction-e2e-'));
let fake: FakeRuntime;
let apiserver: TestApiServer;
let api: KubeNodeApi;
let core: CoreV1Api;
let agent: RunningAgent;

// Requests cpu only: allocatable memory is 1 % of capacity under this threshold, and BestEffort pods are refused.
// The apiserver's Priority admission gives a pod its class's value (a pod setting its own is refused).
const pod = (name: string, priorityClassName?: string, burstable = false): V1Pod => ({
  metadata: { name, namespace: 'default' },
  spec: {
    nodeName: NODE,
    ...(priorityClassName ? { priorityClassName } : {}),
    containers: [
      {
        name: 'main',
        image: 'busybox',
        command: ['sleep', '3600'],
        ...(burstable ? { resources: { requests: { cpu: '10m' } } } : {}),
      },
    ],
  },
});

const phaseOf = async (name: string) => (await api.getPod('default', name))?.status?.phase;

beforeAll(async () => {
  fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock') });
  fake.addImage('docker.io/library/busybox:latest', 1_000_000);
  // Working sets for ranking: both exceed their (zero) memory requests, so priority decides.
  fake.script.containerStats((c) => c.labels['io.kubernetes.pod.name'] === 'hog', {
    memoryWorkingSetBytes: 200 * 2 ** 20,
  });
  fake.script.containerStats((c) => c.labels['io.kubernetes.pod.name'] === 'innocent', {
    memoryWorkingSetBytes: 2 ** 20,
  });
  apiserver = await startTestApiServer();
  const { kubeconfig } = apiserver;
  api = apiserver.api;
  core = loadKubeConfig(kubeconfig).makeApiClient(CoreV1Api);
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `podLogsDir: ${join(dir, 'logs')}`,
      'evictionHard:',
      '  memory.available: 99%',
    ].join('\n'),
  );
  agent = startAgent([
    `--kubeconfig=${kubeconfig}`,
    `--container-runtime-endpoint=${fake.endpoint}`,
    `--root-dir=${join(dir, 'root')}`,
    `--config=${config}`,
    ...(await loopbackFlags(NODE)),
  ]);
}, 30_000);

afterAll(async () => {
  expect(await agent?.stop()).toBe(0);
  await apiserver?.stop();
  await fake?.stop();
});

it('reports MemoryPressure on the Node with the kubelet reason', async () => {
  const condition = await agent.until(
    'MemoryPressure=True',
    async () => {
      const node = await api.getNode(NODE);
      const c = node?.status?.conditions?.find((x) => x.type === 'MemoryPressure');
      return c?.status === 'True' ? c : undefined;
    },
    30_000,
  );
  expect(condition).toMatchObject({ reason: 'KubeletHasInsufficientMemory' });
}, 40_000);

it('refuses a BestEffort pod at admission under memory pressure', async () => {
  await core.createNamespacedPod({ namespace: 'default', body: pod('besteffort') });
  const rejected = await agent.until('besteffort Failed', async () => {
    const p = await api.getPod('default', 'besteffort');
    return p?.status?.phase === 'Failed' ? p : undefined;
  });
  expect(rejected.status).toMatchObject({
    reason: 'Evicted',
    message: 'The node had condition: [MemoryPressure]. ',
  });
  expect(fake.containers().filter((c) => c.labels['io.kubernetes.pod.name'] === 'besteffort')).toEqual([]);
}, 40_000);

it('evicts the lower-priority pod first, one pod per monitoring interval', async () => {
  await loadKubeConfig(apiserver.kubeconfig)
    .makeApiClient(SchedulingV1Api)
    .createPriorityClass({ body: { metadata: { name: 'innocent-priority' }, value: 1000 } });
  await core.createNamespacedPod({ namespace: 'default', body: pod('innocent', 'innocent-priority', true) });
  await core.createNamespacedPod({ namespace: 'default', body: pod('hog', undefined, true) });
  const evicted = await agent.until(
    'hog evicted',
    async () => {
      const p = await api.getPod('default', 'hog');
      return p?.status?.phase === 'Failed' ? p : undefined;
    },
    60_000,
  );
  // One pod per monitoring interval: the innocent pod is still there when the hog is gone.
  expect(await phaseOf('innocent')).toBe('Running');
  expect(evicted.status?.reason).toBe('Evicted');
  expect(evicted.status?.message).toMatch(/^The node was low on resource: memory\./);
  expect(evicted.status?.conditions?.find((c) => c.type === 'DisruptionTarget')).toMatchObject({
    status: 'True',
    reason: 'TerminationByKubelet',
  });
  expect(
    fake.containers().filter((c) => c.labels['io.kubernetes.pod.name'] === 'hog' && c.state === 1),
  ).toEqual([]);
  const events = await agent.until('the Evicted event', async () => {
    const list = await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: 'involvedObject.name=hog',
    });
    const e = list.items.find((x) => x.reason === 'Evicted');
    return e ? e : undefined;
  });
  expect(events.message).toMatch(/memory/);
  expect(events.metadata?.annotations?.starved_resource).toBe('memory');
  expect(events.metadata?.annotations?.offending_containers).toBe('main');
}, 90_000);
