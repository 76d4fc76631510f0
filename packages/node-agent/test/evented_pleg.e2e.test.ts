// The EventedPLEG feature gate end to end in one process: the node-agent command against the fake
// apiserver and the in-memory CRI runtime. With the gate on, pod lifecycle events come from the
// runtime's GetContainerEvents stream: a pod runs and its status is written while the agent no
// longer relists every second (the relisting PLEG ran once, at start, to fill the cache).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime, type ListPodSandboxRequest } from '@kh/cri-api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { loopbackFlags, type RunningAgent, startAgent } from './helpers/agent.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-evented-pleg-'));
let fake: FakeRuntime;
let apiserver: TestApiServer;
let api: KubeNodeApi;
let agent: RunningAgent;

/** ListPodSandbox calls listing every sandbox: each relist makes one (so does container GC, once a minute). */
const relists = () =>
  fake.callLog.filter(
    (c) => c.method === 'ListPodSandbox' && (c.request as ListPodSandboxRequest).filter === undefined,
  ).length;

beforeAll(async () => {
  fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock') });
  fake.addImage('docker.io/library/busybox:latest', 1_000_000);
  apiserver = await startTestApiServer();
  api = apiserver.api;
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `podLogsDir: ${join(dir, 'logs')}`,
      'featureGates:',
      '  EventedPLEG: true',
      '',
    ].join('\n'),
  );
  agent = startAgent([
    `--kubeconfig=${apiserver.kubeconfig}`,
    `--container-runtime-endpoint=${fake.endpoint}`,
    `--root-dir=${join(dir, 'root')}`,
    `--config=${config}`,
    ...(await loopbackFlags('evented-node')),
  ]);
  expect(await waitForNodeReady(apiserver.kubeconfig, 'evented-node')).toContain('condition met');
}, 60_000);

afterAll(async () => {
  expect(await agent.stop()).toBe(0);
  await apiserver?.stop();
  await fake?.stop();
});

it('runs pods from the runtime’s container events, without relisting every second', async () => {
  await agent.until('the container event stream', async () => fake.eventSubscribers === 1 || undefined);
  const before = relists();
  const manifest = join(dir, 'pod.json');
  writeFileSync(
    manifest,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'evented', namespace: 'default' },
      spec: {
        nodeName: 'evented-node',
        containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
      },
    }),
  );
  await kubectl(apiserver.kubeconfig, 'apply', '-f', manifest);
  const pod = await agent.until('the pod Running with its container started', async () => {
    const p = await api.getPod('default', 'evented');
    return p?.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.started ? p : undefined;
  });
  expect(pod.status?.containerStatuses?.[0]?.state?.running).toBeDefined();
  // Four seconds with the relisting PLEG would be four relists or more; container GC may list once.
  await new Promise((r) => setTimeout(r, 4_000));
  expect(relists() - before).toBeLessThanOrEqual(1);
}, 60_000);
