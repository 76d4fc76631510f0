// Image pulls as upstream's e2e drives them: kubernetes.io/dockerconfigjson pull secrets (the
// private registry's, or any registry's auths) and imagePullTest (runtime.go's ImagePullTest), a
// one-container pod whose container either runs or waits on an image reason in a Pending pod.
import type { ScenarioContext } from '@kh/harness';
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import {
  containerStatus,
  createPod,
  deletePodWithWait,
  INFINITE_SLEEP,
  podFor,
  podSummary,
  readPod,
} from './pods.js';

/** ContainerStatusRetryTimeout: the upper bound of an image pull test's wait (polled, never slept). */
export const CONTAINER_STATUS_RETRY_MS = 5 * 60_000;

/** The private registry's `auths` entry: its host with base64("user:password"). */
export function privateRegistryAuths(ctx: ScenarioContext): Record<string, { auth: string }> {
  const priv = ctx.registry.private;
  return { [priv.host]: { auth: Buffer.from(`${priv.username}:${priv.password}`).toString('base64') } };
}

/** Creates a kubernetes.io/dockerconfigjson secret named `name` holding `auths` (default: the private registry's). */
export async function createPullSecret(
  ctx: ScenarioContext,
  name: string,
  auths: Record<string, { auth: string }> = privateRegistryAuths(ctx),
): Promise<V1Secret> {
  return ctx.core.createNamespacedSecret({
    namespace: ctx.namespace,
    body: {
      metadata: { name },
      type: 'kubernetes.io/dockerconfigjson',
      stringData: { '.dockerconfigjson': JSON.stringify({ auths }) },
    },
  });
}

/** The waiting reasons ImagePullTest accepts for a pull that must fail. */
const PULL_FAILED_REASONS = ['ErrImagePull', 'ImagePullBackOff', 'ErrImageNeverPull'];

export interface ImagePullTestOptions {
  podName: string;
  image: string;
  policy: 'Always' | 'IfNotPresent' | 'Never';
  /** The pod's imagePullSecrets entry, when it has one. */
  secretName?: string;
  /** true: the container waits on a pull reason in a Pending pod; false: it runs in a Running pod. */
  pullFails: boolean;
}

/**
 * ImagePullTest: creates the pod (restartPolicy Never), polls the container's state first and
 * then the pod's phase, and deletes the pod once they match. Returns the pod as last read.
 */
export async function imagePullTest(ctx: ScenarioContext, opts: ImagePullTestOptions): Promise<V1Pod> {
  const container = 'image-pull-test';
  await createPod(
    ctx,
    podFor(ctx, opts.podName, {
      restartPolicy: 'Never',
      containers: [
        {
          name: container,
          image: opts.image,
          imagePullPolicy: opts.policy,
          command: ['sh', '-c', INFINITE_SLEEP],
        },
      ],
      ...(opts.secretName ? { imagePullSecrets: [{ name: opts.secretName }] } : {}),
    }),
  );
  const expected = opts.pullFails
    ? `Waiting with ${PULL_FAILED_REASONS.join(', ')} in a Pending pod`
    : 'Running in a Running pod';
  try {
    return await ctx.check.eventually(
      `pod ${opts.podName}: ${expected}`,
      () => readPod(ctx, opts.podName),
      (p) => {
        const state = containerStatus(p, container)?.state;
        return opts.pullFails
          ? PULL_FAILED_REASONS.includes(state?.waiting?.reason ?? '') && p.status?.phase === 'Pending'
          : !!state?.running && p.status?.phase === 'Running';
      },
      { timeoutMs: CONTAINER_STATUS_RETRY_MS, expected, describe: podSummary },
    );
  } finally {
    await deletePodWithWait(ctx, opts.podName, { timeoutMs: CONTAINER_STATUS_RETRY_MS });
  }
}
