import {
  findMatchingUntoleratedTaint,
  podMatchesNodeAffinity,
  Quantity,
  tolerationsTolerateTaint,
} from '@kh/apimachinery';
import { type KObject, rfc3339 } from '../meta/object.js';
import { bindPod } from '../registry/binding.js';
import { pods as podsDef } from '../registry/pods.js';
import type { RestStorage } from '../registry/rest.js';
import { recordEvent } from './events.js';

export interface SchedulerOptions {
  schedulerName?: string;
  /** Pods that did not fit are retried this often even without a cluster change. */
  retryMs?: number;
}

const TERMINAL = new Set(['Succeeded', 'Failed']);
/** Longest the scheduler runs before yielding to requests. */
const BATCH_MS = 20;
const NONE: KObject = {};

const requestsCache = new WeakMap<KObject, Map<string, number>>();

/** A resource amount as a float for fit checks and scores; undefined when absent or malformed. */
const amount = (q: unknown): number | undefined => Quantity.tryFromJSON(q)?.asApproximateFloat64();

const amountsCache = new WeakMap<KObject, Map<string, number | undefined>>();

/** `amount(rl[r])`, parsed once per stored resource list (a node's allocatable is asked for every pod). */
function amountIn(rl: KObject, r: string): number | undefined {
  let m = amountsCache.get(rl);
  if (m === undefined) {
    m = new Map();
    amountsCache.set(rl, m);
  }
  if (!m.has(r)) m.set(r, amount(rl[r]));
  return m.get(r);
}

/** Requests of a pod: the sum over containers, at least the largest init container, plus overhead. */
export function podRequests(pod: KObject): Map<string, number> {
  // Stored objects are immutable, so each one is parsed once.
  const cached = requestsCache.get(pod);
  if (cached !== undefined) return cached;
  const total = new Map<string, number>();
  const add = (m: Map<string, number>, rl: KObject | undefined) => {
    for (const [r, q] of Object.entries(rl ?? {})) m.set(r, (m.get(r) ?? 0) + (amount(q) ?? 0));
  };
  for (const c of pod.spec?.containers ?? []) add(total, c.resources?.requests);
  for (const c of pod.spec?.initContainers ?? []) {
    for (const [r, q] of Object.entries((c.resources?.requests ?? {}) as KObject)) {
      total.set(r, Math.max(total.get(r) ?? 0, amount(q) ?? 0));
    }
  }
  add(total, pod.spec?.overhead);
  requestsCache.set(pod, total);
  return total;
}

/**
 * A small default-scheduler: binds pods without a node to a Ready, schedulable node that
 * has room (requests against allocatable, the pods count), matches nodeSelector / required node
 * affinity, and whose taints are tolerated. Pods that fit nowhere get PodScheduled=False and a
 * FailedScheduling event, and are retried when nodes or pods change.
 */
export class Scheduler {
  private readonly name: string;
  private readonly retryMs: number;
  private readonly queue = new Set<string>();
  private readonly unschedulable = new Set<string>();
  private scheduled = false;
  private stopped = false;
  private nextStart = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly unsubscribe: (() => void)[] = [];
  /** Derived from the store and valid while its generation stands: at 5 000 nodes, rebuilding them per pod was the setup's bottleneck. */
  private nodes: { generation: number; list: KObject[] } | undefined;
  private readonly usage = new Map<string, { generation: number; res: Map<string, number>; count: number }>();

  constructor(
    private readonly rest: RestStorage,
    opts: SchedulerOptions = {},
  ) {
    this.name = opts.schedulerName ?? 'default-scheduler';
    this.retryMs = opts.retryMs ?? 5000;
  }

  start(): void {
    const store = this.rest.store;
    this.unsubscribe.push(
      store.subscribe('pods', (ev) => {
        const p = ev.object;
        if (ev.type !== 'DELETED' && this.wants(p))
          this.enqueue(`${p.metadata.namespace}/${p.metadata.name}`);
        // Freed room: a deleted or finished pod lets waiting pods try again.
        if (ev.type === 'DELETED' || TERMINAL.has(p.status?.phase)) this.retryUnschedulable();
      }),
      store.subscribe('nodes', () => this.retryUnschedulable()),
    );
    for (const p of store.list('pods'))
      if (this.wants(p)) this.enqueue(`${p.metadata.namespace}/${p.metadata.name}`);
    this.timer = setInterval(() => this.retryUnschedulable(), this.retryMs);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    for (const u of this.unsubscribe) u();
    if (this.timer) clearInterval(this.timer);
  }

  private wants(p: KObject): boolean {
    return (
      !p.spec?.nodeName &&
      (p.spec?.schedulerName ?? 'default-scheduler') === this.name &&
      !p.metadata.deletionTimestamp &&
      !(p.spec?.schedulingGates?.length > 0)
    );
  }

  private retryUnschedulable() {
    for (const k of this.unschedulable) this.enqueue(k);
    this.unschedulable.clear();
  }

  private enqueue(key: string) {
    this.queue.add(key);
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.drain());
  }

  /** Schedules queued pods for at most BATCH_MS, then lets requests in before going on. */
  private drain() {
    this.scheduled = false;
    if (this.stopped) return;
    const until = performance.now() + BATCH_MS;
    for (const k of this.queue) {
      this.queue.delete(k);
      this.scheduleOne(k);
      if (performance.now() > until) break;
    }
    if (this.queue.size > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.drain());
    }
  }

  private nodeList(): KObject[] {
    const generation = this.rest.store.generation('nodes');
    if (this.nodes?.generation === generation) return this.nodes.list;
    const list = [...this.rest.store.values('nodes')];
    this.nodes = { generation, list };
    if (this.usage.size > list.length) {
      const names = new Set(list.map((n) => n.metadata.name));
      for (const n of this.usage.keys()) if (!names.has(n)) this.usage.delete(n);
    }
    return list;
  }

  /** Tries to place one pod; returns the chosen node name. */
  scheduleOne(key: string): string | undefined {
    const [ns, name] = key.split('/') as [string, string];
    const pod = this.rest.store.get('pods', ns, name);
    if (pod === undefined || !this.wants(pod)) return undefined;
    const nodes = this.nodeList();
    if (nodes.length === 0) {
      this.markUnschedulable(pod, key, 'no nodes available to schedule pods');
      return undefined;
    }
    const requests = podRequests(pod);
    const reasons = new Map<string, number>();
    const note = (r: string) => reasons.set(r, (reasons.get(r) ?? 0) + 1);
    // Like percentageOfNodesToScore: stop after enough feasible nodes, rotating the start.
    const enough = Math.max(100, Math.ceil(nodes.length * 0.05));
    let best: { node: KObject; score: number } | undefined;
    let feasible = 0;
    for (let i = 0; i < nodes.length && feasible < enough; i++) {
      const node = nodes[(this.nextStart + i) % nodes.length]!;
      const used = this.used(node.metadata.name);
      const why = this.unfit(pod, node, requests, used);
      if (why !== undefined) {
        note(why);
        continue;
      }
      feasible++;
      const score = this.freeFraction(node, requests, used.res);
      if (best === undefined || score > best.score) best = { node, score };
    }
    this.nextStart = (this.nextStart + 1) % nodes.length;
    if (best === undefined) {
      const parts = [...reasons].sort(([a], [b]) => a.localeCompare(b)).map(([r, n]) => `${n} ${r}`);
      this.markUnschedulable(
        pod,
        key,
        `0/${nodes.length} nodes are available: ${parts.join(', ')}. preemption: 0/${nodes.length} nodes are available: ${nodes.length} Preemption is not helpful for scheduling.`,
      );
      return undefined;
    }
    const target = best.node.metadata.name as string;
    bindPod(this.rest, ns, name, { target: { kind: 'Node', name: target } });
    recordEvent(
      this.rest,
      pod,
      'Normal',
      'Scheduled',
      `Successfully assigned ${ns}/${name} to ${target}`,
      this.name,
    );
    return target;
  }

  private used(nodeName: string): { res: Map<string, number>; count: number } {
    const generation = this.rest.store.podsOnNodeGeneration(nodeName);
    const cached = this.usage.get(nodeName);
    if (cached?.generation === generation) return cached;
    const res = new Map<string, number>();
    let count = 0;
    for (const p of this.rest.store.podsOnNode(nodeName)) {
      if (TERMINAL.has(p.status?.phase)) continue;
      count++;
      for (const [r, v] of podRequests(p)) res.set(r, (res.get(r) ?? 0) + v);
    }
    const entry = { generation, res, count };
    this.usage.set(nodeName, entry);
    return entry;
  }

  private unfit(
    pod: KObject,
    node: KObject,
    requests: Map<string, number>,
    used: { res: Map<string, number>; count: number },
  ): string | undefined {
    const tolerations: KObject[] = pod.spec?.tolerations ?? [];
    if (
      node.spec?.unschedulable &&
      !tolerationsTolerateTaint(tolerations, {
        key: 'node.kubernetes.io/unschedulable',
        effect: 'NoSchedule',
      })
    ) {
      return 'node(s) were unschedulable';
    }
    const ready = (node.status?.conditions ?? []).find((c: KObject) => c.type === 'Ready');
    if (ready?.status !== 'True') {
      const key =
        ready?.status === 'False' ? 'node.kubernetes.io/not-ready' : 'node.kubernetes.io/unreachable';
      if (!tolerationsTolerateTaint(tolerations, { key, effect: 'NoSchedule' }))
        return `node(s) had untolerated taint {${key}: }`;
    }
    if (!podMatchesNodeAffinity(pod, node)) return "node(s) didn't match Pod's node affinity/selector";
    const taint = findMatchingUntoleratedTaint(
      node.spec?.taints,
      tolerations,
      (t) => t.effect === 'NoSchedule' || t.effect === 'NoExecute',
    );
    if (taint) return `node(s) had untolerated taint {${taint.key}: ${taint.value ?? ''}}`;
    const alloc: KObject = node.status?.allocatable ?? node.status?.capacity ?? NONE;
    const maxPods = amountIn(alloc, 'pods') ?? 110;
    if (used.count + 1 > maxPods) return 'Too many pods';
    for (const [r, v] of requests) {
      if (v === 0) continue;
      const cap = amountIn(alloc, r) ?? 0;
      if ((used.res.get(r) ?? 0) + v > cap) return `Insufficient ${r}`;
    }
    return undefined;
  }

  /** Least-allocated scoring over cpu and memory. */
  private freeFraction(node: KObject, requests: Map<string, number>, used: Map<string, number>): number {
    const alloc: KObject = node.status?.allocatable ?? NONE;
    let score = 0;
    for (const r of ['cpu', 'memory']) {
      const cap = amountIn(alloc, r) ?? 0;
      if (cap > 0) score += (cap - (used.get(r) ?? 0) - (requests.get(r) ?? 0)) / cap;
    }
    return score;
  }

  private markUnschedulable(pod: KObject, key: string, message: string) {
    this.unschedulable.add(key);
    const current = (pod.status?.conditions ?? []).find((c: KObject) => c.type === 'PodScheduled');
    if (current?.status === 'False' && current.message === message) return;
    const now = rfc3339(this.rest.clock.now());
    const conditions = (pod.status?.conditions ?? []).filter((c: KObject) => c.type !== 'PodScheduled');
    conditions.push({
      type: 'PodScheduled',
      status: 'False',
      lastProbeTime: null,
      lastTransitionTime: current?.status === 'False' ? current.lastTransitionTime : now,
      reason: 'Unschedulable',
      message,
    });
    try {
      this.rest.patch(
        podsDef,
        pod.metadata.namespace,
        pod.metadata.name,
        'merge',
        { status: { conditions } },
        { status: true },
      );
    } catch {
      return;
    }
    recordEvent(this.rest, pod, 'Warning', 'FailedScheduling', message, this.name);
  }
}
