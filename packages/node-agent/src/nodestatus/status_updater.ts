// Periodic node status: every nodeStatusUpdateFrequency the agent recomputes the status and
// patches it only when something other than heartbeats changed, or when
// nodeStatusReportFrequency has passed since the last report (the lease is the liveness signal
// in between). kick() posts at once, for the fast first update and runtime health changes.

import type { TimerClock } from '@kh/apimachinery';
import type { V1Node, V1NodeStatus } from '@kubernetes/client-node';
import { ApiError, isNotFound, type NodeApi } from '../api/node_api.js';
import type { KubeletEventRecorder } from '../events/recorder.js';
import { canonicalJson } from '../util/canonical_json.js';
import { Waker } from '../util/clock.js';
import { type Logger, silentLogger } from '../util/log.js';
import type { PodCidrUpdater } from './pod_cidr.js';
import type { NodeRegistrar } from './registration.js';
import {
  type NodeEventFn,
  type NodeStatusSetter,
  type NodeStatusSnapshot,
  setNodeStatus,
} from './setters.js';

/** The kubelet tries a status update this many times per sync. */
export const NODE_STATUS_UPDATE_RETRY = 5;

export type StatusSyncResult = 'patched' | 'unchanged' | 'unregistered' | 'failed';

export interface NodeStatusUpdaterOptions {
  api: NodeApi;
  nodeName: string;
  clock: TimerClock;
  registrar: NodeRegistrar;
  /** Gathers runtime version, images, runtime errors, pressure... */
  snapshot: () => Promise<NodeStatusSnapshot>;
  updateFrequencyMs: number;
  reportFrequencyMs: number;
  recorder?: KubeletEventRecorder;
  setters?: readonly NodeStatusSetter[];
  log?: Logger;
  /** Passes the Node's spec.podCIDRs on to the runtime (the kubelet's updateNode does it first). */
  podCidr?: PodCidrUpdater;
  /**
   * After the runtime took a new pod CIDR, before the status is computed: the kubelet checks the
   * runtime again (updateRuntimeUp), so a network the CIDR made ready is in this very update.
   */
  onPodCidrChange?: () => Promise<void>;
  /**
   * The node lister's Node: a sync's first try starts from it and GETs the Node only when the
   * lister has none yet, as the kubelet's tryUpdateNodeStatus; a retry (after a failed patch)
   * always GETs, so it works on what the API server has now.
   */
  cachedNode?: () => V1Node | undefined;
}

/** The event the kubelet posts for a condition that changed: "Node a status is now: NodeReady". */
function statusEvent(recorder: KubeletEventRecorder | undefined, nodeName: string): NodeEventFn {
  return (type, reason) => recorder?.nodeEvent(type, reason, `Node ${nodeName} status is now: ${reason}`);
}

/**
 * Fills a Node being created with the current status, so it is complete from its first version,
 * and records its first condition events as the kubelet does: the registrar's initialStatus.
 */
export async function fillInitialNodeStatus(
  node: V1Node,
  opts: Pick<NodeStatusUpdaterOptions, 'nodeName' | 'clock' | 'snapshot' | 'recorder' | 'setters'>,
): Promise<void> {
  const snapshot = await opts.snapshot();
  setNodeStatus(
    node,
    snapshot,
    new Date(opts.clock.now()),
    statusEvent(opts.recorder, opts.nodeName),
    opts.setters,
  );
}

export class NodeStatusUpdater {
  private lastReportAt: number | undefined;
  private readonly waker = new Waker();
  private syncing: Promise<StatusSyncResult> | undefined;

  constructor(private readonly opts: NodeStatusUpdaterOptions) {}

  /** Registers when needed, then updates status; concurrent callers share one sync. */
  syncNodeStatus(): Promise<StatusSyncResult> {
    this.syncing ??= this.doSync().finally(() => {
      this.syncing = undefined;
    });
    return this.syncing;
  }

  private async doSync(): Promise<StatusSyncResult> {
    const { registrar } = this.opts;
    if (!registrar.isRegistered()) {
      if (!(await registrar.tryRegister())) return 'failed';
      this.lastReportAt = undefined; // a fresh Node gets a full report
    }
    const log = this.opts.log ?? silentLogger;
    for (let i = 0; i < NODE_STATUS_UPDATE_RETRY; i++) {
      try {
        return await this.tryUpdateNodeStatus(i);
      } catch (e) {
        if (isNotFound(e)) {
          log.info('Node not found; registering it again', { node: this.opts.nodeName });
          registrar.markUnregistered();
          return 'unregistered';
        }
        log.error('Error updating node status, will retry', {
          node: this.opts.nodeName,
          attempt: i + 1,
          err: e,
        });
      }
    }
    return 'failed';
  }

  private async tryUpdateNodeStatus(tryNumber: number): Promise<StatusSyncResult> {
    const { api, nodeName, clock } = this.opts;
    const cached = tryNumber === 0 ? this.opts.cachedNode?.() : undefined;
    // The lister's object is shared: the setters below change this copy only.
    const node = cached ? structuredClone(cached) : await api.getNode(nodeName);
    if (!node) throw new ApiError(404, `nodes "${nodeName}" not found`, 'NotFound');
    const podCidrChanged = await this.updatePodCidr(node);
    const original = structuredClone(node.status ?? {});
    const before = comparableStatus(node.status);
    const events: ['Normal' | 'Warning', string][] = [];
    const now = clock.now();
    setNodeStatus(
      node,
      await this.opts.snapshot(),
      new Date(now),
      (type, reason) => events.push([type, reason]),
      this.opts.setters,
    );
    const changed = podCidrChanged || comparableStatus(node.status) !== before;
    const reportDue =
      this.lastReportAt === undefined || now - this.lastReportAt >= this.opts.reportFrequencyMs;
    if (!changed && !reportDue) return 'unchanged';
    await api.patchNodeStatus(nodeName, statusPatch(original, node.status ?? {}));
    this.lastReportAt = now;
    // Only transitions that reached the API server are announced.
    const record = statusEvent(this.opts.recorder, nodeName);
    for (const [type, reason] of events) record(type, reason);
    return 'patched';
  }

  /** The kubelet's updateNode: spec.podCIDRs (set by the node IPAM controller) go to the runtime. */
  private async updatePodCidr(node: V1Node): Promise<boolean> {
    const cidrs = node.spec?.podCIDRs?.length
      ? node.spec.podCIDRs
      : node.spec?.podCIDR
        ? [node.spec.podCIDR]
        : [];
    const { podCidr, onPodCidrChange } = this.opts;
    if (!podCidr || cidrs.length === 0) return false;
    try {
      if (!(await podCidr.update(cidrs.join(',')))) return false;
    } catch (e) {
      // Retried at the next sync: the runtime still has the old value.
      (this.opts.log ?? silentLogger).error('Error updating pod CIDR', { node: this.opts.nodeName, err: e });
      return true;
    }
    await onPodCidrChange?.();
    return true;
  }

  /** Requests an immediate sync (runtime became ready, readiness flipped). */
  kick(): void {
    this.waker.kick();
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.syncNodeStatus();
      await this.waker.wait(this.opts.clock, this.opts.updateFrequencyMs, signal);
    }
  }
}

/**
 * The status to patch: whole, except capacity and allocatable, which carry only the entries this
 * update changed, and null for those it dropped. Entries others own (an extended resource an
 * operator patches in or out) are left as the API server has them, as the kubelet's two-way
 * patch from the Node it read leaves them.
 */
export function statusPatch(original: V1NodeStatus, updated: V1NodeStatus): object {
  const { capacity, allocatable, ...rest } = updated;
  const out: Record<string, unknown> = { ...rest };
  for (const [key, before, after] of [
    ['capacity', original.capacity, capacity],
    ['allocatable', original.allocatable, allocatable],
  ] as const) {
    const diff: Record<string, string | null> = {};
    for (const [name, value] of Object.entries(after ?? {})) if (before?.[name] !== value) diff[name] = value;
    for (const name of Object.keys(before ?? {})) if (after?.[name] === undefined) diff[name] = null;
    if (Object.keys(diff).length > 0) out[key] = diff;
  }
  return out;
}

/** Status as canonical JSON without heartbeat times, which change on every computation. */
export function comparableStatus(status: V1NodeStatus | undefined): string {
  if (!status) return '';
  const conditions = (status.conditions ?? []).map(({ lastHeartbeatTime: _hb, ...c }) => c);
  return canonicalJson({ ...status, conditions });
}
