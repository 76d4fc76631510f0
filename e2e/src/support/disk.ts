// What the disk-pressure scenarios share: nodefs is the filesystem of the agent's root dir. Their
// cells run on a node with a disk of its own (Scenario.ownDisk: one tmpfs, the harness's
// OWN_DISK_BYTES, under the agent's and the runtime's roots), so the hog's writable layer and the
// agent's nodefs are one filesystem nothing else writes to. Thresholds are still set relative to
// the space free when a case starts (images and the agent's files take some), as upstream does.
import type { ScenarioContext } from '@kh/harness';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { nodeExec } from './faults.js';
import { nodeFsAvailableBytes } from './node.js';
import { podFor } from './pods.js';

const Mi = 2 ** 20;
/** The agent's --root-dir on every node. */
export const AGENT_ROOT_DIR = '/var/lib/kubelet';
/**
 * The hog crosses the threshold after writing this much. Upstream uses 4Gi on a node's real disk;
 * on the node's own disk nothing else writes, so it only has to clear the agent's and the
 * runtime's own writes, and it stays small since the disk's pages are RAM...
 */
export const MARGIN_MIB = 300;
/** ...and it writes twice that, so the signal stays past the threshold until it is evicted. */
export const HOG_MIB = 600;
export const HOG_STEP_MIB = 100;

/** A nodefs.available threshold MARGIN_MIB under the space free now, noted in the cell. */
export async function nodefsThresholdMiB(
  ctx: ScenarioContext,
  detail: Record<string, unknown> = {},
): Promise<number> {
  const freeMiB = Math.floor((await nodeFsAvailableBytes(ctx, AGENT_ROOT_DIR)) / Mi);
  const thresholdMiB = freeMiB - MARGIN_MIB;
  if (thresholdMiB <= 0) throw new Error(`only ${freeMiB}Mi free on nodefs; too little`);
  ctx.note('nodefs threshold from the free space', { freeMiB, thresholdMiB, ...detail });
  return thresholdMiB;
}

/** The `hog` pod, never restarted: diskhog writes HOG_MIB into its writable layer, HOG_STEP_MIB at a time. */
export const diskHogPod = (
  ctx: ScenarioContext,
  spec: Pick<V1PodSpec, 'terminationGracePeriodSeconds'>,
): V1Pod =>
  podFor(ctx, 'hog', {
    ...spec,
    restartPolicy: 'Never',
    containers: [
      {
        name: 'hog',
        image: ctx.images.diskhog,
        imagePullPolicy: 'IfNotPresent',
        env: [
          { name: 'DISKHOG_MB', value: String(HOG_MIB) },
          { name: 'DISKHOG_STEP_MB', value: String(HOG_STEP_MIB) },
        ],
      },
    ],
  });

/**
 * Runs `fn` with the agent's root dir on a tmpfs of its own (`options` for mount -o: size,
 * nr_inodes), so that filling it takes nothing from the host's disk or the other runtimes'
 * cells, and 100% means 100% whatever the host holds. The agent restarts onto it, and back
 * onto the node's own root dir afterwards.
 */
export async function withOwnNodefs(ctx: ScenarioContext, options: string, fn: () => Promise<void>) {
  await ctx.agent.stop();
  await nodeExec(ctx, ['mount', '-t', 'tmpfs', '-o', options, 'kh-nodefs', AGENT_ROOT_DIR]);
  try {
    await ctx.agent.start();
    await fn();
  } finally {
    await ctx.agent.stop();
    await nodeExec(ctx, ['umount', AGENT_ROOT_DIR]);
    await ctx.agent.start();
  }
}
