import type { Scenario, ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import { diskHogPod, nodefsThresholdMiB } from '../support/disk.js';
import {
  evictedFor,
  evictionGuardMs,
  innocentSurvives,
  PRESSURE_TIMEOUT_MS,
  pressureClearsInnocentRuns,
} from '../support/eviction.js';
import { pressureCondition } from '../support/node.js';
import { createPod, podFor, readPod, sh, waitForRunning } from '../support/pods.js';

interface Sample {
  hog: V1Pod;
  spareImagePresent: boolean;
}

/**
 * Modelled on eviction_test's local storage cases: a nodefs.available threshold set
 * support/disk's MARGIN_MIB under the space free when the scenario starts (as the node e2e suite
 * does), so that a disk hog writing into its writable layer is real disk pressure on any machine. The agent must first reclaim at
 * node level (an unused image goes), then evict the hog, not the innocent pod; DiskPressure
 * appears and clears once the hog's layer is gone.
 */
export const diskEviction: Scenario = {
  name: 'disk-eviction',
  estimateMs: 55_000,
  isolation: 'node',
  description:
    'disk pressure reclaims unused images first, then evicts the disk hog, not the innocent pod; DiskPressure appears and clears; Evicted reason and event',
  needs: ['real-containers', 'registry-pull'],
  // The hog's layer and nodefs on a disk no other cell writes to, so cells run side by side.
  ownDisk: true,
  upstream: [
    {
      file: 'test/e2e_node/eviction_test.go',
      case: 'LocalStorageEviction when we run containers that should cause DiskPressure should eventually evict all of the correct pods',
    },
  ],
  // Slowest seen 99 s (t59c, containerd).
  timeoutMs: evictionGuardMs(100_000, PRESSURE_TIMEOUT_MS.LocalStorageEviction),
  async run(ctx) {
    const { check } = ctx;
    await createPod(ctx, podFor(ctx, 'innocent', { containers: [sh(ctx, 'c', 'sleep 600')] }));
    await waitForRunning(ctx, 'innocent');
    // An image no pod uses: what node-level reclaim may delete.
    const spare = ctx.images.httpd;
    await ctx.cri.pullImage(spare);
    check.ok(
      'spare image present before the pressure',
      (await ctx.cri.imageStatus(spare)) !== undefined,
      spare,
    );

    const thresholdMiB = await nodefsThresholdMiB(ctx);
    await ctx.reconfigureAgent({
      evictionHard: {
        'memory.available': '100Mi',
        'nodefs.available': `${thresholdMiB}Mi`,
        'nodefs.inodesFree': '2%',
        'imagefs.available': '2%',
      },
      // Node-level reclaim deletes only images older than this; the agent just restarted.
      imageMinimumGCAge: '0s',
    });
    try {
      await createPod(ctx, diskHogPod(ctx, {}));
      await pressureCondition(
        ctx,
        'DiskPressure',
        { status: 'True', reason: 'KubeletHasDiskPressure' },
        PRESSURE_TIMEOUT_MS.LocalStorageEviction,
      );

      // The hog is read before the image: once the hog shows evicted, a reclaim that came first
      // has already removed the spare image.
      const evicted = await check.eventually(
        'hog evicted',
        async (): Promise<Sample> => {
          const hog = await readPod(ctx, 'hog');
          return { hog, spareImagePresent: (await ctx.cri.imageStatus(spare)) !== undefined };
        },
        (s) => s.hog.status?.phase === 'Failed',
        {
          timeoutMs: PRESSURE_TIMEOUT_MS.LocalStorageEviction,
          intervalMs: 1_000,
          describe: (s) => ({ ...s.hog.status, spareImagePresent: s.spareImagePresent }),
        },
      );
      check.equal('unused image reclaimed before the eviction', evicted.spareImagePresent, false);
      await evictedFor(ctx, evicted.hog, 'ephemeral-storage', /ephemeral-storage/);
      await innocentSurvives(ctx);
      await keptImages(ctx);
      await pressureClearsInnocentRuns(ctx, 'DiskPressure', 'DiskPressure clears once the hog is gone');
    } finally {
      // The hog's layer must not keep the node under pressure for the scenarios after this one.
      await ctx.core
        .deleteNamespacedPod({ name: 'hog', namespace: ctx.namespace, gracePeriodSeconds: 0 })
        .catch(() => {});
      await ctx.reconfigureAgent({});
    }
  },
};

async function keptImages(ctx: ScenarioContext): Promise<void> {
  for (const image of [ctx.images.busybox, ctx.backend.sandboxImage]) {
    ctx.check.ok(`image in use kept: ${image}`, (await ctx.cri.imageStatus(image)) !== undefined, image);
  }
}
