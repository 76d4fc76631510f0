// runtimeClassName end to end in one process: the node-agent command against the fake apiserver
// and the in-memory CRI runtime (which knows the handler "runsc"). A pod whose class is gone by
// the time it reaches the node (the apiserver's RuntimeClass admission refuses a pod naming a
// missing class, so the class is deleted between admission and binding) stays Pending with the
// kubelet's FailedCreatePodSandBox event and is retried; once the class is created again the pod
// runs, and its sandbox was created with the class's handler.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime, type RunPodSandboxRequest } from '@kh/cri-api';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { loopbackFlags, type RunningAgent, startAgent } from './helpers/agent.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-runtimeclass-e2e-'));
let fake: FakeRuntime;
let apiserver: TestApiServer;
let kubeconfig: string;
let api: KubeNodeApi;
let agent: RunningAgent;

function apply(obj: object): Promise<string> {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(obj));
  return kubectl(kubeconfig, 'apply', '-f', file);
}

const handlersOf = (name: string) =>
  fake.callLog
    .filter((c) => c.method === 'RunPodSandbox')
    .map((c) => c.request as RunPodSandboxRequest)
    .filter((r) => r.config?.metadata?.name === name)
    .map((r) => r.runtimeHandler);

beforeAll(async () => {
  fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock'), runtimeHandlers: ['runsc'] });
  fake.addImage('docker.io/library/busybox:latest', 1_000_000);
  apiserver = await startTestApiServer();
  ({ kubeconfig, api } = apiserver);
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: ${join(dir, 'logs')}\n`,
  );
  agent = startAgent([
    `--kubeconfig=${kubeconfig}`,
    `--container-runtime-endpoint=${fake.endpoint}`,
    `--root-dir=${join(dir, 'root')}`,
    `--config=${config}`,
    ...(await loopbackFlags('rc-node')),
  ]);
  expect(await waitForNodeReady(kubeconfig, 'rc-node')).toContain('condition met');
}, 60_000);

afterAll(async () => {
  expect(await agent.stop()).toBe(0);
  await apiserver?.stop();
  await fake?.stop();
});

const GVISOR = {
  apiVersion: 'node.k8s.io/v1',
  kind: 'RuntimeClass',
  metadata: { name: 'gvisor' },
  handler: 'runsc',
};

it('keeps a pod of a missing RuntimeClass Pending with FailedCreatePodSandBox, and runs it on the handler once the class exists', async () => {
  await apply(GVISOR);
  // Unbound (this apiserver schedules nothing) until its class is gone.
  await apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'sandboxed', namespace: 'default' },
    spec: {
      runtimeClassName: 'gvisor',
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
    },
  });
  await kubectl(kubeconfig, 'delete', 'runtimeclass', 'gvisor');
  const binding = join(dir, 'binding.json');
  writeFileSync(
    binding,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name: 'sandboxed' },
      target: { name: 'rc-node' },
    }),
  );
  await kubectl(
    kubeconfig,
    'create',
    '--raw',
    '/api/v1/namespaces/default/pods/sandboxed/binding',
    '-f',
    binding,
  );
  const message = await agent.until('FailedCreatePodSandBox event', async () => {
    const out = await kubectl(
      kubeconfig,
      'get',
      'events',
      '--field-selector',
      'involvedObject.name=sandboxed,reason=FailedCreatePodSandBox',
      '-o',
      'jsonpath={.items[*].message}',
    );
    return out || undefined;
  });
  expect(message).toBe('Failed to create pod sandbox: runtimeclass.node.k8s.io "gvisor" not found');
  expect((await api.getPod('default', 'sandboxed'))?.status?.phase).toBe('Pending');
  expect(handlersOf('sandboxed')).toEqual([]);

  await apply(GVISOR);
  // The pod worker retries a failed sync after 10 s.
  await agent.until(
    'sandboxed Running',
    async () => ((await api.getPod('default', 'sandboxed'))?.status?.phase === 'Running' ? true : undefined),
    30_000,
  );
  expect(handlersOf('sandboxed')).toEqual(['runsc']);
  expect(fake.sandboxes().find((s) => s.metadata?.name === 'sandboxed')?.runtimeHandler).toBe('runsc');
}, 60_000);

it('runs a pod without a class on the default handler', async () => {
  await apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'plain', namespace: 'default' },
    spec: {
      nodeName: 'rc-node',
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
    },
  });
  await agent.until('plain Running', async () =>
    (await api.getPod('default', 'plain'))?.status?.phase === 'Running' ? true : undefined,
  );
  expect(handlersOf('plain')).toEqual(['']);
}, 30_000);
