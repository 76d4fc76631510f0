// The kubelet's allocation manager (InPlacePodVerticalScaling, beta in 1.33): which resources each
// admitted pod's containers were allocated, which were actuated (last applied to their cgroups),
// both checkpointed under the root dir so an agent restart neither loses an accepted resize nor
// re-applies one (written in the background, flushed when the agent stops); and handlePodResourcesResize, which decides whether a pod's changed spec fits
// (allocate it), does not fit now (PodResizePending, Deferred) or never can (Infeasible).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type ActuatedResources,
  linuxResources,
  type PodStatus,
  type PodSyncResult,
  resizableContainers,
  resourceChanged,
} from '@kh/runtime-manager';
import type { V1Node, V1Pod, V1PodCondition, V1ResourceRequirements } from '@kubernetes/client-node';
import type { AdmitHandler } from '../admission/handler.js';
import { podRequests } from '../admission/resources.js';
import { type Logger, silentLogger } from '../util/log.js';
import { Quantity } from '../util/quantity.js';
import { type CheckpointFs, CheckpointWriter } from './checkpoint_writer.js';

/** Checkpoint file names under the root dir, as the kubelet's. */
export const ALLOCATED_PODS_STATE = 'allocated_pods_state';
export const ACTUATED_PODS_STATE = 'actuated_pods_state';

export const PodResizePending = 'PodResizePending';
export const PodResizeInProgress = 'PodResizeInProgress';
export const PodReasonDeferred = 'Deferred';
export const PodReasonInfeasible = 'Infeasible';
export const PodReasonError = 'Error';

type PodResources = Record<string, Record<string, V1ResourceRequirements>>;

/** One JSON file of pod uid -> container name -> resources, rewritten atomically after changes. */
class ResourceCheckpoint {
  private state: PodResources = {};
  readonly writer: CheckpointWriter | undefined;

  constructor(path: string | undefined, log: Logger, fs?: CheckpointFs) {
    if (path === undefined) return;
    this.writer = new CheckpointWriter({
      path,
      serialize: () => JSON.stringify({ podResources: this.state }),
      // As the kubelet: the change stands in memory, and the failure is logged.
      onError: (err) => log.error('Failed to write the checkpoint', { path, err }),
      ...(fs ? { fs } : {}),
    });
    try {
      const parsed = JSON.parse(readFileSync(path, 'utf8'));
      if (parsed && typeof parsed.podResources === 'object') this.state = parsed.podResources;
    } catch (err) {
      // No checkpoint yet is the normal first start; a corrupt one starts empty, as the kubelet.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.state = {};
    }
  }

  get(uid: string, name: string): V1ResourceRequirements | undefined {
    return this.state[uid]?.[name];
  }

  has(uid: string): boolean {
    return this.state[uid] !== undefined;
  }

  set(uid: string, name: string, r: V1ResourceRequirements): void {
    this.state[uid] = { ...(this.state[uid] ?? {}), [name]: structuredClone(r) };
    this.save();
  }

  setPod(uid: string, containers: Record<string, V1ResourceRequirements>): void {
    this.state[uid] = structuredClone(containers);
    this.save();
  }

  retain(keep: ReadonlySet<string>): void {
    const gone = Object.keys(this.state).filter((uid) => !keep.has(uid));
    if (gone.length === 0) return;
    for (const uid of gone) delete this.state[uid];
    this.save();
  }

  private save(): void {
    this.writer?.changed();
  }
}

export interface AllocationManagerOptions {
  /** The kubelet root dir; without it nothing is checkpointed. */
  rootDir?: string;
  /** This node as admission sees it (allocatable). */
  node: () => V1Node;
  /** The other admitted pods that still count against the node. */
  activePods: () => V1Pod[];
  /** The node's admit handlers: a resize is admitted as a new pod of the new size would be. */
  admit: AdmitHandler;
  log?: Logger;
  /** The checkpoints' file operations (tests). */
  fs?: CheckpointFs;
}

const containersOf = (pod: V1Pod) => [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
const isStatic = (pod: V1Pod) =>
  ['file', 'http'].includes(pod.metadata?.annotations?.['kubernetes.io/config.source'] ?? '');

export class AllocationManager implements ActuatedResources {
  private readonly allocated: ResourceCheckpoint;
  private readonly actuated: ResourceCheckpoint;
  /** PodResizePending / PodResizeInProgress by pod uid, reported with the pod's status. */
  private readonly resizeConditions = new Map<string, Map<string, V1PodCondition>>();

  constructor(private readonly opts: AllocationManagerOptions) {
    const at = (name: string) => (opts.rootDir ? join(opts.rootDir, name) : undefined);
    const log = opts.log ?? silentLogger;
    this.allocated = new ResourceCheckpoint(at(ALLOCATED_PODS_STATE), log, opts.fs);
    this.actuated = new ResourceCheckpoint(at(ACTUATED_PODS_STATE), log, opts.fs);
  }

  /**
   * Runs with the agent: once it stops, both checkpoints are written as they are then. A write
   * that fails is logged (onError) and does not fail the stop.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (!signal.aborted)
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
    await this.flush().catch(() => undefined);
  }

  /** Resolves once both checkpoints on disk hold the current state; rejects when a write failed. */
  async flush(): Promise<void> {
    await Promise.all([this.allocated.writer?.flush(), this.actuated.writer?.flush()]);
  }

  getActuatedResources(uid: string, name: string): V1ResourceRequirements | undefined {
    return this.actuated.get(uid, name);
  }

  setActuatedResources(uid: string, name: string, r: V1ResourceRequirements): void {
    this.actuated.set(uid, name, r);
  }

  getContainerResourceAllocation(uid: string, name: string): V1ResourceRequirements | undefined {
    return this.allocated.get(uid, name);
  }

  /** Records the pod's spec resources as its allocation, unless it has one (a restart re-admits it). */
  addPod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (!this.allocated.has(uid)) this.setAllocatedResources(pod);
  }

  setAllocatedResources(pod: V1Pod): void {
    const containers = Object.fromEntries(containersOf(pod).map((c) => [c.name, c.resources ?? {}]));
    this.allocated.setPod(pod.metadata?.uid ?? '', containers);
  }

  /** The pod with its allocated resources in place of the spec's; `updated` when they differed. */
  updatePodFromAllocation(pod: V1Pod): { pod: V1Pod; updated: boolean } {
    const uid = pod.metadata?.uid ?? '';
    if (!this.allocated.has(uid)) return { pod, updated: false };
    const out = structuredClone(pod);
    let updated = false;
    for (const c of containersOf(out)) {
      const a = this.allocated.get(uid, c.name);
      if (a === undefined || sameResources(a, c.resources ?? {})) continue;
      c.resources = structuredClone(a);
      updated = true;
    }
    return updated ? { pod: out, updated } : { pod, updated: false };
  }

  /** Forgets pods no longer on the node (housekeeping). */
  removeOrphanedPods(keep: ReadonlySet<string>): void {
    this.allocated.retain(keep);
    this.actuated.retain(keep);
    for (const uid of this.resizeConditions.keys()) if (!keep.has(uid)) this.resizeConditions.delete(uid);
  }

  /**
   * handlePodResourcesResize: the pod to sync. A spec that fits becomes the allocation; one that
   * does not keeps the old allocation and a PodResizePending condition saying why.
   */
  handlePodResourcesResize(pod: V1Pod): V1Pod {
    const uid = pod.metadata?.uid ?? '';
    const { pod: allocatedPod, updated } = this.updatePodFromAllocation(pod);
    if (!updated) {
      this.clear(uid, PodResizePending);
      return pod;
    }
    if (isStatic(pod)) {
      this.set(uid, PodResizePending, PodReasonInfeasible, 'In-place resize of static-pods is not supported');
      return allocatedPod;
    }
    const verdict = this.canResizePod(pod);
    if (!verdict.fit) {
      this.set(uid, PodResizePending, verdict.reason, verdict.message);
      return allocatedPod;
    }
    this.setAllocatedResources(pod);
    this.clear(uid, PodResizePending);
    // A previous resize's error must not outlive the new allocation.
    this.clear(uid, PodResizeInProgress);
    return pod;
  }

  /** canResizePod: Infeasible beyond the node's allocatable, Deferred when other pods are in the way. */
  private canResizePod(pod: V1Pod): { fit: true } | { fit: false; reason: string; message: string } {
    const node = this.opts.node();
    const allocatable = node.status?.allocatable ?? {};
    const want = podRequests(pod);
    const cpuCap = allocatable.cpu !== undefined ? Quantity.parse(allocatable.cpu).milliValue() : undefined;
    const memCap = allocatable.memory !== undefined ? Quantity.parse(allocatable.memory).value() : undefined;
    const cpu = want.cpu ?? 0n;
    const mem = (want.memory ?? 0n) / 1000n;
    if ((memCap !== undefined && mem > memCap) || (cpuCap !== undefined && cpu > cpuCap)) {
      const what =
        memCap !== undefined && mem > memCap
          ? `memory, requested: ${mem}, capacity: ${memCap}`
          : `cpu, requested: ${cpu}, capacity: ${cpuCap}`;
      return {
        fit: false,
        reason: PodReasonInfeasible,
        message: `Node didn't have enough capacity: ${what}`,
      };
    }
    const uid = pod.metadata?.uid;
    const others = this.opts
      .activePods()
      .filter((p) => p.metadata?.uid !== uid)
      .map((p) => this.updatePodFromAllocation(p).pod);
    const verdict = this.opts.admit.admit({ pod, otherPods: others });
    if (!verdict.admit) return { fit: false, reason: PodReasonDeferred, message: verdict.message };
    return { fit: true };
  }

  /**
   * After a sync of the allocated pod: PodResizeInProgress while a running container's actuated
   * resources differ from its allocation, with reason Error when the resize step failed.
   */
  afterSync(pod: V1Pod, status: PodStatus, result: PodSyncResult): void {
    const uid = pod.metadata?.uid ?? '';
    const failed = result.steps.find((s) => s.action === 'ResizePodInPlace' && s.error);
    if (failed) {
      this.set(uid, PodResizeInProgress, PodReasonError, failed.message ?? failed.error?.message ?? '');
      return;
    }
    if (this.isPodResizeInProgress(pod, status)) {
      this.set(uid, PodResizeInProgress);
      return;
    }
    this.clear(uid, PodResizeInProgress);
    // Done: a change no cgroup shows (a memory request) is actuated too, so the status reports it.
    for (const { container: c } of resizableContainers(pod)) {
      const actuated = this.actuated.get(uid, c.name);
      if (actuated !== undefined && !sameResources(actuated, c.resources ?? {}))
        this.actuated.set(uid, c.name, c.resources ?? {});
    }
  }

  /**
   * Whether any running sidecar's or app container's cgroup values (actuated) differ from its
   * allocation; a regular init container is never resized.
   */
  isPodResizeInProgress(pod: V1Pod, status: PodStatus): boolean {
    const uid = pod.metadata?.uid ?? '';
    return resizableContainers(pod).some(({ container: c }) => {
      const running = status.containerStatuses.find((s) => s.name === c.name)?.state === 'running';
      const actuated = this.actuated.get(uid, c.name);
      if (!running || actuated === undefined) return false;
      const want = linuxResources(c);
      const have = linuxResources({ name: c.name, resources: actuated });
      return resourceChanged(have, want, 'memory') || resourceChanged(have, want, 'cpu');
    });
  }

  /** The pod's resize conditions, for its status; none once it is terminal. */
  conditions(uid: string, terminal: boolean): V1PodCondition[] {
    if (terminal) {
      this.resizeConditions.delete(uid);
      return [];
    }
    return [...(this.resizeConditions.get(uid)?.values() ?? [])];
  }

  private set(uid: string, type: string, reason?: string, message?: string): void {
    const byType = this.resizeConditions.get(uid) ?? new Map<string, V1PodCondition>();
    byType.set(type, {
      type,
      status: 'True',
      ...(reason ? { reason } : {}),
      ...(message ? { message } : {}),
    });
    this.resizeConditions.set(uid, byType);
  }

  private clear(uid: string, type: string): void {
    this.resizeConditions.get(uid)?.delete(type);
  }
}

/** Semantic equality of two requirements (1 == 1000m), as apiequality.Semantic. */
function sameResources(a: V1ResourceRequirements, b: V1ResourceRequirements): boolean {
  const same = (x: Record<string, string> = {}, y: Record<string, string> = {}) => {
    const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
    for (const k of keys) {
      if (x[k] === y[k]) continue;
      if (x[k] === undefined || y[k] === undefined) return false;
      if (Quantity.parse(String(x[k])).cmp(Quantity.parse(String(y[k]))) !== 0) return false;
    }
    return true;
  };
  return same(a.requests, b.requests) && same(a.limits, b.limits);
}
