import type { Scenario } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import {
  containerView,
  podsByName,
  reconcile,
  restartViolations,
  runtimeHoldings,
} from '../support/faults.js';
import { runtimeRestart } from '../support/node.js';
import { createPod, podFor, SLEEPER, sh } from '../support/pods.js';

const PODS = 30;
/** The runtime is killed when this many of the pods have a sandbox, and again at the second mark. */
const KILL_AT_SANDBOXES = [5, 18];

/**
 * A runtime that dies while pods start, twice, restarted each time by the node's supervisor
 * (systemd's Restart=always on a real node). containerd's shims keep containers alive through the
 * crash; dockerd without live-restore stops them when it comes back. Either way the agent must get
 * every pod running exactly once, and the runtime must hold nothing that no pod owns.
 */
export const runtimeCrashStorm: Scenario = {
  name: 'runtime-crash-storm',
  estimateMs: 65_000,
  isolation: 'node',
  description:
    '30 pods start while the runtime is SIGKILLed twice (supervisor restarts it): all Running, one sandbox and one container each, nothing unowned, restartCount only for real deaths, nothing left after delete',
  needs: ['real-containers', 'runtime-restart'],
  timeoutMs: 480_000,
  async run(ctx) {
    const { check } = ctx;
    const names = Array.from({ length: PODS }, (_, i) => `storm-${i}`);
    const creating = Promise.all(
      names.map((name) => createPod(ctx, podFor(ctx, name, { containers: [sh(ctx, 'c', SLEEPER)] }))),
    );
    const before: ReturnType<typeof containerView>[] = [];
    for (const mark of KILL_AT_SANDBOXES) {
      await check.eventually(
        `${mark} sandboxes exist before the kill`,
        async () => (await runtimeHoldings(ctx)).sandboxes.length,
        (n) => n >= mark,
        { timeoutMs: 90_000, intervalMs: 100, expected: `>= ${mark}` },
      );
      before.push(containerView(await podsByName(ctx)));
      const t0 = Date.now();
      await runtimeRestart(ctx).kill();
      ctx.note(`runtime killed at ${mark} sandboxes; it answers CRI again`, { ms: Date.now() - t0 });
    }
    await creating;

    const running = await check.eventually(
      `all ${PODS} pods Running and Ready`,
      () => podsByName(ctx),
      (pods) => names.every((n) => ready(pods.get(n))),
      {
        // dockerd without live-restore stops every container when it comes back, and under load
        // its restart has taken over 2 min: the agent's RunPodSandbox calls wait out their 2 min
        // runtime-request-timeout meanwhile.
        timeoutMs: 300_000,
        intervalMs: 1_000,
        describe: (pods) => names.filter((n) => !ready(pods.get(n))).map((n) => statusLine(pods.get(n))),
      },
    );
    ctx.note('every pod Running', { restarts: sumRestarts(running) });

    // The runtime's own lists against the API: one ready sandbox and one running container per
    // pod, nothing for a pod uid the API does not know. Sandboxes the crash left half made are
    // the agent's to remove (its sandbox GC), hence eventually.
    const settled = await check.eventually(
      'runtime holds exactly one ready sandbox and one running container per pod, nothing unowned',
      async () => {
        const pods = await podsByName(ctx);
        const held = await runtimeHoldings(ctx);
        return { pods, held, diff: reconcile(pods, held) };
      },
      ({ diff }) => Object.values(diff).every((l) => l.length === 0),
      { timeoutMs: 60_000, intervalMs: 2_000, describe: (s) => s.diff },
    );
    check.equal(
      'restartCount grows only for containers that really died',
      before.flatMap((view) => restartViolations(view, settled.pods, settled.held)),
      [],
    );

    await Promise.all(
      names.map((name) =>
        ctx.core.deleteNamespacedPod({ name, namespace: ctx.namespace, gracePeriodSeconds: 1 }),
      ),
    );
    await check.eventually(
      'after deleting the pods the runtime runs nothing of theirs and the API has none',
      async () => {
        const held = await runtimeHoldings(ctx);
        return {
          pods: (await podsByName(ctx)).size,
          readySandboxes: held.sandboxes.filter((s) => s.state === 'ready').length,
          runningContainers: held.containers.filter((c) => c.state === 'running').length,
        };
      },
      (s) => s.pods === 0 && s.readySandboxes === 0 && s.runningContainers === 0,
      {
        timeoutMs: 90_000,
        intervalMs: 2_000,
        expected: { pods: 0, readySandboxes: 0, runningContainers: 0 },
      },
    );
  },
};

const ready = (pod: V1Pod | undefined) =>
  pod?.status?.phase === 'Running' &&
  (pod.status.containerStatuses ?? []).length > 0 &&
  (pod.status.containerStatuses ?? []).every((s) => s.ready);

const statusLine = (pod: V1Pod | undefined) =>
  `${pod?.metadata?.name}: ${pod?.status?.phase} ${JSON.stringify(pod?.status?.containerStatuses?.[0]?.state ?? {})}`;

const sumRestarts = (pods: Map<string, V1Pod>) =>
  [...pods.values()].reduce(
    (n, p) => n + (p.status?.containerStatuses ?? []).reduce((m, s) => m + s.restartCount, 0),
    0,
  );
