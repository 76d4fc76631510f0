// Assembles the pod layer around a runtime manager: status manager, prober manager, pod workers
// and the lifecycle handler, which need each other.

import type { Backoff, EventRecorder, Runtime } from '@kh/runtime-manager';
import type { PodApi } from '../api/pod_api.js';
import type { KubeletEventRecorder } from '../events/recorder.js';
import { ProberManager, type ProberManagerDeps } from '../prober/manager.js';
import type { ProbeResultsStore } from '../prober/results.js';
import { PodStatusManager } from '../status/status_manager.js';
import type { TimerClock } from '../util/clock.js';
import type { Logger } from '../util/log.js';
import { PodLifecycle, type PodLifecycleDeps } from './pod_lifecycle.js';
import type { PodManager } from './pod_manager.js';
import { PodSync, type PodSyncDeps } from './pod_sync.js';
import { PodWorkerPool } from './pod_workers.js';
import { podPullSecrets } from './pull_secrets.js';

export interface PodLayer {
  lifecycle: PodLifecycle;
  workers: PodWorkerPool;
  statusManager: PodStatusManager;
  prober?: ProberManager;
}

const noEvents: EventRecorder = { event: () => {} };

export function newPodLayer(opts: {
  api: PodApi;
  pods: PodManager;
  runtime: PodLifecycleDeps['runtime'] & PodSyncDeps['runtime'];
  backoff: Backoff;
  clock: TimerClock;
  nodeIP: string;
  admit: PodLifecycleDeps['admit'];
  resyncIntervalMs: number;
  /**
   * Runs the pods' probes. `results` is the store the runtime manager was given as its
   * probeResults, so liveness and startup failures reach its kill decisions.
   */
  probing?: {
    runtime: Pick<Runtime, 'runInContainer' | 'type'>;
    results: ProbeResultsStore;
    metrics?: ProberManagerDeps['metrics'];
    runner?: ProberManagerDeps['runner'];
  };
  recorder?: KubeletEventRecorder;
  log?: Logger;
}): PodLayer {
  const statusManager = new PodStatusManager({
    api: opts.api,
    clock: opts.clock,
    ...(opts.log ? { log: opts.log } : {}),
  });
  const { probing } = opts;
  const prober = probing
    ? new ProberManager({
        ...probing,
        recorder: opts.recorder ?? noEvents,
        podStatus: (uid) => statusManager.getPodStatus(uid),
        clock: opts.clock,
        ...(opts.log ? { log: opts.log } : {}),
      })
    : undefined;
  const sync = new PodSync({
    runtime: opts.runtime,
    statusManager,
    pods: opts.pods,
    backoff: opts.backoff,
    clock: opts.clock,
    nodeIP: opts.nodeIP,
    pullSecrets: (pod) => podPullSecrets(opts.api, pod, opts.log),
    ...(prober ? { prober, probes: prober.results.forStatus } : {}),
  });
  const workers = new PodWorkerPool({
    syncer: sync,
    terminated: opts.pods,
    clock: opts.clock,
    ...(opts.log ? { log: opts.log } : {}),
  });
  const lifecycle = new PodLifecycle({
    pods: opts.pods,
    workers,
    statusManager,
    admit: opts.admit,
    runtime: opts.runtime,
    clock: opts.clock,
    resyncIntervalMs: opts.resyncIntervalMs,
    ...(prober ? { prober } : {}),
    ...(opts.recorder ? { recorder: opts.recorder } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  // Readiness goes straight into the cached status; liveness failures and startup changes need a
  // sync, where the runtime manager kills or releases the container.
  prober?.results.onUpdate((u) => {
    const uid = u.pod.metadata?.uid ?? '';
    if (u.type === 'readiness')
      statusManager.setContainerReadiness(uid, u.containerId, u.result === 'success');
    else if (u.type === 'startup' || u.result === 'failure') lifecycle.handleProbeSync(uid);
  });
  return { lifecycle, workers, statusManager, ...(prober ? { prober } : {}) };
}
