import type { Scenario } from '@kh/harness';
import { allChecks } from '../support/concurrent.js';
import {
  evictedFor,
  evictionGuardMs,
  innocentSurvives,
  PRESSURE_TIMEOUT_MS,
  pressureClearsInnocentRuns,
  pressureThenEvicted,
} from '../support/eviction.js';
import { nodeMemoryWorkingSetBytes } from '../support/node.js';
import { createPod, memhog, podFor, sh, waitForPod, waitForRunning } from '../support/pods.js';

const Mi = 2 ** 20;

/**
 * Modelled on eviction_test: real memory pressure inside a memory-limited node container. The hog,
 * far above its (absent) request, is evicted, the innocent pod within its request survives, the
 * condition appears and clears after the transition period, and a new pod is admitted afterwards.
 */
export const eviction: Scenario = {
  name: 'eviction',
  estimateMs: 55_000,
  isolation: 'node',
  description:
    'memory pressure evicts the hog above its request, not the innocent pod within its own; condition appears and clears; Evicted reason and event',
  needs: ['real-containers', 'memory-pressure'],
  // Slowest seen 149 s (t59c, containerd).
  timeoutMs: evictionGuardMs(150_000, PRESSURE_TIMEOUT_MS.MemoryAllocatableEviction),
  async run(ctx) {
    const limit = ctx.backend.memoryLimitBytes;
    if (!limit) throw new Error('the node has no memory limit; eviction needs one');
    await createPod(
      ctx,
      podFor(ctx, 'innocent', {
        containers: [
          sh(ctx, 'c', 'sleep 600', {
            resources: { requests: { memory: '16Mi', cpu: '10m' }, limits: { memory: '16Mi', cpu: '10m' } },
          }),
        ],
      }),
    );
    await waitForRunning(ctx, 'innocent');
    // The hog grows in 8Mi steps until 50..58Mi remain: mid-way between the 100Mi hard threshold
    // and the OOM line, because the node's own use moves by tens of MiB while the hog grows (the Go
    // daemons' heaps, reclaimable cache). With 32Mi steps leaving 60..92Mi, a drop of 10-20Mi kept
    // the docker node above the threshold for the whole wait. What the runtime, the agent and the
    // other pods already use is measured, not guessed.
    const step = 8;
    const workingSet = await nodeMemoryWorkingSetBytes(ctx);
    const targetMiB = Math.floor((Math.floor((limit - workingSet) / Mi) - 50) / step) * step;
    ctx.note('node memory', { limitBytes: limit, workingSetBytes: workingSet, hogTargetMiB: targetMiB });
    if (targetMiB < 64) throw new Error(`the node has only ${targetMiB + 50}Mi free; too little for the hog`);
    await createPod(
      ctx,
      podFor(ctx, 'hog', {
        restartPolicy: 'Never',
        // No pause between steps: the size, not the speed, keeps the node above the OOM line.
        containers: [memhog(ctx, 'hog', targetMiB, step)],
      }),
    );

    const { evicted } = await pressureThenEvicted(
      ctx,
      'MemoryPressure',
      'hog',
      PRESSURE_TIMEOUT_MS.MemoryAllocatableEviction,
    );
    await evictedFor(ctx, evicted, 'memory', /memory/);
    await innocentSurvives(ctx);
    // The harness configures evictionPressureTransitionPeriod: 20s so this takes seconds, not 5 minutes.
    await pressureClearsInnocentRuns(
      ctx,
      'MemoryPressure',
      'MemoryPressure clears after the transition period',
    );
    await createPod(ctx, podFor(ctx, 'after', { containers: [sh(ctx, 'c', 'sleep 600')] }));
    await allChecks([
      waitForPod(ctx, 'after', 'is admitted and Running afterwards', (p) => p.status?.phase === 'Running'),
    ]);
  },
};
