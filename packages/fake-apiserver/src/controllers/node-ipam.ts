// kube-controller-manager's node IPAM controller (--allocate-node-cidrs, the range allocator):
// every node without a pod CIDR gets the next free /node-cidr-mask-size subnet of each
// --cluster-cidr in spec.podCIDRs (and the first in spec.podCIDR), released when the node is
// deleted. The allocations live in the nodes themselves, so a restarted server (with --data-dir)
// reads them back and hands out no subnet twice.

import { type Cidr, CidrSet, formatCidr, parseCidr } from '../meta/cidr.js';
import type { KObject } from '../meta/object.js';
import { nodes as nodesDef } from '../registry/nodes.js';
import type { RestStorage } from '../registry/rest.js';
import { recordEvent } from './events.js';

export interface NodeIpamOptions {
  /** --cluster-cidr: one CIDR, or one per IP family separated by a comma (dual-stack). */
  clusterCidr: string;
  /** --node-cidr-mask-size: single-stack only (default 24 for IPv4, 64 for IPv6). */
  nodeCidrMaskSize?: number;
  /** --node-cidr-mask-size-ipv4 / -ipv6, for dual-stack clusters. */
  nodeCidrMaskSizeIPv4?: number;
  nodeCidrMaskSizeIPv6?: number;
}

/** kube-controller-manager's defaults. */
export const DEFAULT_NODE_CIDR_MASK_SIZE = { 4: 24, 6: 64 } as const;
/** cidrset's limit on the bits between an IPv6 cluster CIDR and its node subnets. */
const MAX_IPV6_SUBNET_BITS = 16;
const COMPONENT = 'cidrAllocator';

/** The subnet sets of the flags, checked as kube-controller-manager checks them. */
export function nodeCidrSets(opts: NodeIpamOptions): CidrSet[] {
  const texts = opts.clusterCidr
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (texts.length === 0) throw new Error('--allocate-node-cidrs needs --cluster-cidr');
  const cidrs = texts.map((t) => {
    const c = parseCidr(t);
    if (!c) throw new Error(`--cluster-cidr: invalid CIDR ${JSON.stringify(t)}`);
    return c;
  });
  const dual = cidrs.length > 1;
  if (cidrs.length > 2 || (dual && cidrs[0]?.family === cidrs[1]?.family))
    throw new Error('--cluster-cidr: at most one CIDR per IP family');
  if (dual && opts.nodeCidrMaskSize !== undefined)
    throw new Error('usage of --node-cidr-mask-size is not allowed with dual-stack clusters');
  return cidrs.map((c) => {
    const perFamily = c.family === 4 ? opts.nodeCidrMaskSizeIPv4 : opts.nodeCidrMaskSizeIPv6;
    const mask = perFamily ?? opts.nodeCidrMaskSize ?? DEFAULT_NODE_CIDR_MASK_SIZE[c.family];
    if (!Number.isInteger(mask) || mask < c.prefix || mask > (c.family === 4 ? 32 : 128))
      throw new Error(`node CIDR mask size ${mask} does not fit in cluster CIDR ${formatCidr(c)}`);
    if (c.family === 6 && mask - c.prefix > MAX_IPV6_SUBNET_BITS)
      throw new Error(`node CIDR mask size ${mask} is too big for cluster CIDR ${formatCidr(c)}`);
    return new CidrSet(c, mask);
  });
}

/** A node's pod CIDRs, from podCIDRs or (a client that set only the old field) podCIDR. */
function podCidrsOf(node: KObject | undefined): string[] {
  const list: unknown = node?.spec?.podCIDRs;
  if (Array.isArray(list) && list.length > 0) return list.filter((c): c is string => typeof c === 'string');
  return typeof node?.spec?.podCIDR === 'string' && node.spec.podCIDR !== '' ? [node.spec.podCIDR] : [];
}

export class NodeIpamController {
  private unsubscribe: (() => void) | undefined;
  /** Nodes to give CIDRs to at the next sync. */
  private readonly waiting = new Set<string>();
  /** Nodes told CIDRNotAvailable since their last allocation attempt succeeded. */
  private readonly told = new Set<string>();
  private scheduled = false;

  /** `sets` from nodeCidrSets(options): checked before the server starts. */
  constructor(
    private readonly rest: RestStorage,
    private readonly sets: CidrSet[],
  ) {}

  start(): void {
    const store = this.rest.store;
    for (const node of store.list(nodesDef.storage, '')) this.occupy(node);
    this.unsubscribe = store.subscribe(nodesDef.storage, (ev) => {
      const name = ev.object.metadata.name;
      if (ev.type === 'DELETED') {
        this.waiting.delete(name);
        this.told.delete(name);
        this.release(ev.prev ?? ev.object);
        // Subnets came free: nodes that found none try again.
        this.schedule(...this.told);
      } else if (podCidrsOf(ev.object).length === 0 && !ev.object.metadata.deletionTimestamp) {
        this.schedule(name);
      } else this.occupy(ev.object); // idempotent: also CIDRs another writer set
    });
    this.schedule(...store.list(nodesDef.storage, '').map((n) => n.metadata.name));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Each set's CIDR of a node, whatever its order in podCIDRs. */
  private cidrsBySet(node: KObject): (Cidr | undefined)[] {
    const parsed = podCidrsOf(node).map(parseCidr);
    return this.sets.map((s) => parsed.find((c) => c?.family === s.cluster.family));
  }

  private occupy(node: KObject): void {
    this.cidrsBySet(node).forEach((c, i) => {
      if (c) this.sets[i]?.occupy(c);
    });
  }

  private release(node: KObject): void {
    this.cidrsBySet(node).forEach((c, i) => {
      if (c) this.sets[i]?.release(c);
    });
  }

  /** Syncs after the write that triggered it, so the controller's writes are not nested in the store's dispatch. */
  private schedule(...names: string[]): void {
    for (const n of names) this.waiting.add(n);
    if (this.scheduled || this.waiting.size === 0) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      if (this.unsubscribe !== undefined) this.sync();
    });
  }

  /** Gives every waiting node one subnet of each cluster CIDR, or tells it there is none. */
  sync(): void {
    const names = [...this.waiting];
    this.waiting.clear();
    for (const name of names) {
      const node = this.rest.store.get(nodesDef.storage, '', name);
      if (!node || node.metadata.deletionTimestamp || podCidrsOf(node).length > 0) continue;
      const taken: [CidrSet, Cidr][] = [];
      for (const set of this.sets) {
        const c = set.allocate();
        if (c) taken.push([set, c]);
      }
      const giveBack = () => {
        for (const [set, c] of taken) set.release(c);
      };
      if (taken.length < this.sets.length) {
        giveBack();
        if (!this.told.has(name)) {
          this.told.add(name);
          recordEvent(
            this.rest,
            node,
            'Normal',
            'CIDRNotAvailable',
            `Node ${name} status is now: CIDRNotAvailable`,
            COMPONENT,
          );
        }
        continue;
      }
      const podCIDRs = taken.map(([, c]) => formatCidr(c));
      try {
        this.rest.patch(nodesDef, '', name, 'merge', { spec: { podCIDR: podCIDRs[0], podCIDRs } });
        this.told.delete(name);
      } catch (e) {
        // Deleted meanwhile, or a writer set CIDRs of its own: the subnets go back.
        giveBack();
        if (this.rest.store.get(nodesDef.storage, '', name))
          console.error(`fake-apiserver: allocating pod CIDRs to node ${name}: ${(e as Error).message}`);
      }
    }
  }
}
