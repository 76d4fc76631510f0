import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { removeContainer } from '../src/containers/kh-container.js';
import { uniqueName } from '../src/containers/labels.js';
import { ensureImages, KhContainer, khLabels, removeLeftovers, runId } from '../src/index.js';
import { docker } from '../src/util/docker.js';
import { done, notYet, until } from '../src/util/until.js';

// The failure of issue 20: a runtime killed mid-create leaves `runc init` frozen in a cgroup
// nested under the node container (/docker/<id>/kubepods/<sandbox>), and `docker rm -f` never
// sees the container exit. Here a process of a throwaway container is frozen in such a nested
// cgroup, through the v1 freezer and through v2's cgroup.freeze, and clean-up must remove the
// container and its anonymous volume anyway.
const V1 = '/sys/fs/cgroup/freezer';
const V2 = '/sys/fs/cgroup/unified';

let busybox: string;
const created: string[] = [];
beforeAll(async () => {
  ({ busybox } = await ensureImages(['busybox']));
});
afterAll(async () => {
  for (const id of created) await removeContainer(id);
});

/** Starts a labelled container with an anonymous volume whose shell has one child, `sleep`. */
async function throwaway(run: string): Promise<{ id: string; child: number; volume: string }> {
  const started = await new KhContainer(busybox)
    .withName(uniqueName('freeze-test'))
    .withLabels({ ...khLabels('freeze-test'), 'kh.run': run })
    .withCommand(['sh', '-c', 'sleep 600 & wait'])
    .withRawCreateOptions({ Volumes: { '/data': {} } })
    .start();
  const id = started.getId();
  created.push(id);
  const info = await docker().getContainer(id).inspect();
  const procs = async () => (await readFile(join(V1, 'docker', id, 'cgroup.procs'), 'utf8')).split('\n');
  const child = await until(
    async () => {
      const pids = (await procs()).map(Number).filter((p) => p > 0 && p !== info.State.Pid);
      return pids.length === 1 ? done(pids[0] as number) : notYet(`pids ${pids.join(', ')}`);
    },
    { timeoutMs: 10_000, intervalMs: 100, describe: 'the container shell to start its child' },
  );
  const volume = info.Mounts.find((m) => m.Destination === '/data')?.Name as string;
  return { id, child, volume };
}

async function freeze(root: string, id: string, pid: number): Promise<string> {
  const dir = join(root, 'docker', id, 'kubepods', 'stuck');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'cgroup.procs'), String(pid));
  if (root === V1) await writeFile(join(dir, 'freezer.state'), 'FROZEN');
  else await writeFile(join(dir, 'cgroup.freeze'), '1');
  const frozen = async () =>
    root === V1
      ? (await readFile(join(dir, 'freezer.state'), 'utf8')).trim() === 'FROZEN'
      : (await readFile(join(dir, 'cgroup.events'), 'utf8')).includes('frozen 1');
  await until(async () => ((await frozen()) ? done(true) : notYet('not frozen')), {
    timeoutMs: 10_000,
    intervalMs: 100,
    describe: `${dir} to freeze`,
  });
  // A frozen task is stopped for good: its state is never R while frozen.
  expect((await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]?.[0]).not.toBe('R');
  return dir;
}

const volumeGone = (name: string) =>
  docker()
    .getVolume(name)
    .inspect()
    .then(
      () => false,
      (err: { statusCode?: number }) => err.statusCode === 404,
    );

describe('removeLeftovers on a container with a frozen process', () => {
  test.each([
    ['cgroup v1 freezer.state FROZEN', V1],
    ['cgroup v2 cgroup.freeze 1', V2],
  ])('%s: thaws it, kills what is left, removes the container and its volume', async (_, root) => {
    const run = `${runId}-freeze-${root === V1 ? 'v1' : 'v2'}`;
    const { id, child, volume } = await throwaway(run);
    const dir = await freeze(root, id, child);
    const lines: string[] = [];
    const removed = await removeLeftovers({ runId: run, progress: (l) => lines.push(l) });
    expect(removed).toEqual({ containers: 1, networks: 0, volumes: 1 });
    await expect(docker().getContainer(id).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect(await volumeGone(volume)).toBe(true);
    expect(lines).toEqual([
      expect.stringMatching(
        /^removed container kh-.* \(1 volume; thawed 1 frozen cgroup; killed [12] process(es)?\)$/,
      ),
    ]);
    // The engine removed the container's cgroups, the frozen one included.
    await expect(readFile(join(dir, 'cgroup.procs'))).rejects.toMatchObject({ code: 'ENOENT' });
  });
});

describe('removeLeftovers on a node container with its volumes on a tmpfs of its own', () => {
  test('unmounts and removes the tmpfs with the container, which would otherwise hold its RAM', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'kh-volumes-'));
    await promisify(execFile)('mount', ['-t', 'tmpfs', '-o', 'size=8m', 'kh-volumes', dir]);
    await mkdir(join(dir, 'kubelet'));
    const run = `${runId}-tmpfs`;
    const started = await new KhContainer(busybox)
      .withName(uniqueName('tmpfs-test'))
      .withLabels({ ...khLabels('tmpfs-test'), 'kh.run': run })
      .withCommand(['sleep', '600'])
      .withBindMounts([{ source: join(dir, 'kubelet'), target: '/var/lib/kubelet' }])
      .start();
    created.push(started.getId());
    const lines: string[] = [];
    await removeLeftovers({ runId: run, progress: (l) => lines.push(l) });
    expect(lines).toContain(`removed host directory ${dir}`);
    expect(existsSync(dir)).toBe(false);
    expect(await readFile('/proc/self/mounts', 'utf8')).not.toContain(dir);
  });
});

describe('removeContainer', () => {
  test('reports nothing for a container that does not exist', async () => {
    expect(await removeContainer(`kh-${runId}-no-such-container`)).toBeUndefined();
  });
});

describe('KhContainer', () => {
  test('labels what it creates with the pid of its creator, for cleanup to find orphans', async () => {
    const { id } = await throwaway(`${runId}-pid`);
    const info = await docker().getContainer(id).inspect();
    expect(info.Config.Labels[KhContainer.creatorPidLabel]).toBe(String(process.pid));
  });
});
