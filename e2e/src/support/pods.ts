import type { ScenarioContext } from '@kh/harness';
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';

/** A pod for the scenario's namespace, pinned to the node under test. */
export function podFor(
  ctx: ScenarioContext,
  name: string,
  spec: Partial<V1PodSpec> & { containers: V1Container[] },
): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ctx.namespace, labels: { 'kh.e2e/scenario': ctx.namespace } },
    spec: { nodeName: ctx.nodeName, terminationGracePeriodSeconds: 5, ...spec },
  };
}

/** e2epod.InfiniteSleepCommand: sleeps until stopped, and ends at once on SIGTERM. */
export const INFINITE_SLEEP = 'trap exit TERM; while true; do sleep 1; done';

/** A busybox container running a shell script. */
export function sh(
  ctx: ScenarioContext,
  name: string,
  script: string,
  extra: Partial<V1Container> = {},
): V1Container {
  return {
    name,
    image: ctx.images.busybox,
    imagePullPolicy: 'IfNotPresent',
    command: ['sh', '-c', script],
    ...extra,
  };
}

/**
 * The memhog container: it grows to `targetMiB` in `stepMiB` steps with no pause between them
 * (on a loaded 2-core machine 1 s pauses made the growth outlast the waits) and holds it.
 */
export function memhog(ctx: ScenarioContext, name: string, targetMiB: number, stepMiB: number): V1Container {
  return {
    name,
    image: ctx.images.memhog,
    imagePullPolicy: 'IfNotPresent',
    env: [
      { name: 'MEMHOG_MB', value: String(targetMiB) },
      { name: 'MEMHOG_STEP_MB', value: String(stepMiB) },
      { name: 'MEMHOG_INTERVAL_S', value: '0' },
    ],
  };
}

export async function createPod(ctx: ScenarioContext, pod: V1Pod): Promise<V1Pod> {
  return ctx.core.createNamespacedPod({ namespace: ctx.namespace, body: pod });
}

export async function readPod(ctx: ScenarioContext, name: string): Promise<V1Pod> {
  return ctx.core.readNamespacedPod({ name, namespace: ctx.namespace });
}

/** What a failed wait records of the pod: its status, which is what the agent writes. */
export const podSummary = (pod: V1Pod) => pod.status ?? {};

/** framework.PodStartTimeout (5 min): how long upstream waits for a pod to start, end or change. */
export const POD_START_MS = 5 * 60_000;
/** framework.PodStartShortTimeout (2 min): upstream's shorter bound, for pods it expects quickly. */
export const POD_START_SHORT_MS = 2 * 60_000;
/** framework.PodEventTimeout (2 min): how long upstream waits for a pod's event. */
export const POD_EVENT_MS = 2 * 60_000;
/** e2epod.PodDeleteTimeout / f.Timeouts.PodDelete (5 min): how long upstream waits for a pod to go. */
export const POD_DELETE_MS = 5 * 60_000;
/** framework.DefaultNamespaceDeletionTimeout (5 min): how long upstream waits for a namespace to go. */
export const NAMESPACE_DELETE_MS = 5 * 60_000;

/** The agent sets status.startTime in its first status update for a pod. */
export const PICKUP_TIMEOUT_MS = 30_000;
const pickedUp = new WeakMap<ScenarioContext, Set<string>>();

/**
 * Waits until the pod satisfies `accept`, recording the assertion and the last pod status seen.
 * First the agent must have picked the pod up (status.startTime) within PICKUP_TIMEOUT_MS: a node
 * that does not run pods at all fails in seconds with that reason, not after every long wait.
 * The default is upstream's for a pod to start or change (e2epod.WaitForPodCondition callers).
 */
export async function waitForPod(
  ctx: ScenarioContext,
  name: string,
  what: string,
  accept: (pod: V1Pod) => boolean,
  timeoutMs = POD_START_MS,
  cannotSucceed?: (pod: V1Pod) => string | undefined,
): Promise<V1Pod> {
  const seen = pickedUp.get(ctx) ?? new Set<string>();
  pickedUp.set(ctx, seen);
  if (!seen.has(name)) {
    await ctx.check.eventually(
      `pod ${name} picked up by the node agent (status.startTime set)`,
      () => readPod(ctx, name),
      (p) => !!p.status?.startTime,
      { timeoutMs: PICKUP_TIMEOUT_MS, expected: 'status.startTime set by the agent', describe: podSummary },
    );
    seen.add(name);
  }
  return ctx.check.eventually(`pod ${name} ${what}`, () => readPod(ctx, name), accept, {
    timeoutMs,
    expected: what,
    describe: podSummary,
    ...(cannotSucceed ? { cannotSucceed } : {}),
  });
}

export const isRunning = (p: V1Pod) => p.status?.phase === 'Running';

/**
 * waitForPod until the pod's phase is Running (e2epod.WaitForPodRunningInNamespace: PodStart); a
 * Succeeded or Failed pod ends the wait at once, as upstream's (errPodCompleted, errPodFailed).
 */
export const waitForRunning = (ctx: ScenarioContext, name: string, timeoutMs?: number) =>
  waitForPod(ctx, name, 'is Running', isRunning, timeoutMs, endedPhase);

/** The pod has ended: Succeeded or Failed. */
export const finished = (pod: V1Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

/** A pod that has ended never runs again: upstream's wait for Running stops there. */
export const endedPhase = (pod: V1Pod) =>
  finished(pod) ? `the pod has ended: phase ${pod.status?.phase}` : undefined;

/**
 * podClient.WaitForSuccess: the pod ends Succeeded; Failed ends the wait early and is recorded
 * with its status, within upstream's PodStartTimeout (e2eoutput's wait too).
 */
export async function waitForSuccess(
  ctx: ScenarioContext,
  name: string,
  timeoutMs = POD_START_MS,
): Promise<V1Pod> {
  const p = await waitForPod(ctx, name, 'finished', finished, timeoutMs);
  ctx.check.ok(`pod ${name} succeeded`, p.status?.phase === 'Succeeded', podSummary(p), 'Succeeded');
  return p;
}

/** One container's log. */
export const podLog = (ctx: ScenarioContext, name: string, container: string): Promise<string> =>
  ctx.core.readNamespacedPodLog({ name, namespace: ctx.namespace, container });

export const containerStatus = (pod: V1Pod, container: string) =>
  [
    ...(pod.status?.initContainerStatuses ?? []),
    ...(pod.status?.containerStatuses ?? []),
    ...(pod.status?.ephemeralContainerStatuses ?? []),
  ].find((c) => c.name === container);

export const podCondition = (pod: V1Pod, type: string) =>
  pod.status?.conditions?.find((c) => c.type === type)?.status;

export const waitingReason = (pod: V1Pod, container: string) =>
  containerStatus(pod, container)?.state?.waiting?.reason;

/** Events in the scenario namespace about one object, newest last. */
export async function eventsFor(ctx: ScenarioContext, name: string) {
  const list = await ctx.core.listNamespacedEvent({
    namespace: ctx.namespace,
    fieldSelector: `involvedObject.name=${name}`,
  });
  return list.items.map((e) => ({
    reason: e.reason ?? '',
    message: e.message ?? '',
    type: e.type ?? '',
    /** The kubelet's Evicted events carry starved_resource and the offending containers here. */
    annotations: e.metadata?.annotations ?? {},
    /** When it first happened. */
    firstAt: new Date(e.firstTimestamp ?? e.eventTime ?? e.lastTimestamp ?? 0).getTime(),
    /** When it last happened (an aggregated Event's count went up then). */
    lastAt: new Date(e.lastTimestamp ?? e.eventTime ?? e.firstTimestamp ?? 0).getTime(),
  }));
}

/** A pattern a log must match: a RegExp, or a check of a scenario's own with a name. */
export interface LogMatcher {
  test(log: string): boolean;
  toString(): string;
}

/**
 * e2eoutput.TestContainerOutput (and TestContainerOutputRegexp): the pod is created and succeeds,
 * and the container's log contains every string, or matches every pattern.
 */
export async function testContainerOutput(
  ctx: ScenarioContext,
  pod: V1Pod,
  container: string,
  expected: (string | LogMatcher)[],
  timeoutMs?: number,
): Promise<void> {
  const name = pod.metadata!.name!;
  await createPod(ctx, pod);
  await waitForSuccess(ctx, name, timeoutMs);
  const log = await podLog(ctx, name, container).catch(() => '');
  for (const want of expected)
    ctx.check.ok(
      `pod ${name}: ${container} printed ${String(want)}`,
      typeof want === 'string' ? log.includes(want) : want.test(log),
      log,
      String(want),
    );
}

/** A shell that ends at once on SIGTERM, so deleting its pod does not wait out the grace period. */
export const SLEEPER = 'trap "exit 0" TERM; sleep 3600 & wait';

/** `kubectl exec` of a command in a container of the namespace's pod: its output and exit code. */
export const kubectlExec = (ctx: ScenarioContext, pod: string, container: string, command: string[]) =>
  ctx.kubectl(['-n', ctx.namespace, 'exec', pod, '-c', container, '--', ...command]);

/** e2epod.ExecShellInContainer: `sh -c cmd` in the container, its stdout trimmed. */
export async function execShellInContainer(
  ctx: ScenarioContext,
  pod: string,
  container: string,
  cmd: string,
) {
  const r = await kubectlExec(ctx, pod, container, ['/bin/sh', '-c', cmd]);
  ctx.check.ok(`pod ${pod}: \`${cmd}\` in ${container} succeeded`, r.code === 0, r.stderr, 'exit 0');
  return r.stdout.trim();
}

/**
 * e2epod.DeletePodWithWait (podClient.DeleteSync with a grace period): deleted, with
 * `graceSeconds` when given (else the pod's own), then waited for until the object is gone.
 */
export async function deletePodWithWait(
  ctx: ScenarioContext,
  name: string,
  opts: { graceSeconds?: number; timeoutMs?: number } = {},
): Promise<void> {
  await ctx.core.deleteNamespacedPod({
    name,
    namespace: ctx.namespace,
    ...(opts.graceSeconds !== undefined ? { gracePeriodSeconds: opts.graceSeconds } : {}),
  });
  await ctx.check.eventually(
    `pod ${name} deleted`,
    () =>
      readPod(ctx, name).then(
        () => false,
        () => true,
      ),
    (gone) => gone,
    { timeoutMs: opts.timeoutMs ?? POD_DELETE_MS, expected: 'the pod object gone' },
  );
}
