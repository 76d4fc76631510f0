import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1Container, V1ContainerRestartRule } from '@kubernetes/client-node';
import { limiter } from '../support/concurrent.js';
import { containerStatus, createPod, finished, podFor, sh, waitForPod } from '../support/pods.js';

// Upstream's container_restart_policy.go (test/e2e/common/node), its "Container Restart Rules"
// describe as named cases: with ContainerRestartRules (KEP-5307, alpha in 1.34) a container's own
// restartPolicy and restartPolicyRules decide whether it restarts after it exits, before the pod's
// restartPolicy. The run's API server has the gate on (the harness starts it so); the cell turns
// the node agent's side on. Its RestartAllContainers describe (a 1.35 gate) is not mirrored.
const FILE = 'test/e2e/common/node/container_restart_policy.go';
const DESCRIBE = 'Pod Extended (container restart policy) Container Restart Rules';
/** framework.WithFeatureGate's labels for an alpha gate. */
const TAGS = ['FeatureGate:ContainerRestartRules', 'Alpha', 'Feature:OffByDefault'];
const CONTAINER = 'main-container';
/** Upstream's bound on both waits (WaitForPodCondition, WaitTimeoutForPodNoLongerRunningInNamespace). */
const WAIT_MS = 10 * 60_000;

const RESTART_ON_42: V1ContainerRestartRule[] = [
  { action: 'Restart', exitCodes: { operator: 'In', values: [42] } },
];

type Limit = <T>(task: () => Promise<T>) => Promise<T>;

/** The case's pod: one busybox container running `script` under the pod's restartPolicy. */
async function createRestartPod(
  ctx: ScenarioContext,
  name: string,
  podPolicy: 'Always' | 'Never',
  script: string,
  container: Partial<V1Container>,
) {
  await createPod(
    ctx,
    podFor(ctx, name, { restartPolicy: podPolicy, containers: [sh(ctx, CONTAINER, script, container)] }),
  );
}

const restartCount = (p: Parameters<typeof containerStatus>[0]) =>
  containerStatus(p, CONTAINER)?.restartCount ?? 0;

/** createAndValidateRestartableContainer: the container restarts at least once. */
async function expectRestarted(ctx: ScenarioContext, name: string) {
  await waitForPod(ctx, name, `container ${CONTAINER} restarted`, (p) => restartCount(p) > 0, WAIT_MS);
}

/**
 * createAndValidateNonRestartableContainer: the pod stops running (Succeeded or Failed) and its
 * container never restarted.
 */
async function expectNotRestarted(ctx: ScenarioContext, name: string) {
  const p = await waitForPod(ctx, name, 'no longer running', finished, WAIT_MS);
  ctx.check.equal(`pod ${name} container ${CONTAINER} restartCount`, restartCount(p), 0);
}

const restartCase = (
  it: string,
  name: string,
  podPolicy: 'Always' | 'Never',
  script: string,
  container: Partial<V1Container>,
  restarts: boolean,
): ScenarioCase<Limit> => ({
  file: FILE,
  name: `${DESCRIBE} ${it}`,
  tags: TAGS,
  run: (ctx, limit) =>
    limit(async () => {
      await createRestartPod(ctx, name, podPolicy, script, container);
      await (restarts ? expectRestarted(ctx, name) : expectNotRestarted(ctx, name));
    }),
});

export const containerRestartPolicy: CasesScenario<Limit> = {
  name: 'container-restart-policy',
  description:
    'container_restart_policy.go cases (ContainerRestartRules on): a rule matching the exit code restarts a Never container, a mismatch does not; a container-level Never under a pod Always and Always under a pod Never win; the pod Always decides without one',
  // It restarts the agent with a feature gate on.
  isolation: 'node',
  needs: ['real-containers'],
  estimateMs: 45_000,
  // Room past upstream's 10 min waits for the agent's reconfiguration.
  timeoutMs: 780_000,
  async setup(ctx) {
    await ctx.reconfigureAgent({ featureGates: { ContainerRestartRules: true } });
    return limiter(5);
  },
  async teardown(ctx) {
    await ctx.reconfigureAgent({});
  },
  cases: [
    restartCase(
      'should restart container on rule match',
      'restart-rules-exit-code',
      'Never',
      'exit 42',
      { restartPolicy: 'Never', restartPolicyRules: RESTART_ON_42 },
      true,
    ),
    restartCase(
      'should not restart container on rule mismatch, container restart policy Never',
      'restart-rules-no-restart',
      'Never',
      'exit 1',
      { restartPolicy: 'Never', restartPolicyRules: RESTART_ON_42 },
      false,
    ),
    // Upstream's It says "restart"; its check is that the container does not.
    restartCase(
      'should restart container on container-level restart policy Never',
      'restart-rules-container-never',
      'Always',
      'exit 1',
      { restartPolicy: 'Never' },
      false,
    ),
    restartCase(
      'should restart container on container-level restart policy Always',
      'restart-rules-container-always',
      'Never',
      'exit 1',
      { restartPolicy: 'Always' },
      true,
    ),
    restartCase(
      'should restart container on pod-level restart policy Always when no container-level restart policy',
      'restart-rules-no-match',
      'Always',
      'exit 1',
      {},
      true,
    ),
  ],
};
