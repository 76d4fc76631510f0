import { FakeClock } from '@kh/apimachinery';
import type { V1PodStatus } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import { mergePodStatus, PodStatusManager } from '../src/status/status_manager.js';
import { MemoryNodeApi } from './helpers/memory_api.js';

function setup() {
  const api = new MemoryNodeApi();
  const clock = new FakeClock();
  const sm = new PodStatusManager({ api, clock });
  const pod = api.addPod({
    metadata: { name: 'web', namespace: 'default' },
    spec: {
      nodeName: 'node-a',
      containers: [
        { name: 'a', image: 'x' },
        { name: 'b', image: 'x' },
      ],
    },
    status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True' }] },
  });
  return { api, clock, sm, pod };
}

const running = (ready: boolean): V1PodStatus => ({
  phase: 'Running',
  podIP: '10.0.0.7',
  startTime: new Date(1000),
  conditions: [
    { type: 'Initialized', status: 'True' },
    { type: 'ContainersReady', status: ready ? 'True' : 'False' },
    { type: 'Ready', status: ready ? 'True' : 'False' },
  ],
  containerStatuses: ['a', 'b'].map((name) => ({
    name,
    ready,
    restartCount: 0,
    image: 'x',
    imageID: 'sha256:x',
    containerID: `containerd://${name}`,
    state: { running: { startedAt: new Date(1000) } },
  })),
});

describe('PodStatusManager', () => {
  it('writes its status again when another writer changed it (the node lifecycle controller), and only then', async () => {
    const api = new MemoryNodeApi();
    // The pod manager's copy: what the watch last delivered, here the API's own object.
    const sm = new PodStatusManager({
      api,
      clock: new FakeClock(),
      apiPod: () => api.pods.get('default/web'),
    });
    const pod = api.addPod({
      metadata: { name: 'web', namespace: 'default' },
      spec: { nodeName: 'node-a', containers: [{ name: 'a', image: 'x' }] },
      status: { phase: 'Pending' },
    });
    sm.setPodStatus(pod, running(true));
    await sm.syncBatch();
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(1);
    // The node was Unknown for a while: the controller marked the pod not Ready.
    const stored = api.pods.get('default/web')!;
    stored.status = {
      ...stored.status,
      conditions: stored.status!.conditions!.map((c) => (c.type === 'Ready' ? { ...c, status: 'False' } : c)),
    };
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(2);
    expect(api.pods.get('default/web')?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe(
      'True',
    );
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(2);
  });

  it('patches only when the status changed', async () => {
    const { api, sm, pod } = setup();
    sm.setPodStatus(pod, running(true));
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(1);
    expect(api.pods.get('default/web')?.status).toMatchObject({ phase: 'Running', podIP: '10.0.0.7' });
    sm.setPodStatus(pod, running(true));
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(1);
    sm.setPodStatus(pod, running(false));
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(2);
  });

  it('writes a status set during a pass in that pass, and one that changed while being written again', async () => {
    const { api, sm, pod } = setup();
    const db = api.addPod({
      metadata: { name: 'db', namespace: 'default' },
      spec: { nodeName: 'node-a', containers: [{ name: 'a', image: 'x' }] },
      status: { phase: 'Pending' },
    });
    // The read of web hangs until released, as on a slow API server.
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const getPod = api.getPod.bind(api);
    api.getPod = async (namespace, name) => {
      if (name === 'web') await gate;
      return getPod(namespace, name);
    };
    sm.setPodStatus(pod, running(false));
    const pass = sm.syncBatch();
    sm.setPodStatus(db, running(true));
    sm.setPodStatus(pod, running(true));
    await vi.waitFor(() => expect(api.podStatusPatches.map((p) => p.name)).toEqual(['db']), {
      timeout: 10_000,
    });
    release();
    await pass;
    expect(api.podStatusPatches.map((p) => p.name)).toEqual(['db', 'web', 'web']);
    expect(api.pods.get('default/web')?.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'True' }),
    );
  });

  it('hands out the stored status without copying it, frozen so no reader can change it', () => {
    const { sm, pod } = setup();
    const mine = running(true);
    sm.setPodStatus(pod, mine);
    const got = sm.getPodStatus(pod.metadata?.uid ?? '');
    expect(got).toBe(sm.getPodStatus(pod.metadata?.uid ?? ''));
    expect(Object.isFrozen(got)).toBe(true);
    expect(Object.isFrozen(got?.containerStatuses?.[0]?.state)).toBe(true);
    expect(() => {
      (got as { phase?: string }).phase = 'Failed';
    }).toThrow(TypeError);
    // The caller's own object stays its own.
    mine.phase = 'Pending';
    expect(sm.getPodStatus(pod.metadata?.uid ?? '')?.phase).toBe('Running');
  });

  it('keeps condition transition times and startTime across updates', async () => {
    const { api, clock, sm, pod } = setup();
    sm.setPodStatus(pod, running(false));
    const t0 = clock.now();
    await clock.advance(5_000);
    const later = running(false);
    later.startTime = new Date(99_000);
    later.podIP = '10.0.0.8';
    sm.setPodStatus(pod, later);
    await clock.advance(5_000);
    sm.setPodStatus(pod, { ...running(true), podIP: '10.0.0.8' });
    await sm.syncBatch();
    const stored = api.pods.get('default/web')?.status;
    const cond = (t: string) => stored?.conditions?.find((c) => c.type === t);
    expect(cond('Initialized')?.lastTransitionTime).toEqual(new Date(t0));
    expect(cond('Ready')?.lastTransitionTime).toEqual(new Date(t0 + 10_000));
    expect(stored?.startTime).toEqual(new Date(1000));
  });

  it('keeps conditions owned by others and the scheduler’s PodScheduled', async () => {
    const { api, sm, pod } = setup();
    api.pods.get('default/web')!.status!.conditions!.push({ type: 'example.com/gate', status: 'True' });
    sm.setPodStatus(pod, running(true));
    await sm.syncBatch();
    const types = api.pods.get('default/web')?.status?.conditions?.map((c) => c.type);
    expect(types).toEqual(['PodScheduled', 'Initialized', 'ContainersReady', 'Ready', 'example.com/gate']);
    expect(mergePodStatus(undefined, { phase: 'Pending' }).conditions).toEqual([]);
  });

  it('forgets the statuses of pods no source lists any more', async () => {
    const { api, sm, pod } = setup();
    sm.setPodStatus(pod, running(true));
    sm.removeOrphanedStatuses(new Set([pod.metadata!.uid!]));
    expect(sm.getPodStatus(pod.metadata!.uid!)).toBeDefined();
    sm.removeOrphanedStatuses(new Set());
    expect(sm.getPodStatus(pod.metadata!.uid!)).toBeUndefined();
    api.calls.length = 0;
    await sm.syncBatch();
    expect(api.calls).toEqual([]);
  });

  it('writes DisruptionTarget when it has one, and keeps another writer’s otherwise', () => {
    const theirs = { type: 'DisruptionTarget', status: 'True', reason: 'PreemptionByScheduler' };
    const mine = { type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet' };
    expect(mergePodStatus({ conditions: [theirs] }, { conditions: [] }).conditions).toEqual([theirs]);
    expect(mergePodStatus({ conditions: [theirs] }, { conditions: [mine] }).conditions).toEqual([mine]);
  });

  it('retries conflicts on a fresh read, and other failures on the next pass', async () => {
    const { api, sm, pod } = setup();
    api.podConflicts = 2;
    sm.setPodStatus(pod, running(true));
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(1);
    expect(api.calls.filter((c) => c === 'getPod')).toHaveLength(3);
    sm.setPodStatus(pod, running(false));
    api.down = true;
    await sm.syncBatch();
    api.down = false;
    await sm.syncBatch();
    expect(api.pods.get('default/web')?.status?.containerStatuses?.[0]?.ready).toBe(false);
  });

  it('never moves a pod out of a terminal phase', () => {
    const { sm, pod } = setup();
    sm.setPodStatus(pod, { phase: 'Failed', reason: 'OutOfcpu' });
    sm.setPodStatus(pod, { phase: 'Running' });
    expect(sm.getPodStatus(pod.metadata!.uid!)?.phase).toBe('Failed');
  });

  it('drives ContainersReady and Ready from container readiness', () => {
    const { sm, pod } = setup();
    sm.setPodStatus(pod, running(false));
    const uid = pod.metadata!.uid!;
    sm.setContainerReadiness(pod, 'containerd://a', true);
    let s = sm.getPodStatus(uid);
    expect(s?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [b]',
    });
    // The prober reports bare runtime ids.
    sm.setContainerReadiness(pod, 'b', true);
    s = sm.getPodStatus(uid);
    expect(s?.conditions?.find((c) => c.type === 'ContainersReady')?.status).toBe('True');
    expect(s?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    sm.setContainerReadiness(pod, 'containerd://unknown', false);
    expect(sm.getPodStatus(uid)).toEqual(s);
  });

  it("flips a sidecar's readiness and counts it against the pod, but not a regular init container", () => {
    const { sm, pod } = setup();
    const withInits = structuredClone(pod);
    withInits.spec!.initContainers = [
      { name: 'side', image: 'x', restartPolicy: 'Always' },
      { name: 'setup', image: 'x' },
    ];
    const uid = pod.metadata!.uid!;
    const init = (name: string, ready: boolean) => ({
      name,
      ready,
      restartCount: 0,
      image: 'x',
      imageID: 'sha256:x',
      containerID: `containerd://${name}`,
      state: name === 'side' ? { running: {} } : { terminated: { exitCode: 0 } },
    });
    sm.setPodStatus(withInits, {
      ...running(true),
      initContainerStatuses: [init('side', true), init('setup', false)],
    });
    sm.setContainerReadiness(withInits, 'side', false);
    const s = sm.getPodStatus(uid);
    expect(s?.initContainerStatuses?.[0]?.ready).toBe(false);
    expect(s?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      message: 'containers with unready status: [side]',
    });
    sm.setContainerReadiness(withInits, 'containerd://side', true);
    expect(sm.getPodStatus(uid)?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
  });

  it('finishes graceful deletion once nothing runs: grace 0, UID-guarded', async () => {
    const { api, sm, pod } = setup();
    sm.setPodStatus(pod, running(true));
    await sm.syncBatch();
    api.pods.get('default/web')!.metadata!.deletionTimestamp = new Date(5000);
    sm.setPodStatus(pod, running(false)); // the pod worker is killing it
    await sm.syncBatch();
    await sm.syncBatch();
    expect(api.pods.has('default/web')).toBe(true); // containers still running
    const patches = api.podStatusPatches.length;
    sm.terminatePod(pod);
    const terminated = sm.getPodStatus(pod.metadata!.uid!);
    expect(terminated?.containerStatuses?.[0]?.state?.terminated).toEqual({
      exitCode: 137,
      reason: 'ContainerStatusUnknown',
      message: 'The container could not be located when the pod was terminated',
    });
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(patches + 1); // the terminated states were written first
    expect(api.pods.has('default/web')).toBe(false);
    expect(api.calls.filter((c) => c === 'deletePod')).toHaveLength(1);
  });

  it('deletes a pod only once its worker is done with it (terminatePod), even with nothing running', async () => {
    const { api, sm, pod } = setup();
    sm.setPodStatus(pod, running(true));
    await sm.syncBatch();
    api.pods.get('default/web')!.metadata!.deletionTimestamp = new Date(5000);
    const stopped = structuredClone(sm.getPodStatus(pod.metadata!.uid!)!);
    stopped.phase = 'Failed';
    for (const c of stopped.containerStatuses ?? []) c.state = { terminated: { exitCode: 0 } };
    sm.setPodStatus(pod, stopped); // the kill returned; the worker's last pass has not run
    await sm.syncBatch();
    expect(api.pods.has('default/web')).toBe(true);
    sm.terminatePod(pod);
    await sm.syncBatch();
    expect(api.pods.has('default/web')).toBe(false);
  });

  it('forgets a pod that was replaced by another with the same name', async () => {
    const { api, sm, pod } = setup();
    sm.setPodStatus(pod, running(true));
    api.pods.delete('default/web');
    api.addPod({ metadata: { name: 'web', namespace: 'default' }, spec: { containers: [] } });
    await sm.syncBatch();
    expect(api.podStatusPatches).toHaveLength(0);
    expect(sm.getPodStatus(pod.metadata!.uid!)).toBeUndefined();
  });

  it('syncs at once when a status is set, then every period', async () => {
    const { api, clock, sm, pod } = setup();
    const abort = new AbortController();
    const loop = sm.run(abort.signal);
    await clock.advance(0);
    sm.setPodStatus(pod, running(true));
    await clock.advance(0);
    expect(api.podStatusPatches).toHaveLength(1);
    api.down = true;
    sm.setPodStatus(pod, running(false));
    await clock.advance(0);
    api.down = false;
    await clock.advance(10_000);
    expect(api.podStatusPatches).toHaveLength(2);
    abort.abort();
    await loop;
  });
});
