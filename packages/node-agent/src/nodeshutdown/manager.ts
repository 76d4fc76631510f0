// The node shutdown manager (the kubelet's nodeshutdown managerImpl, Linux). It holds a logind
// delay inhibitor lock, so a shutdown waits for it; on PrepareForShutdown(true) it marks the node
// not ready, turns new pods away, and kills the active pods group by group, lowest priority
// first, each group within its grace period, before it lets the shutdown go on by releasing the
// lock. PrepareForShutdown(false), a cancelled shutdown, takes the lock again and the node is
// ready again. Without a system bus or logind it logs and stays off, as the kubelet does.
import type { TimerClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import type { AdmitHandler, AdmitResult } from '../admission/handler.js';
import { featureEnabled } from '../config/feature_gates.js';
import type { KubeletConfiguration, ShutdownGracePeriodByPodPriority } from '../config/types.js';
import { terminationByKubeletStatus } from '../eviction/messages.js';
import type { PodKiller } from '../eviction/types.js';
import { untilDoneOr, Waker } from '../util/clock.js';
import { formatDuration, parseDuration } from '../util/duration.js';
import { type Logger, silentLogger } from '../util/log.js';
import { groupByPriority, migrateConfig, periodRequestedMs, type ShutdownGroup } from './groups.js';
import { stateFilePath, storeState } from './state.js';
import type { InhibitLock, LogindBus } from './systemd/logind.js';

export const NODE_SHUTDOWN_REASON = 'Terminated';
export const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
export const NODE_SHUTDOWN_NOT_ADMITTED_REASON = 'NodeShutdown';
export const NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE = 'Pod was rejected as the node is shutting down.';
/** The Ready condition's message while the node shuts down (the manager's ShutdownStatus error). */
export const NODE_SHUTTING_DOWN = 'node is shutting down';
/** The node event the kubelet records for each PrepareForShutdown. */
export const NODE_SHUTDOWN_EVENT_REASON = 'NodeShutdown';
/** How long the manager waits before it watches again after losing the bus. */
export const DBUS_RECONNECT_PERIOD_MS = 1_000;

export type ShutdownConfig = Pick<
  KubeletConfiguration,
  | 'featureGates'
  | 'shutdownGracePeriod'
  | 'shutdownGracePeriodCriticalPods'
  | 'shutdownGracePeriodByPodPriority'
>;

export interface NodeShutdownManagerDeps {
  /** Opens the system bus and finds logind there; rejects when either is missing. */
  connect: () => Promise<LogindBus>;
  /** Admitted pods that are not terminating. */
  activePods: () => V1Pod[];
  killer: PodKiller;
  /** Posts the node status now, so Ready turns False without waiting for the next update. */
  syncNodeStatus: () => void;
  recordNodeEvent?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** The kubelet's root directory, where the state file goes. */
  rootDir: string;
  clock: TimerClock;
  log?: Logger;
}

/**
 * The grace periods by priority the configuration asks for, or none (shutdown stays immediate):
 * shutdownGracePeriodByPodPriority when its gate is on and it is set, else the two durations.
 */
export function shutdownGracePeriods(config: ShutdownConfig): ShutdownGracePeriodByPodPriority[] {
  if (!featureEnabled(config, 'GracefulNodeShutdown')) return [];
  if (
    featureEnabled(config, 'GracefulNodeShutdownBasedOnPodPriority') &&
    config.shutdownGracePeriodByPodPriority.length > 0
  )
    return config.shutdownGracePeriodByPodPriority;
  return migrateConfig(
    parseDuration(config.shutdownGracePeriod),
    parseDuration(config.shutdownGracePeriodCriticalPods),
  );
}

export class NodeShutdownManager implements AdmitHandler {
  private shuttingDown = false;
  private bus: LogindBus | undefined;
  private lock: InhibitLock | undefined;
  /** Events are handled one at a time, in order, as the kubelet's single watch goroutine does. */
  private events: Promise<void> = Promise.resolve();
  private readonly log: Logger;
  /** The state file is kept, as in the kubelet, when its metrics are (the priority gate). */
  private readonly keepState: boolean;

  constructor(
    private readonly periods: readonly ShutdownGracePeriodByPodPriority[],
    config: ShutdownConfig,
    private readonly deps: NodeShutdownManagerDeps,
  ) {
    this.log = deps.log ?? silentLogger;
    this.keepState = featureEnabled(config, 'GracefulNodeShutdownBasedOnPodPriority');
  }

  /** The manager for `config`, or undefined when graceful shutdown is off (gate, or no period). */
  static create(config: ShutdownConfig, deps: NodeShutdownManagerDeps): NodeShutdownManager | undefined {
    const log = deps.log ?? silentLogger;
    if (!featureEnabled(config, 'GracefulNodeShutdown')) {
      log.info('Node graceful shutdown feature is disabled, node shutdown will be immediate');
      return undefined;
    }
    const periods = shutdownGracePeriods(config);
    if (periods.length === 0) {
      log.info('No graceful configuration specified, node shutdown will be immediate');
      return undefined;
    }
    log.info('Creating node shutdown manager', { shutdownGracePeriodByPodPriority: periods });
    return new NodeShutdownManager(periods, config, deps);
  }

  /** The Ready condition's error while the node shuts down. */
  shutdownStatus(): string | undefined {
    return this.shuttingDown ? NODE_SHUTTING_DOWN : undefined;
  }

  admit(): AdmitResult {
    return this.shuttingDown
      ? {
          admit: false,
          reason: NODE_SHUTDOWN_NOT_ADMITTED_REASON,
          message: NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE,
        }
      : { admit: true };
  }

  /**
   * Watches for shutdown until the signal aborts. A first failure (no bus, no logind, a delay
   * logind will not grant) is logged and ends the manager; a watch lost later is set up again.
   */
  async run(signal: AbortSignal): Promise<void> {
    let watch: { closed: Promise<void> };
    try {
      watch = await this.start();
    } catch (err) {
      this.log.error('Failed to start node shutdown manager', { err });
      return;
    }
    const waker = new Waker();
    const aborted = new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve()));
    while (!signal.aborted) {
      await Promise.race([watch.closed, aborted]);
      if (signal.aborted) break;
      await waker.wait(this.deps.clock, DBUS_RECONNECT_PERIOD_MS, signal);
      if (signal.aborted) break;
      this.log.v(1, 'Restarting watch for node shutdown events');
      watch = await this.start().catch((err) => {
        this.log.error('Unable to watch the node for shutdown events', { err });
        return { closed: Promise.resolve() };
      });
    }
    await this.events;
    await this.releaseInhibitLock();
    this.bus?.close();
  }

  /** Connects, makes sure logind grants the delay, takes the lock and subscribes; `closed` settles when the bus is lost. */
  private async start(): Promise<{ closed: Promise<void> }> {
    this.bus?.close();
    const bus = await this.deps.connect();
    this.bus = bus;
    try {
      await this.ensureInhibitDelay(bus);
      await this.acquireInhibitLock();
      let onClose!: () => void;
      const closed = new Promise<void>((resolve) => {
        onClose = resolve;
      });
      await bus
        .monitorShutdown((shuttingDown) => {
          this.events = this.events.then(() => this.onShutdownEvent(shuttingDown));
        }, onClose)
        .catch(async (err) => {
          await this.releaseInhibitLock();
          throw new Error(`failed to monitor shutdown: ${(err as Error).message}`);
        });
      return { closed };
    } catch (err) {
      bus.close();
      throw err;
    }
  }

  /** Raises logind's InhibitDelayMaxSec to the requested period when it is lower (drop-in, reload). */
  private async ensureInhibitDelay(bus: LogindBus): Promise<void> {
    const requested = periodRequestedMs(this.periods);
    if (requested <= (await bus.currentInhibitDelayMs())) return;
    await bus.overrideInhibitDelay(requested).catch((err) => {
      throw new Error(`unable to override inhibit delay by shutdown manager: ${(err as Error).message}`);
    });
    await bus.reloadLogindConf();
    const updated = await bus.currentInhibitDelayMs();
    if (requested > updated)
      throw new Error(
        `node shutdown manager was unable to update logind InhibitDelayMaxSec to ${formatDuration(requested)} (ShutdownGracePeriod), current value of InhibitDelayMaxSec (${formatDuration(updated)}) is less than requested ShutdownGracePeriod`,
      );
  }

  private async acquireInhibitLock(): Promise<void> {
    const lock = await (this.bus as LogindBus).inhibitShutdown();
    await this.releaseInhibitLock();
    this.lock = lock;
  }

  private async releaseInhibitLock(): Promise<void> {
    const lock = this.lock;
    this.lock = undefined;
    await lock?.release().catch((err) => this.log.error('Failed to release the inhibit lock', { err }));
  }

  private async onShutdownEvent(shuttingDown: boolean): Promise<void> {
    this.log.v(1, 'Shutdown manager detected new shutdown event', {
      event: shuttingDown ? 'shutdown' : 'cancelled',
    });
    this.deps.recordNodeEvent?.(
      'Normal',
      NODE_SHUTDOWN_EVENT_REASON,
      shuttingDown
        ? 'Shutdown manager detected shutdown event'
        : 'Shutdown manager detected shutdown cancellation',
    );
    this.shuttingDown = shuttingDown;
    if (shuttingDown) {
      this.deps.syncNodeStatus();
      await this.processShutdownEvent();
    } else {
      await this.acquireInhibitLock().catch((err) =>
        this.log.error('Failed to acquire the inhibit lock again', { err }),
      );
    }
  }

  /** Kills the active pods group by group, then releases the lock so the shutdown goes on. */
  private async processShutdownEvent(): Promise<void> {
    this.log.v(1, 'Shutdown manager processing shutdown event');
    const pods = this.deps.activePods();
    const startTime = new Date(this.deps.clock.now());
    await this.store({ startTime });
    try {
      for (const group of groupByPriority(this.periods, pods)) {
        if (group.pods.length > 0) await this.shutDownGroup(group);
      }
    } finally {
      await this.releaseInhibitLock();
      await this.store({ startTime, endTime: new Date(this.deps.clock.now()) });
      this.log.v(1, 'Shutdown manager completed processing shutdown event, node will shutdown shortly');
    }
  }

  /** Kills the group's pods at once and waits for them, at most the group's grace period. */
  private async shutDownGroup(group: ShutdownGroup): Promise<void> {
    const kills = group.pods.map((pod) => this.killPod(pod, group.shutdownGracePeriodSeconds));
    await untilDoneOr(
      this.deps.clock,
      group.shutdownGracePeriodSeconds * 1000,
      Promise.all(kills).then(() => undefined),
      () =>
        this.log.v(1, 'Shutdown manager pod killing time out', {
          gracePeriod: group.shutdownGracePeriodSeconds,
          priority: group.priority,
        }),
    );
  }

  /** The group's grace period, or the pod's own when that is shorter. */
  private async killPod(pod: V1Pod, groupGraceSeconds: number): Promise<void> {
    const own = pod.spec?.terminationGracePeriodSeconds;
    const grace = own !== undefined && own !== null && own <= groupGraceSeconds ? own : groupGraceSeconds;
    const name = pod.metadata?.name;
    this.log.v(1, 'Shutdown manager killing pod with gracePeriod', { pod: name, gracePeriod: grace });
    try {
      await this.deps.killer.killPod(
        pod,
        false,
        grace,
        terminationByKubeletStatus(NODE_SHUTDOWN_REASON, NODE_SHUTDOWN_MESSAGE),
      );
      this.log.v(1, 'Shutdown manager finished killing pod', { pod: name });
    } catch (err) {
      this.log.v(1, 'Shutdown manager failed killing pod', { pod: name, err });
    }
  }

  private async store(state: { startTime: Date; endTime?: Date }): Promise<void> {
    if (!this.keepState) return;
    await storeState(stateFilePath(this.deps.rootDir), state).catch((err) =>
      this.log.error('Failed to store graceful shutdown state', { err }),
    );
  }
}
