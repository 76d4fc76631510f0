// Everything a run leaves when its process dies without clean-up: the containers, networks and
// volumes labelled with its id, and the host temp directories those containers had mounted
// (sockets, pid files, kubeconfigs). Only directories directly in the temp dir and named kh-* are
// removed, so a bind mount of anything else (the checkout, /sys/fs/cgroup) is never touched.
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname } from 'node:path';
import { RUN_LABEL, removeLeftovers } from '@kh/testkit';
import Docker from 'dockerode';

export function isRunTempDir(path: string, temp = tmpdir()): boolean {
  return dirname(path) === temp && basename(path).startsWith('kh-');
}

export async function removeRunLeftovers(runId: string, docker = new Docker()): Promise<void> {
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [`${RUN_LABEL}=${runId}`] },
  });
  const dirs = new Set(
    containers.flatMap((c) => c.Mounts.map((m) => m.Source)).filter((source) => isRunTempDir(source)),
  );
  await removeLeftovers({ runId });
  for (const d of dirs) await rm(d, { recursive: true, force: true });
}
