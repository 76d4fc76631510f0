// In-place resize through syncPod: which UpdateContainerResources calls a changed (allocated)
// pod spec makes, in the kubelet's order, against the fake runtime.
import type { LinuxContainerResources, UpdateContainerResourcesRequest } from '@kh/cri-api';
import type { V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActuatedResources, PodMemoryUsage, PodStatsProvider } from '../../src/kuberuntime/resize.js';
import { ctr, Harness, IMAGE, makePod } from './harness.js';

class Actuated implements ActuatedResources {
  readonly records = new Map<string, V1ResourceRequirements>();
  getActuatedResources(uid: string, name: string) {
    return this.records.get(`${uid}/${name}`);
  }
  setActuatedResources(uid: string, name: string, r: V1ResourceRequirements) {
    this.records.set(`${uid}/${name}`, structuredClone(r));
  }
}

const res = (cpu: string, memory: string, limits = true): V1ResourceRequirements => ({
  requests: { cpu, memory },
  ...(limits ? { limits: { cpu, memory } } : {}),
});

/** The pod with new resources per container name, as the API (and the allocation) would have it. */
function resized(pod: V1Pod, by: Record<string, V1ResourceRequirements>): V1Pod {
  const next = structuredClone(pod);
  for (const c of [...(next.spec!.initContainers ?? []), ...next.spec!.containers])
    if (by[c.name]) c.resources = by[c.name];
  return next;
}

let h: Harness | undefined;
const order: string[] = [];
async function start(withActuated = true, podStats?: PodStatsProvider) {
  order.length = 0;
  const actuated = new Actuated();
  h = await Harness.start({
    ...(withActuated ? { actuatedResources: actuated } : {}),
    ...(podStats ? { podStats } : {}),
    podCgroups: {
      // The pod's limits, and how many container updates the runtime had seen by then.
      update: async (pod) => {
        const updated = h!.fake.calls.filter((m) => m === 'UpdateContainerResources').length;
        order.push(
          `pod:${pod.spec!.containers.map((c) => c.resources?.limits?.memory ?? '-').join(',')}@${updated}`,
        );
      },
    },
  });
  h.fake.addImage(IMAGE, 1000);
  return { h, actuated };
}
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function updates(hh: Harness, mark: number): { id: string; linux: Partial<LinuxContainerResources> }[] {
  return hh.fake.callLog.slice(mark).flatMap((c) => {
    if (c.method !== 'UpdateContainerResources') return [];
    const r = c.request as UpdateContainerResourcesRequest;
    const { cpuShares, cpuQuota, cpuPeriod, memoryLimitInBytes } = r.linux!;
    return [{ id: r.containerId, linux: { cpuShares, cpuQuota, cpuPeriod, memoryLimitInBytes } }];
  });
}

const Mi = 1024n * 1024n;

describe('in-place pod resize (syncPod with actuated resources)', () => {
  it('records what a start applied, then grows memory before cpu with UpdateContainerResources, once', async () => {
    const { h, actuated } = await start();
    const pod = makePod('grow', [ctr('c1', { resources: res('100m', '64Mi') })]);
    await h.sync(pod);
    const uid = pod.metadata!.uid!;
    expect(actuated.getActuatedResources(uid, 'c1')).toEqual(res('100m', '64Mi'));
    const id = (await h.status(pod)).containerStatuses[0]!.id.id;

    const mark = h.fake.callLog.length;
    const bigger = resized(pod, { c1: res('200m', '128Mi') });
    const result = await h.sync(bigger);
    expect(result.steps).toEqual([{ action: 'ResizePodInPlace', target: 'grow' }]);
    expect(updates(h, mark)).toEqual([
      {
        id,
        linux: { cpuShares: 102n, cpuQuota: 10_000n, cpuPeriod: 100_000n, memoryLimitInBytes: 128n * Mi },
      },
      {
        id,
        linux: { cpuShares: 204n, cpuQuota: 20_000n, cpuPeriod: 100_000n, memoryLimitInBytes: 128n * Mi },
      },
    ]);
    // In place: nothing stopped or created.
    expect(h.callsSince(mark)).not.toContain('StopContainer');
    expect(h.callsSince(mark)).not.toContain('CreateContainer');
    expect(actuated.getActuatedResources(uid, 'c1')).toEqual(res('200m', '128Mi'));
    // The runtime reports what it applied.
    expect((await h.status(bigger)).containerStatuses[0]!.resources).toEqual({
      cpuShares: 204n,
      cpuQuota: 20_000n,
      cpuPeriod: 100_000n,
      memoryLimitInBytes: 128n * Mi,
    });
    // Done: the next sync changes nothing.
    const again = h.fake.callLog.length;
    await h.sync(bigger);
    expect(updates(h, again)).toEqual([]);
    // The pod cgroup grew before the container's memory, then before its cpu; never after a grow.
    expect(order).toEqual(['pod:128Mi@0', 'pod:128Mi@1']);
  });

  it('applies decreases before increases and shrinks the pod cgroup after its containers', async () => {
    const { h } = await start();
    const pod = makePod('mixed', [
      ctr('up', { resources: res('100m', '64Mi') }),
      ctr('down', { resources: res('100m', '128Mi') }),
    ]);
    await h.sync(pod);
    const ids = new Map((await h.status(pod)).containerStatuses.map((s) => [s.id.id, s.name]));
    const mark = h.fake.callLog.length;
    order.length = 0;
    await h.sync(resized(pod, { up: res('100m', '96Mi'), down: res('100m', '32Mi') }));
    expect(updates(h, mark).map((u) => `${ids.get(u.id)}:${u.linux.memoryLimitInBytes! / Mi}`)).toEqual([
      'down:32',
      'up:96',
    ]);
    // One container grows and one shrinks, the pod's total shrinks (192Mi to 128Mi): the pod
    // cgroup takes it after both.
    const after = h.fake.calls.filter((m) => m === 'UpdateContainerResources').length;
    expect(order).toEqual([`pod:96Mi,32Mi@${after}`]);

    order.length = 0;
    await h.sync(resized(pod, { up: res('100m', '160Mi'), down: res('100m', '32Mi') }));
    // The total grows (128Mi to 192Mi): before the container.
    expect(order).toEqual([`pod:160Mi,32Mi@${after}`]);
  });

  it("moves cpu by its limit first: a lower request with a higher limit grows the pod's quota before the container's", async () => {
    const { h } = await start();
    const burst = (cpu: string, limit: string): V1ResourceRequirements => ({
      requests: { cpu, memory: '64Mi' },
      limits: { cpu: limit, memory: '64Mi' },
    });
    const pod = makePod('cpu', [ctr('c1', { resources: burst('20m', '30m') })]);
    await h.sync(pod);
    const updatesSoFar = () => h.fake.calls.filter((m) => m === 'UpdateContainerResources').length;
    const n0 = updatesSoFar();
    order.length = 0;
    const mark = h.fake.callLog.length;
    // On cgroup v1 a child's cpu.cfs_quota_us above its parent's is EINVAL.
    await h.sync(resized(pod, { c1: burst('15m', '35m') }));
    expect(order).toEqual([`pod:64Mi@${n0}`]);
    expect(updates(h, mark).map((u) => [u.linux.cpuQuota, u.linux.cpuShares])).toEqual([[3500n, 15n]]);

    // A higher request with a lower limit: the container first, then the pod's smaller quota
    // (with its larger shares).
    order.length = 0;
    await h.sync(resized(pod, { c1: burst('25m', '25m') }));
    expect(order).toEqual([`pod:64Mi@${n0 + 2}`]);
  });

  it('restarts a container whose resizePolicy says RestartContainer for the resource that changed', async () => {
    const { h, actuated } = await start();
    const policy = [
      { resourceName: 'cpu', restartPolicy: 'NotRequired' },
      { resourceName: 'memory', restartPolicy: 'RestartContainer' },
    ];
    const pod = makePod('policy', [ctr('c1', { resources: res('100m', '64Mi'), resizePolicy: policy })]);
    await h.sync(pod);
    const uid = pod.metadata!.uid!;
    // cpu only: resized in place.
    let mark = h.fake.callLog.length;
    const cpu = resized(pod, { c1: res('200m', '64Mi') });
    await h.sync(cpu);
    expect(updates(h, mark)).toHaveLength(1);
    expect(h.callsSince(mark)).not.toContain('StopContainer');
    // memory: stopped and started again with the new size.
    mark = h.fake.callLog.length;
    order.length = 0;
    const mem = resized(cpu, { c1: res('200m', '128Mi') });
    await h.sync(mem);
    expect(updates(h, mark)).toEqual([]);
    // The pod cgroup takes the new size before the container starts with it (a v1 child's
    // limit above its parent's is EINVAL).
    expect(order).toEqual(['pod:128Mi@1']);
    expect(h.callsSince(mark)).toEqual(
      expect.arrayContaining(['StopContainer', 'CreateContainer', 'StartContainer']),
    );
    expect(h.events.map((e) => e.message)).toContain('Container c1 resize requires restart');
    expect(actuated.getActuatedResources(uid, 'c1')).toEqual(res('200m', '128Mi'));
    const created = h.requests<{ config: { linux: { resources: LinuxContainerResources } } }>(
      'CreateContainer',
    );
    expect(created.at(-1)!.config.linux.resources.memoryLimitInBytes).toBe(128n * Mi);
  });

  it('restarts for a memory request change only when the memory policy says RestartContainer', async () => {
    const { h, actuated } = await start();
    const req = (memory: string): V1ResourceRequirements => ({
      requests: { cpu: '100m', memory },
      limits: { cpu: '200m', memory: '128Mi' },
    });
    const policy = (memory: string) => [
      { resourceName: 'cpu', restartPolicy: 'NotRequired' },
      { resourceName: 'memory', restartPolicy: memory },
    ];
    const restart = makePod('req-restart', [
      ctr('c1', { resources: req('64Mi'), resizePolicy: policy('RestartContainer') }),
    ]);
    const keep = makePod('req-keep', [
      ctr('c1', { resources: req('64Mi'), resizePolicy: policy('NotRequired') }),
    ]);
    await h.sync(restart);
    await h.sync(keep);
    let mark = h.fake.callLog.length;
    await h.sync(resized(restart, { c1: req('32Mi') }));
    // No cgroup value moves, so no update; the policy still restarts the container.
    expect(updates(h, mark)).toEqual([]);
    expect(h.callsSince(mark)).toEqual(expect.arrayContaining(['StopContainer', 'StartContainer']));
    expect(actuated.getActuatedResources(restart.metadata!.uid!, 'c1')).toEqual(req('32Mi'));

    mark = h.fake.callLog.length;
    await h.sync(resized(keep, { c1: req('32Mi') }));
    expect(updates(h, mark)).toEqual([]);
    expect(h.callsSince(mark)).not.toContain('StopContainer');
  });

  it('fails the step with ResizePodInPlaceError and keeps the actuated record when an update fails', async () => {
    const { h, actuated } = await start();
    const pod = makePod('fails', [ctr('c1', { resources: res('100m', '64Mi') })]);
    await h.sync(pod);
    h.fake.failNext('UpdateContainerResources', new Error('device or resource busy'));
    const result = await h.sync(resized(pod, { c1: res('100m', '32Mi') }));
    expect(result.steps).toMatchObject([
      { action: 'ResizePodInPlace', target: 'fails', reason: 'ResizePodInPlaceError' },
    ]);
    expect(result.steps[0]!.message).toContain('device or resource busy');
    expect(actuated.getActuatedResources(pod.metadata!.uid!, 'c1')).toEqual(res('100m', '64Mi'));
    // The next sync tries again.
    const mark = h.fake.callLog.length;
    await h.sync(resized(pod, { c1: res('100m', '32Mi') }));
    expect(updates(h, mark)).toHaveLength(1);
  });

  it("lowers no memory limit below the use: the step fails with the kubelet's message, nothing changes", async () => {
    let used: PodMemoryUsage = { pod: 40n * Mi, containers: new Map([['c1', 20n * Mi]]) };
    const reads: string[] = [];
    const { h, actuated } = await start(true, {
      podMemoryUsage: async (pod, status) => {
        reads.push(`${pod.metadata!.name}/${status.sandboxStatuses[0]!.id}`);
        return used;
      },
    });
    const pod = makePod('below', [ctr('c1', { resources: res('100m', '64Mi') })]);
    await h.sync(pod);
    const sandbox = (await h.status(pod)).sandboxStatuses[0]!.id;
    // Growing reads nothing.
    await h.sync(resized(pod, { c1: res('100m', '96Mi') }));
    expect(reads).toEqual([]);

    // Below the container's use: no call, no cgroup change, the record kept.
    let mark = h.fake.callLog.length;
    order.length = 0;
    const tiny = resized(pod, { c1: res('100m', '10Ki') });
    const result = await h.sync(tiny);
    expect(reads).toEqual([`below/${sandbox}`]);
    expect(result.steps).toMatchObject([{ action: 'ResizePodInPlace', reason: 'ResizePodInPlaceError' }]);
    // Upstream's e2e matches /memory limit \(\d+\) below current usage/.
    expect(result.steps[0]!.message).toBe(
      `attempting to set container "c1" memory limit (10240) below current usage (${20n * Mi})`,
    );
    expect(updates(h, mark)).toEqual([]);
    expect(order).toEqual([]);
    expect(actuated.getActuatedResources(pod.metadata!.uid!, 'c1')).toEqual(res('100m', '96Mi'));

    // Above the container's use but below the pod's (its containers' limits summed).
    used = { pod: 40n * Mi, containers: new Map([['c1', 1n * Mi]]) };
    const result2 = await h.sync(resized(pod, { c1: res('100m', '32Mi') }));
    expect(result2.steps[0]!.message).toBe(
      `attempting to set pod memory limit (${32n * Mi}) below current usage (${40n * Mi})`,
    );
    expect(updates(h, mark)).toEqual([]);

    // Once the use is below: lowered, as any decrease.
    used = { pod: 2n * Mi, containers: new Map([['c1', 1n * Mi]]) };
    mark = h.fake.callLog.length;
    const ok = await h.sync(resized(pod, { c1: res('100m', '32Mi') }));
    expect(ok.steps[0]!.error).toBeUndefined();
    expect(updates(h, mark).map((u) => u.linux.memoryLimitInBytes)).toEqual([32n * Mi]);
  });

  it('resizes a running sidecar (restartable init container) in place, before the app containers', async () => {
    const { h, actuated } = await start();
    const pod = makePod('sidecar', [ctr('c1', { resources: res('100m', '64Mi') })], {
      initContainers: [ctr('c1-init', { restartPolicy: 'Always', resources: res('100m', '64Mi') })],
    });
    await h.sync(pod); // the sidecar
    await h.sync(pod); // the app container
    const uid = pod.metadata!.uid!;
    expect(actuated.getActuatedResources(uid, 'c1-init')).toEqual(res('100m', '64Mi'));
    const ids = new Map((await h.status(pod)).containerStatuses.map((s) => [s.name, s.id.id]));
    expect([...ids.keys()].sort()).toEqual(['c1', 'c1-init']);

    const mark = h.fake.callLog.length;
    const bigger = resized(pod, { 'c1-init': res('200m', '128Mi'), c1: res('50m', '32Mi') });
    const result = await h.sync(bigger);
    expect(result.steps).toEqual([{ action: 'ResizePodInPlace', target: 'sidecar' }]);
    const name = new Map([...ids].map(([n, id]) => [id, n]));
    // Memory, then cpu; per resource the app container's decrease before the sidecar's increase.
    expect(
      updates(h, mark).map(
        (u) => `${name.get(u.id)}:${u.linux.memoryLimitInBytes! / Mi}/${u.linux.cpuShares}`,
      ),
    ).toEqual(['c1:32/102', 'c1-init:128/102', 'c1:32/51', 'c1-init:128/204']);
    expect(h.callsSince(mark)).not.toContain('StopContainer');
    expect(actuated.getActuatedResources(uid, 'c1-init')).toEqual(res('200m', '128Mi'));
    expect(
      (await h.status(bigger)).containerStatuses.find((s) => s.name === 'c1-init')!.resources,
    ).toMatchObject({
      cpuShares: 204n,
      memoryLimitInBytes: 128n * Mi,
    });
    const again = h.fake.callLog.length;
    await h.sync(bigger);
    expect(updates(h, again)).toEqual([]);
  });

  it('restarts a sidecar whose resizePolicy says RestartContainer, leaving the app container running', async () => {
    const { h, actuated } = await start();
    const policy = [
      { resourceName: 'cpu', restartPolicy: 'RestartContainer' },
      { resourceName: 'memory', restartPolicy: 'NotRequired' },
    ];
    const pod = makePod('sidecar-restart', [ctr('c1', { resources: res('100m', '64Mi') })], {
      initContainers: [
        ctr('c1-init', { restartPolicy: 'Always', resources: res('100m', '64Mi'), resizePolicy: policy }),
      ],
    });
    await h.sync(pod);
    await h.sync(pod);
    const before = new Map((await h.status(pod)).containerStatuses.map((s) => [s.name, s.id.id]));
    const mark = h.fake.callLog.length;
    order.length = 0;
    const cpu = resized(pod, { 'c1-init': res('200m', '64Mi') });
    await h.sync(cpu);
    expect(updates(h, mark)).toEqual([]);
    expect(h.events.map((e) => e.message)).toContain('Container c1-init resize requires restart');
    const stopped = h.requests<{ containerId: string }>('StopContainer').map((r) => r.containerId);
    expect(stopped).toContain(before.get('c1-init'));
    expect(stopped).not.toContain(before.get('c1'));
    const after = (await h.status(cpu)).containerStatuses.filter((s) => s.state === 'running');
    expect(after.find((s) => s.name === 'c1')!.id.id).toBe(before.get('c1'));
    expect(after.find((s) => s.name === 'c1-init')!.id.id).not.toBe(before.get('c1-init'));
    expect(actuated.getActuatedResources(pod.metadata!.uid!, 'c1-init')).toEqual(res('200m', '64Mi'));
    const created = h.requests<{ config: { linux: { resources: LinuxContainerResources } } }>(
      'CreateContainer',
    );
    expect(created.at(-1)!.config.linux.resources.cpuShares).toBe(204n);
    // The pod cgroup took the new size in the same pass.
    expect(order).toHaveLength(1);
  });

  it("checks a sidecar's memory limit decrease against its own use and the pod's, sidecars included", async () => {
    let used: PodMemoryUsage = { pod: 10n * Mi, containers: new Map([['c1-init', 20n * Mi]]) };
    const { h } = await start(true, { podMemoryUsage: async () => used });
    const pod = makePod('sidecar-below', [ctr('c1', { resources: res('100m', '64Mi') })], {
      initContainers: [ctr('c1-init', { restartPolicy: 'Always', resources: res('100m', '64Mi') })],
    });
    await h.sync(pod);
    await h.sync(pod);
    const mark = h.fake.callLog.length;
    const small = resized(pod, { 'c1-init': res('100m', '16Mi') });
    const result = await h.sync(small);
    expect(result.steps[0]!.message).toBe(
      `attempting to set container "c1-init" memory limit (${16n * Mi}) below current usage (${20n * Mi})`,
    );
    expect(updates(h, mark)).toEqual([]);
    // The pod's limit is its app containers' and sidecars' summed: 64Mi + 16Mi.
    used = { pod: 90n * Mi, containers: new Map([['c1-init', 1n * Mi]]) };
    const result2 = await h.sync(small);
    expect(result2.steps[0]!.message).toBe(
      `attempting to set pod memory limit (${80n * Mi}) below current usage (${90n * Mi})`,
    );
    used = { pod: 70n * Mi, containers: new Map([['c1-init', 1n * Mi]]) };
    const ok = await h.sync(small);
    expect(ok.steps[0]!.error).toBeUndefined();
    expect(updates(h, mark).map((u) => u.linux.memoryLimitInBytes)).toEqual([16n * Mi]);
  });

  it('never resizes without an actuated record keeper', async () => {
    const { h } = await start(false);
    const pod = makePod('off', [ctr('c1', { resources: res('100m', '64Mi') })]);
    await h.sync(pod);
    const mark = h.fake.callLog.length;
    await h.sync(resized(pod, { c1: res('200m', '128Mi') }));
    expect(updates(h, mark)).toEqual([]);
    expect(h.callsSince(mark)).not.toContain('StopContainer');
  });
});
