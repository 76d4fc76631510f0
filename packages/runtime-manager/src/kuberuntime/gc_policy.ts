// Which dead containers and sandboxes container GC removes, as pure selection functions over
// snapshots of the runtime, so ordering and fairness are testable without a runtime.
import type { ContainerGCPolicy, ContainerState, PodStateProvider } from '../container/runtime.js';

export interface GCContainer {
  id: string;
  podUid: string;
  name: string;
  createdAt: number; // epoch ms
  state: ContainerState;
}

export interface GCSandbox {
  id: string;
  podUid: string;
  createdAt: number;
  ready: boolean;
}

export interface GCContext {
  now: number;
  allSourcesReady: boolean;
  evictNonDeletedPods: boolean;
  pods: PodStateProvider;
}

function podContentRemovable(uid: string, ctx: GCContext): boolean {
  return (
    ctx.pods.shouldPodContentBeRemoved(uid) ||
    (ctx.evictNonDeletedPods && ctx.pods.shouldPodRuntimeBeRemoved(uid))
  );
}

const newestFirst = (a: { createdAt: number }, b: { createdAt: number }) => b.createdAt - a.createdAt;

/**
 * Dead containers to remove, in removal order. Units are (pod uid, container name); within a
 * unit the oldest go first. Deleted pods lose all their dead containers (once all pod sources
 * are ready), then maxPerPodContainer caps every unit, then maxContainers is shared fairly
 * between units before the globally oldest are cut. -1 disables a limit.
 */
export function selectContainersToEvict(
  containers: GCContainer[],
  policy: ContainerGCPolicy,
  ctx: GCContext,
): GCContainer[] {
  const newestGCTime = ctx.now - policy.minAgeMs;
  const units = new Map<string, GCContainer[]>();
  for (const c of containers) {
    if (c.state === 'running' || c.createdAt > newestGCTime) continue;
    const key = `${c.podUid}/${c.name}`;
    const unit = units.get(key);
    if (unit) unit.push(c);
    else units.set(key, [c]);
  }
  for (const unit of units.values()) unit.sort(newestFirst);

  const removed: GCContainer[] = [];
  const removeOldest = (unit: GCContainer[], n: number) => {
    if (n <= 0) return;
    removed.push(...unit.splice(unit.length - n, n).reverse());
  };
  const capUnits = (max: number) => {
    for (const unit of units.values()) removeOldest(unit, unit.length - max);
  };

  if (ctx.allSourcesReady) {
    for (const [key, unit] of units) {
      if (podContentRemovable(unit[0]!.podUid, ctx)) {
        removeOldest(unit, unit.length);
        units.delete(key);
      }
    }
  }
  if (policy.maxPerPodContainer >= 0) capUnits(policy.maxPerPodContainer);

  const total = () => [...units.values()].reduce((n, u) => n + u.length, 0);
  if (policy.maxContainers >= 0 && total() > policy.maxContainers) {
    const nonEmpty = [...units.values()].filter((u) => u.length > 0).length;
    capUnits(Math.max(1, Math.floor(policy.maxContainers / nonEmpty)));
    if (total() > policy.maxContainers) {
      const rest = [...units.values()].flat().sort(newestFirst);
      removed.push(...rest.slice(policy.maxContainers).reverse());
    }
  }
  return removed;
}

/**
 * Sandboxes to remove. A sandbox that is ready or still has containers is never removed. Pods
 * that are gone lose every other sandbox; live pods keep their newest one.
 */
export function selectSandboxesToEvict(
  sandboxes: GCSandbox[],
  sandboxesWithContainers: ReadonlySet<string>,
  ctx: GCContext,
): GCSandbox[] {
  const byPod = new Map<string, GCSandbox[]>();
  for (const s of sandboxes) {
    const list = byPod.get(s.podUid);
    if (list) list.push(s);
    else byPod.set(s.podUid, [s]);
  }
  const removed: GCSandbox[] = [];
  for (const [uid, list] of byPod) {
    list.sort(newestFirst);
    const candidates = podContentRemovable(uid, ctx) ? list : list.slice(1);
    for (const s of candidates.reverse()) {
      if (!s.ready && !sandboxesWithContainers.has(s.id)) removed.push(s);
    }
  }
  return removed;
}

/** Pod log directories (`<ns>_<name>_<uid>`) whose pods are gone. Only once all sources are ready. */
export function selectPodLogDirsToRemove(dirNames: string[], ctx: GCContext): string[] {
  if (!ctx.allSourcesReady) return [];
  return dirNames.filter((d) => {
    const uid = d.slice(d.lastIndexOf('_') + 1);
    return d.includes('_') && uid !== '' && ctx.pods.shouldPodContentBeRemoved(uid);
  });
}
