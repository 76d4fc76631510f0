import { randomBytes } from 'node:crypto';
import { type KObject, rfc3339 } from '../meta/object.js';
import { events } from '../registry/events.js';
import type { RestStorage } from '../registry/rest.js';

/** Records a core/v1 Event about `obj`, the way controllers' event recorders do. */
export function recordEvent(
  rest: RestStorage,
  obj: KObject,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
  component: string,
): void {
  const now = rfc3339(rest.clock.now());
  const ns = obj.metadata.namespace || 'default';
  try {
    rest.create(events, ns, {
      metadata: { name: `${obj.metadata.name}.${randomBytes(8).toString('hex')}`, namespace: ns },
      involvedObject: {
        kind: obj.kind,
        namespace: obj.metadata.namespace,
        name: obj.metadata.name,
        uid: obj.metadata.uid,
        apiVersion: obj.apiVersion,
        resourceVersion: obj.metadata.resourceVersion,
      },
      reason,
      message,
      source: { component },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type,
      reportingComponent: component,
      reportingInstance: component,
    });
  } catch {
    // Events are best effort: a vanished namespace must not break the controller.
  }
}
