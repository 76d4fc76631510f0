import type { V1Container, V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { admitPod } from '../src/admission/predicate.js';
import { podRequests } from '../src/admission/resources.js';
import { noPressure } from '../src/types/pressure.js';
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

describe('admitPod', () => {
  it('admits a pod that fits', () => {
    expect(admitPod(pod('a', [req({ cpu: '500m' })]), { node, activePods: [] })).toEqual({ admit: true });
  });

  it('rejects beyond maxPods with OutOfpods', () => {
    const active = [pod('x'), pod('y'), pod('z')];
    expect(admitPod(pod('a'), { node, activePods: active })).toEqual({
      admit: false,
      reason: 'OutOfpods',
      message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    });
  });

  it('rejects requests beyond allocatable with OutOfcpu and OutOfmemory', () => {
    const active = [pod('x', [req({ cpu: '1', memory: '14000Mi' })])];
    expect(admitPod(pod('a', [req({ cpu: '800m' })]), { node, activePods: active })).toEqual({
      admit: false,
      reason: 'OutOfcpu',
      message: "Node didn't have enough resource: cpu, requested: 800, used: 1000, capacity: 1700",
    });
    expect(admitPod(pod('b', [req({ memory: '1Gi' })]), { node, activePods: active })).toEqual({
      admit: false,
      reason: 'OutOfmemory',
      message: `Node didn't have enough resource: memory, requested: ${1 << 30}, used: ${14000 * 1024 * 1024}, capacity: ${14748 * 1024 * 1024}`,
    });
  });

  it('rejects a pod for another node, or one whose selector or affinity does not match', () => {
    expect(admitPod(pod('a', [{}], { nodeName: 'node-b' }), { node, activePods: [] })).toMatchObject({
      reason: 'NodeName',
      message: "Predicate NodeName failed: node(s) didn't match the requested node name",
    });
    expect(
      admitPod(pod('a', [{}], { nodeSelector: { disk: 'hdd' } }), { node, activePods: [] }),
    ).toMatchObject({
      reason: 'NodeAffinity',
      message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    });
    expect(admitPod(pod('a', [{}], { nodeSelector: { disk: 'ssd' } }), { node, activePods: [] })).toEqual({
      admit: true,
    });
    const affinity = (operator: string, values?: string[], key = 'generation') => ({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values }] }],
        },
      },
    });
    const admits = (a: ReturnType<typeof affinity>) =>
      admitPod(pod('a', [{}], { affinity: a }), { node, activePods: [] }).admit;
    expect(admits(affinity('In', ['5', '6']))).toBe(true);
    expect(admits(affinity('NotIn', ['5']))).toBe(false);
    expect(admits(affinity('Gt', ['4']))).toBe(true);
    expect(admits(affinity('Lt', ['4']))).toBe(false);
    expect(admits(affinity('Exists', undefined, 'disk'))).toBe(true);
    expect(admits(affinity('DoesNotExist', undefined, 'disk'))).toBe(false);
  });

  it('rejects a host port already taken', () => {
    const withPort = (name: string, hostIP?: string) =>
      pod(name, [{ ports: [{ containerPort: 80, hostPort: 8080, ...(hostIP ? { hostIP } : {}) }] }]);
    expect(admitPod(withPort('b'), { node, activePods: [withPort('a')] })).toMatchObject({
      reason: 'NodePorts',
    });
    expect(admitPod(withPort('b', '10.0.0.1'), { node, activePods: [withPort('a', '10.0.0.2')] })).toEqual({
      admit: true,
    });
  });

  it('refuses BestEffort pods under memory pressure only', () => {
    const pressure = { ...noPressure, isUnderMemoryPressure: () => true };
    expect(admitPod(pod('be'), { node, activePods: [], pressure })).toEqual({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [MemoryPressure]. ',
    });
    expect(admitPod(pod('bu', [req({ cpu: '100m' })]), { node, activePods: [], pressure })).toEqual({
      admit: true,
    });
  });

  it('refuses every non-critical pod under disk pressure', () => {
    const pressure = { ...noPressure, isUnderDiskPressure: () => true };
    expect(admitPod(pod('bu', [req({ cpu: '100m' })]), { node, activePods: [], pressure })).toEqual({
      admit: false,
      reason: 'Evicted',
      message: 'The node had condition: [DiskPressure]. ',
    });
  });
});
