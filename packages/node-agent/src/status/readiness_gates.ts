// Pod readiness gates (GeneratePodReadyCondition): a pod whose containers are all ready is Ready
// only once every condition its spec.readinessGates names is True on the pod (other writers set
// those conditions).
import type { V1Pod, V1PodCondition } from '@kubernetes/client-node';

export const READINESS_GATES_NOT_READY = 'ReadinessGatesNotReady';

/** The Ready condition: the containers' (`containers`) first, then the gates' conditions on the pod. */
export function withReadinessGates(pod: V1Pod, containers: V1PodCondition): V1PodCondition {
  if (containers.status !== 'True') return containers;
  const conditions = pod.status?.conditions ?? [];
  const unmet = (pod.spec?.readinessGates ?? []).flatMap((g) => {
    const c = conditions.find((x) => x.type === g.conditionType);
    if (!c) return [`corresponding condition of pod readiness gate "${g.conditionType}" does not exist.`];
    if (c.status !== 'True')
      return [`the status of pod readiness gate "${g.conditionType}" is not "True", but ${c.status}`];
    return [];
  });
  if (unmet.length === 0) return containers;
  return { type: 'Ready', status: 'False', reason: READINESS_GATES_NOT_READY, message: unmet.join(', ') };
}
