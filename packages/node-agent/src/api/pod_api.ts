// The slice of the pod API the status manager needs. KubeNodeApi implements it next to NodeApi.
import type { V1Pod, V1PodStatus, V1Secret } from '@kubernetes/client-node';

export interface PodApi {
  /** Undefined when the pod does not exist. */
  getPod(namespace: string, name: string): Promise<V1Pod | undefined>;
  /**
   * Patch of the status subresource with the complete status the agent computed; what `stored`
   * (the status the patch applies to) has and `status` lacks is deleted.
   */
  patchPodStatus(namespace: string, name: string, status: V1PodStatus, stored?: V1PodStatus): Promise<V1Pod>;
  /** Final deletion (grace 0) guarded by a UID precondition, so a recreated pod is never deleted. */
  deletePod(namespace: string, name: string, uid: string): Promise<void>;
  /** A pod's image pull secret; undefined when it does not exist. */
  getSecret(namespace: string, name: string): Promise<V1Secret | undefined>;
}
