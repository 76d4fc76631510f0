// The API calls behind a pod's config maps, secrets, tokens and node, over client-node.
import type { V1ConfigMap, V1Node, V1Secret } from '@kubernetes/client-node';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { isNotFound, toApiError } from '../api/node_api.js';

export interface TokenRequestSpec {
  audiences?: string[];
  expirationSeconds: number;
  boundObjectRef: { kind: 'Pod'; apiVersion: 'v1'; name: string; uid: string };
}

/** What the pod object source reads. Reads give undefined for 404; other failures are ApiErrors. */
export interface PodObjectsApi {
  getConfigMap(namespace: string, name: string): Promise<V1ConfigMap | undefined>;
  getSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
  getNode(name: string): Promise<V1Node | undefined>;
  /** serviceaccounts/<name>/token: the token and when it expires. */
  createToken(
    namespace: string,
    serviceAccount: string,
    spec: TokenRequestSpec,
  ): Promise<{ token: string; expirationTimestamp: Date }>;
}

async function orUndefined<T>(fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await fn();
  } catch (e) {
    const err = toApiError(e);
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

export class KubePodObjectsApi implements PodObjectsApi {
  private readonly core: CoreV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  getConfigMap(namespace: string, name: string) {
    return orUndefined(() => this.core.readNamespacedConfigMap({ namespace, name }));
  }

  getSecret(namespace: string, name: string) {
    return orUndefined(() => this.core.readNamespacedSecret({ namespace, name }));
  }

  getNode(name: string) {
    return orUndefined(() => this.core.readNode({ name }));
  }

  async createToken(namespace: string, serviceAccount: string, spec: TokenRequestSpec) {
    try {
      const tr = await this.core.createNamespacedServiceAccountToken({
        namespace,
        name: serviceAccount,
        body: {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenRequest',
          spec: { audiences: [], ...spec },
        },
      });
      if (!tr.status?.token)
        throw new Error(`TokenRequest for ${namespace}/${serviceAccount} returned no token`);
      return { token: tr.status.token, expirationTimestamp: new Date(tr.status.expirationTimestamp ?? 0) };
    } catch (e) {
      throw toApiError(e);
    }
  }
}
