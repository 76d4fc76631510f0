import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * --runtime-cgroups: move this process into the named cgroup (created if missing), as kubelet's
 * flag of the same name does for the runtime. Works on cgroup v2 (one hierarchy) and v1 (every
 * mounted controller hierarchy). Returns the cgroup.procs files written.
 */
export async function enterRuntimeCgroup(
  name: string,
  pid: number = process.pid,
  root = CGROUP_ROOT,
): Promise<string[]> {
  if (!name.startsWith('/'))
    throw new Error(`--runtime-cgroups must be an absolute cgroup name, got ${JSON.stringify(name)}`);
  const entries = await readdir(root, { withFileTypes: true });
  const unified = entries.some((e) => e.name === 'cgroup.controllers');
  const hierarchies = unified
    ? [root]
    : entries.filter((e) => e.isDirectory() && !e.isSymbolicLink()).map((e) => join(root, e.name));
  const written: string[] = [];
  for (const h of hierarchies) {
    const dir = join(h, name);
    try {
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'cgroup.procs'), String(pid));
      written.push(join(dir, 'cgroup.procs'));
    } catch {
      // Some v1 hierarchies (named ones, or read-only mounts) do not accept processes: skip them.
    }
  }
  if (written.length === 0) throw new Error(`could not enter cgroup ${name} under ${root}`);
  return written;
}
