import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1Container, V1Lifecycle, V1Pod } from '@kubernetes/client-node';
import { limiter } from '../support/concurrent.js';
import {
  containerStatus,
  createPod,
  deletePodWithWait,
  isRunning,
  POD_DELETE_MS,
  POD_START_MS,
  podFor,
  podLog,
  readPod,
  waitForPod,
} from '../support/pods.js';

// Upstream's lifecycle_hook.go (test/e2e/common/node) as named cases: postStart and preStop exec
// and httpGet (HTTP and HTTPS) hooks on a container and on a sidecar (restartable init container), each reaching a
// handler pod whose netexec logs the request, and the preStop sleep action's timing.
const FILE = 'test/e2e/common/node/lifecycle_hook.go';
const CONFORMANCE = ['NodeConformance', 'Conformance'];
const NODE_CONFORMANCE = ['NodeConformance'];

/** podCheckInterval, postStartWaitTimeout and preStopWaitTimeout. */
const POLL_MS = 1_000;
const POST_START_WAIT_MS = 2 * 60_000;
const PRE_STOP_WAIT_MS = 30_000;
/** The API's default terminationGracePeriodSeconds, which upstream's hook pods keep. */
const DEFAULT_GRACE_S = 30;

type Limit = <T>(task: () => Promise<T>) => Promise<T>;
type Case = ScenarioCase<Limit>;

/** A container of the netexec image (upstream's agnhost), netexec's args or the image's pause. */
const agnhost = (ctx: ScenarioContext, name: string, args?: string[]): V1Container => ({
  name,
  image: ctx.images.netexec,
  imagePullPolicy: 'IfNotPresent',
  ...(args ? { args } : {}),
});

/** podClient.CreateSync: created, then Running and Ready. */
async function createSync(ctx: ScenarioContext, pod: V1Pod): Promise<V1Pod> {
  await createPod(ctx, pod);
  return waitForPod(
    ctx,
    pod.metadata!.name!,
    'is Running and Ready',
    (p) => isRunning(p) && !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
    POD_START_MS,
  );
}

// --- hooks reaching a handler pod ---------------------------------------------------------------

const HANDLER_CONTAINER = 'container-handle-http-request';

/** netexecConnect: a netexec /dial path that makes netexec request `req` of target:8080. */
const netexecConnect = (target: string, req: string) =>
  `/dial?host=${target}&port=8080&request=${encodeURIComponent(req.replace(/^\/+/, ''))}`;

type HookKind = 'exec' | 'http' | 'https';
type HookPhase = 'poststart' | 'prestop';

/** The case's lifecycle: exec curls the handler pod, httpGet asks the redirect sidecar to. */
function lifecycleFor(kind: HookKind, phase: HookPhase, targetIP: string): V1Lifecycle {
  const url = targetIP.includes(':') ? `[${targetIP}]` : targetIP;
  const path = netexecConnect(targetIP, `/echo?msg=${phase}`);
  const handler =
    kind === 'exec'
      ? { exec: { command: ['sh', '-c', `curl http://${url}:8080/echo?msg=${phase}`] } }
      : { httpGet: { ...(kind === 'https' ? { scheme: 'HTTPS' } : {}), path, port: 8080 } };
  return phase === 'poststart' ? { postStart: handler } : { preStop: handler };
}

/**
 * The hook case of either describe: a handler pod of its own (one per case, as upstream's
 * BeforeEach makes one per namespace, so no other case's request can satisfy this one), the pod
 * with the hook plus the container-redirect sidecar, postStart seen in the handler's log after
 * the pod runs, preStop seen after it is deleted with a 15 s grace period.
 */
function hookCase(sidecar: boolean, kind: HookKind, phase: HookPhase, n: number): Case {
  const describe = sidecar ? 'Restartable Init Container Lifecycle Hook' : 'Container Lifecycle Hook';
  const it = `should execute ${phase} ${kind} hook properly`;
  return {
    file: FILE,
    name: `${describe} when create a pod with lifecycle hook ${it}`,
    // The sidecar describe is NodeConformance as a whole; its Its and the https ones are not ConformanceIt.
    tags: sidecar || kind === 'https' ? NODE_CONFORMANCE : CONFORMANCE,
    run: (ctx, limit) =>
      limit(async () => {
        const handlerName = `pod-handle-http-request-${n}`;
        const handler = await createSync(
          ctx,
          podFor(ctx, handlerName, {
            terminationGracePeriodSeconds: DEFAULT_GRACE_S,
            containers: [agnhost(ctx, HANDLER_CONTAINER, ['netexec'])],
          }),
        );
        const targetIP = handler.status?.podIP ?? '';
        const name = `pod-with-${phase}-${kind}-hook`;
        // exec hooks run curl in the agnhost image; httpGet hooks sit on pause (getPodWithHook).
        const image = kind === 'exec' ? ctx.images.netexec : ctx.images.pause;
        const hooked: V1Container = {
          name,
          image,
          imagePullPolicy: 'IfNotPresent',
          lifecycle: lifecycleFor(kind, phase, targetIP),
        };
        // The sidecar serves the hook's scheme: HTTPS with agnhost's localhost pair.
        const tls =
          kind === 'https'
            ? ['--tls-cert-file', '/localhost.crt', '--tls-private-key-file', '/localhost.key']
            : [];
        const redirect: V1Container = {
          ...agnhost(ctx, 'container-redirect', ['netexec', '--udp-port', '-1', ...tls]),
          restartPolicy: 'Always',
          startupProbe: {
            httpGet: { scheme: kind === 'https' ? 'HTTPS' : 'HTTP', path: '/echo?msg=startup', port: 8080 },
          },
        };
        // Numbered: the two describes' pods share upstream's names.
        const pod = podFor(ctx, `${name}-${n}`, {
          terminationGracePeriodSeconds: DEFAULT_GRACE_S,
          ...(sidecar
            ? {
                // getSidecarPodWithHook: the hook on a sidecar, pause as the main container.
                initContainers: [redirect, { ...hooked, restartPolicy: 'Always' }],
                containers: [{ name: 'main', image: ctx.images.pause, imagePullPolicy: 'IfNotPresent' }],
              }
            : { initContainers: [redirect], containers: [hooked] }),
        });
        await createSync(ctx, pod);
        const seen = (msg: HookPhase, timeoutMs: number) =>
          ctx.check.eventually(
            `handler ${handlerName} logged GET /echo?msg=${msg}`,
            () => podLog(ctx, handlerName, HANDLER_CONTAINER),
            (log) => log.includes(`GET /echo?msg=${msg}`),
            { timeoutMs, intervalMs: POLL_MS, expected: `GET /echo?msg=${msg}` },
          );
        if (phase === 'poststart') await seen('poststart', POST_START_WAIT_MS);
        await deletePodWithWait(ctx, pod.metadata!.name!, { graceSeconds: 15, timeoutMs: POD_DELETE_MS });
        if (phase === 'prestop') await seen('prestop', PRE_STOP_WAIT_MS);
      }),
  };
}

const HOOK_KINDS = ['exec', 'http', 'https'] as const;
const HOOK_CASES: Case[] = [false, true].flatMap((sidecar, s) =>
  HOOK_KINDS.flatMap((kind, k) =>
    (['poststart', 'prestop'] as const).map((phase, i) =>
      hookCase(sidecar, kind, phase, (s * HOOK_KINDS.length + k) * 2 + i),
    ),
  ),
);

// --- the sleep action -------------------------------------------------------------------------

const SLEEP_DESCRIBE = 'Lifecycle Sleep Hook when create a pod with lifecycle hook using sleep action';
const FINALIZER = 'test/finalizer';

/** validDuration: low <= d <= high, in seconds. */
const validDuration = (ms: number, low: number, high: number) => ms >= low * 1000 && ms <= high * 1000;

/** e2epod.WaitForContainerTerminated: the container's state is terminated. */
const waitTerminated = (ctx: ScenarioContext, pod: string, container: string, timeoutMs: number) =>
  waitForPod(
    ctx,
    pod,
    `container ${container} terminated`,
    (p) => !!containerStatus(p, container)?.state?.terminated,
    timeoutMs,
  );

async function removeFinalizer(ctx: ScenarioContext, name: string) {
  const p = await readPod(ctx, name);
  const finalizers = (p.metadata?.finalizers ?? []).filter((f) => f !== FINALIZER);
  await ctx.core.patchNamespacedPod({
    name,
    namespace: ctx.namespace,
    body: [{ op: 'replace', path: '/metadata/finalizers', value: finalizers }],
  });
}

/**
 * The sleep cases on a deleted pod a finalizer keeps: the container's finishedAt less the
 * deletionTimestamp (deletion + grace) plus the grace period is how long the kill waited.
 */
function sleepOnDeleteCase(
  it: string,
  podName: string,
  deleteGrace: number | undefined,
  low: number,
  high: number,
): Case {
  const sleepSeconds = 50;
  const specGrace = 100;
  return {
    file: FILE,
    name: `${SLEEP_DESCRIBE} ${it}`,
    tags: NODE_CONFORMANCE,
    run: async (ctx) => {
      const pod = podFor(ctx, podName, {
        terminationGracePeriodSeconds: specGrace,
        containers: [
          {
            name: podName,
            image: ctx.images.pause,
            imagePullPolicy: 'IfNotPresent',
            lifecycle: { preStop: { sleep: { seconds: sleepSeconds } } },
          },
        ],
      });
      pod.metadata!.finalizers = [FINALIZER];
      await createSync(ctx, pod);
      try {
        await ctx.core.deleteNamespacedPod({
          name: podName,
          namespace: ctx.namespace,
          ...(deleteGrace !== undefined ? { gracePeriodSeconds: deleteGrace } : {}),
        });
        const grace = deleteGrace ?? specGrace;
        const deletionTS = new Date((await readPod(ctx, podName)).metadata?.deletionTimestamp ?? 0).getTime();
        const p = await waitTerminated(ctx, podName, podName, sleepSeconds * 2 * 1000);
        const finishAt = new Date(containerStatus(p, podName)?.state?.terminated?.finishedAt ?? 0).getTime();
        const slept = finishAt - deletionTS + grace * 1000;
        ctx.check.ok(
          `the kill waited between ${low} s and ${high} s`,
          validDuration(slept, low, high),
          {
            sleptMs: slept,
            finishAt: new Date(finishAt).toISOString(),
            deletionTS: new Date(deletionTS).toISOString(),
          },
          `${low * 1000}..${high * 1000} ms`,
        );
      } finally {
        await removeFinalizer(ctx, podName);
      }
    },
  };
}

const SLEEP_CASES: Case[] = [
  // The preStop sleep runs in full: at least its 50 s, within the 100 s grace period.
  sleepOnDeleteCase(
    'valid prestop hook using sleep action',
    'pod-with-prestop-sleep-hook',
    undefined,
    50,
    100,
  ),
  // Deleted with 30 s, less than the sleep: the kill comes after the grace period, before the sleep ends.
  sleepOnDeleteCase(
    'reduce GracePeriodSeconds during runtime',
    'pod-with-prestop-sleep-hook-reduced',
    30,
    30,
    50,
  ),
  {
    file: FILE,
    name: `${SLEEP_DESCRIBE} ignore terminated container`,
    tags: NODE_CONFORMANCE,
    async run(ctx) {
      const sleepSeconds = 10;
      const gracePeriod = 30;
      const name = 'pod-with-prestop-sleep-hook-exits';
      await createPod(
        ctx,
        podFor(ctx, name, {
          restartPolicy: 'Never',
          terminationGracePeriodSeconds: gracePeriod,
          containers: [
            {
              name,
              image: ctx.images.busybox,
              imagePullPolicy: 'IfNotPresent',
              command: ['/bin/sh'],
              args: ['-c', 'sleep 3'],
              lifecycle: { preStop: { sleep: { seconds: sleepSeconds } } },
            },
          ],
        }),
      );
      const p = await waitTerminated(ctx, name, name, gracePeriod * 1000);
      const t = containerStatus(p, name)?.state?.terminated;
      const cost = new Date(t?.finishedAt ?? 0).getTime() - new Date(t?.startedAt ?? 0).getTime();
      // A container that exits by itself is not held by its preStop sleep.
      ctx.check.ok(
        `the container ran less than the ${sleepSeconds} s sleep`,
        validDuration(cost, 0, sleepSeconds),
        t,
        `0..${sleepSeconds * 1000} ms`,
      );
      await deletePodWithWait(ctx, name, { timeoutMs: POD_DELETE_MS });
    },
  },
  {
    file: FILE,
    name: 'Lifecycle sleep action zero value when create a pod with lifecycle hook using sleep action with a duration of zero seconds prestop hook using sleep action with zero duration',
    tags: NODE_CONFORMANCE,
    async run(ctx) {
      const name = 'pod-with-prestop-sleep-hook-zero-duration';
      await createSync(
        ctx,
        podFor(ctx, name, {
          terminationGracePeriodSeconds: DEFAULT_GRACE_S,
          containers: [
            {
              name,
              image: ctx.images.pause,
              imagePullPolicy: 'IfNotPresent',
              lifecycle: { preStop: { sleep: { seconds: 0 } } },
            },
          ],
        }),
      );
      const start = Date.now();
      await deletePodWithWait(ctx, name, { timeoutMs: POD_DELETE_MS });
      const cost = Date.now() - start;
      ctx.check.ok(
        'the deletion took less than the 30 s grace period',
        validDuration(cost, 0, 30),
        cost,
        '0..30000 ms',
      );
    },
  },
];

export const lifecycleHook: CasesScenario<Limit> = {
  name: 'lifecycle-hook',
  estimateMs: 70_000,
  isolation: 'namespace',
  description:
    'lifecycle_hook.go cases: postStart/preStop exec, httpGet and HTTPS httpGet hooks on a container and on a sidecar reach a netexec handler pod, and the preStop sleep action holds the kill for its seconds, within the grace period, not for a container that exited, and not at all for zero',
  needs: ['real-containers'],
  // Room for a hook case's two pod starts (PodStart, 5 min each), its hook wait and deletion.
  timeoutMs: 600_000,
  // Each hook case runs two pods of three containers; the sleep cases run outside the gate.
  setup: async () => limiter(6),
  cases: [...HOOK_CASES, ...SLEEP_CASES],
};
