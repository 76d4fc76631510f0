import type { Scenario, ScenarioContext } from '@kh/harness';
import { AGENT_ROOT_DIR, withOwnNodefs } from '../support/disk.js';
import {
  evictionGuardMs,
  evictionPod,
  innocentPod,
  PRESSURE_TIMEOUT_MS,
  runEvictionTest,
} from '../support/eviction.js';
import { nodeExec } from '../support/faults.js';
import { sh } from '../support/pods.js';

/**
 * The nodefs the scenario fills: a tmpfs of its own over the agent's root dir with few inodes, so
 * that the threshold and the hog's files are exact whatever the host's disk does (on the host's
 * disk, with its 16M inodes, every image layer another cell unpacks moves the count).
 */
const NODEFS = 'size=128m,nr_inodes=20000';
/** The threshold sits this many inodes under the free ones (upstream 200000 on a whole disk)... */
const INODES_CONSUMED = 5000;
/** ...and the hog stops this far past it (upstream: never), so the agent's own files still fit. */
const HOG_FILES = INODES_CONSUMED + 3000;

async function inodesFree(ctx: ScenarioContext): Promise<number> {
  const out = await nodeExec(ctx, ['df', '--output=iavail', AGENT_ROOT_DIR]);
  const free = Number(out.trim().split('\n').pop());
  if (!Number.isFinite(free)) throw new Error(`df printed no inode count for ${AGENT_ROOT_DIR}: ${out}`);
  return free;
}

/**
 * eviction_test's InodeEviction: a nodefs.inodesFree threshold under the inodes free when it
 * starts; a pod creating empty files in an emptyDir is evicted for inodes (the agent ranks by
 * inodes, not bytes), the innocent pod survives, DiskPressure appears and clears once the
 * evicted pod's emptyDir is gone.
 */
export const inodeEviction: Scenario = {
  name: 'inode-eviction',
  estimateMs: 70_000,
  isolation: 'node',
  description:
    'nodefs inode pressure evicts the pod creating files in its emptyDir, not the innocent pod; DiskPressure appears and clears; the Evicted event names inodes',
  needs: ['real-containers'],
  upstream: [
    {
      file: 'test/e2e_node/eviction_test.go',
      case: 'InodeEviction when we run containers that should cause DiskPressure should eventually evict all of the correct pods',
    },
  ],
  // Slowest seen 167 s (t59c, docker).
  timeoutMs: evictionGuardMs(170_000, PRESSURE_TIMEOUT_MS.InodeEviction),
  async run(ctx) {
    await withOwnNodefs(ctx, NODEFS, async () => {
      const free = await inodesFree(ctx);
      const threshold = free - INODES_CONSUMED;
      ctx.note('nodefs.inodesFree threshold from the free inodes', { free, threshold });
      await ctx.reconfigureAgent({ evictionHard: { 'nodefs.inodesFree': String(threshold) } });
      // eviction_test's inodeConsumingPod: one empty file per step (a shell redirection, no fork).
      const hog = evictionPod(
        ctx,
        'volume-inode-hog-pod',
        sh(
          ctx,
          'volume-inode-hog-container',
          `n=0; while [ $n -lt ${HOG_FILES} ] && : > /test-mnt/file$n; do n=$((n+1)); done; while true; do sleep 5; done`,
        ),
        { volume: { emptyDir: {} } },
      );
      await runEvictionTest(ctx, {
        condition: 'DiskPressure',
        starvedResource: 'inodes',
        pressureTimeoutMs: PRESSURE_TIMEOUT_MS.InodeEviction,
        message: () => /^The node was low on resource: inodes\. Threshold quantity: \S+, available: \S+\. $/,
        specs: [
          { evictionPriority: 1, pod: hog },
          { evictionPriority: 0, pod: innocentPod(ctx) },
        ],
      });
      // Nothing of the scenario may run on this nodefs when it goes.
      await ctx.core
        .deleteNamespacedPod({ name: 'test-admit-pod', namespace: ctx.namespace, gracePeriodSeconds: 0 })
        .catch(() => undefined);
    }).finally(() => ctx.reconfigureAgent({}));
  },
};
