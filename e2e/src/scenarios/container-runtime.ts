import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { CONTAINER_STATUS_RETRY_MS, createPullSecret, imagePullTest } from '../support/image-pull.js';
import {
  containerStatus,
  createPod,
  deletePodWithWait,
  podCondition,
  podFor,
  waitForPod,
} from '../support/pods.js';

// Upstream's runtime.go (test/e2e/common/node) as named cases: restart policies' restart counts,
// phases, readiness and states; termination messages from the file and from the log; image pulls
// from a registry that does not exist, from the run's registry, and from its private registry
// without and with a pull secret (upstream pulls public and gcr.io images; these are local).
const FILE = 'test/e2e/common/node/runtime.go';
const DESCRIBE = 'Container Runtime blackbox test';
const CONFORMANCE = ['NodeConformance', 'Conformance'];
const NODE_CONFORMANCE = ['NodeConformance'];

type Case = ScenarioCase<void>;

/** ConformanceContainer.Create: one container in a pod with the given restart policy. */
function conformancePod(
  ctx: ScenarioContext,
  name: string,
  container: V1Container,
  restartPolicy: V1PodSpec['restartPolicy'],
  spec: Partial<V1PodSpec> = {},
): V1Pod {
  return podFor(ctx, name, { restartPolicy, containers: [container], ...spec });
}

const phaseIs = (phase: string) => (p: V1Pod) => p.status?.phase === phase;

// --- when starting a container that exits ------------------------------------------------------

/** Exits 1 on its first run, 0 on its second, then runs forever: the run count is kept in a volume. */
const RESTART_COUNT_SCRIPT = `
f=/restart-count/restartCount
count=$(echo 'hello' >> $f ; wc -l $f | awk {'print $1'})
if [ $count -eq 1 ]; then
	exit 1
fi
if [ $count -eq 2 ]; then
	exit 0
fi
while true; do sleep 1; done
`;

const STATUS_CASES = [
  {
    name: 'terminate-cmd-rpa',
    policy: 'Always',
    phase: 'Running',
    state: 'running',
    restarts: 2,
    ready: true,
  },
  {
    name: 'terminate-cmd-rpof',
    policy: 'OnFailure',
    phase: 'Succeeded',
    state: 'terminated',
    restarts: 1,
    ready: false,
  },
  {
    name: 'terminate-cmd-rpn',
    policy: 'Never',
    phase: 'Failed',
    state: 'terminated',
    restarts: 0,
    ready: false,
  },
] as const;

const stateOf = (p: V1Pod, c: string) => {
  const s = containerStatus(p, c)?.state;
  return s?.running ? 'running' : s?.terminated ? 'terminated' : s?.waiting ? 'waiting' : 'unknown';
};

const expectedStatusCase: Case = {
  file: FILE,
  name: `${DESCRIBE} when starting a container that exits should run with the expected status`,
  tags: CONFORMANCE,
  // Upstream runs the three policies one after another; they are independent pods, so side by side.
  run: (ctx) =>
    Promise.all(
      STATUS_CASES.map(async (tc) => {
        await createPod(
          ctx,
          conformancePod(
            ctx,
            tc.name,
            {
              name: tc.name,
              image: ctx.images.busybox,
              imagePullPolicy: 'IfNotPresent',
              command: ['sh', '-c', RESTART_COUNT_SCRIPT],
              volumeMounts: [{ name: 'restart-count', mountPath: '/restart-count' }],
            },
            tc.policy,
            { volumes: [{ name: 'restart-count', emptyDir: { medium: 'Memory' } }] },
          ),
        );
        await waitForPod(
          ctx,
          tc.name,
          `restartCount is ${tc.restarts}`,
          (p) => containerStatus(p, tc.name)?.restartCount === tc.restarts,
          CONTAINER_STATUS_RETRY_MS,
        );
        const p = await waitForPod(
          ctx,
          tc.name,
          `phase is ${tc.phase}`,
          phaseIs(tc.phase),
          CONTAINER_STATUS_RETRY_MS,
        );
        ctx.check.equal(`${tc.name}: Ready condition`, podCondition(p, 'Ready') === 'True', tc.ready);
        ctx.check.equal(`${tc.name}: container state`, stateOf(p, tc.name), tc.state);
        await deletePodWithWait(ctx, tc.name, { timeoutMs: CONTAINER_STATUS_RETRY_MS });
      }),
    ).then(() => undefined),
};

// --- on terminated container -------------------------------------------------------------------

const TERMINATED = `${DESCRIBE} on terminated container`;
const TERMINATION_CONTAINER = 'termination-message-container';

/** matchTerminationMessage: the pod reaches `phase`, its container terminated with `message`. */
function terminationCase(
  it: string,
  tags: readonly string[],
  podName: string,
  container: Partial<V1Container>,
  phase: 'Succeeded' | 'Failed',
  message: string,
): Case {
  return {
    file: FILE,
    name: `${TERMINATED} ${it}`,
    tags,
    async run(ctx) {
      await createPod(
        ctx,
        conformancePod(
          ctx,
          podName,
          {
            name: TERMINATION_CONTAINER,
            image: ctx.images.busybox,
            imagePullPolicy: 'IfNotPresent',
            command: ['/bin/sh', '-c'],
            ...container,
          },
          'Never',
        ),
      );
      const p = await waitForPod(
        ctx,
        podName,
        `phase is ${phase}`,
        phaseIs(phase),
        CONTAINER_STATUS_RETRY_MS,
      );
      const status = containerStatus(p, TERMINATION_CONTAINER);
      ctx.check.equal('the container is terminated', stateOf(p, TERMINATION_CONTAINER), 'terminated');
      ctx.check.equal('the termination message', status?.state?.terminated?.message ?? '', message);
      await deletePodWithWait(ctx, podName, { timeoutMs: CONTAINER_STATUS_RETRY_MS });
    },
  };
}

const TERMINATION_CASES: Case[] = [
  terminationCase(
    'should report termination message if TerminationMessagePath is set',
    NODE_CONFORMANCE,
    'termination-message-root',
    {
      args: ['/bin/echo -n DONE > /dev/termination-log'],
      terminationMessagePath: '/dev/termination-log',
      securityContext: { runAsUser: 0 },
    },
    'Succeeded',
    'DONE',
  ),
  terminationCase(
    'should report termination message if TerminationMessagePath is set as non-root user and at a non-default path',
    CONFORMANCE,
    'termination-message-nonroot',
    {
      args: ['/bin/echo -n DONE > /dev/termination-custom-log'],
      terminationMessagePath: '/dev/termination-custom-log',
      securityContext: { runAsUser: 10000 },
    },
    'Succeeded',
    'DONE',
  ),
  terminationCase(
    'should report termination message from log output if TerminationMessagePolicy FallbackToLogsOnError is set',
    CONFORMANCE,
    'termination-message-log-fails',
    {
      args: ['/bin/echo -n DONE; /bin/false'],
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'FallbackToLogsOnError',
    },
    'Failed',
    'DONE',
  ),
  terminationCase(
    'should report termination message as empty when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError is set',
    CONFORMANCE,
    'termination-message-log-succeeds',
    {
      args: ['/bin/echo -n DONE; /bin/true'],
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'FallbackToLogsOnError',
    },
    'Succeeded',
    '',
  ),
  terminationCase(
    'should report termination message from file when pod succeeds and TerminationMessagePolicy FallbackToLogsOnError is set',
    CONFORMANCE,
    'termination-message-file',
    {
      args: ['/bin/echo -n OK > /dev/termination-log; /bin/echo DONE; /bin/true'],
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'FallbackToLogsOnError',
    },
    'Succeeded',
    'OK',
  ),
];

// --- when running a container with a new image -------------------------------------------------

const NEW_IMAGE = `${DESCRIBE} when running a container with a new image`;
/** imageutils.InvalidRegistryImage: a registry host that does not exist, with or without a network. */
const INVALID_REGISTRY_IMAGE = 'invalid.registry.k8s.io/invalid/alpine:3.1';

/**
 * imagePullTest with PullAlways. Upstream retries the whole test three times for a flaky public
 * registry; the run's registry is local, so once.
 */
function imagePullCase(
  it: string,
  podName: string,
  image: (ctx: ScenarioContext) => string,
  opts: { secret?: boolean; fails: boolean },
): Case {
  return {
    file: FILE,
    name: `${NEW_IMAGE} ${it}`,
    tags: NODE_CONFORMANCE,
    async run(ctx) {
      const secretName = `image-pull-secret-${podName}`;
      if (opts.secret) await createPullSecret(ctx, secretName);
      await imagePullTest(ctx, {
        podName,
        image: image(ctx),
        policy: 'Always',
        ...(opts.secret ? { secretName } : {}),
        pullFails: opts.fails,
      });
    },
  };
}

const IMAGE_CASES: Case[] = [
  imagePullCase(
    'should not be able to pull image from invalid registry',
    'invalid-registry',
    () => INVALID_REGISTRY_IMAGE,
    {
      fails: true,
    },
  ),
  // Upstream pulls agnhost; the netexec image is this suite's agnhost, pushed to the run's registry.
  imagePullCase('should be able to pull image', 'pull-image', (ctx) => ctx.images.netexec, { fails: false }),
  // Upstream's AuthenticatedAlpine (gcr.io) is, here, busybox in the run's private registry.
  imagePullCase(
    'should not be able to pull from private registry without secret',
    'private-no-secret',
    (ctx) => ctx.images.private,
    { fails: true },
  ),
  imagePullCase(
    'should be able to pull from private registry with secret',
    'private-with-secret',
    (ctx) => ctx.images.private,
    { secret: true, fails: false },
  ),
];

export const containerRuntime: CasesScenario<void> = {
  name: 'container-runtime',
  estimateMs: 45_000,
  isolation: 'namespace',
  description:
    "runtime.go cases: restart policies' restart counts, phases, readiness and states; termination messages from the file (root and non-root, custom path) and from the log (FallbackToLogsOnError); image pulls failing from a registry that does not exist and from the private one without a secret, working from the run's registry and the private one with a dockerconfigjson secret",
  needs: ['real-containers'],
  // Room past one of upstream's 5 min waits (ContainerStatusRetryTimeout) for the case's others.
  timeoutMs: 600_000,
  cases: [expectedStatusCase, ...TERMINATION_CASES, ...IMAGE_CASES],
};
