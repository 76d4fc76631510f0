// The kubelet's pod handling between the sync loop and the workers: it records the desired pods
// in the pod manager, admits new ones, starts and stops their probes, hands work to the pod
// workers and kills removed pods; housekeeping kills orphans. It is the SyncHandler that
// Kubelet.syncLoop dispatches to and the eviction manager's PodKiller. One pod's pass through
// the runtime is PodSync's (pod_sync.ts), which the workers call.

import type { TimerClock } from '@kh/apimachinery';
import type { EventRecorder, PodCache, PodLifecycleEvent, Runtime } from '@kh/runtime-manager';
import type { V1Pod } from '@kubernetes/client-node';
import type { AdmitHandler } from '../admission/handler.js';
import type { AllocationManager } from '../allocation/allocation_manager.js';
import type { PodCgroups } from '../cm/container_manager.js';
import type { EvictionStatus, PodKiller } from '../eviction/types.js';
import type { ReasonCache } from '../status/reason_cache.js';
import { needToReconcilePodReadiness } from '../status/reconcile_readiness.js';
import type { StatusManager } from '../status/types.js';
import type { UsernsManager } from '../userns/userns_manager.js';
import { untilDoneOr } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';
import type { OrphanedPodDirs } from '../volumemanager/orphaned_pod_dirs.js';
import { pastActiveDeadline } from './active_deadline.js';
import { PodContainerDeletor } from './pod_container_deletor.js';
import type { PodManager } from './pod_manager.js';
import type { StartupEvents } from './startup_tracker.js';
import type { PodProber, PodWorkers, SyncHandler } from './types.js';

export interface PodLifecycleDeps {
  pods: PodManager;
  workers: PodWorkers;
  statusManager: StatusManager;
  /** Why containers last failed to start; housekeeping forgets the pods that are gone. */
  reasons: Pick<ReasonCache, 'removeOrphaned'>;
  /** Decides whether a new pod may run here (the registered admit handlers). */
  admit: AdmitHandler;
  /** For housekeeping (orphans) and removing dead containers. */
  runtime: Pick<Runtime, 'killPod' | 'getPods' | 'deleteContainer'>;
  /** The PLEG-fed pod statuses: which containers died, and what is left after an eviction. */
  podCache: Pick<PodCache, 'get'>;
  clock: TimerClock;
  resyncIntervalMs: number;
  prober?: PodProber;
  recorder?: EventRecorder;
  /** Told when a pod is admitted (the start-up breakdown). */
  startup?: Pick<StartupEvents, 'admitted'>;
  /** Housekeeping removes the cgroups of pods that can no longer be running. */
  podCgroups?: Pick<PodCgroups, 'cleanupOrphaned'>;
  /** In-place resize: admitted pods' allocations, which admission counts instead of their specs. */
  allocation?: Pick<AllocationManager, 'addPod' | 'updatePodFromAllocation' | 'removeOrphanedPods'>;
  /** Housekeeping frees the user namespace ranges of pods that are neither wanted nor running. */
  userNamespaces?: Pick<UsernsManager, 'cleanupOrphanedPodUsernsAllocations'>;
  /** Housekeeping releases and removes the directories of pods that are neither wanted nor running. */
  podDirs?: Pick<OrphanedPodDirs, 'cleanupOrphaned'>;
  log?: Logger;
}

const isTerminalPhase = (pod: V1Pod) => pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';

/**
 * How long killPod waits for the pod's worker: the grace period and half again (whole seconds),
 * at least 10 s for the runtime's SIGKILL to land, as the kubelet's killPodNow.
 */
export function killPodTimeoutMs(gracePeriodSeconds: number): number {
  const grace = Math.trunc(gracePeriodSeconds);
  return Math.max(grace + Math.trunc(grace / 2), 10) * 1000;
}

/** The kubelet's grace for containers of pods it no longer knows (HandlePodCleanups). */
export const ORPHAN_GRACE_PERIOD_SECONDS = 1;

export class PodLifecycle implements SyncHandler, PodKiller {
  private readonly nextSync = new Map<string, number>();
  private readonly rejected = new Set<string>();
  /** Orphaned pods being killed, by uid: housekeeping does not start a second kill. */
  private readonly killingOrphans = new Map<string, Promise<void>>();

  readonly containerDeletor: PodContainerDeletor;

  constructor(private readonly deps: PodLifecycleDeps) {
    this.containerDeletor = new PodContainerDeletor(deps.runtime, deps.log);
  }

  /** Admitted pods that still count against the node: not terminal, not being torn down. */
  activePods(): V1Pod[] {
    return this.deps.pods.getPods().filter((p) => {
      const uid = p.metadata?.uid ?? '';
      const s = this.deps.statusManager.getPodStatus(uid);
      const terminal = s ? s.phase === 'Succeeded' || s.phase === 'Failed' : isTerminalPhase(p);
      return !terminal && !this.deps.workers.isPodTerminationRequested(uid);
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
      const allocation = this.deps.allocation;
      const active = this.activePods().map((p) => allocation?.updatePodFromAllocation(p).pod ?? p);
      this.deps.pods.setPod(pod);
      if (isTerminalPhase(pod)) {
        // Seen first in a terminal phase (the agent restarted after the pod finished): not admitted
        // and never started, but, as the kubelet's pod workers do, terminated, so its final status
        // is reported and, once it has a deletionTimestamp, the pod is deleted (kubernetes#116925).
        this.deps.workers.updatePod({ pod, op: 'kill' });
        continue;
      }
      if (!pod.metadata?.deletionTimestamp) {
        // A pod re-admitted after a restart is admitted at the size it was allocated.
        const admitted = allocation?.updatePodFromAllocation(pod).pod ?? pod;
        const verdict = this.deps.admit.admit({ pod: admitted, otherPods: active });
        if (!verdict.admit) {
          this.rejectPod(pod, verdict.reason, verdict.message);
          continue;
        }
      }
      allocation?.addPod(pod);
      this.deps.startup?.admitted(uid);
      this.deps.prober?.addPod(pod);
      this.deps.workers.updatePod({ pod, op: 'create' });
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
      const known = this.deps.pods.has(uid);
      this.deps.pods.setPod(pod);
      // A rejected pod never got a worker; updates do not resurrect it.
      if (!known || this.rejected.has(uid)) continue;
      // A pod being deleted keeps only its readiness probe, which then reads not ready.
      this.deps.prober?.addPod(pod);
      this.deps.workers.updatePod({ pod, op: 'update' });
    }
  }

  async handlePodRemoves(pods: V1Pod[]): Promise<void> {
    for (const pod of pods) {
      const uid = pod.metadata?.uid ?? '';
      this.deps.pods.removePod(uid);
      this.nextSync.delete(uid);
      this.deps.prober?.removePod(uid);
      if (!this.rejected.delete(uid)) this.deps.workers.updatePod({ pod, op: 'kill' });
    }
  }

  /**
   * A pod whose status alone changed: recorded, and synced again when its readiness gates now
   * say otherwise than its Ready condition (another writer set a gate's condition).
   */
  async handlePodReconcile(pods: V1Pod[]): Promise<void> {
    for (const pod of pods) {
      const uid = pod.metadata?.uid;
      if (!uid) continue;
      this.deps.pods.setPod(pod);
      if (this.nextSync.has(uid) && needToReconcilePodReadiness(pod))
        this.deps.workers.updatePod({ pod, op: 'sync' });
    }
  }

  async handlePodSyncs(pods: V1Pod[]): Promise<void> {
    const next = this.deps.clock.now() + this.deps.resyncIntervalMs;
    for (const pod of pods) {
      this.nextSync.set(pod.metadata?.uid ?? '', next);
      this.deps.workers.updatePod({ pod, op: 'sync' });
    }
  }

  /** Pods due for their periodic resync, and those whose active deadline just passed (getPodsToSync). */
  podsToSync(now: number): V1Pod[] {
    return [...this.nextSync].flatMap(([uid, at]) => {
      const pod = this.deps.pods.getPod(uid);
      if (!pod) return [];
      if (at <= now) return [pod];
      const status = this.deps.statusManager.getPodStatus(uid);
      const terminal = status?.phase === 'Succeeded' || status?.phase === 'Failed';
      return !terminal && pastActiveDeadline(pod, status?.startTime, now) ? [pod] : [];
    });
  }

  async handlePlegEvent(event: PodLifecycleEvent): Promise<void> {
    this.handleProbeSync(event.podUid);
    if (event.type === 'ContainerDied') {
      const uid = event.podUid;
      this.containerDeletor.cleanUpContainersInPod(
        async () => this.deps.podCache.get(uid),
        event.data,
        this.deps.workers.shouldPodContentBeRemoved(uid),
      );
    }
  }

  /** Syncs an admitted pod now: a runtime event, or a probe result the runtime manager acts on. */
  handleProbeSync(uid: string): void {
    const pod = this.deps.pods.getPod(uid);
    if (pod && this.nextSync.has(uid)) this.deps.workers.updatePod({ pod, op: 'sync' });
  }

  /** Housekeeping: kill what runs for pods nobody wants, forget finished workers. */
  async handlePodCleanups(): Promise<void> {
    const { pods, workers } = this.deps;
    const log = this.deps.log ?? silentLogger;
    const running = await this.deps.runtime.getPods(false);
    // As in the kubelet, an orphan (a pod neither the pod manager nor a pod worker knows) gets 1 s
    // of grace and its kill runs beside the sync loop: a container whose pod asked for 500 s must
    // not stall every other pod that long. A removed pod that its worker is still stopping is not
    // an orphan: the worker applies the deletion's grace.
    for (const rp of running) {
      if (pods.has(rp.uid) || workers.isPodTerminationRequested(rp.uid) || this.killingOrphans.has(rp.uid))
        continue;
      log.info('Killing orphaned pod', { pod: `${rp.namespace}/${rp.name}`, uid: rp.uid });
      this.killingOrphans.set(
        rp.uid,
        this.deps.runtime
          .killPod(undefined, rp, ORPHAN_GRACE_PERIOD_SECONDS)
          .catch((err) => log.error('Failed to kill orphaned pod', { uid: rp.uid, err }))
          .finally(() => this.killingOrphans.delete(rp.uid)),
      );
    }
    await this.cleanupOrphanedPodCgroups(running.map((rp) => rp.uid));
    await this.deps.userNamespaces
      ?.cleanupOrphanedPodUsernsAllocations(
        new Set([...pods.uids(), ...running.map((rp) => rp.uid), ...this.killingOrphans.keys()]),
      )
      .catch((err) => log.error('Failed to clean up orphaned pod user namespace allocations', { err }));
    await this.cleanupOrphanedPodDirs(running.map((rp) => rp.uid));
    // A desired pod whose worker was forgotten because its UID was created again while it
    // terminated (a static pod's manifest removed and written back) starts afresh, from no status:
    // the terminal phase its old run ended in is not this run's.
    const restart = workers.syncKnownPods(pods.getPods());
    const restarting = new Set(restart.map((p) => p.metadata?.uid ?? ''));
    const desired = pods.uids();
    this.deps.statusManager.removeOrphanedStatuses(
      new Set([...desired].filter((uid) => !restarting.has(uid))),
    );
    for (const pod of restart) {
      log.info(
        'Pod will be restarted because it is in the desired set and not known to the pod workers (likely due to UID reuse)',
        {
          pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`,
          uid: pod.metadata?.uid,
        },
      );
      workers.updatePod({ pod, op: 'create' });
    }
    this.deps.reasons.removeOrphaned(desired);
    this.deps.allocation?.removeOrphanedPods(desired);
    this.deps.prober?.cleanupPods(
      new Set(
        pods
          .getPods()
          .flatMap((p) => (workers.isPodTerminated(p.metadata?.uid ?? '') ? [] : [p.metadata?.uid ?? ''])),
      ),
    );
  }

  /**
   * The kubelet's cleanupOrphanedPodCgroups: a pod cgroup stays while its pod may still run (the
   * runtime runs some of it, or its worker has not finished it); every other one is removed.
   */
  private async cleanupOrphanedPodCgroups(runningUids: string[]): Promise<void> {
    const { podCgroups, pods, workers } = this.deps;
    if (!podCgroups) return;
    const keep = new Set([
      ...runningUids,
      ...this.killingOrphans.keys(),
      ...[...pods.uids()].filter((uid) => !workers.isPodTerminated(uid)),
    ]);
    await podCgroups
      .cleanupOrphaned(keep)
      .catch((err) =>
        (this.deps.log ?? silentLogger).error('Failed to clean up orphaned pod cgroups', { err }),
      );
  }

  /**
   * The kubelet's cleanupOrphanedPodDirs: a pod's directory stays while a source lists the pod,
   * the runtime runs some of it, or a kill of it is under way (an orphan's, or its worker's, which
   * cleans up itself); every other one is released and removed.
   */
  private async cleanupOrphanedPodDirs(runningUids: string[]): Promise<void> {
    const { podDirs, pods, workers } = this.deps;
    if (!podDirs) return;
    const running = new Set(runningUids);
    await podDirs
      .cleanupOrphaned(
        (uid) =>
          pods.has(uid) ||
          running.has(uid) ||
          this.killingOrphans.has(uid) ||
          (workers.isPodTerminationRequested(uid) && !workers.isPodTerminated(uid)),
      )
      .catch((err) =>
        (this.deps.log ?? silentLogger).error('Failed to clean up orphaned pod directories', { err }),
      );
  }

  /**
   * PodKiller: the eviction manager's kill (isEvicted), which leaves the pod Failed with reason
   * Evicted, and node shutdown's, with its own status. Resolves once the pod is terminated; a
   * pod the runtime has not stopped by killPodTimeoutMs fails it with an ExceededGracePeriod
   * event (the kill goes on).
   */
  async killPod(
    pod: V1Pod,
    isEvicted: boolean,
    gracePeriodSeconds: number,
    status: EvictionStatus,
  ): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    this.deps.pods.markEvicted(uid, status);
    const killed = this.deps.workers.killPodNow(
      this.deps.pods.getPod(uid) ?? pod,
      gracePeriodSeconds,
      isEvicted,
    );
    await untilDoneOr(this.deps.clock, killPodTimeoutMs(gracePeriodSeconds), killed, () => {
      this.deps.recorder?.event(
        pod,
        'Warning',
        'ExceededGracePeriod',
        'Container runtime did not kill the pod within specified grace period.',
      );
      throw new Error('timeout waiting to kill pod');
    });
  }

  /**
   * What the eviction manager waits for after an eviction (the kubelet's
   * podResourcesAreReclaimed): the pod is terminated, nothing of it runs, and when its content
   * should go, none of its containers is left to hold memory or disk.
   */
  async podResourcesAreReclaimed(pod: V1Pod): Promise<boolean> {
    const uid = pod.metadata?.uid ?? '';
    if (!this.deps.workers.isPodTerminated(uid)) return false;
    const status = this.deps.podCache.get(uid);
    if (status.containerStatuses.some((c) => c.state === 'running')) return false;
    return !this.deps.workers.shouldPodContentBeRemoved(uid) || status.containerStatuses.length === 0;
  }
}
