// The prober manager: starts a worker for every probe of every container of an admitted pod,
// stops liveness and startup checks when the pod starts terminating (readiness then reads
// false), and turns probe outcomes into the kubelet's events (Unhealthy, ProbeWarning), the
// prober_probe_total counter, and results. The runtime manager reads liveness and startup
// failures from those results when it syncs the pod and kills the container with the probe's
// grace period.

import type { TimerClock } from '@kh/apimachinery';
import type { EventRecorder, Runtime } from '@kh/runtime-manager';
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { KubeletMetrics } from '../metrics/metrics.js';
import { type Logger, silentLogger } from '../util/log.js';
import { execProbe, grpcProbe, httpProbe, type ProbeOutcome, tcpProbe } from './handlers.js';
import { PROBE_FIELD, type ProbeType, probeSpec, resolvePort, validateProbe } from './probe_spec.js';
import { ProbeResultsStore } from './results.js';
import { type ProbeRequest, type ProbeRunner, ProbeWorker } from './worker.js';

export interface ProberManagerDeps {
  /** ExecSync for exec probes; the runtime type names the container id scheme. */
  runtime: Pick<Runtime, 'runInContainer' | 'type'>;
  recorder: EventRecorder;
  /** The status manager's cached pod status: container ids, states and the pod IP. */
  podStatus: (uid: string) => V1PodStatus | undefined;
  clock: TimerClock;
  metrics?: Pick<KubeletMetrics, 'proberProbeTotal' | 'proberProbeDuration'>;
  log?: Logger;
  /** Replaces the real handlers (tests of the worker rules). */
  runner?: ProbeRunner;
  /** Where results go; shared with the runtime manager, which is built before the prober. */
  results?: ProbeResultsStore;
  /** The ContainerRestartRules gate: an exited container is probed on while it will restart. */
  containerRestartRules?: boolean;
}

const TYPES: readonly ProbeType[] = ['startup', 'liveness', 'readiness'];
const METRIC_TYPE: Record<ProbeType, string> = {
  liveness: 'Liveness',
  readiness: 'Readiness',
  startup: 'Startup',
};

/** The real probe actions against the pod (network probes from the node's namespace). */
export function defaultProbeRunner(runtime: Pick<Runtime, 'runInContainer' | 'type'>): ProbeRunner {
  return async ({ spec, container, containerId, podIP }: ProbeRequest): Promise<ProbeOutcome> => {
    const h = spec.handler;
    switch (h.kind) {
      case 'exec':
        return execProbe(runtime, { type: runtime.type(), id: containerId }, h.command, spec.timeoutMs);
      case 'httpGet':
        return httpProbe(
          {
            scheme: h.scheme,
            host: h.host ?? podIP,
            port: resolvePort(h.port, container),
            path: h.path,
            headers: h.headers,
          },
          spec.timeoutMs,
        );
      case 'tcpSocket':
        return tcpProbe(h.host ?? podIP, resolvePort(h.port, container), spec.timeoutMs);
      case 'grpc':
        return grpcProbe(podIP, h.port, h.service, spec.timeoutMs);
    }
  };
}

/** Gives a worker the newest pod; a copy from before the deletion never replaces one showing it. */
function refresh(w: ProbeWorker, pod: V1Pod): void {
  if (!w.pod.metadata?.deletionTimestamp || pod.metadata?.deletionTimestamp) w.pod = pod;
}

export class ProberManager {
  readonly results: ProbeResultsStore;
  private readonly workers = new Map<string, ProbeWorker>();
  /** Pods whose termination was requested: their liveness and startup probes never run again. */
  private readonly terminating = new Set<string>();
  private readonly runner: ProbeRunner;
  private readonly log: Logger;

  constructor(private readonly deps: ProberManagerDeps) {
    this.results = deps.results ?? new ProbeResultsStore();
    this.runner = deps.runner ?? defaultProbeRunner(deps.runtime);
    this.log = deps.log ?? silentLogger;
    // As the kubelet does, a container that has just started is checked for readiness at once,
    // not up to a readiness period later: its container's readiness worker, whichever instance
    // it probed last (none yet, or the one before a restart).
    this.results.onUpdate((u) => {
      if (u.type !== 'startup' || u.result !== 'success') return;
      const uid = u.pod.metadata?.uid ?? '';
      for (const [key, w] of this.workers)
        if (key.startsWith(`${uid}/`) && w.type === 'startup' && w.probedContainerId === u.containerId)
          this.workers.get(this.key(uid, w.container.name, 'readiness'))?.trigger();
    });
  }

  private key(uid: string, container: string, type: ProbeType): string {
    return `${uid}/${container}/${type}`;
  }

  private probedContainers(pod: V1Pod): V1Container[] {
    // Sidecars (restartable init containers) are probed like app containers.
    return [
      ...(pod.spec?.initContainers ?? []).filter((c) => c.restartPolicy === 'Always'),
      ...(pod.spec?.containers ?? []),
    ];
  }

  /**
   * Starts the workers a pod needs, or refreshes their pod when it is known. A pod with a
   * deletionTimestamp, or whose termination was requested before (an older copy of the pod may
   * still come by), keeps only readiness (which then reads false). An invalid probe is logged
   * and not run.
   */
  addPod(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const terminating = pod.metadata?.deletionTimestamp !== undefined || this.terminating.has(uid);
    if (terminating) this.stopLivenessAndStartup(pod);
    for (const c of this.probedContainers(pod)) {
      for (const type of TYPES) {
        const probe = c[PROBE_FIELD[type]];
        if (!probe || (terminating && type !== 'readiness')) continue;
        const key = this.key(uid, c.name, type);
        const existing = this.workers.get(key);
        if (existing) {
          refresh(existing, pod);
          continue;
        }
        const errors = validateProbe(probe, type, `spec.containers[${c.name}].${PROBE_FIELD[type]}`);
        if (errors.length > 0) {
          this.log.error('Invalid probe, not running it', {
            pod: pod.metadata?.name,
            container: c.name,
            errors,
          });
          continue;
        }
        const w = new ProbeWorker(pod, c, probeSpec(probe, type), {
          clock: this.deps.clock,
          results: this.results,
          podStatus: this.deps.podStatus,
          runProbe: (req) => this.timedProbe(req),
          observed: (worker, outcome) => this.observed(worker, outcome),
          ended: () => this.workers.delete(key),
          containerRestartRules: this.deps.containerRestartRules ?? false,
        });
        this.workers.set(key, w);
        w.start();
      }
    }
  }

  /** The pod is terminating: liveness and startup stop, readiness reports not ready. */
  stopLivenessAndStartup(pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    this.terminating.add(uid);
    for (const [key, w] of this.workers) {
      if (!key.startsWith(`${uid}/`)) continue;
      refresh(w, pod);
      if (w.type !== 'readiness') {
        w.stop();
        this.workers.delete(key);
      }
    }
  }

  removePod(uid: string): void {
    for (const [key, w] of this.workers) {
      if (key.startsWith(`${uid}/`)) {
        w.stop();
        this.workers.delete(key);
      }
    }
  }

  /** Housekeeping: drops workers, and the termination marks, of pods no longer wanted. */
  cleanupPods(desired: ReadonlySet<string>): void {
    for (const key of this.workers.keys()) {
      const uid = key.split('/')[0] ?? '';
      if (!desired.has(uid)) this.removePod(uid);
    }
    for (const uid of this.terminating) if (!desired.has(uid)) this.terminating.delete(uid);
  }

  workerCount(): number {
    return this.workers.size;
  }

  /** Waits for probes in flight (tests, shutdown). */
  async idle(): Promise<void> {
    await Promise.all([...this.workers.values()].map((w) => w.idle()));
  }

  stop(): void {
    for (const w of this.workers.values()) w.stop();
    this.workers.clear();
    this.terminating.clear();
  }

  /** Runs a probe; like the kubelet, only successful probes feed the duration histogram. */
  private async timedProbe(req: ProbeRequest): Promise<ProbeOutcome> {
    const t0 = performance.now();
    const outcome = await this.runner(req);
    if (outcome.result !== 'failure') {
      this.deps.metrics?.proberProbeDuration.observe(
        {
          probe_type: METRIC_TYPE[req.spec.type],
          container: req.container.name,
          pod: req.pod.metadata?.name ?? '',
          namespace: req.pod.metadata?.namespace ?? '',
        },
        (performance.now() - t0) / 1000,
      );
    }
    return outcome;
  }

  private labels(w: ProbeWorker) {
    return {
      probe_type: METRIC_TYPE[w.type],
      container: w.container.name,
      pod: w.pod.metadata?.name ?? '',
      namespace: w.pod.metadata?.namespace ?? '',
    };
  }

  private observed(w: ProbeWorker, outcome: ProbeOutcome | Error): void {
    const name = METRIC_TYPE[w.type];
    const labels = { ...this.labels(w), pod_uid: w.pod.metadata?.uid ?? '' };
    if (outcome instanceof Error) {
      this.deps.metrics?.proberProbeTotal.inc({ ...labels, result: 'unknown' });
      this.deps.recorder.event(w.pod, 'Warning', 'Unhealthy', `${name} probe errored: ${outcome.message}`);
      return;
    }
    const ok = outcome.result !== 'failure';
    this.deps.metrics?.proberProbeTotal.inc({ ...labels, result: ok ? 'successful' : 'failed' });
    if (outcome.result === 'warning')
      this.deps.recorder.event(w.pod, 'Warning', 'ProbeWarning', `${name} probe warning: ${outcome.output}`);
    if (!ok)
      this.deps.recorder.event(w.pod, 'Warning', 'Unhealthy', `${name} probe failed: ${outcome.output}`);
  }
}
