import type {
  ContainerConfig,
  ContainerState,
  LinuxContainerResources,
  PodSandboxConfig,
  PodSandboxState,
} from '../gen/runtime/v1/api.js';

// What the fake runtime keeps per sandbox, container and image: FakeState changes them,
// convert.ts turns them into CRI messages.

export interface SandboxRecord {
  id: string;
  config: PodSandboxConfig;
  runtimeHandler: string;
  state: PodSandboxState;
  createdAt: bigint;
  ip: string;
}

export interface ContainerRecord {
  id: string;
  podSandboxId: string;
  config: ContainerConfig;
  /** Normalised reference of the image it was created from. */
  image: string;
  imageId: string;
  state: ContainerState;
  createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
  message: string;
  resources: LinuxContainerResources | undefined;
  /** Cancels a scripted exit that has not happened yet. */
  cancelExit: (() => void) | undefined;
}

export interface ImageRecord {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: bigint;
  pinned: boolean;
}
