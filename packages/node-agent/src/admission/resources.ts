// A pod's effective resource requests and limits, computed as Kubernetes does, for admission's fit
// check and the pod cgroup's limits (cm/helpers.ts).
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { Quantity } from '../util/quantity.js';

export type ResourceTotals = Record<string, bigint>; // milli-units

function containerRequests(c: V1Container): ResourceTotals {
  const out: ResourceTotals = {};
  // A limit without a request means request = limit, as API defaulting makes it.
  const merged = { ...(c.resources?.limits ?? {}), ...(c.resources?.requests ?? {}) };
  for (const [name, value] of Object.entries(merged)) out[name] = Quantity.parse(String(value)).milliValue();
  return out;
}

function add(into: ResourceTotals, r: ResourceTotals): void {
  for (const [k, v] of Object.entries(r)) into[k] = (into[k] ?? 0n) + v;
}

function max(into: ResourceTotals, r: ResourceTotals): void {
  for (const [k, v] of Object.entries(r)) if (v > (into[k] ?? 0n)) into[k] = v;
}

/**
 * Effective requests: the larger of the app containers' sum (plus sidecars, the restartable
 * init containers that keep running) and each init container's peak while it runs, plus the
 * pod overhead.
 */
export function podRequests(pod: V1Pod): ResourceTotals {
  const sum = podTotals(pod, containerRequests);
  for (const [k, v] of Object.entries(pod.spec?.overhead ?? {}))
    add(sum, { [k]: Quantity.parse(String(v)).milliValue() });
  return sum;
}

/**
 * Effective limits, summed as the requests are (PodLimits); the overhead is added only to a
 * resource that has a limit. `each` sees every container's own limits, so a caller can tell
 * whether all of them declared one.
 */
export function podLimits(pod: V1Pod, each?: (limits: ResourceTotals) => void): ResourceTotals {
  const sum = podTotals(pod, (c) => {
    const out: ResourceTotals = {};
    for (const [name, value] of Object.entries(c.resources?.limits ?? {}))
      out[name] = Quantity.parse(String(value)).milliValue();
    each?.(out);
    return out;
  });
  for (const [k, v] of Object.entries(pod.spec?.overhead ?? {}))
    if (sum[k] !== undefined) add(sum, { [k]: Quantity.parse(String(v)).milliValue() });
  return sum;
}

function podTotals(pod: V1Pod, of: (c: V1Container) => ResourceTotals): ResourceTotals {
  const sum: ResourceTotals = {};
  for (const c of pod.spec?.containers ?? []) add(sum, of(c));
  const initPeak: ResourceTotals = {};
  const sidecars: ResourceTotals = {};
  for (const c of pod.spec?.initContainers ?? []) {
    const r = of(c);
    if (c.restartPolicy === 'Always') {
      add(sidecars, r);
      continue;
    }
    const during: ResourceTotals = { ...sidecars };
    add(during, r);
    max(initPeak, during);
  }
  add(sum, sidecars);
  max(sum, initPeak);
  return sum;
}
