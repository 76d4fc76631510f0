import { type KObject, rfc3339 } from '../meta/object.js';
import { ApiError, notFound } from '../meta/status.js';
import type { RestStorage } from './rest.js';

/** pods/binding: assigns an unbound pod to a node, marking it PodScheduled. */
export function bindPod(rest: RestStorage, ns: string, name: string, binding: KObject): KObject {
  const pods = rest.store.get('pods', ns, name);
  if (pods === undefined) throw notFound({ group: '', resource: 'pods' }, name);
  const target = binding.target?.name;
  if (!target)
    throw new ApiError(422, 'Invalid', `Binding "${name}" is invalid: target.name: Required value`);
  if (pods.spec?.nodeName) {
    throw new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is already assigned to node "${pods.spec.nodeName}"`,
      {
        name,
        kind: 'pods/binding',
      },
    );
  }
  if (pods.metadata.deletionTimestamp) {
    throw new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on pods/binding "${name}": pod ${name} is being deleted, cannot be assigned to a host`,
    );
  }
  const now = rfc3339(rest.clock.now());
  const conditions = (pods.status?.conditions ?? []).filter((c: KObject) => c.type !== 'PodScheduled');
  conditions.push({ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now });
  // Stored objects are never mutated, so copying the two levels that change is enough.
  const next = {
    ...pods,
    metadata: { ...pods.metadata },
    spec: { ...pods.spec, nodeName: target },
    status: { ...pods.status, conditions },
  };
  rest.store.write('pods', 'MODIFIED', next);
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', code: 201 };
}
