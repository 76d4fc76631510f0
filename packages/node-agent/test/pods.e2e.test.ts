// The whole pod path in one process: the node-agent command against the fake apiserver and the
// in-memory CRI runtime. A pod created with kubectl reaches Running with a full status, a pod
// that does not fit is rejected with OutOfcpu, and kubectl delete completes once the agent has
// stopped the pod.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ContainerState,
  type CreateContainerRequest,
  FakeRuntime,
  NamespaceMode,
  PodSandboxState,
  type RunPodSandboxRequest,
} from '@kh/cri-api';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { loopbackFlags, type RunningAgent, startAgent } from './helpers/agent.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-pods-e2e-'));
const IDS_PER_POD = 2 * 65536;
let fake: FakeRuntime;
let apiserver: TestApiServer;
let kubeconfig: string;
let api: KubeNodeApi;
let agent: RunningAgent;
let agentArgs: string[];

function apply(pod: object): Promise<string> {
  const file = join(dir, `${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(pod));
  return kubectl(kubeconfig, 'apply', '-f', file);
}

beforeAll(async () => {
  // Its handlers announce user namespaces, as containerd 2 does.
  fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock'), userNamespaces: true });
  fake.addImage('docker.io/library/busybox:latest', 1_000_000);
  apiserver = await startTestApiServer();
  ({ kubeconfig, api } = apiserver);
  agentArgs = [
    `--kubeconfig=${kubeconfig}`,
    `--container-runtime-endpoint=${fake.endpoint}`,
    `--root-dir=${join(dir, 'root')}`,
    `--config=${writeConfig()}`,
    ...(await loopbackFlags('pod-node')),
  ];
  agent = startAgent(agentArgs);
  expect(await waitForNodeReady(kubeconfig, 'pod-node')).toContain('condition met');
}, 60_000);

function writeConfig(): string {
  const file = join(dir, 'config.yaml');
  writeFileSync(
    file,
    // Two units per pod, so the user namespace test sees the setting reach the manager.
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: ${join(dir, 'logs')}\nuserNamespaces:\n  idsPerPod: ${IDS_PER_POD}\n`,
  );
  return file;
}

afterAll(async () => {
  expect(await agent.stop()).toBe(0);
  await apiserver?.stop();
  await fake?.stop();
});

it('runs a pod created with kubectl and reports its status', async () => {
  await apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      nodeName: 'pod-node',
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
    },
  });
  const pod = await agent.until('web Running', async () => {
    const p = await api.getPod('default', 'web');
    return p?.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.ready ? p : undefined;
  });
  const status = (pod as V1Pod).status!;
  expect(status.podIP).toBeTruthy();
  expect(status.hostIP).toBe('127.0.0.1');
  expect(status.qosClass).toBe('BestEffort');
  expect(status.startTime).toBeDefined();
  expect(status.containerStatuses?.[0]).toMatchObject({
    name: 'main',
    ready: true,
    started: true,
    restartCount: 0,
  });
  expect(status.containerStatuses?.[0]?.containerID).toMatch(/^[\w-]+:\/\/\w+/);
  expect(status.containerStatuses?.[0]?.state?.running?.startedAt).toBeDefined();
  for (const type of [
    'PodReadyToStartContainers',
    'Initialized',
    'ContainersReady',
    'Ready',
    'PodScheduled',
  ]) {
    expect(status.conditions?.find((c) => c.type === type)?.status).toBe('True');
  }
  expect(fake.containers().filter((c) => c.state === ContainerState.CONTAINER_RUNNING)).toHaveLength(1);
  const events = await agent.until('Created and Started events', async () => {
    const out = await kubectl(
      kubeconfig,
      'get',
      'events',
      '--field-selector',
      'involvedObject.name=web',
      '-o',
      'jsonpath={.items[*].reason}',
    );
    return out.includes('Started') ? out.split(' ') : undefined;
  });
  expect(events).toEqual(expect.arrayContaining(['Created', 'Started']));
}, 30_000);

it('rejects a pod that does not fit with OutOfcpu', async () => {
  await apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'huge', namespace: 'default' },
    spec: {
      nodeName: 'pod-node',
      containers: [{ name: 'main', image: 'busybox', resources: { requests: { cpu: '1000' } } }],
    },
  });
  const pod = await agent.until('huge Failed', async () => {
    const p = await api.getPod('default', 'huge');
    return p?.status?.phase === 'Failed' ? p : undefined;
  });
  expect(pod.status?.reason).toBe('OutOfcpu');
  expect(pod.status?.message).toMatch(
    /^Node didn't have enough resource: cpu, requested: 1000000, used: 0, capacity: \d+$/,
  );
}, 30_000);

it('completes kubectl delete after stopping the pod', async () => {
  await kubectl(kubeconfig, 'delete', 'pod', 'web', '--timeout=20s');
  expect(await api.getPod('default', 'web')).toBeUndefined();
  expect(fake.containers().filter((c) => c.state === ContainerState.CONTAINER_RUNNING)).toHaveLength(0);
  expect(fake.sandboxes().filter((s) => s.state === PodSandboxState.SANDBOX_READY)).toHaveLength(0);
}, 30_000);

it('restarts a container whose liveness probe fails, and follows readiness into the Ready condition', async () => {
  // The first liveness check fails once: one kill, one restart. Readiness passes until told otherwise.
  fake.script.execResult('check-live', { exitCode: 1, stdout: 'not alive' }, { times: 1 });
  const probe = (cmd: string) => ({ exec: { command: [cmd] }, periodSeconds: 1, failureThreshold: 1 });
  await apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'probed', namespace: 'default' },
    spec: {
      nodeName: 'pod-node',
      containers: [
        {
          name: 'app',
          image: 'busybox',
          command: ['sleep', '3600'],
          livenessProbe: { ...probe('check-live'), terminationGracePeriodSeconds: 2 },
          readinessProbe: probe('check-ready'),
        },
      ],
    },
  });
  const ready = await agent.until('probed restarted once and Ready', async () => {
    const p = await api.getPod('default', 'probed');
    const c = p?.status?.containerStatuses?.[0];
    return c && c.restartCount === 1 && c.ready && c.state?.running ? p : undefined;
  });
  expect(ready.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  const events = await kubectl(
    kubeconfig,
    'get',
    'events',
    '--field-selector',
    'involvedObject.name=probed',
    '-o',
    'jsonpath={range .items[*]}{.reason}: {.message}{"\\n"}{end}',
  );
  expect(events).toContain('Unhealthy: Liveness probe failed: not alive');
  expect(events).toContain('Killing: Container app failed liveness probe, will be restarted');

  fake.script.execResult('check-ready', { exitCode: 1, stdout: 'busy' });
  const unready = await agent.until('probed not Ready', async () => {
    const p = await api.getPod('default', 'probed');
    return p?.status?.containerStatuses?.[0]?.ready === false ? p : undefined;
  });
  expect(unready.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
    status: 'False',
    reason: 'ContainersNotReady',
  });
  expect(unready.status?.containerStatuses?.[0]?.restartCount).toBe(1);
  await kubectl(kubeconfig, 'delete', 'pod', 'probed', '--timeout=20s');
}, 40_000);

it('runs a hostUsers: false pod in its own user namespace of idsPerPod IDs and frees its range once it is deleted', async () => {
  const node = await api.getNode('pod-node');
  expect(node?.status?.runtimeHandlers).toEqual([
    { name: '', features: { recursiveReadOnlyMounts: false, userNamespaces: true } },
    { name: 'runc', features: { recursiveReadOnlyMounts: false, userNamespaces: true } },
  ]);
  await apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'userns', namespace: 'default' },
    spec: { nodeName: 'pod-node', hostUsers: false, containers: [{ name: 'main', image: 'busybox' }] },
  });
  const pod = await agent.until('userns Running', async () => {
    const p = await api.getPod('default', 'userns');
    return p?.status?.phase === 'Running' ? p : undefined;
  });
  const uid = pod.metadata?.uid ?? '';
  const sandboxes = fake.callLog
    .filter((c) => c.method === 'RunPodSandbox')
    .map((c) => (c.request as RunPodSandboxRequest).config)
    .filter((config) => config?.metadata?.uid === uid);
  const containers = fake.callLog
    .filter((c) => c.method === 'CreateContainer')
    .map((c) => c.request as CreateContainerRequest)
    .filter((r) => r.sandboxConfig?.metadata?.uid === uid)
    .map((r) => r.config);
  const sent = [...sandboxes, ...containers].map(
    (config) => config?.linux?.securityContext?.namespaceOptions?.usernsOptions,
  );
  const file = JSON.parse(readFileSync(join(dir, 'root', 'pods', uid, 'userns'), 'utf8'));
  const range = file.uidMappings[0];
  expect(range).toMatchObject({ containerId: 0, length: IDS_PER_POD });
  expect(range.hostId % IDS_PER_POD).toBe(0);
  expect(file.gidMappings).toEqual([range]);
  const userns = { mode: NamespaceMode.POD, uids: [range], gids: [range] };
  expect(sent).toEqual([userns, userns]);
  await kubectl(kubeconfig, 'delete', 'pod', 'userns', '--timeout=20s');
  await agent.until('userns file removed', async () =>
    existsSync(join(dir, 'root', 'pods', uid, 'userns')) ? undefined : true,
  );
}, 40_000);

it('leaves pods running on SIGTERM and adopts them on restart', async () => {
  await apply({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'keep', namespace: 'default' },
    spec: { nodeName: 'pod-node', containers: [{ name: 'main', image: 'busybox' }] },
  });
  const before = await agent.until('keep Running', async () => {
    const p = await api.getPod('default', 'keep');
    return p?.status?.containerStatuses?.[0]?.ready ? p : undefined;
  });
  expect(await agent.stop()).toBe(0);
  const runningContainers = () =>
    fake.containers().filter((c) => c.state === ContainerState.CONTAINER_RUNNING);
  expect(runningContainers()).toHaveLength(1);

  agent = startAgent(agentArgs);
  // The restarted agent re-reports the same container instead of starting a new one.
  await agent.until('the restarted agent to sync keep', async () =>
    agent.io.err.includes('Started kubelet') ? true : undefined,
  );
  await new Promise((r) => setTimeout(r, 1_500));
  const after = await api.getPod('default', 'keep');
  expect(after?.status?.phase).toBe('Running');
  expect(after?.status?.containerStatuses?.[0]?.containerID).toBe(
    before.status?.containerStatuses?.[0]?.containerID,
  );
  expect(after?.status?.containerStatuses?.[0]?.restartCount).toBe(0);
  expect(runningContainers()).toHaveLength(1);
}, 40_000);
