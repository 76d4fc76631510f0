import { randomBytes } from 'node:crypto';
import type { CasesScenario, ScenarioCase, ScenarioContext } from '@kh/harness';
import type { V1PodSpec } from '@kubernetes/client-node';
import {
  deleteStaticPod,
  eventuallyMirror,
  MIRROR_TIMEOUT_MS,
  mirrorPodDisappears,
  mirrorPodName,
  mirrorPodProblem,
  readMirrorPod,
  recreateSimpleStaticPod,
  writeSimpleStaticPod,
  writeStaticPod,
} from '../support/static-pods.js';

// Upstream's mirror_pod_test.go (test/e2e_node): static pods written into the agent's
// staticPodPath and the mirror pods the agent keeps for them in the API, one named case per It,
// each in a namespace of its own as Ginkgo gives it, the cases side by side.
const FILE = 'test/e2e_node/mirror_pod_test.go';
const NODE_CONFORMANCE = ['NodeConformance'];

type Case = ScenarioCase<void>;

interface StaticPod {
  ns: string;
  name: string;
  mirror: string;
}

/** upstream's staticPodName: "static-pod-" and a UUID (a shorter random suffix here). */
const staticPodName = () => `static-pod-${randomBytes(4).toString('hex')}`;

/**
 * The It's namespace and static pod, `body`, then upstream's AfterEach: the manifest is deleted
 * and the mirror pod must disappear. With `before`, upstream's BeforeEach: a static pod of the
 * nginx role (httpd here: a server that keeps running) whose mirror pod is running.
 */
async function withStaticPod(
  ctx: ScenarioContext,
  suffix: string,
  before: boolean,
  body: (s: StaticPod) => Promise<void>,
): Promise<void> {
  const ns = await ctx.createNamespace(suffix);
  const name = staticPodName();
  const s = { ns, name, mirror: mirrorPodName(ctx, name) };
  try {
    if (before) {
      await writeSimpleStaticPod(ctx, name, ns, ctx.images.httpd);
      await eventuallyMirror(ctx, 'the mirror pod is running', s.mirror, ns, { running: true });
    }
    await body(s);
  } finally {
    await deleteStaticPod(ctx, name, ns);
  }
  await mirrorPodDisappears(ctx, s.mirror, ns);
}

const uidOf = async (ctx: ScenarioContext, s: StaticPod) =>
  (await readMirrorPod(ctx, s.mirror, s.ns)).metadata?.uid ?? '';

/** "should be recreated when mirror pod gracefully/forcibly deleted". */
function recreatedWhenDeleted(how: 'gracefully' | 'forcibly', gracePeriodSeconds: number): Case {
  return {
    name: `MirrorPod when create a mirror pod should be recreated when mirror pod ${how} deleted`,
    file: FILE,
    tags: NODE_CONFORMANCE,
    run: (ctx) =>
      withStaticPod(ctx, `${how}-deleted`, true, async (s) => {
        const uid = await uidOf(ctx, s);
        await ctx.core.deleteNamespacedPod({ name: s.mirror, namespace: s.ns, gracePeriodSeconds });
        await eventuallyMirror(ctx, 'the mirror pod is recreated and running', s.mirror, s.ns, {
          notUid: uid,
          running: true,
        });
      }),
  };
}

/**
 * "mirror pod: update ...": the manifest changes, the mirror pod is replaced (a new UID), and as
 * the kubelet never updates a mirror pod's spec it stays at generation 1 with no observedGeneration.
 */
function generationStaysOne(what: string, suffix: string, spec: (ctx: ScenarioContext) => V1PodSpec): Case {
  return {
    name: `MirrorPod (Pod Generation) mirror pod updates mirror pod: update ${what}`,
    file: FILE,
    tags: NODE_CONFORMANCE,
    run: (ctx) =>
      withStaticPod(ctx, suffix, true, async (s) => {
        const uid = await uidOf(ctx, s);
        await writeStaticPod(ctx, s.name, s.ns, spec(ctx));
        await eventuallyMirror(ctx, 'the mirror pod is recreated', s.mirror, s.ns, { notUid: uid });
        const pod = await readMirrorPod(ctx, s.mirror, s.ns);
        ctx.check.equal('mirror pod generation remains at 1', pod.metadata?.generation, 1);
        ctx.check.equal('mirror pod observedGeneration is empty', pod.status?.observedGeneration ?? 0, 0);
      }),
  };
}

/** How long upstream watches the recreated pod stay running (gomega.Consistently, every 4 s). */
const STAYS_RUNNING_MS = 30_000;

const CASES: Case[] = [
  {
    name: 'MirrorPod when create a mirror pod should be updated when static pod updated',
    file: FILE,
    tags: NODE_CONFORMANCE,
    run: (ctx) =>
      withStaticPod(ctx, 'updated', true, async (s) => {
        const uid = await uidOf(ctx, s);
        await writeSimpleStaticPod(ctx, s.name, s.ns, ctx.images.pause);
        await eventuallyMirror(ctx, 'the mirror pod is recreated and running', s.mirror, s.ns, {
          notUid: uid,
          running: true,
        });
        const pod = await readMirrorPod(ctx, s.mirror, s.ns);
        ctx.check.equal(
          'the mirror pod has the updated image',
          pod.spec?.containers.map((c) => c.image),
          [ctx.images.pause],
        );
      }),
  },
  recreatedWhenDeleted('gracefully', 30),
  recreatedWhenDeleted('forcibly', 0),
  {
    name: 'MirrorPod when create a mirror pod without changes should successfully recreate when file is removed and recreated',
    file: FILE,
    tags: NODE_CONFORMANCE,
    run: (ctx) =>
      withStaticPod(ctx, 'file-recreated', false, async (s) => {
        await writeSimpleStaticPod(ctx, s.name, s.ns, ctx.images.httpd);
        await eventuallyMirror(ctx, 'the mirror pod is running', s.mirror, s.ns, { running: true });
        await recreateSimpleStaticPod(ctx, s.name, s.ns, ctx.images.httpd);
        await eventuallyMirror(ctx, 'the mirror pod runs again with restart count 1', s.mirror, s.ns, {
          restartCount: 1,
        });
        const deadline = performance.now() + STAYS_RUNNING_MS;
        let problem: string | undefined;
        while (performance.now() < deadline && problem === undefined) {
          problem = await mirrorPodProblem(ctx, s.mirror, s.ns, { running: true });
          if (problem === undefined) await ctx.sleep(4_000);
        }
        ctx.check.ok('the mirror pod stays running for 30s', problem === undefined, problem);
      }),
  },
  generationStaysOne('activeDeadlineSeconds', 'gen-deadline', (ctx) => ({
    containers: [{ name: 'test', image: ctx.images.pause }],
    restartPolicy: 'Always',
    activeDeadlineSeconds: 3000,
  })),
  generationStaysOne('container image', 'gen-image', (ctx) => ({
    containers: [{ name: 'test', image: ctx.images.pause }],
    restartPolicy: 'Always',
  })),
  generationStaysOne('initContainer image', 'gen-init', (ctx) => ({
    initContainers: [{ name: 'init-test', image: ctx.images.pause }],
    containers: [{ name: 'test', image: ctx.images.pause }],
    restartPolicy: 'Always',
  })),
];

export const mirrorPod: CasesScenario<void> = {
  name: 'mirror-pod',
  estimateMs: 60_000,
  // Its static pods live in its own namespaces; the manifests it writes are its own files.
  isolation: 'namespace',
  description:
    'mirror_pod_test.go: static pods from manifests in staticPodPath get mirror pods (hash, source and Node owner) that are recreated when deleted (gracefully or forcibly), replaced when the manifest changes (generation stays 1), removed with the manifest, and a removed and re-added manifest runs again with restart count 1',
  needs: ['real-containers'],
  timeoutMs: 3 * MIRROR_TIMEOUT_MS,
  cases: CASES,
};
