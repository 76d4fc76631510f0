// The container log manager over a scripted runtime whose ReopenContainerLog creates a fresh file
// at the log path, as containerd and the dockershim do.
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { FakeClock } from '@kh/apimachinery';
import { ContainerState } from '@kh/cri-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ContainerLogManager,
  type ContainerLogManagerOptions,
  getAllLogs,
  rotatedLogName,
} from '../../src/logs/container_log_manager.js';

let dir: string;
let clock: FakeClock;
let reopens: string[];
let reopenFails: boolean;
let containers: { id: string; state: ContainerState; logPath: string }[];

const cri: ContainerLogManagerOptions['cri'] = {
  listContainers: async () =>
    ({ containers: containers.map((c) => ({ id: c.id, state: c.state })) }) as never,
  containerStatus: async (req) =>
    ({ status: { logPath: containers.find((c) => c.id === req?.containerId)?.logPath } }) as never,
  reopenContainerLog: async (req) => {
    reopens.push(req?.containerId ?? '');
    if (reopenFails) throw new Error('unimplemented');
    const c = containers.find((x) => x.id === req?.containerId)!;
    await writeFile(c.logPath, '', { flag: 'a' });
    return {};
  },
};

const manager = (over: Partial<ContainerLogManagerOptions> = {}) =>
  new ContainerLogManager({
    cri,
    policy: { maxSizeBytes: 100, maxFiles: 3 },
    maxWorkers: 1,
    monitorIntervalMs: 10_000,
    clock,
    ...over,
  });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-logrot-'));
  clock = new FakeClock(Date.UTC(2026, 10, 28, 20, 31, 5));
  reopens = [];
  reopenFails = false;
  containers = [
    { id: 'big', state: ContainerState.CONTAINER_RUNNING, logPath: join(dir, 'big.log') },
    { id: 'small', state: ContainerState.CONTAINER_RUNNING, logPath: join(dir, 'small.log') },
    { id: 'exited', state: ContainerState.CONTAINER_EXITED, logPath: join(dir, 'exited.log') },
  ];
  await writeFile(join(dir, 'big.log'), 'x'.repeat(150));
  await writeFile(join(dir, 'small.log'), 'y'.repeat(50));
  await writeFile(join(dir, 'exited.log'), 'z'.repeat(500));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('rotatedLogName', () => {
  it("appends the kubelet's 20060102-150405 stamp in UTC", () => {
    expect(rotatedLogName('/l/0.log', Date.UTC(2026, 10, 28, 20, 31, 5, 999))).toBe(
      '/l/0.log.20261128-203105',
    );
  });
});

describe('ContainerLogManager', () => {
  it('rotates a running container log over containerLogMaxSize and asks the runtime to reopen it', async () => {
    await manager().rotateLogs();
    expect(reopens).toEqual(['big']);
    expect((await readdir(dir)).sort()).toEqual([
      'big.log',
      'big.log.20261128-203105',
      'exited.log',
      'small.log',
    ]);
    expect((await stat(join(dir, 'big.log'))).size).toBe(0);
    expect(await readFile(join(dir, 'big.log.20261128-203105'), 'utf8')).toBe('x'.repeat(150));
  });

  it('keeps at most containerLogMaxFiles files and gzips the rotated ones before the next rotation', async () => {
    const m = manager();
    const texts: string[] = [];
    for (let i = 0; i < 4; i++) {
      texts.push(String(i).repeat(120));
      await writeFile(join(dir, 'big.log'), texts[i]!);
      await m.rotateLogs();
      clock.step(1_000);
    }
    const all = await getAllLogs(join(dir, 'big.log'));
    // The live file, the one just rotated, and maxFiles - 2 older ones, compressed.
    expect(all.map((p) => p.slice(dir.length + 1))).toEqual([
      'big.log.20261128-203107.gz',
      'big.log.20261128-203108',
      'big.log',
    ]);
    expect(gunzipSync(await readFile(all[0]!)).toString()).toBe(texts[2]);
    expect(await readFile(all[1]!, 'utf8')).toBe(texts[3]);
    // maxFiles 4: one more rotated file is kept, and it is compressed before the next rotation.
    await writeFile(join(dir, 'big.log'), '4'.repeat(120));
    await manager({ policy: { maxSizeBytes: 100, maxFiles: 4 } }).rotateLogs();
    const four = await getAllLogs(join(dir, 'big.log'));
    expect(four.map((p) => p.slice(dir.length + 1))).toEqual([
      'big.log.20261128-203107.gz',
      'big.log.20261128-203108.gz',
      'big.log.20261128-203109',
      'big.log',
    ]);
    expect(gunzipSync(await readFile(four[1]!)).toString()).toBe(texts[3]);
  });

  it('gives the file its name back when ReopenContainerLog fails, so nothing is lost', async () => {
    reopenFails = true;
    await manager().rotateLogs();
    expect(reopens).toEqual(['big']);
    expect(await readFile(join(dir, 'big.log'), 'utf8')).toBe('x'.repeat(150));
    expect(await getAllLogs(join(dir, 'big.log'))).toEqual([join(dir, 'big.log')]);
  });

  it('asks for a reopen when the live file is missing (an earlier reopen failed after the rename)', async () => {
    await rm(join(dir, 'small.log'));
    await manager().rotateLogs();
    expect(reopens.sort()).toEqual(['big', 'small']);
    expect((await stat(join(dir, 'small.log'))).size).toBe(0);
  });

  it('removes leftovers of an interrupted compression, which getAllLogs never lists', async () => {
    await writeFile(join(dir, 'big.log.20261128-200000.tmp'), 'half');
    await writeFile(join(dir, 'big.log.20261128-200001'), 'done');
    await writeFile(join(dir, 'big.log.20261128-200001.gz'), 'done');
    expect(await getAllLogs(join(dir, 'big.log'))).toEqual([
      join(dir, 'big.log.20261128-200001.gz'),
      join(dir, 'big.log'),
    ]);
    await manager().rotateLogs();
    expect((await readdir(dir)).filter((n) => n.startsWith('big.log.')).sort()).toEqual([
      'big.log.20261128-200001.gz',
      'big.log.20261128-203105',
    ]);
  });

  it('runs every containerLogMonitorInterval with containerLogMaxWorkers at once', async () => {
    for (let i = 0; i < 6; i++) {
      const logPath = join(dir, `w${i}.log`);
      containers.push({ id: `w${i}`, state: ContainerState.CONTAINER_RUNNING, logPath });
      await writeFile(logPath, 'w'.repeat(200));
    }
    let inFlight = 0;
    let peak = 0;
    const slow: ContainerLogManagerOptions['cri'] = {
      ...cri,
      containerStatus: async (req) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        await new Promise((r) => setTimeout(r, 20));
        inFlight--;
        return cri.containerStatus(req);
      },
    };
    const ac = new AbortController();
    const running = manager({ cri: slow, maxWorkers: 3, monitorIntervalMs: 3_000 }).run(ac.signal);
    await clock.advance(2_999);
    expect(reopens).toEqual([]);
    await clock.advance(1);
    await expect.poll(() => reopens.length).toBe(7);
    expect(peak).toBe(3);
    ac.abort();
    await running;
  });
});
