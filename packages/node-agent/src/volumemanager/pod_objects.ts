// The runtime manager's PodObjectSource on the agent: config maps and secrets read through the
// API server for each use, always named by the pod that needs them (what a node authorizer
// checks), the services a pod gets variables for, and service account tokens requested bound to the pod and cached as the kubelet's
// token manager does: reused until 80% of their lifetime or 24 hours have passed.
import type { Clock } from '@kh/apimachinery';
import { MASTER_SERVICE_NAMESPACE, type PodObjectSource } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodObjectsApi } from './objects_client.js';

/** A token is refreshed after this share of its lifetime, or after MAX_TOKEN_AGE_MS. */
const REFRESH_SHARE = 0.8;
const MAX_TOKEN_AGE_MS = 24 * 3600_000;

interface CachedToken {
  token: string;
  issuedMs: number;
  expiresMs: number;
}

export class ApiPodObjectSource implements PodObjectSource {
  private readonly tokens = new Map<string, CachedToken>();

  constructor(
    private readonly deps: {
      api: PodObjectsApi;
      /** This node: the node of a pod whose spec does not name one yet. */
      nodeName: string;
      clock: Clock;
    },
  ) {}

  getConfigMap(pod: V1Pod, name: string) {
    return this.deps.api.getConfigMap(pod.metadata?.namespace ?? 'default', name);
  }

  getSecret(pod: V1Pod, name: string) {
    return this.deps.api.getSecret(pod.metadata?.namespace ?? 'default', name);
  }

  getNode(pod: V1Pod) {
    return this.deps.api.getNode(pod.spec?.nodeName || this.deps.nodeName);
  }

  /**
   * The pod's namespace's services and the master service, read for each container start (the
   * kubelet reads them from its service informer).
   */
  async listServices(pod: V1Pod) {
    const namespace = pod.metadata?.namespace ?? 'default';
    const own = await this.deps.api.listServices(namespace);
    if (namespace === MASTER_SERVICE_NAMESPACE) return own;
    const master = await this.deps.api.getService(MASTER_SERVICE_NAMESPACE, 'kubernetes');
    return master ? [...own, master] : own;
  }

  async getServiceAccountToken(pod: V1Pod, audience: string | undefined, expirationSeconds: number) {
    const namespace = pod.metadata?.namespace ?? 'default';
    const serviceAccount = pod.spec?.serviceAccountName || 'default';
    const uid = pod.metadata?.uid ?? '';
    const key = JSON.stringify([namespace, serviceAccount, uid, audience ?? '', expirationSeconds]);
    const now = this.deps.clock.now();
    this.dropExpired(now);
    const cached = this.tokens.get(key);
    if (cached && !requiresRefresh(cached, now)) return cached.token;
    const { token, expirationTimestamp } = await this.deps.api.createToken(namespace, serviceAccount, {
      ...(audience ? { audiences: [audience] } : {}),
      expirationSeconds,
      boundObjectRef: { kind: 'Pod', apiVersion: 'v1', name: pod.metadata?.name ?? '', uid },
    });
    this.tokens.set(key, { token, issuedMs: now, expiresMs: expirationTimestamp.getTime() });
    return token;
  }

  private dropExpired(now: number): void {
    for (const [k, t] of this.tokens) if (t.expiresMs <= now) this.tokens.delete(k);
  }
}

function requiresRefresh(t: CachedToken, now: number): boolean {
  const age = now - t.issuedMs;
  return age > REFRESH_SHARE * (t.expiresMs - t.issuedMs) || age > MAX_TOKEN_AGE_MS;
}
