import type { Scenario, ScenarioContext } from '@kh/harness';
import { allChecks } from '../support/concurrent.js';
import {
  leaseRenewTime,
  nodeCondition,
  nodeLease,
  nodeLeaseUpstream,
  runtimeRestart,
} from '../support/node.js';

/** The Ready heartbeat, and the node status with every condition's heartbeat left out. */
const statusHeartbeat = async (ctx: ScenarioContext) => {
  const status = (await ctx.core.readNode({ name: ctx.nodeName })).status ?? {};
  const ready = status.conditions?.find((c) => c.type === 'Ready');
  const conditions = status.conditions?.map(({ lastHeartbeatTime: _, ...c }) => c);
  return {
    heartbeat: new Date(ready?.lastHeartbeatTime ?? 0).getTime(),
    ready: ready?.status,
    rest: JSON.stringify({ ...status, conditions }),
  };
};

/**
 * NodeLease's "report node status infrequently": with a lease, the node posts its status no more
 * often than the lease duration unless the status changed. Upstream's rule: a heartbeat unchanged
 * for twice the lease duration, or one that moved by at least the lease duration, passes; one
 * that moved sooner with nothing else changed fails; up to 5 min.
 */
async function infrequentStatus(ctx: ScenarioContext): Promise<void> {
  const lease = await nodeLease(ctx);
  const leaseMs = (lease.spec?.leaseDurationSeconds ?? 40) * 1000;
  const name = 'node status heartbeat not posted more often than the lease duration without a change';
  let last = await statusHeartbeat(ctx);
  let lastChange = performance.now();
  const end = performance.now() + 5 * 60_000;
  while (performance.now() < end) {
    await ctx.sleep(1_000);
    const now = await statusHeartbeat(ctx);
    if (now.heartbeat === last.heartbeat) {
      if (performance.now() - lastChange > 2 * leaseMs) break;
      continue;
    }
    if (now.heartbeat - last.heartbeat >= leaseMs) break;
    if (now.rest === last.rest) {
      ctx.check.ok(name, false, { intervalMs: now.heartbeat - last.heartbeat }, `>= ${leaseMs} ms`);
    }
    last = now;
    lastChange = performance.now();
  }
  ctx.check.ok(name, true);
  ctx.check.equal(
    'node still Ready while its status is posted infrequently',
    (await statusHeartbeat(ctx)).ready,
    'True',
  );
}

/**
 * Lease renewal and heartbeat cadence, Ready following the runtime's health, and the lifecycle
 * controller taking over when the agent goes silent. (Pod phases as the API shows them are checked
 * in pod-lifecycle, with the other checks that need the agent's pod workers.)
 */
export const statusReporting: Scenario = {
  name: 'status-reporting',
  estimateMs: 160_000,
  isolation: 'node',
  description:
    'Lease renewal cadence, node status posted no more often than the lease duration, runtime down -> NotReady -> Ready, agent stopped -> Unknown',
  // The runtime-down step is half of what this cell checks: without it the cell skips, it does
  // not pass on the lease and agent checks alone.
  needs: ['runtime-restart'],
  upstream: nodeLeaseUpstream(
    'the kubelet should create and update a lease in the kube-node-lease namespace',
    'the kubelet should report node status infrequently',
  ),
  // The status-cadence watch may take upstream's 5 min when the status keeps changing.
  timeoutMs: 540_000,
  async run(ctx) {
    const { check } = ctx;

    // Lease renewals and the node status cadence are watched together, before the runtime stops.
    await allChecks([
      (async () => {
        // Lease: renewed every nodeLeaseDurationSeconds/4 = 10s; upstream waits up to the lease
        // duration (40 s) for a renewal, the interval is checked on its own below.
        const renewedAfter = (name: string, since: number) =>
          check.eventually(
            name,
            () => leaseRenewTime(ctx),
            (t) => t > since,
            {
              timeoutMs: 40_000,
              intervalMs: 250,
            },
          );
        const second = await renewedAfter('lease renewed', await leaseRenewTime(ctx));
        const third = await renewedAfter('lease renewed again', second);
        check.ok(
          'lease renew interval about 10s',
          third - second >= 7_000 && third - second <= 15_000,
          third - second,
          '7000..15000 ms',
        );
      })(),
      infrequentStatus(ctx),
    ]);

    // Runtime down: Ready goes False with the kubelet's reason, then recovers by itself.
    ctx.note('stopping the runtime inside the node');
    await runtimeRestart(ctx).stop();
    try {
      const down = await check.eventually(
        'Ready=False while the runtime is down',
        () => nodeCondition(ctx, 'Ready'),
        (c) => c?.status === 'False',
        { timeoutMs: 60_000, expected: { status: 'False', reason: 'KubeletNotReady' } },
      );
      ctx.note('Ready while the runtime is down', { reason: down?.reason, message: down?.message });
      check.equal('NotReady reason', down?.reason, 'KubeletNotReady');
      // The kubelet's two runtime-down messages: Status fails (containerd gone) for longer than
      // the sync threshold, or it answers RuntimeReady=false (the dockershim without dockerd).
      check.ok(
        'NotReady message says the runtime is down',
        /container runtime is down|container runtime not ready/.test(down?.message ?? ''),
        down?.message,
        'container runtime is down | container runtime not ready: ...',
      );
    } finally {
      ctx.note('starting the runtime again');
      await runtimeRestart(ctx).start();
    }
    await check.eventually(
      'Ready=True after the runtime is back',
      () => nodeCondition(ctx, 'Ready'),
      (c) => c?.status === 'True',
      { timeoutMs: 90_000 },
    );

    // Agent silent: the apiserver's node lifecycle controller marks the node Unknown.
    ctx.note('stopping the agent');
    await ctx.agent.stop();
    try {
      const unknown = await check.eventually(
        'Ready=Unknown after the lease expires',
        () => nodeCondition(ctx, 'Ready'),
        (c) => c?.status === 'Unknown',
        {
          timeoutMs: 90_000,
          intervalMs: 1_000,
          expected: { status: 'Unknown', reason: 'NodeStatusUnknown' },
        },
      );
      check.equal('Unknown reason', unknown?.reason, 'NodeStatusUnknown');
    } finally {
      ctx.note('starting the agent again');
      await ctx.agent.start();
    }
    await check.eventually(
      'Ready=True after the agent is back',
      () => nodeCondition(ctx, 'Ready'),
      (c) => c?.status === 'True',
      {
        timeoutMs: 60_000,
      },
    );
  },
};
