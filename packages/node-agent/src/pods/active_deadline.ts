// The kubelet's activeDeadlineHandler: a pod whose spec.activeDeadlineSeconds have passed since
// its status.startTime is failed with reason DeadlineExceeded (its containers are then killed,
// as any terminal pod's), and is due for a sync as soon as that moment comes.
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';

export const DEADLINE_EXCEEDED_REASON = 'DeadlineExceeded';
export const DEADLINE_EXCEEDED_MESSAGE = 'Pod was active on the node longer than the specified deadline';

/** Whether the pod ran past its active deadline; without a deadline or a start time it never does. */
export function pastActiveDeadline(pod: V1Pod, startTime: Date | string | undefined, now: number): boolean {
  const deadline = pod.spec?.activeDeadlineSeconds;
  if (typeof deadline !== 'number' || startTime === undefined) return false;
  const started = new Date(startTime).getTime();
  return !Number.isNaN(started) && now - started >= deadline * 1000;
}

/** The generated status failed for the deadline, as generateAPIPodStatus does when ShouldEvict says so. */
export function withActiveDeadline(pod: V1Pod, status: V1PodStatus, now: number): V1PodStatus {
  if (!pastActiveDeadline(pod, status.startTime, now)) return status;
  return { ...status, phase: 'Failed', reason: DEADLINE_EXCEEDED_REASON, message: DEADLINE_EXCEEDED_MESSAGE };
}
