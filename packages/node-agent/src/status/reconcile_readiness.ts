// NeedToReconcilePodReadiness: the readiness gates' conditions are other writers', so a change
// of theirs reaches the kubelet as a status-only update; when the pod's Ready condition no longer
// matches what its gates say, the pod is synced again.
import type { V1Pod } from '@kubernetes/client-node';
import { readinessCondition, unreadyContainers } from './generate.js';
import { withReadinessGates } from './readiness_gates.js';

/** Whether the pod's stored Ready condition disagrees with what its gates now say. */
export function needToReconcilePodReadiness(pod: V1Pod): boolean {
  if ((pod.spec?.readinessGates ?? []).length === 0) return false;
  const status = pod.status ?? {};
  const current = status.conditions?.find((c) => c.type === 'Ready');
  if (!current) return false;
  const unready = unreadyContainers(pod, status.initContainerStatuses ?? [], status.containerStatuses ?? []);
  const want = withReadinessGates(pod, readinessCondition('Ready', unready, status.phase === 'Succeeded'));
  return current.status !== want.status || (current.message ?? '') !== (want.message ?? '');
}
