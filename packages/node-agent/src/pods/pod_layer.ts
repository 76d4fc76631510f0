// Assembles the pod layer around a runtime manager: status manager, pod workers and the
// lifecycle handler, which need each other.

import type { Backoff } from '@kh/runtime-manager';
import type { V1Node } from '@kubernetes/client-node';
import type { PodApi } from '../api/pod_api.js';
import type { KubeletEventRecorder } from '../events/recorder.js';
import type { ProbeResults } from '../status/generate.js';
import { PodStatusManager } from '../status/status_manager.js';
import type { TimerClock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { PodLifecycle, type PodLifecycleDeps } from './pod_lifecycle.js';
import { PodWorkerPool } from './pod_workers.js';
import type { PressureSource } from './types.js';

export interface PodLayer {
  lifecycle: PodLifecycle;
  workers: PodWorkerPool;
  statusManager: PodStatusManager;
}

export function newPodLayer(opts: {
  api: PodApi;
  runtime: PodLifecycleDeps['runtime'];
  backoff: Backoff;
  clock: TimerClock;
  nodeIP: string;
  node: () => V1Node;
  resyncIntervalMs: number;
  pressure?: PressureSource;
  probes?: ProbeResults;
  recorder?: KubeletEventRecorder;
  log?: Logger;
}): PodLayer {
  const statusManager = new PodStatusManager({
    api: opts.api,
    clock: opts.clock,
    ...(opts.log ? { log: opts.log } : {}),
  });
  const deps: PodLifecycleDeps = { ...opts, statusManager };
  const lifecycle = new PodLifecycle(deps);
  const workers = new PodWorkerPool({
    syncer: lifecycle,
    clock: opts.clock,
    ...(opts.log ? { log: opts.log } : {}),
  });
  deps.workers = workers;
  return { lifecycle, workers, statusManager };
}
