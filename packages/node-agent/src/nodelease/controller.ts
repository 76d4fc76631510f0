// The node lease in kube-node-lease: the cheap heartbeat the control plane watches between full
// status reports. Renewed every renewInterval (a quarter of the lease duration); while the API
// server is unreachable the controller backs off exponentially and keeps trying.

import { sleep, type TimerClock } from '@kh/apimachinery';
import { type V1Lease, V1MicroTime } from '@kubernetes/client-node';
import { isConflict, type NodeApi } from '../api/node_api.js';
import { type Logger, silentLogger } from '../util/log.js';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** Update attempts per renewal before falling back to get-or-create. */
export const MAX_UPDATE_RETRIES = 5;
export const ENSURE_BACKOFF_START_MS = 100;
export const ENSURE_BACKOFF_MAX_MS = 7_000;

export class NodeLeaseController {
  private latest: V1Lease | undefined;

  constructor(
    private readonly opts: {
      api: NodeApi;
      nodeName: string;
      clock: TimerClock;
      leaseDurationSeconds: number;
      renewIntervalMs: number;
      log?: Logger;
    },
  ) {}

  /** The last lease written (for tests and /healthz-style introspection). */
  lease(): V1Lease | undefined {
    return this.latest;
  }

  /** One renewal: update the known lease, or ensure it exists first. Returns false when the API is unreachable. */
  async sync(signal?: AbortSignal): Promise<boolean> {
    const log = this.opts.log ?? silentLogger;
    if (this.latest) {
      for (let i = 0; i < MAX_UPDATE_RETRIES; i++) {
        try {
          this.latest = await this.opts.api.updateLease(await this.renewed(this.latest));
          return true;
        } catch (e) {
          log.error('Failed to update lease', { attempt: i + 1, err: e });
          if (isConflict(e)) break; // someone else wrote it: re-read below
        }
      }
      this.latest = undefined;
    }
    const base = await this.ensureLease(signal);
    if (!base) return false;
    try {
      this.latest = await this.opts.api.updateLease(await this.renewed(base));
      return true;
    } catch (e) {
      log.error('Failed to update lease', { err: e });
      return false;
    }
  }

  /** Gets or creates the lease, retrying with exponential backoff until it succeeds or is aborted. */
  private async ensureLease(signal?: AbortSignal): Promise<V1Lease | undefined> {
    const { api, nodeName, clock } = this.opts;
    const log = this.opts.log ?? silentLogger;
    let delay = ENSURE_BACKOFF_START_MS;
    while (!signal?.aborted) {
      try {
        const existing = await api.getLease(NODE_LEASE_NAMESPACE, nodeName);
        if (existing) return existing;
        return await api.createLease(await this.renewed(this.newLease()));
      } catch (e) {
        log.error('Failed to ensure lease exists, will retry', { in: delay, err: e });
        await sleep(clock, delay, signal).catch(() => {});
        delay = Math.min(delay * 2, ENSURE_BACKOFF_MAX_MS);
      }
    }
    return undefined;
  }

  private newLease(): V1Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: { name: this.opts.nodeName, namespace: NODE_LEASE_NAMESPACE },
      spec: { holderIdentity: this.opts.nodeName, leaseDurationSeconds: this.opts.leaseDurationSeconds },
    };
  }

  /** A copy with a fresh renewTime, and the Node as owner once it exists (so deleting the Node deletes the lease). */
  private async renewed(lease: V1Lease): Promise<V1Lease> {
    const out: V1Lease = structuredClone(lease);
    out.spec = {
      ...out.spec,
      holderIdentity: this.opts.nodeName,
      leaseDurationSeconds: this.opts.leaseDurationSeconds,
      renewTime: new V1MicroTime(this.opts.clock.now()),
    };
    if (!out.metadata?.ownerReferences?.length) {
      const node = await this.opts.api.getNode(this.opts.nodeName).catch(() => undefined);
      if (node?.metadata?.uid) {
        out.metadata = {
          ...out.metadata,
          ownerReferences: [
            { apiVersion: 'v1', kind: 'Node', name: this.opts.nodeName, uid: node.metadata.uid },
          ],
        };
      }
    }
    return out;
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.sync(signal);
      await sleep(this.opts.clock, this.opts.renewIntervalMs, signal).catch(() => {});
    }
  }
}
