import type { Scenario, ScenarioContext } from '@kh/harness';
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { diskHogPod, HOG_MIB, HOG_STEP_MIB, nodefsThresholdMiB } from '../support/disk.js';
import {
  evictionGuardMs,
  innocentSurvives,
  PRESSURE_DISAPPEAR_MS,
  PRESSURE_TIMEOUT_MS,
  pressureClearsInnocentRuns,
  pressureThenEvicted,
} from '../support/eviction.js';
import { pressureCondition } from '../support/node.js';
import {
  containerStatus,
  createPod,
  podFor,
  readPod,
  sh,
  waitForPod,
  waitForRunning,
} from '../support/pods.js';

/** How far the node's own clock readings (condition transition, event, container exit) may lag. */
const SLACK_S = 20;

const FILE = 'test/e2e_node/eviction_test.go';
const SOFT_CASE =
  'LocalStorageSoftEviction when we run containers that should cause DiskPressure should eventually evict all of the correct pods';
const NOT_OVERWRITE_CASE =
  'LocalStorageSoftEvictionNotOverwriteTerminationGracePeriodSeconds when we run containers that should cause DiskPressure should eventually evict all of the correct pods';

interface SoftConfig {
  /** evictionSoftGracePeriod for nodefs.available, in seconds. */
  softGraceS: number;
  maxPodGraceS: number;
}

/**
 * eviction_test's two soft eviction cases, one after the other on one node, each with its own
 * agent configuration: a soft nodefs.available threshold set support/disk's MARGIN_MIB under the free space, its
 * grace period, evictionMaxPodGracePeriod 30, and hard thresholds switched off with
 * `memory.available: 0%`, as upstream sets them.
 *
 * 1. LocalStorageSoftEviction (grace period 1m): DiskPressure appears as soon as the hog crosses
 *    the threshold, the hog keeps running through the grace period, then it is evicted (reason
 *    Evicted, one Evicted event naming ephemeral-storage), not the innocent pod; the condition
 *    clears.
 * 2. ...NotOverwriteTerminationGracePeriodSeconds (grace period 30s): the hog's own
 *    terminationGracePeriodSeconds, 1, is shorter than evictionMaxPodGracePeriod, 30, and must not
 *    be overwritten by it. The hog traps and ignores SIGTERM, so it runs until the agent's kill
 *    ends its grace period: its container must end within seconds of the Evicted event, not 30 s.
 *
 * Both hogs write into their writable layer, as disk-eviction's does; upstream's first case uses
 * an emptyDir, which the agent does not yet tear down for a terminated pod.
 */
export const diskSoftEviction: Scenario = {
  name: 'disk-soft-eviction',
  estimateMs: 225_000,
  isolation: 'node',
  description:
    'a soft nodefs threshold sets DiskPressure at once and evicts the disk hog only after its grace period, not the innocent pod; the kill uses min(evictionMaxPodGracePeriod, the pod grace period); Evicted reason and event',
  needs: ['real-containers', 'registry-pull'],
  // The hogs' layers and nodefs on a disk no other cell writes to, so cells run side by side.
  ownDisk: true,
  upstream: [
    { file: FILE, case: SOFT_CASE },
    { file: FILE, case: NOT_OVERWRITE_CASE },
  ],
  // Slowest seen 289 s (t59c, docker).
  timeoutMs: evictionGuardMs(290_000, PRESSURE_TIMEOUT_MS.LocalStorageSoftEviction),
  async run(ctx) {
    try {
      await softEviction(ctx);
      await notOverwriteTerminationGracePeriod(ctx);
    } finally {
      // The hogs' layers must not keep the node under pressure for the scenarios after this one.
      for (const name of ['hog', 'innocent', 'grace-hog', 'after']) {
        await ctx.core
          .deleteNamespacedPod({ name, namespace: ctx.namespace, gracePeriodSeconds: 0 })
          .catch(() => {});
      }
      await ctx.reconfigureAgent({});
    }
  },
};

async function softEviction(ctx: ScenarioContext): Promise<void> {
  const { check } = ctx;
  const config = { softGraceS: 60, maxPodGraceS: 30 };
  await noDiskPressure(ctx, 'no DiskPressure before the soft eviction case');
  // Upstream's innocent pod: grace period 1, within its 50Mi ephemeral-storage request.
  await createPod(
    ctx,
    podFor(ctx, 'innocent', {
      terminationGracePeriodSeconds: 1,
      restartPolicy: 'Never',
      containers: [
        sh(ctx, 'c', 'while true; do sleep 5; done', {
          resources: {
            requests: { 'ephemeral-storage': '50Mi', memory: '50Mi' },
            limits: { 'ephemeral-storage': '50Mi', memory: '50Mi' },
          },
        }),
      ],
    }),
  );
  await waitForRunning(ctx, 'innocent');
  await softThresholdConfig(ctx, config);

  await createPod(ctx, diskHogPod(ctx, { terminationGracePeriodSeconds: 1 }));
  const pressure = await pressureCondition(
    ctx,
    'DiskPressure',
    { status: 'True', reason: 'KubeletHasDiskPressure' },
    PRESSURE_TIMEOUT_MS.LocalStorageSoftEviction,
  );
  const pressureSeenAt = Date.now();
  // The condition is set at once; the eviction waits for the grace period.
  const early = await readPod(ctx, 'hog');
  check.equal('hog still running when DiskPressure appears', early.status?.phase, 'Running');
  const halfway = (config.softGraceS / 2) * 1000;
  await ctx.sleep(Math.max(0, pressureSeenAt + halfway - Date.now()));
  const mid = await readPod(ctx, 'hog');
  check.equal(
    `hog still running ${config.softGraceS / 2} s into the ${config.softGraceS} s soft grace period`,
    mid.status?.phase,
    'Running',
  );
  check.equal('no Evicted event before the grace period', (await evictedEvents(ctx, 'hog')).length, 0);

  const evicted = await waitForPod(
    ctx,
    'hog',
    'is evicted',
    (p) => p.status?.phase === 'Failed',
    PRESSURE_TIMEOUT_MS.LocalStorageSoftEviction,
  );
  await evictedAsUpstream(ctx, 'hog', evicted);
  await innocentSurvives(ctx);
  await evictionAfterGracePeriod(ctx, 'hog', pressure?.lastTransitionTime, config);
  await pressureClearsInnocentRuns(ctx, 'DiskPressure', 'DiskPressure clears once the hog is gone');
  for (const name of ['hog', 'innocent']) {
    await ctx.core.deleteNamespacedPod({ name, namespace: ctx.namespace, gracePeriodSeconds: 0 });
  }
}

async function notOverwriteTerminationGracePeriod(ctx: ScenarioContext): Promise<void> {
  const { check } = ctx;
  const config = { softGraceS: 30, maxPodGraceS: 30 };
  const podGraceS = 1;
  await noDiskPressure(ctx, 'no DiskPressure before the grace period case');
  await softThresholdConfig(ctx, config);
  // Ignores SIGTERM (the trap only logs it), so only the end of the grace period stops it.
  const writes = Math.ceil(HOG_MIB / HOG_STEP_MIB);
  const script = [
    `trap 'echo grace-hog: SIGTERM ignored' TERM`,
    `i=0; while [ $i -lt ${writes} ]; do dd if=/dev/zero of=/hog-$i bs=1M count=${HOG_STEP_MIB} 2>/dev/null; i=$((i+1)); sleep 1; done`,
    'while true; do sleep 1; done',
  ].join('; ');
  await createPod(
    ctx,
    podFor(ctx, 'grace-hog', {
      terminationGracePeriodSeconds: podGraceS,
      restartPolicy: 'Never',
      containers: [sh(ctx, 'hog', script)],
    }),
  );
  const { pressure, evicted } = await pressureThenEvicted(
    ctx,
    'DiskPressure',
    'grace-hog',
    PRESSURE_TIMEOUT_MS.LocalStorageSoftEviction,
  );
  await evictedAsUpstream(ctx, 'grace-hog', evicted);
  const evictedAt = await evictionAfterGracePeriod(ctx, 'grace-hog', pressure?.lastTransitionTime, config);

  // The kill's grace period, seen as how long the SIGTERM-ignoring container outlived its eviction.
  const terminated = await check.eventually(
    'grace-hog container terminated',
    async () => containerStatus(await readPod(ctx, 'grace-hog'), 'hog')?.state?.terminated,
    (t) => t?.finishedAt !== undefined,
    { timeoutMs: 60_000, intervalMs: 1_000 },
  );
  const finishedAt = terminated?.finishedAt ? new Date(terminated.finishedAt).getTime() : Number.NaN;
  const killS = (finishedAt - (evictedAt ?? Number.NaN)) / 1000;
  const expectedGraceS = Math.min(config.maxPodGraceS, podGraceS);
  ctx.note('grace-hog kill', {
    evictedAt: evictedAt === undefined ? undefined : new Date(evictedAt).toISOString(),
    finishedAt: terminated?.finishedAt,
    exitCode: terminated?.exitCode,
    killSeconds: killS,
    expectedGraceSeconds: expectedGraceS,
  });
  check.equal('grace-hog ignored SIGTERM and was killed (exit code 137)', terminated?.exitCode, 137);
  // Expected: the pod's 1 s (the runtime stops a container with at least 2 s). Overwritten by
  // evictionMaxPodGracePeriod it would be 30 s.
  check.ok(
    `grace-hog killed with the pod's ${podGraceS} s grace period, not evictionMaxPodGracePeriod's ${config.maxPodGraceS} s (exit within 15 s of the Evicted event)`,
    killS >= -2 && killS < 15,
    { killSeconds: killS },
    `< 15 s (grace ${expectedGraceS} s)`,
  );

  await pressureCondition(
    ctx,
    'DiskPressure',
    { status: 'False', name: 'DiskPressure clears once the grace-hog is gone' },
    PRESSURE_DISAPPEAR_MS,
  );
  // As upstream's AfterEach: a new pod starts once the pressure is gone.
  await createPod(ctx, podFor(ctx, 'after', { containers: [sh(ctx, 'c', 'sleep 600')] }));
  await waitForPod(ctx, 'after', 'is Running after the pressure', (p) => p.status?.phase === 'Running');
}

async function noDiskPressure(ctx: ScenarioContext, name: string): Promise<void> {
  await pressureCondition(ctx, 'DiskPressure', { status: 'False', name }, PRESSURE_DISAPPEAR_MS);
}

/** The upstream cases' kubelet configuration, with the threshold measured now. */
async function softThresholdConfig(ctx: ScenarioContext, { softGraceS, maxPodGraceS }: SoftConfig) {
  const thresholdMiB = await nodefsThresholdMiB(ctx, { soft: true, softGraceS, maxPodGraceS });
  await ctx.reconfigureAgent({
    evictionSoft: { 'nodefs.available': `${thresholdMiB}Mi` },
    evictionSoftGracePeriod: { 'nodefs.available': `${softGraceS}s` },
    evictionMaxPodGracePeriod: maxPodGraceS,
    evictionMinimumReclaim: {},
    // 0% switches a threshold off: no hard threshold may evict in these cases.
    evictionHard: { 'memory.available': '0%' },
  });
}

async function evictedEvents(ctx: ScenarioContext, name: string): Promise<CoreV1Event[]> {
  const list = await ctx.core.listNamespacedEvent({
    namespace: ctx.namespace,
    fieldSelector: `involvedObject.name=${name}`,
  });
  return list.items.filter((e) => e.reason === 'Evicted');
}

/** Upstream's verifyEvictionOrdering and verifyEvictionEvents for the evicted pod. */
async function evictedAsUpstream(ctx: ScenarioContext, name: string, pod: V1Pod): Promise<void> {
  const { check } = ctx;
  check.equal(`${name} reason`, pod.status?.reason, 'Evicted');
  check.ok(
    `${name} eviction message names ephemeral-storage`,
    /ephemeral-storage/.test(pod.status?.message ?? ''),
    pod.status?.message,
  );
  const events = await check.eventually(
    `one Evicted event for ${name}`,
    () => evictedEvents(ctx, name),
    (es) => es.length === 1,
    { timeoutMs: 30_000, describe: (es) => es.map((e) => ({ message: e.message, count: e.count })) },
  );
  check.equal(
    `${name} Evicted event starved_resource annotation`,
    events[0]?.metadata?.annotations?.starved_resource,
    'ephemeral-storage',
  );
}

/**
 * The Evicted event came a grace period after the threshold was crossed: the DiskPressure
 * condition's transition (the agent sets it in the pass that first sees the threshold crossed,
 * and reports it within a status update) is the start. Returns the event's time.
 */
async function evictionAfterGracePeriod(
  ctx: ScenarioContext,
  name: string,
  pressureSince: Date | undefined,
  { softGraceS }: SoftConfig,
): Promise<number | undefined> {
  const [event] = await evictedEvents(ctx, name);
  const at = event?.firstTimestamp ?? event?.eventTime ?? event?.metadata?.creationTimestamp;
  const evictedAt = at ? new Date(at).getTime() : undefined;
  const since = pressureSince ? new Date(pressureSince).getTime() : undefined;
  const waitedS = evictedAt !== undefined && since !== undefined ? (evictedAt - since) / 1000 : Number.NaN;
  ctx.note(`${name} eviction timing`, {
    diskPressureSince: pressureSince ? new Date(pressureSince).toISOString() : undefined,
    evictedAt: evictedAt === undefined ? undefined : new Date(evictedAt).toISOString(),
    secondsAfterDiskPressure: waitedS,
    softGraceS,
  });
  ctx.check.ok(
    `${name} evicted only after the ${softGraceS} s soft grace period`,
    waitedS >= softGraceS - SLACK_S && waitedS <= softGraceS + 90,
    { secondsAfterDiskPressure: waitedS },
    `between ${softGraceS - SLACK_S} and ${softGraceS + 90} s after DiskPressure appeared`,
  );
  return evictedAt;
}
