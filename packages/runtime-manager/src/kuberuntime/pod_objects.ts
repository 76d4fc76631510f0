// The API objects a pod's envs and volumes read: config maps, secrets, its service account's
// token, its node and the services it gets variables for. The node agent implements
// this over the API server, always in the context of the pod, so a node authorizer can check
// that the pod is bound to the node.
import type { V1ConfigMap, V1Node, V1Pod, V1Secret, V1Service } from '@kubernetes/client-node';
import { ErrCreateContainerConfig, SyncStepError } from '../container/sync_result.js';

export interface PodObjectSource {
  /** Undefined when it does not exist; throws when it cannot be read. */
  getConfigMap(pod: V1Pod, name: string): Promise<V1ConfigMap | undefined>;
  /** Undefined when it does not exist; throws when it cannot be read. */
  getSecret(pod: V1Pod, name: string): Promise<V1Secret | undefined>;
  /** A TokenRequest for the pod's service account, bound to the pod. */
  getServiceAccountToken(
    pod: V1Pod,
    audience: string | undefined,
    expirationSeconds: number,
  ): Promise<string>;
  /** The pod's node: its allocatable is the default for unset limits, its address the host IP. */
  getNode(pod: V1Pod): Promise<V1Node | undefined>;
  /**
   * The services whose environment variables the pod may get: its namespace's and the master
   * service. Throws when they cannot be read (the kubelet's services not yet read once). Without
   * it (a node with no API server) a pod gets none, as the kubelet.
   */
  listServices?(pod: V1Pod): Promise<V1Service[]>;
}

/** The key/value data of a config map or secret, decoded. */
export type ObjectData = Map<string, Buffer>;

/** Spelled as the kubelet's object cache names the resource in its errors. */
export type ObjectKind = 'configmap' | 'secret';

/**
 * Reads a config map's data and binaryData, or a secret's data, decoded. A missing object gives
 * undefined when optional and otherwise the message the kubelet's object cache gives
 * (`configmap "x" not found`, with the resource singular).
 */
export async function readObjectData(
  objects: PodObjectSource | undefined,
  kind: ObjectKind,
  pod: V1Pod,
  name: string,
  optional: boolean,
): Promise<ObjectData | undefined> {
  if (!objects) {
    throw new SyncStepError(
      ErrCreateContainerConfig,
      `cannot read ${kind} "${name}": this runtime helper has no API source`,
    );
  }
  const data: ObjectData = new Map();
  if (kind === 'configmap') {
    const cm = await objects.getConfigMap(pod, name);
    if (!cm) return notFound(kind, name, optional);
    for (const [k, v] of Object.entries(cm.data ?? {})) data.set(k, Buffer.from(v, 'utf8'));
    for (const [k, v] of Object.entries(cm.binaryData ?? {})) data.set(k, Buffer.from(v, 'base64'));
  } else {
    const s = await objects.getSecret(pod, name);
    if (!s) return notFound(kind, name, optional);
    for (const [k, v] of Object.entries(s.data ?? {})) data.set(k, Buffer.from(v, 'base64'));
  }
  return data;
}

function notFound(kind: ObjectKind, name: string, optional: boolean): undefined {
  if (optional) return undefined;
  throw new SyncStepError(ErrCreateContainerConfig, `${kind} "${name}" not found`);
}
