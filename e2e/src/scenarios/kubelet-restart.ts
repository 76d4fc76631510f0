import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import { nodeCondition } from '../support/node.js';
import {
  createPod,
  POD_DELETE_MS,
  POD_START_MS,
  podFor,
  podSummary,
  readPod,
  waitForPod,
  waitForRunning,
} from '../support/pods.js';
import { type Turns, turns } from '../support/turns.js';
import { watchPods } from '../support/watch.js';

// Upstream's restart_test.go (test/e2e_node), its Kubelet context: the agent is killed (SIGKILL,
// as mustStopKubelet) and started again around pods being deleted or no longer admissible. Each
// case stops the agent of the cell's node, so they take turns.
const FILE = 'test/e2e_node/restart_test.go';
const TAGS = ['Serial', 'Slow', 'Disruptive'];

type Case = ScenarioCase<Turns>;

/** e2epod.MustMixinRestrictedPodSecurity: a non-root user (1000), RuntimeDefault seccomp, no capabilities. */
function restricted(pod: V1Pod): V1Pod {
  const spec = pod.spec!;
  spec.securityContext = { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } };
  for (const c of spec.containers)
    c.securityContext = { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
  return pod;
}

/** The kubelet is killed, then started; start() returns once the node is Ready again. */
async function restartAgent(ctx: ScenarioContext, between?: () => Promise<void>) {
  await ctx.agent.kill();
  await between?.();
  await ctx.agent.start();
  await ctx.check.eventually(
    'the node is Ready again',
    () => nodeCondition(ctx, 'Ready'),
    (c) => c?.status === 'True',
    {
      timeoutMs: 60_000,
      expected: 'Ready=True',
    },
  );
}

/** checkMirrorPodDisappear: the pod is gone from the API. */
const podDisappears = (ctx: ScenarioContext, name: string) =>
  ctx.check.eventually(
    `pod ${name} is deleted by the kubelet`,
    () =>
      readPod(ctx, name).then(podSummary, (e) =>
        (e as { code?: number }).code === 404 ? 'gone' : Promise.reject(e),
      ),
    (s) => s === 'gone',
    { timeoutMs: POD_DELETE_MS, intervalMs: 1_000, expected: 'gone' },
  );

const deleteWithGrace = (ctx: ScenarioContext, name: string) =>
  ctx.core.deleteNamespacedPod({ name, namespace: ctx.namespace, gracePeriodSeconds: 30 });

/** The script upstream's terminal-restart pod runs: SIGTERM ends it with 0, once the trap is in place. */
const TRAP_SCRIPT = `
sleep 9999999 &
PID=$!
_term () {
  kill $PID
  echo "Caught SIGTERM!"
}
trap _term TERM
touch /tmp/trap-marker
wait $PID
trap - TERM
wait $PID
exit 0
`;

const CASES: Case[] = [
  {
    name: 'Restart Kubelet should delete pods which are marked as terminal and have a deletion timestamp set after restart',
    file: FILE,
    tags: TAGS,
    run: (ctx, t) =>
      t.take(async () => {
        const name = 'terminal-restart-pod';
        await createPod(
          ctx,
          restricted(
            podFor(ctx, name, {
              terminationGracePeriodSeconds: 30,
              restartPolicy: 'Never',
              containers: [
                {
                  name,
                  image: ctx.images.busybox,
                  command: ['sh', '-c'],
                  args: [TRAP_SCRIPT],
                  readinessProbe: {
                    periodSeconds: 1,
                    exec: { command: ['/bin/sh', '-c', 'cat /tmp/trap-marker'] },
                  },
                },
              ],
            }),
          ),
        );
        await waitForPod(
          ctx,
          name,
          'is ready, its SIGTERM trap registered',
          (p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true,
          POD_START_MS,
        );
        const { resourceVersion = '' } =
          (await ctx.core.listNamespacedPod({ namespace: ctx.namespace })).metadata ?? {};
        await deleteWithGrace(ctx, name);
        // Succeeded lasts milliseconds before the agent deletes the pod: watched from the list.
        const w = watchPods(ctx, { fieldSelector: `metadata.name=${name}`, resourceVersion });
        try {
          await w.next(
            `pod ${name} enters the Succeeded phase`,
            (e) => e.pod.status?.phase === 'Succeeded',
            POD_START_MS,
          );
        } finally {
          w.stop();
        }
        // Stopped before it can delete the pod from the API, as issue 116925 needs.
        await restartAgent(ctx);
        await podDisappears(ctx, name);
      }),
  },
  {
    name: 'Restart Kubelet should force-delete non-admissible pods created and deleted during kubelet restart',
    file: FILE,
    tags: TAGS,
    run: (ctx, t) =>
      t.take(async () => {
        const name = 'rejected-deleted-pod';
        await restartAgent(ctx, async () => {
          // Bound to the node while its kubelet is down: it stays Pending.
          await createPod(
            ctx,
            restricted(
              podFor(ctx, name, {
                nodeSelector: { 'this-label': 'does-not-exist-on-any-nodes' },
                terminationGracePeriodSeconds: 30,
                restartPolicy: 'Never',
                containers: [{ name, image: ctx.images.pause }],
              }),
            ),
          );
          await deleteWithGrace(ctx, name);
        });
        await podDisappears(ctx, name);
      }),
  },
  {
    name: 'Restart Kubelet should force-delete non-admissible pods that was admitted and running before kubelet restart',
    file: FILE,
    tags: TAGS,
    run: (ctx, t) =>
      t.take(async () => {
        const key = 'custom-label-key-required';
        const name = 'rejected-deleted-run';
        const label = (arg: string) => ctx.kubectl(['label', 'node', ctx.nodeName, '--overwrite', arg]);
        await label(`${key}=custom-label-value-required-for-admission`);
        try {
          await createPod(
            ctx,
            restricted(
              podFor(ctx, name, {
                nodeSelector: { [key]: 'custom-label-value-required-for-admission' },
                terminationGracePeriodSeconds: 30,
                restartPolicy: 'Never',
                containers: [{ name, image: ctx.images.pause }],
              }),
            ),
          );
          await waitForRunning(ctx, name, POD_START_MS);
          await restartAgent(ctx, async () => {
            await deleteWithGrace(ctx, name);
            // Rejected when the restarted kubelet admits it again.
            await label(`${key}-`);
          });
          await podDisappears(ctx, name);
        } finally {
          await label(`${key}-`);
        }
      }),
  },
];

export const kubeletRestart: CasesScenario<Turns> = {
  name: 'kubelet-restart',
  estimateMs: 40_000,
  isolation: 'node',
  description:
    'restart_test.go Kubelet cases: the agent killed and started again deletes a pod that went Succeeded with a deletion timestamp, and force-deletes pods that are no longer admissible (created and deleted while it was down, or admitted before and deleted while it was down)',
  needs: ['real-containers'],
  // The cases take turns, each with upstream's 5 min bounds (PodStart, PodDelete).
  timeoutMs: 12 * 60_000,
  setup: async () => turns(),
  cases: CASES,
};
