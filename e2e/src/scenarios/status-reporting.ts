import type { Scenario, ScenarioContext } from '@kh/harness';
import { containerStatus, createPod, podFor, sh, waitForPod } from '../support/pods.js';

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
 * Lease renewal and heartbeat cadence, Ready following the runtime's health, the lifecycle
 * controller taking over when the agent goes silent, and a pod's phases as the API shows them.
 */
export const statusReporting: Scenario = {
  name: 'status-reporting',
  description:
    'Lease renewal cadence, runtime down -> NotReady -> Ready, agent stopped -> Unknown, pod phases',
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

    // Pod phases: Pending -> Running -> Succeeded, with container states to match.
    await createPod(
      ctx,
      podFor(ctx, 'phases', { restartPolicy: 'Never', containers: [sh(ctx, 'main', 'sleep 4; exit 0')] }),
    );
    const running = await waitForPod(ctx, 'phases', 'is Running', (p) => p.status?.phase === 'Running');
    const runningState = containerStatus(running, 'main');
    check.ok(
      'container is running with startedAt',
      !!runningState?.state?.running?.startedAt,
      runningState?.state,
    );
    check.ok(
      'containerID names the runtime',
      /^[a-z]+:\/\/[0-9a-f]+/.test(runningState?.containerID ?? ''),
      runningState?.containerID,
    );
    check.ok('podIP set while running', !!running.status?.podIP, running.status?.podIP);
    const done = await waitForPod(ctx, 'phases', 'is Succeeded', (p) => p.status?.phase === 'Succeeded');
    const term = containerStatus(done, 'main')?.state?.terminated;
    check.equal(
      'terminated reason and exit code',
      { reason: term?.reason, exitCode: term?.exitCode },
      { reason: 'Completed', exitCode: 0 },
    );

    // Runtime down: Ready goes False with the kubelet's reason, then recovers by itself.
    if (!ctx.capabilities.has('runtime-restart')) {
      ctx.note('runtime restart not supported by this backend; runtime-down step skipped');
    } else {
      ctx.note('stopping the runtime inside the node');
      await ctx.backend.stopRuntime();
      try {
        const down = await check.eventually(
          'Ready=False while the runtime is down',
          () => readyCondition(ctx),
          (c) => c?.status === 'False',
          { timeoutMs: 60_000, expected: { status: 'False', reason: 'KubeletNotReady' } },
        );
        check.equal('NotReady reason', down?.reason, 'KubeletNotReady');
        check.ok(
          'NotReady message says the runtime is down',
          /container runtime is down|runtime/i.test(down?.message ?? ''),
          down?.message,
        );
      } finally {
        ctx.note('starting the runtime again');
        await ctx.backend.startRuntime();
      }
      await check.eventually(
        'Ready=True after the runtime is back',
        () => readyCondition(ctx),
        (c) => c?.status === 'True',
        {
          timeoutMs: 90_000,
        },
      );
    }

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
