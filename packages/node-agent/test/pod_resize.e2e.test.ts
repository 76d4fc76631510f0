// In-place pod resize end to end in one process: kubectl 1.33 patch --subresource resize against
// the fake apiserver, the node-agent command over the in-memory CRI runtime. An accepted resize
// reaches the container through UpdateContainerResources and the pod's status; one beyond the
// node's capacity stays PodResizePending/Infeasible; a memory limit below the container's use
// stays PodResizeInProgress/Error; a RestartContainer policy restarts; a sidecar (restartable init
// container) is resized in place as a container is; the allocation survives an agent restart.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeRuntime, type UpdateContainerResourcesRequest } from '@kh/cri-api';
import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ACTUATED_PODS_STATE, ALLOCATED_PODS_STATE } from '../src/allocation/allocation_manager.js';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { loopbackFlags, type RunningAgent, startAgent } from './helpers/agent.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';

const dir = mkdtempSync(join(tmpdir(), 'kh-resize-e2e-'));
const root = join(dir, 'root');
let fake: FakeRuntime;
let apiserver: TestApiServer;
let kubeconfig: string;
let api: KubeNodeApi;
let agent: RunningAgent;
let agentArgs: string[];
const Mi = 1024n * 1024n;

beforeAll(async () => {
  fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock') });
  fake.addImage('docker.io/library/busybox:latest', 1_000_000);
  apiserver = await startTestApiServer();
  ({ kubeconfig, api } = apiserver);
  const config = join(dir, 'config.yaml');
  writeFileSync(
    config,
    `apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: ${join(dir, 'logs')}\n`,
  );
  agentArgs = [
    `--kubeconfig=${kubeconfig}`,
    `--container-runtime-endpoint=${fake.endpoint}`,
    `--root-dir=${root}`,
    `--config=${config}`,
    ...(await loopbackFlags('resize-node')),
  ];
  agent = startAgent(agentArgs);
  expect(await waitForNodeReady(kubeconfig, 'resize-node')).toContain('condition met');
}, 60_000);

afterAll(async () => {
  expect(await agent.stop()).toBe(0);
  await apiserver?.stop();
  await fake?.stop();
});

const size = (cpu: string, memory: string) => ({ requests: { cpu, memory }, limits: { cpu, memory } });

async function createPod(name: string, memoryPolicy = 'NotRequired'): Promise<V1Pod> {
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default' },
      spec: {
        nodeName: 'resize-node',
        containers: [
          {
            name: 'c1',
            image: 'busybox',
            command: ['sleep', '3600'],
            resources: size('100m', '64Mi'),
            resizePolicy: [
              { resourceName: 'cpu', restartPolicy: 'NotRequired' },
              { resourceName: 'memory', restartPolicy: memoryPolicy },
            ],
          },
        ],
      },
    }),
  );
  await kubectl(kubeconfig, 'apply', '-f', file);
  return agent.until(`${name} Running with its resources`, async () => {
    const p = await api.getPod('default', name);
    return p?.status?.containerStatuses?.[0]?.resources ? p : undefined;
  });
}

const resize = (name: string, patch: object) =>
  kubectl(kubeconfig, 'patch', 'pod', name, '--subresource', 'resize', '--patch', JSON.stringify(patch));
const patchC1 = (resources: object) => ({ spec: { containers: [{ name: 'c1', resources }] } });
const condition = (p: V1Pod | undefined, type: string): V1PodCondition | undefined =>
  p?.status?.conditions?.find((c) => c.type === type);

function updatesFor(containerId: string): UpdateContainerResourcesRequest[] {
  return fake.callLog
    .filter((c) => c.method === 'UpdateContainerResources')
    .map((c) => c.request as UpdateContainerResourcesRequest)
    .filter((r) => r.containerId === containerId);
}

it('resizes a Guaranteed pod up and down in place, memory before cpu, and reports the new size', async () => {
  const before = await createPod('guaranteed');
  const cs = before.status!.containerStatuses![0]!;
  expect(cs.resources).toEqual(size('100m', '64Mi'));
  const id = cs.containerID!.split('://')[1]!;

  expect(await resize('guaranteed', patchC1(size('200m', '128Mi')))).toContain('pod/guaranteed patched');
  const grown = await agent.until('the grown size in status', async () => {
    const p = await api.getPod('default', 'guaranteed');
    const r = p?.status?.containerStatuses?.[0]?.resources;
    return r?.limits?.memory === '128Mi' && r.limits.cpu === '200m' && !condition(p, 'PodResizeInProgress')
      ? p
      : undefined;
  });
  expect(grown.status!.containerStatuses![0]).toMatchObject({ restartCount: 0, containerID: cs.containerID });
  expect(condition(grown, 'PodResizePending')).toBeUndefined();
  const up = updatesFor(id);
  expect(up.map((u) => [u.linux!.memoryLimitInBytes, u.linux!.cpuQuota])).toEqual([
    [128n * Mi, 10_000n],
    [128n * Mi, 20_000n],
  ]);

  expect(await resize('guaranteed', patchC1(size('50m', '32Mi')))).toContain('pod/guaranteed patched');
  await agent.until('the shrunk size in status', async () => {
    const p = await api.getPod('default', 'guaranteed');
    return p?.status?.containerStatuses?.[0]?.resources?.limits?.memory === '32Mi' ? p : undefined;
  });
  const down = updatesFor(id).slice(2);
  expect(down.map((u) => [u.linux!.memoryLimitInBytes, u.linux!.cpuQuota, u.linux!.cpuShares])).toEqual([
    [32n * Mi, 20_000n, 204n],
    [32n * Mi, 5_000n, 51n],
  ]);
  // The checkpoints are written in the background, just after the change. The actuated one is
  // recorded a resource at a time, as the kubelet's: memory first, so wait for the CPU step too.
  const uid = grown.metadata!.uid!;
  const checkpointed = (name: string) => async () => {
    const c1 = JSON.parse(readFileSync(join(root, name), 'utf8')).podResources[uid]?.c1;
    return c1?.limits?.memory === '32Mi' && c1.limits.cpu === '50m' ? c1 : undefined;
  };
  expect(await agent.until('the allocation checkpointed', checkpointed(ALLOCATED_PODS_STATE))).toEqual(
    size('50m', '32Mi'),
  );
  expect(await agent.until('the actuation checkpointed', checkpointed(ACTUATED_PODS_STATE))).toEqual(
    size('50m', '32Mi'),
  );
}, 60_000);

it('keeps an infeasible resize PodResizePending with reason Infeasible and the old size', async () => {
  await createPod('infeasible');
  await resize('infeasible', patchC1(size('1000', '64Mi')));
  const p = await agent.until('PodResizePending', async () => {
    const q = await api.getPod('default', 'infeasible');
    return condition(q, 'PodResizePending') ? q : undefined;
  });
  const c = condition(p, 'PodResizePending')!;
  expect(c).toMatchObject({ status: 'True', reason: 'Infeasible' });
  expect(c.message).toMatch(/^Node didn't have enough capacity: cpu, requested: 1000000, capacity: \d+$/);
  expect(p.status!.containerStatuses![0]!.resources).toEqual(size('100m', '64Mi'));
  // Asking for what fits again clears it.
  await resize('infeasible', patchC1(size('100m', '64Mi')));
  await agent.until('PodResizePending cleared', async () => {
    const q = await api.getPod('default', 'infeasible');
    return q && !condition(q, 'PodResizePending') ? q : undefined;
  });
}, 60_000);

it('lowers no memory limit below the use: PodResizeInProgress, reason Error, the old size kept', async () => {
  // The runtime says this pod's container uses 40Mi.
  fake.script.containerStats((c) => c.labels['io.kubernetes.pod.name'] === 'below', {
    memoryWorkingSetBytes: 40 * 1024 * 1024,
  });
  const before = await createPod('below');
  const id = before.status!.containerStatuses![0]!.containerID!.split('://')[1]!;
  await resize('below', patchC1(size('100m', '32Mi')));
  const p = await agent.until('PodResizeInProgress with reason Error', async () => {
    const q = await api.getPod('default', 'below');
    return condition(q, 'PodResizeInProgress')?.reason === 'Error' ? q : undefined;
  });
  expect(condition(p, 'PodResizeInProgress')!.message).toBe(
    `attempting to set container "c1" memory limit (${32n * Mi}) below current usage (${40n * Mi})`,
  );
  expect(condition(p, 'PodResizePending')).toBeUndefined();
  // The cgroup's limit, as the runtime reports it (the memory request is the allocation's).
  expect(p.status!.containerStatuses![0]!.resources!.limits).toEqual({ cpu: '100m', memory: '64Mi' });
  expect(updatesFor(id)).toEqual([]);
  // Asking for the size it has again ends the resize.
  await resize('below', patchC1(size('100m', '64Mi')));
  await agent.until('PodResizeInProgress cleared', async () => {
    const q = await api.getPod('default', 'below');
    return q && !condition(q, 'PodResizeInProgress') ? q : undefined;
  });
}, 60_000);

it('restarts the container when its memory resizePolicy is RestartContainer', async () => {
  await createPod('restart', 'RestartContainer');
  await resize('restart', patchC1(size('100m', '96Mi')));
  const p = await agent.until('restarted at the new size', async () => {
    const q = await api.getPod('default', 'restart');
    const s = q?.status?.containerStatuses?.[0];
    return s?.restartCount === 1 && s.state?.running && s.resources?.limits?.memory === '96Mi'
      ? q
      : undefined;
  });
  expect(p.status!.containerStatuses![0]!.lastState?.terminated).toBeDefined();
}, 60_000);

it('resizes a running sidecar (restartable init container) in place and reports it in initContainerStatuses', async () => {
  const file = join(dir, 'sidecar.json');
  const container = (name: string) => ({
    name,
    image: 'busybox',
    command: ['sleep', '3600'],
    resources: size('100m', '64Mi'),
  });
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'sidecar', namespace: 'default' },
      spec: {
        nodeName: 'resize-node',
        initContainers: [{ ...container('c1-init'), restartPolicy: 'Always' }],
        containers: [container('c1')],
      },
    }),
  );
  await kubectl(kubeconfig, 'apply', '-f', file);
  const before = await agent.until('sidecar and c1 running with their resources', async () => {
    const p = await api.getPod('default', 'sidecar');
    const ready =
      p?.status?.containerStatuses?.[0]?.resources && p.status.initContainerStatuses?.[0]?.resources;
    return ready ? p : undefined;
  });
  const side = before.status!.initContainerStatuses![0]!;
  expect(side.resources).toEqual(size('100m', '64Mi'));
  const patch = { spec: { initContainers: [{ name: 'c1-init', resources: size('150m', '96Mi') }] } };
  expect(await resize('sidecar', patch)).toContain('pod/sidecar patched');
  const grown = await agent.until('the sidecar grown in status', async () => {
    const p = await api.getPod('default', 'sidecar');
    const r = p?.status?.initContainerStatuses?.[0]?.resources;
    return r?.limits?.memory === '96Mi' && r.limits.cpu === '150m' && !condition(p, 'PodResizeInProgress')
      ? p
      : undefined;
  });
  expect(grown.status!.initContainerStatuses![0]).toMatchObject({
    restartCount: 0,
    containerID: side.containerID,
  });
  expect(grown.status!.containerStatuses![0]!.resources).toEqual(size('100m', '64Mi'));
  const id = side.containerID!.split('://')[1]!;
  expect(updatesFor(id).map((u) => [u.linux!.memoryLimitInBytes, u.linux!.cpuQuota])).toEqual([
    [96n * Mi, 10_000n],
    [96n * Mi, 15_000n],
  ]);
  // Written in the background, a resource at a time (memory first): wait for the CPU step too.
  const actuated = await agent.until('the sidecar actuation checkpointed', async () => {
    const c = JSON.parse(readFileSync(join(root, ACTUATED_PODS_STATE), 'utf8')).podResources[
      grown.metadata!.uid!
    ]?.['c1-init'];
    return c?.limits?.memory === '96Mi' && c.limits.cpu === '150m' ? c : undefined;
  });
  expect(actuated).toEqual(size('150m', '96Mi'));
}, 60_000);

it('keeps the allocation across an agent restart: nothing is resized again', async () => {
  expect(await agent.stop()).toBe(0);
  const mark = fake.callLog.length;
  agent = startAgent(agentArgs);
  expect(await waitForNodeReady(kubeconfig, 'resize-node')).toContain('condition met');
  const p = await agent.until('guaranteed synced again', async () => {
    const q = await api.getPod('default', 'guaranteed');
    return fake.callLog.length > mark && q?.status?.containerStatuses?.[0]?.ready ? q : undefined;
  });
  expect(p.status!.containerStatuses![0]!.resources).toEqual(size('50m', '32Mi'));
  // Give the restarted agent a moment of syncs; it must not resize or restart anything.
  await new Promise((r) => setTimeout(r, 2000));
  const after = fake.callLog.slice(mark).map((c) => c.method);
  expect(after).not.toContain('UpdateContainerResources');
  expect(after).not.toContain('StopContainer');
}, 60_000);
