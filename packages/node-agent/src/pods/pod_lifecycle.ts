// The kubelet's pod handling between the sync loop and the runtime: it keeps the desired pods,
// admits new ones, starts and stops their probes, hands work to the pod workers, runs each sync
// through the runtime manager, and reports the resulting API status to the status manager. It is
// the SyncHandler that Kubelet.syncLoop dispatches to, the PodSyncer the workers call, the
// eviction manager's PodKiller and container GC's PodStateProvider.

import {
  type Backoff,
  type PodLifecycleEvent,
  type PodStateProvider,
  type Runtime,
  runningPodFromStatus,
} from '@kh/runtime-manager';
import type { V1Pod, V1PodStatus, V1Secret } from '@kubernetes/client-node';
import type { AdmitHandler } from '../admission/handler.js';
import type { KubeletEventRecorder } from '../events/recorder.js';
import type { EvictionStatus, PodKiller } from '../eviction/types.js';
import { generateAPIPodStatus, type ProbeResults } from '../status/generate.js';
import type { PodStatusManager } from '../status/status_manager.js';
import type { Clock } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';
import { PodContainerDeletor } from './pod_container_deletor.js';
import type { PodSyncer, PodWorkerPool } from './pod_workers.js';
import type { SyncHandler } from './types.js';

type PodRuntime = Pick<Runtime, 'getPodStatus' | 'syncPod' | 'killPod' | 'getPods' | 'deleteContainer'>;

/** What the pod layer needs of the prober manager. */
export interface PodProber {
  addPod(pod: V1Pod): void;
  stopLivenessAndStartup(pod: V1Pod): void;
  removePod(uid: string): void;
  cleanupPods(desired: ReadonlySet<string>): void;
}

export interface PodLifecycleDeps {
  runtime: PodRuntime;
  statusManager: PodStatusManager;
  /** Set right after construction: the workers call back into this object. */
  workers?: PodWorkerPool;
  backoff: Backoff;
  clock: Clock;
  nodeIP: string;
  /** Decides whether a new pod may run here (the registered admit handlers). */
  admit: AdmitHandler;
  resyncIntervalMs: number;
  probes?: ProbeResults;
  prober?: PodProber;
  /** The pod's image pull secrets, read for every sync. */
  pullSecrets?: (pod: V1Pod) => Promise<V1Secret[]>;
  recorder?: KubeletEventRecorder;
  log?: Logger;
}

const isTerminalPhase = (pod: V1Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

export class PodLifecycle implements SyncHandler, PodSyncer, PodKiller, PodStateProvider {
  /** Desired pods by UID, as the sources last described them. */
  private readonly pods = new Map<string, V1Pod>();
  private readonly nextSync = new Map<string, number>();
  private readonly rejected = new Set<string>();
  /** Pods the eviction manager killed, with the status they end with. */
  private readonly evicted = new Map<string, EvictionStatus>();

  readonly containerDeletor: PodContainerDeletor;

  constructor(private readonly deps: PodLifecycleDeps) {
    this.containerDeletor = new PodContainerDeletor(deps.runtime, deps.log);
  }

  private get workers(): PodWorkerPool {
    if (!this.deps.workers) throw new Error('PodLifecycle used before its workers were set');
    return this.deps.workers;
  }

  getPods(): V1Pod[] {
    return [...this.pods.values()];
  }

  /** Admitted pods that still count against the node: not terminal, not being torn down. */
  activePods(): V1Pod[] {
    return this.getPods().filter((p) => {
      const uid = p.metadata?.uid ?? '';
      const s = this.deps.statusManager.getPodStatus(uid);
      const terminal = s ? s.phase === 'Succeeded' || s.phase === 'Failed' : isTerminalPhase(p);
      return !terminal && !this.workers.isPodTerminationRequested(uid);
    });
  }

  async handlePodAdditions(pods: V1Pod[]): Promise<void> {
    const ordered = [...pods].sort(
      (a, b) =>
        new Date(a.metadata?.creationTimestamp ?? 0).getTime() -
        new Date(b.metadata?.creationTimestamp ?? 0).getTime(),
    );
    for (const pod of ordered) {
      const uid = pod.metadata?.uid ?? '';
      const active = this.activePods();
      this.pods.set(uid, pod);
      if (isTerminalPhase(pod)) continue;
      if (!pod.metadata?.deletionTimestamp) {
        const verdict = this.deps.admit.admit({ pod, otherPods: active });
        if (!verdict.admit) {
          this.rejectPod(pod, verdict.reason, verdict.message);
          continue;
        }
      }
      this.deps.prober?.addPod(pod);
      this.workers.updatePod({ pod, op: 'create' });
      this.nextSync.set(uid, this.deps.clock.now() + this.deps.resyncIntervalMs);
    }
  }

  private rejectPod(pod: V1Pod, reason: string, message: string): void {
    this.rejected.add(pod.metadata?.uid ?? '');
    this.deps.recorder?.event(pod, 'Warning', reason, message);
    this.deps.statusManager.setPodStatus(pod, { ...(pod.status ?? {}), phase: 'Failed', reason, message });
  }

  async handlePodUpdates(pods: V1Pod[]): Promise<void> {
    for (const pod of pods) {
      const uid = pod.metadata?.uid ?? '';
      const known = this.pods.has(uid);
      this.pods.set(uid, pod);
      // A rejected pod never got a worker; updates do not resurrect it.
      if (!known || this.rejected.has(uid)) continue;
      // A pod being deleted keeps only its readiness probe, which then reads not ready.
      this.deps.prober?.addPod(pod);
      this.workers.updatePod({ pod, op: 'update' });
    }
  }

  async handlePodRemoves(pods: V1Pod[]): Promise<void> {
    for (const pod of pods) {
      const uid = pod.metadata?.uid ?? '';
      this.pods.delete(uid);
      this.nextSync.delete(uid);
      this.evicted.delete(uid);
      this.deps.prober?.removePod(uid);
      if (!this.rejected.delete(uid)) this.workers.updatePod({ pod, op: 'kill' });
    }
  }

  async handlePodReconcile(pods: V1Pod[]): Promise<void> {
    for (const pod of pods) if (pod.metadata?.uid) this.pods.set(pod.metadata.uid, pod);
  }

  async handlePodSyncs(pods: V1Pod[]): Promise<void> {
    const next = this.deps.clock.now() + this.deps.resyncIntervalMs;
    for (const pod of pods) {
      this.nextSync.set(pod.metadata?.uid ?? '', next);
      this.workers.updatePod({ pod, op: 'sync' });
    }
  }

  podsToSync(now: number): V1Pod[] {
    return [...this.nextSync].filter(([, at]) => at <= now).flatMap(([uid]) => this.pods.get(uid) ?? []);
  }

  async handlePlegEvent(event: PodLifecycleEvent): Promise<void> {
    this.handleProbeSync(event.podUid);
    if (event.type === 'ContainerDied') {
      const uid = event.podUid;
      const pod = this.pods.get(uid);
      this.containerDeletor.cleanUpContainersInPod(
        () => this.deps.runtime.getPodStatus(uid, pod?.metadata?.name ?? '', pod?.metadata?.namespace ?? ''),
        event.data,
        this.shouldPodContentBeRemoved(uid),
      );
    }
  }

  /** Syncs an admitted pod now: a runtime event, or a probe result the runtime manager acts on. */
  handleProbeSync(uid: string): void {
    const pod = this.pods.get(uid);
    if (pod && this.nextSync.has(uid)) this.workers.updatePod({ pod, op: 'sync' });
  }

  /** Housekeeping: kill what runs for pods nobody wants, forget finished workers. */
  async handlePodCleanups(): Promise<void> {
    const log = this.deps.log ?? silentLogger;
    const running = await this.deps.runtime.getPods(false);
    for (const rp of running) {
      if (this.pods.has(rp.uid)) continue;
      log.info('Killing orphaned pod', { pod: `${rp.namespace}/${rp.name}`, uid: rp.uid });
      await this.deps.runtime
        .killPod(undefined, rp)
        .catch((err) => log.error('Failed to kill orphaned pod', { uid: rp.uid, err }));
    }
    this.workers.syncKnownPods(this.getPods());
    this.deps.statusManager.removeOrphanedStatuses(new Set(this.pods.keys()));
    this.deps.prober?.cleanupPods(
      new Set(
        this.getPods().flatMap((p) =>
          this.workers.isPodTerminated(p.metadata?.uid ?? '') ? [] : [p.metadata?.uid ?? ''],
        ),
      ),
    );
  }

  /** PodKiller: the eviction manager's kill, which leaves the pod Failed with reason Evicted. */
  async evictPod(pod: V1Pod, gracePeriodSeconds: number, status: EvictionStatus): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.evicted.set(uid, status);
    await this.workers.killPodNow(this.pods.get(uid) ?? pod, gracePeriodSeconds);
  }

  /**
   * PodStateProvider: a pod the sources no longer list is gone, with everything it left; so is
   * the content of an evicted pod (its API object stays, Failed).
   */
  shouldPodContentBeRemoved(uid: string): boolean {
    return !this.pods.has(uid) || this.evicted.has(uid);
  }

  /**
   * What the eviction manager waits for after an eviction (the kubelet's
   * podResourcesAreReclaimed): the pod is terminated, nothing of it runs, and when its content
   * should go, none of its containers is left to hold memory or disk.
   */
  async podResourcesAreReclaimed(pod: V1Pod): Promise<boolean> {
    const uid = pod.metadata?.uid ?? '';
    if (!this.workers.isPodTerminated(uid)) return false;
    const status = await this.deps.runtime.getPodStatus(
      uid,
      pod.metadata?.name ?? '',
      pod.metadata?.namespace ?? '',
    );
    if (status.containerStatuses.some((c) => c.state === 'running')) return false;
    return !this.shouldPodContentBeRemoved(uid) || status.containerStatuses.length === 0;
  }

  /** PodStateProvider: a terminated pod's containers and sandboxes may go, its API object stays. */
  shouldPodRuntimeBeRemoved(uid: string): boolean {
    return !this.pods.has(uid) || this.workers.isPodTerminated(uid);
  }

  async syncPod(pod: V1Pod): Promise<void> {
    const { runtime, statusManager } = this.deps;
    const uid = pod.metadata?.uid ?? '';
    const before = await runtime.getPodStatus(uid, pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
    this.report(pod, before);
    const current = statusManager.getPodStatus(uid);
    if (current?.phase === 'Succeeded' || current?.phase === 'Failed') {
      // Ran to completion: tear down what is left (the sandbox) and never start it again.
      this.workers.updatePod({ pod, op: 'kill' });
      return;
    }
    const secrets = (await this.deps.pullSecrets?.(pod)) ?? [];
    const result = await runtime.syncPod(pod, before, secrets, this.deps.backoff);
    const after = await runtime.getPodStatus(uid, pod.metadata?.name ?? '', pod.metadata?.namespace ?? '');
    this.report(pod, after, result);
    const failed =
      result.syncError ?? result.steps.find((s) => s.error && s.reason !== 'CrashLoopBackOff')?.error;
    if (failed) throw failed;
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
    runtimeStatus: Awaited<ReturnType<PodRuntime['getPodStatus']>>,
    syncResult?: Parameters<typeof generateAPIPodStatus>[0]['syncResult'],
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
    const eviction = this.evicted.get(uid);
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
