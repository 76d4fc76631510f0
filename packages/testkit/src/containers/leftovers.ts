import { docker, isNotFound } from '../util/docker.js';
import { type Progress, silent } from '../util/progress.js';
import { describeRemoved, removeContainer } from './kh-container.js';
import { RUN_LABEL } from './labels.js';
import { nodeHostDirs, removeHostDir } from './node-container.js';

export interface RemovedLeftovers {
  containers: number;
  networks: number;
  /** Labelled volumes, and the anonymous volumes that went with the containers. */
  volumes: number;
}

/**
 * Removes containers (thawing frozen cgroups first, with their anonymous volumes and a node's host
 * directories in the temp dir, unmounting its tmpfs), then networks,
 * then volumes that carry the kh.run label: all of them, or only those of one run. Pass `runId`
 * from tests, because other test processes may be running at the same time. Each removal is
 * reported through `progress`.
 */
export async function removeLeftovers(
  options: { runId?: string | undefined; progress?: Progress } = {},
): Promise<RemovedLeftovers> {
  const progress = options.progress ?? silent;
  const label = [options.runId ? `${RUN_LABEL}=${options.runId}` : RUN_LABEL];
  const removed: RemovedLeftovers = { containers: 0, networks: 0, volumes: 0 };
  const ignoreGone = (err: unknown) => {
    if (!isNotFound(err)) throw err;
  };

  for (const c of await docker().listContainers({ all: true, filters: { label } })) {
    const r = await removeContainer(c.Id);
    if (!r) continue;
    progress(`removed container ${describeRemoved(r)}`);
    removed.containers++;
    removed.volumes += r.volumes.length;
    for (const dir of nodeHostDirs(c.Mounts ?? [])) {
      await removeHostDir(dir);
      progress(`removed host directory ${dir}`);
    }
  }
  for (const n of await docker().listNetworks({ filters: { label } })) {
    await docker().getNetwork(n.Id).remove().catch(ignoreGone);
    progress(`removed network ${n.Name}`);
    removed.networks++;
  }
  const { Volumes } = await docker().listVolumes({ filters: { label } });
  for (const v of Volumes ?? []) {
    await docker().getVolume(v.Name).remove().catch(ignoreGone);
    progress(`removed volume ${v.Name}`);
    removed.volumes++;
  }
  return removed;
}
