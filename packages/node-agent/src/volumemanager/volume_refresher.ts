// Keeps the config map, secret, downward API and projected volumes of running pods current:
// every period it rewrites them from the objects as they are now, through the runtime helper's
// atomic writer (an unchanged volume is not touched). The kubelet does the same on each pod
// sync; a fixed period here bounds how stale a mounted file can be.
import type { TimerClock } from '@kh/apimachinery';
import type { PodVolumes } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import { Waker } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';

/** How often mounted API volumes are refreshed (the kubelet's default sync period is 1m). */
export const VOLUME_REFRESH_PERIOD_MS = 10_000;

export class VolumeRefresher {
  private readonly log: Logger;

  constructor(
    private readonly deps: {
      volumes: Pick<PodVolumes, 'refresh'>;
      /** The pods whose volumes stay current: the pod workers' active pods. */
      activePods: () => V1Pod[];
      clock: TimerClock;
      periodMs?: number;
      log?: Logger;
    },
  ) {
    this.log = deps.log ?? silentLogger;
  }

  async run(signal: AbortSignal): Promise<void> {
    const waker = new Waker();
    while (!signal.aborted) {
      await this.refreshAll();
      await waker.wait(this.deps.clock, this.deps.periodMs ?? VOLUME_REFRESH_PERIOD_MS, signal);
    }
  }

  /** One pass over the active pods; never throws. */
  async refreshAll(): Promise<void> {
    for (const pod of this.deps.activePods()) {
      const name = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
      try {
        const { updated, errors } = await this.deps.volumes.refresh(pod);
        if (updated.length > 0) this.log.info('Volumes updated', { pod: name, volumes: updated });
        for (const err of errors) this.log.error('Volume refresh failed', { pod: name, err: err.message });
      } catch (err) {
        this.log.error('Volume refresh failed', { pod: name, err: (err as Error).message });
      }
    }
  }
}
