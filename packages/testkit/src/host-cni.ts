import { randomBytes, randomInt } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CNI_BIN_DIR } from './containers/cni.js';
import { runId } from './containers/labels.js';
import { orphanedDirs, writeOwner } from './util/owned-dir.js';
import { run } from './util/process.js';

// A pod network of its own on the host, for a runtime under test next to the host's dockerd and
// next to other runs: a bridge holding the gateway of a /24 that no host route uses, and a CNI
// conflist naming them. HostContainerd uses it; HostCniNetwork gives it to any CNI client (the
// dockershim in `cni` mode) with a conf dir, a result cache and IPAM state of its own.

/** Pod subnets are /24s picked from here: away from Docker's 172.16/12 and 192.168/16 pools. */
const SUBNET_POOL = { first: 10, second: [240, 255] as const };

/** Subnets taken in this process whose bridge is not made yet. */
const claimedSubnets = new Set<string>();

export interface HostPodNetwork {
  bridge: string;
  /** e.g. 10.247.13.0/24; the bridge holds .1. */
  subnet: string;
  gateway: string;
}

/**
 * Picks a bridge name and a /24 that no route on the host uses, and makes the bridge with the
 * gateway address at once: its route then tells any other run (which checks the same way) that
 * the subnet is taken. The CNI bridge plugin adopts an existing bridge.
 */
export async function claimHostPodNetwork(): Promise<HostPodNetwork> {
  for (let tries = 0; tries < 20; tries++) {
    const subnet = `${SUBNET_POOL.first}.${randomInt(SUBNET_POOL.second[0], SUBNET_POOL.second[1] + 1)}.${randomInt(0, 256)}.0/24`;
    const bridge = `khc${randomBytes(4).toString('hex')}`;
    if (claimedSubnets.has(subnet) || (await routedPrefixes()).some((p) => overlaps(p, subnet))) continue;
    if (existsSync(`/sys/class/net/${bridge}`)) continue;
    claimedSubnets.add(subnet);
    const gateway = subnet.replace(/\.0\/24$/, '.1');
    await run('ip', ['link', 'add', 'name', bridge, 'type', 'bridge']);
    await run('ip', ['addr', 'add', `${gateway}/24`, 'dev', bridge]);
    // Up: the kernel installs the subnet's route only for a link that is up.
    await run('ip', ['link', 'set', 'dev', bridge, 'up']);
    // Lost a race with another run between the check and the add: give it back and pick again.
    if ((await routedPrefixes(bridge)).some((p) => overlaps(p, subnet))) {
      await run('ip', ['link', 'delete', bridge]);
      claimedSubnets.delete(subnet);
      continue;
    }
    return { bridge, subnet, gateway };
  }
  throw new Error('no free /24 for a host pod network after 20 tries');
}

/** IPv4 prefixes routed on the host (from /proc/net/route), except those of `exceptDev`. */
async function routedPrefixes(exceptDev?: string): Promise<string[]> {
  const rows = (await readFile('/proc/net/route', 'utf8')).trim().split('\n').slice(1);
  const ip = (hex: string) => {
    const n = Number.parseInt(hex, 16);
    return [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24].join('.');
  };
  return rows
    .map((r) => r.split('\t'))
    .filter((f) => f[0] !== exceptDev && f[1] !== '00000000')
    .map((f) => {
      const mask = Number.parseInt(f[7] ?? '0', 16);
      const bits = mask.toString(2).split('1').length - 1;
      return `${ip(f[1] ?? '0')}/${bits}`;
    });
}

function overlaps(a: string, b: string): boolean {
  const parse = (cidr: string) => {
    const [addr = '', bits = '32'] = cidr.split('/');
    const n = addr.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
    return { n, bits: Number(bits) };
  };
  const x = parse(a);
  const y = parse(b);
  const bits = Math.min(x.bits, y.bits);
  const block = 2 ** (32 - bits);
  return Math.floor(x.n / block) === Math.floor(y.n / block);
}

/** Deletes the bridge of a claimed network (its route goes with it) and gives the subnet back. */
export async function releaseHostPodNetwork(network: HostPodNetwork): Promise<void> {
  if (network.bridge && existsSync(`/sys/class/net/${network.bridge}`))
    await run('ip', ['link', 'delete', network.bridge]);
  claimedSubnets.delete(network.subnet);
}

/**
 * bridge + host-local (IPAM state in `ipamDir`) + portmap + firewall on a claimed network. No
 * loopback entry: CNI runtimes bring lo up with the loopback plugin as a network of its own (a
 * chained loopback plugin would configure eth0). firewall: Docker sets the FORWARD policy to DROP
 * and br_netfilter is loaded, so pod-to-pod traffic over the bridge needs the ACCEPT rules this
 * plugin adds (and removes on DEL). No masquerading: pods talk only to the host and each other.
 */
export function hostPodConflist(network: HostPodNetwork, opts: { name: string; ipamDir: string }): string {
  const conflist = {
    cniVersion: '0.4.0',
    name: opts.name,
    plugins: [
      {
        type: 'bridge',
        bridge: network.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: network.subnet, gateway: network.gateway }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: opts.ipamDir,
        },
      },
      { type: 'portmap', capabilities: { portMappings: true } },
      { type: 'firewall' },
    ],
  };
  return `${JSON.stringify(conflist, null, 2)}\n`;
}

const DIR_PREFIX = 'kh-cni-';
const CONFLIST = '10-kh-host.conflist';

/**
 * A claimed pod network with everything a CNI client needs under one temp dir: `conf` (the
 * conflist), `cache` (the result cache) and `ipam` (host-local's leases), plugins from
 * /usr/lib/cni. remove() deletes the bridge and the dir; removeHostCniLeftovers() does it for a
 * test process that died first.
 */
export class HostCniNetwork {
  private removed = false;

  private constructor(
    readonly dir: string,
    readonly network: HostPodNetwork,
  ) {}

  static async create(): Promise<HostCniNetwork> {
    if (!existsSync(join(CNI_BIN_DIR, 'bridge')))
      throw new Error(`${CNI_BIN_DIR}/bridge is missing (Debian package containernetworking-plugins)`);
    const dir = await mkdtemp(join(tmpdir(), `${DIR_PREFIX}${runId}-`));
    let network: HostPodNetwork | undefined;
    try {
      network = await claimHostPodNetwork();
      await writeOwner(dir, { network });
      const created = new HostCniNetwork(dir, network);
      await mkdir(created.confDir, { recursive: true });
      await writeFile(
        join(created.confDir, CONFLIST),
        hostPodConflist(network, { name: `kh-host-${network.bridge}`, ipamDir: created.ipamDir }),
      );
      return created;
    } catch (err) {
      if (network) await releaseHostPodNetwork(network).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
  }

  readonly binDir = CNI_BIN_DIR;

  get confDir(): string {
    return join(this.dir, 'conf');
  }

  get cacheDir(): string {
    return join(this.dir, 'cache');
  }

  /** host-local's state: one file per leased address, named by the address, in <ipamDir>/<network>. */
  get ipamDir(): string {
    return join(this.dir, 'ipam');
  }

  /** The network's name in the conflist (host-local keeps its leases under it). */
  get name(): string {
    return `kh-host-${this.network.bridge}`;
  }

  /** The addresses host-local has leased on this network right now. */
  async leasedIps(): Promise<string[]> {
    const names = await readdir(join(this.ipamDir, this.name)).catch(() => []);
    return names.filter((n) => /^\d+\.\d+\.\d+\.\d+$/.test(n)).sort();
  }

  async remove(): Promise<void> {
    if (this.removed) return;
    this.removed = true;
    await releaseHostPodNetwork(this.network);
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Removes the HostCniNetworks whose owning process died without remove(). Returns how many. */
export async function removeHostCniLeftovers(): Promise<number> {
  const orphans = await orphanedDirs<{ network: HostPodNetwork }>(DIR_PREFIX);
  for (const { dir, owner } of orphans) {
    await releaseHostPodNetwork(owner.network);
    await rm(dir, { recursive: true, force: true });
  }
  return orphans.length;
}
