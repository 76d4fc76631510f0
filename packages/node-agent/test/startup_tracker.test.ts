import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { PodApi } from '../src/api/pod_api.js';
import { PodStartupTracker, prepareSteps } from '../src/pods/startup_tracker.js';
import type { PodSource, PodUpdate } from '../src/types/pod_update.js';

const pod = (name: string, containers = 1): V1Pod => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}` },
  spec: { containers: Array.from({ length: containers }, (_, i) => ({ name: `c${i}` })) },
});

const running = (n: number): V1PodStatus => ({
  containerStatuses: Array.from({ length: n }, (_, i) => ({
    name: `c${i}`,
    image: 'i',
    imageID: '',
    ready: false,
    restartCount: 0,
    state: { running: {} },
  })),
});

/** A runtime whose calls take `ms` of the fake clock each. */
function fakeCri(clock: FakeClock, ms: Record<string, number>) {
  let ids = 0;
  const took = async <T>(method: string, result: T, fail = false): Promise<T> => {
    clock.step(ms[method] ?? 0);
    if (fail) throw new Error(`${method} failed`);
    return result;
  };
  const failNext = new Set<string>();
  const cri = {
    runPodSandbox: () => took('runPodSandbox', { podSandboxId: 's' }, failNext.delete('runPodSandbox')),
    createContainer: () => took('createContainer', { containerId: `ctr-${++ids}` }),
    startContainer: () => took('startContainer', {}, failNext.delete('startContainer')),
  };
  return { cri: cri as unknown as CriClient, failNext };
}

const podApi = (clock: FakeClock, ms: number): PodApi => ({
  getPod: async () => undefined,
  deletePod: async () => {},
  getSecret: async () => undefined,
  patchPodStatus: async () => {
    clock.step(ms);
    return {};
  },
});

const sandboxConfig = (p: V1Pod) => ({ metadata: { uid: p.metadata?.uid ?? '' } });

describe('PodStartupTracker', () => {
  it('records every step of a pod with two containers, and stops at the status with both running', async () => {
    const clock = new FakeClock(1_000);
    const t = new PodStartupTracker({ clock });
    const { cri: raw } = fakeCri(clock, {
      runPodSandbox: 90,
      createContainer: 10,
      startContainer: 40,
    });
    const cri = t.cri(raw);
    const api = t.podApi(podApi(clock, 7));
    const p = pod('a', 2);
    const updates: PodUpdate[] = [];
    const source: PodSource = {
      ready: () => true,
      run: async (_signal, deliver) => deliver({ op: 'ADD', pods: [p], source: 'api' }),
    };
    await t.source(source).run(new AbortController().signal, (u) => updates.push(u));
    expect(updates).toHaveLength(1); // delivered on, unchanged
    clock.step(5);
    t.admitted('uid-a');
    clock.step(1);
    t.workerStarted('uid-a');
    clock.step(20); // the worker's own preparations
    await cri.runPodSandbox({ config: sandboxConfig(p) });
    for (const _ of [0, 1]) {
      clock.step(3); // image check, config
      const { containerId } = await cri.createContainer({
        podSandboxId: 's',
        sandboxConfig: sandboxConfig(p),
      });
      await cri.startContainer({ containerId });
    }
    // A status with one container running does not complete the start-up; both do.
    await api.patchPodStatus('ns', 'a', running(1));
    clock.step(2);
    await api.patchPodStatus('ns', 'a', running(2));
    // Later calls (a restart) are not start-up.
    const again = await cri.createContainer({ podSandboxId: 's', sandboxConfig: sandboxConfig(p) });
    await cri.startContainer({ containerId: again.containerId });

    expect(t.list()).toEqual([
      {
        uid: 'uid-a',
        namespace: 'ns',
        name: 'a',
        seenAt: 1_000,
        admittedAt: 1_005,
        workerStartedAt: 1_006,
        sandboxStartedAt: 1_026,
        sandboxReadyAt: 1_116,
        createMs: 20,
        startMs: 80,
        startedAt: 1_222,
        statusWrittenAt: 1_238,
      },
    ]);
  });

  it("splits prepare into its steps, the first pass's only, up to RunPodSandbox", async () => {
    const clock = new FakeClock(1_000);
    const t = new PodStartupTracker({ clock });
    const cri = t.cri(fakeCri(clock, { runPodSandbox: 90 }).cri);
    const p = pod('a');
    t.seen(p);
    t.admitted('uid-a');
    t.workerStarted('uid-a');
    const steps = [
      ['status', 2],
      ['cgroups', 30],
      ['secrets', 1],
    ] as const;
    for (const [step, ms] of steps) {
      clock.step(ms);
      t.prepared('uid-a', step);
    }
    clock.step(7); // the runtime's actions and the sandbox config
    await cri.runPodSandbox({ config: sandboxConfig(p) });
    // A later pass (the sandbox is there) changes nothing.
    clock.step(100);
    t.prepared('uid-a', 'cgroups');
    const [r] = t.list();
    expect(r?.preparedAt).toEqual({ status: 1_002, cgroups: 1_032, secrets: 1_033 });
    expect(prepareSteps(r!)).toEqual([2, 30, 1, 7]);
    // They add up to the prepare stage.
    expect((r?.sandboxStartedAt ?? 0) - (r?.workerStartedAt ?? 0)).toBe(40);
    expect(prepareSteps({ ...r!, preparedAt: { status: 1_002 } })).toBeUndefined();
  });

  it('keeps the first sandbox attempt and counts failed calls as time spent', async () => {
    const clock = new FakeClock(0);
    const t = new PodStartupTracker({ clock });
    const { cri: raw, failNext } = fakeCri(clock, {
      runPodSandbox: 50,
      createContainer: 10,
      startContainer: 30,
    });
    const cri = t.cri(raw);
    const p = pod('b');
    t.seen(p);
    failNext.add('runPodSandbox');
    await expect(cri.runPodSandbox({ config: sandboxConfig(p) })).rejects.toThrow('runPodSandbox failed');
    expect(t.list()[0]).toMatchObject({ sandboxStartedAt: 0 });
    expect(t.list()[0]?.sandboxReadyAt).toBeUndefined();
    clock.step(100);
    await cri.runPodSandbox({ config: sandboxConfig(p) });
    const first = await cri.createContainer({ sandboxConfig: sandboxConfig(p) });
    failNext.add('startContainer');
    await expect(cri.startContainer({ containerId: first.containerId })).rejects.toThrow();
    const second = await cri.createContainer({ sandboxConfig: sandboxConfig(p) });
    await cri.startContainer({ containerId: second.containerId });
    expect(t.list()[0]).toMatchObject({
      sandboxStartedAt: 0,
      sandboxReadyAt: 200,
      createMs: 20,
      startMs: 60,
      startedAt: 280,
    });
  });

  it('passes other calls through to a real client, and ignores pods it never saw', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kh-startup-'));
    const fake = await FakeRuntime.start({ socketPath: join(dir, 'cri.sock') });
    const raw = await CriClient.connect(fake.endpoint);
    try {
      const t = new PodStartupTracker({ clock: new FakeClock(0) });
      const cri = t.cri(raw);
      expect((await cri.version({})).runtimeName).toBe((await raw.version({})).runtimeName);
      const { podSandboxId } = await cri.runPodSandbox({
        config: { metadata: { name: 'x', namespace: 'ns', uid: 'unknown' } },
      });
      expect(podSandboxId).not.toBe('');
      expect(t.list()).toEqual([]);
      cri.close();
      await expect(raw.version({})).rejects.toThrow();
    } finally {
      raw.close();
      await fake.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists by namespace, keeps a bounded number of pods, oldest out first', () => {
    const clock = new FakeClock(0);
    const t = new PodStartupTracker({ clock, capacity: 2 });
    t.seen(pod('x'));
    t.seen({ ...pod('y'), metadata: { name: 'y', namespace: 'other', uid: 'uid-y' } });
    t.seen(pod('z'));
    t.seen(pod('z')); // seen again: the first sighting counts
    expect(t.list().map((r) => r.name)).toEqual(['y', 'z']);
    expect(t.list('ns').map((r) => r.name)).toEqual(['z']);
  });
});
