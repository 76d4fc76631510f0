import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1Container, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { createPod, finished, POD_START_MS, podFor, podSummary, waitForPod } from '../support/pods.js';

// Upstream's init_container.go (test/e2e/common/node) as named cases: two init containers run to
// completion (Ready, exit 0) before the app container on RestartNever and RestartAlways pods; a
// failing init container keeps the app container waiting in PodInitializing, is restarted on a
// RestartAlways pod (which stays Pending) and fails a RestartNever pod, with upstream's
// Initialized condition reason and message.
const FILE = 'test/e2e/common/node/init_container.go';
const DESCRIBE = 'InitContainer';
const TAGS = ['NodeConformance', 'Conformance'];

type Case = ScenarioCase;

const busybox = (ctx: ScenarioContext, name: string, command: string): V1Container => ({
  name,
  image: ctx.images.busybox,
  imagePullPolicy: 'IfNotPresent',
  command: [command],
});

/** The app container of the RestartAlways pods: pause, limited to 100m cpu. */
const pause = (ctx: ScenarioContext): V1Container => ({
  name: 'run1',
  image: ctx.images.pause,
  imagePullPolicy: 'IfNotPresent',
  resources: { limits: { cpu: '100m' } },
});

const initPod = (
  ctx: ScenarioContext,
  name: string,
  restartPolicy: 'Never' | 'Always',
  init: [string, string],
  run1: V1Container,
): V1Pod =>
  podFor(ctx, name, {
    restartPolicy,
    initContainers: [busybox(ctx, 'init1', init[0]), busybox(ctx, 'init2', init[1])],
    containers: [run1],
  });

/**
 * What one of upstream's watch conditions says of a pod it sees: met, not yet (false), or the
 * error that ends the watch.
 */
type Condition = (pod: V1Pod) => boolean | string;

/**
 * watchtools.Until over polled reads: each condition in turn until it is met, the next then
 * judging the pods after it; an error ends the wait and fails the case with upstream's words.
 */
async function until(
  ctx: ScenarioContext,
  name: string,
  what: string,
  conditions: Condition[],
): Promise<V1Pod> {
  let next = 0;
  let error: string | undefined;
  const pod = await waitForPod(
    ctx,
    name,
    what,
    (p) => {
      while (next < conditions.length && error === undefined) {
        const verdict = conditions[next]!(p);
        if (typeof verdict === 'string') error = verdict;
        else if (verdict) next++;
        else return false;
      }
      return true;
    },
    POD_START_MS,
  );
  ctx.check.ok(`pod ${name}: no watch condition failed`, error === undefined, error ?? podSummary(pod));
  return pod;
}

/** conditions.PodRunning: Running, an error once the pod has completed. */
const podRunning: Condition = (p) =>
  finished(p) ? `pod ran to completion (${p.status?.phase})` : p.status?.phase === 'Running';

const waitingReason = (s: V1ContainerStatus) => s.state?.waiting?.reason;

/** Every app container is still waiting, as PodInitializing. */
function appContainersInitializing(p: V1Pod): string | undefined {
  for (const s of p.status?.containerStatuses ?? []) {
    if (!s.state?.waiting) return `container "${s.name}" should not be out of waiting`;
    if (waitingReason(s) !== 'PodInitializing')
      return `container "${s.name}" should have reason PodInitializing, has ${waitingReason(s)}`;
  }
  return undefined;
}

const initializedCondition = (p: V1Pod) => p.status?.conditions?.find((c) => c.type === 'Initialized');

/** The pod ended up initialized: Initialized True, both init containers Ready and exited 0. */
function expectInitialized(ctx: ScenarioContext, p: V1Pod, phase: string): void {
  const name = p.metadata!.name!;
  ctx.check.equal(`pod ${name}: phase`, p.status?.phase, phase);
  ctx.check.equal(`pod ${name}: Initialized condition`, initializedCondition(p)?.status, 'True');
  const inits = p.status?.initContainerStatuses ?? [];
  ctx.check.equal(`pod ${name}: init container statuses`, inits.length, 2);
  for (const s of inits)
    ctx.check.equal(
      `pod ${name}: init container ${s.name} Ready and terminated with exit code 0`,
      { ready: s.ready, exitCode: s.state?.terminated?.exitCode },
      { ready: true, exitCode: 0 },
    );
}

/** The pod did not initialize: Initialized False, ContainersNotInitialized, the incomplete ones. */
function expectNotInitialized(ctx: ScenarioContext, p: V1Pod, phase: string, incomplete: string): void {
  const name = p.metadata!.name!;
  ctx.check.equal(`pod ${name}: phase`, p.status?.phase, phase);
  const c = initializedCondition(p);
  ctx.check.equal(
    `pod ${name}: Initialized condition`,
    { status: c?.status, reason: c?.reason, message: c?.message },
    {
      status: 'False',
      reason: 'ContainersNotInitialized',
      message: `containers with incomplete status: [${incomplete}]`,
    },
  );
  ctx.check.equal(`pod ${name}: init container statuses`, p.status?.initContainerStatuses?.length, 2);
}

const CASES: Case[] = [
  {
    file: FILE,
    name: `${DESCRIBE} should invoke init containers on a RestartNever pod`,
    tags: TAGS,
    async run(ctx) {
      const name = 'pod-init-never';
      await createPod(
        ctx,
        initPod(ctx, name, 'Never', ['/bin/true', '/bin/true'], busybox(ctx, 'run1', '/bin/true')),
      );
      const p = await until(ctx, name, 'completed', [finished]);
      expectInitialized(ctx, p, 'Succeeded');
    },
  },
  {
    file: FILE,
    name: `${DESCRIBE} should invoke init containers on a RestartAlways pod`,
    tags: TAGS,
    async run(ctx) {
      const name = 'pod-init-always';
      await createPod(ctx, initPod(ctx, name, 'Always', ['/bin/true', '/bin/true'], pause(ctx)));
      const p = await until(ctx, name, 'is Running', [podRunning]);
      expectInitialized(ctx, p, 'Running');
    },
  },
  {
    file: FILE,
    name: `${DESCRIBE} should not start app containers if init containers fail on a RestartAlways pod`,
    tags: TAGS,
    async run(ctx) {
      const name = 'pod-init-fail-always';
      await createPod(ctx, initPod(ctx, name, 'Always', ['/bin/false', '/bin/true'], pause(ctx)));
      const p = await until(ctx, name, 'init1 failed and was restarted 3 times, run1 never started', [
        // The first init container fails at least once, the second and the app container wait.
        (p) => {
          const app = appContainersInitializing(p);
          if (app) return app;
          const [init1, init2] = p.status?.initContainerStatuses ?? [];
          if (!init1 || !init2) return false;
          if (!init2.state?.waiting) return 'second init container should not be out of waiting';
          if (waitingReason(init2) !== 'PodInitializing')
            return `second init container should have reason PodInitializing, has ${waitingReason(init2)}`;
          if (init1.state?.terminated?.exitCode === 0)
            return 'first init container should have exitCode != 0';
          return init1.lastState?.terminated !== undefined;
        },
        (p) => (p.status?.initContainerStatuses?.[0]?.restartCount ?? 0) >= 3,
      ]);
      expectNotInitialized(ctx, p, 'Pending', 'init1 init2');
    },
  },
  {
    file: FILE,
    name: `${DESCRIBE} should not start app containers and fail the pod if init containers fail on a RestartNever pod`,
    tags: TAGS,
    async run(ctx) {
      const name = 'pod-init-fail-never';
      const run1 = { ...busybox(ctx, 'run1', '/bin/true'), resources: { limits: { cpu: '100m' } } };
      await createPod(ctx, initPod(ctx, name, 'Never', ['/bin/true', '/bin/false'], run1));
      const p = await until(ctx, name, 'init2 failed, run1 never started, completed', [
        // The second init container fails, the first having succeeded; the app container waits.
        (p) => {
          const app = appContainersInitializing(p);
          if (app) return app;
          const [init1, init2] = p.status?.initContainerStatuses ?? [];
          if (!init1 || !init2) return false;
          const t1 = init1.state?.terminated;
          if (!t1) {
            const reason = waitingReason(init1);
            return reason !== undefined && reason !== 'PodInitializing'
              ? `first init container should have reason PodInitializing, has ${reason}`
              : false;
          }
          if (t1.exitCode !== 0) return 'first init container should have exitCode 0';
          const t2 = init2.state?.terminated;
          if (!t2) return false;
          return t2.exitCode === 0 ? 'second init container should have failed' : true;
        },
        finished,
      ]);
      expectNotInitialized(ctx, p, 'Failed', 'init2');
      ctx.check.ok(
        `pod ${name}: run1 is still waiting`,
        p.status?.containerStatuses?.[0]?.state?.waiting !== undefined,
        p.status?.containerStatuses?.[0]?.state,
      );
    },
  },
];

export const initContainer: CasesScenario = {
  name: 'init-container',
  estimateMs: 80_000,
  isolation: 'namespace',
  description:
    "init_container.go cases: init containers run to completion and Ready before the app container on RestartNever and RestartAlways pods; a failing one keeps the app container in PodInitializing, restarts (3 times) on RestartAlways with the pod Pending, fails a RestartNever pod, with the Initialized condition's ContainersNotInitialized message",
  needs: ['real-containers'],
  timeoutMs: 360_000,
  cases: CASES,
};
