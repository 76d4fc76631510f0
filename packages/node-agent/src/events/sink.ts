// Where the recorder's events go. CorrelatingEventSink puts the EventCorrelator in front of an
// API that can create and patch Events, and is what KubeletEventRecorder writes to: repeats
// become PATCHes of count, lastTimestamp and message on the existing Event.

import type { Clock } from '@kh/apimachinery';
import {
  CoreV1Api,
  type CoreV1Event,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { isNotFound, toApiError } from '../api/node_api.js';
import { EventCorrelator } from './correlator.js';

export interface EventPatch {
  count: number;
  lastTimestamp: Date;
  message: string;
}

/** The Events API: create, and patch an existing Event's count, lastTimestamp and message. */
export interface EventSink {
  createEvent(event: CoreV1Event): Promise<void>;
  patchEvent(namespace: string, name: string, patch: EventPatch): Promise<void>;
}

/** core/v1 Events through @kubernetes/client-node; failures are ApiErrors. */
export class KubeEventSink implements EventSink {
  private readonly core: CoreV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  async createEvent(event: CoreV1Event): Promise<void> {
    try {
      await this.core.createNamespacedEvent({
        namespace: event.metadata.namespace ?? 'default',
        body: event,
      });
    } catch (e) {
      throw toApiError(e);
    }
  }

  async patchEvent(namespace: string, name: string, patch: EventPatch): Promise<void> {
    try {
      await this.core.patchNamespacedEvent(
        { namespace, name, body: patch },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      );
    } catch (e) {
      throw toApiError(e);
    }
  }
}

/** Correlates each event, then creates it or patches the Event it repeats. */
export class CorrelatingEventSink {
  private readonly correlator: EventCorrelator;

  constructor(
    private readonly sink: EventSink,
    clock: Clock,
    correlator?: EventCorrelator,
  ) {
    this.correlator = correlator ?? new EventCorrelator(clock);
  }

  async createEvent(input: CoreV1Event): Promise<void> {
    const { event, update, skip } = this.correlator.correlate(input);
    if (skip) return;
    if (update) {
      try {
        await this.sink.patchEvent(event.metadata.namespace ?? 'default', event.metadata.name ?? '', {
          count: event.count ?? 1,
          lastTimestamp: event.lastTimestamp ?? new Date(),
          message: event.message ?? '',
        });
        return;
      } catch (e) {
        // The Event expired (event TTL) or was never written: write it again under its name.
        if (!isNotFound(e)) throw e;
      }
    }
    await this.sink.createEvent(event);
  }
}
