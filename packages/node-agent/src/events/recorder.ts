// core/v1 Events with the kubelet's source (component "kubelet", host = node name). Posting is
// asynchronous and best effort: a slow or down API server never blocks the caller, and a full
// queue drops events rather than growing without bound.

import type { Clock } from '@kh/apimachinery';
import type { EventRecorder as PodEventRecorder } from '@kh/runtime-manager';
import type { CoreV1Event, V1ObjectReference, V1Pod } from '@kubernetes/client-node';
import type { NodeApi } from '../api/node_api.js';
import { type Logger, silentLogger } from '../util/log.js';

export type EventType = 'Normal' | 'Warning';

const MAX_PENDING = 1000;

export class KubeletEventRecorder implements PodEventRecorder {
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  private seq = 0;

  constructor(
    private readonly api: Pick<NodeApi, 'createEvent'>,
    private readonly opts: { host: string; clock: Clock; component?: string; log?: Logger },
  ) {}

  /** An event about this node; the kubelet uses the node name as the reference's UID. */
  nodeEvent(type: EventType, reason: string, message: string): void {
    this.eventf(
      { kind: 'Node', name: this.opts.host, uid: this.opts.host, namespace: '' },
      type,
      reason,
      message,
    );
  }

  /** The runtime manager's EventRecorder: Pulling, Pulled, Created, Started, Killing, BackOff... */
  event(pod: V1Pod, type: EventType, reason: string, message: string): void {
    this.eventf(podRef(pod), type, reason, message);
  }

  /** The eviction manager's Evicted event, annotated with the starved resource and offending containers. */
  annotatedEvent(
    pod: V1Pod,
    annotations: Record<string, string>,
    type: EventType,
    reason: string,
    message: string,
  ): void {
    this.eventf(podRef(pod), type, reason, message, annotations);
  }

  eventf(
    ref: V1ObjectReference,
    type: EventType,
    reason: string,
    message: string,
    annotations: Record<string, string> = {},
  ): void {
    const log = this.opts.log ?? silentLogger;
    if (this.pending >= MAX_PENDING) {
      log.error('Dropping event, too many pending', { reason, object: ref.name });
      return;
    }
    const nowMs = this.opts.clock.now();
    const now = new Date(nowMs);
    // Unique like the kubelet's "<name>.<unix nanos in hex>"; the sequence breaks ties within a millisecond.
    const nanos = BigInt(nowMs) * 1_000_000n + BigInt(this.seq++ % 1_000_000);
    const event: CoreV1Event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: {
        name: `${ref.name}.${nanos.toString(16)}`,
        namespace: ref.namespace || 'default',
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      },
      involvedObject: ref,
      reason,
      message,
      type,
      count: 1,
      firstTimestamp: now,
      lastTimestamp: now,
      source: { component: this.opts.component ?? 'kubelet', host: this.opts.host },
      reportingComponent: this.opts.component ?? 'kubelet',
      reportingInstance: this.opts.host,
    };
    this.pending++;
    this.chain = this.chain.then(async () => {
      try {
        await this.api.createEvent(event);
      } catch (e) {
        log.error('Unable to write event', { reason, object: ref.name, err: e });
      } finally {
        this.pending--;
      }
    });
  }

  /** Resolves when every event recorded so far was posted or failed. */
  flush(): Promise<void> {
    return this.chain;
  }
}

function podRef(pod: V1Pod): V1ObjectReference {
  return {
    kind: 'Pod',
    apiVersion: 'v1',
    name: pod.metadata?.name,
    namespace: pod.metadata?.namespace,
    uid: pod.metadata?.uid,
    resourceVersion: pod.metadata?.resourceVersion,
  };
}
