// hostCgroupFs on a real directory tree: the contract the cgroup manager relies on (missing files
// and directories are answers, not errors; a non-empty directory's rmdir is).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostCgroupFs as fs } from '../../src/cm/cgroup_fs.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'cgroupfs-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('hostCgroupFs', () => {
  it('reads a file, and answers undefined for a missing one', async () => {
    writeFileSync(join(root, 'cpu.shares'), '1024\n');
    expect(await fs.read(join(root, 'cpu.shares'))).toBe('1024\n');
    expect(await fs.read(join(root, 'nope', 'cpu.shares'))).toBeUndefined();
  });

  it('rejects a read that fails for another reason than a missing file', async () => {
    await expect(fs.read(root)).rejects.toMatchObject({ code: 'EISDIR' });
  });

  it('writes a file', async () => {
    await fs.write(join(root, 'pids.max'), 'max');
    expect(readFileSync(join(root, 'pids.max'), 'utf8')).toBe('max');
  });

  it('makes a directory with its missing parents, and again without error', async () => {
    const dir = join(root, 'kubepods', 'burstable', 'podabc');
    await fs.mkdir(dir);
    await fs.mkdir(dir);
    expect(await fs.isDir(dir)).toBe(true);
    expect(await fs.isDir(join(root, 'missing'))).toBe(false);
    writeFileSync(join(root, 'file'), '');
    expect(await fs.isDir(join(root, 'file'))).toBe(false);
  });

  it('lists only subdirectories, and [] for a missing directory', async () => {
    mkdirSync(join(root, 'a'));
    mkdirSync(join(root, 'b'));
    writeFileSync(join(root, 'cgroup.procs'), '');
    expect((await fs.subdirs(root)).sort()).toEqual(['a', 'b']);
    expect(await fs.subdirs(join(root, 'missing'))).toEqual([]);
  });

  it('removes an empty directory; a missing one is fine, a non-empty one rejects', async () => {
    mkdirSync(join(root, 'pod', 'child'), { recursive: true });
    await expect(fs.rmdir(join(root, 'pod'))).rejects.toMatchObject({ code: 'ENOTEMPTY' });
    await fs.rmdir(join(root, 'pod', 'child'));
    await fs.rmdir(join(root, 'pod'));
    await fs.rmdir(join(root, 'pod'));
    expect(await fs.isDir(join(root, 'pod'))).toBe(false);
  });
});
