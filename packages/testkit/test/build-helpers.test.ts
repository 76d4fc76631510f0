import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readlink, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, test, vi } from 'vitest';
import { makeLinks, removeStaleBuildDirs } from '../src/images/build.js';
import { ensureImages } from '../src/images/ensure.js';
import { withFileLock } from '../src/util/lock.js';
import { MissingToolError, requireTool } from '../src/util/process.js';

const dir = await mkdtemp(join(tmpdir(), 'kh-lock-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

test('withFileLock runs holders one at a time and removes the lock file', async () => {
  const lock = join(dir, 'a.lock');
  const events: string[] = [];
  const holder = (name: string) =>
    withFileLock(lock, async () => {
      events.push(`${name} in`);
      await sleep(50);
      events.push(`${name} out`);
    });
  await Promise.all([holder('one'), holder('two')]);
  // Either may win the race for the file; the other must wait until the first is out.
  const [first, second] = events[0] === 'one in' ? ['one', 'two'] : ['two', 'one'];
  expect(events).toEqual([`${first} in`, `${first} out`, `${second} in`, `${second} out`]);
  expect(existsSync(lock)).toBe(false);
});

test('withFileLock takes over a lock left by a dead process', async () => {
  const lock = join(dir, 'stale.lock');
  const dead = spawnSync('true').pid;
  await writeFile(lock, String(dead));
  let waitedFor: number | undefined;
  const result = await withFileLock(
    lock,
    async () => 'ran',
    (pid) => {
      waitedFor = pid;
    },
  );
  expect(result).toBe('ran');
  expect(waitedFor).toBeUndefined();
});

test('withFileLock waits for a holder on another host (a shared lock dir), whose liveness it cannot check', async () => {
  const lock = join(dir, 'remote.lock');
  const dead = spawnSync('true').pid;
  await writeFile(lock, `${dead} other-machine`);
  const heard: string[] = [];
  const taken = withFileLock(
    lock,
    async () => 'ran',
    (pid, host) => heard.push(`${pid} ${host}`),
  );
  await sleep(700);
  expect(heard).toEqual([`${dead} other-machine`]);
  await rm(lock);
  expect(await taken).toBe('ran');
});

test('withFileLock releases the lock when the holder fails', async () => {
  const lock = join(dir, 'fail.lock');
  await expect(withFileLock(lock, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
  expect(existsSync(lock)).toBe(false);
});

test('requireTool names the Debian package and the setup script', async () => {
  const err = await requireTool('kh-no-such-tool', 'kh-package').catch((e: unknown) => e);
  expect(err).toBeInstanceOf(MissingToolError);
  expect((err as Error).message).toMatch(/kh-no-such-tool.*Debian package kh-package.*setup-host\.sh/);
  expect(await requireTool('tar', 'tar')).toMatch(/\/tar$/);
});

test('removeStaleBuildDirs removes only the leftover directories of one recipe version', async () => {
  const stale = await mkdtemp(join(tmpdir(), 'kh-image-unit-000000000000-'));
  const other = await mkdtemp(join(tmpdir(), 'kh-image-unit-111111111111-'));
  await writeFile(join(stale, 'file'), 'x');
  await removeStaleBuildDirs('kh-image-unit-000000000000-');
  expect(existsSync(stale)).toBe(false);
  expect(existsSync(other)).toBe(true);
  await rm(other, { recursive: true });
});

test('ensureImages explains an unreachable Docker engine', async () => {
  vi.stubEnv('DOCKER_HOST', `unix://${join(dir, 'no-engine.sock')}`);
  try {
    await expect(ensureImages(['pause'])).rejects.toThrow(
      /Cannot reach the Docker engine at .*setup-host\.sh/,
    );
  } finally {
    vi.unstubAllEnvs();
  }
});

test('makeLinks links a path to a target in the image, replacing what was there, and refuses a missing or relative target', async () => {
  const root = await mkdtemp(join(tmpdir(), 'kh-links-'));
  try {
    await mkdir(join(root, 'usr/libexec/tool'), { recursive: true });
    await writeFile(join(root, 'usr/libexec/tool/tool'), '#!/bin/sh\n');
    await mkdir(join(root, 'usr/local/sbin/tool'), { recursive: true });
    await makeLinks(root, { '/usr/local/sbin/tool': '/usr/libexec/tool/tool' });
    expect(await readlink(join(root, 'usr/local/sbin/tool'))).toBe('/usr/libexec/tool/tool');
    await expect(makeLinks(root, { '/usr/local/sbin/other': '/lib/tool/tool' })).rejects.toThrow(
      'link /usr/local/sbin/other: its target /lib/tool/tool is not in the image',
    );
    await expect(makeLinks(root, { '/usr/local/sbin/other': 'tool/tool' })).rejects.toThrow(
      'must be absolute',
    );
    expect(existsSync(join(root, 'usr/local/sbin/other'))).toBe(false);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
