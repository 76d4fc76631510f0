// The words every part of the agent uses for pods and where they come from (the kubelet's
// pkg/kubelet/types): the sources' operations and updates, and the kubernetes.io/config.*
// annotations that mark a pod's source, its manifest's hash and a mirror pod.
import type { V1Pod } from '@kubernetes/client-node';

/** The kubelet's pod config operations. */
export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE' | 'RECONCILE' | 'DELETE';

export interface PodUpdate {
  op: PodOperation;
  pods: V1Pod[];
  /** 'api' (watch on spec.nodeName) or 'file' (staticPodPath). */
  source: 'api' | 'file';
}

/** A source of pod updates: the API watch, the static pod directory. */
export interface PodSource {
  /** Starts delivering updates until the signal aborts. */
  run(signal: AbortSignal, deliver: (update: PodUpdate) => void): Promise<void>;
  /** True once the first full list was delivered (housekeeping waits for all sources). */
  ready(): boolean;
}

/** Where a pod came from: `file` for a static pod, `api` otherwise. */
export const ConfigSourceAnnotation = 'kubernetes.io/config.source';
/**
 * A pod from a source other than the API server: a static pod (kubetypes.IsStaticPod). A pod
 * whose source is not marked is none.
 */
export function isStaticPod(pod: V1Pod): boolean {
  const source = pod.metadata?.annotations?.[ConfigSourceAnnotation];
  return source !== undefined && source !== 'api';
}
/** A static pod's config hash, derived from its manifest. */
export const ConfigHashAnnotation = 'kubernetes.io/config.hash';
/** On a mirror pod: the config hash of the static pod it mirrors. */
export const ConfigMirrorAnnotation = 'kubernetes.io/config.mirror';
