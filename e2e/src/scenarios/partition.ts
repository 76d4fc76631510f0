import type { Scenario, ScenarioContext } from '@kh/harness';
import { partitionFromApiserver, runtimeHoldings } from '../support/faults.js';
import { nodeCondition } from '../support/node.js';
import {
  containerStatus,
  createPod,
  podCondition,
  podFor,
  readPod,
  sh,
  waitForPod,
} from '../support/pods.js';

/** Exits 5 s after each start: its restarts are the status writes the agent queues while cut off. */
const CRASHER = 'sleep 5; exit 1';

/**
 * The node loses the apiserver (packets dropped inside the node's network namespace) for longer
 * than the lease grace: the node lifecycle controller marks it Unknown, the pods keep running, and
 * once the link is back the node is Ready again and the status the agent kept meanwhile arrives,
 * newest last (a restartCount the API shows never goes back).
 */
export const partition: Scenario = {
  name: 'partition',
  estimateMs: 70_000,
  isolation: 'node',
  description:
    'node cut off from the apiserver longer than the lease grace: Ready=Unknown, pods keep running, then Ready again; status written meanwhile arrives in order',
  needs: ['real-containers'],
  // Room past the 5 min pod waits (the pod helpers' PodStart default) for the rest of the cell.
  timeoutMs: 480_000,
  async run(ctx) {
    await createPod(
      ctx,
      podFor(ctx, 'steady', { containers: [sh(ctx, 'c', 'trap "exit 0" TERM; sleep 3600 & wait')] }),
    );
    await createPod(
      ctx,
      podFor(ctx, 'crasher', { restartPolicy: 'Always', containers: [sh(ctx, 'c', CRASHER)] }),
    );
    const steady = await waitForPod(ctx, 'steady', 'Ready', (p) => podCondition(p, 'Ready') === 'True');
    await waitForPod(
      ctx,
      'crasher',
      'restarted once',
      (p) => (containerStatus(p, 'c')?.restartCount ?? 0) >= 1,
    );
    const steadyId = containerStatus(steady, 'c')?.containerID;

    // The crasher's restartCount as the API shows it, sampled from now to the end: it must never go back.
    const seen: number[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const p = await readPod(ctx, 'crasher').catch(() => undefined);
        const n = p && containerStatus(p, 'c')?.restartCount;
        if (n !== undefined && n !== seen.at(-1)) seen.push(n);
        await ctx.sleep(250);
      }
    })();

    try {
      await cutOffAndHeal(ctx, steadyId, seen);
    } finally {
      sampling = false;
      await sampler;
    }
  },
};

async function cutOffAndHeal(
  ctx: ScenarioContext,
  steadyId: string | undefined,
  seen: number[],
): Promise<void> {
  const { check } = ctx;
  const restartsAtCut = seen.at(-1) ?? 0;
  const heal = await partitionFromApiserver(ctx);
  const cutAt = Date.now();
  try {
    await check.eventually(
      'Ready=Unknown once the lease grace has passed',
      () => nodeCondition(ctx, 'Ready'),
      (c) => c?.status === 'Unknown',
      { timeoutMs: 90_000, intervalMs: 1_000, expected: { status: 'Unknown', reason: 'NodeStatusUnknown' } },
    );
    ctx.note('node Unknown', { afterMs: Date.now() - cutAt });
    const held = await runtimeHoldings(ctx);
    check.ok(
      'the steady pod keeps running while the node is cut off',
      held.containers.some((c) => steadyId?.endsWith(c.id) && c.state === 'running'),
      held.containers.map((c) => `${c.labels['io.kubernetes.pod.name']}:${c.state}`),
    );
  } finally {
    await heal();
  }
  ctx.note('partition healed', { cutMs: Date.now() - cutAt });

  await check.eventually(
    'Ready=True again after the partition',
    () => nodeCondition(ctx, 'Ready'),
    (c) => c?.status === 'True',
    { timeoutMs: 60_000, intervalMs: 1_000 },
  );
  const after = await waitForPod(
    ctx,
    'steady',
    'Ready again with the same container',
    (p) => podCondition(p, 'Ready') === 'True',
    60_000,
  );
  check.equal('steady pod: the same container', containerStatus(after, 'c')?.containerID, steadyId);
  check.equal('steady pod: never restarted', containerStatus(after, 'c')?.restartCount, 0);
  await check.eventually(
    'restarts during the partition reach the API',
    async () => seen.at(-1) ?? 0,
    (n) => n > restartsAtCut,
    { timeoutMs: 30_000, intervalMs: 500, expected: `> ${restartsAtCut}` },
  );
  check.ok(
    "the crasher's restartCount in the API never goes back (writes applied in order)",
    seen.every((n, i) => i === 0 || n > seen[i - 1]!),
    seen,
  );
}
