import type { Scenario, ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import {
  evictionGuardMs,
  evictionPod,
  innocentPod,
  inOwnNamespace,
  PRESSURE_TIMEOUT_MS,
  runEvictionTest,
  withHighPriorityClass,
} from '../support/eviction.js';
import { nodeExec } from '../support/faults.js';
import { sh } from '../support/pods.js';

const FILE = 'test/e2e_node/eviction_test.go';
const CONTEXT = 'when we run containers that should cause PIDPressure';

/**
 * The threshold sits this many pids under the node's available pids (upstream 10000), and each
 * fork bomb starts this many sleeping processes (upstream 30000): either alone crosses it, and they
 * die with their pod (its pid namespace's init goes first).
 * - pid.available counts every task of the machine, and the matrix's other cells come and go
 *   while this one runs: a probe suite starting 22 pods added about 1000 tasks and put the node
 *   back under PIDPressure (2026-11-29, docker-26, with a margin of 1000). The margin is four
 *   times that.
 * - Upstream's sizes do not fit: the host's pid_max (32768 here) bounds every node's pids, and
 *   both bombs of the ordering case together stay well under it.
 */
const PIDS_CONSUMED = 4000;
const PROCESSES = 6000;

/**
 * Available pids as the agent computes pid.available: the lower of kernel.pid_max and
 * kernel.threads-max, minus every task on the machine (/proc/loadavg's 4th field); upstream reads
 * the same from the summary's rlimit stats.
 */
async function availablePids(ctx: ScenarioContext): Promise<number> {
  const out = await nodeExec(ctx, [
    'cat',
    '/proc/sys/kernel/pid_max',
    '/proc/sys/kernel/threads-max',
    '/proc/loadavg',
  ]);
  const [pidMax, threadsMax, loadavg] = out.trim().split('\n');
  const tasks = Number(loadavg?.split(/\s+/)[3]?.split('/')[1]);
  const available = Math.min(Number(pidMax), Number(threadsMax)) - tasks;
  if (!Number.isFinite(available)) throw new Error(`cannot read the node's pids: ${out}`);
  return available;
}

/** eviction_test's pidConsumingPod: starts PROCESSES sleeping processes, one every 10 ms, then waits. */
function pidConsumingPod(ctx: ScenarioContext, name: string, priorityClassName?: string): V1Pod {
  const script = `n=0; while [ $n -lt ${PROCESSES} ]; do usleep 10000; sleep 3600 & n=$((n+1)); done; wait`;
  return evictionPod(
    ctx,
    `${name}-pod`,
    sh(ctx, `${name}-container`, script),
    priorityClassName !== undefined ? { priorityClassName } : {},
  );
}

const message = () =>
  /^The node was low on resource: pids\. Threshold quantity: \d+(\.\d+)?k?, available: \d+(\.\d+)?k?\. $/;

/** What every case waits for: PIDPressure, the bombs evicted with the kubelet's message. */
const PID_PRESSURE = {
  condition: 'PIDPressure',
  pressureTimeoutMs: PRESSURE_TIMEOUT_MS.PriorityPidEvictionOrdering,
  message,
} as const;

/** Sets pid.available PIDS_CONSUMED under what is free now, as upstream's tempSetCurrentKubeletConfig does. */
async function pidThreshold(ctx: ScenarioContext, featureGates: Record<string, boolean> = {}) {
  const available = await availablePids(ctx);
  ctx.note('pid.available threshold from the available pids', {
    available,
    threshold: available - PIDS_CONSUMED,
  });
  await ctx.reconfigureAgent({
    evictionHard: { 'pid.available': String(available - PIDS_CONSUMED) },
    ...(Object.keys(featureGates).length > 0 ? { featureGates } : {}),
  });
}

/**
 * eviction_test's ordering case, run once per PodAndContainerStatsFromCRI value: a low-priority
 * bomb, an innocent pod and a bomb, both of upstream's high-priority class. The low-priority bomb goes
 * first, then the high-priority one, which runs more processes than the innocent pod of its
 * priority (counted in the pod cgroup with the gate off, by the runtime's ListPodSandboxStats with
 * it on); the innocent pod never.
 */
async function priorityOrdering(ctx: ScenarioContext, statsFromCRI: boolean) {
  await pidThreshold(ctx, { PodAndContainerStatsFromCRI: statsFromCRI });
  await withHighPriorityClass(ctx, (highPriorityClassName) =>
    runEvictionTest(ctx, {
      ...PID_PRESSURE,
      specs: [
        { evictionPriority: 2, pod: pidConsumingPod(ctx, 'fork-bomb-container-with-low-priority') },
        { evictionPriority: 0, pod: innocentPod(ctx, highPriorityClassName) },
        {
          evictionPriority: 1,
          pod: pidConsumingPod(ctx, 'fork-bomb-container-with-high-priority', highPriorityClassName),
        },
      ],
    }),
  );
}

/**
 * eviction_test's PriorityPidEvictionOrdering, its three cases in turn:
 * - the baseline: one fork bomb, evicted with PIDPressure and the DisruptionTarget condition;
 * - the ordering case with PodAndContainerStatsFromCRI=false, then with it true.
 */
export const pidEviction: Scenario = {
  name: 'pid-eviction',
  estimateMs: 420_000,
  isolation: 'node',
  description:
    'PID pressure from fork bombs: the bomb is evicted with DisruptionTarget; then the low-priority bomb before the high-priority one, the innocent pod of high priority never, with processes counted in the pod cgroup and then by the runtime (PodAndContainerStatsFromCRI); PIDPressure appears and clears',
  needs: ['real-containers'],
  // pid.available counts every task on the machine: another cell's bombs would move this threshold.
  exclusive: ['host-pids'],
  upstream: [
    {
      file: FILE,
      case: `PriorityPidEvictionOrdering ${CONTEXT}; baseline scenario to verify DisruptionTarget is added should eventually evict all of the correct pods`,
    },
    ...[false, true].map((gate) => ({
      file: FILE,
      case: `PriorityPidEvictionOrdering when we run containers with PodAndContainerStatsFromCRI=${gate} that should cause PIDPressure should eventually evict all of the correct pods`,
    })),
  ],
  // Slowest seen 917 s (t59c, docker, three cases).
  timeoutMs: evictionGuardMs(920_000, PRESSURE_TIMEOUT_MS.PriorityPidEvictionOrdering),
  async run(ctx) {
    // Each case in a namespace of its own, as upstream's Its: both ordering cases name their pods alike.
    try {
      await inOwnNamespace(ctx, 'baseline', async (ctx) => {
        await pidThreshold(ctx);
        await runEvictionTest(ctx, {
          ...PID_PRESSURE,
          specs: [
            {
              evictionPriority: 1,
              pod: pidConsumingPod(ctx, 'fork-bomb-container'),
              wantDisruptionTarget: true,
            },
          ],
        });
      });
      for (const statsFromCRI of [false, true])
        await inOwnNamespace(ctx, `cri-${statsFromCRI}`, (ctx) => priorityOrdering(ctx, statsFromCRI));
    } finally {
      await ctx.reconfigureAgent({});
    }
  },
};
