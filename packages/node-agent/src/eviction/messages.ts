// The words an evicted pod and its Evicted event carry, in the kubelet's pattern, so tooling
// that greps for "The node was low on resource" keeps working.
import type { V1Pod } from '@kubernetes/client-node';
import { Quantity } from '../util/quantity.js';
import { containerRequest } from './rank.js';
import {
  EVICTION_REASON,
  type EvictionStatus,
  OFFENDING_CONTAINERS_KEY,
  OFFENDING_CONTAINERS_USAGE_KEY,
  type PodUsage,
  STARVED_RESOURCE_KEY,
} from './types.js';

function fmt(resource: string, n: number): string {
  const format = resource === 'memory' || resource === 'ephemeral-storage' ? 'BinarySI' : 'DecimalSI';
  return Quantity.fromValue(Math.max(0, Math.round(n)), format).toString();
}

/**
 * "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. " followed,
 * for memory and ephemeral storage, by one sentence per container using more than it requested.
 */
export function evictionMessage(
  resource: string,
  pod: V1Pod,
  usage: PodUsage | undefined,
  thresholdAmount: number,
  available: number,
): { message: string; annotations: Record<string, string> } {
  let message = `The node was low on resource: ${resource}. Threshold quantity: ${fmt(resource, thresholdAmount)}, available: ${fmt(resource, available)}. `;
  const offenders: string[] = [];
  const offenderUsage: string[] = [];
  if (usage && (resource === 'memory' || resource === 'ephemeral-storage')) {
    for (const c of pod.spec?.containers ?? []) {
      const cu = usage.containers.find((x) => x.name === c.name);
      const used = resource === 'memory' ? cu?.memoryWorkingSetBytes : cu?.ephemeralStorageBytes;
      if (used === undefined) continue;
      const request = containerRequest(c, resource);
      if (used <= request) continue;
      message += `Container ${c.name} was using ${fmt(resource, used)}, request is ${fmt(resource, request)}, has larger consumption of ${resource}. `;
      offenders.push(c.name);
      offenderUsage.push(fmt(resource, used));
    }
  }
  return {
    message,
    annotations: {
      [OFFENDING_CONTAINERS_KEY]: offenders.join(','),
      [OFFENDING_CONTAINERS_USAGE_KEY]: offenderUsage.join(','),
      [STARVED_RESOURCE_KEY]: resource,
    },
  };
}

export function evictionStatus(message: string): EvictionStatus {
  return terminationByKubeletStatus(EVICTION_REASON, message);
}

/** Failed with `reason`, and the DisruptionTarget condition the kubelet adds to pods it kills. */
export function terminationByKubeletStatus(reason: string, message: string): EvictionStatus {
  return {
    phase: 'Failed',
    reason,
    message,
    conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'TerminationByKubelet', message }],
  };
}
