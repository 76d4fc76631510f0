import { randomBytes } from 'node:crypto';
import { normalizeImageRef, splitImageReference, type TimerClock } from '@kh/apimachinery';
import {
  AlreadyExistsError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from '../api/errors.js';
import {
  type ContainerConfig,
  ContainerEventType,
  ContainerState,
  type PodSandboxConfig,
  PodSandboxState,
} from '../gen/runtime/v1/api.js';
import { containerEvent } from './convert.js';
import { EventBus } from './events.js';
import { sha256 } from './image_ref.js';
import type { ContainerRecord, ImageRecord, SandboxRecord } from './records.js';
import type { ContainerInfo, FakeScript } from './script.js';

export interface Condition {
  status: boolean;
  reason: string;
  message: string;
}

/** Scripted ImageFsInfo numbers; unset fields are derived from the image store. */
export interface ImageFsScript {
  usedBytes?: bigint | number;
  inodesUsed?: bigint | number;
  /** Not part of CRI; kept so tests modelling disk pressure can read one source of truth. */
  capacityBytes?: bigint | number;
}

const newId = () => randomBytes(32).toString('hex');

/** Exit codes a stop produces: SIGTERM honoured within the grace period, or SIGKILL. */
const EXIT_SIGTERM = 143;
const EXIT_SIGKILL = 137;

/**
 * The fake runtime's in-memory world and its legal transitions. Every transition validates like
 * containerd does (throwing CriErrors) and publishes the matching container event.
 */
export class FakeState {
  readonly sandboxes = new Map<string, SandboxRecord>();
  readonly containers = new Map<string, ContainerRecord>();
  readonly images = new Map<string, ImageRecord>();
  readonly events = new EventBus();
  readonly health: { runtime: Condition; network: Condition } = {
    runtime: { status: true, reason: '', message: '' },
    network: { status: true, reason: '', message: '' },
  };
  imageFs: ImageFsScript = {};
  /** Every pod CIDR UpdateRuntimeConfig brought, in order. */
  readonly podCidrs: string[] = [];
  #nextIp = 2;

  constructor(
    readonly clock: TimerClock,
    readonly script: FakeScript,
  ) {}

  private emit(type: ContainerEventType, id: string, sandboxId: string): void {
    const at = this.nowNs();
    this.events.publish(
      containerEvent(type, id, at, this.sandboxes.get(sandboxId), this.containersOf(sandboxId)),
    );
  }

  /** CRI timestamps are Unix nanoseconds; the clock counts milliseconds. */
  nowNs(): bigint {
    return BigInt(this.clock.now()) * 1_000_000n;
  }

  // ---- lookups

  private findById<T extends { id: string }>(map: Map<string, T>, id: string, kind: string): T | undefined {
    if (!id) throw new InvalidArgumentError(`${kind} id is required`);
    const exact = map.get(id);
    if (exact) return exact;
    const byPrefix = [...map.values()].filter((r) => r.id.startsWith(id));
    if (byPrefix.length > 1) throw new InvalidArgumentError(`${kind} id prefix "${id}" is ambiguous`);
    return byPrefix[0];
  }

  sandbox(id: string): SandboxRecord {
    const sb = this.findById(this.sandboxes, id, 'pod sandbox');
    if (!sb) throw new NotFoundError(`pod sandbox "${id}" not found`);
    return sb;
  }

  container(id: string): ContainerRecord {
    const c = this.findById(this.containers, id, 'container');
    if (!c) throw new NotFoundError(`container "${id}" not found`);
    return c;
  }

  /** By normalised reference, image id, or repo digest; undefined when absent. */
  image(ref: string): ImageRecord | undefined {
    if (!ref) throw new InvalidArgumentError('image reference is required');
    const byId = this.images.get(ref) ?? this.images.get(`sha256:${ref}`);
    if (byId) return byId;
    const norm = normalizeImageRef(ref);
    return [...this.images.values()].find((i) => i.repoTags.includes(norm) || i.repoDigests.includes(norm));
  }

  info(c: ContainerRecord): ContainerInfo {
    return {
      id: c.id,
      name: c.config.metadata?.name ?? '',
      image: c.image,
      labels: c.config.labels,
      podSandboxId: c.podSandboxId,
    };
  }

  // ---- images

  addImage(ref: string, size: bigint, pinned = false): ImageRecord {
    const norm = normalizeImageRef(ref);
    const existing = this.image(norm);
    if (existing) {
      existing.size = size;
      existing.pinned = pinned;
      return existing;
    }
    const id = sha256(`image:${norm}`);
    const repoDigests = norm.includes('@')
      ? [norm]
      : [`${splitImageReference(norm).repository}@${sha256(`manifest:${norm}`)}`];
    const img: ImageRecord = {
      id,
      repoTags: norm.includes('@') ? [] : [norm],
      repoDigests,
      size,
      pinned,
    };
    this.images.set(id, img);
    return img;
  }

  removeImage(ref: string): void {
    const img = this.image(ref);
    if (img) this.images.delete(img.id);
  }

  // ---- sandboxes

  runSandbox(config: PodSandboxConfig | undefined, runtimeHandler: string): SandboxRecord {
    const md = config?.metadata;
    if (!config || !md) throw new InvalidArgumentError('pod sandbox config with metadata is required');
    for (const field of ['name', 'namespace', 'uid'] as const) {
      if (!md[field]) throw new InvalidArgumentError(`pod sandbox metadata.${field} is required`);
    }
    const clash = [...this.sandboxes.values()].find(
      (s) =>
        s.config.metadata?.name === md.name &&
        s.config.metadata?.namespace === md.namespace &&
        s.config.metadata?.uid === md.uid &&
        s.config.metadata?.attempt === md.attempt,
    );
    if (clash) {
      throw new AlreadyExistsError(
        `pod sandbox name "${md.name}_${md.namespace}_${md.uid}_${md.attempt}" is reserved for "${clash.id}"`,
      );
    }
    const sb: SandboxRecord = {
      id: newId(),
      config,
      runtimeHandler,
      state: PodSandboxState.SANDBOX_READY,
      createdAt: this.nowNs(),
      ip: `10.88.${Math.floor(this.#nextIp / 254) % 256}.${(this.#nextIp++ % 254) + 1}`,
    };
    this.sandboxes.set(sb.id, sb);
    this.emit(ContainerEventType.CONTAINER_CREATED_EVENT, sb.id, sb.id);
    this.emit(ContainerEventType.CONTAINER_STARTED_EVENT, sb.id, sb.id);
    return sb;
  }

  /** Kills the sandbox's containers, then marks it NOTREADY. Stopping twice is a no-op. */
  stopSandbox(id: string): void {
    const sb = this.sandbox(id);
    for (const c of this.containersOf(sb.id)) this.stopContainer(c.id, 0);
    if (sb.state === PodSandboxState.SANDBOX_NOTREADY) return;
    sb.state = PodSandboxState.SANDBOX_NOTREADY;
    this.emit(ContainerEventType.CONTAINER_STOPPED_EVENT, sb.id, sb.id);
  }

  /** Stops and removes the sandbox and its containers; removing an unknown sandbox is a no-op. */
  removeSandbox(id: string): void {
    const sb = this.findById(this.sandboxes, id, 'pod sandbox');
    if (!sb) return;
    this.stopSandbox(sb.id);
    for (const c of this.containersOf(sb.id)) this.removeContainer(c.id);
    this.emit(ContainerEventType.CONTAINER_DELETED_EVENT, sb.id, sb.id);
    this.sandboxes.delete(sb.id);
  }

  containersOf(sandboxId: string): ContainerRecord[] {
    return [...this.containers.values()].filter((c) => c.podSandboxId === sandboxId);
  }

  // ---- containers

  createContainer(podSandboxId: string, config: ContainerConfig | undefined): ContainerRecord {
    const sb = this.sandbox(podSandboxId);
    const name = config?.metadata?.name;
    if (!config || !name) throw new InvalidArgumentError('container config with metadata.name is required');
    const imageRef = config.image?.image;
    if (!imageRef) throw new InvalidArgumentError('container config image.image is required');
    if (sb.state !== PodSandboxState.SANDBOX_READY) {
      throw new FailedPreconditionError(`pod sandbox "${sb.id}" is not ready`);
    }
    const img = this.image(imageRef);
    if (!img) throw new NotFoundError(`image "${imageRef}" not found: pull it first`);
    const attempt = config.metadata?.attempt ?? 0;
    const clash = this.containersOf(sb.id).find(
      (c) => c.config.metadata?.name === name && c.config.metadata?.attempt === attempt,
    );
    if (clash) {
      throw new AlreadyExistsError(
        `container name "${name}" attempt ${attempt} is reserved for "${clash.id}"`,
      );
    }
    const c: ContainerRecord = {
      id: newId(),
      podSandboxId: sb.id,
      config,
      image: normalizeImageRef(imageRef),
      imageId: img.id,
      state: ContainerState.CONTAINER_CREATED,
      createdAt: this.nowNs(),
      startedAt: 0n,
      finishedAt: 0n,
      exitCode: 0,
      reason: '',
      message: '',
      resources: config.linux?.resources,
      cancelExit: undefined,
    };
    this.containers.set(c.id, c);
    this.emit(ContainerEventType.CONTAINER_CREATED_EVENT, c.id, sb.id);
    return c;
  }

  startContainer(id: string): void {
    const c = this.container(id);
    if (c.state !== ContainerState.CONTAINER_CREATED) {
      throw new FailedPreconditionError(
        `container "${c.id}" is in ${ContainerState[c.state]} state, not CREATED`,
      );
    }
    c.state = ContainerState.CONTAINER_RUNNING;
    c.startedAt = this.nowNs();
    this.emit(ContainerEventType.CONTAINER_STARTED_EVENT, c.id, c.podSandboxId);
    const exit = this.script.exitFor(this.info(c));
    if (exit) {
      c.cancelExit = this.clock.setTimer(exit.afterMs, () => {
        c.cancelExit = undefined;
        this.exitContainer(c.id, exit.exitCode, exit.reason, exit.message);
      });
    }
  }

  /** The container's process ends now. Ignored unless it is running. */
  exitContainer(id: string, exitCode: number, reason?: string, message?: string): void {
    const c = this.containers.get(id);
    if (!c || c.state !== ContainerState.CONTAINER_RUNNING) return;
    c.cancelExit?.();
    c.cancelExit = undefined;
    c.state = ContainerState.CONTAINER_EXITED;
    c.finishedAt = this.nowNs();
    c.exitCode = exitCode;
    c.reason = reason ?? (exitCode === 0 ? 'Completed' : 'Error');
    c.message = message ?? '';
    this.emit(ContainerEventType.CONTAINER_STOPPED_EVENT, c.id, c.podSandboxId);
  }

  /**
   * Stops a running container: with a grace period the process obeys SIGTERM (exit 143), with
   * timeout 0 it is killed (137). Created or exited containers are left as they are.
   */
  stopContainer(id: string, timeoutSeconds: number): void {
    const c = this.container(id);
    this.exitContainer(c.id, timeoutSeconds > 0 ? EXIT_SIGTERM : EXIT_SIGKILL);
  }

  /** Force-removes (killing it if running); removing an unknown container is a no-op. */
  removeContainer(id: string): void {
    const c = this.findById(this.containers, id, 'container');
    if (!c) return;
    this.exitContainer(c.id, EXIT_SIGKILL);
    this.emit(ContainerEventType.CONTAINER_DELETED_EVENT, c.id, c.podSandboxId);
    this.containers.delete(c.id);
  }
}
