import type { Scenario, ScenarioContext } from '@kh/harness';
import { createPod, POD_DELETE_MS, podFor, sh, waitForRunning } from '../support/pods.js';

/** Upstream's values: imageMaximumGCAge 1m, imageMinimumGCAge 1s. */
const MAX_AGE = '1m';
const MIN_AGE = '1s';
/** Gomega's Consistently after the restart: 50 s (under the max age), looking every 10 s. */
const NOT_BEFORE_MS = 50_000;
/**
 * The kubelet's image GC runs every 5 minutes, a constant; the agent takes a shorter period as a
 * test-only hidden flag. The expectations stay upstream's, and the "not prematurely" window now
 * sees five GC passes instead of none.
 */
const GC_PERIOD = '10s';
/**
 * checkGCUntil: nothing is freed for age before the agent has run for the max age, so the images
 * go at the first GC pass after that: within the max age and one period of the restart. Two
 * minutes leave slack for a busy host.
 */
const GC_UNTIL_MS = 120_000;

const present = async (ctx: ScenarioContext, ref: string) => (await ctx.cri.imageStatus(ref)) !== undefined;

/**
 * Mirrors image_gc_test.go "when ImageMaximumGCAge is set", both cases in one run: with the
 * maximum age set, an image pulled through CRI and never used, and the image of a pod that ran and
 * was deleted, are garbage collected with no disk pressure at all ("should GC unused images"); and
 * after an agent restart they stay at least as long as the max age ("should not GC unused images
 * prematurely"). Upstream's two cases differ only in that restart, so the restarted run covers
 * both, and a cell costs one max age (1 minute) instead of two 5-minute GC periods.
 */
export const imageGcAge: Scenario = {
  name: 'image-gc-age',
  estimateMs: 120_000,
  isolation: 'node',
  description:
    'imageMaximumGCAge: unused images are removed without disk pressure, never before the max age after a restart',
  needs: ['real-containers', 'registry-pull'],
  upstream: [
    {
      file: 'test/e2e_node/image_gc_test.go',
      case: 'ImageGarbageCollect when ImageMaximumGCAge is set should GC unused images',
    },
    {
      file: 'test/e2e_node/image_gc_test.go',
      case: 'ImageGarbageCollect when ImageMaximumGCAge is set should not GC unused images prematurely',
    },
  ],
  // Agent restarts, a pod (upstream allows 5 min each to start and to go), 50 s of "not yet",
  // then up to 2 minutes for the GC pass.
  timeoutMs: 540_000,
  async run(ctx) {
    const { check } = ctx;
    // The agnhost of upstream: an image pulled through CRI that no container uses.
    const spare = ctx.images.httpd;
    // The image of upstream's innocentPod, used by a pod that is then deleted.
    const used = ctx.images.busybox;
    ctx.note('restarting the agent with imageMaximumGCAge and imageMinimumGCAge as upstream sets them', {
      imageMaximumGCAge: MAX_AGE,
      imageMinimumGCAge: MIN_AGE,
      imageGCPeriod: GC_PERIOD,
    });
    // imageGCHighThresholdPercent 100 turns usage-based image GC off (as in the kubelet), so only
    // the age can remove an image here; upstream relies on its test node's disk being below 85%.
    await ctx.reconfigureAgent(
      { imageMaximumGCAge: MAX_AGE, imageMinimumGCAge: MIN_AGE, imageGCHighThresholdPercent: 100 },
      { imageGCPeriod: GC_PERIOD },
    );
    try {
      await createPod(ctx, podFor(ctx, 'innocent', { containers: [sh(ctx, 'c', 'sleep 600')] }));
      await waitForRunning(ctx, 'innocent');
      await ctx.cri.pullImage(spare);
      check.ok('spare image pulled through CRI', await present(ctx, spare), spare);
      await ctx.core.deleteNamespacedPod({
        name: 'innocent',
        namespace: ctx.namespace,
        gracePeriodSeconds: 0,
      });
      await check.eventually(
        "the deleted pod's containers are gone",
        async () =>
          (await ctx.cri.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': ctx.namespace } }))
            .length,
        (n) => n === 0,
        // Upstream's DeleteSync allows f.Timeouts.PodDelete.
        { timeoutMs: POD_DELETE_MS, intervalMs: 2_000, expected: 0 },
      );

      ctx.note('restarting the agent (restartKubelet): it knows nothing of earlier image use');
      await ctx.agent.stop();
      await ctx.agent.start();
      const restartedAt = Date.now();

      // Consistently: both unused images stay while the agent has run for less than the max age.
      const end = restartedAt + NOT_BEFORE_MS;
      let early: string | undefined;
      // Gomega's last poll is at the window's end, never after it: at the max age the images may go.
      for (;;) {
        for (const ref of [spare, used]) if (!early && !(await present(ctx, ref))) early = ref;
        const left = end - Date.now();
        if (early || left <= 0) break;
        await ctx.sleep(Math.min(10_000, left));
      }
      check.ok(
        `unused images kept for ${NOT_BEFORE_MS / 1000} s after the restart (under imageMaximumGCAge ${MAX_AGE})`,
        early === undefined,
        early
          ? `${early} removed ${Math.round((Date.now() - restartedAt) / 1000)} s after the restart`
          : 'both present',
        'both present',
      );

      await check.eventually(
        'unused images removed for imageMaximumGCAge with usage-based GC off',
        async () => ({ spare: await present(ctx, spare), used: await present(ctx, used) }),
        (p) => !p.spare && !p.used,
        { timeoutMs: GC_UNTIL_MS, intervalMs: 5_000, expected: { spare: false, used: false } },
      );
      ctx.note('unused images removed', {
        secondsAfterRestart: Math.round((Date.now() - restartedAt) / 1000),
      });
      // The runtime's own sandbox image (loaded at node start-up, not pulled from the registry).
      const pause = ctx.backend.sandboxImage;
      check.ok('pause image is kept', await present(ctx, pause), pause);
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};
