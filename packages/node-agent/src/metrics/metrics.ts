// The agent's Prometheus registry with the kubelet's metric names, so dashboards and alerts
// written for the kubelet read ours. Other managers (pod workers, PLEG, prober, eviction, GC)
// record into the instruments here instead of creating their own.
import type { RelistTiming } from '@kh/runtime-manager';
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

// The kubelet's buckets for pod start-up durations (seconds).
const POD_START_BUCKETS = [
  0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700,
  3600,
];
const OPERATION_BUCKETS = [
  0.005, 0.0125, 0.03125, 0.078125, 0.1953125, 0.48828125, 1.220703125, 3.0517578125, 7.62939453125,
  19.073486328125, 47.6837158203125, 119.20928955078125, 298.0232238769531, 745.0580596923828,
];

export class KubeletMetrics {
  /** Served at /metrics. */
  readonly registry = new Registry();
  /** Served at /metrics/probes, like the kubelet keeps prober metrics apart. */
  readonly probesRegistry = new Registry();

  readonly nodeName: Gauge<'node'>;
  readonly podStartDuration: Histogram;
  readonly podStartSliDuration: Histogram;
  readonly podWorkerDuration: Histogram<'operation_type'>;
  readonly plegRelistDuration: Histogram;
  readonly plegRelistInterval: Histogram;
  readonly plegLastSeen: Gauge;
  readonly runtimeOperations: Counter<'operation_type'>;
  readonly runtimeOperationsErrors: Counter<'operation_type'>;
  readonly runtimeOperationsDuration: Histogram<'operation_type'>;
  readonly runningPods: Gauge;
  readonly runningContainers: Gauge<'container_state'>;
  readonly startedPods: Counter;
  readonly startedPodsErrors: Counter;
  readonly evictions: Counter<'eviction_signal'>;
  readonly imageGarbageCollected: Counter<'reason'>;
  readonly httpRequests: Counter<'method' | 'path' | 'server_type' | 'long_running'>;
  readonly httpRequestsDuration: Histogram<'method' | 'path' | 'server_type' | 'long_running'>;
  readonly proberProbeTotal: Counter<'probe_type' | 'result' | 'container' | 'pod' | 'namespace' | 'pod_uid'>;
  readonly proberProbeDuration: Histogram<'probe_type' | 'container' | 'pod' | 'namespace'>;

  constructor(opts: { processMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.nodeName = new Gauge({
      name: 'kubelet_node_name',
      help: "The node's name. The count is always 1.",
      labelNames: ['node'],
      registers,
    });
    this.podStartDuration = new Histogram({
      name: 'kubelet_pod_start_duration_seconds',
      help: 'Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
      buckets: POD_START_BUCKETS,
      registers,
    });
    this.podStartSliDuration = new Histogram({
      name: 'kubelet_pod_start_sli_duration_seconds',
      help: 'Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
      buckets: POD_START_BUCKETS,
      registers,
    });
    this.podWorkerDuration = new Histogram({
      name: 'kubelet_pod_worker_duration_seconds',
      help: 'Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
      labelNames: ['operation_type'],
      buckets: OPERATION_BUCKETS,
      registers,
    });
    this.plegRelistDuration = new Histogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: 'Duration in seconds for relisting pods in PLEG.',
      buckets: OPERATION_BUCKETS,
      registers,
    });
    this.plegRelistInterval = new Histogram({
      name: 'kubelet_pleg_relist_interval_seconds',
      help: 'Interval in seconds between relisting in PLEG.',
      buckets: OPERATION_BUCKETS,
      registers,
    });
    this.plegLastSeen = new Gauge({
      name: 'kubelet_pleg_last_seen_seconds',
      help: 'Timestamp in seconds when PLEG was last seen active.',
      registers,
    });
    this.runtimeOperations = new Counter({
      name: 'kubelet_runtime_operations_total',
      help: 'Cumulative number of runtime operations by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsErrors = new Counter({
      name: 'kubelet_runtime_operations_errors_total',
      help: 'Cumulative number of runtime operation errors by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsDuration = new Histogram({
      name: 'kubelet_runtime_operations_duration_seconds',
      help: 'Duration in seconds of runtime operations. Broken down by operation type.',
      labelNames: ['operation_type'],
      buckets: OPERATION_BUCKETS,
      registers,
    });
    this.runningPods = new Gauge({
      name: 'kubelet_running_pods',
      help: 'Number of pods that have a running pod sandbox',
      registers,
    });
    this.runningContainers = new Gauge({
      name: 'kubelet_running_containers',
      help: 'Number of containers currently running',
      labelNames: ['container_state'],
      registers,
    });
    this.startedPods = new Counter({
      name: 'kubelet_started_pods_total',
      help: 'Cumulative number of pods started',
      registers,
    });
    this.startedPodsErrors = new Counter({
      name: 'kubelet_started_pods_errors_total',
      help: 'Cumulative number of errors when starting pods',
      registers,
    });
    this.evictions = new Counter({
      name: 'kubelet_evictions',
      help: 'Cumulative number of pod evictions by eviction signal',
      labelNames: ['eviction_signal'],
      registers,
    });
    this.imageGarbageCollected = new Counter({
      name: 'kubelet_image_garbage_collected_total',
      help: 'Total number of images garbage collected by the kubelet, whether through disk usage or image age.',
      labelNames: ['reason'],
      registers,
    });
    this.httpRequests = new Counter({
      name: 'kubelet_http_requests_total',
      help: 'Number of the http requests received since the server started',
      labelNames: ['method', 'path', 'server_type', 'long_running'],
      registers,
    });
    this.httpRequestsDuration = new Histogram({
      name: 'kubelet_http_requests_duration_seconds',
      help: 'Duration in seconds to serve http requests',
      labelNames: ['method', 'path', 'server_type', 'long_running'],
      buckets: OPERATION_BUCKETS,
      registers,
    });
    const probeRegisters = [this.probesRegistry];
    this.proberProbeTotal = new Counter({
      name: 'prober_probe_total',
      help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
      labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
      registers: probeRegisters,
    });
    this.proberProbeDuration = new Histogram({
      name: 'prober_probe_duration_seconds',
      help: 'Duration in seconds for a probe response.',
      labelNames: ['probe_type', 'container', 'pod', 'namespace'],
      registers: probeRegisters,
    });
    if (opts.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** Plugs into the PLEG's onRelist hook: the kubelet's relist duration, interval and last-seen time. */
  observeRelist(r: RelistTiming): void {
    this.plegRelistDuration.observe(r.durationMs / 1000);
    if (r.intervalMs !== undefined) this.plegRelistInterval.observe(r.intervalMs / 1000);
    if (r.lastSeenMs !== undefined) this.plegLastSeen.set(r.lastSeenMs / 1000);
  }

  /** Plugs into CriClient's onCall hook: one CRI call = one runtime operation. */
  recordCriCall(call: { method: string; durationMs: number; error?: unknown }): void {
    const op = runtimeOperationType(call.method);
    this.runtimeOperations.inc({ operation_type: op });
    this.runtimeOperationsDuration.observe({ operation_type: op }, call.durationMs / 1000);
    if (call.error) this.runtimeOperationsErrors.inc({ operation_type: op });
  }
}

/** CRI method to the kubelet's operation_type label: runPodSandbox -> run_podsandbox, imageFsInfo -> image_fs_info. */
export function runtimeOperationType(method: string): string {
  const base = method.includes('/') ? (method.split('/').pop() as string) : method;
  return base
    .replace(/PodSandbox/g, 'Podsandbox')
    .replace(/^podSandbox/, 'podsandbox')
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase();
}
