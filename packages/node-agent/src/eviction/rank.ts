// Which pod goes first. Like the kubelet: for memory, disk bytes and inodes, pods using more than
// they requested go before pods within their requests (nothing requests inodes), then lower
// priority first, then the larger use above request; for pids, lower priority first, then more
// processes. A pod without stats goes first: nothing shows it is innocent.
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { ConfigMirrorAnnotation, isStaticPod } from '../types/pod_update.js';
import { Quantity } from '../util/quantity.js';
import type { PodUsage } from './types.js';

export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

/** Static, mirror and system-critical pods are never evicted for node pressure. */
export function isCriticalPod(pod: V1Pod): boolean {
  if (isStaticPod(pod)) return true;
  if (pod.metadata?.annotations?.[ConfigMirrorAnnotation] !== undefined) return true;
  return (pod.spec?.priority ?? 0) >= SYSTEM_CRITICAL_PRIORITY;
}

export type RankedResource = 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';

export function containerRequest(c: V1Container, resource: string): number {
  const v = c.resources?.requests?.[resource] ?? c.resources?.limits?.[resource];
  return v === undefined ? 0 : Number(Quantity.parse(String(v)).value());
}

function podRequest(pod: V1Pod, resource: string): number {
  return (pod.spec?.containers ?? []).reduce((sum, c) => sum + containerRequest(c, resource), 0);
}

/** Memory working set of all containers. */
export function podMemoryUsage(u: PodUsage): number {
  return u.containers.reduce((s, c) => s + (c.memoryWorkingSetBytes ?? 0), 0);
}

function diskVolumes(pod: V1Pod, u: PodUsage) {
  const memoryBacked = new Set(
    (pod.spec?.volumes ?? []).filter((v) => v.emptyDir?.medium === 'Memory').map((v) => v.name),
  );
  return u.volumes.filter((v) => !memoryBacked.has(v.name));
}

/** Containers' writable layers and logs plus the pod's disk-backed emptyDir volumes. */
export function podEphemeralUsage(pod: V1Pod, u: PodUsage): number {
  const volumes = diskVolumes(pod, u).reduce((s, v) => s + v.usedBytes, 0);
  return volumes + u.containers.reduce((s, c) => s + (c.ephemeralStorageBytes ?? 0), 0);
}

/** The same places counted in inodes. */
export function podInodeUsage(pod: V1Pod, u: PodUsage): number {
  const volumes = diskVolumes(pod, u).reduce((s, v) => s + (v.inodesUsed ?? 0), 0);
  return volumes + u.containers.reduce((s, c) => s + (c.inodesUsed ?? 0), 0);
}

const USAGE: Record<Exclude<RankedResource, 'pids'>, (pod: V1Pod, u: PodUsage) => number> = {
  memory: (_, u) => podMemoryUsage(u),
  'ephemeral-storage': podEphemeralUsage,
  inodes: podInodeUsage,
};

type Cmp = (a: V1Pod, b: V1Pod) => number;

function orderedBy(...cmps: Cmp[]): Cmp {
  return (a, b) => {
    for (const c of cmps) {
      const r = c(a, b);
      if (r !== 0) return r;
    }
    return 0;
  };
}

const byPriority: Cmp = (a, b) => (a.spec?.priority ?? 0) - (b.spec?.priority ?? 0);

export function rankPods(
  pods: readonly V1Pod[],
  resource: RankedResource,
  stats: ReadonlyMap<string, PodUsage>,
): V1Pod[] {
  const statsOf = (p: V1Pod) => stats.get(p.metadata?.uid ?? '');
  const missingFirst: Cmp = (a, b) => Number(statsOf(b) === undefined) - Number(statsOf(a) === undefined);
  let cmp: Cmp;
  if (resource === 'pids') {
    const procs = (p: V1Pod) => statsOf(p)?.processCount ?? 0;
    cmp = orderedBy(missingFirst, byPriority, (a, b) => procs(b) - procs(a));
  } else {
    const usage = (p: V1Pod) => {
      const u = statsOf(p);
      return u ? USAGE[resource](p, u) : 0;
    };
    const above = (p: V1Pod) => usage(p) - podRequest(p, resource);
    cmp = orderedBy(
      missingFirst,
      (a, b) => Number(above(b) > 0) - Number(above(a) > 0),
      byPriority,
      (a, b) => above(b) - above(a),
    );
  }
  return [...pods].sort(cmp);
}
