import { readdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';

const CGROUP_ROOT = '/sys/fs/cgroup';

/**
 * Removes the (now empty) cgroup directories a stopped node leaves on the host. Pods nest
 * under the node's own cgroup (`<node cgroup>/kubepods/...`); the engine only removes the
 * node's directory when it has no children, so without this every node would leak a tree.
 * Best effort: a directory that still holds processes, or a remote engine, is left alone.
 */
export async function removeCgroupTree(nodeCgroup: string): Promise<void> {
  if (!nodeCgroup.startsWith('/') || nodeCgroup.split('/').filter(Boolean).length < 1) return;
  const hierarchies = await readdir(CGROUP_ROOT, { withFileTypes: true }).catch(() => []);
  // v1: one directory per controller; v2: the unified hierarchy is the root itself.
  const roots = [
    CGROUP_ROOT,
    ...hierarchies.filter((d) => d.isDirectory()).map((d) => join(CGROUP_ROOT, d.name)),
  ];
  for (const root of roots) await removeDepthFirst(join(root, nodeCgroup));
}

async function removeDepthFirst(dir: string): Promise<void> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => undefined);
  if (!entries) return;
  for (const e of entries) if (e.isDirectory()) await removeDepthFirst(join(dir, e.name));
  await rmdir(dir).catch(() => {});
}
