// The kubelet's runtimeclass.Manager: spec.runtimeClassName → the CRI runtime handler that
// RunPodSandbox gets. The kubelet reads an informer's cache; this agent reads the API server per
// lookup and keeps what it found for a while (handler is immutable, so a cached answer can only
// be stale about the class still existing). A miss is never cached: a pod waiting for its class
// starts on the first sandbox retry after the class is created.
import type { Clock } from '@kh/apimachinery';
import type { RuntimeHandlerResolver } from '@kh/runtime-manager';
import type { RuntimeClassApi } from './client.js';

/** How long a found class's handler is reused without asking the API server again. */
export const RUNTIME_CLASS_CACHE_TTL_MS = 10_000;

/** The lookup failed because the class does not exist; worded as the kubelet's lister error. */
export class RuntimeClassNotFoundError extends Error {
  constructor(readonly runtimeClassName: string) {
    super(`runtimeclass.node.k8s.io "${runtimeClassName}" not found`);
    this.name = 'RuntimeClassNotFoundError';
  }
}

export class RuntimeClassManager implements RuntimeHandlerResolver {
  private readonly cache = new Map<string, { handler: string; expiresMs: number }>();

  constructor(private readonly deps: { api: RuntimeClassApi; clock: Clock; ttlMs?: number }) {}

  async lookupRuntimeHandler(runtimeClassName: string | undefined): Promise<string> {
    // No class, or "", is the default RuntimeClass: the runtime's default handler.
    if (!runtimeClassName) return '';
    const now = this.deps.clock.now();
    const cached = this.cache.get(runtimeClassName);
    if (cached && cached.expiresMs > now) return cached.handler;
    let handler: string | undefined;
    try {
      handler = await this.deps.api.getRuntimeHandler(runtimeClassName);
    } catch (e) {
      throw new Error(`failed to lookup RuntimeClass ${runtimeClassName}: ${(e as Error).message}`);
    }
    if (handler === undefined) {
      this.cache.delete(runtimeClassName);
      throw new RuntimeClassNotFoundError(runtimeClassName);
    }
    this.cache.set(runtimeClassName, {
      handler,
      expiresMs: now + (this.deps.ttlMs ?? RUNTIME_CLASS_CACHE_TTL_MS),
    });
    return handler;
  }
}
