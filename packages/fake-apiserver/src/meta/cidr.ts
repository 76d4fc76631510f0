// IPv4 and IPv6 CIDRs as numbers, for the node IPAM controller's subnet sets.

export interface Cidr {
  family: 4 | 6;
  /** The network address. */
  base: bigint;
  prefix: number;
}

const bitsOf = (family: 4 | 6) => (family === 4 ? 32 : 128);

function parseV4(s: string): bigint | undefined {
  const parts = s.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return undefined;
  return parts.reduce((n, p) => (n << 8n) | BigInt(p), 0n);
}

function parseV6(s: string): bigint | undefined {
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(halves[0] ?? '');
  const tail = halves.length === 2 ? groups(halves[1] ?? '') : [];
  const missing = 8 - head.length - tail.length;
  if ((halves.length === 2 && missing < 1) || (halves.length === 1 && missing !== 0)) return undefined;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...tail];
  if (all.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return undefined;
  return all.reduce((n, g) => (n << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
}

/** A CIDR as Go's net.ParseCIDR reads it (host bits are masked off), or undefined. */
export function parseCidr(s: string): Cidr | undefined {
  const [addr = '', prefixText, ...rest] = s.split('/');
  if (prefixText === undefined || rest.length > 0 || !/^\d{1,3}$/.test(prefixText)) return undefined;
  const family = addr.includes(':') ? 6 : 4;
  const n = family === 4 ? parseV4(addr) : parseV6(addr);
  const prefix = Number(prefixText);
  if (n === undefined || prefix > bitsOf(family)) return undefined;
  const hostBits = BigInt(bitsOf(family) - prefix);
  return { family, base: (n >> hostBits) << hostBits, prefix };
}

/** Go's net.IPNet.String(): dotted quad, or RFC 5952 (the longest run of zero groups as ::). */
export function formatCidr(c: Cidr): string {
  if (c.family === 4) {
    const octets = [24n, 16n, 8n, 0n].map((s) => String((c.base >> s) & 255n));
    return `${octets.join('.')}/${c.prefix}`;
  }
  const groups = Array.from({ length: 8 }, (_, i) => Number((c.base >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  const text =
    best.len >= 2
      ? `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`
      : hex.join(':');
  return `${text}/${c.prefix}`;
}

/**
 * The subnets of size `/maskSize` of a cluster CIDR, handed out as kube-controller-manager's
 * cidrset does: the next free one after the last allocated, round the set.
 */
export class CidrSet {
  private readonly used = new Set<bigint>();
  private next = 0n;
  readonly count: bigint;

  constructor(
    readonly cluster: Cidr,
    readonly maskSize: number,
  ) {
    this.count = 1n << BigInt(maskSize - cluster.prefix);
  }

  private indexOf(c: Cidr): bigint | undefined {
    if (c.family !== this.cluster.family || c.prefix !== this.maskSize) return undefined;
    const shift = BigInt(bitsOf(c.family) - this.maskSize);
    const clusterShift = BigInt(bitsOf(c.family) - this.cluster.prefix);
    if (c.base >> clusterShift !== this.cluster.base >> clusterShift) return undefined;
    return (c.base - this.cluster.base) >> shift;
  }

  private at(i: bigint): Cidr {
    const shift = BigInt(bitsOf(this.cluster.family) - this.maskSize);
    return { family: this.cluster.family, base: this.cluster.base + (i << shift), prefix: this.maskSize };
  }

  /** The next free subnet, or undefined when all are taken. */
  allocate(): Cidr | undefined {
    for (let tried = 0n; tried < this.count; tried++) {
      const i = (this.next + tried) % this.count;
      if (this.used.has(i)) continue;
      this.used.add(i);
      this.next = (i + 1n) % this.count;
      return this.at(i);
    }
    return undefined;
  }

  /** Marks a subnet taken (a node that already has it); false when it is not one of this set's. */
  occupy(c: Cidr): boolean {
    const i = this.indexOf(c);
    if (i === undefined) return false;
    this.used.add(i);
    return true;
  }

  release(c: Cidr): void {
    const i = this.indexOf(c);
    if (i !== undefined) this.used.delete(i);
  }
}
