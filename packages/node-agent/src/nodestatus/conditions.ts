// Node condition bookkeeping shared by the setters: heartbeat on every update, transition time
// only when the status flips.
import type { V1Node, V1NodeCondition } from '@kubernetes/client-node';

export const NodeConditionType = {
  Ready: 'Ready',
  MemoryPressure: 'MemoryPressure',
  DiskPressure: 'DiskPressure',
  PIDPressure: 'PIDPressure',
} as const;

export function findCondition(node: V1Node, type: string): V1NodeCondition | undefined {
  return node.status?.conditions?.find((c) => c.type === type);
}

/**
 * Writes `want` into the node's conditions. Returns true when the status changed (or the
 * condition is new and `newCountsAsChange`), which is when the kubelet records an event.
 */
export function upsertCondition(
  node: V1Node,
  want: { type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string },
  now: Date,
): { changed: boolean; isNew: boolean } {
  node.status ??= {};
  node.status.conditions ??= [];
  const existing = node.status.conditions.find((c) => c.type === want.type);
  if (!existing) {
    node.status.conditions.push({ ...want, lastHeartbeatTime: now, lastTransitionTime: now });
    return { changed: true, isNew: true };
  }
  const changed = existing.status !== want.status;
  existing.status = want.status;
  existing.reason = want.reason;
  existing.message = want.message;
  existing.lastHeartbeatTime = now;
  if (changed || !existing.lastTransitionTime) existing.lastTransitionTime = now;
  return { changed, isNew: false };
}
