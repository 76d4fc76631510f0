import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { resolveKubeletConfiguration } from '../src/config/resolve.js';
import { defaultKubeletConfiguration } from '../src/config/types.js';
import { findCondition } from '../src/nodestatus/conditions.js';
import { initialNode, nodeNameFor, reconcileExistingNode, resolveNodeIP } from '../src/nodestatus/node.js';
import { type NodeStatusSnapshot, setNodeStatus } from '../src/nodestatus/setters.js';
import { Quantity } from '../src/util/quantity.js';
import { testSnapshot } from './helpers/snapshot.js';

const GiB = 1n << 30n;
const snapshot = testSnapshot;

function run(node: V1Node, s: NodeStatusSnapshot, now: Date) {
  const events: string[] = [];
  setNodeStatus(node, s, now, (type, reason) => events.push(`${type} ${reason}`));
  return events;
}

describe('node status setters', () => {
  it('report capacity and allocatable net of reservations and hard eviction', () => {
    const node: V1Node = {};
    const resolved = resolveKubeletConfiguration({
      ...defaultKubeletConfiguration(),
      kubeReserved: { cpu: '100m', memory: '1Gi' },
      systemReserved: { cpu: '200m', memory: '512Mi', 'ephemeral-storage': '1Gi' },
    });
    run(
      node,
      snapshot({ kubeReserved: resolved.kubeReserved, systemReserved: resolved.systemReserved }),
      new Date(0),
    );
    expect(node.status?.capacity).toEqual({
      cpu: '2',
      memory: '16Gi',
      'ephemeral-storage': '100Gi',
      pods: '110',
    });
    // memory: 16Gi - 1Gi - 512Mi - 100Mi (memory.available); storage: 100Gi - 1Gi - 10% of 100Gi,
    // where 10% is the kubelet's float32 0.1: 10737418400 bytes, 160 more than a tenth.
    const storage = 100n * GiB - GiB - 10737418400n;
    expect(node.status?.allocatable).toEqual({
      cpu: '1700m',
      memory: `${16 * 1024 - 1024 - 512 - 100}Mi`,
      'ephemeral-storage': Quantity.fromValue(storage, 'BinarySI').toString(),
      pods: '110',
    });
  });

  it('keep extended resources others patched into capacity, and drop them from allocatable with it', () => {
    const node: V1Node = {
      status: {
        capacity: { cpu: '64', 'dummy.com/dummy': '123', 'kubernetes.io/made-up': '1' },
        allocatable: { 'dummy.com/dummy': '5', 'example.com/gone': '2' },
      },
    };
    run(node, snapshot(), new Date(0));
    expect(node.status?.capacity).toEqual({
      cpu: '2',
      memory: '16Gi',
      'ephemeral-storage': '100Gi',
      pods: '110',
      'dummy.com/dummy': '123',
    });
    expect(node.status?.allocatable?.['dummy.com/dummy']).toBe('123');
    expect(node.status?.allocatable).not.toHaveProperty('example.com/gone');
  });

  it('never reports negative allocatable', () => {
    const node: V1Node = {};
    run(node, snapshot({ kubeReserved: { cpu: Quantity.parse('3') } }), new Date(0));
    expect(node.status?.allocatable?.cpu).toBe('0');
  });

  it('fill addresses, nodeInfo with the runtime version, and daemon endpoints', () => {
    const node: V1Node = {};
    run(node, snapshot(), new Date(0));
    expect(node.status?.addresses).toEqual([
      { type: 'InternalIP', address: '10.0.0.5' },
      { type: 'Hostname', address: 'node-a' },
    ]);
    expect(node.status?.nodeInfo).toMatchObject({
      machineID: 'mid',
      systemUUID: 'uuid',
      bootID: 'boot',
      kernelVersion: '6.1.0',
      osImage: 'Debian GNU/Linux 12 (bookworm)',
      operatingSystem: 'linux',
      architecture: 'amd64',
      kubeletVersion: 'v1.33.0-kh',
      containerRuntimeVersion: 'containerd://1.6.20',
    });
    expect(node.status?.daemonEndpoints).toEqual({ kubeletEndpoint: { Port: 10250 } });
    // An unknown runtime version later keeps the one reported before.
    run(node, snapshot({ runtime: undefined }), new Date(1));
    expect(node.status?.nodeInfo?.containerRuntimeVersion).toBe('containerd://1.6.20');
  });

  it("report the runtime's features once it reports any, as status.features", () => {
    const node: V1Node = {};
    run(node, snapshot(), new Date(0));
    expect(node.status?.features).toBeUndefined();
    run(node, snapshot({ features: { supplementalGroupsPolicy: false } }), new Date(1));
    expect(node.status?.features).toEqual({ supplementalGroupsPolicy: false });
    run(node, snapshot({ features: { supplementalGroupsPolicy: true } }), new Date(2));
    expect(node.status?.features).toEqual({ supplementalGroupsPolicy: true });
  });

  it("report the runtime's handlers and what each supports, as status.runtimeHandlers", () => {
    const node: V1Node = {};
    run(node, snapshot(), new Date(0));
    expect(node.status?.runtimeHandlers).toBeUndefined();
    run(
      node,
      snapshot({
        runtimeHandlers: [
          { name: '', supportsRecursiveReadOnlyMounts: true, supportsUserNamespaces: true },
          { name: 'runc', supportsRecursiveReadOnlyMounts: false, supportsUserNamespaces: false },
        ],
      }),
      new Date(1),
    );
    expect(node.status?.runtimeHandlers).toEqual([
      { name: '', features: { recursiveReadOnlyMounts: true, userNamespaces: true } },
      { name: 'runc', features: { recursiveReadOnlyMounts: false, userNamespaces: false } },
    ]);
  });

  it('list the biggest images first, capped by nodeStatusMaxImages', () => {
    const node: V1Node = {};
    const img = (id: string, size: number, tags: string[] = [`${id}:1`]) => ({
      id,
      repoTags: tags,
      repoDigests: [`${id}@sha256:1`],
      size,
      pinned: false,
    });
    run(
      node,
      snapshot({
        images: [img('a', 10), img('b', 30), img('c', 20), img('none', 99, [])],
        nodeStatusMaxImages: 3,
      }),
      new Date(0),
    );
    expect(node.status?.images).toEqual([
      { names: ['none@sha256:1'], sizeBytes: 99 },
      { names: ['b@sha256:1', 'b:1'], sizeBytes: 30 },
      { names: ['c@sha256:1', 'c:1'], sizeBytes: 20 },
    ]);
    const many = img('m', 1, ['m:1', 'm:2', 'm:3', 'm:4', 'm:5', 'm:6']);
    run(node, snapshot({ images: [many], nodeStatusMaxImages: -1 }), new Date(0));
    expect(node.status?.images?.[0]?.names).toHaveLength(5);
    // A failed listing keeps the previous images.
    run(node, snapshot({ images: undefined }), new Date(0));
    expect(node.status?.images).toHaveLength(1);
  });

  it('set Ready and the pressure conditions with the kubelet reasons and messages', () => {
    const node: V1Node = {};
    const t0 = new Date(1000);
    const events = run(node, snapshot(), t0);
    const conds = Object.fromEntries((node.status?.conditions ?? []).map((c) => [c.type, c]));
    expect(conds.Ready).toEqual({
      type: 'Ready',
      status: 'True',
      reason: 'KubeletReady',
      message: 'kubelet is posting ready status',
      lastHeartbeatTime: t0,
      lastTransitionTime: t0,
    });
    expect(conds.MemoryPressure).toMatchObject({
      status: 'False',
      reason: 'KubeletHasSufficientMemory',
      message: 'kubelet has sufficient memory available',
    });
    expect(conds.DiskPressure).toMatchObject({
      status: 'False',
      reason: 'KubeletHasNoDiskPressure',
      message: 'kubelet has no disk pressure',
    });
    expect(conds.PIDPressure).toMatchObject({
      status: 'False',
      reason: 'KubeletHasSufficientPID',
      message: 'kubelet has sufficient PID available',
    });
    expect(events).toEqual([
      'Normal NodeHasSufficientMemory',
      'Normal NodeHasNoDiskPressure',
      'Normal NodeHasSufficientPID',
    ]);
    expect((node.status?.conditions ?? []).map((c) => c.type)).toEqual([
      'MemoryPressure',
      'DiskPressure',
      'PIDPressure',
      'Ready',
    ]);
  });

  it('move lastTransitionTime only when the status changes; heartbeat always', () => {
    const node: V1Node = {};
    const t0 = new Date(1000);
    const t1 = new Date(11_000);
    const t2 = new Date(21_000);
    const t3 = new Date(31_000);
    run(node, snapshot(), t0);
    expect(run(node, snapshot(), t1)).toEqual([]);
    let ready = findCondition(node, 'Ready');
    expect(ready?.lastHeartbeatTime).toEqual(t1);
    expect(ready?.lastTransitionTime).toEqual(t0);

    expect(run(node, snapshot({ runtimeErrors: ['container runtime is down'] }), t2)).toEqual([
      'Normal NodeNotReady',
    ]);
    ready = findCondition(node, 'Ready');
    expect(ready).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'container runtime is down',
      lastTransitionTime: t2,
    });

    expect(run(node, snapshot(), t3)).toEqual(['Normal NodeReady']);
    expect(findCondition(node, 'Ready')).toMatchObject({
      status: 'True',
      lastTransitionTime: t3,
      lastHeartbeatTime: t3,
    });
  });

  it('turn Ready False while the node shuts down, and True again when the shutdown is cancelled', () => {
    const node: V1Node = {};
    run(node, snapshot(), new Date(1000));
    expect(run(node, snapshot({ nodeShutdownError: 'node is shutting down' }), new Date(2000))).toEqual([
      'Normal NodeNotReady',
    ]);
    expect(findCondition(node, 'Ready')).toMatchObject({
      status: 'False',
      reason: 'KubeletNotReady',
      message: 'node is shutting down',
    });
    expect(run(node, snapshot(), new Date(3000))).toEqual(['Normal NodeReady']);
  });

  it('aggregate several readiness problems like a Go error list', () => {
    const node: V1Node = {};
    run(
      node,
      snapshot({
        runtimeErrors: ['container runtime is down', 'PLEG is not healthy: pleg has yet to be successful'],
        networkErrors: [
          'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni not initialized',
        ],
      }),
      new Date(0),
    );
    expect(findCondition(node, 'Ready')?.message).toBe(
      '[container runtime is down, PLEG is not healthy: pleg has yet to be successful, container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:cni not initialized]',
    );
  });

  it('report pressure from the eviction manager with events on transitions', () => {
    const node: V1Node = {};
    run(node, snapshot(), new Date(0));
    const events = run(node, snapshot({ pressure: { memory: true, disk: true, pid: true } }), new Date(5000));
    expect(events).toEqual([
      'Normal NodeHasInsufficientMemory',
      'Normal NodeHasDiskPressure',
      'Normal NodeHasInsufficientPID',
    ]);
    expect(findCondition(node, 'MemoryPressure')).toMatchObject({
      status: 'True',
      reason: 'KubeletHasInsufficientMemory',
      lastTransitionTime: new Date(5000),
    });
    expect(findCondition(node, 'DiskPressure')).toMatchObject({
      status: 'True',
      reason: 'KubeletHasDiskPressure',
    });
    expect(findCondition(node, 'PIDPressure')).toMatchObject({
      status: 'True',
      reason: 'KubeletHasInsufficientPID',
    });
  });

  it('keep conditions owned by others', () => {
    const node: V1Node = {
      status: { conditions: [{ type: 'NetworkUnavailable', status: 'False', reason: 'RouteCreated' }] },
    };
    run(node, snapshot(), new Date(0));
    expect(findCondition(node, 'NetworkUnavailable')).toEqual({
      type: 'NetworkUnavailable',
      status: 'False',
      reason: 'RouteCreated',
    });
  });
});

describe('node identity', () => {
  const id = {
    nodeName: 'node-a',
    hostname: 'node-a',
    os: 'linux',
    arch: 'amd64',
    nodeLabels: { tier: 'web', 'kubernetes.io/hostname': 'spoof' },
    taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' as const }],
  };

  it('registers default labels over --node-labels, with taints', () => {
    const node = initialNode(id);
    expect(node.metadata?.labels).toEqual({
      tier: 'web',
      'kubernetes.io/hostname': 'node-a',
      'kubernetes.io/os': 'linux',
      'kubernetes.io/arch': 'amd64',
    });
    expect(node.spec?.taints).toEqual([{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }]);
  });

  it('reconciles only the kubelet-owned metadata of an existing node', () => {
    expect(reconcileExistingNode(initialNode(id), id)).toBeUndefined();
    const drifted = initialNode(id);
    drifted.metadata!.labels!['kubernetes.io/arch'] = 'arm64';
    drifted.metadata!.labels!.tier = 'db';
    expect(reconcileExistingNode(drifted, id)).toEqual({
      metadata: { labels: { 'kubernetes.io/arch': 'amd64' } },
    });
  });

  it('derives the node name and IP like the kubelet', () => {
    expect(nodeNameFor('', 'My-Host')).toBe('my-host');
    expect(nodeNameFor('Override', 'h')).toBe('override');
    expect(resolveNodeIP('192.168.1.9')).toBe('192.168.1.9');
    expect(
      resolveNodeIP('', {
        lo: [{ address: '127.0.0.1', family: 'IPv4', internal: true, netmask: '', mac: '', cidr: null }],
        eth0: [
          {
            address: 'fe80::1',
            family: 'IPv6',
            internal: false,
            netmask: '',
            mac: '',
            cidr: null,
            scopeid: 0,
          },
          { address: '172.18.0.3', family: 'IPv4', internal: false, netmask: '', mac: '', cidr: null },
        ],
      }),
    ).toBe('172.18.0.3');
    expect(() => resolveNodeIP('', {})).toThrow(/--node-ip/);
  });
});
