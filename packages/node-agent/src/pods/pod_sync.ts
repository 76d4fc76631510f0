// One pass of one pod through the runtime: the PodSyncer the pod workers call (the kubelet's
// SyncPod and SyncTerminatingPod). A sync reads the runtime's status of the pod, reports it,
// lets the runtime manager bring the pod to its spec (pulls, starts, restarts under
// CrashLoopBackOff, kills what the spec or a failed probe no longer wants), records why each
// container start failed in the reason cache, and reports again. A container left in
// CrashLoopBackOff fails the pass with the time its back-off expires, so its worker syncs it
// again then. A pass whose signal fires (the pod's termination was requested meanwhile) stops
// where it is and leaves the report to the terminating pass. A termination stops every container
// and the sandbox and reports the final status. Each report is generateAPIPodStatus handed to the
// status manager, with an evicted pod's Failed status on top.

import type { Clock } from '@kh/apimachinery';
import {
  type Backoff,
  containerBackoffKey,
  ErrCrashLoopBackOff,
  hashContainer,
  type PodStatus,
  type Runtime,
  runningPodFromStatus,
  type SyncStepResult,
} from '@kh/runtime-manager';
import type { V1Pod, V1PodStatus, V1Secret } from '@kubernetes/client-node';
import type { EvictionStatus } from '../eviction/types.js';
import { generateAPIPodStatus, type ProbeResults } from '../status/generate.js';
import type { ReasonCache } from '../status/reason_cache.js';
import type { StatusManager } from '../status/types.js';
import type { PodManager } from './pod_manager.js';
import { CrashLoopBackOffError, type PodProber, type PodSyncer } from './types.js';

type SyncRuntime = Pick<Runtime, 'getPodStatus' | 'syncPod' | 'killPod'>;

export interface PodSyncDeps {
  runtime: SyncRuntime;
  statusManager: StatusManager;
  /** Where an evicted pod's final status is kept. */
  pods: Pick<PodManager, 'evictionStatus'>;
  backoff: Backoff;
  /** Why each container last failed to start; read back when statuses are generated. */
  reasons: ReasonCache;
  clock: Clock;
  nodeIP: string;
  probes?: ProbeResults;
  prober?: Pick<PodProber, 'stopLivenessAndStartup' | 'removePod'>;
  /** The pod's image pull secrets, read for every sync. */
  pullSecrets?: (pod: V1Pod) => Promise<V1Secret[]>;
}

export class PodSync implements PodSyncer {
  constructor(private readonly deps: PodSyncDeps) {}

  async syncPod(pod: V1Pod, signal?: AbortSignal): Promise<boolean> {
    const { runtime, statusManager } = this.deps;
    const uid = pod.metadata?.uid ?? '';
    const before = await runtime.getPodStatus(uid, pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
    // Aborted: the terminating pass that follows reports, with the pod object showing the deletion.
    if (signal?.aborted) return false;
    this.report(pod, before);
    const current = statusManager.getPodStatus(uid);
    // Ran to completion: its worker tears down what is left (the sandbox) and never starts it again.
    if (current?.phase === 'Succeeded' || current?.phase === 'Failed') return true;
    const secrets = (await this.deps.pullSecrets?.(pod)) ?? [];
    const result = await runtime.syncPod(pod, before, secrets, this.deps.backoff, signal);
    this.deps.reasons.update(uid, result);
    if (result.aborted) return false;
    const after = await runtime.getPodStatus(uid, pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
    this.report(pod, after);
    const failed =
      result.syncError ?? result.steps.find((s) => s.error && s.reason !== ErrCrashLoopBackOff)?.error;
    if (failed) throw failed;
    const backedOff = result.steps.filter((s) => s.reason === ErrCrashLoopBackOff);
    if (backedOff.length > 0) {
      const message = backedOff
        .map((s) => `failed to "${s.action}" for "${s.target}" with ${s.reason}: "${s.message}"`)
        .join('; ');
      throw new CrashLoopBackOffError(message, this.untilBackoffExpires(pod, before, backedOff));
    }
    return false;
  }

  /**
   * Milliseconds until the first of these backed-off containers may start again: the runtime
   * manager measures each back-off from when the container's newest instance finished.
   */
  private untilBackoffExpires(pod: V1Pod, status: PodStatus, steps: SyncStepResult[]): number {
    const now = this.deps.clock.now();
    const names = new Set(steps.map((s) => s.target));
    const specs = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
    const remaining = specs
      .filter((c) => names.has(c.name))
      .map((c) => {
        const finished =
          status.containerStatuses.find((s) => s.name === c.name)?.finishedAt?.getTime() ?? now;
        return finished + this.deps.backoff.get(containerBackoffKey(pod, c, hashContainer(c))) - now;
      });
    return Math.max(0, Math.min(...remaining));
  }

  async syncTerminatingPod(pod: V1Pod, gracePeriodSeconds?: number): Promise<void> {
    const { runtime, statusManager } = this.deps;
    const uid = pod.metadata?.uid ?? '';
    this.deps.prober?.stopLivenessAndStartup(pod);
    const status = await runtime.getPodStatus(uid, pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
    await runtime.killPod(pod, runningPodFromStatus(status), gracePeriodSeconds);
    // Stopped containers have nothing left to probe.
    this.deps.prober?.removePod(uid);
    const after = await runtime.getPodStatus(uid, pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
    this.report(pod, after, true);
    statusManager.terminatePod(pod);
  }

  private report(pod: V1Pod, runtimeStatus: PodStatus, terminal = false): void {
    const uid = pod.metadata?.uid ?? '';
    const status = generateAPIPodStatus({
      pod,
      runtime: runtimeStatus,
      oldStatus: this.deps.statusManager.getPodStatus(uid) ?? pod.status,
      reasons: this.deps.reasons,
      podIsTerminal: terminal,
      nodeIP: this.deps.nodeIP,
      now: new Date(this.deps.clock.now()),
      ...(this.deps.probes ? { probes: this.deps.probes } : {}),
    });
    const eviction = this.deps.pods.evictionStatus(uid);
    this.deps.statusManager.setPodStatus(pod, eviction ? withEviction(status, eviction) : status);
  }
}

/** The generated status with the eviction's phase, reason, message and DisruptionTarget condition. */
function withEviction(status: V1PodStatus, eviction: EvictionStatus): V1PodStatus {
  const { phase, reason, message, conditions } = eviction;
  const replaced = new Set(conditions.map((c) => c.type));
  return {
    ...status,
    phase,
    reason,
    message,
    conditions: [...(status.conditions ?? []).filter((c) => !replaced.has(c.type)), ...conditions],
  };
}
