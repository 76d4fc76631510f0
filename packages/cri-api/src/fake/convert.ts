import path from 'node:path';
import {
  type Container,
  type ContainerEventResponse,
  type ContainerEventType,
  type ContainerStatus,
  type DeepPartial,
  type Image,
  NamespaceMode,
  type PodSandbox,
  type PodSandboxStatus,
} from '../gen/runtime/v1/api.js';
import type { ContainerRecord, ImageRecord, SandboxRecord } from './records.js';

// Records -> CRI messages, in the shape containerd reports them.

export function toPodSandbox(sb: SandboxRecord): DeepPartial<PodSandbox> {
  return {
    id: sb.id,
    metadata: sb.config.metadata,
    state: sb.state,
    createdAt: sb.createdAt,
    labels: sb.config.labels,
    annotations: sb.config.annotations,
    runtimeHandler: sb.runtimeHandler,
  };
}

export function toPodSandboxStatus(sb: SandboxRecord): DeepPartial<PodSandboxStatus> {
  const ns = sb.config.linux?.securityContext?.namespaceOptions;
  return {
    id: sb.id,
    metadata: sb.config.metadata,
    state: sb.state,
    createdAt: sb.createdAt,
    // Host-network pods have no pod IP of their own (the kubelet then uses the node IP).
    network: ns?.network === NamespaceMode.NODE ? { ip: '' } : { ip: sb.ip },
    linux: { namespaces: { options: ns ?? {} } },
    labels: sb.config.labels,
    annotations: sb.config.annotations,
    runtimeHandler: sb.runtimeHandler,
  };
}

export function toContainer(c: ContainerRecord): DeepPartial<Container> {
  return {
    id: c.id,
    podSandboxId: c.podSandboxId,
    metadata: c.config.metadata,
    image: { ...c.config.image, image: c.image },
    imageRef: c.imageId,
    imageId: c.imageId,
    state: c.state,
    createdAt: c.createdAt,
    labels: c.config.labels,
    annotations: c.config.annotations,
  };
}

/** `sandbox` is the container's own, whose log directory its relative log path is under. */
export function toContainerStatus(
  c: ContainerRecord,
  sandbox: SandboxRecord | undefined,
): DeepPartial<ContainerStatus> {
  const logDir = sandbox?.config.logDirectory ?? '';
  return {
    id: c.id,
    metadata: c.config.metadata,
    state: c.state,
    createdAt: c.createdAt,
    startedAt: c.startedAt,
    finishedAt: c.finishedAt,
    exitCode: c.exitCode,
    image: { ...c.config.image, image: c.image },
    imageRef: c.imageId,
    imageId: c.imageId,
    reason: c.reason,
    message: c.message,
    labels: c.config.labels,
    annotations: c.config.annotations,
    mounts: c.config.mounts,
    logPath: c.config.logPath && logDir ? path.join(logDir, c.config.logPath) : c.config.logPath,
    resources: c.resources ? { linux: c.resources } : undefined,
  };
}

export function toImage(img: ImageRecord): DeepPartial<Image> {
  return {
    id: img.id,
    repoTags: img.repoTags,
    repoDigests: img.repoDigests,
    size: img.size,
    pinned: img.pinned,
  };
}

/** An event carries the sandbox status and all its containers' statuses, as containerd sends. */
export function containerEvent(
  type: ContainerEventType,
  containerId: string,
  createdAt: bigint,
  sandbox: SandboxRecord | undefined,
  containers: ContainerRecord[],
): DeepPartial<ContainerEventResponse> {
  return {
    containerId,
    containerEventType: type,
    createdAt,
    podSandboxStatus: sandbox ? toPodSandboxStatus(sandbox) : undefined,
    containersStatuses: containers.map((c) => toContainerStatus(c, sandbox)),
  };
}
