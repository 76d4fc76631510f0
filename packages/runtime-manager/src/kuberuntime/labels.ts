// Labels and annotations the runtime manager puts on sandboxes and containers. They are the
// only state it keeps: a restarted agent rebuilds pods, restart counts, hooks and grace periods
// from them, so every value needed to stop or restart a container without its pod object is here.
import type { V1Container, V1ContainerPort, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import { hashContainer } from './hash.js';

export const PodNameLabel = 'io.kubernetes.pod.name';
export const PodNamespaceLabel = 'io.kubernetes.pod.namespace';
export const PodUidLabel = 'io.kubernetes.pod.uid';
export const ContainerNameLabel = 'io.kubernetes.container.name';

export const ContainerHashAnnotation = 'io.kubernetes.container.hash';
export const ContainerRestartCountAnnotation = 'io.kubernetes.container.restartCount';
export const TerminationMessagePathAnnotation = 'io.kubernetes.container.terminationMessagePath';
export const TerminationMessagePolicyAnnotation = 'io.kubernetes.container.terminationMessagePolicy';
export const PodDeletionGracePeriodAnnotation = 'io.kubernetes.pod.deletionGracePeriod';
export const PodTerminationGracePeriodAnnotation = 'io.kubernetes.pod.terminationGracePeriod';
export const PreStopHandlerAnnotation = 'io.kubernetes.container.preStopHandler';
export const ContainerPortsAnnotation = 'io.kubernetes.container.ports';

export const DefaultTerminationMessagePath = '/dev/termination-log';
export const DefaultTerminationGracePeriodSeconds = 30;

export function podUid(pod: V1Pod): string {
  const uid = pod.metadata?.uid;
  if (!uid)
    throw new Error(`pod ${pod.metadata?.namespace ?? ''}/${pod.metadata?.name ?? ''} has no metadata.uid`);
  return uid;
}

function podIdentityLabels(pod: V1Pod): Record<string, string> {
  return {
    [PodNameLabel]: pod.metadata?.name ?? '',
    [PodNamespaceLabel]: pod.metadata?.namespace ?? '',
    [PodUidLabel]: podUid(pod),
  };
}

/** Sandbox labels: the pod's own labels plus the identity labels (which win on conflict). */
export function newPodLabels(pod: V1Pod): Record<string, string> {
  return { ...(pod.metadata?.labels ?? {}), ...podIdentityLabels(pod) };
}

export function newPodAnnotations(pod: V1Pod): Record<string, string> {
  return { ...(pod.metadata?.annotations ?? {}) };
}

export function newContainerLabels(container: V1Container, pod: V1Pod): Record<string, string> {
  return { ...podIdentityLabels(pod), [ContainerNameLabel]: container.name };
}

export function newContainerAnnotations(
  container: V1Container,
  pod: V1Pod,
  restartCount: number,
): Record<string, string> {
  const a: Record<string, string> = {
    [ContainerHashAnnotation]: hashContainer(container),
    [ContainerRestartCountAnnotation]: String(restartCount),
    [TerminationMessagePathAnnotation]: container.terminationMessagePath ?? DefaultTerminationMessagePath,
    [TerminationMessagePolicyAnnotation]: container.terminationMessagePolicy ?? 'File',
  };
  if (pod.metadata?.deletionGracePeriodSeconds != null) {
    a[PodDeletionGracePeriodAnnotation] = String(pod.metadata.deletionGracePeriodSeconds);
  }
  if (pod.spec?.terminationGracePeriodSeconds != null) {
    a[PodTerminationGracePeriodAnnotation] = String(pod.spec.terminationGracePeriodSeconds);
  }
  if (container.lifecycle?.preStop) a[PreStopHandlerAnnotation] = JSON.stringify(container.lifecycle.preStop);
  if (container.ports?.length) a[ContainerPortsAnnotation] = JSON.stringify(container.ports);
  return a;
}

export interface LabeledPodSandboxInfo {
  podName: string;
  podNamespace: string;
  podUid: string;
  labels: Record<string, string>;
}

/** Splits sandbox labels back into the pod identity and the pod's own labels. */
export function getPodSandboxInfoFromLabels(labels: Record<string, string>): LabeledPodSandboxInfo {
  const own: Record<string, string> = {};
  for (const [k, v] of Object.entries(labels)) {
    if (k !== PodNameLabel && k !== PodNamespaceLabel && k !== PodUidLabel) own[k] = v;
  }
  return {
    podName: labels[PodNameLabel] ?? '',
    podNamespace: labels[PodNamespaceLabel] ?? '',
    podUid: labels[PodUidLabel] ?? '',
    labels: own,
  };
}

export interface LabeledContainerInfo {
  podName: string;
  podNamespace: string;
  podUid: string;
  containerName: string;
}

export function getContainerInfoFromLabels(labels: Record<string, string>): LabeledContainerInfo {
  return {
    podName: labels[PodNameLabel] ?? '',
    podNamespace: labels[PodNamespaceLabel] ?? '',
    podUid: labels[PodUidLabel] ?? '',
    containerName: labels[ContainerNameLabel] ?? '',
  };
}

export interface AnnotatedContainerInfo {
  hash: string;
  restartCount: number;
  terminationMessagePath: string;
  terminationMessagePolicy: string;
  podDeletionGracePeriodSeconds?: number;
  podTerminationGracePeriodSeconds?: number;
  preStopHandler?: V1LifecycleHandler;
  ports?: V1ContainerPort[];
}

function intOrUndefined(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number.parseInt(v, 10);
  return Number.isFinite(n) ? n : undefined;
}

function jsonOrUndefined<T>(v: string | undefined): T | undefined {
  if (v === undefined) return undefined;
  try {
    return JSON.parse(v) as T;
  } catch {
    // A foreign or damaged annotation must not stop the pod from being stopped.
    return undefined;
  }
}

/** Reads back what newContainerAnnotations wrote; missing or malformed values fall back to defaults. */
export function getContainerInfoFromAnnotations(annotations: Record<string, string>): AnnotatedContainerInfo {
  return {
    hash: annotations[ContainerHashAnnotation] ?? '',
    restartCount: intOrUndefined(annotations[ContainerRestartCountAnnotation]) ?? 0,
    terminationMessagePath: annotations[TerminationMessagePathAnnotation] ?? '',
    terminationMessagePolicy: annotations[TerminationMessagePolicyAnnotation] ?? 'File',
    podDeletionGracePeriodSeconds: intOrUndefined(annotations[PodDeletionGracePeriodAnnotation]),
    podTerminationGracePeriodSeconds: intOrUndefined(annotations[PodTerminationGracePeriodAnnotation]),
    preStopHandler: jsonOrUndefined<V1LifecycleHandler>(annotations[PreStopHandlerAnnotation]),
    ports: jsonOrUndefined<V1ContainerPort[]>(annotations[ContainerPortsAnnotation]),
  };
}
