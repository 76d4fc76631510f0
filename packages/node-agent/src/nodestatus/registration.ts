// Registration: create the Node, or adopt and reconcile an existing one, retrying with
// exponential backoff while the API server is unreachable.

import { sleep, type TimerClock } from '@kh/apimachinery';
import type { V1Node } from '@kubernetes/client-node';
import { ApiError, isConflict, type NodeApi } from '../api/node_api.js';
import type { KubeletEventRecorder } from '../events/recorder.js';
import { type Logger, silentLogger } from '../util/log.js';
import { initialNode, type NodeIdentity, reconcileExistingNode } from './node.js';

export const REGISTRATION_BACKOFF_START_MS = 100;
export const REGISTRATION_BACKOFF_MAX_MS = 7_000;

export class NodeRegistrar {
  private registered = false;

  constructor(
    private readonly opts: {
      api: NodeApi;
      identity: NodeIdentity;
      clock: TimerClock;
      /** --register-node: false means the Node is created by someone else and only adopted. */
      create?: boolean;
      recorder?: KubeletEventRecorder;
      log?: Logger;
      /** Status to create the Node with, so it is complete from its first version. */
      initialStatus?: (node: V1Node) => Promise<void>;
    },
  ) {}

  isRegistered(): boolean {
    return this.registered;
  }

  /** Called when the Node vanished (deleted by an operator): the next sync registers again. */
  markUnregistered(): void {
    this.registered = false;
  }

  /** One attempt: true when the Node exists and matches the agent's identity afterwards. */
  async tryRegister(): Promise<boolean> {
    const { api, identity } = this.opts;
    const log = this.opts.log ?? silentLogger;
    if (this.opts.create === false) return this.adoptExisting(false);
    const node = initialNode(identity);
    await this.opts.initialStatus?.(node);
    try {
      await api.createNode(node);
      log.info('Successfully registered node', { node: identity.nodeName });
      this.opts.recorder?.nodeEvent(
        'Normal',
        'RegisteredNode',
        `Node ${identity.nodeName} event: Registered Node ${identity.nodeName} in Controller`,
      );
      this.registered = true;
      return true;
    } catch (e) {
      if (!isConflict(e) && !(e instanceof ApiError && e.reason === 'AlreadyExists')) {
        log.error('Unable to register node with API server', { node: identity.nodeName, err: e });
        return false;
      }
    }
    // It exists: a restart, or another agent with the same name.
    return this.adoptExisting(true);
  }

  /** Takes over an existing Node; `reconcile` rewrites the kubelet-owned labels (only when registering). */
  private async adoptExisting(reconcile: boolean): Promise<boolean> {
    const { api, identity } = this.opts;
    const log = this.opts.log ?? silentLogger;
    try {
      const existing = await api.getNode(identity.nodeName);
      if (!existing) return false; // not there (yet); the next attempt tries again
      const patch = reconcile ? reconcileExistingNode(existing, identity) : undefined;
      if (patch) await api.patchNode(identity.nodeName, patch);
      log.info('Node was previously registered', { node: identity.nodeName });
      this.registered = true;
      return true;
    } catch (e) {
      log.error('Unable to reconcile existing node', { node: identity.nodeName, err: e });
      return false;
    }
  }

  /** Retries until registered (backoff 100 ms doubling to 7 s) or aborted. */
  async registerWithApiServer(signal: AbortSignal): Promise<void> {
    let delay = REGISTRATION_BACKOFF_START_MS;
    while (!this.registered && !signal.aborted) {
      if (await this.tryRegister()) return;
      await sleep(this.opts.clock, delay, signal).catch(() => {});
      delay = Math.min(delay * 2, REGISTRATION_BACKOFF_MAX_MS);
    }
  }
}
