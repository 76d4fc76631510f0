// Static pods as upstream's node e2e suite drives them (mirror_pod_test.go's helpers): manifests
// written into the agent's staticPodPath on the node, and the checks upstream makes of the mirror
// pod the agent keeps for each one in the API.
import { AGENT_STATIC_POD_PATH, agentPath, type ScenarioContext } from '@kh/harness';
import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { podSummary } from './pods.js';

/** The agent's staticPodPath on the node under test. */
export const staticPodDir = (ctx: ScenarioContext) =>
  agentPath(AGENT_STATIC_POD_PATH, ctx.backend.agent?.dir);

/** staticPodPath(): `<namespace>-<name>.yaml`. */
const manifestPath = (ctx: ScenarioContext, name: string, namespace: string) =>
  `${staticPodDir(ctx)}/${namespace}-${name}.yaml`;

/** The mirror pod's name: the static pod's name and the node's. */
export const mirrorPodName = (ctx: ScenarioContext, name: string) => `${name}-${ctx.nodeName}`;

async function nodeExec(ctx: ScenarioContext, cmd: string[]): Promise<void> {
  const r = await ctx.backend.host.exec(cmd);
  if (r.exitCode !== 0) throw new Error(`${cmd.join(' ')} failed on ${ctx.nodeName}: ${r.output}`);
}

/**
 * The manifest (JSON is YAML) written beside its place as a dot-file, which the agent skips as
 * the kubelet does, so that a rename puts it in place whole and no pass reads half a manifest.
 */
async function stageStaticPod(
  ctx: ScenarioContext,
  name: string,
  namespace: string,
  spec: V1PodSpec,
): Promise<{ tmp: string; path: string }> {
  const pod: V1Pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace }, spec };
  const tmp = `${staticPodDir(ctx)}/.${namespace}-${name}.tmp`;
  await ctx.backend.host.writeFile(tmp, `${JSON.stringify(pod)}\n`);
  return { tmp, path: manifestPath(ctx, name, namespace) };
}

/** createStaticPodWithSpec: the manifest replaces any earlier one. */
export async function writeStaticPod(
  ctx: ScenarioContext,
  name: string,
  namespace: string,
  spec: V1PodSpec,
): Promise<void> {
  const { tmp, path } = await stageStaticPod(ctx, name, namespace, spec);
  await nodeExec(ctx, ['mv', tmp, path]);
}

const simpleSpec = (image: string, restartPolicy: V1PodSpec['restartPolicy'] = 'Always'): V1PodSpec => ({
  containers: [{ name: 'test', image }],
  restartPolicy,
});

/** createStaticPod: one container `test` of `image`. */
export const writeSimpleStaticPod = (
  ctx: ScenarioContext,
  name: string,
  namespace: string,
  image: string,
  restartPolicy?: V1PodSpec['restartPolicy'],
) => writeStaticPod(ctx, name, namespace, simpleSpec(image, restartPolicy));

/**
 * deleteStaticPod, then createStaticPod, as upstream's case runs them: back to back, the new
 * manifest staged first, so that the two are microseconds apart in one node exec rather than two
 * container API round trips (seconds on a busy node: time enough for the agent to clean up the
 * removed pod's containers, so that it starts again with restart count 0).
 */
export async function recreateSimpleStaticPod(
  ctx: ScenarioContext,
  name: string,
  namespace: string,
  image: string,
): Promise<void> {
  const { tmp, path } = await stageStaticPod(ctx, name, namespace, simpleSpec(image));
  await nodeExec(ctx, ['sh', '-c', 'rm "$1" && mv "$2" "$1"', 'sh', path, tmp]);
}

/** deleteStaticPod (already gone is fine: a cleanup after a failed case may find nothing). */
export const deleteStaticPod = (ctx: ScenarioContext, name: string, namespace: string) =>
  nodeExec(ctx, ['rm', '-f', manifestPath(ctx, name, namespace)]);

/** The mirror pod, or why there is none (the probe records what it saw). */
async function readMirror(ctx: ScenarioContext, name: string, namespace: string): Promise<V1Pod | string> {
  try {
    return await ctx.core.readNamespacedPod({ name, namespace });
  } catch (e) {
    if ((e as { code?: number }).code === 404) return 'not found';
    throw e;
  }
}

/**
 * validateMirrorPod: the config hash and mirror annotations are set and equal, the source is not
 * the API, and the one owner is this Node as controller.
 */
async function mirrorProblem(ctx: ScenarioContext, pod: V1Pod): Promise<string | undefined> {
  const a = pod.metadata?.annotations ?? {};
  const hash = a['kubernetes.io/config.hash'];
  if (!hash) return 'no kubernetes.io/config.hash annotation';
  const mirror = a['kubernetes.io/config.mirror'];
  if (!mirror) return 'no kubernetes.io/config.mirror annotation';
  if (mirror !== hash) return `config.mirror ${mirror} is not config.hash ${hash}`;
  const source = a['kubernetes.io/config.source'];
  if (source === undefined) return 'no kubernetes.io/config.source annotation';
  if (source === 'api') return 'config.source is api';
  const refs = pod.metadata?.ownerReferences ?? [];
  if (refs.length !== 1) return `${refs.length} owner references, want 1`;
  const node = await ctx.core.readNode({ name: ctx.nodeName });
  const want = {
    apiVersion: 'v1',
    kind: 'Node',
    name: ctx.nodeName,
    uid: node.metadata?.uid,
    controller: true,
  };
  const got = refs[0];
  const same =
    got?.apiVersion === want.apiVersion &&
    got.kind === want.kind &&
    got.name === want.name &&
    got.uid === want.uid &&
    got.controller === true &&
    got.blockOwnerDeletion === undefined;
  return same ? undefined : `owner reference ${JSON.stringify(got)}, want ${JSON.stringify(want)}`;
}

export interface MirrorWant {
  /** checkMirrorPodRunning: phase Running and every container running. */
  running?: boolean;
  /** checkMirrorPodRecreated: a UID other than this one. */
  notUid?: string;
  /** checkMirrorPodRunningWithRestartCount: a container has restarted this many times. */
  restartCount?: number;
}

/** What is wrong with the mirror pod against `want`, or undefined when nothing is. */
export async function mirrorPodProblem(
  ctx: ScenarioContext,
  name: string,
  namespace: string,
  want: MirrorWant,
): Promise<string | undefined> {
  const pod = await readMirror(ctx, name, namespace);
  if (typeof pod === 'string') return `mirror pod ${name}: ${pod}`;
  if (want.notUid !== undefined && pod.metadata?.uid === want.notUid) return `uid unchanged (${want.notUid})`;
  if (want.running || want.restartCount !== undefined) {
    if (pod.status?.phase !== 'Running') return `phase ${pod.status?.phase}, want Running`;
    const statuses = pod.status?.containerStatuses ?? [];
    const notRunning = statuses.find((c) => !c.state?.running);
    if (notRunning) return `container ${notRunning.name} is not running: ${JSON.stringify(notRunning.state)}`;
    if (want.restartCount !== undefined && !statuses.some((c) => c.restartCount === want.restartCount))
      return `restart counts ${statuses.map((c) => c.restartCount).join(',')}, want ${want.restartCount}`;
  }
  // checkMirrorPodRecreated alone does not validate the pod.
  return want.running || want.restartCount !== undefined ? mirrorProblem(ctx, pod) : undefined;
}

/** gomega.Eventually(check, 2 min): upstream's bound; polled each second. */
export const MIRROR_TIMEOUT_MS = 120_000;

export function eventuallyMirror(
  ctx: ScenarioContext,
  what: string,
  name: string,
  namespace: string,
  want: MirrorWant,
  timeoutMs = MIRROR_TIMEOUT_MS,
): Promise<string | undefined> {
  return ctx.check.eventually(
    what,
    () => mirrorPodProblem(ctx, name, namespace, want),
    (p) => p === undefined,
    {
      timeoutMs,
      intervalMs: 1_000,
      expected: want,
    },
  );
}

/** checkMirrorPodDisappear, eventually. */
export function mirrorPodDisappears(ctx: ScenarioContext, name: string, namespace: string) {
  return ctx.check.eventually(
    `mirror pod ${name} disappears`,
    () => readMirror(ctx, name, namespace),
    (p) => p === 'not found',
    {
      timeoutMs: MIRROR_TIMEOUT_MS,
      intervalMs: 1_000,
      expected: 'not found',
      describe: (p) => (typeof p === 'string' ? p : podSummary(p)),
    },
  );
}

/** The mirror pod as the API holds it now. */
export const readMirrorPod = (ctx: ScenarioContext, name: string, namespace: string) =>
  ctx.core.readNamespacedPod({ name, namespace });
