import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import {
  ConfigSourceAnnotation,
  LOCAL_STORAGE_STATE_FILE,
  type PartialKubeletConfiguration,
  prepareForShutdownSignal,
} from '@kh/node-agent';
import { SchedulingV1Api, type V1Pod } from '@kubernetes/client-node';
import { AGENT_ROOT_DIR } from '../support/disk.js';
import { inOwnNamespace } from '../support/eviction.js';
import { nodeExec } from '../support/faults.js';
import { nodeCondition } from '../support/node.js';
import { createPod, isRunning, POD_START_MS, podCondition, podFor, waitForPod } from '../support/pods.js';
import { type Turns, turns } from '../support/turns.js';
import { watchPods } from '../support/watch.js';

// Upstream's node_shutdown_linux_test.go (test/e2e_node): logind announces a shutdown with
// PrepareForShutdown, which an outside client emits on the node's system bus as upstream's
// emitSignalPrepareForShutdown does, and the agent kills its pods within its grace periods, by
// criticality or by priority, marks the node not ready, and takes all back when the shutdown is
// cancelled. Every case shuts the cell's node down, so they take turns, each context with the
// agent configured as its tempSetCurrentKubeletConfig sets it.
const FILE = 'test/e2e_node/node_shutdown_linux_test.go';
const TAGS = [
  'Serial',
  'NodeFeature:GracefulNodeShutdown',
  'NodeFeature:GracefulNodeShutdownBasedOnPodPriority',
] as const;

/** Upstream's pollInterval, podStatusUpdateTimeout and nodeStatusUpdateTimeout. */
const POLL_MS = 1_000;
const POD_STATUS_UPDATE_MS = 30_000;
const NODE_STATUS_UPDATE_MS = 30_000;

/** podShutdownReason and podShutdownMessage, as upstream's test spells the kubelet's. */
const SHUTDOWN_REASON = 'Terminated';
const SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
/** scheduling.SystemNodeCritical and scheduling.SystemCriticalPriority. */
const SYSTEM_NODE_CRITICAL = 'system-node-critical';
const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** One of upstream's contexts: its name, labels and kubelet configuration. */
interface ShutdownContext {
  name: string;
  tags: readonly string[];
  config: PartialKubeletConfiguration;
}

interface Shared {
  turns: Turns;
  /** The context whose configuration the agent runs with now. */
  current?: ShutdownContext;
}

type Case = ScenarioCase<Shared>;

const DISRUPTION_CONDITIONS: ShutdownContext = {
  name: 'graceful node shutdown when PodDisruptionConditions are enabled',
  tags: [...TAGS, 'NodeFeature:PodDisruptionConditions'],
  config: {
    featureGates: {
      GracefulNodeShutdown: true,
      PodDisruptionConditions: true,
      GracefulNodeShutdownBasedOnPodPriority: false,
    },
    shutdownGracePeriod: '30s',
  },
};
const DISRUPTION_GRACE_PERIOD_MS = 30_000;

const GRACEFULLY: ShutdownContext = {
  name: 'when gracefully shutting down',
  tags: TAGS,
  config: {
    featureGates: {
      GracefulNodeShutdown: true,
      GracefulNodeShutdownBasedOnPodPriority: false,
      PodReadyToStartContainersCondition: true,
    },
    shutdownGracePeriod: '20s',
    shutdownGracePeriodCriticalPods: '10s',
  },
};
/** nodeShutdownGracePeriod - nodeShutdownGracePeriodCriticalPods: when the critical pods' turn comes. */
const NON_CRITICAL_PERIOD_MS = 10_000;

/** Upstream's custom-class-a, -b and -c values. */
const CUSTOM_CLASSES = { a: 100_000, b: 10_000, c: 1_000 } as const;
const BY_PRIORITY: ShutdownContext = {
  name: 'when gracefully shutting down with Pod priority',
  tags: TAGS,
  config: {
    featureGates: { GracefulNodeShutdown: true, GracefulNodeShutdownBasedOnPodPriority: true },
    // Every group podStatusUpdateTimeout long; the last one is DefaultPriorityWhenNoDefaultClassExists.
    shutdownGracePeriodByPodPriority: [
      SYSTEM_CRITICAL_PRIORITY,
      CUSTOM_CLASSES.a,
      CUSTOM_CLASSES.b,
      CUSTOM_CLASSES.c,
      0,
    ].map((priority) => ({ priority, shutdownGracePeriodSeconds: POD_STATUS_UPDATE_MS / 1000 })),
  },
};

/** emitSignalPrepareForShutdown: a client on the node's system bus announces (or cancels) a shutdown. */
const emitPrepareForShutdown = (ctx: ScenarioContext, shuttingDown: boolean) =>
  nodeExec(ctx, prepareForShutdownSignal(shuttingDown));

/**
 * The agent listens for PrepareForShutdown: its match rule is on the bus. The kubelet subscribes
 * after it takes its inhibitor lock, a moment after it reports Ready; a signal emitted before
 * would reach nobody.
 */
const subscribed = async (ctx: ScenarioContext) =>
  (
    await nodeExec(ctx, [
      'dbus-send',
      '--system',
      '--print-reply',
      '--dest=org.freedesktop.DBus',
      '/org/freedesktop/DBus',
      'org.freedesktop.DBus.Debug.Stats.GetAllMatchRules',
    ])
  ).includes("member='PrepareForShutdown'");

/**
 * getGracePeriodOverrideTestPod: a busybox container whose SIGTERM trap waits on, so it lives
 * until its grace period (or the shutdown group's) ends; a system-node-critical pod is also a
 * static pod by its config source annotation, as kubelettypes.IsCriticalPod asks.
 */
function gracePeriodOverrideTestPod(
  ctx: ScenarioContext,
  name: string,
  gracePeriod: number,
  priorityClassName?: string,
): V1Pod {
  const pod = podFor(ctx, name, {
    terminationGracePeriodSeconds: gracePeriod,
    ...(priorityClassName ? { priorityClassName } : {}),
    containers: [
      {
        name,
        image: ctx.images.busybox,
        command: ['sh', '-c'],
        args: [
          `
sleep 9999999 &
PID=$!
_term() {
  echo "Caught SIGTERM signal!"
  wait $PID
}

trap _term SIGTERM
wait $PID
`,
        ],
      },
    ],
  });
  if (priorityClassName === SYSTEM_NODE_CRITICAL)
    pod.metadata!.annotations = { [ConfigSourceAnnotation]: 'file' };
  return pod;
}

/** kubelettypes.IsCriticalPod: a static pod (a config source other than the API) or a critical priority. */
const isCritical = (pod: V1Pod) => {
  const source = pod.metadata?.annotations?.[ConfigSourceAnnotation];
  return (source !== undefined && source !== 'api') || (pod.spec?.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
};

/** isPodShutdown: Failed with the shutdown's reason and message, and its containers not ready. */
const isPodShutdown = (pod: V1Pod) =>
  pod.status?.phase === 'Failed' &&
  pod.status.reason === SHUTDOWN_REASON &&
  pod.status.message === SHUTDOWN_MESSAGE &&
  podCondition(pod, 'ContainersReady') === 'False';

const summary = (pods: V1Pod[]) =>
  pods.map((p) => `${p.metadata?.name}: ${p.status?.phase} ${p.status?.reason ?? ''}`.trim());

/** The namespace's pods bound to the node (upstream's nodeSelector list). */
const podsOnNode = async (ctx: ScenarioContext) =>
  (
    await ctx.core.listNamespacedPod({
      namespace: ctx.namespace,
      fieldSelector: `spec.nodeName=${ctx.nodeName}`,
    })
  ).items;

/** Polls the node's pods until there are `count` and `accept` takes every one. */
const eventuallyPods = (
  ctx: ScenarioContext,
  name: string,
  count: number,
  accept: (pod: V1Pod) => boolean,
  timeoutMs: number,
) =>
  ctx.check.eventually(
    name,
    () => podsOnNode(ctx),
    (pods) => pods.length === count && pods.every(accept),
    {
      timeoutMs,
      intervalMs: POLL_MS,
      describe: summary,
    },
  );

/** CreateBatch: creates the pods, then waits until each runs and is ready. */
async function createBatch(ctx: ScenarioContext, pods: V1Pod[]): Promise<void> {
  for (const pod of pods) await createPod(ctx, pod);
  for (const pod of pods)
    await waitForPod(
      ctx,
      pod.metadata!.name!,
      'is running and ready',
      (p) => isRunning(p) && podCondition(p, 'Ready') === 'True',
      // CreateBatch waits for the pods to run and be ready (f.Timeouts.PodStart).
      POD_START_MS,
    );
}

const waitForNodeReady = (ctx: ScenarioContext, ready: boolean, name: string) =>
  ctx.check.eventually(
    name,
    async () => (await nodeCondition(ctx, 'Ready'))?.status,
    (status) => (status === 'True') === ready,
    { timeoutMs: NODE_STATUS_UPDATE_MS, intervalMs: POLL_MS, expected: ready ? 'True' : 'not True' },
  );

/**
 * One upstream case: the agent gets its context's configuration (once for a context's cases in
 * a row), the BeforeEach waits for the node to be ready, the case runs in a namespace of its own
 * and its AfterEach cancels the shutdown.
 */
function shutdownCase(
  context: ShutdownContext,
  it: string,
  suffix: string,
  body: (ctx: ScenarioContext) => Promise<void>,
): Case {
  return {
    name: `GracefulNodeShutdown ${context.name} ${it}`,
    file: FILE,
    tags: context.tags,
    run: (ctx, shared) =>
      shared.turns.take(async () => {
        if (shared.current !== context) {
          shared.current = undefined;
          await ctx.reconfigureAgent(context.config);
          shared.current = context;
        }
        await waitForNodeReady(ctx, true, 'the node is Ready');
        await ctx.check.eventually(
          'the agent listens for PrepareForShutdown',
          () => subscribed(ctx),
          Boolean,
          {
            timeoutMs: NODE_STATUS_UPDATE_MS,
            intervalMs: 500,
          },
        );
        await inOwnNamespace(ctx, suffix, async (ns) => {
          try {
            await body(ns);
          } finally {
            await emitPrepareForShutdown(ns, false);
          }
        });
      }),
  };
}

const CASES: Case[] = [
  shutdownCase(
    DISRUPTION_CONDITIONS,
    'should add the DisruptionTarget pod failure condition to the evicted pods',
    'disruption',
    async (ctx) => {
      const pods = [gracePeriodOverrideTestPod(ctx, `pod-to-evict-${randomUUID()}`, 5)];
      await createBatch(ctx, pods);
      await emitPrepareForShutdown(ctx, true);
      const down = await eventuallyPods(
        ctx,
        'all pods are shut down',
        pods.length,
        isPodShutdown,
        POD_STATUS_UPDATE_MS + DISRUPTION_GRACE_PERIOD_MS,
      );
      for (const pod of down)
        ctx.check.ok(
          `pod ${pod.metadata?.name} has the DisruptionTarget condition`,
          podCondition(pod, 'DisruptionTarget') !== undefined,
          pod.status?.conditions,
          'a DisruptionTarget condition',
        );
    },
  ),
  shutdownCase(
    GRACEFULLY,
    'should be able to gracefully shutdown pods with various grace periods',
    'grace-periods',
    async (ctx) => {
      const pods = [
        gracePeriodOverrideTestPod(ctx, `period-120-${randomUUID()}`, 120),
        gracePeriodOverrideTestPod(ctx, `period-5-${randomUUID()}`, 5),
        gracePeriodOverrideTestPod(ctx, `period-critical-120-${randomUUID()}`, 120, SYSTEM_NODE_CRITICAL),
        gracePeriodOverrideTestPod(ctx, `period-critical-5-${randomUUID()}`, 5, SYSTEM_NODE_CRITICAL),
      ];
      await createBatch(ctx, pods);
      const listed = await ctx.core.listNamespacedPod({ namespace: ctx.namespace });
      ctx.check.equal('the number of pods', listed.items.length, pods.length);
      // Issue 108594: no pod may ever be Failed and still Ready.
      const w = watchPods(ctx, { resourceVersion: listed.metadata?.resourceVersion });
      try {
        await emitPrepareForShutdown(ctx, true);
        await eventuallyPods(
          ctx,
          'non-critical pods are shut down, critical ones are not',
          pods.length,
          (p) => isCritical(p) !== isPodShutdown(p),
          POD_STATUS_UPDATE_MS,
        );
        await eventuallyPods(
          ctx,
          'all pods are shut down',
          pods.length,
          isPodShutdown,
          POD_STATUS_UPDATE_MS + NON_CRITICAL_PERIOD_MS,
        );
        await eventuallyPods(
          ctx,
          "all pods' PodReadyToStartContainers conditions are False",
          pods.length,
          (p) => podCondition(p, 'PodReadyToStartContainers') === 'False',
          POD_STATUS_UPDATE_MS,
        );
      } finally {
        w.stop();
      }
      const invalid = w.events.filter(
        (e) => e.pod.status?.phase === 'Failed' && podCondition(e.pod, 'Ready') === 'True',
      );
      ctx.check.equal(
        'pod updates that are Failed and Ready (issue 108594)',
        summary(invalid.map((e) => e.pod)),
        [],
      );
    },
  ),
  shutdownCase(GRACEFULLY, 'should be able to handle a cancelled shutdown', 'cancelled', async (ctx) => {
    await emitPrepareForShutdown(ctx, true);
    await waitForNodeReady(ctx, false, 'the node is not Ready while shutting down');
    await emitPrepareForShutdown(ctx, false);
    await waitForNodeReady(ctx, true, 'the node is Ready again once the shutdown is cancelled');
  }),
  shutdownCase(
    BY_PRIORITY,
    'should be able to gracefully shutdown pods with various grace periods',
    'priority',
    async (ctx) => {
      // Upstream's classes, named after the cell's namespace: cells on other nodes create theirs
      // at the same time, and a class is cluster-wide.
      const scheduling = ctx.kubeConfig.makeApiClient(SchedulingV1Api);
      const classes = Object.entries(CUSTOM_CLASSES).map(([letter, value]) => ({
        name: `${ctx.namespace}-custom-class-${letter}`,
        value,
      }));
      for (const { name, value } of classes)
        await scheduling.createPriorityClass({ body: { metadata: { name }, value } });
      try {
        const [a, b, c] = classes.map((k) => k.name);
        const period5 = `period-5-${randomUUID()}`;
        const periodC5 = `period-c-5-${randomUUID()}`;
        const periodB5 = `period-b-5-${randomUUID()}`;
        const periodA5 = `period-a-5-${randomUUID()}`;
        const periodCritical5 = `period-critical-5-${randomUUID()}`;
        const pods = [
          gracePeriodOverrideTestPod(ctx, period5, 5),
          gracePeriodOverrideTestPod(ctx, periodC5, 5, c),
          gracePeriodOverrideTestPod(ctx, periodB5, 5, b),
          gracePeriodOverrideTestPod(ctx, periodA5, 5, a),
          gracePeriodOverrideTestPod(ctx, periodCritical5, 5, SYSTEM_NODE_CRITICAL),
        ];
        // The lowest priority goes first; each step adds the next group up.
        const downSteps = [
          [period5],
          [period5, periodC5],
          [period5, periodC5, periodB5],
          [period5, periodC5, periodB5, periodA5],
          [period5, periodC5, periodB5, periodA5, periodCritical5],
        ];
        await createBatch(ctx, pods);
        await emitPrepareForShutdown(ctx, true);
        for (const step of downSteps)
          await eventuallyPods(
            ctx,
            `pods shut down: ${step.map((n) => n.replace(/-[0-9a-f-]{36}$/, '')).join(', ')}; the others running`,
            pods.length,
            (p) =>
              step.includes(p.metadata?.name ?? '')
                ? p.status?.reason === SHUTDOWN_REASON
                : p.status?.phase === 'Running',
            POD_STATUS_UPDATE_MS,
          );
        const state = join(AGENT_ROOT_DIR, LOCAL_STORAGE_STATE_FILE);
        const found = await ctx.backend.host.exec(['test', '-f', state]);
        ctx.check.ok(`the agent wrote ${state}`, found.exitCode === 0, found.output, 'a file');
      } finally {
        for (const { name } of classes) await scheduling.deletePriorityClass({ name }).catch(() => undefined);
      }
    },
  ),
];

export const nodeShutdown: CasesScenario<Shared> = {
  name: 'node-shutdown',
  estimateMs: 180_000,
  isolation: 'node',
  description:
    "node_shutdown_linux_test.go: PrepareForShutdown on the node's system bus (elogind) makes the agent kill its pods in its grace periods, critical pods last or by priority groups, with reason Terminated and DisruptionTarget; the node is not Ready until the shutdown is cancelled",
  needs: ['real-containers', 'logind'],
  timeoutMs: 12 * 60_000,
  setup: async () => ({ turns: turns() }),
  async teardown(ctx) {
    await ctx.reconfigureAgent({});
  },
  cases: CASES,
};
