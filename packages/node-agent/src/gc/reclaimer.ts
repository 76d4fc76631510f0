// Node-level reclaim for the eviction manager under disk pressure: every dead container (also
// of pods that still exist) and every image no container uses, regardless of the GC thresholds,
// as the kubelet's DeleteAllUnusedContainers and DeleteUnusedImages do.
import type { ContainerGCPolicy, Runtime } from '@kh/runtime-manager';
import { ImageGCManager, ImageGCShortfallError } from '@kh/runtime-manager';
import type { NodeReclaimer } from '../eviction/types.js';

export interface RuntimeReclaimerDeps {
  runtime: Pick<Runtime, 'garbageCollect' | 'getPods' | 'listImages' | 'removeImage'>;
  containerPolicy: ContainerGCPolicy;
  allSourcesReady: () => boolean;
  /** The pause image, which is never removed. */
  sandboxImage?: string;
}

// Thresholds of 0 make ImageGCManager free everything eligible; an unbounded "usage" makes the
// amount to free unbounded, so the shortfall it then reports is expected and ignored.
const FREE_ALL = { highThresholdPercent: 0, lowThresholdPercent: 0, minAgeMs: 0 };
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

export function runtimeReclaimer(deps: RuntimeReclaimerDeps): NodeReclaimer {
  const images = new ImageGCManager(
    {
      listImages: () => deps.runtime.listImages(),
      imagesInUse: async () => {
        const used = new Set<string>();
        for (const p of await deps.runtime.getPods(true))
          for (const c of p.containers) {
            used.add(c.image);
            if (c.imageRef) used.add(c.imageRef);
          }
        return used;
      },
      imageFsUsage: async () => ({ usedBytes: UNBOUNDED, capacityBytes: UNBOUNDED }),
      removeImage: (id) => deps.runtime.removeImage(id),
    },
    FREE_ALL,
    deps.sandboxImage ? { sandboxImage: deps.sandboxImage } : {},
  );
  return {
    deleteAllUnusedContainers: () =>
      deps.runtime.garbageCollect(deps.containerPolicy, deps.allSourcesReady(), true),
    async deleteUnusedImages() {
      try {
        await images.garbageCollect();
      } catch (err) {
        if (!(err instanceof ImageGCShortfallError)) throw err;
      }
    },
  };
}
