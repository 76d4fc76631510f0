import type { Scenario, ScenarioContext } from '@kh/harness';
import type { V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import { AGENT_ROOT_DIR } from '../support/disk.js';
import {
  diskConsumingPod,
  evictionGuardMs,
  evictionPod,
  PRESSURE_TIMEOUT_MS,
  runEvictionTest,
  withHighPriorityClass,
} from '../support/eviction.js';
import { nodeFsAvailableBytes, nodeMemoryWorkingSetBytes } from '../support/node.js';

const Mi = 2 ** 20;
const FILE = 'test/e2e_node/eviction_test.go';

/** What the test consumes past the threshold it sets from the node's free memory (upstream's). */
const MEMORY_CONSUMED_MIB = 600;
const GUARANTEED_MIB = 300;

/**
 * eviction_test's getMemhogPod: grows its memory until evicted; a pod with a memory limit holds
 * 80% of it, so that it never meets its own OOM killer. Upstream grows 12Mi every 10 s for an hour;
 * these grow 8Mi every 0.25 s up to `capMiB`, which the scenario sets so that all of them together
 * stay clear of the node's OOM line.
 */
function memhogPod(
  ctx: ScenarioContext,
  name: string,
  container: string,
  capMiB: number,
  opts: { resources?: V1ResourceRequirements; priorityClassName?: string } = {},
): V1Pod {
  return evictionPod(
    ctx,
    name,
    {
      name: container,
      image: ctx.images.memhog,
      imagePullPolicy: 'IfNotPresent',
      env: [
        { name: 'MEMHOG_MB', value: String(capMiB) },
        { name: 'MEMHOG_STEP_MB', value: '8' },
        { name: 'MEMHOG_INTERVAL_S', value: '0.25' },
      ],
      ...(opts.resources ? { resources: opts.resources } : {}),
    },
    opts.priorityClassName !== undefined ? { priorityClassName: opts.priorityClassName } : {},
  );
}

/**
 * eviction_test's PriorityMemoryEvictionOrdering: a memory.available threshold 600Mi under the
 * memory free when it starts; a low-priority hog, a high-priority hog (of upstream's PriorityClass,
 * value 999999999) and a pod within its 300Mi request. The
 * low-priority hog goes first, then the high-priority one; the guaranteed pod never.
 */
export const priorityMemoryEviction: Scenario = {
  name: 'priority-memory-eviction',
  estimateMs: 90_000,
  isolation: 'node',
  description:
    'memory pressure evicts the low-priority hog, then the high-priority hog, never the pod within its request; MemoryPressure appears and clears; Evicted events name memory and the offending container',
  needs: ['real-containers', 'memory-pressure'],
  upstream: [
    {
      file: FILE,
      case: 'PriorityMemoryEvictionOrdering when we run containers that should cause MemoryPressure should eventually evict all of the correct pods',
    },
  ],
  // Slowest seen 122 s (t59c, docker).
  timeoutMs: evictionGuardMs(125_000, PRESSURE_TIMEOUT_MS.PriorityMemoryEvictionOrdering),
  async run(ctx) {
    const limit = ctx.backend.memoryLimitBytes;
    if (!limit) throw new Error('the node has no memory limit; memory pressure needs one');
    const availableMiB = Math.floor((limit - (await nodeMemoryWorkingSetBytes(ctx))) / Mi);
    const thresholdMiB = availableMiB - MEMORY_CONSUMED_MIB;
    // Either hog alone must push past the threshold next to the guaranteed pod (which holds 80% of
    // its 300Mi), and all three together must stay 150Mi clear of the OOM line.
    const guaranteedHolds = Math.floor(GUARANTEED_MIB * 0.8);
    const capMiB = Math.min(MEMORY_CONSUMED_MIB, Math.floor((availableMiB - guaranteedHolds - 150) / 2));
    ctx.note('memory threshold from the memory free', { availableMiB, thresholdMiB, hogCapMiB: capMiB });
    if (thresholdMiB < 100 || capMiB < MEMORY_CONSUMED_MIB - guaranteedHolds + 64)
      throw new Error(`only ${availableMiB}Mi free on the node; too little for the hogs`);
    const fixed = { memory: `${GUARANTEED_MIB}Mi` };
    await ctx.reconfigureAgent({ evictionHard: { 'memory.available': `${thresholdMiB}Mi` } });
    try {
      await withHighPriorityClass(ctx, (highPriorityClassName) =>
        runEvictionTest(ctx, {
          condition: 'MemoryPressure',
          starvedResource: 'memory',
          pressureTimeoutMs: PRESSURE_TIMEOUT_MS.PriorityMemoryEvictionOrdering,
          message: (s) =>
            new RegExp(
              `^The node was low on resource: memory\\. Threshold quantity: ${thresholdMiB}Mi, available: \\d+(\\.\\d+)?[KMG]?i?\\. Container ${s.pod.spec?.containers[0]?.name} was using \\S+, request is 0, has larger consumption of memory\\. $`,
            ),
          specs: [
            { evictionPriority: 2, pod: memhogPod(ctx, 'memory-hog-pod', 'memory-hog', capMiB) },
            {
              evictionPriority: 1,
              pod: memhogPod(ctx, 'high-priority-memory-hog-pod', 'high-priority-memory-hog', capMiB, {
                priorityClassName: highPriorityClassName,
              }),
            },
            {
              evictionPriority: 0,
              pod: memhogPod(ctx, 'guaranteed-pod', 'guaranteed-pod', guaranteedHolds, {
                resources: { requests: fixed, limits: fixed },
              }),
            },
          ],
        }),
      );
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};

/**
 * What the test writes past the threshold it sets from the node's free disk: upstream 4Gi on a
 * node's real disk; here the node has a disk of its own (Scenario.ownDisk, 2 GiB of RAM) that no
 * other writer shares, so a margin over the third pod's 297 MiB is enough.
 */
const DISK_CONSUMED_MIB = 400;
/** Each writer's total: either alone passes the threshold; all three (1697 MiB) fit the node's disk. */
const WRITER_MIB = 700;

/**
 * eviction_test's PriorityLocalStorageEvictionOrdering: a nodefs.available threshold under the
 * disk free when it starts (DISK_CONSUMED_MIB); a low-priority and a
 * high-priority writer filling emptyDirs, and a pod writing 297 MiB within its 300Mi
 * ephemeral-storage request and limit. The low-priority writer goes first, then the
 * high-priority one; the pod within its request never.
 */
export const priorityDiskEviction: Scenario = {
  name: 'priority-disk-eviction',
  estimateMs: 120_000,
  isolation: 'node',
  description:
    'disk pressure evicts the low-priority writer, then the high-priority writer, never the pod within its ephemeral-storage request; DiskPressure appears and clears; Evicted events name ephemeral-storage',
  needs: ['real-containers'],
  // The writers' emptyDirs on a disk no other cell writes to, so cells run side by side.
  ownDisk: true,
  upstream: [
    {
      file: FILE,
      case: 'PriorityLocalStorageEvictionOrdering when we run containers that should cause DiskPressure should eventually evict all of the correct pods',
    },
  ],
  // Slowest seen 105 s (t59c, containerd).
  timeoutMs: evictionGuardMs(105_000, PRESSURE_TIMEOUT_MS.PriorityLocalStorageEvictionOrdering),
  async run(ctx) {
    const freeMiB = Math.floor((await nodeFsAvailableBytes(ctx, AGENT_ROOT_DIR)) / Mi);
    const thresholdMiB = freeMiB - DISK_CONSUMED_MIB;
    if (thresholdMiB <= 0) throw new Error(`only ${freeMiB}Mi free on nodefs; too little`);
    ctx.note('nodefs threshold from the free space', { freeMiB, thresholdMiB });
    const fixed = { 'ephemeral-storage': '300Mi' };
    const writer = (name: string, priorityClassName?: string) =>
      diskConsumingPod(ctx, name, WRITER_MIB, {
        volume: { emptyDir: {} },
        stepMib: 10,
        intervalS: 0.5,
        ...(priorityClassName !== undefined ? { priorityClassName } : {}),
      });
    await ctx.reconfigureAgent({ evictionHard: { 'nodefs.available': `${thresholdMiB}Mi` } });
    try {
      await withHighPriorityClass(ctx, (highPriorityClassName) =>
        runEvictionTest(ctx, {
          condition: 'DiskPressure',
          starvedResource: 'ephemeral-storage',
          pressureTimeoutMs: PRESSURE_TIMEOUT_MS.PriorityLocalStorageEvictionOrdering,
          message: () =>
            /^The node was low on resource: ephemeral-storage\. Threshold quantity: \S+, available: \S+\. /,
          specs: [
            { evictionPriority: 2, pod: writer('best-effort-disk') },
            { evictionPriority: 1, pod: writer('high-priority-disk', highPriorityClassName) },
            {
              evictionPriority: 0,
              pod: diskConsumingPod(ctx, 'guaranteed-disk', 297, {
                volume: { emptyDir: {} },
                stepMib: 9,
                resources: { requests: fixed, limits: fixed },
              }),
            },
          ],
        }),
      );
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};
