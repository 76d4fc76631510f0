// The eviction manager (the kubelet's eviction.managerImpl). Every monitoring interval it reads
// the signals, decides which thresholds are met (soft ones only after their grace period),
// keeps the pressure conditions up for the transition period so they do not flap, reclaims at
// node level first for disk, and otherwise evicts at most one pod, ranked for the starved
// resource. It is also the agent's PressureSource for node status, and the admit handler that
// turns pods away under pressure.

import type { TimerClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import type { AdmitHandler, AdmitResult, PodAdmitAttributes } from '../admission/handler.js';
import type { Taint } from '../config/types.js';
import type { KubeletMetrics } from '../metrics/metrics.js';
import type { PressureSource } from '../types/pressure.js';
import { Waker } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';
import { admitUnderPressure, pressureTaints } from './admission.js';
import { localStorageViolation } from './local_storage.js';
import { evictionMessage, evictionStatus } from './messages.js';
import { isCriticalPod, type RankedResource, rankPods } from './rank.js';
import {
  type EvictionConfig,
  mergeThresholds,
  type Threshold,
  thresholdAmount,
  thresholdKey,
  thresholdsMet,
} from './thresholds.js';
import {
  type AnnotatedEventRecorder,
  EVICTION_REASON,
  type NodeReclaimer,
  type Observations,
  type PodKiller,
  type PodStatsSource,
  type PodUsage,
  type PressureCondition,
  SIGNAL_CONDITION,
  SIGNAL_PRIORITY,
  SIGNAL_RESOURCE,
  type SignalSource,
} from './types.js';

/** The kubelet (1.31+) kills hard-evicted pods with a one-second grace period. */
export const IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS = 1;
/** How long, and how often, the manager waits for an evicted pod's clean-up (the kubelet's). */
export const POD_CLEANUP_TIMEOUT_MS = 30_000;
export const POD_CLEANUP_POLL_MS = 1_000;

export interface EvictionManagerDeps {
  config: EvictionConfig;
  signals: SignalSource;
  podStats: PodStatsSource;
  /** Admitted pods that are not terminating. */
  activePods: () => V1Pod[];
  killer: PodKiller;
  recorder: AnnotatedEventRecorder;
  /** Image GC and dead-container removal; without it disk pressure goes straight to eviction. */
  reclaimer?: NodeReclaimer;
  metrics?: Pick<KubeletMetrics, 'evictions'>;
  clock: TimerClock;
  log?: Logger;
  /**
   * Whether an evicted pod's resources are reclaimed (the kubelet's podResourcesAreReclaimed).
   * After an eviction the manager waits for it, up to POD_CLEANUP_TIMEOUT_MS, before it looks at
   * the signals again: a look while the pod's memory or writable layers are still held would see
   * the same pressure and evict a second pod for it.
   */
  podCleanedUp?: (pod: V1Pod) => Promise<boolean>;
  /** LocalStorageCapacityIsolation; on by default as in the kubelet. */
  localStorageIsolation?: boolean;
  /**
   * The image filesystem is its own device. Then nodefs pressure cannot be relieved by image or
   * container GC, which only reclaim for imagefs signals; on a shared device both do.
   */
  dedicatedImageFs?: boolean;
}

export interface SynchronizeResult {
  observations: Observations;
  /** Thresholds acted on this round (soft ones past their grace period). */
  thresholds: Threshold[];
  conditions: PressureCondition[];
  /** The first pod evicted this round (a pressure round evicts at most one). */
  evicted?: V1Pod;
  /** Every pod evicted this round: local storage isolation evicts every violator at once. */
  evictedPods?: V1Pod[];
  /** Set when disk pressure was relieved by node-level reclaim alone. */
  reclaimedAtNodeLevel?: boolean;
}

const RANKED: Record<string, RankedResource | undefined> = {
  memory: 'memory',
  'ephemeral-storage': 'ephemeral-storage',
  inodes: 'inodes',
  pids: 'pids',
};

export class EvictionManager implements PressureSource, AdmitHandler {
  private conditions: PressureCondition[] = [];
  private thresholdsFirstObservedAt = new Map<string, number>();
  private conditionsLastObservedAt = new Map<PressureCondition, number>();
  private lastThresholdsMet: Threshold[] = [];
  private readonly log: Logger;

  constructor(private readonly deps: EvictionManagerDeps) {
    this.log = deps.log ?? silentLogger;
  }

  isUnderMemoryPressure(): boolean {
    return this.conditions.includes('MemoryPressure');
  }

  isUnderDiskPressure(): boolean {
    return this.conditions.includes('DiskPressure');
  }

  isUnderPIDPressure(): boolean {
    return this.conditions.includes('PIDPressure');
  }

  nodeConditions(): PressureCondition[] {
    return [...this.conditions];
  }

  taints(): Taint[] {
    return pressureTaints(this.conditions);
  }

  admit({ pod }: PodAdmitAttributes): AdmitResult {
    return admitUnderPressure(pod, this.conditions);
  }

  /** Synchronizes every monitoring interval until the signal aborts; errors are logged, never fatal. */
  async run(signal: AbortSignal): Promise<void> {
    const waker = new Waker();
    while (!signal.aborted) {
      let evicted: V1Pod[] = [];
      try {
        evicted = (await this.synchronize()).evictedPods ?? [];
      } catch (err) {
        this.log.error('Eviction manager: failed to synchronize', { err });
      }
      // As the kubelet does: after an eviction, look again as soon as the pods are cleaned up.
      if (evicted.length > 0 && this.deps.podCleanedUp)
        await Promise.all(evicted.map((pod) => this.waitForPodCleanup(pod, signal)));
      else await waker.wait(this.deps.clock, this.deps.config.monitoringIntervalMs, signal);
    }
  }

  /** Polls podCleanedUp until it holds, the timeout passes or the signal aborts. */
  async waitForPodCleanup(pod: V1Pod, signal: AbortSignal): Promise<boolean> {
    const cleanedUp = this.deps.podCleanedUp;
    if (!cleanedUp) return true;
    const name = pod.metadata?.name;
    const deadline = this.deps.clock.now() + POD_CLEANUP_TIMEOUT_MS;
    const waker = new Waker();
    while (!signal.aborted) {
      if (await cleanedUp(pod).catch(() => false)) {
        this.log.info('Eviction manager: pod successfully cleaned up', { pod: name });
        return true;
      }
      if (this.deps.clock.now() >= deadline) break;
      await waker.wait(this.deps.clock, POD_CLEANUP_POLL_MS, signal);
    }
    if (!signal.aborted)
      this.log.info('Eviction manager: timed out waiting for pod to be cleaned up', { pod: name });
    return false;
  }

  /** One pass of the control loop; returns what it saw and did. */
  async synchronize(): Promise<SynchronizeResult> {
    const { config, clock } = this.deps;
    const now = clock.now();
    const observations = await this.deps.signals.observe();

    let met = thresholdsMet(config.thresholds, observations, false);
    // Thresholds met last round stay met until the signal clears value + minimum reclaim.
    if (this.lastThresholdsMet.length > 0) {
      met = mergeThresholds(met, thresholdsMet(this.lastThresholdsMet, observations, true));
    }

    const firstObserved = new Map<string, number>();
    for (const t of met) {
      const k = thresholdKey(t);
      firstObserved.set(k, this.thresholdsFirstObservedAt.get(k) ?? now);
    }

    // A condition holds until it has not been observed for the whole transition period.
    const lastObserved = new Map(this.conditionsLastObservedAt);
    for (const t of met) lastObserved.set(SIGNAL_CONDITION[t.signal], now);
    for (const [c, at] of lastObserved) {
      if (at !== now && now - at >= config.pressureTransitionPeriodMs) lastObserved.delete(c);
    }

    const actionable = met.filter(
      (t) => now - (firstObserved.get(thresholdKey(t)) ?? now) >= t.gracePeriodMs,
    );

    this.conditions = (['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const).filter((c) =>
      lastObserved.has(c),
    );
    this.thresholdsFirstObservedAt = firstObserved;
    this.conditionsLastObservedAt = lastObserved;
    this.lastThresholdsMet = actionable;

    const result: SynchronizeResult = { observations, thresholds: actionable, conditions: this.conditions };
    const active = this.deps.activePods();

    let stats: Map<string, PodUsage> | undefined;
    const podStats = async () => {
      stats ??= new Map((await this.deps.podStats.podStats()).map((s) => [s.uid, s]));
      return stats;
    };

    if (this.deps.localStorageIsolation ?? true) {
      const evicted = await this.localStorageEviction(active, await podStats());
      if (evicted.length > 0) return { ...result, evicted: evicted[0], evictedPods: evicted };
    }
    if (actionable.length === 0) return result;

    const toReclaim = [...actionable]
      .filter((t) => RANKED[SIGNAL_RESOURCE[t.signal]] !== undefined)
      .sort((a, b) => SIGNAL_PRIORITY.indexOf(a.signal) - SIGNAL_PRIORITY.indexOf(b.signal))[0];
    if (!toReclaim) return result;
    const resource = SIGNAL_RESOURCE[toReclaim.signal];
    this.log.info('Eviction manager: attempting to reclaim', { resourceName: resource });

    if (await this.reclaimNodeLevel(toReclaim)) return { ...result, reclaimedAtNodeLevel: true };

    const ranked = rankPods(active, RANKED[resource] as RankedResource, await podStats());
    const obs = observations[toReclaim.signal];
    for (const pod of ranked) {
      if (isCriticalPod(pod)) continue;
      const { message, annotations } = evictionMessage(
        resource,
        pod,
        (await podStats()).get(pod.metadata?.uid ?? ''),
        thresholdAmount(toReclaim.value, obs?.capacity ?? 0),
        obs?.available ?? 0,
      );
      const grace = toReclaim.hard ? IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS : this.softGracePeriod(pod);
      if (await this.evict(pod, grace, message, annotations)) {
        this.deps.metrics?.evictions.inc({ eviction_signal: toReclaim.signal });
        return { ...result, evicted: pod, evictedPods: [pod] };
      }
    }
    this.log.info('Eviction manager: unable to evict any pods from the node');
    return result;
  }

  /**
   * A soft eviction's grace period, as the kubelet's eviction manager and pod workers compute it:
   * min(evictionMaxPodGracePeriod, the pod's terminationGracePeriodSeconds), never under one
   * second. The maximum does not stretch a shorter pod grace period (it did before 1.32, behind
   * AllowOverwriteTerminationGracePeriodSeconds), and 0, the default, means one second.
   */
  private softGracePeriod(pod: V1Pod): number {
    const max = this.deps.config.maxPodGracePeriodSeconds;
    const podGrace = pod.spec?.terminationGracePeriodSeconds;
    const grace = podGrace === undefined || podGrace === null ? max : Math.min(max, podGrace);
    return Math.max(IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS, grace);
  }

  /** Evicts every pod over its own local storage budget in one pass, as the kubelet does. */
  private async localStorageEviction(pods: V1Pod[], stats: Map<string, PodUsage>): Promise<V1Pod[]> {
    const evicted: V1Pod[] = [];
    for (const pod of pods) {
      const usage = stats.get(pod.metadata?.uid ?? '');
      if (!usage || isCriticalPod(pod)) continue;
      const message = localStorageViolation(pod, usage);
      if (message && (await this.evict(pod, IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS, message, {})))
        evicted.push(pod);
    }
    return evicted;
  }

  /** Disk pressure first removes dead containers and unused images; true when that was enough. */
  private async reclaimNodeLevel(t: Threshold): Promise<boolean> {
    const reclaimer = this.deps.reclaimer;
    if (!reclaimer || SIGNAL_CONDITION[t.signal] !== 'DiskPressure') return false;
    if (this.deps.dedicatedImageFs && !t.signal.startsWith('imagefs.')) return false;
    try {
      await reclaimer.deleteAllUnusedContainers();
      await reclaimer.deleteUnusedImages();
    } catch (err) {
      this.log.error('Eviction manager: node-level reclaim failed', { err });
    }
    const after = await this.deps.signals.observe();
    const stillMet = thresholdsMet([t], after, true);
    if (stillMet.length === 0) {
      this.log.info('Eviction manager: able to reduce resource pressure without evicting pods', {
        resourceName: SIGNAL_RESOURCE[t.signal],
      });
      return true;
    }
    return false;
  }

  private async evict(
    pod: V1Pod,
    gracePeriodSeconds: number,
    message: string,
    annotations: Record<string, string>,
  ): Promise<boolean> {
    this.deps.recorder.annotatedEvent(pod, annotations, 'Warning', EVICTION_REASON, message);
    try {
      await this.deps.killer.killPod(pod, true, gracePeriodSeconds, evictionStatus(message));
      this.log.info('Eviction manager: pod is evicted successfully', { pod: pod.metadata?.name });
      return true;
    } catch (err) {
      this.log.error('Eviction manager: pod failed to evict', { pod: pod.metadata?.name, err });
      return false;
    }
  }
}
