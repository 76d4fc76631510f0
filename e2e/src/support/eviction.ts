// The frame eviction_test's cases share (its runEvictionTest), for scenarios that mirror them:
// the pods start together; the node condition appears; pods are evicted in their ranks (rank 0
// never, a lower rank never while a higher one still runs, every non-zero rank eventually), each
// with reason Evicted, the kubelet's message and one Evicted event naming the starved resource;
// the condition clears and stays clear; and a new pod starts afterwards.
import type { ScenarioContext } from '@kh/harness';
import {
  SchedulingV1Api,
  type V1Container,
  type V1Pod,
  type V1ResourceRequirements,
  type V1Volume,
} from '@kubernetes/client-node';
import { nodeCondition, type PressureType, pressureCondition } from './node.js';
import { createPod, eventsFor, NAMESPACE_DELETE_MS, podFor, readPod, sh, waitForPod } from './pods.js';

export interface PodEvictSpec {
  /** 0: never evicted; otherwise never before a pod of a higher rank, and eventually. */
  evictionPriority: number;
  pod: V1Pod;
  /** The evicted pod must carry the DisruptionTarget condition (upstream checks it on some cases). */
  wantDisruptionTarget?: boolean;
}

export interface EvictionTest {
  /** The pressure the pods cause; undefined: none (local storage isolation evicts without one). */
  condition?: PressureType;
  /** The Evicted events' starved_resource annotation; undefined: not checked (upstream's "none"). */
  starvedResource?: 'memory' | 'ephemeral-storage' | 'inodes';
  /** What each evicted pod's status message must match. */
  message: (spec: PodEvictSpec) => RegExp;
  /** Upstream's pressureTimeout for the case (PRESSURE_TIMEOUT_MS): the condition's wait, then the evictions'. */
  pressureTimeoutMs: number;
  specs: PodEvictSpec[];
}

const MINUTE_MS = 60_000;

/**
 * eviction_test's pressureTimeout of each Describe (LocalStorageCapacityIsolationEviction's
 * evictionTestTimeout): runEvictionTest waits that long for the node condition, and that long
 * again for the evictions. A slow node that gets there is right; a shorter wait would fail it.
 */
export const PRESSURE_TIMEOUT_MS = {
  InodeEviction: 20 * MINUTE_MS,
  MemoryAllocatableEviction: 10 * MINUTE_MS,
  LocalStorageEviction: 15 * MINUTE_MS,
  LocalStorageSoftEviction: 10 * MINUTE_MS,
  LocalStorageCapacityIsolationEviction: 10 * MINUTE_MS,
  PriorityMemoryEvictionOrdering: 10 * MINUTE_MS,
  PriorityLocalStorageEvictionOrdering: 15 * MINUTE_MS,
  PriorityPidEvictionOrdering: 10 * MINUTE_MS,
} as const;

/** eviction_test's pressureDisappearTimeout: how long the condition may take to clear. */
export const PRESSURE_DISAPPEAR_MS = 10 * MINUTE_MS;

/**
 * An eviction scenario's cell guard: room for a run half again as slow as the slowest the CI
 * trials saw (`slowestSeenMs`) with one wait at upstream's full bound (`longestWaitMs`), so that in
 * a slow but correct run upstream's waits decide, never the guard. Whole minutes.
 */
export const evictionGuardMs = (slowestSeenMs: number, longestWaitMs: number) =>
  Math.ceil((1.5 * slowestSeenMs + longestWaitMs) / MINUTE_MS) * MINUTE_MS;

/** Upstream watches 1 minute against a 5 minute transition period; the harness's is 20 s. */
const STABLE_MS = 20_000;
/** The agent's nodeStatusUpdateFrequency (the kubelet's default, which the harness keeps). */
const NODE_STATUS_UPDATE_MS = 10_000;
const POLL_MS = 2_000;

const phaseOf = (pods: V1Pod[], name: string) => pods.find((p) => p.metadata?.name === name)?.status?.phase;

interface Look {
  pods: V1Pod[];
  /** Rank violations: a lower rank failed while a higher one runs, rank 0 failed, or a pod succeeded. */
  violations: string[];
  /** Non-zero ranks not evicted yet. */
  pending: string[];
}

async function look(ctx: ScenarioContext, specs: PodEvictSpec[]): Promise<Look> {
  const pods = (await ctx.core.listNamespacedPod({ namespace: ctx.namespace })).items;
  const violations: string[] = [];
  const pending: string[] = [];
  for (const s of specs) {
    const name = s.pod.metadata?.name ?? '';
    const phase = phaseOf(pods, name);
    if (phase === 'Succeeded') violations.push(`${name} succeeded`);
    if (phase === 'Failed' && s.evictionPriority === 0) violations.push(`rank 0 pod ${name} failed`);
    for (const other of specs) {
      const otherName = other.pod.metadata?.name ?? '';
      if (
        s.evictionPriority < other.evictionPriority &&
        phase === 'Failed' &&
        phaseOf(pods, otherName) === 'Running'
      )
        violations.push(
          `rank ${s.evictionPriority} pod ${name} failed before rank ${other.evictionPriority} pod ${otherName}`,
        );
    }
    if (s.evictionPriority !== 0 && phase !== 'Failed') pending.push(name);
  }
  return { pods, violations, pending };
}

const describeLook = (l: Look) => ({
  violations: l.violations,
  pending: l.pending,
  pods: l.pods.map((p) => ({ name: p.metadata?.name, phase: p.status?.phase, reason: p.status?.reason })),
});

/** Runs the case; the caller has configured the agent's thresholds and restores them after. */
export async function runEvictionTest(ctx: ScenarioContext, t: EvictionTest): Promise<void> {
  const { check } = ctx;
  const names = t.specs.map((s) => s.pod.metadata?.name ?? '');
  await Promise.all(t.specs.map((s) => createPod(ctx, s.pod)));
  // Started: running, or (a fast hog) already evicted; never stuck in admission.
  await Promise.all(
    names.map((n) =>
      waitForPod(ctx, n, 'starts', (p) => p.status?.phase === 'Running' || p.status?.phase === 'Failed'),
    ),
  );
  try {
    if (t.condition) {
      await pressureCondition(ctx, t.condition, { status: 'True' }, t.pressureTimeoutMs);
    }
    const done = await check.eventually(
      'pods evicted in rank order',
      () => look(ctx, t.specs),
      (l) => l.violations.length > 0 || l.pending.length === 0,
      { timeoutMs: t.pressureTimeoutMs, intervalMs: POLL_MS, describe: describeLook },
    );
    check.equal('no pod evicted out of rank, none of rank 0', done.violations, []);

    for (const s of t.specs.filter((x) => x.evictionPriority !== 0)) {
      const name = s.pod.metadata?.name ?? '';
      const pod = done.pods.find((p) => p.metadata?.name === name);
      check.equal(`${name}: reason`, pod?.status?.reason, 'Evicted');
      const pattern = t.message(s);
      check.ok(`${name}: message ${pattern}`, pattern.test(pod?.status?.message ?? ''), pod?.status?.message);
      if (s.wantDisruptionTarget) {
        const c = pod?.status?.conditions?.find((x) => x.type === 'DisruptionTarget');
        check.equal(
          `${name}: DisruptionTarget`,
          { status: c?.status, reason: c?.reason },
          {
            status: 'True',
            reason: 'TerminationByKubelet',
          },
        );
      }
    }

    if (t.condition) {
      // After the last eviction: pressure that lifted between two evictions shows False in node
      // status until the sync that reports the last one's True (up to nodeStatusUpdateFrequency).
      const evictedAt = await Promise.all(
        t.specs
          .filter((x) => x.evictionPriority !== 0)
          .map(async (x) =>
            (await eventsFor(ctx, x.pod.metadata?.name ?? '')).filter((e) => e.reason === 'Evicted'),
          ),
      );
      const since = Math.max(0, ...evictedAt.flat().map((e) => e.lastAt));
      const clears = { status: 'False', name: `${t.condition} clears`, since } as const;
      await pressureCondition(ctx, t.condition, clears, PRESSURE_DISAPPEAR_MS);
      // The pressure that made the last eviction can reach node status up to one
      // nodeStatusUpdateFrequency after it, behind a False from the lull before it: look again
      // once that sync has passed (t49a: False at 11:33:0x, then the last pressure's True at 11:33:05).
      const settled = since + NODE_STATUS_UPDATE_MS + 2_000;
      if (Date.now() < settled) {
        await ctx.sleep(settled - Date.now());
        await pressureCondition(ctx, t.condition, clears, PRESSURE_DISAPPEAR_MS);
      }
    }
    // Stable: the condition stays away and nothing else is evicted.
    const until = performance.now() + STABLE_MS;
    while (performance.now() < until) {
      const l = await look(ctx, t.specs);
      check.ok('stable afterwards: no pod evicted out of rank', l.violations.length === 0, describeLook(l));
      if (t.condition) {
        const c = await nodeCondition(ctx, t.condition);
        check.ok(`stable afterwards: ${t.condition} stays False`, c?.status !== 'True', c);
      }
      await ctx.sleep(POLL_MS);
    }

    for (const s of t.specs.filter((x) => x.evictionPriority !== 0)) {
      const name = s.pod.metadata?.name ?? '';
      const evicted = (await eventsFor(ctx, name)).filter((e) => e.reason === 'Evicted');
      check.equal(`${name}: one Evicted event`, evicted.length, 1);
      const event = evicted[0];
      if (!event || !t.starvedResource) continue;
      check.equal(`${name}: starved_resource`, event.annotations.starved_resource, t.starvedResource);
      if (t.starvedResource === 'memory') {
        const container = s.pod.spec?.containers[0]?.name;
        check.equal(`${name}: offending_containers`, event.annotations.offending_containers, container);
        const usage = event.annotations.offending_containers_usage ?? '';
        check.ok(`${name}: offending container usage recorded`, /^\d+(\.\d+)?[KMGT]?i?$/.test(usage), usage);
      }
    }
  } finally {
    // Upstream's AfterEach: the pods go, the condition clears, a new pod starts.
    await Promise.all(
      names.map((name) =>
        ctx.core
          .deleteNamespacedPod({ name, namespace: ctx.namespace, gracePeriodSeconds: 0 })
          .catch(() => undefined),
      ),
    );
  }
  if (t.condition) {
    await pressureCondition(
      ctx,
      t.condition,
      { status: 'False', name: `${t.condition} gone after the test` },
      PRESSURE_DISAPPEAR_MS,
    );
  }
  const admit = 'test-admit-pod';
  await createPod(
    ctx,
    podFor(ctx, admit, { restartPolicy: 'Never', containers: [sh(ctx, 'c', 'sleep 600')] }),
  );
  await waitForPod(ctx, admit, 'a new pod starts after the test', (p) => p.status?.phase === 'Running');
}

/**
 * Runs one of the eviction_test cases a cell runs in turn as Ginkgo runs an It: in a namespace of
 * its own (the framework's f.Namespace), deleted with all in it after the case, whatever happened,
 * and gone before the next case starts. Cases that share pod names are so each judged on their own
 * pods and Evicted events, and no pod of an earlier case (its test-admit-pod) is left for a later
 * case's pressure to evict.
 */
export async function inOwnNamespace(
  ctx: ScenarioContext,
  suffix: string,
  run: (ctx: ScenarioContext) => Promise<void>,
): Promise<void> {
  const namespace = await ctx.createNamespace(suffix);
  try {
    await run({ ...ctx, namespace });
  } finally {
    await ctx.core.deleteNamespace({ name: namespace }).catch(() => undefined);
  }
  await ctx.check.eventually(
    `namespace ${namespace} deleted`,
    async () => (await ctx.core.listNamespace()).items.map((n) => n.metadata?.name),
    (names) => !names.includes(namespace),
    { timeoutMs: NAMESPACE_DELETE_MS, intervalMs: 1_000 },
  );
}

const VOLUME = 'test-volume';
const MOUNT = '/test-mnt';

/** An eviction_test pod: restartPolicy Never and a 1 s grace period, as upstream's podWithCommand. */
export function evictionPod(
  ctx: ScenarioContext,
  name: string,
  container: V1Container,
  extra: { volume?: Omit<V1Volume, 'name'>; priorityClassName?: string } = {},
): V1Pod {
  const pod = podFor(ctx, name, {
    restartPolicy: 'Never',
    terminationGracePeriodSeconds: 1,
    ...(extra.priorityClassName !== undefined ? { priorityClassName: extra.priorityClassName } : {}),
    containers: [
      extra.volume ? { ...container, volumeMounts: [{ name: VOLUME, mountPath: MOUNT }] } : container,
    ],
    ...(extra.volume ? { volumes: [{ name: VOLUME, ...extra.volume }] } : {}),
  });
  return pod;
}

/**
 * eviction_test's diskConsumingPod: writes `mib` MiB, 1 MiB every 0.1 s, into its volume when it
 * has one, else into its writable layer, then holds it. `mib` must be a multiple of the step.
 */
export function diskConsumingPod(
  ctx: ScenarioContext,
  name: string,
  mib: number,
  opts: {
    volume?: Omit<V1Volume, 'name'>;
    resources?: V1ResourceRequirements;
    priorityClassName?: string;
    /** Faster than upstream's 1 MiB per 0.1 s, for writers that must fill a margin of hundreds of MiB. */
    stepMib?: number;
    intervalS?: number;
  } = {},
): V1Pod {
  if (mib % (opts.stepMib ?? 1) !== 0) throw new Error(`${name}: ${mib} MiB is no multiple of the step`);
  const container: V1Container = {
    name: `${name}-container`,
    image: ctx.images.diskhog,
    imagePullPolicy: 'IfNotPresent',
    env: [
      { name: 'DISKHOG_MB', value: String(mib) },
      { name: 'DISKHOG_STEP_MB', value: String(opts.stepMib ?? 1) },
      { name: 'DISKHOG_INTERVAL_S', value: String(opts.intervalS ?? 0.1) },
      ...(opts.volume ? [{ name: 'DISKHOG_DIR', value: MOUNT }] : []),
    ],
    ...(opts.resources ? { resources: opts.resources } : {}),
  };
  return evictionPod(ctx, `${name}-pod`, container, opts);
}

/** eviction_test's innocentPod: sleeps, within its 50Mi requests and limits of memory and disk. */
export function innocentPod(ctx: ScenarioContext, priorityClassName?: string): V1Pod {
  const fifty = { 'ephemeral-storage': '50Mi', memory: '50Mi' };
  return evictionPod(
    ctx,
    'innocent-pod',
    sh(ctx, 'innocent-container', 'while true; do sleep 5; done', {
      resources: { requests: fifty, limits: fifty },
    }),
    priorityClassName !== undefined ? { priorityClassName } : {},
  );
}

// The scenarios that judge one hog beside an `innocent` pod, rather than runEvictionTest's ranks.

/**
 * The pressure appears with the kubelet's reason, then the hog is evicted: its Failed pod. Each
 * wait is upstream's pressureTimeout for the case (PRESSURE_TIMEOUT_MS).
 */
export async function pressureThenEvicted(
  ctx: ScenarioContext,
  condition: PressureType,
  hog: string,
  pressureTimeoutMs: number,
) {
  const pressure = await pressureCondition(ctx, condition, { status: 'True' }, pressureTimeoutMs);
  const evicted = await waitForPod(
    ctx,
    hog,
    'is evicted',
    (p) => p.status?.phase === 'Failed',
    pressureTimeoutMs,
  );
  return { pressure, evicted };
}

/** The evicted hog as the kubelet leaves it: reason Evicted; its message and an Evicted event name the resource. */
export async function evictedFor(ctx: ScenarioContext, evicted: V1Pod, resource: string, pattern: RegExp) {
  const { check } = ctx;
  const name = evicted.metadata?.name ?? '';
  check.equal('evicted pod reason', evicted.status?.reason, 'Evicted');
  check.ok(
    `eviction message names ${resource}`,
    pattern.test(evicted.status?.message ?? ''),
    evicted.status?.message,
  );
  await check.eventually(
    `Evicted event for ${resource}`,
    () => eventsFor(ctx, name),
    (events) => events.some((e) => e.reason === 'Evicted' && pattern.test(e.message)),
    { timeoutMs: 30_000 },
  );
}

/** The innocent pod has survived the hog's eviction. */
export async function innocentSurvives(ctx: ScenarioContext): Promise<void> {
  ctx.check.equal('innocent pod survives', (await readPod(ctx, 'innocent')).status?.phase, 'Running');
}

/**
 * The pressure clears once the hog is gone (within upstream's pressureDisappearTimeout), and the
 * innocent pod still runs: the hog's eviction was enough, nothing else was evicted after it.
 */
export async function pressureClearsInnocentRuns(
  ctx: ScenarioContext,
  condition: PressureType,
  name: string,
): Promise<void> {
  await pressureCondition(ctx, condition, { status: 'False', name }, PRESSURE_DISAPPEAR_MS);
  const after = await readPod(ctx, 'innocent');
  ctx.check.equal('innocent pod still running after the pressure', after.status?.phase, 'Running');
}

/** The value of upstream's high-priority PriorityClass. */
export const HIGH_PRIORITY = 999_999_999;

/**
 * eviction_test's BeforeEach and AfterEach around a case with high-priority pods: the
 * `<namespace>-high-priority` PriorityClass (upstream's `<base name>-high-priority`; the namespace
 * keeps cells that run side by side apart) exists while `run` runs, given its name for the pods'
 * priorityClassName; the apiserver's Priority admission gives them its value.
 */
export async function withHighPriorityClass<T>(
  ctx: ScenarioContext,
  run: (priorityClassName: string) => Promise<T>,
): Promise<T> {
  const scheduling = ctx.kubeConfig.makeApiClient(SchedulingV1Api);
  const name = `${ctx.namespace}-high-priority`;
  await scheduling.createPriorityClass({ body: { metadata: { name }, value: HIGH_PRIORITY } });
  try {
    return await run(name);
  } finally {
    await scheduling.deletePriorityClass({ name });
  }
}
