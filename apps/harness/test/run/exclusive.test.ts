// A held host resource is a lock file, so another process (a second harness run, another shard on
// the same machine) waits for it too, not only the cells of this run.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { defaultLockDir, ExclusiveResources } from '../../src/run/exclusive.js';

const dir = await mkdtemp(join(tmpdir(), 'kh-exclusive-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Another process holding `name` for `ms` through testkit's built lock (what a second run uses). */
async function otherProcessHolds(name: string, ms: number) {
  const script = `
    const { withFileLock } = await import('@kh/testkit');
    await withFileLock(${JSON.stringify(join(dir, `${name}.lock`))}, async () => {
      process.stdout.write('held\\n');
      await new Promise((r) => setTimeout(r, ${ms}));
    });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await once(child.stdout, 'data');
  return { child, exited: once(child, 'exit').then(() => performance.now()) };
}

describe('ExclusiveResources', () => {
  it('waits for a holder in another process, says which, and leaves no lock file', async () => {
    const { child, exited } = await otherProcessHolds('host-disk', 800);
    const heard: string[][] = [];
    let ranAt = 0;
    await new ExclusiveResources(dir).hold(
      ['host-disk'],
      async () => {
        ranAt = performance.now();
      },
      (holders) => heard.push(holders),
    );
    expect(ranAt).toBeGreaterThanOrEqual(await exited);
    expect(heard).toEqual([[`host-disk (process ${child.pid} on ${(await import('node:os')).hostname()})`]]);
    expect(existsSync(join(dir, 'host-disk.lock'))).toBe(false);
  }, 30_000);

  it('in one process, queues holders of a name in arrival order; other names run side by side', async () => {
    const ex = new ExclusiveResources(dir);
    const events: string[] = [];
    const cell = (name: string, names: string[]) =>
      ex.hold(names, async () => {
        events.push(`${name} in`);
        await new Promise((r) => setTimeout(r, 100));
        events.push(`${name} out`);
      });
    await Promise.all([cell('a', ['host-disk']), cell('b', ['host-disk']), cell('c', ['other'])]);
    expect(events.indexOf('a out')).toBeLessThan(events.indexOf('b in'));
    expect(events.indexOf('c in')).toBeLessThan(events.indexOf('a out'));
  });

  it('keeps its locks in KH_LOCK_DIR, else under the temp dir', () => {
    expect(defaultLockDir({ KH_LOCK_DIR: '/shared/locks' })).toBe('/shared/locks');
    expect(defaultLockDir({})).toBe(join(tmpdir(), 'kubelet-harness', 'locks'));
  });
});
