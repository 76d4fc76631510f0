// The kubelet's updatePodCIDR (kubelet_network.go): the runtime learns the Node's pod CIDRs
// (CRI UpdateRuntimeConfig) when they first appear or change, at a node status sync. A runtime
// with a CNI config template writes its network config then; until it has one it reports
// NetworkReady=false, and the node is not Ready.
import type { NodeRuntime } from '../runtime/node_runtime.js';
import { type Logger, silentLogger } from '../util/log.js';

export class PodCidrUpdater {
  /** What the runtime last accepted; "" before (the kubelet's runtimeState.podCIDR). */
  private current = '';

  constructor(
    private readonly runtime: Pick<NodeRuntime, 'updatePodCIDR'>,
    private readonly log: Logger = silentLogger,
  ) {}

  get podCIDR(): string {
    return this.current;
  }

  /**
   * Passes `cidr` ("a" or "a,b", the Node's spec.podCIDRs joined) to the runtime unless it already
   * has it; true when it changed. A failed call throws and leaves the old value, so the next
   * status sync tries again (the kubelet counts the failure as a change too).
   */
  async update(cidr: string): Promise<boolean> {
    if (cidr === this.current) return false;
    await this.runtime.updatePodCIDR(cidr);
    this.log.info('Updating Pod CIDR', { originalPodCIDR: this.current, newPodCIDR: cidr });
    this.current = cidr;
    return true;
  }
}
