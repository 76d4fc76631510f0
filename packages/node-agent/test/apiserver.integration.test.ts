// Registration, status, lease and events against the real fake apiserver over HTTP, through
// @kubernetes/client-node, and checked with kubectl.

import { FakeClock } from '@kh/apimachinery';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeNodeApi } from '../src/api/node_api.js';
import { KubeletEventRecorder } from '../src/events/recorder.js';
import { NODE_LEASE_NAMESPACE, NodeLeaseController } from '../src/nodelease/controller.js';
import { findCondition } from '../src/nodestatus/conditions.js';
import type { NodeIdentity } from '../src/nodestatus/node.js';
import { NodeRegistrar } from '../src/nodestatus/registration.js';
import { fillInitialNodeStatus, NodeStatusUpdater } from '../src/nodestatus/status_updater.js';
import { startTestApiServer, type TestApiServer } from './helpers/apiserver.js';
import { fakeRuntimeManager } from './helpers/fake_runtime.js';
import { kubectl, waitForNodeReady } from './helpers/kubectl.js';
import { newTestKubelet, runKubelet } from './helpers/kubelet.js';
import { testSnapshot } from './helpers/snapshot.js';

let apiserver: TestApiServer;
let api: KubeNodeApi;
let kubeconfigPath: string;

beforeAll(async () => {
  apiserver = await startTestApiServer();
  ({ api, kubeconfig: kubeconfigPath } = apiserver);
});
afterAll(() => apiserver?.stop());

function identity(nodeName: string): NodeIdentity {
  return {
    nodeName,
    hostname: nodeName,
    os: 'linux',
    arch: 'amd64',
    nodeLabels: { tier: 'web' },
    taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
  };
}

function components(nodeName: string, snap = () => testSnapshot({ hostname: nodeName })) {
  const clock = new FakeClock(Date.now());
  const recorder = new KubeletEventRecorder(api, { host: nodeName, clock });
  const snapshot = async () => snap();
  const registrar = new NodeRegistrar({
    api,
    identity: identity(nodeName),
    clock,
    recorder,
    initialStatus: (n) => fillInitialNodeStatus(n, { nodeName, clock, snapshot, recorder }),
  });
  const updater = new NodeStatusUpdater({
    api,
    nodeName,
    clock,
    registrar,
    recorder,
    snapshot,
    updateFrequencyMs: 10_000,
    reportFrequencyMs: 300_000,
  });
  const lease = new NodeLeaseController({
    api,
    nodeName,
    clock,
    leaseDurationSeconds: 40,
    renewIntervalMs: 10_000,
  });
  return { clock, recorder, registrar, updater, lease };
}

describe('against the fake apiserver', () => {
  it('registers the Node and kubectl shows it Ready with its labels, taints and runtime', async () => {
    const { registrar, updater } = components('api-node-1');
    expect(await registrar.tryRegister()).toBe(true);
    expect(await updater.syncNodeStatus()).toBe('patched');
    const node = await api.getNode('api-node-1');
    expect(node?.metadata?.labels).toMatchObject({
      'kubernetes.io/hostname': 'api-node-1',
      'kubernetes.io/os': 'linux',
      tier: 'web',
    });
    expect(node?.spec?.taints).toEqual([{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]);
    expect(node?.status?.allocatable?.pods).toBe('110');
    expect(findCondition(node!, 'Ready')?.status).toBe('True');
    const stdout = await kubectl(kubeconfigPath, 'get', 'node', 'api-node-1', '--no-headers', '-o', 'wide');
    expect(stdout).toMatch(/^api-node-1\s+Ready\s+/);
    expect(stdout).toContain('v1.33.0-kh');
    expect(stdout).toContain('containerd://1.6.20');
  });

  it('patches status on change with the right transition time, and keeps foreign conditions', async () => {
    let runtimeErrors: string[] = [];
    const { clock, registrar, updater } = components('api-node-2', () =>
      testSnapshot({ hostname: 'api-node-2', runtimeErrors }),
    );
    await registrar.tryRegister();
    await updater.syncNodeStatus();
    // Another component's condition (e.g. a CNI setting NetworkUnavailable).
    const current = await api.getNode('api-node-2');
    await api.patchNodeStatus('api-node-2', {
      conditions: [
        ...(current?.status?.conditions ?? []),
        { type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated', message: 'ok' },
      ],
    });
    await clock.advance(10_000);
    expect(await updater.syncNodeStatus()).toBe('unchanged');
    runtimeErrors = ['container runtime is down'];
    await clock.advance(10_000);
    expect(await updater.syncNodeStatus()).toBe('patched');
    const node = await api.getNode('api-node-2');
    const ready = findCondition(node!, 'Ready');
    expect(ready).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'container runtime is down',
    });
    // A real apiserver keeps whole seconds; the fake keeps milliseconds.
    const transition = new Date(ready!.lastTransitionTime!).getTime();
    expect(transition).toBeGreaterThanOrEqual(Math.floor(clock.now() / 1000) * 1000);
    expect(transition).toBeLessThanOrEqual(clock.now());
    expect(findCondition(node!, 'NetworkUnavailable')?.reason).toBe('RouteCreated');
  });

  it('re-registers a deleted Node', async () => {
    const { registrar, updater } = components('api-node-3');
    await registrar.tryRegister();
    await updater.syncNodeStatus();
    await kubectl(kubeconfigPath, 'delete', 'node', 'api-node-3');
    expect(await updater.syncNodeStatus()).toBe('unregistered');
    expect(await updater.syncNodeStatus()).toBe('patched');
    expect(findCondition((await api.getNode('api-node-3'))!, 'Ready')?.status).toBe('True');
  });

  it('creates and renews the Lease in kube-node-lease owned by the Node', async () => {
    const { clock, registrar, lease } = components('api-node-4');
    await registrar.tryRegister();
    expect(await lease.sync()).toBe(true);
    const first = await api.getLease(NODE_LEASE_NAMESPACE, 'api-node-4');
    const node = await api.getNode('api-node-4');
    expect(first?.spec).toMatchObject({ holderIdentity: 'api-node-4', leaseDurationSeconds: 40 });
    expect(first?.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        apiVersion: 'v1',
        kind: 'Node',
        name: 'api-node-4',
        uid: node?.metadata?.uid,
      }),
    ]);
    await clock.advance(10_000);
    expect(await lease.sync()).toBe(true);
    const second = await api.getLease(NODE_LEASE_NAMESPACE, 'api-node-4');
    expect(new Date(second!.spec!.renewTime!).getTime() - new Date(first!.spec!.renewTime!).getTime()).toBe(
      10_000,
    );
    const stdout = await kubectl(
      kubeconfigPath,
      '-n',
      'kube-node-lease',
      'get',
      'lease',
      'api-node-4',
      '-o',
      'jsonpath={.spec.holderIdentity}',
    );
    expect(stdout).toBe('api-node-4');
  });

  it('posts node events kubectl can list', async () => {
    const { registrar, recorder } = components('api-node-5');
    await registrar.tryRegister();
    recorder.nodeEvent('Normal', 'Starting', 'Starting kubelet.');
    await recorder.flush();
    const stdout = await kubectl(
      kubeconfigPath,
      'get',
      'events',
      '--field-selector',
      'involvedObject.name=api-node-5',
      '-o',
      'jsonpath={range .items[*]}{.reason}{" "}{.source.component}{"\\n"}{end}',
    );
    expect(stdout.split('\n').filter(Boolean).sort()).toEqual(
      [
        'NodeHasNoDiskPressure kubelet',
        'NodeHasSufficientMemory kubelet',
        'NodeHasSufficientPID kubelet',
        'RegisteredNode kubelet',
        'Starting kubelet',
      ].sort(),
    );
  });

  it('a running Kubelet keeps the Node Ready on real time', async () => {
    const { kubelet } = newTestKubelet(
      'api-node-6',
      { nodeStatusUpdateFrequency: '1s' },
      { api, identity: identity('api-node-6') },
    );
    const agent = runKubelet(kubelet);
    try {
      expect(await waitForNodeReady(kubeconfigPath, 'api-node-6')).toContain('condition met');
      const lease = await api.getLease(NODE_LEASE_NAMESPACE, 'api-node-6');
      expect(lease?.spec?.holderIdentity).toBe('api-node-6');
    } finally {
      await agent.stop();
    }
  }, 30_000);
});

describe('with the node IPAM controller on', () => {
  it("gives the runtime the /24 kube-controller-manager's allocator put on the agent's Node", async () => {
    const withIpam = await startTestApiServer({
      nodeIpam: { clusterCidr: '10.244.0.0/16', nodeCidrMaskSize: 24 },
    });
    const { fake, runtime, stop } = await fakeRuntimeManager(new FakeClock());
    const { kubelet } = newTestKubelet('ipam-node', {}, { api: withIpam.api, runtime });
    const running = runKubelet(kubelet);
    try {
      const deadline = Date.now() + 20_000;
      while (fake.podCidrs.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const node = await withIpam.api.getNode('ipam-node');
      expect(node?.spec?.podCIDRs).toEqual(['10.244.0.0/24']);
      expect(fake.podCidrs).toEqual(['10.244.0.0/24']);
    } finally {
      await running.stop();
      await stop();
      await withIpam.stop();
    }
  });
});
