// Everything a run leaves when its process dies without clean-up: the containers, networks and
// volumes labelled with its id, the host temp directories those containers had mounted (sockets,
// pid files, kubeconfigs), and the world's own kh-harness-<run id>-* directory, which nothing
// mounts. Only writable kh-* directories directly in the temp dir are
// removed. The checkout is mounted too, read-only, and may itself be a /tmp/kh-* clone: it and
// every read-only mount (the Node binary, /sys/fs/cgroup is rw but not in the temp dir) are never
// candidates, so clean-up cannot delete the project it runs from.
import { readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { RUN_LABEL, removeLeftovers } from '@kh/testkit';
import Docker from 'dockerode';
import { projectRoot } from '../node/project.js';

/** A bind mount as Docker lists it on a container. */
export interface MountInfo {
  Source: string;
  RW: boolean;
}

export function isRunTempDir(mount: MountInfo, temp = tmpdir(), project = projectRoot()): boolean {
  const path = mount.Source;
  const holdsProject = project === path || project.startsWith(`${path}/`);
  return mount.RW && !holdsProject && dirname(path) === temp && basename(path).startsWith('kh-');
}

export async function removeRunLeftovers(runId: string, docker = new Docker()): Promise<void> {
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [`${RUN_LABEL}=${runId}`] },
  });
  const dirs = new Set(
    containers.flatMap((c) => c.Mounts.filter((m) => isRunTempDir(m)).map((m) => m.Source)),
  );
  await removeLeftovers({ runId });
  for (const d of dirs) await rm(d, { recursive: true, force: true });
  // The world's directory (see world.ts) holds the run's kubeconfig on the host side only.
  for (const name of await readdir(tmpdir()))
    if (name.startsWith(`kh-harness-${runId}-`))
      await rm(join(tmpdir(), name), { recursive: true, force: true });
}
