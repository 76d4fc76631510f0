import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export const pkgDir = path.resolve(import.meta.dirname, '..');
const binDir = path.resolve(pkgDir, '../../node_modules/.bin');

/** Runs the repo's buf in the package dir (offline: only the local ts-proto plugin is used). */
export async function runBuf(args: string[]): Promise<void> {
  // The ts-proto plugin is a node script: put this Node (22) first on PATH for its shebang.
  const env = { ...process.env, PATH: `${path.dirname(process.execPath)}:${binDir}:${process.env.PATH}` };
  await promisify(execFile)(path.join(binDir, 'buf'), args, { cwd: pkgDir, env });
}

/** A fresh temp dir for sockets (short path: unix socket paths are limited to ~107 bytes). */
export async function tempDir(): Promise<{
  dir: string;
  sock: (name?: string) => string;
  remove: () => Promise<void>;
}> {
  const dir = await mkdtemp(path.join(tmpdir(), 'kh-cri-'));
  return {
    dir,
    sock: (name = 'cri.sock') => path.join(dir, name),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

export async function collect<T>(it: AsyncIterable<T>, max = Number.POSITIVE_INFINITY): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) {
    out.push(x);
    if (out.length >= max) break;
  }
  return out;
}
