import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { HostCniNetwork, removeHostCniLeftovers } from '../src/host-cni.js';

// A private CNI network on the host: a bridge holding the gateway of a free /24, and the conf,
// cache and IPAM dirs a CNI client needs; removed with its bridge, also for a dead owner.

describe('HostCniNetwork', () => {
  test('claims a bridge and a /24 no host route uses, writes the conflist naming them, and removes both', async () => {
    const net = await HostCniNetwork.create();
    try {
      const { bridge, subnet, gateway } = net.network;
      expect(subnet).toMatch(/^10\.(24\d|25[0-5])\.\d+\.0\/24$/);
      expect(existsSync(`/sys/class/net/${bridge}`)).toBe(true);
      const routes = await readFile('/proc/net/route', 'utf8');
      expect(routes.split('\n').filter((l) => l.startsWith(`${bridge}\t`))).toHaveLength(1);
      const conflist = JSON.parse(await readFile(join(net.confDir, '10-kh-host.conflist'), 'utf8'));
      expect(conflist.name).toBe(net.name);
      expect(conflist.plugins.map((p: { type: string }) => p.type)).toEqual([
        'bridge',
        'portmap',
        'firewall',
      ]);
      expect(conflist.plugins[0]).toMatchObject({
        bridge,
        ipam: { ranges: [[{ subnet, gateway }]], dataDir: net.ipamDir },
      });
      expect(await net.leasedIps()).toEqual([]);
    } finally {
      await net.remove();
    }
    expect(existsSync(`/sys/class/net/${net.network.bridge}`)).toBe(false);
    expect(existsSync(net.dir)).toBe(false);
  });

  test('removeHostCniLeftovers removes a network whose owning process is gone', async () => {
    const net = await HostCniNetwork.create();
    // As if a test process that never called remove() had died: a pid that cannot exist.
    const owner = JSON.parse(await readFile(join(net.dir, 'owner.json'), 'utf8'));
    await writeFile(join(net.dir, 'owner.json'), JSON.stringify({ ...owner, pid: 2 ** 22 + 1 }));
    expect(await removeHostCniLeftovers()).toBeGreaterThanOrEqual(1);
    expect(existsSync(`/sys/class/net/${net.network.bridge}`)).toBe(false);
    expect(existsSync(net.dir)).toBe(false);
  });
});
