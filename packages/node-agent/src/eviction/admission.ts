// What node pressure means for new pods, as the kubelet's eviction admit handler decides: memory
// pressure alone turns away BestEffort pods (unless they tolerate the memory-pressure taint);
// any other pressure turns away everything but critical pods.
import { tolerationsTolerateTaint } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import type { AdmitResult } from '../admission/handler.js';
import type { Taint } from '../config/types.js';
import { podQOSClass } from '../types/qos.js';
import { isCriticalPod } from './rank.js';
import { EVICTION_REASON, type PressureCondition } from './types.js';

export const PRESSURE_TAINT_KEYS: Record<PressureCondition, string> = {
  MemoryPressure: 'node.kubernetes.io/memory-pressure',
  DiskPressure: 'node.kubernetes.io/disk-pressure',
  PIDPressure: 'node.kubernetes.io/pid-pressure',
};

/** The NoSchedule taints matching the node's pressure conditions, for the node status setter. */
export function pressureTaints(conditions: readonly PressureCondition[]): Taint[] {
  return conditions.map((c) => ({ key: PRESSURE_TAINT_KEYS[c], effect: 'NoSchedule' }));
}

export function admitUnderPressure(pod: V1Pod, conditions: readonly PressureCondition[]): AdmitResult {
  if (conditions.length === 0 || isCriticalPod(pod)) return { admit: true };
  if (conditions.length === 1 && conditions[0] === 'MemoryPressure') {
    if (podQOSClass(pod) !== 'BestEffort') return { admit: true };
    const taint = pressureTaints(['MemoryPressure'])[0] as Taint;
    if (tolerationsTolerateTaint(pod.spec?.tolerations, taint)) return { admit: true };
  }
  return {
    admit: false,
    reason: EVICTION_REASON,
    message: `The node had condition: [${conditions.join(' ')}]. `,
  };
}
