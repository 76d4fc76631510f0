import { Quantity } from '@kh/apimachinery';
import type { Scenario } from '@kh/harness';
import {
  evictedFor,
  evictionGuardMs,
  innocentSurvives,
  PRESSURE_DISAPPEAR_MS,
  PRESSURE_TIMEOUT_MS,
  pressureThenEvicted,
} from '../support/eviction.js';
import { nodeMemoryWorkingSetBytes, pressureCondition } from '../support/node.js';
import { createPod, memhog, podFor, sh, waitForRunning } from '../support/pods.js';

// Upstream's eviction_test.go MemoryAllocatableEviction: kubeReserved memory is capacity − 300Mi
// with enforceNodeAllocatable [pods], so kubepods is limited to 300Mi while the node itself has
// plenty. A BestEffort memory hog in kubepods then crosses allocatableMemory.available (the hard
// memory.available threshold, 100Mi here, copied to kubepods) and is evicted for memory; the
// innocent pod survives and MemoryPressure clears.
const FILE = 'test/e2e_node/eviction_test.go';
const Mi = 2 ** 20;
/** What kubepods keeps: upstream's capacity − kubeReserved. */
const KUBEPODS_MIB = 300;

export const memoryAllocatableEviction: Scenario = {
  name: 'memory-allocatable-eviction',
  estimateMs: 60_000,
  // It restarts the agent with a reservation that leaves kubepods 300Mi.
  isolation: 'node',
  description:
    'kubeReserved memory = capacity − 300Mi with enforceNodeAllocatable [pods]: a BestEffort hog crosses allocatableMemory.available in kubepods and is evicted for memory, the innocent pod survives, MemoryPressure clears',
  needs: ['real-containers'],
  upstream: [
    {
      file: FILE,
      case: 'MemoryAllocatableEviction when we run containers that should cause MemoryPressure should eventually evict all of the correct pods',
    },
  ],
  // Slowest seen 113 s (t59c, containerd).
  timeoutMs: evictionGuardMs(115_000, PRESSURE_TIMEOUT_MS.MemoryAllocatableEviction),
  async run(ctx) {
    const node = await ctx.core.readNode({ name: ctx.nodeName });
    const capacity = Quantity.parse(node.status?.capacity?.memory ?? '0').value();
    const reserved = capacity - BigInt(KUBEPODS_MIB * Mi);
    await ctx.reconfigureAgent({
      kubeReserved: { memory: String(reserved) },
      enforceNodeAllocatable: ['pods'],
    });
    try {
      await createPod(ctx, podFor(ctx, 'innocent', { containers: [sh(ctx, 'c', 'sleep 600')] }));
      await waitForRunning(ctx, 'innocent');
      // The hog stops 50..58Mi below the kubepods limit: past the 100Mi threshold, short of the
      // kernel's OOM kill at the limit. What kubepods already holds is measured, not guessed.
      const step = 8;
      const inUse = await nodeMemoryWorkingSetBytes(ctx, 'kubepods');
      const targetMiB = Math.floor((KUBEPODS_MIB - 50 - Math.ceil(inUse / Mi)) / step) * step;
      ctx.note('kubepods memory', {
        limitMiB: KUBEPODS_MIB,
        workingSetBytes: inUse,
        hogTargetMiB: targetMiB,
      });
      if (targetMiB < 64)
        throw new Error(`kubepods already uses ${inUse} bytes; too little room for the hog`);
      await createPod(
        ctx,
        podFor(ctx, 'hog', { restartPolicy: 'Never', containers: [memhog(ctx, 'hog', targetMiB, step)] }),
      );

      const { evicted } = await pressureThenEvicted(
        ctx,
        'MemoryPressure',
        'hog',
        PRESSURE_TIMEOUT_MS.MemoryAllocatableEviction,
      );
      await evictedFor(ctx, evicted, 'memory', /low on resource: memory/);
      await innocentSurvives(ctx);
      await pressureCondition(
        ctx,
        'MemoryPressure',
        { status: 'False', name: 'MemoryPressure clears after the transition period' },
        PRESSURE_DISAPPEAR_MS,
      );
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};
