import { readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// Temp dirs that outlive a killed test process (a host containerd's, a host CNI network's) say
// who owns them, so that a later sweep can remove those whose owner is gone.

const OWNER_FILE = 'owner.json';

/** Whether a process runs (a zombie counts as gone: it only waits for its parent to reap it). */
export async function processAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  return stat !== undefined && stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
}

/** Records that this process owns `dir`, with what a sweep needs to clean up after it. */
export async function writeOwner(dir: string, data: object): Promise<void> {
  await writeFile(join(dir, OWNER_FILE), JSON.stringify({ ...data, pid: process.pid }));
}

/** The temp dirs named `<prefix>…` whose owning process is gone, with what the owner recorded. */
export async function orphanedDirs<T extends object>(
  prefix: string,
): Promise<{ dir: string; owner: T & { pid: number } }[]> {
  const found: { dir: string; owner: T & { pid: number } }[] = [];
  for (const entry of (await readdir(tmpdir())).filter((e) => e.startsWith(prefix))) {
    const dir = join(tmpdir(), entry);
    const owner = await readFile(join(dir, OWNER_FILE), 'utf8')
      .then((text) => JSON.parse(text) as T & { pid: number })
      .catch(() => undefined);
    if (owner && !(await processAlive(owner.pid))) found.push({ dir, owner });
  }
  return found;
}
