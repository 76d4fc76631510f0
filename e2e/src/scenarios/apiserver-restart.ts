import type { Scenario, ScenarioContext } from '@kh/harness';
import { leaseRenewTime, nodeCondition } from '../support/node.js';
import { createPod, podFor, readPod, SLEEPER, sh } from '../support/pods.js';

/**
 * The apiserver dies (SIGKILL) and comes back on its data dir while the agent is starting a pod.
 * Its watch history is gone after the restart, so the agent's watches must come back through a
 * relist (410 Expired on the old resourceVersion), and every write the server acknowledged before
 * must still be there.
 */
export const apiserverRestart: Scenario = {
  name: 'apiserver-restart',
  estimateMs: 14_000,
  // Restarts the apiserver every node and cell talks to: nothing else runs meanwhile.
  isolation: 'world',
  description:
    'apiserver killed and restarted on its data dir while the agent starts a pod: acknowledged objects kept, the pod runs, watches resume (new pod runs, a deletion completes), lease renewed and node still Ready',
  needs: ['real-containers'],
  timeoutMs: 180_000,
  async run(ctx) {
    const { check } = ctx;
    const pod = (name: string) => podFor(ctx, name, { containers: [sh(ctx, 'c', SLEEPER)] });
    const before = await createPod(ctx, pod('before'));
    const acked = await ctx.core.createNamespacedConfigMap({
      namespace: ctx.namespace,
      body: { metadata: { name: 'acked' }, data: { a: '1' } },
    });
    await running(ctx, 'before');

    // The agent is working: a pod it has just been told about when the server dies.
    const during = await createPod(ctx, pod('during'));
    const t0 = Date.now();
    await ctx.apiserver.restart();
    const restartedAt = Date.now();
    ctx.note('apiserver killed and started again on its data dir', { ms: restartedAt - t0 });

    check.equal(
      'every acknowledged object is still there (same uid)',
      [
        (await readPod(ctx, 'before')).metadata?.uid,
        (await readPod(ctx, 'during')).metadata?.uid,
        (await ctx.core.readNamespacedConfigMap({ name: 'acked', namespace: ctx.namespace })).metadata?.uid,
      ],
      [before.metadata?.uid, during.metadata?.uid, acked.metadata?.uid],
    );
    await running(ctx, 'during');

    // Watches resumed: a pod created and one deleted after the restart are both acted on.
    await createPod(ctx, pod('after'));
    await ctx.core.deleteNamespacedPod({ name: 'before', namespace: ctx.namespace, gracePeriodSeconds: 1 });
    await running(ctx, 'after');
    await check.eventually(
      'a deletion after the restart completes',
      () => ctx.core.listNamespacedPod({ namespace: ctx.namespace }),
      (l) => !l.items.some((p) => p.metadata?.name === 'before'),
      { timeoutMs: 60_000, intervalMs: 1_000, describe: (l) => l.items.map((p) => p.metadata?.name) },
    );

    await check.eventually(
      'the lease is renewed after the restart',
      () => leaseRenewTime(ctx),
      (t) => t > restartedAt,
      { timeoutMs: 25_000, intervalMs: 500 },
    );
    // The lease is the node's heartbeat; the status itself is posted on change or every
    // nodeStatusReportFrequency (1m), too long to wait for here: it must still say Ready.
    check.equal('node still Ready', (await nodeCondition(ctx, 'Ready'))?.status, 'True');
  },
};

async function running(ctx: ScenarioContext, name: string): Promise<void> {
  await ctx.check.eventually(
    `pod ${name} Running`,
    () => readPod(ctx, name),
    (p) => p.status?.containerStatuses?.[0]?.ready === true,
    { timeoutMs: 60_000, intervalMs: 500, describe: (p) => p.status ?? {} },
  );
}
