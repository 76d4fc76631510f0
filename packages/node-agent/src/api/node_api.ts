// The slice of the Kubernetes API the node lifecycle needs, behind an interface so the
// registration, status and lease logic is independent of the HTTP client. KubeNodeApi is the
// real implementation over @kubernetes/client-node and a kubeconfig.
import {
  ApiException,
  CoordinationV1Api,
  CoreV1Api,
  type CoreV1Event,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Lease,
  type V1Node,
  type V1PodStatus,
} from '@kubernetes/client-node';
import type { PodApi } from './pod_api.js';

/**
 * The status patch that turns `stored` into `next`: fields `next` no longer has are sent as null,
 * as the kubelet's two-way merge patch does. Conditions merge by type under a strategic merge, so
 * a condition that drops its reason (Ready going True) must delete it, or the server keeps the old
 * one beside the new status. A merge patch replaces the conditions list whole.
 */
export function podStatusPatch(
  stored: V1PodStatus | undefined,
  next: V1PodStatus,
  strategy: PatchStrategy,
): Record<string, unknown> {
  const patch: Record<string, unknown> = { ...next };
  const missing = (o: object, k: string) => (o as Record<string, unknown>)[k] === undefined;
  for (const k of Object.keys(stored ?? {})) if (missing(next, k)) patch[k] = null;
  if (strategy === PatchStrategy.StrategicMergePatch && next.conditions) {
    const types = new Set(next.conditions.map((c) => c.type));
    patch.conditions = [
      ...next.conditions.map((c) => {
        const before = stored?.conditions?.find((b) => b.type === c.type);
        const gone = Object.keys(before ?? {}).filter((k) => missing(c, k));
        return { ...c, ...Object.fromEntries(gone.map((k) => [k, null])) };
      }),
      // A condition the status no longer has (a cleared PodResizePending) is deleted by its key,
      // as a two-way strategic merge patch does; list merging alone would keep it.
      ...(stored?.conditions ?? [])
        .filter((b) => !types.has(b.type))
        .map((b) => ({ type: b.type, $patch: 'delete' })),
    ];
  }
  return patch;
}

export interface NodeApi {
  /** Undefined when the Node does not exist. */
  getNode(name: string): Promise<V1Node | undefined>;
  /** Throws ApiError 409 when it already exists. */
  createNode(node: V1Node): Promise<V1Node>;
  /** Merge patch of the Node object (metadata, spec). */
  patchNode(name: string, patch: object): Promise<V1Node>;
  /** Patch of the status subresource: a strategic (else merge) patch of `status`; null removes. */
  patchNodeStatus(name: string, status: object): Promise<V1Node>;
  getLease(namespace: string, name: string): Promise<V1Lease | undefined>;
  createLease(lease: V1Lease): Promise<V1Lease>;
  /** Optimistic-concurrency update: fails with 409 when resourceVersion is stale. */
  updateLease(lease: V1Lease): Promise<V1Lease>;
  createEvent(event: CoreV1Event): Promise<void>;
}

/** An API failure with its HTTP status (0 when the server could not be reached). */
export class ApiError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly reason = '',
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const isNotFound = (e: unknown) => e instanceof ApiError && e.code === 404;
export const isConflict = (e: unknown) => e instanceof ApiError && e.code === 409;

/** Turns client-node's ApiException (body = Status JSON) and fetch errors into ApiError. */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  if (e instanceof ApiException) {
    let message = `HTTP ${e.code}`;
    let reason = '';
    try {
      const status = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
      if (status?.message) message = status.message;
      if (status?.reason) reason = status.reason;
    } catch {
      if (typeof e.body === 'string' && e.body) message = e.body;
    }
    return new ApiError(e.code, message, reason);
  }
  const err = e as Error & { cause?: { code?: string; message?: string } };
  return new ApiError(
    0,
    err.cause?.message ? `${err.message}: ${err.cause.message}` : String(err?.message ?? e),
  );
}

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    throw toApiError(e);
  }
}

async function orUndefined<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call(fn);
  } catch (e) {
    if (isNotFound(e)) return undefined;
    throw e;
  }
}

export { loadKubeConfig } from './kubeconfig.js';

export class KubeNodeApi implements NodeApi, PodApi {
  private readonly core: CoreV1Api;
  private readonly coordination: CoordinationV1Api;
  private statusPatch: PatchStrategy = PatchStrategy.StrategicMergePatch;

  constructor(readonly kubeConfig: KubeConfig) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
    this.coordination = kubeConfig.makeApiClient(CoordinationV1Api);
  }

  getNode(name: string) {
    return orUndefined(() => this.core.readNode({ name }));
  }

  createNode(node: V1Node) {
    return call(() => this.core.createNode({ body: node }));
  }

  patchNode(name: string, patch: object) {
    return call(() =>
      this.core.patchNode({ name, body: patch }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch)),
    );
  }

  patchNodeStatus(name: string, status: object) {
    return this.statusPatchWithFallback((strategy) =>
      this.core.patchNodeStatus({ name, body: { status } }, setHeaderOptions('Content-Type', strategy)),
    );
  }

  getPod(namespace: string, name: string) {
    return orUndefined(() => this.core.readNamespacedPod({ namespace, name }));
  }

  getSecret(namespace: string, name: string) {
    return orUndefined(() => this.core.readNamespacedSecret({ namespace, name }));
  }

  patchPodStatus(namespace: string, name: string, status: V1PodStatus, stored?: V1PodStatus) {
    return this.statusPatchWithFallback((strategy) =>
      this.core.patchNamespacedPodStatus(
        { namespace, name, body: { status: podStatusPatch(stored, status, strategy) } },
        setHeaderOptions('Content-Type', strategy),
      ),
    );
  }

  async deletePod(namespace: string, name: string, uid: string) {
    await call(() =>
      this.core.deleteNamespacedPod({
        namespace,
        name,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      }),
    );
  }

  /** Strategic merge keeps other writers' conditions; servers without it get a merge patch. */
  private async statusPatchWithFallback<T>(send: (strategy: PatchStrategy) => Promise<T>): Promise<T> {
    try {
      return await call(() => send(this.statusPatch));
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== 415 || this.statusPatch === PatchStrategy.MergePatch)
        throw e;
      this.statusPatch = PatchStrategy.MergePatch;
      return call(() => send(this.statusPatch));
    }
  }

  getLease(namespace: string, name: string) {
    return orUndefined(() => this.coordination.readNamespacedLease({ namespace, name }));
  }

  createLease(lease: V1Lease) {
    return call(() =>
      this.coordination.createNamespacedLease({ namespace: lease.metadata?.namespace ?? '', body: lease }),
    );
  }

  updateLease(lease: V1Lease) {
    return call(() =>
      this.coordination.replaceNamespacedLease({
        namespace: lease.metadata?.namespace ?? '',
        name: lease.metadata?.name ?? '',
        body: lease,
      }),
    );
  }

  async createEvent(event: CoreV1Event) {
    await call(() =>
      this.core.createNamespacedEvent({ namespace: event.metadata.namespace ?? 'default', body: event }),
    );
  }
}
