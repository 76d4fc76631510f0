import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';

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
