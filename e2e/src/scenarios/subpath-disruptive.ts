import { randomBytes } from 'node:crypto';
import type { Scenario, ScenarioContext } from '@kh/harness';
import type { V1Pod } from '@kubernetes/client-node';
import { AGENT_ROOT_DIR } from '../support/disk.js';
import { nodeCondition } from '../support/node.js';
import {
  createPod,
  execShellInContainer,
  INFINITE_SLEEP,
  POD_DELETE_MS,
  POD_START_MS,
  readPod,
  waitForRunning,
} from '../support/pods.js';
import { pattern, sleepingSubpathPod, volumeSource } from './subpath.js';

/** storageutils.NodeStateTimeout: how long KubeletCommand waits for the node to turn (not) Ready. */
const NODE_STATE_MS = 60_000;
/** What upstream waits after a force deletion: nothing tells when the volumes are torn down. */
const FORCE_DELETE_SETTLE_MS = 30_000;
/** CheckWriteToPath's 64 bytes. */
const WRITE_BYTES = 64;

/** A command's output on the node, whatever its exit code (grep's 1 is an answer here). */
async function onNode(ctx: ScenarioContext, script: string): Promise<{ code: number; out: string }> {
  const r = await ctx.backend.host.exec(['sh', '-c', script]);
  return { code: r.exitCode, out: r.output.trim() };
}

/** FindVolumeGlobalMountPoints: mount points under the kubelet's plugins directory. */
const globalMountPoints = async (ctx: ScenarioContext) =>
  (await onNode(ctx, `grep -o ' ${AGENT_ROOT_DIR}/plugins/[^ ]*' /proc/self/mountinfo | sort || true`)).out;

/** The pod's emptyDir volume on the node, where the agent sets it up. */
const emptyDirPath = (uid: string) =>
  `${AGENT_ROOT_DIR}/pods/${uid}/volumes/kubernetes.io~empty-dir/test-volume`;

interface Mounted {
  pod: V1Pod;
  force: boolean;
}

/**
 * The first half of TestVolumeUnmountsFromDeletedPodWithForceOption (checkSubpath): the pod's
 * volume and its sub-path mount are on the node, and the pod writes into the volume.
 */
async function expectMounted(ctx: ScenarioContext, pod: V1Pod): Promise<void> {
  const { name, uid } = pod.metadata as { name: string; uid: string };
  // Upstream greps `mount` for the pod's uid outside volume-subpaths: on its nodes that finds the
  // service account token's tmpfs, which pods here do not get. The emptyDir is what the test mounts.
  const volume = await onNode(ctx, `test -d ${emptyDirPath(uid)}`);
  ctx.check.ok(
    `pod ${name}: its emptyDir volume is set up on the node`,
    volume.code === 0,
    volume.out,
    'exit 0',
  );
  const subpath = await onNode(ctx, `cat /proc/self/mountinfo | grep ${uid} | grep volume-subpaths`);
  ctx.check.ok(`pod ${name}: its volume subpath mount is found`, subpath.code === 0, subpath.out, 'exit 0');
  const encoded = randomBytes(WRITE_BYTES).toString('base64');
  await execShellInContainer(ctx, name, 'test-container-subpath', `echo ${encoded} | base64 -d | sha256sum`);
  await execShellInContainer(
    ctx,
    name,
    'test-container-subpath',
    `echo ${encoded} | base64 -d | dd of=/test-volume/file1.txt bs=${WRITE_BYTES} count=1`,
  );
}

/** The second half: the pod is gone from the API, and nothing of its volume is left mounted. */
async function expectUnmounted(ctx: ScenarioContext, { pod, force }: Mounted): Promise<void> {
  const { name, uid } = pod.metadata as { name: string; uid: string };
  await ctx.check.eventually(
    `pod ${name} not found after the agent started again`,
    () =>
      readPod(ctx, name).then(
        () => 'present',
        () => 'gone',
      ),
    (s) => s === 'gone',
    { timeoutMs: POD_DELETE_MS, intervalMs: 2_000, expected: 'gone' },
  );
  if (force) await ctx.sleep(FORCE_DELETE_SETTLE_MS);
  const mount = await onNode(ctx, `mount | grep ${uid} | grep -v volume-subpaths`);
  ctx.check.equal(`pod ${name}: no volume mount found`, mount.out, '');
  const volume = await onNode(ctx, `test -e ${emptyDirPath(uid)}`);
  ctx.check.ok(`pod ${name}: its emptyDir volume is torn down`, volume.code !== 0, volume.out, 'absent');
  const subpath = await onNode(ctx, `cat /proc/self/mountinfo | grep ${uid} | grep volume-subpaths`);
  ctx.check.equal(`pod ${name}: no volume subpath mount found`, subpath.out, '');
}

const CASES = {
  graceful: 'should unmount if pod is gracefully deleted while kubelet is down',
  force: 'should unmount if pod is force deleted while kubelet is down',
} as const;

/**
 * Mirrors the [Disruptive] cases of test/e2e/storage/testsuites/subpath.go for the emptydir driver
 * (testSubpathReconstruction; upstream skips them for hostPath, #61446). A pod with a sub-path
 * mount runs; the agent stops and the node turns NotReady; the pod is deleted, gracefully or by
 * force; the agent starts again. The pod must go, and its volume and sub-path mounts with it,
 * whether the agent finds the pod terminating or only its leftovers. Both cases share one stop of
 * the agent, each with its own pod.
 */
export const subpathDisruptive: Scenario = {
  name: 'subpath-disruptive',
  estimateMs: 150_000,
  isolation: 'node',
  description:
    'subPath pods deleted (gracefully and by force) while the agent is down: once it is back, the pods go and no volume or sub-path mount of theirs is left on the node',
  needs: ['real-containers'],
  timeoutMs: 480_000,
  upstream: Object.values(CASES).map((c) => ({
    file: 'test/e2e/storage/testsuites/subpath.go',
    case: `${pattern('emptydir')} ${c}`,
  })),
  async run(ctx) {
    const globalBefore = await globalMountPoints(ctx);
    const pods: Mounted[] = [];
    for (const force of [false, true]) {
      // removeUnusedContainers leaves both sleeping containers; 30 s of grace lets the volumes go.
      const spec = sleepingSubpathPod(
        ctx,
        force ? 'pod-subpath-test-force' : 'pod-subpath-test-graceful',
        volumeSource('emptydir'),
        ctx.namespace,
        { sleep: INFINITE_SLEEP, restartPolicy: 'Never', grace: 30 },
      );
      await createPod(ctx, spec);
      pods.push({ pod: spec, force });
    }
    for (const p of pods) {
      p.pod = await waitForRunning(ctx, p.pod.metadata!.name!, POD_START_MS);
      await expectMounted(ctx, p.pod);
    }

    ctx.note('stopping the agent');
    await ctx.agent.stop();
    let started = false;
    try {
      await ctx.check.eventually(
        'node NotReady once the agent stopped',
        () => nodeCondition(ctx, 'Ready'),
        (c) => c?.status !== 'True',
        { timeoutMs: NODE_STATE_MS, intervalMs: 1_000, expected: 'Ready not True' },
      );
      for (const { pod, force } of pods)
        await ctx.core.deleteNamespacedPod({
          name: pod.metadata!.name!,
          namespace: ctx.namespace,
          ...(force ? { gracePeriodSeconds: 0 } : {}),
        });
      ctx.note('pods deleted while the agent is down; starting it again');
      await ctx.agent.start();
      started = true;
    } finally {
      if (!started) await ctx.agent.start();
    }
    await Promise.all(pods.map((p) => expectUnmounted(ctx, p)));
    ctx.check.equal(
      'no volume global mount point leaked or lost',
      await globalMountPoints(ctx),
      globalBefore,
    );
  },
};
