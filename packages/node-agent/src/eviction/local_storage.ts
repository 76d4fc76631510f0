// Local storage isolation: a pod that outgrows its own ephemeral-storage budget is evicted
// whether or not the node is short of disk, in the kubelet's order of checks: emptyDir
// sizeLimit (memory-backed ones too), the pod's summed container limits, then each container's.
import type { V1Pod } from '@kubernetes/client-node';
import { Quantity } from '../util/quantity.js';
import { podEphemeralUsage } from './rank.js';
import type { PodUsage } from './types.js';

function bytes(v: unknown): number | undefined {
  return v === undefined || v === null ? undefined : Number(Quantity.parse(String(v)).value());
}

/** Why the pod broke its own limit, or undefined when it did not. */
export function localStorageViolation(pod: V1Pod, usage: PodUsage): string | undefined {
  const volumeUsed = new Map(usage.volumes.map((v) => [v.name, v.usedBytes]));
  for (const v of pod.spec?.volumes ?? []) {
    const limit = bytes(v.emptyDir?.sizeLimit);
    const used = volumeUsed.get(v.name);
    if (limit !== undefined && limit > 0 && used !== undefined && used > limit) {
      return `Usage of EmptyDir volume "${v.name}" exceeds the limit "${v.emptyDir?.sizeLimit}". `;
    }
  }
  const containers = pod.spec?.containers ?? [];
  const limits = containers.map((c) => bytes(c.resources?.limits?.['ephemeral-storage']));
  // The pod-level budget only exists when every container has a limit.
  if (containers.length > 0 && limits.every((l) => l !== undefined)) {
    const total = (limits as number[]).reduce((s, l) => s + l, 0);
    if (podEphemeralUsage(pod, usage) > total) {
      const text = Quantity.fromValue(total, 'BinarySI').toString();
      return `Pod ephemeral local storage usage exceeds the total limit of containers ${text}. `;
    }
  }
  for (const c of containers) {
    const limit = c.resources?.limits?.['ephemeral-storage'];
    const used = usage.containers.find((x) => x.name === c.name)?.ephemeralStorageBytes;
    if (limit !== undefined && used !== undefined && used > (bytes(limit) ?? 0)) {
      return `Container ${c.name} exceeded its local ephemeral storage limit "${limit}". `;
    }
  }
  return undefined;
}
