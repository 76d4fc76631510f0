// How the shutdown grace period is shared out (the kubelet's migrateConfig and groupByPriority):
// pods are grouped by priority, lowest first, and each group gets its own seconds.
import type { V1Pod } from '@kubernetes/client-node';
import type { ShutdownGracePeriodByPodPriority } from '../config/types.js';

/** scheduling.SystemCriticalPriority: system-cluster-critical and system-node-critical are at or above it. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;

export interface ShutdownGroup extends ShutdownGracePeriodByPodPriority {
  pods: V1Pod[];
}

/**
 * shutdownGracePeriod and shutdownGracePeriodCriticalPods as two priority groups: everything
 * below system-critical gets the difference, critical pods the rest. Empty when shutdown is off.
 */
export function migrateConfig(totalMs: number, criticalMs: number): ShutdownGracePeriodByPodPriority[] {
  if (totalMs <= 0 || criticalMs > totalMs) return [];
  return [
    { priority: 0, shutdownGracePeriodSeconds: Math.floor((totalMs - criticalMs) / 1000) },
    { priority: SYSTEM_CRITICAL_PRIORITY, shutdownGracePeriodSeconds: Math.floor(criticalMs / 1000) },
  ];
}

/** The delay logind must grant: every group's seconds, in milliseconds. */
export function periodRequestedMs(periods: readonly ShutdownGracePeriodByPodPriority[]): number {
  return periods.reduce((sum, p) => sum + p.shutdownGracePeriodSeconds, 0) * 1000;
}

/**
 * One group per period, in ascending priority; each pod joins the highest group whose priority
 * it reaches, and a pod below every group joins the lowest.
 */
export function groupByPriority(
  periods: readonly ShutdownGracePeriodByPodPriority[],
  pods: readonly V1Pod[],
): ShutdownGroup[] {
  const groups = [...periods]
    .sort((a, b) => a.priority - b.priority)
    .map((p): ShutdownGroup => ({ ...p, pods: [] }));
  if (groups.length === 0) return groups;
  for (const pod of pods) {
    const priority = pod.spec?.priority ?? 0;
    let target = groups[0] as ShutdownGroup;
    for (const g of groups) if (g.priority <= priority) target = g;
    target.pods.push(pod);
  }
  return groups;
}
