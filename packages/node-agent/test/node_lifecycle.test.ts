import { FakeClock } from '@kh/apimachinery';
import { type FakeRuntime, UnavailableError } from '@kh/cri-api';
import type { KubeGenericRuntimeManager } from '@kh/runtime-manager';
import type { V1Node, V1NodeStatus } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeletEventRecorder } from '../src/events/recorder.js';
import { NODE_LEASE_NAMESPACE, NodeLeaseController } from '../src/nodelease/controller.js';
import { findCondition } from '../src/nodestatus/conditions.js';
import type { NodeIdentity } from '../src/nodestatus/node.js';
import { PodCidrUpdater } from '../src/nodestatus/pod_cidr.js';
import { NodeRegistrar } from '../src/nodestatus/registration.js';
import type { NodeStatusSnapshot } from '../src/nodestatus/setters.js';
import {
  comparableStatus,
  fillInitialNodeStatus,
  NodeStatusUpdater,
  type NodeStatusUpdaterOptions,
  statusPatch,
} from '../src/nodestatus/status_updater.js';
import { fakeRuntimeManager } from './helpers/fake_runtime.js';
import { MemoryNodeApi } from './helpers/memory_api.js';
import { testSnapshot } from './helpers/snapshot.js';

const identity: NodeIdentity = {
  nodeName: 'node-a',
  hostname: 'node-a',
  os: 'linux',
  arch: 'amd64',
  nodeLabels: { tier: 'web' },
  taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }],
};

const aborts: AbortController[] = [];
afterEach(() => {
  for (const a of aborts.splice(0)) a.abort();
});

function setup(
  snap: () => Partial<NodeStatusSnapshot> = () => ({}),
  extra: Partial<NodeStatusUpdaterOptions> = {},
) {
  const api = new MemoryNodeApi();
  const clock = new FakeClock();
  const recorder = new KubeletEventRecorder(api, { host: 'node-a', clock });
  const snapshot = async () => testSnapshot(snap());
  const registrar = new NodeRegistrar({
    api,
    identity,
    clock,
    recorder,
    initialStatus: (n) => fillInitialNodeStatus(n, { nodeName: 'node-a', clock, snapshot, recorder }),
  });
  const updater = new NodeStatusUpdater({
    api,
    nodeName: 'node-a',
    clock,
    registrar,
    recorder,
    snapshot,
    updateFrequencyMs: 10_000,
    reportFrequencyMs: 300_000,
    ...extra,
  });
  const abort = new AbortController();
  aborts.push(abort);
  return { api, clock, recorder, registrar, updater, signal: abort.signal };
}

describe('registration', () => {
  it('creates the Node with labels, taints and a complete status, and records RegisteredNode', async () => {
    const { api, registrar, recorder } = setup();
    expect(await registrar.tryRegister()).toBe(true);
    const node = api.nodes.get('node-a');
    expect(node?.metadata?.labels).toEqual({
      tier: 'web',
      'kubernetes.io/hostname': 'node-a',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
    });
    expect(node?.spec?.taints).toEqual([{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]);
    expect(node?.status?.capacity?.pods).toBe('110');
    expect(node?.status?.nodeInfo?.containerRuntimeVersion).toBe('containerd://1.6.20');
    await recorder.flush();
    expect(api.events.map((e) => e.reason)).toEqual([
      'NodeHasSufficientMemory',
      'NodeHasNoDiskPressure',
      'NodeHasSufficientPID',
      'RegisteredNode',
    ]);
    expect(api.events[3]).toMatchObject({
      involvedObject: { kind: 'Node', name: 'node-a', uid: 'node-a' },
      source: { component: 'kubelet', host: 'node-a' },
      type: 'Normal',
    });
  });

  it('adopts an existing Node and reconciles its default labels only', async () => {
    const { api, registrar } = setup();
    await api.createNode({
      metadata: { name: 'node-a', labels: { 'kubernetes.io/arch': 'arm64', owner: 'ops' } },
      spec: { unschedulable: true },
    });
    const uid = api.nodes.get('node-a')?.metadata?.uid;
    expect(await registrar.tryRegister()).toBe(true);
    const node = api.nodes.get('node-a');
    expect(node?.metadata?.uid).toBe(uid);
    expect(node?.metadata?.labels).toEqual({
      'kubernetes.io/arch': 'amd64',
      'kubernetes.io/hostname': 'node-a',
      'kubernetes.io/os': 'linux',
      owner: 'ops',
    });
    expect(node?.spec?.unschedulable).toBe(true);
  });

  it('retries with exponential backoff while the API server is down', async () => {
    const { api, clock, registrar, signal } = setup();
    api.down = true;
    const done = registrar.registerWithApiServer(signal);
    await clock.advance(0);
    const attempts = () => api.calls.filter((c) => c === 'createNode').length;
    expect(attempts()).toBe(1);
    await clock.advance(100);
    expect(attempts()).toBe(2);
    await clock.advance(200);
    expect(attempts()).toBe(3);
    await clock.advance(399);
    expect(attempts()).toBe(3);
    await clock.advance(1);
    expect(attempts()).toBe(4);
    api.down = false;
    await clock.advance(800);
    await done;
    expect(registrar.isRegistered()).toBe(true);
    expect(api.nodes.has('node-a')).toBe(true);
  });
});

describe('status updates', () => {
  it('posts at once, then every 10s only on change, and at least every 5m', async () => {
    let runtimeErrors: string[] = [];
    const { api, clock, updater, signal } = setup(() => ({ runtimeErrors }));
    void updater.run(signal);
    await clock.advance(0);
    expect(api.statusPatches).toHaveLength(1);
    expect(findCondition(api.nodes.get('node-a')!, 'Ready')?.status).toBe('True');

    await clock.advance(10_000);
    await clock.advance(10_000);
    expect(api.statusPatches).toHaveLength(1); // nothing but heartbeats changed
    expect(api.calls.filter((c) => c === 'getNode').length).toBeGreaterThanOrEqual(3); // but it was computed

    runtimeErrors = ['container runtime is down'];
    await clock.advance(10_000);
    expect(api.statusPatches).toHaveLength(2);
    const ready = findCondition(api.nodes.get('node-a')!, 'Ready');
    expect(ready).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'container runtime is down',
    });
    expect(ready?.lastTransitionTime).toEqual(new Date(clock.now()));

    // Unchanged for 5 minutes: a report is due anyway.
    const reportedAt = clock.now();
    await clock.advance(290_000);
    expect(api.statusPatches).toHaveLength(2);
    await clock.advance(10_000);
    expect(api.statusPatches).toHaveLength(3);
    const hb = findCondition(api.nodes.get('node-a')!, 'Ready');
    expect(hb?.lastHeartbeatTime).toEqual(new Date(reportedAt + 300_000));
    expect(hb?.lastTransitionTime).toEqual(new Date(reportedAt));
  });

  it('mirrors an extended resource an operator patches into capacity, and drops it when they remove it', async () => {
    const { api, registrar, updater } = setup();
    await registrar.tryRegister();
    const dummy = 'dummy.com/dummy';
    await api.patchNodeStatus('node-a', { capacity: { [dummy]: '123' } });
    expect(await updater.syncNodeStatus()).toBe('patched');
    expect(api.nodes.get('node-a')?.status?.allocatable?.[dummy]).toBe('123');
    await api.patchNodeStatus('node-a', { capacity: { [dummy]: null } });
    expect(await updater.syncNodeStatus()).toBe('patched');
    expect(api.nodes.get('node-a')?.status?.allocatable).not.toHaveProperty(dummy);
    expect(api.statusPatches.at(-1)?.status).toMatchObject({ allocatable: { [dummy]: null } });
    expect(await updater.syncNodeStatus()).toBe('unchanged');
  });

  it('patches only the capacity and allocatable entries it changed, so a removal made meanwhile stands', () => {
    const dummy = 'dummy.com/dummy';
    const read = { capacity: { cpu: '2', [dummy]: '123' }, allocatable: { cpu: '2', [dummy]: '123' } };
    const computed: V1NodeStatus = { ...read, phase: 'Running' };
    // Unchanged maps are left out: had the operator removed the resource after the read, the
    // patch would not put it back.
    expect(statusPatch(read, computed)).toEqual({ phase: 'Running' });
    expect(statusPatch(read, { capacity: { cpu: '4', [dummy]: '123' }, allocatable: { cpu: '4' } })).toEqual({
      capacity: { cpu: '4' },
      allocatable: { cpu: '4', [dummy]: null },
    });
  });

  it('kick() posts a change at once instead of at the next tick', async () => {
    let runtimeErrors = ['container runtime status check may not have completed yet'];
    const { api, clock, updater, signal } = setup(() => ({ runtimeErrors }));
    void updater.run(signal);
    await clock.advance(0);
    expect(findCondition(api.nodes.get('node-a')!, 'Ready')?.status).toBe('False');
    runtimeErrors = [];
    await clock.advance(1_000);
    updater.kick();
    await clock.advance(0);
    expect(findCondition(api.nodes.get('node-a')!, 'Ready')?.status).toBe('True');
    expect(api.statusPatches).toHaveLength(2);
  });

  it('records NodeReady and NodeNotReady events on transitions', async () => {
    let runtimeErrors: string[] = [];
    const { api, recorder, updater } = setup(() => ({ runtimeErrors }));
    await updater.syncNodeStatus();
    runtimeErrors = ['PLEG is not healthy: pleg was last seen active 3m0s ago; threshold is 3m0s'];
    await updater.syncNodeStatus();
    runtimeErrors = [];
    await updater.syncNodeStatus();
    await recorder.flush();
    expect(api.events.map((e) => `${e.reason}: ${e.message}`)).toEqual([
      'NodeHasSufficientMemory: Node node-a status is now: NodeHasSufficientMemory',
      'NodeHasNoDiskPressure: Node node-a status is now: NodeHasNoDiskPressure',
      'NodeHasSufficientPID: Node node-a status is now: NodeHasSufficientPID',
      'RegisteredNode: Node node-a event: Registered Node node-a in Controller',
      'NodeNotReady: Node node-a status is now: NodeNotReady',
      'NodeReady: Node node-a status is now: NodeReady',
    ]);
  });

  it('registers again when the Node is deleted', async () => {
    const { api, updater } = setup();
    expect(await updater.syncNodeStatus()).toBe('patched');
    const firstUid = api.nodes.get('node-a')?.metadata?.uid;
    api.nodes.delete('node-a');
    expect(await updater.syncNodeStatus()).toBe('unregistered');
    expect(await updater.syncNodeStatus()).toBe('patched');
    const node = api.nodes.get('node-a');
    expect(node?.metadata?.uid).not.toBe(firstUid);
    expect(findCondition(node!, 'Ready')?.status).toBe('True');
  });

  it("starts from the node lister's Node: no GET while it has one, a GET before its first list and on a retry", async () => {
    let listed: V1Node | undefined;
    const { api, registrar, updater } = setup(() => ({}), { cachedNode: () => listed });
    await registrar.tryRegister();
    const gets = () => api.calls.filter((c) => c === 'getNode').length;
    expect(await updater.syncNodeStatus()).toBe('patched');
    expect(gets()).toBe(1);
    // The lister has the Node now, with an extended resource an operator patched in meanwhile.
    await api.patchNodeStatus('node-a', { capacity: { 'dummy.com/dummy': '123' } });
    listed = await api.getNode('node-a');
    const read = gets();
    expect(await updater.syncNodeStatus()).toBe('patched');
    expect(gets()).toBe(read);
    expect(api.nodes.get('node-a')?.status?.allocatable?.['dummy.com/dummy']).toBe('123');
    // The sync worked on a copy: the lister's object is as it listed it.
    expect(listed?.status?.allocatable?.['dummy.com/dummy']).toBeUndefined();
    // A failed patch: the retries read the API server, not the lister again.
    api.down = true;
    expect(await updater.syncNodeStatus()).toBe('failed');
    expect(gets()).toBe(read + 4);
  });

  it('reports failure without throwing while the API server is down, and recovers', async () => {
    const { api, updater } = setup();
    await updater.syncNodeStatus();
    api.down = true;
    expect(await updater.syncNodeStatus()).toBe('failed');
    expect(api.calls.filter((c) => c === 'getNode').length).toBe(1 + 5); // 5 tries per sync
    api.down = false;
    expect(await updater.syncNodeStatus()).toBe('unchanged');
  });
});

// The kubelet's updatePodCIDR: the Node's spec.podCIDRs reach the runtime (the in-memory CRI
// runtime here) as CRI UpdateRuntimeConfig at node status sync, once per change, retried.
describe('pod CIDR at node status sync', () => {
  let fake: FakeRuntime;
  let runtime: KubeGenericRuntimeManager;
  let stop: () => Promise<void>;

  beforeEach(async () => {
    ({ fake, runtime, stop } = await fakeRuntimeManager(new FakeClock()));
  });

  afterEach(() => stop());

  /** The node is not network-ready until the re-check after the runtime took a CIDR (as containerd with a conf template). */
  function podCidrSetup() {
    let networkErrors = ['container runtime network not ready: NetworkReady=false'];
    const rechecks: string[] = [];
    const parts = setup(() => ({ networkErrors }), {
      podCidr: new PodCidrUpdater(runtime),
      onPodCidrChange: async () => {
        rechecks.push(fake.podCidrs.join(' '));
        networkErrors = [];
      },
    });
    const setPodCidrs = (cidrs: string[]) => {
      const node = parts.api.nodes.get('node-a')!;
      node.spec = { ...node.spec, podCIDR: cidrs[0], podCIDRs: cidrs };
    };
    return { ...parts, rechecks, setPodCidrs };
  }

  it("passes the Node's podCIDRs to the runtime once, re-checks the runtime, and patches the status", async () => {
    const { api, clock, updater, rechecks, setPodCidrs } = podCidrSetup();
    expect(await updater.syncNodeStatus()).toBe('patched');
    expect(await updater.syncNodeStatus()).toBe('unchanged');
    expect(fake.podCidrs).toEqual([]);
    expect(findCondition(api.nodes.get('node-a')!, 'Ready')?.status).toBe('False');

    setPodCidrs(['10.244.3.0/24']);
    await clock.advance(10_000);
    expect(await updater.syncNodeStatus()).toBe('patched');
    expect(fake.podCidrs).toEqual(['10.244.3.0/24']);
    // The runtime was checked after it had the CIDR and before the status was computed.
    expect(rechecks).toEqual(['10.244.3.0/24']);
    expect(findCondition(api.nodes.get('node-a')!, 'Ready')?.status).toBe('True');

    await clock.advance(10_000);
    expect(await updater.syncNodeStatus()).toBe('unchanged');
    expect(fake.calls.filter((c) => c === 'UpdateRuntimeConfig')).toHaveLength(1);
  });

  it('joins a dual-stack pair with a comma, as the kubelet does', async () => {
    const { updater, setPodCidrs } = podCidrSetup();
    await updater.syncNodeStatus();
    setPodCidrs(['10.244.3.0/24', 'fd00:10:244:3::/64']);
    await updater.syncNodeStatus();
    expect(fake.podCidrs).toEqual(['10.244.3.0/24,fd00:10:244:3::/64']);
  });

  it('retries at the next sync when the runtime refuses, and calls again when the CIDR changes', async () => {
    const { clock, updater, rechecks, setPodCidrs } = podCidrSetup();
    await updater.syncNodeStatus();
    setPodCidrs(['10.244.3.0/24']);
    fake.failNext('UpdateRuntimeConfig', new UnavailableError('runtime restarting'));
    await clock.advance(10_000);
    await updater.syncNodeStatus();
    expect(fake.podCidrs).toEqual([]);
    expect(rechecks).toEqual([]);
    await clock.advance(10_000);
    await updater.syncNodeStatus();
    expect(fake.podCidrs).toEqual(['10.244.3.0/24']);
    setPodCidrs(['10.244.7.0/24']);
    await clock.advance(10_000);
    await updater.syncNodeStatus();
    expect(fake.podCidrs).toEqual(['10.244.3.0/24', '10.244.7.0/24']);
  });
});

describe('node lease', () => {
  function lease(api: MemoryNodeApi) {
    return api.leases.get(`${NODE_LEASE_NAMESPACE}/node-a`);
  }

  it('is created with holderIdentity, duration, owner and renewed every 10s', async () => {
    const { api, clock, registrar, signal } = setup();
    await registrar.tryRegister();
    const ctl = new NodeLeaseController({
      api,
      nodeName: 'node-a',
      clock,
      leaseDurationSeconds: 40,
      renewIntervalMs: 10_000,
    });
    void ctl.run(signal);
    await clock.advance(0);
    const l = lease(api);
    expect(l?.spec).toMatchObject({ holderIdentity: 'node-a', leaseDurationSeconds: 40 });
    expect(l?.spec?.renewTime?.getTime()).toBe(clock.now());
    expect(l?.metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Node', name: 'node-a', uid: api.nodes.get('node-a')?.metadata?.uid },
    ]);
    const t0 = clock.now();
    await clock.advance(9_999);
    expect(lease(api)?.spec?.renewTime?.getTime()).toBe(t0);
    await clock.advance(1);
    expect(lease(api)?.spec?.renewTime?.getTime()).toBe(t0 + 10_000);
    await clock.advance(10_000);
    expect(lease(api)?.spec?.renewTime?.getTime()).toBe(t0 + 20_000);
  });

  it('serialises renewTime as a MicroTime', async () => {
    const { api, clock } = setup();
    const ctl = new NodeLeaseController({
      api,
      nodeName: 'node-a',
      clock,
      leaseDurationSeconds: 40,
      renewIntervalMs: 10_000,
    });
    const sent: string[] = [];
    const update = api.updateLease.bind(api);
    api.updateLease = (l) => {
      sent.push(JSON.stringify(l.spec?.renewTime));
      return update(l);
    };
    await ctl.sync();
    expect(sent[0]).toMatch(/\.\d{6}Z"$/);
  });

  it('adds the owner reference once the Node exists', async () => {
    const { api, clock, registrar } = setup();
    const ctl = new NodeLeaseController({
      api,
      nodeName: 'node-a',
      clock,
      leaseDurationSeconds: 40,
      renewIntervalMs: 10_000,
    });
    await ctl.sync();
    expect(lease(api)?.metadata?.ownerReferences).toBeUndefined();
    await registrar.tryRegister();
    await ctl.sync();
    expect(lease(api)?.metadata?.ownerReferences?.[0]?.kind).toBe('Node');
  });

  it('re-reads after a conflict', async () => {
    const { api, clock } = setup();
    const ctl = new NodeLeaseController({
      api,
      nodeName: 'node-a',
      clock,
      leaseDurationSeconds: 40,
      renewIntervalMs: 10_000,
    });
    await ctl.sync();
    api.touchLease(NODE_LEASE_NAMESPACE, 'node-a');
    await clock.advance(10_000);
    expect(await ctl.sync()).toBe(true);
    expect(lease(api)?.spec?.renewTime?.getTime()).toBe(clock.now());
  });

  it('backs off exponentially while the API server is down, then renews', async () => {
    const { api, clock, signal } = setup();
    const ctl = new NodeLeaseController({
      api,
      nodeName: 'node-a',
      clock,
      leaseDurationSeconds: 40,
      renewIntervalMs: 10_000,
    });
    await ctl.sync();
    api.down = true;
    const pending = ctl.sync(signal);
    await clock.advance(0);
    const tries = () => api.calls.filter((c) => c === 'getLease').length;
    const base = tries();
    expect(api.calls.filter((c) => c === 'updateLease').length).toBe(1 + 5); // first renewal + 5 retries
    const seen: number[] = [];
    for (const step of [100, 200, 400, 800, 1600, 3200, 6400, 7000, 7000]) {
      await clock.advance(step);
      seen.push(tries() - base);
    }
    expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    api.down = false;
    await clock.advance(7_000);
    expect(await pending).toBe(true);
    expect(lease(api)?.spec?.renewTime?.getTime()).toBe(clock.now());
  });
});

describe('comparableStatus', () => {
  it('ignores key order and heartbeats but not other changes', () => {
    const a = {
      nodeInfo: { machineID: 'm', bootID: 'b' },
      conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: new Date(1) }],
    };
    const b = {
      nodeInfo: { bootID: 'b', machineID: 'm' },
      conditions: [{ status: 'True', type: 'Ready', lastHeartbeatTime: new Date(2) }],
    };
    expect(comparableStatus(a as V1NodeStatus)).toBe(comparableStatus(b as V1NodeStatus));
    const c = { ...b, nodeInfo: { bootID: 'other', machineID: 'm' } };
    expect(comparableStatus(c as V1NodeStatus)).not.toBe(comparableStatus(a as V1NodeStatus));
  });
});
