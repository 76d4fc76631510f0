// The node shutdown manager against a fake logind: when it holds and releases the inhibitor
// lock, how the grace period is shared out by priority, what a killed pod's status says, how the
// node answers admission and Ready while it shuts down, and how it recovers from a cancelled
// shutdown or a lost bus.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '@kh/apimachinery';
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it, vi } from 'vitest';
import { defaultKubeletConfiguration } from '../../src/config/types.js';
import type { EvictionStatus } from '../../src/eviction/types.js';
import { SYSTEM_CRITICAL_PRIORITY } from '../../src/nodeshutdown/groups.js';
import {
  NODE_SHUTDOWN_MESSAGE,
  NodeShutdownManager,
  type ShutdownConfig,
  shutdownGracePeriods,
} from '../../src/nodeshutdown/manager.js';
import { LOCAL_STORAGE_STATE_FILE } from '../../src/nodeshutdown/state.js';
import type { InhibitLock, LogindBus } from '../../src/nodeshutdown/systemd/logind.js';

class FakeLogind implements LogindBus {
  delayMs = 30_000;
  /** What a reload sets the delay to (logind read the drop-in); undefined: the drop-in is ignored. */
  delayAfterReload: number | undefined;
  overrides: number[] = [];
  reloads = 0;
  held = 0;
  taken = 0;
  closed = false;
  private onEvent: ((b: boolean) => void) | undefined;
  private onClose: (() => void) | undefined;

  async currentInhibitDelayMs() {
    return this.delayMs;
  }
  async inhibitShutdown(): Promise<InhibitLock> {
    this.held++;
    this.taken++;
    let released = false;
    return {
      release: async () => {
        if (!released) this.held--;
        released = true;
      },
    };
  }
  async reloadLogindConf() {
    this.reloads++;
    if (this.delayAfterReload !== undefined) this.delayMs = this.delayAfterReload;
  }
  async overrideInhibitDelay(ms: number) {
    this.overrides.push(ms);
  }
  async monitorShutdown(onEvent: (b: boolean) => void, onClose: () => void) {
    this.onEvent = onEvent;
    this.onClose = onClose;
  }
  close() {
    this.closed = true;
  }
  emit(shuttingDown: boolean) {
    this.onEvent?.(shuttingDown);
  }
  lose() {
    this.onClose?.();
  }
}

interface Kill {
  name: string;
  grace: number;
  isEvicted: boolean;
  status: EvictionStatus;
  at: number;
  finish: () => void;
}

const pod = (name: string, opts: { priority?: number; grace?: number } = {}): V1Pod => ({
  metadata: { name, namespace: 'default', uid: name },
  spec: {
    containers: [{ name: 'c', image: 'busybox' }],
    ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
    ...(opts.grace !== undefined ? { terminationGracePeriodSeconds: opts.grace } : {}),
  },
});

function config(overrides: Partial<ShutdownConfig>): ShutdownConfig {
  return { ...defaultKubeletConfiguration(), ...overrides };
}

function setup(cfg: ShutdownConfig, pods: V1Pod[], opts: { autoFinish?: boolean; delayMs?: number } = {}) {
  const clock = new FakeClock();
  const bus = new FakeLogind();
  if (opts.delayMs !== undefined) bus.delayMs = opts.delayMs;
  const kills: Kill[] = [];
  const events: string[] = [];
  const errors: string[] = [];
  let syncs = 0;
  let connects = 0;
  const rootDir = mkdtempSync(join(tmpdir(), 'kh-shutdown-'));
  const manager = NodeShutdownManager.create(cfg, {
    connect: async () => {
      connects++;
      return bus;
    },
    activePods: () => pods,
    killer: {
      killPod: (p, isEvicted, grace, status) =>
        new Promise<void>((resolve) => {
          kills.push({
            name: p.metadata?.name ?? '',
            grace,
            isEvicted,
            status,
            at: clock.now(),
            finish: resolve,
          });
          if (opts.autoFinish) resolve();
        }),
    },
    syncNodeStatus: () => syncs++,
    recordNodeEvent: (_type, reason, message) => events.push(`${reason}: ${message}`),
    rootDir,
    clock,
    log: { info() {}, v() {}, error: (msg) => errors.push(msg) },
  });
  if (!manager) throw new Error('manager not created');
  const ac = new AbortController();
  const running = manager.run(ac.signal);
  return {
    clock,
    bus,
    kills,
    events,
    errors,
    manager,
    rootDir,
    running,
    stop: async () => {
      ac.abort();
      await clock.advance(0);
      await running;
    },
    syncs: () => syncs,
    connects: () => connects,
  };
}

const flush = async (clock: FakeClock) => clock.advance(0);

describe('shutdownGracePeriods', () => {
  it('splits shutdownGracePeriod into a default group and a critical group', () => {
    expect(
      shutdownGracePeriods(config({ shutdownGracePeriod: '20s', shutdownGracePeriodCriticalPods: '10s' })),
    ).toEqual([
      { priority: 0, shutdownGracePeriodSeconds: 10 },
      { priority: SYSTEM_CRITICAL_PRIORITY, shutdownGracePeriodSeconds: 10 },
    ]);
  });

  it('is empty (immediate shutdown) at 0s or with the gate off', () => {
    expect(shutdownGracePeriods(config({}))).toEqual([]);
    expect(
      shutdownGracePeriods(
        config({ shutdownGracePeriod: '30s', featureGates: { GracefulNodeShutdown: false } }),
      ),
    ).toEqual([]);
    expect(
      NodeShutdownManager.create(config({}), {} as Parameters<typeof NodeShutdownManager.create>[1]),
    ).toBeUndefined();
  });

  it('takes shutdownGracePeriodByPodPriority when its gate is on, the durations otherwise', () => {
    const byPriority = [{ priority: 100, shutdownGracePeriodSeconds: 5 }];
    expect(shutdownGracePeriods(config({ shutdownGracePeriodByPodPriority: byPriority }))).toEqual(
      byPriority,
    );
    expect(
      shutdownGracePeriods(
        config({
          shutdownGracePeriod: '30s',
          shutdownGracePeriodByPodPriority: byPriority,
          featureGates: { GracefulNodeShutdownBasedOnPodPriority: false },
        }),
      ),
    ).toEqual([
      { priority: 0, shutdownGracePeriodSeconds: 30 },
      { priority: SYSTEM_CRITICAL_PRIORITY, shutdownGracePeriodSeconds: 0 },
    ]);
  });
});

describe('NodeShutdownManager', () => {
  // As upstream's "when gracefully shutting down": the priority gate off, so no state file either.
  const twoGroups = config({
    shutdownGracePeriod: '20s',
    shutdownGracePeriodCriticalPods: '10s',
    featureGates: { GracefulNodeShutdownBasedOnPodPriority: false },
  });

  it('holds a delay lock while the node runs, and admits pods', async () => {
    const t = setup(twoGroups, []);
    await flush(t.clock);
    expect(t.bus.held).toBe(1);
    expect(t.bus.overrides).toEqual([]);
    expect(t.manager.shutdownStatus()).toBeUndefined();
    expect(t.manager.admit()).toEqual({ admit: true });
    await t.stop();
    expect(t.bus.held).toBe(0);
    expect(t.bus.closed).toBe(true);
  });

  it('raises logind InhibitDelayMaxSec to the requested period through the drop-in and a reload', async () => {
    const t = setup(twoGroups, [], { delayMs: 5_000 });
    t.bus.delayAfterReload = 20_000;
    await flush(t.clock);
    expect(t.bus.overrides).toEqual([20_000]);
    expect(t.bus.reloads).toBe(1);
    expect(t.bus.held).toBe(1);
    await t.stop();
  });

  it('does not start when logind keeps a shorter delay, and says why', async () => {
    const t = setup(twoGroups, [], { delayMs: 5_000 });
    await t.running;
    expect(t.bus.held).toBe(0);
    expect(t.bus.closed).toBe(true);
    expect(t.errors).toEqual(['Failed to start node shutdown manager']);
  });

  it('logs and stays off without a system bus', async () => {
    const errors: unknown[] = [];
    const manager = NodeShutdownManager.create(twoGroups, {
      connect: () => Promise.reject(new Error('dial unix /run/dbus/system_bus_socket: no such file')),
      activePods: () => [],
      killer: { killPod: async () => {} },
      syncNodeStatus: () => {},
      rootDir: '/nonexistent',
      clock: new FakeClock(),
      log: { info() {}, v() {}, error: (msg, f) => errors.push([msg, (f?.err as Error).message]) },
    });
    await manager?.run(new AbortController().signal);
    expect(errors).toEqual([
      ['Failed to start node shutdown manager', 'dial unix /run/dbus/system_bus_socket: no such file'],
    ]);
  });

  it('on shutdown: not ready, rejects pods, kills non-critical pods first and critical ones after their grace', async () => {
    const pods = [
      pod('period-120', { grace: 120 }),
      pod('period-5', { grace: 5 }),
      pod('period-critical-120', { grace: 120, priority: 2_000_001_000 }),
      pod('period-critical-5', { grace: 5, priority: 2_000_001_000 }),
    ];
    const t = setup(twoGroups, pods);
    await flush(t.clock);
    t.bus.emit(true);
    await flush(t.clock);
    expect(t.manager.shutdownStatus()).toBe('node is shutting down');
    expect(t.manager.admit()).toEqual({
      admit: false,
      reason: 'NodeShutdown',
      message: 'Pod was rejected as the node is shutting down.',
    });
    expect(t.syncs()).toBe(1);
    expect(t.events).toEqual(['NodeShutdown: Shutdown manager detected shutdown event']);
    // The default group's 10 s caps the long grace period; the short one keeps its own.
    expect(t.kills.map((k) => [k.name, k.grace])).toEqual([
      ['period-120', 10],
      ['period-5', 5],
    ]);
    // Node shutdown's kill is not an eviction to the pod workers (upstream's isEvicted false).
    expect(t.kills.map((k) => k.isEvicted)).toEqual([false, false]);
    expect(t.kills[0]?.status).toEqual({
      phase: 'Failed',
      reason: 'Terminated',
      message: NODE_SHUTDOWN_MESSAGE,
      conditions: [
        {
          type: 'DisruptionTarget',
          status: 'True',
          reason: 'TerminationByKubelet',
          message: NODE_SHUTDOWN_MESSAGE,
        },
      ],
    });
    // The pods do not stop: the critical group starts when the default group's time is up.
    await t.clock.advance(9_999);
    expect(t.kills).toHaveLength(2);
    await t.clock.advance(1);
    expect(t.kills.slice(2).map((k) => [k.name, k.grace, k.at - t.kills[0]!.at])).toEqual([
      ['period-critical-120', 10, 10_000],
      ['period-critical-5', 5, 10_000],
    ]);
    expect(t.bus.held).toBe(1);
    for (const k of t.kills) k.finish();
    await flush(t.clock);
    // Every group done: the lock goes, so logind lets the shutdown go on.
    expect(t.bus.held).toBe(0);
    await t.stop();
  });

  it('moves to the next group as soon as every pod of a group stopped', async () => {
    const t = setup(
      twoGroups,
      [pod('a', { grace: 30 }), pod('crit', { priority: SYSTEM_CRITICAL_PRIORITY })],
      {
        autoFinish: true,
      },
    );
    await flush(t.clock);
    t.bus.emit(true);
    await flush(t.clock);
    expect(t.kills.map((k) => [k.name, k.at])).toEqual([
      ['a', t.clock.now()],
      ['crit', t.clock.now()],
    ]);
    expect(t.bus.held).toBe(0);
    await t.stop();
  });

  it('a cancelled shutdown takes the lock again and the node is ready again', async () => {
    const t = setup(twoGroups, [], { autoFinish: true });
    await flush(t.clock);
    t.bus.emit(true);
    await flush(t.clock);
    expect(t.bus.held).toBe(0);
    t.bus.emit(false);
    await flush(t.clock);
    expect(t.manager.shutdownStatus()).toBeUndefined();
    expect(t.manager.admit()).toEqual({ admit: true });
    expect(t.bus.held).toBe(1);
    expect(t.bus.taken).toBe(2);
    expect(t.events).toEqual([
      'NodeShutdown: Shutdown manager detected shutdown event',
      'NodeShutdown: Shutdown manager detected shutdown cancellation',
    ]);
    await t.stop();
  });

  it('groups by shutdownGracePeriodByPodPriority, lowest first, and records the state file', async () => {
    const byPriority = config({
      shutdownGracePeriodByPodPriority: [
        { priority: SYSTEM_CRITICAL_PRIORITY, shutdownGracePeriodSeconds: 30 },
        { priority: 100_000, shutdownGracePeriodSeconds: 30 },
        { priority: 10_000, shutdownGracePeriodSeconds: 30 },
        { priority: 1_000, shutdownGracePeriodSeconds: 30 },
      ],
    });
    const pods = [
      pod('critical', { priority: 2_000_001_000 }),
      pod('a', { priority: 100_000 }),
      pod('b', { priority: 10_000 }),
      pod('c', { priority: 1_000 }),
      pod('none'),
      pod('between-b-and-a', { priority: 50_000 }),
    ];
    const t = setup(byPriority, pods, { delayMs: 120_000 });
    await flush(t.clock);
    const start = t.clock.now();
    t.bus.emit(true);
    const order: string[][] = [];
    // The state file is real I/O: wait for each group's kills rather than for microtasks.
    let seen = 0;
    for (const size of [2, 2, 1, 1]) {
      await vi.waitFor(() => expect(t.kills.length).toBeGreaterThanOrEqual(seen + size));
      order.push(t.kills.slice(seen, seen + size).map((k) => `${k.name}@${k.at - start}`));
      seen += size;
      await t.clock.advance(30_000);
    }
    await vi.waitFor(() => expect(t.bus.held).toBe(0));
    // A pod below every group joins the lowest; one between two groups joins the lower.
    expect(order).toEqual([
      ['c@0', 'none@0'],
      ['b@30000', 'between-b-and-a@30000'],
      ['a@60000'],
      ['critical@90000'],
    ]);
    const state = () => JSON.parse(readFileSync(join(t.rootDir, LOCAL_STORAGE_STATE_FILE), 'utf8'));
    await vi.waitFor(() =>
      expect(state()).toEqual({
        startTime: new Date(start).toISOString(),
        endTime: new Date(start + 120_000).toISOString(),
      }),
    );
    await t.stop();
  });

  it('watches again a second after the bus is lost', async () => {
    const t = setup(twoGroups, []);
    await flush(t.clock);
    expect(t.connects()).toBe(1);
    t.bus.lose();
    await t.clock.advance(999);
    expect(t.connects()).toBe(1);
    await t.clock.advance(1);
    expect(t.connects()).toBe(2);
    expect(t.bus.held).toBe(1);
    await t.stop();
  });
});
