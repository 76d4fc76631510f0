import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient, FakeRuntime } from '@kh/cri-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { criImageFs, type FsStats, NodeSignalSource } from '../../src/eviction/signals.js';
import { silentLogger } from '../../src/util/log.js';
import { Gi, Mi } from './helpers.js';

const root = mkdtempSync(join(tmpdir(), 'kh-signals-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function fakeProc(
  name: string,
  meminfo: Record<string, number>,
  pidMax = 4194304,
  tasks = 321,
  threadsMax?: number,
): string {
  const dir = join(root, name, 'proc');
  mkdirSync(join(dir, 'sys/kernel'), { recursive: true });
  writeFileSync(
    join(dir, 'meminfo'),
    Object.entries(meminfo)
      .map(([k, v]) => `${`${k}:`.padEnd(16)}${String(v).padStart(8)} kB`)
      .join('\n'),
  );
  writeFileSync(join(dir, 'sys/kernel/pid_max'), `${pidMax}\n`);
  if (threadsMax !== undefined) writeFileSync(join(dir, 'sys/kernel/threads-max'), `${threadsMax}\n`);
  writeFileSync(join(dir, 'loadavg'), `0.52 0.58 0.59 3/${tasks} 12345\n`);
  return dir;
}

function cgroup(name: string, files: Record<string, string>): string {
  const dir = join(root, name, 'cgroup');
  mkdirSync(dir, { recursive: true });
  for (const [f, text] of Object.entries(files)) writeFileSync(join(dir, f), text);
  return dir;
}

const statfs = (): FsStats => ({ bsize: 4096, blocks: 1000, bavail: 250, files: 500, ffree: 20 });

describe('NodeSignalSource', () => {
  it('reads memory.available from a cgroup v2 with a limit, excluding inactive file pages', async () => {
    const s = new NodeSignalSource({
      procRoot: fakeProc('v2', { MemTotal: 16 * 1024 * 1024, MemFree: 1 }),
      memoryCgroupDir: cgroup('v2', {
        'memory.current': `${900 * Mi}\n`,
        'memory.max': `${Gi}\n`,
        'memory.stat': `anon 123\nfile 456\ninactive_file ${100 * Mi}\nactive_file 0\n`,
      }),
      rootDir: '/',
      statfs,
    });
    const obs = await s.observe();
    expect(obs['memory.available']).toEqual({ available: 224 * Mi, capacity: Gi });
    expect(obs['nodefs.available']).toEqual({ available: 250 * 4096, capacity: 1000 * 4096 });
    expect(obs['nodefs.inodesFree']).toEqual({ available: 20, capacity: 500 });
    expect(obs['pid.available']).toEqual({ available: 4194304 - 321, capacity: 4194304 });
    expect(obs['imagefs.available']).toBeUndefined();
  });

  it('reads allocatableMemory.available from the kubepods cgroup, against its limit', async () => {
    const s = new NodeSignalSource({
      procRoot: fakeProc('alloc', { MemTotal: 16 * 1024 * 1024, MemFree: 1 }),
      memoryCgroupDir: cgroup('alloc-node', {
        'memory.usage_in_bytes': `${2 * Gi}\n`,
        'memory.limit_in_bytes': `${4 * Gi}\n`,
        'memory.stat': 'total_inactive_file 0\n',
      }),
      allocatableMemoryCgroupDir: cgroup('alloc-kubepods', {
        'memory.usage_in_bytes': `${260 * Mi}\n`,
        'memory.limit_in_bytes': `${300 * Mi}\n`,
        'memory.stat': `total_inactive_file ${10 * Mi}\n`,
      }),
      rootDir: '/',
      statfs,
    });
    const obs = await s.observe();
    expect(obs['allocatableMemory.available']).toEqual({ available: 50 * Mi, capacity: 300 * Mi });
    expect(obs['memory.available']).toEqual({ available: 2 * Gi, capacity: 4 * Gi });
    const without = new NodeSignalSource({
      memoryCgroupDir: '',
      procRoot: fakeProc('alloc', {}),
      rootDir: '/',
      statfs,
    });
    expect((await without.observe())['allocatableMemory.available']).toBeUndefined();
  });

  it('caps pid.available by the lower of kernel.pid_max and kernel.threads-max, as the kubelet does', async () => {
    const pids = (name: string, pidMax: number, threadsMax: number) =>
      new NodeSignalSource({
        procRoot: fakeProc(name, { MemTotal: 1024 }, pidMax, 1000, threadsMax),
        memoryCgroupDir: '',
        rootDir: '/',
        statfs,
      }).pids();
    expect(await pids('threads-lower', 4194304, 192729)).toEqual({ available: 191729, capacity: 192729 });
    expect(await pids('pid-max-lower', 32768, 192729)).toEqual({ available: 31768, capacity: 32768 });
  });

  it('uses MemTotal as capacity when the v2 cgroup is unlimited', async () => {
    const s = new NodeSignalSource({
      procRoot: fakeProc('v2max', { MemTotal: 2 * 1024 * 1024 }),
      memoryCgroupDir: cgroup('v2max', {
        'memory.current': `${Gi}`,
        'memory.max': 'max\n',
        'memory.stat': '',
      }),
      rootDir: '/',
      statfs,
    });
    expect((await s.memory())?.available).toBe(Gi);
  });

  it('reads cgroup v1 usage_in_bytes and total_inactive_file', async () => {
    const s = new NodeSignalSource({
      procRoot: fakeProc('v1', { MemTotal: 4 * 1024 * 1024 }),
      memoryCgroupDir: cgroup('v1', {
        'memory.usage_in_bytes': `${3 * Gi}\n`,
        'memory.limit_in_bytes': '9223372036854771712\n',
        'memory.stat': `cache 1\ninactive_file 5\ntotal_inactive_file ${Gi}\n`,
      }),
      rootDir: '/',
      statfs,
    });
    expect(await s.memory()).toEqual({ available: 2 * Gi, capacity: 4 * Gi });
  });

  it('falls back to /proc/meminfo at the root of a cgroup v2 hierarchy', async () => {
    const s = new NodeSignalSource({
      procRoot: fakeProc('root', {
        MemTotal: 8 * 1024 * 1024,
        MemFree: 1024 * 1024,
        'Inactive(file)': 3 * 1024 * 1024,
      }),
      memoryCgroupDir: '',
      rootDir: '/',
      statfs,
    });
    expect(await s.memory()).toEqual({ available: 4 * Gi, capacity: 8 * Gi });
  });

  it('reads this machine', async () => {
    const obs = await new NodeSignalSource({ memoryCgroupDir: '', rootDir: '/' }).observe();
    const mem = obs['memory.available'];
    expect(mem?.capacity).toBeGreaterThan(0);
    expect(mem?.available).toBeGreaterThan(0);
    expect(mem?.available).toBeLessThanOrEqual(mem?.capacity ?? 0);
    expect(obs['nodefs.available']?.capacity).toBeGreaterThan(0);
    expect(obs['pid.available']?.available).toBeGreaterThan(0);
  });
});

describe('criImageFs', () => {
  let fake: FakeRuntime;
  let cri: CriClient;
  beforeAll(async () => {
    fake = await FakeRuntime.start({ socketPath: join(root, 'cri.sock') });
    cri = await CriClient.connect(fake.endpoint);
  });
  afterAll(async () => {
    cri?.close();
    await fake?.stop();
  });

  it('gives imagefs.available from ImageFsInfo usage against the configured capacity', async () => {
    fake.setImageFs({ usedBytes: 90 * Gi, inodesUsed: 10 });
    const s = new NodeSignalSource({
      memoryCgroupDir: '',
      rootDir: '/',
      statfs,
      imageFs: criImageFs(cri, { capacityBytes: 100 * Gi }),
    });
    const obs = await s.observe();
    expect(obs['imagefs.available']).toEqual({ available: 10 * Gi, capacity: 100 * Gi });
  });

  it('still observes memory and nodefs when the image filesystem cannot be read', async () => {
    const errors: string[] = [];
    const s = new NodeSignalSource({
      memoryCgroupDir: '',
      rootDir: '/',
      statfs,
      imageFs: criImageFs(cri, {
        statfs: () => {
          throw new Error("ENOENT: no such file or directory, statfs '/var/lib/x'");
        },
      }),
      log: { ...silentLogger, error: (msg) => errors.push(msg) },
    });
    const obs = await s.observe();
    expect(obs['imagefs.available']).toBeUndefined();
    expect(obs['nodefs.available']).toBeDefined();
    expect(errors).toEqual(['Eviction manager: cannot read the image filesystem']);
  });

  it('statfs-es the reported mountpoint when no capacity is configured', async () => {
    fake.setImageFs({ usedBytes: 1000, inodesUsed: 10 });
    const seen: string[] = [];
    const usage = await criImageFs(cri, {
      statfs: (p) => {
        seen.push(p);
        return statfs();
      },
    })();
    expect(seen).toHaveLength(1);
    expect(usage).toEqual({
      usedBytes: 1000,
      capacityBytes: 4096 * 1000,
      inodesUsed: 10,
      inodesCapacity: 500,
    });
  });
});
