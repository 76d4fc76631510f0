import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import {
  PatchStrategy,
  setHeaderOptions,
  type V1EphemeralContainer,
  type V1Pod,
} from '@kubernetes/client-node';
import { waitForOutput } from '../support/kubectl.js';
import {
  containerStatus,
  createPod,
  kubectlExec,
  POD_START_MS,
  podFor,
  podLog,
  podSummary,
  readPod,
  waitForPod,
  waitForRunning,
} from '../support/pods.js';

// Upstream's ephemeral_containers.go (test/e2e/common/node), one named case per It with upstream's
// pods and expectations, plus kubectl debug --target (1.33 interactive, 1.27 not) checking that
// the debugger sees the target's processes. The cases run side by side, each on a pod of its own.
const FILE = 'test/e2e/common/node/ephemeral_containers.go';

type Case = ScenarioCase<void>;

const CONFORMANCE = ['NodeConformance', 'Conformance'];
/** AddEphemeralContainerSync's timeout in upstream's cases (time.Minute). */
const EPHEMERAL_START_MS = 60_000;

/** Upstream's target pod: busybox sleeping 10000 s in test-container-1. */
async function createTargetPod(ctx: ScenarioContext, name: string): Promise<V1Pod> {
  await createPod(
    ctx,
    podFor(ctx, name, {
      containers: [
        {
          name: 'test-container-1',
          image: ctx.images.busybox,
          imagePullPolicy: 'IfNotPresent',
          command: ['/bin/sleep'],
          args: ['10000'],
        },
      ],
    }),
  );
  // podClient.CreateSync: created and running.
  return waitForRunning(ctx, name, POD_START_MS);
}

/** e2epod.WaitForContainerRunning over the pod's containers, ephemeral ones included. */
const waitForContainerRunning = (ctx: ScenarioContext, pod: string, container: string) =>
  waitForPod(
    ctx,
    pod,
    `ephemeral container ${container} running`,
    (p) => !!containerStatus(p, container)?.state?.running,
    EPHEMERAL_START_MS,
  );

/** podClient.AddEphemeralContainerSync: a strategic merge patch of pods/ephemeralcontainers, then running. */
async function addEphemeralContainerSync(ctx: ScenarioContext, pod: string, ec: V1EphemeralContainer) {
  await ctx.core.patchNamespacedPodEphemeralcontainers(
    { name: pod, namespace: ctx.namespace, body: { spec: { ephemeralContainers: [ec] } } },
    setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
  );
  await waitForContainerRunning(ctx, pod, ec.name);
}

/** The debugger of both upstream cases: busybox printing "polo" every 2 s, with stdin and a TTY. */
const poloDebugger = (ctx: ScenarioContext): V1EphemeralContainer => ({
  name: 'debugger',
  image: ctx.images.busybox,
  command: ['/bin/sh', '-c', 'while true; do echo polo; sleep 2; done'],
  stdin: true,
  tty: true,
});

/**
 * The steps both upstream cases share: target pod at generation 1, the debugger added and
 * running, generation 2, `echo marco` answered by exec in it, "polo" in its log.
 */
async function startDebugger(ctx: ScenarioContext, name: string): Promise<V1Pod> {
  const pod = await createTargetPod(ctx, name);
  ctx.check.equal(`pod ${name}: generation at creation`, pod.metadata?.generation, 1);
  await addEphemeralContainerSync(ctx, name, poloDebugger(ctx));
  const after = await readPod(ctx, name);
  ctx.check.equal(
    `pod ${name}: generation after adding the ephemeral container`,
    after.metadata?.generation,
    2,
  );
  const r = await kubectlExec(ctx, name, 'debugger', ['/bin/echo', 'marco']);
  ctx.check.ok(
    `pod ${name}: exec in the ephemeral container answers marco`,
    r.stdout.includes('marco'),
    r,
    'marco',
  );
  // Upstream reads the log once; the first "polo" is printed at start, so it is there by now.
  const log = await podLog(ctx, name, 'debugger');
  ctx.check.ok(`pod ${name}: the ephemeral container's log has polo`, log.includes('polo'), log, 'polo');
  return after;
}

/** GET pods/ephemeralcontainers (upstream's dynamic client): the pod, and its ephemeral containers. */
async function ephemeralContainerCount(ctx: ScenarioContext, name: string): Promise<number> {
  const p = await ctx.core.readNamespacedPodEphemeralcontainers({ name, namespace: ctx.namespace });
  return p.spec?.ephemeralContainers?.length ?? 0;
}

const UPSTREAM_CASES: Case[] = [
  {
    file: FILE,
    name: 'Ephemeral Containers will start an ephemeral container in an existing pod',
    tags: CONFORMANCE,
    async run(ctx) {
      await startDebugger(ctx, 'ephemeral-containers-target-pod');
    },
  },
  {
    file: FILE,
    name: 'Ephemeral Containers should update the ephemeral containers in an existing pod',
    tags: CONFORMANCE,
    async run(ctx) {
      // Upstream names both cases' pods alike, each in a namespace of its own; here they share one.
      const name = 'ephemeral-containers-target-pod-update';
      await startDebugger(ctx, name);
      ctx.check.equal(`pod ${name}: ephemeral containers`, await ephemeralContainerCount(ctx, name), 1);
      // retry.RetryOnConflict around GET + PUT pods/ephemeralcontainers with one more appended.
      for (let attempt = 0; ; attempt++) {
        const current = await readPod(ctx, name);
        current.spec!.ephemeralContainers = [
          ...(current.spec?.ephemeralContainers ?? []),
          {
            name: 'debugger2',
            image: ctx.images.entrypoint,
            imagePullPolicy: 'IfNotPresent',
            terminationMessagePolicy: 'File',
          },
        ];
        try {
          await ctx.core.replaceNamespacedPodEphemeralcontainers({
            name,
            namespace: ctx.namespace,
            body: current,
          });
          break;
        } catch (err) {
          if ((err as { code?: number }).code !== 409 || attempt >= 4) throw err;
        }
      }
      ctx.check.equal(`pod ${name}: ephemeral containers`, await ephemeralContainerCount(ctx, name), 2);
    },
  },
];

/** The target's process in `ps` output: only a debugger in its PID namespace sees it. */
const TARGET_PROCESS = /\bsleep 10000\b/;

const DEBUG_CASES: Case[] = [
  {
    name: 'kubectl 1.33 debug -i --target runs a shell that sees the target container processes',
    async run(ctx) {
      const name = 'debug-interactive';
      await createTargetPod(ctx, name);
      // containerd detaches an attach's output once its stdin ends (stdinOnce unset, as kubectl
      // debug leaves it): stdin stays open until the answer is in.
      const debug = ctx.kubectlStart([
        '-n',
        ctx.namespace,
        'debug',
        '-i',
        name,
        `--image=${ctx.images.busybox}`,
        '--target=test-container-1',
        '-c',
        'shell',
        '--',
        'sh',
      ]);
      debug.write('ps\n');
      await waitForOutput(ctx, "the debugger's ps lists the target's sleep 10000", debug, TARGET_PROCESS);
      debug.write('exit\n', true);
      const r = await debug.exited;
      ctx.check.ok('kubectl debug -i exits 0 once the shell exits', r.code === 0, r, 'exit 0');
      const p = await readPod(ctx, name);
      ctx.check.equal(
        'the ephemeral container targets test-container-1',
        p.spec?.ephemeralContainers?.[0]?.targetContainerName,
        'test-container-1',
      );
    },
  },
  {
    name: 'kubectl 1.27 debug --target starts a debugger whose log shows the target container processes',
    async run(ctx) {
      const name = 'debug-batch';
      await createTargetPod(ctx, name);
      const r = await ctx.kubectl(
        [
          '-n',
          ctx.namespace,
          'debug',
          name,
          `--image=${ctx.images.busybox}`,
          '--target=test-container-1',
          '-c',
          'ps',
          '--',
          'ps',
        ],
        { version: '1.27' },
      );
      ctx.check.ok('kubectl debug exits 0', r.code === 0, r, 'exit 0');
      // ps exits at once: the container ends terminated with exit code 0, and is never restarted.
      const done = await waitForPod(
        ctx,
        name,
        'ephemeral container ps terminated',
        (p) => !!containerStatus(p, 'ps')?.state?.terminated,
        EPHEMERAL_START_MS,
      );
      const st = containerStatus(done, 'ps');
      ctx.check.equal('ps exit code', st?.state?.terminated?.exitCode, 0);
      ctx.check.equal('ps restart count', st?.restartCount, 0);
      ctx.check.equal('the pod is still Running', podSummary(done).phase, 'Running');
      const log = await podLog(ctx, name, 'ps');
      ctx.check.ok(
        "the debugger's ps lists the target's sleep 10000",
        TARGET_PROCESS.test(log),
        log,
        'sleep 10000',
      );
    },
  },
];

export const ephemeralContainers: CasesScenario<void> = {
  name: 'ephemeral-containers',
  estimateMs: 30_000,
  isolation: 'namespace',
  description:
    'ephemeral_containers.go: an ephemeral container added to a running pod (strategic merge patch of pods/ephemeralcontainers) runs, answers exec and logs, bumps the generation; a second added by PUT; plus kubectl 1.33 debug -i and 1.27 debug with --target, whose ps sees the target container processes (CRI PID namespace TARGET)',
  needs: ['real-containers'],
  // Room past upstream's 5 min target pod start (CreateSync) for the minute the debugger gets.
  timeoutMs: 480_000,
  cases: [...UPSTREAM_CASES, ...DEBUG_CASES],
};
