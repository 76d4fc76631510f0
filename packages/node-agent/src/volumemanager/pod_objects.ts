// The runtime manager's PodObjectSource on the agent: config maps and secrets read through the
// API server for each use, always named by the pod that needs them (what a node authorizer
// checks), the services a pod gets variables for from the service informer, and service account
// tokens requested bound to the pod and cached as the kubelet's token manager does: reused until
// 80% of their lifetime or 24 hours have passed.
import type { Clock } from '@kh/apimachinery';
import { isMasterService, type PodObjectSource } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import type { ServiceLister } from '../api/service_lister.js';
import { isStaticPod } from '../types/pod_update.js';
import type { PodObjectsApi } from './objects_client.js';

/** The kubelet's error for a container start before the service informer's first list. */
export const SERVICES_NOT_SYNCED = 'services have not yet been read at least once, cannot construct envvars';

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
      services: Pick<ServiceLister, 'hasSynced' | 'list'>;
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
   * The pod's namespace's services and the master service, from the service informer. Until it
   * has listed once, only a static pod goes on without them: the kubelet would rather fail a
   * start than give a pod no KUBERNETES_SERVICE_HOST.
   */
  async listServices(pod: V1Pod) {
    const { services } = this.deps;
    if (!services.hasSynced() && !isStaticPod(pod)) throw new Error(SERVICES_NOT_SYNCED);
    const namespace = pod.metadata?.namespace ?? 'default';
    return services.list().filter((s) => s.metadata?.namespace === namespace || isMasterService(s));
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
