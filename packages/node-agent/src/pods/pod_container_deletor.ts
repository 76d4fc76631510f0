// The kubelet's pod container deletor. When a container dies (a PLEG ContainerDied event), older
// exited instances of the same container are removed at once, keeping the newest for `kubectl
// logs --previous`. For a pod whose content should go (evicted, or deleted and terminated) every
// exited container goes. Container GC would get there within a minute, but disk eviction cannot
// wait that long: an evicted pod's writable layers hold the space being reclaimed, and the
// eviction manager looks again as soon as the pod is cleaned up.
import type { ContainerStatus, PodStatus, Runtime } from '@kh/runtime-manager';
import { type Logger, silentLogger } from '../util/log.js';

/** Exited instances of a container kept per pod (the kubelet's minDeadContainerInPod). */
export const CONTAINERS_TO_KEEP = 1;

/** Clean-ups waiting at most; more are dropped (container GC still gets them later). */
const MAX_PENDING = 50;

/**
 * The exited containers to remove: with an exited container's ID, the older instances of that
 * container beyond `keep`; without one, every exited container of the pod beyond `keep`.
 */
export function containersToDelete(
  status: PodStatus,
  exitedContainerId: string | undefined,
  keep: number,
): ContainerStatus[] {
  const matched = exitedContainerId
    ? status.containerStatuses.find((c) => c.id.id === exitedContainerId)
    : undefined;
  if (exitedContainerId && !matched) return [];
  const candidates = status.containerStatuses
    .filter((c) => c.state === 'exited' && (!matched || c.name === matched.name))
    .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  return candidates.slice(keep);
}

export class PodContainerDeletor {
  private queue: Promise<void> = Promise.resolve();
  private pending = 0;
  private readonly log: Logger;

  constructor(
    private readonly runtime: Pick<Runtime, 'deleteContainer'>,
    log?: Logger,
  ) {
    this.log = log ?? silentLogger;
  }

  /**
   * Queues the clean-up after one dead container and returns at once: the sync loop must not
   * wait on the runtime. With `removeAll`, every exited container of the pod goes.
   */
  cleanUpContainersInPod(
    readStatus: () => Promise<PodStatus>,
    exitedContainerId: string,
    removeAll: boolean,
  ): void {
    if (this.pending >= MAX_PENDING) {
      this.log.info('Failed to issue the request to remove containers: too many pending', {
        containerID: exitedContainerId,
      });
      return;
    }
    this.pending++;
    this.queue = this.queue.then(async () => {
      try {
        const status = await readStatus();
        const victims = removeAll
          ? containersToDelete(status, undefined, 0)
          : containersToDelete(status, exitedContainerId, CONTAINERS_TO_KEEP);
        for (const c of victims) {
          await this.runtime
            .deleteContainer(c.id)
            .catch((err) => this.log.error('Failed to remove container', { containerID: c.id.id, err }));
        }
      } catch (err) {
        this.log.error('Failed to read the pod status to remove its dead containers', { err });
      } finally {
        this.pending--;
      }
    });
  }

  /** Resolves once every queued removal has been tried. */
  idle(): Promise<void> {
    return this.queue;
  }
}
