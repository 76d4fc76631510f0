// The allocation manager's decisions (handlePodResourcesResize, canResizePod), its checkpoints,
// the container status resources it feeds, and the status patch that removes a cleared condition.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerStatus, PodStatus } from '@kh/runtime-manager';
import type { V1Node, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { PatchStrategy } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { PredicateAdmitHandler } from '../src/admission/predicate.js';
import { AllocationManager } from '../src/allocation/allocation_manager.js';
import { podStatusPatch } from '../src/api/node_api.js';
import { containerStatusResources } from '../src/status/generate.js';

const node: V1Node = {
  metadata: { name: 'n' },
  status: { allocatable: { cpu: '1', memory: '1Gi', pods: '110' } },
};
const size = (cpu: string, memory: string): V1ResourceRequirements => ({
  requests: { cpu, memory },
  limits: { cpu, memory },
});
const pod = (uid: string, r: V1ResourceRequirements, annotations?: Record<string, string>): V1Pod => ({
  metadata: { uid, name: uid, namespace: 'default', ...(annotations ? { annotations } : {}) },
  spec: { nodeName: 'n', containers: [{ name: 'c1', image: 'busybox', resources: r }] },
});

function manager(rootDir: string | undefined, others: V1Pod[] = []) {
  return new AllocationManager({
    ...(rootDir ? { rootDir } : {}),
    node: () => node,
    activePods: () => others,
    admit: new PredicateAdmitHandler(() => node),
  });
}

describe('AllocationManager', () => {
  it('allocates a resize that fits and keeps the old size when it does not, with the kubelet reasons', () => {
    const filler = pod('filler', size('800m', '100Mi'));
    const m = manager(undefined, [filler]);
    m.addPod(filler);
    const p = pod('p', size('100m', '64Mi'));
    m.addPod(p);

    // Fits: allocated at once, no condition.
    const fits = pod('p', size('150m', '64Mi'));
    expect(m.handlePodResourcesResize(fits)).toBe(fits);
    expect(m.getContainerResourceAllocation('p', 'c1')).toEqual(size('150m', '64Mi'));
    expect(m.conditions('p', false)).toEqual([]);

    // Beyond what is free next to the filler: Deferred, synced at the allocated size.
    const deferred = m.handlePodResourcesResize(pod('p', size('300m', '64Mi')));
    expect(deferred.spec!.containers[0]!.resources).toEqual(size('150m', '64Mi'));
    expect(m.conditions('p', false)).toEqual([
      {
        type: 'PodResizePending',
        status: 'True',
        reason: 'Deferred',
        message: "Node didn't have enough resource: cpu, requested: 300, used: 800, capacity: 1000",
      },
    ]);

    // Beyond the node: Infeasible, memory named first.
    m.handlePodResourcesResize(pod('p', size('2', '2Gi')));
    expect(m.conditions('p', false)[0]).toMatchObject({
      reason: 'Infeasible',
      message: `Node didn't have enough capacity: memory, requested: ${2 * 1024 ** 3}, capacity: ${1024 ** 3}`,
    });

    // Back to the allocation: nothing pending. A terminal pod has no resize conditions.
    m.handlePodResourcesResize(pod('p', size('150m', '64Mi')));
    expect(m.conditions('p', false)).toEqual([]);
    m.handlePodResourcesResize(pod('p', size('2', '2Gi')));
    expect(m.conditions('p', true)).toEqual([]);
  });

  it('treats 1 and 1000m as the same allocation, and never resizes a static pod', () => {
    const m = manager(undefined);
    m.addPod(pod('q', size('1', '64Mi')));
    expect(m.updatePodFromAllocation(pod('q', size('1000m', '64Mi'))).updated).toBe(false);
    const s = pod('s', size('100m', '64Mi'), { 'kubernetes.io/config.source': 'file' });
    m.addPod(s);
    const kept = m.handlePodResourcesResize(
      pod('s', size('200m', '64Mi'), { 'kubernetes.io/config.source': 'file' }),
    );
    expect(kept.spec!.containers[0]!.resources).toEqual(size('100m', '64Mi'));
    expect(m.conditions('s', false)[0]).toMatchObject({ reason: 'Infeasible' });
  });

  it('checkpoints allocated and actuated resources so a new manager (an agent restart) keeps them', async () => {
    const root = mkdtempSync(join(tmpdir(), 'kh-alloc-'));
    const m = manager(root);
    m.addPod(pod('r', size('100m', '64Mi')));
    m.handlePodResourcesResize(pod('r', size('200m', '64Mi')));
    m.setActuatedResources('r', 'c1', size('200m', '64Mi'));
    await m.flush();
    const again = manager(root);
    // Re-admission after the restart keeps the allocation, not the spec it is given.
    again.addPod(pod('r', size('100m', '64Mi')));
    expect(again.getContainerResourceAllocation('r', 'c1')).toEqual(size('200m', '64Mi'));
    expect(again.getActuatedResources('r', 'c1')).toEqual(size('200m', '64Mi'));
    again.removeOrphanedPods(new Set());
    await again.flush();
    expect(manager(root).getContainerResourceAllocation('r', 'c1')).toBeUndefined();
  });

  it('is in progress while a running container was given other resources than allocated', () => {
    const m = manager(undefined);
    const p = pod('i', size('200m', '64Mi'));
    m.addPod(p);
    const running = { name: 'c1', state: 'running' } as ContainerStatus;
    const status = { containerStatuses: [running] } as unknown as PodStatus;
    m.setActuatedResources('i', 'c1', size('100m', '64Mi'));
    m.afterSync(p, status, { steps: [] });
    expect(m.conditions('i', false)).toEqual([{ type: 'PodResizeInProgress', status: 'True' }]);
    m.afterSync(p, status, {
      steps: [{ action: 'ResizePodInPlace', target: 'i', error: new Error('x'), message: 'busy' }],
    });
    expect(m.conditions('i', false)).toEqual([
      { type: 'PodResizeInProgress', status: 'True', reason: 'Error', message: 'busy' },
    ]);
    m.setActuatedResources('i', 'c1', size('200m', '64Mi'));
    m.afterSync(p, status, { steps: [] });
    expect(m.conditions('i', false)).toEqual([]);
    // A memory request moves no cgroup: once nothing is in progress it counts as actuated.
    const request = pod('i', {
      requests: { cpu: '200m', memory: '32Mi' },
      limits: { cpu: '200m', memory: '64Mi' },
    });
    m.afterSync(request, status, { steps: [] });
    expect(m.conditions('i', false)).toEqual([]);
    expect(m.getActuatedResources('i', 'c1')?.requests?.memory).toBe('32Mi');
  });

  describe('with a sidecar (restartable init container)', () => {
    const withInits = (uid: string, sidecar: V1ResourceRequirements, init = size('100m', '64Mi')): V1Pod => {
      const p = pod(uid, size('100m', '64Mi'));
      p.spec!.initContainers = [
        { name: 'init', image: 'busybox', resources: init },
        { name: 'c1-init', image: 'busybox', restartPolicy: 'Always', resources: sidecar },
      ];
      return p;
    };

    it("allocates a sidecar's resize counting it in the pod's requests, as a new pod of that size", () => {
      const filler = pod('filler2', size('700m', '100Mi'));
      const m = manager(undefined, [filler]);
      m.addPod(filler);
      m.addPod(withInits('sc', size('100m', '64Mi')));
      const fits = withInits('sc', size('150m', '96Mi'));
      expect(m.handlePodResourcesResize(fits)).toBe(fits);
      expect(m.getContainerResourceAllocation('sc', 'c1-init')).toEqual(size('150m', '96Mi'));
      // 100m (c1) + 250m (the sidecar) beside the 700m filler is more than the node's 1 cpu.
      const kept = m.handlePodResourcesResize(withInits('sc', size('250m', '96Mi')));
      expect(kept.spec!.initContainers![1]!.resources).toEqual(size('150m', '96Mi'));
      expect(m.conditions('sc', false)[0]).toMatchObject({ type: 'PodResizePending', reason: 'Deferred' });
    });

    it('is in progress while the running sidecar was given other resources; a regular init container never counts', () => {
      const m = manager(undefined);
      const p = withInits('si', size('200m', '64Mi'), size('300m', '64Mi'));
      m.addPod(p);
      const status = {
        containerStatuses: ['c1', 'c1-init', 'init'].map((name) => ({ name, state: 'running' })),
      } as unknown as PodStatus;
      m.setActuatedResources('si', 'c1', size('100m', '64Mi'));
      m.setActuatedResources('si', 'init', size('100m', '64Mi'));
      m.setActuatedResources('si', 'c1-init', size('100m', '64Mi'));
      expect(m.isPodResizeInProgress(p, status)).toBe(true);
      m.afterSync(p, status, { steps: [] });
      expect(m.conditions('si', false)).toEqual([{ type: 'PodResizeInProgress', status: 'True' }]);
      m.setActuatedResources('si', 'c1-init', size('200m', '64Mi'));
      expect(m.isPodResizeInProgress(p, status)).toBe(false);
      // A sidecar memory request moves no cgroup: once nothing is in progress it counts as actuated.
      const request = withInits('si', {
        requests: { cpu: '200m', memory: '32Mi' },
        limits: size('200m', '64Mi').limits,
      });
      m.afterSync(request, status, { steps: [] });
      expect(m.conditions('si', false)).toEqual([]);
      expect(m.getActuatedResources('si', 'c1-init')?.requests?.memory).toBe('32Mi');
      expect(m.getActuatedResources('si', 'init')).toEqual(size('100m', '64Mi'));
    });
  });
});

describe('container status resources', () => {
  const spec = { name: 'c1', resources: size('100m', '64Mi') };
  const running = (resources?: ContainerStatus['resources']) =>
    ({ name: 'c1', state: 'running', ...(resources ? { resources } : {}) }) as ContainerStatus;

  it('keeps the allocation form when the runtime reports the same cgroup, and the runtime value when not', () => {
    const same = {
      cpuShares: 102n,
      cpuQuota: 10_000n,
      cpuPeriod: 100_000n,
      memoryLimitInBytes: 64n * 1024n * 1024n,
    };
    expect(containerStatusResources(spec, running(same), undefined)).toEqual(size('100m', '64Mi'));
    const other = { cpuShares: 204n, cpuQuota: 20_000n, cpuPeriod: 100_000n, memoryLimitInBytes: 1048576n };
    expect(containerStatusResources(spec, running(other), undefined)).toEqual({
      requests: { cpu: '200m', memory: '64Mi' },
      limits: { cpu: '200m', memory: '1Mi' },
    });
    // As the kubelet's quantities print them: 1 cpu, not 1000m; bytes that are no power of 1024 as is.
    const odd = { cpuShares: 1024n, cpuQuota: 100_000n, cpuPeriod: 100_000n, memoryLimitInBytes: 1536n };
    expect(containerStatusResources(spec, running(odd), undefined)).toEqual({
      requests: { cpu: '1', memory: '64Mi' },
      limits: { cpu: '1', memory: '1536' },
    });
  });

  it('falls back to what was last applied, then to the allocation, when the runtime reports nothing', () => {
    expect(containerStatusResources(spec, running(), size('50m', '32Mi'))).toEqual(size('50m', '32Mi'));
    expect(containerStatusResources(spec, running(), undefined)).toEqual(size('100m', '64Mi'));
  });
});

describe('pod status patch', () => {
  it('deletes a condition the new status no longer has, by its merge key', () => {
    const stored = {
      conditions: [
        { type: 'Ready', status: 'True' },
        { type: 'PodResizePending', status: 'True', reason: 'Infeasible' },
      ],
    };
    const patch = podStatusPatch(
      stored,
      { conditions: [{ type: 'Ready', status: 'True' }] },
      PatchStrategy.StrategicMergePatch,
    );
    expect(patch.conditions).toEqual([
      { type: 'Ready', status: 'True' },
      { type: 'PodResizePending', $patch: 'delete' },
    ]);
  });
});
