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
import { KhContainer, type Progress, type RemovedLeftovers, RUN_LABEL, removeLeftovers } from '@kh/testkit';
import Docker from 'dockerode';
import { projectRoot } from '../node/project.js';
import { alive } from './ledger.js';

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

/**
 * Removes one run's containers (thawing frozen cgroups and killing stuck runtime children first,
 * with their volumes), networks, volumes and temp directories; each removal goes to `progress`.
 */
export async function removeRunLeftovers(
  runId: string,
  options: { progress?: Progress; docker?: Docker } = {},
): Promise<RemovedLeftovers> {
  const docker = options.docker ?? new Docker();
  const progress = options.progress ?? (() => {});
  const containers = await docker.listContainers({
    all: true,
    filters: { label: [`${RUN_LABEL}=${runId}`] },
  });
  const dirs = new Set(
    containers.flatMap((c) => c.Mounts.filter((m) => isRunTempDir(m)).map((m) => m.Source)),
  );
  const removed = await removeLeftovers({ runId, progress });
  for (const d of dirs) {
    await rm(d, { recursive: true, force: true });
    progress(`removed directory ${d}`);
  }
  // The world's directory (see world.ts) holds the run's kubeconfig on the host side only.
  for (const name of await readdir(tmpdir()))
    if (name.startsWith(`kh-harness-${runId}-`)) {
      await rm(join(tmpdir(), name), { recursive: true, force: true });
      progress(`removed directory ${join(tmpdir(), name)}`);
    }
  return removed;
}

/**
 * Runs whose containers and volumes were all created by processes that are gone: a benchmark or
 * test killed before its teardown, which no ledger record names. Volumes count too, since a
 * container removed without its volumes leaves them labelled but alone. A run with one live
 * creator is not orphaned; it may still be cleaning up. `runId` narrows the search to one run.
 */
export async function orphanedRuns(options: { runId?: string; docker?: Docker } = {}): Promise<string[]> {
  const docker = options.docker ?? new Docker();
  const pidLabel = KhContainer.creatorPidLabel;
  const label = [pidLabel, options.runId ? `${RUN_LABEL}=${options.runId}` : RUN_LABEL];
  const containers = await docker.listContainers({ all: true, filters: { label } });
  const { Volumes } = await docker.listVolumes({ filters: { label } });
  const live = new Map<string, boolean>();
  for (const labels of [...containers.map((c) => c.Labels), ...(Volumes ?? []).map((v) => v.Labels)]) {
    const run = labels[RUN_LABEL] as string;
    const pid = Number(labels[pidLabel]);
    // A label that is not a pid cannot prove its creator gone: keep the run.
    live.set(run, (live.get(run) ?? false) || !(pid > 0) || alive(pid));
  }
  return [...live].filter(([, isLive]) => !isLive).map(([run]) => run);
}
