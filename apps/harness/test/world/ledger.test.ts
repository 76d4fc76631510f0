import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RunLedger } from '../../src/world/ledger.js';
import { isRunTempDir } from '../../src/world/leftovers.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'kh-ledger-test-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

// A pid that is certainly not running: above the kernel's pid_max default.
const DEAD_PID = 2 ** 22 + 7;

describe('RunLedger', () => {
  it('forgets a run that ended', async () => {
    const ledger = new RunLedger(dir);
    await ledger.begin('r1');
    expect(await readdir(dir)).toEqual(['r1.json']);
    await ledger.end('r1');
    expect(await readdir(dir)).toEqual([]);
  });

  it('does not treat a running run (this process) as abandoned', async () => {
    const ledger = new RunLedger(dir);
    await ledger.begin('live');
    const removed: string[] = [];
    expect(await ledger.removeAbandoned(async (id) => removed.push(id))).toEqual([]);
    expect(removed).toEqual([]);
  });

  it('removes what dead runs left, including a torn record, then forgets them', async () => {
    await writeFile(join(dir, 'dead.json'), JSON.stringify({ runId: 'dead', pid: DEAD_PID, startedAt: '' }));
    await writeFile(join(dir, 'torn.json'), '{"runId":');
    const removed: string[] = [];
    const ids = await new RunLedger(dir).removeAbandoned(async (id) => removed.push(id));
    expect(ids.sort()).toEqual(['dead', 'torn']);
    expect(removed.sort()).toEqual(['dead', 'torn']);
    expect(await readdir(dir)).toEqual([]);
  });

  it('keeps the record when removal fails, so the next run retries', async () => {
    await writeFile(join(dir, 'dead.json'), JSON.stringify({ runId: 'dead', pid: DEAD_PID, startedAt: '' }));
    await expect(
      new RunLedger(dir).removeAbandoned(async () => {
        throw new Error('engine down');
      }),
    ).rejects.toThrow('engine down');
    expect(await readdir(dir)).toEqual(['dead.json']);
  });

  it('is empty when its directory does not exist yet', async () => {
    expect(await new RunLedger(join(dir, 'missing')).abandoned()).toEqual([]);
  });
});

describe('isRunTempDir', () => {
  const rw = (Source: string) => ({ Source, RW: true });
  it('accepts only writable kh-* directories directly in the temp dir', () => {
    expect(isRunTempDir(rw('/tmp/kh-node-abc'), '/tmp', '/work/main')).toBe(true);
    expect(isRunTempDir(rw('/tmp/kh-node-abc/sub'), '/tmp', '/work/main')).toBe(false);
    expect(isRunTempDir(rw('/work/main'), '/tmp', '/work/main')).toBe(false);
    expect(isRunTempDir(rw('/sys/fs/cgroup'), '/tmp', '/work/main')).toBe(false);
    expect(isRunTempDir(rw('/tmp/other'), '/tmp', '/work/main')).toBe(false);
    expect(isRunTempDir({ Source: '/tmp/kh-node-abc', RW: false }, '/tmp', '/work/main')).toBe(false);
  });

  it('never selects the checkout, even when it is a writable /tmp/kh-* clone', () => {
    expect(isRunTempDir(rw('/tmp/kh-ci'), '/tmp', '/tmp/kh-ci')).toBe(false);
    expect(isRunTempDir(rw('/tmp/kh-work'), '/tmp', '/tmp/kh-work/kubelet-harness')).toBe(false);
  });
});
