// What `kubelet-harness cleanup` finds besides the ledger's runs (issue 21): containers whose
// creating process is gone, as a benchmark killed at its 110-pod step leaves its node container
// (kh.owner=test) and the node's anonymous volumes, and volumes whose container was removed
// without them. Thawing frozen cgroups is testkit's (removeLeftovers); here, that such a run is
// found and goes with its volumes.
import { ensureImages, KhContainer, khLabels, runId } from '@kh/testkit';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orphanedRuns, removeRunLeftovers } from '../../src/world/leftovers.js';

const docker = new Docker();
// A pid that is certainly not running: above the kernel's pid_max default.
const DEAD_PID = 2 ** 22 + 7;
const deadRun = `${runId}-orphan`;
const liveRun = `${runId}-live`;
const mixedRun = `${runId}-mixed`;
const volumeRun = `${runId}-volume`;
let busybox: string;

beforeAll(async () => {
  ({ busybox } = await ensureImages(['busybox']));
}, 120_000);

afterAll(async () => {
  for (const run of [deadRun, liveRun, mixedRun, volumeRun]) await removeRunLeftovers(run);
});

/**
 * An exited container of `run` with an anonymous volume labelled like it, as a killed bench
 * leaves its node (testkit's NodeContainer labels its volumes so).
 */
async function leftover(run: string, creatorPid = process.pid): Promise<{ id: string; volume: string }> {
  const labels = { ...khLabels('node'), 'kh.run': run, [KhContainer.creatorPidLabel]: String(creatorPid) };
  const container = new KhContainer(busybox)
    .withLabels(labels)
    .withCommand(['true'])
    .withRawHostConfig({
      Mounts: [
        {
          Type: 'volume',
          Source: '',
          Target: '/var/lib/containerd',
          VolumeOptions: { NoCopy: false, Labels: labels, DriverConfig: { Name: 'local', Options: {} } },
        },
      ],
    });
  const id = (await container.start()).getId();
  const info = await docker.getContainer(id).inspect();
  return { id, volume: info.Mounts[0]?.Name as string };
}

const missing = (p: Promise<unknown>) =>
  p.then(
    () => false,
    (err: { statusCode?: number }) => err.statusCode === 404,
  );

describe('orphanedRuns', () => {
  it('finds a run whose creators are all gone, and not one with a live creator', async () => {
    await leftover(deadRun, DEAD_PID);
    await leftover(liveRun);
    await leftover(mixedRun, DEAD_PID);
    await leftover(mixedRun);
    expect(await orphanedRuns({ runId: deadRun })).toEqual([deadRun]);
    expect(await orphanedRuns({ runId: liveRun })).toEqual([]);
    expect(await orphanedRuns({ runId: mixedRun })).toEqual([]);
  });

  it("removes the orphan's container with its anonymous volume and reports both", async () => {
    const { id, volume } = await leftover(deadRun, DEAD_PID);
    const lines: string[] = [];
    const removed = await removeRunLeftovers(deadRun, { progress: (l) => lines.push(l) });
    expect(removed.containers).toBeGreaterThanOrEqual(1);
    expect(removed.volumes).toBe(removed.containers);
    expect(await missing(docker.getContainer(id).inspect())).toBe(true);
    expect(await missing(docker.getVolume(volume).inspect())).toBe(true);
    expect(lines.filter((l) => l.startsWith('removed container '))).toHaveLength(removed.containers);
    expect(lines.every((l) => l.endsWith('(1 volume)'))).toBe(true);
    expect(await orphanedRuns({ runId: deadRun })).toEqual([]);
  });

  it('finds and removes the volumes of a container that was removed without them', async () => {
    const { id, volume } = await leftover(volumeRun, DEAD_PID);
    // force: `true` may not have exited yet on a loaded machine; v: false keeps the volume behind.
    await docker.getContainer(id).remove({ v: false, force: true });
    expect(await orphanedRuns({ runId: volumeRun })).toEqual([volumeRun]);
    const lines: string[] = [];
    const removed = await removeRunLeftovers(volumeRun, { progress: (l) => lines.push(l) });
    expect(removed).toEqual({ containers: 0, networks: 0, volumes: 1 });
    expect(lines).toEqual([`removed volume ${volume}`]);
    expect(await missing(docker.getVolume(volume).inspect())).toBe(true);
    expect(await orphanedRuns({ runId: volumeRun })).toEqual([]);
  });
});
