// The kubelet's mirror client: the API-side copy of a static pod. A mirror pod carries the static
// pod's spec, labels and annotations plus kubernetes.io/config.mirror = the static pod's config
// hash, and is owned by the Node, so the API shows what the node runs from its manifests.
import { CoreV1Api, type KubeConfig, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { isNotFound, toApiError } from '../api/node_api.js';
import { ConfigHashAnnotation, ConfigMirrorAnnotation } from '../types/pod_update.js';

/** What the mirror client needs from the API server. Failures are ApiErrors. */
export interface MirrorPodApi {
  getNode(name: string): Promise<V1Node | undefined>;
  createPod(pod: V1Pod): Promise<V1Pod>;
  /** Deletes at once (grace 0), only the pod with this UID. */
  deletePod(namespace: string, name: string, uid: string): Promise<void>;
}

export class KubeMirrorPodApi implements MirrorPodApi {
  private readonly core: CoreV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  async getNode(name: string): Promise<V1Node | undefined> {
    try {
      return await this.core.readNode({ name });
    } catch (e) {
      const err = toApiError(e);
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async createPod(pod: V1Pod): Promise<V1Pod> {
    try {
      return await this.core.createNamespacedPod({
        namespace: pod.metadata?.namespace ?? 'default',
        body: pod,
      });
    } catch (e) {
      throw toApiError(e);
    }
  }

  async deletePod(namespace: string, name: string, uid: string): Promise<void> {
    try {
      await this.core.deleteNamespacedPod({
        namespace,
        name,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      });
    } catch (e) {
      throw toApiError(e);
    }
  }
}

export const isMirrorPod = (pod: V1Pod): boolean =>
  pod.metadata?.annotations?.[ConfigMirrorAnnotation] !== undefined;

/** The static pod's config hash, which its mirror pod must carry. */
export const staticPodHash = (pod: V1Pod): string =>
  pod.metadata?.annotations?.[ConfigHashAnnotation] ?? pod.metadata?.uid ?? '';

/** True when `mirror` mirrors this version of the static pod (same name, same config hash). */
export function isMirrorPodOf(mirror: V1Pod, staticPod: V1Pod): boolean {
  return (
    mirror.metadata?.namespace === staticPod.metadata?.namespace &&
    mirror.metadata?.name === staticPod.metadata?.name &&
    mirror.metadata?.annotations?.[ConfigMirrorAnnotation] === staticPodHash(staticPod)
  );
}

/** The mirror pod object for a static pod on `node`: no UID, no status, the Node as owner. */
export function mirrorPodFor(staticPod: V1Pod, node: V1Node): V1Pod {
  const { uid: _uid, resourceVersion: _rv, ...meta } = structuredClone(staticPod.metadata ?? {});
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...meta,
      annotations: { ...meta.annotations, [ConfigMirrorAnnotation]: staticPodHash(staticPod) },
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'Node',
          name: node.metadata?.name ?? '',
          uid: node.metadata?.uid ?? '',
          controller: true,
        },
      ],
    },
    spec: structuredClone(staticPod.spec),
  };
}
