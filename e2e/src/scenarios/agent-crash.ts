import type { Scenario, ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import {
  containerView,
  podsByName,
  reconcile,
  restartViolations,
  runtimeHoldings,
} from '../support/faults.js';
import { createPod, podFor, SLEEPER, sh } from '../support/pods.js';

/** Takes 3 s to stop after SIGTERM: the agent is killed while it waits for it. */
const SLOW_STOPPER = 'trap "sleep 3; exit 0" TERM; sleep 3600 & wait';

/**
 * The kubelet is crash-only: killed with SIGKILL in the middle of a sync and in the middle of a
 * graceful deletion, it starts again, adopts what runs (same containers, same sandboxes,
 * restartCount unchanged), finishes what it was doing and creates nothing twice.
 */
export const agentCrash: Scenario = {
  name: 'agent-crash',
  estimateMs: 35_000,
  isolation: 'node',
  description:
    'agent SIGKILLed during a sync and during a pod deletion, then started again: running pods adopted (same sandbox and container, restartCount unchanged), the deletion completes, no duplicate sandbox',
  needs: ['real-containers'],
  timeoutMs: 240_000,
  async run(ctx) {
    const { check } = ctx;
    const old = ['old-0', 'old-1', 'old-2'];
    const fresh = ['new-0', 'new-1', 'new-2'];
    await Promise.all(
      old.map((name) =>
        createPod(
          ctx,
          podFor(ctx, name, {
            terminationGracePeriodSeconds: 30,
            containers: [sh(ctx, 'c', name === 'old-0' ? SLOW_STOPPER : SLEEPER)],
          }),
        ),
      ),
    );
    await allReady(ctx, old, 'before the first kill');
    const before = containerView(await podsByName(ctx));
    const sandboxesBefore = sandboxIdsByPod((await runtimeHoldings(ctx)).sandboxes);

    // During a sync: new pods are being started when the agent dies.
    await Promise.all(
      fresh.map((name) => createPod(ctx, podFor(ctx, name, { containers: [sh(ctx, 'c', SLEEPER)] }))),
    );
    await check.eventually(
      'a new pod has a sandbox: the agent is syncing',
      async () => (await runtimeHoldings(ctx)).sandboxes.filter((s) => fresh.includes(podName(s))).length,
      (n) => n >= 1,
      { timeoutMs: 30_000, intervalMs: 50 },
    );
    await ctx.agent.kill();
    ctx.note('agent killed (SIGKILL) during a sync; starting it again');
    await ctx.agent.start();

    const pods = await allReady(ctx, [...old, ...fresh], 'after the restart');
    const settled = await check.eventually(
      'one ready sandbox and one running container per pod, nothing unowned',
      async () => {
        const held = await runtimeHoldings(ctx);
        return { held, diff: reconcile(await podsByName(ctx), held) };
      },
      ({ diff }) => Object.values(diff).every((l) => l.length === 0),
      { timeoutMs: 60_000, intervalMs: 1_000, describe: (s) => s.diff },
    );
    check.equal(
      'running pods adopted: same container, restartCount unchanged',
      restartViolations(before, pods, settled.held),
      [],
    );
    check.equal(
      'running pods adopted: same sandbox, no second one',
      old.map((n) => sandboxIdsByPod(settled.held.sandboxes).get(n)),
      old.map((n) => sandboxesBefore.get(n)),
    );

    // During a deletion: old-0 takes 3 s to stop, and the agent dies while it waits.
    await ctx.core.deleteNamespacedPod({ name: 'old-0', namespace: ctx.namespace });
    await ctx.sleep(1_000);
    await ctx.agent.kill();
    ctx.note('agent killed (SIGKILL) during the graceful deletion of old-0; starting it again');
    await ctx.agent.start();
    await check.eventually(
      'the deletion completes: old-0 gone from the API and from the runtime',
      async () => {
        const held = await runtimeHoldings(ctx);
        const mine = (i: { labels: Record<string, string> }) => podName(i) === 'old-0';
        return {
          inApi: (await podsByName(ctx)).has('old-0'),
          readySandboxes: held.sandboxes.filter((s) => mine(s) && s.state === 'ready').length,
          runningContainers: held.containers.filter((c) => mine(c) && c.state === 'running').length,
        };
      },
      (s) => !s.inApi && s.readySandboxes === 0 && s.runningContainers === 0,
      {
        timeoutMs: 60_000,
        intervalMs: 1_000,
        expected: { inApi: false, readySandboxes: 0, runningContainers: 0 },
      },
    );
    const rest = ['old-1', 'old-2', ...fresh];
    const after = await allReady(ctx, rest, 'after the second restart');
    const held = await runtimeHoldings(ctx);
    check.equal(
      'the other pods were not touched',
      restartViolations(without(before, 'old-0'), after, held),
      [],
    );
    check.equal('still no duplicate sandbox', reconcile(after, held), {
      unowned: [],
      readySandboxesNotOne: [],
      runningContainersNotOne: [],
    });
  },
};

const podName = (i: { labels: Record<string, string> }) => i.labels['io.kubernetes.pod.name'] ?? '';

/** Every sandbox id (any state) per pod name: a pod with two has a duplicate. */
function sandboxIdsByPod(sandboxes: { id: string; labels: Record<string, string> }[]): Map<string, string[]> {
  const m = new Map<string, string[]>();
  for (const s of sandboxes) m.set(podName(s), [...(m.get(podName(s)) ?? []), s.id].sort());
  return m;
}

function without<V>(m: Map<string, V>, pod: string): Map<string, V> {
  return new Map([...m].filter(([k]) => !k.startsWith(`${pod}/`)));
}

async function allReady(ctx: ScenarioContext, names: string[], when: string): Promise<Map<string, V1Pod>> {
  const pods = await ctx.check.eventually(
    `${names.join(', ')} Running and Ready ${when}`,
    async () => {
      const all = await podsByName(ctx);
      return new Map(names.map((n) => [n, all.get(n)] as const));
    },
    (pods) => [...pods.values()].every((p) => p?.status?.containerStatuses?.every((s) => s.ready) === true),
    {
      timeoutMs: 90_000,
      intervalMs: 500,
      describe: (pods) =>
        [...pods].map(
          ([n, p]) =>
            `${n}: ${p?.status?.phase} ${JSON.stringify(p?.status?.containerStatuses?.[0]?.state ?? {})}`,
        ),
    },
  );
  return pods as Map<string, V1Pod>;
}
