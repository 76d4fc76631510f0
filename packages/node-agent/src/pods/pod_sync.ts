// One pass of one pod through the runtime: the PodSyncer the pod workers call (the kubelet's
// SyncPod, SyncTerminatingPod and SyncTerminatedPod). Its worker hands it the pod's status from
// the PLEG-fed pod cache; only a termination reads the runtime's status itself. A sync reports that
// status, lets the runtime manager bring the pod to its spec (pulls, starts, restarts under
// CrashLoopBackOff, kills what the spec or a failed probe no longer wants) and records why each
// container start failed in the reason cache. A failed start is reported again at once, with
// its reason; what the pass changed reaches the status through the PLEG, whose event syncs the
// pod again. A container left in CrashLoopBackOff fails the pass with the time its back-off
// expires, so its worker syncs it again then. A pass whose signal fires (the pod's termination
// was requested meanwhile) stops where it is and leaves the report to the terminating pass. A
// termination stops every container and the sandbox, then reports the final status from the
// runtime's own status read straight after the kill (the kubelet's stoppedPodStatus): the pod is
// terminal without waiting for a relist, and the end states are read before anything may remove
// the containers. The terminated pass reports it again from the cache. Each report is
// generateAPIPodStatus handed to the status manager, with an evicted pod's Failed status on top,
// or a pod past its activeDeadlineSeconds failed.

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
import type { AllocationManager } from '../allocation/allocation_manager.js';
import type { PodCgroups } from '../cm/container_manager.js';
import type { EvictionStatus } from '../eviction/types.js';
import { generateAPIPodStatus, type ProbeResults } from '../status/generate.js';
import type { ReasonCache } from '../status/reason_cache.js';
import type { StatusManager } from '../status/types.js';
import { withActiveDeadline } from './active_deadline.js';
import type { PodManager } from './pod_manager.js';
import type { StartupEvents } from './startup_tracker.js';
import { CrashLoopBackOffError, type PodProber, type PodSyncer } from './types.js';

type SyncRuntime = Pick<Runtime, 'syncPod' | 'killPod' | 'getPodStatus'>;

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
  /** Makes the pod's cgroup (the container manager) before the runtime creates its sandbox. */
  podCgroups?: Pick<PodCgroups, 'ensureExists'>;
  /** Told as the first pass gets through each step of its preparation (the start-up breakdown). */
  startup?: Pick<StartupEvents, 'prepared'>;
  /** The ContainerRestartRules gate, for the generated status. */
  containerRestartRules?: boolean;
  /**
   * In-place resize: each pass syncs the pod with its allocated resources, after the allocation
   * manager decided on a changed spec; `allocatedStatus` reports containers' allocatedResources.
   */
  resize?: {
    allocation: Pick<
      AllocationManager,
      'handlePodResourcesResize' | 'afterSync' | 'conditions' | 'getActuatedResources'
    >;
    /**
     * The runtime's status of the pod, read now and put in the pod cache (the PLEG's
     * UpdateCache): a resize changes no container state, so no PLEG event brings it.
     */
    refreshStatus(pod: V1Pod): Promise<PodStatus>;
    allocatedStatus: boolean;
  };
}

export class PodSync implements PodSyncer {
  constructor(private readonly deps: PodSyncDeps) {}

  async syncPod(specPod: V1Pod, status: PodStatus, signal?: AbortSignal): Promise<boolean> {
    const { runtime, statusManager, resize } = this.deps;
    const uid = specPod.metadata?.uid ?? '';
    // Before anything else, so the whole pass sees one view of the pod: its allocated resources.
    const pod = resize ? resize.allocation.handlePodResourcesResize(specPod) : specPod;
    this.report(pod, status);
    const current = statusManager.getPodStatus(uid);
    // Ran to completion: its worker tears down what is left (the sandbox) and never starts it again.
    if (current?.phase === 'Succeeded' || current?.phase === 'Failed') return true;
    const { startup } = this.deps;
    startup?.prepared(uid, 'status');
    await this.deps.podCgroups?.ensureExists(pod).catch((err: Error) => {
      throw new Error(
        `failed to ensure that the pod: ${uid} cgroups exist and are correctly applied: ${err.message}`,
      );
    });
    startup?.prepared(uid, 'cgroups');
    const secrets = (await this.deps.pullSecrets?.(pod)) ?? [];
    startup?.prepared(uid, 'secrets');
    // As the kubelet copies the API status's IPs into the runtime's view: a hostNetwork pod's are
    // the node's, which its containers see as status.podIP and in their /etc/hosts.
    const runtimeStatus = pod.spec?.hostNetwork ? { ...status, ips: [this.deps.nodeIP] } : status;
    const result = await runtime.syncPod(pod, runtimeStatus, secrets, this.deps.backoff, signal);
    this.deps.reasons.update(uid, result);
    // Aborted: the terminating pass that follows reports, with the pod object showing the deletion.
    if (result.aborted) return false;
    if (resize && result.steps.some((s) => s.action === 'ResizePodInPlace')) {
      const now = await resize.refreshStatus(pod);
      resize.allocation.afterSync(pod, now, result);
      this.report(pod, now);
    } else if (resize) {
      resize.allocation.afterSync(pod, status, result);
      if (result.steps.some((s) => s.error)) this.report(pod, status);
    } else if (result.steps.some((s) => s.error)) this.report(pod, status);
    const failed =
      result.syncError ?? result.steps.find((s) => s.error && s.reason !== ErrCrashLoopBackOff)?.error;
    if (failed) throw failed;
    const backedOff = result.steps.filter((s) => s.reason === ErrCrashLoopBackOff);
    if (backedOff.length > 0) {
      const message = backedOff
        .map((s) => `failed to "${s.action}" for "${s.target}" with ${s.reason}: "${s.message}"`)
        .join('; ');
      throw new CrashLoopBackOffError(message, this.untilBackoffExpires(pod, status, backedOff));
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

  async syncTerminatingPod(pod: V1Pod, status: PodStatus, gracePeriodSeconds?: number): Promise<void> {
    this.deps.prober?.stopLivenessAndStartup(pod);
    await this.deps.runtime.killPod(pod, runningPodFromStatus(status), gracePeriodSeconds);
    // Stopped containers have nothing left to probe.
    const uid = pod.metadata?.uid ?? '';
    this.deps.prober?.removePod(uid);
    const stopped = await this.deps.runtime.getPodStatus(
      uid,
      pod.metadata?.name ?? '',
      pod.metadata?.namespace ?? '',
    );
    const running = stopped.containerStatuses.filter((c) => c.state === 'running').map((c) => c.name);
    if (running.length > 0)
      throw new Error(
        `detected running containers after a successful KillPod, CRI violation: ${running.join(', ')}`,
      );
    this.report(pod, stopped, true);
  }

  async syncTerminatedPod(pod: V1Pod, status: PodStatus): Promise<void> {
    this.report(pod, status, true);
    this.deps.statusManager.terminatePod(pod);
  }

  private resizeStatus(pod: V1Pod, terminal: boolean) {
    const { allocation, allocatedStatus } = this.deps.resize!;
    const uid = pod.metadata?.uid ?? '';
    return {
      conditions: allocation.conditions(uid, terminal),
      actuated: (name: string) => allocation.getActuatedResources(uid, name),
      allocatedStatus,
    };
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
      ...(this.deps.containerRestartRules ? { containerRestartRules: true } : {}),
      ...(this.deps.resize ? { resize: this.resizeStatus(pod, terminal) } : {}),
    });
    const eviction = this.deps.pods.evictionStatus(uid);
    this.deps.statusManager.setPodStatus(
      pod,
      eviction ? withEviction(status, eviction) : withActiveDeadline(pod, status, this.deps.clock.now()),
    );
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
