// What a pod create costs the runtime: the CRI calls of a syncPod for a new pod, and what runs
// while the sandbox is being created. The runtime manager's benchmark counts every
// call beyond RunPodSandbox, CreateContainer and StartContainer as overhead unless it overlaps one.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type CriClient, UnavailableError } from '@kh/cri-api';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ctr, type Harness, harnessPerTest, makePod } from './harness.js';

let h: Harness;
harnessPerTest((started) => {
  h = started;
});

/**
 * A manager whose RunPodSandbox is held until the container's preparation has visibly started
 * (an ImageStatus call, the termination message directory) or 2s have passed; the log says in
 * which order things happened.
 */
async function managerLoggingOverlap(pod: V1Pod): Promise<string[]> {
  const cri = h.clients[0]!;
  const log: string[] = [];
  const terminationDir = join(h.podsDir, pod.metadata!.uid!, 'containers', 'app');
  // The client's calls are read-only own properties; an object inheriting from it can shadow one.
  const logged: CriClient = Object.create(cri, {
    runPodSandbox: {
      value: async (...args: Parameters<CriClient['runPodSandbox']>) => {
        log.push('RunPodSandbox start');
        const until = Date.now() + 2000;
        while (Date.now() < until && !(log.includes('ImageStatus start') && existsSync(terminationDir))) {
          await new Promise((r) => setTimeout(r, 5));
        }
        if (existsSync(terminationDir)) log.push('termination message dir made');
        const res = await cri.runPodSandbox(...args);
        log.push('RunPodSandbox end');
        return res;
      },
    },
    imageStatus: {
      value: async (...args: Parameters<CriClient['imageStatus']>) => {
        log.push('ImageStatus start');
        return cri.imageStatus(...args);
      },
    },
  });
  h.manager = await h.newManager({ cri: logged });
  return log;
}

describe('the CRI calls of a pod create', () => {
  it('are the three essential ones plus one image check and one sandbox status read', async () => {
    const pod = makePod('calls', [ctr('app')]);
    const status = await h.status(pod);
    const mark = h.fake.calls.length;
    const r = await h.manager.syncPod(pod, status, [], h.backoff);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    expect(h.callsSince(mark).sort()).toEqual(
      ['CreateContainer', 'ImageStatus', 'PodSandboxStatus', 'RunPodSandbox', 'StartContainer'].sort(),
    );
  });

  it('checks the image and makes the termination message dir while the sandbox is being created', async () => {
    const pod = makePod('overlap', [ctr('app')]);
    const log = await managerLoggingOverlap(pod);
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    expect([...log].sort()).toEqual(
      [
        'ImageStatus start',
        'RunPodSandbox end',
        'RunPodSandbox start',
        'termination message dir made',
      ].sort(),
    );
    expect(log.at(-1)).toBe('RunPodSandbox end');
  });

  it('mounts a world-writable termination message file, whatever the umask, for non-root containers', async () => {
    const pod = makePod('tmsg', [ctr('app')]);
    const r = await h.sync(pod);
    expect(r.steps.filter((s) => s.error)).toEqual([]);
    const dir = join(h.podsDir, pod.metadata!.uid!, 'containers', 'app');
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(statSync(join(dir, files[0]!)).mode & 0o777).toBe(0o666);
  });

  it('still fails the container with ImageInspectError when that early check fails', async () => {
    h.fake.failNext('ImageStatus', new UnavailableError('image service busy'));
    const pod = makePod('inspect', [ctr('app')]);
    const r = await h.sync(pod);
    expect(r.steps.map((s) => [s.action, s.reason])).toEqual([
      ['CreatePodSandbox', undefined],
      ['StartContainer', 'ImageInspectError'],
    ]);
    expect(r.steps[1]!.message).toMatch(/^Failed to inspect image ".*": .*image service busy/);
    expect(h.events.filter((e) => e.reason === 'InspectFailed')).toHaveLength(1);
    expect(h.fake.containers()).toEqual([]);
    // The next pass creates the container in the same sandbox.
    const again = await h.sync(pod);
    expect(again.steps.map((s) => [s.action, s.error])).toEqual([['StartContainer', undefined]]);
  });

  it('reports no image event for a pod whose sandbox cannot be created (its early check is dropped)', async () => {
    h.fake.failNext('RunPodSandbox', new UnavailableError('network plugin not ready'));
    const pod = makePod('nosb', [ctr('app')]);
    const r = await h.sync(pod);
    expect(r.steps.map((s) => s.reason)).toEqual(['CreatePodSandboxError']);
    expect(h.events.map((e) => e.reason)).toEqual(['FailedCreatePodSandBox']);
  });
});
