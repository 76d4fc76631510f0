import type { Scenario, ScenarioContext } from '@kh/harness';

const readyCondition = async (ctx: ScenarioContext) =>
  (await ctx.core.readNode({ name: ctx.nodeName })).status?.conditions?.find((c) => c.type === 'Ready');

const leaseRenewTime = async (ctx: ScenarioContext) => {
  const lease = await ctx.coordination.readNamespacedLease({
    name: ctx.nodeName,
    namespace: 'kube-node-lease',
  });
  return new Date(lease.spec?.renewTime ?? 0).getTime();
};

/**
 * Lease renewal and heartbeat cadence, Ready following the runtime's health, and the lifecycle
 * controller taking over when the agent goes silent. (Pod phases as the API shows them are checked
 * in pod-lifecycle, with the other checks that need the agent's pod workers.)
 */
export const statusReporting: Scenario = {
  name: 'status-reporting',
  description: 'Lease renewal cadence, runtime down -> NotReady -> Ready, agent stopped -> Unknown',
  // The runtime-down step is half of what this cell checks: without it the cell skips, it does
  // not pass on the lease and agent checks alone.
  needs: ['runtime-restart'],
  timeoutMs: 300_000,
  async run(ctx) {
    const { check } = ctx;

    // Lease: renewed every nodeLeaseDurationSeconds/4 = 10s. Allow jitter and API latency.
    const first = await leaseRenewTime(ctx);
    const second = await check.eventually(
      'lease renewed',
      () => leaseRenewTime(ctx),
      (t) => t > first,
      {
        timeoutMs: 25_000,
        intervalMs: 250,
      },
    );
    const third = await check.eventually(
      'lease renewed again',
      () => leaseRenewTime(ctx),
      (t) => t > second,
      {
        timeoutMs: 25_000,
        intervalMs: 250,
      },
    );
    check.ok(
      'lease renew interval about 10s',
      third - second >= 7_000 && third - second <= 15_000,
      third - second,
      '7000..15000 ms',
    );

    // Runtime down: Ready goes False with the kubelet's reason, then recovers by itself.
    ctx.note('stopping the runtime inside the node');
    await ctx.backend.stopRuntime();
    try {
      const down = await check.eventually(
        'Ready=False while the runtime is down',
        () => readyCondition(ctx),
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
      await ctx.backend.startRuntime();
    }
    await check.eventually(
      'Ready=True after the runtime is back',
      () => readyCondition(ctx),
      (c) => c?.status === 'True',
      { timeoutMs: 90_000 },
    );

    // Agent silent: the apiserver's node lifecycle controller marks the node Unknown.
    ctx.note('stopping the agent');
    await ctx.agent.stop();
    try {
      const unknown = await check.eventually(
        'Ready=Unknown after the lease expires',
        () => readyCondition(ctx),
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
      () => readyCondition(ctx),
      (c) => c?.status === 'True',
      {
        timeoutMs: 60_000,
      },
    );
  },
};
