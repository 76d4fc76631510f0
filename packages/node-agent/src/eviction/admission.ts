// What node pressure means for new pods, as the kubelet's eviction admit handler decides: memory
// pressure alone turns away BestEffort pods (unless they tolerate the memory-pressure taint);
// any other pressure turns away everything but critical pods.
import type { V1Pod, V1Toleration } from '@kubernetes/client-node';
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

function tolerates(tolerations: readonly V1Toleration[], taint: Taint): boolean {
  return tolerations.some(
    (t) =>
      (!t.effect || t.effect === taint.effect) &&
      (t.operator === 'Exists'
        ? !t.key || t.key === taint.key
        : t.key === taint.key && (t.value ?? '') === (taint.value ?? '')),
  );
}

export function admitUnderPressure(pod: V1Pod, conditions: readonly PressureCondition[]): AdmitResult {
  if (conditions.length === 0 || isCriticalPod(pod)) return { admit: true };
  if (conditions.length === 1 && conditions[0] === 'MemoryPressure') {
    if (podQOSClass(pod) !== 'BestEffort') return { admit: true };
    const taint = pressureTaints(['MemoryPressure'])[0] as Taint;
    if (tolerates(pod.spec?.tolerations ?? [], taint)) return { admit: true };
  }
  return {
    admit: false,
    reason: EVICTION_REASON,
    message: `The node had condition: [${conditions.join(' ')}]. `,
  };
}
