// A pod's QoS class, computed as Kubernetes does: the status manager reports it (qosClass),
// and eviction's admission turns BestEffort pods away under memory pressure.
import type { V1Pod } from '@kubernetes/client-node';
import { Quantity } from '../util/quantity.js';

export type QOSClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const QOS_RESOURCES = ['cpu', 'memory'];

/** Guaranteed when every container has cpu and memory limits equal to requests; BestEffort when none sets any. */
export function podQOSClass(pod: V1Pod): QOSClass {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  let any = false;
  let guaranteed = true;
  for (const c of all) {
    const req = c.resources?.requests ?? {};
    const lim = c.resources?.limits ?? {};
    for (const r of QOS_RESOURCES) {
      const rq = req[r] !== undefined ? Quantity.parse(String(req[r])) : undefined;
      const lm = lim[r] !== undefined ? Quantity.parse(String(lim[r])) : undefined;
      if ((rq && !rq.isZero()) || (lm && !lm.isZero())) any = true;
      if (!lm || (rq && rq.cmp(lm) !== 0)) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}
