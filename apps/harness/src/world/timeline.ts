// Turns API watch events into timeline entries: pod phases, container states, node conditions and
// Events. One watch per resource for the whole run; entries are routed to the cell that owns the
// object (by namespace for pods and events, by node name for nodes).
import { type CoreV1Event, type KubeConfig, type V1Node, type V1Pod, Watch } from '@kubernetes/client-node';
import type { TimelineEntry } from '../results/model.js';

export type Route = (key: {
  namespace?: string;
  node?: string;
}) => ((e: Omit<TimelineEntry, 't'>) => void) | undefined;

/**
 * Pod start-up latency as a user sees it: from the moment the API first shows the pod to the first
 * time every container is running (watch observation times, ms; creationTimestamp only has
 * seconds). Reported once per pod.
 */
export class PodStartupTracker {
  private readonly firstSeen = new Map<string, number>();
  private readonly done = new Set<string>();

  observe(pod: V1Pod, now: number): number | undefined {
    const key = pod.metadata?.uid ?? `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    if (this.done.has(key)) return undefined;
    const created = pod.metadata?.creationTimestamp
      ? new Date(pod.metadata.creationTimestamp).getTime()
      : now;
    if (!this.firstSeen.has(key)) this.firstSeen.set(key, Math.min(now, created + 999));
    const containers = pod.spec?.containers?.length ?? 0;
    const statuses = pod.status?.containerStatuses ?? [];
    const allRunning =
      containers > 0 && statuses.length === containers && statuses.every((c) => c.state?.running);
    if (!allRunning) return undefined;
    this.done.add(key);
    return now - this.firstSeen.get(key)!;
  }
}

export class ApiTimeline {
  private readonly startups = new PodStartupTracker();
  private readonly aborts = new Set<AbortController>();
  private readonly podState = new Map<string, string>();
  private readonly nodeState = new Map<string, string>();
  private readonly seenEvents = new Set<string>();
  private stopped = false;

  constructor(
    private readonly kc: KubeConfig,
    private readonly route: Route,
  ) {}

  /**
   * Opens one watch per resource. A watch the server ends (or that breaks) is opened again: a
   * new watch replays current objects as ADDED, which the per-object state below deduplicates.
   */
  async start(): Promise<void> {
    const watch = new Watch(this.kc);
    const on = <T>(path: string, handle: (obj: T, type: string) => void): Promise<void> =>
      watch
        .watch(
          path,
          { allowWatchBookmarks: false },
          (type, obj) => handle(obj as T, type),
          () => {
            if (!this.stopped) setTimeout(() => void on(path, handle), 500).unref();
          },
        )
        .then((ac) => {
          this.aborts.add(ac);
        })
        .catch(() => {
          // The timeline is best-effort; scenarios assert through their own calls.
          if (!this.stopped) setTimeout(() => void on(path, handle), 1_000).unref();
        });
    await Promise.all([
      on<V1Pod>('/api/v1/pods', (p, type) => this.pod(p, type)),
      on<V1Node>('/api/v1/nodes', (n) => this.node(n)),
      on<CoreV1Event>('/api/v1/events', (e, type) => type === 'ADDED' && this.event(e)),
    ]);
  }

  stop(): void {
    this.stopped = true;
    for (const a of this.aborts) a.abort();
  }

  private pod(p: V1Pod, type: string): void {
    const sink = this.route({ namespace: p.metadata?.namespace });
    if (!sink) return;
    const key = `${p.metadata?.namespace}/${p.metadata?.name}`;
    if (type === 'DELETED') {
      sink({ kind: 'pod-phase', summary: `${key} deleted` });
      return;
    }
    const startupMs = this.startups.observe(p, Date.now());
    if (startupMs !== undefined)
      sink({
        kind: 'pod-phase',
        summary: `${key} all containers running after ${startupMs} ms`,
        detail: { pod: key, startupMs },
      });
    const phase = p.status?.phase ?? 'Pending';
    const states = [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])].map(
      (c) => {
        const s = c.state?.running
          ? 'running'
          : c.state?.terminated
            ? `terminated:${c.state.terminated.reason}`
            : `waiting:${c.state?.waiting?.reason ?? ''}`;
        return `${c.name}=${s}${c.ready ? '+ready' : ''} restarts=${c.restartCount}`;
      },
    );
    const prev = this.podState.get(key);
    const [prevPhase, ...prevStates] = prev ? (JSON.parse(prev) as string[]) : [];
    this.podState.set(key, JSON.stringify([phase, ...states]));
    if (prevPhase !== phase)
      sink({
        kind: 'pod-phase',
        summary: `${key} ${prevPhase ?? '∅'} → ${phase}`,
        detail: { pod: key, phase },
      });
    for (const s of states) {
      if (!prevStates.includes(s))
        sink({ kind: 'container-state', summary: `${key} ${s}`, detail: { pod: key } });
    }
  }

  private node(n: V1Node): void {
    const name = n.metadata?.name ?? '';
    const sink = this.route({ node: name });
    if (!sink) return;
    for (const c of n.status?.conditions ?? []) {
      const key = `${name}/${c.type}`;
      const value = `${c.status}:${c.reason ?? ''}`;
      if (this.nodeState.get(key) === value) continue;
      this.nodeState.set(key, value);
      sink({
        kind: 'node-condition',
        summary: `${c.type}=${c.status} (${c.reason ?? ''})`,
        detail: { node: name, message: c.message },
      });
    }
  }

  private event(e: CoreV1Event): void {
    const uid = e.metadata?.uid ?? `${e.metadata?.namespace}/${e.metadata?.name}`;
    if (this.seenEvents.has(uid)) return;
    this.seenEvents.add(uid);
    const node = e.involvedObject?.kind === 'Node' ? e.involvedObject.name : undefined;
    const sink = this.route({ namespace: node ? undefined : e.metadata?.namespace, node });
    sink?.({
      kind: 'event',
      summary: `${e.type ?? 'Normal'} ${e.reason ?? ''}: ${e.message ?? ''}`.trim(),
      detail: { object: `${e.involvedObject?.kind}/${e.involvedObject?.name}` },
    });
  }
}
