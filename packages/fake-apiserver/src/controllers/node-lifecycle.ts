import { type KObject, rfc3339 } from '../meta/object.js';
import { nodes as nodesDef } from '../registry/nodes.js';
import { pods as podsDef } from '../registry/pods.js';
import type { RestStorage } from '../registry/rest.js';
import { recordEvent } from './events.js';

export interface NodeLifecycleOptions {
  /** node-monitor-grace-period: how long a node may go without renewing its lease (40s). */
  gracePeriodMs?: number;
  /** node-monitor-period: how often nodes are checked (5s). */
  monitorPeriodMs?: number;
}

const LEASE_NS = 'kube-node-lease';
const CONDITIONS = ['Ready', 'MemoryPressure', 'DiskPressure', 'PIDPressure'];
const UNREACHABLE = 'node.kubernetes.io/unreachable';
const NOT_READY = 'node.kubernetes.io/not-ready';

interface Health {
  /** Controller-clock time of the last observed renewal, as the real controller uses its own clock. */
  probedAt: number;
  renewTime?: string;
  heartbeat?: string;
}

/**
 * The part of the node lifecycle controller a node agent meets: when neither the node's Lease
 * nor its Ready heartbeat changed within the grace period, its conditions become Unknown
 * ("Kubelet stopped posting node status."), its pods stop being Ready, and it gets the unreachable taints; a Ready=False
 * node gets the not-ready taints; both go away when the node is Ready again.
 */
export class NodeLifecycleController {
  private readonly grace: number;
  private readonly period: number;
  private readonly health = new Map<string, Health>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly unsubscribe: (() => void)[] = [];

  constructor(
    private readonly rest: RestStorage,
    opts: NodeLifecycleOptions = {},
  ) {
    this.grace = opts.gracePeriodMs ?? 40_000;
    this.period = opts.monitorPeriodMs ?? 5_000;
  }

  start(): void {
    const store = this.rest.store;
    this.unsubscribe.push(
      store.subscribe('leases.coordination.k8s.io', (ev) => {
        if (ev.object.metadata.namespace !== LEASE_NS || ev.type === 'DELETED') return;
        const h = this.entry(ev.object.metadata.name);
        const renew = ev.object.spec?.renewTime;
        if (renew && renew !== h.renewTime) {
          h.renewTime = renew;
          h.probedAt = this.rest.clock.now();
        }
      }),
      store.subscribe('nodes', (ev) => {
        if (ev.type === 'DELETED') {
          this.health.delete(ev.object.metadata.name);
          return;
        }
        const h = this.entry(ev.object.metadata.name);
        const beat = (ev.object.status?.conditions ?? []).find(
          (c: KObject) => c.type === 'Ready',
        )?.lastHeartbeatTime;
        if (beat && beat !== h.heartbeat) {
          h.heartbeat = beat;
          h.probedAt = this.rest.clock.now();
        }
        this.syncTaints(ev.object);
      }),
    );
    this.timer = setInterval(() => this.tick(), this.period);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    for (const u of this.unsubscribe) u();
    if (this.timer) clearInterval(this.timer);
  }

  private entry(name: string): Health {
    let h = this.health.get(name);
    if (h === undefined) {
      h = { probedAt: this.rest.clock.now() };
      this.health.set(name, h);
    }
    return h;
  }

  /** One monitoring pass; exposed so tests with an injected clock can drive it. */
  tick(): void {
    const now = this.rest.clock.now();
    for (const node of this.rest.store.list('nodes')) {
      const h = this.entry(node.metadata.name);
      if (now - h.probedAt <= this.grace) continue;
      this.markUnknown(node, now);
    }
  }

  private markUnknown(node: KObject, now: number) {
    const ts = rfc3339(now);
    const existing: KObject[] = node.status?.conditions ?? [];
    const ready = existing.find((c) => c.type === 'Ready');
    if (ready?.status === 'Unknown') return;
    const conditions = CONDITIONS.map((type) => {
      const c = existing.find((x) => x.type === type);
      if (c === undefined) {
        return {
          type,
          status: 'Unknown',
          lastHeartbeatTime: node.metadata.creationTimestamp,
          lastTransitionTime: ts,
          reason: 'NodeStatusNeverUpdated',
          message: 'Kubelet never posted node status.',
        };
      }
      return {
        ...c,
        status: 'Unknown',
        lastTransitionTime: ts,
        reason: 'NodeStatusUnknown',
        message: 'Kubelet stopped posting node status.',
      };
    });
    const others = existing.filter((c) => !CONDITIONS.includes(c.type));
    try {
      const updated = this.rest.patch(
        nodesDef,
        '',
        node.metadata.name,
        'merge',
        { status: { conditions: [...conditions, ...others] } },
        { status: true },
      );
      recordEvent(
        this.rest,
        updated,
        'Normal',
        'NodeNotReady',
        `Node ${node.metadata.name} status is now: NodeNotReady`,
        'node-controller',
      );
    } catch {
      // Deleted meanwhile.
      return;
    }
    this.markPodsNotReady(node.metadata.name, ts);
  }

  /** Pods on a node nobody hears from are not Ready any more (the controller's MarkPodsNotReady). */
  private markPodsNotReady(nodeName: string, ts: string) {
    for (const pod of this.rest.store.podsOnNode(nodeName)) {
      const conditions: KObject[] = pod.status?.conditions ?? [];
      const ready = conditions.find((c) => c.type === 'Ready');
      if (ready === undefined || ready.status === 'False') continue;
      try {
        this.rest.patch(
          podsDef,
          pod.metadata.namespace,
          pod.metadata.name,
          'strategic',
          { status: { conditions: [{ type: 'Ready', status: 'False', lastTransitionTime: ts }] } },
          { status: true },
        );
        recordEvent(this.rest, pod, 'Warning', 'NodeNotReady', 'Node is not ready', 'node-controller');
      } catch {
        // Deleted meanwhile.
      }
    }
  }

  /** Keeps the not-ready / unreachable taints in line with the Ready condition. */
  private syncTaints(node: KObject) {
    const ready = (node.status?.conditions ?? []).find((c: KObject) => c.type === 'Ready');
    const want =
      ready?.status === 'True'
        ? undefined
        : ready?.status === 'False'
          ? NOT_READY
          : ready
            ? UNREACHABLE
            : undefined;
    const taints: KObject[] = node.spec?.taints ?? [];
    const ours = taints.filter((t) => t.key === NOT_READY || t.key === UNREACHABLE);
    const desired = want ? ['NoSchedule', 'NoExecute'].map((effect) => ({ key: want, effect })) : [];
    const same =
      ours.length === desired.length &&
      desired.every((d) => ours.some((t) => t.key === d.key && t.effect === d.effect));
    if (same) return;
    const ts = rfc3339(this.rest.clock.now());
    const next = [
      ...taints.filter((t) => t.key !== NOT_READY && t.key !== UNREACHABLE),
      ...desired.map((d) => (d.effect === 'NoExecute' ? { ...d, timeAdded: ts } : d)),
    ];
    setImmediate(() => {
      if (this.stopped) return;
      try {
        this.rest.patch(nodesDef, '', node.metadata.name, 'merge', {
          spec: { taints: next.length > 0 ? next : null },
        });
      } catch {
        // Deleted meanwhile.
      }
    });
  }
}
