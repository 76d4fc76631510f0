// The kubelet's cleanupOrphanedPodDirs (kubelet_volumes.go), run by housekeeping. A pod's
// directory outlives the pod when the pod went while the agent was down, or when its kill failed
// before the clean-up that follows it; its sub-path bind mounts would then pin the volume for
// good. The directory of a pod that nothing wants and nothing runs gets its sub-path mounts and
// emptyDir volumes released through the runtime helper, and is then removed, unless a mount is
// still left under it: removing through a mount would delete what the mount shows.
import { readdir, rm } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { mountPoints, type RuntimeHelper } from '@kh/runtime-manager';
import { type Logger, silentLogger } from '../util/log.js';

export interface OrphanedPodDirsDeps {
  /** <podsDir>/<uid> per pod, as the runtime helper lays it out. */
  podsDir: string;
  /** Releases a pod's sub-path mounts and emptyDir volumes. */
  helper: Pick<RuntimeHelper, 'cleanupPod'>;
  /** The mount points of the agent's mount namespace; default: /proc/self/mountinfo. */
  mountPoints?: () => Promise<string[]>;
  log?: Logger;
}

export class OrphanedPodDirs {
  private readonly log: Logger;

  constructor(private readonly deps: OrphanedPodDirsDeps) {
    this.log = deps.log ?? silentLogger;
  }

  /**
   * Cleans up and removes the directory of every pod for which `inUse` is false; resolves to the
   * uids whose directories were removed. A directory that cannot go yet is retried next time.
   */
  async cleanupOrphaned(inUse: (uid: string) => boolean): Promise<string[]> {
    const removed: string[] = [];
    // As the kubelet logs it: each pod at -v=3, one error per pass, since a stuck pod comes back
    // every 2 s.
    let stuck = 0;
    for (const uid of await this.podDirs()) {
      if (inUse(uid)) continue;
      const errors = (await this.deps.helper.cleanupPod?.(uid).catch((err: Error) => [err])) ?? [];
      if (errors.length > 0) {
        stuck++;
        this.log.v(3, 'Orphaned pod found, but failed to clean up its volumes', {
          podUID: uid,
          errors: errors.map((e) => e.message),
        });
        continue;
      }
      const dir = join(this.deps.podsDir, uid);
      const mounted = (await (this.deps.mountPoints ?? mountPoints)()).filter(
        (m) => m === dir || m.startsWith(`${dir}${sep}`),
      );
      if (mounted.length > 0) {
        stuck++;
        this.log.v(3, 'Orphaned pod found, but volumes are not cleaned up', { podUID: uid, mounted });
        continue;
      }
      try {
        await rm(dir, { recursive: true, force: true });
        removed.push(uid);
        this.log.info('Removed the directory of an orphaned pod', { podUID: uid });
      } catch (err) {
        stuck++;
        this.log.v(3, 'Failed to remove the directory of an orphaned pod', { podUID: uid, err });
      }
    }
    if (stuck > 0)
      this.log.error('Orphaned pods found, but their directories could not be cleaned up yet', {
        numErrs: stuck,
      });
    return removed;
  }

  private async podDirs(): Promise<string[]> {
    try {
      return (await readdir(this.deps.podsDir, { withFileTypes: true }))
        .filter((d) => d.isDirectory())
        .map((d) => d.name);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw err;
    }
  }
}
