import type { Scenario } from '@kh/harness';
import { AGENT_ROOT_DIR, withOwnNodefs } from '../support/disk.js';
import { nodeExec } from '../support/faults.js';
import { leaseRenewTime, nodeCondition, pressureCondition } from '../support/node.js';
import { createPod, podFor, readPod, sh } from '../support/pods.js';

/**
 * The nodefs the scenario fills: a filesystem of its own over the agent's root dir, so that 100%
 * means 100% whatever the host's disk holds, and filling it takes nothing from the host or from
 * the other runtimes' cells (they share the host's disk).
 */
const NODEFS_SIZE = '64m';
const FILL = `${AGENT_ROOT_DIR}/kh-disk-full`;

/**
 * The agent's filesystem fills up to the last byte (writes fail with ENOSPC). The agent must keep
 * running and report it (DiskPressure, new pods refused as the kubelet refuses them), and recover
 * by itself once the space is back.
 */
export const diskFull: Scenario = {
  name: 'disk-full',
  estimateMs: 50_000,
  isolation: 'node',
  description:
    "the agent's filesystem filled to 100%: DiskPressure, new pods refused (Evicted), the agent keeps running (lease renewed); DiskPressure clears when the space is back",
  needs: ['real-containers'],
  timeoutMs: 240_000,
  async run(ctx) {
    const { check } = ctx;
    await withOwnNodefs(ctx, `size=${NODEFS_SIZE}`, async () => {
      try {
        // dd stops at ENOSPC: the filesystem is full when it ends.
        await ctx.backend.host.exec(['dd', 'if=/dev/zero', `of=${FILL}`, 'bs=1M']);
        const avail = (await nodeExec(ctx, ['df', '-B1', '--output=avail', AGENT_ROOT_DIR]))
          .trim()
          .split('\n')
          .pop();
        check.equal('nodefs full: 0 bytes available', Number(avail), 0);
        const fullAt = Date.now();

        await pressureCondition(
          ctx,
          'DiskPressure',
          { status: 'True', reason: 'KubeletHasDiskPressure' },
          60_000,
        );
        await createPod(ctx, podFor(ctx, 'refused', { containers: [sh(ctx, 'c', 'sleep 60')] }));
        const refused = await check.eventually(
          'a new pod is refused while the disk is full',
          () => readPod(ctx, 'refused'),
          (p) => p.status?.phase === 'Failed',
          { timeoutMs: 30_000, intervalMs: 500, describe: (p) => p.status ?? {} },
        );
        check.equal('refusal reason', refused.status?.reason, 'Evicted');
        check.ok(
          'refusal message names DiskPressure',
          /DiskPressure/.test(refused.status?.message ?? ''),
          refused.status?.message,
        );
        await check.eventually(
          'the agent keeps running: lease renewed on a full disk',
          () => leaseRenewTime(ctx),
          (t) => t > fullAt,
          {
            timeoutMs: 25_000,
            intervalMs: 500,
          },
        );

        await nodeExec(ctx, ['rm', '-f', FILL]);
        await pressureCondition(
          ctx,
          'DiskPressure',
          { status: 'False', name: 'DiskPressure clears once the space is back' },
          90_000,
        );
        check.equal('node Ready throughout', (await nodeCondition(ctx, 'Ready'))?.status, 'True');
      } finally {
        await ctx.core.deleteNamespacedPod({ name: 'refused', namespace: ctx.namespace }).catch(() => {});
      }
    });
  },
};
