import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { StopContainerRequest } from '@kh/cri-api';
import { describe, expect, it } from 'vitest';
import { ctr, type Harness, harnessPerTest, makePod } from './harness.js';

let h: Harness;
harnessPerTest((started) => {
  h = started;
});

describe('adoption after an agent restart', () => {
  it('a new manager rebuilds pod state from the runtime and leaves running pods alone', async () => {
    const pod = makePod('adopt', [ctr('app'), ctr('side')], { initContainers: [ctr('init')] });
    h.fake.script.containerExit('init', { afterMs: 0, exitCode: 0 });
    await h.sync(pod);
    await h.sync(pod);
    const before = await h.status(pod);

    const fresh = await h.newManager();
    const pods = await fresh.getPods(false);
    expect(pods.map((p) => [p.uid, p.name, p.namespace, p.containers.map((c) => c.name).sort()])).toEqual([
      [pod.metadata!.uid, 'adopt', 'default', ['app', 'side']],
    ]);
    const st = await h.status(pod, fresh);
    expect(st.containerStatuses.map((c) => [c.name, c.state, c.hash, c.restartCount])).toEqual(
      before.containerStatuses.map((c) => [c.name, c.state, c.hash, c.restartCount]),
    );
    const mark = h.fake.calls.length;
    const r = await fresh.syncPod(pod, st, [], h.backoff);
    expect(r.steps).toEqual([]);
    expect(h.callsSince(mark).filter((m) => /^(Create|Start|Stop|Remove|Run)/.test(m))).toEqual([]);
  });

  it('kills an orphaned pod with the preStop hook and grace period stored on its containers', async () => {
    const pod = makePod('orphan', [ctr('app', { lifecycle: { preStop: { exec: { command: ['bye'] } } } })], {
      terminationGracePeriodSeconds: 17,
    });
    await h.sync(pod);
    const fresh = await h.newManager();
    const running = (await fresh.getPods(false))[0]!;
    await fresh.killPod(undefined, running);
    expect(h.requests<{ cmd: string[] }>('ExecSync').map((e) => e.cmd)).toEqual([['bye']]);
    expect(Number(h.requests<StopContainerRequest>('StopContainer')[0]!.timeout)).toBe(17);
    expect(h.fake.sandboxes()[0]!.state).toBe(1);
  });
});

describe('container garbage collection', () => {
  async function crashLoop(name: string, restarts: number) {
    const pod = makePod(name, [ctr('app')]);
    await h.sync(pod);
    for (let i = 0; i < restarts; i++) {
      h.advance(1000);
      h.fake.exitContainer((await h.status(pod)).containerStatuses[0]!.id.id, 1);
      h.advance(400_000); // past any backoff
      await h.sync(pod);
    }
    return pod;
  }

  it('keeps maxPerPodContainer dead instances per container, removing the oldest and their logs', async () => {
    const pod = await crashLoop('gc1', 3); // 3 dead + 1 running
    const dead = (await h.status(pod)).containerStatuses.filter((c) => c.state === 'exited');
    expect(dead.map((c) => c.restartCount)).toEqual([2, 1, 0]);
    for (const c of dead) {
      await mkdir(dirname(c.logPath!), { recursive: true });
      await writeFile(c.logPath!, 'x');
    }
    const report = await h.manager.garbageCollectWithReport(
      { minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 },
      true,
      false,
    );
    expect(report.errors).toEqual([]);
    expect(report.removedContainers).toEqual([dead[2]!.id.id, dead[1]!.id.id]);
    const left = (await h.status(pod)).containerStatuses.map((c) => c.restartCount);
    expect(left).toEqual([3, 2]);
    expect(await readdir(dirname(dead[0]!.logPath!))).toEqual(['2.log']);
  });

  it('respects minAge and treats -1 as no limit', async () => {
    const pod = await crashLoop('gc2', 2);
    const none = await h.manager.garbageCollectWithReport(
      { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 },
      true,
      false,
    );
    expect(none.removedContainers).toEqual([]);
    const young = await h.manager.garbageCollectWithReport(
      { minAgeMs: 10 * 3_600_000, maxPerPodContainer: 0, maxContainers: 0 },
      true,
      false,
    );
    expect(young.removedContainers).toEqual([]);
    expect((await h.status(pod)).containerStatuses).toHaveLength(3);
  });

  it('removes the containers, dead sandboxes and log directory of deleted pods', async () => {
    const gone = await crashLoop('gone', 1);
    const kept = await crashLoop('kept', 1);
    await h.manager.killPod(
      gone,
      (await h.manager.getPods(false)).find((p) => p.uid === gone.metadata!.uid)!,
    );
    const logDir = join(h.logsDir, `default_gone_${gone.metadata!.uid}`);
    await mkdir(logDir, { recursive: true });
    const deleted = new Set([gone.metadata!.uid!]);
    const fresh = await h.newManager({
      podStateProvider: {
        shouldPodContentBeRemoved: (u) => deleted.has(u),
        shouldPodRuntimeBeRemoved: (u) => deleted.has(u),
      },
    });
    // Not all sources ready: containers of deleted pods stay, the dead sandbox can go once empty.
    const early = await fresh.garbageCollectWithReport(
      { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 },
      false,
      false,
    );
    expect(early.removedContainers).toEqual([]);
    expect(early.removedLogDirs).toEqual([]);
    const report = await fresh.garbageCollectWithReport(
      { minAgeMs: 0, maxPerPodContainer: -1, maxContainers: -1 },
      true,
      false,
    );
    expect(report.errors).toEqual([]);
    expect(report.removedContainers).toHaveLength(2);
    expect(report.removedSandboxes).toHaveLength(1);
    expect(report.removedLogDirs).toEqual([`default_gone_${gone.metadata!.uid}`]);
    await expect(stat(logDir)).rejects.toThrow(/ENOENT/);
    expect(h.fake.sandboxes().map((s) => s.labels['io.kubernetes.pod.uid'])).toEqual([kept.metadata!.uid]);
    expect((await h.status(kept)).containerStatuses).toHaveLength(2);
  });

  it('shares maxContainers fairly between pods', async () => {
    const a = await crashLoop('fa', 3);
    const b = await crashLoop('fb', 1);
    await h.manager.garbageCollect({ minAgeMs: 0, maxPerPodContainer: -1, maxContainers: 2 }, true, false);
    const dead = async (p: typeof a) =>
      (await h.status(p)).containerStatuses.filter((c) => c.state === 'exited').length;
    expect([await dead(a), await dead(b)]).toEqual([1, 1]);
  });

  it('goes on after a removal fails, and then throws every failure at once', async () => {
    const pod = await crashLoop('fails', 3);
    h.fake.failNext('RemoveContainer', new Error('device or resource busy'));
    const err = await h.manager
      .garbageCollect({ minAgeMs: 0, maxPerPodContainer: 1, maxContainers: -1 }, true, false)
      .catch((e: AggregateError) => e);
    expect(err).toBeInstanceOf(AggregateError);
    expect((err as AggregateError).message).toMatch(/^container GC: .*device or resource busy$/);
    expect((err as AggregateError).errors).toHaveLength(1);
    // The other dead instance went all the same.
    const dead = (await h.status(pod)).containerStatuses.filter((c) => c.state === 'exited');
    expect(dead).toHaveLength(2);
  });

  it('rejects a policy whose per-container cap exceeds the total', async () => {
    await expect(
      h.manager.garbageCollect({ minAgeMs: 0, maxPerPodContainer: 5, maxContainers: 2 }, true, false),
    ).rejects.toThrow(/maxPerPodContainer \(5\) must not be greater than maxContainers \(2\)/);
  });
});
