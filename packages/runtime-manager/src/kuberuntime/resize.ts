// In-place pod resize (InPlacePodVerticalScaling), the runtime manager's half: which running
// containers' cgroups differ from the resources the agent allocated them (computePodResizeAction)
// and the UpdateContainerResources calls that close the gap, in the kubelet's order
// (doPodResizeAction): memory first, then cpu; per resource, decreases before increases; the pod
// cgroup grows before its containers and shrinks after them.
import { Quantity } from '@kh/apimachinery';
import type { LinuxContainerResources } from '@kh/cri-api';
import type { V1Container, V1Pod, V1ResourceRequirements } from '@kubernetes/client-node';
import type { ContainerID, ContainerStatus, PodStatus } from '../container/runtime.js';
import { hashContainer } from './hash.js';
import { linuxResources } from './resources.js';

export type ResizableResource = 'memory' | 'cpu';

/**
 * The kubelet's actuated resources: what was last applied to each container (at its start or
 * by a resize). The agent's allocation manager keeps them, checkpointed.
 */
export interface ActuatedResources {
  getActuatedResources(podUid: string, containerName: string): V1ResourceRequirements | undefined;
  setActuatedResources(podUid: string, containerName: string, resources: V1ResourceRequirements): void;
}

/** The pod-level cgroup, resized around its containers (the kubelet's pod container manager). */
export interface PodCgroups {
  update(pod: V1Pod): Promise<void>;
}

/** Memory in use, in bytes: the pod's, and each running container's by name. */
export interface PodMemoryUsage {
  pod?: bigint;
  containers: ReadonlyMap<string, bigint>;
}

/**
 * The kubelet's stats provider as a resize reads it (PodCPUAndMemoryStats). Optional: without
 * it, memory limits are lowered unchecked.
 */
export interface PodStatsProvider {
  podMemoryUsage(pod: V1Pod, status: PodStatus): Promise<PodMemoryUsage>;
}

export interface ContainerToUpdate {
  name: string;
  id: ContainerID;
  container: V1Container;
  /** What the cgroup has (from the actuated record) and what the allocation wants. */
  current: LinuxContainerResources;
  desired: LinuxContainerResources;
}

export type ContainersToUpdate = Record<ResizableResource, ContainerToUpdate[]>;

/** The cgroup values a resource sets, its limit first: memory.limit; cpu quota, then shares. */
function cgroupValues(r: LinuxContainerResources, name: ResizableResource): bigint[] {
  return name === 'memory' ? [r.memoryLimitInBytes] : [r.cpuQuota, r.cpuShares];
}

/** Whether value i of a resource is a limit, where 0 means none (shares are a weight). */
const isLimit = (name: ResizableResource, i: number) => name === 'memory' || i === 0;

/** A value to compare: a limit of 0 (none) is above every limit. */
const comparable = (name: ResizableResource, i: number, v: bigint) =>
  isLimit(name, i) && v === 0n ? BigInt(Number.MAX_SAFE_INTEGER) : v;

/**
 * -1, 0 or 1: how a container's resource moves, by its limit when that changes, else by its
 * request, as the kubelet's markContainerForUpdate orders them.
 */
function direction(u: ContainerToUpdate, name: ResizableResource): number {
  const from = cgroupValues(u.current, name);
  const to = cgroupValues(u.desired, name);
  for (const i of from.keys()) {
    const a = comparable(name, i, from[i]!);
    const b = comparable(name, i, to[i]!);
    if (a !== b) return b > a ? 1 : -1;
  }
  return 0;
}

/**
 * How each of the pod's totals of a resource moves, limit first (its containers' values summed; no
 * limit when one of them has none). The kubelet's resizeContainers sets a pod limit that grows
 * before the containers and one that shrinks after them, so that on cgroup v1 no child ever holds
 * a quota or limit above its parent's.
 */
function podTotalMoves(pod: V1Pod, list: ContainerToUpdate[], name: ResizableResource): number[] {
  const updated = new Map(list.map((u) => [u.name, u]));
  const containers = resizableContainers(pod).map((x) => x.container);
  return cgroupValues(list[0]!.current, name).map((_, i) => {
    const total = (side: 'current' | 'desired') => {
      const values = containers.map((c) => {
        const u = updated.get(c.name);
        return cgroupValues(u ? u[side] : linuxResources(c), name)[i]!;
      });
      return isLimit(name, i) && values.some((v) => v === 0n)
        ? BigInt(Number.MAX_SAFE_INTEGER)
        : values.reduce((a, b) => a + b, 0n);
    };
    const [a, b] = [total('current'), total('desired')];
    return a === b ? 0 : b > a ? 1 : -1;
  });
}

/** Whether a resource's cgroup values differ between the two. */
export function resourceChanged(
  current: LinuxContainerResources,
  desired: LinuxContainerResources,
  name: ResizableResource,
): boolean {
  const a = cgroupValues(current, name);
  const b = cgroupValues(desired, name);
  return a.some((v, i) => v !== b[i]);
}

/** Whether the memory request moved from what was last applied. */
function memoryRequestChanged(
  record: V1ResourceRequirements,
  allocated: V1ResourceRequirements | undefined,
): boolean {
  const bytes = (q: string | undefined) => (q === undefined ? 0n : Quantity.fromJSON(q).value());
  return bytes(record.requests?.memory) !== bytes(allocated?.requests?.memory);
}

function restartOnResize(c: V1Container, name: ResizableResource): boolean {
  return (c.resizePolicy ?? []).some(
    (p) => p.resourceName === name && p.restartPolicy === 'RestartContainer',
  );
}

export interface ResizeDecision {
  update: ContainersToUpdate;
  /**
   * Containers whose resize policy asks for a restart: killed and started with the new size.
   * `index` is into spec.initContainers for a sidecar (`init`), else into spec.containers.
   */
  restart: { index: number; init: boolean; status: ContainerStatus; container: V1Container }[];
}

/**
 * The containers a resize can touch, as the kubelet's isResizableContainer: the restartable init
 * containers (sidecars), which the kubelet visits first, then the app containers.
 */
export function resizableContainers(pod: V1Pod): { index: number; init: boolean; container: V1Container }[] {
  const sidecars = (pod.spec?.initContainers ?? [])
    .map((container, index) => ({ index, init: true, container }))
    .filter((x) => x.container.restartPolicy === 'Always');
  const apps = (pod.spec?.containers ?? []).map((container, index) => ({ index, init: false, container }));
  return [...sidecars, ...apps];
}

/**
 * computePodResizeAction: for each running sidecar and app container (same spec hash, not
 * otherwise being restarted) whose actuated resources differ from the pod's (allocated) ones. A
 * container without an actuated record counts as zero-sized, as the kubelet does: one idempotent
 * update.
 */
export function computePodResizeAction(
  pod: V1Pod,
  status: PodStatus,
  actuated: ActuatedResources,
  skip: ReadonlySet<string>,
): ResizeDecision {
  const out: ResizeDecision = { update: { memory: [], cpu: [] }, restart: [] };
  if (pod.metadata?.deletionTimestamp) return out;
  const uid = pod.metadata?.uid ?? '';
  for (const { index, init, container: c } of resizableContainers(pod)) {
    const s = status.containerStatuses.find((x) => x.name === c.name);
    if (s?.state !== 'running' || skip.has(s.id.id) || s.hash !== hashContainer(c)) continue;
    const desired = linuxResources(c);
    const record = actuated.getActuatedResources(uid, c.name);
    const current = linuxResources({ name: c.name, resources: record ?? {} });
    const changed = (['memory', 'cpu'] as const).filter((r) => resourceChanged(current, desired, r));
    // A memory request sets no cgroup value, so it is never updated in place; yet, as the
    // kubelet compares requests too, a RestartContainer memory policy restarts for it.
    const restartFor =
      record && memoryRequestChanged(record, c.resources) ? [...changed, 'memory' as const] : changed;
    if (restartFor.some((r) => restartOnResize(c, r))) {
      out.restart.push({ index, init, status: s, container: c });
      continue;
    }
    for (const r of changed) {
      const u: ContainerToUpdate = { name: c.name, id: s.id, container: c, current, desired };
      // Decreases first, so the pod's total never overshoots while its containers move.
      if (direction(u, r) < 0) out.update[r].unshift(u);
      else out.update[r].push(u);
    }
  }
  return out;
}

/** The actuated record after `name` was applied: that resource's requests and limits from the allocation. */
export function withResource(
  actuated: V1ResourceRequirements | undefined,
  allocated: V1ResourceRequirements | undefined,
  name: ResizableResource,
): V1ResourceRequirements {
  const pick = (from: Record<string, string> | undefined, into: Record<string, string> | undefined) => {
    const out: Record<string, string> = { ...(into ?? {}) };
    delete out[name];
    if (from?.[name] !== undefined) out[name] = from[name]!;
    return out;
  };
  const requests = pick(allocated?.requests, actuated?.requests);
  const limits = pick(allocated?.limits, actuated?.limits);
  return {
    ...(Object.keys(requests).length > 0 ? { requests } : {}),
    ...(Object.keys(limits).length > 0 ? { limits } : {}),
  };
}

export interface ResizeDeps {
  update(id: string, resources: LinuxContainerResources): Promise<void>;
  actuated: ActuatedResources;
  podCgroups?: PodCgroups;
  /** Read once before any memory limit is lowered. */
  memoryUsage?: () => Promise<PodMemoryUsage>;
}

/** A limit (0 is none) below what is in use: the resize's message, as the kubelet words it. */
function belowUsage(what: string, limit: bigint, usage: bigint | undefined): string | undefined {
  if (limit === 0n || usage === undefined || usage <= limit) return undefined;
  return `attempting to set ${what} memory limit (${limit}) below current usage (${usage})`;
}

/**
 * The kubelet's best-effort guard for memory limit decreases (KEP-1287): on cgroup v2 a limit
 * below the use makes the kernel OOM-kill, so when a container's (or sidecar's) new limit, or the
 * pod's (podMemoryLimit), is below what it uses now, nothing is resized
 * and the step fails; the kubelet retries on every sync, and PodResizeInProgress says why.
 */
async function checkMemoryDecreases(
  pod: V1Pod,
  lowered: ContainerToUpdate[],
  usage: () => Promise<PodMemoryUsage>,
): Promise<void> {
  if (lowered.length === 0) return;
  const used = await usage();
  for (const u of lowered) {
    const msg = belowUsage(
      `container "${u.name}"`,
      u.desired.memoryLimitInBytes,
      used.containers.get(u.name),
    );
    if (msg) throw new Error(msg);
  }
  const msg = belowUsage('pod', podMemoryLimit(pod), used.pod);
  if (msg) throw new Error(msg);
}

/**
 * The pod cgroup's memory limit as the kubelet's PodLimits makes it: app containers and sidecars
 * summed, or a regular init container's with the sidecars started before it when that is more;
 * 0 (none) unless every container has one.
 */
function podMemoryLimit(pod: V1Pod): bigint {
  let sidecars = 0n;
  let initPeak = 0n;
  for (const c of pod.spec?.initContainers ?? []) {
    const limit = linuxResources(c).memoryLimitInBytes;
    if (limit === 0n) return 0n;
    if (c.restartPolicy === 'Always') sidecars += limit;
    else if (sidecars + limit > initPeak) initPeak = sidecars + limit;
  }
  let running = sidecars;
  for (const c of pod.spec?.containers ?? []) {
    const limit = linuxResources(c).memoryLimitInBytes;
    if (limit === 0n) return 0n;
    running += limit;
  }
  return running > initPeak ? running : initPeak;
}

/**
 * doPodResizeAction: per resource (memory, then cpu), the pod cgroup first when a total of it
 * grows, the containers (decreases first), the pod cgroup last when a total shrinks. Each container's other
 * resource keeps its current value until its own turn; the actuated record follows each call.
 * A memory limit lowered below the use throws before anything changes; otherwise it throws at
 * the first failure, leaving the record at what was applied.
 */
export async function doPodResizeAction(
  pod: V1Pod,
  update: ContainersToUpdate,
  deps: ResizeDeps,
): Promise<void> {
  const uid = pod.metadata?.uid ?? '';
  if (deps.memoryUsage)
    await checkMemoryDecreases(
      pod,
      update.memory.filter((u) => direction(u, 'memory') < 0),
      deps.memoryUsage,
    );
  const applied = new Map<string, LinuxContainerResources>();
  for (const name of ['memory', 'cpu'] as const) {
    const list = update[name];
    if (list.length === 0) continue;
    // The pod cgroup takes all its values at once, so its limit decides when: before the
    // containers when it grows, after them when it shrinks; shares (a weight, which no kernel
    // refuses) go with it, and alone they go before when they grow.
    const [limit = 0, request = 0] = podTotalMoves(pod, list, name);
    const grows = limit > 0 || (limit === 0 && request > 0);
    const shrinks = !grows && (limit < 0 || request < 0);
    if (grows) await deps.podCgroups?.update(pod);
    for (const u of list) {
      const base = applied.get(u.name) ?? u.current;
      const next: LinuxContainerResources =
        name === 'memory'
          ? { ...base, memoryLimitInBytes: u.desired.memoryLimitInBytes }
          : {
              ...base,
              cpuShares: u.desired.cpuShares,
              cpuQuota: u.desired.cpuQuota,
              cpuPeriod: u.desired.cpuPeriod,
            };
      await deps.update(u.id.id, next);
      applied.set(u.name, next);
      const record = deps.actuated.getActuatedResources(uid, u.name);
      deps.actuated.setActuatedResources(uid, u.name, withResource(record, u.container.resources, name));
    }
    if (shrinks) await deps.podCgroups?.update(pod);
  }
}
