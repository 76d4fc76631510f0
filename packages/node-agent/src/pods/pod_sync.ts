// One pass of one pod through the runtime: the PodSyncer the pod workers call (the kubelet's
// SyncPod and SyncTerminatingPod). A sync reads the runtime's status of the pod, reports it,
// lets the runtime manager bring the pod to its spec (pulls, starts, restarts under
// CrashLoopBackOff, kills what the spec or a failed probe no longer wants), and reports again
// with the result. A termination stops every container and the sandbox and reports the final
// status. Each report is generateAPIPodStatus handed to the status manager, with an evicted
// pod's Failed status on top.

import type { Clock } from '@kh/apimachinery';
import { type Backoff, type PodSyncResult, type Runtime, runningPodFromStatus } from '@kh/runtime-manager';
import type { V1Pod, V1PodStatus, V1Secret } from '@kubernetes/client-node';
import type { EvictionStatus } from '../eviction/types.js';
import { generateAPIPodStatus, type ProbeResults } from '../status/generate.js';
import type { StatusManager } from '../status/types.js';
import type { PodManager } from './pod_manager.js';
import type { PodProber, PodSyncer } from './types.js';

type SyncRuntime = Pick<Runtime, 'getPodStatus' | 'syncPod' | 'killPod'>;

export interface PodSyncDeps {
  runtime: SyncRuntime;
  statusManager: StatusManager;
  /** Where an evicted pod's final status is kept. */
  pods: Pick<PodManager, 'evictionStatus'>;
  backoff: Backoff;
  clock: Clock;
  nodeIP: string;
  probes?: ProbeResults;
  prober?: Pick<PodProber, 'stopLivenessAndStartup' | 'removePod'>;
  /** The pod's image pull secrets, read for every sync. */
  pullSecrets?: (pod: V1Pod) => Promise<V1Secret[]>;
}

export class PodSync implements PodSyncer {
  constructor(private readonly deps: PodSyncDeps) {}

  async syncPod(pod: V1Pod): Promise<boolean> {
    const { runtime, statusManager } = this.deps;
    const uid = pod.metadata?.uid ?? '';
    const before = await runtime.getPodStatus(uid, pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
    this.report(pod, before);
    const current = statusManager.getPodStatus(uid);
    // Ran to completion: its worker tears down what is left (the sandbox) and never starts it again.
    if (current?.phase === 'Succeeded' || current?.phase === 'Failed') return true;
    const secrets = (await this.deps.pullSecrets?.(pod)) ?? [];
    const result = await runtime.syncPod(pod, before, secrets, this.deps.backoff);
    const after = await runtime.getPodStatus(uid, pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
    this.report(pod, after, result);
    const failed =
      result.syncError ?? result.steps.find((s) => s.error && s.reason !== 'CrashLoopBackOff')?.error;
    if (failed) throw failed;
    return false;
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
    this.report(pod, after, undefined, true);
    statusManager.terminatePod(pod);
  }

  private report(
    pod: V1Pod,
    runtimeStatus: Awaited<ReturnType<SyncRuntime['getPodStatus']>>,
    syncResult?: PodSyncResult,
    terminal = false,
  ): void {
    const uid = pod.metadata?.uid ?? '';
    const status = generateAPIPodStatus({
      pod,
      runtime: runtimeStatus,
      oldStatus: this.deps.statusManager.getPodStatus(uid) ?? pod.status,
      ...(syncResult ? { syncResult } : {}),
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
