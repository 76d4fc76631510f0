// The kubelet's updatePodCIDR: the Node's spec.podCIDRs reach the runtime as CRI
// UpdateRuntimeConfig at node status sync, once per change, retried after a failure; against the
// in-memory CRI runtime, and end to end with the fake apiserver's node IPAM controller.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime, UnavailableError } from '@kh/cri-api';
import { KubeGenericRuntimeManager } from '@kh/runtime-manager';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubeletEventRecorder } from '../src/events/recorder.js';
import { findCondition } from '../src/nodestatus/conditions.js';
import { PodCidrUpdater } from '../src/nodestatus/pod_cidr.js';
import { NodeRegistrar } from '../src/nodestatus/registration.js';
import { fillInitialNodeStatus, NodeStatusUpdater } from '../src/nodestatus/status_updater.js';
import { startTestApiServer } from './helpers/apiserver.js';
import { newTestKubelet, runKubelet } from './helpers/kubelet.js';
import { MemoryNodeApi } from './helpers/memory_api.js';
import { testSnapshot } from './helpers/snapshot.js';

let fake: FakeRuntime;
let cri: CriClient;
let runtime: KubeGenericRuntimeManager;
const cleanups: (() => Promise<void>)[] = [];

beforeEach(async () => {
  const clock = new FakeClock();
  fake = await FakeRuntime.start({ clock });
  cri = await CriClient.connect(fake.endpoint);
  const dir = mkdtempSync(join(tmpdir(), 'kh-podcidr-'));
  runtime = await KubeGenericRuntimeManager.create({
    cri,
    clock,
    podLogsRootDir: join(dir, 'logs'),
    podsDir: join(dir, 'pods'),
  });
});

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  cri.close();
  await fake.stop();
});

function setup() {
  const api = new MemoryNodeApi();
  const clock = new FakeClock();
  const recorder = new KubeletEventRecorder(api, { host: 'node-a', clock });
  // Stands in for the runtime health check the kubelet runs after a pod CIDR change: the
  // network is ready once the runtime has a CIDR (as containerd with a conf template).
  let networkErrors = ['container runtime network not ready: NetworkReady=false'];
  const rechecks: string[] = [];
  const snapshot = async () => testSnapshot({ networkErrors });
  const registrar = new NodeRegistrar({
    api,
    identity: {
      nodeName: 'node-a',
      hostname: 'node-a',
      os: 'linux',
      arch: 'amd64',
      nodeLabels: {},
      taints: [],
    },
    clock,
    recorder,
    initialStatus: (n) => fillInitialNodeStatus(n, { nodeName: 'node-a', clock, snapshot, recorder }),
  });
  const updater = new NodeStatusUpdater({
    api,
    nodeName: 'node-a',
    clock,
    registrar,
    snapshot,
    updateFrequencyMs: 10_000,
    reportFrequencyMs: 300_000,
    podCidr: new PodCidrUpdater(runtime),
    onPodCidrChange: async () => {
      rechecks.push(fake.podCidrs.join(' '));
      networkErrors = [];
    },
  });
  const setPodCidrs = (cidrs: string[]) => {
    const node = api.nodes.get('node-a')!;
    node.spec = { ...node.spec, podCIDR: cidrs[0], podCIDRs: cidrs };
  };
  return { api, clock, updater, rechecks, setPodCidrs };
}

describe('pod CIDR at node status sync', () => {
  it("passes the Node's podCIDRs to the runtime once, re-checks the runtime, and patches the status", async () => {
    const { api, clock, updater, rechecks, setPodCidrs } = setup();
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
    expect(fake.podCidrs).toEqual(['10.244.3.0/24']);
    expect(fake.calls.filter((c) => c === 'UpdateRuntimeConfig')).toHaveLength(1);
  });

  it('joins a dual-stack pair with a comma, as the kubelet does', async () => {
    const { updater, setPodCidrs } = setup();
    await updater.syncNodeStatus();
    setPodCidrs(['10.244.3.0/24', 'fd00:10:244:3::/64']);
    await updater.syncNodeStatus();
    expect(fake.podCidrs).toEqual(['10.244.3.0/24,fd00:10:244:3::/64']);
  });

  it('retries at the next sync when the runtime refuses, and calls again when the CIDR changes', async () => {
    const { clock, updater, rechecks, setPodCidrs } = setup();
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

describe('with the fake apiserver allocating node CIDRs', () => {
  it("gives the runtime the /24 kube-controller-manager's allocator put on the agent's Node", async () => {
    const apiserver = await startTestApiServer({
      nodeIpam: { clusterCidr: '10.244.0.0/16', nodeCidrMaskSize: 24 },
    });
    cleanups.push(() => apiserver.stop());
    const { kubelet } = newTestKubelet('ipam-node', {}, { api: apiserver.api, runtime });
    cleanups.push(runKubelet(kubelet).stop);
    const deadline = Date.now() + 20_000;
    while (fake.podCidrs.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const node = await apiserver.api.getNode('ipam-node');
    expect(node?.spec?.podCIDRs).toEqual(['10.244.0.0/24']);
    expect(fake.podCidrs).toEqual(['10.244.0.0/24']);
  });
});
