import type { Scenario, ScenarioContext } from '@kh/harness';
import { allChecks } from '../support/concurrent.js';
import { GC_COLLECT_MS, GC_SETUP_MS } from '../support/gc.js';
import { containerStatus, createPod, podFor, sh, waitForPod, waitForRunning } from '../support/pods.js';

const containersOf = async (ctx: ScenarioContext) =>
  ctx.cri.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': ctx.namespace } });
const sandboxesOf = async (ctx: ScenarioContext) =>
  ctx.cri.listPodSandbox({ labelSelector: { 'io.kubernetes.pod.namespace': ctx.namespace } });

/**
 * Modelled on garbage_collector_test: crash loops leave at most maxPerPodContainer dead copies,
 * deleted pods leave nothing, and image GC frees unused images while keeping those in use.
 * Counts come from the runtime itself, through CRI, not from the agent's view.
 */
export const gc: Scenario = {
  name: 'gc',
  estimateMs: 45_000,
  isolation: 'node',
  description:
    'container GC keeps maxPerPodContainer+1 per container, nothing left after delete, image GC keeps in-use images',
  needs: ['real-containers', 'registry-pull'],
  // Its layout is smaller (2 pods x 2 containers, 2 restarts each); the expectations are upstream's.
  upstream: [
    {
      file: 'test/e2e_node/garbage_collector_test.go',
      case: 'GarbageCollect Garbage Collection Test: Many Pods with Many Restarting Containers Should eventually garbage collect containers when we exceed the number of dead containers per container',
    },
  ],
  // Room for upstream's bounds (10 min for the restarts, 3 min per GC step) in a slow but correct run.
  timeoutMs: 720_000,
  async run(ctx) {
    const { check } = ctx;
    await Promise.all(
      ['crash-a', 'crash-b'].map((name) =>
        createPod(
          ctx,
          podFor(ctx, name, {
            restartPolicy: 'Always',
            containers: [sh(ctx, 'c', 'exit 1'), sh(ctx, 'd', 'exit 1')],
          }),
        ),
      ),
    );
    // CrashLoopBackOff doubles from 10s: two restarts take about 30s and leave three copies of
    // each container, one more than maxPerPodContainer+1, so container GC has to act.
    await allChecks(
      ['crash-a', 'crash-b'].map((name) =>
        waitForPod(
          ctx,
          name,
          'restarted twice',
          (p) => (containerStatus(p, 'c')?.restartCount ?? 0) >= 2,
          GC_SETUP_MS,
        ),
      ),
    );
    // Container GC runs every minute with maxPerPodContainer=1: one dead copy next to the current one.
    const perName = await check.eventually(
      'at most maxPerPodContainer+1 containers per (pod, container)',
      async () => {
        const counts: Record<string, number> = {};
        for (const c of await containersOf(ctx)) {
          const key = `${c.labels['io.kubernetes.pod.name']}/${c.labels['io.kubernetes.container.name']}`;
          counts[key] = (counts[key] ?? 0) + 1;
        }
        return counts;
      },
      (counts) => Object.keys(counts).length === 4 && Object.values(counts).every((n) => n <= 2),
      { timeoutMs: GC_COLLECT_MS, intervalMs: 2_000, expected: 'each of 4 containers has <= 2 copies' },
    );
    ctx.note('containers per name after GC', perName);

    await ctx.core.deleteCollectionNamespacedPod({ namespace: ctx.namespace, gracePeriodSeconds: 0 });
    await check.eventually(
      'no containers left after the pods are deleted',
      async () => (await containersOf(ctx)).length,
      (n) => n === 0,
      {
        timeoutMs: GC_COLLECT_MS,
        intervalMs: 2_000,
        expected: 0,
      },
    );
    await check.eventually(
      'no sandboxes left after the pods are deleted',
      async () => (await sandboxesOf(ctx)).length,
      (n) => n === 0,
      {
        timeoutMs: 120_000,
        intervalMs: 2_000,
        expected: 0,
      },
    );

    // Image GC: pull a spare image, keep one in use, then make any usage cross the threshold.
    const spare = ctx.images.diskhog;
    const inUse = ctx.images.busybox;
    await ctx.cri.pullImage(spare);
    await createPod(ctx, podFor(ctx, 'keeper', { containers: [sh(ctx, 'c', 'sleep 600')] }));
    await waitForRunning(ctx, 'keeper');
    ctx.note('restarting the agent with imageGCHighThresholdPercent=1, imageGCLowThresholdPercent=0');
    await ctx.reconfigureAgent({
      imageGCHighThresholdPercent: 1,
      imageGCLowThresholdPercent: 0,
      imageMinimumGCAge: '0s',
    });
    try {
      await check.eventually(
        'unused image removed by image GC',
        () => ctx.cri.imageStatus(spare),
        (img) => img === undefined,
        {
          timeoutMs: 120_000,
          intervalMs: 2_000,
          expected: 'image gone',
        },
      );
      check.ok('image in use is kept', (await ctx.cri.imageStatus(inUse)) !== undefined, inUse);
      // The runtime's own sandbox image (loaded at node start-up, not pulled from the registry).
      const pause = ctx.backend.sandboxImage;
      check.ok('pause image is kept', (await ctx.cri.imageStatus(pause)) !== undefined, pause);
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};
