import type { V1Container, V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { AdmitHandlers } from '../src/admission/handler.js';
import { PredicateAdmitHandler } from '../src/admission/predicate.js';
import { podRequests } from '../src/admission/resources.js';
import { admitUnderPressure } from '../src/eviction/admission.js';
import type { PressureCondition } from '../src/eviction/types.js';
import { podQOSClass } from '../src/types/qos.js';

const node: V1Node = {
  metadata: { name: 'node-a', labels: { 'kubernetes.io/hostname': 'node-a', disk: 'ssd', generation: '5' } },
  status: { allocatable: { cpu: '1700m', memory: '14748Mi', 'ephemeral-storage': '90Gi', pods: '3' } },
};

function pod(
  name: string,
  containers: Partial<V1Container>[] = [{}],
  spec: Partial<V1Pod['spec']> = {},
): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: name },
    spec: {
      nodeName: 'node-a',
      containers: containers.map((c, i) => ({ name: `c${i}`, image: 'busybox', ...c })),
      ...spec,
    },
  };
}
const req = (requests: Record<string, string>, limits?: Record<string, string>): Partial<V1Container> => ({
  resources: { requests, ...(limits ? { limits } : {}) },
});

const predicates = new PredicateAdmitHandler(() => node);
const admitPod = (p: V1Pod, otherPods: V1Pod[] = []) => predicates.admit({ pod: p, otherPods });

describe('pod requests and QoS', () => {
  it('sums containers, takes init peaks, adds sidecars and overhead', () => {
    const p = pod('p', [req({ cpu: '100m', memory: '64Mi' }), req({ cpu: '200m' })], {
      initContainers: [
        { name: 'side', image: 'x', restartPolicy: 'Always', resources: { requests: { cpu: '50m' } } },
        { name: 'big', image: 'x', resources: { requests: { cpu: '1', memory: '32Mi' } } },
      ],
      overhead: { cpu: '10m' },
    });
    const r = podRequests(p);
    // max(300m + 50m sidecar, 50m sidecar + 1000m init) + 10m overhead
    expect(r.cpu).toBe(1060n);
    expect(r.memory).toBe(64n * 1024n * 1024n * 1000n);
  });

  it('uses the limit as the request when only a limit is set', () => {
    expect(podRequests(pod('p', [{ resources: { limits: { cpu: '500m' } } }])).cpu).toBe(500n);
  });

  it('classifies QoS like Kubernetes', () => {
    expect(podQOSClass(pod('be'))).toBe('BestEffort');
    expect(podQOSClass(pod('bu', [req({ cpu: '100m' })]))).toBe('Burstable');
    expect(podQOSClass(pod('g', [req({ cpu: '1', memory: '1Gi' }, { cpu: '1000m', memory: '1Gi' })]))).toBe(
      'Guaranteed',
    );
    expect(podQOSClass(pod('g2', [{ resources: { limits: { cpu: '1', memory: '1Gi' } } }]))).toBe(
      'Guaranteed',
    );
    expect(podQOSClass(pod('mixed', [req({ cpu: '1', memory: '1Gi' }, { cpu: '2', memory: '1Gi' })]))).toBe(
      'Burstable',
    );
  });
});

describe('the predicate admit handler', () => {
  it('admits a pod that fits', () => {
    expect(admitPod(pod('a', [req({ cpu: '500m' })]))).toEqual({ admit: true });
  });

  it('rejects beyond maxPods with OutOfpods', () => {
    const active = [pod('x'), pod('y'), pod('z')];
    expect(admitPod(pod('a'), active)).toEqual({
      admit: false,
      reason: 'OutOfpods',
      message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    });
  });

  it('rejects requests beyond allocatable with OutOfcpu and OutOfmemory', () => {
    const active = [pod('x', [req({ cpu: '1', memory: '14000Mi' })])];
    expect(admitPod(pod('a', [req({ cpu: '800m' })]), active)).toEqual({
      admit: false,
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 800, used: 1000, capacity: 1700",
    });
    expect(admitPod(pod('b', [req({ memory: '1Gi' })]), active)).toEqual({
      admit: false,
      reason: 'OutOfmemory',
      message: `Node didn't have enough resource: memory, requested: ${1 << 30}, used: ${14000 * 1024 * 1024}, capacity: ${14748 * 1024 * 1024}`,
    });
  });

  it('fits extended resources the node lists, drops those it does not, and has no hugepages it lacks', () => {
    const dummy = 'dummy.com/dummy';
    const withDummy = new PredicateAdmitHandler(() => ({
      ...node,
      status: { allocatable: { ...node.status?.allocatable, [dummy]: '123' } },
    }));
    const active = [pod('x', [req({ [dummy]: '100' }, { [dummy]: '100' })])];
    expect(
      withDummy.admit({ pod: pod('a', [req({ [dummy]: '23' }, { [dummy]: '23' })]), otherPods: active }),
    ).toEqual({
      admit: true,
    });
    expect(
      withDummy.admit({ pod: pod('b', [req({ [dummy]: '24' }, { [dummy]: '24' })]), otherPods: active }),
    ).toEqual({
      admit: false,
      reason: `OutOf${dummy}`,
      message: `Node didn't have enough resource: ${dummy}, requested: 24, used: 100, capacity: 123`,
    });
    // Not on this node: a cluster-level resource, which the kubelet leaves to the scheduler.
    expect(
      admitPod(pod('c', [req({ 'example.com/cluster-wide': '5' }, { 'example.com/cluster-wide': '5' })])),
    ).toEqual({
      admit: true,
    });
    expect(
      admitPod(pod('d', [req({ 'hugepages-2Mi': '2Mi', memory: '2Mi' }, { 'hugepages-2Mi': '2Mi' })])),
    ).toEqual({
      admit: false,
      reason: 'OutOfhugepages-2Mi',
      message: `Node didn't have enough resource: hugepages-2Mi, requested: ${2 << 20}, used: 0, capacity: 0`,
    });
  });

  it('rejects a pod for another node, or one whose selector or affinity does not match', () => {
    expect(admitPod(pod('a', [{}], { nodeName: 'node-b' }))).toMatchObject({
      reason: 'NodeName',
      message: "Predicate NodeName failed: node(s) didn't match the requested node name",
    });
    expect(admitPod(pod('a', [{}], { nodeSelector: { disk: 'hdd' } }))).toMatchObject({
      reason: 'NodeAffinity',
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
    expect(admitPod(pod('a', [{}], { nodeSelector: { disk: 'ssd' } }))).toEqual({
      admit: true,
    });
    const affinity = (operator: string, values?: string[], key = 'generation') => ({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values }] }],
        },
      },
    });
    const admits = (a: ReturnType<typeof affinity>) => admitPod(pod('a', [{}], { affinity: a })).admit;
    expect(admits(affinity('In', ['5', '6']))).toBe(true);
    expect(admits(affinity('NotIn', ['5']))).toBe(false);
    expect(admits(affinity('Gt', ['4']))).toBe(true);
    expect(admits(affinity('Lt', ['4']))).toBe(false);
    expect(admits(affinity('Exists', undefined, 'disk'))).toBe(true);
    expect(admits(affinity('DoesNotExist', undefined, 'disk'))).toBe(false);
  });

  it('rejects SupplementalGroupsPolicy Strict unless the node says its runtime implements it', () => {
    const strict = pod('s', [{}], { securityContext: { supplementalGroupsPolicy: 'Strict' } });
    const merge = pod('m', [{}], { securityContext: { supplementalGroupsPolicy: 'Merge' } });
    const withFeature = (supplementalGroupsPolicy?: boolean) =>
      new PredicateAdmitHandler(() => ({
        ...node,
        status: {
          ...node.status,
          ...(supplementalGroupsPolicy === undefined ? {} : { features: { supplementalGroupsPolicy } }),
        },
      }));
    const refused = {
      admit: false,
      reason: 'SupplementalGroupsPolicyNotSupported',
      message: 'SupplementalGroupsPolicy=Strict is not supported in this node',
    };
    // No features reported (an older runtime) is "not supported", as is an explicit false.
    expect(withFeature(undefined).admit({ pod: strict, otherPods: [] })).toEqual(refused);
    expect(withFeature(false).admit({ pod: strict, otherPods: [] })).toEqual(refused);
    expect(withFeature(true).admit({ pod: strict, otherPods: [] })).toEqual({ admit: true });
    expect(withFeature(false).admit({ pod: merge, otherPods: [] })).toEqual({ admit: true });
    expect(withFeature(false).admit({ pod: pod('none'), otherPods: [] })).toEqual({ admit: true });
  });

  it('rejects a pod for another OS, by its kubernetes.io/os label or its spec.os, before the other checks', () => {
    const labelled = (os: string) => {
      const p = pod(`l-${os}`);
      p.metadata!.labels = { 'kubernetes.io/os': os };
      return p;
    };
    expect(admitPod(labelled('windows'))).toEqual({
      admit: false,
      reason: 'PodOSSelectorNodeLabelDoesNotMatch',
      message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    });
    expect(admitPod(labelled('linux'))).toEqual({ admit: true });
    const notSupported = {
      admit: false,
      reason: 'PodOSNotSupported',
      message: "Failed to admit pod as the OS field doesn't match node OS",
    };
    expect(admitPod(pod('w', [{}], { os: { name: 'windows' } }))).toEqual(notSupported);
    // Even a pod too big for the node is refused for its OS first.
    expect(admitPod(pod('big', [req({ cpu: '64' })], { os: { name: 'windows' } }))).toEqual(notSupported);
    expect(admitPod(pod('l', [{}], { os: { name: 'linux' } }))).toEqual({ admit: true });
  });

  it('rejects a host port already taken', () => {
    const withPort = (name: string, hostIP?: string) =>
      pod(name, [{ ports: [{ containerPort: 80, hostPort: 8080, ...(hostIP ? { hostIP } : {}) }] }]);
    expect(admitPod(withPort('b'), [withPort('a')])).toMatchObject({
      reason: 'NodePorts',
    });
    expect(admitPod(withPort('b', '10.0.0.1'), [withPort('a', '10.0.0.2')])).toEqual({
      admit: true,
    });
  });

  it('runs after the predicates: under memory pressure it refuses BestEffort pods only', () => {
    const chain = underPressure(['MemoryPressure']);
    expect(chain.admit({ pod: pod('be'), otherPods: [] })).toEqual({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure]. ',
    });
    expect(chain.admit({ pod: pod('bu', [req({ cpu: '100m' })]), otherPods: [] })).toEqual({ admit: true });
    // The first rejection wins: a pod that does not fit is refused for that, not for pressure.
    expect(chain.admit({ pod: pod('be', [{}], { nodeName: 'node-b' }), otherPods: [] })).toMatchObject({
      reason: 'NodeName',
    });
  });

  it('refuses every non-critical pod under disk pressure', () => {
    expect(
      underPressure(['DiskPressure']).admit({ pod: pod('bu', [req({ cpu: '100m' })]), otherPods: [] }),
    ).toEqual({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [DiskPressure]. ',
    });
  });
});

/** The agent's chain: the predicates, then the eviction manager's rule for these conditions. */
function underPressure(conditions: PressureCondition[]): AdmitHandlers {
  const chain = new AdmitHandlers();
  chain.add(predicates);
  chain.add({ admit: ({ pod }) => admitUnderPressure(pod, conditions) });
  return chain;
}
